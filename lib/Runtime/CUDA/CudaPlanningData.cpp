//===- CudaPlanningData.cpp - planning of the CUDA backend's data calls ---===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. Data movement and indexing: tile,
// pad, trilu, gather_elements, gather_nd, scatter_elements and resize. As in
// CudaPlanningNN.cpp, each planner reads the call's attributes as the CPU
// call does and runs the CPU kernel's own checks (the cpu::check*
// functions of mp/Runtime/CPU/DataKernels.h) on views of the descriptors;
// what is left here is the kernels' geometry.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// The planners of this file
//===----------------------------------------------------------------------===//

const std::vector<TopicPlanner> &planning::dataPlanners() {
  static const std::vector<TopicPlanner> planners = {};
  return planners;
}

} // namespace mp::rt::cuda
