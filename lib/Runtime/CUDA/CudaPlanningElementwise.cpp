//===- CudaPlanningElementwise.cpp - elementwise calls and casts ----------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. kernel.elementwise (broadcast loops,
// the function table, ONNX's default alpha / beta) and kernel.cast, as the
// CPU's Elementwise.cpp and Cast.cpp check them.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Result<BroadcastLoop> makeBroadcastLoop(const std::vector<Shape> &inputs,
                                        const Shape &out) {
  size_t rank = out.size(), numIn = inputs.size();
  if (numIn > static_cast<size_t>(kMaxEwInputs))
    return Status::error("at most " + std::to_string(kMaxEwInputs) +
                         " inputs on the GPU, got " + std::to_string(numIn));
  std::vector<std::vector<int64_t>> full(numIn, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < numIn; ++k) {
    const Shape &s = inputs[k];
    bool ok = s.size() <= rank;
    for (size_t j = 0; ok && j < s.size(); ++j) {
      int64_t d = out[rank - s.size() + j];
      ok = s[j] == d || s[j] == 1;
    }
    if (!ok)
      return Status::error("input " + std::to_string(k) + " " + shapeStr(s) +
                           " does not broadcast to y " + shapeStr(out));
    int64_t step = 1;
    for (size_t j = s.size(); j-- > 0;) {
      full[k][rank - s.size() + j] = s[j] == 1 ? 0 : step;
      step *= s[j];
    }
  }
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(numIn);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1)
      continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < numIn && merge; ++k)
      merge = strides[k].back() == full[k][d] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < numIn; ++k)
        strides[k].back() = full[k][d];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < numIn; ++k)
        strides[k].push_back(full[k][d]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto &s : strides)
      s.push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return Status::error("the broadcast needs " + std::to_string(dims.size()) +
                         " dimensions after merging; the GPU kernels take " +
                         std::to_string(kMaxDims));
  BroadcastLoop loop;
  loop.rank = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    loop.dims[d] = dims[d];
    for (size_t k = 0; k < numIn; ++k)
      loop.strides[k][d] = strides[k][d];
  }
  return loop;
}

