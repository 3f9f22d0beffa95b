//===- Tensor.cpp - host tensors of the runtime --------------------------===//
#include "mp/Runtime/Tensor.h"

#include <cstdlib>
#include <new>

namespace mp::rt {

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void HostTensor::Free::operator()(void *p) const { std::free(p); }

HostTensor::HostTensor(DType dtype, Shape shape) {
  view_.dtype = dtype;
  view_.shape = std::move(shape);
  // 64-byte alignment suits AVX-512 loads and BLAS; aligned_alloc needs a
  // size that is a multiple of the alignment, and never 0.
  size_t bytes = view_.byteCount();
  size_t rounded = ((bytes + 63) / 64) * 64;
  void *p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p)
    throw std::bad_alloc();
  storage_.reset(p);
  view_.data = p;
}

} // namespace mp::rt
