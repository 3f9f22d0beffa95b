//===- CudaPlanningTraining.cpp - losses, loss scaling, optimizers --------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. The losses and their gradients, the
// loss scaling calls and the optimizer steps (the CPU's LossBackward.cpp and
// Training.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>
#include <cmath>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

/// The loss attributes as the CPU reads them, into the kernel parameters.
Status readLossAttrs(const PlanCall &call, LossParams &p) {
  MP_TRY(o, cpu::lossOptionsOf(call));
  p.reduction = o.reduction == cpu::LossReduction::None  ? 0
                : o.reduction == cpu::LossReduction::Sum ? 1
                                                         : 2;
  p.hasIgnore = o.ignoreIndex.has_value();
  if (o.ignoreIndex)
    p.ignoreIndex = *o.ignoreIndex;
  return Status::ok();
}

} // namespace

Result<LossParams> planLoss(LossKind kind, const PlanCall &call,
                            const std::vector<TensorDesc> &ops,
                            const std::vector<TensorDesc> &res) {
  LossParams p;
  const TensorDesc *input, *target, *weight, *dloss = nullptr;
  if (kind == LossKind::NllLoss) {
    std::array<const TensorDesc *, 3> in{};
    if (Status s =
            bindDescs<3>(call, ops, "operands", cpu::kNllLossOperands, in);
        !s)
      return s;
    input = in[0];
    target = in[1];
    weight = in[2];
  } else {
    bool sce = kind == LossKind::SoftmaxCrossEntropyGrad;
    std::array<const TensorDesc *, 4> in{};
    if (Status s = bindDescs<4>(call, ops, "operands",
                                sce ? cpu::kSoftmaxCrossEntropyGradOperands
                                    : cpu::kNllLossGradOperands,
                                in);
        !s)
      return s;
    input = in[0];
    target = in[1];
    dloss = in[2];
    weight = in[3];
  }
  if (Status s = arity(ops, res, 0, SIZE_MAX, 1, 1); !s)
    return s;
  if (Status s = readLossAttrs(call, p); !s)
    return s;
  const TensorDesc &out = res[0];
  const char *op = kind == LossKind::NllLoss ? "nll_loss"
                   : kind == LossKind::NllLossGrad
                       ? "nll_loss_grad"
                       : "softmax_cross_entropy_grad";
  bool sce = kind == LossKind::SoftmaxCrossEntropyGrad;
  const char *inName = sce ? "scores" : "input";
  const char *tName = sce ? "labels" : "target";
  const char *wName = sce ? "weights" : "weight";
  const char *outName = kind == LossKind::NllLoss ? "loss"
                        : sce                     ? "dscores"
                                                  : "dinput";
  for (auto [name, v] :
       {std::pair<const char *, const TensorDesc *>{inName, input},
        {tName, target},
        {"dloss", dloss},
        {wName, weight},
        {outName, &out}})
    if (v)
      if (Status s = checkDesc(op, name, *v); !s)
        return s;
  // The CPU kernel's checks, on views of the descriptors.
  const TensorView inputView = viewOf(*input), targetView = viewOf(*target),
                   outView = viewOf(out);
  TensorView weightView, dlossView;
  if (weight)
    weightView = viewOf(*weight);
  if (dloss)
    dlossView = viewOf(*dloss);
  const TensorView *weightPtr = weight ? &weightView : nullptr;
  const cpu::LossReduction reduction =
      p.reduction == 0   ? cpu::LossReduction::None
      : p.reduction == 1 ? cpu::LossReduction::Sum
                         : cpu::LossReduction::Mean;
  Status checked =
      kind == LossKind::NllLoss
          ? cpu::checkNllLoss(inputView, targetView, weightPtr, outView,
                              reduction)
      : sce
          ? cpu::checkSoftmaxCrossEntropyGrad(inputView, targetView, dlossView,
                                              weightPtr, outView, reduction)
          : cpu::checkNllLossGrad(inputView, targetView, dlossView, weightPtr,
                                  outView, reduction);
  if (!checked)
    return checked;
  p.n = input->shape[0];
  p.c = input->shape[1];
  p.inner = product(input->shape, 2, input->shape.size());
  if (dloss) {
    p.dlossDtype = code(dloss->dtype);
    p.dloss = cptr(*dloss);
  }
  p.inDtype = code(input->dtype);
  p.targetDtype = code(target->dtype);
  p.weightDtype = weight ? code(weight->dtype) : 0;
  p.outDtype = code(out.dtype);
  p.input = cptr(*input);
  p.target = cptr(*target);
  p.weight = weight ? cptr(*weight) : nullptr;
  p.out = mptr(out);
  return p;
}

