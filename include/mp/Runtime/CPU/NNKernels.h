//===- NNKernels.h - the CPU backend's neural-network kernels -----*- C++ -*-===//
//
// Recurrent networks (cuDNN RNN: ONNX LSTM / GRU / RNN), transposed
// convolution (cuDNN convolution backward data: ONNX ConvTranspose), the
// normalizations that are not batch-norm (LayerNormalization,
// InstanceNormalization, LRN), and the project kernels nll_loss, topk,
// cumsum, trilu and hardmax.
//
// The conventions of mp/Runtime/CPU/Kernels.h hold: dense row-major views,
// f16 / bf16 stored as 16 bits and computed in f32 with one rounding of each
// result, shapes / dtypes / attributes checked with an error Status naming the
// problem, outputs written in full and not overlapping the inputs.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_NNKERNELS_H
#define MP_RUNTIME_CPU_NNKERNELS_H

#include "mp/Runtime/Attention.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mp::rt::cpu {

//===----------------------------------------------------------------------===//
// Recurrent networks (cuDNN RNN, ONNX LSTM / GRU / RNN with layout 0)
//===----------------------------------------------------------------------===//

enum class RnnMode { Lstm, Gru, Rnn };
enum class RnnDirection { Forward, Reverse, Bidirectional };

/// The activation functions ONNX's recurrent operators accept.
enum class RnnActivationKind {
  Relu,
  Tanh,
  Sigmoid,
  Affine,          ///< alpha * x + beta
  LeakyRelu,       ///< x >= 0 ? x : alpha * x
  ThresholdedRelu, ///< x > alpha ? x : 0
  ScaledTanh,      ///< alpha * tanh(beta * x)
  HardSigmoid,     ///< max(0, min(1, alpha * x + beta))
  Elu,             ///< x >= 0 ? x : alpha * (exp(x) - 1)
  Softsign,        ///< x / (1 + |x|)
  Softplus,        ///< log(1 + exp(x))
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::Tanh;
  float alpha = 0.0f;
  float beta = 0.0f;
};

/// The activations of one direction: LSTM f, g, h; GRU f, g; RNN f.
size_t rnnActivationsPerDirection(RnnMode mode);

/// ONNX's `activations` / `activation_alpha` / `activation_beta` attributes
/// as a list of rnnActivationsPerDirection(mode) * numDirections entries.
/// `names` is comma-separated (case-insensitive: "Sigmoid,Tanh,Tanh"); empty
/// gives the defaults (LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid, Tanh; RNN
/// Tanh). A list for one direction is repeated for the second. As in ONNX
/// Runtime, alphas and betas are consumed in order by the functions that take
/// them (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu);
/// missing ones take the defaults of the ONNX operators of the same name.
Result<std::vector<RnnActivation>>
parseRnnActivations(RnnMode mode, size_t numDirections, std::string_view names,
                    const std::vector<double> &alphas = {},
                    const std::vector<double> &betas = {});

struct RnnOptions {
  RnnMode mode = RnnMode::Lstm;
  RnnDirection direction = RnnDirection::Forward;
  int64_t hiddenSize = 0;
  /// Empty: the defaults; otherwise as parseRnnActivations returns.
  std::vector<RnnActivation> activations;
  /// Gate pre-activations are clipped to [-clip, clip] when set.
  std::optional<float> clip;
  /// LSTM: couple the input and forget gates (f = 1 - i).
  bool inputForget = false;
  /// GRU: apply the reset gate after the recurrent product (r * (H R_h^T +
  /// Rb_h)) rather than before it ((r * H) R_h^T + Rb_h).
  bool linearBeforeReset = false;
};

