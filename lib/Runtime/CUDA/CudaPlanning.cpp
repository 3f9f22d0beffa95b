//===- CudaPlanning.cpp - host-side decisions of the CUDA backend ---------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. The small helpers of the planners and
// the dispatcher: the call table of the GPU, planCall and checkPlanForCuda.
// The planners are in CudaPlanning*.cpp, by family as the CPU kernels'
// files; they read attributes with the CPU calls' functions and run the CPU
// kernels' own checks (the cpu::check* functions) on views of the
// descriptors where the CPU states them apart, so that a plan the CPU
// accepts is accepted here, with the same words for what it refuses, and
// what the GPU does not implement is refused by name. Nothing here needs
// CUDA.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"
#include "mp/Runtime/DynamicShapes.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

bool overlapping(const TensorDesc &a, const TensorDesc &b) {
  uint64_t an = a.byteCount(), bn = b.byteCount();
  if (!an || !bn)
    return false;
  return a.addr < b.addr + bn && b.addr < a.addr + an;
}

LaunchConfig launchFor(int64_t work, uint32_t threads, uint32_t maxBlocks) {
  LaunchConfig c;
  c.threads = threads ? threads : 256;
  int64_t blocks = work <= 0 ? 1 : (work + c.threads - 1) / c.threads;
  c.blocks = static_cast<uint32_t>(
      std::clamp<int64_t>(blocks, 1, std::max<uint32_t>(maxBlocks, 1)));
  return c;
}

uint64_t WorkspaceLayout::add(uint64_t bytes) {
  uint64_t offset = (total_ + 255) / 256 * 256;
  total_ = offset + bytes;
  return offset;
}

uint32_t addressAlignment(uint64_t addr) {
  uint32_t a = 256;
  while (a > 1 && addr % a)
    a /= 2;
  return a;
}

//===----------------------------------------------------------------------===//
// The call table of the GPU
//===----------------------------------------------------------------------===//

namespace {

/// One entry of topicPlanners(): the call kind `kind` is planned by
/// `planner`.
#define MP_TOPIC_PLANNER(kind, planner) {(kind), statusOf<planner>}

/// The planners of the files by topic: CudaPlanningNN.cpp, then
/// CudaPlanningData.cpp.
const std::vector<TopicPlanner> &topicPlanners() {
  static const std::vector<TopicPlanner> planners = {
      MP_TOPIC_PLANNER("kernel.attention", planAttention),
      MP_TOPIC_PLANNER("kernel.layer_norm", planLayerNorm),
      MP_TOPIC_PLANNER("kernel.layer_norm_grad", planLayerNormGrad),
      MP_TOPIC_PLANNER("kernel.rms_norm", planRmsNorm),
      MP_TOPIC_PLANNER("kernel.group_norm", planGroupNorm),
      MP_TOPIC_PLANNER("kernel.scaled_softmax", planScaledSoftmax),
      MP_TOPIC_PLANNER("kernel.instance_norm", planInstanceNorm),
      MP_TOPIC_PLANNER("cudnn.lrn", planLrn),
      MP_TOPIC_PLANNER("cudnn.rnn", planRnn),
      MP_TOPIC_PLANNER("kernel.lstm_bwd", planLstmBwd),
      MP_TOPIC_PLANNER("kernel.topk", planTopk),
      MP_TOPIC_PLANNER("kernel.cumsum", planCumsum),
      MP_TOPIC_PLANNER("kernel.hardmax", planHardmax),
      MP_TOPIC_PLANNER("kernel.trilu", planTrilu),
      MP_TOPIC_PLANNER("kernel.tile", planTile),
      MP_TOPIC_PLANNER("kernel.pad", planPad),
      MP_TOPIC_PLANNER("kernel.gather_elements", planGatherElements),
      MP_TOPIC_PLANNER("kernel.gather_nd", planGatherND),
      MP_TOPIC_PLANNER("kernel.scatter_elements", planScatterElements),
      MP_TOPIC_PLANNER("kernel.resize", planResize),
  };
  return planners;
}

#undef MP_TOPIC_PLANNER

} // namespace

const std::vector<std::string> &cudaCallKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k = {
        "cublaslt.matmul",
        "cudnn.batch_norm_bwd",
        "cudnn.batch_norm_inference",
        "cudnn.batch_norm_training",
        "cudnn.conv_bwd_data",
        "cudnn.conv_bwd_filter",
        "cudnn.conv_fwd",
        "cudnn.pool",
        "cudnn.pool_bwd",
        "cudnn.softmax",
        "kernel.adam_step",
        "kernel.broadcast",
        "kernel.cast",
        "kernel.concat",
        "kernel.copy",
        "kernel.elementwise",
        "kernel.fused_elementwise",
        "kernel.gather",
        "kernel.loss_scale_update",
        "kernel.nll_loss",
        "kernel.nll_loss_grad",
        "kernel.reduce",
        "kernel.scatter_nd",
        "kernel.sgd_step",
        "kernel.slice",
        "kernel.softmax_cross_entropy_grad",
        "kernel.transpose",
        "kernel.unscale_check_finite",
        "comm.all_reduce",
    };
    for (const TopicPlanner &t : topicPlanners())
      k.push_back(t.kind);
    std::sort(k.begin(), k.end());
    return k;
  }();
  return kinds;
}

bool isCudaCallKind(const std::string &kind) {
  const auto &k = cudaCallKinds();
  return std::binary_search(k.begin(), k.end(), kind);
}