namespace {

using cpu::ElementwiseFn;

using EwKind = cpu::detail::ElementwiseKind;

struct EwInfo {
  EwOp op;
  EwKind kind;
  bool floats;   ///< takes float dtypes
  bool ints;     ///< takes integer dtypes (computed in 64 bits)
  bool boolOnly; ///< takes bool only
};

std::optional<EwInfo> ewInfo(ElementwiseFn fn) {
  using F = ElementwiseFn;
  using K = EwKind;
  switch (fn) {
  case F::Identity:
    return EwInfo{kEwIdentity, K::Unary, true, true, false};
  case F::Abs:
    return EwInfo{kEwAbs, K::Unary, true, true, false};
  case F::Neg:
    return EwInfo{kEwNeg, K::Unary, true, true, false};
  case F::Exp:
    return EwInfo{kEwExp, K::Unary, true, false, false};
  case F::Log:
    return EwInfo{kEwLog, K::Unary, true, false, false};
  case F::Sqrt:
    return EwInfo{kEwSqrt, K::Unary, true, false, false};
  case F::Reciprocal:
    return EwInfo{kEwReciprocal, K::Unary, true, false, false};
  case F::Relu:
    return EwInfo{kEwRelu, K::Unary, true, true, false};
  case F::Sigmoid:
    return EwInfo{kEwSigmoid, K::Unary, true, false, false};
  case F::Tanh:
    return EwInfo{kEwTanh, K::Unary, true, false, false};
  case F::Erf:
    return EwInfo{kEwErf, K::Unary, true, false, false};
  case F::Floor:
    return EwInfo{kEwFloor, K::Unary, true, false, false};
  case F::Ceil:
    return EwInfo{kEwCeil, K::Unary, true, false, false};
  case F::Round:
    return EwInfo{kEwRound, K::Unary, true, false, false};
  case F::Sign:
    return EwInfo{kEwSign, K::Unary, true, true, false};
  case F::Sin:
    return EwInfo{kEwSin, K::Unary, true, false, false};
  case F::Cos:
    return EwInfo{kEwCos, K::Unary, true, false, false};
  case F::Tan:
    return EwInfo{kEwTan, K::Unary, true, false, false};
  case F::Asin:
    return EwInfo{kEwAsin, K::Unary, true, false, false};
  case F::Acos:
    return EwInfo{kEwAcos, K::Unary, true, false, false};
  case F::Atan:
    return EwInfo{kEwAtan, K::Unary, true, false, false};
  case F::Sinh:
    return EwInfo{kEwSinh, K::Unary, true, false, false};
  case F::Cosh:
    return EwInfo{kEwCosh, K::Unary, true, false, false};
  case F::Asinh:
    return EwInfo{kEwAsinh, K::Unary, true, false, false};
  case F::Acosh:
    return EwInfo{kEwAcosh, K::Unary, true, false, false};
  case F::Atanh:
    return EwInfo{kEwAtanh, K::Unary, true, false, false};
  case F::Softplus:
    return EwInfo{kEwSoftplus, K::Unary, true, false, false};
  case F::Softsign:
    return EwInfo{kEwSoftsign, K::Unary, true, false, false};
  case F::HardSwish:
    return EwInfo{kEwHardSwish, K::Unary, true, false, false};
  case F::Gelu:
    return EwInfo{kEwGelu, K::Unary, true, false, false};
  case F::GeluTanh:
    return EwInfo{kEwGeluTanh, K::Unary, true, false, false};
  case F::Not:
    return EwInfo{kEwNot, K::Unary, false, false, true};
  case F::IsNan:
    return EwInfo{kEwIsNan, K::BoolResult, true, false, false};
  case F::IsInf:
    return EwInfo{kEwIsInf, K::BoolResult, true, false, false};
  case F::LeakyRelu:
    return EwInfo{kEwLeakyRelu, K::Unary, true, false, false};
  case F::Elu:
    return EwInfo{kEwElu, K::Unary, true, false, false};
  case F::Celu:
    return EwInfo{kEwCelu, K::Unary, true, false, false};
  case F::Selu:
    return EwInfo{kEwSelu, K::Unary, true, false, false};
  case F::HardSigmoid:
    return EwInfo{kEwHardSigmoid, K::Unary, true, false, false};
  case F::ThresholdedRelu:
    return EwInfo{kEwThresholdedRelu, K::Unary, true, false, false};
  case F::Shrink:
    return EwInfo{kEwShrink, K::Unary, true, true, false};
  case F::Add:
    return EwInfo{kEwAdd, K::Binary, true, true, false};
  case F::Sub:
    return EwInfo{kEwSub, K::Binary, true, true, false};
  case F::Mul:
    return EwInfo{kEwMul, K::Binary, true, true, false};
  case F::Div:
    return EwInfo{kEwDiv, K::Binary, true, true, false};
  case F::Pow:
    return EwInfo{kEwPow, K::Binary, true, true, false};
  case F::Mod:
    return EwInfo{kEwMod, K::Binary, true, true, false};
  case F::Fmod:
    return EwInfo{kEwFmod, K::Binary, true, true, false};
  case F::PRelu:
    return EwInfo{kEwPRelu, K::Binary, true, true, false};
  case F::BitShiftLeft:
    return EwInfo{kEwShl, K::Binary, false, true, false};
  case F::BitShiftRight:
    return EwInfo{kEwShr, K::Binary, false, true, false};
  case F::Equal:
    return EwInfo{kEwEqual, K::Compare, true, true, false};
  case F::Less:
    return EwInfo{kEwLess, K::Compare, true, true, false};
  case F::Greater:
    return EwInfo{kEwGreater, K::Compare, true, true, false};
  case F::LessEqual:
    return EwInfo{kEwLessEqual, K::Compare, true, true, false};
  case F::GreaterEqual:
    return EwInfo{kEwGreaterEqual, K::Compare, true, true, false};
  case F::And:
    return EwInfo{kEwAnd, K::Binary, false, false, true};
  case F::Or:
    return EwInfo{kEwOr, K::Binary, false, false, true};
  case F::Xor:
    return EwInfo{kEwXor, K::Binary, false, false, true};
  case F::Where:
    return EwInfo{kEwWhere, K::Where, true, true, false};
  case F::Clip:
    return EwInfo{kEwClip3, K::Clip, true, true, false};
  case F::Sum:
    return EwInfo{kEwSum, K::Variadic, true, true, false};
  case F::Mean:
    return EwInfo{kEwMean, K::Variadic, true, false, false};
  case F::Max:
    return EwInfo{kEwMax, K::Variadic, true, true, false};
  case F::Min:
    return EwInfo{kEwMin, K::Variadic, true, true, false};
  default:
    return std::nullopt; // bit shifts
  }
}

Result<std::optional<double>> optionalFloat(const PlanCall &call,
                                            std::string_view name) {
  if (!call.attr(name))
    return std::optional<double>();
  MP_TRY(v, floatAttr(call, name));
  return std::optional<double>(v);
}

} // namespace

