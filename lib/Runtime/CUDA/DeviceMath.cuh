//===- DeviceMath.cuh - float / double math of the kernels ----------------===//
//
// The CPU's formulas on the device, for float and double: the libm
// functions by name, std::max / std::min and the NaN-propagating max / min;
// and values of any dtype with the CPU's conversions (Val).
// Included by the .cu files of the CUDA backend's own kernels.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_DEVICEMATH_CUH
#define MP_LIB_RUNTIME_CUDA_DEVICEMATH_CUH

#include "DeviceUtil.cuh"

namespace mp::rt::cuda::dev {

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

//===----------------------------------------------------------------------===//
// Values of any dtype, converted by the CPU's convertValue rules (cast, and
// the reductions' stores)
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
  if (t == kF32 || t == kF16 || t == kBF16) {
    v.kind = 0;
    v.f = loadF32(p, t, i);
  } else if (t == kF64) {
    v.kind = 1;
    v.d = static_cast<const double *>(p)[i];
  } else if (t == kI8 || t == kI16 || t == kI32 || t == kI64) {
    v.kind = 2;
    v.s = loadI64(p, t, i);
  } else { // u8, u16, u32, u64, bool
    v.kind = 3;
    v.u = t == kU64 ? static_cast<const uint64_t *>(p)[i]
                    : static_cast<uint64_t>(loadI64(p, t, i));
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

} // namespace mp::rt::cuda::dev

#endif // MP_LIB_RUNTIME_CUDA_DEVICEMATH_CUH
