//===- NNMisc.cpp - nll_loss, topk, cumsum, trilu, hardmax on the CPU -----===//
//
// Each kernel views its tensor as [outer, axis, inner] along its axis and
// dispatches on the dtype once, outside the loops.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/NNKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mp::rt::cpu {
using namespace detail;

namespace {

Status normalizeAxis(std::string_view op, int64_t &axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) +
                        " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += r;
  return Status::ok();
}

/// [outer, axis, inner] sizes of `shape` around `axis` (normalized).
void splitAt(const Shape &shape, int64_t axis, int64_t &outer, int64_t &len,
             int64_t &inner) {
  outer = numElements(Shape(shape.begin(), shape.begin() + axis));
  len = shape[axis];
  inner = numElements(Shape(shape.begin() + axis + 1, shape.end()));
}

std::string dt(DType t) { return std::string(dtypeName(t)); }

/// What cumsum and hardmax check alike once x and y are valid views: y is
/// like x, x has rank >= 1, the axis is in range (normalized in place), and
/// y is x itself or apart from it.
Status checkSameAlongAxis(std::string_view op, const TensorView &x,
                          const TensorView &y, int64_t &axis) {
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y is " + dt(y.dtype) + " " + shapeStr(y.shape) +
                        ", expected x's " + dt(x.dtype) + " " +
                        shapeStr(x.shape));
  if (x.shape.empty())
    return fail(op, "x must have rank >= 1");
  if (Status s = normalizeAxis(op, axis, x.shape.size()); !s)
    return s;
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) &&
      x.data != y.data)
    return fail(op, "y overlaps x without being x itself");
  return Status::ok();
}

/// Calls fn(T{}) with T the C++ type of a numeric dtype (Half / BFloat16 for
/// the 16-bit floats); false for bool.
template <typename Fn> bool withNumeric(DType t, Fn &&fn) {
  switch (t) {
  case DType::F32: fn(float{}); return true;
  case DType::F64: fn(double{}); return true;
  case DType::F16: fn(Half{}); return true;
  case DType::BF16: fn(BFloat16{}); return true;
  case DType::I8: fn(int8_t{}); return true;
  case DType::U8: fn(uint8_t{}); return true;
  case DType::I16: fn(int16_t{}); return true;
  case DType::U16: fn(uint16_t{}); return true;
  case DType::I32: fn(int32_t{}); return true;
  case DType::U32: fn(uint32_t{}); return true;
  case DType::I64: fn(int64_t{}); return true;
  case DType::U64: fn(uint64_t{}); return true;
  case DType::Bool: return false;
  default:
    return false; // the narrow types
  }
  return false;
}

/// A value to compare: widened floats, integers as they are.
template <typename T> inline auto key(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return toFloat(v);
  else
    return v;
}

template <typename K> inline bool isNan(K v) {
  if constexpr (std::is_floating_point_v<K>)
    return std::isnan(v);
  else
    return false;
}

} // namespace

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss
//===----------------------------------------------------------------------===//

namespace {

template <typename T, typename I>
Status nllLossTyped(const TensorView &input, const TensorView &target,
                    const TensorView *weight, const TensorView &loss,
                    LossReduction reduction, std::optional<int64_t> ignore,
                    int64_t n, int64_t c, int64_t inner) {
  const T *in = input.as<const T>();
  const I *tg = target.as<const I>();
  const T *wt = weight ? weight->as<const T>() : nullptr;
  T *out = loss.as<T>();
  auto toD = [](T v) { return static_cast<double>(key(v)); };
  auto store = [](double v) {
    if constexpr (std::is_same_v<T, Half>)
      return toHalf(v);
    else if constexpr (std::is_same_v<T, BFloat16>)
      return toBFloat16(v);
    else
      return static_cast<T>(v);
  };
  double sum = 0.0, weightSum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t t = static_cast<int64_t>(tg[i * inner + j]);
      double l = 0.0;
      if (!(ignore && t == *ignore)) {
        if (t < 0 || t >= c)
          return fail("nll_loss", "target " + std::to_string(t) + " at " +
                                      std::to_string(i * inner + j) +
                                      " is outside [0, " + std::to_string(c) +
                                      ")");
        double w = wt ? toD(wt[t]) : 1.0;
        l = -toD(in[(i * c + t) * inner + j]) * w;
        weightSum += w;
      }
      if (reduction == LossReduction::None)
        out[i * inner + j] = store(l);
      else
        sum += l;
    }
  if (reduction == LossReduction::Sum)
    out[0] = store(sum);
  else if (reduction == LossReduction::Mean)
    out[0] = store(sum / weightSum); // no counted target: 0/0 = NaN
  return Status::ok();
}

} // namespace

