//===- Reduce.cpp - kernel.reduce on the CPU ------------------------------===//
//
// How it runs: x's dims of size 1 are dropped and neighbouring dims of the
// same kind (reduced / kept) merged, so that x is a sequence of groups, e.g.
// [kept 64, reduced 768] for a LayerNorm-style mean over the last axis of
// [B, S, H], [kept N*C, reduced H*W] for a global average, or [kept B,
// reduced S, kept H] for a middle axis. The kernel walks every group but the
// last with an odometer; the last group is either
//  * reduced: a contiguous row, reduced with several independent
//    accumulators (no serial dependency on one register), or
//  * kept: a contiguous segment of outputs, combined element by element
//    into their accumulators (a loop the compiler vectorizes).
// 16-bit data is widened to f32 in chunks (bulk F16C conversions) first.
// Sums and products of float data accumulate in f64 and round once at the
// store; integer data reduces exactly in 64-bit integers.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include "ElementwiseConvert.h"
#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>

namespace mp::rt::cpu {

using namespace detail;

std::optional<ReduceFn> parseReduceFn(std::string_view name) {
  for (size_t i = 0; i < std::size(kReduceFnNames); ++i)
    if (kReduceFnNames[i] == name)
      return static_cast<ReduceFn>(i);
  return std::nullopt;
}

namespace {

constexpr int64_t kChunk = 1024;

template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };

/// m elements at p as C: in place, or widened into buf.
template <typename S, typename C>
const C *loadChunk(const S *p, int64_t m, C *buf) {
  if constexpr (std::is_same_v<S, C>) {
    return p;
  } else if constexpr (std::is_same_v<S, Half>) {
    convertF16ToF32(reinterpret_cast<const uint16_t *>(p), buf,
                    static_cast<size_t>(m));
    return buf;
  } else {
    static_assert(std::is_same_v<S, BFloat16>);
    convertBF16ToF32(reinterpret_cast<const uint16_t *>(p), buf,
                     static_cast<size_t>(m));
    return buf;
  }
}

/// x as groups: every group but the last is walked by an odometer (sizes,
/// x strides, y strides, 0 for reduced groups); the last is contiguous.
struct Geometry {
  std::vector<int64_t> outerSize, outerX, outerY;
  int64_t last = 1;
  bool lastReduced = false;
  int64_t ySize = 1;
};

Geometry makeGeometry(const Shape &x, const std::vector<bool> &reduced) {
  std::vector<int64_t> size;
  std::vector<bool> red;
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 1)
      continue;
    if (!size.empty() && red.back() == reduced[d]) {
      size.back() *= x[d];
    } else {
      size.push_back(x[d]);
      red.push_back(reduced[d]);
    }
  }
  if (size.empty()) { // a single element
    size.push_back(1);
    red.push_back(false);
  }
  Geometry g;
  g.last = size.back();
  g.lastReduced = red.back();
  int64_t xStep = g.last, yStep = g.lastReduced ? 1 : g.last;
  for (size_t i = size.size() - 1; i-- > 0;) {
    g.outerSize.insert(g.outerSize.begin(), size[i]);
    g.outerX.insert(g.outerX.begin(), xStep);
    g.outerY.insert(g.outerY.begin(), red[i] ? 0 : yStep);
    xStep *= size[i];
    if (!red[i])
      yStep *= size[i];
  }
  g.ySize = yStep;
  return g;
}

/// Calls f(xOffset, yOffset) for every position of the outer groups.
template <typename F> void forEachOuter(const Geometry &g, F &&f) {
  size_t rank = g.outerSize.size();
  int64_t outer = 1;
  for (int64_t s : g.outerSize)
    outer *= s;
  std::vector<int64_t> idx(rank, 0);
  int64_t xo = 0, yo = 0;
  for (int64_t o = 0; o < outer; ++o) {
    f(xo, yo);
    for (size_t d = rank; d-- > 0;) {
      xo += g.outerX[d];
      yo += g.outerY[d];
      if (++idx[d] < g.outerSize[d])
        break;
      xo -= g.outerX[d] * g.outerSize[d];
      yo -= g.outerY[d] * g.outerSize[d];
      idx[d] = 0;
    }
  }
}

