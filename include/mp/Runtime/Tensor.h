//===- Tensor.h - host tensors of the runtime ---------------------*- C++ -*-===//
#ifndef MP_RUNTIME_TENSOR_H
#define MP_RUNTIME_TENSOR_H

#include "mp/Runtime/DType.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace mp::rt {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar).
int64_t numElements(const Shape &shape);

/// A non-owning view of a dense, row-major tensor in host memory.
struct TensorView {
  DType dtype = DType::F32;
  Shape shape;
  void *data = nullptr;

  int64_t numElements() const { return rt::numElements(shape); }
  size_t byteCount() const { return numElements() * byteSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A dense, row-major tensor that owns 64-byte aligned host memory.
class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DType dtype, Shape shape);
  DType dtype() const { return view_.dtype; }
  const Shape &shape() const { return view_.shape; }
  int64_t numElements() const { return view_.numElements(); }
  size_t byteCount() const { return view_.byteCount(); }
  void *data() { return view_.data; }
  const void *data() const { return view_.data; }
  template <typename T> T *as() { return view_.as<T>(); }
  template <typename T> const T *as() const { return view_.as<T>(); }
  const TensorView &view() const { return view_; }

private:
  struct Free {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, Free> storage_;
  TensorView view_;
};

/// Element i of `t` as a double (integers beyond 2^53 lose precision; exact
/// integer comparisons should not use this).
double elementAsDouble(const HostTensor &t, int64_t i);

} // namespace mp::rt

#endif // MP_RUNTIME_TENSOR_H
