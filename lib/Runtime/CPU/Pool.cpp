//===- Pool.cpp - cuDNN-like pooling on the CPU ---------------------------===//
//
// Max and average pooling with pads, strides, dilations and a caller-chosen
// (floor or ceil) output size. For each spatial dimension and output index the
// window's kernel taps inside the input form one contiguous range [lo, hi),
// and those inside the padded input another; the window is their product, so
// the counts are products too. Up to 3 spatial dimensions run as 3-D loops
// (missing dimensions of size 1); more run through a generic odometer.
//
//===----------------------------------------------------------------------===//
#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "pool";

/// Per spatial dimension and output index: the kernel taps inside the input
/// [lo, hi), the number inside the padded input, and the input index of tap 0.
struct Taps {
  std::vector<int64_t> lo, hi, padded, start;
};

struct Geom {
  int k = 0;
  int64_t n = 0, c = 0;
  std::vector<int64_t> in, out, ker, stride, dil, padB, padE;
  std::vector<Taps> taps;
  int64_t inSize = 1, outSize = 1;
  Layout layout = Layout::NCHW;
};

void computeTaps(Geom &g) {
  g.taps.resize(static_cast<size_t>(g.k));
  for (int j = 0; j < g.k; ++j) {
    Taps &t = g.taps[static_cast<size_t>(j)];
    int64_t o = g.out[j], d = g.dil[j], kk = g.ker[j];
    t.lo.resize(o);
    t.hi.resize(o);
    t.padded.resize(o);
    t.start.resize(o);
    for (int64_t i = 0; i < o; ++i) {
      int64_t s = i * g.stride[j] - g.padB[j];
      t.start[i] = s;
      // Taps s + q*d in [lo, hi) with 0 <= s + q*d < in.
      int64_t lo = std::clamp<int64_t>(s >= 0 ? 0 : ceilDiv(-s, d), 0, kk);
      int64_t hi = std::clamp<int64_t>(ceilDiv(g.in[j] - s, d), lo, kk);
      t.lo[i] = lo;
      t.hi[i] = hi;
      // Taps inside [-padB, in + padE).
      int64_t plo = std::clamp<int64_t>(ceilDiv(-g.padB[j] - s, d), 0, kk);
      int64_t phi = std::clamp<int64_t>(ceilDiv(g.in[j] + g.padE[j] - s, d), plo, kk);
      t.padded[i] = phi - plo;
    }
  }
}

