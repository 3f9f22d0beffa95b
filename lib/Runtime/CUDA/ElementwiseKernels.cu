//===- ElementwiseKernels.cu - elementwise, cast and gather copies --------===//
//
// The CUDA backend's own kernels for kernel.elementwise, kernel.cast and the
// gather copies (transposes, padding, cropping, window copies). One kernel
// template per compute type (f32, f64, 64-bit integers) with the function
// chosen at run time, so that nvcc compiles a handful of instantiations, not
// one per (function, dtype) pair. Every index computation was decided on the
// host (CudaPlanning*.cpp); these only walk it.
//
//===----------------------------------------------------------------------===//
#include "DeviceMath.cuh"

#include "mp/Runtime/IntegerPow.h"
#include "mp/Runtime/NarrowTypes.h"

#include <cmath>
#include <type_traits>

namespace mp::rt::cuda {
namespace dev {
namespace {

/// A unary or binary float function (C = float or double), as the CPU's Op
/// structs (Elementwise.cpp) compute it.
/// x clipped to [a, b] (a NaN x stays NaN).
template <typename T> __device__ inline T clipTo(T x, T a, T b) {
  T v = x < a ? a : x;
  return v > b ? b : v;
}

template <typename C>
__device__ inline C floatOp(int32_t op, C x, C y, C a, C b) {
  // The functions that are one math function of x, one a line.
#define MP_EW_OF_X(code, fn)                                                   \
  case code:                                                                   \
    return fn(x);
  switch (op) {
  case kEwIdentity:
    return x;
    MP_EW_OF_X(kEwAbs, mFabs)
  case kEwNeg:
    return -x;
    MP_EW_OF_X(kEwExp, mExp)
    MP_EW_OF_X(kEwLog, mLog)
    MP_EW_OF_X(kEwSqrt, mSqrt)
  case kEwReciprocal:
    return C(1) / x;
  case kEwRelu:
    return x > C(0) ? x : C(0);
  case kEwSigmoid:
    return C(1) / (C(1) + mExp(-x));
    MP_EW_OF_X(kEwTanh, mTanh)
    MP_EW_OF_X(kEwErf, mErf)
    MP_EW_OF_X(kEwFloor, mFloor)
    MP_EW_OF_X(kEwCeil, mCeil)
    MP_EW_OF_X(kEwRound, mRint)
  case kEwSign:
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
    MP_EW_OF_X(kEwSin, mSin)
    MP_EW_OF_X(kEwCos, mCos)
    MP_EW_OF_X(kEwTan, mTan)
    MP_EW_OF_X(kEwAsin, mAsin)
    MP_EW_OF_X(kEwAcos, mAcos)
    MP_EW_OF_X(kEwAtan, mAtan)
    MP_EW_OF_X(kEwSinh, mSinh)
    MP_EW_OF_X(kEwCosh, mCosh)
    MP_EW_OF_X(kEwAsinh, mAsinh)
    MP_EW_OF_X(kEwAcosh, mAcosh)
    MP_EW_OF_X(kEwAtanh, mAtanh)
  case kEwSoftplus:
    return x > C(0) ? x + mLog1p(mExp(-x)) : mLog1p(mExp(x));
  case kEwSoftsign:
    return x / (C(1) + mFabs(x));
  case kEwHardSwish:
    return x * sMax(C(0), sMin(C(1), x * C(1.0 / 6.0) + C(0.5)));
  case kEwGelu:
    return C(0.5) * x * (C(1) + mErf(x * C(0.70710678118654752440)));
  case kEwGeluTanh:
    return C(0.5) * x *
           (C(1) +
            mTanh(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
  case kEwLeakyRelu:
    return x < C(0) ? a * x : x;
  case kEwElu:
    return x < C(0) ? a * mExpm1(x) : x;
  case kEwCelu:
    return sMax(C(0), x) + sMin(C(0), a * mExpm1(x / a));
  case kEwSelu:
    return x > C(0) ? b * x : b * (a * mExp(x) - a);
  case kEwHardSigmoid:
    return sMax(C(0), sMin(C(1), a * x + b));
  case kEwThresholdedRelu:
    return x > a ? x : C(0);
  case kEwShrink:
    return x < -a ? x + b : (x > a ? x - b : C(0));
  case kEwClip1:
    return clipTo(x, a, b);
  // Binary.
  case kEwAdd:
  case kEwSum:
    return x + y;
  case kEwSub:
    return x - y;
  case kEwMul:
    return x * y;
  case kEwDiv:
    return x / y;
  case kEwPow:
    return mPow(x, y);
  case kEwMod: {
    C r = mFmod(x, y);
    return (r != C(0) && ((r < C(0)) != (y < C(0)))) ? r + y : r;
  }
  case kEwFmod:
    return mFmod(x, y);
  case kEwPRelu:
    return x < C(0) ? y * x : x;
  case kEwReluGrad: // (dy, x)
    return y > C(0) ? x : C(0);
  case kEwGeluGrad: // (dy, x): dy * (Phi(x) + x phi(x))
    return x * (C(0.5) * (C(1) + mErf(y * C(0.70710678118654752440))) +
                y * C(0.39894228040143267794) * mExp(C(-0.5) * y * y));
  case kEwGeluTanhGrad: { // (dy, x)
    const C k = C(0.79788456080286535588), c = C(0.044715);
    const C t = mTanh(k * (y + c * y * y * y));
    return x * (C(0.5) * (C(1) + t) +
                C(0.5) * y * (C(1) - t * t) * k * (C(1) + C(3) * c * y * y));
  }
  case kEwMax:
    return nanMax(x, y);
  case kEwMin:
    return nanMin(x, y);
  }
  return x;
#undef MP_EW_OF_X
}

/// The integer functions, on 64-bit values (narrower dtypes wrap at the
/// store, as the CPU's two's-complement arithmetic does). Data of every
/// integer dtype but u64 computes here (u8..u32 values are non-negative, so
/// signed and unsigned arithmetic agree); `bits` is the dtype's width (the
/// shifts).
__device__ inline int64_t intOp(int32_t op, int64_t x, int64_t y, int64_t a,
                                int64_t b, int bits) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  switch (op) {
  case kEwMod: // the sign of the divisor (numpy.mod)
  case kEwFmod: {
    if (y == 0 || y == -1)
      return 0;
    int64_t r = x % y;
    if (op == kEwMod && r != 0 && ((r < 0) != (y < 0)))
      r += y;
    return r;
  }
  case kEwPRelu:
    return x < 0 ? static_cast<int64_t>(u(x) * u(y)) : x;
  case kEwBitShiftLeft:
    return y >= bits ? 0 : static_cast<int64_t>(u(x) << y);
  case kEwBitShiftRight:
    return y >= bits ? 0 : static_cast<int64_t>(u(x) >> y);
  case kEwAbs:
    return x < 0 ? static_cast<int64_t>(0 - u(x)) : x;
  case kEwNeg:
    return static_cast<int64_t>(0 - u(x));
  case kEwRelu:
    return x > 0 ? x : 0;
  case kEwSign:
    return x > 0 ? 1 : (x < 0 ? -1 : 0);
  case kEwNot:
    return x == 0;
  case kEwClip1:
    return clipTo(x, a, b);
  case kEwAdd:
  case kEwSum:
    return static_cast<int64_t>(u(x) + u(y));
  case kEwSub:
    return static_cast<int64_t>(u(x) - u(y));
  case kEwMul:
    return static_cast<int64_t>(u(x) * u(y));
  case kEwDiv:
    if (y == 0)
      return 0;
    if (y == -1)
      return static_cast<int64_t>(0 - u(x));
    return x / y;
  case kEwMax:
    return x > y ? x : y;
  case kEwMin:
    return x < y ? x : y;
  case kEwAnd:
    return (x != 0) & (y != 0);
  case kEwOr:
    return (x != 0) | (y != 0);
  case kEwXor:
    return (x != 0) != (y != 0);
  // On the sign-extended values: the stored low bits are the dtype's.
  case kEwBitwiseAnd:
    return x & y;
  case kEwBitwiseOr:
    return x | y;
  case kEwBitwiseXor:
    return x ^ y;
  case kEwBitwiseNot:
    return ~x;
  }
  return x;
}

/// The integer functions on u64 data: unsigned order, division and
/// remainders; add, sub and mul wrap.
__device__ inline uint64_t uintOp(int32_t op, uint64_t x, uint64_t y,
                                  uint64_t a, uint64_t b, int bits) {
  switch (op) {
  case kEwClip1:
    return clipTo(x, a, b);
  case kEwAbs:
    return x;
  case kEwSign:
    return x > 0 ? 1 : 0;
  case kEwNot:
    return x == 0;
  case kEwAdd:
  case kEwSum:
    return x + y;
  case kEwSub:
    return x - y;
  case kEwMul:
    return x * y;
  case kEwDiv:
    return y == 0 ? 0 : x / y;
  case kEwMod:
  case kEwFmod:
    return y == 0 ? 0 : x % y;
  case kEwPRelu:
    return x;
  case kEwBitShiftLeft:
    return y >= static_cast<uint64_t>(bits) ? 0 : x << y;
  case kEwBitShiftRight:
    return y >= static_cast<uint64_t>(bits) ? 0 : x >> y;
  case kEwBitwiseAnd:
    return x & y;
  case kEwBitwiseOr:
    return x | y;
  case kEwBitwiseXor:
    return x ^ y;
  case kEwBitwiseNot:
    return ~x;
  case kEwMax:
    return x > y ? x : y;
  case kEwMin:
    return x < y ? x : y;
  }
  return x;
}

template <typename C>
__device__ inline C integerOp(int32_t op, C x, C y, C a, C b, int bits) {
  if constexpr (std::is_same_v<C, uint64_t>)
    return uintOp(op, x, y, a, b, bits);
  else
    return intOp(op, x, y, a, b, bits);
}

template <typename C> __device__ inline bool compareOp(int32_t op, C x, C y) {
  switch (op) {
  case kEwEqual:
    return x == y;
  case kEwLess:
    return x < y;
  case kEwGreater:
    return x > y;
  case kEwLessEqual:
    return x <= y;
  case kEwGreaterEqual:
    return x >= y;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// The element offsets of output element i in every input (i itself when
/// every input has y's shape).
__device__ inline void offsetsOf(const EwParams &p, int64_t i, int64_t *off) {
  if (p.contiguous) {
    for (int k = 0; k < p.numInputs; ++k)
      off[k] = i;
    return;
  }
  for (int k = 0; k < p.numInputs; ++k)
    off[k] = 0;
  int64_t rem = i;
  for (int d = p.loop.rank - 1; d >= 0; --d) {
    int64_t dim = p.loop.dims[d];
    int64_t idx = rem % dim;
    rem /= dim;
    for (int k = 0; k < p.numInputs; ++k)
      off[k] += idx * p.loop.strides[k][d];
  }
}

template <typename C> __global__ void ewKernel(EwParams p) {
  int64_t off[kMaxEwInputs];
  MP_GRID_LOOP(i, p.n) {
    offsetsOf(p, i, off);
    C x = loadAs<C>(p.in[0], p.inDtype[0], off[0]);
    if (p.op >= kEwEqual && p.op <= kEwGreaterEqual) {
      C y = loadAs<C>(p.in[1], p.inDtype[1], off[1]);
      static_cast<uint8_t *>(p.out)[i] = compareOp<C>(p.op, x, y);
      continue;
    }
    C r;
    if constexpr (std::is_integral_v<C>) {
      C a = static_cast<C>(p.alpha), b = static_cast<C>(p.beta);
      const int bits = 8 * p.elemSize;
      if (p.op == kEwClip) {
        C lo = loadAs<C>(p.in[1], p.inDtype[1], off[1]);
        C hi = loadAs<C>(p.in[2], p.inDtype[2], off[2]);
        C v = x < lo ? lo : x;
        r = v > hi ? hi : v;
      } else if (p.op == kEwSum || p.op == kEwMax || p.op == kEwMin) {
        r = x;
        for (int k = 1; k < p.numInputs; ++k)
          r = integerOp<C>(p.op, r, loadAs<C>(p.in[k], p.inDtype[k], off[k]), a,
                           b, bits);
      } else if (p.numInputs == 2) {
        r = integerOp<C>(p.op, x, loadAs<C>(p.in[1], p.inDtype[1], off[1]), a,
                         b, bits);
      } else {
        r = integerOp<C>(p.op, x, C(0), a, b, bits);
      }
    } else {
      C a = static_cast<C>(p.alpha), b = static_cast<C>(p.beta);
      if (p.op == kEwIsNan) {
        static_cast<uint8_t *>(p.out)[i] = x != x;
        continue;
      }
      if (p.op == kEwIsInf) {
        bool neg = p.alpha != 0, pos = p.beta != 0;
        static_cast<uint8_t *>(p.out)[i] =
            mIsInf(x) && ((pos && x > C(0)) || (neg && x < C(0)));
        continue;
      }
      if (p.op == kEwClip) {
        C lo = loadAs<C>(p.in[1], p.inDtype[1], off[1]);
        C hi = loadAs<C>(p.in[2], p.inDtype[2], off[2]);
        C v = x < lo ? lo : x;
        r = v > hi ? hi : v;
      } else if (p.op == kEwSum || p.op == kEwMean || p.op == kEwMax ||
                 p.op == kEwMin) {
        int32_t comb = p.op == kEwMean ? int32_t(kEwSum) : p.op;
        r = x;
        for (int k = 1; k < p.numInputs; ++k)
          r = floatOp<C>(comb, r, loadAs<C>(p.in[k], p.inDtype[k], off[k]), a,
                         b);
        if (p.op == kEwMean)
          r = r / static_cast<C>(p.numInputs);
      } else if (p.numInputs == 2) {
        r = floatOp<C>(p.op, x, loadAs<C>(p.in[1], p.inDtype[1], off[1]), a, b);
      } else {
        r = floatOp<C>(p.op, x, C(0), a, b);
      }
    }
    storeAs(p.out, p.outDtype, i, r);
  }
}

/// A fused program, one thread an element: the inputs loaded as f32, every
/// step's value in a register array (the program is uniform across the
/// warp: no divergence), y rounded once at the store.
__global__ void fusedEwKernel(FusedEwParams p) {
  int64_t off[kMaxEwInputs];
  float x[kMaxEwInputs], v[kMaxFusedSteps];
  const EwParams &io = p.io;
  MP_GRID_LOOP(i, io.n) {
    offsetsOf(io, i, off);
    for (int k = 0; k < io.numInputs; ++k)
      x[k] = loadAs<float>(io.in[k], io.inDtype[k], off[k]);
    for (int s = 0; s < p.numSteps; ++s) {
      const FusedStepParams &step = p.steps[s];
      auto arg = [&](int j) {
        int a = step.args[j];
        return a < kMaxEwInputs ? x[a] : v[a - kMaxEwInputs];
      };
      const float a = step.alpha, b = step.beta;
      float r = arg(0);
      if (step.op == kEwClip && step.numArgs == 3) {
        r = clipTo(r, arg(1), arg(2));
      } else if (step.op == kEwSum || step.op == kEwMean || step.op == kEwMax ||
                 step.op == kEwMin) {
        int32_t comb = step.op == kEwMean ? int32_t(kEwSum) : step.op;
        for (int j = 1; j < step.numArgs; ++j)
          r = floatOp<float>(comb, r, arg(j), a, b);
        if (step.op == kEwMean)
          r = r / static_cast<float>(step.numArgs);
      } else {
        r = floatOp<float>(step.op, r, step.numArgs == 2 ? arg(1) : 0.f, a, b);
      }
      v[s] = r;
    }
    storeAs(io.out, io.outDtype, i, v[p.numSteps - 1]);
  }
}

/// Lane j (of 2) of a 32-bit word of 16-bit dtype t, as float; and back,
/// rounded once to nearest even (loadF32 / storeF32's conversions).
__device__ inline float lane16(uint32_t word, int j, int32_t t) {
  auto bits = static_cast<unsigned short>(word >> (16 * j));
  return t == kF16 ? __half2float(__ushort_as_half(bits))
                   : __bfloat162float(__ushort_as_bfloat16(bits));
}
__device__ inline uint32_t bits16(float v, int32_t t) {
  return t == kF16 ? __half_as_ushort(__float2half_rn(v))
                   : __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

/// f(x, y) on the 4 words of a 16-byte vector: 8 16-bit or 4 f32 lanes.
template <int kElemBytes>
__device__ inline uint32_t vectorWord(const EwParams &p, uint32_t x, uint32_t y,
                                      float alpha, float beta) {
  if constexpr (kElemBytes == 4) {
    return __float_as_uint(floatOp<float>(p.op, __uint_as_float(x),
                                          __uint_as_float(y), alpha, beta));
  } else {
    int32_t t = p.outDtype;
    uint32_t lo = bits16(
        floatOp<float>(p.op, lane16(x, 0, t), lane16(y, 0, t), alpha, beta), t);
    uint32_t hi = bits16(
        floatOp<float>(p.op, lane16(x, 1, t), lane16(y, 1, t), alpha, beta), t);
    return lo | (hi << 16);
  }
}

/// The vectorised path of ewKernel<float>: unary and binary functions on
/// contiguous operands that all have y's dtype (f16, bf16 or f32), 16 bytes
/// per load and store (8 or 4 elements per thread and step). Each element
/// gets ewKernel's conversions and floatOp, so the results are its bits
/// (a unary function's y is 0, as there); the last n % kV elements take the
/// scalar path.
template <int kElemBytes> __global__ void ewVecKernel(EwParams p) {
  constexpr int kV = 16 / kElemBytes;
  const int64_t vectors = p.n / kV;
  const uint4 *a = static_cast<const uint4 *>(p.in[0]);
  const uint4 *b =
      p.numInputs == 2 ? static_cast<const uint4 *>(p.in[1]) : nullptr;
  uint4 *out = static_cast<uint4 *>(p.out);
  const float alpha = static_cast<float>(p.alpha);
  const float beta = static_cast<float>(p.beta);
  // Zero lanes for unary functions (bits of +0 in every dtype).
  const uint4 zero = make_uint4(0, 0, 0, 0);
  MP_GRID_LOOP(v, vectors) {
    uint4 x = a[v], y = b ? b[v] : zero, r;
    r.x = vectorWord<kElemBytes>(p, x.x, y.x, alpha, beta);
    r.y = vectorWord<kElemBytes>(p, x.y, y.y, alpha, beta);
    r.z = vectorWord<kElemBytes>(p, x.z, y.z, alpha, beta);
    r.w = vectorWord<kElemBytes>(p, x.w, y.w, alpha, beta);
    out[v] = r;
  }
  int64_t i = vectors * kV + static_cast<int64_t>(blockIdx.x) * blockDim.x +
              threadIdx.x;
  if (i < p.n) {
    int32_t t = p.outDtype;
    float x = loadF32(p.in[0], t, i);
    float y = b ? loadF32(p.in[1], t, i) : 0.0f;
    storeF32(p.out, t, i, floatOp<float>(p.op, x, y, alpha, beta));
  }
}

/// Identity (a broadcast copy) and where on raw elements of type E.
template <typename E> __global__ void rawKernel(EwParams p) {
  int64_t off[kMaxEwInputs];
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.n) {
    offsetsOf(p, i, off);
    if (p.op == kEwWhere) {
      bool c = static_cast<const uint8_t *>(p.in[0])[off[0]] != 0;
      out[i] = c ? static_cast<const E *>(p.in[1])[off[1]]
                 : static_cast<const E *>(p.in[2])[off[2]];
    } else {
      out[i] = static_cast<const E *>(p.in[0])[off[0]];
    }
  }
}

//===----------------------------------------------------------------------===//
// Cast: the CPU's convertValue rules (Val, loadVal, storeVal in
// DeviceMath.cuh)
//===----------------------------------------------------------------------===//

__global__ void castKernel(CastParams p) {
  MP_GRID_LOOP(i, p.n) {
    storeVal(p.out, p.outDtype, i, loadVal(p.in, p.inDtype, i));
  }
}

/// Casts from or to a narrow type (float8, float4, int4, int2), through
/// the exact double value as the CPU's narrowCast (NarrowTypes.h).
__global__ void narrowCastKernel(CastParams p) {
  MP_GRID_LOOP(i, p.n) {
    double value;
    if (narrow::isNarrow(p.inDtype)) {
      value = narrow::decodeNarrow(p.inDtype,
                                   static_cast<const uint8_t *>(p.in)[i]);
    } else {
      Val v = loadVal(p.in, p.inDtype, i);
      value = v.kind == 0   ? static_cast<double>(v.f)
              : v.kind == 1 ? v.d
              : v.kind == 2 ? static_cast<double>(v.s)
                            : static_cast<double>(v.u);
    }
    if (narrow::isNarrow(p.outDtype))
      static_cast<uint8_t *>(p.out)[i] =
          narrow::encodeNarrow(p.outDtype, value, p.saturate,
                               static_cast<narrow::RoundMode>(p.roundMode));
    else
      storeVal(p.out, p.outDtype, i, Val{1, 0.0f, value, 0, 0});
  }
}

/// The common float conversions without the generic switch.
template <typename From, typename To> __device__ inline To conv(From v);
template <> __device__ inline __half conv<float, __half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 conv<float, __nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ inline float conv<__half, float>(__half v) {
  return __half2float(v);
}
template <>
__device__ inline float conv<__nv_bfloat16, float>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename From, typename To>
__global__ void castFastKernel(const From *in, To *out, int64_t n) {
  MP_GRID_LOOP(i, n) { out[i] = conv<From, To>(in[i]); }
}

//===----------------------------------------------------------------------===//
// Gather copies: transposes, padding, cropping
//===----------------------------------------------------------------------===//

template <typename E> __global__ void gatherCopyKernel(GatherCopyParams p) {
  const E *in = static_cast<const E *>(p.in);
  E *out = static_cast<E *>(p.out);
  MP_GRID_LOOP(i, p.n) {
    int64_t rem = i, off = p.base;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t idx = rem % p.dims[d];
      rem /= p.dims[d];
      if (p.window) {
        int64_t xi = idx + p.start[d];
        inside = inside && xi >= 0 && xi < p.xDims[d];
        off += xi * p.xStrides[d];
      } else {
        off += idx * p.xStrides[d];
      }
    }
    if (p.scatter)
      out[off] = in[i];
    else
      out[i] = inside ? in[off] : E(0);
  }
}

//===----------------------------------------------------------------------===//
// Integer pow and shrink (elementwise): in f64 (pow: integerPow, the CPU's
// function, mp/Runtime/IntegerPow.h), the result converted with the cast
// rules (truncation toward zero, saturation)
//===----------------------------------------------------------------------===//

/// Integer pow and shrink: in f64 as the CPU computes them, the result
/// converted to the integer dtype with the cast rules.
__global__ void intInF64Kernel(EwParams p) {
  int64_t off[kMaxEwInputs];
  MP_GRID_LOOP(i, p.n) {
    offsetsOf(p, i, off);
    double x = loadF64(p.in[0], p.inDtype[0], off[0]);
    Val v{1, 0.0f, 0.0, 0, 0};
    if (p.op == kEwPow) {
      v.d = mp::rt::integerPow(x, loadF64(p.in[1], p.inDtype[1], off[1]));
    } else { // shrink: alpha = lambd, beta = bias
      v.d = x < -p.alpha ? x + p.beta : (x > p.alpha ? x - p.beta : 0.0);
    }
    storeVal(p.out, p.outDtype, i, v);
  }
}

} // namespace
} // namespace dev

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

using namespace dev;

/// Whether ewVecKernel computes `p`: contiguous unary or binary float
/// functions (not the comparisons, predicates, clip with bounds or the
/// variadic ones) on 16-byte aligned operands of y's 16-bit or f32 dtype.
static int vectorElementBytes(const EwParams &p) {
  if (!p.contiguous || p.compute != kComputeF32 || p.numInputs < 1 ||
      p.numInputs > 2)
    return 0;
  if (p.op == kEwIsNan || p.op == kEwIsInf || p.op == kEwNot ||
      (p.op >= kEwEqual && p.op <= kEwXor) || p.op >= kEwWhere)
    return 0;
  // max / min of one input is a copy in ewKernel, not floatOp(x, 0).
  if ((p.op == kEwMax || p.op == kEwMin) && p.numInputs != 2)
    return 0;
  int bytes = p.outDtype == kF32                            ? 4
              : (p.outDtype == kF16 || p.outDtype == kBF16) ? 2
                                                            : 0;
  if (!bytes || reinterpret_cast<uintptr_t>(p.out) % 16)
    return 0;
  for (int k = 0; k < p.numInputs; ++k)
    if (p.inDtype[k] != p.outDtype || reinterpret_cast<uintptr_t>(p.in[k]) % 16)
      return 0;
  return bytes;
}

cudaError_t launchElementwise(const EwParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  unsigned threads = 256, blocks = blocksFor(p.n, threads);
  if (int bytes = vectorElementBytes(p)) {
    // One thread per vector; at least one block for the tail.
    int64_t vectors = p.n / (16 / bytes);
    unsigned vecBlocks = blocksFor(std::max<int64_t>(vectors, 1), threads);
    if (bytes == 2)
      ewVecKernel<2><<<vecBlocks, threads, 0, stream>>>(p);
    else
      ewVecKernel<4><<<vecBlocks, threads, 0, stream>>>(p);
    return cudaGetLastError();
  }
  switch (p.compute) {
  case kComputeF32:
    ewKernel<float><<<blocks, threads, 0, stream>>>(p);
    break;
  case kComputeF64:
    ewKernel<double><<<blocks, threads, 0, stream>>>(p);
    break;
  case kComputeInt:
  case kComputeU64:
    if (p.op == kEwPow || p.op == kEwShrink)
      intInF64Kernel<<<blocks, threads, 0, stream>>>(p);
    else if (p.compute == kComputeU64)
      ewKernel<uint64_t><<<blocks, threads, 0, stream>>>(p);
    else
      ewKernel<int64_t><<<blocks, threads, 0, stream>>>(p);
    break;
  default:
    MP_LAUNCH_BY_ELEM(p.elemSize, rawKernel, blocks, threads, stream, p);
  }
  return cudaGetLastError();
}

cudaError_t launchFusedElementwise(const FusedEwParams &p,
                                   cudaStream_t stream) {
  if (p.io.n == 0)
    return cudaSuccess;
  unsigned threads = 256, blocks = blocksFor(p.io.n, threads);
  dev::fusedEwKernel<<<blocks, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchCast(const CastParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  unsigned threads = 256, blocks = blocksFor(p.n, threads);
  auto in = p.in;
  auto out = p.out;
  if (narrow::isNarrow(p.inDtype) || narrow::isNarrow(p.outDtype)) {
    if (p.inDtype == p.outDtype)
      return cudaMemcpyAsync(out, in, p.n, cudaMemcpyDeviceToDevice, stream);
    narrowCastKernel<<<blocks, threads, 0, stream>>>(p);
  } else if (p.inDtype == kF32 && p.outDtype == kF16)
    castFastKernel<<<blocks, threads, 0, stream>>>(
        static_cast<const float *>(in), static_cast<__half *>(out), p.n);
  else if (p.inDtype == kF32 && p.outDtype == kBF16)
    castFastKernel<<<blocks, threads, 0, stream>>>(
        static_cast<const float *>(in), static_cast<__nv_bfloat16 *>(out), p.n);
  else if (p.inDtype == kF16 && p.outDtype == kF32)
    castFastKernel<<<blocks, threads, 0, stream>>>(
        static_cast<const __half *>(in), static_cast<float *>(out), p.n);
  else if (p.inDtype == kBF16 && p.outDtype == kF32)
    castFastKernel<<<blocks, threads, 0, stream>>>(
        static_cast<const __nv_bfloat16 *>(in), static_cast<float *>(out), p.n);
  else if (p.inDtype == p.outDtype)
    return cudaMemcpyAsync(out, in, p.n * elemBytes(p.inDtype),
                           cudaMemcpyDeviceToDevice, stream);
  else
    castKernel<<<blocks, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t launchGatherCopy(const GatherCopyParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  unsigned threads = 256, blocks = blocksFor(p.n, threads);
  MP_LAUNCH_BY_ELEM(p.elemSize, gatherCopyKernel, blocks, threads, stream, p);
  return cudaGetLastError();
}

} // namespace mp::rt::cuda