/// ONNX LSTM-14 / GRU-14 / RNN-14 with layout 0. With G gates (LSTM 4 in the
/// order i, o, f, c; GRU 3: z, r, h; RNN 1), D directions and H = hiddenSize:
///   x [seq, batch, input], w [D, G*H, input], r [D, G*H, H],
///   b (optional) [D, 2*G*H] (Wb then Rb), sequenceLens (optional, i32 or
///   i64) [batch], initialH / initialC (optional) [D, batch, H],
///   p (optional, LSTM peepholes i, o, f) [D, 3*H];
///   y (optional) [seq, D, batch, H], yH / yC (optional) [D, batch, H]
///   (yC: LSTM only).
/// Floats: x, w, r, b, initialH/C, p and the outputs all have one dtype:
/// f32, f16 or bf16 (16-bit values widened; the state is kept in f32 and
/// each output element rounded once). With sequenceLens, steps at or after
/// a batch entry's length give y = 0 and leave its state as it was (yH, yC
/// are the state after its last step; the reverse direction starts at step
/// length - 1). The input projections of all steps are one GEMM; each step
/// adds its recurrent GEMM.
Status rnn(const TensorView &x, const TensorView &w, const TensorView &r,
           const TensorView *b, const TensorView *sequenceLens,
           const TensorView *initialH, const TensorView *initialC,
           const TensorView *p, const TensorView *y, const TensorView *yH,
           const TensorView *yC, const RnnOptions &options);
/// rnn's checks of shapes, dtypes, attributes and overlaps without running
/// it (shared with the CUDA backend's planning; the sequence lengths, data,
/// are checked when it runs).
Status checkRnn(const TensorView &x, const TensorView &w, const TensorView &r,
                const TensorView *b, const TensorView *sequenceLens,
                const TensorView *initialH, const TensorView *initialC,
                const TensorView *p, const TensorView *y, const TensorView *yH,
                const TensorView *yC, const RnnOptions &options);

//===----------------------------------------------------------------------===//
// Transposed convolution (cuDNN convolution backward data, ONNX ConvTranspose)
//===----------------------------------------------------------------------===//

struct ConvTransposeOptions {
  /// Per spatial dimension; empty means all 1 (strides, dilations) or all 0
  /// (pads). padsBegin/padsEnd are ONNX's pads split in halves.
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  int64_t groups = 1;
};

/// ONNX ConvTranspose (the gradient of Conv with respect to its input), for
/// 1, 2, 3 (any k >= 1) spatial dimensions, NCHW:
///   x [N, C, D1..Dk], w [C, M/groups, K1..Kk], bias (optional) [M],
///   y [N, M, O1..Ok] with Oi = stride_i*(Di-1) + outputPadding_i +
///   dilation_i*(Ki-1) + 1 - padBegin_i - padEnd_i, where y's shape gives
///   the output padding (0 <= outputPadding_i < max(stride_i, dilation_i)).
/// y[n, m, o] = bias[m] + sum over c, i, j with o = i*stride - padBegin +
/// j*dilation of x[n, c, i] * w[c, m, j] (c and m in the same group).
/// Dtypes: x and w alike, f32, f16 or bf16; y f32, f16 or bf16; bias has y's
/// dtype or f32. f32 accumulation (sgemm + col2im), y rounded once.
Status convTranspose(const TensorView &x, const TensorView &w,
                     const TensorView *bias, const TensorView &y,
                     const ConvTransposeOptions &options);

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// kernel.attention's geometry and scale (mp/Runtime/Attention.h).
struct AttentionOptions {
  AttentionShape shape;
  AttentionView q, k, v, o, mask;
  float scale = 1;
};

/// softmax(scale * Q K^T (+ mask)) V over strided views of q, k, v (and the
/// additive mask) into o's view: every product, sum and the softmax in f32,
/// o rounded once. Buffers: f32, f16 or bf16, any mix; o must not overlap
/// the inputs. The exact kernel: one query row at a time, libm's expf.
Status attention(const TensorView &q, const TensorView &k, const TensorView &v,
                 const TensorView *mask, const TensorView &o,
                 const AttentionOptions &options);
/// attention's checks (dtypes, views inside the buffers, o injective and
/// apart from the inputs) without running it.
Status checkAttention(const TensorView &q, const TensorView &k,
                      const TensorView &v, const TensorView *mask,
                      const TensorView &o, const AttentionOptions &options);

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// ONNX LayerNormalization-17 (stash_type f32): over the dimensions from
/// `axis` on (negative counts from the end), y = (x - mean) * invStdDev *
/// scale + bias, invStdDev = 1 / sqrt(var + epsilon) (biased variance).
/// x, y: same shape and dtype (f32, f16, bf16); scale and bias (optional):
/// x's dtype or f32, unidirectionally broadcastable to x.shape[axis:].
/// mean / invStdDev (optional): x.shape[:axis] followed by 1s (or just the
/// leading dims), f32, f16 or bf16. Statistics accumulate in f64 and are
/// used as f32. y may be x itself.
Status layerNorm(const TensorView &x, const TensorView &scale,
                 const TensorView *bias, const TensorView &y,
                 const TensorView *mean, const TensorView *invStdDev,
                 int64_t axis = -1, float epsilon = 1e-5f);
