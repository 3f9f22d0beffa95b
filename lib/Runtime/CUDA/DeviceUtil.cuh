//===- DeviceUtil.cuh - device helpers of the CUDA backend --------*- CUDA
//-*-===//
//
// Loads and stores by runtime dtype (ONNX codes), with the CPU backend's
// conversion rules (16-bit values widened exactly, rounded once to nearest
// even on the way back, float -> integer truncating and saturating),
// grid-stride loops and block reductions. Included by the .cu files only.
//
// The .cu files are compiled with --fmad=false: no multiply-add is fused,
// so f32 arithmetic written like the CPU's gives the CPU's bits where the
// operation order is the same (optimizer updates, pooling sums, batch-norm
// normalisation).
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_DEVICEUTIL_CUH
#define MP_LIB_RUNTIME_CUDA_DEVICEUTIL_CUH

#include "Launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace mp::rt::cuda::dev {

// ONNX dtype codes (mp::rt::DType).
enum : int32_t {
  kF32 = 1,
  kU8 = 2,
  kI8 = 3,
  kU16 = 4,
  kI16 = 5,
  kI32 = 6,
  kI64 = 7,
  kBool = 9,
  kF16 = 10,
  kF64 = 11,
  kU32 = 12,
  kU64 = 13,
  kBF16 = 16,
};

__host__ __device__ inline int elemBytes(int32_t t) {
  switch (t) {
  case kF64:
  case kI64:
  case kU64:
    return 8;
  case kF32:
  case kI32:
  case kU32:
    return 4;
  case kF16:
  case kBF16:
  case kI16:
  case kU16:
    return 2;
  default:
    return 1;
  }
}

__device__ inline bool isUnsignedCode(int32_t t) {
  return t == kU8 || t == kU16 || t == kU32 || t == kU64 || t == kBool;
}

/// Element i of p (dtype t) as float (f32, f16, bf16 exactly; others
/// converted).
__device__ inline float loadF32(const void *p, int32_t t, int64_t i) {
  switch (t) {
  case kF32:
    return static_cast<const float *>(p)[i];
  case kF16:
    return __half2float(static_cast<const __half *>(p)[i]);
  case kBF16:
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
  case kF64:
    return static_cast<float>(static_cast<const double *>(p)[i]);
  case kI64:
    return static_cast<float>(static_cast<const int64_t *>(p)[i]);
  case kI32:
    return static_cast<float>(static_cast<const int32_t *>(p)[i]);
  case kI16:
    return static_cast<float>(static_cast<const int16_t *>(p)[i]);
  case kI8:
    return static_cast<float>(static_cast<const int8_t *>(p)[i]);
  case kU64:
    return static_cast<float>(static_cast<const uint64_t *>(p)[i]);
  case kU32:
    return static_cast<float>(static_cast<const uint32_t *>(p)[i]);
  case kU16:
    return static_cast<float>(static_cast<const uint16_t *>(p)[i]);
  case kU8:
    return static_cast<float>(static_cast<const uint8_t *>(p)[i]);
  case kBool:
    return static_cast<const uint8_t *>(p)[i] != 0 ? 1.0f : 0.0f;
  }
  return 0.0f;
}

__device__ inline double loadF64(const void *p, int32_t t, int64_t i) {
  switch (t) {
  case kF64:
    return static_cast<const double *>(p)[i];
  case kI64:
    return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  case kI32:
    return static_cast<double>(static_cast<const int32_t *>(p)[i]);
  case kU64:
    return static_cast<double>(static_cast<const uint64_t *>(p)[i]);
  case kU32:
    return static_cast<double>(static_cast<const uint32_t *>(p)[i]);
  default:
    return static_cast<double>(loadF32(p, t, i));
  }
}

/// Integers (and bool as 0/1) widened to 64 bits: signed ones sign-extended.
__device__ inline int64_t loadI64(const void *p, int32_t t, int64_t i) {
  switch (t) {
  case kI64:
    return static_cast<const int64_t *>(p)[i];
  case kI32:
    return static_cast<const int32_t *>(p)[i];
  case kI16:
    return static_cast<const int16_t *>(p)[i];
  case kI8:
    return static_cast<const int8_t *>(p)[i];
  case kU64:
    return static_cast<int64_t>(static_cast<const uint64_t *>(p)[i]);
  case kU32:
    return static_cast<const uint32_t *>(p)[i];
  case kU16:
    return static_cast<const uint16_t *>(p)[i];
  case kU8:
    return static_cast<const uint8_t *>(p)[i];
  case kBool:
    return static_cast<const uint8_t *>(p)[i] != 0;
  default:
    return static_cast<int64_t>(loadF64(p, t, i));
  }
}

