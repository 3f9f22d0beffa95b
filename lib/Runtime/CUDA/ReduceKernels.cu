//===- ReduceKernels.cu - kernel.reduce and cudnn.softmax -----------------===//
//
// The CUDA backend's own kernels for kernel.reduce and cudnn.softmax (the
// CPU's arithmetic). One kernel template per compute type (f32, f64, 64-bit
// integers) with the function chosen at run time, so that nvcc compiles a
// handful of instantiations, not one per (function, dtype) pair. Every index
// computation was decided on the host (CudaPlanning*.cpp); these only walk it.
//
//===----------------------------------------------------------------------===//
#include "DeviceMath.cuh"

#include <cmath>
#include <type_traits>

namespace mp::rt::cuda {
namespace dev {
namespace {

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

__device__ inline int64_t keptOffset(const ReduceParams &p, int64_t o) {
  int64_t off = 0;
  for (int d = p.keptRank - 1; d >= 0; --d) {
    off += (o % p.keptDims[d]) * p.keptStrides[d];
    o /= p.keptDims[d];
  }
  return off;
}

__device__ inline int64_t reducedOffset(const ReduceParams &p, int64_t r) {
  int64_t off = 0;
  for (int d = p.reducedRank - 1; d >= 0; --d) {
    off += (r % p.reducedDims[d]) * p.reducedStrides[d];
    r /= p.reducedDims[d];
  }
  return off;
}

/// The accumulator of one output: double sums (float data), wrapping
/// 64-bit sums (integers), or the extreme value in the compute type.
struct Acc {
  double d;   // float sums, l2, log_sum; max/min of float data
  uint64_t u; // integer sums, products
  int64_t s;  // integer max / min
};

__device__ inline bool isIntCode(int32_t t) {
  return !(t == kF32 || t == kF16 || t == kBF16 || t == kF64);
}

__device__ inline Acc identityOf(const ReduceParams &p) {
  Acc a{0.0, 0, 0};
  bool isInt = isIntCode(p.dtype);
  switch (p.op) {
  case kRedProd:
    a.d = 1.0;
    a.u = 1;
    break;
  case kRedMax:
    if (isInt)
      a.s = p.dtype == kI8    ? -128
            : p.dtype == kI16 ? -32768
            : p.dtype == kI32 ? INT32_MIN
            : p.dtype == kI64 ? INT64_MIN
                              : 0;
    else
      a.d = -INFINITY;
    break;
  case kRedMin:
    if (isInt)
      a.s = p.dtype == kI8    ? 127
            : p.dtype == kI16 ? 32767
            : p.dtype == kI32 ? INT32_MAX
            : p.dtype == kI64 ? INT64_MAX
            : p.dtype == kU8  ? 255
            : p.dtype == kU16 ? 65535
            : p.dtype == kU32 ? static_cast<int64_t>(UINT32_MAX)
                              : -1;
    else
      a.d = INFINITY;
    break;
  default:
    break;
  }
  return a;
}

/// acc = comb(acc, element i of x).
__device__ inline void accumulate(const ReduceParams &p, Acc &a, int64_t i) {
  if (isIntCode(p.dtype)) {
    int64_t v = loadI64(p.in, p.dtype, i);
    uint64_t uv = static_cast<uint64_t>(v);
    switch (p.op) {
    case kRedSum:
    case kRedMean:
      a.u += uv;
      break;
    case kRedProd:
      a.u *= uv;
      break;
    case kRedL1:
      a.u += (!isUnsignedCode(p.dtype) && v < 0) ? 0 - uv : uv;
      break;
    case kRedSumSquare:
      a.u += uv * uv;
      break;
    case kRedL2: {
      double dv = static_cast<double>(v);
      if (p.dtype == kU64)
        dv = static_cast<double>(uv);
      a.d += dv * dv;
      break;
    }
    case kRedLogSum:
      a.d += p.dtype == kU64 ? static_cast<double>(uv) : static_cast<double>(v);
      break;
    case kRedMax:
      if (p.dtype == kU64)
        a.s = static_cast<int64_t>(
            static_cast<uint64_t>(a.s) > uv ? static_cast<uint64_t>(a.s) : uv);
      else
        a.s = v > a.s ? v : a.s;
      break;
    case kRedMin:
      if (p.dtype == kU64)
        a.s = static_cast<int64_t>(
            static_cast<uint64_t>(a.s) < uv ? static_cast<uint64_t>(a.s) : uv);
      else
        a.s = v < a.s ? v : a.s;
      break;
    }
    return;
  }
  if (p.op == kRedMax || p.op == kRedMin) {
    // In the compute type (f32 for f32 / f16 / bf16, f64), NaN-propagating.
    if (p.dtype == kF64) {
      double v = loadF64(p.in, p.dtype, i);
      a.d = p.op == kRedMax ? nanMax(a.d, v) : nanMin(a.d, v);
    } else {
      float v = loadF32(p.in, p.dtype, i), cur = static_cast<float>(a.d);
      a.d = p.op == kRedMax ? nanMax(cur, v) : nanMin(cur, v);
    }
    return;
  }
  double v = p.dtype == kF64 ? loadF64(p.in, p.dtype, i)
                             : static_cast<double>(loadF32(p.in, p.dtype, i));
  switch (p.op) {
  case kRedSum:
  case kRedMean:
  case kRedLogSum:
    a.d += v;
    break;
  case kRedProd:
    a.d *= v;
    break;
  case kRedL1:
    a.d += fabs(v);
    break;
  case kRedL2:
  case kRedSumSquare:
    a.d += v * v;
    break;
  }
}

/// Combines two partial accumulators (block reductions).
__device__ inline Acc combine(const ReduceParams &p, Acc a, const Acc &b) {
  bool isInt = isIntCode(p.dtype);
  switch (p.op) {
  case kRedMax:
    if (isInt) {
      if (p.dtype == kU64)
        a.s =
            static_cast<uint64_t>(a.s) > static_cast<uint64_t>(b.s) ? a.s : b.s;
      else
        a.s = a.s > b.s ? a.s : b.s;
    } else {
      a.d = nanMax(a.d, b.d);
    }
    return a;
  case kRedMin:
    if (isInt) {
      if (p.dtype == kU64)
        a.s =
            static_cast<uint64_t>(a.s) < static_cast<uint64_t>(b.s) ? a.s : b.s;
      else
        a.s = a.s < b.s ? a.s : b.s;
    } else {
      a.d = nanMin(a.d, b.d);
    }
    return a;
  case kRedProd:
    a.d *= b.d;
    a.u *= b.u;
    return a;
  default:
    a.d += b.d;
    a.u += b.u;
    return a;
  }
}

__device__ inline void finish(const ReduceParams &p, int64_t o, const Acc &a) {
  bool isInt = isIntCode(p.dtype);
  if (isInt) {
    switch (p.op) {
    case kRedMax:
    case kRedMin:
      storeI64(p.out, p.outDtype, o, a.s);
      return;
    case kRedL2:
      storeI64(p.out, p.outDtype, o, static_cast<int64_t>(sqrt(a.d)));
      return;
    case kRedLogSum:
      storeI64(p.out, p.outDtype, o, static_cast<int64_t>(log(a.d)));
      return;
    case kRedMean:
      if (isUnsignedCode(p.dtype))
        storeI64(p.out, p.outDtype, o,
                 static_cast<int64_t>(
                     p.count ? a.u / static_cast<uint64_t>(p.count) : 0));
      else
        storeI64(p.out, p.outDtype, o,
                 p.count ? static_cast<int64_t>(a.u) / p.count : 0);
      return;
    default:
      storeI64(p.out, p.outDtype, o, static_cast<int64_t>(a.u));
      return;
    }
  }
  switch (p.op) {
  case kRedMax:
  case kRedMin:
    if (p.dtype == kF64)
      storeF64(p.out, p.outDtype, o, a.d);
    else
      storeF32(p.out, p.outDtype, o, static_cast<float>(a.d));
    return;
  case kRedMean:
    storeF64(p.out, p.outDtype, o, a.d / static_cast<double>(p.count));
    return;
  case kRedL2:
    storeF64(p.out, p.outDtype, o, sqrt(a.d));
    return;
  case kRedLogSum:
    storeF64(p.out, p.outDtype, o, log(a.d));
    return;
  default:
    storeF64(p.out, p.outDtype, o, a.d);
    return;
  }
}

/// One thread per output: neighbouring threads read neighbouring elements.
__global__ void reduceThreadKernel(ReduceParams p) {
  MP_GRID_LOOP(o, p.ySize) {
    int64_t base = keptOffset(p, o);
    if (p.op == kRedArgMax || p.op == kRedArgMin) {
      // The CPU's rule: the first (or last) extreme; NaN is the extreme.
      bool isMax = p.op == kRedArgMax, last = p.selectLast;
      bool isInt = isIntCode(p.dtype);
      double best = 0;
      int64_t bestI = 0, bestIdx = 0;
      for (int64_t r = 0; r < p.count; ++r) {
        int64_t i = base + reducedOffset(p, r);
        bool better;
        if (isInt) {
          int64_t v = loadI64(p.in, p.dtype, i);
          bool beyond =
              p.dtype == kU64
                  ? (isMax ? (last ? static_cast<uint64_t>(v) >=
                                         static_cast<uint64_t>(bestI)
                                   : static_cast<uint64_t>(v) >
                                         static_cast<uint64_t>(bestI))
                           : (last ? static_cast<uint64_t>(v) <=
                                         static_cast<uint64_t>(bestI)
                                   : static_cast<uint64_t>(v) <
                                         static_cast<uint64_t>(bestI)))
                  : (isMax ? (last ? v >= bestI : v > bestI)
                           : (last ? v <= bestI : v < bestI));
          better = r == 0 || beyond;
          if (better)
            bestI = v;
        } else {
          double v = p.dtype == kF64
                         ? loadF64(p.in, p.dtype, i)
                         : static_cast<double>(loadF32(p.in, p.dtype, i));
          bool beyond = isMax ? (last ? v >= best : v > best)
                              : (last ? v <= best : v < best);
          bool nanWins = last ? v != v : (v != v && best == best);
          better = r == 0 || beyond || nanWins;
          if (better)
            best = v;
        }
        if (better)
          bestIdx = r;
      }
      static_cast<int64_t *>(p.out)[o] = bestIdx;
      continue;
    }
    Acc a = identityOf(p);
    for (int64_t r = 0; r < p.count; ++r)
      accumulate(p, a, base + reducedOffset(p, r));
    finish(p, o, a);
  }
}

constexpr int kReduceThreads = 256;

/// Element i of x as log_sum_exp computes it: its compute type's value (f32
/// for f32 / f16 / bf16, f64, the integer) as a double.
__device__ inline double lseValue(const ReduceParams &p, int64_t i) {
  if (p.dtype == kF64)
    return loadF64(p.in, p.dtype, i);
  if (!isIntCode(p.dtype))
    return static_cast<double>(loadF32(p.in, p.dtype, i));
  if (p.dtype == kU64)
    return static_cast<double>(static_cast<const uint64_t *>(p.in)[i]);
  return static_cast<double>(loadI64(p.in, p.dtype, i));
}

/// log_sum_exp's result, converted with the cast rules.
__device__ inline void lseStore(const ReduceParams &p, int64_t o, double sum,
                                double shift) {
  Val v{1, 0.0f, 0.0, 0, 0};
  v.d = log(sum) + shift;
  storeVal(p.out, p.outDtype, o, v);
}

/// The shift: the maximum (NaN-propagating), or 0 when it is not finite
/// (all -inf or no elements gives -inf, an inf gives inf, a NaN NaN).
__device__ inline double lseShift(double m) { return isfinite(m) ? m : 0.0; }

/// log_sum_exp, one thread per output (two passes over its elements).
__global__ void logSumExpThreadKernel(ReduceParams p) {
  MP_GRID_LOOP(o, p.ySize) {
    int64_t base = keptOffset(p, o);
    double m = -INFINITY;
    for (int64_t r = 0; r < p.count; ++r)
      m = nanMax(m, lseValue(p, base + reducedOffset(p, r)));
    double shift = lseShift(m), sum = 0.0;
    for (int64_t r = 0; r < p.count; ++r)
      sum += exp(lseValue(p, base + reducedOffset(p, r)) - shift);
    lseStore(p, o, sum, shift);
  }
}

/// log_sum_exp, one block per output: the maximum, then the sum.
__global__ void logSumExpBlockKernel(ReduceParams p) {
  __shared__ double part[kReduceThreads];
  for (int64_t o = blockIdx.x; o < p.ySize; o += gridDim.x) {
    int64_t base = keptOffset(p, o);
    double m = -INFINITY;
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x)
      m = nanMax(m, lseValue(p, base + reducedOffset(p, r)));
    part[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        part[threadIdx.x] = nanMax(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    double shift = lseShift(part[0]);
    __syncthreads();
    double sum = 0.0;
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x)
      sum += exp(lseValue(p, base + reducedOffset(p, r)) - shift);
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        part[threadIdx.x] += part[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0)
      lseStore(p, o, part[0], shift);
    __syncthreads();
  }
}

/// One block per output: the reduced elements are contiguous (coalesced).
__global__ void reduceBlockKernel(ReduceParams p) {
  __shared__ double sd[kReduceThreads];
  __shared__ uint64_t su[kReduceThreads];
  __shared__ int64_t ss[kReduceThreads];
  for (int64_t o = blockIdx.x; o < p.ySize; o += gridDim.x) {
    int64_t base = keptOffset(p, o);
    Acc a = identityOf(p);
    for (int64_t r = threadIdx.x; r < p.count; r += blockDim.x)
      accumulate(p, a, base + reducedOffset(p, r));
    sd[threadIdx.x] = a.d;
    su[threadIdx.x] = a.u;
    ss[threadIdx.x] = a.s;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        Acc x{sd[threadIdx.x], su[threadIdx.x], ss[threadIdx.x]};
        Acc y{sd[threadIdx.x + s], su[threadIdx.x + s], ss[threadIdx.x + s]};
        Acc c = combine(p, x, y);
        sd[threadIdx.x] = c.d;
        su[threadIdx.x] = c.u;
        ss[threadIdx.x] = c.s;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0)
      finish(p, o, Acc{sd[0], su[0], ss[0]});
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// Softmax (the CPU's arithmetic: max and shift in the compute type, the sum
// of the exponentials in f64)
//===----------------------------------------------------------------------===//

template <typename C>
__device__ inline C loadC(const void *p, int32_t t, int64_t i) {
  return loadAs<C>(p, t, i);
}

/// Element i of the softmax's input: x, or (kernel.scaled_softmax) x *
/// scale + the mask element broadcast onto i, in the compute type.
template <typename C>
__device__ inline C loadInput(const SoftmaxParams &p, int64_t i) {
  C v = loadC<C>(p.in, p.dtype, i);
  if (p.scale != 1.0f)
    v = v * static_cast<C>(p.scale);
  if (p.maskDtype) {
    int64_t offset = 0, rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      offset += (rest % p.dims[d]) * p.maskStrides[d];
      rest /= p.dims[d];
    }
    v = v + loadC<C>(p.mask, p.maskDtype, offset);
  }
  return v;
}

/// One thread per (outer, inner) slice.
template <typename C> __global__ void softmaxThreadKernel(SoftmaxParams p) {
  MP_GRID_LOOP(s, p.outer * p.inner) {
    int64_t o = s / p.inner, j = s % p.inner;
    int64_t base = o * p.len * p.inner + j;
    C mx = -INFINITY;
    for (int64_t l = 0; l < p.len; ++l) {
      C v = loadInput<C>(p, base + l * p.inner);
      mx = v > mx ? v : mx;
    }
    if (mx == C(-INFINITY))
      mx = C(0);
    double sum = 0;
    for (int64_t l = 0; l < p.len; ++l)
      sum +=
          static_cast<double>(mExp(loadInput<C>(p, base + l * p.inner) - mx));
    C factor = p.log ? static_cast<C>(log(sum)) : static_cast<C>(1.0 / sum);
    for (int64_t l = 0; l < p.len; ++l) {
      int64_t i = base + l * p.inner;
      C v = loadInput<C>(p, i) - mx;
      storeAs(p.out, p.dtype, i, p.log ? v - factor : mExp(v) * factor);
    }
  }
}

/// One block per row (inner == 1).
template <typename C> __global__ void softmaxBlockKernel(SoftmaxParams p) {
  __shared__ double shared[32];
  __shared__ C smax[kReduceThreads];
  for (int64_t o = blockIdx.x; o < p.outer; o += gridDim.x) {
    int64_t base = o * p.len;
    C mx = -INFINITY;
    for (int64_t l = threadIdx.x; l < p.len; l += blockDim.x) {
      C v = loadInput<C>(p, base + l);
      mx = v > mx ? v : mx;
    }
    smax[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        C b = smax[threadIdx.x + s];
        smax[threadIdx.x] = b > smax[threadIdx.x] ? b : smax[threadIdx.x];
      }
      __syncthreads();
    }
    mx = smax[0];
    if (mx == C(-INFINITY))
      mx = C(0);
    double sum = 0;
    for (int64_t l = threadIdx.x; l < p.len; l += blockDim.x)
      sum += static_cast<double>(mExp(loadInput<C>(p, base + l) - mx));
    sum = blockSum(sum, shared);
    C factor = p.log ? static_cast<C>(log(sum)) : static_cast<C>(1.0 / sum);
    for (int64_t l = threadIdx.x; l < p.len; l += blockDim.x) {
      C v = loadInput<C>(p, base + l) - mx;
      storeAs(p.out, p.dtype, base + l, p.log ? v - factor : mExp(v) * factor);
    }
    __syncthreads();
  }
}

} // namespace
} // namespace dev

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

