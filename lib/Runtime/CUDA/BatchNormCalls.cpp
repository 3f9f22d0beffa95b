//===- BatchNormCalls.cpp - cudnn.batch_norm_* on cuDNN or own kernels ----===//
//
// cudnn.batch_norm_inference / _training / _bwd. planBatchNorm decides who
// runs a call (CudaExecutorOptions::batchNorm, CudnnBatchNorm):
//
//   * cuDNN (cudnnBatchNormalizationForwardInference / ForwardTraining /
//     Backward) for f16, bf16 and f32 x with f32 per-channel tensors: x as
//     [N, C, S, 1] in NCHW or NHWC, the per-channel descriptor derived by
//     cuDNN. ONNX's running variance is the biased one and cuDNN's the
//     unbiased one, so training asks cuDNN for the batch statistics alone
//     (exponentialAverageFactor 1 into zeroed scratch) and a small kernel
//     forms the running statistics (launchBatchNormRunningStats). The
//     backward recomputes the statistics from x (the culib op carries no
//     saved mean).
//   * the own kernels (TrainingKernels.cu) for everything else: f64
//     backward, 16-bit per-channel tensors, y in place of x, one element per
//     channel in training, channels-first batches beyond cuDNN's limit, and
//     (BatchNormImpl::Auto) the 16-bit training forward and backward, which
//     they run faster than cuDNN 9, and likewise every channels-last
//     training batch norm (cuDNN 9's took 3-16 ms a call on an H100).
//     Channels last, their statistics sum slices of the rows in parallel.
//     A call whose cuDNN descriptors cuDNN refuses falls back to them too.
//   * sync_ranks (a data-parallel step's batch norm over the ranks' global
//     batch): the own kernels pass by pass, the per-channel sums of each
//     pass added up over the GPUs with NCCL in between (the CPU's passes).
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"
#include "DynamicLibs.h"

namespace mp::rt::cuda {
namespace {

/// The own kernels' parameters with their per-channel scratch in the
/// workspace (planOwnScratch's layout): the forward's coefficients (floats),
/// then the doubles.
BatchNormParams withScratch(const BatchNormPlan &plan, void *workspaceBase) {
  BatchNormParams p = plan.params;
  const int64_t c = p.geom.c;
  char *workspace = static_cast<char *>(workspaceBase);
  if (plan.kind != BatchNormKind::Backward) {
    float *f = reinterpret_cast<float *>(workspace);
    p.chanMean = f;
    p.chanFactor = f + c;
    p.chanBias = f + 2 * c;
  }
  if (plan.kind == BatchNormKind::Backward || p.rowSlices > 0 || plan.sync)
    p.chanD = reinterpret_cast<double *>(workspace + plan.doublesOffset);
  if (p.rowSlices > 0)
    p.partial = p.chanD + 4 * c;
  if (plan.sync)
    p.chanSum = p.chanD + 4 * c;
  return p;
}

/// The own kernels: per-channel coefficients / statistics in the workspace.
struct OwnBatchNormCall : PreparedCall {
  BatchNormPlan plan;
  explicit OwnBatchNormCall(const BatchNormPlan &plan) : plan(plan) {}
  uint64_t workspaceBytes() const override { return plan.scratchBytes; }
  Status enqueue(const RunContext &ctx) override {
    BatchNormParams p = withScratch(plan, ctx.workspace);
    return cudaStatus(
        launchBatchNorm(static_cast<int>(plan.kind), p, ctx.stream),
        "batch norm kernel");
  }
};

/// sync_ranks: the own kernels pass by pass, each pass's per-channel sums
/// added up over the ranks between its two kernels.
struct SyncedBatchNormCall : PreparedCall {
  BatchNormPlan plan;
  explicit SyncedBatchNormCall(const BatchNormPlan &plan) : plan(plan) {}
  uint64_t workspaceBytes() const override { return plan.scratchBytes; }
  Status enqueue(const RunContext &ctx) override {
    BatchNormParams p = withScratch(plan, ctx.workspace);
    const int64_t c = p.geom.c;
    const bool training = plan.kind == BatchNormKind::Training;
    p.ranks = ctx.ranks;
    const int passes = training ? 2 : 3;
    for (int pass = 0; pass < passes; ++pass) {
      MP_CUDA_TRY(launchBatchNormSyncPass(p, pass, false, training, ctx.stream),
                  "batch norm sums");
      if (Status s = allReduceDoublesOnDevice(p.chanSum,
                                              static_cast<size_t>(2 * c), ctx);
          !s)
        return Status::error("batch norm over the ranks: " + s.message());
      MP_CUDA_TRY(launchBatchNormSyncPass(p, pass, true, training, ctx.stream),
                  "batch norm statistics");
    }
    return cudaStatus(launchBatchNormSyncApply(training ? 1 : 2, p, ctx.stream),
                      "batch norm kernel");
  }
};

class CudnnBatchNormCall : public PreparedCall {
public:
  explicit CudnnBatchNormCall(const BatchNormPlan &plan) : plan(plan) {}
  ~CudnnBatchNormCall() override {
    for (cudnnTensorDescriptor_t d : {xDesc, perChannelDesc})
      if (d)
        cudnn().cudnnDestroyTensorDescriptor(d);
  }

