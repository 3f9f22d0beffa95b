//===- CudaPlanning.h - host-side decisions of the CUDA backend ---*- C++
//-*-===//
//
// Everything the CUDA backend decides on the host, as plain functions that
// need neither a GPU nor the CUDA toolkit (library MPRuntimeCUDAPlanning,
// always built, unit-tested in every build):
//
//   * which call kinds the GPU implements (cudaCallKinds, checkPlanForCuda);
//   * per call: the attribute, shape and dtype checks (the CPU backend's
//     rules), and the parameters of the kernels (KernelParams.h) or of the
//     library calls: broadcast strides, merged dimensions, the cuBLASLt
//     row-major mapping and epilogue choice, cuDNN descriptor dimensions,
//     explicit padding, the scratch memory a call needs, launch sizes;
//   * the keys of the convolution algorithm cache.
//
// A TensorDesc is a buffer as the planner sees it: dtype, shape and its
// device address (any distinct numbers on the host: they are only copied
// into kernel parameters and used for overlap checks).
//
// Every planner is called once per call, by CudaExecutor::create, so a plan
// the GPU cannot run is refused before anything runs.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CUDA_CUDAPLANNING_H
#define MP_RUNTIME_CUDA_CUDAPLANNING_H

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CUDA/KernelParams.h"
#include "mp/Runtime/DType.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mp::rt::cuda {

/// A buffer of a call: dtype, shape, device address.
struct TensorDesc {
  DType dtype = DType::F32;
  Shape shape;
  uint64_t addr = 0;
  int64_t numElements() const { return rt::numElements(shape); }
  uint64_t byteCount() const {
    return static_cast<uint64_t>(numElements()) * byteSize(dtype);
  }
  template <typename T> T *ptr() const {
    return reinterpret_cast<T *>(static_cast<uintptr_t>(addr));
  }
};

/// True when the bytes of a and b overlap (empty tensors overlap nothing).
bool overlapping(const TensorDesc &a, const TensorDesc &b);

//===----------------------------------------------------------------------===//
// Launch sizes, scratch memory (CudaPlanning.cpp)
//===----------------------------------------------------------------------===//

struct LaunchConfig {
  uint32_t blocks = 1, threads = 256;
};
/// A grid-stride launch over `work` items: `threads` per block, at most
/// `maxBlocks` blocks, at least one.
LaunchConfig launchFor(int64_t work, uint32_t threads = 256,
                       uint32_t maxBlocks = 8192);

/// The scratch memory of one call, carved out of the executor's single
/// workspace arena: blocks at 256-byte aligned offsets.
class WorkspaceLayout {
public:
  /// Reserves `bytes` and returns its offset.
  uint64_t add(uint64_t bytes);
  uint64_t total() const { return total_; }

private:
  uint64_t total_ = 0;
};

/// The alignment (a power of two, at most 256) of a device address.
uint32_t addressAlignment(uint64_t addr);

//===----------------------------------------------------------------------===//
// The call table of the GPU (what exists), and a whole-plan check
// (CudaPlanning.cpp)
//===----------------------------------------------------------------------===//

/// Every call kind the CUDA backend implements, sorted.
const std::vector<std::string> &cudaCallKinds();
bool isCudaCallKind(const std::string &kind);

/// Checks every call of `plan` with the planners below (as create() does),
/// with the buffers at made-up addresses (arena buffers at their offsets):
/// a plan that passes runs on the GPU as far as the host can tell. All calls
/// of kinds the GPU does not implement are listed in one message
/// ("<name>: the CUDA backend does not implement 2 calls: call #3
/// (kernel.topk at node 'x'), call #5 (...)"); otherwise the first call
/// that fails is named.
Status checkPlanForCuda(const Plan &plan, const std::string &name = "<plan>");

/// An error for a dynamic-shape plan (format 1.9): the CUDA backend runs
/// static ones (specializePlan makes one).
Status checkDynamicPlanForCuda(const Plan &plan,
                               const std::string &name = "<plan>");