/// layerNorm's checks of shapes, dtypes, overlaps and attributes without
/// running it (shared with the CUDA backend's planning); `axis` is
/// normalized into [0, rank) on success.
Status checkLayerNorm(const TensorView &x, const TensorView &scale,
                      const TensorView *bias, const TensorView &y,
                      const TensorView *mean, const TensorView *invStdDev,
                      int64_t &axis, float epsilon);

/// LayerNormalization's gradient from the forward's f32 statistics (its
/// Mean and InvStdDev, one per row of the dims before `axis`): with x̂ =
/// (x - mean) * inv_std_dev and g = dy * scale, dx = inv_std_dev * (g -
/// mean(g) - x̂ * mean(g * x̂)) over the normalized dims, in f32 and rounded
/// once; dscale = Σ dy * x̂ and dbias (optional) = Σ dy over the rows,
/// summed in f64 in an order that does not depend on the threads. dy, x and
/// dx: one shape and dtype (f32, f16, bf16); scale, dscale, dbias: the
/// normalized dims' values (any shape holding them), scale's dtype.
Status layerNormGrad(const TensorView &dy, const TensorView &x,
                     const TensorView &scale, const TensorView &mean,
                     const TensorView &invStdDev, const TensorView &dx,
                     const TensorView &dscale, const TensorView *dbias,
                     int64_t axis = -1);
/// layerNormGrad's checks without running it (shared with the CUDA
/// backend's planning); `axis` normalized into [0, rank).
Status checkLayerNormGrad(const TensorView &dy, const TensorView &x,
                          const TensorView &scale, const TensorView &mean,
                          const TensorView &invStdDev, const TensorView &dx,
                          const TensorView &dscale, const TensorView *dbias,
                          int64_t &axis);

/// RMS normalization (ONNX RMSNormalization-23, stash_type f32): over the
/// dimensions from `axis` on, y = x * invRms * scale, invRms = 1 /
/// sqrt(mean(x^2) + epsilon), no mean subtracted. x, y and scale as
/// layerNorm's (no bias); the mean of the squares accumulates in f64 and is
/// used as f32. y may be x itself.
Status rmsNorm(const TensorView &x, const TensorView &scale,
               const TensorView &y, int64_t axis = -1, float epsilon = 1e-5f);
/// rmsNorm's checks without running it; `axis` normalized as layerNorm's.
Status checkRmsNorm(const TensorView &x, const TensorView &scale,
                    const TensorView &y, int64_t &axis, float epsilon);

/// Group normalization (ONNX GroupNormalization-21, stash_type f32): x
/// [N, C, D...] (channels first) in `groups` groups of C / groups channels,
/// y = (x - mean) * invStdDev * scale[c] + bias[c], the biased statistics
/// over each group's channels and spatial dims accumulated in f64 and used
/// as f32. scale and bias (optional) hold one value per channel: [C] or
/// [C, 1, ...] (leading 1s allowed), x's dtype or f32. y may be x itself.
Status groupNorm(const TensorView &x, const TensorView &scale,
                 const TensorView *bias, const TensorView &y, int64_t groups,
                 float epsilon = 1e-5f);
/// groupNorm's checks without running it.
Status checkGroupNorm(const TensorView &x, const TensorView &scale,
                      const TensorView *bias, const TensorView &y,
                      int64_t groups, float epsilon);

/// ONNX InstanceNormalization: per image and channel of x [N, C, D...],
/// y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c] over the
/// spatial dimensions. x, y: same shape and dtype (f32, f16, bf16); scale,
/// bias [C] (f32, f16 or bf16). y may be x itself.
Status instanceNorm(const TensorView &x, const TensorView &scale,
                    const TensorView &bias, const TensorView &y,
                    float epsilon = 1e-5f);
