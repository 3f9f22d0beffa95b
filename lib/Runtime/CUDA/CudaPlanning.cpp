//===- CudaPlanning.cpp - host-side decisions of the CUDA backend ---------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. The checks follow the CPU kernels
// (lib/Runtime/CPU) rule for rule, so that a plan the CPU accepts is
// accepted here, and what the GPU does not implement is refused by name.
// Nothing here needs CUDA.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

namespace mp::rt::cuda {

using namespace planning;
using cpu::boolAttr;
using cpu::channelsLastAttr;
using cpu::dtypeAttr;
using cpu::floatAttr;
using cpu::hasBuffer;
using cpu::intAttr;
using cpu::intListAttr;
using cpu::stringAttr;

namespace {

bool isF32or16(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool isInteger(DType t) {
  return !isFloat(t) && t != DType::Bool && byteSize(t) != 0;
}

/// Non-negative dims and an element count that does not overflow.
Status checkDesc(std::string_view op, std::string_view name,
                 const TensorDesc &v) {
  int64_t n = 1;
  for (int64_t d : v.shape) {
    if (d < 0)
      return fail(op, std::string(name) + " has a negative dimension " +
                          shapeStr(v.shape));
    if (d == 0)
      continue;
    if (n > std::numeric_limits<int64_t>::max() / 8 / d)
      return fail(op, std::string(name) + " is too large " + shapeStr(v.shape));
    n *= d;
  }
  if (byteSize(v.dtype) == 0)
    return fail(op, std::string(name) + " has an unknown dtype");
  return Status::ok();
}

using Spec = cpu::BufferSpec;

/// The descriptors of a call's buffers in the order of `specs` (null for
/// absent optional ones), placed by their has_<name> attributes.
template <size_t N>
Status bindDescs(const PlanCall &call, const std::vector<TensorDesc> &given,
                 const char *what, const std::array<Spec, N> &specs,
                 std::array<const TensorDesc *, N> &out) {
  return cpu::bindBuffers(call, given, what, specs, out);
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// Per-spatial-dimension attribute, as the CPU's spatialAttr.
Status spatialAttr(std::string_view op, std::string_view name,
                   const std::vector<int64_t> &given, size_t count,
                   int64_t deflt, int64_t min, std::vector<int64_t> &out) {
  if (given.empty()) {
    out.assign(count, deflt);
    return Status::ok();
  }
  if (given.size() != count)
    return fail(op, std::string(name) + " has " + std::to_string(given.size()) +
                        " entries, expected " + std::to_string(count) +
                        " (one per spatial dimension)");
  for (int64_t v : given)
    if (v < min || v > (int64_t(1) << 40))
      return fail(op, std::string(name) + " must be >= " + std::to_string(min) +
                          ", got " + std::to_string(v));
  out = given;
  return Status::ok();
}

Status dilatedExtent(std::string_view op, std::string_view what, size_t dim,
                     const Shape &xShape, int64_t kernel, int64_t dilation,
                     int64_t padded, int64_t &extent) {
  if (__builtin_mul_overflow(dilation, kernel - 1, &extent) ||
      extent > (int64_t(1) << 62))
    return fail(op, "the dilated " + std::string(what) +
                        " is too large along spatial dimension " +
                        std::to_string(dim));
  extent += 1;
  if (padded < extent)
    return fail(op, "spatial dimension " + std::to_string(dim) + " of x " +
                        shapeStr(xShape) +
                        " with its padding is smaller than the dilated " +
                        std::string(what) + " (" + std::to_string(extent) +
                        ")");
  return Status::ok();
}

/// compute_type as cudnn.conv_fwd / cublaslt.matmul check it: f32
/// accumulates any float input, and a type accumulates itself.
Status checkComputeType(const PlanCall &call, DType input, bool required) {
  if (!required && !call.attr("compute_type"))
    return Status::ok();
  MP_TRY(compute, dtypeAttr(call, "compute_type"));
  if (!isFloat(compute))
    return Status::error("attribute 'compute_type' must be a float type, got " +
                         dt(compute));
  if (compute == DType::F32 || compute == input)
    return Status::ok();
  return Status::error("compute type " + dt(compute) + " cannot accumulate " +
                       dt(input) + " inputs");
}

} // namespace

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

bool overlapping(const TensorDesc &a, const TensorDesc &b) {
  uint64_t an = a.byteCount(), bn = b.byteCount();
  if (!an || !bn)
    return false;
  return a.addr < b.addr + bn && b.addr < a.addr + an;
}

LaunchConfig launchFor(int64_t work, uint32_t threads, uint32_t maxBlocks) {
  LaunchConfig c;
  c.threads = threads ? threads : 256;
  int64_t blocks = work <= 0 ? 1 : (work + c.threads - 1) / c.threads;
  c.blocks = static_cast<uint32_t>(
      std::clamp<int64_t>(blocks, 1, std::max<uint32_t>(maxBlocks, 1)));
  return c;
}

uint64_t WorkspaceLayout::add(uint64_t bytes) {
  uint64_t offset = (total_ + 255) / 256 * 256;
  total_ = offset + bytes;
  return offset;
}

uint32_t addressAlignment(uint64_t addr) {
  uint32_t a = 256;
  while (a > 1 && addr % a)
    a /= 2;
  return a;
}

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

enum class EwKind { Unary, Binary, Compare, BoolResult, Where, Clip, Variadic };

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

/// alpha and beta: the given values or ONNX's defaults (the CPU's table).
void resolveParams(ElementwiseFn fn, std::optional<double> alpha,
                   std::optional<double> beta, EwParams &p) {
  using F = ElementwiseFn;
  double a = 0, b = 0;
  constexpr double inf = std::numeric_limits<double>::infinity();
  switch (fn) {
  case F::LeakyRelu:
    a = 0.01;
    break;
  case F::Elu:
  case F::Celu:
  case F::ThresholdedRelu:
    a = 1.0;
    break;
  case F::Selu:
    a = 1.67326319217681884765625;
    b = 1.05070102214813232421875;
    break;
  case F::HardSigmoid:
    a = 0.2;
    b = 0.5;
    break;
  case F::Shrink:
    a = 0.5;
    b = 0.0;
    break;
  case F::IsInf:
    a = 1.0;
    b = 1.0;
    break;
  case F::Clip:
    a = -inf;
    b = inf;
    break;
  default:
    break;
  }
  p.alpha = alpha.value_or(a);
  p.beta = beta.value_or(b);
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
  size_t minIn = 1, maxIn = 1;
  switch (info->kind) {
  case EwKind::Unary:
  case EwKind::BoolResult:
    break;
  case EwKind::Binary:
  case EwKind::Compare:
    minIn = maxIn = 2;
    break;
  case EwKind::Where:
    minIn = maxIn = 3;
    break;
  case EwKind::Clip:
    maxIn = 3;
    break;
  case EwKind::Variadic:
    maxIn = std::numeric_limits<size_t>::max();
    break;
  }
  if (n < minIn || n > maxIn || (info->kind == EwKind::Clip && n == 2))
    return fail(op,
                std::string("expects ") +
                    (info->kind == EwKind::Variadic ? "1 or more"
                     : info->kind == EwKind::Clip   ? "1 (x) or 3 (x, min, max)"
                                                    : std::to_string(minIn)) +
                    " inputs, got " + std::to_string(n));
  for (size_t k = 0; k < n; ++k)
    if (Status s = checkDesc(op, "input " + std::to_string(k), ins[k]); !s)
      return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;

  EwParams p;
  p.op = info->op;
  if (info->kind == EwKind::Clip && n == 1)
    p.op = kEwClip1;
  DType t = info->kind == EwKind::Where ? ins[1].dtype : ins[0].dtype;
  bool boolY =
      info->kind == EwKind::Compare || info->kind == EwKind::BoolResult;
  for (size_t k = 0; k < n; ++k) {
    DType want = t;
    if (info->kind == EwKind::Where && k == 0)
      want = DType::Bool;
    if (*fn == ElementwiseFn::Pow && k == 1) {
      if (ins[1].dtype == DType::Bool || byteSize(ins[1].dtype) == 0)
        return fail(op, "the exponent has dtype " + dt(ins[1].dtype) +
                            "; expected a numeric dtype");
      continue;
    }
    if (ins[k].dtype != want)
      return fail(op, "input " + std::to_string(k) + " has dtype " +
                          dt(ins[k].dtype) + "; expected " + dt(want));
  }
  DType yWant = boolY ? DType::Bool : t;
  if (y.dtype != yWant)
    return fail(op, "y has dtype " + dt(y.dtype) + "; expected " + dt(yWant));

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
  resolveParams(*fn, alpha, beta, p);
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
// Cast, copy, transpose, window copies
//===----------------------------------------------------------------------===//

Result<CastParams> planCast(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "cast";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.numElements() != y.numElements())
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different numbers of elements");
  if (overlapping(x, y) && !(x.addr == y.addr && x.dtype == y.dtype))
    return fail(op, "y overlaps x");
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

Result<uint64_t> planCopy(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "copy";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  if (x.numElements() != y.numElements())
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different numbers of elements");
  return x.addr == y.addr ? uint64_t(0) : x.byteCount();
}

Result<GatherCopyParams> planTranspose(const TensorDesc &x, const TensorDesc &y,
                                       const std::vector<int64_t> &permIn) {
  constexpr std::string_view op = "transpose";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = permIn;
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i)
      perm.push_back(static_cast<int64_t>(rank - 1 - i));
  if (perm.size() != rank)
    return fail(op, "perm has " + std::to_string(perm.size()) +
                        " entries for x of rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return fail(op, "perm " + shapeStr(perm) +
                          " is not a permutation of 0.." +
                          std::to_string(rank) + "-1");
    seen[p] = true;
  }
  if (y.shape.size() != rank)
    return fail(op, "y " + shapeStr(y.shape) + " has another rank than x " +
                        shapeStr(x.shape));
  for (size_t i = 0; i < rank; ++i)
    if (y.shape[i] != x.shape[perm[i]])
      return fail(op, "y " + shapeStr(y.shape) + " is not x " +
                          shapeStr(x.shape) + " permuted by " + shapeStr(perm));
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  // y's dims with x's strides; size-1 dims dropped, neighbours that are
  // neighbours in x too merged.
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < rank; ++i) {
    int64_t d = y.shape[i], s = xs[perm[i]];
    if (d == 1)
      continue;
    if (!dims.empty() && strides.back() == s * d) {
      dims.back() *= d;
      strides.back() = s;
    } else {
      dims.push_back(d);
      strides.push_back(s);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "needs " + std::to_string(dims.size()) +
                        " dimensions after merging; the GPU kernel takes " +
                        std::to_string(kMaxDims));
  GatherCopyParams p;
  p.rank = static_cast<int32_t>(dims.size());
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.xStrides[i] = strides[i];
  }
  p.in = cptr(x);
  p.out = mptr(y);
  return p;
}

Result<EwParams> planBroadcast(const TensorDesc &x, const TensorDesc &y) {
  constexpr std::string_view op = "broadcast";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  if (x.shape.size() > y.shape.size())
    return fail(op, "x " + shapeStr(x.shape) + " has a higher rank than y " +
                        shapeStr(y.shape));
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  Result<EwParams> p = planBroadcastConvert(x, y);
  if (!p)
    return fail(op, "x " + shapeStr(x.shape) + " does not broadcast to y " +
                        shapeStr(y.shape));
  return p;
}

Result<GatherCopyParams> planSlice(const PlanCall &call, const TensorDesc &x,
                                   const TensorDesc &y) {
  MP_TRY(starts, intListAttr(call, "starts"));
  MP_TRY(givenSteps, intListAttr(call, "steps"));
  constexpr std::string_view op = "slice";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + dt(x.dtype) + " but y has " + dt(y.dtype));
  const size_t r = x.shape.size();
  if (y.shape.size() != r)
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different ranks");
  if (starts.size() != r || givenSteps.size() != r)
    return fail(op, "starts " + shapeStr(starts) + " and steps " +
                        shapeStr(givenSteps) + " need one entry per dim of x " +
                        shapeStr(x.shape));
  for (size_t d = 0; d < r; ++d) {
    if (givenSteps[d] == 0)
      return fail(op, "step of dim " + std::to_string(d) + " is 0");
    if (y.shape[d] == 0)
      continue;
    int64_t span, last;
    bool overflow =
        __builtin_mul_overflow(y.shape[d] - 1, givenSteps[d], &span) ||
        __builtin_add_overflow(starts[d], span, &last);
    if (starts[d] < 0 || starts[d] >= x.shape[d] || overflow || last < 0 ||
        last >= x.shape[d])
      return fail(op, "dim " + std::to_string(d) + ": " +
                          std::to_string(y.shape[d]) + " elements from start " +
                          std::to_string(starts[d]) + " with step " +
                          std::to_string(givenSteps[d]) + " do not lie in x " +
                          shapeStr(x.shape));
  }
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  GatherCopyParams p;
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  p.in = cptr(x);
  p.out = mptr(y);
  if (p.n == 0)
    return p;
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < r; ++d) {
    p.base += starts[d] * xs[d];
    if (y.shape[d] == 1)
      continue; // its step does not matter (and may be huge)
    int64_t st = givenSteps[d] * xs[d];
    if (!dims.empty() && strides.back() == st * y.shape[d]) {
      dims.back() *= y.shape[d];
      strides.back() = st;
    } else {
      dims.push_back(y.shape[d]);
      strides.push_back(st);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(0);
  }
  if (dims.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "needs " + std::to_string(dims.size()) +
                        " dimensions after merging; the GPU kernel takes " +
                        std::to_string(kMaxDims));
  p.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dims[i] = dims[i];
    p.xStrides[i] = strides[i];
  }
  return p;
}

