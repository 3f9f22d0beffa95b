//===- Normalization.cpp - layer norm, instance norm, LRN on the CPU ------===//
//
// Rows are widened to f32 one at a time; statistics accumulate in f64 (two
// passes: mean, then the centred squares) and are applied in f32; each
// output element is rounded once to y's type.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/NNKernels.h"

#include "KernelUtil.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

/// Normalizes axis (negative counts from the end) into [0, rank).
Status normalizeAxis(std::string_view op, int64_t &axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                        std::to_string(rank));
  if (axis < 0)
    axis += r;
  return Status::ok();
}

/// `v` is f32, f16 or bf16 and unidirectionally broadcasts to `target`.
Status checkBroadcastTo(std::string_view op, std::string_view name,
                        const TensorView &v, const Shape &target) {
  if (Status s = checkView(op, name, v); !s)
    return s;
  if (!isF32or16(v.dtype))
    return fail(op, std::string(name) + " has dtype " +
                        std::string(dtypeName(v.dtype)) +
                        "; expected f32, f16 or bf16");
  size_t rank = target.size();
  if (v.shape.size() > rank)
    return fail(op, std::string(name) + " " + shapeStr(v.shape) +
                        " does not broadcast to " + shapeStr(target));
  size_t lead = rank - v.shape.size();
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] != 1 && v.shape[i] != target[lead + i])
      return fail(op, std::string(name) + " " + shapeStr(v.shape) +
                          " does not broadcast to " + shapeStr(target));
  return Status::ok();
}

/// `v` (f32, f16 or bf16) unidirectionally broadcast to `target`, as f32.
Status broadcastToF32(std::string_view op, std::string_view name,
                      const TensorView &v, const Shape &target,
                      std::vector<float> &out) {
  if (Status s = checkBroadcastTo(op, name, v, target); !s)
    return s;
  size_t rank = target.size();
  size_t lead = rank - v.shape.size();
  std::vector<float> src(static_cast<size_t>(v.numElements()));
  toF32(v.dtype, v.data, src.data(), v.numElements());
  int64_t n = numElements(target);
  out.resize(static_cast<size_t>(n));
  if (v.numElements() == n) {
    out = std::move(src);
    return Status::ok();
  }
  // Source strides over the target's dimensions (0 where broadcast).
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t i = v.shape.size(); i-- > 0;) {
    stride[lead + i] = v.shape[i] == 1 ? 0 : s;
    s *= v.shape[i];
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t j = 0; j < rank; ++j)
      off += idx[j] * stride[j];
    out[i] = src[off];
    for (size_t j = rank; j-- > 0;) {
      if (++idx[j] < target[j])
        break;
      idx[j] = 0;
    }
  }
  return Status::ok();
}

/// Mean and 1 / sqrt(biased variance + epsilon) of n floats.
void moments(const float *v, int64_t n, float epsilon, float &mean,
             float &invStd) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += v[i];
  double m = n ? sum / static_cast<double>(n) : 0.0;
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double c = v[i] - m;
    sq += c * c;
  }
  double var = n ? sq / static_cast<double>(n) : 0.0;
  mean = static_cast<float>(m);
  invStd = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(epsilon)));
}

Status checkSameShapeAndType(std::string_view op, const TensorView &x,
                             const TensorView &y) {
  if (Status s = checkFloatInOut(op, x, y); !s)
    return s;
  if (y.dtype != x.dtype || y.shape != x.shape)
    return fail(op, "y is " + std::string(dtypeName(y.dtype)) + " " +
                        shapeStr(y.shape) + ", expected x's " +
                        std::string(dtypeName(x.dtype)) + " " +
                        shapeStr(x.shape));
  if (overlaps(x.data, x.byteCount(), y.data, y.byteCount()) && x.data != y.data)
    return fail(op, "y overlaps x without being x itself");
  return Status::ok();
}

} // namespace

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

namespace {
/// The checks of a norm over x's dims from `axis` (layer and RMS norms):
/// y like x, the axis (normalized), epsilon, a scale broadcast onto the
/// normalized dims.
Status checkRowNorm(std::string_view op, const TensorView &x,
                    const TensorView &scale, const TensorView &y, int64_t &axis,
                    float epsilon) {
  if (Status s = checkSameShapeAndType(op, x, y); !s)
    return s;
  if (Status s = normalizeAxis(op, axis, x.shape.size()); !s)
    return s;
  if (!(epsilon >= 0.0f))
    return fail(op, "epsilon must be >= 0");
  Shape inner(x.shape.begin() + axis, x.shape.end());
  return checkBroadcastTo(op, "scale", scale, inner);
}
} // namespace