Result<EwParams> planElementwise(const PlanCall &call,
                                 const std::vector<TensorDesc> &ins,
                                 const std::vector<TensorDesc> &res) {
  if (ins.empty())
    return Status::error("expects 1 or more operands, got 0");
  if (Status s = arity(ins, res, ins.size(), ins.size(), 1, 1); !s)
    return s;
  MP_TRY(name, stringAttr(call, "fn"));
  std::optional<ElementwiseFn> fn = cpu::parseElementwiseFn(name);
  if (!fn)
    return Status::error("unknown elementwise fn '" + name + "'");
  MP_TRY(alpha, optionalFloat(call, "alpha"));
  MP_TRY(beta, optionalFloat(call, "beta"));
  const std::string op = "elementwise " + name;
  std::optional<EwInfo> info = ewInfo(*fn);
  if (!info)
    return fail(op, "is not implemented on the GPU");
  const TensorDesc &y = res[0];
  size_t n = ins.size();
  if (Status s = cpu::detail::checkElementwiseInputCount(op, info->kind, n); !s)
    return s;
  for (size_t k = 0; k < n; ++k)
    if (Status s = checkDesc(op, "input " + std::to_string(k), ins[k]); !s)
      return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;

  EwParams p;
  p.op = info->op;
  if (info->kind == EwKind::Clip && n == 1)
    p.op = kEwClip1;
  std::vector<DType> inDtypes;
  for (const TensorDesc &d : ins)
    inDtypes.push_back(d.dtype);
  MP_TRY(t, cpu::detail::checkElementwiseDtypes(op, *fn, info->kind, inDtypes,
                                                y.dtype));
  // How the GPU computes it.
  bool isUnsigned =
      t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
  if (p.op == kEwWhere || p.op == kEwIdentity) {
    p.compute = kComputeRaw;
  } else if (t == DType::Bool) {
    if (!info->boolOnly && info->kind != EwKind::Compare)
      return fail(op, "does not take dtype " + dt(t));
    p.compute = kComputeInt;
  } else if (isFloat(t)) {
    if (!info->floats)
      return fail(op, "does not take dtype " + dt(t));
    p.compute = t == DType::F64 ? kComputeF64 : kComputeF32;
  } else {
    if (info->boolOnly || *fn == ElementwiseFn::Mean ||
        (isUnsigned && (p.op == kEwNeg || p.op == kEwRelu)) ||
        (!isUnsigned && (p.op == kEwShl || p.op == kEwShr)))
      return fail(op, "does not take dtype " + dt(t));
    if (!info->ints)
      return fail(op, "does not take dtype " + dt(t));
    p.compute = t == DType::U64 ? kComputeU64 : kComputeInt;
  }

  std::vector<Shape> shapes;
  for (const TensorDesc &in : ins)
    shapes.push_back(in.shape);
  Result<BroadcastLoop> loop = makeBroadcastLoop(shapes, y.shape);
  if (!loop)
    return fail(op, loop.message());
  for (size_t k = 0; k < n; ++k) {
    bool same = ins[k].addr == y.addr && ins[k].dtype == y.dtype &&
                ins[k].shape == y.shape;
    if (!same && overlapping(ins[k], y))
      return fail(op, "y overlaps input " + std::to_string(k));
  }
  std::tie(p.alpha, p.beta) =
      cpu::resolveAlphaBeta(*fn, cpu::ElementwiseParams{alpha, beta});
  if (p.op == kEwClip1 && isInteger(t)) {
    // The CPU converts attribute bounds to the dtype with its cast
    // (truncation, saturation at the dtype's range, NaN 0); the kernel would
    // only saturate at 64 bits and then wrap at the store. So the bounds go
    // through that same cast here and back to double (exact to 32 bits;
    // a 64-bit extreme rounds up, and the device conversion saturates it).
    for (double *bound : {&p.alpha, &p.beta}) {
      uint64_t storage = 0;
      if (Status s = cpu::cast(TensorView{DType::F64, {}, bound},
                               TensorView{t, {}, &storage});
          !s)
        return fail(op, s.message());
      if (Status s = cpu::cast(TensorView{t, {}, &storage},
                               TensorView{DType::F64, {}, bound});
          !s)
        return fail(op, s.message());
    }
  }
  p.numInputs = static_cast<int32_t>(n);
  for (size_t k = 0; k < n; ++k) {
    p.inDtype[k] = code(ins[k].dtype);
    p.in[k] = cptr(ins[k]);
  }
  p.outDtype = code(y.dtype);
  p.out = mptr(y);
  p.elemSize = static_cast<int32_t>(byteSize(t));
  p.n = y.numElements();
  p.loop = *loop;
  p.contiguous = 1;
  for (size_t k = 0; k < n; ++k)
    if (p.loop.rank != 1 || p.loop.strides[k][0] != 1)
      p.contiguous = 0;
  return p;
}

