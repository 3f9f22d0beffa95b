//===- BatchNormBackward.cpp - cuDNN-like batch-norm backward on the CPU --===//
//
// Training-mode backward with the batch statistics of x, recomputed as the
// forward computes them (BatchNorm.cpp: the mean, then the mean squared
// deviation, in f64). Per channel, in f64 throughout (x and dy are widened
// once; every result is rounded once to its type):
//   invstd = 1 / sqrt(var + eps), xhat = (x - mean) * invstd
//   dbias  = sum(dy), dscale = sum(dy * xhat)
//   dx     = scale * invstd / M * (M * dy - dbias - xhat * dscale).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "batch_norm_bwd";

std::string dt(DType t) { return std::string(dtypeName(t)); }

struct Geom {
  int64_t outer = 0; // N (NCHW) or N * spatial (NHWC)
  int64_t c = 0;
  int64_t inner = 0; // spatial (NCHW) or 1 (NHWC)
};

Status check(const TensorView &x, const TensorView &scale, const TensorView &dy,
             const TensorView &dx, const TensorView &dscale,
             const TensorView &dbias, const BatchNormOptions &o, Geom &g) {
  using Named = std::pair<const char *, const TensorView *>;
  const Named inputs[] = {{"x", &x}, {"scale", &scale}, {"dy", &dy}};
  const Named outputs[] = {{"dx", &dx}, {"dscale", &dscale}, {"dbias", &dbias}};
  for (const Named *list : {inputs, outputs})
    for (int i = 0; i < 3; ++i)
      if (Status s = checkView(kOp, list[i].first, *list[i].second); !s)
        return s;
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f16, bf16 or f64");
  for (auto [name, v] : {Named{"dy", &dy}, Named{"dx", &dx}})
    if (v->dtype != x.dtype || v->shape != x.shape)
      return fail(kOp, std::string(name) + " (" + dt(v->dtype) + " " +
                           shapeStr(v->shape) +
                           ") must have x's dtype and shape (" + dt(x.dtype) +
                           " " + shapeStr(x.shape) + ")");
  size_t rank = x.shape.size();
  if (rank < 2)
    return fail(kOp, "x needs rank >= 2 (N, C, ...), got " + shapeStr(x.shape));
  if (!std::isfinite(o.epsilon) || o.epsilon < 0.0f)
    return fail(kOp, "epsilon must be finite and >= 0");
  if (o.layout == Layout::NCHW) {
    g.c = x.shape[1];
    g.outer = x.shape[0];
    g.inner = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  } else {
    g.c = x.shape[rank - 1];
    g.inner = 1;
    g.outer = numElements(Shape(x.shape.begin(), x.shape.end() - 1));
  }
  for (auto [name, v] : {Named{"scale", &scale}, Named{"dscale", &dscale},
                         Named{"dbias", &dbias}})
    if (!isFloat(v->dtype) || v->shape != Shape{g.c})
      return fail(kOp, std::string(name) + " is " + dt(v->dtype) + " " +
                           shapeStr(v->shape) + ", expected a float [" +
                           std::to_string(g.c) + "]");
  for (const Named &out : outputs) {
    const TensorView &ov = *out.second;
    for (const Named &in : inputs)
      if (overlaps(ov.data, ov.byteCount(), in.second->data,
                   in.second->byteCount()))
        return fail(kOp, std::string(out.first) + " overlaps " + in.first);
    for (const Named &other : outputs)
      if (&other != &out &&
          overlaps(ov.data, ov.byteCount(), other.second->data,
                   other.second->byteCount()))
        return fail(kOp, std::string(out.first) + " overlaps " + other.first);
  }
  if (g.c > 0 && g.outer * g.inner == 0)
    return fail(kOp, "x " + shapeStr(x.shape) +
                         " has no elements per channel to take statistics of");
  return Status::ok();
}

} // namespace

