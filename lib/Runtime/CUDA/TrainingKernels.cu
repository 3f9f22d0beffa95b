//===- TrainingKernels.cu - batch norm, indexing, losses, optimizers ------===//
//
// The CUDA backend's own kernels for batch normalization (inference,
// training with ONNX's running statistics, backward; and ONNX's running
// statistics after cuDNN's batch norm), kernel.gather,
// kernel.scatter_nd, the losses and their gradients, and the mixed-precision
// training step: unscale + finite check, the loss-scale update and the
// fused SGD / Adam updates. Statistics and losses accumulate in f64 as the
// CPU backend does; the optimizer arithmetic is the CPU's f32 expression by
// expression (compiled without fused multiply-adds), so the same state gives
// the same bits.
//
// Bad data (an index or a class id out of range) cannot stop a kernel: it is
// recorded in the call's DeviceError and the executor reports it after the
// run.
//
//===----------------------------------------------------------------------===//
#include "DeviceUtil.cuh"

#include <cmath>

namespace mp::rt::cuda {
namespace dev {
namespace {

constexpr int kBlock = 256;

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// The element index of the j-th element of channel c.
__device__ inline int64_t channelElem(const ChannelGeom &g, int64_t c,
                                      int64_t j) {
  int64_t o = j / g.inner, i = j % g.inner;
  return (o * g.c + c) * g.inner + i;
}

__global__ void bnInferenceParams(BatchNormParams p) {
  MP_GRID_LOOP(c, p.geom.c) {
    float sc = loadF32(p.scale, p.scaleDtype, c);
    float vr = loadF32(p.var, p.varDtype, c);
    float eps = static_cast<float>(p.epsilon);
    p.chanFactor[c] = sc / sqrtf(vr + eps);
    p.chanMean[c] = loadF32(p.mean, p.meanDtype, c);
    p.chanBias[c] = loadF32(p.bias, p.biasDtype, c);
  }
}

/// Training, channel c with batch mean `mean` and biased variance `v`: the
/// normalisation's coefficients and the running statistics (ONNX's, from
/// the inputs' with `momentum`), as the CPU's batchNormTraining.
__device__ inline void trainingCoefficients(const BatchNormParams &p, int64_t c,
                                            double mean, double v) {
  const double mom = p.momentum;
  float sc = loadF32(p.scale, p.scaleDtype, c);
  float im = loadF32(p.mean, p.meanDtype, c);
  float iv = loadF32(p.var, p.varDtype, c);
  p.chanMean[c] = static_cast<float>(mean);
  p.chanFactor[c] =
      static_cast<float>(static_cast<double>(sc) / sqrt(v + p.epsilon));
  p.chanBias[c] = loadF32(p.bias, p.biasDtype, c);
  storeF32(
      p.runMean, p.runMeanDtype, c,
      static_cast<float>(static_cast<double>(im) * mom + mean * (1.0 - mom)));
  storeF32(p.runVar, p.runVarDtype, c,
           static_cast<float>(static_cast<double>(iv) * mom + v * (1.0 - mom)));
}

/// Batch statistics per channel (one block each, two passes in f64), the
/// running statistics, and the normalisation coefficients.
__global__ void bnTrainingStats(BatchNormParams p) {
  __shared__ double shared[32];
  const ChannelGeom &g = p.geom;
  int64_t count = g.outer * g.inner;
  for (int64_t c = blockIdx.x; c < g.c; c += gridDim.x) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
      s += static_cast<double>(loadF32(p.x, p.xDtype, channelElem(g, c, j)));
    double mean = blockSum(s, shared) / static_cast<double>(count);
    double sq = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      double d =
          static_cast<double>(loadF32(p.x, p.xDtype, channelElem(g, c, j))) -
          mean;
      sq += d * d;
    }
    sq = blockSum(sq, shared);
    if (threadIdx.x == 0)
      trainingCoefficients(p, c, mean, sq / static_cast<double>(count));
  }
}

/// ONNX's running statistics from cuDNN's batch statistics (Launch.h).
__global__ void bnRunningFromBatch(BatchNormParams p, const float *batchMean,
                                   const float *batchVarUnbiased,
                                   double count) {
  MP_GRID_LOOP(c, p.geom.c) {
    double mom = p.momentum;
    double mean = batchMean[c];
    double var = static_cast<double>(batchVarUnbiased[c]) * (count - 1) / count;
    float im = loadF32(p.mean, p.meanDtype, c);
    float iv = loadF32(p.var, p.varDtype, c);
    float rm =
        static_cast<float>(static_cast<double>(im) * mom + mean * (1.0 - mom));
    float rv =
        static_cast<float>(static_cast<double>(iv) * mom + var * (1.0 - mom));
    storeF32(p.runMean, p.runMeanDtype, c, rm);
    storeF32(p.runVar, p.runVarDtype, c, rv);
  }
}

/// y = (x - mean[c]) * factor[c] + bias[c] in f32, rounded once.
__global__ void bnNormalize(BatchNormParams p) {
  const ChannelGeom &g = p.geom;
  MP_GRID_LOOP(i, g.outer * g.c * g.inner) {
    int64_t c = (i / g.inner) % g.c;
    float v = (loadF32(p.x, p.xDtype, i) - p.chanMean[c]) * p.chanFactor[c] +
              p.chanBias[c];
    storeF32(p.y, p.xDtype, i, v);
  }
}

/// Per channel: mean, invstd, sum(dy), sum(dy * xhat), all f64; writes
/// dscale and dbias.
__global__ void bnBackwardStats(BatchNormParams p) {
  __shared__ double shared[32];
  const ChannelGeom &g = p.geom;
  int64_t count = g.outer * g.inner;
  double n = static_cast<double>(count);
  for (int64_t c = blockIdx.x; c < g.c; c += gridDim.x) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
      s += loadF64(p.x, p.xDtype, channelElem(g, c, j));
    double mean = blockSum(s, shared) / n;
    double sq = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      double d = loadF64(p.x, p.xDtype, channelElem(g, c, j)) - mean;
      sq += d * d;
    }
    sq = blockSum(sq, shared);
    double invStd = 1.0 / sqrt(sq / n + p.epsilon);
    double sdy = 0, sdyx = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      int64_t e = channelElem(g, c, j);
      double dy = loadF64(p.dy, p.dyDtype, e);
      sdy += dy;
      sdyx += dy * (loadF64(p.x, p.xDtype, e) - mean) * invStd;
    }
    sdy = blockSum(sdy, shared);
    sdyx = blockSum(sdyx, shared);
    if (threadIdx.x == 0) {
      p.chanD[4 * c] = mean;
      p.chanD[4 * c + 1] = invStd;
      p.chanD[4 * c + 2] = sdy;
      p.chanD[4 * c + 3] = sdyx;
      storeF64(p.dscale, p.dscaleDtype, c, sdyx);
      storeF64(p.dbias, p.dbiasDtype, c, sdy);
    }
  }
}

