//===- ResizeMath.h - Resize tap arithmetic shared by CPU and CUDA --------===//
//
// The parts of a Resize tap computation that the CPU kernel (CPU/Resize.cpp)
// and the CUDA kernel (CUDA/DataKernels.cu) compute alike, written once so
// that both give the same weights: the cubic convolution weights, the
// exclude_outside renormalisation and the edge clamp of an input index.
// Included by those two files only; host and device inline functions under
// nvcc, plain inline functions elsewhere.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_RESIZEMATH_H
#define MP_LIB_RUNTIME_RESIZEMATH_H

#include <cstdint>

#ifdef __CUDACC__
#define MP_RESIZE_HD __host__ __device__
#else
#define MP_RESIZE_HD
#endif

namespace mp::rt::resize {

/// The cubic convolution weights (Keys, coefficient a) of the four input
/// points at distances 1 + t, t, 1 - t, 2 - t from the coordinate.
MP_RESIZE_HD inline void cubicWeights(double t, double a, double w[4]) {
  const double s = t + 1, u = 1 - t, v = 2 - t;
  w[0] = ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
  w[3] = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a;
}

/// exclude_outside: drop the points outside the input (the n taps from
/// input index `first` on) and renormalize; when none is inside (possible
/// only for nearest), keep the weights as they are, so that every output
/// has a tap.
MP_RESIZE_HD inline void excludeOutside(int64_t first, int n, int64_t inLen,
                                        double w[4]) {
  double kept[4], sum = 0;
  for (int k = 0; k < n; ++k) {
    const int64_t idx = first + k;
    kept[k] = (idx < 0 || idx >= inLen) ? 0 : w[k];
    sum += kept[k];
  }
  if (sum != 0)
    for (int k = 0; k < n; ++k)
      w[k] = kept[k] / sum;
}

/// An input index clamped to [0, inLen - 1] (ONNX's 'edge' padding).
MP_RESIZE_HD inline int64_t clampIndex(int64_t idx, int64_t inLen) {
  return idx < 0 ? 0 : (idx > inLen - 1 ? inLen - 1 : idx);
}

} // namespace mp::rt::resize

#undef MP_RESIZE_HD

#endif // MP_LIB_RUNTIME_RESIZEMATH_H
