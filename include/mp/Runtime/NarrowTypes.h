//===- NarrowTypes.h - float8, float4 and int4/int2 elements ------*- C++
//-*-===//
//
// The element types narrower than a byte's worth of meaning that ONNX 1.20
// has: float8 e4m3fn, e4m3fnuz, e5m2 and e5m2fnuz, float8 e8m0 (a power of
// two: MX formats' shared scale), float4 e2m1, and 4- and 2-bit integers.
// Runtime buffers hold one element per byte, its bits in the byte's low bits
// and the rest zero (what the compiler's constants hold); ONNX files pack the
// 4- and 2-bit ones, the first element in the lowest bits (packNarrow /
// unpackNarrow).
//
// decodeNarrow gives an element's exact value; encodeNarrow rounds a value
// as ONNX's Cast does (its reference uses ml_dtypes):
//  * the floats round to nearest, ties to even; a value beyond the largest
//    finite one becomes, with `saturate` (Cast's default), that largest
//    value with its sign, and without, infinity where the type has one
//    (e5m2) and NaN where not; infinities likewise; NaN stays NaN. The fnuz
//    types have no negative zero (a negative value rounding to 0 is +0).
//    float4 e2m1 has neither infinity nor NaN: it always saturates, and NaN
//    becomes -0 (ml_dtypes' rule).
//  * float8 e8m0 holds 2^(e - 127) for e < 255 and NaN for 255: no sign,
//    zero or infinity. A value (converted to f32 first) keeps its f32
//    exponent field, rounded by Cast-25's `round_mode` as ONNX's
//    to_float8e8m0 reads the f32 fields (so f32 subnormals count from
//    2^-127): up (the default) when any mantissa bit is set (ONNX 1.20's
//    numpy helper tests the mask 0x4FFFFF, missing bits 20-21, which the
//    spec's "round up" does not), down never, nearest at half (bit 22)
//    with ties up, except from the exponent field 0; with `saturate` the
//    largest exponent (254) does not round up into NaN. NaN and
//    infinities become NaN.
//  * the integers take the value truncated toward zero and wrap around
//    (-9 to int4 is 7, as a C cast to a wider integer would).
//
// Header-only and usable in CUDA device code (ONNX type codes, no DType;
// the C math functions, which CUDA has for the device too).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_NARROWTYPES_H
#define MP_RUNTIME_NARROWTYPES_H

#include <cstddef>
#include <cstdint>
#include <math.h>
#include <string.h>

#if defined(__CUDACC__)
#define MP_NARROW_HD __host__ __device__
#else
#define MP_NARROW_HD
#endif

