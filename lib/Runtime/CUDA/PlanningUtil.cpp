//===- PlanningUtil.cpp - helpers of the CUDA backend's planners ----------===//
//
// See PlanningUtil.h.
//
//===----------------------------------------------------------------------===//
#include "PlanningUtil.h"

namespace mp::rt::cuda::planning {

Status checkDesc(std::string_view op, std::string_view name,
                 const TensorDesc &v) {
  if (Status s = cpu::detail::checkView(op, name, viewOf(v)); !s)
    return s;
  if (byteSize(v.dtype) == 0)
    return fail(op, std::string(name) + " has an unknown dtype");
  return Status::ok();
}

Status checkComputeType(const PlanCall &call, DType input, bool required) {
  if (!required && !call.attr("compute_type"))
    return Status::ok();
  MP_TRY(compute, cpu::dtypeAttr(call, "compute_type"));
  if (!isFloat(compute))
    return Status::error("attribute 'compute_type' must be a float type, got " +
                         dt(compute));
  if (compute == DType::F32 || compute == input)
    return Status::ok();
  return Status::error("compute type " + dt(compute) + " cannot accumulate " +
                       dt(input) + " inputs");
}

} // namespace mp::rt::cuda::planning
