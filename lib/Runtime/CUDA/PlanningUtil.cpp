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

} // namespace mp::rt::cuda::planning
