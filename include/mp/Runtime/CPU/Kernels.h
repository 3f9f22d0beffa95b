//===- Kernels.h - the CPU backend's library calls ----------------*- C++ -*-===//
//
// The CPU backend implements the library calls the compiler lowers models to
// (cuBLASLt matmul, cuDNN convolution / pooling / batch-norm / softmax) on the
// host. It is the project's reference for correctness, so it keeps the
// tensor-core contract of the CUDA backend:
//
//   * f16 / bf16 tensors are stored as 16 bits;
//   * matmul and convolution read 16-bit inputs, accumulate in f32 and round
//     the result ONCE (round to nearest even) to the output type; scaling,
//     C / bias / residual addition and the activation happen in f32 before
//     that single rounding;
//   * pooling, batch-norm and softmax compute in f32 for 16-bit storage (f64
//     data, where accepted, computes in f64).
//
// Every kernel takes dense, row-major TensorViews, checks shapes, dtypes and
// attributes and returns an error Status (with a message naming the problem)
// instead of touching memory it was not given. Outputs are written in full.
// Unless a kernel says otherwise, outputs must not overlap inputs.
//
// Parallelism comes from OpenBLAS's threads (matmul, convolution).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_KERNELS_H
#define MP_RUNTIME_CPU_KERNELS_H

#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <vector>

namespace mp::rt::cpu {

/// Where the channels of an activation tensor are. NCHW: [N, C, D1, ..., Dk]
/// (channels first, cuDNN's NCHW / NCDHW); NHWC: [N, D1, ..., Dk, C]
/// (channels last, cuDNN's NHWC / NDHWC). Both work for any spatial rank.
enum class Layout { NCHW, NHWC };

/// Element-wise function applied last, in f32, before the rounding to the
/// output type: cuBLASLt's epilogues and cuDNN's fused activation.
enum class Activation {
  None,
  Relu,
  Gelu,     ///< x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (ONNX Gelu, exact)
  GeluTanh, ///< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Clip,     ///< min(max(x, lo), hi) (convolutions: ConvOptions' bounds)
  // As the elementwise functions of the same names:
  Silu,      ///< x * sigmoid(x)
  Sigmoid,   ///< 1 / (1 + exp(-x))
  Tanh,      ///< tanh(x)
  HardSwish, ///< x * min(max(x / 6 + 0.5, 0), 1)
};

//===----------------------------------------------------------------------===//
// Matmul (cuBLASLt)
//===----------------------------------------------------------------------===//

/// The gradient of an activation as a matmul's epilogue: D = act'(aux) *
/// (alpha op(A) op(B) + beta C), aux the activation's forward input
/// (cuBLASLt's DRELU / DGELU epilogues). In a training step the product is
/// dY W^T, the gradient reaching the activation's output.
enum class ActivationGradient {
  None,
  Relu,     ///< v where aux > 0, else 0
  Gelu,     ///< v * (Phi(aux) + aux phi(aux))
  GeluTanh, ///< v * the tanh approximation's derivative at aux
};

struct MatmulOptions {
  bool transA = false; ///< op(A) = A^T (A must have rank >= 2)
  bool transB = false; ///< op(B) = B^T (B must have rank >= 2)
  double alpha = 1.0;
  /// Scales C; used only when a C is given.
  double beta = 1.0;
  Activation epilogue = Activation::None;
  /// With an aux operand, instead of `epilogue` (which is then None).
  ActivationGradient epilogueGradient = ActivationGradient::None;
};

/// D = epilogue(alpha * op(A) @ op(B) + beta * C + bias).
///
/// Shapes follow numpy.matmul: op(A) is [..., M, K], op(B) is [..., K, N] and
/// D is [broadcast(batchA, batchB)..., M, N]; a 1-D A ([K]) or B ([K]) drops
/// M or N from D. C (optional) is broadcastable to D's shape (numpy rules,
/// e.g. [N], [M, 1], [M, N] or D's full shape) and may be D itself
/// (same data, same shape). bias (optional) is a row vector [N].
///
/// Dtypes: A and B alike; with f32, f16 or bf16 A/B, D is f32, f16 or bf16
/// (16-bit inputs are widened to f32, multiplied with sgemm, the f32 result
/// rounded once to D's type); with f64 A/B, D is f64 (dgemm). C has D's
/// dtype; bias has D's dtype or f32.
///
/// `aux` goes with options.epilogueGradient (and not with a bias): D's
/// shape, a float dtype of 16 or 32 bits (f64 with f64 D).
Status matmul(const TensorView &a, const TensorView &b, const TensorView *c,
              const TensorView *bias, const TensorView &d,
              const MatmulOptions &options = {},
              const TensorView *aux = nullptr);

/// What checkMatmul derives: op(A) is [M, K] and op(B) [K, N] in each batch
/// entry; batchA and batchB are the operands' batch dims, `batch` D's.
struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  Shape batchA, batchB, batch;
};
/// matmul's checks of dtypes, shapes, overlaps and alpha / beta, without
/// running it (shared with the CUDA backend's planning).
Status checkMatmul(const TensorView &a, const TensorView &b,
                   const TensorView *c, const TensorView *bias,
                   const TensorView &d, const MatmulOptions &o,
                   MatmulShape &shape, const TensorView *aux = nullptr);
