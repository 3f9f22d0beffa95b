//===- PoolBackward.cpp - cuDNN-like pooling backward on the CPU ----------===//
//
// The windows are the forward's (Pool.cpp): per spatial dimension and output
// index, the kernel taps inside the input form one range [lo, hi) and those
// inside the padded input another, so a window is a product of ranges. Each
// (n, c) slice walks its outputs and, through an odometer over the taps,
// the window's input positions: max finds the first maximum again (the
// forward's tie-break: the first tap, replaced only by a strictly greater
// value) and adds dy there; average adds dy / count to every position.
// x and dy are widened to the compute type (f32, or f64 for f64 data) and dx
// accumulated in it, then rounded once.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"

#include <algorithm>
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

/// One (n, c) slice: x, dx at xs[p * es], dy at dys[q * es] (es: the element
/// stride of a spatial position).
template <typename T>
void poolBackwardSlice(const Geom &g, const PoolOptions &o, const T *xs,
                       const T *dys, T *dxs, int64_t es) {
  const int k = g.k;
  const bool isMax = o.kind == PoolKind::Max;
  std::vector<int64_t> oi(k, 0), ti(k, 0);
  for (int64_t q = 0; q < g.outSize; ++q, increment(oi, g.out.data(), k)) {
    bool empty = false;
    int64_t count = 1;
    for (int j = 0; j < k; ++j) {
      int64_t lo = g.lo[j][oi[j]], hi = g.hi[j][oi[j]];
      ti[j] = lo;
      empty = empty || lo >= hi;
      count *= o.countIncludePad ? g.padded[j][oi[j]] : hi - lo;
    }
    if (empty)
      continue;
    const T grad = dys[q * es];
    T best = T(0), share = isMax ? T(0) : grad / static_cast<T>(count);
    int64_t bestPos = -1;
    while (true) {
      int64_t pos = 0;
      for (int j = 0; j < k; ++j)
        pos = pos * g.in[j] + g.start[j][oi[j]] + ti[j] * g.dil[j];
      if (isMax) {
        T v = xs[pos * es];
        if (bestPos < 0 || v > best) {
          best = v;
          bestPos = pos;
        }
      } else {
        dxs[pos * es] += share;
      }
      int j = k - 1;
      for (; j >= 0; --j) {
        if (++ti[j] < g.hi[j][oi[j]])
          break;
        ti[j] = g.lo[j][oi[j]];
      }
      if (j < 0)
        break;
    }
    if (isMax)
      dxs[bestPos * es] += grad;
  }
}

template <typename T>
void run(const Geom &g, const PoolOptions &o, const TensorView &x,
         const TensorView &dy, const TensorView &dx) {
  std::vector<T> xv = widenTo<T>(x), dyv = widenTo<T>(dy);
  std::vector<T> dxv(static_cast<size_t>(x.numElements()), T(0));
  const bool nhwc = o.layout == Layout::NHWC;
  if (g.outSize > 0)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t c = 0; c < g.c; ++c) {
        int64_t slice = n * g.c + c;
        int64_t xOff = nhwc ? n * g.inSize * g.c + c : slice * g.inSize;
        int64_t yOff = nhwc ? n * g.outSize * g.c + c : slice * g.outSize;
        poolBackwardSlice<T>(g, o, xv.data() + xOff, dyv.data() + yOff,
                             dxv.data() + xOff, nhwc ? g.c : 1);
      }
  narrowInto(dxv, dx);
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
  computeTaps(g);
  if (x.dtype == DType::F64)
    run<double>(g, options, x, dy, dx);
  else
    run<float>(g, options, x, dy, dx);
  return Status::ok();
}

} // namespace mp::rt::cpu
