//===- Training.cpp - loss scaling and optimizer steps on the CPU ---------===//
//
// See mp/Runtime/CPU/TrainingKernels.h. The arithmetic follows PyTorch's
// kernels step for step (GradScaler, torch.optim.SGD, torch.optim.Adam/AdamW
// in their single-tensor form), in f32 like them, so that the same inputs
// give the same bits where the operation order allows.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/TrainingKernels.h"

#include "KernelUtil.h"
#include "Parallel.h"
#include "mp/Runtime/Half.h"

#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

/// A one-element tensor of `dtype`.
Status checkScalar(std::string_view op, std::string_view name,
                   const TensorView &v, DType dtype) {
  if (Status s = checkView(op, name, v); !s)
    return s;
  if (v.dtype != dtype || v.numElements() != 1)
    return fail(op, std::string(name) + " must be one " +
                        std::string(dtypeName(dtype)) + " element, got " +
                        std::string(dtypeName(v.dtype)) + " " +
                        shapeStr(v.shape));
  return Status::ok();
}

/// An f32 tensor with the parameter's shape.
Status checkLikeParam(std::string_view op, std::string_view name,
                      const TensorView &v, const TensorView &param) {
  if (Status s = checkView(op, name, v); !s)
    return s;
  if (v.dtype != DType::F32 || v.shape != param.shape)
    return fail(op, std::string(name) + " must be f32 " +
                        shapeStr(param.shape) + " like the parameter, got " +
                        std::string(dtypeName(v.dtype)) + " " +
                        shapeStr(v.shape));
  return Status::ok();
}

/// An optimizer step's common operands: an f32 parameter (the master
/// weights), its f32 gradient and the i64 step count.
Status checkParamGradStep(std::string_view op, const TensorView &param,
                          const TensorView &grad, const TensorView &step) {
  if (Status s = checkView(op, "param", param); !s)
    return s;
  if (param.dtype != DType::F32)
    return fail(op, std::string("param must be f32 (master weights), got ") +
                        std::string(dtypeName(param.dtype)));
  if (Status s = checkLikeParam(op, "grad", grad, param); !s)
    return s;
  return checkScalar(op, "step", step, DType::I64);
}

/// found_inf, when given, is one f32 element.
Status checkFoundInf(std::string_view op, const TensorView &foundInf) {
  if (!foundInf.data)
    return Status::ok();
  return checkScalar(op, "found_inf", foundInf, DType::F32);
}

/// True when the step is to be skipped (found_inf given and set).
Result<bool> skipped(std::string_view op, const TensorView &foundInf) {
  if (Status s = checkFoundInf(op, foundInf); !s)
    return s;
  return foundInf.data && *foundInf.as<float>() != 0.0f;
}

} // namespace

Status checkInverseScale(const TensorView &scale) {
  return checkScalar("inverse_scale", "scale", scale, DType::F32);
}

Status inverseScale(const TensorView &scale, const TensorView &invScale) {
  constexpr std::string_view op = "inverse_scale";
  if (Status s = checkInverseScale(scale); !s)
    return s;
  if (Status s = checkScalar(op, "inv_scale", invScale, DType::F32); !s)
    return s;
  *invScale.as<float>() =
      static_cast<float>(1.0 / static_cast<double>(*scale.as<float>()));
  return Status::ok();
}

Status unscaleAndCheckFinite(const TensorView &grad, const TensorView &invScale,
                             const TensorView &foundInf) {
  constexpr std::string_view op = "unscale_check_finite";
  if (Status s = checkView(op, "grad", grad); !s)
    return s;
  if (Status s = checkScalar(op, "inv_scale", invScale, DType::F32); !s)
    return s;
  if (Status s = checkScalar(op, "found_inf", foundInf, DType::F32); !s)
    return s;
  const float inv = *invScale.as<float>();
  const int64_t n = grad.numElements();
  bool nonFinite = false;
  // As PyTorch's kernel: the check is on the value before scaling, and a
  // scale of 1 leaves the values untouched.
  auto unscale = [&](auto *g, auto load, auto store) {
    for (int64_t i = 0; i < n; ++i) {
      float v = load(g[i]);
      nonFinite |= !std::isfinite(v);
      if (inv != 1.0f)
        g[i] = store(v * inv);
    }
  };
  switch (grad.dtype) {
  case DType::F32:
    unscale(
        grad.as<float>(), [](float v) { return v; }, [](float v) { return v; });
    break;
  case DType::F16:
    unscale(
        grad.as<Half>(), [](Half v) { return toFloat(v); },
        [](float v) { return toHalf(v); });
    break;
  case DType::BF16:
    unscale(
        grad.as<BFloat16>(), [](BFloat16 v) { return toFloat(v); },
        [](float v) { return toBFloat16(v); });
    break;
  default:
    return fail(op, std::string("grad must be f32, f16 or bf16, got ") +
                        std::string(dtypeName(grad.dtype)));
  }
  if (nonFinite)
    *foundInf.as<float>() = 1.0f;
  return Status::ok();
}

Status checkLossScaleUpdate(const TensorView &scale,
                            const TensorView &growthTracker,
                            const TensorView &foundInf,
                            const LossScaleConfig &config) {
  constexpr std::string_view op = "loss_scale_update";
  if (Status s = checkScalar(op, "scale", scale, DType::F32); !s)
    return s;
  if (Status s = checkScalar(op, "growth_tracker", growthTracker, DType::I64);
      !s)
    return s;
  if (Status s = checkScalar(op, "found_inf", foundInf, DType::F32); !s)
    return s;
  if (config.growthInterval < 1 || !(config.growthFactor > 1.0) ||
      !(config.backoffFactor > 0.0 && config.backoffFactor < 1.0))
    return fail(op, "needs growth_interval >= 1, growth_factor > 1 and 0 < "
                    "backoff_factor < 1");
  return Status::ok();
}