//===--- Channels last (geom.inner == 1): row slices
//-----------------------===//
//
// Element (r, c) is at r * C + c. The one-block-per-channel kernels above
// would read it with a stride of C (one element per memory transaction) in
// C blocks; here a block of 32 x 8 threads sums 32 adjacent channels over
// every (rowSlices * 8)-th row from its slice's start, so that a warp reads
// 32 adjacent elements, and a second kernel sums the slices per channel.
// Each pass is the matching pass of the kernels above, in f64.

constexpr int kSliceChannels = 32, kSliceRows = 8;

/// What a pass sums per channel: x; (x - mean)^2; dy and dy * xhat.
enum RowPass : int { kSumX = 0, kSumSqDev = 1, kSumDy = 2 };

/// Element e's part in a statistics pass: x; (x - mean)^2; dy and
/// dy * xhat.
__device__ inline void accumulatePass(const BatchNormParams &p, int pass,
                                      int64_t e, double mean, double invStd,
                                      double &a, double &b) {
  const double x = loadF64(p.x, p.xDtype, e);
  if (pass == kSumX) {
    a += x;
  } else if (pass == kSumSqDev) {
    a += (x - mean) * (x - mean);
  } else {
    const double dy = loadF64(p.dy, p.dyDtype, e);
    a += dy;
    b += dy * (x - mean) * invStd;
  }
}

