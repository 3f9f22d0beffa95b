//===- CudaPlanningData.cpp - planning of the CUDA backend's data calls ---===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. Data movement and indexing: trilu,
// tile, pad, gather_elements, gather_nd, scatter_elements and resize. As in
// CudaPlanningNN.cpp, each planner reads the call's attributes as the CPU
// call does and runs the CPU kernel's own checks (the cpu::check*
// functions of mp/Runtime/CPU/DataKernels.h) on views of the descriptors;
// what is left here is the kernels' geometry.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"
#include "mp/Runtime/CPU/NNKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mp::rt::cuda {

using namespace planning;

namespace {

/// An error for ranks the kernels' fixed-size arrays cannot index.
Status checkRank(std::string_view op, const Shape &shape) {
  if (shape.size() > static_cast<size_t>(kMaxDims))
    return fail(op, "tensors of rank " + std::to_string(shape.size()) +
                        " (more than " + std::to_string(kMaxDims) +
                        ") are not implemented on the GPU");
  return Status::ok();
}

} // namespace

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Result<TriluParams> planTrilu(const PlanCall &call,
                              const std::vector<TensorDesc> &ops,
                              const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  MP_TRY(upper, cpu::boolAttr(call, "upper", true));
  MP_TRY(k, cpu::intAttr(call, "k", 0));
  const TensorDesc &x = ops[0], &y = res[0];
  if (Status s = cpu::checkTrilu(viewOf(x), viewOf(y)); !s)
    return s;
  TriluParams p;
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.upper = upper;
  p.rows = x.shape[x.shape.size() - 2];
  p.cols = x.shape.back();
  // Beyond +-(rows + cols) nothing changes; the clamp keeps i + k exact.
  const int64_t lim = p.rows + p.cols + 1;
  p.k = std::clamp(k, -lim, lim);
  p.n = x.numElements();
  p.x = cptr(x);
  p.y = mptr(y);
  return p;
}

Result<TileParams> planTile(const PlanCall &,
                            const std::vector<TensorDesc> &ops,
                            const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  const TensorDesc &x = ops[0], &y = res[0];
  if (Status s = cpu::checkTile(viewOf(x), viewOf(y)); !s)
    return s;
  if (Status s = checkRank("tile", x.shape); !s)
    return s;
  TileParams p;
  p.rank = static_cast<int32_t>(x.shape.size());
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.n = y.numElements();
  const std::vector<int64_t> strides = stridesOf(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    p.yDims[d] = y.shape[d];
    p.xDims[d] = x.shape[d];
    p.xStrides[d] = strides[d];
  }
  p.x = cptr(x);
  p.y = mptr(y);
  return p;
}