Result<std::vector<GatherCopyParams>>
planConcat(const PlanCall &call, const std::vector<TensorDesc> &inputs,
           const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  constexpr std::string_view op = "concat";
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (inputs.empty())
    return fail(op, "needs at least one input");
  const int64_t r = static_cast<int64_t>(y.shape.size());
  int64_t axis = axisIn;
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for y " +
                        shapeStr(y.shape));
  if (axis < 0)
    axis += r;
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc &in = inputs[i];
    std::string name = "input " + std::to_string(i);
    if (Status s = checkDesc(op, name, in); !s)
      return s;
    if (in.dtype != y.dtype)
      return fail(op, name + " has dtype " + dt(in.dtype) + " but y has " +
                          dt(y.dtype));
    bool shapeOk = static_cast<int64_t>(in.shape.size()) == r;
    for (int64_t d = 0; shapeOk && d < r; ++d)
      shapeOk = d == axis || in.shape[d] == y.shape[d];
    if (!shapeOk)
      return fail(op, name + " " + shapeStr(in.shape) + " does not match y " +
                          shapeStr(y.shape) + " outside axis " +
                          std::to_string(axis));
    if (overlapping(in, y))
      return fail(op, "y overlaps " + name);
    total += in.shape[axis];
  }
  if (total != y.shape[axis])
    return fail(op, "the inputs add up to " + std::to_string(total) +
                        " along axis " + std::to_string(axis) + ", but y " +
                        shapeStr(y.shape) + " has " +
                        std::to_string(y.shape[axis]));
  int64_t outer = product(y.shape, 0, static_cast<size_t>(axis));
  int64_t inner =
      product(y.shape, static_cast<size_t>(axis) + 1, y.shape.size());
  std::vector<GatherCopyParams> out;
  int64_t offset = 0;
  for (const TensorDesc &in : inputs) {
    int64_t len = in.shape[axis];
    GatherCopyParams p;
    p.scatter = 1;
    p.elemSize = static_cast<int32_t>(byteSize(y.dtype));
    p.rank = 2;
    p.dims[0] = outer;
    p.dims[1] = len * inner;
    p.xStrides[0] = y.shape[axis] * inner; // y's
    p.xStrides[1] = 1;
    p.base = offset * inner;
    p.n = in.numElements();
    p.in = cptr(in);
    p.out = mptr(y);
    offset += len;
    if (p.n)
      out.push_back(p);
  }
  return out;
}

Result<GatherCopyParams> planWindowCopy(DType dtype, const Shape &x,
                                        const Shape &y,
                                        const std::vector<int64_t> &start,
                                        const void *in, void *out) {
  if (x.size() != y.size() || start.size() != x.size())
    return Status::error("window copy: ranks differ");
  if (x.size() > static_cast<size_t>(kMaxDims))
    return Status::error("window copy: rank " + std::to_string(x.size()) +
                         " exceeds " + std::to_string(kMaxDims));
  GatherCopyParams p;
  p.rank = static_cast<int32_t>(std::max<size_t>(x.size(), 1));
  p.elemSize = static_cast<int32_t>(byteSize(dtype));
  p.window = 1;
  p.n = numElements(y);
  std::vector<int64_t> xs = stridesOf(x);
  for (size_t i = 0; i < x.size(); ++i) {
    p.dims[i] = y[i];
    p.xStrides[i] = xs[i];
    p.start[i] = start[i];
    p.xDims[i] = x[i];
  }
  if (x.empty()) {
    p.dims[0] = 1;
    p.xDims[0] = 1;
  }
  p.in = in;
  p.out = out;
  return p;
}

//===----------------------------------------------------------------------===//
// Reduce, softmax
//===----------------------------------------------------------------------===//

Result<ReduceParams> planReduce(const PlanCall &call, const TensorDesc &x,
                                const TensorDesc &y) {
  MP_TRY(name, stringAttr(call, "fn"));
  std::optional<cpu::ReduceFn> fn = cpu::parseReduceFn(name);
  if (!fn)
    return Status::error("unknown reduce fn '" + name + "'");
  MP_TRY(axes, intListAttr(call, "axes"));
  std::optional<DType> computeType;
  if (call.attr("compute_type")) {
    MP_TRY(ct, dtypeAttr(call, "compute_type"));
    computeType = ct;
  }
  MP_TRY(last, intAttr(call, "select_last_index", 0));
  const std::string op = "reduce " + name;
  using R = cpu::ReduceFn;
  ReduceParams p;
  switch (*fn) {
  case R::Sum:
    p.op = kRedSum;
    break;
  case R::Mean:
    p.op = kRedMean;
    break;
  case R::Max:
    p.op = kRedMax;
    break;
  case R::Min:
    p.op = kRedMin;
    break;
  case R::Prod:
    p.op = kRedProd;
    break;
  case R::L1:
    p.op = kRedL1;
    break;
  case R::L2:
    p.op = kRedL2;
    break;
  case R::LogSum:
    p.op = kRedLogSum;
    break;
  case R::SumSquare:
    p.op = kRedSumSquare;
    break;
  case R::ArgMax:
    p.op = kRedArgMax;
    break;
  case R::ArgMin:
    p.op = kRedArgMin;
    break;
  case R::LogSumExp:
    p.op = kRedLogSumExp;
    break;
  }
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  bool arg = p.op == kRedArgMax || p.op == kRedArgMin;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axes.empty())
    return fail(op, "axes is empty");
  if (arg && axes.size() != 1)
    return fail(op,
                "reduces exactly one axis, got " + std::to_string(axes.size()));
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return fail(op, "axis " + std::to_string(a) + " is out of range for x " +
                          shapeStr(x.shape));
    int64_t d = a < 0 ? a + rank : a;
    if (reduced[d])
      return fail(op, "axis " + std::to_string(a) + " appears twice");
    reduced[d] = true;
  }
  Shape kept, dropped;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x.shape[d]);
    if (!reduced[d])
      dropped.push_back(x.shape[d]);
  }
  if (y.shape != kept && y.shape != dropped)
    return fail(op, "y " + shapeStr(y.shape) + " is not x " +
                        shapeStr(x.shape) + " reduced over the axes (" +
                        shapeStr(kept) + " or " + shapeStr(dropped) + ")");
  bool numeric = isFloat(x.dtype) || isInteger(x.dtype);
  if (!numeric)
    return fail(op, "x has dtype " + dt(x.dtype) +
                        "; expected a float or integer dtype");
  DType yWant = arg ? DType::I64 : x.dtype;
  if (y.dtype != yWant)
    return fail(op, "y has dtype " + dt(y.dtype) + "; expected " + dt(yWant));
  if (computeType && *computeType != DType::F32 && *computeType != DType::F64)
    return fail(op, "compute type " + dt(*computeType) + " is not f32 or f64");
  if (overlapping(x, y))
    return fail(op, "y overlaps x");
  if (x.dtype == DType::U64 && !arg && p.op != kRedMax && p.op != kRedMin)
    return fail(op, "is not implemented on the GPU for dtype u64");
  if (arg) {
    int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
    if (x.shape[axis] == 0)
      return fail(op, "axis " + std::to_string(axes[0]) + " of x " +
                          shapeStr(x.shape) + " is empty");
  }
  p.dtype = code(x.dtype);
  p.outDtype = code(y.dtype);
  p.selectLast = last != 0;
  p.ySize = y.numElements();
  p.count = p.ySize ? x.numElements() / p.ySize : 0;
  // Kept and reduced dims (size 1 dropped), neighbours merged.
  std::vector<int64_t> xs = stridesOf(x.shape);
  std::vector<int64_t> kd, ks, rd, rs;
  for (int64_t d = 0; d < rank; ++d) {
    if (x.shape[d] == 1)
      continue;
    std::vector<int64_t> &dims = reduced[d] ? rd : kd;
    std::vector<int64_t> &st = reduced[d] ? rs : ks;
    if (!dims.empty() && st.back() == xs[d] * x.shape[d]) {
      dims.back() *= x.shape[d];
      st.back() = xs[d];
    } else {
      dims.push_back(x.shape[d]);
      st.push_back(xs[d]);
    }
  }
  if (kd.size() > static_cast<size_t>(kMaxDims) ||
      rd.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "x " + shapeStr(x.shape) +
                        " has too many dimensions for the GPU kernel");
  p.keptRank = static_cast<int32_t>(kd.size());
  p.reducedRank = static_cast<int32_t>(rd.size());
  for (size_t i = 0; i < kd.size(); ++i) {
    p.keptDims[i] = kd[i];
    p.keptStrides[i] = ks[i];
  }
  for (size_t i = 0; i < rd.size(); ++i) {
    p.reducedDims[i] = rd[i];
    p.reducedStrides[i] = rs[i];
  }
  // A block per output when the reduced elements are contiguous in x (the
  // innermost non-trivial dim is reduced) and there are enough of them to
  // share; else a thread per output.
  bool innerReduced = !rd.empty() && rs.back() == 1;
  p.blockPerOutput = innerReduced && p.count >= 64;
  p.in = cptr(x);
  p.out = mptr(y);
  return p;
}

Result<SoftmaxParams> planSoftmax(const PlanCall &call, const TensorDesc &x,
                                  const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  MP_TRY(log, intAttr(call, "log", 0));
  if (log != 0 && log != 1)
    return Status::error("attribute 'log' must be 0 or 1, got " +
                         std::to_string(log));
  std::string_view op = log ? "logSoftmax" : "softmax";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (!(isF32or16(x.dtype) || x.dtype == DType::F64))
    return fail(op, "x has dtype " + dt(x.dtype) +
                        "; expected f32, f16, bf16 or f64");
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y (" + dt(y.dtype) + " " + shapeStr(y.shape) +
                        ") must have x's dtype and shape (" + dt(x.dtype) +
                        " " + shapeStr(x.shape) + ")");
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    return fail(op, "x needs rank >= 1");
  int64_t axis = axisIn;
  if (axis < -rank || axis >= rank)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for x " +
                        shapeStr(x.shape));
  if (axis < 0)
    axis += rank;
  if (overlapping(x, y) && x.addr != y.addr)
    return fail(op, "y overlaps x without being x itself");
  SoftmaxParams p;
  p.dtype = code(x.dtype);
  p.log = static_cast<int32_t>(log);
  p.outer = product(x.shape, 0, axis);
  p.len = x.shape[axis];
  p.inner = product(x.shape, axis + 1, x.shape.size());
  p.in = cptr(x);
  p.out = mptr(y);
  return p;
}

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

namespace {

bool broadcastShapes(const Shape &x, const Shape &y, Shape &out) {
  size_t r = std::max(x.size(), y.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t dx = i < r - x.size() ? 1 : x[i - (r - x.size())];
    int64_t dy = i < r - y.size() ? 1 : y[i - (r - y.size())];
    if (dx != dy && dx != 1 && dy != 1)
      return false;
    out[i] = dx == 1 ? dy : dx;
  }
  return true;
}

/// Offsets (in matrices) of each batch entry of `own` broadcast to `batch`
/// (the CPU's batchOffsets).
std::vector<int64_t> batchOffsets(const Shape &own, const Shape &batch,
                                  int64_t matrixSize) {
  size_t r = batch.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = matrixSize;
  for (size_t i = r; i-- > 0;) {
    if (i < r - own.size())
      continue;
    size_t oi = i - (r - own.size());
    stride[i] = own[oi] == 1 ? 0 : s;
    s *= own[oi];
  }
  int64_t nb = numElements(batch);
  std::vector<int64_t> off(static_cast<size_t>(nb), 0);
  std::vector<int64_t> idx(r, 0);
  int64_t cur = 0;
  for (int64_t t = 0; t < nb; ++t) {
    off[static_cast<size_t>(t)] = cur;
    for (size_t i = r; i-- > 0;) {
      ++idx[i];
      cur += stride[i];
      if (idx[i] < batch[i])
        break;
      cur -= stride[i] * idx[i];
      idx[i] = 0;
    }
  }
  return off;
}

/// True when `own` broadcast to `batch` is either one matrix for every
/// entry or the whole batch in order (then one strided batched call does).
bool strideOf(const Shape &own, const Shape &batch, int64_t matrixSize,
              int64_t &stride) {
  int64_t n = numElements(own);
  if (n <= 1) {
    stride = 0;
    return true;
  }
  if (n != numElements(batch))
    return false;
  stride = matrixSize;
  return true;
}

} // namespace

