//===- LossBackward.cpp - gradients of the losses on the CPU --------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss backward, ONNX
// semantics. A first pass reads the labels, rejects one outside [0, C) that
// is not ignored (before anything is written) and sums the denominator of
// reduction mean; each position then gets its coefficient
// w[label] * dloss / denom (0 when ignored). Arithmetic in f64, each
// gradient element rounded once to its type.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

std::string dt(DType t) { return std::string(dtypeName(t)); }


/// The names of one loss gradient's buffers, for messages.
struct Names {
  const char *input, *target, *weight, *grad;
};

struct Geom {
  int64_t n = 0, c = 0, inner = 1;
};

Status check(std::string_view op, const Names &nm, const TensorView &input,
             const TensorView &target, const TensorView &dloss,
             const TensorView *weight, const TensorView &grad,
             LossReduction reduction, Geom &g) {
  using Named = std::pair<const char *, const TensorView *>;
  const Named views[] = {{nm.input, &input},
                         {nm.target, &target},
                         {"dloss", &dloss},
                         {nm.weight, weight},
                         {nm.grad, &grad}};
  for (auto [name, v] : views)
    if (v)
      if (Status s = checkView(op, name, *v); !s)
        return s;
  if (!isFloat(input.dtype))
    return fail(op, std::string(nm.input) + " has dtype " + dt(input.dtype) +
                        "; expected f32, f16, bf16 or f64");
  if (target.dtype != DType::I32 && target.dtype != DType::I64)
    return fail(op, std::string(nm.target) + " has dtype " + dt(target.dtype) +
                        "; expected i32 or i64");
  if (input.shape.size() < 2)
    return fail(op, std::string(nm.input) +
                        " must be [N, C] or [N, C, d1..dk], got " +
                        shapeStr(input.shape));
  g.n = input.shape[0];
  g.c = input.shape[1];
  g.inner = numElements(Shape(input.shape.begin() + 2, input.shape.end()));
  Shape expectedTarget{g.n};
  expectedTarget.insert(expectedTarget.end(), input.shape.begin() + 2,
                        input.shape.end());
  if (target.shape != expectedTarget)
    return fail(op, std::string(nm.target) + " has shape " +
                        shapeStr(target.shape) + ", expected " +
                        shapeStr(expectedTarget));
  if (!isFloat(dloss.dtype))
    return fail(op, "dloss has dtype " + dt(dloss.dtype) +
                        "; expected a float type");
  if (reduction == LossReduction::None ? dloss.shape != target.shape
                                       : dloss.numElements() != 1)
    return fail(op, "dloss has shape " + shapeStr(dloss.shape) + ", expected " +
                        (reduction == LossReduction::None
                             ? shapeStr(target.shape) + " (reduction none)"
                             : std::string("one element")));
  if (weight && (weight->shape != Shape{g.c} || !isFloat(weight->dtype)))
    return fail(op, std::string(nm.weight) + " is " + dt(weight->dtype) + " " +
                        shapeStr(weight->shape) + ", expected a float [" +
                        std::to_string(g.c) + "]");
  if (grad.dtype != input.dtype || grad.shape != input.shape)
    return fail(op, std::string(nm.grad) + " (" + dt(grad.dtype) + " " +
                        shapeStr(grad.shape) + ") must have " + nm.input +
                        "'s dtype and shape (" + dt(input.dtype) + " " +
                        shapeStr(input.shape) + ")");
  for (int i = 0; i < 4; ++i)
    if (const TensorView *v = views[i].second)
      if (overlaps(v->data, v->byteCount(), grad.data, grad.byteCount()))
        return fail(op, std::string(views[i].first) + " overlaps " + nm.grad);
  return Status::ok();
}

/// Per position (n, j) of the targets: its class, or -1 when ignored, and
/// its coefficient w[class] * dloss / denom (0 when ignored). `noun` names a
/// target in messages ("label", "target").
Status coefficients(std::string_view op, const char *noun,
                    const TensorView &target, const TensorView &dloss,
                    const TensorView *weight, LossReduction reduction,
                    std::optional<int64_t> ignore, const Geom &g,
                    std::vector<int64_t> &cls, std::vector<double> &coef) {
  const int64_t positions = g.n * g.inner;
  cls.resize(static_cast<size_t>(positions));
  coef.assign(static_cast<size_t>(positions), 0.0);
  std::vector<double> w = weight ? toF64(*weight) : std::vector<double>();
  std::vector<double> dl = toF64(dloss);
  double denom = 0.0;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t t = target.dtype == DType::I32
                    ? static_cast<int64_t>(target.as<const int32_t>()[p])
                    : target.as<const int64_t>()[p];
    if (ignore && t == *ignore) {
      cls[p] = -1;
      continue;
    }
    if (t < 0 || t >= g.c)
      return fail(op, std::string(noun) + " " + std::to_string(t) +
                          " at position " + std::to_string(p) +
                          " is outside [0, " + std::to_string(g.c) + ")");
    cls[p] = t;
    denom += weight ? w[t] : 1.0;
  }
  if (reduction != LossReduction::Mean)
    denom = 1.0;
  for (int64_t p = 0; p < positions; ++p)
    if (cls[p] >= 0)
      coef[p] = (weight ? w[cls[p]] : 1.0) *
                dl[reduction == LossReduction::None ? p : 0] / denom;
  return Status::ok();
}

