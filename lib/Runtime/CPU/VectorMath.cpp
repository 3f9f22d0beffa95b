//===- VectorMath.cpp - vectorised f32 exp, sigmoid, tanh -----------------===//
//
// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two
// parts, so that r is exact), exp(r) by Cephes' expf polynomial on
// [-ln2/2, ln2/2]; 2^n built in the exponent bits, in two halves so that n
// may leave the normal range. Every operation is a plain float or int
// operation on the lane, so each loop below vectorises (the AVX2 and
// baseline ones); AVX-512 has the same polynomial in intrinsics, with
// vscalefps for 2^n.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/VectorMath.h"

#include <cstdlib>
#include <cstring>

#include <immintrin.h>

namespace mp::rt::cpu {

namespace {

inline float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Straight-line code (selects, no branches: GCC vectorises the loops).
/// Beyond 100 the result is inf anyway; below, 2^n in two halves overflows
/// to inf as exp does. Below kExpFlush, where exp leaves f32's normal range
/// (FLT_MIN = exp(-87.3365)), the result is 0, never a subnormal: x is
/// clamped there, so no lane computes one, and the result multiplied by 0.
/// (Subnormals cost every instruction that touches them ~100x on x86; a
/// causal mask's -inf or -1e9 gives one per masked score, which then went
/// through the P V matmul: a GPT-style decoder's attention ran 6x slower
/// than the BERT encoder's of the same size.) A select of 0 instead of the
/// product would not vectorise: GCC then computes the result in a branch.
/// NaN propagates through the arithmetic (n is computed from 0 then).
constexpr float kExpFlush = -87.33f;
inline float expApprox(float x) {
  float c = x < kExpFlush ? kExpFlush : x;
  c = c > 100.f ? 100.f : c;
  const float safe = c == c ? c : 0.f;
  const float t = safe * 1.44269504088896341f;
  const int32_t n = static_cast<int32_t>(t + (t < 0.f ? -0.5f : 0.5f));
  const float fn = static_cast<float>(n);
  const float r = (c - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.f;
  const int32_t half = n / 2;
  const float result = e * fromBits(static_cast<uint32_t>(half + 127) << 23) *
                       fromBits(static_cast<uint32_t>(n - half + 127) << 23);
  return result * (x < kExpFlush ? 0.f : 1.f);
}

inline float sigmoidApprox(float x) { return 1.f / (1.f + expApprox(-x)); }

/// tanh: an odd Taylor polynomial near 0 (where 1 - 2 / (e^2x + 1) would
/// cancel), that formula beyond.
inline float tanhApprox(float x) {
  const float a = x < 0.f ? -x : x;
  const float x2 = x * x;
  float p = 62.f / 2835.f;
  p = p * x2 - 17.f / 315.f;
  p = p * x2 + 2.f / 15.f;
  p = p * x2 - 1.f / 3.f;
  const float small = x + x * x2 * p;
  const float big = 1.f - 2.f / (expApprox(2.f * a) + 1.f);
  const float signedBig = x < 0.f ? -big : big;
  return a < 0.2f ? small : signedBig; // NaN: small, which is NaN
}

/// x = softmax(x) for n contiguous values: the max and the sum kept in 16
/// lanes (float reductions vectorise only so without -ffast-math), then
/// combined. A row of -inf gives NaN, as exp(x - max) does.
constexpr int64_t kLanes = 16;
inline __attribute__((always_inline)) void softmaxInLanes(float *x, int64_t n) {
  float lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    lanes[l] = -__builtin_inff();
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  float max = -__builtin_inff();
  for (int64_t l = 0; l < kLanes; ++l)
    max = lanes[l] > max ? lanes[l] : max;
  for (int64_t i = whole; i < n; ++i)
    max = x[i] > max ? x[i] : max;
  // exp in a loop of its own: one with the sum in it does not vectorise.
  for (int64_t i = 0; i < n; ++i)
    x[i] = expApprox(x[i] - max);
  for (int64_t l = 0; l < kLanes; ++l)
    lanes[l] = 0.f;
  for (int64_t i = 0; i < whole; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] += x[i + l];
  float sum = 0.f;
  for (int64_t i = whole; i < n; ++i)
    sum += x[i];
  for (int64_t l = 0; l < kLanes; ++l)
    sum += lanes[l];
  const float inverse = 1.f / sum;
  for (int64_t i = 0; i < n; ++i)
    x[i] *= inverse;
}

//===----------------------------------------------------------------------===//
// AVX-512 with intrinsics
//===----------------------------------------------------------------------===//
//
// GCC vectorises the functions above but not well: the two-halves 2^n, the
// clamps and the NaN select become masked blends, about 3 cycles an element
// for exp (attention's softmax was 40% of its time). Here the same
// polynomial with FMAs and vscalefps for 2^n (exact for any n: no halves):
// exp over 465,000 values 0.47 -> 0.27 ms, ViT-B/16's softmax rows 0.85 ->
// 0.45 ms (one thread). Same contract: below kExpFlush the result is 0 (x
// clamped there first, so no lane makes a subnormal), NaN stays NaN
// (vmaxps / vminps return their second operand for NaN).

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_ps(), which its
// -Wmaybe-uninitialized reports.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define MP_AVX512 __attribute__((target("avx512f"), always_inline)) inline

MP_AVX512 __m512 expAvx512(__m512 x) {
  const __m512 flush = _mm512_set1_ps(kExpFlush);
  __m512 c = _mm512_max_ps(flush, x);
  c = _mm512_min_ps(_mm512_set1_ps(100.f), c);
  const __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r),
                                 _mm512_set1_ps(1.f));
  const __m512 result = _mm512_scalef_ps(e, n);
  // x < kExpFlush (-inf included) gives 0; NaN compares false and stays.
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, flush, _CMP_NLT_UQ), result);
}