//===----------------------------------------------------------------------===//
// Loss scaling, optimizers
//===----------------------------------------------------------------------===//

Result<std::vector<UnscaleParams>>
planUnscale(const PlanCall &, const std::vector<TensorDesc> &ops,
            const std::vector<TensorDesc> &res) {
  // The CPU call's checks, on views of the descriptors.
  std::vector<TensorView> operands, results;
  for (const TensorDesc &d : ops)
    operands.push_back(viewOf(d));
  for (const TensorDesc &d : res)
    results.push_back(viewOf(d));
  if (Status s = cpu::checkUnscaleCheckFinite(operands, results); !s)
    return s;
  const size_t n = ops.size();
  const TensorDesc &scale = ops[0], &foundInf = res[0];
  std::vector<UnscaleParams> out;
  for (size_t i = 1; i < n; ++i) {
    const TensorDesc &g = ops[i], &u = res[i];
    UnscaleParams p;
    p.gDtype = code(g.dtype);
    p.n = g.numElements();
    p.scale = scale.ptr<const float>();
    p.g = cptr(g);
    p.u = u.ptr<float>();
    p.foundInf = foundInf.ptr<float>();
    out.push_back(p);
  }
  return out;
}

Result<LossScaleParams>
planLossScaleUpdate(const PlanCall &call, const std::vector<TensorDesc> &ops,
                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 2, 2); !s)
    return s;
  MP_TRY(config, cpu::lossScaleConfigOf(call));
  LossScaleParams p;
  p.growthFactor = config.growthFactor;
  p.backoffFactor = config.backoffFactor;
  p.growthInterval = config.growthInterval;
  const TensorDesc &scale = res[0], &tracker = res[1], &found = ops[0];
  if (overlapping(scale, tracker) || overlapping(scale, found) ||
      overlapping(tracker, found))
    return Status::error("scale, growth_tracker and found_inf must not "
                         "overlap");
  if (Status s = cpu::checkLossScaleUpdate(viewOf(scale), viewOf(tracker),
                                           viewOf(found), config);
      !s)
    return s;
  p.foundInf = found.ptr<const float>();
  p.scale = scale.ptr<float>();
  p.tracker = tracker.ptr<int64_t>();
  return p;
}