/// check() and then coefficients(): what both gradients need first.
Status prepare(std::string_view op, const Names &nm, const char *noun,
               const TensorView &input, const TensorView &target,
               const TensorView &dloss, const TensorView *weight,
               const TensorView &grad, LossReduction reduction,
               std::optional<int64_t> ignore, Geom &g,
               std::vector<int64_t> &cls, std::vector<double> &coef) {
  if (Status s =
          check(op, nm, input, target, dloss, weight, grad, reduction, g);
      !s)
    return s;
  return coefficients(op, noun, target, dloss, weight, reduction, ignore, g,
                      cls, coef);
}

} // namespace

Status
softmaxCrossEntropyGrad(const TensorView &scores, const TensorView &labels,
                        const TensorView &dloss, const TensorView *weights,
                        const TensorView &dscores, LossReduction reduction,
                        std::optional<int64_t> ignoreIndex) {
  constexpr std::string_view op = "softmax_cross_entropy_grad";
  Geom g;
  std::vector<int64_t> cls;
  std::vector<double> coef;
  if (Status s = prepare(op, {"scores", "labels", "weights", "dscores"},
                         "label", scores, labels, dloss, weights, dscores,
                         reduction, ignoreIndex, g, cls, coef);
      !s)
    return s;
  if (dscores.numElements() == 0)
    return Status::ok();
  std::vector<double> x = toF64(scores);
  std::vector<double> out(x.size(), 0.0);
  std::vector<double> e(static_cast<size_t>(g.c));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t j = 0; j < g.inner; ++j) {
      int64_t p = n * g.inner + j;
      if (cls[p] < 0)
        continue;
      const int64_t base = n * g.c * g.inner + j;
      double mx = -INFINITY;
      for (int64_t c = 0; c < g.c; ++c)
        mx = std::max(mx, x[base + c * g.inner]);
      double sum = 0.0;
      for (int64_t c = 0; c < g.c; ++c)
        sum += e[c] = std::exp(x[base + c * g.inner] - mx);
      for (int64_t c = 0; c < g.c; ++c)
        out[base + c * g.inner] =
            (e[c] / sum - (c == cls[p] ? 1.0 : 0.0)) * coef[p];
    }
  fromF64(out.data(), dscores);
  return Status::ok();
}

Status nllLossGrad(const TensorView &input, const TensorView &target,
                   const TensorView &dloss, const TensorView *weight,
                   const TensorView &dinput, LossReduction reduction,
                   std::optional<int64_t> ignoreIndex) {
  constexpr std::string_view op = "nll_loss_grad";
  Geom g;
  std::vector<int64_t> cls;
  std::vector<double> coef;
  if (Status s = prepare(op, {"input", "target", "weight", "dinput"}, "target",
                         input, target, dloss, weight, dinput, reduction,
                         ignoreIndex, g, cls, coef);
      !s)
    return s;
  std::vector<double> out(static_cast<size_t>(dinput.numElements()), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t j = 0; j < g.inner; ++j) {
      int64_t p = n * g.inner + j;
      if (cls[p] >= 0)
        out[(n * g.c + cls[p]) * g.inner + j] = -coef[p];
    }
  fromF64(out.data(), dinput);
  return Status::ok();
}

Status checkSoftmaxCrossEntropyGrad(const TensorView &scores,
                                    const TensorView &labels,
                                    const TensorView &dloss,
                                    const TensorView *weights,
                                    const TensorView &dscores,
                                    LossReduction reduction) {
  Geom g;
  return check("softmax_cross_entropy_grad",
               {"scores", "labels", "weights", "dscores"}, scores, labels,
               dloss, weights, dscores, reduction, g);
}

Status checkNllLossGrad(const TensorView &input, const TensorView &target,
                        const TensorView &dloss, const TensorView *weight,
                        const TensorView &dinput, LossReduction reduction) {
  Geom g;
  return check("nll_loss_grad", {"input", "target", "weight", "dinput"}, input,
               target, dloss, weight, dinput, reduction, g);
}

} // namespace mp::rt::cpu