/// The type of a call's planner: `PlannerFn<R> planX;` declares
/// Result<R> planX(const PlanCall &call, const std::vector<TensorDesc>
/// &operands, const std::vector<TensorDesc> &results).
template <typename R>
using PlannerFn = Result<R>(const PlanCall &call,
                            const std::vector<TensorDesc> &operands,
                            const std::vector<TensorDesc> &results);

//===----------------------------------------------------------------------===//
// Elementwise, cast (CudaPlanningElementwise.cpp); copy, transpose
// (CudaPlanningDataMovement.cpp)
//===----------------------------------------------------------------------===//

/// numpy broadcasting of `inputs` to `out` as a merged loop (at most
/// kMaxEwInputs inputs; an error if an input does not broadcast or the
/// merged rank exceeds kMaxDims).
Result<BroadcastLoop> makeBroadcastLoop(const std::vector<Shape> &inputs,
                                        const Shape &out);

/// kernel.elementwise: fn, alpha, beta; the CPU's dtype and shape rules.
/// Functions or dtypes the GPU does not implement are errors naming them.
PlannerFn<EwParams> planElementwise;

/// kernel.fused_elementwise: the program, f16 / bf16 / f32 inputs and y,
/// the CPU's shape rules.
PlannerFn<FusedEwParams> planFusedElementwise;

/// y = x broadcast to y's shape and converted to y's dtype (an elementwise
/// identity with a conversion: C of matmul, bias of convolutions). x's
/// dtype must be a float dtype when they differ.
Result<EwParams> planBroadcastConvert(const TensorDesc &x, const TensorDesc &y);

/// kernel.cast (any dtype to any but u64 sources or targets).
/// kernel.cast: `call`'s `saturate` (default 1) applies to float8 results.
Result<CastParams> planCast(const PlanCall &call, const TensorDesc &x,
                            const TensorDesc &y);
/// A cast of `n` contiguous elements (scratch conversions).
CastParams castOf(DType from, const void *in, DType to, void *out, int64_t n);

/// kernel.copy: the number of bytes to copy (0: nothing, y is x).
Result<uint64_t> planCopy(const TensorDesc &x, const TensorDesc &y);

/// kernel.transpose with `perm` (empty: reversed).
Result<GatherCopyParams> planTranspose(const TensorDesc &x, const TensorDesc &y,
                                       const std::vector<int64_t> &perm);

/// kernel.broadcast (Expand): x broadcast to y's shape, raw elements.
Result<EwParams> planBroadcast(const TensorDesc &x, const TensorDesc &y);

/// kernel.slice: starts, steps (one per dim of x).
Result<GatherCopyParams> planSlice(const PlanCall &call, const TensorDesc &x,
                                   const TensorDesc &y);

/// kernel.concat: one scatter copy per input (inputs with no elements are
/// left out).
Result<std::vector<GatherCopyParams>>
planConcat(const PlanCall &call, const std::vector<TensorDesc> &inputs,
           const TensorDesc &y);

/// y = the window of x starting at `start` (per dim, may be negative or run
/// past x: those positions read 0): zero padding and cropping.
Result<GatherCopyParams> planWindowCopy(DType dtype, const Shape &x,
                                        const Shape &y,
                                        const std::vector<int64_t> &start,
                                        const void *in, void *out);

//===----------------------------------------------------------------------===//
// Reduce, softmax (CudaPlanningReduce.cpp, CudaPlanningSoftmax.cpp)
//===----------------------------------------------------------------------===//

/// kernel.reduce: sum, mean, max, min, prod, l1, l2, log_sum, sum_square,
/// argmax, argmin (log_sum_exp is not implemented on the GPU).
Result<ReduceParams> planReduce(const PlanCall &call, const TensorDesc &x,
                                const TensorDesc &y);
/// The same reduction given by value (a matmul's bias_grad).
Result<ReduceParams> planReduce(cpu::ReduceFn fn,
                                const std::vector<int64_t> &axes,
                                const cpu::ReduceOptions &options,
                                const TensorDesc &x, const TensorDesc &y);

/// cudnn.softmax (the project's kernel, the CPU's arithmetic).
Result<SoftmaxParams> planSoftmax(const PlanCall &call, const TensorDesc &x,
                                  const TensorDesc &y);