Status checkNllLoss(const TensorView &input, const TensorView &target,
                    const TensorView *weight, const TensorView &loss,
                    LossReduction reduction) {
  constexpr std::string_view kOp = "nll_loss";
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"input", &input},
        {"target", &target}, {"weight", weight}, {"loss", &loss}})
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;
  if (!isFloat(input.dtype))
    return fail(kOp, "input has dtype " + dt(input.dtype) +
                         "; expected f32, f16, bf16 or f64");
  if (target.dtype != DType::I32 && target.dtype != DType::I64)
    return fail(kOp, "target has dtype " + dt(target.dtype) +
                         "; expected i32 or i64");
  if (input.shape.size() < 2)
    return fail(kOp, "input must be [N, C] or [N, C, d1..dk], got " +
                         shapeStr(input.shape));
  int64_t n = input.shape[0], c = input.shape[1];
  Shape expectedTarget{n};
  expectedTarget.insert(expectedTarget.end(), input.shape.begin() + 2,
                        input.shape.end());
  if (target.shape != expectedTarget)
    return fail(kOp, "target has shape " + shapeStr(target.shape) +
                         ", expected " + shapeStr(expectedTarget));
  if (weight && (weight->shape != Shape{c} || weight->dtype != input.dtype))
    return fail(kOp, "weight is " + dt(weight->dtype) + " " +
                         shapeStr(weight->shape) + ", expected " +
                         dt(input.dtype) + " [" + std::to_string(c) + "]");
  if (loss.dtype != input.dtype)
    return fail(kOp, "loss has dtype " + dt(loss.dtype) +
                         ", expected input's " + dt(input.dtype));
  if (reduction == LossReduction::None ? loss.shape != target.shape
                                       : loss.numElements() != 1)
    return fail(kOp, "loss has shape " + shapeStr(loss.shape) + ", expected " +
                         (reduction == LossReduction::None
                              ? shapeStr(target.shape)
                              : std::string("one element")));
  for (const TensorView *in : {&input, &target, weight})
    if (in && overlaps(in->data, in->byteCount(), loss.data, loss.byteCount()))
      return fail(kOp, "loss overlaps an operand");
  return Status::ok();
}

Status nllLoss(const TensorView &input, const TensorView &target,
               const TensorView *weight, const TensorView &loss,
               LossReduction reduction, std::optional<int64_t> ignoreIndex) {
  if (Status s = checkNllLoss(input, target, weight, loss, reduction); !s)
    return s;
  int64_t n = input.shape[0], c = input.shape[1];
  int64_t inner = numElements(Shape(input.shape.begin() + 2, input.shape.end()));
  Status status = Status::ok();
  withNumeric(input.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>) {
      if (target.dtype == DType::I32)
        status = nllLossTyped<T, int32_t>(input, target, weight, loss,
                                          reduction, ignoreIndex, n, c, inner);
      else
        status = nllLossTyped<T, int64_t>(input, target, weight, loss,
                                          reduction, ignoreIndex, n, c, inner);
    }
  });
  return status;
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

Status checkTopk(const TensorView &x, const TensorView &values,
                 const TensorView &indices, int64_t &axis) {
  constexpr std::string_view kOp = "topk";
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"values", &values}, {"indices", &indices}})
    if (Status s = checkView(kOp, name, *v); !s)
      return s;
  if (x.shape.empty())
    return fail(kOp, "x must have rank >= 1");
  if (Status s = normalizeAxis(kOp, axis, x.shape.size()); !s)
    return s;
  if (values.dtype != x.dtype || x.dtype == DType::Bool)
    return fail(kOp, "values has dtype " + dt(values.dtype) + ", x " +
                         dt(x.dtype) + "; expected one numeric dtype");
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return fail(kOp, "indices has dtype " + dt(indices.dtype) +
                         "; expected i64 or i32");
  Shape expected = x.shape;
  expected[axis] = values.shape.size() == x.shape.size() ? values.shape[axis] : -1;
  if (values.shape != expected || indices.shape != expected ||
      expected[axis] > x.shape[axis])
    return fail(kOp, "values " + shapeStr(values.shape) + " and indices " +
                         shapeStr(indices.shape) +
                         " must be x's shape " + shapeStr(x.shape) +
                         " with at most " + std::to_string(x.shape[axis]) +
                         " entries along axis " + std::to_string(axis));
  for (const TensorView *out : {&values, &indices})
    if (overlaps(x.data, x.byteCount(), out->data, out->byteCount()))
      return fail(kOp, "an output overlaps x");
  if (overlaps(values.data, values.byteCount(), indices.data,
               indices.byteCount()))
    return fail(kOp, "values overlaps indices");
  return Status::ok();
}

