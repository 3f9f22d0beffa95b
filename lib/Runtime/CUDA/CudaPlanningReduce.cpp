//===- CudaPlanningReduce.cpp - planning of kernel.reduce -----------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. kernel.reduce (the CPU's Reduce.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

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
  cpu::ReduceOptions options;
  if (call.attr("compute_type")) {
    MP_TRY(ct, dtypeAttr(call, "compute_type"));
    options.computeType = ct;
  }
  MP_TRY(last, intAttr(call, "select_last_index", 0));
  options.selectLastIndex = last != 0;
  return planReduce(*fn, axes, options, x, y);
}

Result<ReduceParams> planReduce(cpu::ReduceFn fn,
                                const std::vector<int64_t> &axes,
                                const cpu::ReduceOptions &options,
                                const TensorDesc &x, const TensorDesc &y) {
  const std::string op = "reduce " + std::string(cpu::reduceFnName(fn));
  const bool last = options.selectLastIndex;
  using R = cpu::ReduceFn;
  ReduceParams p;
  switch (fn) {
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
  std::vector<bool> reduced;
  if (Status s =
          cpu::checkReduce(viewOf(x), viewOf(y), fn, axes, options, reduced);
      !s)
    return s;
  bool arg = p.op == kRedArgMax || p.op == kRedArgMin;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (x.dtype == DType::U64 && !arg && p.op != kRedMax && p.op != kRedMin)
    return fail(op, "is not implemented on the GPU for dtype u64");
  if (arg) {
    int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
    if (x.shape[axis] == 0)
      return fail(op, "axis " + std::to_string(axes[0]) + " of x " +
                          shapeStr(x.shape) + " is empty");
  }
  // Bool max and min reduce the 0/1 bytes (checkReduce allows no other).
  p.dtype = code(x.dtype == DType::Bool ? DType::U8 : x.dtype);
  p.outDtype = code(y.dtype == DType::Bool ? DType::U8 : y.dtype);
  p.selectLast = last;
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

} // namespace mp::rt::cuda
