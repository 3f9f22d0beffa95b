//===- Launch.h - the CUDA backend's kernel launchers -------------*- C++
//-*-===//
//
// Host functions (defined in ElementwiseKernels.cu, ReduceKernels.cu,
// PoolKernels.cu, TrainingKernels.cu, NNKernels.cu and DataKernels.cu) that
// launch the project's kernels on a stream with the
// parameters CudaPlanning made. Each returns the launch's error
// (cudaGetLastError). Private to lib/Runtime/CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_LAUNCH_H
#define MP_LIB_RUNTIME_CUDA_LAUNCH_H

#include "mp/Runtime/CUDA/KernelParams.h"

#include <cuda_runtime_api.h>

namespace mp::rt::cuda {

// ElementwiseKernels.cu
cudaError_t launchElementwise(const EwParams &p, cudaStream_t stream);
cudaError_t launchFusedElementwise(const FusedEwParams &p, cudaStream_t stream);
cudaError_t launchCast(const CastParams &p, cudaStream_t stream);
cudaError_t launchGatherCopy(const GatherCopyParams &p, cudaStream_t stream);
// ReduceKernels.cu
cudaError_t launchReduce(const ReduceParams &p, cudaStream_t stream);
cudaError_t launchSoftmax(const SoftmaxParams &p, cudaStream_t stream);
// PoolKernels.cu
cudaError_t launchEpilogue(const EpilogueParams &p, cudaStream_t stream);
/// Pooling forward (y, and indices when p.indices).
cudaError_t launchPool(const PoolParams &p, cudaStream_t stream);
/// Pooling backward: adds into p.acc (f32, or f64 when accF64), which the
/// caller zeroed.
cudaError_t launchPoolBackward(const PoolParams &p, bool accF64,
                               cudaStream_t stream);

// TrainingKernels.cu
/// kind: 0 inference, 1 training, 2 backward (BatchNormKind).
cudaError_t launchBatchNorm(int kind, const BatchNormParams &p,
                            cudaStream_t stream);
/// ONNX's running statistics after cuDNN's batch norm training, which ran
/// with exponentialAverageFactor 1 into batchMean / batchVarUnbiased:
/// running = input * momentum + batch * (1 - momentum), with the biased
/// variance (the unbiased one * (count - 1) / count).
/// A synchronised batch norm (sync_ranks), step by step around the calls'
/// NCCL sums: pass 0 (x), 1 (squared deviations), 2 (dy); `finish` false
/// sums this rank's batch into chanSum, true derives the pass's results
/// from the sums over the ranks. Then apply: kind 1 normalizes, 2 writes dx.
cudaError_t launchBatchNormSyncPass(const BatchNormParams &p, int pass,
                                    bool finish, bool training,
                                    cudaStream_t stream);
cudaError_t launchBatchNormSyncApply(int kind, const BatchNormParams &p,
                                     cudaStream_t stream);
cudaError_t launchBatchNormRunningStats(const BatchNormParams &p,
                                        const float *batchMean,
                                        const float *batchVarUnbiased,
                                        int64_t count, cudaStream_t stream);
cudaError_t launchGather(const GatherParams &p, DeviceError *error,
                         cudaStream_t stream);
cudaError_t launchScatterND(const ScatterNDParams &p, DeviceError *error,
                            cudaStream_t stream);
/// kind: 0 nll_loss, 1 nll_loss_grad, 2 softmax_cross_entropy_grad
/// (LossKind).
cudaError_t launchLoss(int kind, const LossParams &p, DeviceError *error,
                       cudaStream_t stream);
cudaError_t launchUnscale(const UnscaleParams &p, cudaStream_t stream);
cudaError_t launchAllReduceCopy(const AllReduceCopyParams &p,
                                cudaStream_t stream);
cudaError_t launchLossScaleUpdate(const LossScaleParams &p,
                                  cudaStream_t stream);
cudaError_t launchOptimizer(const OptimizerParams &p, cudaStream_t stream);

// NNKernels.cu
cudaError_t launchNorm(const NormParams &p, cudaStream_t stream);
cudaError_t launchLayerNormGrad(const LayerNormGradParams &p,
                                cudaStream_t stream);
cudaError_t launchAttention(const AttentionParams &p, cudaStream_t stream);
cudaError_t launchLrn(const LrnParams &p, cudaStream_t stream);
cudaError_t launchGemm(const GemmParams &p, cudaStream_t stream);
/// cudnn.rnn, direction p.dir: the folded bias into xw, the initial state,
/// the sequence lengths checked.
cudaError_t launchRnnPrep(const RnnParams &p, DeviceError *error,
                          cudaStream_t stream);
/// The gates of step p.t (phase: RnnParams).
cudaError_t launchRnnGates(const RnnParams &p, int phase, cudaStream_t stream);
/// kernel.lstm_bwd, direction p.dir, step p.t (stage: LstmBwdStage).
cudaError_t launchLstmBwd(const LstmBwdParams &p, int stage,
                          cudaStream_t stream);
cudaError_t launchTopk(const TopkParams &p, cudaStream_t stream);
cudaError_t launchCumsum(const ScanParams &p, cudaStream_t stream);
cudaError_t launchHardmax(const ScanParams &p, cudaStream_t stream);

// DataKernels.cu
cudaError_t launchTrilu(const TriluParams &p, cudaStream_t stream);
cudaError_t launchTile(const TileParams &p, cudaStream_t stream);
cudaError_t launchPad(const PadParams &p, cudaStream_t stream);
cudaError_t launchGatherElements(const ElementsParams &p, DeviceError *error,
                                 cudaStream_t stream);
cudaError_t launchGatherND(const GatherNDParams &p, DeviceError *error,
                           cudaStream_t stream);
/// The updates only: y already holds data.
cudaError_t launchScatterElements(const ElementsParams &p, DeviceError *error,
                                  cudaStream_t stream);
cudaError_t launchResize(const ResizeParams &p, cudaStream_t stream);

} // namespace mp::rt::cuda

#endif // MP_LIB_RUNTIME_CUDA_LAUNCH_H
