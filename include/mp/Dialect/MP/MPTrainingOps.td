//===- MPTrainingOps.td - gradient, loss-scaling, optimizer ops -*- tablegen -*-===//
//
// The ops mp-training, mp-master-weights and mp-loss-scale add to a model:
// gradients that no ONNX operator expresses, the loss-scaling steps and the
// fused optimizer updates. They are not ONNX operators (no ONNX name, no
// export); each lowers to one culib call. `policyOpType` is the name the
// precision policy knows them by ("ConvGradFilter", ...), so that autocast
// colours the backward pass as it colours the forward one.
//
// Parameters, optimizer state and the loss-scale state are `ml_program.global`
// variables: the update ops name them by symbol and write them in place.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_MPTRAININGOPS_TD
#define MP_DIALECT_MP_MPTRAININGOPS_TD

include "mp/Dialect/MP/MPBase.td"

class MP_TrainingOp<string mnemonic, string policyType, list<Trait> traits = []>
    : MP_Op<mnemonic, traits> {
  let extraClassDeclaration = [{
    /// The op type the precision policy classifies it by.
    static constexpr ::llvm::StringLiteral kPolicyOpType = "}] # policyType # [{";
  }];
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def MP_ConvGradFilterOp : MP_TrainingOp<"conv_grad_filter", "ConvGradFilter",
                                        [Pure]> {
  let summary = "gradient of a convolution with respect to its filter";
  let description = [{
    dW for Y = Conv(X, W) given dY (cudnnConvolutionBackwardFilter). `pads`
    holds the begin pads of every spatial dim, then the end pads (explicit:
    auto_pad has been resolved); the filter shape is the result's.
  }];
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$dY,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs MP_FloatTensor:$dW);
}

def MP_PoolGradOp : MP_TrainingOp<"pool_grad", "PoolGrad", [Pure]> {
  let summary = "gradient of max or average pooling";
  let description = [{
    dX for Y = pool(X) given dY (cudnnPoolingBackward). `mode` is `max` (the
    gradient goes to the first maximum of each window), `avg` (padding not
    counted) or `avg_include_pad`. Global pooling is a window over all
    spatial dims.
  }];
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$dY, StrAttr:$mode,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations);
  let results = (outs MP_FloatTensor:$dX);
}

def MP_BatchNormGradOp : MP_TrainingOp<"batch_norm_grad", "BatchNormGrad",
    [Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "gradient of training-mode batch normalization";
  let description = [{
    (dX, dScale, dBias) for Y = BatchNormalization(X, scale, ...) in training
    mode (batch statistics), given dY (cudnnBatchNormalizationBackward). dX
    has X's type, dScale and dBias scale's (ONNX gives scale and bias one
    type), so X and dY can be 16-bit while scale and its gradients stay f32,
    as cuDNN takes them.
  }];
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$scale,
                       MP_FloatTensor:$dY, F32Attr:$epsilon);
  let results = (outs MP_FloatTensor:$dX, MP_FloatTensor:$dScale,
                      MP_FloatTensor:$dBias);
}

def MP_GeluGradOp : MP_TrainingOp<"gelu_grad", "GeluGrad",
    [Pure, AllTypesMatch<["dY", "X", "dX"]>]> {
  let summary = "gradient of Gelu: dX = dY * Gelu'(X)";
  let description = [{
    The input gradient of Y = Gelu(X) (`approximate` "none": the exact GELU,
    with erf; "tanh": its tanh approximation), computed in one pass as one
    elementwise function (`gelu_grad` / `gelu_tanh_grad`), which
    culib-fuse-epilogues may fold into the matmul that writes dY.
  }];
  let arguments = (ins MP_FloatTensor:$dY, MP_FloatTensor:$X,
                       MP_OptStr:$approximate);
  let results = (outs MP_FloatTensor:$dX);
}

def MP_LayerNormGradOp : MP_TrainingOp<"layer_norm_grad", "LayerNormGrad",
    [Pure]> {
  let summary = "gradient of LayerNormalization from its Mean and InvStdDev";
  let description = [{
    (dX, dScale, dBias) for Y = LayerNormalization(X, scale, bias) over X's
    dims from `axis`, given dY and the forward op's f32 Mean and InvStdDev:
    with x̂ = (X - Mean) * InvStdDev and g = dY * scale, dX = InvStdDev *
    (g - mean(g) - x̂ * mean(g * x̂)); dScale = Σ dY * x̂ and dBias = Σ dY
    over the dims before `axis`, in scale's type and shape. One call
    (culib.layer_norm_grad).
  }];
  let arguments = (ins MP_FloatTensor:$dY, MP_FloatTensor:$X,
                       MP_FloatTensor:$scale, MP_FloatTensor:$mean,
                       MP_FloatTensor:$inv_std_dev, I64Attr:$axis);
  let results = (outs MP_FloatTensor:$dX, MP_FloatTensor:$dScale,
                      MP_FloatTensor:$dBias);
}

def MP_SoftmaxCrossEntropyGradOp
    : MP_TrainingOp<"softmax_cross_entropy_grad", "SoftmaxCrossEntropyGrad",
                    [Pure]> {
  let summary = "gradient of SoftmaxCrossEntropyLoss w.r.t. its scores";
  let description = [{
    (softmax(scores) - onehot(labels)) * weights[label] * dLoss / denominator,
    with ONNX SoftmaxCrossEntropyLoss's reduction and ignore_index rules.
  }];
  let arguments = (ins MP_FloatTensor:$scores, MP_IntTensor:$labels,
                       MP_FloatTensor:$dLoss, MP_OptFloatTensor:$weights,
                       DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs MP_FloatTensor:$dScores);
}

