//===- Half.cpp - bulk fp16 and bf16 conversions -------------------------===//
//
// The loops call the branch-free scalar conversions of Half.h; compilers
// vectorize them (GCC and Clang at -O2/-O3, with SSE2 already). On x86 with
// F16C (and the OS saving AVX state) the fp32 <-> fp16 loops use
// vcvtps2ph / vcvtph2ps instead: with rounding fixed to nearest-even in the
// instruction, they give the same bits as the portable code (the unit tests
// check this on every fp16 value and on millions of fp32 values).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Half.h"

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__))
#define MP_RT_HAVE_F16C_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define MP_RT_HAVE_F16C_PATH 0
#endif

namespace mp::rt {

namespace detail {

void convertF32ToF16Portable(const float *__restrict src,
                             uint16_t *__restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = floatToHalfBits(src[i]);
}

void convertF16ToF32Portable(const uint16_t *__restrict src,
                             float *__restrict dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = halfBitsToFloat(src[i]);
}

} // namespace detail

#if MP_RT_HAVE_F16C_PATH
namespace {

bool detectF16C() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return false;
  const unsigned osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
  if ((c & (osxsave | avx | f16c)) != (osxsave | avx | f16c))
    return false;
  // The OS must save the XMM and YMM state (XCR0 bits 1 and 2).
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 6u) == 6u;
}

__attribute__((target("avx,f16c"))) void f32ToF16F16C(const float *src,
                                                       uint16_t *dst,
                                                       size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h =
        _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), h);
  }
  if (i < n) { // the tail through a padded block, by the same instruction
    alignas(32) float in[8] = {};
    alignas(16) uint16_t out[8];
    for (size_t j = i; j < n; ++j)
      in[j - i] = src[j];
    __m128i h = _mm256_cvtps_ph(_mm256_load_ps(in),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_store_si128(reinterpret_cast<__m128i *>(out), h);
    for (size_t j = i; j < n; ++j)
      dst[j] = out[j - i];
  }
}

__attribute__((target("avx,f16c"))) void f16ToF32F16C(const uint16_t *src,
                                                       float *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {
    alignas(16) uint16_t in[8] = {};
    alignas(32) float out[8];
    for (size_t j = i; j < n; ++j)
      in[j - i] = src[j];
    __m128i h = _mm_load_si128(reinterpret_cast<const __m128i *>(in));
    _mm256_store_ps(out, _mm256_cvtph_ps(h));
    for (size_t j = i; j < n; ++j)
      dst[j] = out[j - i];
  }
}

} // namespace
#endif // MP_RT_HAVE_F16C_PATH

bool halfConversionsUseF16C() {
#if MP_RT_HAVE_F16C_PATH
  static const bool has = detectF16C();
  return has;
#else
  return false;
#endif
}

void convertF32ToF16(const float *src, uint16_t *dst, size_t n) {
#if MP_RT_HAVE_F16C_PATH
  if (halfConversionsUseF16C())
    return f32ToF16F16C(src, dst, n);
#endif
  detail::convertF32ToF16Portable(src, dst, n);
}

void convertF16ToF32(const uint16_t *src, float *dst, size_t n) {
#if MP_RT_HAVE_F16C_PATH
  if (halfConversionsUseF16C())
    return f16ToF32F16C(src, dst, n);
#endif
  detail::convertF16ToF32Portable(src, dst, n);
}

// bf16 <-> fp32. The scalar loops vectorize poorly with SSE2 alone (no
// 32 -> 16-bit pack): fp32 -> bf16 took 0.5 ns an element, 16 us for a
// BERT-sized matmul's 32K results, a third of the product's own time. With
// AVX-512 the same integer arithmetic runs 16 wide (the rounding increment,
// NaNs quietened the same way), so every CPU gives the same bits (the unit
// tests compare the bulk paths with the scalar conversions).
namespace {
void f32ToBF16Scalar(const float *__restrict src, uint16_t *__restrict dst,
                     size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::floatToBFloat16Bits(src[i]);
}

void bf16ToF32Scalar(const uint16_t *__restrict src, float *__restrict dst,
                     size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::bfloat16BitsToFloat(src[i]);
}

#if MP_RT_HAVE_F16C_PATH
// GCC 12's AVX-512 shift and convert intrinsics start from
// _mm512_undefined_epi32(), which its -Wmaybe-uninitialized reports.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
bool detectAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

__attribute__((target("avx512f"))) void
f32ToBF16Avx512(const float *src, uint16_t *dst, size_t n) {
  const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff),
                abs = _mm512_set1_epi32(0x7fffffff),
                inf = _mm512_set1_epi32(0x7f800000),
                quiet = _mm512_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x = _mm512_loadu_si512(src + i);
    const __m512i high = _mm512_srli_epi32(x, 16);
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, half),
                                           _mm512_and_si512(high, one)),
                          16);
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, abs), inf);
    const __m512i bits =
        _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + i),
                        _mm512_cvtepi32_epi16(bits));
  }
  f32ToBF16Scalar(src + i, dst + i, n - i);
}

__attribute__((target("avx512f"))) void bf16ToF32Avx512(const uint16_t *src,
                                                        float *dst, size_t n) {
  const __m512i abs = _mm512_set1_epi32(0x7fffffff),
                inf = _mm512_set1_epi32(0x7f800000),
                quiet = _mm512_set1_epi32(0x00400000);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i x =
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(
                              reinterpret_cast<const __m256i *>(src + i))),
                          16);
    const __mmask16 nan =
        _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, abs), inf);
    _mm512_storeu_si512(dst + i, _mm512_mask_or_epi32(x, nan, x, quiet));
  }
  bf16ToF32Scalar(src + i, dst + i, n - i);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

/// Whether the bf16 conversions run 16 wide with AVX-512 on this CPU
/// (decided once).
bool bf16ConversionsUseAvx512() {
#if MP_RT_HAVE_F16C_PATH
  static const bool has = detectAvx512();
  return has;
#else
  return false;
#endif
}
} // namespace

void convertF32ToBF16(const float *__restrict src, uint16_t *__restrict dst,
                      size_t n) {
#if MP_RT_HAVE_F16C_PATH
  if (bf16ConversionsUseAvx512())
    return f32ToBF16Avx512(src, dst, n);
#endif
  f32ToBF16Scalar(src, dst, n);
}

void convertBF16ToF32(const uint16_t *__restrict src, float *__restrict dst,
                      size_t n) {
#if MP_RT_HAVE_F16C_PATH
  if (bf16ConversionsUseAvx512())
    return bf16ToF32Avx512(src, dst, n);
#endif
  bf16ToF32Scalar(src, dst, n);
}

void convertF64ToF16(const double *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::doubleToNarrowBits<5, 10>(src[i]);
}

void convertF64ToBF16(const double *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::doubleToNarrowBits<8, 7>(src[i]);
}

void convertF16ToF64(const uint16_t *src, double *dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::halfBitsToFloat(src[i]);
}

void convertBF16ToF64(const uint16_t *src, double *dst, size_t n) {
  for (size_t i = 0; i < n; ++i)
    dst[i] = detail::bfloat16BitsToFloat(src[i]);
}

} // namespace mp::rt