/// Pools one (n, c) slice: x elements at xs[p * es] for the flattened input
/// position p, y at ys[q * es] (es: element stride of a spatial position).
template <typename S>
void poolSlice3(const Geom &g, const PoolOptions &o, const S *xs, S *ys,
                int64_t es, int64_t *idx, int64_t idxBase) {
  // Dimensions padded to 3 at the front.
  int pad = 3 - g.k;
  auto dim = [&](int j) -> const Taps * {
    return j < pad ? nullptr : &g.taps[static_cast<size_t>(j - pad)];
  };
  int64_t in1 = pad > 1 ? 1 : g.in[1 - pad], in2 = g.in[2 - pad];
  int64_t o0n = pad > 0 ? 1 : g.out[0], o1n = pad > 1 ? 1 : g.out[1 - pad],
          o2n = g.out[2 - pad];
  int64_t d0 = pad > 0 ? 1 : g.dil[0], d1 = pad > 1 ? 1 : g.dil[1 - pad],
          d2 = g.dil[2 - pad];
  const Taps *t0 = dim(0), *t1 = dim(1), *t2 = dim(2);
  bool isMax = o.kind == PoolKind::Max;
  int64_t q = 0;
  for (int64_t a = 0; a < o0n; ++a) {
    int64_t lo0 = t0 ? t0->lo[a] : 0, hi0 = t0 ? t0->hi[a] : 1;
    int64_t s0 = t0 ? t0->start[a] : 0, p0 = t0 ? t0->padded[a] : 1;
    for (int64_t b = 0; b < o1n; ++b) {
      int64_t lo1 = t1 ? t1->lo[b] : 0, hi1 = t1 ? t1->hi[b] : 1;
      int64_t s1 = t1 ? t1->start[b] : 0, p1 = t1 ? t1->padded[b] : 1;
      for (int64_t cc = 0; cc < o2n; ++cc, ++q) {
        int64_t lo2 = t2->lo[cc], hi2 = t2->hi[cc], s2 = t2->start[cc];
        if (isMax) {
          // Branch-free running maximum (random data defeats prediction),
          // started at the first tap so that ties and -inf keep the first.
          float best = -std::numeric_limits<float>::infinity();
          int64_t bestPos = -1;
          if (lo0 < hi0 && lo1 < hi1 && lo2 < hi2) {
            bestPos = ((s0 + lo0 * d0) * in1 + s1 + lo1 * d1) * in2 + s2 +
                      lo2 * d2;
            best = load(xs[bestPos * es]);
          }
          for (int64_t i = lo0; i < hi0; ++i) {
            int64_t r0 = (s0 + i * d0) * in1;
            for (int64_t j = lo1; j < hi1; ++j) {
              int64_t r1 = (r0 + s1 + j * d1) * in2 + s2;
              if (idx) {
                for (int64_t l = lo2; l < hi2; ++l) {
                  int64_t pos = r1 + l * d2;
                  float v = load(xs[pos * es]);
                  bool gt = v > best;
                  best = gt ? v : best;
                  bestPos = gt ? pos : bestPos;
                }
              } else {
                for (int64_t l = lo2; l < hi2; ++l) {
                  float v = load(xs[(r1 + l * d2) * es]);
                  best = v > best ? v : best;
                }
              }
            }
          }
          ys[q * es] = storeAs<S>(best);
          if (idx)
            idx[q] = bestPos < 0 ? -1 : idxBase + bestPos;
        } else {
          float sum = 0.0f;
          for (int64_t i = lo0; i < hi0; ++i) {
            int64_t r0 = (s0 + i * d0) * in1;
            for (int64_t j = lo1; j < hi1; ++j) {
              int64_t r1 = (r0 + s1 + j * d1) * in2 + s2;
              for (int64_t l = lo2; l < hi2; ++l)
                sum += load(xs[(r1 + l * d2) * es]);
            }
          }
          int64_t count = o.countIncludePad
                              ? p0 * p1 * t2->padded[cc]
                              : (hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2);
          ys[q * es] = storeAs<S>(count ? sum / static_cast<float>(count) : 0.0f);
        }
      }
    }
  }
}

/// Any number of spatial dimensions: odometers over outputs and taps.
template <typename S>
void poolSliceN(const Geom &g, const PoolOptions &o, const S *xs, S *ys,
                int64_t es, int64_t *idx, int64_t idxBase) {
  int k = g.k;
  std::vector<int64_t> oi(k, 0), ti(k, 0);
  bool isMax = o.kind == PoolKind::Max;
  for (int64_t q = 0; q < g.outSize; ++q) {
    bool empty = false;
    int64_t count = 1;
    for (int j = 0; j < k; ++j) {
      const Taps &t = g.taps[static_cast<size_t>(j)];
      ti[j] = t.lo[oi[j]];
      empty = empty || t.lo[oi[j]] >= t.hi[oi[j]];
      count *= o.countIncludePad ? t.padded[oi[j]] : t.hi[oi[j]] - t.lo[oi[j]];
    }
    float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    int64_t bestPos = -1;
    while (!empty) {
      int64_t pos = 0;
      for (int j = 0; j < k; ++j)
        pos = pos * g.in[j] + g.taps[static_cast<size_t>(j)].start[oi[j]] +
              ti[j] * g.dil[j];
      float v = load(xs[pos * es]);
      if (isMax) {
        if (bestPos < 0 || v > best) {
          best = v;
          bestPos = pos;
        }
      } else {
        sum += v;
      }
      int j = k - 1;
      for (; j >= 0; --j) {
        const Taps &t = g.taps[static_cast<size_t>(j)];
        if (++ti[j] < t.hi[oi[j]])
          break;
        ti[j] = t.lo[oi[j]];
      }
      if (j < 0)
        break;
    }
    if (isMax) {
      ys[q * es] = storeAs<S>(best);
      if (idx)
        idx[q] = bestPos < 0 ? -1 : idxBase + bestPos;
    } else {
      ys[q * es] = storeAs<S>(count ? sum / static_cast<float>(count) : 0.0f);
    }
    for (int j = k - 1; j >= 0; --j) {
      if (++oi[j] < g.out[j])
        break;
      oi[j] = 0;
    }
  }
}