Status topk(const TensorView &x, const TensorView &values,
            const TensorView &indices, int64_t axis, bool largest,
            bool sorted) {
  (void)sorted; // always sorted: a valid order for sorted = 0 too
  if (Status s = checkTopk(x, values, indices, axis); !s)
    return s;
  int64_t outer, len, inner;
  splitAt(x.shape, axis, outer, len, inner);
  int64_t k = values.shape[axis];
  if (values.numElements() == 0)
    return Status::ok();
  withNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    using K = decltype(key(T{}));
    const T *src = x.as<const T>();
    T *vals = values.as<T>();
    std::vector<int64_t> order(static_cast<size_t>(len));
    // NaN ranks above every number; equal keys keep the lower index first.
    auto above = [](K a, K b) {
      if (isNan(a) || isNan(b))
        return !isNan(b);
      return a > b;
    };
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const T *line = src + o * len * inner + in;
        auto at = [&](int64_t i) { return key(line[i * inner]); };
        std::iota(order.begin(), order.end(), int64_t(0));
        auto first = [&](int64_t a, int64_t b) {
          K ka = at(a), kb = at(b);
          bool before = largest ? above(ka, kb) : above(kb, ka);
          bool after = largest ? above(kb, ka) : above(ka, kb);
          return before || (!after && a < b);
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), first);
        for (int64_t j = 0; j < k; ++j) {
          int64_t dst = (o * k + j) * inner + in;
          vals[dst] = line[order[j] * inner];
          if (indices.dtype == DType::I64)
            indices.as<int64_t>()[dst] = order[j];
          else
            indices.as<int32_t>()[dst] = static_cast<int32_t>(order[j]);
        }
      }
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

namespace {

/// Sums along [outer, len, inner] with accumulator type A.
template <typename T, typename A>
void cumsumTyped(const T *x, T *y, int64_t outer, int64_t len, int64_t inner,
                 bool exclusive, bool reverse) {
  auto loadA = [](T v) -> A {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return toFloat(v);
    else
      return static_cast<A>(v);
  };
  auto storeT = [](A v) -> T {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return storeAs<T>(v);
    else
      return static_cast<T>(v);
  };
  std::vector<A> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), A(0));
    for (int64_t s = 0; s < len; ++s) {
      int64_t i = reverse ? len - 1 - s : s;
      const T *src = x + (o * len + i) * inner;
      T *dst = y + (o * len + i) * inner;
      for (int64_t j = 0; j < inner; ++j) {
        A v = loadA(src[j]); // read first: y may be x
        if (exclusive) {
          dst[j] = storeT(acc[j]);
          acc[j] += v;
        } else {
          acc[j] += v;
          dst[j] = storeT(acc[j]);
        }
      }
    }
  }
}

} // namespace

Status checkCumsum(const TensorView &x, const TensorView &y, int64_t &axis) {
  constexpr std::string_view kOp = "cumsum";
  if (Status s = checkView(kOp, "x", x); !s)
    return s;
  if (Status s = checkView(kOp, "y", y); !s)
    return s;
  if (Status s = checkSameAlongAxis(kOp, x, y, axis); !s)
    return s;
  switch (x.dtype) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::I32:
  case DType::I64:
    return Status::ok();
  default:
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f64, f16, bf16, i32 or i64");
  }
}