namespace mp::rt::narrow {

/// ONNX TensorProto::DataType codes.
enum Code : int32_t {
  kF8E4M3FN = 17,
  kF8E4M3FNUZ = 18,
  kF8E5M2 = 19,
  kF8E5M2FNUZ = 20,
  kU4 = 21,
  kI4 = 22,
  kF4E2M1 = 23,
  kF8E8M0 = 24,
  kU2 = 25,
  kI2 = 26,
};

/// A small float format: sign, exponent and mantissa bits.
struct FloatFormat {
  int exponentBits, mantissaBits, bias;
  bool hasInfinity; ///< e5m2: IEEE-like infinities and NaNs
  bool fnuz;        ///< only 0x80 is NaN; no -0, no infinity
  bool hasNaN;      ///< e4m3fn: only S.1111.111 is NaN
  double largest;   ///< the largest finite value
};

/// Cast-25's round_mode, for float8 e8m0 results.
enum class RoundMode : int32_t { Up = 0, Down = 1, Nearest = 2 };

MP_NARROW_HD inline bool isNarrowFloat(int32_t code) {
  return (code >= kF8E4M3FN && code <= kF8E5M2FNUZ) || code == kF4E2M1 ||
         code == kF8E8M0;
}
MP_NARROW_HD inline bool isNarrowInt(int32_t code) {
  return code == kU4 || code == kI4 || code == kU2 || code == kI2;
}
MP_NARROW_HD inline bool isNarrow(int32_t code) {
  return isNarrowFloat(code) || isNarrowInt(code);
}
/// Bits per element in ONNX's packing: 4 or 2 for the packed types, else 8.
MP_NARROW_HD inline unsigned packedBits(int32_t code) {
  return code == kU4 || code == kI4 || code == kF4E2M1 ? 4
         : code == kU2 || code == kI2                  ? 2
                                                       : 8;
}

MP_NARROW_HD inline FloatFormat floatFormat(int32_t code) {
  switch (code) {
  case kF8E4M3FN:
    return {4, 3, 7, false, false, true, 448.0};
  case kF8E4M3FNUZ:
    return {4, 3, 8, false, true, true, 240.0};
  case kF8E5M2:
    return {5, 2, 15, true, false, true, 57344.0};
  case kF8E5M2FNUZ:
    return {5, 2, 16, false, true, true, 57344.0};
  default: // kF4E2M1
    return {2, 1, 1, false, false, false, 6.0};
  }
}

/// The value of the element `bits` of a narrow type (exact).
MP_NARROW_HD inline double decodeNarrow(int32_t code, uint8_t bits) {
  if (isNarrowInt(code)) {
    unsigned width = packedBits(code);
    unsigned value = bits & ((1u << width) - 1);
    bool isSigned = code == kI4 || code == kI2;
    if (isSigned && (value >> (width - 1)))
      return static_cast<double>(static_cast<int>(value) - (1 << width));
    return static_cast<double>(value);
  }
  if (code == kF8E8M0)
    return bits == 0xFF ? NAN : ::ldexp(1.0, static_cast<int>(bits) - 127);
  FloatFormat f = floatFormat(code);
  const int total = 1 + f.exponentBits + f.mantissaBits;
  bits &= static_cast<uint8_t>((1u << total) - 1);
  const bool negative = (bits >> (total - 1)) & 1;
  const int exponent = (bits >> f.mantissaBits) & ((1 << f.exponentBits) - 1);
  const int mantissa = bits & ((1 << f.mantissaBits) - 1);
  const int allOnes = (1 << f.exponentBits) - 1;
  if (f.fnuz && negative && exponent == 0 && mantissa == 0)
    return NAN;
  if (f.hasInfinity && exponent == allOnes)
    return mantissa ? NAN : (negative ? -INFINITY : INFINITY);
  if (!f.fnuz && f.hasNaN && !f.hasInfinity && exponent == allOnes &&
      mantissa == (1 << f.mantissaBits) - 1)
    return NAN;
  double magnitude =
      exponent == 0
          ? ::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissaBits)
          : ::ldexp(static_cast<double>(mantissa + (1 << f.mantissaBits)),
                    exponent - f.bias - f.mantissaBits);
  return negative ? -magnitude : magnitude;
}

/// `value` as float8 e8m0 (the rules above), from its f32 bits.
MP_NARROW_HD inline uint8_t encodeE8M0(double value, bool saturate,
                                       RoundMode mode) {
  const float single = static_cast<float>(value);
  uint32_t bits;
  ::memcpy(&bits, &single, sizeof bits);
  const uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF)
    return 0xFF;
  bool up = false;
  if (mode == RoundMode::Up)
    up = (bits & 0x7FFFFF) != 0;
  else if (mode == RoundMode::Nearest)
    up = (bits & 0x400000) && ((bits & 0x3FFFFF) || exponent > 0);
  if (up && saturate && exponent == 0xFE)
    up = false;
  return static_cast<uint8_t>(exponent + (up ? 1 : 0));
}