Status checkCommon(const TensorView &x, const TensorView &y, Layout layout,
                   std::string_view op, Geom &g) {
  if (Status s = checkFloatInOut(op, x, y); !s)
    return s;
  if (y.dtype != x.dtype)
    return fail(op, "y has dtype " + std::string(dtypeName(y.dtype)) +
                        ", x " + std::string(dtypeName(x.dtype)) +
                        "; they must match");
  size_t rank = x.shape.size();
  if (Status s = checkSpatialRank(op, x.shape); !s)
    return s;
  if (y.shape.size() != rank)
    return fail(op, "y " + shapeStr(y.shape) + " and x " + shapeStr(x.shape) +
                        " must have the same rank");
  bool nhwc = layout == Layout::NHWC;
  g.layout = layout;
  g.k = static_cast<int>(rank - 2);
  g.n = x.shape[0];
  g.c = nhwc ? x.shape[rank - 1] : x.shape[1];
  int64_t yc = nhwc ? y.shape[rank - 1] : y.shape[1];
  if (y.shape[0] != g.n || yc != g.c)
    return fail(op, "y " + shapeStr(y.shape) + " and x " + shapeStr(x.shape) +
                        " differ in batch or channels");
  g.in.assign(x.shape.begin() + (nhwc ? 1 : 2), x.shape.end() - (nhwc ? 1 : 0));
  g.out.assign(y.shape.begin() + (nhwc ? 1 : 2), y.shape.end() - (nhwc ? 1 : 0));
  g.inSize = numElements(g.in);
  g.outSize = numElements(g.out);
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()))
    return fail(op, "y overlaps x");
  return Status::ok();
}

template <typename S>
void runPool(const Geom &g, const PoolOptions &o, const TensorView &x,
             const TensorView &y, const TensorView *indices) {
  bool nhwc = g.layout == Layout::NHWC;
  const S *xp = x.as<const S>();
  S *yp = y.as<S>();
  int64_t *ip = indices ? indices->as<int64_t>() : nullptr;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c) {
      int64_t slice = n * g.c + c;
      const S *xs = nhwc ? xp + n * g.inSize * g.c + c : xp + slice * g.inSize;
      S *ys = nhwc ? yp + n * g.outSize * g.c + c : yp + slice * g.outSize;
      int64_t es = nhwc ? g.c : 1;
      int64_t *is = ip ? ip + slice * g.outSize : nullptr;
      if (g.k <= 3)
        poolSlice3(g, o, xs, ys, es, is, slice * g.inSize);
      else
        poolSliceN(g, o, xs, ys, es, is, slice * g.inSize);
    }
}

} // namespace

