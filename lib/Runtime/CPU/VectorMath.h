//===- VectorMath.h - vectorised f32 exp, sigmoid, tanh ---------*- C++ -*-===//
//
// The reference kernels call libm's expf and tanhf one element at a time
// (exact to libm's half ulp, but scalar: an EfficientNet SiLU spent
// milliseconds there). The fast CPU path of fused programs computes these
// functions on contiguous f32 chunks with polynomial approximations that the
// compiler vectorises, compiled for AVX-512, AVX2 and the baseline and
// picked for the CPU at load time (GCC's target_clones). Accuracy: exp and
// sigmoid within a few f32 ulps of the exact value (subnormal results
// within an absolute 1e-38), tanh within 3e-7 absolute; NaN stays NaN.
// Private to
// lib/Runtime/CPU.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CPU_VECTORMATH_H
#define MP_LIB_RUNTIME_CPU_VECTORMATH_H

#include "mp/Runtime/ElementwiseFunctions.h"

#include <cstdint>

namespace mp::rt::cpu::detail {

/// Whether vectorMath computes fn.
bool hasVectorMath(ElementwiseFn fn);

/// y[i] = fn(x[i]) for n contiguous f32 values (y may be x).
void vectorMath(ElementwiseFn fn, const float *x, float *y, int64_t n);

} // namespace mp::rt::cpu::detail

#endif // MP_LIB_RUNTIME_CPU_VECTORMATH_H