Status cumsum(const TensorView &x, const TensorView &y, int64_t axis,
              bool exclusive, bool reverse) {
  if (Status s = checkCumsum(x, y, axis); !s)
    return s;
  int64_t outer, len, inner;
  splitAt(x.shape, axis, outer, len, inner);
  switch (x.dtype) {
  case DType::F32:
    cumsumTyped<float, float>(x.as<const float>(), y.as<float>(), outer, len,
                              inner, exclusive, reverse);
    return Status::ok();
  case DType::F64:
    cumsumTyped<double, double>(x.as<const double>(), y.as<double>(), outer,
                                len, inner, exclusive, reverse);
    return Status::ok();
  case DType::F16:
    cumsumTyped<Half, float>(x.as<const Half>(), y.as<Half>(), outer, len,
                             inner, exclusive, reverse);
    return Status::ok();
  case DType::BF16:
    cumsumTyped<BFloat16, float>(x.as<const BFloat16>(), y.as<BFloat16>(),
                                 outer, len, inner, exclusive, reverse);
    return Status::ok();
  case DType::I32:
    // Wrap-around like the int32 addition of other backends, without UB.
    cumsumTyped<int32_t, uint32_t>(x.as<const int32_t>(), y.as<int32_t>(),
                                   outer, len, inner, exclusive, reverse);
    return Status::ok();
  case DType::I64:
    cumsumTyped<int64_t, uint64_t>(x.as<const int64_t>(), y.as<int64_t>(),
                                   outer, len, inner, exclusive, reverse);
    return Status::ok();
  default:
    return Status::ok(); // checkCumsum refused the other dtypes
  }
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

Status checkTrilu(const TensorView &x, const TensorView &y) {
  constexpr std::string_view kOp = "trilu";
  if (Status s = checkView(kOp, "x", x); !s)
    return s;
  if (Status s = checkView(kOp, "y", y); !s)
    return s;
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(kOp, "y is " + dt(y.dtype) + " " + shapeStr(y.shape) +
                         ", expected x's " + dt(x.dtype) + " " +
                         shapeStr(x.shape));
  if (x.shape.size() < 2)
    return fail(kOp, "x needs rank >= 2, got " + shapeStr(x.shape));
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) && x.data != y.data)
    return fail(kOp, "y overlaps x without being x itself");
  return Status::ok();
}

Status trilu(const TensorView &x, const TensorView &y, bool upper, int64_t k) {
  if (Status s = checkTrilu(x, y); !s)
    return s;
  size_t rank = x.shape.size();
  int64_t rows = x.shape[rank - 2], cols = x.shape[rank - 1];
  int64_t mats = numElements(Shape(x.shape.begin(), x.shape.end() - 2));
  size_t elt = byteSize(x.dtype);
  // Clamp k so that i + k cannot overflow; beyond +-(rows + cols) nothing
  // changes.
  int64_t lim = rows + cols + 1;
  k = std::clamp(k, -lim, lim);
  const char *src = static_cast<const char *>(x.data);
  char *dst = static_cast<char *>(y.data);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i) {
      size_t off = static_cast<size_t>((m * rows + i) * cols) * elt;
      // Kept columns: upper j >= i + k, lower j <= i + k.
      int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      if (src != dst && hi > lo)
        std::memcpy(dst + off + lo * elt, src + off + lo * elt,
                    static_cast<size_t>(hi - lo) * elt);
      std::memset(dst + off, 0, static_cast<size_t>(lo) * elt);
      std::memset(dst + off + hi * elt, 0, static_cast<size_t>(cols - hi) * elt);
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Hardmax
//===----------------------------------------------------------------------===//

Status checkHardmax(const TensorView &x, const TensorView &y, int64_t &axis) {
  constexpr std::string_view kOp = "hardmax";
  if (Status s = checkView(kOp, "x", x); !s)
    return s;
  if (Status s = checkView(kOp, "y", y); !s)
    return s;
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f16, bf16 or f64");
  return checkSameAlongAxis(kOp, x, y, axis);
}

Status hardmax(const TensorView &x, const TensorView &y, int64_t axis) {
  if (Status s = checkHardmax(x, y, axis); !s)
    return s;
  int64_t outer, len, inner;
  splitAt(x.shape, axis, outer, len, inner);
  withNumeric(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *src = x.as<const T>();
    T *dst = y.as<T>();
    T one, zero;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      one = storeAs<T>(1.0f);
      zero = storeAs<T>(0.0f);
    } else {
      one = T(1);
      zero = T(0);
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        int64_t base = o * len * inner + in;
        int64_t best = 0;
        // The first maximum; a NaN never wins over a number (nor a later NaN).
        for (int64_t i = 1; i < len; ++i) {
          auto v = key(src[base + i * inner]), b = key(src[base + best * inner]);
          if (v > b || (isNan(b) && !isNan(v)))
            best = i;
        }
        for (int64_t i = 0; i < len; ++i)
          dst[base + i * inner] = i == best ? one : zero;
      }
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