Result<OptimizerParams> planOptimizer(bool adam, const PlanCall &call,
                                      const std::vector<TensorDesc> &ops,
                                      const std::vector<TensorDesc> &res) {
  OptimizerParams p;
  p.kind = adam ? 1 : 0;
  std::array<const TensorDesc *, 2> in{};
  if (Status s =
          bindDescs<2>(call, ops, "operands", cpu::kOptimizerOperands, in);
      !s)
    return s;
  const TensorDesc *param, *buf1 = nullptr, *buf2 = nullptr, *step;
  // The CPU call's checks, on views of the descriptors.
  Views<2> vi(in);
  TensorView none;
  const TensorView &foundInf = vi[1] ? *vi[1] : none;
  if (adam) {
    if (Status s = arity(ops, res, 0, SIZE_MAX, 4, 4); !s)
      return s;
    MP_TRY(config, cpu::adamConfigOf(call));
    p.lr = config.lr;
    p.beta1 = config.beta1;
    p.beta2 = config.beta2;
    p.eps = config.eps;
    p.weightDecay = config.weightDecay;
    p.decoupled = config.decoupledWeightDecay;
    param = &res[0];
    buf1 = &res[1];
    buf2 = &res[2];
    step = &res[3];
    Views<4> vo({param, buf1, buf2, step});
    if (Status s = cpu::checkDisjoint({{"grad", vi[0]},
                                       {"found_inf", vi[1]},
                                       {"param", vo[0]},
                                       {"exp_avg", vo[1]},
                                       {"exp_avg_sq", vo[2]},
                                       {"step", vo[3]}});
        !s)
      return s;
    if (Status s = cpu::checkAdamStep(*vo[0], *vi[0], *vo[1], *vo[2], *vo[3],
                                      foundInf, config);
        !s)
      return s;
  } else {
    std::array<const TensorDesc *, 3> out{};
    if (Status s = bindDescs<3>(call, res, "results", cpu::kSgdResults, out);
        !s)
      return s;
    MP_TRY(config, cpu::sgdConfigOf(call, out[1] != nullptr));
    p.lr = config.lr;
    p.momentum = config.momentum;
    p.dampening = config.dampening;
    p.weightDecay = config.weightDecay;
    p.nesterov = config.nesterov;
    param = out[0];
    buf1 = out[1];
    step = out[2];
    Views<3> vo(out);
    if (Status s = cpu::checkDisjoint({{"grad", vi[0]},
                                       {"found_inf", vi[1]},
                                       {"param", vo[0]},
                                       {"momentum_buffer", vo[1]},
                                       {"step", vo[2]}});
        !s)
      return s;
    if (Status s = cpu::checkSgdStep(*vo[0], *vi[0], vo[1] ? *vo[1] : none,
                                     *vo[2], foundInf, config);
        !s)
      return s;
  }
  const TensorDesc &grad = *in[0];
  p.n = param->numElements();
  p.grad = grad.ptr<const float>();
  p.foundInf = in[1] ? in[1]->ptr<const float>() : nullptr;
  p.param = param->ptr<float>();
  p.buf1 = (buf1 && (adam || p.momentum != 0)) ? buf1->ptr<float>() : nullptr;
  p.buf2 = buf2 ? buf2->ptr<float>() : nullptr;
  p.step = step->ptr<int64_t>();
  return p;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

Result<AllReducePlan> planAllReduce(const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res) {
  MP_TRY(o, cpu::allReduceOptionsOf(call));
  std::vector<TensorView> opViews, resViews;
  for (const TensorDesc &d : ops)
    opViews.push_back(viewOf(d));
  for (const TensorDesc &d : res)
    resViews.push_back(viewOf(d));
  if (Status s = cpu::checkAllReduce(opViews, resViews); !s)
    return s;
  AllReducePlan p;
  p.options = o;
  const int32_t wire = static_cast<int32_t>(o.wire);
  for (size_t i = 0; i < ops.size(); ++i) {
    const int64_t n = ops[i].numElements();
    p.offset.push_back(p.total);
    AllReduceCopyParams pack;
    pack.srcDtype = static_cast<int32_t>(ops[i].dtype);
    pack.dstDtype = wire;
    pack.n = n;
    pack.src = ops[i].ptr<const void>();
    p.pack.push_back(pack);
    AllReduceCopyParams unpack;
    unpack.srcDtype = wire;
    unpack.dstDtype = static_cast<int32_t>(res[i].dtype);
    unpack.n = n;
    unpack.dst = res[i].ptr<void>();
    p.unpack.push_back(unpack);
    p.total += n;
  }
  p.stagingBytes = static_cast<uint64_t>(p.total) * byteSize(o.wire);
  return p;
}

} // namespace mp::rt::cuda