/// acc[o] = comb over the x elements of output o of map(x, shift[o])
/// (shift: per-output values for log_sum_exp, else null). acc starts at
/// `identity`; x has storage S, computed as ComputeOf<S>.
template <typename S, typename A, typename Map, typename Comb>
void accumulate(const Geometry &g, const S *x, A *acc, const double *shift,
                A identity, Map map, Comb comb) {
  using C = typename ComputeOf<S>::type;
  std::fill(acc, acc + g.ySize, identity);
  alignas(64) C buf[kChunk];
  forEachOuter(g, [&](int64_t xo, int64_t yo) {
    if (g.lastReduced) {
      // Eight independent accumulators over the contiguous row.
      const double sh = shift ? shift[yo] : 0.0;
      A part[8];
      std::fill(part, part + 8, identity);
      for (int64_t off = 0; off < g.last; off += kChunk) {
        int64_t m = std::min(kChunk, g.last - off), i = 0;
        const C *p = loadChunk<S, C>(x + xo + off, m, buf);
        for (; i + 8 <= m; i += 8)
          for (int j = 0; j < 8; ++j)
            part[j] = comb(part[j], map(p[i + j], sh));
        for (; i < m; ++i)
          part[0] = comb(part[0], map(p[i], sh));
      }
      A r = comb(comb(comb(part[0], part[1]), comb(part[2], part[3])),
                 comb(comb(part[4], part[5]), comb(part[6], part[7])));
      acc[yo] = comb(acc[yo], r);
    } else {
      for (int64_t off = 0; off < g.last; off += kChunk) {
        int64_t m = std::min(kChunk, g.last - off);
        const C *p = loadChunk<S, C>(x + xo + off, m, buf);
        A *a = acc + yo + off;
        if (shift) {
          const double *sh = shift + yo + off;
          for (int64_t i = 0; i < m; ++i)
            a[i] = comb(a[i], map(p[i], sh[i]));
        } else {
          for (int64_t i = 0; i < m; ++i)
            a[i] = comb(a[i], map(p[i], 0.0));
        }
      }
    }
  });
}

/// NaN-propagating max / min (numpy.maximum / numpy.minimum). `|`, not
/// `||`: no branch, so that the loops over them vectorize.
template <typename A> A maxOf(A a, A b) { return ((a > b) | (a != a)) ? a : b; }
template <typename A> A minOf(A a, A b) { return ((a < b) | (a != a)) ? a : b; }

