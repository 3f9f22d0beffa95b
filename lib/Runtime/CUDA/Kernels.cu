//===- Kernels.cu - pointwise, data movement, reduction, pooling ---------===//
//
// The CUDA backend's own kernels for kernel.elementwise, kernel.cast,
// transposes and window copies, kernel.reduce, cudnn.softmax, pooling and
// the matmul / convolution epilogue. Every index computation was decided on
// the host (CudaPlanning.cpp); these only walk it. One kernel template per
// compute type (f32, f64, 64-bit integers) with the function chosen at run
// time, so that nvcc compiles a handful of instantiations, not one per
// (function, dtype) pair.
//
//===----------------------------------------------------------------------===//
#include "DeviceUtil.cuh"

#include "mp/Runtime/IntegerPow.h"

#include <cmath>
#include <type_traits>

namespace mp::rt::cuda {
namespace dev {
namespace {

//===----------------------------------------------------------------------===//
// Math on float / double (the CPU's formulas)
//===----------------------------------------------------------------------===//

#define MP_MATH1(name, f32, f64)                                               \
  __device__ inline float name(float x) { return f32(x); }                     \
  __device__ inline double name(double x) { return f64(x); }
MP_MATH1(mExp, expf, exp)
MP_MATH1(mExpm1, expm1f, expm1)
MP_MATH1(mLog, logf, log)
MP_MATH1(mLog1p, log1pf, log1p)
MP_MATH1(mSqrt, sqrtf, sqrt)
MP_MATH1(mTanh, tanhf, tanh)
MP_MATH1(mErf, erff, erf)
MP_MATH1(mFloor, floorf, floor)
MP_MATH1(mCeil, ceilf, ceil)
MP_MATH1(mRint, rintf, rint)
MP_MATH1(mSin, sinf, sin)
MP_MATH1(mCos, cosf, cos)
MP_MATH1(mTan, tanf, tan)
MP_MATH1(mAsin, asinf, asin)
MP_MATH1(mAcos, acosf, acos)
MP_MATH1(mAtan, atanf, atan)
MP_MATH1(mSinh, sinhf, sinh)
MP_MATH1(mCosh, coshf, cosh)
MP_MATH1(mAsinh, asinhf, asinh)
MP_MATH1(mAcosh, acoshf, acosh)
MP_MATH1(mAtanh, atanhf, atanh)
MP_MATH1(mFabs, fabsf, fabs)
#undef MP_MATH1
__device__ inline float mPow(float x, float y) { return powf(x, y); }
__device__ inline double mPow(double x, double y) { return pow(x, y); }
__device__ inline float mFmod(float x, float y) { return fmodf(x, y); }
__device__ inline double mFmod(double x, double y) { return fmod(x, y); }
__device__ inline bool mIsInf(float x) { return isinf(x); }
__device__ inline bool mIsInf(double x) { return isinf(x); }

/// std::max / std::min (first argument on ties and NaN comparisons).
template <typename C> __device__ inline C sMax(C a, C b) {
  return a < b ? b : a;
}
template <typename C> __device__ inline C sMin(C a, C b) {
  return b < a ? b : a;
}
/// NaN-propagating max / min (numpy.maximum / numpy.minimum).
template <typename C> __device__ inline C nanMax(C x, C y) {
  return ((x > y) | (x != x)) ? x : y;
}
template <typename C> __device__ inline C nanMin(C x, C y) {
  return ((x < y) | (x != x)) ? x : y;
}

/// A unary or binary float function (C = float or double), as the CPU's Op
/// structs (Elementwise.cpp) compute it.
template <typename C>
__device__ inline C floatOp(int32_t op, C x, C y, C a, C b) {
  switch (op) {
  case kEwIdentity:
    return x;
  case kEwAbs:
    return mFabs(x);
  case kEwNeg:
    return -x;
  case kEwExp:
    return mExp(x);
  case kEwLog:
    return mLog(x);
  case kEwSqrt:
    return mSqrt(x);
  case kEwReciprocal:
    return C(1) / x;
  case kEwRelu:
    return x > C(0) ? x : C(0);
  case kEwSigmoid:
    return C(1) / (C(1) + mExp(-x));
  case kEwTanh:
    return mTanh(x);
  case kEwErf:
    return mErf(x);
  case kEwFloor:
    return mFloor(x);
  case kEwCeil:
    return mCeil(x);
  case kEwRound:
    return mRint(x);
  case kEwSign:
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
  case kEwSin:
    return mSin(x);
  case kEwCos:
    return mCos(x);
  case kEwTan:
    return mTan(x);
  case kEwAsin:
    return mAsin(x);
  case kEwAcos:
    return mAcos(x);
  case kEwAtan:
    return mAtan(x);
  case kEwSinh:
    return mSinh(x);
  case kEwCosh:
    return mCosh(x);
  case kEwAsinh:
    return mAsinh(x);
  case kEwAcosh:
    return mAcosh(x);
  case kEwAtanh:
    return mAtanh(x);
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
  case kEwClip1: {
    C v = x < a ? a : x;
    return v > b ? b : v;
  }
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
  case kEwMax:
    return nanMax(x, y);
  case kEwMin:
    return nanMin(x, y);
  }
  return x;
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
  case kEwShl:
    return y >= bits ? 0 : static_cast<int64_t>(u(x) << y);
  case kEwShr:
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
  case kEwClip1: {
    int64_t v = x < a ? a : x;
    return v > b ? b : v;
  }
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
  }
  return x;
}

/// The integer functions on u64 data: unsigned order, division and
/// remainders; add, sub and mul wrap.
__device__ inline uint64_t uintOp(int32_t op, uint64_t x, uint64_t y,
                                  uint64_t a, uint64_t b, int bits) {
  switch (op) {
  case kEwAbs:
    return x;
  case kEwSign:
    return x > 0 ? 1 : 0;
  case kEwNot:
    return x == 0;
  case kEwClip1: {
    uint64_t v = x < a ? a : x;
    return v > b ? b : v;
  }
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
  case kEwShl:
    return y >= static_cast<uint64_t>(bits) ? 0 : x << y;
  case kEwShr:
    return y >= static_cast<uint64_t>(bits) ? 0 : x >> y;
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

/// The element offsets of output element i in every input.
__device__ inline void offsetsOf(const EwParams &p, int64_t i, int64_t *off) {
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
    if (p.contiguous) {
      for (int k = 0; k < p.numInputs; ++k)
        off[k] = i;
    } else {
      offsetsOf(p, i, off);
    }
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
      if (p.op == kEwClip3) {
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
      if (p.op == kEwClip3) {
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
    if (p.contiguous) {
      for (int k = 0; k < p.numInputs; ++k)
        off[k] = i;
    } else {
      offsetsOf(p, i, off);
    }
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
// Cast: the CPU's convertValue rules
//===----------------------------------------------------------------------===//

/// A source value: a float (f32, f16, bf16 sources), a double, a signed or
/// an unsigned integer (bool reads as the unsigned 0 / 1).
struct Val {
  int kind; // 0 float, 1 double, 2 signed, 3 unsigned
  float f;
  double d;
  int64_t s;
  uint64_t u;
};

__device__ inline Val loadVal(const void *p, int32_t t, int64_t i) {
  Val v{0, 0.0f, 0.0, 0, 0};
  switch (t) {
  case kF32:
  case kF16:
  case kBF16:
    v.kind = 0;
    v.f = loadF32(p, t, i);
    break;
  case kF64:
    v.kind = 1;
    v.d = static_cast<const double *>(p)[i];
    break;
  case kI8:
  case kI16:
  case kI32:
  case kI64:
    v.kind = 2;
    v.s = loadI64(p, t, i);
    break;
  case kU64:
    v.kind = 3;
    v.u = static_cast<const uint64_t *>(p)[i];
    break;
  default: // u8, u16, u32, bool
    v.kind = 3;
    v.u = static_cast<uint64_t>(loadI64(p, t, i));
    break;
  }
  return v;
}

/// Float -> integer: truncation toward zero, NaN 0, saturation at the
/// range (lo, hiExclusive are exact in double).
__device__ inline int64_t satSigned(double v, double lo, double hiEx,
                                    int64_t lowest, int64_t highest) {
  if (!(v == v))
    return 0;
  if (v <= lo)
    return lowest;
  if (v >= hiEx)
    return highest;
  return static_cast<int64_t>(v);
}
__device__ inline uint64_t satUnsigned(double v, double hiEx,
                                       uint64_t highest) {
  if (!(v == v) || v <= 0.0)
    return 0;
  if (v >= hiEx)
    return highest;
  return static_cast<uint64_t>(v);
}

__device__ inline void storeVal(void *p, int32_t t, int64_t i, const Val &v) {
  bool isFloatSrc = v.kind <= 1;
  double asD = v.kind == 0   ? static_cast<double>(v.f)
               : v.kind == 1 ? v.d
               : v.kind == 2 ? static_cast<double>(v.s)
                             : static_cast<double>(v.u);
  switch (t) {
  case kBool: {
    bool nz = v.kind == 0   ? v.f != 0.0f
              : v.kind == 1 ? v.d != 0.0
              : v.kind == 2 ? v.s != 0
                            : v.u != 0;
    static_cast<uint8_t *>(p)[i] = nz;
    return;
  }
  case kF16:
    static_cast<__half *>(p)[i] =
        v.kind == 0 ? __float2half_rn(v.f) : __double2half(asD);
    return;
  case kBF16:
    static_cast<__nv_bfloat16 *>(p)[i] =
        v.kind == 0 ? __float2bfloat16_rn(v.f) : __double2bfloat16(asD);
    return;
  case kF32:
    static_cast<float *>(p)[i] = v.kind == 0   ? v.f
                                 : v.kind == 1 ? static_cast<float>(v.d)
                                 : v.kind == 2 ? static_cast<float>(v.s)
                                               : static_cast<float>(v.u);
    return;
  case kF64:
    static_cast<double *>(p)[i] = asD;
    return;
  default:
    break;
  }
  // Integer targets.
  if (isFloatSrc) {
    switch (t) {
    case kI8:
      static_cast<int8_t *>(p)[i] =
          static_cast<int8_t>(satSigned(asD, -128.0, 128.0, -128, 127));
      return;
    case kI16:
      static_cast<int16_t *>(p)[i] = static_cast<int16_t>(
          satSigned(asD, -32768.0, 32768.0, -32768, 32767));
      return;
    case kI32:
      static_cast<int32_t *>(p)[i] = static_cast<int32_t>(
          satSigned(asD, -2147483648.0, 2147483648.0, INT32_MIN, INT32_MAX));
      return;
    case kI64:
      static_cast<int64_t *>(p)[i] =
          satSigned(asD, -9223372036854775808.0, 9223372036854775808.0,
                    INT64_MIN, INT64_MAX);
      return;
    case kU8:
      static_cast<uint8_t *>(p)[i] =
          static_cast<uint8_t>(satUnsigned(asD, 256.0, 255));
      return;
    case kU16:
      static_cast<uint16_t *>(p)[i] =
          static_cast<uint16_t>(satUnsigned(asD, 65536.0, 65535));
      return;
    case kU32:
      static_cast<uint32_t *>(p)[i] =
          static_cast<uint32_t>(satUnsigned(asD, 4294967296.0, UINT32_MAX));
      return;
    case kU64:
      static_cast<uint64_t *>(p)[i] =
          satUnsigned(asD, 18446744073709551616.0, UINT64_MAX);
      return;
    }
    return;
  }
  int64_t bits = v.kind == 2 ? v.s : static_cast<int64_t>(v.u);
  storeI64(p, t, i, bits);
}

__global__ void castKernel(CastParams p) {
  MP_GRID_LOOP(i, p.n) {
    storeVal(p.out, p.outDtype, i, loadVal(p.in, p.inDtype, i));
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
    if (p.contiguous) {
      off[0] = off[1] = i;
    } else {
      offsetsOf(p, i, off);
    }
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

/// One thread per (outer, inner) slice.
template <typename C> __global__ void softmaxThreadKernel(SoftmaxParams p) {
  MP_GRID_LOOP(s, p.outer * p.inner) {
    int64_t o = s / p.inner, j = s % p.inner;
    int64_t base = o * p.len * p.inner + j;
    C mx = -INFINITY;
    for (int64_t l = 0; l < p.len; ++l) {
      C v = loadC<C>(p.in, p.dtype, base + l * p.inner);
      mx = v > mx ? v : mx;
    }
    if (mx == C(-INFINITY))
      mx = C(0);
    double sum = 0;
    for (int64_t l = 0; l < p.len; ++l)
      sum += static_cast<double>(
          mExp(loadC<C>(p.in, p.dtype, base + l * p.inner) - mx));
    C factor = p.log ? static_cast<C>(log(sum)) : static_cast<C>(1.0 / sum);
    for (int64_t l = 0; l < p.len; ++l) {
      int64_t i = base + l * p.inner;
      C v = loadC<C>(p.in, p.dtype, i) - mx;
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
      C v = loadC<C>(p.in, p.dtype, base + l);
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
      sum += static_cast<double>(mExp(loadC<C>(p.in, p.dtype, base + l) - mx));
    sum = blockSum(sum, shared);
    C factor = p.log ? static_cast<C>(log(sum)) : static_cast<C>(1.0 / sum);
    for (int64_t l = threadIdx.x; l < p.len; l += blockDim.x) {
      C v = loadC<C>(p.in, p.dtype, base + l) - mx;
      storeAs(p.out, p.dtype, base + l, p.log ? v - factor : mExp(v) * factor);
    }
    __syncthreads();
  }
}

//===----------------------------------------------------------------------===//
// The matmul / convolution epilogue
//===----------------------------------------------------------------------===//

template <typename C> __global__ void epilogueKernel(EpilogueParams p) {
  int64_t n = p.geom.outer * p.geom.c * p.geom.inner;
  MP_GRID_LOOP(i, n) {
    C v = loadAs<C>(p.acc, p.accDtype, i);
    if (p.biasDtype)
      v = v + loadAs<C>(p.bias, p.biasDtype, (i / p.geom.inner) % p.geom.c);
    if (p.act == kActRelu)
      v = v > C(0) ? v : C(0);
    else if (p.act == kActGelu)
      v = C(0.5) * v * (C(1) + mErf(v * C(0.70710678118654752)));
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
    switch (p.elemSize) {
    case 1:
      rawKernel<uint8_t><<<blocks, threads, 0, stream>>>(p);
      break;
    case 2:
      rawKernel<uint16_t><<<blocks, threads, 0, stream>>>(p);
      break;
    case 4:
      rawKernel<uint32_t><<<blocks, threads, 0, stream>>>(p);
      break;
    default:
      rawKernel<uint64_t><<<blocks, threads, 0, stream>>>(p);
      break;
    }
  }
  return cudaGetLastError();
}

cudaError_t launchCast(const CastParams &p, cudaStream_t stream) {
  if (p.n == 0)
    return cudaSuccess;
  unsigned threads = 256, blocks = blocksFor(p.n, threads);
  auto in = p.in;
  auto out = p.out;
  if (p.inDtype == kF32 && p.outDtype == kF16)
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
  switch (p.elemSize) {
  case 1:
    gatherCopyKernel<uint8_t><<<blocks, threads, 0, stream>>>(p);
    break;
  case 2:
    gatherCopyKernel<uint16_t><<<blocks, threads, 0, stream>>>(p);
    break;
  case 4:
    gatherCopyKernel<uint32_t><<<blocks, threads, 0, stream>>>(p);
    break;
  default:
    gatherCopyKernel<uint64_t><<<blocks, threads, 0, stream>>>(p);
    break;
  }
  return cudaGetLastError();
}

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
