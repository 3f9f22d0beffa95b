//===- Elementwise.cpp - kernel.elementwise on the CPU --------------------===//
//
// How it runs:
//  * The inputs are broadcast to y's shape by strides (0 along broadcast
//    dims); adjacent dims that every input walks alike are merged, so that
//    same-shape operands become one contiguous block and [M, N] + [N] becomes
//    M blocks of N. Each input's stride along the innermost (block) dim is 0
//    or 1.
//  * One typed block function is chosen per call (fn x dtype); it runs each
//    block in chunks: an input whose storage is not its compute type (f16,
//    bf16 -> f32) is widened into a stack buffer (the bulk F16C conversions),
//    an f32/f64/integer input is used in place; the function loop is
//    specialized for contiguous and scalar (stride 0) operands so that the
//    compiler vectorizes it; 16-bit results are rounded once at the store.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/VectorMath.h"
#include "mp/Runtime/FusedProgram.h"
#include "mp/Runtime/IntegerPow.h"

#include "ElementwiseConvert.h"
#include "KernelUtil.h"
#include "Parallel.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

namespace mp::rt::cpu {

using namespace detail;

namespace {

//===----------------------------------------------------------------------===//
// The functions, on compute types (float, double, integers, Bool8 storage
// as uint8_t 0/1)
//===----------------------------------------------------------------------===//

/// Resolved parameters of one call.
struct Ctx {
  double alpha = 0, beta = 0;
  size_t numInputs = 0;
};

template <typename C> constexpr bool kIsInt = std::is_integral_v<C>;

/// The unsigned type integer arithmetic wraps in (no signed overflow, no
/// promotion of narrow types to int before a multiplication).
template <typename C>
using WrapT =
    std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;
template <typename C> C wrap(WrapT<C> v) { return static_cast<C>(v); }

/// erf for f32 without a libm call, so that loops over it vectorize (libm's
/// erff is a scalar call: Gelu over BERT's activations spent most of its
/// time there). A rational approximation on [-4, 4] (erf is +-1 to f32
/// precision beyond), accurate to a few f32 ulps; f64 uses std::erf.
inline float erfF32(float x) {
  x = x < -4.0f ? -4.0f : x; // values, not std::min's references
  x = x > 4.0f ? 4.0f : x;
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}
inline float erfOf(float x) { return erfF32(x); }
inline double erfOf(double x) { return std::erf(x); }

#define MP_UNARY(Name, expr)                                                   \
  template <typename C> struct Name {                                          \
    explicit Name(const Ctx &) {}                                              \
    C operator()(C x) const { return expr; }                                   \
  };
/// With parameters a = alpha, b = beta in the compute type.
#define MP_UNARY_P(Name, expr)                                                 \
  template <typename C> struct Name {                                          \
    C a, b;                                                                    \
    explicit Name(const Ctx &c)                                                \
        : a(convertValue<C>(c.alpha)), b(convertValue<C>(c.beta)) {}           \
    C operator()(C x) const { return expr; }                                   \
  };
#define MP_BINARY(Name, expr)                                                  \
  template <typename C> struct Name {                                          \
    explicit Name(const Ctx &) {}                                              \
    C operator()(C x, C y) const { return expr; }                              \
  };

// Unary, floats (C is float or double; std:: picks the overload).
MP_UNARY(OpExp, std::exp(x))
MP_UNARY(OpLog, std::log(x))
MP_UNARY(OpSqrt, std::sqrt(x))
MP_UNARY(OpReciprocal, C(1) / x)
MP_UNARY(OpSigmoid, C(1) / (C(1) + std::exp(-x)))
MP_UNARY(OpTanh, std::tanh(x))
MP_UNARY(OpErf, erfOf(x))
MP_UNARY(OpFloor, std::floor(x))
MP_UNARY(OpCeil, std::ceil(x))
MP_UNARY(OpRound, std::nearbyint(x)) // the default mode: half to even
MP_UNARY(OpSin, std::sin(x))
MP_UNARY(OpCos, std::cos(x))
MP_UNARY(OpTan, std::tan(x))
MP_UNARY(OpAsin, std::asin(x))
MP_UNARY(OpAcos, std::acos(x))
MP_UNARY(OpAtan, std::atan(x))
MP_UNARY(OpSinh, std::sinh(x))
MP_UNARY(OpCosh, std::cosh(x))
MP_UNARY(OpAsinh, std::asinh(x))
MP_UNARY(OpAcosh, std::acosh(x))
MP_UNARY(OpAtanh, std::atanh(x))
// log(1 + exp(x)) without overflow for large x.
MP_UNARY(OpSoftplus,
         x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
MP_UNARY(OpSoftsign, x / (C(1) + std::fabs(x)))
MP_UNARY(OpHardSwish,
         x *std::max(C(0), std::min(C(1), x *C(1.0 / 6.0) + C(0.5))))
MP_UNARY(OpGelu, C(0.5) * x * (C(1) + erfOf(x * C(0.70710678118654752440))))
MP_UNARY(OpGeluTanh, C(0.5) * x *
                         (C(1) + std::tanh(C(0.79788456080286535588) *
                                           (x + C(0.044715) * x * x * x))))
MP_UNARY_P(OpLeakyRelu, x < C(0) ? a * x : x)
MP_UNARY_P(OpElu, x < C(0) ? a * std::expm1(x) : x)
MP_UNARY_P(OpCelu, std::max(C(0), x) + std::min(C(0), a *std::expm1(x / a)))
MP_UNARY_P(OpSelu, x > C(0) ? b * x : b * (a * std::exp(x) - a))
MP_UNARY_P(OpHardSigmoid, std::max(C(0), std::min(C(1), a *x + b)))
MP_UNARY_P(OpThresholdedRelu, x > a ? x : C(0))

// Unary, floats and integers.
template <typename C> struct OpIdentity {
  explicit OpIdentity(const Ctx &) {}
  C operator()(C x) const { return x; }
};
template <typename C> struct OpAbs {
  explicit OpAbs(const Ctx &) {}
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (kIsInt<C>)
      return x < 0 ? wrap<C>(WrapT<C>(0) - WrapT<C>(x)) : x;
    else
      return std::fabs(x);
  }
};
template <typename C> struct OpNeg {
  explicit OpNeg(const Ctx &) {}
  C operator()(C x) const {
    if constexpr (kIsInt<C>)
      return wrap<C>(WrapT<C>(0) - WrapT<C>(x));
    else
      return -x;
  }
};
MP_UNARY(OpRelu, x > C(0) ? x : C(0))
// NaN stays NaN (numpy.sign).
MP_UNARY(OpSign, x > C(0) ? C(1) : (x < C(0) ? C(-1) : x))
template <typename C> struct OpShrink {
  double lambd, bias;
  explicit OpShrink(const Ctx &c) : lambd(c.alpha), bias(c.beta) {}
  C operator()(C x) const {
    if constexpr (kIsInt<C>) { // exact in f64 for the sizes that matter
      double v = static_cast<double>(x);
      return v < -lambd ? convertValue<C>(v + bias)
                        : (v > lambd ? convertValue<C>(v - bias) : C(0));
    } else {
      C l = C(lambd), b = C(bias);
      return x < -l ? x + b : (x > l ? x - b : C(0));
    }
  }
};
template <typename C> struct OpClip1 { // (x) with alpha = min, beta = max
  C lo, hi;
  explicit OpClip1(const Ctx &c)
      : lo(convertValue<C>(c.alpha)), hi(convertValue<C>(c.beta)) {}
  C operator()(C x) const {
    C v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
};

// Unary with a bool result.
template <typename C> struct OpIsNan {
  explicit OpIsNan(const Ctx &) {}
  uint8_t operator()(C x) const { return x != x; }
};
template <typename C> struct OpIsInf {
  bool neg, pos;
  explicit OpIsInf(const Ctx &c) : neg(c.alpha != 0), pos(c.beta != 0) {}
  uint8_t operator()(C x) const {
    return (pos && x == std::numeric_limits<C>::infinity()) ||
           (neg && x == -std::numeric_limits<C>::infinity());
  }
};
MP_UNARY(OpNot, C(x == 0))
MP_UNARY(OpBitNot, C(~x))

// Binary, floats and integers.
template <typename C> struct OpAdd {
  explicit OpAdd(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>)
      return wrap<C>(WrapT<C>(x) + WrapT<C>(y));
    else
      return x + y;
  }
};
template <typename C> struct OpSub {
  explicit OpSub(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>)
      return wrap<C>(WrapT<C>(x) - WrapT<C>(y));
    else
      return x - y;
  }
};
template <typename C> struct OpMul {
  explicit OpMul(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>)
      return wrap<C>(WrapT<C>(x) * WrapT<C>(y));
    else
      return x * y;
  }
};
template <typename C> struct OpDiv {
  explicit OpDiv(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>) {
      // x / 0 gives 0 and MIN / -1 wraps, where C++ (and the CPU) would trap.
      if (y == 0)
        return C(0);
      if constexpr (std::is_signed_v<C>)
        if (y == C(-1))
          return wrap<C>(WrapT<C>(0) - WrapT<C>(x));
      return C(x / y);
    } else {
      return x / y;
    }
  }
};
/// The remainder with the sign of the divisor (Python, numpy.mod).
template <typename C> struct OpMod {
  explicit OpMod(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>) {
      if (y == 0)
        return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1))
          return C(0);
        C r = C(x % y);
        return (r != 0 && ((r < 0) != (y < 0))) ? C(r + y) : r;
      } else {
        return C(x % y);
      }
    } else {
      C r = std::fmod(x, y);
      return (r != C(0) && ((r < C(0)) != (y < C(0)))) ? r + y : r;
    }
  }
};
/// The remainder with the sign of the dividend (C fmod, C++ %).
template <typename C> struct OpFmod {
  explicit OpFmod(const Ctx &) {}
  C operator()(C x, C y) const {
    if constexpr (kIsInt<C>) {
      if (y == 0)
        return C(0);
      if constexpr (std::is_signed_v<C>)
        if (y == C(-1))
          return C(0);
      return C(x % y);
    } else {
      return std::fmod(x, y);
    }
  }
};
template <typename C> struct OpPRelu {
  explicit OpPRelu(const Ctx &) {}
  C operator()(C x, C slope) const {
    if constexpr (kIsInt<C>)
      return x < C(0) ? wrap<C>(WrapT<C>(x) * WrapT<C>(slope)) : x;
    else
      return x < C(0) ? slope * x : x;
  }
};
/// ReLU's gradient (torch's threshold_backward): dy where x > 0, else 0
/// (NaN x: 0).
template <typename C> struct OpReluGrad {
  explicit OpReluGrad(const Ctx &) {}
  C operator()(C dy, C x) const { return x > C(0) ? dy : C(0); }
};
/// GELU's gradients (dy, x), as the matmul epilogues compute them
/// (KernelUtil.h).
MP_BINARY(OpGeluGrad, geluGradient(x, y))
MP_BINARY(OpGeluTanhGrad, geluTanhGradient(x, y))
/// NaN-propagating, as numpy.maximum / numpy.minimum (`|`: no branch).
MP_BINARY(OpMax, ((x > y) | (x != x)) ? x : y)
MP_BINARY(OpMin, ((x < y) | (x != x)) ? x : y)
/// C is the base's compute type (f32, f64).
MP_BINARY(OpPow, std::pow(x, y))
/// An integer base, in f64: the function the GPU calls too.
MP_BINARY(OpIntegerPow, integerPow(x, y))
MP_BINARY(OpShl, y >= C(sizeof(C) * 8) ? C(0) : C(x << y))
MP_BINARY(OpShr, y >= C(sizeof(C) * 8) ? C(0) : C(x >> y))
MP_BINARY(OpBitAnd, C(x &y))
MP_BINARY(OpBitOr, C(x | y))
MP_BINARY(OpBitXor, C(x ^ y))
MP_BINARY(OpAnd, C((x != 0) & (y != 0)))
MP_BINARY(OpOr, C((x != 0) | (y != 0)))
MP_BINARY(OpXor, C((x != 0) != (y != 0)))