__global__ void bnRowsPartial(BatchNormParams p, int pass) {
  __shared__ double sums[2][kSliceRows][kSliceChannels];
  const int64_t channels = p.geom.c, rows = p.geom.outer;
  const int64_t c = blockIdx.x * int64_t(kSliceChannels) + threadIdx.x;
  double a = 0, b = 0;
  if (c < channels) {
    const double mean = pass == kSumX ? 0.0 : p.chanD[4 * c];
    const double invStd = pass == kSumDy ? p.chanD[4 * c + 1] : 0.0;
    const int64_t step = int64_t(gridDim.y) * kSliceRows;
    for (int64_t r = blockIdx.y * int64_t(kSliceRows) + threadIdx.y; r < rows;
         r += step) {
      const int64_t e = r * channels + c;
      accumulatePass(p, pass, e, mean, invStd, a, b);
    }
  }
  sums[0][threadIdx.y][threadIdx.x] = a;
  sums[1][threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int l = 1; l < kSliceRows; ++l) {
      a += sums[0][l][threadIdx.x];
      b += sums[1][l][threadIdx.x];
    }
    double *out = p.partial + 2 * (blockIdx.y * channels + c);
    out[0] = a;
    out[1] = b;
  }
}

/// What a statistics pass yields for channel c from its sums a (and b) over
/// n elements, into chanD: the mean; the inverse standard deviation
/// (training: the coefficients and running statistics); sum(dy) and
/// sum(dy * xhat).
__device__ inline void finishPass(const BatchNormParams &p, int64_t c, int pass,
                                  bool training, double a, double b, double n) {
  double *d = p.chanD + 4 * c;
  if (pass == kSumX) {
    d[0] = a / n;
  } else if (pass == kSumSqDev) {
    const double v = a / n;
    d[1] = 1.0 / sqrt(v + p.epsilon);
    if (training)
      trainingCoefficients(p, c, d[0], v);
  } else {
    d[2] = a;
    d[3] = b;
  }
}

/// The slices' sums per channel, and what the pass yields: the mean; the
/// inverse standard deviation (training: the coefficients and running
/// statistics, as bnTrainingStats); sum(dy), sum(dy * xhat), dscale, dbias.
__global__ void bnRowsFinish(BatchNormParams p, int pass, bool training) {
  const int64_t channels = p.geom.c;
  const double n = static_cast<double>(p.geom.outer);
  MP_GRID_LOOP(c, channels) {
    double a = 0, b = 0;
    for (int s = 0; s < p.rowSlices; ++s) {
      a += p.partial[2 * (s * channels + c)];
      b += p.partial[2 * (s * channels + c) + 1];
    }
    finishPass(p, c, pass, training, a, b, n);
    if (pass == kSumDy) {
      storeF64(p.dscale, p.dscaleDtype, c, b);
      storeF64(p.dbias, p.dbiasDtype, c, a);
    }
  }
}

//===--- Synchronised over the ranks (sync_ranks)
//---------------------------===//
//
// Each pass of the statistics sums this rank's batch per channel into
// chanSum; the call adds the sums up over the ranks (NCCL), then the finish
// kernel derives what the pass yields over the global batch. The passes
// are the CPU's (BatchNorm.cpp, BatchNormBackward.cpp), in f64.

/// One pass's per-channel sums of this rank's batch (one block per
/// channel): x; (x - mean)^2; dy and dy * xhat. The dy pass also writes
/// this rank's dscale and dbias (the gradient buckets average them).
__global__ void bnSyncSums(BatchNormParams p, int pass) {
  __shared__ double shared[32];
  const ChannelGeom &g = p.geom;
  const int64_t count = g.outer * g.inner;
  for (int64_t c = blockIdx.x; c < g.c; c += gridDim.x) {
    const double mean = pass == kSumX ? 0.0 : p.chanD[4 * c];
    const double invStd = pass == kSumDy ? p.chanD[4 * c + 1] : 0.0;
    double a = 0, b = 0;
    for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const int64_t e = channelElem(g, c, j);
      accumulatePass(p, pass, e, mean, invStd, a, b);
    }
    a = blockSum(a, shared);
    b = blockSum(b, shared);
    if (threadIdx.x == 0) {
      p.chanSum[2 * c] = a;
      p.chanSum[2 * c + 1] = b;
      if (pass == kSumDy) {
        storeF64(p.dscale, p.dscaleDtype, c, b);
        storeF64(p.dbias, p.dbiasDtype, c, a);
      }
    }
  }
}

