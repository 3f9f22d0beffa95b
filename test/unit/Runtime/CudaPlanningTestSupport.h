//===- CudaPlanningTestSupport.h - descriptors for CUDA planner tests -*- C++ -*-===//
//
// The planners of the CUDA backend (mp/Runtime/CUDA/CudaPlanning.h) see
// buffers as descriptors with device addresses; their tests make them up.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H

#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <string>
#include <utility>
#include <vector>

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

/// A call of `kind` with the attributes `attrs` (no buffers: the planners
/// get descriptors).
inline PlanCall callOf(std::string kind, std::vector<PlanAttr> attrs) {
  PlanCall c;
  c.kind = std::move(kind);
  c.attributes = std::move(attrs);
  return c;
}

/// The error message of a planner's Result.
template <typename T> std::string messageOf(const Result<T> &r) {
  return r.message();
}

} // namespace mp::rt::test

#endif // MP_TEST_UNIT_RUNTIME_CUDAPLANNINGTESTSUPPORT_H
