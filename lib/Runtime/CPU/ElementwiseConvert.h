//===- ElementwiseConvert.h - value conversions of the CPU kernels -*- C++
//-*-===//
//
// Scalar conversions between every storage type of the runtime, with the
// cast kernel's rules, and the dtype visitors of the elementwise, cast and
// reduce kernels. Private to lib/Runtime/CPU.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CPU_ELEMENTWISECONVERT_H
#define MP_LIB_RUNTIME_CPU_ELEMENTWISECONVERT_H

#include "mp/Runtime/DType.h"
#include "mp/Runtime/Half.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace mp::rt::cpu::detail {

/// The storage of DType::Bool, distinct from uint8_t (DType::U8) so that
/// conversions to it give 0/1 and conversions from it read any non-zero
/// byte as true.
struct Bool8 {
  uint8_t v = 0;
};

template <typename T>
constexpr bool isHalfLike =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Float -> integer, truncating toward zero; NaN gives 0 and values out of
/// range saturate (C++ leaves those undefined).
template <typename I, typename F> inline I floatToInt(F v) {
  if (!(v == v))
    return I(0);
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::lowest());
  // The largest value + 1 is a power of two: exact in F.
  constexpr F hiExclusive =
      static_cast<F>(std::numeric_limits<I>::max() / 2 + 1) * F(2);
  if (v <= lo)
    return std::numeric_limits<I>::lowest();
  if (v >= hiExclusive)
    return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

/// One value of type From as type To, with the cast kernel's rules
/// (ElementwiseKernels.h, cast): 16-bit targets are rounded once, from f32
/// for f32 and 16-bit sources and from f64 otherwise.
template <typename To, typename From> inline To convertValue(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Bool8>) {
    return convertValue<To>(static_cast<uint8_t>(v.v != 0));
  } else if constexpr (isHalfLike<From>) {
    return convertValue<To>(toFloat(v));
  } else if constexpr (std::is_same_v<To, Bool8>) {
    return Bool8{static_cast<uint8_t>(v != From(0))};
  } else if constexpr (std::is_same_v<To, Half>) {
    if constexpr (std::is_same_v<From, float>)
      return toHalf(v);
    else
      return toHalf(static_cast<double>(v));
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    if constexpr (std::is_same_v<From, float>)
      return toBFloat16(v);
    else
      return toBFloat16(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<To> &&
                       std::is_floating_point_v<From>) {
    return floatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

/// One case of the visitors' switches: dtype `code` calls f(Ty<S, C>{}).
#define MP_VISIT_CASE(code, S, C)                                              \
  case DType::code:                                                            \
    f(Ty<S, C>{});                                                             \
    return true;

/// A storage type S and the type C the kernels compute in for it.
template <typename S, typename C> struct Ty {
  using Storage = S;
  using Compute = C;
};

/// Calls f(Ty<S, C>{}) for a float dtype (f32, f16, bf16 compute in f32;
/// f64 in f64); false for other dtypes.
template <typename F> bool visitFloat(DType t, F &&f) {
  switch (t) {
    MP_VISIT_CASE(F32, float, float)
    MP_VISIT_CASE(F16, Half, float)
    MP_VISIT_CASE(BF16, BFloat16, float)
    MP_VISIT_CASE(F64, double, double)
  default:
    return false;
  }
}

/// Calls f(Ty<T, T>{}) for an integer dtype (signed ones when Signed,
/// unsigned ones when Unsigned).
template <bool Signed, bool Unsigned, typename F>
bool visitInt(DType t, F &&f) {
  if constexpr (Signed) {
    switch (t) {
      MP_VISIT_CASE(I8, int8_t, int8_t)
      MP_VISIT_CASE(I16, int16_t, int16_t)
      MP_VISIT_CASE(I32, int32_t, int32_t)
      MP_VISIT_CASE(I64, int64_t, int64_t)
    default:
      break;
    }
  }
  if constexpr (Unsigned) {
    switch (t) {
      MP_VISIT_CASE(U8, uint8_t, uint8_t)
      MP_VISIT_CASE(U16, uint16_t, uint16_t)
      MP_VISIT_CASE(U32, uint32_t, uint32_t)
      MP_VISIT_CASE(U64, uint64_t, uint64_t)
    default:
      break;
    }
  }
  return false;
}

/// Calls f(Ty<S, S>{}) with S the storage type of any dtype (Bool8 for bool).
template <typename F> bool visitAny(DType t, F &&f) {
  switch (t) {
    MP_VISIT_CASE(Bool, Bool8, Bool8)
    MP_VISIT_CASE(F32, float, float)
    MP_VISIT_CASE(F64, double, double)
    MP_VISIT_CASE(F16, Half, Half)
    MP_VISIT_CASE(BF16, BFloat16, BFloat16)
  default:
    return visitInt<true, true>(t, f);
  }
}

#undef MP_VISIT_CASE

} // namespace mp::rt::cpu::detail

#endif // MP_LIB_RUNTIME_CPU_ELEMENTWISECONVERT_H
