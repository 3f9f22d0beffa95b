//===- CudaPlanningPool.cpp - planning of cudnn.pool and pool_bwd ---------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.pool and cudnn.pool_bwd (the
// CPU's Pool.cpp and PoolBackward.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

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
  MP_TRY(k, cpu::spatialRank(viewOf(x), "x"));
  // The CPU calls' attributes and the CPU kernels' checks.
  MP_TRY(o, backward ? cpu::poolBackwardOptionsOf(call, k)
                     : cpu::poolOptionsOf(call, k, hasIndices));
  PoolPlan plan;
  plan.backward = backward;
  PoolParams &p = plan.params;
  p.isMax = o.kind == cpu::PoolKind::Max;
  p.countIncludePad = o.countIncludePad;
  const bool nhwc = o.layout == cpu::Layout::NHWC;
  // Where the channels and the first spatial dim are.
  const size_t channelDim = nhwc ? x.shape.size() - 1 : 1;
  const size_t firstSpatial = nhwc ? 1 : 2;

  const TensorDesc &yv = backward ? ops[1] : res[0]; // y or dy
  const TensorDesc *dx = backward ? &res[0] : nullptr;
  const TensorDesc *indices = hasIndices ? &res[1] : nullptr;
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", &x},
                         {backward ? "dy" : "y", &yv},
                         {"dx", dx},
                         {"indices", indices}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;
  TensorView indicesView;
  if (indices)
    indicesView = viewOf(*indices);
  Status checked =
      backward ? cpu::checkPoolBackward(viewOf(x), viewOf(yv), viewOf(*dx), o)
               : cpu::checkPool(viewOf(x), viewOf(yv), o,
                                indices ? &indicesView : nullptr);
  if (!checked)
    return checked;
  if (indices)
    p.indices = indices->ptr<int64_t>();
  // The window per spatial dim (checked above): a left-out attribute is its
  // default in every dim.
  auto perDim = [&](const std::vector<int64_t> &given, int64_t deflt) {
    return given.empty() ? std::vector<int64_t>(k, deflt) : given;
  };
  const std::vector<int64_t> ker = o.kernel, stride = perDim(o.strides, 1),
                             dil = perDim(o.dilations, 1),
                             padB = perDim(o.padsBegin, 0),
                             padE = perDim(o.padsEnd, 0);
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

} // namespace mp::rt::cuda