/// instanceNorm's checks without running it.
Status checkInstanceNorm(const TensorView &x, const TensorView &scale,
                         const TensorView &bias, const TensorView &y,
                         float epsilon);

struct LrnOptions {
  int64_t size = 1;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
};

/// ONNX LRN across channels: x [N, C, D...] (rank >= 2),
/// y = x / (bias + alpha / size * sum_{c'} x[c']^2)^beta over
/// c' in [c - floor((size-1)/2), c + ceil((size-1)/2)] within [0, C).
/// x, y: same shape and dtype (f32, f16, bf16).
Status lrn(const TensorView &x, const TensorView &y, const LrnOptions &options);
/// lrn's checks without running it.
Status checkLrn(const TensorView &x, const TensorView &y,
                const LrnOptions &options);

//===----------------------------------------------------------------------===//
// Losses, selection and the small ONNX kernels
//===----------------------------------------------------------------------===//

enum class LossReduction { None, Sum, Mean };

/// ONNX NegativeLogLikelihoodLoss: input [N, C] or [N, C, d1..dk] (log
/// probabilities: f32, f16, bf16, f64), target [N] or [N, d1..dk] (i32, i64)
/// with classes in [0, C), weight (optional) [C] of input's dtype.
/// loss[n, d] = -input[n, target[n, d], d] * weight[target[n, d]], 0 where
/// target == ignoreIndex. None: loss has target's shape; Sum / Mean: one
/// element (Mean divides by the sum of the weights of the targets not
/// ignored). A target outside [0, C) that is not ignored is an error.
/// Accumulation in f64, loss rounded once to input's dtype.
Status nllLoss(const TensorView &input, const TensorView &target,
               const TensorView *weight, const TensorView &loss,
               LossReduction reduction,
               std::optional<int64_t> ignoreIndex = std::nullopt);
/// nllLoss's checks of dtypes and shapes (not of the target values).
Status checkNllLoss(const TensorView &input, const TensorView &target,
                    const TensorView *weight, const TensorView &loss,
                    LossReduction reduction);

/// ONNX TopK: the k = values.shape[axis] largest (or smallest) entries of x
/// along `axis` (negative counts from the end), in order when `sorted` (the
/// CPU always sorts); equal values keep the lower index first and NaN counts
/// as larger than any number. values: x's dtype (any numeric) and shape but
/// for axis; indices: i64 (or i32), the same shape.
Status topk(const TensorView &x, const TensorView &values,
            const TensorView &indices, int64_t axis = -1, bool largest = true,
            bool sorted = true);
/// topk's checks without running it; `axis` normalized on success (k is
/// values.shape[axis]).
Status checkTopk(const TensorView &x, const TensorView &values,
                 const TensorView &indices, int64_t &axis);

/// ONNX CumSum along `axis` (negative counts from the end); `exclusive`
/// leaves out the element itself, `reverse` sums from the end. x, y: same
/// shape and dtype (f32, f64, i32, i64; f16 and bf16 sum in f32, each
/// output rounded once). y may be x itself.
Status cumsum(const TensorView &x, const TensorView &y, int64_t axis,
              bool exclusive = false, bool reverse = false);
/// cumsum's checks without running it; `axis` normalized on success.
Status checkCumsum(const TensorView &x, const TensorView &y, int64_t &axis);

/// ONNX Trilu on the last two dimensions (rank >= 2): y keeps x[..., i, j]
/// where j - i >= k (upper) or j - i <= k (lower), else 0. Any dtype (zero
/// is all-zero bytes); x, y: same shape and dtype; y may be x itself.
Status trilu(const TensorView &x, const TensorView &y, bool upper,
             int64_t k = 0);
/// trilu's checks without running it.
Status checkTrilu(const TensorView &x, const TensorView &y);

/// ONNX Hardmax-13: 1 at the first maximum along `axis` (negative counts
/// from the end), 0 elsewhere. x, y: same shape and dtype (f32, f16, bf16,
/// f64); y may be x itself.
Status hardmax(const TensorView &x, const TensorView &y, int64_t axis = -1);
/// hardmax's checks without running it; `axis` normalized on success.
Status checkHardmax(const TensorView &x, const TensorView &y, int64_t &axis);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_NNKERNELS_H
