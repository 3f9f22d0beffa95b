//===- BatchNorm.cpp - cuDNN-like batch normalization on the CPU ----------===//
//
// Inference: y = (x - mean) * (scale / sqrt(var + eps)) + bias per channel,
// f32 arithmetic. Training (ONNX BatchNormalization-15, training_mode=1):
// batch mean and biased variance over N and the spatial dimensions
// (accumulated in f64, two passes), y normalized with them, and the running
// statistics updated with the momentum.
//
//===----------------------------------------------------------------------===//
#include "KernelUtil.h"

#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

struct Geom {
  int64_t outer = 0; // N (NCHW) or N * spatial (NHWC)
  int64_t c = 0;
  int64_t inner = 0; // spatial (NCHW) or 1 (NHWC)
};

Status checkParam(std::string_view op, std::string_view name,
                  const TensorView &v, int64_t c) {
  if (Status s = checkView(op, name, v); !s)
    return s;
  if (!isF32or16(v.dtype))
    return fail(op, std::string(name) + " has dtype " +
                        std::string(dtypeName(v.dtype)) +
                        "; expected f32, f16 or bf16");
  if (!(v.shape.size() == 1 && v.shape[0] == c))
    return fail(op, std::string(name) + " has shape " + shapeStr(v.shape) +
                        ", expected [" + std::to_string(c) + "]");
  return Status::ok();
}

Status checkXY(std::string_view op, const TensorView &x, const TensorView &y,
               const BatchNormOptions &o, Geom &g) {
  if (Status s = checkFloatInOut(op, x, y); !s)
    return s;
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y (" + std::string(dtypeName(y.dtype)) + " " +
                        shapeStr(y.shape) + ") must have x's dtype and shape (" +
                        std::string(dtypeName(x.dtype)) + " " +
                        shapeStr(x.shape) + ")");
  size_t rank = x.shape.size();
  if (rank < 2)
    return fail(op, "x needs rank >= 2 (N, C, ...), got " + shapeStr(x.shape));
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) &&
      x.data != y.data)
    return fail(op, "y overlaps x without being x itself");
  if (!std::isfinite(o.epsilon) || o.epsilon < 0.0f)
    return fail(op, "epsilon must be finite and >= 0");
  if (o.layout == Layout::NCHW) {
    g.c = x.shape[1];
    g.outer = x.shape[0];
    g.inner = 1;
    for (size_t i = 2; i < rank; ++i)
      g.inner *= x.shape[i];
  } else {
    g.c = x.shape[rank - 1];
    g.inner = 1;
    g.outer = 1;
    for (size_t i = 0; i + 1 < rank; ++i)
      g.outer *= x.shape[i];
  }
  return Status::ok();
}

std::vector<float> paramF32(const TensorView &v) {
  std::vector<float> r(static_cast<size_t>(v.numElements()));
  toF32(v.dtype, v.data, r.data(), v.numElements());
  return r;
}

/// y = (x - mean[c]) * a[c] + bias[c] over the whole tensor.
template <typename S>
void normalize(const Geom &g, const S *x, S *y, const float *mean,
               const float *a, const float *bias) {
  if (g.inner == 1) {
    for (int64_t o = 0; o < g.outer; ++o) {
      const S *xr = x + o * g.c;
      S *yr = y + o * g.c;
      for (int64_t c = 0; c < g.c; ++c)
        yr[c] = storeAs<S>((load(xr[c]) - mean[c]) * a[c] + bias[c]);
    }
    return;
  }
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t c = 0; c < g.c; ++c) {
      const S *xr = x + (o * g.c + c) * g.inner;
      S *yr = y + (o * g.c + c) * g.inner;
      float m = mean[c], s = a[c], b = bias[c];
      for (int64_t i = 0; i < g.inner; ++i)
        yr[i] = storeAs<S>((load(xr[i]) - m) * s + b);
    }
}

} // namespace

