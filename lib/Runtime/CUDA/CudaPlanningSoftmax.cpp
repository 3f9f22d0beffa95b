//===- CudaPlanningSoftmax.cpp - planning of cudnn.softmax ----------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.softmax (the CPU's Softmax.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

Result<SoftmaxParams> planSoftmax(const PlanCall &call, const TensorDesc &x,
                                  const TensorDesc &y) {
  MP_TRY(axisIn, intAttr(call, "axis"));
  MP_TRY(log, intAttr(call, "log", 0));
  if (log != 0 && log != 1)
    return Status::error("attribute 'log' must be 0 or 1, got " +
                         std::to_string(log));
  // checkDesc: the dtype is known (the CPU's checks assume it); the rest
  // is the CPU's own checks.
  std::string_view op = log ? "logSoftmax" : "softmax";
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  int64_t axis = axisIn;
  if (Status s = cpu::checkSoftmax(viewOf(x), viewOf(y), axis, log != 0); !s)
    return s;
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

} // namespace mp::rt::cuda
