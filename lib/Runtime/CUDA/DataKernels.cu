//===- DataKernels.cu - data movement and indexing kernels ----------------===//
//
// The CUDA backend's own kernels for kernel.trilu, kernel.tile,
// kernel.pad, kernel.gather_elements, kernel.gather_nd,
// kernel.scatter_elements and kernel.resize, following the CPU kernels
// (lib/Runtime/CPU/NNMisc.cpp, DataMovement.cpp, Indexing.cpp, Resize.cpp).
// Elements are moved as raw bytes (templates on the element size) where
// nothing is computed; one thread per output element, except
// scatter_elements: one thread per line of indices along the axis, which
// applies that line's updates in order (only updates of one line can meet,
// so the result is the CPU's, reductions and repeated indices included).
// Bad indices are recorded in the call's DeviceError.
//
//===----------------------------------------------------------------------===//
#include "../ResizeMath.h"
#include "DeviceUtil.cuh"

#include <cmath>

namespace mp::rt::cuda {
namespace dev {
namespace {

constexpr int kBlock = 256;

__device__ inline int64_t indexAt(const void *indices, int32_t t, int64_t i) {
  return t == kI32 ? static_cast<const int32_t *>(indices)[i]
                   : static_cast<const int64_t *>(indices)[i];
}

//===----------------------------------------------------------------------===//
// Trilu, tile, pad
//===----------------------------------------------------------------------===//

template <typename E> __global__ void triluKernel(TriluParams p) {
  const E *x = static_cast<const E *>(p.x);
  E *y = static_cast<E *>(p.y);
  MP_GRID_LOOP(i, p.n) {
    const int64_t j = i % p.cols, row = (i / p.cols) % p.rows;
    const bool keep = p.upper ? j - row >= p.k : j - row <= p.k;
    y[i] = keep ? x[i] : E(0);
  }
}

template <typename E> __global__ void tileKernel(TileParams p) {
  const E *x = static_cast<const E *>(p.x);
  E *y = static_cast<E *>(p.y);
  MP_GRID_LOOP(i, p.n) {
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.yDims[d];
      rem /= p.yDims[d];
      off += (c % p.xDims[d]) * p.xStrides[d];
    }
    y[i] = x[off];
  }
}

/// j (an index into a kept part of n > 0 elements, possibly outside it)
/// mapped into [0, n) by reflect, edge or wrap (numpy.pad).
__device__ inline int64_t padSource(int32_t mode, int64_t j, int64_t n) {
  if (j >= 0 && j < n)
    return j;
  if (mode == kPadEdge)
    return j < 0 ? 0 : n - 1;
  if (mode == kPadWrap) {
    j %= n;
    return j < 0 ? j + n : j;
  }
  if (n == 1) // reflect of a single element
    return 0;
  const int64_t period = 2 * (n - 1);
  j %= period;
  if (j < 0)
    j += period;
  return j >= n ? period - j : j;
}

template <typename E> __global__ void padKernel(PadParams p) {
  const E *x = static_cast<const E *>(p.x);
  E *y = static_cast<E *>(p.y);
  E constant;
  memcpy(&constant, &p.constant, sizeof(E));
  MP_GRID_LOOP(i, p.n) {
    int64_t rem = i, off = 0;
    bool outside = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.yDims[d];
      rem /= p.yDims[d];
      int64_t j = c - p.before[d];
      if (j < 0 || j >= p.len[d]) {
        if (p.mode == kPadConstant) {
          outside = true;
          break;
        }
        j = padSource(p.mode, j, p.len[d]);
      }
      off += (p.lo[d] + j) * p.xStrides[d];
    }
    y[i] = outside ? constant : x[off];
  }
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

template <typename E>
__global__ void gatherElementsKernel(ElementsParams p, DeviceError *err) {
  const E *data = static_cast<const E *>(p.data);
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.n) {
    // i's coordinates in indices; data's offset without the axis.
    int64_t rem = i, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.dims[d];
      rem /= p.dims[d];
      if (d != p.axis)
        off += c * p.dataStrides[d];
    }
    int64_t idx = indexAt(p.indices, p.indexDtype, i);
    if (idx < -p.axisDim || idx >= p.axisDim) {
      recordError(err, kErrIndexOutOfRange, idx);
      continue;
    }
    if (idx < 0)
      idx += p.axisDim;
    out[i] = data[off + idx * p.dataStrides[p.axis]];
  }
}