// Comparisons: a bool result.
#define MP_COMPARE(Name, op)                                                   \
  template <typename C> struct Name {                                          \
    explicit Name(const Ctx &) {}                                              \
    uint8_t operator()(C x, C y) const { return x op y; }                      \
  };
MP_COMPARE(OpEqual, ==)
MP_COMPARE(OpLess, <)
MP_COMPARE(OpGreater, >)
MP_COMPARE(OpLessEqual, <=)
MP_COMPARE(OpGreaterEqual, >=)

#undef MP_UNARY
#undef MP_UNARY_P
#undef MP_BINARY
#undef MP_COMPARE

//===----------------------------------------------------------------------===//
// Block functions
//===----------------------------------------------------------------------===//

/// Runs n elements of y: in[k] points at input k's first element of the
/// block, stride[k] (0 or 1) is its step in elements.
using BlockFn = void (*)(int64_t n, const char *const *in,
                         const int64_t *stride, char *out, const Ctx &ctx);

constexpr int64_t kChunk = 512;
/// The elements a fused program's block covers where rows of a per-channel
/// operand repeat (runFusedRange).
constexpr int64_t kRowBlock = 8 * kChunk;

/// The compute type of a storage type (Bool8 computes as uint8_t 0/1).
template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <> struct ComputeOf<Bool8> { using type = uint8_t; };