/// What a pass yields from the sums over all ranks: the mean; the inverse
/// standard deviation (training: the coefficients and running statistics);
/// the dy sums dx needs.
__global__ void bnSyncFinish(BatchNormParams p, int pass, bool training) {
  const double n = static_cast<double>(p.geom.outer * p.geom.inner) *
                   static_cast<double>(p.ranks);
  MP_GRID_LOOP(c, p.geom.c) {
    finishPass(p, c, pass, training, p.chanSum[2 * c], p.chanSum[2 * c + 1], n);
  }
}

__global__ void bnBackwardDx(BatchNormParams p) {
  const ChannelGeom &g = p.geom;
  // Synchronised: the global batch's count (chanD holds its sums).
  double count =
      static_cast<double>(g.outer * g.inner) * static_cast<double>(p.ranks);
  MP_GRID_LOOP(i, g.outer * g.c * g.inner) {
    int64_t c = (i / g.inner) % g.c;
    const double *d = p.chanD + 4 * c;
    double m = d[0], is = d[1], sdy = d[2], sdyx = d[3];
    double k = loadF64(p.scale, p.scaleDtype, c) * is / count;
    double xhat = (loadF64(p.x, p.xDtype, i) - m) * is;
    double dx = k * (count * loadF64(p.dy, p.dyDtype, i) - sdy - xhat * sdyx);
    storeF64(p.dx, p.dxDtype, i, dx);
  }
}

//===----------------------------------------------------------------------===//
// Gather, scatter_nd
//===----------------------------------------------------------------------===//

__device__ inline int64_t indexAt(const void *indices, int32_t t, int64_t i) {
  return t == kI32 ? static_cast<const int32_t *>(indices)[i]
                   : static_cast<const int64_t *>(indices)[i];
}

template <typename E>
__global__ void gatherKernel(GatherParams p, DeviceError *err) {
  const E *data = static_cast<const E *>(p.data);
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.outer * p.n * p.inner) {
    int64_t j = i % p.inner, rest = i / p.inner;
    int64_t ii = rest % p.n, o = rest / p.n;
    int64_t idx = indexAt(p.indices, p.indexDtype, ii);
    if (idx < -p.axisDim || idx >= p.axisDim) {
      recordError(err, kErrIndexOutOfRange, idx);
      continue;
    }
    if (idx < 0)
      idx += p.axisDim;
    out[i] = data[(o * p.axisDim + idx) * p.inner + j];
  }
}

/// The offset of tuple t's slice, or -1 (recorded) when an index is out of
/// range.
__device__ inline int64_t tupleOffset(const ScatterNDParams &p, int64_t t,
                                      DeviceError *err) {
  int64_t off = 0;
  for (int q = 0; q < p.k; ++q) {
    int64_t v = indexAt(p.indices, p.indexDtype, t * p.k + q);
    if (v < -p.dims[q] || v >= p.dims[q]) {
      recordError(err, kErrIndexOutOfRange, v);
      return -1;
    }
    off += (v < 0 ? v + p.dims[q] : v) * p.strides[q];
  }
  return off;
}

template <typename E>
__global__ void scatterNDSetKernel(ScatterNDParams p, DeviceError *err) {
  const E *upd = static_cast<const E *>(p.updates);
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.tuples * p.sliceLen) {
    int64_t t = i / p.sliceLen, j = i % p.sliceLen;
    int64_t off = tupleOffset(p, t, err);
    if (off >= 0)
      out[off + j] = upd[i];
  }
}