template <typename E>
__global__ void gatherNDKernel(GatherNDParams p, DeviceError *err) {
  const E *data = static_cast<const E *>(p.data);
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.n) {
    const int64_t t = i / p.sliceLen, j = i % p.sliceLen;
    int64_t off = (t / p.perBatch) * p.batchStride;
    bool ok = true;
    for (int q = 0; q < p.k; ++q) {
      int64_t v = indexAt(p.indices, p.indexDtype, t * p.k + q);
      if (v < -p.dims[q] || v >= p.dims[q]) {
        recordError(err, kErrIndexOutOfRange, v);
        ok = false;
        break;
      }
      off += (v < 0 ? v + p.dims[q] : v) * p.strides[q];
    }
    if (ok)
      out[i] = data[off + j];
  }
}

//===----------------------------------------------------------------------===//
// ScatterElements
//===----------------------------------------------------------------------===//

/// y[yi] = y[yi] (reduction) u[ui] in the CPU's arithmetic for the dtype.
__device__ inline void combineElem(const ElementsParams &p, int64_t yi,
                                   int64_t ui) {
  combineScatterElem(p.dtype, p.elemSize, p.reduction, p.out, yi, p.updates,
                     ui);
}

/// One thread per line of indices along the axis: its updates in order.
__global__ void scatterElementsKernel(ElementsParams p, DeviceError *err) {
  MP_GRID_LOOP(line, p.n) {
    // The line's coordinates (all dims but the axis) in indices and data.
    int64_t rem = line, base = 0, pos = 0, stride = 1, axisStride = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      if (d == p.axis) {
        axisStride = stride;
      } else {
        const int64_t c = rem % p.dims[d];
        rem /= p.dims[d];
        base += c * p.dataStrides[d];
        pos += c * stride;
      }
      stride *= p.dims[d];
    }
    for (int64_t a = 0; a < p.dims[p.axis]; ++a) {
      const int64_t ui = pos + a * axisStride;
      int64_t idx = indexAt(p.indices, p.indexDtype, ui);
      if (idx < -p.axisDim || idx >= p.axisDim) {
        recordError(err, kErrIndexOutOfRange, idx);
        continue;
      }
      if (idx < 0)
        idx += p.axisDim;
      combineElem(p, base + idx * p.dataStrides[p.axis], ui);
    }
  }
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// The taps of one dim at one output index (cpu::Resize.cpp computeTaps):
/// input offsets and weights, zero weights dropped; `outside` for
/// tf_crop_and_resize points outside the input.
struct Taps {
  int n = 0;
  bool outside = false;
  int64_t offset[4];
  double weight[4];
};

// cpu::ResizeMode, cpu::CoordinateTransform, cpu::NearestMode codes.
enum : int32_t { kNearest = 0, kLinear = 1, kCubic = 2 };
enum : int32_t {
  kHalfPixel = 0,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNN,
  kHalfPixelSymmetric,
};
enum : int32_t { kRoundPreferFloor = 0, kRoundPreferCeil, kFloor, kCeil };