Result<EwParams> planBroadcastConvert(const TensorDesc &x,
                                      const TensorDesc &y) {
  Result<BroadcastLoop> loop = makeBroadcastLoop({x.shape}, y.shape);
  if (!loop)
    return loop.status();
  EwParams p;
  p.op = kEwIdentity;
  if (x.dtype == y.dtype) {
    p.compute = kComputeRaw;
  } else if (isFloat(x.dtype) && isFloat(y.dtype)) {
    p.compute = (x.dtype == DType::F64 || y.dtype == DType::F64) ? kComputeF64
                                                                 : kComputeF32;
  } else {
    return Status::error("cannot convert " + dt(x.dtype) + " to " +
                         dt(y.dtype) + " while broadcasting");
  }
  p.numInputs = 1;
  p.inDtype[0] = code(x.dtype);
  p.in[0] = cptr(x);
  p.outDtype = code(y.dtype);
  p.out = mptr(y);
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  p.loop = *loop;
  p.contiguous = p.loop.rank == 1 && p.loop.strides[0][0] == 1;
  return p;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

Result<CastParams> planCast(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "cast";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (Status s = cpu::checkCast(viewOf(x), viewOf(y)); !s)
    return s;
  return castOf(x.dtype, cptr(x), y.dtype, mptr(y), x.numElements());
}

CastParams castOf(DType from, const void *in, DType to, void *out, int64_t n) {
  CastParams p;
  p.inDtype = code(from);
  p.outDtype = code(to);
  p.in = in;
  p.out = out;
  p.n = n;
  return p;
}

} // namespace mp::rt::cuda