Status updateLossScale(const TensorView &scale, const TensorView &growthTracker,
                       const TensorView &foundInf,
                       const LossScaleConfig &config) {
  if (Status s = checkLossScaleUpdate(scale, growthTracker, foundInf, config);
      !s)
    return s;
  float &current = *scale.as<float>();
  int64_t &tracker = *growthTracker.as<int64_t>();
  if (*foundInf.as<float>() != 0.0f) {
    current = static_cast<float>(current * config.backoffFactor);
    tracker = 0;
    return Status::ok();
  }
  int64_t successful = tracker + 1;
  if (successful >= config.growthInterval) {
    float grown = static_cast<float>(current * config.growthFactor);
    // Never grow the scale past f32's range to inf.
    if (std::isfinite(grown))
      current = grown;
    tracker = 0;
  } else {
    tracker = successful;
  }
  return Status::ok();
}

Status checkSgdStep(const TensorView &param, const TensorView &grad,
                    const TensorView &momentumBuffer, const TensorView &step,
                    const TensorView &foundInf, const SGDConfig &config) {
  constexpr std::string_view op = "sgd_step";
  if (Status s = checkParamGradStep(op, param, grad, step); !s)
    return s;
  if (config.momentum != 0)
    if (Status s = checkLikeParam(op, "momentum_buffer", momentumBuffer, param);
        !s)
      return s;
  if (config.nesterov && (config.momentum <= 0 || config.dampening != 0))
    return fail(op, "Nesterov momentum needs momentum > 0 and dampening 0");
  return checkFoundInf(op, foundInf);
}

Status sgdStep(const TensorView &param, const TensorView &grad,
               const TensorView &momentumBuffer, const TensorView &step,
               const TensorView &foundInf, const SGDConfig &config) {
  constexpr std::string_view op = "sgd_step";
  if (Status s =
          checkSgdStep(param, grad, momentumBuffer, step, foundInf, config);
      !s)
    return s;
  Result<bool> skip = skipped(op, foundInf);
  if (!skip)
    return skip.status();
  if (*skip)
    return Status::ok();

  int64_t &steps = *step.as<int64_t>();
  const float lr = static_cast<float>(config.lr),
              wd = static_cast<float>(config.weightDecay),
              mu = static_cast<float>(config.momentum),
              damp = static_cast<float>(1.0 - config.dampening);
  float *p = param.as<float>();
  const float *g = grad.as<float>();
  float *buf = config.momentum != 0 ? momentumBuffer.as<float>() : nullptr;
  const bool first = steps == 0, nesterov = config.nesterov;
  // Each element on its own: split over the threads, the same bits.
  detail::parallelRanges(param.numElements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float d = g[i];
      if (wd != 0)
        d += wd * p[i];
      if (buf) {
        buf[i] = first ? d : mu * buf[i] + damp * d;
        d = nesterov ? d + mu * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  });
  ++steps;
  return Status::ok();
}

Status checkAdamStep(const TensorView &param, const TensorView &grad,
                     const TensorView &expAvg, const TensorView &expAvgSq,
                     const TensorView &step, const TensorView &foundInf,
                     const AdamConfig &config) {
  constexpr std::string_view op = "adam_step";
  if (Status s = checkParamGradStep(op, param, grad, step); !s)
    return s;
  if (Status s = checkLikeParam(op, "exp_avg", expAvg, param); !s)
    return s;
  if (Status s = checkLikeParam(op, "exp_avg_sq", expAvgSq, param); !s)
    return s;
  if (!(config.beta1 >= 0 && config.beta1 < 1 && config.beta2 >= 0 &&
        config.beta2 < 1 && config.eps >= 0))
    return fail(op, "needs 0 <= beta1, beta2 < 1 and eps >= 0");
  return checkFoundInf(op, foundInf);
}

Status adamStep(const TensorView &param, const TensorView &grad,
                const TensorView &expAvg, const TensorView &expAvgSq,
                const TensorView &step, const TensorView &foundInf,
                const AdamConfig &config) {
  constexpr std::string_view op = "adam_step";
  if (Status s =
          checkAdamStep(param, grad, expAvg, expAvgSq, step, foundInf, config);
      !s)
    return s;
  Result<bool> skip = skipped(op, foundInf);
  if (!skip)
    return skip.status();
  if (*skip)
    return Status::ok();

  int64_t &steps = *step.as<int64_t>();
  ++steps;
  const double biasCorrection1 = 1 - std::pow(config.beta1, double(steps));
  const double biasCorrection2 = 1 - std::pow(config.beta2, double(steps));
  const float stepSize = static_cast<float>(config.lr / biasCorrection1);
  const float bc2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
  const float b1 = static_cast<float>(config.beta1),
              b2 = static_cast<float>(config.beta2),
              eps = static_cast<float>(config.eps),
              wd = static_cast<float>(config.weightDecay),
              lr = static_cast<float>(config.lr);
  float *p = param.as<float>(), *m = expAvg.as<float>(),
        *v = expAvgSq.as<float>();
  const float *g = grad.as<float>();
  const bool decoupled = config.decoupledWeightDecay;
  detail::parallelRanges(param.numElements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float d = g[i];
      if (wd != 0) {
        if (decoupled)
          p[i] *= 1 - lr * wd;
        else
          d += wd * p[i];
      }
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      float denom = std::sqrt(v[i]) / bc2Sqrt + eps;
      p[i] -= stepSize * (m[i] / denom);
    }
  });
  return Status::ok();
}

} // namespace mp::rt::cpu