Result<MatmulPlan> planMatmul(const PlanCall &call,
                              const std::vector<TensorDesc> &ops,
                              const std::vector<TensorDesc> &res) {
  MP_TRY(hasC, hasBuffer(call, "c"));
  MP_TRY(hasBias, hasBuffer(call, "bias"));
  size_t nOps = 2 + size_t(hasC) + size_t(hasBias);
  if (Status s = arity(ops, res, nOps, nOps, 1, 1); !s)
    return s;
  MP_TRY(transA, intAttr(call, "trans_a", 0));
  MP_TRY(transB, intAttr(call, "trans_b", 0));
  MP_TRY(alpha, floatAttr(call, "alpha", 1.0));
  MP_TRY(beta, floatAttr(call, "beta", 0.0));
  MP_TRY(epilogueName, stringAttr(call, "epilogue", "none"));
  MatmulPlan p;
  if (epilogueName == "none")
    p.act = kActNone;
  else if (epilogueName == "relu")
    p.act = kActRelu;
  else if (epilogueName == "gelu")
    p.act = kActGelu;
  else
    return Status::error("attribute 'epilogue' has unknown value '" +
                         epilogueName + "' (none, relu, gelu)");
  const TensorDesc &a = ops[0], &b = ops[1], &d = res[0];
  if (Status s = checkComputeType(call, a.dtype, /*required=*/true); !s)
    return s;
  size_t next = 2;
  const TensorDesc *c = hasC ? &ops[next++] : nullptr;
  const TensorDesc *bias = hasBias ? &ops[next++] : nullptr;
  constexpr std::string_view kOp = "matmul";
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"A", &a},
                         {"B", &b},
                         {"D", &d},
                         {"C", c},
                         {"bias", bias}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;
  bool f64 = a.dtype == DType::F64;
  if (!(isF32or16(a.dtype) || f64))
    return fail(kOp, "A has dtype " + dt(a.dtype) +
                         "; expected f32, f16, bf16 or f64");
  if (b.dtype != a.dtype)
    return fail(kOp, "A and B have different dtypes (" + dt(a.dtype) + " and " +
                         dt(b.dtype) + ")");
  if (f64 ? d.dtype != DType::F64 : !isF32or16(d.dtype))
    return fail(kOp, "D has dtype " + dt(d.dtype) +
                         (f64 ? "; f64 A/B need an f64 D"
                              : "; expected f32, f16 or bf16"));
  if (c && c->dtype != d.dtype)
    return fail(kOp, "C has dtype " + dt(c->dtype) + ", D " + dt(d.dtype) +
                         "; they must match");
  if (bias && bias->dtype != d.dtype && bias->dtype != DType::F32)
    return fail(kOp, "bias has dtype " + dt(bias->dtype) +
                         "; expected D's dtype (" + dt(d.dtype) + ") or f32");
  size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra == 0 || rb == 0)
    return fail(kOp, "A and B need rank >= 1, got A " + shapeStr(a.shape) +
                         " and B " + shapeStr(b.shape));
  if ((transA && ra < 2) || (transB && rb < 2))
    return fail(kOp, std::string(transA && ra < 2 ? "transA" : "transB") +
                         " needs an operand of rank >= 2");
  int64_t m, n, k, kb;
  if (ra == 1) {
    m = 1;
    k = a.shape[0];
  } else {
    int64_t r0 = a.shape[ra - 2], r1 = a.shape[ra - 1];
    m = transA ? r1 : r0;
    k = transA ? r0 : r1;
  }
  if (rb == 1) {
    kb = b.shape[0];
    n = 1;
  } else {
    int64_t r0 = b.shape[rb - 2], r1 = b.shape[rb - 1];
    kb = transB ? r1 : r0;
    n = transB ? r0 : r1;
  }
  if (k != kb)
    return fail(kOp, "inner dimensions differ: op(A) of " + shapeStr(a.shape) +
                         " has K=" + std::to_string(k) + ", op(B) of " +
                         shapeStr(b.shape) + " has K=" + std::to_string(kb));
  Shape batchA(a.shape.begin(), a.shape.end() - (ra >= 2 ? 2 : 1));
  Shape batchB(b.shape.begin(), b.shape.end() - (rb >= 2 ? 2 : 1));
  Shape batch;
  if (!broadcastShapes(batchA, batchB, batch))
    return fail(kOp, "batch dimensions of A " + shapeStr(a.shape) + " and B " +
                         shapeStr(b.shape) + " do not broadcast");
  Shape expected = batch;
  if (ra >= 2)
    expected.push_back(m);
  if (rb >= 2)
    expected.push_back(n);
  if (d.shape != expected)
    return fail(kOp, "D has shape " + shapeStr(d.shape) + ", expected " +
                         shapeStr(expected) + " for A " + shapeStr(a.shape) +
                         " and B " + shapeStr(b.shape));
  if (c) {
    bool ok = c->shape.size() <= d.shape.size();
    for (size_t i = 0; ok && i < c->shape.size(); ++i) {
      int64_t cd = c->shape[i];
      int64_t dd = d.shape[i + d.shape.size() - c->shape.size()];
      ok = cd == 1 || cd == dd;
    }
    if (!ok)
      return fail(kOp, "C of shape " + shapeStr(c->shape) +
                           " does not broadcast to D's shape " +
                           shapeStr(d.shape));
    if (overlapping(*c, d) && !(c->addr == d.addr && c->shape == d.shape))
      return fail(kOp, "C overlaps D without being D itself");
  }
  if (bias && !(bias->shape.size() == 1 && bias->shape[0] == n))
    return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                         ", expected [" + std::to_string(n) + "]");
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"A", &a},
                         {"B", &b},
                         {"bias", bias}})
    if (v && overlapping(*v, d))
      return fail(kOp, std::string(name) + " overlaps D");
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return fail(kOp, "alpha and beta must be finite");
  const int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax)
    return fail(kOp, "dimensions exceed cuBLASLt's range");
  if (d.numElements() == 0) {
    p.empty = true;
    return p;
  }
  if (k == 0)
    return fail(kOp, "K = 0 (D = beta * C) is not implemented on the GPU");

  p.abType = a.dtype;
  p.dType = d.dtype;
  p.f64 = f64;
  p.alpha = alpha;
  p.beta = beta;
  p.withC = c && beta != 0.0;
  DType acc = f64 ? DType::F64 : DType::F32;
  // cuBLASLt's GELU epilogue is the tanh approximation; the plan's is
  // exact. A bias of another dtype than D is added in the epilogue kernel
  // too, before the single rounding.
  p.staged = p.act == kActGelu || (bias && bias->dtype != d.dtype) ||
             (f64 && (bias || p.act != kActNone));
  p.fusedBias = bias && !p.staged;
  p.fusedRelu = p.act == kActRelu && !p.staged;
  p.cDirect = p.withC && !p.staged && c->shape == d.shape;
  bool stagedInScratch = p.staged && d.dtype != acc;
  if (stagedInScratch)
    p.stagedBytes = static_cast<uint64_t>(d.numElements()) * byteSize(acc);

  // The cuBLASLt mapping (see LtGemm).
  LtGemm &g = p.gemm;
  int64_t nb = numElements(batch);
  bool aBatched = numElements(batchA) > 1, bBatched = numElements(batchB) > 1;
  bool folded = !bBatched && !transA;
  // cuBLASLt's A = our B: op(B)^T [N, K].
  if (rb == 1) { // B [K]: row-major [K, 1]; column-major view [1, K]
    g.transA = false;
    g.aRows = 1;
    g.aCols = static_cast<uint64_t>(k);
    g.lda = 1;
  } else if (!transB) { // B [K, N]: column-major view [N, K] = B^T
    g.transA = false;
    g.aRows = static_cast<uint64_t>(n);
    g.aCols = static_cast<uint64_t>(k);
    g.lda = n;
  } else { // B [N, K]: column-major view [K, N]; op = T gives [N, K]
    g.transA = true;
    g.aRows = static_cast<uint64_t>(k);
    g.aCols = static_cast<uint64_t>(n);
    g.lda = k;
  }
  // cuBLASLt's B = our A: op(A)^T [K, M].
  int64_t mRows = folded ? nb * m : m;
  if (ra == 1 || !transA) { // A [M, K]: column-major view [K, M] = A^T
    g.transB = false;
    g.bRows = static_cast<uint64_t>(k);
    g.bCols = static_cast<uint64_t>(mRows);
    g.ldb = k;
  } else { // A [K, M]: column-major view [M, K]; op = T gives [K, M]
    g.transB = true;
    g.bRows = static_cast<uint64_t>(m);
    g.bCols = static_cast<uint64_t>(k);
    g.ldb = m;
  }
  if (mRows > kIntMax)
    return fail(kOp, "dimensions exceed cuBLASLt's range");
  g.m = static_cast<uint64_t>(n);
  g.n = static_cast<uint64_t>(mRows);
  g.k = static_cast<uint64_t>(k);
  g.ldd = n;
  int64_t aMat = ra >= 2 ? a.shape[ra - 2] * a.shape[ra - 1] : a.shape[0];
  int64_t bMat = rb >= 2 ? b.shape[rb - 2] * b.shape[rb - 1] : b.shape[0];
  if (!folded && nb > 1) {
    int64_t sa = 0, sb = 0;
    bool oneCall = strideOf(batchA, batch, aMat, sa) &&
                   strideOf(batchB, batch, bMat, sb) && nb <= kIntMax;
    if (oneCall) {
      g.batchCount = static_cast<int32_t>(nb);
      g.strideA = sb; // cuBLASLt's A is our B
      g.strideB = sa;
      g.strideD = m * n;
    } else {
      std::vector<int64_t> ao = batchOffsets(batchA, batch, aMat);
      std::vector<int64_t> bo = batchOffsets(batchB, batch, bMat);
      for (int64_t t = 0; t < nb; ++t)
        p.loop.push_back({bo[static_cast<size_t>(t)],
                          ao[static_cast<size_t>(t)], t * m * n});
    }
  }
  (void)aBatched;
  // Alignment of what cuBLASLt reads (batched loops offset the pointers).
  uint64_t elt = byteSize(a.dtype), dElt = byteSize(p.staged ? acc : d.dtype);
  p.alignA = addressAlignment(b.addr);
  p.alignB = addressAlignment(a.addr);
  p.alignD = stagedInScratch ? 256 : addressAlignment(d.addr);
  p.alignC = p.cDirect ? addressAlignment(c->addr) : p.alignD;
  for (const auto &o : p.loop) {
    p.alignA = std::min(p.alignA, addressAlignment(b.addr + o[0] * elt));
    p.alignB = std::min(p.alignB, addressAlignment(a.addr + o[1] * elt));
    uint32_t dAlign =
        addressAlignment((stagedInScratch ? 0 : d.addr) + o[2] * dElt);
    p.alignD = std::min(p.alignD, dAlign);
    p.alignC = std::min(p.alignC, dAlign);
  }

  p.dElements = static_cast<uint64_t>(d.numElements());
  {
    // Filled in every case: a fused epilogue without a cuBLASLt algorithm
    // falls back to the staged one.
    EpilogueParams &e = p.epilogue;
    e.act = p.act;
    e.accDtype = code(acc);
    e.outDtype = code(d.dtype);
    e.biasDtype = bias ? code(bias->dtype) : 0;
    e.bias = bias ? cptr(*bias) : nullptr;
    e.geom.c = n;
    e.geom.inner = 1;
    e.geom.outer = n ? d.numElements() / n : 0;
    e.out = mptr(d);
    // e.acc: the staged scratch (or D itself), set by the executor.
  }
  if (p.withC && !p.cDirect) {
    // C broadcast (and converted) into the GEMM's target: D or the scratch.
    TensorDesc target{p.staged ? acc : d.dtype, d.shape,
                      stagedInScratch ? 0 : d.addr};
    Result<EwParams> copy = planBroadcastConvert(*c, target);
    if (!copy)
      return fail(kOp, copy.message());
    p.cCopy = *copy;
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

namespace {

/// The attributes shared by the three convolutions.
struct ConvAttrs {
  std::vector<int64_t> padsBegin, padsEnd, strides, dilations;
  int64_t groups = 1;
  bool nhwc = false;
  EpilogueAct act = kActNone;
};

} // namespace

Result<ConvPlan> planConv(ConvKind kind, const PlanCall &call,
                          const std::vector<TensorDesc> &ops,
                          const std::vector<TensorDesc> &res) {
  const char *kOp = kind == ConvKind::Forward        ? "conv"
                    : kind == ConvKind::BackwardData ? "conv_transpose"
                                                     : "conv_bwd_filter";
  // Buffers.
  const TensorDesc *x = nullptr, *w = nullptr, *bias = nullptr,
                   *y = nullptr; // for BackwardFilter: w = dy, y = dw
  if (kind == ConvKind::BackwardFilter) {
    if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
      return s;
    x = &ops[0];
    w = &ops[1];
    y = &res[0];
  } else {
    std::array<const TensorDesc *, 3> in{};
    if (Status s =
            bindDescs<3>(call, ops, "operands",
                         {{{"x", false}, {"w", false}, {"bias", true}}}, in);
        !s)
      return s;
    if (Status s = arity(ops, res, 0, SIZE_MAX, 1, 1); !s)
      return s;
    x = in[0];
    w = in[1];
    bias = in[2];
    y = &res[0];
  }
  if (x->shape.size() < 3)
    return Status::error("x must have rank >= 3 ([N, C, spatial...]), got "
                         "rank " +
                         std::to_string(x->shape.size()));
  size_t spatial = x->shape.size() - 2;
  // Attributes.
  ConvAttrs at;
  if (kind == ConvKind::Forward) {
    MP_TRY(pads, intListAttr(call, "pads"));
    MP_TRY(strides, intListAttr(call, "strides"));
    MP_TRY(dilations, intListAttr(call, "dilations"));
    MP_TRY(groups, intAttr(call, "groups", 1));
    MP_TRY(channelsLast, channelsLastAttr(call));
    MP_TRY(activation, stringAttr(call, "activation", "none"));
    if (activation == "none")
      at.act = kActNone;
    else if (activation == "relu")
      at.act = kActRelu;
    else
      return Status::error("attribute 'activation' has unknown value '" +
                           activation + "' (none, relu)");
    if (pads.size() != 2 * spatial)
      return Status::error(
          "attribute 'pads' must have " + std::to_string(2 * spatial) +
          " values (begins, then ends, for " + std::to_string(spatial) +
          " spatial dims), got " + std::to_string(pads.size()));
    at.padsBegin.assign(pads.begin(), pads.begin() + spatial);
    at.padsEnd.assign(pads.begin() + spatial, pads.end());
    at.nhwc = channelsLast;
    at.strides = strides;
    at.dilations = dilations;
    at.groups = groups;
    if (Status s = checkComputeType(call, x->dtype, /*required=*/true); !s)
      return s;
  } else {
    MP_TRY(pads, intListAttr(call, "pads", {}));
    if (kind == ConvKind::BackwardData) {
      if (pads.size() % 2)
        return Status::error("attribute 'pads' must have an even number of "
                             "entries (begins then ends), got " +
                             std::to_string(pads.size()));
      at.padsBegin.assign(pads.begin(), pads.begin() + pads.size() / 2);
      at.padsEnd.assign(pads.begin() + pads.size() / 2, pads.end());
    } else if (!pads.empty()) {
      if (pads.size() != 2 * spatial)
        return Status::error(
            "attribute 'pads' must have " + std::to_string(2 * spatial) +
            " values (begins, then ends, for " + std::to_string(spatial) +
            " spatial dims), got " + std::to_string(pads.size()));
      at.padsBegin.assign(pads.begin(), pads.begin() + spatial);
      at.padsEnd.assign(pads.begin() + spatial, pads.end());
    }
    MP_TRY(strides, intListAttr(call, "strides", {}));
    MP_TRY(dilations, intListAttr(call, "dilations", {}));
    MP_TRY(groups, intAttr(call, "groups", 1));
    MP_TRY(channelsLast, channelsLastAttr(call));
    at.strides = strides;
    at.dilations = dilations;
    at.groups = groups;
    at.nhwc = channelsLast;
    if (call.attr("compute_type")) {
      MP_TRY(ct, dtypeAttr(call, "compute_type"));
      if (kind == ConvKind::BackwardFilter)
        if (Status s = checkComputeType(call, x->dtype, false); !s)
          return s;
      (void)ct;
    }
  }

  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", x},
                         {kind == ConvKind::BackwardFilter ? "dy" : "w", w},
                         {kind == ConvKind::BackwardFilter ? "dw" : "y", y},
                         {"bias", bias}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;

  // Dtypes.
  if (kind == ConvKind::BackwardFilter) {
    bool f64 = x->dtype == DType::F64;
    if (!(isF32or16(x->dtype) || f64) || w->dtype != x->dtype)
      return fail(kOp, "x and dy have dtypes " + dt(x->dtype) + " and " +
                           dt(w->dtype) +
                           "; expected both f32, f16, bf16 or f64");
    if (f64 ? y->dtype != DType::F64 : !isF32or16(y->dtype))
      return fail(kOp, "dw has dtype " + dt(y->dtype) +
                           (f64 ? "; f64 x needs an f64 dw"
                                : "; expected f32, f16 or bf16"));
  } else {
    if (!isF32or16(x->dtype))
      return fail(kOp, "x has dtype " + dt(x->dtype) +
                           "; expected f32, f16 or bf16");
    if (w->dtype != x->dtype)
      return fail(kOp, "w has dtype " + dt(w->dtype) + ", x " + dt(x->dtype) +
                           "; they must match");
    if (!isF32or16(y->dtype))
      return fail(kOp, "y has dtype " + dt(y->dtype) +
                           "; expected f32, f16 or bf16");
    if (bias && bias->dtype != y->dtype && bias->dtype != DType::F32)
      return fail(kOp, "bias has dtype " + dt(bias->dtype) +
                           "; expected y's dtype or f32");
  }
  size_t rank = x->shape.size();
  if (w->shape.size() != rank || y->shape.size() != rank)
    return fail(kOp, "x " + shapeStr(x->shape) + ", " +
                         (kind == ConvKind::BackwardFilter ? "dy " : "w ") +
                         shapeStr(w->shape) + " and " +
                         (kind == ConvKind::BackwardFilter ? "dw " : "y ") +
                         shapeStr(y->shape) + " must have the same rank");
  std::vector<int64_t> stride, dil, padB, padE;
  if (Status s = spatialAttr(kOp, "strides", at.strides, spatial, 1, 1, stride);
      !s)
    return s;
  if (Status s =
          spatialAttr(kOp, "dilations", at.dilations, spatial, 1, 1, dil);
      !s)
    return s;
  if (Status s =
          spatialAttr(kOp, "padsBegin", at.padsBegin, spatial, 0, 0, padB);
      !s)
    return s;
  if (Status s = spatialAttr(kOp, "padsEnd", at.padsEnd, spatial, 0, 0, padE);
      !s)
    return s;

  // Geometry: in (conv input side, plan layout), ker, out, channels.
  bool nhwc = at.nhwc;
  int64_t n = x->shape[0], c = 0, m = 0, cg = 0;
  Shape inSp, kerSp, outSp;
  // Dim 1 in NCHW, the last dim in NHWC (filters: [K, C, k...] or
  // [K, k..., C]); the spatial dims of a shape in the plan's layout.
  auto channelsOf = [&](const Shape &shape) {
    return nhwc ? shape[rank - 1] : shape[1];
  };
  auto spatialOf = [&](const Shape &shape) {
    return Shape(shape.begin() + (nhwc ? 1 : 2), shape.end() - (nhwc ? 1 : 0));
  };
  // [N, C, spatial...] or [N, spatial..., C].
  auto inLayout = [&](int64_t lead, int64_t channels, const Shape &sp) {
    Shape shape{lead};
    if (!nhwc)
      shape.push_back(channels);
    shape.insert(shape.end(), sp.begin(), sp.end());
    if (nhwc)
      shape.push_back(channels);
    return shape;
  };
  int64_t groups = at.groups;
  if (kind == ConvKind::Forward) {
    c = nhwc ? x->shape[rank - 1] : x->shape[1];
    m = w->shape[0];
    int64_t wc = nhwc ? w->shape[rank - 1] : w->shape[1];
    inSp.assign(x->shape.begin() + (nhwc ? 1 : 2),
                x->shape.end() - (nhwc ? 1 : 0));
    kerSp.assign(w->shape.begin() + (nhwc ? 1 : 2),
                 w->shape.end() - (nhwc ? 1 : 0));
    if (groups < 1 || c % groups || m % groups)
      return fail(kOp, "groups = " + std::to_string(groups) +
                           " must be >= 1 and divide the input channels (" +
                           std::to_string(c) + ") and the output channels (" +
                           std::to_string(m) + ")");
    cg = c / groups;
    if (wc != cg)
      return fail(kOp, "w " + shapeStr(w->shape) + " has " +
                           std::to_string(wc) +
                           " input channels per group, expected C/groups = " +
                           std::to_string(cg));
    for (int64_t kd : kerSp)
      if (kd < 1)
        return fail(kOp, "w " + shapeStr(w->shape) +
                             " has an empty kernel dimension");
    Shape expected{n};
    if (!nhwc)
      expected.push_back(m);
    for (size_t i = 0; i < spatial; ++i) {
      int64_t padded = inSp[i] + padB[i] + padE[i], span;
      if (Status s = dilatedExtent(kOp, "kernel", i, x->shape, kerSp[i], dil[i],
                                   padded, span);
          !s)
        return s;
      int64_t o = (padded - span) / stride[i] + 1;
      outSp.push_back(o);
      expected.push_back(o);
    }
    if (nhwc)
      expected.push_back(m);
    if (y->shape != expected)
      return fail(kOp, "y has shape " + shapeStr(y->shape) + ", expected " +
                           shapeStr(expected));
    if (bias && !(bias->shape.size() == 1 && bias->shape[0] == m))
      return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                           ", expected [" + std::to_string(m) + "]");
    for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", x},
                           {"w", w},
                           {"bias", bias}})
      if (v && overlapping(*v, *y))
        return fail(kOp, std::string(name) + " overlaps y");
  } else if (kind == ConvKind::BackwardData) {
    // ConvTranspose: x [N, C, in], w [C, M/g, k], y [N, M, out] (NHWC:
    // x [N, in, C], w [C, k, M/g], y [N, out, M]).
    c = channelsOf(x->shape);
    if (groups < 1 || c % groups)
      return fail(kOp, "groups = " + std::to_string(groups) +
                           " must be >= 1 and divide the input channels (" +
                           std::to_string(c) + ")");
    if (w->shape[0] != c)
      return fail(kOp, "w " + shapeStr(w->shape) + " must have x's " +
                           std::to_string(c) + " channels first");
    cg = c / groups;
    int64_t mg = channelsOf(w->shape);
    m = mg * groups;
    if (y->shape[0] != n || channelsOf(y->shape) != m)
      return fail(kOp, "y " + shapeStr(y->shape) + " must have batch " +
                           std::to_string(n) + " and " + std::to_string(m) +
                           " channels (groups * w's " +
                           (nhwc ? "last dimension)" : "dimension 1)"));
    inSp = spatialOf(x->shape);
    kerSp = spatialOf(w->shape);
    outSp = spatialOf(y->shape);
    for (size_t i = 0; i < spatial; ++i) {
      if (kerSp[i] < 1 || inSp[i] < 1)
        return fail(kOp, "x " + shapeStr(x->shape) + " and w " +
                             shapeStr(w->shape) +
                             " need non-empty spatial dimensions");
      int64_t span, dilated, full;
      if (__builtin_mul_overflow(stride[i], inSp[i] - 1, &span) ||
          __builtin_mul_overflow(dil[i], kerSp[i] - 1, &dilated) ||
          __builtin_add_overflow(span, dilated, &full) ||
          full > (int64_t(1) << 60))
        return fail(kOp, "the output extent overflows along spatial "
                         "dimension " +
                             std::to_string(i));
      full = full + 1 - padB[i] - padE[i];
      int64_t outPad = outSp[i] - full;
      if (outPad < 0 || outPad >= std::max(stride[i], dil[i]))
        return fail(kOp, "y " + shapeStr(y->shape) + " has " +
                             std::to_string(outSp[i]) +
                             " positions along spatial dimension " +
                             std::to_string(i) + "; expected " +
                             std::to_string(full) +
                             " plus an output padding below max(stride, "
                             "dilation)");
      if (outPad >= stride[i])
        return fail(kOp, "an output padding of " + std::to_string(outPad) +
                             " >= the stride " + std::to_string(stride[i]) +
                             " (possible with dilation " +
                             std::to_string(dil[i]) +
                             ") is not implemented on the GPU");
    }
    if (bias && !(bias->shape.size() == 1 && bias->shape[0] == m))
      return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                           ", expected [" + std::to_string(m) + "]");
    for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", x},
                           {"w", w},
                           {"bias", bias}})
      if (v && overlapping(*v, *y))
        return fail(kOp, std::string(name) + " overlaps y");
  } else {
    // Backward filter: x [N, C, in], dy [N, M, out], dw [M, C/g, k] (NHWC:
    // x [N, in, C], dy [N, out, M], dw [M, k, C/g]).
    c = channelsOf(x->shape);
    m = y->shape[0];
    if (groups < 1 || c % groups || m % groups)
      return fail(kOp, "groups = " + std::to_string(groups) +
                           " must be >= 1 and divide the input channels (" +
                           std::to_string(c) + ") and the output channels (" +
                           std::to_string(m) + ")");
    cg = c / groups;
    if (channelsOf(y->shape) != cg)
      return fail(kOp, "dw " + shapeStr(y->shape) + " must have C/groups = " +
                           std::to_string(cg) + " as its " +
                           (nhwc ? "last dimension" : "dimension 1"));
    inSp = spatialOf(x->shape);
    kerSp = spatialOf(y->shape);
    for (size_t i = 0; i < spatial; ++i) {
      if (kerSp[i] < 1)
        return fail(kOp, "dw " + shapeStr(y->shape) +
                             " has an empty kernel dimension");
      int64_t padded = inSp[i] + padB[i] + padE[i], span;
      if (Status s = dilatedExtent(kOp, "kernel", i, x->shape, kerSp[i], dil[i],
                                   padded, span);
          !s)
        return s;
      outSp.push_back((padded - span) / stride[i] + 1);
    }
    Shape expected = inLayout(n, m, outSp);
    if (w->shape != expected)
      return fail(kOp, "dy has shape " + shapeStr(w->shape) + ", expected " +
                           shapeStr(expected));
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"x", x}, {"dy", w}})
      if (overlapping(*v, *y))
        return fail(kOp, std::string(name) + " overlaps dw");
  }
  if (spatial > 3)
    return fail(kOp, std::to_string(spatial) +
                         " spatial dimensions are not implemented on the GPU "
                         "(cuDNN: 1 to 3)");
  const int64_t kIntMax = std::numeric_limits<int32_t>::max();
  for (const TensorDesc *v : {x, w, y})
    if (v->numElements() > kIntMax)
      return fail(kOp, "tensors of more than 2^31 elements are not "
                       "implemented on the GPU");

  ConvPlan p;
  if (y->numElements() == 0) {
    p.kind = kind;
    p.empty = true;
    return p;
  }
  if (x->numElements() == 0 || w->numElements() == 0)
    return fail(kOp, "empty inputs with a non-empty result are not "
                     "implemented on the GPU");
  p.kind = kind;
  p.nhwc = nhwc;
  p.spatial = static_cast<int32_t>(spatial);
  p.groups = static_cast<int>(groups);
  // The dtype cuDNN computes in: the data's, or f32 when the output's
  // dtype differs from the inputs' (inputs widened, the result rounded once
  // to the output's dtype by the epilogue).
  DType in = x->dtype, out = y->dtype;
  p.dataType = in == out ? in : (in == DType::F64 ? DType::F64 : DType::F32);
  p.convertIn0 = in != p.dataType;
  p.convertIn1 = w->dtype != p.dataType;
  p.outputToScratch = out != p.dataType;
  bool hasEpilogue = bias || at.act != kActNone;
  p.epilogue = hasEpilogue || p.outputToScratch;
  for (size_t i = 0; i < spatial; ++i)
    if (padB[i] != padE[i])
      p.explicitPad = true;
  // cuDNN dims (NCHW order). Conv input side / output side.
  auto nchwDims = [&](int64_t ch, const Shape &sp) {
    std::vector<int> d{static_cast<int>(n), static_cast<int>(ch)};
    for (int64_t s : sp)
      d.push_back(static_cast<int>(s));
    if (spatial == 1)
      d.push_back(1);
    return d;
  };
  Shape padSp = inSp;
  std::vector<int64_t> cudnnPad(spatial);
  for (size_t i = 0; i < spatial; ++i)
    cudnnPad[i] = padB[i];
  Shape convInSp = kind == ConvKind::BackwardData ? outSp : inSp;
  if (p.explicitPad) {
    for (size_t i = 0; i < spatial; ++i) {
      convInSp[i] += padB[i] + padE[i];
      cudnnPad[i] = 0;
    }
    // The padded tensor in the plan's layout.
    int64_t ch = kind == ConvKind::BackwardData ? m : c;
    p.paddedShape = {n};
    if (!nhwc)
      p.paddedShape.push_back(ch);
    p.paddedShape.insert(p.paddedShape.end(), convInSp.begin(), convInSp.end());
    if (nhwc)
      p.paddedShape.push_back(ch);
    p.padBegin = padB;
    p.padBytes = static_cast<uint64_t>(numElements(p.paddedShape)) *
                 byteSize(p.dataType);
  }
  if (kind == ConvKind::BackwardData) {
    p.xDims = nchwDims(m, convInSp); // the data gradient (plan's y)
    p.yDims = nchwDims(c, inSp);     // the incoming gradient (plan's x)
    p.wDims = {static_cast<int>(c), static_cast<int>(m / groups)};
  } else {
    p.xDims = nchwDims(c, convInSp);
    p.yDims = nchwDims(m, outSp);
    p.wDims = {static_cast<int>(m), static_cast<int>(cg)};
  }
  for (int64_t kd : kerSp)
    p.wDims.push_back(static_cast<int>(kd));
  if (spatial == 1)
    p.wDims.push_back(1);
  for (size_t i = 0; i < spatial; ++i) {
    p.pads.push_back(static_cast<int>(cudnnPad[i]));
    p.strides.push_back(static_cast<int>(stride[i]));
    p.dilations.push_back(static_cast<int>(dil[i]));
  }
  if (spatial == 1) {
    p.pads.push_back(0);
    p.strides.push_back(1);
    p.dilations.push_back(1);
  }
  for (int v : p.pads)
    if (v > kIntMax)
      return fail(kOp, "pads exceed cuDNN's range");
  // Scratch.
  uint64_t de = byteSize(p.dataType);
  if (p.convertIn0)
    p.in0Bytes = static_cast<uint64_t>(x->numElements()) * de;
  if (p.convertIn1)
    p.in1Bytes = static_cast<uint64_t>(w->numElements()) * de;
  if (p.outputToScratch)
    p.outBytes = static_cast<uint64_t>(y->numElements()) * de;
  // The epilogue: channel of each output element.
  if (p.epilogue) {
    EpilogueParams &e = p.epi;
    e.act = at.act;
    e.accDtype = code(p.dataType);
    e.outDtype = code(out);
    e.biasDtype = bias ? code(bias->dtype) : 0;
    e.bias = bias ? cptr(*bias) : nullptr;
    e.out = mptr(*y);
    if (kind == ConvKind::BackwardFilter) {
      e.geom = {1, 1, y->numElements()};
    } else if (nhwc) {
      e.geom = {y->numElements() / std::max<int64_t>(m, 1), m, 1};
    } else {
      e.geom = {n, m, numElements(outSp)};
      if (kind == ConvKind::BackwardData)
        e.geom = {n, m,
                  numElements(Shape(y->shape.begin() + 2, y->shape.end()))};
    }
  }
  return p;
}

