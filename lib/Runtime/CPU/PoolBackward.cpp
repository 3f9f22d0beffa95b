//===- PoolBackward.cpp - cuDNN-like pooling backward on the CPU ----------===//
//
// The windows are the forward's (Pool.cpp): per spatial dimension and output
// index, the kernel taps inside the input form one range [lo, hi) and those
// inside the padded input another, so a window is a product of ranges. An
// odometer over the taps lists each window's input positions once; each
// (n, c) slice then walks its outputs and their positions: max finds the
// first maximum again (the forward's tie-break: the first tap, replaced only
// by a strictly greater value) and adds dy there; average adds dy / count to
// every position. Channels last, the channels of one n are walked together
// (they share the windows), so the reads are contiguous. Slices run on the
// CPU threads. x and dy are read in their types; dx is accumulated in the
// compute type (f32, or f64 for f64 data) and rounded once.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"
#include "Parallel.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "pool_bwd";

std::string dt(DType t) { return std::string(dtypeName(t)); }

struct Geom {
  int k = 0;
  int64_t n = 0, c = 0;
  std::vector<int64_t> in, out, ker, stride, dil, padB, padE;
  int64_t inSize = 1, outSize = 1;
  /// Per spatial dimension and output index: the taps inside the input
  /// [lo, hi), the number inside the padded input, the input index of tap 0.
  std::vector<std::vector<int64_t>> lo, hi, padded, start;
};

Status check(const TensorView &x, const TensorView &dy, const TensorView &dx,
             const PoolOptions &o, Geom &g) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"dy", &dy},
                         {"dx", &dx}})
    if (Status s = checkView(kOp, name, *v); !s)
      return s;
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f16, bf16 or f64");
  if (dy.dtype != x.dtype || dx.dtype != x.dtype)
    return fail(kOp, "dy (" + dt(dy.dtype) + ") and dx (" + dt(dx.dtype) +
                         ") must have x's dtype " + dt(x.dtype));
  size_t rank = x.shape.size();
  if (Status s = checkSpatialRank(kOp, x.shape); !s)
    return s;
  if (dx.shape != x.shape)
    return fail(kOp, "dx has shape " + shapeStr(dx.shape) + ", expected x's " +
                         shapeStr(x.shape));
  if (dy.shape.size() != rank)
    return fail(kOp, "dy " + shapeStr(dy.shape) + " and x " +
                         shapeStr(x.shape) + " must have the same rank");
  bool nhwc = o.layout == Layout::NHWC;
  g.k = static_cast<int>(rank - 2);
  g.n = x.shape[0];
  g.c = nhwc ? x.shape[rank - 1] : x.shape[1];
  int64_t dyc = nhwc ? dy.shape[rank - 1] : dy.shape[1];
  if (dy.shape[0] != g.n || dyc != g.c)
    return fail(kOp, "dy " + shapeStr(dy.shape) + " and x " +
                         shapeStr(x.shape) + " differ in batch or channels");
  g.in.assign(x.shape.begin() + (nhwc ? 1 : 2), x.shape.end() - (nhwc ? 1 : 0));
  g.out.assign(dy.shape.begin() + (nhwc ? 1 : 2),
               dy.shape.end() - (nhwc ? 1 : 0));
  if (Status s = checkPoolWindow(kOp, "window", o, x.shape, "dy", dy.shape, g);
      !s)
    return s;
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"x", &x}, {"dy", &dy}})
    if (overlaps(v->data, v->byteCount(), dx.data, dx.byteCount()))
      return fail(kOp, std::string(name) + " overlaps dx");
  g.inSize = numElements(g.in);
  g.outSize = numElements(g.out);
  return Status::ok();
}

