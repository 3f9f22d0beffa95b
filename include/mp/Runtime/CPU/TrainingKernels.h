//===- TrainingKernels.h - loss scaling and optimizer steps -------*- C++
//-*-===//
//
// The CPU backend's kernels for mixed-precision training steps: dynamic loss
// scaling with PyTorch GradScaler's semantics and fused optimizer updates on
// fp32 master weights. Everything a step decides stays in tensors (the scale,
// the growth tracker, found_inf, the Adam step count), so that a whole step
// runs without the host reading a value back: the same contract as the CUDA
// kernels of torch._amp_foreach_non_finite_check_and_unscale_ and
// torch._amp_update_scale_.
//
// Scalars are one-element f32 tensors (the growth tracker and the step count
// are i64 tensors of one element). Parameters, gradients and optimizer state
// are f32 tensors of equal shapes; updates happen in place.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_TRAININGKERNELS_H
#define MP_RUNTIME_CPU_TRAININGKERNELS_H

#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>

namespace mp::rt::cpu {

/// Loss-scaling parameters (GradScaler's defaults).
struct LossScaleConfig {
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
};

/// 1 / scale computed in f64 and rounded to f32 (GradScaler.unscale_).
Status inverseScale(const TensorView &scale, const TensorView &invScale);
/// inverseScale's checks: scale is one f32 element.
Status checkInverseScale(const TensorView &scale);

/// grad *= inv_scale in place (every element, f32, f16 or bf16), and
/// found_inf = 1 when any element was NaN or +-Inf before scaling (found_inf
/// is only ever set, never cleared: several gradients share one flag).
Status unscaleAndCheckFinite(const TensorView &grad, const TensorView &invScale,
                             const TensorView &foundInf);

/// GradScaler's update, in place: when found_inf, scale *= backoff and the
/// tracker restarts at 0; otherwise the tracker counts the clean step and on
/// reaching growth_interval scale *= growth (kept only if finite) and the
/// tracker restarts.
Status updateLossScale(const TensorView &scale, const TensorView &growthTracker,
                       const TensorView &foundInf,
                       const LossScaleConfig &config);
/// updateLossScale's checks of the buffers and the config, without running
/// it (shared with the CUDA backend's planning).
Status checkLossScaleUpdate(const TensorView &scale,
                            const TensorView &growthTracker,
                            const TensorView &foundInf,
                            const LossScaleConfig &config);

/// torch.optim.SGD (with weight decay, momentum, dampening, Nesterov), one
/// step in place: skipped entirely when found_inf (a null view: never
/// skipped). `momentumBuffer` (needed when momentum != 0) starts as zeros
/// with `step` 0: the first step copies the gradient into it, as PyTorch
/// does; `step` (i64, one element) counts the steps taken.
struct SGDConfig {
  double lr = 0.01, momentum = 0, dampening = 0, weightDecay = 0;
  bool nesterov = false;
};
Status sgdStep(const TensorView &param, const TensorView &grad,
               const TensorView &momentumBuffer, const TensorView &step,
               const TensorView &foundInf, const SGDConfig &config);
/// sgdStep's checks of the buffers and the config (found_inf when given)
/// without running it (shared with the CUDA backend's planning).
Status checkSgdStep(const TensorView &param, const TensorView &grad,
                    const TensorView &momentumBuffer, const TensorView &step,
                    const TensorView &foundInf, const SGDConfig &config);

/// torch.optim.Adam / AdamW (decoupled weight decay), one step in place,
/// with bias correction; skipped when found_inf. `step` (i64, one element)
/// counts the steps taken and is advanced only by steps not skipped.
struct AdamConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool decoupledWeightDecay = false; ///< AdamW
};
Status adamStep(const TensorView &param, const TensorView &grad,
                const TensorView &expAvg, const TensorView &expAvgSq,
                const TensorView &step, const TensorView &foundInf,
                const AdamConfig &config);
/// adamStep's checks, as checkSgdStep.
Status checkAdamStep(const TensorView &param, const TensorView &grad,
                     const TensorView &expAvg, const TensorView &expAvgSq,
                     const TensorView &step, const TensorView &foundInf,
                     const AdamConfig &config);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_TRAININGKERNELS_H
