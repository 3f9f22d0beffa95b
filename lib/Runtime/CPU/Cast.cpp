//===- Cast.cpp - kernel.cast on the CPU ----------------------------------===//
//
// Any dtype to any other, with the rules of convertValue
// (ElementwiseConvert.h). The common float conversions use the vectorized
// bulk functions of Half.h; the rest is one typed loop per pair of dtypes,
// chosen once per call.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/NarrowTypes.h"

#include "ElementwiseConvert.h"
#include "KernelUtil.h"
#include "Parallel.h"

#include <cstring>

namespace mp::rt::cpu {

using namespace detail;

namespace {

template <typename To, typename From>
void castLoop(const void *src, void *dst, int64_t n) {
  const From *s = static_cast<const From *>(src);
  To *d = static_cast<To *>(dst);
  for (int64_t i = 0; i < n; ++i)
    d[i] = convertValue<To>(s[i]);
}

/// The bulk conversions of Half.h, where one applies.
bool bulkCast(DType from, DType to, const void *src, void *dst, size_t n) {
  auto *s16 = static_cast<const uint16_t *>(src);
  auto *d16 = static_cast<uint16_t *>(dst);
  if (from == DType::F32 && to == DType::F16)
    convertF32ToF16(static_cast<const float *>(src), d16, n);
  else if (from == DType::F32 && to == DType::BF16)
    convertF32ToBF16(static_cast<const float *>(src), d16, n);
  else if (from == DType::F16 && to == DType::F32)
    convertF16ToF32(s16, static_cast<float *>(dst), n);
  else if (from == DType::BF16 && to == DType::F32)
    convertBF16ToF32(s16, static_cast<float *>(dst), n);
  else if (from == DType::F64 && to == DType::F16)
    convertF64ToF16(static_cast<const double *>(src), d16, n);
  else if (from == DType::F64 && to == DType::BF16)
    convertF64ToBF16(static_cast<const double *>(src), d16, n);
  else if (from == DType::F16 && to == DType::F64)
    convertF16ToF64(s16, static_cast<double *>(dst), n);
  else if (from == DType::BF16 && to == DType::F64)
    convertBF16ToF64(s16, static_cast<double *>(dst), n);
  else
    return false;
  return true;
}

/// A cast from or to a narrow type, through the exact f64 value of each
/// element.
void narrowCast(const TensorView &x, const TensorView &y, bool saturate,
                narrow::RoundMode roundMode, int64_t begin, int64_t end) {
  const auto fromCode = static_cast<int32_t>(x.dtype);
  const auto toCode = static_cast<int32_t>(y.dtype);
  const size_t xSize = byteSize(x.dtype);
  for (int64_t i = begin; i < end; ++i) {
    const void *src = static_cast<const char *>(x.data) + i * xSize;
    double value = 0;
    if (isNarrow(x.dtype))
      value =
          narrow::decodeNarrow(fromCode, *static_cast<const uint8_t *>(src));
    else
      visitAny(x.dtype, [&](auto from) {
        using From = typename decltype(from)::Storage;
        value = convertValue<double>(*static_cast<const From *>(src));
      });
    if (isNarrow(y.dtype)) {
      y.as<uint8_t>()[i] =
          narrow::encodeNarrow(toCode, value, saturate, roundMode);
      continue;
    }
    visitAny(y.dtype, [&](auto to) {
      using To = typename decltype(to)::Storage;
      static_cast<To *>(y.data)[i] = convertValue<To>(value);
    });
  }
}

} // namespace

Status checkCast(const TensorView &x, const TensorView &y) {
  constexpr std::string_view op = "cast";
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  for (const TensorView *v : {&x, &y})
    if (byteSize(v->dtype) == 0)
      return fail(op, std::string(v == &x ? "x" : "y") +
                          " has an unknown dtype (code " +
                          std::to_string(static_cast<int>(v->dtype)) + ")");
  int64_t n = x.numElements();
  if (n != y.numElements())
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different numbers of elements");
  // (Empty tensors overlap nothing.)
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) &&
      !(x.data == y.data && x.dtype == y.dtype))
    return fail(op, "y overlaps x");
  return Status::ok();
}

Status cast(const TensorView &x, const TensorView &y, bool saturate,
            narrow::RoundMode roundMode) {
  if (Status s = checkCast(x, y); !s)
    return s;
  int64_t n = x.numElements();
  if (n == 0)
    return Status::ok();
  if (x.dtype == y.dtype) {
    if (x.data != y.data)
      std::memcpy(y.data, x.data, x.byteCount());
    return Status::ok();
  }
  if (isNarrow(x.dtype) || isNarrow(y.dtype)) {
    parallelRanges(n, [&](int64_t begin, int64_t end) {
      narrowCast(x, y, saturate, roundMode, begin, end);
    });
    return Status::ok();
  }
  // Element by element, so split over the CPU threads (Parallel.h).
  const size_t xSize = byteSize(x.dtype), ySize = byteSize(y.dtype);
  parallelRanges(n, [&](int64_t begin, int64_t end) {
    const void *src = static_cast<const char *>(x.data) + begin * xSize;
    void *dst = static_cast<char *>(y.data) + begin * ySize;
    if (bulkCast(x.dtype, y.dtype, src, dst, static_cast<size_t>(end - begin)))
      return;
    visitAny(x.dtype, [&](auto from) {
      using From = typename decltype(from)::Storage;
      visitAny(y.dtype, [&](auto to) {
        using To = typename decltype(to)::Storage;
        castLoop<To, From>(src, dst, end - begin);
      });
    });
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
