//===- TrainingCalls.cpp - training plan calls on the CPU -----------------===//
//
// The backward calls cudnn.conv_bwd_filter, cudnn.pool_bwd,
// cudnn.batch_norm_bwd, kernel.softmax_cross_entropy_grad,
// kernel.nll_loss_grad and kernel.lstm_bwd on the kernels of
// mp/Runtime/CPU/BackwardKernels.h, and the loss-scaling and optimizer calls
// kernel.unscale_check_finite, kernel.loss_scale_update, kernel.sgd_step and
// kernel.adam_step on those of mp/Runtime/CPU/TrainingKernels.h
// (docs/plan-format.md, "Training calls").
//
// Buffers that a call updates in place (parameters, optimizer state, the
// loss scale and its counters) are listed among its results only: the
// kernel reads their current contents and overwrites them.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/CPU/TrainingKernels.h"
#include "mp/Runtime/Half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace mp::rt::cpu {

namespace {

std::string dt(DType t) { return std::string(dtypeName(t)); }

/// "[2, 3, 4]".
std::string shapeText(const Shape &shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

/// An error unless every dimension of v is >= 0 and v has data when it has
/// elements.
Status checkDense(const std::string &name, const TensorView &v) {
  for (int64_t d : v.shape)
    if (d < 0)
      return Status::error(name + " has a negative dimension " +
                           shapeText(v.shape));
  if (v.numElements() > 0 && !v.data)
    return Status::error(name + " has no data");
  return Status::ok();
}

/// True when the bytes of a and b overlap.
bool overlapping(const TensorView &a, const TensorView &b) {
  if (!a.data || !b.data || !a.byteCount() || !b.byteCount())
    return false;
  auto pa = reinterpret_cast<uintptr_t>(a.data),
       pb = reinterpret_cast<uintptr_t>(b.data);
  return pa < pb + b.byteCount() && pb < pa + a.byteCount();
}

/// `pads` (begins, then ends, for `spatial` dims; may be left out: all 0),
/// `strides` and `dilations` (may be left out: all 1).
Status readWindowAttrs(const PlanCall &call, size_t spatial,
                       std::vector<int64_t> &padsBegin,
                       std::vector<int64_t> &padsEnd,
                       std::vector<int64_t> &strides,
                       std::vector<int64_t> &dilations) {
  MP_RT_TRY_ASSIGN(pads, intListAttr(call, "pads", {}));
  if (!pads.empty()) {
    if (pads.size() != 2 * spatial)
      return Status::error(
          "attribute 'pads' must have " + std::to_string(2 * spatial) +
          " values (begins, then ends, for " + std::to_string(spatial) +
          " spatial dims), got " + std::to_string(pads.size()));
    padsBegin.assign(pads.begin(), pads.begin() + spatial);
    padsEnd.assign(pads.begin() + spatial, pads.end());
  }
  MP_RT_TRY_ASSIGN(s, intListAttr(call, "strides", {}));
  MP_RT_TRY_ASSIGN(d, intListAttr(call, "dilations", {}));
  strides = std::move(s);
  dilations = std::move(d);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// cudnn.conv_bwd_filter: x, dy -> dw
//===----------------------------------------------------------------------===//

} // namespace

Result<ConvOptions> convBackwardOptionsOf(const PlanCall &call,
                                          size_t spatial) {
  ConvOptions o;
  if (Status s = readWindowAttrs(call, spatial, o.padsBegin, o.padsEnd,
                                 o.strides, o.dilations);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(groups, intAttr(call, "groups", 1));
  o.groups = groups;
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  o.layout = channelsLast ? Layout::NHWC : Layout::NCHW;
  return o;
}

namespace {

Status convBwdFilterCall(const CallArgs &args) {
  if (Status s = checkArity(args, 2, 2, 1, 1); !s)
    return s;
  const PlanCall &call = args.call;
  const TensorView &x = args.operands[0];
  MP_RT_TRY_ASSIGN(spatial, spatialRank(x, "x"));
  MP_RT_TRY_ASSIGN(o, convBackwardOptionsOf(call, spatial));
  if (Status s = checkComputeType(call, x.dtype, /*required=*/false); !s)
    return s;
  if (o.layout == Layout::NCHW)
    return convBackwardFilter(x, args.operands[1], args.results[0], o);
  o.layout = Layout::NCHW; // the kernel runs on channels-first copies
  // x, dy [N, spatial..., C] and dw [K, spatial..., C/groups], through the
  // channels-first kernel.
  const TensorView &dw = args.results[0];
  if (args.operands[1].shape.size() != x.shape.size() ||
      dw.shape.size() != x.shape.size())
    return Status::error("x, dy and dw must have the same rank");
  HostTensor xFirst = channelsFirstCopy(x);
  HostTensor dyFirst = channelsFirstCopy(args.operands[1]);
  HostTensor dwFirst = channelsFirstCopy(dw); // its shape; overwritten
  if (Status s = convBackwardFilter(xFirst.view(), dyFirst.view(),
                                    dwFirst.view(), o);
      !s)
    return s;
  return writeChannelsLast(dwFirst.view(), dw);
}

//===----------------------------------------------------------------------===//
// cudnn.pool_bwd: x, dy -> dx
//===----------------------------------------------------------------------===//

Status poolBwdCall(const CallArgs &args) {
  if (Status s = checkArity(args, 2, 2, 1, 1); !s)
    return s;
  const PlanCall &call = args.call;
  const TensorView &x = args.operands[0];
  MP_RT_TRY_ASSIGN(spatial, spatialRank(x, "x"));
  MP_RT_TRY_ASSIGN(o, poolBackwardOptionsOf(call, spatial));
  return poolBackward(x, args.operands[1], args.results[0], o);
}

//===----------------------------------------------------------------------===//
// cudnn.batch_norm_bwd: x, scale, dy -> dx, dscale, dbias
//===----------------------------------------------------------------------===//

Status batchNormBwdCall(const CallArgs &args) {
  if (Status s = checkArity(args, 3, 3, 3, 3); !s)
    return s;
  MP_RT_TRY_ASSIGN(o, batchNormOptionsOf(args.call));
  if (args.call.attr("sync_ranks"))
    o.syncRanks = args.communicator;
  const std::vector<TensorView> &in = args.operands;
  const std::vector<TensorView> &out = args.results;
  return batchNormBackward(in[0], in[1], in[2], out[0], out[1], out[2], o);
}

//===----------------------------------------------------------------------===//
// kernel.layer_norm_grad: dy, x, scale, mean, inv_std_dev -> dx, dscale,
//   dbias?
//===----------------------------------------------------------------------===//

Status layerNormGradCall(const CallArgs &args) {
  std::array<const TensorView *, 5> in;
  std::array<const TensorView *, 3> out;
  if (Status s = bindCallBuffers(
          args.call, args.operands,
          {{{"dy", false},
            {"x", false},
            {"scale", false},
            {"mean", false},
            {"inv_std_dev", false}}},
          in, args.results,
          {{{"dx", false}, {"dscale", false}, {"dbias", true}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(args.call, "axis", -1));
  return layerNormGrad(*in[0], *in[1], *in[2], *in[3], *in[4], *out[0], *out[1],
                       out[2], axis);
}

//===----------------------------------------------------------------------===//
// kernel.softmax_cross_entropy_grad: scores, labels, dloss, weights? ->
//   dscores
// kernel.nll_loss_grad: input, target, dloss, weight? -> dinput
//===----------------------------------------------------------------------===//

/// Both loss gradients: three operands and an optional weight (`operands`
/// names them), one result, the loss attributes, then the kernel.
using LossGradFn = Status (*)(const TensorView &, const TensorView &,
                              const TensorView &, const TensorView *,
                              const TensorView &, LossReduction,
                              std::optional<int64_t>);
Status lossGradCall(const CallArgs &args,
                    const std::array<BufferSpec, 4> &operands,
                    LossGradFn kernel) {
  std::array<const TensorView *, 4> in;
  if (Status s =
          bindBuffers<4>(args.call, args.operands, "operands", operands, in);
      !s)
    return s;
  if (Status s = checkArity(args, 0, SIZE_MAX, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(o, lossOptionsOf(args.call));
  return kernel(*in[0], *in[1], *in[2], in[3], args.results[0], o.reduction,
                o.ignoreIndex);
}

Status softmaxCrossEntropyGradCall(const CallArgs &args) {
  return lossGradCall(args, kSoftmaxCrossEntropyGradOperands,
                      softmaxCrossEntropyGrad);
}

Status nllLossGradCall(const CallArgs &args) {
  return lossGradCall(args, kNllLossGradOperands, nllLossGrad);
}

//===----------------------------------------------------------------------===//
// kernel.lstm_bwd: x, w, r, b?, initial_h?, initial_c?, dy?, dy_h?, dy_c? ->
//   dx, dw, dr, db?, dinitial_h?, dinitial_c?
//===----------------------------------------------------------------------===//

/// An error when the call asks for an LSTM the backward does not handle:
/// another mode, non-default activations, clip, input_forget, layout 1,
/// sequence lengths or peepholes.
Status checkPlainLstm(const PlanCall &call, size_t dirs) {
  MP_RT_TRY_ASSIGN(mode, stringAttr(call, "mode", "lstm"));
  if (mode != "lstm")
    return Status::error("attribute 'mode' must be lstm, got '" + mode + "'");
  MP_RT_TRY_ASSIGN(names, stringAttr(call, "activations", ""));
  MP_RT_TRY_ASSIGN(alphas, floatListAttr(call, "activation_alpha", {}));
  MP_RT_TRY_ASSIGN(betas, floatListAttr(call, "activation_beta", {}));
  MP_RT_TRY_ASSIGN(
      acts, parseRnnActivations(RnnMode::Lstm, dirs, names, alphas, betas));
  for (size_t i = 0; i < acts.size(); ++i) {
    RnnActivationKind expected =
        i % 3 == 0 ? RnnActivationKind::Sigmoid : RnnActivationKind::Tanh;
    if (acts[i].kind != expected)
      return Status::error("attribute 'activations' ('" + names +
                           "'): only the default Sigmoid, Tanh, Tanh are "
                           "supported by the LSTM backward");
  }
  if (call.attr("clip"))
    return Status::error("attribute 'clip' is not supported by the LSTM "
                         "backward");
  MP_RT_TRY_ASSIGN(inputForget, boolAttr(call, "input_forget", false));
  if (inputForget)
    return Status::error("attribute 'input_forget' = 1 is not supported by "
                         "the LSTM backward");
  MP_RT_TRY_ASSIGN(layout, intAttr(call, "layout", 0));
  if (layout != 0)
    return Status::error("attribute 'layout' must be 0, got " +
                         std::to_string(layout));
  for (const char *name : {"sequence_lens", "p"})
    if (call.attr("has_" + std::string(name))) {
      MP_RT_TRY_ASSIGN(has, hasBuffer(call, name));
      if (has)
        return Status::error(std::string(name) +
                             " is not supported by the LSTM backward");
    }
  return Status::ok();
}

Status lstmBwdCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 9> in;
  std::array<const TensorView *, 6> out;
  if (Status s = bindCallBuffers(call, args.operands, kLstmBwdOperands, in,
                                 args.results, kLstmBwdResults, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(o, lstmBackwardOptionsOf(call));
  return lstmBackward(*in[0], *in[1], *in[2], in[3], in[4], in[5], in[6], in[7],
                      in[8], *out[0], *out[1], *out[2], out[3], out[4], out[5],
                      o);
}

//===----------------------------------------------------------------------===//
// kernel.unscale_check_finite: scale, g_1..g_n -> found_inf, u_1..u_n
//===----------------------------------------------------------------------===//

Status unscaleCheckFiniteCall(const CallArgs &args) {
  // Everything is checked before anything is written.
  if (Status s = checkUnscaleCheckFinite(args.operands, args.results); !s)
    return s;
  const size_t n = args.operands.size();
  const TensorView &scale = args.operands[0];
  const TensorView &foundInf = args.results[0];
  float inv = 0.0f;
  TensorView invView{DType::F32, {1}, &inv};
  if (Status s = inverseScale(scale, invView); !s)
    return s;
  *foundInf.as<float>() = 0.0f;
  for (size_t i = 1; i < n; ++i) {
    const TensorView &g = args.operands[i], &u = args.results[i];
    const size_t count = static_cast<size_t>(g.numElements());
    float *dst = u.as<float>();
    switch (g.dtype) {
    case DType::F64: {
      // Scaled in f64, then rounded: flags values that are not finite
      // before scaling or overflow f32 after it.
      const double *src = g.as<const double>();
      bool nonFinite = false;
      for (size_t k = 0; k < count; ++k) {
        dst[k] = static_cast<float>(src[k] * static_cast<double>(inv));
        nonFinite |= !std::isfinite(src[k]) || !std::isfinite(dst[k]);
      }
      if (nonFinite)
        *foundInf.as<float>() = 1.0f;
      continue;
    }
    case DType::F32:
      if (count && dst != g.as<const float>())
        std::memcpy(dst, g.data, count * sizeof(float));
      break;
    case DType::F16:
      convertF16ToF32(g.as<const uint16_t>(), dst, count);
      break;
    case DType::BF16:
      convertBF16ToF32(g.as<const uint16_t>(), dst, count);
      break;
    default:
      break;
    }
    if (Status s = unscaleAndCheckFinite(u, invView, foundInf); !s)
      return s;
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// kernel.loss_scale_update: found_inf -> scale, growth_tracker
//===----------------------------------------------------------------------===//

Status lossScaleUpdateCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 2, 2); !s)
    return s;
  MP_RT_TRY_ASSIGN(config, lossScaleConfigOf(args.call));
  const TensorView &scale = args.results[0], &tracker = args.results[1];
  if (overlapping(scale, tracker) || overlapping(scale, args.operands[0]) ||
      overlapping(tracker, args.operands[0]))
    return Status::error("scale, growth_tracker and found_inf must not "
                         "overlap");
  return updateLossScale(scale, tracker, args.operands[0], config);
}

//===----------------------------------------------------------------------===//
// kernel.sgd_step: grad, found_inf? -> param, momentum_buffer?, step
// kernel.adam_step: grad, found_inf? -> param, exp_avg, exp_avg_sq, step
//===----------------------------------------------------------------------===//

Status sgdStepCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 2> in;
  std::array<const TensorView *, 3> out;
  if (Status s = bindCallBuffers(call, args.operands, kOptimizerOperands, in,
                                 args.results, kSgdResults, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(config, sgdConfigOf(call, out[1] != nullptr));
  if (Status s = checkDisjoint({{"grad", in[0]},
                                {"found_inf", in[1]},
                                {"param", out[0]},
                                {"momentum_buffer", out[1]},
                                {"step", out[2]}});
      !s)
    return s;
  TensorView none, noBuffer;
  return sgdStep(*out[0], *in[0], out[1] ? *out[1] : noBuffer, *out[2],
                 in[1] ? *in[1] : none, config);
}

Status adamStepCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 2> in;
  if (Status s = bindBuffers<2>(call, args.operands, "operands",
                                kOptimizerOperands, in);
      !s)
    return s;
  if (Status s = checkArity(args, 0, SIZE_MAX, 4, 4); !s)
    return s;
  MP_RT_TRY_ASSIGN(config, adamConfigOf(call));
  const std::vector<TensorView> &out = args.results;
  if (Status s = checkDisjoint({{"grad", in[0]},
                                {"found_inf", in[1]},
                                {"param", &out[0]},
                                {"exp_avg", &out[1]},
                                {"exp_avg_sq", &out[2]},
                                {"step", &out[3]}});
      !s)
    return s;
  TensorView none;
  return adamStep(out[0], *in[0], out[1], out[2], out[3], in[1] ? *in[1] : none,
                  config);
}

} // namespace

Result<PoolOptions> poolBackwardOptionsOf(const PlanCall &call,
                                          size_t spatial) {
  PoolOptions o;
  MP_RT_TRY_ASSIGN(mode, stringAttr(call, "mode"));
  if (mode == "max") {
    o.kind = PoolKind::Max;
  } else if (mode == "avg" || mode == "avg_include_pad") {
    o.kind = PoolKind::Average;
    o.countIncludePad = mode == "avg_include_pad";
  } else {
    return Status::error("attribute 'mode' has unknown value '" + mode +
                         "' (max, avg, avg_include_pad)");
  }
  MP_RT_TRY_ASSIGN(window, intListAttr(call, "window"));
  o.kernel = std::move(window);
  if (Status s = readWindowAttrs(call, spatial, o.padsBegin, o.padsEnd,
                                 o.strides, o.dilations);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  o.layout = channelsLast ? Layout::NHWC : Layout::NCHW;
  return o;
}

Status checkDisjoint(
    std::initializer_list<std::pair<const char *, const TensorView *>> views) {
  for (auto a = views.begin(); a != views.end(); ++a)
    for (auto b = a + 1; b != views.end(); ++b)
      if (a->second && b->second && overlapping(*a->second, *b->second))
        return Status::error(std::string(a->first) + " overlaps " + b->first);
  return Status::ok();
}

Status checkUnscaleCheckFinite(const std::vector<TensorView> &operands,
                               const std::vector<TensorView> &results) {
  const size_t n = operands.size();
  if (n < 2 || results.size() != n)
    return Status::error(
        "expects operands (scale, g_1..g_n) and results (found_inf, "
        "u_1..u_n) with n >= 1, got " +
        std::to_string(n) + " operands and " + std::to_string(results.size()) +
        " results");
  const TensorView &scale = operands[0];
  const TensorView &foundInf = results[0];
  if (Status s = checkInverseScale(scale); !s)
    return s;
  if (Status s = checkDense("found_inf", foundInf); !s)
    return s;
  if (foundInf.dtype != DType::F32 || foundInf.numElements() != 1)
    return Status::error("found_inf must be one f32 element, got " +
                         dt(foundInf.dtype) + " with " +
                         std::to_string(foundInf.numElements()) + " elements");
  if (overlapping(foundInf, scale))
    return Status::error("found_inf overlaps scale");
  for (size_t i = 1; i < n; ++i) {
    const TensorView &g = operands[i], &u = results[i];
    std::string gi = "g_" + std::to_string(i), ui = "u_" + std::to_string(i);
    if (!isFloat(g.dtype))
      return Status::error(gi + " has dtype " + dt(g.dtype) +
                           "; expected a float type");
    if (u.dtype != DType::F32 || u.shape != g.shape)
      return Status::error(ui + " must be f32 with " + gi + "'s shape " +
                           shapeText(g.shape) + ", got " + dt(u.dtype) + " " +
                           shapeText(u.shape));
    for (const auto &[name, v] :
         {std::pair<const std::string &, const TensorView &>{gi, g}, {ui, u}})
      if (Status s = checkDense(name, v); !s)
        return s;
    if (overlapping(u, foundInf) || overlapping(u, scale) ||
        overlapping(foundInf, g))
      return Status::error(ui + " or found_inf overlaps another buffer");
    for (size_t j = 1; j < n; ++j) {
      const TensorView &other = operands[j];
      bool inPlace = j == i && u.data == g.data && g.dtype == DType::F32;
      if (overlapping(u, other) && !inPlace)
        return Status::error(ui + " overlaps g_" + std::to_string(j));
      if (j > i && overlapping(u, results[j]))
        return Status::error(ui + " overlaps u_" + std::to_string(j));
    }
  }
  return Status::ok();
}

Result<LossScaleConfig> lossScaleConfigOf(const PlanCall &call) {
  LossScaleConfig config;
  MP_RT_TRY_ASSIGN(growth,
                   floatAttr(call, "growth_factor", config.growthFactor));
  MP_RT_TRY_ASSIGN(backoff,
                   floatAttr(call, "backoff_factor", config.backoffFactor));
  MP_RT_TRY_ASSIGN(interval,
                   intAttr(call, "growth_interval", config.growthInterval));
  config.growthFactor = growth;
  config.backoffFactor = backoff;
  config.growthInterval = interval;
  return config;
}

Result<SGDConfig> sgdConfigOf(const PlanCall &call, bool hasMomentumBuffer) {
  SGDConfig config;
  MP_RT_TRY_ASSIGN(lr, floatAttr(call, "lr"));
  MP_RT_TRY_ASSIGN(momentum, floatAttr(call, "momentum", 0.0));
  MP_RT_TRY_ASSIGN(dampening, floatAttr(call, "dampening", 0.0));
  MP_RT_TRY_ASSIGN(weightDecay, floatAttr(call, "weight_decay", 0.0));
  MP_RT_TRY_ASSIGN(nesterov, boolAttr(call, "nesterov", false));
  config.lr = lr;
  config.momentum = momentum;
  config.dampening = dampening;
  config.weightDecay = weightDecay;
  config.nesterov = nesterov;
  if (momentum != 0 && !hasMomentumBuffer)
    return Status::error("momentum " + std::to_string(momentum) +
                         " needs a momentum_buffer (has_momentum_buffer = 1)");
  return config;
}

Result<AdamConfig> adamConfigOf(const PlanCall &call) {
  AdamConfig config;
  MP_RT_TRY_ASSIGN(lr, floatAttr(call, "lr", config.lr));
  MP_RT_TRY_ASSIGN(beta1, floatAttr(call, "beta1", config.beta1));
  MP_RT_TRY_ASSIGN(beta2, floatAttr(call, "beta2", config.beta2));
  MP_RT_TRY_ASSIGN(eps, floatAttr(call, "eps", config.eps));
  MP_RT_TRY_ASSIGN(weightDecay, floatAttr(call, "weight_decay", 0.0));
  MP_RT_TRY_ASSIGN(decoupled, boolAttr(call, "decoupled_weight_decay", false));
  config.lr = lr;
  config.beta1 = beta1;
  config.beta2 = beta2;
  config.eps = eps;
  config.weightDecay = weightDecay;
  config.decoupledWeightDecay = decoupled;
  return config;
}

Result<LossOptions> lossOptionsOf(const PlanCall &call) {
  LossOptions o;
  MP_RT_TRY_ASSIGN(name, stringAttr(call, "reduction", "mean"));
  if (name == "none")
    o.reduction = LossReduction::None;
  else if (name == "sum")
    o.reduction = LossReduction::Sum;
  else if (name == "mean")
    o.reduction = LossReduction::Mean;
  else
    return Status::error("attribute 'reduction' must be none, sum or mean, "
                         "got '" +
                         name + "'");
  if (call.attr("ignore_index")) {
    MP_RT_TRY_ASSIGN(ignore, intAttr(call, "ignore_index"));
    o.ignoreIndex = ignore;
  }
  return o;
}

Result<LstmBackwardOptions> lstmBackwardOptionsOf(const PlanCall &call) {
  LstmBackwardOptions o;
  MP_RT_TRY_ASSIGN(direction, rnnDirectionAttr(call));
  o.direction = direction;
  MP_RT_TRY_ASSIGN(hidden, intAttr(call, "hidden_size"));
  o.hiddenSize = hidden;
  if (Status s = checkPlainLstm(
          call, o.direction == RnnDirection::Bidirectional ? 2 : 1);
      !s)
    return s;
  return o;
}

void addTrainingCalls(CallTable &table) {
  MP_ADD_CALL("cudnn.conv_bwd_filter", convBwdFilterCall);
  MP_ADD_CALL("cudnn.pool_bwd", poolBwdCall);
  MP_ADD_CALL("cudnn.batch_norm_bwd", batchNormBwdCall);
  MP_ADD_CALL("kernel.softmax_cross_entropy_grad", softmaxCrossEntropyGradCall);
  MP_ADD_CALL("kernel.nll_loss_grad", nllLossGradCall);
  MP_ADD_CALL("kernel.lstm_bwd", lstmBwdCall);
  MP_ADD_CALL("kernel.layer_norm_grad", layerNormGradCall);
  MP_ADD_CALL("kernel.unscale_check_finite", unscaleCheckFiniteCall);
  MP_ADD_CALL("kernel.loss_scale_update", lossScaleUpdateCall);
  MP_ADD_CALL("kernel.sgd_step", sgdStepCall);
  MP_ADD_CALL("kernel.adam_step", adamStepCall);
}

} // namespace mp::rt::cpu
