//===- CudaPlanningTestSupport.h - descriptors for CUDA planner tests -*- C++ -*-===//
//
// The planners of the CUDA backend (mp/Runtime/CUDA/CudaPlanning.h) see
// buffers as descriptors with device addresses; their tests make them up.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H

#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <utility>

namespace mp::rt::test {

/// Tensors at distinct, 256-aligned made-up addresses, one after another.
struct Addr {
  uint64_t next = uint64_t(1) << 32;
  cuda::TensorDesc operator()(DType t, Shape s) {
    cuda::TensorDesc d{t, std::move(s), next};
    next += (d.byteCount() + 4096) / 256 * 256 + 256;
    return d;
  }
};

} // namespace mp::rt::test

#endif // MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H