/// m elements of an input from p (storage S, stride 0 or 1) as C: in place
/// when S is C, else widened into buf. cstride receives the step.
template <typename S, typename C>
const C *loadChunk(const char *p, int64_t stride, int64_t m, C *buf,
                   int64_t &cstride) {
  const S *s = reinterpret_cast<const S *>(p);
  cstride = stride;
  if constexpr (std::is_same_v<S, C>) {
    return s;
  } else if constexpr (std::is_same_v<S, Bool8>) {
    static_assert(sizeof(Bool8) == 1 && std::is_same_v<C, uint8_t>);
    // Any non-zero byte is true.
    for (int64_t i = 0; i < (stride ? m : 1); ++i)
      buf[i] = s[i].v != 0;
    return buf;
  } else {
    if (stride == 0) {
      buf[0] = convertValue<C>(s[0]);
    } else if constexpr (std::is_same_v<S, Half> && std::is_same_v<C, float>) {
      convertF16ToF32(reinterpret_cast<const uint16_t *>(s), buf,
                      static_cast<size_t>(m));
    } else if constexpr (std::is_same_v<S, BFloat16> &&
                         std::is_same_v<C, float>) {
      convertBF16ToF32(reinterpret_cast<const uint16_t *>(s), buf,
                       static_cast<size_t>(m));
    } else {
      for (int64_t i = 0; i < m; ++i)
        buf[i] = convertValue<C>(s[i]);
    }
    return buf;
  }
}

/// m results (type R) stored as SO at out (when SO is not R).
template <typename R, typename SO>
void storeChunk(const R *buf, int64_t m, char *out) {
  SO *o = reinterpret_cast<SO *>(out);
  if constexpr (std::is_same_v<SO, Half> && std::is_same_v<R, float>)
    convertF32ToF16(buf, reinterpret_cast<uint16_t *>(o),
                    static_cast<size_t>(m));
  else if constexpr (std::is_same_v<SO, BFloat16> && std::is_same_v<R, float>)
    convertF32ToBF16(buf, reinterpret_cast<uint16_t *>(o),
                     static_cast<size_t>(m));
  else
    for (int64_t i = 0; i < m; ++i)
      o[i] = convertValue<SO>(buf[i]);
}

/// Where a chunk's results go: straight into y when its storage is R.
template <typename R, typename SO>
R *resultPtr(char *out, int64_t off, R *buf) {
  if constexpr (std::is_same_v<R, SO>)
    return reinterpret_cast<R *>(out) + off;
  else
    return buf;
}

template <typename Op, typename S, typename SO>
void unaryBlock(int64_t n, const char *const *in, const int64_t *stride,
                char *out, const Ctx &ctx) {
  using C = typename ComputeOf<S>::type;
  using R = decltype(std::declval<Op>()(C{}));
  const Op op(ctx);
  alignas(64) C ibuf[kChunk];
  alignas(64) R obuf[kChunk];
  for (int64_t off = 0; off < n; off += kChunk) {
    int64_t m = std::min(kChunk, n - off), sa;
    const C *a = loadChunk<S, C>(in[0] + off * stride[0] * int64_t(sizeof(S)),
                                 stride[0], m, ibuf, sa);
    R *o = resultPtr<R, SO>(out, off, obuf);
    if (sa)
      for (int64_t i = 0; i < m; ++i)
        o[i] = op(a[i]);
    else
      std::fill(o, o + m, op(a[0]));
    if constexpr (!std::is_same_v<R, SO>)
      storeChunk<R, SO>(obuf, m, out + off * int64_t(sizeof(SO)));
  }
}

/// Inputs of storage SA and SB, both computed as C.
template <typename Op, typename C, typename SA, typename SB, typename SO>
void binaryBlock(int64_t n, const char *const *in, const int64_t *stride,
                 char *out, const Ctx &ctx) {
  using R = decltype(std::declval<Op>()(C{}, C{}));
  const Op op(ctx);
  alignas(64) C abuf[kChunk], bbuf[kChunk];
  alignas(64) R obuf[kChunk];
  for (int64_t off = 0; off < n; off += kChunk) {
    int64_t m = std::min(kChunk, n - off), sa, sb;
    const C *a = loadChunk<SA, C>(in[0] + off * stride[0] * int64_t(sizeof(SA)),
                                  stride[0], m, abuf, sa);
    const C *b = loadChunk<SB, C>(in[1] + off * stride[1] * int64_t(sizeof(SB)),
                                  stride[1], m, bbuf, sb);
    R *o = resultPtr<R, SO>(out, off, obuf);
    if (sa && sb) {
      for (int64_t i = 0; i < m; ++i)
        o[i] = op(a[i], b[i]);
    } else if (sa) {
      const C bv = b[0];
      for (int64_t i = 0; i < m; ++i)
        o[i] = op(a[i], bv);
    } else if (sb) {
      const C av = a[0];
      for (int64_t i = 0; i < m; ++i)
        o[i] = op(av, b[i]);
    } else {
      std::fill(o, o + m, op(a[0], b[0]));
    }
    if constexpr (!std::is_same_v<R, SO>)
      storeChunk<R, SO>(obuf, m, out + off * int64_t(sizeof(SO)));
  }
}

/// Clip(x, min, max) with tensors: min(max(x, lo), hi), so that lo > hi
/// gives hi (ONNX) and a NaN x stays NaN.
template <typename S>
void clipBlock(int64_t n, const char *const *in, const int64_t *stride,
               char *out, const Ctx &) {
  using C = typename ComputeOf<S>::type;
  alignas(64) C xbuf[kChunk], lbuf[kChunk], hbuf[kChunk], obuf[kChunk];
  for (int64_t off = 0; off < n; off += kChunk) {
    int64_t m = std::min(kChunk, n - off), sx, sl, sh;
    const int64_t es = sizeof(S);
    const C *x =
        loadChunk<S, C>(in[0] + off * stride[0] * es, stride[0], m, xbuf, sx);
    const C *lo =
        loadChunk<S, C>(in[1] + off * stride[1] * es, stride[1], m, lbuf, sl);
    const C *hi =
        loadChunk<S, C>(in[2] + off * stride[2] * es, stride[2], m, hbuf, sh);
    C *o = resultPtr<C, S>(out, off, obuf);
    if (sx && !sl && !sh) {
      const C l = lo[0], h = hi[0];
      for (int64_t i = 0; i < m; ++i) {
        C v = x[i] < l ? l : x[i];
        o[i] = v > h ? h : v;
      }
    } else {
      for (int64_t i = 0; i < m; ++i) {
        C l = lo[i * sl], h = hi[i * sh], xv = x[i * sx];
        C v = xv < l ? l : xv;
        o[i] = v > h ? h : v;
      }
    }
    if constexpr (!std::is_same_v<C, S>)
      storeChunk<C, S>(obuf, m, out + off * es);
  }
}