__device__ inline void atomicAddElem(void *out, int32_t t, int64_t i,
                                     const void *upd, int64_t k) {
  switch (t) {
  case kF32:
    atomicAdd(static_cast<float *>(out) + i,
              static_cast<const float *>(upd)[k]);
    return;
  case kF64:
    atomicAdd(static_cast<double *>(out) + i,
              static_cast<const double *>(upd)[k]);
    return;
  case kF16:
    atomicAdd(static_cast<__half *>(out) + i,
              static_cast<const __half *>(upd)[k]);
    return;
  case kBF16:
    atomicAdd(static_cast<__nv_bfloat16 *>(out) + i,
              static_cast<const __nv_bfloat16 *>(upd)[k]);
    return;
  case kI32:
    atomicAdd(static_cast<int *>(out) + i, static_cast<const int *>(upd)[k]);
    return;
  case kU32:
    atomicAdd(static_cast<unsigned *>(out) + i,
              static_cast<const unsigned *>(upd)[k]);
    return;
  case kI64:
  case kU64:
    atomicAdd(static_cast<unsigned long long *>(out) + i,
              static_cast<const unsigned long long *>(upd)[k]);
    return;
  }
}

__global__ void scatterNDAddKernel(ScatterNDParams p, DeviceError *err) {
  MP_GRID_LOOP(i, p.tuples * p.sliceLen) {
    int64_t t = i / p.sliceLen, j = i % p.sliceLen;
    int64_t off = tupleOffset(p, t, err);
    if (off >= 0)
      atomicAddElem(p.out, p.dtype, off + j, p.updates, i);
  }
}

/// One thread per slice element j: every tuple's update of j in order, as
/// the CPU applies them (repeated indices meet in the same thread).
__global__ void scatterNDOrderedKernel(ScatterNDParams p, DeviceError *err) {
  MP_GRID_LOOP(j, p.sliceLen) {
    for (int64_t t = 0; t < p.tuples; ++t) {
      int64_t off = tupleOffset(p, t, err);
      if (off >= 0)
        combineScatterElem(p.dtype, p.elemSize, p.reduction, p.out, off + j,
                           p.updates, t * p.sliceLen + j);
    }
  }
}

//===----------------------------------------------------------------------===//
// Losses (f64 arithmetic, as the CPU)
//===----------------------------------------------------------------------===//

/// The class of position q, or -1 when ignored, -2 when out of range.
__device__ inline int64_t classOf(const LossParams &p, int64_t q) {
  int64_t t = indexAt(p.target, p.targetDtype, q);
  if (p.hasIgnore && t == p.ignoreIndex)
    return -1;
  if (t < 0 || t >= p.c)
    return -2;
  return t;
}

__global__ void nllLossNoneKernel(LossParams p, DeviceError *err) {
  MP_GRID_LOOP(q, p.n * p.inner) {
    int64_t t = classOf(p, q);
    double l = 0.0;
    if (t == -2) {
      recordError(err, kErrTargetOutOfRange,
                  indexAt(p.target, p.targetDtype, q));
    } else if (t >= 0) {
      int64_t n = q / p.inner, j = q % p.inner;
      double w = p.weight ? loadF64(p.weight, p.weightDtype, t) : 1.0;
      l = -loadF64(p.input, p.inDtype, (n * p.c + t) * p.inner + j) * w;
    }
    storeF64(p.out, p.outDtype, q, l);
  }
}

/// Sum / mean over all positions: one block.
__global__ void nllLossReduceKernel(LossParams p, DeviceError *err) {
  __shared__ double shared[32];
  double sum = 0, weightSum = 0;
  for (int64_t q = threadIdx.x; q < p.n * p.inner; q += blockDim.x) {
    int64_t t = classOf(p, q);
    if (t == -2) {
      recordError(err, kErrTargetOutOfRange,
                  indexAt(p.target, p.targetDtype, q));
      continue;
    }
    if (t < 0)
      continue;
    int64_t n = q / p.inner, j = q % p.inner;
    double w = p.weight ? loadF64(p.weight, p.weightDtype, t) : 1.0;
    sum += -loadF64(p.input, p.inDtype, (n * p.c + t) * p.inner + j) * w;
    weightSum += w;
  }
  sum = blockSum(sum, shared);
  weightSum = blockSum(weightSum, shared);
  if (threadIdx.x == 0)
    storeF64(p.out, p.outDtype, 0, p.reduction == 1 ? sum : sum / weightSum);
}