std::string convAlgoKey(const ConvPlan &p, int device) {
  auto list = [](const std::vector<int> &v) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i)
      r += (i ? "," : "") + std::to_string(v[i]);
    return r;
  };
  std::string kind = p.kind == ConvKind::Forward        ? "fwd"
                     : p.kind == ConvKind::BackwardData ? "bwd_data"
                                                        : "bwd_filter";
  return kind + " dev" + std::to_string(device) + " " + dt(p.dataType) +
         (p.nhwc ? " nhwc" : " nchw") + " x" + list(p.xDims) + " w" +
         list(p.wDims) + " y" + list(p.yDims) + " p" + list(p.pads) + " s" +
         list(p.strides) + " d" + list(p.dilations) + " g" +
         std::to_string(p.groups);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

Result<PoolPlan> planPool(bool backward, const PlanCall &call,
                          const std::vector<TensorDesc> &ops,
                          const std::vector<TensorDesc> &res) {
  const char *kOp = backward ? "pool_bwd" : "pool";
  bool hasIndices = false;
  if (backward) {
    if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
      return s;
  } else {
    MP_TRY(hi, hasBuffer(call, "indices"));
    hasIndices = hi;
    size_t results = 1 + size_t(hasIndices);
    if (Status s = arity(ops, res, 1, 1, results, results); !s)
      return s;
  }
  const TensorDesc &x = ops[0];
  if (x.shape.size() < 3)
    return Status::error("x must have rank >= 3 ([N, C, spatial...]), got "
                         "rank " +
                         std::to_string(x.shape.size()));
  size_t k = x.shape.size() - 2;
  MP_TRY(mode, stringAttr(call, "mode"));
  PoolPlan plan;
  plan.backward = backward;
  PoolParams &p = plan.params;
  if (mode == "max") {
    p.isMax = 1;
  } else if (mode == "avg" || mode == "avg_include_pad") {
    if (hasIndices)
      return Status::error("indices are only produced by mode 'max', not '" +
                           mode + "'");
    p.isMax = 0;
    p.countIncludePad = mode == "avg_include_pad";
  } else {
    return Status::error("attribute 'mode' has unknown value '" + mode +
                         "' (max, avg, avg_include_pad)");
  }
  MP_TRY(window, intListAttr(call, "window"));
  std::vector<int64_t> padsBegin, padsEnd;
  if (backward) {
    MP_TRY(pads, intListAttr(call, "pads", {}));
    if (!pads.empty()) {
      if (pads.size() != 2 * k)
        return Status::error(
            "attribute 'pads' must have " + std::to_string(2 * k) +
            " values (begins, then ends, for " + std::to_string(k) +
            " spatial dims), got " + std::to_string(pads.size()));
      padsBegin.assign(pads.begin(), pads.begin() + k);
      padsEnd.assign(pads.begin() + k, pads.end());
    }
  } else {
    MP_TRY(pads, intListAttr(call, "pads"));
    if (pads.size() != 2 * k)
      return Status::error(
          "attribute 'pads' must have " + std::to_string(2 * k) +
          " values (begins, then ends, for " + std::to_string(k) +
          " spatial dims), got " + std::to_string(pads.size()));
    padsBegin.assign(pads.begin(), pads.begin() + k);
    padsEnd.assign(pads.begin() + k, pads.end());
  }
  std::vector<int64_t> stridesIn, dilationsIn;
  if (backward) {
    MP_TRY(s, intListAttr(call, "strides", {}));
    stridesIn = s;
  } else {
    MP_TRY(s, intListAttr(call, "strides"));
    stridesIn = s;
  }
  MP_TRY(d, intListAttr(call, "dilations", {}));
  dilationsIn = d;
  MP_TRY(channelsLast, channelsLastAttr(call));
  const bool nhwc = channelsLast;
  if (nhwc && hasIndices)
    return Status::error("indices (ONNX's NCHW indices) need layout 'nchw'");
  // Where the channels and the first spatial dim are.
  const size_t channelDim = nhwc ? x.shape.size() - 1 : 1;
  const size_t firstSpatial = nhwc ? 1 : 2;

  const TensorDesc &yv = backward ? ops[1] : res[0]; // y or dy
  const TensorDesc *dx = backward ? &res[0] : nullptr;
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", &x},
                         {backward ? "dy" : "y", &yv},
                         {"dx", dx}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;
  if (backward) {
    if (!isFloat(x.dtype))
      return fail(kOp, "x has dtype " + dt(x.dtype) +
                           "; expected f32, f16, bf16 or f64");
    if (yv.dtype != x.dtype || dx->dtype != x.dtype)
      return fail(kOp, "dy (" + dt(yv.dtype) + ") and dx (" + dt(dx->dtype) +
                           ") must have x's dtype " + dt(x.dtype));
    if (dx->shape != x.shape)
      return fail(kOp, "dx has shape " + shapeStr(dx->shape) +
                           ", expected x's " + shapeStr(x.shape));
  } else {
    if (!isF32or16(x.dtype))
      return fail(kOp,
                  "x has dtype " + dt(x.dtype) + "; expected f32, f16 or bf16");
    if (yv.dtype != x.dtype)
      return fail(kOp, "y has dtype " + dt(yv.dtype) + ", x " + dt(x.dtype) +
                           "; they must match");
  }
  size_t rank = x.shape.size();
  if (yv.shape.size() != rank)
    return fail(kOp, std::string(backward ? "dy " : "y ") + shapeStr(yv.shape) +
                         " and x " + shapeStr(x.shape) +
                         " must have the same rank");
  if (yv.shape[0] != x.shape[0] || yv.shape[channelDim] != x.shape[channelDim])
    return fail(kOp, std::string(backward ? "dy " : "y ") + shapeStr(yv.shape) +
                         " and x " + shapeStr(x.shape) +
                         " differ in batch or channels");
  if (!backward && overlapping(x, yv))
    return fail(kOp, "y overlaps x");
  if (window.size() != k)
    return fail(kOp, std::string(backward ? "window" : "kernel") + " has " +
                         std::to_string(window.size()) + " entries, expected " +
                         std::to_string(k) + " (one per spatial dimension)");
  std::vector<int64_t> ker, stride, dil, padB, padE;
  if (Status s = spatialAttr(kOp, backward ? "window" : "kernel", window, k, 1,
                             1, ker);
      !s)
    return s;
  if (Status s = spatialAttr(kOp, "strides", stridesIn, k, 1, 1, stride); !s)
    return s;
  if (Status s = spatialAttr(kOp, "dilations", dilationsIn, k, 1, 1, dil); !s)
    return s;
  if (Status s = spatialAttr(kOp, "padsBegin", padsBegin, k, 0, 0, padB); !s)
    return s;
  if (Status s = spatialAttr(kOp, "padsEnd", padsEnd, k, 0, 0, padE); !s)
    return s;
  for (size_t i = 0; i < k; ++i) {
    int64_t in = x.shape[firstSpatial + i], out = yv.shape[firstSpatial + i];
    int64_t padded = in + padB[i] + padE[i], span;
    if (Status s = dilatedExtent(kOp, "window", i, x.shape, ker[i], dil[i],
                                 padded, span);
        !s)
      return s;
    int64_t lo = (padded - span) / stride[i] + 1;
    int64_t hi = ceilDiv(padded - span, stride[i]) + 1;
    if (out != lo && out != hi)
      return fail(
          kOp, std::string(backward ? "dy " : "y ") + shapeStr(yv.shape) +
                   " has " + std::to_string(out) +
                   " outputs along spatial dimension " + std::to_string(i) +
                   ", expected " + std::to_string(lo) +
                   (hi != lo ? " (floor) or " + std::to_string(hi) + " (ceil)"
                             : std::string()));
  }
  if (hasIndices) {
    const TensorDesc &ind = res[1];
    if (Status s = checkDesc(kOp, "indices", ind); !s)
      return s;
    if (ind.dtype != DType::I64)
      return fail(kOp,
                  "indices have dtype " + dt(ind.dtype) + "; expected i64");
    if (ind.shape != yv.shape)
      return fail(kOp, "indices have shape " + shapeStr(ind.shape) +
                           ", expected y's " + shapeStr(yv.shape));
    if (overlapping(ind, x) || overlapping(ind, yv))
      return fail(kOp, "indices overlap x or y");
    p.indices = ind.ptr<int64_t>();
  }
  if (backward)
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"x", &x}, {"dy", &yv}})
      if (overlapping(*v, *dx))
        return fail(kOp, std::string(name) + " overlaps dx");
  if (k > static_cast<size_t>(kMaxSpatial))
    return fail(kOp, std::to_string(k) +
                         " spatial dimensions are not implemented on the GPU");
  p.dtype = code(x.dtype);
  p.nhwc = nhwc;
  p.k = static_cast<int32_t>(k);
  p.n = x.shape[0];
  p.c = x.shape[channelDim];
  p.inSize = 1;
  p.outSize = 1;
  for (size_t i = 0; i < k; ++i) {
    p.in[i] = x.shape[firstSpatial + i];
    p.out[i] = yv.shape[firstSpatial + i];
    p.ker[i] = ker[i];
    p.stride[i] = stride[i];
    p.dil[i] = dil[i];
    p.padB[i] = padB[i];
    p.padE[i] = padE[i];
    p.inSize *= p.in[i];
    p.outSize *= p.out[i];
  }
  p.x = cptr(x);
  if (backward) {
    p.dy = cptr(yv);
    plan.accType = x.dtype == DType::F64 ? DType::F64 : DType::F32;
    if (dx->dtype != plan.accType)
      plan.accBytes =
          static_cast<uint64_t>(dx->numElements()) * byteSize(plan.accType);
    p.y = mptr(*dx); // the final dx
  } else {
    p.y = mptr(yv);
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

namespace {

/// Whether cuDNN runs a batch norm that planBatchNorm accepted, and how.
CudnnBatchNorm chooseCudnnBatchNorm(const BatchNormPlan &plan, bool nhwc,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res,
                                    BatchNormImpl impl) {
  CudnnBatchNorm c;
  auto no = [&](std::string why) {
    c.whyNot = std::move(why);
    return c;
  };
  if (impl == BatchNormImpl::Own)
    return no("the own kernels were asked for");
  const TensorDesc &x = ops[0];
  // bf16: cuDNN's batch norm takes it on sm_80 and later (the backend's
  // architectures), with f32 per-channel tensors as for f16.
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    return no("x is " + dt(x.dtype) +
              " (cuDNN's batch norm: f16, bf16 or f32)");
  // cuDNN's per-channel tensors are f32 for 16-bit and f32 data.
  std::vector<std::pair<const char *, const TensorDesc *>> perChannel;
  if (plan.kind == BatchNormKind::Backward) {
    perChannel = {{"scale", &ops[1]}, {"dscale", &res[1]}, {"dbias", &res[2]}};
  } else {
    perChannel = {{"scale", &ops[1]},
                  {"bias", &ops[2]},
                  {"mean", &ops[3]},
                  {"var", &ops[4]}};
    if (plan.kind == BatchNormKind::Training) {
      perChannel.push_back({"runningMean", &res[1]});
      perChannel.push_back({"runningVar", &res[2]});
    }
    if (res[0].addr == x.addr)
      return no("y is x (in place)");
  }
  for (auto [name, v] : perChannel)
    if (v->dtype != DType::F32)
      return no(std::string(name) + " is " + dt(v->dtype) +
                " (cuDNN's per-channel tensors are f32)");
  const Shape &s = x.shape;
  int64_t n = s[0], channels = nhwc ? s.back() : s[1];
  int64_t spatial =
      nhwc ? product(s, 1, s.size() - 1) : product(s, 2, s.size());
  constexpr int64_t kIntMax = 2147483647;
  if (n * channels * spatial > kIntMax)
    return no("x has more than 2^31 - 1 elements (cuDNN's sizes are int)");
  const int64_t count = n * spatial; // elements per channel
  // cuDNN has refused large batches (N > 65535 in inference, > 880801 in
  // training; PyTorch guards so): channels last, the batch folds into the
  // spatial dim (the same rows, the same statistics); channels first runs
  // on the own kernels.
  const int64_t maxBatch =
      plan.kind == BatchNormKind::Inference ? 65535 : 880801;
  if (n > maxBatch) {
    if (!nhwc)
      return no("a batch of " + std::to_string(n) + " (cuDNN's batch norm " +
                "takes up to " + std::to_string(maxBatch) + ")");
    spatial *= n;
    n = 1;
  }
  if (count == 0)
    return no("x has no elements per channel");
  if (plan.kind == BatchNormKind::Training && count < 2)
    return no("one element per channel (no unbiased variance)");
  c.use = true;
  c.nhwc = nhwc;
  c.dtype = x.dtype;
  c.dims = {static_cast<int32_t>(n), static_cast<int32_t>(channels),
            static_cast<int32_t>(spatial), 1};
  // Persistent mode for training only: its backward wants the forward's
  // saved mean and inverse variance, which the culib op does not carry.
  c.persistent = impl == BatchNormImpl::Auto && nhwc && x.dtype == DType::F16 &&
                 plan.kind == BatchNormKind::Training;
  return c;
}

} // namespace

Result<BatchNormPlan> planBatchNorm(BatchNormKind kind, const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res,
                                    BatchNormImpl impl) {
  BatchNormPlan plan;
  plan.kind = kind;
  BatchNormParams &p = plan.params;
  const char *op = kind == BatchNormKind::Inference  ? "batchNormInference"
                   : kind == BatchNormKind::Training ? "batchNormTraining"
                                                     : "batch_norm_bwd";
  if (kind == BatchNormKind::Backward) {
    if (Status s = arity(ops, res, 3, 3, 3, 3); !s)
      return s;
    MP_TRY(eps, floatAttr(call, "epsilon", 1e-5));
    p.epsilon = static_cast<float>(eps);
  } else {
    if (Status s =
            arity(ops, res, 5, 5, kind == BatchNormKind::Inference ? 1 : 3,
                  kind == BatchNormKind::Inference ? 1 : 3);
        !s)
      return s;
    MP_TRY(eps, floatAttr(call, "epsilon"));
    p.epsilon = static_cast<float>(eps);
    if (kind == BatchNormKind::Training) {
      MP_TRY(momentum, floatAttr(call, "momentum"));
      p.momentum = static_cast<float>(momentum);
    }
  }
  const TensorDesc &x = ops[0];
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (x.shape.size() < 2)
    return fail(op, "x needs rank >= 2 (N, C, ...), got " + shapeStr(x.shape));
  MP_TRY(channelsLast, channelsLastAttr(call));
  const bool nhwc = channelsLast;
  int64_t c = nhwc ? x.shape.back() : x.shape[1];
  ChannelGeom g =
      nhwc ? ChannelGeom{product(x.shape, 0, x.shape.size() - 1), c, 1}
           : ChannelGeom{x.shape[0], c, product(x.shape, 2, x.shape.size())};
  p.geom = g;
  auto checkParam = [&](const char *name, const TensorDesc &v,
                        bool anyFloat) -> Status {
    if (Status s = checkDesc(op, name, v); !s)
      return s;
    if (anyFloat ? !isFloat(v.dtype) : !isF32or16(v.dtype))
      return fail(op, std::string(name) + " has dtype " + dt(v.dtype) +
                          (anyFloat ? "; expected a float dtype"
                                    : "; expected f32, f16 or bf16"));
    if (!(v.shape.size() == 1 && v.shape[0] == c))
      return fail(op, std::string(name) + " has shape " + shapeStr(v.shape) +
                          ", expected [" + std::to_string(c) + "]");
    return Status::ok();
  };
  if (!std::isfinite(p.epsilon) || p.epsilon < 0)
    return fail(op, "epsilon must be finite and >= 0");
  p.xDtype = code(x.dtype);
  p.x = cptr(x);
  if (kind == BatchNormKind::Backward) {
    const TensorDesc &scale = ops[1], &dy = ops[2];
    const TensorDesc &dx = res[0], &dscale = res[1], &dbias = res[2];
    if (!isFloat(x.dtype))
      return fail(op, "x has dtype " + dt(x.dtype) +
                          "; expected f32, f16, bf16 or f64");
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"dy", &dy}, {"dx", &dx}})
      if (v->dtype != x.dtype || v->shape != x.shape)
        return fail(op, std::string(name) + " (" + dt(v->dtype) + " " +
                            shapeStr(v->shape) +
                            ") must have x's dtype and shape (" + dt(x.dtype) +
                            " " + shapeStr(x.shape) + ")");
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"scale", &scale},
          {"dscale", &dscale},
          {"dbias", &dbias}})
      if (Status s = checkParam(name, *v, true); !s)
        return s;
    const std::pair<const char *, const TensorDesc *> outs[] = {
        {"dx", &dx}, {"dscale", &dscale}, {"dbias", &dbias}};
    for (auto [oname, o] : outs) {
      for (auto [iname, in] :
           {std::pair<const char *, const TensorDesc *>{"x", &x},
            {"scale", &scale},
            {"dy", &dy}})
        if (overlapping(*o, *in))
          return fail(op, std::string(iname) + " overlaps " + oname);
    }
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = i + 1; j < 3; ++j)
        if (overlapping(*outs[i].second, *outs[j].second))
          return fail(op, std::string(outs[i].first) + " overlaps " +
                              outs[j].first);
    p.scaleDtype = code(scale.dtype);
    p.dyDtype = code(dy.dtype);
    p.dxDtype = code(dx.dtype);
    p.dscaleDtype = code(dscale.dtype);
    p.dbiasDtype = code(dbias.dtype);
    p.scale = cptr(scale);
    p.dy = cptr(dy);
    p.dx = mptr(dx);
    p.dscale = mptr(dscale);
    p.dbias = mptr(dbias);
    plan.cudnn = chooseCudnnBatchNorm(plan, nhwc, ops, res, impl);
    plan.scratchBytes =
        plan.cudnn.use ? 0 : static_cast<uint64_t>(c) * 4 * sizeof(double);
    return plan;
  }
  const TensorDesc &y = res[0];
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (!isF32or16(x.dtype))
    return fail(op,
                "x has dtype " + dt(x.dtype) + "; expected f32, f16 or bf16");
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y (" + dt(y.dtype) + " " + shapeStr(y.shape) +
                        ") must have x's dtype and shape (" + dt(x.dtype) +
                        " " + shapeStr(x.shape) + ")");
  if (overlapping(x, y) && x.addr != y.addr)
    return fail(op, "y overlaps x without being x itself");
  const char *names[] = {"scale", "bias", "mean", "var"};
  if (kind == BatchNormKind::Training) {
    names[2] = "inputMean";
    names[3] = "inputVar";
  }
  for (int i = 1; i < 5; ++i)
    if (Status s = checkParam(names[i - 1], ops[i], false); !s)
      return s;
  p.scaleDtype = code(ops[1].dtype);
  p.biasDtype = code(ops[2].dtype);
  p.meanDtype = code(ops[3].dtype);
  p.varDtype = code(ops[4].dtype);
  p.scale = cptr(ops[1]);
  p.bias = cptr(ops[2]);
  p.mean = cptr(ops[3]);
  p.var = cptr(ops[4]);
  p.y = mptr(y);
  if (kind == BatchNormKind::Inference) {
    for (int i = 1; i < 5; ++i)
      if (overlapping(ops[i], y))
        return fail(op, std::string(names[i - 1]) + " overlaps y");
  } else {
    if (!std::isfinite(p.momentum))
      return fail(op, "momentum must be finite");
    const TensorDesc &rm = res[1], &rv = res[2];
    if (Status s = checkParam("runningMean", rm, false); !s)
      return s;
    if (Status s = checkParam("runningVar", rv, false); !s)
      return s;
    const char *inNames[] = {"x", names[0], names[1], names[2], names[3]};
    const char *outNames[] = {"y", "runningMean", "runningVar"};
    for (int o = 0; o < 3; ++o) {
      for (int i = 0; i < 5; ++i) {
        bool allowed =
            (o == 0 && i == 0) || (o == 1 && i == 3) || (o == 2 && i == 4);
        if (overlapping(res[o], ops[i]) &&
            !(allowed && res[o].addr == ops[i].addr))
          return fail(op, std::string(outNames[o]) + " overlaps " + inNames[i]);
      }
      for (int j = 0; j < 3; ++j)
        if (j != o && overlapping(res[o], res[j]))
          return fail(op,
                      std::string(outNames[o]) + " overlaps " + outNames[j]);
    }
    if (g.outer * g.inner == 0)
      return fail(op, "x " + shapeStr(x.shape) +
                          " has no elements per channel to take statistics of");
    p.runMeanDtype = code(rm.dtype);
    p.runVarDtype = code(rv.dtype);
    p.runMean = mptr(rm);
    p.runVar = mptr(rv);
  }
  plan.cudnn = chooseCudnnBatchNorm(plan, nhwc, ops, res, impl);
  if (!plan.cudnn.use)
    plan.scratchBytes = static_cast<uint64_t>(c) * 3 * sizeof(float);
  else if (kind == BatchNormKind::Training)
    plan.scratchBytes = static_cast<uint64_t>(c) * 2 * sizeof(float);
  return plan;
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

