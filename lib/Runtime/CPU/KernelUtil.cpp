//===- KernelUtil.cpp - private helpers of the CPU kernels ----------------===//
#include "KernelUtil.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mp::rt::cpu::detail {

#ifdef OPENBLAS_CONST
using BlasInt = blasint;
#else
using BlasInt = int;
#endif

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

void toF32(DType t, const void *src, float *dst, int64_t n) {
  switch (t) {
  case DType::F32:
    if (src != dst && n > 0)
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  case DType::F16: {
    convertF16ToF32(static_cast<const uint16_t *>(src), dst,
                    static_cast<size_t>(n));
    return;
  }
  case DType::BF16: {
    convertBF16ToF32(static_cast<const uint16_t *>(src), dst,
                     static_cast<size_t>(n));
    return;
  }
  default:
    return;
  }
}

void fromF32(const float *src, DType t, void *dst, int64_t n) {
  switch (t) {
  case DType::F32:
    if (src != dst && n > 0)
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  case DType::F16: {
    convertF32ToF16(src, static_cast<uint16_t *>(dst), static_cast<size_t>(n));
    return;
  }
  case DType::BF16: {
    convertF32ToBF16(src, static_cast<uint16_t *>(dst), static_cast<size_t>(n));
    return;
  }
  default:
    return;
  }
}

Scratch::Scratch(int slot, int64_t n) {
  if (n * int64_t(sizeof(float)) > kScratchCacheBytes || slot < 0 ||
      slot >= kSlots) {
    own_.reset(n);
    p_ = own_.get();
    return;
  }
  thread_local Buffer<float> cache[kSlots];
  Buffer<float> &b = cache[slot];
  if (b.size() < n)
    b.reset(std::min<int64_t>(std::max<int64_t>(n, b.size() + b.size() / 2),
                              kScratchCacheBytes / int64_t(sizeof(float))));
  p_ = b.get();
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i)
      r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    strides[i - 1] = strides[i] * s[i];
  return strides;
}

Status fail(std::string_view op, const std::string &what) {
  return Status::error(std::string(op) + ": " + what);
}

Status checkView(std::string_view op, std::string_view name,
                 const TensorView &v) {
  int64_t n = 1;
  for (int64_t d : v.shape) {
    if (d < 0)
      return fail(op, std::string(name) + " has a negative dimension " +
                          shapeStr(v.shape));
    // Zero dims are skipped: the strides of an empty tensor must fit too.
    if (d == 0)
      continue;
    if (n > std::numeric_limits<int64_t>::max() / 8 / d)
      return fail(op, std::string(name) + " is too large " +
                          shapeStr(v.shape));
    n *= d;
  }
  if (v.numElements() > 0 && !v.data)
    return fail(op, std::string(name) + " has no data");
  return Status::ok();
}

Status checkFloatInOut(std::string_view op, const TensorView &x,
                       const TensorView &y) {
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (!isF32or16(x.dtype))
    return fail(op, "x has dtype " + std::string(dtypeName(x.dtype)) +
                        "; expected f32, f16 or bf16");
  return Status::ok();
}

Status dilatedExtent(std::string_view op, std::string_view what, size_t dim,
                     const Shape &xShape, int64_t kernel, int64_t dilation,
                     int64_t padded, int64_t &extent) {
  if (__builtin_mul_overflow(dilation, kernel - 1, &extent) ||
      extent > (int64_t(1) << 62))
    return fail(op, "the dilated " + std::string(what) +
                        " is too large along spatial dimension " +
                        std::to_string(dim));
  extent += 1;
  if (padded < extent)
    return fail(op, "spatial dimension " + std::to_string(dim) + " of x " +
                        shapeStr(xShape) +
                        " with its padding is smaller than the dilated " +
                        std::string(what) + " (" + std::to_string(extent) +
                        ")");
  return Status::ok();
}

