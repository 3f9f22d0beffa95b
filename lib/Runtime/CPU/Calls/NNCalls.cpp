//===- NNCalls.cpp - neural-network plan calls on the CPU -----------------===//
//
// cudnn.rnn, cudnn.conv_bwd_data, cudnn.lrn, kernel.attention,
// kernel.layer_norm, kernel.instance_norm, kernel.nll_loss, kernel.topk,
// kernel.cumsum, kernel.trilu and kernel.hardmax (docs/plan-format.md, "Call
// reference"), on the kernels of mp/Runtime/CPU/NNKernels.h.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"

namespace mp::rt::cpu {

//===----------------------------------------------------------------------===//
// cudnn.rnn
//===----------------------------------------------------------------------===//

Result<LrnOptions> lrnOptionsOf(const PlanCall &call) {
  LrnOptions o;
  MP_RT_TRY_ASSIGN(size, intAttr(call, "size"));
  MP_RT_TRY_ASSIGN(alpha, floatAttr(call, "alpha", 1e-4));
  MP_RT_TRY_ASSIGN(beta, floatAttr(call, "beta", 0.75));
  MP_RT_TRY_ASSIGN(bias, floatAttr(call, "bias", 1.0));
  o.size = size;
  o.alpha = static_cast<float>(alpha);
  o.beta = static_cast<float>(beta);
  o.bias = static_cast<float>(bias);
  return o;
}

Result<RnnDirection> rnnDirectionAttr(const PlanCall &call) {
  MP_RT_TRY_ASSIGN(direction, stringAttr(call, "direction", "forward"));
  if (direction == "forward")
    return RnnDirection::Forward;
  if (direction == "reverse")
    return RnnDirection::Reverse;
  if (direction == "bidirectional")
    return RnnDirection::Bidirectional;
  return Status::error("attribute 'direction' must be forward, reverse or "
                       "bidirectional, got '" +
                       direction + "'");
}

Result<RnnOptions> rnnOptionsOf(const PlanCall &call) {
  RnnOptions o;
  MP_RT_TRY_ASSIGN(mode, stringAttr(call, "mode"));
  if (mode == "lstm")
    o.mode = RnnMode::Lstm;
  else if (mode == "gru")
    o.mode = RnnMode::Gru;
  else if (mode == "rnn")
    o.mode = RnnMode::Rnn;
  else
    return Status::error("attribute 'mode' must be lstm, gru or rnn, got '" +
                         mode + "'");
  MP_RT_TRY_ASSIGN(direction, rnnDirectionAttr(call));
  o.direction = direction;
  MP_RT_TRY_ASSIGN(hidden, intAttr(call, "hidden_size"));
  o.hiddenSize = hidden;
  MP_RT_TRY_ASSIGN(names, stringAttr(call, "activations", ""));
  MP_RT_TRY_ASSIGN(alphas, floatListAttr(call, "activation_alpha", {}));
  MP_RT_TRY_ASSIGN(betas, floatListAttr(call, "activation_beta", {}));
  size_t dirs = o.direction == RnnDirection::Bidirectional ? 2 : 1;
  MP_RT_TRY_ASSIGN(acts, parseRnnActivations(o.mode, dirs, names, alphas, betas));
  o.activations = std::move(acts);
  if (call.attr("clip")) {
    MP_RT_TRY_ASSIGN(clip, floatAttr(call, "clip"));
    o.clip = static_cast<float>(clip);
  }
  MP_RT_TRY_ASSIGN(inputForget, boolAttr(call, "input_forget", false));
  o.inputForget = inputForget;
  MP_RT_TRY_ASSIGN(lbr, boolAttr(call, "linear_before_reset", false));
  o.linearBeforeReset = lbr;
  return o;
}

namespace {

Status rnnCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 8> in;
  std::array<const TensorView *, 3> out;
  if (Status s = bindCallBuffers(call, args.operands, kRnnOperands, in,
                                 args.results, kRnnResults, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(o, rnnOptionsOf(call));
  return rnn(*in[0], *in[1], *in[2], in[3], in[4], in[5], in[6], in[7], out[0],
             out[1], out[2], o);
}

//===----------------------------------------------------------------------===//
// cudnn.conv_bwd_data, cudnn.lrn
//===----------------------------------------------------------------------===//

Status convBwdDataCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 3> in;
  if (Status s = bindBuffers<3>(
          call, args.operands, "operands",
          {{{"x", false}, {"w", false}, {"bias", true}}}, in);
      !s)
    return s;
  if (Status s = checkArity(args, 0, SIZE_MAX, 1, 1); !s)
    return s;
  ConvTransposeOptions o;
  MP_RT_TRY_ASSIGN(pads, intListAttr(call, "pads", {}));
  if (pads.size() % 2)
    return Status::error("attribute 'pads' must have an even number of "
                         "entries (begins then ends), got " +
                         std::to_string(pads.size()));
  o.padsBegin.assign(pads.begin(), pads.begin() + pads.size() / 2);
  o.padsEnd.assign(pads.begin() + pads.size() / 2, pads.end());
  MP_RT_TRY_ASSIGN(strides, intListAttr(call, "strides", {}));
  o.strides = strides;
  MP_RT_TRY_ASSIGN(dilations, intListAttr(call, "dilations", {}));
  o.dilations = dilations;
  MP_RT_TRY_ASSIGN(groups, intAttr(call, "groups", 1));
  o.groups = groups;
  // compute_type: the CPU accumulates in f32 whatever it says; it must
  // still be a known dtype.
  if (call.attr("compute_type")) {
    MP_RT_TRY_ASSIGN(computeType, dtypeAttr(call, "compute_type"));
    (void)computeType;
  }
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  if (!channelsLast)
    return convTranspose(*in[0], *in[1], in[2], args.results[0], o);
  // x, y [N, spatial..., C] and w [C, spatial..., M/groups], through the
  // channels-first kernel.
  const TensorView &y = args.results[0];
  if (in[1]->shape.size() != in[0]->shape.size() ||
      y.shape.size() != in[0]->shape.size())
    return Status::error("x, w and y must have the same rank");
  HostTensor xFirst = channelsFirstCopy(*in[0]);
  HostTensor wFirst = channelsFirstCopy(*in[1]);
  HostTensor yFirst = channelsFirstCopy(y); // its shape; overwritten
  if (Status s = convTranspose(xFirst.view(), wFirst.view(), in[2],
                               yFirst.view(), o);
      !s)
    return s;
  return writeChannelsLast(yFirst.view(), y);
}

Status lrnCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(o, lrnOptionsOf(args.call));
  return lrn(args.operands[0], args.results[0], o);
}

//===----------------------------------------------------------------------===//
// kernel.attention
//===----------------------------------------------------------------------===//

Status attentionCall(const CallArgs &args) {
  std::array<const TensorView *, 4> in;
  std::array<const TensorView *, 1> out;
  if (Status s = bindCallBuffers(
          args.call, args.operands,
          {{{"q", false}, {"k", false}, {"v", false}, {"mask", true}}}, in,
          args.results, {{{"o", false}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(options, attentionOptionsOf(args.call, in[3] != nullptr));
  return attention(*in[0], *in[1], *in[2], in[3], *out[0], options);
}

//===----------------------------------------------------------------------===//
// kernel.layer_norm, kernel.instance_norm
//===----------------------------------------------------------------------===//

Status layerNormCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 3> in;
  std::array<const TensorView *, 3> out;
  if (Status s = bindCallBuffers(
          call, args.operands,
          {{{"x", false}, {"scale", false}, {"bias", true}}}, in, args.results,
          {{{"y", false}, {"mean", true}, {"inv_std_dev", true}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(call, "axis", -1));
  MP_RT_TRY_ASSIGN(epsilon, floatAttr(call, "epsilon", 1e-5));
  return layerNorm(*in[0], *in[1], in[2], *out[0], out[1], out[2], axis,
                   static_cast<float>(epsilon));
}

Status rmsNormCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 2> in;
  std::array<const TensorView *, 1> out;
  if (Status s = bindCallBuffers(call, args.operands,
                                 {{{"x", false}, {"scale", false}}}, in,
                                 args.results, {{{"y", false}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(call, "axis", -1));
  MP_RT_TRY_ASSIGN(epsilon, floatAttr(call, "epsilon", 1e-5));
  return rmsNorm(*in[0], *in[1], *out[0], axis, static_cast<float>(epsilon));
}

Status groupNormCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 3> in;
  std::array<const TensorView *, 1> out;
  if (Status s =
          bindCallBuffers(call, args.operands,
                          {{{"x", false}, {"scale", false}, {"bias", true}}},
                          in, args.results, {{{"y", false}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(groups, intAttr(call, "groups", 1));
  MP_RT_TRY_ASSIGN(epsilon, floatAttr(call, "epsilon", 1e-5));
  return groupNorm(*in[0], *in[1], in[2], *out[0], groups,
                   static_cast<float>(epsilon));
}

Status instanceNormCall(const CallArgs &args) {
  if (Status s = checkArity(args, 3, 3, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(epsilon, floatAttr(args.call, "epsilon", 1e-5));
  return instanceNorm(args.operands[0], args.operands[1], args.operands[2],
                      args.results[0], static_cast<float>(epsilon));
}

//===----------------------------------------------------------------------===//
// kernel.nll_loss, kernel.topk, kernel.cumsum, kernel.trilu, kernel.hardmax
//===----------------------------------------------------------------------===//

Status nllLossCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 3> in;
  if (Status s =
          bindBuffers<3>(call, args.operands, "operands", kNllLossOperands, in);
      !s)
    return s;
  if (Status s = checkArity(args, 0, SIZE_MAX, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(o, lossOptionsOf(call));
  return nllLoss(*in[0], *in[1], in[2], args.results[0], o.reduction,
                 o.ignoreIndex);
}

Status topkCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 2, 2); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(args.call, "axis", -1));
  MP_RT_TRY_ASSIGN(largest, boolAttr(args.call, "largest", true));
  MP_RT_TRY_ASSIGN(sorted, boolAttr(args.call, "sorted", true));
  return topk(args.operands[0], args.results[0], args.results[1], axis,
              largest, sorted);
}

Status cumsumCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(args.call, "axis"));
  MP_RT_TRY_ASSIGN(exclusive, boolAttr(args.call, "exclusive", false));
  MP_RT_TRY_ASSIGN(reverse, boolAttr(args.call, "reverse", false));
  return cumsum(args.operands[0], args.results[0], axis, exclusive, reverse);
}

Status triluCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(upper, boolAttr(args.call, "upper", true));
  MP_RT_TRY_ASSIGN(k, intAttr(args.call, "k", 0));
  return trilu(args.operands[0], args.results[0], upper, k);
}

Status hardmaxCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(args.call, "axis", -1));
  return hardmax(args.operands[0], args.results[0], axis);
}


} // namespace

void addNNCalls(CallTable &table) {
  MP_ADD_CALL("cudnn.rnn", rnnCall);
  MP_ADD_CALL("cudnn.conv_bwd_data", convBwdDataCall);
  MP_ADD_CALL("cudnn.lrn", lrnCall);
  MP_ADD_CALL("kernel.attention", attentionCall);
  MP_ADD_CALL("kernel.layer_norm", layerNormCall);
  MP_ADD_CALL("kernel.rms_norm", rmsNormCall);
  MP_ADD_CALL("kernel.group_norm", groupNormCall);
  MP_ADD_CALL("kernel.instance_norm", instanceNormCall);
  MP_ADD_CALL("kernel.nll_loss", nllLossCall);
  MP_ADD_CALL("kernel.topk", topkCall);
  MP_ADD_CALL("kernel.cumsum", cumsumCall);
  MP_ADD_CALL("kernel.trilu", triluCall);
  MP_ADD_CALL("kernel.hardmax", hardmaxCall);
}

} // namespace mp::rt::cpu