Result<GatherParams> planGather(const PlanCall &call,
                                const std::vector<TensorDesc> &ops,
                                const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
    return s;
  MP_TRY(axisIn, intAttr(call, "axis", 0));
  constexpr std::string_view op = "gather";
  const TensorDesc &data = ops[0], &indices = ops[1], &y = res[0];
  if (Status s = checkDesc(op, "data", data); !s)
    return s;
  if (Status s = checkDesc(op, "indices", indices); !s)
    return s;
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return fail(op, "indices have dtype " + dt(indices.dtype) +
                        "; expected i32 or i64");
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (data.dtype != y.dtype)
    return fail(op, "data has dtype " + dt(data.dtype) + " but y has " +
                        dt(y.dtype));
  if (data.shape.empty())
    return fail(op, "data must have rank >= 1");
  int64_t r = static_cast<int64_t>(data.shape.size());
  if (axisIn < -r || axisIn >= r)
    return fail(op, "axis " + std::to_string(axisIn) +
                        " is out of range for data of rank " +
                        std::to_string(r));
  size_t axis = static_cast<size_t>(axisIn < 0 ? axisIn + r : axisIn);
  Shape expected(data.shape.begin(), data.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + axis + 1,
                  data.shape.end());
  if (y.shape != expected)
    return fail(op,
                "y " + shapeStr(y.shape) + " should be " + shapeStr(expected) +
                    " for data " + shapeStr(data.shape) + ", indices " +
                    shapeStr(indices.shape) + ", axis " + std::to_string(axis));
  if (overlapping(y, data) || overlapping(y, indices))
    return fail(op, "y overlaps an operand");
  GatherParams p;
  p.elemSize = static_cast<int32_t>(byteSize(data.dtype));
  p.indexDtype = code(indices.dtype);
  p.outer = product(data.shape, 0, axis);
  p.axisDim = data.shape[axis];
  p.n = indices.numElements();
  p.inner = product(data.shape, axis + 1, data.shape.size());
  p.data = cptr(data);
  p.indices = cptr(indices);
  p.out = mptr(y);
  return p;
}