/// An f32 or f64 value rounded once to f16 / bf16.
__device__ inline __half toHalf(float v) { return __float2half_rn(v); }
__device__ inline __half toHalf(double v) { return __double2half(v); }
__device__ inline __nv_bfloat16 toBF16(float v) {
  return __float2bfloat16_rn(v);
}
__device__ inline __nv_bfloat16 toBF16(double v) {
  return __double2bfloat16(v);
}

/// Stores an f32 or f64 value (V) rounded once to dtype t (floats; bool:
/// != 0; other dtypes are not written).
template <typename V>
__device__ inline void storeFloat(void *p, int32_t t, int64_t i, V v) {
  switch (t) {
  case kF32:
    static_cast<float *>(p)[i] = static_cast<float>(v);
    return;
  case kF64:
    static_cast<double *>(p)[i] = v;
    return;
  case kF16:
    static_cast<__half *>(p)[i] = toHalf(v);
    return;
  case kBF16:
    static_cast<__nv_bfloat16 *>(p)[i] = toBF16(v);
    return;
  case kBool:
    static_cast<uint8_t *>(p)[i] = v != V(0);
    return;
  default:
    return;
  }
}

/// Stores an f32 value rounded once to dtype t (floats; integers truncate).
__device__ inline void storeF32(void *p, int32_t t, int64_t i, float v) {
  storeFloat(p, t, i, v);
}

/// Stores an f64 value rounded once to dtype t.
__device__ inline void storeF64(void *p, int32_t t, int64_t i, double v) {
  storeFloat(p, t, i, v);
}

/// Stores a 64-bit integer wrapped to dtype t (bool: != 0).
__device__ inline void storeI64(void *p, int32_t t, int64_t i, int64_t v) {
  // The integer dtypes, each with its C++ type: v converted to it.
#define MP_STORE_INT(code, T)                                                  \
  case code:                                                                   \
    static_cast<T *>(p)[i] = static_cast<T>(v);                                \
    return;
  switch (t) {
    MP_STORE_INT(kI64, int64_t)
    MP_STORE_INT(kU64, uint64_t)
    MP_STORE_INT(kI32, int32_t)
    MP_STORE_INT(kU32, uint32_t)
    MP_STORE_INT(kI16, int16_t)
    MP_STORE_INT(kU16, uint16_t)
    MP_STORE_INT(kI8, int8_t)
    MP_STORE_INT(kU8, uint8_t)
  case kBool:
    static_cast<uint8_t *>(p)[i] = v != 0;
    return;
  default:
    storeF64(p, t, i, static_cast<double>(v));
    return;
  }
#undef MP_STORE_INT
}

// Typed load / store for the compute types of templated kernels.
template <typename C> __device__ C loadAs(const void *p, int32_t t, int64_t i);
template <>
__device__ inline float loadAs<float>(const void *p, int32_t t, int64_t i) {
  return loadF32(p, t, i);
}
template <>
__device__ inline double loadAs<double>(const void *p, int32_t t, int64_t i) {
  return loadF64(p, t, i);
}
template <>
__device__ inline int64_t loadAs<int64_t>(const void *p, int32_t t, int64_t i) {
  return loadI64(p, t, i);
}
template <>
__device__ inline uint64_t loadAs<uint64_t>(const void *p, int32_t t,
                                            int64_t i) {
  return static_cast<uint64_t>(loadI64(p, t, i));
}
__device__ inline void storeAs(void *p, int32_t t, int64_t i, float v) {
  storeF32(p, t, i, v);
}
__device__ inline void storeAs(void *p, int32_t t, int64_t i, double v) {
  storeF64(p, t, i, v);
}
__device__ inline void storeAs(void *p, int32_t t, int64_t i, int64_t v) {
  storeI64(p, t, i, v);
}
__device__ inline void storeAs(void *p, int32_t t, int64_t i, uint64_t v) {
  storeI64(p, t, i, static_cast<int64_t>(v));
}

//===----------------------------------------------------------------------===//
// Scatter reductions
//===----------------------------------------------------------------------===//

/// a (reduction) b for floats computed in F (float for f32, f16, bf16,
/// double for f64): NaN propagates through max and min, as the CPU.
template <typename F> __device__ inline F combineFloat(int32_t r, F a, F b) {
  switch (r) {
  case kSeAdd:
    return a + b;
  case kSeMul:
    return a * b;
  default:
    if (a != a || b != b)
      return a != a ? a : b;
    if (r == kSeMax)
      return b > a ? b : a;
    return b < a ? b : a;
  }
}