namespace {

/// batchNormInference's checks; g gets the per-channel geometry.
Status checkInference(const TensorView &x, const TensorView &scale,
                      const TensorView &bias, const TensorView &mean,
                      const TensorView &var, const TensorView &y,
                      const BatchNormOptions &o, Geom &g) {
  constexpr std::string_view op = "batchNormInference";
  if (Status s = checkXY(op, x, y, o, g); !s)
    return s;
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"scale", &scale},
        {"bias", &bias}, {"mean", &mean}, {"var", &var}}) {
    if (Status s = checkParam(op, name, *v, g.c); !s)
      return s;
    if (overlaps(v->data, v->byteCount(), y.data, y.byteCount()))
      return fail(op, std::string(name) + " overlaps y");
  }
  return Status::ok();
}

} // namespace

Status checkBatchNormInference(const TensorView &x, const TensorView &scale,
                               const TensorView &bias, const TensorView &mean,
                               const TensorView &var, const TensorView &y,
                               const BatchNormOptions &o) {
  Geom g;
  return checkInference(x, scale, bias, mean, var, y, o, g);
}

Status batchNormInference(const TensorView &x, const TensorView &scale,
                          const TensorView &bias, const TensorView &mean,
                          const TensorView &var, const TensorView &y,
                          const BatchNormOptions &o) {
  Geom g;
  if (Status s = checkInference(x, scale, bias, mean, var, y, o, g); !s)
    return s;
  if (x.numElements() == 0)
    return Status::ok();
  std::vector<float> sc = paramF32(scale), b = paramF32(bias),
                     m = paramF32(mean), vr = paramF32(var);
  std::vector<float> a(sc.size());
  for (size_t c = 0; c < a.size(); ++c)
    a[c] = sc[c] / std::sqrt(vr[c] + o.epsilon);
  withFloat16or32(x.dtype, [&](auto tag) {
    using S = decltype(tag);
    normalize(g, x.as<const S>(), y.as<S>(), m.data(), a.data(), b.data());
  });
  return Status::ok();
}

namespace {

/// batchNormTraining's checks; g gets the per-channel geometry.
Status checkTraining(const TensorView &x, const TensorView &scale,
                     const TensorView &bias, const TensorView &inputMean,
                     const TensorView &inputVar, const TensorView &y,
                     const TensorView &runningMean,
                     const TensorView &runningVar, const BatchNormOptions &o,
                     const TensorView *batchMean, const TensorView *batchVar,
                     Geom &g) {
  constexpr std::string_view op = "batchNormTraining";
  if (Status s = checkXY(op, x, y, o, g); !s)
    return s;
  if (!std::isfinite(o.momentum))
    return fail(op, "momentum must be finite");
  using Named = std::pair<const char *, const TensorView *>;
  std::vector<Named> inputs{{"x", &x}, {"scale", &scale}, {"bias", &bias},
                            {"inputMean", &inputMean}, {"inputVar", &inputVar}};
  std::vector<Named> outputs{{"y", &y}, {"runningMean", &runningMean},
                             {"runningVar", &runningVar}, {"batchMean", batchMean},
                             {"batchVar", batchVar}};
  for (size_t i = 1; i < inputs.size(); ++i)
    if (Status s = checkParam(op, inputs[i].first, *inputs[i].second, g.c); !s)
      return s;
  for (size_t i = 1; i < outputs.size(); ++i)
    if (outputs[i].second)
      if (Status s = checkParam(op, outputs[i].first, *outputs[i].second, g.c);
          !s)
        return s;
  // Outputs overlap nothing, except y = x and an in-place running update.
  for (const Named &out : outputs) {
    if (!out.second)
      continue;
    const TensorView &ov = *out.second;
    auto allowed = [&](const TensorView &in) {
      return (&ov == &y && &in == &x) ||
             (&ov == &runningMean && &in == &inputMean) ||
             (&ov == &runningVar && &in == &inputVar);
    };
    for (const Named &in : inputs)
      if (overlaps(ov.data, ov.byteCount(), in.second->data,
                   in.second->byteCount()) &&
          !(allowed(*in.second) && ov.data == in.second->data))
        return fail(op, std::string(out.first) + " overlaps " + in.first);
    for (const Named &other : outputs)
      if (other.second && &other != &out &&
          overlaps(ov.data, ov.byteCount(), other.second->data,
                   other.second->byteCount()))
        return fail(op, std::string(out.first) + " overlaps " + other.first);
  }
  int64_t count = g.outer * g.inner;
  if (count == 0)
    return fail(op, "x " + shapeStr(x.shape) +
                        " has no elements per channel to take statistics of");
  return Status::ok();
}

} // namespace