Result<ScatterNDPlan> planScatterND(const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 3, 3, 1, 1); !s)
    return s;
  MP_TRY(reduction, stringAttr(call, "reduction", "none"));
  constexpr std::string_view op = "scatter_nd";
  ScatterNDPlan plan;
  ScatterNDParams &p = plan.params;
  if (reduction == "none")
    p.reduction = kSeNone;
  else if (reduction == "add")
    p.reduction = kSeAdd;
  else if (reduction == "mul")
    p.reduction = kSeMul;
  else if (reduction == "max")
    p.reduction = kSeMax;
  else if (reduction == "min")
    p.reduction = kSeMin;
  else
    return Status::error("attribute 'reduction' has an unknown value '" +
                         reduction + "'");
  const TensorDesc &data = ops[0], &indices = ops[1], &updates = ops[2],
                   &y = res[0];
  for (auto [name, v] :
       {std::pair<const char *, const TensorDesc *>{"data", &data},
        {"updates", &updates},
        {"y", &y}})
    if (Status s = checkDesc(op, name, *v); !s)
      return s;
  if (data.dtype != y.dtype || updates.dtype != y.dtype)
    return fail(op, "data (" + dt(data.dtype) + "), updates (" +
                        dt(updates.dtype) + ") and y (" + dt(y.dtype) +
                        ") must have one dtype");
  if (y.shape != data.shape)
    return fail(op, "y " + shapeStr(y.shape) + " must have the shape of data " +
                        shapeStr(data.shape));
  if (y.addr != data.addr && overlapping(y, data))
    return fail(op, "y partly overlaps data");
  if (Status s = checkDesc(op, "indices", indices); !s)
    return s;
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return fail(op, "indices have dtype " + dt(indices.dtype) +
                        "; expected i32 or i64");
  const size_t r = data.shape.size(), q = indices.shape.size();
  if (r < 1 || q < 1)
    return fail(op, "data " + shapeStr(data.shape) + " and indices " +
                        shapeStr(indices.shape) + " must have rank >= 1");
  const int64_t k = indices.shape[q - 1];
  if (k < 1 || k > static_cast<int64_t>(r))
    return fail(op, "the last dim of indices " + shapeStr(indices.shape) +
                        " must be in [1, " + std::to_string(r) + "]");
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != expected)
    return fail(op, "updates " + shapeStr(updates.shape) + " should be " +
                        shapeStr(expected) + " for data " +
                        shapeStr(data.shape) + " and indices " +
                        shapeStr(indices.shape));
  if (overlapping(y, indices) || overlapping(y, updates))
    return fail(op, "y overlaps indices or updates");
  if (k > kMaxDims)
    return fail(op, "index tuples of more than " + std::to_string(kMaxDims) +
                        " components are not implemented on the GPU");
  // Atomics add f32, f64, f16, bf16 and 32 / 64-bit integers; everything
  // else combines in tuple order.
  bool atomicAdds = isFloat(y.dtype) || y.dtype == DType::I32 ||
                    y.dtype == DType::I64 || y.dtype == DType::U32 ||
                    y.dtype == DType::U64;
  p.ordered = p.reduction != kSeNone && !(p.reduction == kSeAdd && atomicAdds);
  std::vector<int64_t> strides = stridesOf(data.shape);
  p.dtype = code(y.dtype);
  p.elemSize = static_cast<int32_t>(byteSize(y.dtype));
  p.indexDtype = code(indices.dtype);
  p.k = static_cast<int32_t>(k);
  p.tuples = product(indices.shape, 0, q - 1);
  p.sliceLen = product(data.shape, static_cast<size_t>(k), r);
  for (int64_t j = 0; j < k; ++j) {
    p.dims[j] = data.shape[j];
    p.strides[j] = strides[j];
  }
  p.indices = cptr(indices);
  p.updates = cptr(updates);
  p.out = mptr(y);
  plan.copyBytes = y.addr == data.addr ? 0 : y.byteCount();
  return plan;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