Status planCall(const PlanCall &call, const std::vector<TensorDesc> &ops,
                const std::vector<TensorDesc> &res) {
  const std::string &k = call.kind;
  auto st = [](auto &&r) -> Status {
    if (!r)
      return r.status();
    return Status::ok();
  };
  if (k == "cublaslt.matmul")
    return st(planMatmul(call, ops, res));
  if (k == "cudnn.conv_fwd")
    return st(planConv(ConvKind::Forward, call, ops, res));
  if (k == "cudnn.conv_bwd_data")
    return st(planConv(ConvKind::BackwardData, call, ops, res));
  if (k == "cudnn.conv_bwd_filter")
    return st(planConv(ConvKind::BackwardFilter, call, ops, res));
  if (k == "cudnn.pool")
    return st(planPool(false, call, ops, res));
  if (k == "cudnn.pool_bwd")
    return st(planPool(true, call, ops, res));
  if (k == "cudnn.batch_norm_inference")
    return st(planBatchNorm(BatchNormKind::Inference, call, ops, res));
  if (k == "cudnn.batch_norm_training")
    return st(planBatchNorm(BatchNormKind::Training, call, ops, res));
  if (k == "cudnn.batch_norm_bwd")
    return st(planBatchNorm(BatchNormKind::Backward, call, ops, res));
  if (k == "cudnn.softmax") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    return st(planSoftmax(call, ops[0], res[0]));
  }
  if (k == "kernel.elementwise")
    return st(planElementwise(call, ops, res));
  if (k == "kernel.fused_elementwise")
    return st(planFusedElementwise(call, ops, res));
  if (k == "kernel.cast" || k == "kernel.copy" || k == "kernel.transpose" ||
      k == "kernel.reduce") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    if (k == "kernel.cast")
      return st(planCast(call, ops[0], res[0]));
    if (k == "kernel.copy")
      return st(planCopy(ops[0], res[0]));
    if (k == "kernel.reduce")
      return st(planReduce(call, ops[0], res[0]));
    Result<std::vector<int64_t>> perm = intListAttr(call, "perm");
    if (!perm)
      return perm.status();
    return st(planTranspose(ops[0], res[0], *perm));
  }
  if (k == "kernel.broadcast" || k == "kernel.slice") {
    if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
      return s;
    return k == "kernel.broadcast" ? st(planBroadcast(ops[0], res[0]))
                                   : st(planSlice(call, ops[0], res[0]));
  }
  if (k == "kernel.concat") {
    if (Status s = arity(ops, res, 1, SIZE_MAX, 1, 1); !s)
      return s;
    return st(planConcat(call, ops, res[0]));
  }
  if (k == "kernel.gather")
    return st(planGather(call, ops, res));
  if (k == "kernel.scatter_nd")
    return st(planScatterND(call, ops, res));
  if (k == "kernel.nll_loss")
    return st(planLoss(LossKind::NllLoss, call, ops, res));
  if (k == "kernel.nll_loss_grad")
    return st(planLoss(LossKind::NllLossGrad, call, ops, res));
  if (k == "kernel.softmax_cross_entropy_grad")
    return st(planLoss(LossKind::SoftmaxCrossEntropyGrad, call, ops, res));
  if (k == "kernel.unscale_check_finite")
    return st(planUnscale(call, ops, res));
  if (k == "comm.all_reduce")
    return st(planAllReduce(call, ops, res));
  if (k == "kernel.loss_scale_update")
    return st(planLossScaleUpdate(call, ops, res));
  if (k == "kernel.sgd_step")
    return st(planOptimizer(false, call, ops, res));
  if (k == "kernel.adam_step")
    return st(planOptimizer(true, call, ops, res));
  for (const TopicPlanner &t : topicPlanners())
    if (k == t.kind)
      return t.plan(call, ops, res);
  return Status::error("no CUDA implementation of '" + k + "'");
}

Status checkDynamicPlanForCuda(const Plan &plan, const std::string &name) {
  if (!plan.isDynamic())
    return Status::ok();
  return Status::error(
      name + ": a dynamic-shape plan (" + describeSymbols(plan.symbols) +
      ") runs on the CPU backend; the CUDA backend runs static plans: "
      "specialize it for the sizes to run (rt::specializePlan) or compile "
      "with sizes instead of ranges");
}

Status checkPlanForCuda(const Plan &plan, const std::string &name) {
  if (Status s = validatePlan(plan, name); !s)
    return s;
  if (Status s = checkDynamicPlanForCuda(plan, name); !s)
    return s;
  std::vector<std::string> missing;
  for (size_t i = 0; i < plan.calls.size(); ++i)
    if (!isCudaCallKind(plan.calls[i].kind))
      missing.push_back(plan.calls[i].describe(i));
  if (!missing.empty()) {
    std::string list;
    for (const std::string &m : missing)
      list += (list.empty() ? "" : ", ") + m;
    return Status::error(name + ": the CUDA backend does not implement " +
                         std::to_string(missing.size()) + " call" +
                         (missing.size() == 1 ? "" : "s") + ": " + list);
  }
  // Made-up addresses: the arena at 1 << 40, every weight and state at its
  // own 1 << 36 aligned range above it (plans are far smaller).
  const uint64_t arenaBase = uint64_t(1) << 40;
  auto descOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    TensorDesc d{b.dtype, b.shape, 0};
    if (b.storage == BufferStorage::Arena)
      d.addr = arenaBase + b.offset;
    else
      d.addr = arenaBase * 2 + (uint64_t(b.id) << 36);
    return d;
  };
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    std::vector<TensorDesc> ops, res;
    for (uint32_t id : call.operands)
      ops.push_back(descOf(id));
    for (uint32_t id : call.results)
      res.push_back(descOf(id));
    if (Status s = planCall(call, ops, res); !s)
      return Status::error(name + ": " + call.describe(i) + ": " + s.message());
  }
  return Status::ok();
}

} // namespace mp::rt::cuda