/// kernel.scaled_softmax: x, mask? -> y (the softmax kernels with x * scale
/// + mask as their input; the CPU's checks: cpu::checkScaledSoftmax).
PlannerFn<SoftmaxParams> planScaledSoftmax;

//===----------------------------------------------------------------------===//
// Matmul (cuBLASLt; CudaPlanningMatmul.cpp)
//===----------------------------------------------------------------------===//

/// One cuBLASLt matmul (possibly strided-batched) in cuBLASLt's column-major
/// terms. The row-major D[M, N] = op(A) op(B) is computed as the
/// column-major D^T[N, M] = op(B)^T op(A)^T, so cuBLASLt's "A" is our B and
/// its "B" is our A; its m is N and its n is M (times the batch, when the
/// batch folds into M).
struct LtGemm {
  bool transA = false, transB = false; ///< cuBLASLt's opA / opB
  uint64_t m = 0, n = 0, k = 0;
  uint64_t aRows = 0, aCols = 0; ///< cuBLASLt's A layout (our B)
  int64_t lda = 0;
  uint64_t bRows = 0, bCols = 0; ///< cuBLASLt's B layout (our A)
  int64_t ldb = 0;
  int64_t ldd = 0;
  int32_t batchCount = 1;
  int64_t strideA = 0, strideB = 0, strideD = 0; ///< elements
};

struct MatmulPlan {
  /// D has no elements: nothing to do (and nothing else is planned).
  bool empty = false;
  DType abType = DType::F32, dType = DType::F32;
  bool f64 = false;
  double alpha = 1, beta = 0;
  bool withC = false; ///< C is used (given and beta != 0)
  /// C goes to cuBLASLt as it is (C has D's shape and dtype, and the
  /// result is not staged); otherwise it is broadcast (and converted) into
  /// the target first, and the GEMM reads the target as C.
  bool cDirect = false;
  EpilogueAct act = kActNone;
  /// The GEMM writes an f32/f64 scratch (or D itself, when D is f32/f64)
  /// and the epilogue kernel adds the bias, applies the activation and
  /// rounds once to D's dtype: for gelu (cuBLASLt's GELU is the tanh
  /// approximation, the plan's is exact), for a bias of another dtype
  /// than D and for f64 with a bias or an activation. Otherwise the bias and
  /// relu are cuBLASLt epilogues (and staged after all when cuBLASLt has no
  /// algorithm with them, unless C is used).
  bool staged = false;
  bool fusedBias = false, fusedRelu = false;
  LtGemm gemm;
  /// When the batch does not map to one strided call: one GEMM per batch
  /// entry, at these element offsets of (our B, our A, D).
  std::vector<std::array<int64_t, 3>> loop;
  /// Scratch bytes for the staged result (0 when not staged or D is
  /// f32/f64 itself).
  uint64_t stagedBytes = 0;
  uint64_t dElements = 0;
  /// The smallest alignment of the pointers cuBLASLt gets (heuristics).
  uint32_t alignA = 256, alignB = 256, alignC = 256, alignD = 256;
  EpilogueParams epilogue; ///< staged: pointers to fill in
  EwParams cCopy;          ///< withC && !cDirect: pointers to fill in
  /// bias_grad: the sums of op(B) (op(A)) over K, by the reduction kernel
  /// after the GEMM (the CPU's arithmetic: f32 sums rounded once).
  std::optional<ReduceParams> biasGrad;
};

/// cublaslt.matmul: a, b, c?, bias? -> d, bias_grad? (the CPU's rules).
PlannerFn<MatmulPlan> planMatmul;

//===----------------------------------------------------------------------===//
// Convolutions (cuDNN; CudaPlanningConv.cpp)
//===----------------------------------------------------------------------===//

enum class ConvKind { Forward, BackwardData, BackwardFilter };