Status readLossAttrs(const PlanCall &call, LossParams &p) {
  MP_TRY(name, stringAttr(call, "reduction", "mean"));
  if (name == "none")
    p.reduction = 0;
  else if (name == "sum")
    p.reduction = 1;
  else if (name == "mean")
    p.reduction = 2;
  else
    return Status::error("attribute 'reduction' must be none, sum or mean, "
                         "got '" +
                         name + "'");
  p.hasIgnore = 0;
  if (call.attr("ignore_index")) {
    MP_TRY(ignore, intAttr(call, "ignore_index"));
    p.hasIgnore = 1;
    p.ignoreIndex = ignore;
  }
  return Status::ok();
}

} // namespace

Result<LossParams> planLoss(LossKind kind, const PlanCall &call,
                            const std::vector<TensorDesc> &ops,
                            const std::vector<TensorDesc> &res) {
  LossParams p;
  const TensorDesc *input, *target, *weight, *dloss = nullptr;
  if (kind == LossKind::NllLoss) {
    std::array<const TensorDesc *, 3> in{};
    if (Status s = bindDescs<3>(
            call, ops, "operands",
            {{{"input", false}, {"target", false}, {"weight", true}}}, in);
        !s)
      return s;
    input = in[0];
    target = in[1];
    weight = in[2];
  } else {
    bool sce = kind == LossKind::SoftmaxCrossEntropyGrad;
    std::array<const TensorDesc *, 4> in{};
    if (Status s = bindDescs<4>(call, ops, "operands",
                                {{{sce ? "scores" : "input", false},
                                  {sce ? "labels" : "target", false},
                                  {"dloss", false},
                                  {sce ? "weights" : "weight", true}}},
                                in);
        !s)
      return s;
    input = in[0];
    target = in[1];
    dloss = in[2];
    weight = in[3];
  }
  if (Status s = arity(ops, res, 0, SIZE_MAX, 1, 1); !s)
    return s;
  if (Status s = readLossAttrs(call, p); !s)
    return s;
  const TensorDesc &out = res[0];
  const char *op = kind == LossKind::NllLoss ? "nll_loss"
                   : kind == LossKind::NllLossGrad
                       ? "nll_loss_grad"
                       : "softmax_cross_entropy_grad";
  bool sce = kind == LossKind::SoftmaxCrossEntropyGrad;
  const char *inName = sce ? "scores" : "input";
  const char *tName = sce ? "labels" : "target";
  const char *wName = sce ? "weights" : "weight";
  const char *outName = kind == LossKind::NllLoss ? "loss"
                        : sce                     ? "dscores"
                                                  : "dinput";
  for (auto [name, v] :
       {std::pair<const char *, const TensorDesc *>{inName, input},
        {tName, target},
        {"dloss", dloss},
        {wName, weight},
        {outName, &out}})
    if (v)
      if (Status s = checkDesc(op, name, *v); !s)
        return s;
  if (!isFloat(input->dtype))
    return fail(op, std::string(inName) + " has dtype " + dt(input->dtype) +
                        "; expected f32, f16, bf16 or f64");
  if (target->dtype != DType::I32 && target->dtype != DType::I64)
    return fail(op, std::string(tName) + " has dtype " + dt(target->dtype) +
                        "; expected i32 or i64");
  if (input->shape.size() < 2)
    return fail(op, std::string(inName) +
                        " must be [N, C] or [N, C, d1..dk], got " +
                        shapeStr(input->shape));
  p.n = input->shape[0];
  p.c = input->shape[1];
  p.inner = product(input->shape, 2, input->shape.size());
  Shape expectedTarget{p.n};
  expectedTarget.insert(expectedTarget.end(), input->shape.begin() + 2,
                        input->shape.end());
  if (target->shape != expectedTarget)
    return fail(op, std::string(tName) + " has shape " +
                        shapeStr(target->shape) + ", expected " +
                        shapeStr(expectedTarget));
  if (kind == LossKind::NllLoss) {
    if (weight &&
        (weight->shape != Shape{p.c} || weight->dtype != input->dtype))
      return fail(op, "weight is " + dt(weight->dtype) + " " +
                          shapeStr(weight->shape) + ", expected " +
                          dt(input->dtype) + " [" + std::to_string(p.c) + "]");
    if (out.dtype != input->dtype)
      return fail(op, "loss has dtype " + dt(out.dtype) +
                          ", expected input's " + dt(input->dtype));
    if (p.reduction == 0 ? out.shape != target->shape : out.numElements() != 1)
      return fail(op, "loss has shape " + shapeStr(out.shape) + ", expected " +
                          (p.reduction == 0 ? shapeStr(target->shape)
                                            : std::string("one element")));
    for (const TensorDesc *in : {input, target, weight})
      if (in && overlapping(*in, out))
        return fail(op, "loss overlaps an operand");
  } else {
    if (!isFloat(dloss->dtype))
      return fail(op, "dloss has dtype " + dt(dloss->dtype) +
                          "; expected a float type");
    if (p.reduction == 0 ? dloss->shape != target->shape
                         : dloss->numElements() != 1)
      return fail(op, "dloss has shape " + shapeStr(dloss->shape) +
                          ", expected " +
                          (p.reduction == 0
                               ? shapeStr(target->shape) + " (reduction none)"
                               : std::string("one element")));
    if (weight && (weight->shape != Shape{p.c} || !isFloat(weight->dtype)))
      return fail(op, std::string(wName) + " is " + dt(weight->dtype) + " " +
                          shapeStr(weight->shape) + ", expected a float [" +
                          std::to_string(p.c) + "]");
    if (out.dtype != input->dtype || out.shape != input->shape)
      return fail(op, std::string(outName) + " (" + dt(out.dtype) + " " +
                          shapeStr(out.shape) + ") must have " + inName +
                          "'s dtype and shape (" + dt(input->dtype) + " " +
                          shapeStr(input->shape) + ")");
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{inName, input},
          {tName, target},
          {"dloss", dloss},
          {wName, weight}})
      if (v && overlapping(*v, out))
        return fail(op, std::string(name) + " overlaps " + outName);
    p.dlossDtype = code(dloss->dtype);
    p.dloss = cptr(*dloss);
  }
  p.inDtype = code(input->dtype);
  p.targetDtype = code(target->dtype);
  p.weightDtype = weight ? code(weight->dtype) : 0;
  p.outDtype = code(out.dtype);
  p.input = cptr(*input);
  p.target = cptr(*target);
  p.weight = weight ? cptr(*weight) : nullptr;
  p.out = mptr(out);
  return p;
}

//===----------------------------------------------------------------------===//
// Loss scaling, optimizers
//===----------------------------------------------------------------------===//

namespace {

Status checkScalar(std::string_view op, std::string_view name,
                   const TensorDesc &v, DType dtype) {
  if (Status s = checkDesc(op, name, v); !s)
    return s;
  if (v.dtype != dtype || v.numElements() != 1)
    return fail(op, std::string(name) + " must be one " + dt(dtype) +
                        " element, got " + dt(v.dtype) + " " +
                        shapeStr(v.shape));
  return Status::ok();
}

} // namespace

Result<std::vector<UnscaleParams>>
planUnscale(const PlanCall &, const std::vector<TensorDesc> &ops,
            const std::vector<TensorDesc> &res) {
  const size_t n = ops.size();
  if (n < 2 || res.size() != n)
    return Status::error(
        "expects operands (scale, g_1..g_n) and results (found_inf, "
        "u_1..u_n) with n >= 1, got " +
        std::to_string(n) + " operands and " + std::to_string(res.size()) +
        " results");
  const TensorDesc &scale = ops[0], &foundInf = res[0];
  if (Status s = checkScalar("inverse_scale", "scale", scale, DType::F32); !s)
    return s;
  if (Status s = checkDesc("unscale_check_finite", "found_inf", foundInf); !s)
    return s;
  if (foundInf.dtype != DType::F32 || foundInf.numElements() != 1)
    return Status::error("found_inf must be one f32 element, got " +
                         dt(foundInf.dtype) + " with " +
                         std::to_string(foundInf.numElements()) + " elements");
  if (overlapping(foundInf, scale))
    return Status::error("found_inf overlaps scale");
  std::vector<UnscaleParams> out;
  for (size_t i = 1; i < n; ++i) {
    const TensorDesc &g = ops[i], &u = res[i];
    std::string gi = "g_" + std::to_string(i), ui = "u_" + std::to_string(i);
    if (!isFloat(g.dtype))
      return Status::error(gi + " has dtype " + dt(g.dtype) +
                           "; expected a float type");
    if (u.dtype != DType::F32 || u.shape != g.shape)
      return Status::error(ui + " must be f32 with " + gi + "'s shape " +
                           shapeStr(g.shape) + ", got " + dt(u.dtype) + " " +
                           shapeStr(u.shape));
    if (Status s = checkDesc("unscale_check_finite", gi, g); !s)
      return s;
    if (overlapping(u, foundInf) || overlapping(u, scale) ||
        overlapping(foundInf, g))
      return Status::error(ui + " or found_inf overlaps another buffer");
    for (size_t j = 1; j < n; ++j) {
      const TensorDesc &other = ops[j];
      bool inPlace = j == i && u.addr == g.addr && g.dtype == DType::F32;
      if (overlapping(u, other) && !inPlace)
        return Status::error(ui + " overlaps g_" + std::to_string(j));
      if (j > i && overlapping(u, res[j]))
        return Status::error(ui + " overlaps u_" + std::to_string(j));
    }
    UnscaleParams p;
    p.gDtype = code(g.dtype);
    p.n = g.numElements();
    p.scale = scale.ptr<const float>();
    p.g = cptr(g);
    p.u = u.ptr<float>();
    p.foundInf = foundInf.ptr<float>();
    out.push_back(p);
  }
  return out;
}

