//===- IntegerPow.h - integer pow, the same bits on CPU and GPU -*- C++ -*-===//
//
// Elementwise pow of an integer base computes in f64 and converts the
// result with the cast rules (truncation toward zero, saturation). Both
// backends call this one function so that they agree bit for bit: an
// integral exponent multiplies by squaring (exact while the result stays
// below 2^53; beyond, each product rounds the same way on both sides, where
// the C library's pow and CUDA's would each round differently); other
// exponents use pow. Only multiplications and one division: no fused
// multiply-add can change the bits.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_INTEGERPOW_H
#define MP_RUNTIME_INTEGERPOW_H

#include <cmath>

#if defined(__CUDACC__)
#define MP_HOST_DEVICE __host__ __device__
#else
#define MP_HOST_DEVICE
#endif

namespace mp::rt {

MP_HOST_DEVICE inline double integerPow(double base, double exponent) {
  using std::fabs;
  using std::pow;
  using std::trunc;
  if (base == trunc(base) && exponent == trunc(exponent) &&
      fabs(exponent) < 2147483648.0) {
    long long n = static_cast<long long>(fabs(exponent));
    double r = 1.0, f = base;
    while (n) {
      if (n & 1)
        r *= f;
      n >>= 1;
      if (n)
        f *= f;
    }
    return exponent < 0 ? 1.0 / r : r;
  }
  return pow(base, exponent);
}

} // namespace mp::rt

#endif // MP_RUNTIME_INTEGERPOW_H
