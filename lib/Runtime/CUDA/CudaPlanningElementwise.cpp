//===- CudaPlanningElementwise.cpp - elementwise calls and casts ----------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. kernel.elementwise (broadcast loops,
// the function table, ONNX's default alpha / beta) and kernel.cast, as the
// CPU's Elementwise.cpp and Cast.cpp check them.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>
#include <iterator>
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

using cpu::ElementwiseDtypes;
using cpu::ElementwiseFn;
using cpu::ElementwiseKind;

// EwOp's codes are ElementwiseFn's values, then kEwClip1.
static_assert(kEwClip1 == std::size(cpu::kElementwiseFnInfo));

/// Whether every one of the loop's `numInputs` inputs has y's shape.
int32_t isContiguous(const BroadcastLoop &loop, size_t numInputs) {
  for (size_t k = 0; k < numInputs; ++k)
    if (loop.rank != 1 || loop.strides[k][0] != 1)
      return 0;
  return 1;
}

/// The broadcast loop of `ins` to y, each input y itself (in place) or
/// apart from it.
Result<BroadcastLoop> inputsBroadcastTo(std::string_view op,
                                        const std::vector<TensorDesc> &ins,
                                        const TensorDesc &y) {
  std::vector<Shape> shapes;
  for (const TensorDesc &in : ins)
    shapes.push_back(in.shape);
  Result<BroadcastLoop> loop = makeBroadcastLoop(shapes, y.shape);
  if (!loop)
    return fail(op, loop.message());
  for (size_t k = 0; k < ins.size(); ++k) {
    bool same = ins[k].addr == y.addr && ins[k].dtype == y.dtype &&
                ins[k].shape == y.shape;
    if (!same && overlapping(ins[k], y))
      return fail(op, "y overlaps input " + std::to_string(k));
  }
  return loop;
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
  const cpu::ElementwiseFnInfo &info = cpu::infoOf(*fn);
  const TensorDesc &y = res[0];
  size_t n = ins.size();
  if (Status s = cpu::detail::checkElementwiseInputCount(op, info.kind, n); !s)
    return s;
  for (size_t k = 0; k < n; ++k)
    if (Status s = checkDesc(op, "input " + std::to_string(k), ins[k]); !s)
      return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;

  EwParams p;
  p.op = static_cast<EwOp>(*fn);
  if (info.kind == ElementwiseKind::Clip && n == 1)
    p.op = kEwClip1;
  std::vector<DType> inDtypes;
  for (const TensorDesc &d : ins)
    inDtypes.push_back(d.dtype);
  MP_TRY(t, cpu::detail::checkElementwiseDtypes(op, *fn, info.kind, inDtypes,
                                                y.dtype));
  // How the GPU computes it.
  using D = ElementwiseDtypes;
  bool isUnsigned =
      t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
  if (info.dtypes == D::Any) {
    p.compute = kComputeRaw;
  } else if (t == DType::Bool) {
    if (info.dtypes != D::Bool && info.kind != ElementwiseKind::Compare)
      return fail(op, "does not take dtype " + dt(t));
    p.compute = kComputeInt;
  } else if (isFloat(t)) {
    if (info.dtypes != D::Floats && info.dtypes != D::Numeric)
      return fail(op, "does not take dtype " + dt(t));
    p.compute = t == DType::F64 ? kComputeF64 : kComputeF32;
  } else {
    bool takes = info.dtypes == D::Numeric || info.dtypes == D::Ints ||
                 (info.dtypes == D::Integers && isUnsigned);
    if (!takes || (isUnsigned && (p.op == kEwNeg || p.op == kEwRelu)))
      return fail(op, "does not take dtype " + dt(t));
    p.compute = t == DType::U64 ? kComputeU64 : kComputeInt;
  }

  MP_TRY(loop, inputsBroadcastTo(op, ins, y));
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
  p.loop = loop;
  p.contiguous = isContiguous(loop, n);
  return p;
}

Result<FusedEwParams> planFusedElementwise(const PlanCall &call,
                                           const std::vector<TensorDesc> &ins,
                                           const std::vector<TensorDesc> &res) {
  static_assert(kMaxFusedSteps == static_cast<int>(rt::kMaxFusedSteps) &&
                kMaxFusedStepArgs == static_cast<int>(rt::kMaxFusedStepArgs) &&
                kMaxEwInputs >= static_cast<int>(rt::kMaxFusedInputs));
  constexpr std::string_view op = "fused_elementwise";
  if (Status s = arity(ins, res, 1, ins.size(), 1, 1); !s)
    return s;
  MP_TRY(program, cpu::fusedProgramOf(call, ins.size()));
  const TensorDesc &y = res[0];
  auto isFused = [](DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
  };
  for (size_t k = 0; k < ins.size(); ++k) {
    const std::string name = "input " + std::to_string(k);
    if (Status s = checkDesc(op, name, ins[k]); !s)
      return s;
    if (!isFused(ins[k].dtype))
      return fail(op, name + " is " + dt(ins[k].dtype) + " (f16, bf16 or f32)");
  }
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (!isFused(y.dtype))
    return fail(op, "y is " + dt(y.dtype) + " (f16, bf16 or f32)");
  MP_TRY(loop, inputsBroadcastTo(op, ins, y));

  FusedEwParams p;
  EwParams &io = p.io;
  io.numInputs = static_cast<int32_t>(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    io.inDtype[k] = code(ins[k].dtype);
    io.in[k] = cptr(ins[k]);
  }
  io.outDtype = code(y.dtype);
  io.out = mptr(y);
  io.n = y.numElements();
  io.loop = loop;
  io.contiguous = isContiguous(loop, ins.size());
  p.numSteps = static_cast<int32_t>(program.steps.size());
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const FusedStep &step = program.steps[s];
    FusedStepParams &out = p.steps[s];
    out.op = static_cast<int32_t>(step.fn);
    if (step.fn == ElementwiseFn::Clip && step.args.size() == 1)
      out.op = kEwClip1;
    out.numArgs = static_cast<int32_t>(step.args.size());
    for (size_t a = 0; a < step.args.size(); ++a)
      out.args[a] = static_cast<int32_t>(step.args[a].index) +
                    (step.args[a].isStep ? kMaxEwInputs : 0);
    auto [alpha, beta] = cpu::resolveAlphaBeta(
        step.fn, cpu::ElementwiseParams{step.alpha, step.beta});
    out.alpha = static_cast<float>(alpha);
    out.beta = static_cast<float>(beta);
  }
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
  p.contiguous = isContiguous(p.loop, 1);
  return p;
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

Result<CastParams> planCast(const PlanCall &call, const TensorDesc &x,
                            const TensorDesc &y) {
  constexpr std::string_view op = "cast";
  Result<int64_t> saturate = cpu::intAttr(call, "saturate", 1);
  if (!saturate)
    return saturate.status();
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  if (Status s = cpu::checkCast(viewOf(x), viewOf(y)); !s)
    return s;
  CastParams p = castOf(x.dtype, cptr(x), y.dtype, mptr(y), x.numElements());
  p.saturate = *saturate != 0;
  MP_TRY(roundMode, cpu::roundModeOf(call));
  p.roundMode = static_cast<int32_t>(roundMode);
  return p;
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