/// Where(condition, x, y) on raw elements of E's size (no arithmetic).
template <typename E>
void whereBlock(int64_t n, const char *const *in, const int64_t *stride,
                char *out, const Ctx &) {
  const uint8_t *c = reinterpret_cast<const uint8_t *>(in[0]);
  const E *x = reinterpret_cast<const E *>(in[1]);
  const E *y = reinterpret_cast<const E *>(in[2]);
  E *o = reinterpret_cast<E *>(out);
  int64_t sc = stride[0], sx = stride[1], sy = stride[2];
  if (sc && sx && sy) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = c[i] ? x[i] : y[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
}

/// Sum / Mean / Max / Min of ctx.numInputs inputs, accumulated in C (one
/// rounding at the store). Mean divides the sum by the count.
template <template <typename> class Op, bool Mean, typename S>
void variadicBlock(int64_t n, const char *const *in, const int64_t *stride,
                   char *out, const Ctx &ctx) {
  using C = typename ComputeOf<S>::type;
  const Op<C> op(ctx);
  alignas(64) C acc[kChunk], buf[kChunk];
  const int64_t es = sizeof(S);
  for (int64_t off = 0; off < n; off += kChunk) {
    int64_t m = std::min(kChunk, n - off), s;
    const C *a =
        loadChunk<S, C>(in[0] + off * stride[0] * es, stride[0], m, buf, s);
    if (s)
      std::copy(a, a + m, acc);
    else
      std::fill(acc, acc + m, a[0]);
    for (size_t k = 1; k < ctx.numInputs; ++k) {
      const C *b =
          loadChunk<S, C>(in[k] + off * stride[k] * es, stride[k], m, buf, s);
      if (s) {
        for (int64_t i = 0; i < m; ++i)
          acc[i] = op(acc[i], b[i]);
      } else {
        const C bv = b[0];
        for (int64_t i = 0; i < m; ++i)
          acc[i] = op(acc[i], bv);
      }
    }
    if constexpr (Mean) {
      const C count = static_cast<C>(ctx.numInputs);
      for (int64_t i = 0; i < m; ++i)
        acc[i] = acc[i] / count;
    }
    if constexpr (std::is_same_v<C, S>)
      std::copy(acc, acc + m, reinterpret_cast<S *>(out) + off);
    else
      storeChunk<C, S>(acc, m, out + off * es);
  }
}

//===----------------------------------------------------------------------===//
// Choosing the block function
//===----------------------------------------------------------------------===//

/// Which dtypes a function takes.
enum TypeSet : unsigned {
  kFloats = 1,
  kSigned = 2,
  kUnsigned = 4,
  kBool = 8,
  kInts = kSigned | kUnsigned,
  kNumeric = kFloats | kInts,
  kAll = kNumeric | kBool,
};

/// Calls f(Ty<S, C>{}) for dtype t if Set allows it.
template <unsigned Set, typename F> bool visitSet(DType t, F &&f) {
  if constexpr ((Set & kFloats) != 0)
    if (visitFloat(t, f))
      return true;
  if constexpr ((Set & kInts) != 0)
    if (visitInt<(Set & kSigned) != 0, (Set & kUnsigned) != 0>(t, f))
      return true;
  if constexpr ((Set & kBool) != 0)
    if (t == DType::Bool) {
      f(Ty<Bool8, uint8_t>{});
      return true;
    }
  return false;
}

template <template <typename> class Op, unsigned Set> BlockFn unaryFn(DType t) {
  BlockFn fn = nullptr;
  visitSet<Set>(t, [&](auto ty) {
    using S = typename decltype(ty)::Storage;
    using C = typename ComputeOf<S>::type;
    using R = decltype(std::declval<Op<C>>()(C{}));
    if constexpr (std::is_same_v<R, uint8_t> && !std::is_same_v<C, uint8_t>)
      fn = &unaryBlock<Op<C>, S, Bool8>; // bool result of a non-bool input
    else
      fn = &unaryBlock<Op<C>, S, S>;
  });
  return fn;
}

template <template <typename> class Op, unsigned Set>
BlockFn binaryFn(DType t) {
  BlockFn fn = nullptr;
  visitSet<Set>(t, [&](auto ty) {
    using S = typename decltype(ty)::Storage;
    using C = typename ComputeOf<S>::type;
    fn = &binaryBlock<Op<C>, C, S, S, S>;
  });
  return fn;
}

/// Comparisons: y is bool whatever the inputs are.
template <template <typename> class Op> BlockFn compareFn(DType t) {
  BlockFn fn = nullptr;
  visitSet<kAll>(t, [&](auto ty) {
    using S = typename decltype(ty)::Storage;
    using C = typename ComputeOf<S>::type;
    fn = &binaryBlock<Op<C>, C, S, S, Bool8>;
  });
  return fn;
}

template <template <typename> class Op, bool Mean, unsigned Set>
BlockFn variadicFn(DType t) {
  BlockFn fn = nullptr;
  visitSet<Set>(t, [&](auto ty) {
    fn = &variadicBlock<Op, Mean, typename decltype(ty)::Storage>;
  });
  return fn;
}

/// Pow: the exponent arrives converted to the base's compute type (f32 for
/// f32/f16/bf16 bases, f64 for f64 and integer bases).
BlockFn powFn(DType base) {
  BlockFn fn = nullptr;
  visitFloat(base, [&](auto ty) {
    using S = typename decltype(ty)::Storage;
    using C = typename decltype(ty)::Compute;
    fn = &binaryBlock<OpPow<C>, C, S, C, S>;
  });
  visitInt<true, true>(base, [&](auto ty) {
    using S = typename decltype(ty)::Storage;
    // The base is widened to f64, the result truncated toward zero.
    fn = &binaryBlock<OpIntegerPow<double>, double, S, double, S>;
  });
  return fn;
}

BlockFn clipFn(DType t) {
  BlockFn fn = nullptr;
  visitSet<kNumeric>(
      t, [&](auto ty) { fn = &clipBlock<typename decltype(ty)::Storage>; });
  return fn;
}

BlockFn whereFn(DType t) {
  switch (byteSize(t)) {
  case 1:
    return &whereBlock<uint8_t>;
  case 2:
    return &whereBlock<uint16_t>;
  case 4:
    return &whereBlock<uint32_t>;
  case 8:
    return &whereBlock<uint64_t>;
  default:
    return nullptr;
  }
}

/// Identity: a copy of raw elements (bit for bit, NaN payloads included).
BlockFn identityFn(DType t) {
  switch (byteSize(t)) {
  case 1:
    return &unaryBlock<OpIdentity<uint8_t>, uint8_t, uint8_t>;
  case 2:
    return &unaryBlock<OpIdentity<uint16_t>, uint16_t, uint16_t>;
  case 4:
    return &unaryBlock<OpIdentity<uint32_t>, uint32_t, uint32_t>;
  case 8:
    return &unaryBlock<OpIdentity<uint64_t>, uint64_t, uint64_t>;
  default:
    return nullptr;
  }
}

/// The block function of fn for inputs of dtype t (where: x's dtype), or
/// null when fn does not take t.
BlockFn selectBlockFn(ElementwiseFn fn, DType t, size_t numInputs) {
  using F = ElementwiseFn;
  constexpr unsigned kFloatsSigned = kFloats | kSigned;
  // fn computed by select<Op, dtypes>(t): one a line.
#define MP_SELECT(fn, select, Op, dtypes)                                      \
  case F::fn:                                                                  \
    return select<Op, dtypes>(t);
  switch (fn) {
  case F::Identity:
    return identityFn(t);
    MP_SELECT(Abs, unaryFn, OpAbs, kNumeric)
    MP_SELECT(Neg, unaryFn, OpNeg, kFloatsSigned)
    MP_SELECT(Exp, unaryFn, OpExp, kFloats)
    MP_SELECT(Log, unaryFn, OpLog, kFloats)
    MP_SELECT(Sqrt, unaryFn, OpSqrt, kFloats)
    MP_SELECT(Reciprocal, unaryFn, OpReciprocal, kFloats)
    MP_SELECT(Relu, unaryFn, OpRelu, kFloatsSigned)
    MP_SELECT(Sigmoid, unaryFn, OpSigmoid, kFloats)
    MP_SELECT(Tanh, unaryFn, OpTanh, kFloats)
    MP_SELECT(Erf, unaryFn, OpErf, kFloats)
    MP_SELECT(Floor, unaryFn, OpFloor, kFloats)
    MP_SELECT(Ceil, unaryFn, OpCeil, kFloats)
    MP_SELECT(Round, unaryFn, OpRound, kFloats)
    MP_SELECT(Sign, unaryFn, OpSign, kNumeric)
    MP_SELECT(Sin, unaryFn, OpSin, kFloats)
    MP_SELECT(Cos, unaryFn, OpCos, kFloats)
    MP_SELECT(Tan, unaryFn, OpTan, kFloats)
    MP_SELECT(Asin, unaryFn, OpAsin, kFloats)
    MP_SELECT(Acos, unaryFn, OpAcos, kFloats)
    MP_SELECT(Atan, unaryFn, OpAtan, kFloats)
    MP_SELECT(Sinh, unaryFn, OpSinh, kFloats)
    MP_SELECT(Cosh, unaryFn, OpCosh, kFloats)
    MP_SELECT(Asinh, unaryFn, OpAsinh, kFloats)
    MP_SELECT(Acosh, unaryFn, OpAcosh, kFloats)
    MP_SELECT(Atanh, unaryFn, OpAtanh, kFloats)
    MP_SELECT(Softplus, unaryFn, OpSoftplus, kFloats)
    MP_SELECT(Softsign, unaryFn, OpSoftsign, kFloats)
    MP_SELECT(HardSwish, unaryFn, OpHardSwish, kFloats)
    MP_SELECT(Gelu, unaryFn, OpGelu, kFloats)
    MP_SELECT(GeluTanh, unaryFn, OpGeluTanh, kFloats)
    MP_SELECT(Not, unaryFn, OpNot, kBool)
    MP_SELECT(IsNan, unaryFn, OpIsNan, kFloats)
    MP_SELECT(IsInf, unaryFn, OpIsInf, kFloats)
    MP_SELECT(LeakyRelu, unaryFn, OpLeakyRelu, kFloats)
    MP_SELECT(Elu, unaryFn, OpElu, kFloats)
    MP_SELECT(Celu, unaryFn, OpCelu, kFloats)
    MP_SELECT(Selu, unaryFn, OpSelu, kFloats)
    MP_SELECT(HardSigmoid, unaryFn, OpHardSigmoid, kFloats)
    MP_SELECT(ThresholdedRelu, unaryFn, OpThresholdedRelu, kFloats)
    MP_SELECT(Shrink, unaryFn, OpShrink, kNumeric)
    MP_SELECT(Add, binaryFn, OpAdd, kNumeric)
    MP_SELECT(Sub, binaryFn, OpSub, kNumeric)
    MP_SELECT(Mul, binaryFn, OpMul, kNumeric)
    MP_SELECT(Div, binaryFn, OpDiv, kNumeric)
  case F::Pow:
    return powFn(t);
    MP_SELECT(Mod, binaryFn, OpMod, kNumeric)
    MP_SELECT(Fmod, binaryFn, OpFmod, kNumeric)
    MP_SELECT(PRelu, binaryFn, OpPRelu, kNumeric)
    MP_SELECT(ReluGrad, binaryFn, OpReluGrad, kFloats)
    MP_SELECT(GeluGrad, binaryFn, OpGeluGrad, kFloats)
    MP_SELECT(GeluTanhGrad, binaryFn, OpGeluTanhGrad, kFloats)
    MP_SELECT(BitShiftLeft, binaryFn, OpShl, kUnsigned)
    MP_SELECT(BitShiftRight, binaryFn, OpShr, kUnsigned)
    MP_SELECT(BitwiseAnd, binaryFn, OpBitAnd, kInts)
    MP_SELECT(BitwiseOr, binaryFn, OpBitOr, kInts)
    MP_SELECT(BitwiseXor, binaryFn, OpBitXor, kInts)
    MP_SELECT(BitwiseNot, unaryFn, OpBitNot, kInts)
  case F::Equal:
    return compareFn<OpEqual>(t);
  case F::Less:
    return compareFn<OpLess>(t);
  case F::Greater:
    return compareFn<OpGreater>(t);
  case F::LessEqual:
    return compareFn<OpLessEqual>(t);
  case F::GreaterEqual:
    return compareFn<OpGreaterEqual>(t);
    MP_SELECT(And, binaryFn, OpAnd, kBool)
    MP_SELECT(Or, binaryFn, OpOr, kBool)
    MP_SELECT(Xor, binaryFn, OpXor, kBool)
  case F::Where:
    return whereFn(t);
  case F::Clip:
    return numInputs == 1 ? unaryFn<OpClip1, kNumeric>(t) : clipFn(t);
  case F::Sum:
    return variadicFn<OpAdd, false, kNumeric>(t);
  case F::Mean:
    return variadicFn<OpAdd, true, kFloats>(t);
  case F::Max:
    return variadicFn<OpMax, false, kNumeric>(t);
  case F::Min:
    return variadicFn<OpMin, false, kNumeric>(t);
  }
  return nullptr;
#undef MP_SELECT
}

/// alpha and beta of fn: the given values or ONNX's defaults.
void resolveParams(ElementwiseFn fn, const ElementwiseParams &p, Ctx &ctx) {
  std::tie(ctx.alpha, ctx.beta) = resolveAlphaBeta(fn, p);
}

//===----------------------------------------------------------------------===//
// Broadcasting
//===----------------------------------------------------------------------===//

/// y's dims with the dims of size 1 dropped and the dims that every input
/// walks contiguously merged; the last one is the block. strides[k][d] is
/// input k's step along dim d, in elements (0 where it is broadcast).
struct BroadcastLoop {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
};

BroadcastLoop makeLoop(const std::vector<TensorView> &inputs,
                       const Shape &out) {
  size_t rank = out.size(), numIn = inputs.size();
  std::vector<std::vector<int64_t>> full(numIn, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < numIn; ++k) {
    const Shape &s = inputs[k].shape;
    int64_t step = 1;
    for (size_t j = s.size(); j-- > 0;) {
      full[k][rank - s.size() + j] = s[j] == 1 ? 0 : step;
      step *= s[j];
    }
  }
  BroadcastLoop loop;
  loop.strides.resize(numIn);
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1)
      continue;
    bool merge = !loop.dims.empty();
    for (size_t k = 0; k < numIn && merge; ++k)
      merge = loop.strides[k].back() == full[k][d] * out[d];
    if (merge) {
      loop.dims.back() *= out[d];
      for (size_t k = 0; k < numIn; ++k)
        loop.strides[k].back() = full[k][d];
    } else {
      loop.dims.push_back(out[d]);
      for (size_t k = 0; k < numIn; ++k)
        loop.strides[k].push_back(full[k][d]);
    }
  }
  if (loop.dims.empty()) { // a single element
    loop.dims.push_back(1);
    for (auto &s : loop.strides)
      s.push_back(0);
  }
  return loop;
}

