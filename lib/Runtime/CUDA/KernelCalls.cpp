//===- KernelCalls.cpp - calls on the project's own CUDA kernels ----------===//
//
// kernel.* calls and the cudnn.* calls that run on own kernels (pooling,
// softmax: their ONNX semantics differ from cuDNN's in ways that matter:
// max-pool indices, ceil-mode and asymmetric windows, the first maximum for
// the gradient, a pool_bwd without y; bf16 softmax). Batch normalization is
// in BatchNormCalls.cpp. Each prepare
// function plans the call (CudaPlanning*.cpp) and keeps the kernel
// parameters; enqueue fills in the workspace pointers and launches.
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"

#include "mp/Runtime/CPU/Calls.h"

#include <cmath>

namespace mp::rt::cuda {

Status cudaStatus(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(what) + ": " + cudaGetErrorString(e));
}

namespace {

Status arity(const PrepareArgs &a, size_t ops, size_t res) {
  if (a.operands.size() != ops || a.results.size() != res)
    return Status::error("expects " + std::to_string(ops) + " operands and " +
                         std::to_string(res) + " results, got " +
                         std::to_string(a.operands.size()) + " and " +
                         std::to_string(a.results.size()));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Elementwise, cast, copy, transpose
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<PreparedCall>> prepareElementwise(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planElementwise(a.call, a.operands, a.results));
  if (p.compute == kComputeInt && p.op == kEwClip1) {
    // The bounds saturate to the dtype's range and truncate (the CPU's
    // convertValue of alpha / beta).
    DType t = a.operands[0].dtype;
    double lo = 0, hi = 0;
    // The range [lo, hi] of each integer dtype (i64: the doubles within it).
#define MP_RANGE(dtype, lower, upper)                                          \
  case DType::dtype:                                                           \
    lo = lower;                                                                \
    hi = upper;                                                                \
    break;
    switch (t) {
      MP_RANGE(I8, -128, 127)
      MP_RANGE(I16, -32768, 32767)
      MP_RANGE(I32, -2147483648.0, 2147483647.0)
      MP_RANGE(U8, 0, 255)
      MP_RANGE(U16, 0, 65535)
      MP_RANGE(U32, 0, 4294967295.0)
    default:
      lo = -9223372036854775808.0;
      hi = 9223372036854774784.0;
      break;
    }
#undef MP_RANGE
    auto sat = [&](double v) {
      if (!(v == v))
        return 0.0;
      v = std::trunc(v);
      return v < lo ? lo : (v > hi ? hi : v);
    };
    p.alpha = sat(p.alpha);
    p.beta = sat(p.beta);
  }
  return preparedCall<LaunchCall<EwParams, launchElementwise>>(
      p, "elementwise kernel");
}

Result<std::unique_ptr<PreparedCall>>
prepareFusedElementwise(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planFusedElementwise(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<FusedEwParams, launchFusedElementwise>>(
      p, "fused elementwise kernel");
}

struct CastCall : PreparedCall {
  CastParams p;
  explicit CastCall(const CastParams &p) : p(p) {}
  Status enqueue(const RunContext &ctx) override {
    if (p.in == p.out)
      return Status::ok();
    return cudaStatus(launchCast(p, ctx.stream), "cast kernel");
  }
};

Result<std::unique_ptr<PreparedCall>> prepareCast(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(p, planCast(a.call, a.operands[0], a.results[0]));
  return preparedCall<CastCall>(p);
}

/// kernel.copy: a device-to-device copy; partly overlapping buffers go
/// through the workspace (the CPU's memmove).
struct CopyCall : PreparedCall {
  const void *src;
  void *dst;
  uint64_t bytes;
  bool staged;
  CopyCall(const void *src, void *dst, uint64_t bytes, bool staged)
      : src(src), dst(dst), bytes(bytes), staged(staged) {}
  uint64_t workspaceBytes() const override { return staged ? bytes : 0; }
  Status enqueue(const RunContext &ctx) override {
    if (!bytes)
      return Status::ok();
    if (staged) {
      MP_CUDA_TRY(cudaMemcpyAsync(ctx.workspace, src, bytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream),
                  "copy");
      return cudaStatus(cudaMemcpyAsync(dst, ctx.workspace, bytes,
                                        cudaMemcpyDeviceToDevice, ctx.stream),
                        "copy");
    }
    return cudaStatus(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream),
        "copy");
  }
};

Result<std::unique_ptr<PreparedCall>> prepareCopy(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(bytes, planCopy(a.operands[0], a.results[0]));
  bool staged = bytes && overlapping(a.operands[0], a.results[0]);
  return preparedCall<CopyCall>(a.operands[0].ptr<const void>(),
                                a.results[0].ptr<void>(), bytes, staged);
}

Result<std::unique_ptr<PreparedCall>> prepareTranspose(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(perm, cpu::intListAttr(a.call, "perm"));
  MP_TRY_PREPARE(p, planTranspose(a.operands[0], a.results[0], perm));
  return preparedCall<LaunchCall<GatherCopyParams, launchGatherCopy>>(
      p, "transpose kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareBroadcast(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(p, planBroadcast(a.operands[0], a.results[0]));
  return preparedCall<LaunchCall<EwParams, launchElementwise>>(
      p, "elementwise kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareSlice(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(p, planSlice(a.call, a.operands[0], a.results[0]));
  return preparedCall<LaunchCall<GatherCopyParams, launchGatherCopy>>(
      p, "transpose kernel");
}

struct ConcatCall : PreparedCall {
  std::vector<GatherCopyParams> parts;
  explicit ConcatCall(std::vector<GatherCopyParams> parts)
      : parts(std::move(parts)) {}
  Status enqueue(const RunContext &ctx) override {
    for (const GatherCopyParams &p : parts)
      MP_CUDA_TRY(launchGatherCopy(p, ctx.stream), "concat kernel");
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> prepareConcat(const PrepareArgs &a) {
  if (a.operands.empty() || a.results.size() != 1)
    return Status::error("expects 1 or more operands and 1 result, got " +
                         std::to_string(a.operands.size()) + " and " +
                         std::to_string(a.results.size()));
  MP_TRY_PREPARE(p, planConcat(a.call, a.operands, a.results[0]));
  return preparedCall<ConcatCall>(std::move(p));
}

//===----------------------------------------------------------------------===//
// Reduce, softmax
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<PreparedCall>> prepareReduce(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(p, planReduce(a.call, a.operands[0], a.results[0]));
  return preparedCall<LaunchCall<ReduceParams, launchReduce>>(p,
                                                              "reduce kernel");
}

Result<std::unique_ptr<PreparedCall>>
prepareScaledSoftmax(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planScaledSoftmax(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<SoftmaxParams, launchSoftmax>>(
      p, "softmax kernel (scaled, masked)");
}

Result<std::unique_ptr<PreparedCall>> prepareSoftmax(const PrepareArgs &a) {
  if (Status s = arity(a, 1, 1); !s)
    return s;
  MP_TRY_PREPARE(p, planSoftmax(a.call, a.operands[0], a.results[0]));
  return preparedCall<LaunchCall<SoftmaxParams, launchSoftmax>>(
      p, "softmax kernel");
}

//===----------------------------------------------------------------------===//
// Pooling, batch normalization
//===----------------------------------------------------------------------===//

struct PoolCall : PreparedCall {
  PoolPlan plan;
  uint64_t dxElements;
  PoolCall(const PoolPlan &plan, uint64_t dxElements)
      : plan(plan), dxElements(dxElements) {}
  uint64_t workspaceBytes() const override { return plan.accBytes; }
  Status enqueue(const RunContext &ctx) override {
    if (!plan.backward)
      return cudaStatus(launchPool(plan.params, ctx.stream), "pool kernel");
    PoolParams p = plan.params;
    bool f64 = plan.accType == DType::F64;
    size_t accBytes = dxElements * (f64 ? 8 : 4);
    p.acc = plan.accBytes ? static_cast<void *>(ctx.workspace) : p.y;
    if (accBytes)
      MP_CUDA_TRY(cudaMemsetAsync(p.acc, 0, accBytes, ctx.stream),
                  "pool_bwd: clearing dx");
    MP_CUDA_TRY(launchPoolBackward(p, f64, ctx.stream), "pool_bwd kernel");
    if (plan.accBytes) {
      CastParams c = castOf(plan.accType, p.acc, static_cast<DType>(p.dtype),
                            p.y, static_cast<int64_t>(dxElements));
      MP_CUDA_TRY(launchCast(c, ctx.stream), "pool_bwd: rounding dx");
    }
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> preparePool(const PrepareArgs &a,
                                                  bool backward) {
  MP_TRY_PREPARE(plan, planPool(backward, a.call, a.operands, a.results));
  uint64_t dx = backward ? a.results[0].numElements() : 0;
  return preparedCall<PoolCall>(plan, dx);
}
Result<std::unique_ptr<PreparedCall>> preparePoolFwd(const PrepareArgs &a) {
  return preparePool(a, false);
}
Result<std::unique_ptr<PreparedCall>> preparePoolBwd(const PrepareArgs &a) {
  return preparePool(a, true);
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<PreparedCall>> prepareGather(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planGather(a.call, a.operands, a.results));
  return preparedCall<CheckedLaunchCall<GatherParams, launchGather>>(
      p, "gather kernel");
}

struct ScatterNDCall : PreparedCall {
  ScatterNDPlan plan;
  const void *data;
  explicit ScatterNDCall(const ScatterNDPlan &plan, const void *data)
      : plan(plan), data(data) {}
  Status enqueue(const RunContext &ctx) override {
    if (plan.copyBytes)
      MP_CUDA_TRY(cudaMemcpyAsync(plan.params.out, data, plan.copyBytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream),
                  "scatter_nd: copying data");
    return cudaStatus(launchScatterND(plan.params, ctx.error, ctx.stream),
                      "scatter_nd kernel");
  }
};

Result<std::unique_ptr<PreparedCall>> prepareScatterND(const PrepareArgs &a) {
  MP_TRY_PREPARE(plan, planScatterND(a.call, a.operands, a.results));
  return preparedCall<ScatterNDCall>(plan, a.operands[0].ptr<const void>());
}

//===----------------------------------------------------------------------===//
// Losses and training
//===----------------------------------------------------------------------===//

struct LossCall : PreparedCall {
  LossParams p;
  LossKind kind;
  LossCall(const LossParams &p, LossKind kind) : p(p), kind(kind) {}
  uint64_t workspaceBytes() const override {
    return kind == LossKind::NllLoss ? 0 : sizeof(double);
  }
  Status enqueue(const RunContext &ctx) override {
    LossParams q = p;
    q.scratch = reinterpret_cast<double *>(ctx.workspace);
    return cudaStatus(
        launchLoss(static_cast<int>(kind), q, ctx.error, ctx.stream),
        "loss kernel");
  }
};

Result<std::unique_ptr<PreparedCall>> prepareLoss(const PrepareArgs &a,
                                                  LossKind kind) {
  MP_TRY_PREPARE(p, planLoss(kind, a.call, a.operands, a.results));
  return preparedCall<LossCall>(p, kind);
}
Result<std::unique_ptr<PreparedCall>> prepareNll(const PrepareArgs &a) {
  return prepareLoss(a, LossKind::NllLoss);
}
Result<std::unique_ptr<PreparedCall>> prepareNllGrad(const PrepareArgs &a) {
  return prepareLoss(a, LossKind::NllLossGrad);
}
Result<std::unique_ptr<PreparedCall>> prepareSceGrad(const PrepareArgs &a) {
  return prepareLoss(a, LossKind::SoftmaxCrossEntropyGrad);
}

struct UnscaleCall : PreparedCall {
  std::vector<UnscaleParams> grads;
  explicit UnscaleCall(std::vector<UnscaleParams> g) : grads(std::move(g)) {}
  Status enqueue(const RunContext &ctx) override {
    MP_CUDA_TRY(
        cudaMemsetAsync(grads[0].foundInf, 0, sizeof(float), ctx.stream),
        "unscale_check_finite: clearing found_inf");
    for (const UnscaleParams &g : grads)
      MP_CUDA_TRY(launchUnscale(g, ctx.stream), "unscale kernel");
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> prepareUnscale(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planUnscale(a.call, a.operands, a.results));
  return preparedCall<UnscaleCall>(std::move(p));
}

Result<std::unique_ptr<PreparedCall>> prepareLossScale(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planLossScaleUpdate(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<LossScaleParams, launchLossScaleUpdate>>(
      p, "loss_scale_update kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareSgd(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planOptimizer(false, a.call, a.operands, a.results));
  return preparedCall<LaunchCall<OptimizerParams, launchOptimizer>>(
      p, "optimizer kernel");
}
Result<std::unique_ptr<PreparedCall>> prepareAdam(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planOptimizer(true, a.call, a.operands, a.results));
  return preparedCall<LaunchCall<OptimizerParams, launchOptimizer>>(
      p, "optimizer kernel");
}

} // namespace

void addKernelCalls(std::map<std::string, PrepareFn> &t) {
  MP_ADD_PREPARE("kernel.elementwise", prepareElementwise);
  MP_ADD_PREPARE("kernel.fused_elementwise", prepareFusedElementwise);
  MP_ADD_PREPARE("kernel.cast", prepareCast);
  MP_ADD_PREPARE("kernel.copy", prepareCopy);
  MP_ADD_PREPARE("kernel.transpose", prepareTranspose);
  MP_ADD_PREPARE("kernel.broadcast", prepareBroadcast);
  MP_ADD_PREPARE("kernel.slice", prepareSlice);
  MP_ADD_PREPARE("kernel.concat", prepareConcat);
  MP_ADD_PREPARE("kernel.reduce", prepareReduce);
  MP_ADD_PREPARE("cudnn.softmax", prepareSoftmax);
  MP_ADD_PREPARE("kernel.scaled_softmax", prepareScaledSoftmax);
  MP_ADD_PREPARE("cudnn.pool", preparePoolFwd);
  MP_ADD_PREPARE("cudnn.pool_bwd", preparePoolBwd);
  MP_ADD_PREPARE("kernel.gather", prepareGather);
  MP_ADD_PREPARE("kernel.scatter_nd", prepareScatterND);
  MP_ADD_PREPARE("kernel.nll_loss", prepareNll);
  MP_ADD_PREPARE("kernel.nll_loss_grad", prepareNllGrad);
  MP_ADD_PREPARE("kernel.softmax_cross_entropy_grad", prepareSceGrad);
  MP_ADD_PREPARE("kernel.unscale_check_finite", prepareUnscale);
  MP_ADD_PREPARE("kernel.loss_scale_update", prepareLossScale);
  MP_ADD_PREPARE("kernel.sgd_step", prepareSgd);
  MP_ADD_PREPARE("kernel.adam_step", prepareAdam);
}

const std::map<std::string, PrepareFn> &cudaCallTable() {
  static const std::map<std::string, PrepareFn> table = [] {
    std::map<std::string, PrepareFn> t;
    addKernelCalls(t);
    addBatchNormCalls(t);
    addLibraryCalls(t);
    addNNCalls(t);
    addDataCalls(t);
    addCollectiveCalls(t);
    return t;
  }();
  return table;
}

} // namespace mp::rt::cuda