Result<LossScaleParams>
planLossScaleUpdate(const PlanCall &call, const std::vector<TensorDesc> &ops,
                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 2, 2); !s)
    return s;
  LossScaleParams p;
  MP_TRY(growth, floatAttr(call, "growth_factor", p.growthFactor));
  MP_TRY(backoff, floatAttr(call, "backoff_factor", p.backoffFactor));
  MP_TRY(interval, intAttr(call, "growth_interval", p.growthInterval));
  p.growthFactor = growth;
  p.backoffFactor = backoff;
  p.growthInterval = interval;
  const TensorDesc &scale = res[0], &tracker = res[1], &found = ops[0];
  if (overlapping(scale, tracker) || overlapping(scale, found) ||
      overlapping(tracker, found))
    return Status::error("scale, growth_tracker and found_inf must not "
                         "overlap");
  constexpr std::string_view op = "loss_scale_update";
  if (Status s = checkScalar(op, "scale", scale, DType::F32); !s)
    return s;
  if (Status s = checkScalar(op, "growth_tracker", tracker, DType::I64); !s)
    return s;
  if (Status s = checkScalar(op, "found_inf", found, DType::F32); !s)
    return s;
  if (p.growthInterval < 1 || !(p.growthFactor > 1.0) ||
      !(p.backoffFactor > 0.0 && p.backoffFactor < 1.0))
    return fail(op, "needs growth_interval >= 1, growth_factor > 1 and 0 < "
                    "backoff_factor < 1");
  p.foundInf = found.ptr<const float>();
  p.scale = scale.ptr<float>();
  p.tracker = tracker.ptr<int64_t>();
  return p;
}

Result<OptimizerParams> planOptimizer(bool adam, const PlanCall &call,
                                      const std::vector<TensorDesc> &ops,
                                      const std::vector<TensorDesc> &res) {
  OptimizerParams p;
  p.kind = adam ? 1 : 0;
  std::array<const TensorDesc *, 2> in{};
  if (Status s = bindDescs<2>(call, ops, "operands",
                              {{{"grad", false}, {"found_inf", true}}}, in);
      !s)
    return s;
  const TensorDesc *param, *buf1 = nullptr, *buf2 = nullptr, *step;
  const char *op = adam ? "adam_step" : "sgd_step";
  if (adam) {
    if (Status s = arity(ops, res, 0, SIZE_MAX, 4, 4); !s)
      return s;
    MP_TRY(lr, floatAttr(call, "lr", 1e-3));
    MP_TRY(beta1, floatAttr(call, "beta1", 0.9));
    MP_TRY(beta2, floatAttr(call, "beta2", 0.999));
    MP_TRY(eps, floatAttr(call, "eps", 1e-8));
    MP_TRY(wd, floatAttr(call, "weight_decay", 0.0));
    MP_TRY(decoupled, boolAttr(call, "decoupled_weight_decay", false));
    p.lr = lr;
    p.beta1 = beta1;
    p.beta2 = beta2;
    p.eps = eps;
    p.weightDecay = wd;
    p.decoupled = decoupled;
    param = &res[0];
    buf1 = &res[1];
    buf2 = &res[2];
    step = &res[3];
    const std::pair<const char *, const TensorDesc *> all[] = {
        {"grad", in[0]},   {"found_inf", in[1]}, {"param", param},
        {"exp_avg", buf1}, {"exp_avg_sq", buf2}, {"step", step}};
    for (size_t a = 0; a < 6; ++a)
      for (size_t b = a + 1; b < 6; ++b)
        if (all[a].second && all[b].second &&
            overlapping(*all[a].second, *all[b].second))
          return Status::error(std::string(all[a].first) + " overlaps " +
                               all[b].first);
  } else {
    std::array<const TensorDesc *, 3> out{};
    if (Status s = bindDescs<3>(
            call, res, "results",
            {{{"param", false}, {"momentum_buffer", true}, {"step", false}}},
            out);
        !s)
      return s;
    MP_TRY(lr, floatAttr(call, "lr"));
    MP_TRY(momentum, floatAttr(call, "momentum", 0.0));
    MP_TRY(dampening, floatAttr(call, "dampening", 0.0));
    MP_TRY(wd, floatAttr(call, "weight_decay", 0.0));
    MP_TRY(nesterov, boolAttr(call, "nesterov", false));
    p.lr = lr;
    p.momentum = momentum;
    p.dampening = dampening;
    p.weightDecay = wd;
    p.nesterov = nesterov;
    param = out[0];
    buf1 = out[1];
    step = out[2];
    if (momentum != 0 && !buf1)
      return Status::error("momentum " + std::to_string(momentum) +
                           " needs a momentum_buffer (has_momentum_buffer = "
                           "1)");
    const std::pair<const char *, const TensorDesc *> all[] = {
        {"grad", in[0]},
        {"found_inf", in[1]},
        {"param", param},
        {"momentum_buffer", buf1},
        {"step", step}};
    for (size_t a = 0; a < 5; ++a)
      for (size_t b = a + 1; b < 5; ++b)
        if (all[a].second && all[b].second &&
            overlapping(*all[a].second, *all[b].second))
          return Status::error(std::string(all[a].first) + " overlaps " +
                               all[b].first);
  }
  const TensorDesc &grad = *in[0];
  if (Status s = checkDesc(op, "param", *param); !s)
    return s;
  if (param->dtype != DType::F32)
    return fail(op,
                "param must be f32 (master weights), got " + dt(param->dtype));
  auto likeParam = [&](const char *name, const TensorDesc &v) -> Status {
    if (Status s = checkDesc(op, name, v); !s)
      return s;
    if (v.dtype != DType::F32 || v.shape != param->shape)
      return fail(op, std::string(name) + " must be f32 " +
                          shapeStr(param->shape) + " like the parameter, got " +
                          dt(v.dtype) + " " + shapeStr(v.shape));
    return Status::ok();
  };
  if (Status s = likeParam("grad", grad); !s)
    return s;
  if (Status s = checkScalar(op, "step", *step, DType::I64); !s)
    return s;
  if (adam) {
    if (Status s = likeParam("exp_avg", *buf1); !s)
      return s;
    if (Status s = likeParam("exp_avg_sq", *buf2); !s)
      return s;
    if (!(p.beta1 >= 0 && p.beta1 < 1 && p.beta2 >= 0 && p.beta2 < 1 &&
          p.eps >= 0))
      return fail(op, "needs 0 <= beta1, beta2 < 1 and eps >= 0");
  } else {
    if (p.momentum != 0)
      if (Status s = likeParam("momentum_buffer", *buf1); !s)
        return s;
    if (p.nesterov && (p.momentum <= 0 || p.dampening != 0))
      return fail(op, "Nesterov momentum needs momentum > 0 and dampening 0");
  }
  if (in[1])
    if (Status s = checkScalar(op, "found_inf", *in[1], DType::F32); !s)
      return s;
  p.n = param->numElements();
  p.grad = grad.ptr<const float>();
  p.foundInf = in[1] ? in[1]->ptr<const float>() : nullptr;
  p.param = param->ptr<float>();
  p.buf1 = (buf1 && (adam || p.momentum != 0)) ? buf1->ptr<float>() : nullptr;
  p.buf2 = buf2 ? buf2->ptr<float>() : nullptr;
  p.step = step->ptr<int64_t>();
  return p;
}

//===----------------------------------------------------------------------===//
// The call table of the GPU
//===----------------------------------------------------------------------===//

const std::vector<std::string> &cudaCallKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k = {
        "cublaslt.matmul",
        "cudnn.batch_norm_bwd",
        "cudnn.batch_norm_inference",
        "cudnn.batch_norm_training",
        "cudnn.conv_bwd_data",
        "cudnn.conv_bwd_filter",
        "cudnn.conv_fwd",
        "cudnn.pool",
        "cudnn.pool_bwd",
        "cudnn.softmax",
        "kernel.adam_step",
        "kernel.broadcast",
        "kernel.cast",
        "kernel.concat",
        "kernel.copy",
        "kernel.elementwise",
        "kernel.gather",
        "kernel.loss_scale_update",
        "kernel.nll_loss",
        "kernel.nll_loss_grad",
        "kernel.reduce",
        "kernel.scatter_nd",
        "kernel.sgd_step",
        "kernel.slice",
        "kernel.softmax_cross_entropy_grad",
        "kernel.transpose",
        "kernel.unscale_check_finite",
    };
    for (const auto *topic : {&nnPlanners(), &dataPlanners()})
      for (const TopicPlanner &t : *topic)
        k.push_back(t.kind);
    std::sort(k.begin(), k.end());
    return k;
  }();
  return kinds;
}

bool isCudaCallKind(const std::string &kind) {
  const auto &k = cudaCallKinds();
  return std::binary_search(k.begin(), k.end(), kind);
}

Status planCall(const PlanCall &call, const std::vector<TensorDesc> &ops,
                const std::vector<TensorDesc> &res) {
  const std::string &k = call.kind;
  auto st = [](auto &&r) -> Status {
    if (!r)
      return r.status();
    return Status::ok();
  };
  if (k == "cublaslt.matmul")
    return st(planMatmul(call, ops, res));
  if (k == "cudnn.conv_fwd")
    return st(planConv(ConvKind::Forward, call, ops, res));
  if (k == "cudnn.conv_bwd_data")
    return st(planConv(ConvKind::BackwardData, call, ops, res));
  if (k == "cudnn.conv_bwd_filter")
    return st(planConv(ConvKind::BackwardFilter, call, ops, res));
  if (k == "cudnn.pool")
    return st(planPool(false, call, ops, res));
  if (k == "cudnn.pool_bwd")
    return st(planPool(true, call, ops, res));
  if (k == "cudnn.batch_norm_inference")
    return st(planBatchNorm(BatchNormKind::Inference, call, ops, res));
  if (k == "cudnn.batch_norm_training")
    return st(planBatchNorm(BatchNormKind::Training, call, ops, res));
  if (k == "cudnn.batch_norm_bwd")
    return st(planBatchNorm(BatchNormKind::Backward, call, ops, res));
  if (k == "cudnn.softmax") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    return st(planSoftmax(call, ops[0], res[0]));
  }
  if (k == "kernel.elementwise")
    return st(planElementwise(call, ops, res));
  if (k == "kernel.cast" || k == "kernel.copy" || k == "kernel.transpose" ||
      k == "kernel.reduce") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    if (k == "kernel.cast")
      return st(planCast(ops[0], res[0]));
    if (k == "kernel.copy")
      return st(planCopy(ops[0], res[0]));
    if (k == "kernel.reduce")
      return st(planReduce(call, ops[0], res[0]));
    Result<std::vector<int64_t>> perm = intListAttr(call, "perm");
    if (!perm)
      return perm.status();
    return st(planTranspose(ops[0], res[0], *perm));
  }
  if (k == "kernel.broadcast" || k == "kernel.slice") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    return k == "kernel.broadcast" ? st(planBroadcast(ops[0], res[0]))
                                   : st(planSlice(call, ops[0], res[0]));
  }
  if (k == "kernel.concat") {
    if (Status s = arity(ops, res, 1, SIZE_MAX, 1, 1); !s)
      return s;
    return st(planConcat(call, ops, res[0]));
  }
  if (k == "kernel.gather")
    return st(planGather(call, ops, res));
  if (k == "kernel.scatter_nd")
    return st(planScatterND(call, ops, res));
  if (k == "kernel.nll_loss")
    return st(planLoss(LossKind::NllLoss, call, ops, res));
  if (k == "kernel.nll_loss_grad")
    return st(planLoss(LossKind::NllLossGrad, call, ops, res));
  if (k == "kernel.softmax_cross_entropy_grad")
    return st(planLoss(LossKind::SoftmaxCrossEntropyGrad, call, ops, res));
  if (k == "kernel.unscale_check_finite")
    return st(planUnscale(call, ops, res));
  if (k == "kernel.loss_scale_update")
    return st(planLossScaleUpdate(call, ops, res));
  if (k == "kernel.sgd_step")
    return st(planOptimizer(false, call, ops, res));
  if (k == "kernel.adam_step")
    return st(planOptimizer(true, call, ops, res));
  for (const auto *topic : {&nnPlanners(), &dataPlanners()})
    for (const TopicPlanner &t : *topic)
      if (k == t.kind)
        return t.plan(call, ops, res);
  return Status::error("no CUDA implementation of '" + k + "'");
}

Status checkPlanForCuda(const Plan &plan, const std::string &name) {
  if (Status s = validatePlan(plan, name); !s)
    return s;
  std::vector<std::string> missing;
  for (size_t i = 0; i < plan.calls.size(); ++i)
    if (!isCudaCallKind(plan.calls[i].kind))
      missing.push_back(plan.calls[i].describe(i));
  if (!missing.empty()) {
    std::string list;
    for (const std::string &m : missing)
      list += (list.empty() ? "" : ", ") + m;
    return Status::error(name + ": the CUDA backend does not implement " +
                         std::to_string(missing.size()) + " call" +
                         (missing.size() == 1 ? "" : "s") + ": " + list);
  }
  // Made-up addresses: the arena at 1 << 40, every weight and state at its
  // own 1 << 36 aligned range above it (plans are far smaller).
  const uint64_t arenaBase = uint64_t(1) << 40;
  auto descOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    TensorDesc d{b.dtype, b.shape, 0};
    if (b.storage == BufferStorage::Arena)
      d.addr = arenaBase + b.offset;
    else
      d.addr = arenaBase * 2 + (uint64_t(b.id) << 36);
    return d;
  };
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    std::vector<TensorDesc> ops, res;
    for (uint32_t id : call.operands)
      ops.push_back(descOf(id));
    for (uint32_t id : call.results)
      res.push_back(descOf(id));
    if (Status s = planCall(call, ops, res); !s)
      return Status::error(name + ": " + call.describe(i) + ": " + s.message());
  }
  return Status::ok();
}

} // namespace mp::rt::cuda