/// Calls block(n, ptrs, strides, out) for the blocks of y's elements
/// [begin, end) (row-major): runs of `inner` elements, the first and last
/// possibly in part; ptrs[k] is input k's first element of the run and
/// strides[k] its step along it (0 or 1).
template <typename Block>
void walkBlocks(const BroadcastLoop &loop,
                const std::vector<const char *> &bases,
                const std::vector<int64_t> &elemSizes, char *out,
                int64_t outElemSize, int64_t begin, int64_t end,
                Block &&block) {
  size_t numIn = bases.size(), outerRank = loop.dims.size() - 1;
  int64_t inner = loop.dims.back();
  std::vector<int64_t> idx(outerRank, 0), offset(numIn, 0), innerStride(numIn);
  std::vector<const char *> ptrs(numIn);
  for (size_t k = 0; k < numIn; ++k)
    innerStride[k] = loop.strides[k].back();
  // The outer index of `begin`'s block, and each input's offset there.
  int64_t o = begin / inner, first = begin % inner;
  for (size_t d = outerRank; d-- > 0;) {
    idx[d] = o % loop.dims[d];
    o /= loop.dims[d];
    for (size_t k = 0; k < numIn; ++k)
      offset[k] += idx[d] * loop.strides[k][d];
  }
  for (int64_t at = begin; at < end;) {
    int64_t n = std::min(inner - first, end - at);
    for (size_t k = 0; k < numIn; ++k)
      ptrs[k] = bases[k] + (offset[k] + first * innerStride[k]) * elemSizes[k];
    block(n, ptrs.data(), innerStride.data(), out + at * outElemSize);
    at += n;
    first = 0;
    for (size_t d = outerRank; d-- > 0;) {
      for (size_t k = 0; k < numIn; ++k)
        offset[k] += loop.strides[k][d];
      if (++idx[d] < loop.dims[d])
        break;
      for (size_t k = 0; k < numIn; ++k)
        offset[k] -= loop.strides[k][d] * loop.dims[d];
      idx[d] = 0;
    }
  }
}