def MP_NLLLossGradOp : MP_TrainingOp<"nll_loss_grad", "NegativeLogLikelihoodLossGrad",
                                     [Pure]> {
  let summary = "gradient of NegativeLogLikelihoodLoss w.r.t. its input";
  let arguments = (ins MP_FloatTensor:$input, MP_IntTensor:$target,
                       MP_FloatTensor:$dLoss, MP_OptFloatTensor:$weight,
                       DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs MP_FloatTensor:$dInput);
}

def MP_LSTMGradOp : MP_TrainingOp<"lstm_grad", "LSTMGrad", [Pure]> {
  let summary = "gradients of an LSTM (backpropagation through time)";
  let description = [{
    The gradients of ONNX LSTM (layout 0, default activations, no peepholes,
    clip or sequence_lens) with respect to X, W, R, B, initial_h and
    initial_c, given the gradients of its outputs Y, Y_h and Y_c (`none`
    where an output has none). Absent optional inputs have `none` results.
    The forward pass is recomputed (cudnnRNNBackwardData_v8 and
    cudnnRNNBackwardWeights_v8 on the GPU).
  }];
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W, MP_FloatTensor:$R,
                       MP_OptFloatTensor:$B, MP_OptFloatTensor:$initial_h,
                       MP_OptFloatTensor:$initial_c, MP_OptFloatTensor:$dY,
                       MP_OptFloatTensor:$dY_h, MP_OptFloatTensor:$dY_c,
                       StrAttr:$direction, I64Attr:$hidden_size);
  let results = (outs MP_FloatTensor:$dX, MP_FloatTensor:$dW,
                      MP_FloatTensor:$dR, MP_OptFloatTensor:$dB,
                      MP_OptFloatTensor:$dInitial_h,
                      MP_OptFloatTensor:$dInitial_c);
}

//===----------------------------------------------------------------------===//
// Loss scaling and optimizer updates (in place on ml_program globals)
//===----------------------------------------------------------------------===//

def MP_UnscaleCheckFiniteOp
    : MP_TrainingOp<"unscale_check_finite", "UnscaleCheckFinite", [Pure]> {
  let summary = "gradients divided by the loss scale, and a non-finite flag";
  let description = [{
    `unscaled_i = gradients_i * (1 / scale)` in f32, and `found_inf` (f32, one
    element) is 1 when any element of any gradient is NaN or infinite, else 0:
    GradScaler.unscale_ as one multi-tensor call.
  }];
  let arguments = (ins TensorOf<[F32]>:$scale,
                       Variadic<MP_FloatTensor>:$gradients);
  let results = (outs TensorOf<[F32]>:$found_inf,
                      Variadic<TensorOf<[F32]>>:$unscaled);
  let hasVerifier = 1;
}

def MP_AllReduceOp : MP_TrainingOp<"all_reduce", "AllReduce",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "tensors reduced over the ranks of a data-parallel run";
  let description = [{
    Each output is the `reduction` of its input over every rank: `mean`
    (mp-training's gradient buckets: DDP's averaged gradients), `sum` or
    `max` (mp-loss-scale's found-inf flag, so that every rank skips the
    same steps). `reduce_type` (f32, bf16, f16) is what travels between the
    ranks. It has effects (communication): no pass may drop, merge or
    reorder it, so every rank issues the same collectives in the same order.
    Lowers to `culib.all_reduce`.
  }];
  let arguments = (ins Variadic<MP_FloatTensor>:$inputs, StrAttr:$reduction,
                       TypeAttrOf<AnyFloat>:$reduce_type);
  let results = (outs Variadic<MP_FloatTensor>:$outputs);
  let hasVerifier = 1;
}

def MP_LossScaleUpdateOp : MP_TrainingOp<"loss_scale_update", "LossScaleUpdate",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "GradScaler's scale update, in place";
  let description = [{
    After a step with `found_inf` set: scale *= backoff_factor and the growth
    tracker restarts. Otherwise the tracker counts the clean step and every
    `growth_interval` clean steps scale *= growth_factor. `scale` (f32[1])
    and `growth_tracker` (i64[1]) are globals.
  }];
  let arguments = (ins TensorOf<[F32]>:$found_inf,
                       FlatSymbolRefAttr:$scale,
                       FlatSymbolRefAttr:$growth_tracker,
                       F32Attr:$growth_factor, F32Attr:$backoff_factor,
                       I64Attr:$growth_interval);
}

def MP_SGDUpdateOp : MP_TrainingOp<"sgd_update", "SGDUpdate",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one torch.optim.SGD step on an f32 parameter, in place";
  let description = [{
    Weight decay, momentum (with dampening, optionally Nesterov) as PyTorch.
    Skipped when the optional `found_inf` is nonzero. `param`,
    `momentum_buffer` (absent without momentum) and `step` (i64[1]) are
    globals.
  }];
  let arguments = (ins TensorOf<[F32]>:$grad, MP_OptFloatTensor:$found_inf,
                       FlatSymbolRefAttr:$param,
                       OptionalAttr<FlatSymbolRefAttr>:$momentum_buffer,
                       FlatSymbolRefAttr:$step, F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F32Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F32Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov);
}

def MP_AdamUpdateOp : MP_TrainingOp<"adam_update", "AdamUpdate",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one torch.optim.Adam / AdamW step on an f32 parameter, in place";
  let arguments = (ins TensorOf<[F32]>:$grad, MP_OptFloatTensor:$found_inf,
                       FlatSymbolRefAttr:$param, FlatSymbolRefAttr:$exp_avg,
                       FlatSymbolRefAttr:$exp_avg_sq, FlatSymbolRefAttr:$step,
                       F32Attr:$lr,
                       DefaultValuedAttr<F32Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F32Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F32Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F32Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled_weight_decay);
}

#endif // MP_DIALECT_MP_MPTRAININGOPS_TD