/// cublaslt.matmul's `bias_grad` output: the sums of a rank-2 operand over
/// the contraction dim K, summed in f32 (f64 for f64) and rounded once into
/// `grad` (the operand's dtype, its other dim's count of elements in any
/// shape). `kIsRows`: the operand is [K, n] (B, or A^T read with trans_a),
/// else [n, K]. In a weight gradient X^T dY (dY^T X) that is the bias
/// gradient sum(dY) (cuBLASLt's BGRADB / BGRADA epilogues).
Status matmulBiasGradient(const TensorView &operand, bool kIsRows,
                          const TensorView &grad);
/// The reduction matmulBiasGradient runs, after its checks (shared with the
/// CUDA backend's planning): a sum over `axis` of the operand into grad's
/// bytes seen as `sumsShape`, accumulated as `options` says.
struct BiasGradientReduction {
  Shape sumsShape;
  int64_t axis = 0;
  ReduceOptions options;
};
Result<BiasGradientReduction> biasGradientReduction(const TensorView &operand,
                                                    bool kIsRows,
                                                    const TensorView &grad);
/// Whether `bias_grad` sums A (else B), and the summed operand's K is its
/// rows: from the call's bias_grad_of_a, trans_a and trans_b.
struct BiasGradientOperand {
  bool ofA = false;
  bool kIsRows = true;
};
inline BiasGradientOperand biasGradientOperand(bool ofA,
                                               const MatmulOptions &o) {
  return {ofA, ofA ? o.transA : !o.transB};
}
inline Status matmul(const TensorView &a, const TensorView &b,
                     const TensorView &d, const MatmulOptions &options = {}) {
  return matmul(a, b, nullptr, nullptr, d, options);
}

//===----------------------------------------------------------------------===//
// Convolution forward (cuDNN)
//===----------------------------------------------------------------------===//

struct ConvOptions {
  /// Per spatial dimension; empty means all 1 (strides, dilations) or all 0
  /// (pads). padsBegin/padsEnd are ONNX's pads split in halves.
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  int64_t groups = 1;
  Layout layout = Layout::NCHW;
  Activation activation = Activation::None;
  /// Activation::Clip's bounds (ReLU6: 0, 6), lo <= hi.
  float clipMin = 0, clipMax = 0;
};

/// y = activation(conv(x, w) + bias + residual), cross-correlation as ONNX
/// Conv and cuDNN define it, for 1, 2, 3 (any k >= 1) spatial dimensions.
///
/// NCHW: x [N, C, D1..Dk], w [M, C/groups, K1..Kk], y [N, M, O1..Ok].
/// NHWC: x [N, D1..Dk, C], w [M, K1..Kk, C/groups] (cuDNN's KRSC filter),
///       y [N, O1..Ok, M].
/// Oi = floor((Di + padBegin_i + padEnd_i - dilation_i*(Ki-1) - 1)/stride_i)+1
/// and y must have exactly that shape. bias (optional) is [M];
/// residual (optional, cuDNN's z) has y's shape and dtype.
///
/// Dtypes: x and w alike, f32, f16 or bf16; y f32, f16 or bf16; bias has
/// y's dtype or f32. Accumulation is in f32, y rounded once.
Status conv(const TensorView &x, const TensorView &w, const TensorView *bias,
            const TensorView *residual, const TensorView &y,
            const ConvOptions &options);