__device__ inline Taps resizeTaps(const ResizeParams &p, int d, int64_t o) {
  Taps taps;
  const double scale = p.scales[d];
  const int64_t inLen = p.xDims[d], outLen = p.yDims[d];
  const double in = static_cast<double>(inLen);
  const double outScaled = scale * in;
  const double xr = static_cast<double>(o);
  double xo = 0;
  switch (p.transform) {
  case kHalfPixel:
    xo = (xr + 0.5) / scale - 0.5;
    break;
  case kPytorchHalfPixel:
    xo = outLen == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
    break;
  case kAlignCorners:
    xo = outLen == 1 ? 0.0 : xr * (in - 1) / (outScaled - 1);
    break;
  case kAsymmetric:
    xo = xr / scale;
    break;
  case kTfHalfPixelForNN:
    xo = (xr + 0.5) / scale;
    break;
  case kHalfPixelSymmetric: {
    const double adjustment = static_cast<double>(outLen) / outScaled;
    xo = in / 2 * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
    break;
  }
  case kTfCropAndResize: {
    const double start = p.roiStart[d], end = p.roiEnd[d];
    xo = outLen == 1 ? (end - start) * (in - 1) / 2
                     : xr * (end - start) * (in - 1) / (outScaled - 1);
    xo += start * (in - 1);
    if (xo < 0 || xo > in - 1) {
      taps.outside = true;
      return taps;
    }
    break;
  }
  }
  // The planner checked that every coordinate is finite.
  xo = fmin(fmax(xo, -8.0), in + 8.0);
  const double fl = floor(xo);
  int64_t base = static_cast<int64_t>(fl);
  double t = xo - fl;
  if (t == 0) {
    base -= 1;
    t = 1;
  }
  double w[4];
  int64_t first = base;
  int n = 2;
  if (p.mode == kNearest) {
    bool right = true;
    if (t != 1)
      switch (p.nearest) {
      case kRoundPreferFloor:
        right = t > 0.5;
        break;
      case kRoundPreferCeil:
        right = t >= 0.5;
        break;
      case kFloor:
        right = false;
        break;
      default:
        right = true;
        break;
      }
    w[0] = right ? 0 : 1;
    w[1] = right ? 1 : 0;
  } else if (p.mode == kLinear) {
    w[0] = 1 - t;
    w[1] = t;
  } else {
    resize::cubicWeights(t, p.cubicA, w);
    first = base - 1;
    n = 4;
  }
  if (p.excludeOutside)
    resize::excludeOutside(first, n, inLen, w);
  for (int k = 0; k < n; ++k) {
    if (w[k] == 0)
      continue;
    const int64_t idx = resize::clampIndex(first + k, inLen);
    taps.offset[taps.n] = idx * p.xStrides[d];
    taps.weight[taps.n] = w[k];
    ++taps.n;
  }
  return taps;
}