void computeTaps(Geom &g) {
  size_t k = static_cast<size_t>(g.k);
  g.lo.resize(k);
  g.hi.resize(k);
  g.padded.resize(k);
  g.start.resize(k);
  for (size_t j = 0; j < k; ++j) {
    int64_t o = g.out[j], d = g.dil[j], kk = g.ker[j];
    g.lo[j].resize(o);
    g.hi[j].resize(o);
    g.padded[j].resize(o);
    g.start[j].resize(o);
    for (int64_t i = 0; i < o; ++i) {
      int64_t s = i * g.stride[j] - g.padB[j];
      g.start[j][i] = s;
      int64_t lo = std::clamp<int64_t>(s >= 0 ? 0 : ceilDiv(-s, d), 0, kk);
      int64_t hi = std::clamp<int64_t>(ceilDiv(g.in[j] - s, d), lo, kk);
      g.lo[j][i] = lo;
      g.hi[j][i] = hi;
      int64_t plo = std::clamp<int64_t>(ceilDiv(-g.padB[j] - s, d), 0, kk);
      int64_t phi =
          std::clamp<int64_t>(ceilDiv(g.in[j] + g.padE[j] - s, d), plo, kk);
      g.padded[j][i] = phi - plo;
    }
  }
}

/// Every output's window as a list of input positions (flattened spatial
/// indices, in tap order), made once for all slices: the taps of output q
/// are pos[begin[q], begin[q + 1]), and an average divides by count[q].
struct Windows {
  std::vector<int64_t> begin, pos, count;
};

Windows windowsOf(const Geom &g, const PoolOptions &o) {
  const int k = g.k;
  Windows w;
  w.begin.reserve(static_cast<size_t>(g.outSize) + 1);
  w.count.reserve(static_cast<size_t>(g.outSize));
  std::vector<int64_t> oi(k, 0), ti(k, 0);
  for (int64_t q = 0; q < g.outSize; ++q, increment(oi, g.out.data(), k)) {
    w.begin.push_back(static_cast<int64_t>(w.pos.size()));
    bool empty = false;
    int64_t count = 1;
    for (int j = 0; j < k; ++j) {
      int64_t lo = g.lo[j][oi[j]], hi = g.hi[j][oi[j]];
      ti[j] = lo;
      empty = empty || lo >= hi;
      count *= o.countIncludePad ? g.padded[j][oi[j]] : hi - lo;
    }
    w.count.push_back(count);
    if (empty)
      continue;
    while (true) {
      int64_t pos = 0;
      for (int j = 0; j < k; ++j)
        pos = pos * g.in[j] + g.start[j][oi[j]] + ti[j] * g.dil[j];
      w.pos.push_back(pos);
      int j = k - 1;
      for (; j >= 0; --j) {
        if (++ti[j] < g.hi[j][oi[j]])
          break;
        ti[j] = g.lo[j][oi[j]];
      }
      if (j < 0)
        break;
    }
  }
  w.begin.push_back(static_cast<int64_t>(w.pos.size()));
  return w;
}

/// One slice of `lanes` channels that share their windows: channel l of
/// spatial position p at xs[p * es + l] (x, dx), dy likewise at dys. Channels
/// first, a slice is one (n, c) and lanes = es = 1; channels last, it is one
/// n with all C channels as lanes (es = C), so every tap reads C adjacent
/// values instead of striding C apart through the whole tensor per channel.
template <typename S, typename T>
void poolBackwardSlice(const Geom &g, const PoolOptions &o, const Windows &w,
                       const S *xs, const S *dys, T *dxs, int64_t es,
                       int64_t lanes) {
  const bool isMax = o.kind == PoolKind::Max;
  std::vector<T> bestStore(static_cast<size_t>(lanes));
  std::vector<int32_t> bestTapStore(static_cast<size_t>(lanes));
  T *best = bestStore.data();
  int32_t *bestTap = bestTapStore.data(); // index into the window's taps
  for (int64_t q = 0; q < g.outSize; ++q) {
    const int64_t *tap = w.pos.data() + w.begin[q],
                  *end = w.pos.data() + w.begin[q + 1];
    if (tap == end)
      continue;
    const S *grad = dys + q * es;
    if (!isMax) {
      const T count = static_cast<T>(w.count[q]);
      for (; tap != end; ++tap) {
        T *dxp = dxs + *tap * es;
        for (int64_t l = 0; l < lanes; ++l)
          dxp[l] += load(grad[l]) / count;
      }
      continue;
    }
    // The forward's tie-break: the first tap, replaced only by a strictly
    // greater value (selects, not branches: the lanes vectorise).
    const S *first = xs + tap[0] * es;
    for (int64_t l = 0; l < lanes; ++l) {
      best[l] = load(first[l]);
      bestTap[l] = 0;
    }
    const int32_t taps = static_cast<int32_t>(end - tap);
    for (int32_t t = 1; t < taps; ++t) {
      const S *xp = xs + tap[t] * es;
      for (int64_t l = 0; l < lanes; ++l) {
        T v = load(xp[l]);
        bool greater = v > best[l];
        best[l] = greater ? v : best[l];
        bestTap[l] = greater ? t : bestTap[l];
      }
    }
    for (int64_t l = 0; l < lanes; ++l)
      dxs[tap[bestTap[l]] * es + l] += load(grad[l]);
  }
}

