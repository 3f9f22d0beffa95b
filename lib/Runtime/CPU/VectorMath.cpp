//===- VectorMath.cpp - vectorised f32 exp, sigmoid, tanh -----------------===//
//
// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two
// parts, so that r is exact), exp(r) by Cephes' expf polynomial on
// [-ln2/2, ln2/2]; 2^n built in the exponent bits, in two halves so that n
// may leave the normal range. Every operation is a plain float or int
// operation on the lane, so each loop below vectorises.
//
//===----------------------------------------------------------------------===//
#include "VectorMath.h"

#include <cstring>

namespace mp::rt::cpu::detail {

namespace {

inline float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// Straight-line code (selects, no branches: GCC vectorises the loops).
/// Beyond +-100 the result is inf or 0 anyway; within, 2^n in two halves
/// overflows to inf and underflows to subnormals and 0 as exp does. NaN
/// propagates through the arithmetic (n is computed from 0 then).
inline float expApprox(float x) {
  float c = x < -100.f ? -100.f : x;
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
  return e * fromBits(static_cast<uint32_t>(half + 127) << 23) *
         fromBits(static_cast<uint32_t>(n - half + 127) << 23);
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

#define MP_VECTOR_LOOP(Name, expr)                                             \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void Name(      \
      const float *x, float *y, int64_t n) {                                   \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = expr(x[i]);                                                       \
  }
MP_VECTOR_LOOP(expLoop, expApprox)
MP_VECTOR_LOOP(sigmoidLoop, sigmoidApprox)
MP_VECTOR_LOOP(tanhLoop, tanhApprox)
#undef MP_VECTOR_LOOP

} // namespace

bool hasVectorMath(ElementwiseFn fn) {
  return fn == ElementwiseFn::Exp || fn == ElementwiseFn::Sigmoid ||
         fn == ElementwiseFn::Tanh;
}

void vectorMath(ElementwiseFn fn, const float *x, float *y, int64_t n) {
  switch (fn) {
  case ElementwiseFn::Exp:
    return expLoop(x, y, n);
  case ElementwiseFn::Sigmoid:
    return sigmoidLoop(x, y, n);
  case ElementwiseFn::Tanh:
    return tanhLoop(x, y, n);
  default:
    return;
  }
}

} // namespace mp::rt::cpu::detail