/// `value` as an element of a narrow type (the rules above); `mode` only
/// for float8 e8m0.
MP_NARROW_HD inline uint8_t encodeNarrow(int32_t code, double value,
                                         bool saturate = true,
                                         RoundMode mode = RoundMode::Up) {
  if (code == kF8E8M0)
    return encodeE8M0(value, saturate, mode);
  if (isNarrowInt(code)) {
    // Truncated toward zero, kept in int64's range, then wrapped.
    int64_t whole = 0;
    if (value == value) { // not NaN
      double t = ::trunc(value);
      whole = t >= 9.2e18    ? INT64_MAX
              : t <= -9.2e18 ? INT64_MIN
                             : static_cast<int64_t>(t);
    }
    return static_cast<uint8_t>(static_cast<uint64_t>(whole) &
                                ((1u << packedBits(code)) - 1));
  }
  FloatFormat f = floatFormat(code);
  const int total = 1 + f.exponentBits + f.mantissaBits;
  const uint8_t signBit = static_cast<uint8_t>(1u << (total - 1));
  const int allOnes = (1 << f.exponentBits) - 1;
  // The encodings of NaN (ml_dtypes' quiet NaN; signed but in the fnuz
  // types), of the largest finite value and of infinity.
  const uint8_t nan = f.fnuz ? 0x80
                      : f.hasInfinity
                          ? static_cast<uint8_t>((allOnes << f.mantissaBits) |
                                                 (1 << (f.mantissaBits - 1)))
                          : static_cast<uint8_t>(signBit - 1);
  const uint8_t largest =
      f.hasInfinity ? static_cast<uint8_t>(((allOnes - 1) << f.mantissaBits) |
                                           ((1 << f.mantissaBits) - 1))
      : f.fnuz || !f.hasNaN ? static_cast<uint8_t>(signBit - 1)
                            : static_cast<uint8_t>(signBit - 2);
  const uint8_t infinity = static_cast<uint8_t>(allOnes << f.mantissaBits);
  const bool negative = ::copysign(1.0, value) < 0;
  const uint8_t sign = negative ? signBit : 0;
  if (value != value) // float4 e2m1 has no NaN: ml_dtypes gives -0
    return f.hasNaN ? static_cast<uint8_t>(f.fnuz ? nan : sign | nan) : signBit;
  double magnitude = ::fabs(value);
  auto overflow = [&]() -> uint8_t {
    if (saturate || !f.hasNaN)
      return static_cast<uint8_t>(sign | largest);
    if (f.hasInfinity)
      return static_cast<uint8_t>(sign | infinity);
    return static_cast<uint8_t>(f.fnuz ? nan : sign | nan);
  };
  if (magnitude == INFINITY)
    return overflow();
  const int minExponent = 1 - f.bias; // of the normal numbers
  // The rounded magnitude: a multiple of the spacing at its exponent.
  int exponent = magnitude > 0 ? ::ilogb(magnitude) : minExponent;
  int quantum =
      (exponent > minExponent ? exponent : minExponent) - f.mantissaBits;
  double rounded = ::ldexp(::nearbyint(::ldexp(magnitude, -quantum)), quantum);
  if (rounded > f.largest)
    return overflow();
  if (rounded == 0)
    return f.fnuz ? 0 : sign;
  exponent = ::ilogb(rounded);
  uint8_t bits;
  if (exponent < minExponent)
    bits = static_cast<uint8_t>(
        ::ldexp(rounded, f.bias - 1 + f.mantissaBits)); // subnormal
  else
    bits = static_cast<uint8_t>(
        ((exponent + f.bias) << f.mantissaBits) |
        (static_cast<int>(::ldexp(rounded, f.mantissaBits - exponent)) -
         (1 << f.mantissaBits)));
  return static_cast<uint8_t>(sign | bits);
}

/// ONNX's packed bytes of `count` elements of `bits` (4 or 2) bits, one per
/// byte in `elements` (low bits): the first element in the lowest bits.
inline void packNarrow(const uint8_t *elements, size_t count, unsigned bits,
                       uint8_t *packed) {
  const unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
  for (size_t i = 0; i < (count + perByte - 1) / perByte; ++i)
    packed[i] = 0;
  for (size_t i = 0; i < count; ++i)
    packed[i / perByte] = static_cast<uint8_t>(
        packed[i / perByte] | ((elements[i] & mask) << (bits * (i % perByte))));
}

/// The inverse of packNarrow: `packed` holds ceil(count * bits / 8) bytes.
inline void unpackNarrow(const uint8_t *packed, size_t count, unsigned bits,
                         uint8_t *elements) {
  const unsigned perByte = 8 / bits, mask = (1u << bits) - 1;
  for (size_t i = 0; i < count; ++i)
    elements[i] = static_cast<uint8_t>(
        (packed[i / perByte] >> (bits * (i % perByte))) & mask);
}

} // namespace mp::rt::narrow

#endif // MP_RUNTIME_NARROWTYPES_H