/// x and dy are read in their storage type S; dx is accumulated in the
/// compute type (f32, f64 for f64 data): in place for f32 and f64, else in
/// an f32 copy rounded once at the end.
template <typename S>
void run(const Geom &g, const PoolOptions &o, const TensorView &x,
         const TensorView &dy, const TensorView &dx) {
  using T = decltype(load(S{}));
  constexpr bool inPlace = std::is_same_v<S, T>;
  std::vector<T> accumulator(
      inPlace ? 0 : static_cast<size_t>(dx.numElements()), T(0));
  T *dxv = inPlace ? dx.as<T>() : accumulator.data();
  if (inPlace)
    std::fill_n(dxv, dx.numElements(), T(0));
  const bool nhwc = o.layout == Layout::NHWC;
  // Slices write disjoint parts of dx: one per (n, c), or per n with the
  // channels as lanes.
  const int64_t slices = nhwc ? g.n : g.n * g.c;
  const int64_t xStride = nhwc ? g.inSize * g.c : g.inSize;
  const int64_t yStride = nhwc ? g.outSize * g.c : g.outSize;
  const Windows windows = windowsOf(g, o);
  const S *xs = x.as<const S>(), *dys = dy.as<const S>();
  if (g.outSize > 0)
    parallelItems(slices, xStride, [&](int64_t slice) {
      poolBackwardSlice<S, T>(g, o, windows, xs + slice * xStride,
                              dys + slice * yStride, dxv + slice * xStride,
                              nhwc ? g.c : 1, nhwc ? g.c : 1);
    });
  if (!inPlace)
    narrowInto(accumulator, dx);
}

} // namespace

Status checkPoolBackward(const TensorView &x, const TensorView &dy,
                         const TensorView &dx, const PoolOptions &options) {
  Geom g;
  return check(x, dy, dx, options, g);
}

Status poolBackward(const TensorView &x, const TensorView &dy,
                    const TensorView &dx, const PoolOptions &options) {
  Geom g;
  if (Status s = check(x, dy, dx, options, g); !s)
    return s;
  if (dx.numElements() == 0)
    return Status::ok();
  // A max window's taps are counted in int32 (poolBackwardSlice).
  int64_t windowTaps = 1;
  for (int64_t kk : g.ker)
    windowTaps = kk > 0 && windowTaps > INT32_MAX / kk ? int64_t(INT32_MAX) + 1
                                                       : windowTaps * kk;
  if (windowTaps > INT32_MAX)
    return fail(kOp, "the window has more than 2^31 - 1 taps");
  computeTaps(g);
  if (x.dtype == DType::F64)
    run<double>(g, options, x, dy, dx);
  else
    withFloat16or32(
        x.dtype, [&](auto tag) { run<decltype(tag)>(g, options, x, dy, dx); });
  return Status::ok();
}

} // namespace mp::rt::cpu