/// The denominator of the gradients (mean: the weights of the positions not
/// ignored; else 1) into scratch[0]; records out-of-range classes.
__global__ void lossDenomKernel(LossParams p, DeviceError *err) {
  __shared__ double shared[32];
  double denom = 0;
  for (int64_t q = threadIdx.x; q < p.n * p.inner; q += blockDim.x) {
    int64_t t = classOf(p, q);
    if (t == -2) {
      recordError(err, kErrTargetOutOfRange,
                  indexAt(p.target, p.targetDtype, q));
      continue;
    }
    if (t >= 0)
      denom += p.weight ? loadF64(p.weight, p.weightDtype, t) : 1.0;
  }
  denom = blockSum(denom, shared);
  if (threadIdx.x == 0)
    p.scratch[0] = p.reduction == 2 ? denom : 1.0;
}

/// One thread per position: its C gradient entries.
__global__ void lossGradKernel(LossParams p, bool softmaxCE) {
  MP_GRID_LOOP(q, p.n * p.inner) {
    int64_t n = q / p.inner, j = q % p.inner;
    int64_t base = n * p.c * p.inner + j;
    int64_t t = classOf(p, q);
    if (t < 0) {
      for (int64_t c = 0; c < p.c; ++c)
        storeF64(p.out, p.outDtype, base + c * p.inner, 0.0);
      continue;
    }
    double w = p.weight ? loadF64(p.weight, p.weightDtype, t) : 1.0;
    double dl = loadF64(p.dloss, p.dlossDtype, p.reduction == 0 ? q : 0);
    double coef = w * dl / p.scratch[0];
    if (!softmaxCE) {
      for (int64_t c = 0; c < p.c; ++c)
        storeF64(p.out, p.outDtype, base + c * p.inner, c == t ? -coef : 0.0);
      continue;
    }
    double mx = -INFINITY;
    for (int64_t c = 0; c < p.c; ++c) {
      double v = loadF64(p.input, p.inDtype, base + c * p.inner);
      mx = v > mx ? v : mx;
    }
    double sum = 0;
    for (int64_t c = 0; c < p.c; ++c)
      sum += exp(loadF64(p.input, p.inDtype, base + c * p.inner) - mx);
    for (int64_t c = 0; c < p.c; ++c) {
      double e = exp(loadF64(p.input, p.inDtype, base + c * p.inner) - mx);
      storeF64(p.out, p.outDtype, base + c * p.inner,
               (e / sum - (c == t ? 1.0 : 0.0)) * coef);
    }
  }
}

//===----------------------------------------------------------------------===//
// Loss scaling and optimizers (the CPU's f32 arithmetic)
//===----------------------------------------------------------------------===//

__global__ void unscaleKernel(UnscaleParams p) {
  float inv = static_cast<float>(1.0 / static_cast<double>(*p.scale));
  bool nonFinite = false;
  MP_GRID_LOOP(i, p.n) {
    if (p.gDtype == kF64) {
      double src = static_cast<const double *>(p.g)[i];
      float dst = static_cast<float>(src * static_cast<double>(inv));
      p.u[i] = dst;
      nonFinite |= !isfinite(src) || !isfinite(dst);
    } else {
      float v = loadF32(p.g, p.gDtype, i);
      nonFinite |= !isfinite(v);
      p.u[i] = inv != 1.0f ? v * inv : v;
    }
  }
  if (nonFinite)
    *p.foundInf = 1.0f;
}

__global__ void lossScaleUpdateKernel(LossScaleParams p) {
  float current = *p.scale;
  if (*p.foundInf != 0.0f) {
    *p.scale = static_cast<float>(current * p.backoffFactor);
    *p.tracker = 0;
    return;
  }
  int64_t successful = *p.tracker + 1;
  if (successful >= p.growthInterval) {
    float grown = static_cast<float>(current * p.growthFactor);
    if (isfinite(grown))
      *p.scale = grown;
    *p.tracker = 0;
  } else {
    *p.tracker = successful;
  }
}