/// One cuDNN convolution call. "xDims" are the dims of the convolution's
/// input side (forward: x; backward data: y, the data gradient; backward
/// filter: x), "yDims" of its output side (forward: y; backward data: the
/// plan's x; backward filter: dy), "wDims" of the filter, all in cuDNN's
/// NCHW order (N, C, spatial...) whatever the memory layout; 1-D
/// convolutions get a trailing spatial dim of 1.
struct ConvPlan {
  ConvKind kind = ConvKind::Forward;
  /// The result has no elements: nothing to do (nothing else is planned).
  bool empty = false;
  DType dataType = DType::F32; ///< of every tensor cuDNN sees
  bool nhwc = false;
  int32_t spatial = 2; ///< the plan's spatial dims (1 to 3)
  std::vector<int> xDims, wDims, yDims;
  std::vector<int> pads, strides, dilations;
  int groups = 1;
  /// Inputs converted to dataType in scratch first (mixed dtypes).
  bool convertIn0 = false, convertIn1 = false;
  /// Asymmetric pads: forward / backward filter pad x explicitly into
  /// scratch (cuDNN pads 0); backward data computes the padded gradient in
  /// scratch and crops it.
  bool explicitPad = false;
  std::vector<int64_t> padBegin; ///< the plan's pads (begins)
  /// The output goes to scratch of dataType when y's dtype differs or there
  /// is an epilogue with a bias of another dtype... (see staged epilogue).
  bool outputToScratch = false;
  /// Bias and/or activation after the cuDNN call (own kernel).
  bool epilogue = false;
  EpilogueParams epi; ///< pointers filled in by the executor
  /// Scratch (bytes) the call needs besides cuDNN's algorithm workspace:
  /// [converted in0][converted in1][padded x / padded dx][output].
  uint64_t in0Bytes = 0, in1Bytes = 0, padBytes = 0, outBytes = 0;
  /// The dims of the padded tensor (explicitPad), in the plan's memory
  /// layout.
  Shape paddedShape;
};

/// cudnn.conv_fwd (x, w, bias? -> y), cudnn.conv_bwd_data (x, w, bias? ->
/// y: ConvTranspose) and cudnn.conv_bwd_filter (x, dy -> dw).
Result<ConvPlan> planConv(ConvKind kind, const PlanCall &call,
                          const std::vector<TensorDesc> &operands,
                          const std::vector<TensorDesc> &results);

/// The key of the algorithm cache: the convolution kind and every
/// descriptor parameter (dtype, layout, dims, pads, strides, dilations,
/// groups) and the device; equal keys get the same algorithm.
std::string convAlgoKey(const ConvPlan &plan, int device);

//===----------------------------------------------------------------------===//
// Pooling, batch normalization (CudaPlanningPool.cpp,
// CudaPlanningBatchNorm.cpp)
//===----------------------------------------------------------------------===//

/// cudnn.pool (x -> y, indices?) and cudnn.pool_bwd (x, dy -> dx); the
/// backward needs an accumulator of x's elements (f32, f64 for f64 data)
/// unless dx is that type itself: accBytes.
struct PoolPlan {
  PoolParams params;
  bool backward = false;
  uint64_t accBytes = 0; ///< scratch for the accumulator (0: dx is it)
  DType accType = DType::F32;
};
Result<PoolPlan> planPool(bool backward, const PlanCall &call,
                          const std::vector<TensorDesc> &operands,
                          const std::vector<TensorDesc> &results);

enum class BatchNormKind { Inference, Training, Backward };

/// Who runs the batch norms (CudaExecutorOptions::batchNorm).
enum class BatchNormImpl {
  /// cuDNN (cudnnBatchNormalization*, CUDNN_BATCHNORM_SPATIAL) where it
  /// can for f32 data and for inference; the own kernels for the 16-bit
  /// training forward and backward, which on an H200 with cuDNN 9 ran the
  /// mixed ResNet-50 training step in 101 ms against 252 ms on cuDNN's
  /// (270 ms without its persistent mode; docs/benchmarks.md, "GPU
  /// results").
  Auto,
  /// cuDNN wherever it can (CUDNN_BATCHNORM_SPATIAL).
  CudnnSpatial,
  /// The own kernels for every batch norm.
  Own,
};