Status spatialAttr(std::string_view op, std::string_view name,
                   const std::vector<int64_t> &given, size_t count,
                   int64_t deflt, int64_t min, std::vector<int64_t> &out) {
  if (given.empty()) {
    out.assign(count, deflt);
    return Status::ok();
  }
  if (given.size() != count)
    return fail(op, std::string(name) + " has " +
                        std::to_string(given.size()) + " entries, expected " +
                        std::to_string(count) + " (one per spatial dimension)");
  for (int64_t v : given)
    if (v < min || v > (int64_t(1) << 40))
      return fail(op, std::string(name) + " must be >= " +
                          std::to_string(min) + ", got " + std::to_string(v));
  out = given;
  return Status::ok();
}

Status checkSpatialRank(std::string_view op, const Shape &xShape) {
  if (xShape.size() < 3)
    return fail(op, "x needs rank >= 3 (N, C and spatial dimensions), got " +
                        shapeStr(xShape));
  return Status::ok();
}

Status checkElementwiseInputCount(std::string_view op, ElementwiseKind kind,
                                  size_t n) {
  using Kind = ElementwiseKind;
  size_t minIn = 1, maxIn = 1;
  switch (kind) {
  case Kind::Unary:
  case Kind::BoolResult:
    break;
  case Kind::Binary:
  case Kind::Compare:
    minIn = maxIn = 2;
    break;
  case Kind::Where:
    minIn = maxIn = 3;
    break;
  case Kind::Clip:
    maxIn = 3;
    break;
  case Kind::Variadic:
    maxIn = std::numeric_limits<size_t>::max();
    break;
  }
  if (n < minIn || n > maxIn || (kind == Kind::Clip && n == 2))
    return fail(op, std::string("expects ") +
                        (kind == Kind::Variadic ? "1 or more"
                         : kind == Kind::Clip   ? "1 (x) or 3 (x, min, max)"
                                                : std::to_string(minIn)) +
                        " inputs, got " + std::to_string(n));
  return Status::ok();
}

Result<DType> checkElementwiseDtypes(std::string_view op, ElementwiseFn fn,
                                     ElementwiseKind kind,
                                     const std::vector<DType> &ins, DType y) {
  using Kind = ElementwiseKind;
  auto dt = [](DType t) { return std::string(dtypeName(t)); };
  DType t = kind == Kind::Where ? ins[1] : ins[0];
  bool boolY = infoOf(fn).boolResult();
  for (size_t k = 0; k < ins.size(); ++k) {
    DType want = t;
    if (kind == Kind::Where && k == 0)
      want = DType::Bool;
    if (fn == ElementwiseFn::Pow && k == 1) {
      if (ins[1] == DType::Bool || byteSize(ins[1]) == 0)
        return fail(op, "the exponent has dtype " + dt(ins[1]) +
                            "; expected a numeric dtype");
      continue;
    }
    if (ins[k] != want)
      return fail(op, "input " + std::to_string(k) + " has dtype " +
                          dt(ins[k]) + "; expected " + dt(want));
  }
  DType yWant = boolY ? DType::Bool : t;
  if (y != yWant)
    return fail(op, "y has dtype " + dt(y) + "; expected " + dt(yWant));
  return t;
}

Status checkConvRanks(std::string_view op, const Shape &x,
                      std::string_view aName, const Shape &a,
                      std::string_view bName, const Shape &b) {
  if (Status s = checkSpatialRank(op, x); !s)
    return s;
  if (a.size() != x.size() || b.size() != x.size())
    return fail(op, "x " + shapeStr(x) + ", " + std::string(aName) + " " +
                        shapeStr(a) + " and " + std::string(bName) + " " +
                        shapeStr(b) + " must have the same rank");
  return Status::ok();
}

Status checkConvGroups(std::string_view op, int64_t groups, int64_t inChannels,
                       int64_t outChannels) {
  if (groups < 1 || inChannels % groups || outChannels % groups)
    return fail(op, "groups = " + std::to_string(groups) +
                        " must be >= 1 and divide the input channels (" +
                        std::to_string(inChannels) +
                        ") and the output channels (" +
                        std::to_string(outChannels) + ")");
  return Status::ok();
}