Status checkBatchNormBackward(const TensorView &x, const TensorView &scale,
                              const TensorView &dy, const TensorView &dx,
                              const TensorView &dscale, const TensorView &dbias,
                              const BatchNormOptions &o) {
  Geom g;
  return check(x, scale, dy, dx, dscale, dbias, o, g);
}

Status batchNormBackward(const TensorView &x, const TensorView &scale,
                         const TensorView &dy, const TensorView &dx,
                         const TensorView &dscale, const TensorView &dbias,
                         const BatchNormOptions &o) {
  Geom g;
  if (Status s = check(x, scale, dy, dx, dscale, dbias, o, g); !s)
    return s;
  if (g.c == 0)
    return Status::ok();
  const std::vector<double> xv = toF64(x), dyv = toF64(dy), sc = toF64(scale);
  const size_t C = static_cast<size_t>(g.c);
  // A batch split over ranks: each per-channel sum below is the whole
  // batch's (added up over the ranks), except the dscale and dbias outputs,
  // which stay this rank's (the gradient buckets average them).
  const int ranks = o.syncRanks ? o.syncRanks->size() : 1;
  const double count = static_cast<double>(g.outer * g.inner * ranks);
  auto overRanks = [&](std::vector<double> &sums) {
    return o.syncRanks ? o.syncRanks->allReduce(sums.data(), sums.size(),
                                                DType::F64, CollectiveOp::Sum)
                       : Status::ok();
  };
  // Visits every element in memory order: fn(channel, index). Each
  // channel's elements come in the same order as when walking that channel
  // alone, so its sums are too, but the tensor streams through once per
  // pass instead of once per channel (channels last, C apart).
  auto forEachElement = [&](auto &&fn) {
    int64_t i = 0;
    for (int64_t ou = 0; ou < g.outer; ++ou)
      for (int64_t c = 0; c < g.c; ++c)
        for (int64_t in = 0; in < g.inner; ++in, ++i)
          fn(static_cast<size_t>(c), i);
  };
  std::vector<double> mean(C, 0.0), sq(C, 0.0), invStd(C), sumDy(C, 0.0),
      sumDyXhat(C, 0.0);
  forEachElement([&](size_t c, int64_t i) { mean[c] += xv[i]; });
  if (Status s = overRanks(mean); !s)
    return s;
  for (double &m : mean)
    m /= count;
  forEachElement([&](size_t c, int64_t i) {
    double d = xv[i] - mean[c];
    sq[c] += d * d;
  });
  if (Status s = overRanks(sq); !s)
    return s;
  for (size_t c = 0; c < C; ++c)
    invStd[c] = 1.0 / std::sqrt(sq[c] / count + static_cast<double>(o.epsilon));
  forEachElement([&](size_t c, int64_t i) {
    sumDy[c] += dyv[i];
    sumDyXhat[c] += dyv[i] * (xv[i] - mean[c]) * invStd[c];
  });
  fromF64(sumDyXhat.data(), dscale);
  fromF64(sumDy.data(), dbias);
  // dy's sums over the whole batch, in one collective.
  if (o.syncRanks) {
    std::vector<double> both(sumDy);
    both.insert(both.end(), sumDyXhat.begin(), sumDyXhat.end());
    if (Status s = overRanks(both); !s)
      return s;
    std::copy(both.begin(), both.begin() + C, sumDy.begin());
    std::copy(both.begin() + C, both.end(), sumDyXhat.begin());
  }
  std::vector<double> dxv(xv.size()), k(C);
  for (size_t c = 0; c < C; ++c)
    k[c] = sc[c] * invStd[c] / count;
  forEachElement([&](size_t c, int64_t i) {
    double xhat = (xv[i] - mean[c]) * invStd[c];
    dxv[i] = k[c] * (count * dyv[i] - sumDy[c] - xhat * sumDyXhat[c]);
  });
  fromF64(dxv.data(), dx);
  return Status::ok();
}

} // namespace mp::rt::cpu
