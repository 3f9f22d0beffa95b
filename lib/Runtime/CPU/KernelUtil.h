//===- KernelUtil.h - private helpers of the CPU kernels ----------*- C++
//-*-===//
//
// Storage types and conversions, argument checks, the f32 epilogue and the
// BLAS wrappers shared by the CPU kernels. Not installed; lib/Runtime/CPU/*.cpp
// include it, and the CUDA backend's planners (lib/Runtime/CUDA) for the
// argument checks, so that both backends state a rule once.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CPU_KERNELUTIL_H
#define MP_LIB_RUNTIME_CPU_KERNELUTIL_H

#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mp::rt::cpu::detail {

//===----------------------------------------------------------------------===//
// Storage types: float, double, Half, BFloat16 (mp/Runtime/Half.h). load()
// widens to the compute type, storeAs() rounds once (RNE) from it.
//===----------------------------------------------------------------------===//

inline float load(float v) { return v; }
inline float load(Half v) { return toFloat(v); }
inline float load(BFloat16 v) { return toFloat(v); }
inline double load(double v) { return v; }

template <typename S> inline S storeAs(float v);
template <> inline float storeAs<float>(float v) { return v; }
template <> inline Half storeAs<Half>(float v) { return toHalf(v); }
template <> inline BFloat16 storeAs<BFloat16>(float v) { return toBFloat16(v); }

/// Calls fn(S{}) with S the storage type of t (float, Half, BFloat16);
/// returns false for any other dtype.
template <typename Fn> bool withFloat16or32(DType t, Fn &&fn) {
  switch (t) {
  case DType::F32: fn(float{}); return true;
  case DType::F16: fn(Half{}); return true;
  case DType::BF16: fn(BFloat16{}); return true;
  default: return false;
  }
}

/// Looks `name` up in a table of {spelling, value} pairs: the parsers of
/// the kernels' string options (modes, reductions).
template <typename E, size_t N>
bool parseName(std::string_view name,
               const std::pair<std::string_view, E> (&table)[N], E &out) {
  for (const auto &[spelling, value] : table)
    if (spelling == name) {
      out = value;
      return true;
    }
  return false;
}

/// The value spelled `name` in such a table, if any.
template <typename E, size_t N>
std::optional<E> findName(std::string_view name,
                          const std::pair<std::string_view, E> (&table)[N]) {
  E value;
  if (parseName(name, table, value))
    return value;
  return std::nullopt;
}

/// The spelling of `value` in such a table, or "?".
template <typename E, size_t N>
std::string_view spellingOf(E value,
                            const std::pair<std::string_view, E> (&table)[N]) {
  for (const auto &[spelling, v] : table)
    if (v == value)
      return spelling;
  return "?";
}

/// Increments a multi-index over `extent` (last index fastest), wrapping to
/// all zeros after the last position.
inline void increment(std::vector<int64_t> &idx, const int64_t *extent,
                      size_t rank) {
  for (size_t i = rank; i-- > 0;) {
    if (++idx[i] < extent[i])
      return;
    idx[i] = 0;
  }
}