Status checkConvWeights(std::string_view op, std::string_view name,
                        const Shape &wShape, int64_t wChannels,
                        int64_t channelsPerGroup,
                        const std::vector<int64_t> &ker) {
  if (wChannels != channelsPerGroup)
    return fail(op, std::string(name) + " " + shapeStr(wShape) + " has " +
                        std::to_string(wChannels) +
                        " input channels per group, expected C/groups = " +
                        std::to_string(channelsPerGroup));
  for (int64_t kd : ker)
    if (kd < 1)
      return fail(op, std::string(name) + " " + shapeStr(wShape) +
                          " has an empty kernel dimension");
  return Status::ok();
}

bool overlaps(const void *a, size_t an, const void *b, size_t bn) {
  if (!a || !b || !an || !bn)
    return false;
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bn && pb < pa + an;
}

//===----------------------------------------------------------------------===//
// Batch broadcasting
//===----------------------------------------------------------------------===//

bool broadcastShapes(const Shape &x, const Shape &y, Shape &out) {
  size_t r = std::max(x.size(), y.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t dx = i < r - x.size() ? 1 : x[i - (r - x.size())];
    int64_t dy = i < r - y.size() ? 1 : y[i - (r - y.size())];
    if (dx != dy && dx != 1 && dy != 1)
      return false;
    out[i] = dx == 1 ? dy : dx;
  }
  return true;
}

std::vector<int64_t> batchOffsets(const Shape &own, const Shape &batch,
                                  int64_t matrixSize) {
  size_t r = batch.size();
  std::vector<int64_t> stride(r, 0);
  int64_t s = matrixSize;
  for (size_t i = r; i-- > 0;) {
    if (i < r - own.size())
      continue;
    size_t oi = i - (r - own.size());
    stride[i] = own[oi] == 1 ? 0 : s;
    s *= own[oi];
  }
  int64_t nb = numElements(batch);
  std::vector<int64_t> off(static_cast<size_t>(nb), 0);
  std::vector<int64_t> idx(r, 0);
  int64_t cur = 0;
  for (int64_t t = 0; t < nb; ++t) {
    off[static_cast<size_t>(t)] = cur;
    for (size_t i = r; i-- > 0;) {
      ++idx[i];
      cur += stride[i];
      if (idx[i] < batch[i])
        break;
      cur -= stride[i] * idx[i];
      idx[i] = 0;
    }
  }
  return off;
}

//===----------------------------------------------------------------------===//
// Activations and the epilogue
//===----------------------------------------------------------------------===//

/// activate() for float and double data. For float, T(c) of each constant
/// is the float literal's value (each decimal's nearest float is also the
/// float nearest its double), so the float results are what they were.
template <typename T>
void activateIn(Activation act, T *v, int64_t n, float lo, float hi) {
  switch (act) {
  case Activation::None:
    return;
  case Activation::Relu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] > T(0) ? v[i] : T(0);
    return;
  case Activation::Gelu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = T(0.5) * v[i] * (T(1) + std::erf(v[i] * T(0.70710678118654752)));
    return;
  case Activation::GeluTanh:
    for (int64_t i = 0; i < n; ++i) {
      T x = v[i];
      v[i] = T(0.5) * x *
             (T(1) + std::tanh(T(0.79788456080286536) *
                               (x + T(0.044715) * x * x * x)));
    }
    return;
  case Activation::Clip:
    // As the elementwise clip: NaN stays NaN.
    for (int64_t i = 0; i < n; ++i) {
      T x = v[i] < T(lo) ? T(lo) : v[i];
      v[i] = x > T(hi) ? T(hi) : x;
    }
    return;
  // As the elementwise functions of the same names.
  case Activation::Silu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] / (T(1) + std::exp(-v[i]));
    return;
  case Activation::Sigmoid:
    for (int64_t i = 0; i < n; ++i)
      v[i] = T(1) / (T(1) + std::exp(-v[i]));
    return;
  case Activation::Tanh:
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::tanh(v[i]);
    return;
  case Activation::HardSwish:
    for (int64_t i = 0; i < n; ++i) {
      T g = v[i] / T(6) + T(0.5);
      g = g < T(0) ? T(0) : (g > T(1) ? T(1) : g);
      v[i] = v[i] * g;
    }
    return;
  }
}