__global__ void sgdKernel(OptimizerParams p) {
  if (p.foundInf && *p.foundInf != 0.0f)
    return;
  const int64_t steps = *p.step;
  const float lr = static_cast<float>(p.lr),
              wd = static_cast<float>(p.weightDecay),
              mu = static_cast<float>(p.momentum),
              damp = static_cast<float>(1.0 - p.dampening);
  MP_GRID_LOOP(i, p.n) {
    float d = p.grad[i];
    if (wd != 0)
      d += wd * p.param[i];
    if (p.buf1) {
      p.buf1[i] = steps == 0 ? d : mu * p.buf1[i] + damp * d;
      d = p.nesterov ? d + mu * p.buf1[i] : p.buf1[i];
    }
    p.param[i] -= lr * d;
  }
}

__global__ void adamKernel(OptimizerParams p) {
  if (p.foundInf && *p.foundInf != 0.0f)
    return;
  const int64_t steps = *p.step + 1;
  const double biasCorrection1 = 1 - pow(p.beta1, static_cast<double>(steps));
  const double biasCorrection2 = 1 - pow(p.beta2, static_cast<double>(steps));
  const float stepSize = static_cast<float>(p.lr / biasCorrection1);
  const float bc2Sqrt = static_cast<float>(sqrt(biasCorrection2));
  const float b1 = static_cast<float>(p.beta1),
              b2 = static_cast<float>(p.beta2), eps = static_cast<float>(p.eps),
              wd = static_cast<float>(p.weightDecay),
              lr = static_cast<float>(p.lr);
  MP_GRID_LOOP(i, p.n) {
    float d = p.grad[i];
    if (wd != 0) {
      if (p.decoupled)
        p.param[i] *= 1 - lr * wd;
      else
        d += wd * p.param[i];
    }
    float m = b1 * p.buf1[i] + (1 - b1) * d;
    float v = b2 * p.buf2[i] + (1 - b2) * d * d;
    p.buf1[i] = m;
    p.buf2[i] = v;
    float denom = sqrtf(v) / bc2Sqrt + eps;
    p.param[i] -= stepSize * (m / denom);
  }
}

/// After the update: the step count advances unless the step was skipped.
__global__ void stepKernel(OptimizerParams p) {
  if (p.foundInf && *p.foundInf != 0.0f)
    return;
  *p.step += 1;
}

} // namespace
} // namespace dev

using namespace dev;

cudaError_t launchBatchNorm(int kind, const BatchNormParams &p,
                            cudaStream_t stream) {
  int64_t n = p.geom.outer * p.geom.c * p.geom.inner;
  if (p.geom.c == 0)
    return cudaSuccess;
  unsigned chanBlocks = blocksFor(p.geom.c, 1, 65535);
  // Channels last: the statistics' passes over row slices (kind 1: sum,
  // squared deviations; kind 2: and the dy sums), then the elementwise
  // kernel as below.
  if (p.rowSlices > 0 && kind != 0) {
    const dim3 grid(blocksFor(p.geom.c, kSliceChannels),
                    static_cast<unsigned>(p.rowSlices));
    const dim3 block(kSliceChannels, kSliceRows);
    const unsigned finishBlocks = blocksFor(p.geom.c, kBlock);
    const int passes = kind == 1 ? 2 : 3;
    for (int pass = 0; pass < passes; ++pass) {
      bnRowsPartial<<<grid, block, 0, stream>>>(p, pass);
      bnRowsFinish<<<finishBlocks, kBlock, 0, stream>>>(p, pass, kind == 1);
    }
    if (n) {
      if (kind == 1)
        bnNormalize<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
      else
        bnBackwardDx<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
    }
    return cudaGetLastError();
  }
  switch (kind) {
  case 0:
    bnInferenceParams<<<blocksFor(p.geom.c, kBlock), kBlock, 0, stream>>>(p);
    if (n)
      bnNormalize<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
    break;
  case 1:
    bnTrainingStats<<<chanBlocks, kBlock, 0, stream>>>(p);
    if (n)
      bnNormalize<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
    break;
  default:
    bnBackwardStats<<<chanBlocks, kBlock, 0, stream>>>(p);
    if (n)
      bnBackwardDx<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
    break;
  }
  return cudaGetLastError();
}

