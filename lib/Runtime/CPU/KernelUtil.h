//===- KernelUtil.h - private helpers of the CPU kernels ----------*- C++ -*-===//
//
// Storage types and conversions, argument checks, the f32 epilogue and the
// BLAS wrappers shared by the CPU kernels. Not installed; lib/Runtime/CPU/*.cpp
// include it, and the CUDA backend's planners (lib/Runtime/CUDA) for the
// argument checks, so that both backends state a rule once.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CPU_KERNELUTIL_H
#define MP_LIB_RUNTIME_CPU_KERNELUTIL_H

#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <memory>
#include <string>
#include <string_view>
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
void activate(Activation act, float *v, int64_t n);
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
