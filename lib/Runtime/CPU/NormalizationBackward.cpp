//===- NormalizationBackward.cpp - layer norm's gradient on the CPU -------===//
//
// kernel.layer_norm_grad: from the forward's statistics, per row of the
// normalized dims x̂ = (x - mean) * inv_std_dev and g = dy * scale, then
// dx = inv_std_dev * (g - mean(g) - x̂ * mean(g * x̂)), each element
// computed in f32 (the two row means accumulated in f64) and rounded once.
// dscale = Σ dy * x̂ and dbias = Σ dy over the rows, summed in f64 per
// block of kRowsPerBlock rows and then over the blocks in order, so that
// the sums do not depend on the number of threads; rounded once.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/NNKernels.h"

#include "KernelUtil.h"
#include "Parallel.h"

#include <vector>

namespace mp::rt::cpu {
using namespace detail;

namespace {
constexpr std::string_view kOp = "layer_norm_grad";
constexpr int64_t kRowsPerBlock = 16;

/// The elements of x's dims before `axis` (the rows).
int64_t leadingElements(const Shape &shape, int64_t axis) {
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i)
    rows *= shape[static_cast<size_t>(i)];
  return rows;
}
} // namespace

Status checkLayerNormGrad(const TensorView &dy, const TensorView &x,
                          const TensorView &scale, const TensorView &mean,
                          const TensorView &invStdDev, const TensorView &dx,
                          const TensorView &dscale, const TensorView *dbias,
                          int64_t &axis) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"dy", &dy},
                         {"x", &x},
                         {"scale", &scale},
                         {"mean", &mean},
                         {"inv_std_dev", &invStdDev},
                         {"dx", &dx},
                         {"dscale", &dscale},
                         {"dbias", dbias}})
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axis < -rank || axis >= rank)
    return fail(kOp, "axis " + std::to_string(axis) +
                         " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  if (!isF32or16(x.dtype))
    return fail(kOp, "x has dtype " + std::string(dtypeName(x.dtype)) +
                         "; expected f32, f16 or bf16");
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"dy", &dy}, {"dx", &dx}})
    if (v->dtype != x.dtype || v->shape != x.shape)
      return fail(
          kOp, std::string(name) + " is " + std::string(dtypeName(v->dtype)) +
                   " " + shapeStr(v->shape) + ", expected x's " +
                   std::string(dtypeName(x.dtype)) + " " + shapeStr(x.shape));
  const int64_t rows = leadingElements(x.shape, axis);
  const int64_t rowSize = x.numElements() / std::max<int64_t>(rows, 1);
  // One scale value per normalized element (any shape holding them).
  if (!isF32or16(scale.dtype) || scale.numElements() != rowSize)
    return fail(kOp, "scale must hold the " + std::to_string(rowSize) +
                         " values of the normalized dims in f32, f16 or "
                         "bf16, got " +
                         std::string(dtypeName(scale.dtype)) + " " +
                         shapeStr(scale.shape));
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"mean", &mean},
        {"inv_std_dev", &invStdDev}})
    if (v->dtype != DType::F32 || v->numElements() != rows)
      return fail(kOp, std::string(name) + " must hold the " +
                           std::to_string(rows) + " f32 statistics, got " +
                           std::string(dtypeName(v->dtype)) + " " +
                           shapeStr(v->shape));
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"dscale", &dscale},
        {"dbias", dbias}})
    if (v && (v->dtype != scale.dtype || v->numElements() != rowSize))
      return fail(kOp, std::string(name) + " must hold " +
                           std::to_string(rowSize) + " values of scale's " +
                           std::string(dtypeName(scale.dtype)) + ", got " +
                           std::string(dtypeName(v->dtype)) + " " +
                           shapeStr(v->shape));
  // The outputs are written while the inputs are read.
  for (const TensorView *out : {&dx, &dscale, dbias})
    for (const TensorView *in : {&dy, &x, &scale, &mean, &invStdDev})
      if (out &&
          overlaps(out->data, out->byteCount(), in->data, in->byteCount()))
        return fail(kOp, "an output overlaps an input");
  return Status::ok();
}

Status layerNormGrad(const TensorView &dy, const TensorView &x,
                     const TensorView &scale, const TensorView &mean,
                     const TensorView &invStdDev, const TensorView &dx,
                     const TensorView &dscale, const TensorView *dbias,
                     int64_t axis) {
  if (Status s = checkLayerNormGrad(dy, x, scale, mean, invStdDev, dx, dscale,
                                    dbias, axis);
      !s)
    return s;
  const int64_t rows = leadingElements(x.shape, axis);
  const int64_t n = rows ? x.numElements() / rows : 0;
  std::vector<float> scaleF32(static_cast<size_t>(n));
  toF32(scale.dtype, scale.data, scaleF32.data(), n);
  const float *meanOf = mean.as<const float>();
  const float *invStdOf = invStdDev.as<const float>();
  const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  // Per block: the sums of dy * x̂ (then dy) over its rows.
  std::vector<double> partial(static_cast<size_t>(blocks * 2 * n), 0.0);
  const size_t elementBytes = byteSize(x.dtype);
  parallelItems(blocks, kRowsPerBlock * n, [&](int64_t block) {
    std::vector<float> dyRow(static_cast<size_t>(n)),
        xhat(static_cast<size_t>(n)), g(static_cast<size_t>(n)),
        out(static_cast<size_t>(n));
    double *sumDyXhat = partial.data() + block * 2 * n;
    double *sumDy = sumDyXhat + n;
    const int64_t end = std::min(rows, (block + 1) * kRowsPerBlock);
    for (int64_t r = block * kRowsPerBlock; r < end; ++r) {
      const size_t offset = static_cast<size_t>(r * n) * elementBytes;
      toF32(dy.dtype, static_cast<const char *>(dy.data) + offset, dyRow.data(),
            n);
      toF32(x.dtype, static_cast<const char *>(x.data) + offset, xhat.data(),
            n);
      const float m = meanOf[r], invStd = invStdOf[r];
      double sumG = 0.0, sumGXhat = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        xhat[j] = (xhat[j] - m) * invStd;
        g[j] = dyRow[j] * scaleF32[j];
        sumG += g[j];
        sumGXhat += static_cast<double>(g[j]) * xhat[j];
        sumDyXhat[j] += static_cast<double>(dyRow[j]) * xhat[j];
        sumDy[j] += dyRow[j];
      }
      const float meanG = static_cast<float>(sumG / static_cast<double>(n));
      const float meanGXhat =
          static_cast<float>(sumGXhat / static_cast<double>(n));
      for (int64_t j = 0; j < n; ++j)
        out[j] = invStd * (g[j] - meanG - xhat[j] * meanGXhat);
      fromF32(out.data(), dx.dtype, static_cast<char *>(dx.data) + offset, n);
    }
  });
  // The blocks' sums, in block order, rounded once.
  std::vector<float> dscaleF32(static_cast<size_t>(n)),
      dbiasF32(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double a = 0.0, b = 0.0;
    for (int64_t block = 0; block < blocks; ++block) {
      a += partial[static_cast<size_t>(block * 2 * n + j)];
      b += partial[static_cast<size_t>(block * 2 * n + n + j)];
    }
    dscaleF32[static_cast<size_t>(j)] = static_cast<float>(a);
    dbiasF32[static_cast<size_t>(j)] = static_cast<float>(b);
  }
  fromF32(dscaleF32.data(), dscale.dtype, dscale.data, n);
  if (dbias)
    fromF32(dbiasF32.data(), dbias->dtype, dbias->data, n);
  return Status::ok();
}

} // namespace mp::rt::cpu
