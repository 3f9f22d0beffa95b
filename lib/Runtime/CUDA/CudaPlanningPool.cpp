//===- CudaPlanningPool.cpp - planning of cudnn.pool and pool_bwd ---------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.pool and cudnn.pool_bwd (the
// CPU's Pool.cpp and PoolBackward.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

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

} // namespace mp::rt::cuda