cudaError_t launchBatchNormSyncPass(const BatchNormParams &p, int pass,
                                    bool finish, bool training,
                                    cudaStream_t stream) {
  if (p.geom.c == 0)
    return cudaSuccess;
  if (finish)
    bnSyncFinish<<<blocksFor(p.geom.c, kBlock), kBlock, 0, stream>>>(p, pass,
                                                                     training);
  else
    bnSyncSums<<<blocksFor(p.geom.c, 1, 65535), kBlock, 0, stream>>>(p, pass);
  return cudaGetLastError();
}

cudaError_t launchBatchNormSyncApply(int kind, const BatchNormParams &p,
                                     cudaStream_t stream) {
  const int64_t n = p.geom.outer * p.geom.c * p.geom.inner;
  if (n == 0)
    return cudaSuccess;
  if (kind == 1)
    bnNormalize<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
  else
    bnBackwardDx<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchBatchNormRunningStats(const BatchNormParams &p,
                                        const float *batchMean,
                                        const float *batchVarUnbiased,
                                        int64_t count, cudaStream_t stream) {
  if (p.geom.c == 0)
    return cudaSuccess;
  bnRunningFromBatch<<<blocksFor(p.geom.c, kBlock), kBlock, 0, stream>>>(
      p, batchMean, batchVarUnbiased, static_cast<double>(count));
  return cudaGetLastError();
}

cudaError_t launchGather(const GatherParams &p, DeviceError *error,
                         cudaStream_t stream) {
  int64_t n = p.outer * p.n * p.inner;
  if (n == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(n, kBlock);
  MP_LAUNCH_BY_ELEM(p.elemSize, gatherKernel, blocks, kBlock, stream, p, error);
  return cudaGetLastError();
}

cudaError_t launchScatterND(const ScatterNDParams &p, DeviceError *error,
                            cudaStream_t stream) {
  int64_t n = p.tuples * p.sliceLen;
  if (n == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(n, kBlock);
  if (p.ordered) {
    scatterNDOrderedKernel<<<blocksFor(p.sliceLen, kBlock), kBlock, 0,
                             stream>>>(p, error);
  } else if (p.reduction == kSeAdd) {
    scatterNDAddKernel<<<blocks, kBlock, 0, stream>>>(p, error);
  } else {
    MP_LAUNCH_BY_ELEM(p.elemSize, scatterNDSetKernel, blocks, kBlock, stream, p,
                      error);
  }
  return cudaGetLastError();
}

cudaError_t launchLoss(int kind, const LossParams &p, DeviceError *error,
                       cudaStream_t stream) {
  int64_t positions = p.n * p.inner;
  if (kind == 0) {
    if (p.reduction == 0) {
      if (positions)
        nllLossNoneKernel<<<blocksFor(positions, kBlock), kBlock, 0, stream>>>(
            p, error);
    } else {
      nllLossReduceKernel<<<1, 1024, 0, stream>>>(p, error);
    }
    return cudaGetLastError();
  }
  lossDenomKernel<<<1, 1024, 0, stream>>>(p, error);
  if (positions)
    lossGradKernel<<<blocksFor(positions, kBlock), kBlock, 0, stream>>>(
        p, kind == 2);
  return cudaGetLastError();
}

__global__ void allReduceCopyKernel(AllReduceCopyParams p) {
  MP_GRID_LOOP(i, p.n) {
    float v = loadF32(p.src, p.srcDtype, i);
    if (p.mul != 1.0f)
      v = v * p.mul;
    if (p.div != 1.0f)
      v = v / p.div;
    storeF32(p.dst, p.dstDtype, i, v);
  }
}

cudaError_t launchAllReduceCopy(const AllReduceCopyParams &p,
                                cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  allReduceCopyKernel<<<blocksFor(p.n, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchUnscale(const UnscaleParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  unscaleKernel<<<blocksFor(p.n, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchLossScaleUpdate(const LossScaleParams &p,
                                  cudaStream_t stream) {
  lossScaleUpdateKernel<<<1, 1, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchOptimizer(const OptimizerParams &p, cudaStream_t stream) {
  if (p.n > 0) {
    unsigned blocks = blocksFor(p.n, kBlock);
    if (p.kind == 1)
      adamKernel<<<blocks, kBlock, 0, stream>>>(p);
    else
      sgdKernel<<<blocks, kBlock, 0, stream>>>(p);
  }
  stepKernel<<<1, 1, 0, stream>>>(p);
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