Status checkLayerNorm(const TensorView &x, const TensorView &scale,
                      const TensorView *bias, const TensorView &y,
                      const TensorView *mean, const TensorView *invStdDev,
                      int64_t &axis, float epsilon) {
  constexpr std::string_view kOp = "layer_norm";
  if (Status s = checkRowNorm(kOp, x, scale, y, axis, epsilon); !s)
    return s;
  Shape inner(x.shape.begin() + axis, x.shape.end());
  if (bias)
    if (Status s = checkBroadcastTo(kOp, "bias", *bias, inner); !s)
      return s;
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{
                             "mean", mean}, {"inv_std_dev", invStdDev}}) {
    if (!v)
      continue;
    if (Status s = checkView(kOp, name, *v); !s)
      return s;
    if (!isF32or16(v->dtype))
      return fail(kOp, std::string(name) + " has dtype " +
                           std::string(dtypeName(v->dtype)) +
                           "; expected f32, f16 or bf16");
    Shape kept(x.shape.begin(), x.shape.begin() + axis);
    Shape withOnes = kept;
    withOnes.resize(x.shape.size(), 1);
    if (v->shape != withOnes && v->shape != kept)
      return fail(kOp, std::string(name) + " has shape " + shapeStr(v->shape) +
                           ", expected " + shapeStr(withOnes));
    for (const TensorView *in : {&x, &scale, bias, &y})
      if (in && overlaps(in->data, in->byteCount(), v->data, v->byteCount()))
        return fail(kOp, std::string(name) + " overlaps another operand");
  }
  return Status::ok();
}

Status layerNorm(const TensorView &x, const TensorView &scale,
                 const TensorView *bias, const TensorView &y,
                 const TensorView *mean, const TensorView *invStdDev,
                 int64_t axis, float epsilon) {
  constexpr std::string_view kOp = "layer_norm";
  if (Status s =
          checkLayerNorm(x, scale, bias, y, mean, invStdDev, axis, epsilon);
      !s)
    return s;
  Shape inner(x.shape.begin() + axis, x.shape.end());
  int64_t rowSize = numElements(inner);
  int64_t rows = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  std::vector<float> scaleF, biasF;
  if (Status s = broadcastToF32(kOp, "scale", scale, inner, scaleF); !s)
    return s;
  if (bias)
    if (Status s = broadcastToF32(kOp, "bias", *bias, inner, biasF); !s)
      return s;

  std::vector<float> row(static_cast<size_t>(rowSize)),
      means(static_cast<size_t>(rows)), invStds(static_cast<size_t>(rows));
  size_t elt = byteSize(x.dtype);
  for (int64_t i = 0; i < rows; ++i) {
    const char *src = static_cast<const char *>(x.data) + i * rowSize * elt;
    toF32(x.dtype, src, row.data(), rowSize);
    float m, inv;
    moments(row.data(), rowSize, epsilon, m, inv);
    means[i] = m;
    invStds[i] = inv;
    if (bias)
      for (int64_t j = 0; j < rowSize; ++j)
        row[j] = (row[j] - m) * inv * scaleF[j] + biasF[j];
    else
      for (int64_t j = 0; j < rowSize; ++j)
        row[j] = (row[j] - m) * inv * scaleF[j];
    fromF32(row.data(), y.dtype, static_cast<char *>(y.data) + i * rowSize * elt,
            rowSize);
  }
  if (mean)
    fromF32(means.data(), mean->dtype, mean->data, rows);
  if (invStdDev)
    fromF32(invStds.data(), invStdDev->dtype, invStdDev->data, rows);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// RMS normalization
//===----------------------------------------------------------------------===//

Status checkRmsNorm(const TensorView &x, const TensorView &scale,
                    const TensorView &y, int64_t &axis, float epsilon) {
  return checkRowNorm("rms_norm", x, scale, y, axis, epsilon);
}

Status rmsNorm(const TensorView &x, const TensorView &scale,
               const TensorView &y, int64_t axis, float epsilon) {
  constexpr std::string_view kOp = "rms_norm";
  if (Status s = checkRmsNorm(x, scale, y, axis, epsilon); !s)
    return s;
  Shape inner(x.shape.begin() + axis, x.shape.end());
  int64_t rowSize = numElements(inner);
  int64_t rows = numElements(Shape(x.shape.begin(), x.shape.begin() + axis));
  std::vector<float> scaleF;
  if (Status s = broadcastToF32(kOp, "scale", scale, inner, scaleF); !s)
    return s;
  size_t elt = byteSize(x.dtype);
  detail::parallelItems(rows, rowSize, [&](int64_t i) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(rowSize));
    const char *src = static_cast<const char *>(x.data) + i * rowSize * elt;
    toF32(x.dtype, src, row.data(), rowSize);
    double squares = 0.0;
    for (int64_t j = 0; j < rowSize; ++j)
      squares += static_cast<double>(row[j]) * row[j];
    double meanSquare = rowSize ? squares / static_cast<double>(rowSize) : 0.0;
    const float inv = static_cast<float>(
        1.0 / std::sqrt(meanSquare + static_cast<double>(epsilon)));
    for (int64_t j = 0; j < rowSize; ++j)
      row[j] = row[j] * inv * scaleF[j];
    fromF32(row.data(), y.dtype,
            static_cast<char *>(y.data) + i * rowSize * elt, rowSize);
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Group normalization
//===----------------------------------------------------------------------===//

namespace {
/// Whether `t` holds one value per channel of `channels`: [C] or [C, 1,
/// ...], leading 1s allowed.
bool isPerChannel(const TensorView &t, int64_t channels) {
  size_t d = 0;
  while (d < t.shape.size() && t.shape[d] == 1 && t.shape.size() - d > 1)
    ++d;
  if (d == t.shape.size() || t.shape[d] != channels)
    return false;
  for (size_t rest = d + 1; rest < t.shape.size(); ++rest)
    if (t.shape[rest] != 1)
      return false;
  return true;
}
} // namespace

Status checkGroupNorm(const TensorView &x, const TensorView &scale,
                      const TensorView *bias, const TensorView &y,
                      int64_t groups, float epsilon) {
  constexpr std::string_view kOp = "group_norm";
  if (Status s = checkSameShapeAndType(kOp, x, y); !s)
    return s;
  if (x.shape.size() < 2)
    return fail(kOp,
                "x needs rank >= 2 ([N, C, ...]), got " + shapeStr(x.shape));
  if (!(epsilon >= 0.0f))
    return fail(kOp, "epsilon must be >= 0");
  const int64_t c = x.shape[1];
  if (groups < 1 || c % groups)
    return fail(kOp, "groups must divide the " + std::to_string(c) +
                         " channels, got " + std::to_string(groups));
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"scale", &scale},
        {"bias", bias}}) {
    if (!v)
      continue;
    if (Status s = checkView(kOp, name, *v); !s)
      return s;
    if (v->dtype != x.dtype && v->dtype != DType::F32)
      return fail(kOp, std::string(name) + " has dtype " +
                           std::string(dtypeName(v->dtype)) +
                           "; expected x's or f32");
    if (!isPerChannel(*v, c))
      return fail(kOp, std::string(name) + " " + shapeStr(v->shape) +
                           " must hold one value per channel ([" +
                           std::to_string(c) + "] or [" + std::to_string(c) +
                           ", 1, ...])");
  }
  return Status::ok();
}