/// Every element of y, split over the CPU threads (Parallel.h).
void runLoop(const BroadcastLoop &loop, BlockFn block,
             const std::vector<const char *> &bases,
             const std::vector<int64_t> &elemSizes, char *out,
             int64_t outElemSize, const Ctx &ctx) {
  int64_t total = 1;
  for (int64_t d : loop.dims)
    total *= d;
  parallelRanges(total, [&](int64_t begin, int64_t end) {
    walkBlocks(loop, bases, elemSizes, out, outElemSize, begin, end,
               [&](int64_t n, const char *const *ptrs, const int64_t *strides,
                   char *o) { block(n, ptrs, strides, o, ctx); });
  });
}

std::string dt(DType t) { return std::string(dtypeName(t)); }

/// Input k broadcasts to y, and is y itself (in place) or apart from it.
Status checkBroadcastInput(const std::string &op, size_t k,
                           const TensorView &input, const TensorView &y) {
  const Shape &s = input.shape;
  bool ok = s.size() <= y.shape.size();
  for (size_t j = 0; ok && j < s.size(); ++j) {
    int64_t d = y.shape[y.shape.size() - s.size() + j];
    ok = s[j] == d || s[j] == 1;
  }
  if (!ok)
    return fail(op, "input " + std::to_string(k) + " " + shapeStr(s) +
                        " does not broadcast to y " + shapeStr(y.shape));
  bool same = input.data == y.data && input.dtype == y.dtype && s == y.shape;
  if (!same && overlaps(input.data, input.byteCount(), y.data, y.byteCount()))
    return fail(op, "y overlaps input " + std::to_string(k));
  return Status::ok();
}

} // namespace