MP_AVX512 __m512 sigmoidAvx512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  return _mm512_div_ps(
      one,
      _mm512_add_ps(one, expAvx512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

/// tanhApprox's two branches, the small one where |x| < 0.2 (NaN too).
MP_AVX512 __m512 tanhAvx512(__m512 x) {
  // The sign bit by integer ops (the float ones are AVX512DQ).
  const __m512i signBit = _mm512_set1_epi32(INT32_MIN);
  const __m512i bits = _mm512_castps_si512(x);
  const __m512 a = _mm512_castsi512_ps(_mm512_andnot_si512(signBit, bits));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(62.f / 2835.f);
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-17.f / 315.f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.f / 15.f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-1.f / 3.f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(x, x2), p, x);
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 big = _mm512_sub_ps(
      one, _mm512_div_ps(_mm512_set1_ps(2.f),
                         _mm512_add_ps(expAvx512(_mm512_add_ps(a, a)), one)));
  const __m512 signedBig = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(big), _mm512_and_si512(signBit, bits))); // big >= 0
  return _mm512_mask_mov_ps(
      small,
      _mm512_cmp_ps_mask(a, _mm512_set1_ps(0.2f), _CMP_NLT_UQ) &
          _mm512_cmp_ps_mask(a, a, _CMP_ORD_Q),
      signedBig);
}

/// y = Fn(x) 16 lanes at a time, the tail under a mask.
template <__m512 (*Fn)(__m512)>
__attribute__((target("avx512f"))) void mapAvx512(const float *x, float *y,
                                                  int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, Fn(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, tail, Fn(_mm512_maskz_loadu_ps(tail, x + i)));
  }
}

/// The max and the sum of 16 lanes (GCC 12's _mm512_reduce_* warn of an
/// uninitialised variable inside).
MP_AVX512 float maxOfLanes(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float m = l[0];
  for (int i = 1; i < 16; ++i)
    m = l[i] > m ? l[i] : m;
  return m;
}
MP_AVX512 float sumOfLanes(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float s = 0.f;
  for (int i = 0; i < 16; ++i)
    s += l[i];
  return s;
}

__attribute__((target("avx512f"))) void softmaxLoopAvx512(float *x, int64_t n) {
  const int64_t whole = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - whole)) - 1);
  const __m512 minusInf = _mm512_set1_ps(-__builtin_inff());
  __m512 lanes = minusInf;
  for (int64_t i = 0; i < whole; i += 16)
    lanes = _mm512_max_ps(lanes, _mm512_loadu_ps(x + i));
  lanes = _mm512_max_ps(lanes, _mm512_mask_loadu_ps(minusInf, tail, x + whole));
  const __m512 max = _mm512_set1_ps(maxOfLanes(lanes));
  // exp(x - max), stored, and its sum (the tail's masked lanes add 0).
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < whole; i += 16) {
    const __m512 e = expAvx512(_mm512_sub_ps(_mm512_loadu_ps(x + i), max));
    _mm512_storeu_ps(x + i, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (tail) {
    const __m512 e = _mm512_maskz_mov_ps(
        tail,
        expAvx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + whole), max)));
    _mm512_mask_storeu_ps(x + whole, tail, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inverse = _mm512_set1_ps(1.f / sumOfLanes(sum));
  for (int64_t i = 0; i < whole; i += 16)
    _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inverse));
  if (tail)
    _mm512_mask_storeu_ps(
        x + whole, tail,
        _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + whole), inverse));
}

