//===- CallOptions.h - the attributes of the larger plan calls ----*- C++
//-*-===//
//
// The buffers and attributes of the calls whose options take more than a
// line or two to read (cudnn.rnn, kernel.lstm_bwd, the losses, the
// optimizers, kernel.pad, kernel.scatter_*, kernel.resize), as the
// CPU calls read them (lib/Runtime/CPU/Calls/*.cpp). The CUDA backend's
// planning reads them with the same functions, so both backends accept the
// same attributes and refuse the others in the same words.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_CALLOPTIONS_H
#define MP_RUNTIME_CPU_CALLOPTIONS_H

#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/CPU/TrainingKernels.h"

namespace mp::rt::cpu {

/// cudnn.conv_fwd: x, w, bias?, residual? -> y (residual: format 1.4;
/// absent in older plans).
inline constexpr std::array<BufferSpec, 4> kConvOperands = {
    {{"x", false}, {"w", false}, {"bias", true}, {"residual", true, true}}};

/// cudnn.rnn: x, w, r, b?, sequence_lens?, initial_h?, initial_c?, p? ->
/// y?, y_h?, y_c?.
inline constexpr std::array<BufferSpec, 8> kRnnOperands = {
    {{"x", false},
     {"w", false},
     {"r", false},
     {"b", true},
     {"sequence_lens", true},
     {"initial_h", true},
     {"initial_c", true},
     {"p", true}}};
inline constexpr std::array<BufferSpec, 3> kRnnResults = {
    {{"y", true}, {"y_h", true}, {"y_c", true}}};

/// The attributes of the batch norms (cudnn.batch_norm_inference,
/// _training, _bwd): epsilon (required, except by _bwd: 1e-5), momentum
/// (_training only, required) and 'layout' (nchw, the default, or nhwc).
/// kernel.attention's shape, views (mask_view when `hasMask`) and scale.
Result<AttentionOptions> attentionOptionsOf(const PlanCall &call, bool hasMask);
Result<BatchNormOptions> batchNormOptionsOf(const PlanCall &call);

/// cudnn.lrn's attributes: size, alpha, beta, bias (ONNX's defaults).
Result<LrnOptions> lrnOptionsOf(const PlanCall &call);

/// Attribute 'direction' of cudnn.rnn and kernel.lstm_bwd: forward (the
/// default), reverse or bidirectional.
Result<RnnDirection> rnnDirectionAttr(const PlanCall &call);

/// cudnn.rnn's attributes: mode, direction, hidden_size, activations,
/// activation_alpha / _beta, clip, input_forget, linear_before_reset.
Result<RnnOptions> rnnOptionsOf(const PlanCall &call);

/// kernel.lstm_bwd: x, w, r, b?, initial_h?, initial_c?, dy?, dy_h?, dy_c?
/// -> dx, dw, dr, db?, dinitial_h?, dinitial_c?.
inline constexpr std::array<BufferSpec, 9> kLstmBwdOperands = {
    {{"x", false},
     {"w", false},
     {"r", false},
     {"b", true},
     {"initial_h", true},
     {"initial_c", true},
     {"dy", true},
     {"dy_h", true},
     {"dy_c", true}}};
inline constexpr std::array<BufferSpec, 6> kLstmBwdResults = {
    {{"dx", false},
     {"dw", false},
     {"dr", false},
     {"db", true},
     {"dinitial_h", true},
     {"dinitial_c", true}}};

/// kernel.lstm_bwd's attributes: direction and hidden_size, and an error
/// for what the backward does not handle (another mode, activations, clip,
/// input_forget, layout 1, sequence_lens, peepholes).
Result<LstmBackwardOptions> lstmBackwardOptionsOf(const PlanCall &call);

/// The attributes of kernel.nll_loss and the loss gradients: 'reduction'
/// (none, sum or mean, the default) and the optional 'ignore_index'.
struct LossOptions {
  LossReduction reduction = LossReduction::Mean;
  std::optional<int64_t> ignoreIndex;
};
Result<LossOptions> lossOptionsOf(const PlanCall &call);
/// kernel.nll_loss: input, target, weight? -> loss.
inline constexpr std::array<BufferSpec, 3> kNllLossOperands = {
    {{"input", false}, {"target", false}, {"weight", true}}};
/// kernel.nll_loss_grad: input, target, dloss, weight? -> dinput.
inline constexpr std::array<BufferSpec, 4> kNllLossGradOperands = {
    {{"input", false}, {"target", false}, {"dloss", false}, {"weight", true}}};
/// kernel.softmax_cross_entropy_grad: scores, labels, dloss, weights? ->
/// dscores.
inline constexpr std::array<BufferSpec, 4> kSoftmaxCrossEntropyGradOperands = {
    {{"scores", false},
     {"labels", false},
     {"dloss", false},
     {"weights", true}}};

/// kernel.sgd_step and kernel.adam_step: grad, found_inf? -> (results).
inline constexpr std::array<BufferSpec, 2> kOptimizerOperands = {
    {{"grad", false}, {"found_inf", true}}};
/// kernel.sgd_step's results: param, momentum_buffer?, step (in place).
inline constexpr std::array<BufferSpec, 3> kSgdResults = {
    {{"param", false}, {"momentum_buffer", true}, {"step", false}}};
/// kernel.sgd_step's attributes: lr, momentum, dampening, weight_decay,
/// nesterov; an error for a momentum without a momentum_buffer.
Result<SGDConfig> sgdConfigOf(const PlanCall &call, bool hasMomentumBuffer);
/// kernel.adam_step's attributes: lr, beta1, beta2, eps, weight_decay,
/// decoupled_weight_decay (torch's defaults).
Result<AdamConfig> adamConfigOf(const PlanCall &call);

/// kernel.unscale_check_finite (scale, g_1..g_n -> found_inf, u_1..u_n):
/// the counts, dtypes and shapes, and no overlap but u_i = g_i in place (f32).
Status checkUnscaleCheckFinite(const std::vector<TensorView> &operands,
                               const std::vector<TensorView> &results);
/// comm.all_reduce's attributes: `reduction` (mean and sum add up, max
/// takes the largest) and `reduce_type` (f32, bf16 or f16).
struct AllReduceOptions {
  CollectiveOp op = CollectiveOp::Sum;
  bool mean = true; ///< divide the sum by the number of ranks
  DType wire = DType::F32;
};
Result<AllReduceOptions> allReduceOptionsOf(const PlanCall &call);
/// comm.all_reduce (x_1..x_n -> y_1..y_n): n >= 1, each y_i a float
/// buffer of x_i's dtype and shape. The total element count in `total`.
Status checkAllReduce(const std::vector<TensorView> &operands,
                      const std::vector<TensorView> &results,
                      size_t *total = nullptr);
/// The factor each element is multiplied by before it is sent (a 16-bit
/// mean divides first) and the divisor of the received sum (an f32 mean
/// divides last), for `ranks` ranks.
float allReducePreScale(const AllReduceOptions &o, int ranks);
float allReducePostDivisor(const AllReduceOptions &o, int ranks);
/// kernel.loss_scale_update's attributes: growth_factor, backoff_factor,
/// growth_interval (GradScaler's defaults).
Result<LossScaleConfig> lossScaleConfigOf(const PlanCall &call);

/// kernel.elementwise's attributes: the function (fn) and its alpha / beta
/// as given (absent: the function's defaults, resolveAlphaBeta).
struct ElementwiseCall {
  ElementwiseFn fn;
  ElementwiseParams params;
};
Result<ElementwiseCall> elementwiseCallOf(const PlanCall &call);

/// kernel.fused_elementwise's program, parsed and checked against the
/// call's `numInputs` operands.
Result<FusedProgram> fusedProgramOf(const PlanCall &call, size_t numInputs);

/// cublaslt.matmul's attributes (trans_a, trans_b, alpha, beta, epilogue).
Result<MatmulOptions> matmulOptionsOf(const PlanCall &call);
/// cudnn.conv_fwd's attributes (pads, strides, dilations, groups, layout,
/// activation) for an x of `spatial` spatial dims.
Result<ConvOptions> convOptionsOf(const PlanCall &call, size_t spatial);

/// cudnn.conv_bwd_filter's and cudnn.conv_bwd_data's window attributes
/// (pads, strides, dilations, each optional; groups, layout) for operands
/// of `spatial` spatial dims.
Result<ConvOptions> convBackwardOptionsOf(const PlanCall &call, size_t spatial);

/// cudnn.pool's attributes (mode, window, pads, strides, dilations, layout)
/// for an x of `spatial` spatial dims; errors for indices (has_indices)
/// with an average or channels last.
Result<PoolOptions> poolOptionsOf(const PlanCall &call, size_t spatial,
                                  bool hasIndices);
/// cudnn.pool_bwd's: mode, window, and pads, strides, dilations (optional),
/// layout.
Result<PoolOptions> poolBackwardOptionsOf(const PlanCall &call, size_t spatial);

/// kernel.pad's attribute 'mode' (default constant).
Result<PadMode> padModeOf(const PlanCall &call);
/// kernel.scatter_elements / scatter_nd's attribute 'reduction' (none).
Result<ScatterReduction> scatterReductionOf(const PlanCall &call);
/// kernel.resize's attributes: mode, coordinate_transformation_mode,
/// nearest_mode, cubic_coeff_a, exclude_outside, extrapolation_value,
/// scales, roi.
Result<ResizeOptions> resizeOptionsOf(const PlanCall &call);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_CALLOPTIONS_H
