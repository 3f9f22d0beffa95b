//===- Tensor.cpp - host tensors of the runtime --------------------------===//
#include "mp/Runtime/Tensor.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/NarrowTypes.h"

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

double elementAsDouble(const HostTensor &t, int64_t i) {
  switch (t.dtype()) {
  case DType::F32:
    return t.as<float>()[i];
  case DType::F64:
    return t.as<double>()[i];
  case DType::F16:
    return toFloat(t.as<Half>()[i]);
  case DType::BF16:
    return toFloat(t.as<BFloat16>()[i]);
  case DType::I8:
    return t.as<int8_t>()[i];
  case DType::U8:
    return t.as<uint8_t>()[i];
  case DType::Bool:
    return t.as<uint8_t>()[i];
  case DType::I16:
    return t.as<int16_t>()[i];
  case DType::U16:
    return t.as<uint16_t>()[i];
  case DType::I32:
    return t.as<int32_t>()[i];
  case DType::U32:
    return t.as<uint32_t>()[i];
  case DType::I64:
    return static_cast<double>(t.as<int64_t>()[i]);
  case DType::U64:
    return static_cast<double>(t.as<uint64_t>()[i]);
  default:
    if (isNarrow(t.dtype()))
      return narrow::decodeNarrow(static_cast<int32_t>(t.dtype()),
                                  t.as<uint8_t>()[i]);
    return 0;
  }
  return 0;
}

} // namespace mp::rt