/// Reductions other than arg*, for data of storage S.
template <typename S>
void reduceTyped(ReduceFn fn, const Geometry &g, int64_t count, const S *x,
                 S *y) {
  using C = typename ComputeOf<S>::type;
  constexpr bool isInt = std::is_integral_v<C>;
  // Sums: f64 for float data, exact (wrapping) 64-bit integers for integers.
  using SumT = std::conditional_t<isInt, uint64_t, double>;
  int64_t n = g.ySize;
  auto store = [&](auto finalize, const auto *acc) {
    for (int64_t o = 0; o < n; ++o)
      y[o] = convertValue<S>(finalize(acc[o], o));
  };
  auto plus = [](auto a, auto b) { return a + b; };
  switch (fn) {
  case ReduceFn::Max:
  case ReduceFn::Min: {
    bool isMax = fn == ReduceFn::Max;
    C identity = isMax ? (isInt ? std::numeric_limits<C>::lowest()
                                : -std::numeric_limits<C>::infinity())
                       : (isInt ? std::numeric_limits<C>::max()
                                : std::numeric_limits<C>::infinity());
    Buffer<C> acc(n);
    auto id = [](C v, double) { return v; };
    // Lambdas, not function pointers, so that the loops inline them.
    if (isMax)
      accumulate<S, C>(g, x, acc.get(), nullptr, identity, id,
                       [](C a, C b) { return maxOf(a, b); });
    else
      accumulate<S, C>(g, x, acc.get(), nullptr, identity, id,
                       [](C a, C b) { return minOf(a, b); });
    store([](C v, int64_t) { return v; }, acc.get());
    return;
  }
  case ReduceFn::Prod: {
    Buffer<SumT> acc(n);
    accumulate<S, SumT>(
        g, x, acc.get(), nullptr, SumT(1),
        [](C v, double) { return static_cast<SumT>(v); },
        [](SumT a, SumT b) { return a * b; });
    store([](SumT v, int64_t) { return v; }, acc.get());
    return;
  }
  case ReduceFn::Sum:
  case ReduceFn::Mean:
  case ReduceFn::L1:
  case ReduceFn::SumSquare: {
    Buffer<SumT> acc(n);
    auto id = [](C v, double) { return static_cast<SumT>(v); };
    if (fn == ReduceFn::L1)
      accumulate<S, SumT>(
          g, x, acc.get(), nullptr, SumT(0),
          [](C v, double) {
            if constexpr (std::is_unsigned_v<C>)
              return static_cast<SumT>(v);
            else if constexpr (isInt)
              return v < 0 ? SumT(0) - static_cast<SumT>(v)
                           : static_cast<SumT>(v);
            else
              return std::fabs(static_cast<SumT>(v));
          },
          plus);
    else if (fn == ReduceFn::SumSquare)
      accumulate<S, SumT>(
          g, x, acc.get(), nullptr, SumT(0),
          [](C v, double) {
            SumT s = static_cast<SumT>(v);
            return s * s;
          },
          plus);
    else
      accumulate<S, SumT>(g, x, acc.get(), nullptr, SumT(0), id, plus);
    if (fn == ReduceFn::Mean) {
      store(
          [count](SumT v, int64_t) {
            if constexpr (isInt && std::is_signed_v<C>) // two's complement sum
              return count ? static_cast<int64_t>(v) / count : int64_t(0);
            else if constexpr (isInt)
              return count ? v / static_cast<uint64_t>(count) : uint64_t(0);
            else // 0 / 0 is NaN, as numpy.mean of nothing
              return v / static_cast<double>(count);
          },
          acc.get());
    } else if constexpr (isInt && std::is_signed_v<C>) {
      store([](SumT v, int64_t) { return static_cast<int64_t>(v); }, acc.get());
    } else {
      store([](SumT v, int64_t) { return v; }, acc.get());
    }
    return;
  }
  case ReduceFn::L2:
  case ReduceFn::LogSum: {
    Buffer<double> acc(n);
    bool l2 = fn == ReduceFn::L2;
    if (l2)
      accumulate<S, double>(
          g, x, acc.get(), nullptr, 0.0,
          [](C v, double) {
            double d = static_cast<double>(v);
            return d * d;
          },
          plus);
    else
      accumulate<S, double>(
          g, x, acc.get(), nullptr, 0.0,
          [](C v, double) { return static_cast<double>(v); }, plus);
    if (l2)
      store([](double v, int64_t) { return std::sqrt(v); }, acc.get());
    else
      store([](double v, int64_t) { return std::log(v); }, acc.get());
    return;
  }
  case ReduceFn::LogSumExp: {
    // max + log(sum(exp(x - max))); an infinite or NaN max is not
    // subtracted, so that all -inf (or nothing) gives -inf, an inf gives inf
    // and a NaN gives NaN.
    Buffer<C> mx(n);
    C lowest = isInt ? std::numeric_limits<C>::lowest()
                     : -std::numeric_limits<C>::infinity();
    accumulate<S, C>(
        g, x, mx.get(), nullptr, lowest, [](C v, double) { return v; },
        [](C a, C b) { return maxOf(a, b); });
    Buffer<double> shift(n), acc(n);
    for (int64_t o = 0; o < n; ++o) {
      double m = static_cast<double>(mx.get()[o]);
      shift.get()[o] = std::isfinite(m) ? m : 0.0;
    }
    const double *sh = shift.get();
    accumulate<S, double>(
        g, x, acc.get(), sh, 0.0,
        [](C v, double s) { return std::exp(static_cast<double>(v) - s); },
        plus);
    store([sh](double v, int64_t o) { return std::log(v) + sh[o]; }, acc.get());
    return;
  }
  case ReduceFn::ArgMax:
  case ReduceFn::ArgMin:
    return; // reduceArg
  }
}