Status checkBatchNormTraining(
    const TensorView &x, const TensorView &scale, const TensorView &bias,
    const TensorView &inputMean, const TensorView &inputVar,
    const TensorView &y, const TensorView &runningMean,
    const TensorView &runningVar, const BatchNormOptions &o,
    const TensorView *batchMean, const TensorView *batchVar) {
  Geom g;
  return checkTraining(x, scale, bias, inputMean, inputVar, y, runningMean,
                       runningVar, o, batchMean, batchVar, g);
}

Status batchNormTraining(const TensorView &x, const TensorView &scale,
                         const TensorView &bias, const TensorView &inputMean,
                         const TensorView &inputVar, const TensorView &y,
                         const TensorView &runningMean,
                         const TensorView &runningVar,
                         const BatchNormOptions &o, const TensorView *batchMean,
                         const TensorView *batchVar) {
  Geom g;
  if (Status s =
          checkTraining(x, scale, bias, inputMean, inputVar, y, runningMean,
                        runningVar, o, batchMean, batchVar, g);
      !s)
    return s;
  // With the batch split over ranks, their sums add up after each pass.
  const int ranks = o.syncRanks ? o.syncRanks->size() : 1;
  int64_t count = g.outer * g.inner * ranks;

  // Batch statistics in f64: the mean, then the mean squared deviation.
  std::vector<double> sum(static_cast<size_t>(g.c), 0.0),
      sq(static_cast<size_t>(g.c), 0.0);
  Status synced = Status::ok();
  withFloat16or32(x.dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *xp = x.as<const S>();
    for (int pass = 0; pass < 2 && synced; ++pass) {
      for (int64_t ou = 0; ou < g.outer; ++ou)
        for (int64_t c = 0; c < g.c; ++c) {
          const S *xr = xp + (ou * g.c + c) * g.inner;
          if (pass == 0) {
            double s = 0.0;
            for (int64_t i = 0; i < g.inner; ++i)
              s += load(xr[i]);
            sum[c] += s;
          } else {
            double m = sum[c], s = 0.0;
            for (int64_t i = 0; i < g.inner; ++i) {
              double d = load(xr[i]) - m;
              s += d * d;
            }
            sq[c] += s;
          }
        }
      if (o.syncRanks) {
        std::vector<double> &sums = pass == 0 ? sum : sq;
        synced = o.syncRanks->allReduce(sums.data(), sums.size(), DType::F64,
                                        CollectiveOp::Sum);
      }
      if (pass == 0)
        for (double &s : sum)
          s /= static_cast<double>(count);
    }
  });
  if (!synced)
    return Status::error("batch statistics over the ranks: " +
                         synced.message());

  std::vector<float> sc = paramF32(scale), b = paramF32(bias),
                     im = paramF32(inputMean), iv = paramF32(inputVar);
  std::vector<float> mean(sum.size()), a(sum.size()), var(sum.size()),
      rm(sum.size()), rv(sum.size());
  for (size_t c = 0; c < sum.size(); ++c) {
    double v = sq[c] / static_cast<double>(count);
    mean[c] = static_cast<float>(sum[c]);
    var[c] = static_cast<float>(v);
    a[c] = static_cast<float>(sc[c] / std::sqrt(v + o.epsilon));
    rm[c] = static_cast<float>(double(im[c]) * o.momentum +
                               sum[c] * (1.0 - double(o.momentum)));
    rv[c] = static_cast<float>(double(iv[c]) * o.momentum +
                               v * (1.0 - double(o.momentum)));
  }
  withFloat16or32(x.dtype, [&](auto tag) {
    using S = decltype(tag);
    normalize(g, x.as<const S>(), y.as<S>(), mean.data(), a.data(), b.data());
  });
  fromF32(rm.data(), runningMean.dtype, runningMean.data, g.c);
  fromF32(rv.data(), runningVar.dtype, runningVar.data, g.c);
  if (batchMean)
    fromF32(mean.data(), batchMean->dtype, batchMean->data, g.c);
  if (batchVar)
    fromF32(var.data(), batchVar->dtype, batchVar->data, g.c);
  return Status::ok();
}

} // namespace mp::rt::cpu