Status groupNorm(const TensorView &x, const TensorView &scale,
                 const TensorView *bias, const TensorView &y, int64_t groups,
                 float epsilon) {
  if (Status s = checkGroupNorm(x, scale, bias, y, groups, epsilon); !s)
    return s;
  const int64_t n = x.shape[0], c = x.shape[1];
  const int64_t perGroup = c / groups;
  const int64_t spatial =
      numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  std::vector<float> scaleF(static_cast<size_t>(c)),
      biasF(static_cast<size_t>(c), 0.0f);
  toF32(scale.dtype, scale.data, scaleF.data(), c);
  if (bias)
    toF32(bias->dtype, bias->data, biasF.data(), c);
  const size_t elt = byteSize(x.dtype);
  const int64_t groupSize = perGroup * spatial;
  detail::parallelItems(n * groups, groupSize, [&](int64_t item) {
    // Group `item % groups` of image `item / groups`: contiguous.
    thread_local std::vector<float> values;
    values.resize(static_cast<size_t>(groupSize));
    const int64_t first = item * groupSize;
    toF32(x.dtype, static_cast<const char *>(x.data) + first * elt,
          values.data(), groupSize);
    float m, inv;
    moments(values.data(), groupSize, epsilon, m, inv);
    const int64_t firstChannel = (item % groups) * perGroup;
    for (int64_t k = 0; k < perGroup; ++k) {
      const float a = inv * scaleF[static_cast<size_t>(firstChannel + k)];
      const float b = biasF[static_cast<size_t>(firstChannel + k)] - m * a;
      float *channel = values.data() + k * spatial;
      for (int64_t j = 0; j < spatial; ++j)
        channel[j] = channel[j] * a + b;
    }
    fromF32(values.data(), y.dtype, static_cast<char *>(y.data) + first * elt,
            groupSize);
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// InstanceNormalization
//===----------------------------------------------------------------------===//

Status checkInstanceNorm(const TensorView &x, const TensorView &scale,
                         const TensorView &bias, const TensorView &y,
                         float epsilon) {
  constexpr std::string_view kOp = "instance_norm";
  if (Status s = checkSameShapeAndType(kOp, x, y); !s)
    return s;
  if (x.shape.size() < 2)
    return fail(kOp, "x needs rank >= 2 ([N, C, ...]), got " + shapeStr(x.shape));
  if (!(epsilon >= 0.0f))
    return fail(kOp, "epsilon must be >= 0");
  int64_t c = x.shape[1];
  if (Status s = checkBroadcastTo(kOp, "scale", scale, {c}); !s)
    return s;
  if (Status s = checkBroadcastTo(kOp, "bias", bias, {c}); !s)
    return s;
  if (scale.shape != Shape{c} || bias.shape != Shape{c})
    return fail(kOp, "scale " + shapeStr(scale.shape) + " and bias " +
                         shapeStr(bias.shape) + " must be [" +
                         std::to_string(c) + "]");
  return Status::ok();
}

Status instanceNorm(const TensorView &x, const TensorView &scale,
                    const TensorView &bias, const TensorView &y,
                    float epsilon) {
  constexpr std::string_view kOp = "instance_norm";
  if (Status s = checkInstanceNorm(x, scale, bias, y, epsilon); !s)
    return s;
  int64_t n = x.shape[0], c = x.shape[1];
  std::vector<float> scaleF, biasF;
  if (Status s = broadcastToF32(kOp, "scale", scale, {c}, scaleF); !s)
    return s;
  if (Status s = broadcastToF32(kOp, "bias", bias, {c}, biasF); !s)
    return s;
  int64_t spatial = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  std::vector<float> row(static_cast<size_t>(spatial));
  size_t elt = byteSize(x.dtype);
  for (int64_t i = 0; i < n * c; ++i) {
    int64_t ch = i % c;
    toF32(x.dtype, static_cast<const char *>(x.data) + i * spatial * elt,
          row.data(), spatial);
    float m, inv;
    moments(row.data(), spatial, epsilon, m, inv);
    float a = inv * scaleF[ch], b = biasF[ch] - m * a;
    for (int64_t j = 0; j < spatial; ++j)
      row[j] = row[j] * a + b;
    fromF32(row.data(), y.dtype, static_cast<char *>(y.data) + i * spatial * elt,
            spatial);
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// LRN
//===----------------------------------------------------------------------===//

Status checkLrn(const TensorView &x, const TensorView &y, const LrnOptions &o) {
  constexpr std::string_view kOp = "lrn";
  if (Status s = checkSameShapeAndType(kOp, x, y); !s)
    return s;
  if (x.data == y.data && x.numElements() > 0)
    return fail(kOp, "y must not be x");
  if (x.shape.size() < 2)
    return fail(kOp, "x needs rank >= 2 ([N, C, ...]), got " + shapeStr(x.shape));
  if (o.size < 1)
    return fail(kOp, "size must be >= 1, got " + std::to_string(o.size));
  return Status::ok();
}

Status lrn(const TensorView &x, const TensorView &y, const LrnOptions &o) {
  if (Status s = checkLrn(x, y, o); !s)
    return s;
  int64_t n = x.shape[0], c = x.shape[1];
  int64_t spatial = numElements(Shape(x.shape.begin() + 2, x.shape.end()));
  int64_t before = (o.size - 1) / 2, after = o.size - 1 - before;
  int64_t image = c * spatial;
  std::vector<float> in(static_cast<size_t>(image)), sq(static_cast<size_t>(image)),
      out(static_cast<size_t>(image));
  size_t elt = byteSize(x.dtype);
  float scale = o.alpha / static_cast<float>(o.size);
  for (int64_t img = 0; img < n; ++img) {
    toF32(x.dtype, static_cast<const char *>(x.data) + img * image * elt,
          in.data(), image);
    for (int64_t i = 0; i < image; ++i)
      sq[i] = in[i] * in[i];
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t lo = std::max<int64_t>(0, ch - before);
      int64_t hi = std::min<int64_t>(c - 1, ch + after);
      float *dst = out.data() + ch * spatial;
      std::fill(dst, dst + spatial, 0.0f);
      for (int64_t k = lo; k <= hi; ++k) {
        const float *s = sq.data() + k * spatial;
        for (int64_t j = 0; j < spatial; ++j)
          dst[j] += s[j];
      }
      const float *src = in.data() + ch * spatial;
      for (int64_t j = 0; j < spatial; ++j)
        dst[j] = src[j] / std::pow(o.bias + scale * dst[j], o.beta);
    }
    fromF32(out.data(), y.dtype, static_cast<char *>(y.data) + img * image * elt,
            image);
  }
  return Status::ok();
}

} // namespace mp::rt::cpu