void activate(Activation act, float *v, int64_t n, float lo, float hi) {
  activateIn(act, v, n, lo, hi);
}

void activate(Activation act, double *v, int64_t n, float lo, float hi) {
  activateIn(act, v, n, lo, hi);
}

template <typename T>
void activationGradientIn(ActivationGradient g, T *v, const T *aux, int64_t n) {
  switch (g) {
  case ActivationGradient::None:
    return;
  case ActivationGradient::Relu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = aux[i] > T(0) ? v[i] : T(0);
    return;
  case ActivationGradient::Gelu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = geluGradient(v[i], aux[i]);
    return;
  case ActivationGradient::GeluTanh:
    for (int64_t i = 0; i < n; ++i)
      v[i] = geluTanhGradient(v[i], aux[i]);
    return;
  }
}

void activationGradient(ActivationGradient g, float *v, const float *aux,
                        int64_t n) {
  activationGradientIn(g, v, aux, n);
}

void activationGradient(ActivationGradient g, double *v, const double *aux,
                        int64_t n) {
  activationGradientIn(g, v, aux, n);
}

void addScaled(float *acc, DType t, const void *src, int64_t n, float scale) {
  switch (t) {
  case DType::F32: {
    const float *s = static_cast<const float *>(src);
    if (scale == 1.0f)
      for (int64_t i = 0; i < n; ++i)
        acc[i] += s[i];
    else
      for (int64_t i = 0; i < n; ++i)
        acc[i] += scale * s[i];
    return;
  }
  case DType::F16: {
    const Half *s = static_cast<const Half *>(src);
    for (int64_t i = 0; i < n; ++i)
      acc[i] += scale * toFloat(s[i]);
    return;
  }
  case DType::BF16: {
    const BFloat16 *s = static_cast<const BFloat16 *>(src);
    for (int64_t i = 0; i < n; ++i)
      acc[i] += scale * toFloat(s[i]);
    return;
  }
  default:
    return;
  }
}

//===----------------------------------------------------------------------===//
// BLAS
//===----------------------------------------------------------------------===//

bool fitsBlasInt(std::initializer_list<int64_t> values) {
  for (int64_t v : values)
    if (v < 0 || v > static_cast<int64_t>(std::numeric_limits<BlasInt>::max()))
      return false;
  return true;
}