/// out[yi] = out[yi] (reduction r, ScatterReduce) updates[ui] in
/// the CPU's arithmetic for dtype t (cpu::ScatterReduction's combine):
/// kernel.scatter_elements and the ordered kernel.scatter_nd.
__device__ inline void combineScatterElem(int32_t t, int32_t elemSize,
                                          int32_t r, void *out, int64_t yi,
                                          const void *updates, int64_t ui) {
  if (r == kSeNone) {
    switch (elemSize) {
    case 1:
      static_cast<uint8_t *>(out)[yi] =
          static_cast<const uint8_t *>(updates)[ui];
      return;
    case 2:
      static_cast<uint16_t *>(out)[yi] =
          static_cast<const uint16_t *>(updates)[ui];
      return;
    case 4:
      static_cast<uint32_t *>(out)[yi] =
          static_cast<const uint32_t *>(updates)[ui];
      return;
    default:
      static_cast<uint64_t *>(out)[yi] =
          static_cast<const uint64_t *>(updates)[ui];
      return;
    }
  }
  if (t == kF32 || t == kF16 || t == kBF16) {
    storeF32(out, t, yi,
             combineFloat(r, loadF32(out, t, yi), loadF32(updates, t, ui)));
    return;
  }
  if (t == kF64) {
    storeF64(out, t, yi,
             combineFloat(r, loadF64(out, t, yi), loadF64(updates, t, ui)));
    return;
  }
  if (t == kBool) {
    // add and max are or, mul and min are and.
    const bool a = static_cast<const uint8_t *>(out)[yi] != 0,
               b = static_cast<const uint8_t *>(updates)[ui] != 0;
    const bool v = (r == kSeAdd || r == kSeMax) ? (a || b) : (a && b);
    static_cast<uint8_t *>(out)[yi] = v ? 1 : 0;
    return;
  }
  // Integers: modular add / mul in 64 bits, max / min by the type's order.
  const int64_t a = loadI64(out, t, yi), b = loadI64(updates, t, ui);
  const bool isUnsigned = t == kU8 || t == kU16 || t == kU32 || t == kU64;
  int64_t v;
  if (r == kSeAdd)
    v = static_cast<int64_t>(static_cast<uint64_t>(a) +
                             static_cast<uint64_t>(b));
  else if (r == kSeMul)
    v = static_cast<int64_t>(static_cast<uint64_t>(a) *
                             static_cast<uint64_t>(b));
  else if (isUnsigned) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    v = static_cast<int64_t>(r == kSeMax ? (ua > ub ? ua : ub)
                                         : (ua < ub ? ua : ub));
  } else {
    v = r == kSeMax ? (a > b ? a : b) : (a < b ? a : b);
  }
  storeI64(out, t, yi, v);
}

/// Grid-stride loop over [0, n).
#define MP_GRID_LOOP(i, n)                                                     \
  for (int64_t i =                                                             \
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;        \
       i < (n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)

/// Blocks for a grid-stride launch over n items (as launchFor on the host).
inline unsigned blocksFor(int64_t n, unsigned threads,
                          unsigned maxBlocks = 8192) {
  int64_t b = n <= 0 ? 1 : (n + threads - 1) / threads;
  if (b > maxBlocks)
    b = maxBlocks;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

/// Launches KERNEL<E><<<blocks, threads, 0, stream>>>(args...) with E the
/// unsigned integer type of `elemSize` bytes (1, 2, 4, else 8): the kernels
/// that only move elements are compiled once per element size.
#define MP_LAUNCH_BY_ELEM(elemSize, KERNEL, blocks, threads, stream, ...)      \
  do {                                                                         \
    switch (elemSize) {                                                        \
    case 1:                                                                    \
      KERNEL<uint8_t><<<blocks, threads, 0, stream>>>(__VA_ARGS__);            \
      break;                                                                   \
    case 2:                                                                    \
      KERNEL<uint16_t><<<blocks, threads, 0, stream>>>(__VA_ARGS__);           \
      break;                                                                   \
    case 4:                                                                    \
      KERNEL<uint32_t><<<blocks, threads, 0, stream>>>(__VA_ARGS__);           \
      break;                                                                   \
    default:                                                                   \
      KERNEL<uint64_t><<<blocks, threads, 0, stream>>>(__VA_ARGS__);           \
      break;                                                                   \
    }                                                                          \
  } while (0)

/// Sum of a double over the block (every thread gets the result). The
/// block has at most 1024 threads; `shared` holds 32 doubles.
__device__ inline double blockSum(double v, double *shared) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_down_sync(0xffffffffu, v, o);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  double r = 0;
  if (threadIdx.x < 32) {
    r = threadIdx.x < warps ? shared[threadIdx.x] : 0.0;
    for (int o = 16; o > 0; o /= 2)
      r += __shfl_down_sync(0xffffffffu, r, o);
    if (threadIdx.x == 0)
      shared[0] = r;
  }
  __syncthreads();
  r = shared[0];
  __syncthreads();
  return r;
}

/// Records a bad-data error (the first one per call wins).
__device__ inline void recordError(DeviceError *e, int32_t code,
                                   int64_t value) {
  if (!e)
    return;
  if (atomicCAS(&e->code, 0, code) == 0)
    e->value = value;
}

} // namespace mp::rt::cuda::dev

#endif // MP_LIB_RUNTIME_CUDA_DEVICEUTIL_CUH
