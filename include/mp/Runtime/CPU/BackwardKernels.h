//===- BackwardKernels.h - gradients of the CPU kernels -----------*- C++ -*-===//
//
// The backward halves of the kernels that training differentiates through
// (docs/training.md): the convolution's filter gradient (cuDNN backward
// filter; the data gradient is convTranspose, NNKernels.h), pooling, batch
// normalization in training mode, the gradients of SoftmaxCrossEntropyLoss
// and NegativeLogLikelihoodLoss, and backpropagation through time for ONNX
// LSTM. Each recomputes what it needs of the forward pass from the forward's
// inputs (batch statistics, window maxima, softmax, the LSTM's gates), so
// that the plan keeps no forward intermediates alive for it.
//
// The conventions of mp/Runtime/CPU/Kernels.h hold: dense row-major views,
// shapes / dtypes / attributes checked with an error Status naming the
// problem, outputs written in full and not overlapping the inputs. Float data
// is f32, f16, bf16 or f64 unless a kernel says otherwise: 16-bit values are
// widened and everything is computed in f32 (f64 for f64 data), each output
// element rounded once to its type.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_BACKWARDKERNELS_H
#define MP_RUNTIME_CPU_BACKWARDKERNELS_H

#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <optional>

namespace mp::rt::cpu {

//===----------------------------------------------------------------------===//
// Convolution backward filter (cuDNN)
//===----------------------------------------------------------------------===//

/// The gradient of conv's y with respect to w (no bias, no activation), NCHW
/// only, any number k >= 1 of spatial dimensions:
///   x [N, C, D1..Dk], dy [N, M, O1..Ok], dw [M, C/groups, K1..Kk],
///   dw[m, c, j] = sum over n, o of dy[n, m, o] *
///                 x[n, group(m) * C/groups + c, o*stride - padBegin + j*dil]
/// (0 where the position is padding). dy must have conv's output shape for
/// x and a filter of dw's shape. `options`: strides, dilations, padsBegin,
/// padsEnd and groups as for conv; layout NCHW and activation None.
/// Dtypes: x and dy alike; f32, f16 or bf16 with an f32, f16 or bf16 dw
/// (im2col + sgemm, f32 accumulation, dw rounded once), or f64 with an f64
/// dw (dgemm).
Status convBackwardFilter(const TensorView &x, const TensorView &dy,
                          const TensorView &dw, const ConvOptions &options);

//===----------------------------------------------------------------------===//
// Pooling backward (cuDNN)
//===----------------------------------------------------------------------===//

/// The gradient of pool(x, y, options) with respect to x. x and dx have one
/// shape ([N, C, D1..Dk], or [N, D1..Dk, C] with options.layout NHWC); dy has
/// y's shape (floor or ceil sizes, as pool accepts); all three one dtype
/// (f32, f16, bf16 or f64). The windows are pool's: max sends each dy
/// element to the first maximum of its window (the position pool's indices
/// name, found again in x; nothing for a window without input positions);
/// average sends dy / count to each window position inside the input, with
/// pool's count (positions inside the input, or inside the padded input with
/// countIncludePad). dx sums over overlapping windows; positions in no
/// window get 0.
Status poolBackward(const TensorView &x, const TensorView &dy,
                    const TensorView &dx, const PoolOptions &options);
/// poolBackward's checks without running it.
Status checkPoolBackward(const TensorView &x, const TensorView &dy,
                         const TensorView &dx, const PoolOptions &options);

//===----------------------------------------------------------------------===//
// Batch normalization backward (cuDNN, training mode)
//===----------------------------------------------------------------------===//

/// The gradients of batchNormTraining's y with respect to x, scale and bias,
/// with the batch statistics of x (mean and biased variance over N and the
/// spatial dimensions, recomputed here in f64): with M the count per channel,
/// xhat = (x - mean) * invstd and invstd = 1 / sqrt(var + epsilon),
///   dbias  = sum(dy), dscale = sum(dy * xhat)          (per channel)
///   dx     = scale * invstd / M * (M * dy - dbias - xhat * dscale).
/// x, dy, dx: one shape (rank >= 2, [N, C, ...] or [N, ..., C] with
/// options.layout NHWC) and one dtype; scale, dscale, dbias: [C], any float
/// dtype (the compiler passes f32). options.momentum is not used.
Status batchNormBackward(const TensorView &x, const TensorView &scale,
                         const TensorView &dy, const TensorView &dx,
                         const TensorView &dscale, const TensorView &dbias,
                         const BatchNormOptions &options = {});
/// batchNormBackward's checks without running it.
Status checkBatchNormBackward(const TensorView &x, const TensorView &scale,
                              const TensorView &dy, const TensorView &dx,
                              const TensorView &dscale, const TensorView &dbias,
                              const BatchNormOptions &options = {});

//===----------------------------------------------------------------------===//
// Loss gradients
//===----------------------------------------------------------------------===//

/// The gradient of ONNX SoftmaxCrossEntropyLoss (softmax over axis 1) with
/// respect to its scores, for an incoming loss gradient dloss:
///   dscores[n, :, d] = (softmax(scores[n, :, d]) - onehot(label)) *
///                      w[label] * dloss' / denom,
/// label = labels[n, d], w = weights (1 without them), dloss' = dloss[n, d]
/// (reduction None) or dloss[0] (Sum, Mean), denom = 1 (None, Sum) or, for
/// Mean, the sum of w[label] over the positions not ignored (their number
/// without weights). Positions whose label is ignoreIndex get 0.
/// scores, dscores: [N, C] or [N, C, d1..dk], one float dtype; labels: i32 or
/// i64 [N] or [N, d1..dk]; dloss: any float dtype, labels' shape (None) or
/// one element; weights (optional): [C], any float dtype. A label outside
/// [0, C) that is not ignored is an error (nothing is written then).
Status
softmaxCrossEntropyGrad(const TensorView &scores, const TensorView &labels,
                        const TensorView &dloss, const TensorView *weights,
                        const TensorView &dscores, LossReduction reduction,
                        std::optional<int64_t> ignoreIndex = std::nullopt);

/// The gradient of nllLoss with respect to its input: 0 except
///   dinput[n, t, d] = -w[t] * dloss' / denom at t = target[n, d]
/// (dloss', denom and the ignored positions as for softmaxCrossEntropyGrad).
/// input, dinput: [N, C] or [N, C, d1..dk], one float dtype (only input's
/// shape and dtype are used); target: i32 or i64 [N] or [N, d1..dk]; dloss,
/// weight (optional, [C]): any float dtype.
Status nllLossGrad(const TensorView &input, const TensorView &target,
                   const TensorView &dloss, const TensorView *weight,
                   const TensorView &dinput, LossReduction reduction,
                   std::optional<int64_t> ignoreIndex = std::nullopt);
/// The checks of dtypes and shapes (not of the target values) of
/// softmaxCrossEntropyGrad and nllLossGrad, without running them.
Status checkSoftmaxCrossEntropyGrad(const TensorView &scores,
                                    const TensorView &labels,
                                    const TensorView &dloss,
                                    const TensorView *weights,
                                    const TensorView &dscores,
                                    LossReduction reduction);
Status checkNllLossGrad(const TensorView &input, const TensorView &target,
                        const TensorView &dloss, const TensorView *weight,
                        const TensorView &dinput, LossReduction reduction);

//===----------------------------------------------------------------------===//
// LSTM backward (backpropagation through time)
//===----------------------------------------------------------------------===//

struct LstmBackwardOptions {
  int64_t hiddenSize = 0;
  RnnDirection direction = RnnDirection::Forward;
};

/// The gradients of ONNX LSTM (layout 0; the default activations sigmoid,
/// tanh, tanh; no sequence_lens, peepholes, clip or input_forget) with
/// respect to x, w, r, b, initialH and initialC, given the gradients of its
/// outputs y, yH, yC (null: zero). The forward pass is recomputed from x, w,
/// r, b, initialH, initialC (null: zeros) with the gates in ONNX's order i,
/// o, f, c. With D directions and H = hiddenSize:
///   x, dx [seq, batch, input]; w, dw [D, 4H, input]; r, dr [D, 4H, H];
///   b, db [D, 8H] (Wb then Rb: their gradients are equal);
///   initialH/C, dinitialH/C, dyH, dyC [D, batch, H]; dy [seq, D, batch, H].
/// db, dinitialH, dinitialC are optional outputs (null: not computed); dx is
/// summed over the directions. All float views have x's dtype: f32, f16,
/// bf16 (computed in f32) or f64 (computed in f64).
Status lstmBackward(const TensorView &x, const TensorView &w,
                    const TensorView &r, const TensorView *b,
                    const TensorView *initialH, const TensorView *initialC,
                    const TensorView *dy, const TensorView *dyH,
                    const TensorView *dyC, const TensorView &dx,
                    const TensorView &dw, const TensorView &dr,
                    const TensorView *db, const TensorView *dinitialH,
                    const TensorView *dinitialC,
                    const LstmBackwardOptions &options);
/// lstmBackward's checks of shapes, dtypes, attributes and overlaps without
/// running it (shared with the CUDA backend's planning).
Status checkLstmBackward(const TensorView &x, const TensorView &w,
                         const TensorView &r, const TensorView *b,
                         const TensorView *initialH, const TensorView *initialC,
                         const TensorView *dy, const TensorView *dyH,
                         const TensorView *dyC, const TensorView &dx,
                         const TensorView &dw, const TensorView &dr,
                         const TensorView *db, const TensorView *dinitialH,
                         const TensorView *dinitialC,
                         const LstmBackwardOptions &options);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_BACKWARDKERNELS_H
