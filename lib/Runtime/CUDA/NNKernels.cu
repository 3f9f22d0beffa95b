//===- NNKernels.cu - normalizations, recurrent nets, selection -----------===//
//
// The CUDA backend's own kernels for kernel.attention, kernel.layer_norm,
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
#include <type_traits>

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
/// (two passes, as the CPU's moments; RMS norm: 1 / sqrt(mean square +
/// epsilon) in one), then the row normalized in f32.
__global__ void normKernel(NormParams p) {
  __shared__ double shared[32];
  const int64_t n = p.rowSize;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t base = row * n;
    double s = 0;
    if (!p.rms)
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        s += static_cast<double>(loadF32(p.x, p.xDtype, base + j));
    // RMS norm: the mean is taken as 0 (the variance is the mean square).
    double m = n && !p.rms ? blockSum(s, shared) / static_cast<double>(n) : 0.0;
    double sq = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double c = static_cast<double>(loadF32(p.x, p.xDtype, base + j)) - m;
      sq += c * c;
    }
    double var = n ? blockSum(sq, shared) / static_cast<double>(n) : 0.0;
    const float mean = static_cast<float>(m);
    const float inv =
        static_cast<float>(1.0 / sqrt(var + static_cast<double>(p.epsilon)));
    if (p.groupSpatial) {
      // Group norm: the row's channels, each with its scale and bias.
      const int64_t firstChannel = (row % p.groups) * (n / p.groupSpatial);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const int64_t ch = firstChannel + j / p.groupSpatial;
        const float a = inv * loadF32(p.scale, p.scaleDtype, ch);
        const float b =
            (p.biasDtype ? loadF32(p.bias, p.biasDtype, ch) : 0.0f) - mean * a;
        storeF32(p.y, p.xDtype, base + j,
                 loadF32(p.x, p.xDtype, base + j) * a + b);
      }
    } else if (p.instance) {
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

/// dx of a layer norm, one row per block: x̂ and g = dy * scale twice (for
/// the two means, then the output), as the CPU's layerNormGrad.
__global__ void layerNormGradRowsKernel(LayerNormGradParams p) {
  __shared__ double shared[32];
  const int64_t n = p.rowSize;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    const int64_t base = row * n;
    const float mean = p.mean[row], inv = p.invStd[row];
    double sumG = 0, sumGXhat = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float xhat = (loadF32(p.x, p.xDtype, base + j) - mean) * inv;
      const float g =
          loadF32(p.dy, p.xDtype, base + j) * loadF32(p.scale, p.scaleDtype, j);
      sumG += g;
      sumGXhat += static_cast<double>(g) * xhat;
    }
    const float meanG =
        static_cast<float>(blockSum(sumG, shared) / static_cast<double>(n));
    const float meanGXhat =
        static_cast<float>(blockSum(sumGXhat, shared) / static_cast<double>(n));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float xhat = (loadF32(p.x, p.xDtype, base + j) - mean) * inv;
      const float g =
          loadF32(p.dy, p.xDtype, base + j) * loadF32(p.scale, p.scaleDtype, j);
      storeF32(p.dx, p.xDtype, base + j, inv * (g - meanG - xhat * meanGXhat));
    }
  }
}