/// ArgMax / ArgMin over one axis: x is [outer, extent, inner].
template <typename S, bool Max, bool Last>
void reduceArgTyped(const S *x, int64_t outer, int64_t extent, int64_t inner,
                    int64_t *y) {
  using C = typename ComputeOf<S>::type;
  // Whether a replaces best: NaN counts as the extreme (numpy.argmax).
  auto better = [](C a, C best) {
    bool beyond =
        Max ? (Last ? a >= best : a > best) : (Last ? a <= best : a < best);
    if constexpr (Last)
      return beyond || a != a;
    else
      return beyond || (a != a && best == best);
  };
  alignas(64) C buf[kChunk];
  alignas(64) C bestVal[kChunk];
  for (int64_t o = 0; o < outer; ++o) {
    const S *base = x + o * extent * inner;
    if (inner == 1) {
      C best{};
      int64_t bestIdx = 0;
      for (int64_t off = 0; off < extent; off += kChunk) {
        int64_t m = std::min(kChunk, extent - off);
        const C *p = loadChunk<S, C>(base + off, m, buf);
        for (int64_t i = 0; i < m; ++i)
          if ((off == 0 && i == 0) || better(p[i], best)) {
            best = p[i];
            bestIdx = off + i;
          }
      }
      y[o] = bestIdx;
      continue;
    }
    for (int64_t j0 = 0; j0 < inner; j0 += kChunk) {
      int64_t m = std::min(kChunk, inner - j0);
      int64_t *idx = y + o * inner + j0;
      const C *p = loadChunk<S, C>(base + j0, m, buf);
      std::copy(p, p + m, bestVal);
      std::fill(idx, idx + m, int64_t(0));
      for (int64_t r = 1; r < extent; ++r) {
        p = loadChunk<S, C>(base + r * inner + j0, m, buf);
        for (int64_t i = 0; i < m; ++i)
          if (better(p[i], bestVal[i])) {
            bestVal[i] = p[i];
            idx[i] = r;
          }
      }
    }
  }
}

/// Calls f(S{}) with the storage type of a float or integer dtype.
template <typename F> bool visitNumeric(DType t, F &&f) {
  switch (t) {
  case DType::F32:
    f(float{});
    return true;
  case DType::F16:
    f(Half{});
    return true;
  case DType::BF16:
    f(BFloat16{});
    return true;
  case DType::F64:
    f(double{});
    return true;
  default:
    return visitInt<true, true>(
        t, [&](auto ty) { f(typename decltype(ty)::Storage{}); });
  }
}

} // namespace