inline Status conv(const TensorView &x, const TensorView &w,
                   const TensorView &y, const ConvOptions &options) {
  return conv(x, w, nullptr, nullptr, y, options);
}
/// conv's checks of dtypes, shapes, attributes and overlaps without running
/// it (not the BLAS integer range of the CPU's GEMMs; shared with the CUDA
/// backend's planning).
Status checkConv(const TensorView &x, const TensorView &w,
                 const TensorView *bias, const TensorView *residual,
                 const TensorView &y, const ConvOptions &options);

//===----------------------------------------------------------------------===//
// Pooling (cuDNN)
//===----------------------------------------------------------------------===//

enum class PoolKind { Max, Average };

struct PoolOptions {
  PoolKind kind = PoolKind::Max;
  /// The window, per spatial dimension (required).
  std::vector<int64_t> kernel;
  /// Per spatial dimension; empty means all 1 (strides, dilations) or all 0.
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  /// Average only: divide by the window positions inside the padded input
  /// ([-padBegin, D + padEnd)) rather than those inside the input.
  bool countIncludePad = false;
  Layout layout = Layout::NCHW;
};

/// Max or average pooling over the spatial dimensions of x ([N, C, D1..Dk] or
/// [N, D1..Dk, C]) into y (same layout, same dtype: f32, f16 or bf16).
///
/// Output window o_i covers positions o_i*stride_i - padBegin_i +
/// j*dilation_i, j < K_i. y's spatial sizes are taken as given (ceil_mode is
/// the caller's choice) but must be the floor or the ceil of
/// (Di + padBegin_i + padEnd_i - dilation_i*(Ki-1) - 1)/stride_i, plus 1.
/// Positions outside the input are padding: max ignores them; average counts
/// positions inside the input, or, with countIncludePad, inside the padded
/// input (ONNX Runtime's and PyTorch's rule for ceil-mode windows). A window
/// with nothing to count gives -inf (max) or 0 (average).
///
/// indices (optional, max, NCHW only) is int64 with y's shape and receives
/// ONNX MaxPool's Indices (storage_order 0): the flattened row-major index
/// into x, batch and channel included, of the first maximum of each window
/// (-1 for a window without input position).
Status pool(const TensorView &x, const TensorView &y,
            const PoolOptions &options, const TensorView *indices = nullptr);
/// pool's checks without running it (shared with the CUDA backend's
/// planning).
Status checkPool(const TensorView &x, const TensorView &y,
                 const PoolOptions &options,
                 const TensorView *indices = nullptr);

/// GlobalAveragePool / GlobalMaxPool: y is x's shape with every spatial
/// dimension 1 ([N, C, 1..1] or [N, 1..1, C]); same dtype (f32, f16, bf16).
Status globalPool(PoolKind kind, const TensorView &x, const TensorView &y,
                  Layout layout = Layout::NCHW);

//===----------------------------------------------------------------------===//
// Batch normalization (cuDNN)
//===----------------------------------------------------------------------===//

struct BatchNormOptions {
  float epsilon = 1e-5f;
  /// Training only: running = input * momentum + batch * (1 - momentum).
  float momentum = 0.9f;
  Layout layout = Layout::NCHW;
  /// Training and backward: the batch is split over these ranks (a
  /// data-parallel step's `sync_ranks`): the statistics, and the sums dx
  /// needs, are the whole batch's (SyncBatchNorm). Null: this batch alone.
  Communicator *syncRanks = nullptr;
};

