//===- CudaPlanningIndexing.cpp - planning of gather and scatter_nd -------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. kernel.gather and kernel.scatter_nd
// (the CPU's Indexing.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

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
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  int64_t axisAt = axisIn;
  if (Status s =
          cpu::checkGather(viewOf(data), viewOf(indices), viewOf(y), axisAt);
      !s)
    return s;
  const size_t axis = static_cast<size_t>(axisAt);
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
  MP_TRY(reduction, cpu::scatterReductionOf(call));
  constexpr std::string_view op = "scatter_nd";
  ScatterNDPlan plan;
  ScatterNDParams &p = plan.params;
  switch (reduction) {
  case cpu::ScatterReduction::None:
    p.reduction = kSeNone;
    break;
  case cpu::ScatterReduction::Add:
    p.reduction = kSeAdd;
    break;
  case cpu::ScatterReduction::Mul:
    p.reduction = kSeMul;
    break;
  case cpu::ScatterReduction::Max:
    p.reduction = kSeMax;
    break;
  case cpu::ScatterReduction::Min:
    p.reduction = kSeMin;
    break;
  }
  const TensorDesc &data = ops[0], &indices = ops[1], &updates = ops[2],
                   &y = res[0];
  for (auto [name, v] :
       {std::pair<const char *, const TensorDesc *>{"data", &data},
        {"updates", &updates},
        {"y", &y}})
    if (Status s = checkDesc(op, name, *v); !s)
      return s;
  if (Status s = cpu::checkScatterND(viewOf(data), viewOf(indices),
                                     viewOf(updates), viewOf(y));
      !s)
    return s;
  const size_t r = data.shape.size(), q = indices.shape.size();
  const int64_t k = indices.shape[q - 1];
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

} // namespace mp::rt::cuda