  Status init() {
    const CudnnBatchNorm &c = plan.cudnn;
    MP_CUDNN_TRY(cudnn().cudnnCreateTensorDescriptor(&xDesc),
                 "cudnnCreateTensorDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnCreateTensorDescriptor(&perChannelDesc),
                 "cudnnCreateTensorDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnSetTensorNdDescriptorEx(
                     xDesc, c.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                     cudnnTypeOf(c.dtype), 4, c.dims.data()),
                 "cudnnSetTensorNdDescriptorEx (batch norm x)");
    MP_CUDNN_TRY(
        cudnn().cudnnDeriveBNTensorDescriptor(perChannelDesc, xDesc, mode()),
        "cudnnDeriveBNTensorDescriptor");
    if (plan.params.epsilon < CUDNN_BN_MIN_EPSILON)
      return Status::error("epsilon below cuDNN's minimum");
    return Status::ok();
  }

  uint64_t workspaceBytes() const override { return plan.scratchBytes; }

  Status enqueue(const RunContext &ctx) override {
    const BatchNormParams &p = plan.params;
    const float one = 1.0f, zero = 0.0f;
    switch (plan.kind) {
    case BatchNormKind::Inference:
      MP_CUDNN_TRY(cudnn().cudnnBatchNormalizationForwardInference(
                       ctx.dnn, mode(), &one, &zero, xDesc, p.x, xDesc, p.y,
                       perChannelDesc, p.scale, p.bias, p.mean, p.var,
                       p.epsilon),
                   "cudnnBatchNormalizationForwardInference");
      return Status::ok();
    case BatchNormKind::Training: {
      // cuDNN's running outputs with factor 1 are the batch statistics;
      // they start from zero since cuDNN still reads them (* 0).
      float *batchMean = reinterpret_cast<float *>(ctx.workspace);
      float *batchVar = batchMean + p.geom.c;
      MP_CUDA_TRY(cudaMemsetAsync(batchMean, 0, plan.scratchBytes, ctx.stream),
                  "cudaMemsetAsync (batch statistics)");
      MP_CUDNN_TRY(cudnn().cudnnBatchNormalizationForwardTraining(
                       ctx.dnn, mode(), &one, &zero, xDesc, p.x, xDesc, p.y,
                       perChannelDesc, p.scale, p.bias, 1.0, batchMean,
                       batchVar, p.epsilon, nullptr, nullptr),
                   "cudnnBatchNormalizationForwardTraining");
      return cudaStatus(launchBatchNormRunningStats(p, batchMean, batchVar,
                                                    p.geom.outer * p.geom.inner,
                                                    ctx.stream),
                        "batch norm running statistics kernel");
    }
    case BatchNormKind::Backward:
      MP_CUDNN_TRY(cudnn().cudnnBatchNormalizationBackward(
                       ctx.dnn, mode(), &one, &zero, &one, &zero, xDesc, p.x,
                       xDesc, p.dy, xDesc, p.dx, perChannelDesc, p.scale,
                       p.dscale, p.dbias, p.epsilon, nullptr, nullptr),
                   "cudnnBatchNormalizationBackward");
      return Status::ok();
    }
    return Status::error("unknown batch norm kind");
  }

private:
  static cudnnBatchNormMode_t mode() { return CUDNN_BATCHNORM_SPATIAL; }

  BatchNormPlan plan;
  cudnnTensorDescriptor_t xDesc = nullptr, perChannelDesc = nullptr;
};

Result<std::unique_ptr<PreparedCall>> prepareBatchNorm(const PrepareArgs &a,
                                                       BatchNormKind kind) {
  MP_TRY_PREPARE(
      plan, planBatchNorm(kind, a.call, a.operands, a.results, a.batchNorm));
  if (plan.sync)
    return preparedCall<SyncedBatchNormCall>(plan);
  if (plan.cudnn.use) {
    auto call = std::make_unique<CudnnBatchNormCall>(plan);
    if (call->init())
      return std::unique_ptr<PreparedCall>(std::move(call));
    // cuDNN refused the descriptors: the own kernels run it.
    MP_TRY_PREPARE(own, planBatchNorm(kind, a.call, a.operands, a.results,
                                      BatchNormImpl::Own));
    plan = own;
  }
  return preparedCall<OwnBatchNormCall>(plan);
}

Result<std::unique_ptr<PreparedCall>>
prepareBatchNormInference(const PrepareArgs &a) {
  return prepareBatchNorm(a, BatchNormKind::Inference);
}
Result<std::unique_ptr<PreparedCall>>
prepareBatchNormTraining(const PrepareArgs &a) {
  return prepareBatchNorm(a, BatchNormKind::Training);
}
Result<std::unique_ptr<PreparedCall>>
prepareBatchNormBackward(const PrepareArgs &a) {
  return prepareBatchNorm(a, BatchNormKind::Backward);
}

} // namespace

void addBatchNormCalls(std::map<std::string, PrepareFn> &t) {
  MP_ADD_PREPARE("cudnn.batch_norm_inference", prepareBatchNormInference);
  MP_ADD_PREPARE("cudnn.batch_norm_training", prepareBatchNormTraining);
  MP_ADD_PREPARE("cudnn.batch_norm_bwd", prepareBatchNormBackward);
}

} // namespace mp::rt::cuda
