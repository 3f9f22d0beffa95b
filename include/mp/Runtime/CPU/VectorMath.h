//===- VectorMath.h - vectorised f32 exp, sigmoid, tanh ---------*- C++ -*-===//
//
// The reference kernels call libm's expf and tanhf one element at a time
// (exact to libm's half ulp, but scalar: an EfficientNet SiLU spent
// milliseconds there). The fast CPU path of fused programs computes these
// functions on contiguous f32 chunks with polynomial approximations: AVX-512
// intrinsics, and for AVX2 and the x86-64 baseline loops the compiler
// vectorises; the best the CPU runs is picked. Accuracy: exp and sigmoid within
// a few f32 ulps of the exact value (subnormal results within an absolute
// 1e-38: exp below -88 is 0), tanh within 3e-7 absolute; NaN stays NaN,
// infinities give exp's and tanh's limits.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_VECTORMATH_H
#define MP_RUNTIME_CPU_VECTORMATH_H

#include "mp/Runtime/ElementwiseFunctions.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace mp::rt::cpu {

/// The instruction sets the loops are compiled for.
enum class VectorIsa { Baseline, Avx2, Avx512 };
std::string_view vectorIsaName(VectorIsa isa);

/// The ones this CPU runs, best first (Baseline always).
std::vector<VectorIsa> supportedVectorIsas();

/// The one vectorMath uses by default: the best this CPU runs, or, when the
/// environment variable MP_VECTOR_MATH_ISA names a supported one
/// ("baseline", "avx2", "avx512"), that one (scripts/check-portability.sh
/// runs the tests under each). Read once.
VectorIsa vectorMathIsa();

/// Whether vectorMath computes fn (exp, sigmoid, tanh).
bool hasVectorMath(ElementwiseFn fn);

/// y[i] = fn(x[i]) for n contiguous f32 values (y may be x), with the loop
/// compiled for `isa` (which this CPU must run).
void vectorMath(ElementwiseFn fn, const float *x, float *y, int64_t n,
                VectorIsa isa = vectorMathIsa());

/// x = softmax(x) over n contiguous f32 values (n >= 1), with the exp above:
/// exp(x - max) / sum; a row of -inf gives NaN.
void softmaxInPlace(float *x, int64_t n, VectorIsa isa = vectorMathIsa());

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_VECTORMATH_H