namespace {

/// cblas ?gemm / ?gemv for one type.
template <typename T> struct Blas;
template <> struct Blas<float> {
  template <typename... A> static void gemm(A... a) { cblas_sgemm(a...); }
  template <typename... A> static void gemv(A... a) { cblas_sgemv(a...); }
};
template <> struct Blas<double> {
  template <typename... A> static void gemm(A... a) { cblas_dgemm(a...); }
  template <typename... A> static void gemv(A... a) { cblas_dgemv(a...); }
};

BlasInt bi(int64_t v) { return static_cast<BlasInt>(std::max<int64_t>(v, 1)); }

/// Row-major C[m, n] = alpha * op(A)[m, k] @ op(B)[k, n] + beta * C. A single
/// row or column of C goes to ?gemv, several times faster than ?gemm there.
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  if (k > 0 && (m == 1 || n == 1)) {
    // ?gemv reads y even when beta is 0 in some versions: clear it.
    if (beta == T(0)) {
      if (m == 1)
        std::fill(c, c + n, T(0));
      else
        for (int64_t i = 0; i < m; ++i)
          c[i * ldc] = T(0);
    }
    if (m == 1) {
      // c[0, :] = op(B)^T x, x = op(A)[0, :] (stride lda when transposed).
      int64_t incX = transA ? lda : 1;
      if (transB) // B is [n, k]
        Blas<T>::gemv(CblasRowMajor, CblasNoTrans, bi(n), bi(k), alpha, b,
                      bi(ldb), a, bi(incX), beta, c, 1);
      else // B is [k, n]
        Blas<T>::gemv(CblasRowMajor, CblasTrans, bi(k), bi(n), alpha, b,
                      bi(ldb), a, bi(incX), beta, c, 1);
    } else {
      // c[:, 0] = op(A) x, x = op(B)[:, 0] (stride ldb unless transposed).
      int64_t incX = transB ? 1 : ldb;
      if (transA) // A is [k, m]
        Blas<T>::gemv(CblasRowMajor, CblasTrans, bi(k), bi(m), alpha, a,
                      bi(lda), b, bi(incX), beta, c, bi(ldc));
      else // A is [m, k]
        Blas<T>::gemv(CblasRowMajor, CblasNoTrans, bi(m), bi(k), alpha, a,
                      bi(lda), b, bi(incX), beta, c, bi(ldc));
    }
    return;
  }
  Blas<T>::gemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, bi(m), bi(n),
                static_cast<BlasInt>(k), alpha, a, bi(lda), b, bi(ldb), beta,
                c, bi(ldc));
}

} // namespace

void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc) {
  gemm<float>(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           double alpha, const double *a, int64_t lda, const double *b,
           int64_t ldb, double beta, double *c, int64_t ldc) {
  gemm<double>(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/// The elements of a float tensor (f32, f16, bf16, f64) as doubles.
std::vector<double> toF64(const TensorView &v) {
  size_t n = static_cast<size_t>(v.numElements());
  std::vector<double> r(n);
  switch (v.dtype) {
  case DType::F64:
    std::copy(v.as<const double>(), v.as<const double>() + n, r.begin());
    break;
  case DType::F32:
    std::copy(v.as<const float>(), v.as<const float>() + n, r.begin());
    break;
  case DType::F16:
    convertF16ToF64(v.as<const uint16_t>(), r.data(), n);
    break;
  case DType::BF16:
    convertBF16ToF64(v.as<const uint16_t>(), r.data(), n);
    break;
  default:
    break;
  }
  return r;
}

/// Rounds n doubles once into a float tensor (f32, f16, bf16, f64).
void fromF64(const double *src, const TensorView &v) {
  size_t n = static_cast<size_t>(v.numElements());
  switch (v.dtype) {
  case DType::F64:
    std::copy(src, src + n, v.as<double>());
    break;
  case DType::F32:
    for (size_t i = 0; i < n; ++i)
      v.as<float>()[i] = static_cast<float>(src[i]);
    break;
  case DType::F16:
    convertF64ToF16(src, v.as<uint16_t>(), n);
    break;
  case DType::BF16:
    convertF64ToBF16(src, v.as<uint16_t>(), n);
    break;
  default:
    break;
  }
}

} // namespace mp::rt::cpu::detail

namespace mp::rt::cpu {

std::vector<int64_t> broadcastStridesOf(const Shape &from, const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < from.size() && i < shape.size(); ++i) {
    const size_t f = from.size() - 1 - i, d = shape.size() - 1 - i;
    strides[d] = from[f] == 1 ? 0 : stride;
    stride *= from[f];
  }
  return strides;
}

int64_t broadcastRowOffset(const Shape &shape,
                           const std::vector<int64_t> &strides, int64_t row) {
  int64_t offset = 0;
  for (size_t d = shape.size() - 1; d-- > 0;) {
    offset += (row % shape[d]) * strides[d];
    row /= shape[d];
  }
  return offset;
}

} // namespace mp::rt::cpu