Status checkReduce(const TensorView &x, const TensorView &y, ReduceFn fn,
                   const std::vector<int64_t> &axes,
                   const ReduceOptions &options, std::vector<bool> &reduced) {
  const std::string op = "reduce " + std::string(reduceFnName(fn));
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  bool arg = fn == ReduceFn::ArgMax || fn == ReduceFn::ArgMin;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axes.empty())
    return fail(op, "axes is empty");
  if (arg && axes.size() != 1)
    return fail(op,
                "reduces exactly one axis, got " + std::to_string(axes.size()));
  reduced.assign(x.shape.size(), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return fail(op, "axis " + std::to_string(a) + " is out of range for x " +
                          shapeStr(x.shape));
    int64_t d = a < 0 ? a + rank : a;
    if (reduced[d])
      return fail(op, "axis " + std::to_string(a) + " appears twice");
    reduced[d] = true;
  }
  Shape kept, dropped;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x.shape[d]);
    if (!reduced[d])
      dropped.push_back(x.shape[d]);
  }
  if (y.shape != kept && y.shape != dropped)
    return fail(op, "y " + shapeStr(y.shape) + " is not x " +
                        shapeStr(x.shape) + " reduced over the axes (" +
                        shapeStr(kept) + " or " + shapeStr(dropped) + ")");
  // Bool max and min (ReduceMax/ReduceMin-20) are any and all: the max and
  // min of the bytes, which hold 0 or 1.
  bool boolMaxMin =
      x.dtype == DType::Bool && (fn == ReduceFn::Max || fn == ReduceFn::Min);
  bool numeric = isFloat(x.dtype) ||
                 (byteSize(x.dtype) != 0 && x.dtype != DType::Bool) ||
                 boolMaxMin;
  if (!numeric)
    return fail(op, "x has dtype " + std::string(dtypeName(x.dtype)) +
                        "; expected a float or integer dtype (or bool for "
                        "max and min)");
  DType yWant = arg ? DType::I64 : x.dtype;
  if (y.dtype != yWant)
    return fail(op, "y has dtype " + std::string(dtypeName(y.dtype)) +
                        "; expected " + std::string(dtypeName(yWant)));
  if (options.computeType && *options.computeType != DType::F32 &&
      *options.computeType != DType::F64)
    return fail(op, "compute type " +
                        std::string(dtypeName(*options.computeType)) +
                        " is not f32 or f64");
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()))
    return fail(op, "y overlaps x");
  return Status::ok();
}

Status reduce(const TensorView &x, const TensorView &y, ReduceFn fn,
              const std::vector<int64_t> &axes, const ReduceOptions &options) {
  std::vector<bool> reduced;
  if (Status s = checkReduce(x, y, fn, axes, options, reduced); !s)
    return s;
  if (x.dtype == DType::Bool) { // max or min (checkReduce): of the 0/1 bytes
    TensorView xBytes = x, yBytes = y;
    xBytes.dtype = yBytes.dtype = DType::U8;
    return reduce(xBytes, yBytes, fn, axes, options);
  }
  const std::string op = "reduce " + std::string(reduceFnName(fn));
  bool arg = fn == ReduceFn::ArgMax || fn == ReduceFn::ArgMin;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t ySize = y.numElements(), xSize = x.numElements();
  if (ySize == 0)
    return Status::ok();

  if (arg) {
    int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
    int64_t outer = 1, inner = 1, extent = x.shape[axis];
    for (int64_t d = 0; d < axis; ++d)
      outer *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= x.shape[d];
    if (extent == 0)
      return fail(op, "axis " + std::to_string(axes[0]) + " of x " +
                          shapeStr(x.shape) + " is empty");
    bool isMax = fn == ReduceFn::ArgMax, last = options.selectLastIndex;
    visitNumeric(x.dtype, [&](auto s) {
      using S = decltype(s);
      const S *xp = static_cast<const S *>(x.data);
      int64_t *yp = y.as<int64_t>();
      if (isMax && last)
        reduceArgTyped<S, true, true>(xp, outer, extent, inner, yp);
      else if (isMax)
        reduceArgTyped<S, true, false>(xp, outer, extent, inner, yp);
      else if (last)
        reduceArgTyped<S, false, true>(xp, outer, extent, inner, yp);
      else
        reduceArgTyped<S, false, false>(xp, outer, extent, inner, yp);
    });
    return Status::ok();
  }

  // A reduced dim of size 0: every output reduces nothing. The geometry
  // then walks no element (its groups include the 0), so accumulators keep
  // their identity.
  int64_t count = xSize / ySize;
  Geometry g;
  if (xSize == 0) {
    g.last = ySize; // one kept group of the outputs, never read
    g.lastReduced = false;
    g.ySize = ySize;
    g.outerSize = {0};
    g.outerX = {0};
    g.outerY = {0};
  } else {
    g = makeGeometry(x.shape, reduced);
  }
  visitNumeric(x.dtype, [&](auto s) {
    using S = decltype(s);
    reduceTyped<S>(fn, g, count, static_cast<const S *>(x.data),
                   static_cast<S *>(y.data));
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