/// dscale = Σ dy * x̂ and dbias = Σ dy over the rows, one thread per
/// normalized element (adjacent threads read adjacent elements).
__global__ void layerNormGradParamsKernel(LayerNormGradParams p) {
  MP_GRID_LOOP(j, p.rowSize) {
    double sumDyXhat = 0, sumDy = 0;
    for (int64_t row = 0; row < p.rows; ++row) {
      const int64_t i = row * p.rowSize + j;
      const float dy = loadF32(p.dy, p.xDtype, i);
      const float xhat =
          (loadF32(p.x, p.xDtype, i) - p.mean[row]) * p.invStd[row];
      sumDyXhat += static_cast<double>(dy) * xhat;
      sumDy += dy;
    }
    storeF32(p.dscale, p.scaleDtype, j, static_cast<float>(sumDyXhat));
    if (p.hasBias)
      storeF32(p.dbias, p.scaleDtype, j, static_cast<float>(sumDy));
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

//===----------------------------------------------------------------------===//
// GEMM (the recurrent calls)
//===----------------------------------------------------------------------===//

constexpr int kTile = 16;

/// A(i, l) and B(l, j) of GemmParams, as T.
template <typename T>
__device__ inline T gemmA(const GemmParams &p, int64_t i, int64_t l) {
  return loadAs<T>(p.a, p.aDtype,
                   p.aOffset + (p.transA ? l * p.lda + i : i * p.lda + l));
}
template <typename T>
__device__ inline T gemmB(const GemmParams &p, int64_t l, int64_t j) {
  return loadAs<T>(p.b, p.bDtype,
                   p.bOffset + (p.transB ? j * p.ldb + l : l * p.ldb + j));
}

/// One kTile x kTile tile of C per block (grid-stride over the tiles), the
/// k dimension in kTile steps through shared memory.
template <typename T> __global__ void gemmKernel(GemmParams p) {
  __shared__ T as[kTile][kTile + 1], bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t tilesM = (p.m + kTile - 1) / kTile,
                tilesN = (p.n + kTile - 1) / kTile;
  for (int64_t tm = blockIdx.y; tm < tilesM; tm += gridDim.y)
    for (int64_t tn = blockIdx.x; tn < tilesN; tn += gridDim.x) {
      const int64_t row = tm * kTile + ty, col = tn * kTile + tx;
      T acc = 0;
      for (int64_t k0 = 0; k0 < p.k; k0 += kTile) {
        const int64_t ka = k0 + tx, kb = k0 + ty;
        as[ty][tx] = row < p.m && ka < p.k ? gemmA<T>(p, row, ka) : T(0);
        bs[ty][tx] = kb < p.k && col < p.n ? gemmB<T>(p, kb, col) : T(0);
        __syncthreads();
        for (int l = 0; l < kTile; ++l)
          acc += as[ty][l] * bs[l][tx];
        __syncthreads();
      }
      if (row < p.m && col < p.n) {
        T *c = static_cast<T *>(p.c) + p.cOffset + row * p.ldc + col;
        *c = p.accumulate ? *c + acc : acc;
      }
    }
}

//===----------------------------------------------------------------------===//
// Recurrent networks (cudnn.rnn)
//===----------------------------------------------------------------------===//

__device__ inline float rnnAct(const RnnAct &a, float v) {
  switch (a.kind) {
  case kRnnRelu:
    return v > 0.0f ? v : 0.0f;
  case kRnnTanh:
    return tanhf(v);
  case kRnnSigmoid:
    return 1.0f / (1.0f + expf(-v));
  case kRnnAffine:
    return a.alpha * v + a.beta;
  case kRnnLeakyRelu:
    return v >= 0.0f ? v : a.alpha * v;
  case kRnnThresholdedRelu:
    return v > a.alpha ? v : 0.0f;
  case kRnnScaledTanh:
    return a.alpha * tanhf(a.beta * v);
  case kRnnHardSigmoid:
    return fmaxf(0.0f, fminf(1.0f, a.alpha * v + a.beta));
  case kRnnElu:
    return v >= 0.0f ? v : a.alpha * (expf(v) - 1.0f);
  case kRnnSoftsign:
    return v / (1.0f + fabsf(v));
  case kRnnSoftplus:
    return log1pf(expf(v));
  }
  return v;
}

/// The CPU's clipTo: min(clip, max(-clip, v)).
__device__ inline float rnnClip(const RnnParams &p, float v) {
  return p.hasClip ? fminf(p.clip, fmaxf(-p.clip, v)) : v;
}

__device__ inline int64_t rnnGates(const RnnParams &p) {
  return p.mode == kRnnLstm ? 4 : p.mode == kRnnGru ? 3 : 1;
}

/// Batch entry b's sequence length (bad values were recorded by
/// rnnPrepKernel; here they are clamped).
__device__ inline int64_t rnnLength(const RnnParams &p, int64_t b) {
  if (!p.seqDtype)
    return p.seq;
  int64_t len = p.seqDtype == kI32 ? static_cast<const int32_t *>(p.seqLens)[b]
                                   : static_cast<const int64_t *>(p.seqLens)[b];
  return len < 0 ? 0 : (len > p.seq ? p.seq : len);
}

/// The start of a direction: xw = the folded bias (Wb + Rb; GRU with
/// linear_before_reset: Wb only for the candidate gate, whose Rb the reset
/// gate multiplies), the initial state, and the sequence lengths checked.
__global__ void rnnPrepKernel(RnnParams p, DeviceError *err) {
  const int64_t H = p.hidden, GH = rnnGates(p) * H;
  const int64_t rows = p.seq * p.batch, state = p.batch * H;
  const int64_t n = rows * GH > state ? rows * GH : state;
  const bool lbr = p.mode == kRnnGru && p.linearBeforeReset;
  MP_GRID_LOOP(i, n) {
    if (i < rows * GH) {
      const int64_t j = i % GH;
      float v = 0.0f;
      if (p.b) {
        const int64_t wb = p.dir * 2 * GH + j;
        v = loadF32(p.b, p.dtype, wb);
        if (!(lbr && j >= 2 * H))
          v = v + loadF32(p.b, p.dtype, wb + GH);
      }
      p.xw[i] = v;
    }
    if (i < state) {
      const int64_t s = p.dir * state + i;
      p.h[i] = p.initH ? loadF32(p.initH, p.dtype, s) : 0.0f;
      p.c[i] = p.initC ? loadF32(p.initC, p.dtype, s) : 0.0f;
    }
    if (p.seqDtype && i < p.batch) {
      int64_t len = p.seqDtype == kI32
                        ? static_cast<const int32_t *>(p.seqLens)[i]
                        : static_cast<const int64_t *>(p.seqLens)[i];
      if (len < 0 || len > p.seq)
        recordError(err, kErrSequenceLength, len);
    }
  }
}

/// The end of a step for state element (b, j): entries within their
/// length take the new state, the others keep theirs; y gets the state or
/// 0.
__device__ inline void rnnFinish(const RnnParams &p, int64_t b, int64_t j,
                                 float hn, float cn) {
  const int64_t si = b * p.hidden + j;
  float out = 0.0f;
  if (p.t < rnnLength(p, b)) {
    p.h[si] = hn;
    if (p.mode == kRnnLstm)
      p.c[si] = cn;
    out = hn;
  }
  if (p.y)
    storeF32(p.y, p.dtype, (p.t * p.dirs + p.dir) * p.batch * p.hidden + si,
             out);
}

/// The gates of one step, one thread per state element (b, j), after the
/// recurrent GEMM into hr. phase 0: LSTM, RNN, GRU with
/// linear_before_reset, or GRU's z and r (stored activated in xw, and
/// tmp = r * h for the candidate's GEMM); phase 1: GRU's candidate.
__global__ void rnnGatesKernel(RnnParams p, int phase) {
  const int64_t H = p.hidden, GH = rnnGates(p) * H;
  const RnnAct *act = p.acts + p.dir * (p.mode == kRnnLstm  ? 3
                                        : p.mode == kRnnGru ? 2
                                                            : 1);
  MP_GRID_LOOP(i, p.batch * H) {
    const int64_t b = i / H, j = i % H;
    float *g = p.xw + (p.t * p.batch + b) * GH;
    const float *hr = p.hr + b * GH;
    if (p.mode == kRnnPlain) {
      float v = rnnAct(act[0], rnnClip(p, g[j] + hr[j]));
      rnnFinish(p, b, j, v, 0.0f);
    } else if (p.mode == kRnnLstm) {
      float gi = g[j] + hr[j], go = g[H + j] + hr[H + j],
            gf = g[2 * H + j] + hr[2 * H + j],
            gc = g[3 * H + j] + hr[3 * H + j];
      const float cPrev = p.c[i];
      const int64_t peep = p.dir * 3 * H;
      if (p.p) {
        gi = gi + loadF32(p.p, p.dtype, peep + j) * cPrev;
        gf = gf + loadF32(p.p, p.dtype, peep + 2 * H + j) * cPrev;
      }
      gi = rnnAct(act[0], rnnClip(p, gi));
      gf = p.inputForget ? 1.0f - gi : rnnAct(act[0], rnnClip(p, gf));
      gc = rnnAct(act[1], rnnClip(p, gc));
      const float cn = gf * cPrev + gi * gc;
      if (p.p)
        go = go + loadF32(p.p, p.dtype, peep + H + j) * cn;
      go = rnnAct(act[0], rnnClip(p, go));
      rnnFinish(p, b, j, rnnAct(act[2], cn) * go, cn);
    } else if (p.linearBeforeReset) {
      const float z = rnnAct(act[0], rnnClip(p, g[j] + hr[j]));
      const float r = rnnAct(act[0], rnnClip(p, g[H + j] + hr[H + j]));
      const float rb =
          p.b ? loadF32(p.b, p.dtype, p.dir * 2 * GH + GH + 2 * H + j) : 0.0f;
      float cand = g[2 * H + j] + r * (hr[2 * H + j] + rb);
      cand = rnnAct(act[1], rnnClip(p, cand));
      rnnFinish(p, b, j, (1.0f - z) * cand + z * p.h[i], 0.0f);
    } else if (phase == 0) {
      g[j] = rnnAct(act[0], rnnClip(p, g[j] + hr[j]));
      g[H + j] = rnnAct(act[0], rnnClip(p, g[H + j] + hr[H + j]));
      p.tmp[i] = g[H + j] * p.h[i];
    } else {
      // hr's candidate part is (r * h) R_h^T from the second GEMM.
      const float z = g[j];
      float cand = rnnAct(act[1], rnnClip(p, g[2 * H + j] + hr[2 * H + j]));
      rnnFinish(p, b, j, (1.0f - z) * cand + z * p.h[i], 0.0f);
    }
  }
}

//===----------------------------------------------------------------------===//
// LSTM backward (kernel.lstm_bwd), in T = float or double
//===----------------------------------------------------------------------===//

__device__ inline float devExp(float v) { return expf(v); }
__device__ inline double devExp(double v) { return exp(v); }
__device__ inline float devTanh(float v) { return tanhf(v); }
__device__ inline double devTanh(double v) { return tanh(v); }
template <typename T> __device__ inline T devSigmoid(T v) {
  return T(1) / (T(1) + devExp(-v));
}

/// gates = Wb + Rb (0 without b); h, c = the initial state (or 0).
template <typename T> __global__ void lstmForwardInit(LstmBwdParams p) {
  const int64_t GH = 4 * p.hidden, BH = p.batch * p.hidden;
  const int64_t rows = p.seq * p.batch;
  const int64_t n = rows * GH > BH ? rows * GH : BH;
  T *gates = static_cast<T *>(p.gates);
  MP_GRID_LOOP(i, n) {
    if (i < rows * GH) {
      const int64_t wb = p.dir * 2 * GH + i % GH;
      gates[i] =
          p.b ? loadAs<T>(p.b, p.dtype, wb) + loadAs<T>(p.b, p.dtype, wb + GH)
              : T(0);
    }
    if (i < BH) {
      const int64_t s = p.dir * BH + i;
      static_cast<T *>(p.h)[i] =
          p.initH ? loadAs<T>(p.initH, p.dtype, s) : T(0);
      static_cast<T *>(p.c)[i] =
          p.initC ? loadAs<T>(p.initC, p.dtype, s) : T(0);
    }
  }
}

/// Step p.t of the forward, after gates[t] += h R^T: keeps the state before
/// the step, activates the gates in place (i, o, f: sigmoid; c: tanh) and
/// keeps the cell state after it.
template <typename T> __global__ void lstmForwardStep(LstmBwdParams p) {
  const int64_t H = p.hidden, GH = 4 * H, BH = p.batch * H;
  T *h = static_cast<T *>(p.h), *c = static_cast<T *>(p.c);
  MP_GRID_LOOP(i, BH) {
    const int64_t b = i / H, j = i % H, at = p.t * BH + i;
    T *g = static_cast<T *>(p.gates) + (p.t * p.batch + b) * GH;
    static_cast<T *>(p.hPrev)[at] = h[i];
    static_cast<T *>(p.cPrev)[at] = c[i];
    const T gi = devSigmoid(g[j]), go = devSigmoid(g[H + j]),
            gf = devSigmoid(g[2 * H + j]), gc = devTanh(g[3 * H + j]);
    g[j] = gi;
    g[H + j] = go;
    g[2 * H + j] = gf;
    g[3 * H + j] = gc;
    c[i] = gf * c[i] + gi * gc;
    h[i] = go * devTanh(c[i]);
    static_cast<T *>(p.cAfter)[at] = c[i];
  }
}

/// dh, dc of direction p.dir = dy_h, dy_c (or 0).
template <typename T> __global__ void lstmBackwardInit(LstmBwdParams p) {
  const int64_t BH = p.batch * p.hidden;
  T *dh = static_cast<T *>(p.dh0) + p.dir * BH,
    *dc = static_cast<T *>(p.dc0) + p.dir * BH;
  MP_GRID_LOOP(i, BH) {
    const int64_t s = p.dir * BH + i;
    dh[i] = p.dyH ? loadAs<T>(p.dyH, p.dtype, s) : T(0);
    dc[i] = p.dyC ? loadAs<T>(p.dyC, p.dtype, s) : T(0);
  }
}

/// Step p.t backward: the pre-activation gradients of the gates replace
/// the gates, dc flows to the previous step (dh follows by a GEMM with R).
template <typename T> __global__ void lstmBackwardStep(LstmBwdParams p) {
  const int64_t H = p.hidden, GH = 4 * H, BH = p.batch * H;
  T *dh = static_cast<T *>(p.dh0) + p.dir * BH,
    *dc = static_cast<T *>(p.dc0) + p.dir * BH;
  MP_GRID_LOOP(i, BH) {
    const int64_t b = i / H, j = i % H, at = p.t * BH + i;
    T *g = static_cast<T *>(p.gates) + (p.t * p.batch + b) * GH;
    const T cp = static_cast<const T *>(p.cPrev)[at],
            ca = static_cast<const T *>(p.cAfter)[at];
    const T dyt =
        p.dy ? loadAs<T>(p.dy, p.dtype, (p.t * p.dirs + p.dir) * BH + i) : T(0);
    const T dhj = dh[i] + dyt;
    const T tc = devTanh(ca);
    const T ig = g[j], og = g[H + j], f = g[2 * H + j], cc = g[3 * H + j];
    const T dcj = dc[i] + dhj * og * (T(1) - tc * tc);
    g[j] = dcj * cc * ig * (T(1) - ig);
    g[H + j] = dhj * tc * og * (T(1) - og);
    g[2 * H + j] = dcj * cp * f * (T(1) - f);
    g[3 * H + j] = dcj * ig * (T(1) - cc * cc);
    dc[i] = dcj * f;
  }
}

/// db of direction p.dir: the column sums of the gate gradients over every
/// step (rows in order, as the CPU), for Wb and again for Rb.
template <typename T> __global__ void lstmBiasGrad(LstmBwdParams p) {
  const int64_t GH = 4 * p.hidden, rows = p.seq * p.batch;
  const T *gates = static_cast<const T *>(p.gates);
  T *db = static_cast<T *>(p.db) + p.dir * 2 * GH;
  MP_GRID_LOOP(j, GH) {
    T sum = 0;
    for (int64_t row = 0; row < rows; ++row)
      sum += gates[row * GH + j];
    db[j] = sum;
    db[GH + j] = sum;
  }
}

template <typename T>
cudaError_t launchLstmBwdT(const LstmBwdParams &p, int stage,
                           cudaStream_t stream) {
  const int64_t GH = 4 * p.hidden, BH = p.batch * p.hidden,
                rows = p.seq * p.batch;
  switch (stage) {
  case kLstmForwardInit: {
    const int64_t n = rows * GH > BH ? rows * GH : BH;
    if (n)
      lstmForwardInit<T><<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
    break;
  }
  case kLstmForwardStep:
    if (BH)
      lstmForwardStep<T><<<blocksFor(BH, kBlock), kBlock, 0, stream>>>(p);
    break;
  case kLstmBackwardInit:
    if (BH)
      lstmBackwardInit<T><<<blocksFor(BH, kBlock), kBlock, 0, stream>>>(p);
    break;
  case kLstmBackwardStep:
    if (BH)
      lstmBackwardStep<T><<<blocksFor(BH, kBlock), kBlock, 0, stream>>>(p);
    break;
  default:
    if (GH)
      lstmBiasGrad<T><<<blocksFor(GH, kBlock), kBlock, 0, stream>>>(p);
    break;
  }
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// TopK, CumSum, Hardmax
//===----------------------------------------------------------------------===//

template <typename K> __device__ inline bool keyIsNan(K v) { return false; }
template <> __device__ inline bool keyIsNan<double>(double v) { return v != v; }

/// TopK's keys: double (floats), int64_t (signed), uint64_t (unsigned).
template <typename K>
__device__ inline K topkKey(const TopkParams &p, int64_t i) {
  return loadAs<K>(p.x, p.dtype, i);
}

/// a ranks above b: NaN above every number (the CPU's order).
template <typename K> __device__ inline bool keyAbove(K a, K b) {
  if (keyIsNan(a) || keyIsNan(b))
    return !keyIsNan(b);
  return a > b;
}

/// Copies one element of elemSize bytes.
__device__ inline void copyElem(void *dst, int64_t di, const void *src,
                                int64_t si, int32_t elemSize) {
  switch (elemSize) {
  case 1:
    static_cast<uint8_t *>(dst)[di] = static_cast<const uint8_t *>(src)[si];
    return;
  case 2:
    static_cast<uint16_t *>(dst)[di] = static_cast<const uint16_t *>(src)[si];
    return;
  case 4:
    static_cast<uint32_t *>(dst)[di] = static_cast<const uint32_t *>(src)[si];
    return;
  default:
    static_cast<uint64_t *>(dst)[di] = static_cast<const uint64_t *>(src)[si];
    return;
  }
}

/// One thread per element: its rank among its line in the CPU's order
/// (first: larger, or smaller, then the lower index), written to values and
/// indices when below k. O(len) per element.
template <typename K> __global__ void topkKernel(TopkParams p) {
  MP_GRID_LOOP(e, p.outer * p.len * p.inner) {
    const int64_t in = e % p.inner, i = (e / p.inner) % p.len,
                  o = e / (p.inner * p.len);
    const int64_t base = o * p.len * p.inner + in;
    const K ki = topkKey<K>(p, base + i * p.inner);
    int64_t rank = 0;
    for (int64_t j = 0; j < p.len && rank < p.k; ++j) {
      if (j == i)
        continue;
      const K kj = topkKey<K>(p, base + j * p.inner);
      const bool before = p.largest ? keyAbove(kj, ki) : keyAbove(ki, kj);
      const bool after = p.largest ? keyAbove(ki, kj) : keyAbove(kj, ki);
      if (before || (!after && j < i))
        ++rank;
    }
    if (rank < p.k) {
      const int64_t dst = (o * p.k + rank) * p.inner + in;
      copyElem(p.values, dst, p.x, base + i * p.inner, p.elemSize);
      if (p.indexDtype == kI64)
        static_cast<int64_t *>(p.indices)[dst] = i;
      else
        static_cast<int32_t *>(p.indices)[dst] = static_cast<int32_t>(i);
    }
  }
}

/// CumSum's accumulator types: float (f32, f16, bf16), double, and the
/// CPU's wrap-around integer sums in uint32_t (i32) / uint64_t (i64).
template <typename A>
__device__ inline A scanLoad(const ScanParams &p, int64_t i) {
  if constexpr (std::is_same_v<A, uint32_t>)
    return static_cast<uint32_t>(static_cast<const int32_t *>(p.x)[i]);
  else if constexpr (std::is_same_v<A, uint64_t>)
    return static_cast<uint64_t>(static_cast<const int64_t *>(p.x)[i]);
  else
    return loadAs<A>(p.x, p.dtype, i);
}
__device__ inline void scanStore(const ScanParams &p, int64_t i, float v) {
  storeF32(p.y, p.dtype, i, v);
}
__device__ inline void scanStore(const ScanParams &p, int64_t i, double v) {
  storeF64(p.y, p.dtype, i, v);
}
__device__ inline void scanStore(const ScanParams &p, int64_t i, uint32_t v) {
  static_cast<int32_t *>(p.y)[i] = static_cast<int32_t>(v);
}
__device__ inline void scanStore(const ScanParams &p, int64_t i, uint64_t v) {
  static_cast<int64_t *>(p.y)[i] = static_cast<int64_t>(v);
}

/// One thread per line, summing in order as the CPU (each element read
/// before its output is written: y may be x).
template <typename A> __global__ void cumsumKernel(ScanParams p) {
  MP_GRID_LOOP(line, p.outer * p.inner) {
    const int64_t o = line / p.inner, in = line % p.inner;
    A acc = 0;
    for (int64_t s = 0; s < p.len; ++s) {
      const int64_t i = p.reverse ? p.len - 1 - s : s;
      const int64_t idx = (o * p.len + i) * p.inner + in;
      const A v = scanLoad<A>(p, idx);
      if (p.exclusive) {
        scanStore(p, idx, acc);
        acc += v;
      } else {
        acc += v;
        scanStore(p, idx, acc);
      }
    }
  }
}

/// One thread per line: 1 at the first maximum (a NaN never wins over a
/// number, nor over an earlier NaN), 0 elsewhere; the line is read before
/// it is written (y may be x).
__global__ void hardmaxKernel(ScanParams p) {
  MP_GRID_LOOP(line, p.outer * p.inner) {
    const int64_t base = (line / p.inner) * p.len * p.inner + line % p.inner;
    int64_t best = 0;
    double b = loadF64(p.x, p.dtype, base);
    for (int64_t i = 1; i < p.len; ++i) {
      const double v = loadF64(p.x, p.dtype, base + i * p.inner);
      if (v > b || (b != b && v == v)) {
        best = i;
        b = v;
      }
    }
    for (int64_t i = 0; i < p.len; ++i)
      storeF64(p.y, p.dtype, base + i * p.inner, i == best ? 1.0 : 0.0);
  }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

constexpr int kAttentionWarps = 4;
constexpr int kAttentionPerLane = kMaxAttentionDim / 32;

__device__ inline int64_t viewAt(const AttentionViewParams &v, int64_t b,
                                 int64_t h, int64_t r, int64_t c) {
  return v.offset + b * v.strides[0] + h * v.strides[1] + r * v.strides[2] +
         c * v.strides[3];
}

/// One warp per query row (b, h, i): lane l holds Q[d] for d = l + 32 t and
/// the output sums for e = l + 32 t. For each key the lanes' products are
/// summed by shuffles; the running max m and sum l rescale the output sums
/// when the max grows (flash attention's recurrence, in f32), so a row of
/// any length needs no scores in memory. A row whose every key is masked
/// (-inf) gives NaN (0 / 0), as the CPU kernels do.
__global__ void attentionKernel(AttentionParams p) {
  const int lane = threadIdx.x % 32;
  const int64_t rows = p.batch * p.heads * p.queries;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kAttentionWarps +
                     threadIdx.x / 32;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kAttentionWarps) {
    const int64_t i = row % p.queries, bh = row / p.queries;
    const int64_t b = bh / p.heads, h = bh % p.heads;
    float q[kAttentionPerLane], acc[kAttentionPerLane];
    for (int t = 0; t < kAttentionPerLane; ++t) {
      const int64_t d = lane + 32 * t;
      q[t] = d < p.headDim ? loadF32(p.qData, p.qDtype, viewAt(p.q, b, h, i, d))
                           : 0.f;
      acc[t] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int64_t j = 0; j < p.keys; ++j) {
      float dot = 0.f;
      for (int t = 0; t < kAttentionPerLane; ++t) {
        const int64_t d = lane + 32 * t;
        if (d < p.headDim)
          dot += q[t] * loadF32(p.kData, p.kDtype, viewAt(p.k, b, h, j, d));
      }
      for (int o = 16; o > 0; o /= 2)
        dot += __shfl_xor_sync(0xffffffffu, dot, o);
      float s = p.scale * dot;
      if (p.maskDtype)
        s += loadF32(p.maskData, p.maskDtype, viewAt(p.mask, b, h, i, j));
      const float next = fmaxf(m, s);
      // Masked keys (-inf) weigh 0 and leave the sums as they are, also
      // before the first unmasked one (where exp(-inf - -inf) would be
      // NaN); a row of only masked keys ends as 0 / 0.
      const float correction = m == next ? 1.f : expf(m - next);
      const float weight = s == -INFINITY ? 0.f : expf(s - next);
      l = l * correction + weight;
      for (int t = 0; t < kAttentionPerLane; ++t) {
        const int64_t e = lane + 32 * t;
        if (e < p.valueDim)
          acc[t] = acc[t] * correction +
                   weight * loadF32(p.vData, p.vDtype, viewAt(p.v, b, h, j, e));
      }
      m = next;
    }
    for (int t = 0; t < kAttentionPerLane; ++t) {
      const int64_t e = lane + 32 * t;
      if (e < p.valueDim)
        storeF32(p.oData, p.oDtype, viewAt(p.o, b, h, i, e), acc[t] / l);
    }
  }
}

} // namespace
} // namespace dev

using namespace dev;

cudaError_t launchAttention(const AttentionParams &p, cudaStream_t stream) {
  const int64_t rows = p.batch * p.heads * p.queries;
  if (rows == 0)
    return cudaSuccess;
  constexpr int kWarps = dev::kAttentionWarps;
  unsigned blocks = blocksFor(rows, kWarps, 65535);
  dev::attentionKernel<<<blocks, kWarps * 32, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchNorm(const NormParams &p, cudaStream_t stream) {
  if (p.rows == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(p.rows, 1, 65535);
  normKernel<<<blocks, kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchLayerNormGrad(const LayerNormGradParams &p,
                                cudaStream_t stream) {
  if (p.rows > 0)
    layerNormGradRowsKernel<<<blocksFor(p.rows, 1, 65535), kBlock, 0, stream>>>(
        p);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return e;
  if (p.rowSize > 0)
    layerNormGradParamsKernel<<<blocksFor(p.rowSize, kBlock), kBlock, 0,
                                stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchLrn(const LrnParams &p, cudaStream_t stream) {
  int64_t n = p.n * p.c * p.spatial;
  if (n == 0)
    return cudaSuccess;
  lrnKernel<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchGemm(const GemmParams &p, cudaStream_t stream) {
  if (p.m == 0 || p.n == 0)
    return cudaSuccess;
  dim3 threads(kTile, kTile);
  dim3 blocks(blocksFor(p.n, kTile, 65535), blocksFor(p.m, kTile, 65535));
  if (p.f64)
    gemmKernel<double><<<blocks, threads, 0, stream>>>(p);
  else
    gemmKernel<float><<<blocks, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchRnnPrep(const RnnParams &p, DeviceError *error,
                          cudaStream_t stream) {
  const int64_t gates = p.mode == kRnnLstm ? 4 : p.mode == kRnnGru ? 3 : 1;
  const int64_t xw = p.seq * p.batch * gates * p.hidden,
                state = p.batch * p.hidden;
  const int64_t n = xw > state ? xw : state;
  if (n == 0)
    return cudaSuccess;
  rnnPrepKernel<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p, error);
  return cudaGetLastError();
}

cudaError_t launchRnnGates(const RnnParams &p, int phase, cudaStream_t stream) {
  const int64_t n = p.batch * p.hidden;
  if (n == 0)
    return cudaSuccess;
  rnnGatesKernel<<<blocksFor(n, kBlock), kBlock, 0, stream>>>(p, phase);
  return cudaGetLastError();
}

cudaError_t launchTopk(const TopkParams &p, cudaStream_t stream) {
  const int64_t n = p.outer * p.len * p.inner;
  if (n == 0 || p.k == 0)
    return cudaSuccess;
  const unsigned blocks = blocksFor(n, kBlock);
  if (p.key == kKeyFloat)
    topkKernel<double><<<blocks, kBlock, 0, stream>>>(p);
  else if (p.key == kKeySigned)
    topkKernel<int64_t><<<blocks, kBlock, 0, stream>>>(p);
  else
    topkKernel<uint64_t><<<blocks, kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchCumsum(const ScanParams &p, cudaStream_t stream) {
  const int64_t lines = p.outer * p.inner;
  if (lines == 0 || p.len == 0)
    return cudaSuccess;
  const unsigned blocks = blocksFor(lines, kBlock);
  switch (p.dtype) {
  case kF64:
    cumsumKernel<double><<<blocks, kBlock, 0, stream>>>(p);
    break;
  case kI32:
    cumsumKernel<uint32_t><<<blocks, kBlock, 0, stream>>>(p);
    break;
  case kI64:
    cumsumKernel<uint64_t><<<blocks, kBlock, 0, stream>>>(p);
    break;
  default: // f32, f16, bf16
    cumsumKernel<float><<<blocks, kBlock, 0, stream>>>(p);
    break;
  }
  return cudaGetLastError();
}

cudaError_t launchHardmax(const ScanParams &p, cudaStream_t stream) {
  const int64_t lines = p.outer * p.inner;
  if (lines == 0 || p.len == 0)
    return cudaSuccess;
  hardmaxKernel<<<blocksFor(lines, kBlock), kBlock, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchLstmBwd(const LstmBwdParams &p, int stage,
                          cudaStream_t stream) {
  return p.f64 ? launchLstmBwdT<double>(p, stage, stream)
               : launchLstmBwdT<float>(p, stage, stream);
}

} // namespace mp::rt::cuda