using namespace dev;

cudaError_t launchReduce(const ReduceParams &p, cudaStream_t stream) {
  if (p.ySize == 0)
    return cudaSuccess;
  if (p.op == kRedLogSumExp) {
    if (p.blockPerOutput)
      logSumExpBlockKernel<<<blocksFor(p.ySize, 1, 65535), kReduceThreads, 0,
                             stream>>>(p);
    else
      logSumExpThreadKernel<<<blocksFor(p.ySize, 256), 256, 0, stream>>>(p);
  } else if (p.blockPerOutput && p.op != kRedArgMax && p.op != kRedArgMin)
    reduceBlockKernel<<<blocksFor(p.ySize, 1, 65535), kReduceThreads, 0,
                        stream>>>(p);
  else
    reduceThreadKernel<<<blocksFor(p.ySize, 256), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchSoftmax(const SoftmaxParams &p, cudaStream_t stream) {
  int64_t slices = p.outer * p.inner;
  if (slices == 0 || p.len == 0)
    return cudaSuccess;
  bool f64 = p.dtype == kF64;
  if (p.inner == 1 && p.len >= 256) {
    unsigned blocks = blocksFor(p.outer, 1, 65535);
    if (f64)
      softmaxBlockKernel<double><<<blocks, kReduceThreads, 0, stream>>>(p);
    else
      softmaxBlockKernel<float><<<blocks, kReduceThreads, 0, stream>>>(p);
  } else {
    unsigned blocks = blocksFor(slices, 256);
    if (f64)
      softmaxThreadKernel<double><<<blocks, 256, 0, stream>>>(p);
    else
      softmaxThreadKernel<float><<<blocks, 256, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