namespace {

/// pool's checks; g gets the window geometry.
Status checkPool(const TensorView &x, const TensorView &y, const PoolOptions &o,
                 const TensorView *indices, Geom &g) {
  if (Status s = checkCommon(x, y, o.layout, kOp, g); !s)
    return s;
  if (Status s = checkPoolWindow(kOp, "kernel", o, x.shape, "y", y.shape, g);
      !s)
    return s;
  if (indices) {
    if (Status s = checkView(kOp, "indices", *indices); !s)
      return s;
    if (o.kind != PoolKind::Max)
      return fail(kOp, "indices are only produced by max pooling");
    if (o.layout != Layout::NCHW)
      return fail(kOp, "indices need the NCHW layout");
    if (indices->dtype != DType::I64)
      return fail(kOp, "indices have dtype " +
                           std::string(dtypeName(indices->dtype)) +
                           "; expected i64");
    if (indices->shape != y.shape)
      return fail(kOp, "indices have shape " + shapeStr(indices->shape) +
                           ", expected y's " + shapeStr(y.shape));
    if (overlaps(indices->data, indices->byteCount(), x.data, x.byteCount()) ||
        overlaps(indices->data, indices->byteCount(), y.data, y.byteCount()))
      return fail(kOp, "indices overlap x or y");
  }
  return Status::ok();
}

} // namespace

Status checkPool(const TensorView &x, const TensorView &y, const PoolOptions &o,
                 const TensorView *indices) {
  Geom g;
  return checkPool(x, y, o, indices, g);
}

Status pool(const TensorView &x, const TensorView &y, const PoolOptions &o,
            const TensorView *indices) {
  Geom g;
  if (Status s = checkPool(x, y, o, indices, g); !s)
    return s;
  if (y.numElements() == 0)
    return Status::ok();
  computeTaps(g);
  withFloat16or32(x.dtype, [&](auto tag) {
    runPool<decltype(tag)>(g, o, x, y, indices);
  });
  return Status::ok();
}

Status globalPool(PoolKind kind, const TensorView &x, const TensorView &y,
                  Layout layout) {
  constexpr std::string_view op = "globalPool";
  Geom g;
  if (Status s = checkCommon(x, y, layout, op, g); !s)
    return s;
  for (int64_t d : g.out)
    if (d != 1)
      return fail(op, "y has shape " + shapeStr(y.shape) +
                          "; its spatial dimensions must be 1");
  if (y.numElements() == 0)
    return Status::ok();
  if (g.inSize == 0 && kind == PoolKind::Average)
    return fail(op, "average over an empty spatial extent");
  bool nhwc = layout == Layout::NHWC;
  bool isMax = kind == PoolKind::Max;
  withFloat16or32(x.dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *xp = x.as<const S>();
    S *yp = y.as<S>();
    std::vector<double> acc(static_cast<size_t>(g.c));
    for (int64_t n = 0; n < g.n; ++n) {
      if (!nhwc) {
        for (int64_t c = 0; c < g.c; ++c) {
          const S *xs = xp + (n * g.c + c) * g.inSize;
          if (isMax) {
            float best = -std::numeric_limits<float>::infinity();
            for (int64_t p = 0; p < g.inSize; ++p) {
              float v = load(xs[p]);
              best = (p == 0 || v > best) ? v : best;
            }
            yp[n * g.c + c] = storeAs<S>(best);
          } else {
            double sum = 0.0;
            for (int64_t p = 0; p < g.inSize; ++p)
              sum += load(xs[p]);
            yp[n * g.c + c] = storeAs<S>(static_cast<float>(sum / g.inSize));
          }
        }
      } else {
        const S *xs = xp + n * g.inSize * g.c;
        for (int64_t c = 0; c < g.c; ++c)
          acc[c] = isMax ? (g.inSize ? double(load(xs[c]))
                                     : -std::numeric_limits<double>::infinity())
                         : 0.0;
        for (int64_t p = isMax ? 1 : 0; p < g.inSize; ++p)
          for (int64_t c = 0; c < g.c; ++c) {
            double v = load(xs[p * g.c + c]);
            acc[c] = isMax ? (v > acc[c] ? v : acc[c]) : acc[c] + v;
          }
        for (int64_t c = 0; c < g.c; ++c)
          yp[n * g.c + c] = storeAs<S>(static_cast<float>(
              isMax ? acc[c] : acc[c] / static_cast<double>(g.inSize)));
      }
    }
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