/// How cuDNN runs a batch norm: x as a 4-D tensor [N, C, S, 1] (S the
/// product of the spatial dims; channels last folds a batch beyond cuDNN's
/// limit into S: [1, C, N * S, 1]), NCHW or NHWC, with f32 per-channel
/// tensors. Training runs with exponentialAverageFactor 1 into scratch, so
/// cuDNN's running outputs are the batch mean and the unbiased batch
/// variance; a kernel then forms ONNX's running statistics (biased
/// variance: * (count - 1) / count).
struct CudnnBatchNorm {
  bool use = false;
  std::string whyNot; ///< when !use: why the own kernels run it
  bool nhwc = false;
  DType dtype = DType::F32;      ///< x, y, dy, dx
  std::array<int32_t, 4> dims{}; ///< N, C, S, 1
};

struct BatchNormPlan {
  BatchNormKind kind = BatchNormKind::Inference;
  BatchNormParams params;
  CudnnBatchNorm cudnn;
  /// Scratch: with cuDNN, training's batch mean and unbiased variance (2 C
  /// floats); otherwise the own kernels' per-channel floats (not in the
  /// backward), then at `doublesOffset` their doubles (the backward's, and
  /// channels last the statistics and the slices' partial sums).
  uint64_t scratchBytes = 0;
  uint64_t doublesOffset = 0;
  /// sync_ranks (training and backward): the statistics over the ranks'
  /// global batch, on the own kernels, their per-pass sums reduced with
  /// NCCL (chanSum: 2 more doubles per channel after chanD's 4).
  bool sync = false;
};
/// cudnn.batch_norm_inference / _training / _bwd: the checks and the own
/// kernels' parameters, and whether cuDNN runs it (`impl`; cuDNN takes f16,
/// bf16 and f32 x with f32 per-channel tensors, a y apart from x, rank >= 2
/// with int32 sizes, and for training at least two elements per channel).
Result<BatchNormPlan> planBatchNorm(BatchNormKind kind, const PlanCall &call,
                                    const std::vector<TensorDesc> &operands,
                                    const std::vector<TensorDesc> &results,
                                    BatchNormImpl impl = BatchNormImpl::Auto);

//===----------------------------------------------------------------------===//
// Indexing, losses, training (CudaPlanningIndexing.cpp,
// CudaPlanningTraining.cpp)
//===----------------------------------------------------------------------===//

PlannerFn<GatherParams> planGather;

/// kernel.scatter_nd with reduction none or add: y = data (a copy unless
/// in place), then the updates.
struct ScatterNDPlan {
  ScatterNDParams params;
  uint64_t copyBytes = 0; ///< data -> y first (0: in place)
};
PlannerFn<ScatterNDPlan> planScatterND;

/// kernel.nll_loss, kernel.nll_loss_grad,
/// kernel.softmax_cross_entropy_grad.
enum class LossKind { NllLoss, NllLossGrad, SoftmaxCrossEntropyGrad };
Result<LossParams> planLoss(LossKind kind, const PlanCall &call,
                            const std::vector<TensorDesc> &operands,
                            const std::vector<TensorDesc> &results);

/// kernel.unscale_check_finite: one entry per gradient.
PlannerFn<std::vector<UnscaleParams>> planUnscale;

PlannerFn<LossScaleParams> planLossScaleUpdate;

/// comm.all_reduce: each buffer's place in the staging buffer (elements of
/// the reduce type); the pack and unpack copies have their scales set when
/// the call runs, for the number of ranks then (allReducePreScale /
/// allReducePostDivisor). The staging buffer is the call's workspace.
struct AllReducePlan {
  cpu::AllReduceOptions options;
  int64_t total = 0;           ///< elements over all buffers
  uint64_t stagingBytes = 0;   ///< total * the reduce type's size
  std::vector<int64_t> offset; ///< per buffer, in elements
  std::vector<AllReduceCopyParams> pack, unpack; ///< src / dst: staging null
};
PlannerFn<AllReducePlan> planAllReduce;

/// kernel.sgd_step (kind 0) and kernel.adam_step (kind 1).
Result<OptimizerParams> planOptimizer(bool adam, const PlanCall &call,
                                      const std::vector<TensorDesc> &operands,
                                      const std::vector<TensorDesc> &results);

//===----------------------------------------------------------------------===//
// Normalizations (CudaPlanningNN.cpp)
//===----------------------------------------------------------------------===//