inline bool isF32or16(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

/// n elements of dtype t (f32, f16 or bf16) at src, widened to f32.
void toF32(DType t, const void *src, float *dst, int64_t n);
/// n f32 values rounded once to dtype t (f32, f16 or bf16).
void fromF32(const float *src, DType t, void *dst, int64_t n);

/// The elements of v in the compute type T of the backward kernels: f32,
/// f16 or bf16 data for float T, f64 data for double T.
template <typename T> std::vector<T> widenTo(const TensorView &v) {
  std::vector<T> r(static_cast<size_t>(v.numElements()));
  if constexpr (std::is_same_v<T, double>)
    std::copy(v.as<const double>(), v.as<const double>() + r.size(), r.begin());
  else
    toF32(v.dtype, v.data, r.data(), v.numElements());
  return r;
}

/// Stores T values computed for v into it (rounded once from f32).
template <typename T>
void narrowInto(const std::vector<T> &src, const TensorView &v) {
  if constexpr (std::is_same_v<T, double>)
    std::copy(src.begin(), src.end(), v.as<double>());
  else
    fromF32(src.data(), v.dtype, v.data, v.numElements());
}

/// A 64-byte aligned, uninitialized scratch array.
template <typename T> class Buffer {
public:
  Buffer() = default;
  explicit Buffer(int64_t n) { reset(n); }
  void reset(int64_t n) {
    size_t bytes = ((static_cast<size_t>(n) * sizeof(T) + 63) / 64) * 64;
    void *p = std::aligned_alloc(64, bytes ? bytes : 64);
    if (!p)
      throw std::bad_alloc();
    p_.reset(static_cast<T *>(p));
    size_ = n;
  }
  T *get() const { return p_.get(); }
  int64_t size() const { return size_; }

private:
  struct Free {
    void operator()(T *p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  int64_t size_ = 0;
};

/// f32 scratch memory of at least n elements. Up to kScratchCacheBytes it is
/// per-thread memory kept between calls (one array per slot: a kernel uses
/// each slot for one purpose at a time), which saves the page faults of fresh
/// large allocations; larger requests get their own allocation.
class Scratch {
public:
  static constexpr int kSlots = 4;
  static constexpr int64_t kScratchCacheBytes = int64_t(64) << 20;
  Scratch(int slot, int64_t n);
  float *get() const { return p_; }

private:
  Buffer<float> own_;
  float *p_ = nullptr;
};

//===----------------------------------------------------------------------===//
// Moving elements as bytes (data movement and indexing kernels)
//===----------------------------------------------------------------------===//

/// Calls fn(T{}) with T the unsigned integer type of an element of `bytes`
/// bytes (1, 2, 4, 8).
template <typename Fn> void withElementType(size_t bytes, Fn &&fn) {
  switch (bytes) {
  case 1:
    fn(uint8_t{});
    break;
  case 2:
    fn(uint16_t{});
    break;
  case 4:
    fn(uint32_t{});
    break;
  default:
    fn(uint64_t{});
    break;
  }
}

/// Row-major strides (in elements) of shape s.
std::vector<int64_t> stridesOf(const Shape &s);

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

/// "[2, 3, 4]".
std::string shapeStr(const Shape &s);

/// The elements of a float tensor (f32, f16, bf16, f64) as doubles.
std::vector<double> toF64(const TensorView &v);
/// Rounds n doubles once into a float tensor (f32, f16, bf16, f64).
void fromF64(const double *src, const TensorView &v);
/// "op: what" as an error.
Status fail(std::string_view op, const std::string &what);
/// Non-negative dims, no overflow of the element count, data present when
/// there are elements.
Status checkView(std::string_view op, std::string_view name,
                 const TensorView &v);
/// Per-spatial-dimension attribute: empty becomes `count` copies of
/// `deflt`; otherwise it must have `count` entries >= `min`.
Status spatialAttr(std::string_view op, std::string_view name,
                   const std::vector<int64_t> &given, size_t count,
                   int64_t deflt, int64_t min, std::vector<int64_t> &out);
/// Checks x and y as views and that x holds f32, f16 or bf16 data.
Status checkFloatInOut(std::string_view op, const TensorView &x,
                       const TensorView &y);
/// The extent of a dilated window along spatial dimension `dim`,
/// ((kernel - 1) * dilation + 1), checked for overflow and against the
/// padded input extent `padded`; `what` is "kernel" or "window".
Status dilatedExtent(std::string_view op, std::string_view what, size_t dim,
                     const Shape &xShape, int64_t kernel, int64_t dilation,
                     int64_t padded, int64_t &extent);
/// True when [a, a+an) and [b, b+bn) (bytes) overlap.
bool overlaps(const void *a, size_t an, const void *b, size_t bn);

//===----------------------------------------------------------------------===//
// Convolution and pooling windows. The Geom arguments are each kernel's own
// geometry struct; these use its k (spatial dims), in, out, ker, stride, dil,
// padB and padE.
//===----------------------------------------------------------------------===//

/// ceil(a / b) for b > 0.
inline int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// x has N, C and at least one spatial dimension.
Status checkSpatialRank(std::string_view op, const Shape &xShape);
/// An elementwise function of `kind` (`op` in messages) takes n inputs.
Status checkElementwiseInputCount(std::string_view op, ElementwiseKind kind,
                                  size_t n);
/// The dtypes of elementwise function fn of `kind` with inputs of dtypes
/// `ins` and result dtype `y`: every input has the dtype the function
/// computes on (where: a bool condition first; pow: any numeric exponent)
/// and y has it too (bool for comparisons and bool results). Returns the
/// dtype the function computes on.
Result<DType> checkElementwiseDtypes(std::string_view op, ElementwiseFn fn,
                                     ElementwiseKind kind,
                                     const std::vector<DType> &ins, DType y);
/// checkSpatialRank of x, and the tensors `aName` (shape `a`) and `bName`
/// (shape `b`) have x's rank (conv and its backward / transpose).
Status checkConvRanks(std::string_view op, const Shape &x,
                      std::string_view aName, const Shape &a,
                      std::string_view bName, const Shape &b);
/// "groups" divides both channel counts (conv and its backward).
Status checkConvGroups(std::string_view op, int64_t groups, int64_t inChannels,
                       int64_t outChannels);
/// The weights `name` (shape `wShape`, `wChannels` input channels) have
/// channelsPerGroup input channels and non-empty kernel dimensions `ker`.
Status checkConvWeights(std::string_view op, std::string_view name,
                        const Shape &wShape, int64_t wChannels,
                        int64_t channelsPerGroup,
                        const std::vector<int64_t> &ker);

/// g.stride, g.dil, g.padB, g.padE from the options' strides, dilations and
/// pads (spatialAttr: checked, empty means the default).
template <typename Options, typename Geom>
Status windowAttrs(std::string_view op, const Options &o, Geom &g) {
  const size_t k = static_cast<size_t>(g.k);
  if (Status s = spatialAttr(op, "strides", o.strides, k, 1, 1, g.stride); !s)
    return s;
  if (Status s = spatialAttr(op, "dilations", o.dilations, k, 1, 1, g.dil); !s)
    return s;
  if (Status s = spatialAttr(op, "padsBegin", o.padsBegin, k, 0, 0, g.padB); !s)
    return s;
  return spatialAttr(op, "padsEnd", o.padsEnd, k, 0, 0, g.padE);
}

/// How far the dilated window (`what`: "kernel" or "window") can move along
/// spatial dimension i of the padded input of shape xShape: the padded extent
/// minus the window's (dilatedExtent checks both).
template <typename Geom>
Status windowRoom(std::string_view op, std::string_view what, size_t i,
                  const Shape &xShape, const Geom &g, int64_t &room) {
  int64_t padded = g.in[i] + g.padB[i] + g.padE[i];
  int64_t span;
  if (Status s =
          dilatedExtent(op, what, i, xShape, g.ker[i], g.dil[i], padded, span);
      !s)
    return s;
  room = padded - span;
  return Status::ok();
}

/// g.out: a convolution's output extents along each spatial dimension, after
/// checking the dilated kernel against the padded input of shape xShape.
template <typename Geom>
Status convOutExtents(std::string_view op, const Shape &xShape, Geom &g) {
  const size_t k = static_cast<size_t>(g.k);
  g.out.resize(k);
  for (size_t i = 0; i < k; ++i) {
    int64_t room;
    if (Status s = windowRoom(op, "kernel", i, xShape, g, room); !s)
      return s;
    g.out[i] = room / g.stride[i] + 1;
  }
  return Status::ok();
}

/// A pooling window (pool and its backward): o.kernel (called `windowName`
/// in messages) and the other attributes into g, and g.out, the spatial
/// extents of `outName` (of shape outShape), checked against what floor or
/// ceil mode gives for the input of shape xShape.
template <typename Geom>
Status checkPoolWindow(std::string_view op, std::string_view windowName,
                       const PoolOptions &o, const Shape &xShape,
                       std::string_view outName, const Shape &outShape,
                       Geom &g) {
  const size_t k = static_cast<size_t>(g.k);
  if (o.kernel.size() != k)
    return fail(op, std::string(windowName) + " has " +
                        std::to_string(o.kernel.size()) +
                        " entries, expected " + std::to_string(k) +
                        " (one per spatial dimension)");
  if (Status s = spatialAttr(op, windowName, o.kernel, k, 1, 1, g.ker); !s)
    return s;
  if (Status s = windowAttrs(op, o, g); !s)
    return s;
  for (size_t i = 0; i < k; ++i) {
    int64_t room;
    if (Status s = windowRoom(op, "window", i, xShape, g, room); !s)
      return s;
    int64_t lo = room / g.stride[i] + 1;
    int64_t hi = ceilDiv(room, g.stride[i]) + 1;
    if (g.out[i] != lo && g.out[i] != hi)
      return fail(
          op, std::string(outName) + " " + shapeStr(outShape) + " has " +
                  std::to_string(g.out[i]) +
                  " outputs along spatial dimension " + std::to_string(i) +
                  ", expected " + std::to_string(lo) +
                  (hi != lo ? " (floor) or " + std::to_string(hi) + " (ceil)"
                            : std::string()));
  }
  return Status::ok();
}

/// A recurrent layer's sizes (the Dims of the forward and the backward
/// kernel: seq, batch, input, hidden, dirs) from x, [seq_length, batch_size,
/// input_size], and the options' hidden size and direction, checked.
template <typename Dims>
Status rnnDims(std::string_view op, const Shape &xShape, int64_t hiddenSize,
               bool bidirectional, Dims &d) {
  // The bound keeps gates * hidden_size (and 2x, 3x of it) from overflowing;
  // the weights' shapes then decide (a fuzzed plan had 5.5e18).
  if (hiddenSize < 1 || hiddenSize > (int64_t(1) << 40))
    return fail(op, "hidden_size must be in [1, 2^40], got " +
                        std::to_string(hiddenSize));
  if (xShape.size() != 3)
    return fail(op, "x must be [seq_length, batch_size, input_size], got " +
                        shapeStr(xShape));
  d.seq = xShape[0];
  d.batch = xShape[1];
  d.input = xShape[2];
  d.hidden = hiddenSize;
  d.dirs = bidirectional ? 2 : 1;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Batch broadcasting (matmul here and in the CUDA backend's planning)
//===----------------------------------------------------------------------===//

/// numpy broadcasting of two batch shapes into `out`; false when they do not
/// broadcast.
bool broadcastShapes(const Shape &x, const Shape &y, Shape &out);
/// Offsets (in elements, matrixSize per matrix) of each batch entry of a
/// batch shape `own` broadcast to `batch`, in row-major order of `batch`.
std::vector<int64_t> batchOffsets(const Shape &own, const Shape &batch,
                                  int64_t matrixSize);

//===----------------------------------------------------------------------===//
// Activations and the f32 epilogue
//===----------------------------------------------------------------------===//

/// Applies `act` to n floats in place.
void activate(Activation act, float *v, int64_t n, float lo = 0, float hi = 0);
/// The same in double (f64 matmul).
void activate(Activation act, double *v, int64_t n, float lo = 0, float hi = 0);
/// v[i] *= act'(aux[i]) for an activation gradient (ReLU: v where aux > 0,
/// else 0), in float or double.
void activationGradient(ActivationGradient g, float *v, const float *aux,
                        int64_t n);
void activationGradient(ActivationGradient g, double *v, const double *aux,
                        int64_t n);
/// dy * GELU'(x), exact (with erf) or of the tanh approximation: the
/// elementwise gelu_grad / gelu_tanh_grad and the matmul epilogues.
template <typename T> T geluGradient(T dy, T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
  const T pdf = T(0.39894228040143267794) * std::exp(T(-0.5) * x * x);
  return dy * (cdf + x * pdf);
}
template <typename T> T geluTanhGradient(T dy, T x) {
  const T k = T(0.79788456080286535588), c = T(0.044715);
  const T t = std::tanh(k * (x + c * x * x * x));
  return dy * (T(0.5) * (T(1) + t) +
               T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x));
}
/// Adds `scale * src` (n elements of dtype t: f32, f16, bf16) to acc.
void addScaled(float *acc, DType t, const void *src, int64_t n, float scale);

//===----------------------------------------------------------------------===//
// BLAS (row-major; int dimensions as OpenBLAS's LP64 interface takes them)
//===----------------------------------------------------------------------===//

/// True when every value fits the BLAS integer type.
bool fitsBlasInt(std::initializer_list<int64_t> values);
void sgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, const float *a, int64_t lda, const float *b,
           int64_t ldb, float beta, float *c, int64_t ldc);
void dgemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           double alpha, const double *a, int64_t lda, const double *b,
           int64_t ldb, double beta, double *c, int64_t ldc);

} // namespace mp::rt::cpu::detail

#endif // MP_LIB_RUNTIME_CPU_KERNELUTIL_H
