//===- Half.h - fp16 and bf16 storage types and conversions --*- C++ -*-===//
//
// IEEE binary16 ("half", fp16) and bfloat16 (bf16) as 16-bit storage types,
// with conversions from and to fp32 and fp64.
//
// Rounding: every conversion to a 16-bit type rounds to nearest, ties to even
// (IEEE 754 roundTiesToEven), once, from the exact source value:
//  * fp64 -> fp16/bf16 rounds the double directly (never through fp32, which
//    would round twice and can be off by one ulp at a midpoint).
//  * Subnormal results are produced (no flush to zero); subnormal inputs are
//    honoured.
//  * Overflow follows IEEE: a finite value whose magnitude rounds above the
//    largest finite value becomes infinity (of its sign). For fp16 the
//    largest finite value is 65504; every |x| >= 65520 (the midpoint between
//    65504 and 2^16, a tie that goes to the even 2^16) becomes inf, every
//    |x| < 65520 stays finite. For bf16, |x| >= 0x1.ffp127 (fp32 0x7f7f8000)
//    becomes inf, so large finite fp32 values (up to FLT_MAX) become inf.
//    There is no saturating mode.
//  * NaN stays NaN with its sign; the result is a quiet NaN carrying the top
//    payload bits that fit. A NaN never becomes infinity (bf16 rounding a NaN
//    with a low payload would otherwise carry into the exponent).
// Widening (fp16/bf16 -> fp32) is exact; a signalling NaN comes out quiet (as
// the x86 F16C instructions do), every other value is kept bit for bit.
//
// The results do not depend on the floating-point environment: the scalar
// code uses integer arithmetic and exact float operations only, so a changed
// rounding mode or FTZ/DAZ does not change them. The scalar functions are
// inline (usable in kernels); the bulk functions below convert arrays, with
// loops written so that compilers vectorize them, and on x86 CPUs with F16C
// (checked once at run time) use the vcvtps2ph / vcvtph2ps instructions,
// which give the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_HALF_H
#define MP_RUNTIME_HALF_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mp::rt {

/// An IEEE binary16 value, kept as its bit pattern (no arithmetic).
struct Half {
  uint16_t bits = 0;
  static constexpr Half fromBits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  friend constexpr bool operator==(Half a, Half b) { return a.bits == b.bits; }
  friend constexpr bool operator!=(Half a, Half b) { return a.bits != b.bits; }
};

/// A bfloat16 value (fp32 with the low 16 mantissa bits dropped), kept as its
/// bit pattern (no arithmetic).
struct BFloat16 {
  uint16_t bits = 0;
  static constexpr BFloat16 fromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  friend constexpr bool operator==(BFloat16 a, BFloat16 b) {
    return a.bits == b.bits;
  }
  friend constexpr bool operator!=(BFloat16 a, BFloat16 b) {
    return a.bits != b.bits;
  }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2,
              "Half and BFloat16 are 16-bit storage types");