/// kernel.attention: q, k, v, mask? -> o (the CPU's checks:
/// cpu::checkAttention; head and value dims up to kMaxAttentionDim).
PlannerFn<AttentionParams> planAttention;
/// kernel.layer_norm: x, scale, bias? -> y, mean?, inv_std_dev? (the CPU's
/// checks: cpu::checkLayerNorm).
PlannerFn<NormParams> planLayerNorm;
/// kernel.layer_norm_grad: dy, x, scale, mean, inv_std_dev -> dx, dscale,
/// dbias? (the CPU's checks: cpu::checkLayerNormGrad).
PlannerFn<LayerNormGradParams> planLayerNormGrad;
/// kernel.rms_norm: x, scale -> y (the CPU's checks: cpu::checkRmsNorm).
PlannerFn<NormParams> planRmsNorm;
/// kernel.group_norm: x, scale, bias? -> y (the CPU's checks:
/// cpu::checkGroupNorm).
PlannerFn<NormParams> planGroupNorm;
/// kernel.instance_norm: x, scale, bias -> y.
PlannerFn<NormParams> planInstanceNorm;
/// cudnn.lrn: x -> y.
PlannerFn<LrnParams> planLrn;

//===----------------------------------------------------------------------===//
// Recurrent networks (CudaPlanningNN.cpp)
//===----------------------------------------------------------------------===//

/// cudnn.rnn: the parameters, the scratch layout (offsets into the call's
/// workspace) and what the steps launch (RnnParams).
struct RnnPlan {
  RnnParams params;
  bool reverse = false; ///< direction "reverse" (direction 1 always is)
  /// GRU without linear_before_reset: two gate kernels per step.
  bool twoPhase = false;
  uint64_t xwOffset = 0, hrOffset = 0, hOffset = 0, cOffset = 0, tmpOffset = 0,
           workspaceBytes = 0;
  void *yH = nullptr, *yC = nullptr; ///< the final state (optional)
};
PlannerFn<RnnPlan> planRnn;

/// kernel.lstm_bwd: the parameters, the scratch layout (offsets into the
/// call's workspace, in the order of LstmBwdParams' scratch) and the
/// results to round the gradients into.
struct LstmBwdPlan {
  LstmBwdParams params;
  bool reverse = false; ///< direction "reverse" (direction 1 always is)
  uint64_t offsets[12] = {};
  uint64_t workspaceBytes = 0;
  /// dx, dw, dr, db?, dinitial_h?, dinitial_c? and their element counts.
  void *out[6] = {};
  int64_t outElements[6] = {};
};
PlannerFn<LstmBwdPlan> planLstmBwd;

//===----------------------------------------------------------------------===//
// Selection and scans (CudaPlanningNN.cpp)
//===----------------------------------------------------------------------===//

/// kernel.topk: x -> values, indices.
PlannerFn<TopkParams> planTopk;
/// kernel.cumsum: x -> y.
PlannerFn<ScanParams> planCumsum;
/// kernel.hardmax: x -> y.
PlannerFn<ScanParams> planHardmax;

//===----------------------------------------------------------------------===//
// Data movement and indexing (CudaPlanningData.cpp)
//===----------------------------------------------------------------------===//

PlannerFn<TriluParams> planTrilu;
PlannerFn<TileParams> planTile;
PlannerFn<PadParams> planPad;
PlannerFn<ElementsParams> planGatherElements;
PlannerFn<GatherNDParams> planGatherND;
/// kernel.scatter_elements: y = data (a copy unless in place), then the
/// updates line by line.
struct ScatterElementsPlan {
  ElementsParams params;
  uint64_t copyBytes = 0; ///< data -> y first (0: in place or empty)
};
PlannerFn<ScatterElementsPlan> planScatterElements;
PlannerFn<ResizeParams> planResize;

/// Runs the planner of `call`'s kind on the descriptors (used by
/// checkPlanForCuda and the tests): an error for unknown kinds and
/// anything a planner rejects.
Status planCall(const PlanCall &call, const std::vector<TensorDesc> &operands,
                const std::vector<TensorDesc> &results);

} // namespace mp::rt::cuda

#endif // MP_RUNTIME_CUDA_CUDAPLANNING_H