Result<PadParams> planPad(const PlanCall &call,
                          const std::vector<TensorDesc> &ops,
                          const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  MP_TRY(mode, cpu::padModeOf(call));
  MP_TRY(pads, cpu::intListAttr(call, "pads"));
  MP_TRY(value, cpu::floatAttr(call, "value", 0.0));
  const TensorDesc &x = ops[0], &y = res[0];
  MP_TRY(g, cpu::padGeometry(viewOf(x), viewOf(y), mode, pads, value));
  if (Status s = checkRank("pad", x.shape); !s)
    return s;
  PadParams p;
  p.rank = static_cast<int32_t>(x.shape.size());
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.mode = mode == cpu::PadMode::Constant  ? kPadConstant
           : mode == cpu::PadMode::Reflect ? kPadReflect
           : mode == cpu::PadMode::Edge    ? kPadEdge
                                           : kPadWrap;
  p.n = y.numElements();
  const std::vector<int64_t> strides = stridesOf(x.shape);
  for (size_t d = 0; d < x.shape.size(); ++d) {
    p.yDims[d] = y.shape[d];
    p.xStrides[d] = strides[d];
    p.lo[d] = g.lo[d];
    p.len[d] = g.len[d];
    p.before[d] = g.before[d];
  }
  std::memcpy(&p.constant, g.constant, sizeof p.constant);
  p.x = cptr(x);
  p.y = mptr(y);
  return p;
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

namespace {

/// The parameters gather_elements and scatter_elements share.
Result<ElementsParams> elementsParams(std::string_view op,
                                      const TensorDesc &data,
                                      const TensorDesc &indices, int64_t axis) {
  if (Status s = checkRank(op, data.shape); !s)
    return s;
  ElementsParams p;
  p.rank = static_cast<int32_t>(data.shape.size());
  p.elemSize = static_cast<int32_t>(byteSize(data.dtype));
  p.dtype = code(data.dtype);
  p.indexDtype = code(indices.dtype);
  p.axis = static_cast<int32_t>(axis);
  p.axisDim = data.shape[static_cast<size_t>(axis)];
  const std::vector<int64_t> strides = stridesOf(data.shape);
  for (size_t d = 0; d < data.shape.size(); ++d) {
    p.dims[d] = indices.shape[d];
    p.dataStrides[d] = strides[d];
  }
  p.data = cptr(data);
  p.indices = cptr(indices);
  return p;
}

} // namespace

Result<ElementsParams> planGatherElements(const PlanCall &call,
                                          const std::vector<TensorDesc> &ops,
                                          const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
    return s;
  MP_TRY(axis, cpu::intAttr(call, "axis", 0));
  const TensorDesc &data = ops[0], &indices = ops[1], &y = res[0];
  if (Status s = cpu::checkGatherElements(viewOf(data), viewOf(indices),
                                          viewOf(y), axis);
      !s)
    return s;
  MP_TRY(p, elementsParams("gather_elements", data, indices, axis));
  p.n = y.numElements();
  p.out = mptr(y);
  return p;
}

Result<GatherNDParams> planGatherND(const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
    return s;
  MP_TRY(batchDims, cpu::intAttr(call, "batch_dims", 0));
  const TensorDesc &data = ops[0], &indices = ops[1], &y = res[0];
  if (Status s = cpu::checkGatherND(viewOf(data), viewOf(indices), viewOf(y),
                                    batchDims);
      !s)
    return s;
  const size_t r = data.shape.size(), q = indices.shape.size(),
               b = static_cast<size_t>(batchDims);
  const int64_t k = indices.shape[q - 1];
  if (k > kMaxDims)
    return fail("gather_nd", "index tuples of more than " +
                                 std::to_string(kMaxDims) +
                                 " components are not implemented on the GPU");
  GatherNDParams p;
  p.elemSize = static_cast<int32_t>(byteSize(data.dtype));
  p.indexDtype = code(indices.dtype);
  p.k = static_cast<int32_t>(k);
  p.sliceLen = product(data.shape, b + static_cast<size_t>(k), r);
  p.perBatch = product(indices.shape, b, q - 1);
  p.batchStride = product(data.shape, b, r);
  p.n = y.numElements();
  const std::vector<int64_t> strides = stridesOf(data.shape);
  for (int64_t j = 0; j < k; ++j) {
    p.dims[j] = data.shape[b + static_cast<size_t>(j)];
    p.strides[j] = strides[b + static_cast<size_t>(j)];
  }
  p.data = cptr(data);
  p.indices = cptr(indices);
  p.out = mptr(y);
  return p;
}

Result<ScatterElementsPlan>
planScatterElements(const PlanCall &call, const std::vector<TensorDesc> &ops,
                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 3, 3, 1, 1); !s)
    return s;
  MP_TRY(axis, cpu::intAttr(call, "axis", 0));
  MP_TRY(reduction, cpu::scatterReductionOf(call));
  const TensorDesc &data = ops[0], &indices = ops[1], &updates = ops[2],
                   &y = res[0];
  if (Status s = cpu::checkScatterElements(viewOf(data), viewOf(indices),
                                           viewOf(updates), viewOf(y), axis);
      !s)
    return s;
  MP_TRY(p, elementsParams("scatter_elements", data, indices, axis));
  ScatterElementsPlan plan;
  const int64_t along = indices.shape[static_cast<size_t>(axis)];
  p.n = along ? indices.numElements() / along : 0;
  p.reduction = static_cast<int32_t>(reduction);
  p.updates = cptr(updates);
  p.out = mptr(y);
  plan.params = p;
  plan.copyBytes = y.addr == data.addr ? 0 : y.byteCount();
  return plan;
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

Result<ResizeParams> planResize(const PlanCall &call,
                                const std::vector<TensorDesc> &ops,
                                const std::vector<TensorDesc> &res) {
  MP_TRY(o, checkedUnaryOptions(call, ops, res, cpu::resizeOptionsOf,
                                cpu::checkResize));
  const TensorDesc &x = ops[0], &y = res[0];
  if (Status s = checkRank("resize", x.shape); !s)
    return s;
  ResizeParams p;
  const size_t r = x.shape.size();
  p.rank = static_cast<int32_t>(r);
  p.dtype = code(x.dtype);
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.mode = static_cast<int32_t>(o.mode);
  p.transform = static_cast<int32_t>(o.coordinateTransform);
  p.nearest = static_cast<int32_t>(o.nearestMode);
  p.excludeOutside = o.excludeOutside;
  p.cubicA = o.cubicCoeffA;
  p.extrapolation = o.extrapolationValue;
  p.n = y.numElements();
  const bool crop =
      o.coordinateTransform == cpu::CoordinateTransform::TfCropAndResize;
  // Integer data (nearest, tf_crop_and_resize): checkResize made sure the
  // value fits x's dtype; its bits, truncated toward zero (bool: != 0).
  const double v = std::trunc(o.extrapolationValue);
  if (crop && x.dtype == DType::Bool)
    p.extrapolationBits = o.extrapolationValue != 0;
  else if (crop && !isFloat(x.dtype) && p.n != 0 && r > 0)
    p.extrapolationBits = v < 0 ? static_cast<uint64_t>(static_cast<int64_t>(v))
                                : static_cast<uint64_t>(v);
  const std::vector<int64_t> strides = stridesOf(x.shape);
  for (size_t d = 0; d < r; ++d) {
    p.xDims[d] = x.shape[d];
    p.yDims[d] = y.shape[d];
    p.xStrides[d] = strides[d];
    p.scales[d] = o.scales[d];
    if (crop) {
      p.roiStart[d] = o.roi[d];
      p.roiEnd[d] = o.roi[r + d];
    }
  }
  p.x = cptr(x);
  p.y = mptr(y);
  return p;
}

} // namespace mp::rt::cuda
