//===- LibraryCalls.cpp - cuBLASLt / cuDNN plan calls on the CPU ----------===//
//
// Adapters from the plan's library calls (docs/plan-format.md, "Call
// reference") to the CPU kernels of Kernels.h. Each adapter reads the call's
// attributes with the defaults of the culib op definitions (CuLibOps.td: an
// attribute with a default value may be left out of the plan), uses the
// has_<name> attributes to place optional buffers, and leaves the shape and
// dtype checks to the kernel.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"

#include <string>

namespace mp::rt::cpu {

namespace {

/// The number of operands a call with these optional buffers has, checked.
Status checkOperandCount(const CallArgs &args, size_t required,
                         size_t optionalPresent, size_t results) {
  size_t operands = required + optionalPresent;
  return checkArity(args, operands, operands, results, results);
}

/// A matmul's epilogue or a convolution's activation: the culib Epilogue
/// names (clip a convolution's only: its bounds are its attributes).
Result<Activation> parseActivation(const std::string &name,
                                   std::string_view attrName, bool isMatmul) {
  static const std::pair<std::string_view, Activation> kNames[] = {
      {"none", Activation::None},           {"relu", Activation::Relu},
      {"gelu", Activation::Gelu},           {"gelu_tanh", Activation::GeluTanh},
      {"clip", Activation::Clip},           {"silu", Activation::Silu},
      {"sigmoid", Activation::Sigmoid},     {"tanh", Activation::Tanh},
      {"hard_swish", Activation::HardSwish}};
  for (const auto &[known, activation] : kNames)
    if (name == known && !(isMatmul && activation == Activation::Clip))
      return activation;
  return Status::error(
      "attribute '" + std::string(attrName) + "' has unknown value '" + name +
      "' (none, relu, gelu, gelu_tanh" + (isMatmul ? "" : ", clip") +
      ", silu, sigmoid, tanh, hard_swish" +
      (isMatmul ? ", or with aux relu_grad, gelu_grad, gelu_tanh_grad" : "") +
      ")");
}

/// Splits ONNX-style pads (begins, then ends) for `spatial` dimensions.
Status splitPads(const std::vector<int64_t> &pads, size_t spatial,
                 std::vector<int64_t> &begins, std::vector<int64_t> &ends) {
  if (pads.size() != 2 * spatial)
    return Status::error("attribute 'pads' must have " +
                         std::to_string(2 * spatial) +
                         " values (begins, then "
                         "ends, for " +
                         std::to_string(spatial) + " spatial dims), got " +
                         std::to_string(pads.size()));
  begins.assign(pads.begin(), pads.begin() + spatial);
  ends.assign(pads.begin() + spatial, pads.end());
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// cublaslt.matmul: a, b, c?, bias?, aux? -> d, bias_grad?
//===----------------------------------------------------------------------===//

Status matmulCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  MP_RT_TRY_ASSIGN(hasC, hasBuffer(call, "c"));
  MP_RT_TRY_ASSIGN(hasBias, hasBuffer(call, "bias"));
  MP_RT_TRY_ASSIGN(hasAux, hasBuffer(call, "aux", false));
  MP_RT_TRY_ASSIGN(hasBiasGrad, hasBuffer(call, "bias_grad", false));
  if (Status s = checkOperandCount(
          args, 2, size_t(hasC) + size_t(hasBias) + size_t(hasAux),
          1 + size_t(hasBiasGrad));
      !s)
    return s;
  MP_RT_TRY_ASSIGN(options, matmulOptionsOf(call));
  if (Status s =
          checkComputeType(call, args.operands[0].dtype, /*required=*/true);
      !s)
    return s;
  size_t next = 2;
  const TensorView *c = hasC ? &args.operands[next++] : nullptr;
  const TensorView *bias = hasBias ? &args.operands[next++] : nullptr;
  const TensorView *aux = hasAux ? &args.operands[next++] : nullptr;
  if (Status s = matmul(args.operands[0], args.operands[1], c, bias,
                        args.results[0], options, aux);
      !s || !hasBiasGrad)
    return s;
  MP_RT_TRY_ASSIGN(ofA, boolAttr(call, "bias_grad_of_a", false));
  BiasGradientOperand summed = biasGradientOperand(ofA, options);
  return matmulBiasGradient(args.operands[summed.ofA ? 0 : 1], summed.kIsRows,
                            args.results[1]);
}

//===----------------------------------------------------------------------===//
// cudnn.conv_fwd: x, w, bias?, residual? -> y
//===----------------------------------------------------------------------===//

Status convCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  std::array<const TensorView *, 4> in;
  std::array<const TensorView *, 1> out;
  if (Status s = bindCallBuffers(call, args.operands, kConvOperands, in,
                                 args.results, {{{"y", false}}}, out);
      !s)
    return s;
  const TensorView &x = *in[0];
  MP_RT_TRY_ASSIGN(spatial, spatialRank(x, "x"));
  MP_RT_TRY_ASSIGN(options, convOptionsOf(call, spatial));
  if (Status s = checkComputeType(call, x.dtype, /*required=*/true); !s)
    return s;
  return conv(x, *in[1], in[2], in[3], *out[0], options);
}

//===----------------------------------------------------------------------===//
// cudnn.pool: x -> y, indices?
//===----------------------------------------------------------------------===//

Status poolCall(const CallArgs &args) {
  const PlanCall &call = args.call;
  MP_RT_TRY_ASSIGN(hasIndices, hasBuffer(call, "indices"));
  size_t results = 1 + size_t(hasIndices);
  if (Status s = checkArity(args, 1, 1, results, results); !s)
    return s;
  const TensorView &x = args.operands[0];
  MP_RT_TRY_ASSIGN(spatial, spatialRank(x, "x"));
  MP_RT_TRY_ASSIGN(options, poolOptionsOf(call, spatial, hasIndices));
  const TensorView *indices = hasIndices ? &args.results[1] : nullptr;
  return pool(x, args.results[0], options, indices);
}

//===----------------------------------------------------------------------===//
// cudnn.batch_norm_inference: x, scale, bias, mean, variance -> y
// cudnn.batch_norm_training: ... -> y, running_mean, running_variance
//===----------------------------------------------------------------------===//

Status batchNormInferenceCall(const CallArgs &args) {
  if (Status s = checkArity(args, 5, 5, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(options, batchNormOptionsOf(args.call));
  const std::vector<TensorView> &in = args.operands;
  return batchNormInference(in[0], in[1], in[2], in[3], in[4], args.results[0],
                            options);
}

Status batchNormTrainingCall(const CallArgs &args) {
  if (Status s = checkArity(args, 5, 5, 3, 3); !s)
    return s;
  MP_RT_TRY_ASSIGN(options, batchNormOptionsOf(args.call));
  if (args.call.attr("sync_ranks"))
    options.syncRanks = args.communicator;
  const std::vector<TensorView> &in = args.operands;
  const std::vector<TensorView> &out = args.results;
  return batchNormTraining(in[0], in[1], in[2], in[3], in[4], out[0], out[1],
                           out[2], options);
}

//===----------------------------------------------------------------------===//
// cudnn.softmax: x -> y
//===----------------------------------------------------------------------===//

Status softmaxCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(args.call, "axis"));
  MP_RT_TRY_ASSIGN(log, intAttr(args.call, "log", 0));
  if (log != 0 && log != 1)
    return Status::error("attribute 'log' must be 0 or 1, got " +
                         std::to_string(log));
  return log ? logSoftmax(args.operands[0], args.results[0], axis)
             : softmax(args.operands[0], args.results[0], axis);
}

Status scaledSoftmaxCall(const CallArgs &args) {
  std::array<const TensorView *, 2> in;
  std::array<const TensorView *, 1> out;
  if (Status s = bindCallBuffers(args.call, args.operands,
                                 {{{"x", false}, {"mask", true}}}, in,
                                 args.results, {{{"y", false}}}, out);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(scale, floatAttr(args.call, "scale", 1.0));
  return scaledSoftmax(*in[0], in[1], *out[0], static_cast<float>(scale));
}

} // namespace

Result<MatmulOptions> matmulOptionsOf(const PlanCall &call) {
  MatmulOptions options;
  MP_RT_TRY_ASSIGN(transA, intAttr(call, "trans_a", 0));
  MP_RT_TRY_ASSIGN(transB, intAttr(call, "trans_b", 0));
  MP_RT_TRY_ASSIGN(alpha, floatAttr(call, "alpha", 1.0));
  MP_RT_TRY_ASSIGN(beta, floatAttr(call, "beta", 0.0));
  MP_RT_TRY_ASSIGN(epilogue, stringAttr(call, "epilogue", "none"));
  // The activation gradients (with the aux operand), then the activations.
  static const std::pair<std::string_view, ActivationGradient> kGradients[] = {
      {"relu_grad", ActivationGradient::Relu},
      {"gelu_grad", ActivationGradient::Gelu},
      {"gelu_tanh_grad", ActivationGradient::GeluTanh}};
  for (const auto &[name, gradient] : kGradients)
    if (epilogue == name) {
      options.epilogueGradient = gradient;
      epilogue = "none";
    }
  MP_RT_TRY_ASSIGN(activation, parseActivation(epilogue, "epilogue", true));
  options.transA = transA != 0;
  options.transB = transB != 0;
  options.alpha = alpha;
  options.beta = beta;
  options.epilogue = activation;
  return options;
}

Result<ConvOptions> convOptionsOf(const PlanCall &call, size_t spatial) {
  ConvOptions options;
  MP_RT_TRY_ASSIGN(pads, intListAttr(call, "pads"));
  MP_RT_TRY_ASSIGN(strides, intListAttr(call, "strides"));
  MP_RT_TRY_ASSIGN(dilations, intListAttr(call, "dilations"));
  MP_RT_TRY_ASSIGN(groups, intAttr(call, "groups", 1));
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  MP_RT_TRY_ASSIGN(activationName, stringAttr(call, "activation", "none"));
  MP_RT_TRY_ASSIGN(activation, parseActivation(activationName, "activation",
                                               /*isMatmul=*/false));
  if (activation == Activation::Clip) {
    MP_RT_TRY_ASSIGN(lo, floatAttr(call, "clip_min"));
    MP_RT_TRY_ASSIGN(hi, floatAttr(call, "clip_max"));
    if (!(lo <= hi))
      return Status::error("attributes 'clip_min' and 'clip_max' must be "
                           "ordered (clip_min <= clip_max), got " +
                           std::to_string(lo) + " and " + std::to_string(hi));
    options.clipMin = static_cast<float>(lo);
    options.clipMax = static_cast<float>(hi);
  }
  if (Status s = splitPads(pads, spatial, options.padsBegin, options.padsEnd);
      !s)
    return s;
  options.layout = channelsLast ? Layout::NHWC : Layout::NCHW;
  options.strides = std::move(strides);
  options.dilations = std::move(dilations);
  options.groups = groups;
  options.activation = activation;
  return options;
}

Result<PoolOptions> poolOptionsOf(const PlanCall &call, size_t spatial,
                                  bool hasIndices) {
  PoolOptions options;
  MP_RT_TRY_ASSIGN(mode, stringAttr(call, "mode"));
  MP_RT_TRY_ASSIGN(window, intListAttr(call, "window"));
  MP_RT_TRY_ASSIGN(pads, intListAttr(call, "pads"));
  MP_RT_TRY_ASSIGN(strides, intListAttr(call, "strides"));
  MP_RT_TRY_ASSIGN(dilations, intListAttr(call, "dilations", {}));
  if (mode == "max") {
    options.kind = PoolKind::Max;
  } else if (mode == "avg" || mode == "avg_include_pad") {
    if (hasIndices)
      return Status::error("indices are only produced by mode 'max', not '" +
                           mode + "'");
    options.kind = PoolKind::Average;
    options.countIncludePad = mode == "avg_include_pad";
  } else {
    return Status::error("attribute 'mode' has unknown value '" + mode +
                         "' (max, avg, avg_include_pad)");
  }
  if (Status s = splitPads(pads, spatial, options.padsBegin, options.padsEnd);
      !s)
    return s;
  options.kernel = std::move(window);
  options.strides = std::move(strides);
  options.dilations = std::move(dilations);
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  options.layout = channelsLast ? Layout::NHWC : Layout::NCHW;
  if (hasIndices && options.layout != Layout::NCHW)
    return Status::error("indices (ONNX's NCHW indices) need layout 'nchw'");
  return options;
}

void addLibraryCalls(CallTable &table) {
  MP_ADD_CALL("cublaslt.matmul", matmulCall);
  MP_ADD_CALL("cudnn.conv_fwd", convCall);
  MP_ADD_CALL("cudnn.pool", poolCall);
  MP_ADD_CALL("cudnn.batch_norm_inference", batchNormInferenceCall);
  MP_ADD_CALL("cudnn.batch_norm_training", batchNormTrainingCall);
  MP_ADD_CALL("cudnn.softmax", softmaxCall);
  MP_ADD_CALL("kernel.scaled_softmax", scaledSoftmaxCall);
}

Result<BatchNormOptions> batchNormOptionsOf(const PlanCall &call) {
  const bool backward = call.kind == "cudnn.batch_norm_bwd";
  BatchNormOptions options;
  MP_RT_TRY_ASSIGN(epsilon, backward ? floatAttr(call, "epsilon", 1e-5)
                                     : floatAttr(call, "epsilon"));
  options.epsilon = static_cast<float>(epsilon);
  if (call.kind == "cudnn.batch_norm_training") {
    MP_RT_TRY_ASSIGN(momentum, floatAttr(call, "momentum"));
    options.momentum = static_cast<float>(momentum);
  }
  MP_RT_TRY_ASSIGN(channelsLast, channelsLastAttr(call));
  options.layout = channelsLast ? Layout::NHWC : Layout::NCHW;
  return options;
}

} // namespace mp::rt::cpu
