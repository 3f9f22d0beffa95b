//===- CPUKernelsTestSupport.h - CPU kernel test references -*- C++ -*-===//
//
// Shared by MatmulKernelsTest.cpp, ConvKernelsTest.cpp, PoolKernelsTest.cpp
// and CPUKernelsTest.cpp (batch norm, softmax, timings): the tolerance model
// below, the activations' references, index helpers for both layouts.
//
// Every kernel is compared with a straightforward reference written here:
// naive loops over the definition (numpy matmul broadcasting, ONNX Conv,
// MaxPool/AveragePool, BatchNormalization, Softmax), accumulating in double,
// on deterministic pseudo-random inputs (16-bit inputs are drawn, rounded to
// their type, and the reference uses the rounded values).
//
// Tolerances. Besides its value, the reference computes for each element a
// bound on the error that an f32 (f64 for f64 kernels) computation may make:
// eps * (number of operations) * (sum of the magnitudes of the terms).
//  * f32 / f64 outputs must be within that bound (plus the output rounding).
//  * 16-bit outputs must be what rounding an f32-accumulated value ONCE gives:
//    round16(ref - bound) <= y <= round16(ref + bound). Where the bound is
//    small against the 16-bit spacing this is round16(ref) or a neighbour
//    (1 ulp); a kernel that accumulated in 16 bits or rounded twice (e.g.
//    before the bias or the activation) falls outside.
// Results in the compute type's underflow range (below 16 * its smallest
// normal) get that much absolute slack. Max pooling and max indices must
// match exactly.
// Loops count mismatches and report the first few.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_CPUKERNELSTESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_CPUKERNELSTESTSUPPORT_H

#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace mp::rt::test::cpu_kernels {

using cpu::Activation;
using cpu::Layout;

//===----------------------------------------------------------------------===//
// Tensors, random data, comparisons
//===----------------------------------------------------------------------===//

/// A tensor filled with NaN-free garbage, so that unwritten outputs show.
inline HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numElements(); ++i) {
    if (t == DType::I64)
      r.as<int64_t>()[i] = -777;
    else
      setD(r, i, 12345.0);
  }
  return r;
}

/// The unit roundoff of a compute type (f32 for 16-bit and f32 data).
inline double unitRoundoff(DType t) {
  return t == DType::F64 ? 0x1p-53 : 0x1p-24;
}

inline std::string shapeString(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// Checks `got` against the reference with per-element error bounds `bound`
/// (see the file comment); exact when `exact`.
inline void expectClose(const HostTensor &got, const std::vector<double> &ref,
                        const std::vector<double> &bound, bool exact = false) {
  REQUIRE(static_cast<size_t>(got.numElements()) == ref.size());
  DType t = got.dtype();
  // Absolute slack for results in the compute type's underflow range.
  double tiny = t == DType::F64 ? 0x1p-1018 : 0x1p-122;
  int64_t bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = getD(got, static_cast<int64_t>(i)), r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (exact)
      ok = g == r;
    else if (t == DType::F32 || t == DType::F64)
      ok = std::fabs(g - r) <=
           bound[i] + tiny + std::fabs(r) * unitRoundoff(t) * 2;
    else
      ok = g >= roundTo(t, r - bound[i] - tiny) &&
           g <= roundTo(t, r + bound[i] + tiny);
    if (!ok && bad++ < 6)
      msg << "  element " << i << ": got " << g << ", expected " << r
          << " (bound " << bound[i] << ", " << dtypeName(t) << " expected "
          << roundTo(t, r) << ")\n";
  }
  INFO("mismatches: " << bad << " of " << ref.size() << "\n" << msg.str());
  CHECK(bad == 0);
}

/// The bounds of Activation::Clip in the kernel tests.
constexpr float kTestClipMin = -0.25f, kTestClipMax = 0.5f;

inline double activateRef(Activation a, double v) {
  switch (a) {
  case Activation::None:
    return v;
  case Activation::Relu:
    return v > 0 ? v : 0;
  case Activation::Gelu:
    return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * v *
           (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) *
                            (v + 0.044715 * v * v * v)));
  case Activation::Clip:
    return std::min<double>(std::max<double>(v, kTestClipMin), kTestClipMax);
  case Activation::Silu:
    return v / (1.0 + std::exp(-v));
  case Activation::Sigmoid:
    return 1.0 / (1.0 + std::exp(-v));
  case Activation::Tanh:
    return std::tanh(v);
  case Activation::HardSwish:
    return v * std::min(std::max(v / 6.0 + 0.5, 0.0), 1.0);
  }
  return v;
}

/// The bound after the activation from the bound before it (slopes <= 1.13,
/// hard swish's <= 1.5) and the activation's own evaluation error.
inline double activatedBound(Activation a, double preBound, double ref,
                             double u) {
  if (a == Activation::None)
    return preBound;
  const double slope = a == Activation::HardSwish ? 1.6 : 1.2;
  return slope * preBound + 8 * u * std::fabs(ref) + 1e-30;
}

inline const char *actName(Activation a) {
  switch (a) {
  case Activation::None:
    return "none";
  case Activation::Relu:
    return "relu";
  case Activation::Gelu:
    return "gelu";
  case Activation::GeluTanh:
    return "gelu_tanh";
  case Activation::Clip:
    return "clip";
  case Activation::Silu:
    return "silu";
  case Activation::Sigmoid:
    return "sigmoid";
  case Activation::Tanh:
    return "tanh";
  case Activation::HardSwish:
    return "hard_swish";
  }
  return "?";
}

/// Row-major strides.
inline std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

/// Calls fn(index) for every multi-index of `extent`, last fastest.
inline void
forEachIndex(const Shape &extent,
             const std::function<void(const std::vector<int64_t> &)> &fn) {
  for (int64_t e : extent)
    if (e == 0)
      return;
  std::vector<int64_t> idx(extent.size(), 0);
  while (true) {
    fn(idx);
    size_t i = extent.size();
    for (; i-- > 0;) {
      if (++idx[i] < extent[i])
        break;
      idx[i] = 0;
    }
    if (i == static_cast<size_t>(-1))
      return;
  }
}

/// v[i], or `deflt` where the attribute is not given (v empty).
inline int64_t attr(const std::vector<int64_t> &v, size_t i, int64_t deflt) {
  return v.empty() ? deflt : v[i];
}

/// [N, C, spatial...] or [N, spatial..., C].
inline Shape withChannels(Layout l, int64_t n, int64_t c,
                          const Shape &spatial) {
  Shape s{n};
  if (l == Layout::NCHW)
    s.push_back(c);
  s.insert(s.end(), spatial.begin(), spatial.end());
  if (l == Layout::NHWC)
    s.push_back(c);
  return s;
}

/// Flat index of (n, c, flattened spatial position p) in either layout.
inline int64_t actIndex(Layout l, int64_t n, int64_t c, int64_t p,
                        int64_t channels, int64_t spatialSize) {
  return l == Layout::NCHW ? (n * channels + c) * spatialSize + p
                           : (n * spatialSize + p) * channels + c;
}

} // namespace mp::rt::test::cpu_kernels

#endif // MP_TEST_UNIT_RUNTIME_CPUKERNELSTESTSUPPORT_H