/// C: float (f32, f16, bf16 data) or double (f64). Nearest copies one
/// element (any dtype); linear and cubic sum the combinations of the outer
/// dims' taps (dim 0 slowest, weights multiplied from dim 0 on, as the
/// CPU's outerCombos) of the last dim's weighted taps.
template <typename C> __global__ void resizeKernel(ResizeParams p) {
  MP_GRID_LOOP(i, p.n) {
    Taps taps[kMaxDims];
    bool outside = false;
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      taps[d] = resizeTaps(p, d, rem % p.yDims[d]);
      rem /= p.yDims[d];
      outside = outside || taps[d].outside;
    }
    if (outside) {
      const bool isFloatData = p.dtype == kF32 || p.dtype == kF16 ||
                               p.dtype == kBF16 || p.dtype == kF64;
      if (isFloatData) // rounded once to the dtype, as the CPU
        storeF64(p.y, p.dtype, i, p.extrapolation);
      else // the planner's bits (bool: 0 or 1)
        storeI64(p.y, p.dtype == kBool ? kU8 : p.dtype, i,
                 static_cast<int64_t>(p.extrapolationBits));
      continue;
    }
    if (p.mode == kNearest) {
      int64_t off = 0;
      for (int d = 0; d < p.rank; ++d)
        off += taps[d].offset[0];
      switch (p.elemSize) {
      case 1:
        static_cast<uint8_t *>(p.y)[i] = static_cast<const uint8_t *>(p.x)[off];
        break;
      case 2:
        static_cast<uint16_t *>(p.y)[i] =
            static_cast<const uint16_t *>(p.x)[off];
        break;
      case 4:
        static_cast<uint32_t *>(p.y)[i] =
            static_cast<const uint32_t *>(p.x)[off];
        break;
      default:
        static_cast<uint64_t *>(p.y)[i] =
            static_cast<const uint64_t *>(p.x)[off];
        break;
      }
      continue;
    }
    const int last = p.rank - 1;
    int64_t combos = 1;
    for (int d = 0; d < last; ++d)
      combos *= taps[d].n;
    C acc = 0;
    for (int64_t c = 0; c < combos; ++c) {
      // c in mixed radix over the outer dims, dim 0 most significant.
      int pick[kMaxDims];
      int64_t r = c;
      for (int d = last - 1; d >= 0; --d) {
        pick[d] = static_cast<int>(r % taps[d].n);
        r /= taps[d].n;
      }
      C weight = C(1);
      int64_t off = 0;
      for (int d = 0; d < last; ++d) {
        weight = weight * static_cast<C>(taps[d].weight[pick[d]]);
        off += taps[d].offset[pick[d]];
      }
      C inner = 0;
      for (int k = 0; k < taps[last].n; ++k)
        inner += static_cast<C>(taps[last].weight[k]) *
                 loadAs<C>(p.x, p.dtype, off + taps[last].offset[k]);
      acc += weight * inner;
    }
    storeAs(p.y, p.dtype, i, acc);
  }
}

} // namespace
} // namespace dev

using namespace dev;

cudaError_t launchTrilu(const TriluParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  MP_LAUNCH_BY_ELEM(p.elemSize, triluKernel, blocksFor(p.n, kBlock), kBlock,
                    stream, p);
  return cudaGetLastError();
}

cudaError_t launchTile(const TileParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  MP_LAUNCH_BY_ELEM(p.elemSize, tileKernel, blocksFor(p.n, kBlock), kBlock,
                    stream, p);
  return cudaGetLastError();
}

cudaError_t launchPad(const PadParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  MP_LAUNCH_BY_ELEM(p.elemSize, padKernel, blocksFor(p.n, kBlock), kBlock,
                    stream, p);
  return cudaGetLastError();
}

cudaError_t launchGatherElements(const ElementsParams &p, DeviceError *error,
                                 cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  MP_LAUNCH_BY_ELEM(p.elemSize, gatherElementsKernel, blocksFor(p.n, kBlock),
                    kBlock, stream, p, error);
  return cudaGetLastError();
}

cudaError_t launchGatherND(const GatherNDParams &p, DeviceError *error,
                           cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  MP_LAUNCH_BY_ELEM(p.elemSize, gatherNDKernel, blocksFor(p.n, kBlock), kBlock,
                    stream, p, error);
  return cudaGetLastError();
}

cudaError_t launchScatterElements(const ElementsParams &p, DeviceError *error,
                                  cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  scatterElementsKernel<<<blocksFor(p.n, kBlock), kBlock, 0, stream>>>(p,
                                                                       error);
  return cudaGetLastError();
}

cudaError_t launchResize(const ResizeParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  const unsigned blocks = blocksFor(p.n, kBlock);
  if (p.rank == 0) { // one element, copied
    GatherCopyParams c;
    c.rank = 1;
    c.elemSize = p.elemSize;
    c.n = 1;
    c.dims[0] = 1;
    c.xStrides[0] = 1;
    c.in = p.x;
    c.out = p.y;
    return launchGatherCopy(c, stream);
  }
  if (p.dtype == kF64)
    resizeKernel<double><<<blocks, kBlock, 0, stream>>>(p);
  else
    resizeKernel<float><<<blocks, kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