namespace detail {

inline uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint64_t bitsOf(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}
/// c ? a : b without a branch: written with masks so that loops over it
/// vectorize even where the compiler may not speculate float operations.
inline uint32_t select(bool c, uint32_t a, uint32_t b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

/// fp16 bits -> fp32 (exact).
inline float halfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu; // exponent and mantissa
  // Normal: rebias the exponent from 15 to 127.
  uint32_t normal = (em << 13) + 0x38000000u;
  // Inf / NaN: all-ones exponent, payload kept, NaNs quiet.
  uint32_t infNan =
      (em << 13) | 0x7f800000u | select(em > 0x7c00u, 0x00400000u, 0u);
  // Subnormal (and zero): em * 2^-24; the int->float conversion and the
  // scaling by a power of two are exact.
  uint32_t sub =
      bitsOf(static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f);
  uint32_t r = select(em < 0x0400u, sub, select(em >= 0x7c00u, infNan, normal));
  return floatOf(sign | r);
}

/// fp32 -> fp16 bits, round to nearest even.
inline uint16_t floatToHalfBits(float f) {
  uint32_t x = bitsOf(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  // Normal result (2^-14 <= |f| < 65520): rebias the exponent from 127 to 15
  // and round away the 13 low mantissa bits; a carry into the exponent is
  // the correct result.
  uint32_t n = ax - 0x38000000u;
  n = (n + 0x0fffu + ((n >> 13) & 1u)) >> 13;
  // Subnormal result (|f| < 2^-14): round |f| * 2^24 to an integer. The
  // scaling is exact, truncation and the fraction are exact, so the rounding
  // does not depend on the rounding mode. Other lanes use 0 (no overflow).
  bool isSub = ax < 0x38800000u;
  float y = floatOf(select(isSub, ax, 0u)) * 0x1p24f;
  int32_t q = static_cast<int32_t>(y);
  float frac = y - static_cast<float>(q);
  uint32_t s = static_cast<uint32_t>(q) +
               ((frac > 0.5f || (frac == 0.5f && (q & 1))) ? 1u : 0u);
  // NaN: quiet, top payload bits kept. |f| >= 65520 (and inf): inf.
  uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
  uint32_t r = select(isSub, s,
                      select(ax < 0x477ff000u, n,
                             select(ax > 0x7f800000u, nan, 0x7c00u)));
  return static_cast<uint16_t>(sign | r);
}

/// bf16 bits -> fp32 (exact).
inline float bfloat16BitsToFloat(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  return floatOf(x | select((x & 0x7fffffffu) > 0x7f800000u, 0x00400000u, 0u));
}

/// fp32 -> bf16 bits, round to nearest even.
inline uint16_t floatToBFloat16Bits(float f) {
  uint32_t x = bitsOf(f);
  // Rounding may carry into the exponent (up to inf, which is correct for a
  // finite value); for a NaN it could give inf, so NaNs take their own path.
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>(
      select((x & 0x7fffffffu) > 0x7f800000u, nan, rounded));
}

/// fp64 -> a binary format with ExpBits exponent and ManBits mantissa bits
/// (fp16: 5, 10; bf16: 8, 7), rounded once to nearest even.
template <unsigned ExpBits, unsigned ManBits>
inline uint16_t doubleToNarrowBits(double d) {
  constexpr int64_t bias = (int64_t(1) << (ExpBits - 1)) - 1;
  constexpr unsigned shift = 52 - ManBits; // dropped mantissa bits
  constexpr uint64_t infBits = ((uint64_t(1) << ExpBits) - 1) << ManBits;
  constexpr uint64_t manMask = (uint64_t(1) << ManBits) - 1;
  // The double exponent field of the narrow format's smallest normal.
  constexpr uint64_t minNormalExp = static_cast<uint64_t>(1023 + 1 - bias);
  uint64_t x = bitsOf(d);
  uint16_t sign = static_cast<uint16_t>((x >> 48) & 0x8000u);
  uint64_t ax = x & 0x7fffffffffffffffull;
  if (ax > 0x7ff0000000000000ull) // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | infBits |
                                 (uint64_t(1) << (ManBits - 1)) |
                                 ((ax >> shift) & manMask));
  uint64_t e = ax >> 52;
  if (e >= minNormalExp) {
    // Normal (or overflowing) result: rebias and round; clamp to inf.
    uint64_t r = ax - (static_cast<uint64_t>(1023 - bias) << 52);
    r = (r + ((uint64_t(1) << (shift - 1)) - 1) + ((r >> shift) & 1u)) >> shift;
    return static_cast<uint16_t>(sign | (r >= infBits ? infBits : r));
  }
  // Subnormal result: value = m * 2^(E-1075), in units of the smallest
  // subnormal 2^(1-bias-ManBits): q = m >> sh, rounded.
  uint64_t m = (ax & 0x000fffffffffffffull) | (e ? (uint64_t(1) << 52) : 0);
  uint64_t sh = shift + minNormalExp - (e ? e : 1);
  if (sh >= 54) // m < 2^53 is below half of the smallest subnormal
    return sign;
  uint64_t q = m >> sh;
  uint64_t rem = m & ((uint64_t(1) << sh) - 1);
  uint64_t half = uint64_t(1) << (sh - 1);
  q += (rem > half || (rem == half && (q & 1u))) ? 1u : 0u;
  return static_cast<uint16_t>(sign | q);
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Scalar conversions
//===----------------------------------------------------------------------===//

inline float toFloat(Half h) { return detail::halfBitsToFloat(h.bits); }
inline float toFloat(BFloat16 h) { return detail::bfloat16BitsToFloat(h.bits); }
/// Exact (every fp16/bf16 value is a double).
inline double toDouble(Half h) { return toFloat(h); }
inline double toDouble(BFloat16 h) { return toFloat(h); }

inline Half toHalf(float f) {
  return Half::fromBits(detail::floatToHalfBits(f));
}
/// Rounds the double once (not through fp32).
inline Half toHalf(double d) {
  return Half::fromBits(detail::doubleToNarrowBits<5, 10>(d));
}
inline BFloat16 toBFloat16(float f) {
  return BFloat16::fromBits(detail::floatToBFloat16Bits(f));
}
/// Rounds the double once (not through fp32).
inline BFloat16 toBFloat16(double d) {
  return BFloat16::fromBits(detail::doubleToNarrowBits<8, 7>(d));
}

//===----------------------------------------------------------------------===//
// Bulk conversions: n elements from src to dst (the arrays must not overlap).
// fp16/bf16 arrays are given as their bit patterns.
//===----------------------------------------------------------------------===//

void convertF32ToF16(const float *src, uint16_t *dst, size_t n);
void convertF16ToF32(const uint16_t *src, float *dst, size_t n);
void convertF32ToBF16(const float *src, uint16_t *dst, size_t n);
void convertBF16ToF32(const uint16_t *src, float *dst, size_t n);
/// fp64 sources: rounded once; these loops are scalar (not vectorized).
void convertF64ToF16(const double *src, uint16_t *dst, size_t n);
void convertF64ToBF16(const double *src, uint16_t *dst, size_t n);
void convertF16ToF64(const uint16_t *src, double *dst, size_t n);
void convertBF16ToF64(const uint16_t *src, double *dst, size_t n);

/// Whether convertF32ToF16 / convertF16ToF32 use the x86 F16C instructions
/// on this CPU (decided once, at the first call).
bool halfConversionsUseF16C();

namespace detail {
/// The portable (compiler-vectorized) loops, which the bulk functions use
/// where F16C is missing; exposed so that tests can compare both paths.
void convertF32ToF16Portable(const float *src, uint16_t *dst, size_t n);
void convertF16ToF32Portable(const uint16_t *src, float *dst, size_t n);
} // namespace detail

} // namespace mp::rt

#endif // MP_RUNTIME_HALF_H