#undef MP_AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void expLoopAvx512(const float *x, float *y, int64_t n) {
  mapAvx512<expAvx512>(x, y, n);
}
void sigmoidLoopAvx512(const float *x, float *y, int64_t n) {
  mapAvx512<sigmoidAvx512>(x, y, n);
}
void tanhLoopAvx512(const float *x, float *y, int64_t n) {
  mapAvx512<tanhAvx512>(x, y, n);
}

/// y[i] = Fn(x[i]), compiled for one ISA each: the inline functions
/// above vectorise in the caller's.
#define MP_VECTOR_LOOPS(Suffix, Target)                                        \
  __attribute__((target(Target))) void expLoop##Suffix(const float *x,         \
                                                       float *y, int64_t n) {  \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = expApprox(x[i]);                                                  \
  }                                                                            \
  __attribute__((target(Target))) void sigmoidLoop##Suffix(                    \
      const float *x, float *y, int64_t n) {                                   \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = sigmoidApprox(x[i]);                                              \
  }                                                                            \
  __attribute__((target(Target))) void tanhLoop##Suffix(const float *x,        \
                                                        float *y, int64_t n) { \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = tanhApprox(x[i]);                                                 \
  }                                                                            \
  __attribute__((target(Target))) void softmaxLoop##Suffix(float *x,           \
                                                           int64_t n) {        \
    softmaxInLanes(x, n);                                                      \
  }
MP_VECTOR_LOOPS(Avx2, "avx2")
MP_VECTOR_LOOPS(Baseline, "default")
#undef MP_VECTOR_LOOPS

using Loop = void (*)(const float *, float *, int64_t);
using InPlaceLoop = void (*)(float *, int64_t);
struct Loops {
  Loop exp, sigmoid, tanh;
  InPlaceLoop softmax;
};
constexpr Loops kLoops[] = {
    {expLoopBaseline, sigmoidLoopBaseline, tanhLoopBaseline,
     softmaxLoopBaseline},
    {expLoopAvx2, sigmoidLoopAvx2, tanhLoopAvx2, softmaxLoopAvx2},
    {expLoopAvx512, sigmoidLoopAvx512, tanhLoopAvx512, softmaxLoopAvx512},
};

} // namespace

std::string_view vectorIsaName(VectorIsa isa) {
  switch (isa) {
  case VectorIsa::Avx512:
    return "avx512";
  case VectorIsa::Avx2:
    return "avx2";
  case VectorIsa::Baseline:
    break;
  }
  return "baseline";
}

std::vector<VectorIsa> supportedVectorIsas() {
  std::vector<VectorIsa> isas;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    isas.push_back(VectorIsa::Avx512);
  if (__builtin_cpu_supports("avx2"))
    isas.push_back(VectorIsa::Avx2);
  isas.push_back(VectorIsa::Baseline);
  return isas;
}

VectorIsa vectorMathIsa() {
  static const VectorIsa chosen = [] {
    std::vector<VectorIsa> isas = supportedVectorIsas();
    if (const char *wanted = std::getenv("MP_VECTOR_MATH_ISA"))
      for (VectorIsa isa : isas)
        if (vectorIsaName(isa) == wanted)
          return isa;
    return isas.front();
  }();
  return chosen;
}

bool hasVectorMath(ElementwiseFn fn) {
  return fn == ElementwiseFn::Exp || fn == ElementwiseFn::Sigmoid ||
         fn == ElementwiseFn::Tanh;
}

void vectorMath(ElementwiseFn fn, const float *x, float *y, int64_t n,
                VectorIsa isa) {
  const Loops &loops = kLoops[static_cast<int>(isa)];
  switch (fn) {
  case ElementwiseFn::Exp:
    return loops.exp(x, y, n);
  case ElementwiseFn::Sigmoid:
    return loops.sigmoid(x, y, n);
  case ElementwiseFn::Tanh:
    return loops.tanh(x, y, n);
  default:
    return;
  }
}

void softmaxInPlace(float *x, int64_t n, VectorIsa isa) {
  kLoops[static_cast<int>(isa)].softmax(x, n);
}

} // namespace mp::rt::cpu
