//===- PoolKernels.cu - pooling and the matmul / conv epilogue ------------===//
//
// The CUDA backend's own kernels for cudnn.pool, cudnn.pool_bwd and the
// matmul / convolution epilogue, one template per accumulator type (f32,
// f64). Every index computation was decided on the host (CudaPlanning*.cpp);
// these only walk it.
//
//===----------------------------------------------------------------------===//
#include "DeviceMath.cuh"

#include <cmath>
#include <type_traits>

namespace mp::rt::cuda {
namespace dev {
namespace {

//===----------------------------------------------------------------------===//
// The matmul / convolution epilogue
//===----------------------------------------------------------------------===//

template <typename C> __global__ void epilogueKernel(EpilogueParams p) {
  int64_t n = p.geom.outer * p.geom.c * p.geom.inner;
  MP_GRID_LOOP(i, n) {
    C v = loadAs<C>(p.acc, p.accDtype, i);
    if (p.biasDtype)
      v = v + loadAs<C>(p.bias, p.biasDtype, (i / p.geom.inner) % p.geom.c);
    if (p.residualDtype)
      v = v + loadAs<C>(p.residual, p.residualDtype, i);
    if (p.act == kActRelu)
      v = v > C(0) ? v : C(0);
    else if (p.act == kActGelu)
      v = C(0.5) * v * (C(1) + mErf(v * C(0.70710678118654752)));
    else if (p.act == kActClip) { // as the elementwise clip: NaN stays NaN
      v = v < C(p.clipMin) ? C(p.clipMin) : v;
      v = v > C(p.clipMax) ? C(p.clipMax) : v;
    } else if (p.act == kActSilu)
      v = v / (C(1) + mExp(-v));
    else if (p.act == kActSigmoid)
      v = C(1) / (C(1) + mExp(-v));
    else if (p.act == kActTanh)
      v = mTanh(v);
    else if (p.act == kActHardSwish) {
      C g = v / C(6) + C(0.5);
      g = g < C(0) ? C(0) : (g > C(1) ? C(1) : g);
      v = v * g;
    } else if (p.act == kActGeluTanh)
      v = C(0.5) * v *
          (C(1) +
           mTanh(C(0.79788456080286536) * (v + C(0.044715) * v * v * v)));
    else if (p.act >= kActReluGrad) {
      // The activation's derivative at its forward input (the CPU's
      // activationGradient).
      const C x = loadAs<C>(p.aux, p.auxDtype, i);
      if (p.act == kActReluGrad) {
        v = x > C(0) ? v : C(0);
      } else if (p.act == kActGeluGrad) {
        v = v * (C(0.5) * (C(1) + mErf(x * C(0.70710678118654752440))) +
                 x * C(0.39894228040143267794) * mExp(C(-0.5) * x * x));
      } else {
        const C k = C(0.79788456080286535588), c = C(0.044715);
        const C t = mTanh(k * (x + c * x * x * x));
        v = v * (C(0.5) * (C(1) + t) +
                 C(0.5) * x * (C(1) - t * t) * k * (C(1) + C(3) * c * x * x));
      }
    }
    storeAs(p.out, p.outDtype, i, v);
  }
}

//===----------------------------------------------------------------------===//
// Pooling (the CPU's windows: taps inside the input [lo, hi) per dim, the
// first maximum, the count inside the input or the padded input)
//===----------------------------------------------------------------------===//

__device__ inline int64_t ceilDivD(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
__device__ inline int64_t clampD(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

/// The window of output position q (spatial, flattened) of dim j.
struct Window {
  int64_t lo[kMaxSpatial], hi[kMaxSpatial], start[kMaxSpatial];
  int64_t count;
  bool empty;
};

__device__ inline Window windowOf(const PoolParams &p, int64_t q) {
  Window w;
  w.count = 1;
  w.empty = false;
  for (int j = p.k - 1; j >= 0; --j) {
    int64_t oi = q % p.out[j];
    q /= p.out[j];
    int64_t s = oi * p.stride[j] - p.padB[j], d = p.dil[j], kk = p.ker[j];
    int64_t lo = clampD(s >= 0 ? 0 : ceilDivD(-s, d), 0, kk);
    int64_t hi = clampD(ceilDivD(p.in[j] - s, d), lo, kk);
    w.lo[j] = lo;
    w.hi[j] = hi;
    w.start[j] = s;
    w.empty = w.empty || lo >= hi;
    if (p.countIncludePad) {
      int64_t plo = clampD(ceilDivD(-p.padB[j] - s, d), 0, kk);
      int64_t phi = clampD(ceilDivD(p.in[j] + p.padE[j] - s, d), plo, kk);
      w.count *= phi - plo;
    } else {
      w.count *= hi - lo;
    }
  }
  return w;
}

/// Calls f(pos) for the window's taps inside the input, in row-major tap
/// order (pos: the flattened spatial input position).
template <typename F>
__device__ inline void forTaps(const PoolParams &p, const Window &w, F &&f) {
  if (w.empty)
    return;
  int64_t t[kMaxSpatial];
  for (int j = 0; j < p.k; ++j)
    t[j] = w.lo[j];
  while (true) {
    int64_t pos = 0;
    for (int j = 0; j < p.k; ++j)
      pos = pos * p.in[j] + w.start[j] + t[j] * p.dil[j];
    f(pos);
    int j = p.k - 1;
    for (; j >= 0; --j) {
      if (++t[j] < w.hi[j])
        break;
      t[j] = w.lo[j];
    }
    if (j < 0)
      break;
  }
}

/// Output element i of a pooling: its spatial position q, where its (n, c)
/// input slice starts and the distance between the slice's positions.
/// NCHW: i = (n * C + c) * outSize + q, input taps at xBase + pos;
/// NHWC: i = (n * outSize + q) * C + c, input taps at xBase + pos * C.
struct PoolSlice {
  int64_t q, xBase, tapStride;
};
__device__ inline PoolSlice poolSliceOf(const PoolParams &p, int64_t i) {
  if (p.nhwc) {
    int64_t c = i % p.c, nq = i / p.c;
    return {nq % p.outSize, (nq / p.outSize) * p.inSize * p.c + c, p.c};
  }
  return {i % p.outSize, (i / p.outSize) * p.inSize, 1};
}

__global__ void poolKernel(PoolParams p) {
  MP_GRID_LOOP(i, p.n * p.c * p.outSize) {
    PoolSlice sl = poolSliceOf(p, i);
    int64_t xBase = sl.xBase, tapStride = sl.tapStride;
    Window w = windowOf(p, sl.q);
    if (p.isMax) {
      float best = -INFINITY;
      int64_t bestPos = -1;
      forTaps(p, w, [&](int64_t pos) {
        float v = loadF32(p.x, p.dtype, xBase + pos * tapStride);
        if (bestPos < 0 || v > best) {
          best = v;
          bestPos = pos;
        }
      });
      storeF32(p.y, p.dtype, i, best);
      if (p.indices) // NCHW only (the planner refuses indices with NHWC)
        p.indices[i] = bestPos < 0 ? -1 : xBase + bestPos;
    } else {
      float sum = 0.0f;
      forTaps(p, w, [&](int64_t pos) {
        sum += loadF32(p.x, p.dtype, xBase + pos * tapStride);
      });
      storeF32(p.y, p.dtype, i,
               w.count ? sum / static_cast<float>(w.count) : 0.0f);
    }
  }
}

template <typename T> __global__ void poolBackwardKernel(PoolParams p) {
  T *acc = static_cast<T *>(p.acc);
  MP_GRID_LOOP(i, p.n * p.c * p.outSize) {
    PoolSlice sl = poolSliceOf(p, i);
    Window w = windowOf(p, sl.q);
    if (w.empty)
      continue;
    int64_t xBase = sl.xBase, tapStride = sl.tapStride;
    T grad = loadAs<T>(p.dy, p.dtype, i);
    if (p.isMax) {
      T best = 0;
      int64_t bestPos = -1;
      forTaps(p, w, [&](int64_t pos) {
        T v = loadAs<T>(p.x, p.dtype, xBase + pos * tapStride);
        if (bestPos < 0 || v > best) {
          best = v;
          bestPos = pos;
        }
      });
      atomicAdd(acc + xBase + bestPos * tapStride, grad);
    } else {
      T share = grad / static_cast<T>(w.count);
      forTaps(p, w, [&](int64_t pos) {
        atomicAdd(acc + xBase + pos * tapStride, share);
      });
    }
  }
}

} // namespace
} // namespace dev

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

using namespace dev;

cudaError_t launchEpilogue(const EpilogueParams &p, cudaStream_t stream) {
  int64_t n = p.geom.outer * p.geom.c * p.geom.inner;
  if (n == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(n, 256);
  if (p.accDtype == kF64)
    epilogueKernel<double><<<blocks, 256, 0, stream>>>(p);
  else
    epilogueKernel<float><<<blocks, 256, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchPool(const PoolParams &p, cudaStream_t stream) {
  int64_t n = p.n * p.c * p.outSize;
  if (n == 0)
    return cudaSuccess;
  poolKernel<<<blocksFor(n, 256), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchPoolBackward(const PoolParams &p, bool accF64,
                               cudaStream_t stream) {
  int64_t n = p.n * p.c * p.outSize;
  if (n == 0)
    return cudaSuccess;
  if (accF64)
    poolBackwardKernel<double><<<blocksFor(n, 256), 256, 0, stream>>>(p);
  else
    poolBackwardKernel<float><<<blocksFor(n, 256), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
