//===- NNKernels.cu - normalizations, recurrent nets, selection -----------===//
//
// The CUDA backend's own kernels for kernel.layer_norm,
// kernel.instance_norm, cudnn.lrn, cudnn.rnn and kernel.lstm_bwd (a small
// tiled GEMM and the gate kernels, one launch each per step), kernel.topk,
// kernel.cumsum and kernel.hardmax. They follow the CPU kernels
// (lib/Runtime/CPU/Normalization.cpp, Recurrent.cpp, RecurrentBackward.cpp,
// NNMisc.cpp) expression by expression where the result depends on it:
// statistics in f64, 16-bit data widened to f32 and each output rounded
// once. Simple rather than fast: one thread block per row or one thread
// per output element.
//
//===----------------------------------------------------------------------===//
#include "DeviceUtil.cuh"

#include <cmath>

namespace mp::rt::cuda {
namespace dev {
namespace {

constexpr int kBlock = 256;

//===----------------------------------------------------------------------===//
// Layer norm, instance norm
//===----------------------------------------------------------------------===//

/// The scale / bias element of row element j (layer norm's broadcast).
__device__ inline int64_t broadcastIndex(const NormParams &p,
                                         const int64_t *strides, int64_t j) {
  int64_t off = 0;
  for (int d = p.rowRank - 1; d >= 0; --d) {
    off += (j % p.rowDims[d]) * strides[d];
    j /= p.rowDims[d];
  }
  return off;
}

/// One block per row: mean and 1 / sqrt(biased variance + epsilon) in f64
/// (two passes, as the CPU's moments), then the row normalized in f32.
__global__ void normKernel(NormParams p) {
  __shared__ double shared[32];
  const int64_t n = p.rowSize;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t base = row * n;
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s += static_cast<double>(loadF32(p.x, p.xDtype, base + j));
    double m = n ? blockSum(s, shared) / static_cast<double>(n) : 0.0;
    double sq = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double c = static_cast<double>(loadF32(p.x, p.xDtype, base + j)) - m;
      sq += c * c;
    }
    double var = n ? blockSum(sq, shared) / static_cast<double>(n) : 0.0;
    const float mean = static_cast<float>(m);
    const float inv = static_cast<float>(
        1.0 / sqrt(var + static_cast<double>(p.epsilon)));
    if (p.instance) {
      const int64_t ch = row % p.channels;
      const float a = inv * loadF32(p.scale, p.scaleDtype, ch);
      const float b = loadF32(p.bias, p.biasDtype, ch) - mean * a;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        storeF32(p.y, p.xDtype, base + j,
                 loadF32(p.x, p.xDtype, base + j) * a + b);
    } else {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        int64_t si = p.scaleDense ? j : broadcastIndex(p, p.scaleStrides, j);
        float v = (loadF32(p.x, p.xDtype, base + j) - mean) * inv *
                  loadF32(p.scale, p.scaleDtype, si);
        if (p.biasDtype) {
          int64_t bi = p.biasDense ? j : broadcastIndex(p, p.biasStrides, j);
          v = v + loadF32(p.bias, p.biasDtype, bi);
        }
        storeF32(p.y, p.xDtype, base + j, v);
      }
      if (threadIdx.x == 0) {
        if (p.meanDtype)
          storeF32(p.mean, p.meanDtype, row, mean);
        if (p.invStdDtype)
          storeF32(p.invStd, p.invStdDtype, row, inv);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// LRN
//===----------------------------------------------------------------------===//

/// y = x / (bias + scale * sum of the squares in the channel window)^beta;
/// the squares are summed in f32 from the lowest channel up, as the CPU.
__global__ void lrnKernel(LrnParams p) {
  MP_GRID_LOOP(i, p.n * p.c * p.spatial) {
    const int64_t s = i % p.spatial, ch = (i / p.spatial) % p.c,
                  img = i / (p.spatial * p.c);
    const int64_t lo = ch - p.before < 0 ? 0 : ch - p.before;
    const int64_t hi = ch + p.after > p.c - 1 ? p.c - 1 : ch + p.after;
    float sum = 0.0f;
    for (int64_t k = lo; k <= hi; ++k) {
      float v = loadF32(p.x, p.dtype, (img * p.c + k) * p.spatial + s);
      sum += v * v;
    }
    float x = loadF32(p.x, p.dtype, i);
    storeF32(p.y, p.dtype, i, x / powf(p.bias + p.scale * sum, p.beta));
  }
}

} // namespace
} // namespace dev

using namespace dev;

cudaError_t launchNorm(const NormParams &p, cudaStream_t stream) {
  if (p.rows == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(p.rows, 1, 65535);
  normKernel<<<blocks, kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchLrn(const LrnParams &p, cudaStream_t stream) {
  int64_t n = p.n * p.c * p.spatial;
  if (n == 0)
    return cudaSuccess;
  lrnKernel<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