/// Inference: y = scale * (x - mean) / sqrt(var + epsilon) + bias, per
/// channel. x and y: rank >= 2 ([N, C, ...] or [N, ..., C]), same shape and
/// dtype (f32, f16 or bf16); y may be x itself. scale, bias, mean, var: [C],
/// each f32, f16 or bf16. Statistics and arithmetic in f32.
Status batchNormInference(const TensorView &x, const TensorView &scale,
                          const TensorView &bias, const TensorView &mean,
                          const TensorView &var, const TensorView &y,
                          const BatchNormOptions &options = {});

/// Training-mode forward, as ONNX BatchNormalization-15 with training_mode=1:
/// the batch statistics are the mean and the biased (population) variance
/// over N and the spatial dimensions; y normalizes x with them;
///   runningMean = inputMean * momentum + batchMean * (1 - momentum)
///   runningVar  = inputVar  * momentum + batchVar  * (1 - momentum).
/// runningMean / runningVar ([C], f32, f16 or bf16) may be inputMean /
/// inputVar themselves (an in-place update). batchMean / batchVar (optional,
/// [C]) receive the batch statistics. Statistics accumulate in f64.
Status batchNormTraining(const TensorView &x, const TensorView &scale,
                         const TensorView &bias, const TensorView &inputMean,
                         const TensorView &inputVar, const TensorView &y,
                         const TensorView &runningMean,
                         const TensorView &runningVar,
                         const BatchNormOptions &options = {},
                         const TensorView *batchMean = nullptr,
                         const TensorView *batchVar = nullptr);
/// The checks of batchNormInference and batchNormTraining without running
/// them (shared with the CUDA backend's planning).
Status checkBatchNormInference(const TensorView &x, const TensorView &scale,
                               const TensorView &bias, const TensorView &mean,
                               const TensorView &var, const TensorView &y,
                               const BatchNormOptions &options);
Status checkBatchNormTraining(const TensorView &x, const TensorView &scale,
                              const TensorView &bias,
                              const TensorView &inputMean,
                              const TensorView &inputVar, const TensorView &y,
                              const TensorView &runningMean,
                              const TensorView &runningVar,
                              const BatchNormOptions &options,
                              const TensorView *batchMean = nullptr,
                              const TensorView *batchVar = nullptr);

//===----------------------------------------------------------------------===//
// Softmax (cuDNN)
//===----------------------------------------------------------------------===//

/// y = exp(x - max) / sum(exp(x - max)) along `axis` (negative counts from
/// the end), as ONNX Softmax-13. x and y: same shape and dtype (f32, f16,
/// bf16 computed in f32; f64 in f64); y may be x itself.
Status softmax(const TensorView &x, const TensorView &y, int64_t axis = -1);
/// y = softmax(x * scale + mask) along x's last dim: x and mask (optional;
/// broadcast to x's shape, numpy rules; x's dtype or f32) read as f32 (f64
/// for f64 data), the sum of the exponentials in f64, y rounded once. x and
/// y: same shape and dtype; y may be x itself.
Status scaledSoftmax(const TensorView &x, const TensorView *mask,
                     const TensorView &y, float scale);
/// scaledSoftmax's checks without running it (shared with the fast call and
/// the CUDA backend's planning).
Status checkScaledSoftmax(const TensorView &x, const TensorView *mask,
                          const TensorView &y);
/// The element strides of a tensor of shape `from` broadcast (numpy rules)
/// onto `shape`: one per dim of `shape`, 0 along the dims it repeats
/// (shared with the CUDA backend's planning).
std::vector<int64_t> broadcastStridesOf(const Shape &from, const Shape &shape);
/// With those strides, where the broadcast tensor's values for row `row` of
/// `shape` (rows over every dim but the last) start.
int64_t broadcastRowOffset(const Shape &shape,
                           const std::vector<int64_t> &strides, int64_t row);
/// y = (x - max) - log(sum(exp(x - max))) along `axis`, as ONNX LogSoftmax-13.
Status logSoftmax(const TensorView &x, const TensorView &y, int64_t axis = -1);
/// softmax's (log: logSoftmax's) checks without running it; `axis`
/// normalized (shared with the CUDA backend's planning).
Status checkSoftmax(const TensorView &x, const TensorView &y, int64_t &axis,
                    bool log);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_KERNELS_H