Status elementwise(ElementwiseFn fn, const std::vector<TensorView> &inputs,
                   const TensorView &y, const ElementwiseParams &params) {
  const std::string op = "elementwise " + std::string(elementwiseFnName(fn));
  ElementwiseKind kind = infoOf(fn).kind;
  size_t n = inputs.size();
  if (Status s = checkElementwiseInputCount(op, kind, n); !s)
    return s;
  for (size_t k = 0; k < n; ++k)
    if (Status s = checkView(op, "input " + std::to_string(k), inputs[k]); !s)
      return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;

  // Dtypes: t is the dtype the function computes on.
  std::vector<DType> inDtypes;
  for (const TensorView &v : inputs)
    inDtypes.push_back(v.dtype);
  Result<DType> computed =
      checkElementwiseDtypes(op, fn, kind, inDtypes, y.dtype);
  if (!computed)
    return computed.status();
  DType t = *computed;
  BlockFn block = selectBlockFn(fn, t, n);
  if (!block)
    return fail(op, "does not take dtype " + dt(t));

  // Shapes: every input broadcasts to y.
  for (size_t k = 0; k < n; ++k)
    if (Status s = checkBroadcastInput(op, k, inputs[k], y); !s)
      return s;
  if (y.numElements() == 0)
    return Status::ok();

  Ctx ctx;
  ctx.numInputs = n;
  resolveParams(fn, params, ctx);
  std::vector<const char *> bases(n);
  std::vector<int64_t> elemSizes(n);
  for (size_t k = 0; k < n; ++k) {
    bases[k] = static_cast<const char *>(inputs[k].data);
    elemSizes[k] = static_cast<int64_t>(byteSize(inputs[k].dtype));
  }
  // Pow: the exponent converted to the base's compute type.
  Buffer<char> exponent;
  if (fn == ElementwiseFn::Pow) {
    DType want = (t == DType::F32 || t == DType::F16 || t == DType::BF16)
                     ? DType::F32
                     : DType::F64;
    if (inputs[1].dtype != want) {
      TensorView converted{want, inputs[1].shape, nullptr};
      exponent.reset(static_cast<int64_t>(converted.byteCount()));
      converted.data = exponent.get();
      if (Status s = cast(inputs[1], converted); !s)
        return s;
      bases[1] = exponent.get();
      elemSizes[1] = static_cast<int64_t>(byteSize(want));
    }
  }
  runLoop(makeLoop(inputs, y.shape), block, bases, elemSizes,
          static_cast<char *>(y.data), static_cast<int64_t>(byteSize(y.dtype)),
          ctx);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Fused programs
//===----------------------------------------------------------------------===//

namespace {

/// A program's step with its f32 block function.
struct FusedStepFn {
  BlockFn block = nullptr;
  Ctx ctx;
  std::vector<FusedOperand> args;
  /// The function, when vectorMath computes it on contiguous arguments.
  std::optional<ElementwiseFn> vector;
};

/// How each input of a fused program is read, where every one is y-shaped
/// (Whole), a scalar or one row of the loop's inner dim (Row).
enum class RowKind { Whole, Scalar, Row };

/// A per-channel operand of a channels-last activation ([1, 1, 1, C] or [C]
/// against [N, H, W, C]) makes the loop's inner dim C: blocks of one row
/// each, too short to pay for a program's per-block work when C is small.
/// Where every input is y-shaped, a scalar or such a row, the program runs
/// in long blocks instead (runFusedRange): the kinds of the inputs, or none
/// where the row blocks do not apply.
std::vector<RowKind> rowKindsOf(const BroadcastLoop &loop) {
  const size_t rank = loop.dims.size(), numIn = loop.strides.size();
  if (rank < 2 || loop.dims.back() >= kRowBlock)
    return {};
  std::vector<RowKind> kinds(numIn);
  bool anyRow = false;
  for (size_t k = 0; k < numIn; ++k) {
    const std::vector<int64_t> &st = loop.strides[k];
    bool whole = true, scalar = true, row = st.back() == 1;
    int64_t step = 1;
    for (size_t d = rank; d-- > 0;) {
      whole &= st[d] == step;
      scalar &= st[d] == 0;
      if (d + 1 < rank)
        row &= st[d] == 0;
      step *= loop.dims[d];
    }
    if (!whole && !scalar && !row)
      return {};
    kinds[k] = whole ? RowKind::Whole : scalar ? RowKind::Scalar : RowKind::Row;
    anyRow |= kinds[k] == RowKind::Row;
  }
  return anyRow ? kinds : std::vector<RowKind>{};
}

/// Runs the steps over y's elements [begin, end) (row-major), kChunk at a
/// time (kRowBlock where `kinds` says the rows repeat): the inputs' chunks
/// widened to f32 (f32 ones read in place), every step's results in a chunk
/// buffer of their own, the last one rounded once into y (or computed straight
/// into an f32 y).
void runFusedRange(const BroadcastLoop &loop, const std::vector<RowKind> &kinds,
                   const std::vector<FusedStepFn> &steps,
                   const std::vector<TensorView> &inputs, const TensorView &y,
                   int64_t begin, int64_t end) {
  const size_t numIn = inputs.size(), numSteps = steps.size();
  Buffer<float> scratch((numIn + numSteps) * kChunk);
  auto inputBuf = [&](size_t k) { return scratch.get() + k * kChunk; };
  auto stepBuf = [&](size_t s) { return scratch.get() + (numIn + s) * kChunk; };
  std::vector<const char *> bases(numIn);
  std::vector<int64_t> elemSizes(numIn);
  for (size_t k = 0; k < numIn; ++k) {
    bases[k] = static_cast<const char *>(inputs[k].data);
    elemSizes[k] = static_cast<int64_t>(byteSize(inputs[k].dtype));
  }
  std::vector<const float *> in(numIn);
  std::vector<int64_t> inStride(numIn);
  std::vector<const char *> argPtrs;
  std::vector<int64_t> argStrides;
  // One block of y: input k at ptrs[k] with step stride[k] (0 or 1).
  auto block = [&](int64_t n, const char *const *ptrs, const int64_t *stride,
                   char *out) {
    for (int64_t off = 0; off < n; off += kChunk) {
      const int64_t m = std::min(kChunk, n - off);
      for (size_t k = 0; k < numIn; ++k) {
        const char *p = ptrs[k] + off * stride[k] * elemSizes[k];
        const int64_t count = stride[k] ? m : 1;
        inStride[k] = stride[k];
        switch (inputs[k].dtype) {
        case DType::F32:
          in[k] = reinterpret_cast<const float *>(p);
          continue;
        case DType::F16:
          convertF16ToF32(reinterpret_cast<const uint16_t *>(p), inputBuf(k),
                          static_cast<size_t>(count));
          break;
        default: // BF16
          convertBF16ToF32(reinterpret_cast<const uint16_t *>(p), inputBuf(k),
                           static_cast<size_t>(count));
        }
        in[k] = inputBuf(k);
      }
      float *yF32 = y.dtype == DType::F32 ? reinterpret_cast<float *>(out) + off
                                          : nullptr;
      for (size_t s = 0; s < numSteps; ++s) {
        const FusedStepFn &step = steps[s];
        argPtrs.clear();
        argStrides.clear();
        for (const FusedOperand &a : step.args) {
          argPtrs.push_back(reinterpret_cast<const char *>(
              a.isStep ? stepBuf(a.index) : in[a.index]));
          argStrides.push_back(a.isStep ? 1 : inStride[a.index]);
        }
        float *result = s + 1 == numSteps && yF32 ? yF32 : stepBuf(s);
        if (step.vector && argStrides[0] == 1)
          vectorMath(*step.vector, reinterpret_cast<const float *>(argPtrs[0]),
                     result, m);
        else
          step.block(m, argPtrs.data(), argStrides.data(),
                     reinterpret_cast<char *>(result), step.ctx);
      }
      if (!yF32) {
        const float *last = stepBuf(numSteps - 1);
        uint16_t *o = reinterpret_cast<uint16_t *>(out) + off;
        if (y.dtype == DType::F16)
          convertF32ToF16(last, o, static_cast<size_t>(m));
        else
          convertF32ToBF16(last, o, static_cast<size_t>(m));
      }
    }
  };
  char *out = static_cast<char *>(y.data);
  const int64_t outElemSize = static_cast<int64_t>(byteSize(y.dtype));
  if (kinds.empty()) {
    walkBlocks(loop, bases, elemSizes, out, outElemSize, begin, end, block);
    return;
  }
  const int64_t period = loop.dims.back();
  // Each row input repeated to cover a block from any place in the row: at
  // least period - 1 + kRowBlock elements of its storage, whole rows.
  const int64_t copies = (kRowBlock + period - 1) / period + 1;
  std::vector<std::vector<char>> rows(numIn);
  for (size_t k = 0; k < numIn; ++k)
    if (kinds[k] == RowKind::Row) {
      const int64_t bytes = period * elemSizes[k];
      rows[k].resize(static_cast<size_t>(copies * bytes));
      for (int64_t c = 0; c < copies; ++c)
        std::memcpy(rows[k].data() + c * bytes, bases[k],
                    static_cast<size_t>(bytes));
    }
  std::vector<int64_t> strides(numIn);
  for (size_t k = 0; k < numIn; ++k)
    strides[k] = kinds[k] == RowKind::Scalar ? 0 : 1;
  for (int64_t at = begin; at < end; at += kRowBlock) {
    const int64_t n = std::min(kRowBlock, end - at);
    for (size_t k = 0; k < numIn; ++k)
      bases[k] =
          kinds[k] == RowKind::Whole
              ? static_cast<const char *>(inputs[k].data) + at * elemSizes[k]
          : kinds[k] == RowKind::Row
              ? rows[k].data() + (at % period) * elemSizes[k]
              : static_cast<const char *>(inputs[k].data);
    block(n, bases.data(), strides.data(), out + at * outElemSize);
  }
}

} // namespace

/// What FusedElementwiseKernel::bind checked and chose.
struct FusedElementwiseKernel::Bound {
  std::vector<FusedStepFn> steps;
  std::vector<TensorView> inputs;
  TensorView y;
  BroadcastLoop loop;
  std::vector<RowKind> rowKinds; ///< rowKindsOf(loop)
  int64_t total = 0;             ///< y's elements
};

Result<FusedElementwiseKernel>
FusedElementwiseKernel::bind(const FusedProgram &program,
                             const std::vector<TensorView> &inputs,
                             const TensorView &y, bool vectorMathSteps) {
  const std::string op = "fused_elementwise";
  if (std::string why; !checkFusedProgram(program, inputs.size(), why))
    return fail(op, "the program " + why);
  auto isFused = [](DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
  };
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (!isFused(y.dtype))
    return fail(op, "y is " + dt(y.dtype) + " (f16, bf16 or f32)");
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string name = "input " + std::to_string(k);
    if (Status s = checkView(op, name, inputs[k]); !s)
      return s;
    if (!isFused(inputs[k].dtype))
      return fail(op,
                  name + " is " + dt(inputs[k].dtype) + " (f16, bf16 or f32)");
    if (Status s = checkBroadcastInput(op, k, inputs[k], y); !s)
      return s;
  }
  auto bound = std::make_shared<Bound>();
  std::vector<FusedStepFn> &steps = bound->steps;
  for (const FusedStep &step : program.steps) {
    FusedStepFn f;
    // Every fusable function computes on f32 (checkFusedProgram).
    f.block = selectBlockFn(step.fn, DType::F32, step.args.size());
    assert(f.block);
    f.ctx.numInputs = step.args.size();
    resolveParams(step.fn, ElementwiseParams{step.alpha, step.beta}, f.ctx);
    f.args = step.args;
    if (vectorMathSteps && hasVectorMath(step.fn))
      f.vector = step.fn;
    steps.push_back(std::move(f));
  }
  bound->inputs = inputs;
  bound->y = y;
  bound->loop = makeLoop(inputs, y.shape);
  bound->rowKinds = rowKindsOf(bound->loop);
  bound->total = y.numElements();
  FusedElementwiseKernel kernel;
  kernel.bound_ = std::move(bound);
  return kernel;
}

void FusedElementwiseKernel::run() const {
  const Bound &b = *bound_;
  if (b.total == 0)
    return;
  parallelRanges(b.total, [&](int64_t begin, int64_t end) {
    runFusedRange(b.loop, b.rowKinds, b.steps, b.inputs, b.y, begin, end);
  });
}

Status fusedElementwise(const FusedProgram &program,
                        const std::vector<TensorView> &inputs,
                        const TensorView &y, bool vectorMathSteps) {
  Result<FusedElementwiseKernel> kernel =
      FusedElementwiseKernel::bind(program, inputs, y, vectorMathSteps);
  if (!kernel)
    return kernel.status();
  kernel->run();
  return Status::ok();
}

std::pair<double, double> resolveAlphaBeta(ElementwiseFn fn,
                                           const ElementwiseParams &given) {
  const ElementwiseFnInfo &info = infoOf(fn);
  return {given.alpha.value_or(info.alpha), given.beta.value_or(info.beta)};
}

} // namespace mp::rt::cpu
