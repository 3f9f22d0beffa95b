//===- MPOps.td - ops of the mp dialect ----------------------*- tablegen -*-===//
//
// The typed ONNX operators, the generic `mp.onnx_op`, and the structural ops
// (initializers, none, yield).
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_MPOPS_TD
#define MP_DIALECT_MP_MPOPS_TD

include "mp/Dialect/MP/MPBase.td"
include "mlir/IR/RegionKindInterface.td"

//===----------------------------------------------------------------------===//
// Structural ops
//===----------------------------------------------------------------------===//

def MP_InitializerOp : MP_Op<"initializer", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "an ONNX graph initializer (a named weight or constant)";
  let description = [{
    A tensor from the graph's `initializer` list. Large values are held as
    `dense_resource` blobs that reference the imported file's memory instead of
    being copied. `input_index` is set when the initializer is also listed as a
    graph input (IR version < 4 models, or inputs with defaults) and gives its
    position in the graph's input list.

    It is deliberately not a `ConstantLike` op: initializers are named
    weights, and constant uniquing must never merge two of them (or one and
    an `mp.constant`) because their values happen to be equal. Read its value
    with `getValue()` or `mp::getConstantValue`.

    ```mlir
    %w = mp.initializer "conv1.weight" dense_resource<conv1.weight> : tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, ElementsAttr:$value,
                       OptionalAttr<I64Attr>:$input_index,
                       OptionalAttr<StrAttr>:$doc_string);
  let results = (outs AnyTensor:$result);
  let assemblyFormat = "$name $value attr-dict";
  let hasVerifier = 1;
}

def MP_NoneOp : MP_Op<"none", [Pure, ConstantLike,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "the missing optional input of an ONNX node";
  let description = [{
    ONNX marks a missing optional input with an empty name. In the `mp` dialect
    it is an operand of type `none`, produced by this op.
  }];
  let results = (outs NoneType:$result);
  let assemblyFormat = "attr-dict";
  let hasFolder = 1;
}

def MP_YieldOp : MP_Op<"yield", [Pure, Terminator]> {
  let summary = "the outputs of an ONNX subgraph";
  let description = [{
    Terminates the single block of a subgraph region of `mp.onnx_op`. Its
    operands are the subgraph's outputs. `graph_name`, `input_names` and
    `output_names` keep the subgraph's ONNX names (its inputs are the block
    arguments).
  }];
  let arguments = (ins Variadic<AnyType>:$outputs,
                       OptionalAttr<StrAttr>:$graph_name,
                       OptionalAttr<StrArrayAttr>:$input_names,
                       OptionalAttr<StrArrayAttr>:$output_names);
  let assemblyFormat = "($outputs^ `:` type($outputs))? attr-dict";
}

def MP_OnnxGenericOp : MP_Op<"onnx_op"> {
  let summary = "any ONNX node, carried losslessly";
  let description = [{
    A node of any domain and op type that has no typed op (or whose schema
    version or attributes the typed op does not cover). It keeps everything the
    node has: `domain`, `op_type`, the opset `version` of its domain in the
    model, every attribute in `onnx_attrs` (converted as for typed ops; GRAPH
    attributes become regions, named by `region_names`), and its subgraphs as
    regions whose block arguments are the subgraph inputs and whose
    `mp.yield` gives the subgraph outputs. Subgraphs may use values of the
    enclosing graphs.

    ```mlir
    %y = mp.onnx_op "com.microsoft" "FusedConv" version 1 (%x, %w) {onnx_attrs = {activation = "Relu"}} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$domain,
                       StrAttr:$op_type, I64Attr:$version,
                       OptionalAttr<DictionaryAttr>:$onnx_attrs,
                       OptionalAttr<StrArrayAttr>:$region_names);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region VariadicRegion<SizedRegion<1>>:$subgraphs);
  let assemblyFormat = [{
    $domain $op_type `version` $version `(` $inputs `)` attr-dict
    (`subgraphs` $subgraphs^)? `:` functional-type($inputs, $outputs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Op families
//===----------------------------------------------------------------------===//

// Y = f(X), Y has X's type.
class MP_UnaryOp<string mnemonic, string onnx, int since,
                 Type T = MP_FloatTensor, dag attrs = (ins)>
    : MP_OnnxOp<mnemonic, onnx, since, "inferSameAsFirst", 1, 1> {
  let arguments = !con((ins T:$X), attrs);
  let results = (outs T:$Y);
}

// C = A op B with multidirectional (numpy) broadcasting.
class MP_BinaryOp<string mnemonic, string onnx, int since,
                  Type T = MP_NumericTensor, dag attrs = (ins)>
    : MP_OnnxOp<mnemonic, onnx, since, "inferBroadcast", 2, 1> {
  let arguments = !con((ins T:$A, T:$B), attrs);
  let results = (outs T:$C);
}

// Comparisons and logic: broadcast, bool result.
class MP_CompareOp<string mnemonic, string onnx, int since,
                   Type T = MP_Tensor>
    : MP_OnnxOp<mnemonic, onnx, since, "inferBroadcastToBool", 2, 1> {
  let arguments = (ins T:$A, T:$B);
  let results = (outs MP_BoolTensor:$C);
}

// Sum / Max / Min / Mean of any number of broadcast inputs.
class MP_VariadicOp<string mnemonic, string onnx, int since>
    : MP_OnnxOp<mnemonic, onnx, since, "inferBroadcast", -1, 1> {
  let arguments = (ins Variadic<MP_NumericTensor>:$data_0);
  let results = (outs MP_NumericTensor:$result);
}

// Reductions with `axes` as an attribute (until opset 18).
class MP_ReduceOp<string mnemonic, string onnx, int since>
    : MP_OnnxOp<mnemonic, onnx, since, "inferReduce", 1, 1> {
  let arguments = (ins MP_NumericTensor:$data, MP_OptInts:$axes,
                       MP_OptInt:$keepdims);
  let results = (outs MP_NumericTensor:$reduced);
}

//===----------------------------------------------------------------------===//
// Elementwise unary math and activations
//===----------------------------------------------------------------------===//

def MP_AbsOp : MP_UnaryOp<"abs", "Abs", 6, MP_NumericTensor>;
def MP_NegOp : MP_UnaryOp<"neg", "Neg", 6, MP_NumericTensor>;
def MP_ExpOp : MP_UnaryOp<"exp", "Exp", 6>;
def MP_LogOp : MP_UnaryOp<"log", "Log", 6>;
def MP_SqrtOp : MP_UnaryOp<"sqrt", "Sqrt", 6>;
def MP_ReciprocalOp : MP_UnaryOp<"reciprocal", "Reciprocal", 6>;
def MP_ReluOp : MP_UnaryOp<"relu", "Relu", 6, MP_NumericTensor>;
def MP_SigmoidOp : MP_UnaryOp<"sigmoid", "Sigmoid", 6>;
def MP_TanhOp : MP_UnaryOp<"tanh", "Tanh", 6>;
def MP_ErfOp : MP_UnaryOp<"erf", "Erf", 9, MP_NumericTensor>;
def MP_FloorOp : MP_UnaryOp<"floor", "Floor", 6>;
def MP_CeilOp : MP_UnaryOp<"ceil", "Ceil", 6>;
def MP_RoundOp : MP_UnaryOp<"round", "Round", 11>;
def MP_SignOp : MP_UnaryOp<"sign", "Sign", 9, MP_NumericTensor>;
def MP_SinOp : MP_UnaryOp<"sin", "Sin", 7>;
def MP_CosOp : MP_UnaryOp<"cos", "Cos", 7>;
def MP_TanOp : MP_UnaryOp<"tan", "Tan", 7>;
def MP_AsinOp : MP_UnaryOp<"asin", "Asin", 7>;
def MP_AcosOp : MP_UnaryOp<"acos", "Acos", 7>;
def MP_AtanOp : MP_UnaryOp<"atan", "Atan", 7>;
def MP_SinhOp : MP_UnaryOp<"sinh", "Sinh", 9>;
def MP_CoshOp : MP_UnaryOp<"cosh", "Cosh", 9>;
def MP_AsinhOp : MP_UnaryOp<"asinh", "Asinh", 9>;
def MP_AcoshOp : MP_UnaryOp<"acosh", "Acosh", 9>;
def MP_AtanhOp : MP_UnaryOp<"atanh", "Atanh", 9>;
def MP_SoftplusOp : MP_UnaryOp<"softplus", "Softplus", 1>;
def MP_SoftsignOp : MP_UnaryOp<"softsign", "Softsign", 1>;
def MP_HardSwishOp : MP_UnaryOp<"hard_swish", "HardSwish", 14>;
def MP_NotOp : MP_UnaryOp<"not", "Not", 1, MP_BoolTensor>;
// Gelu-20: `approximate` "none" (x * Phi(x), with erf) or "tanh".
def MP_GeluOp : MP_UnaryOp<"gelu", "Gelu", 20, MP_FloatTensor,
                           (ins MP_OptStr:$approximate)>;
def MP_LeakyReluOp : MP_UnaryOp<"leaky_relu", "LeakyRelu", 6, MP_FloatTensor,
                                (ins MP_OptFloat:$alpha)>;
def MP_EluOp : MP_UnaryOp<"elu", "Elu", 6, MP_FloatTensor,
                          (ins MP_OptFloat:$alpha)>;
def MP_CeluOp : MP_UnaryOp<"celu", "Celu", 12, MP_FloatTensor,
                           (ins MP_OptFloat:$alpha)>;
def MP_SeluOp : MP_UnaryOp<"selu", "Selu", 6, MP_FloatTensor,
                           (ins MP_OptFloat:$alpha, MP_OptFloat:$gamma)>;
def MP_HardSigmoidOp : MP_UnaryOp<"hard_sigmoid", "HardSigmoid", 6,
    MP_FloatTensor, (ins MP_OptFloat:$alpha, MP_OptFloat:$beta)>;
def MP_ThresholdedReluOp : MP_UnaryOp<"thresholded_relu", "ThresholdedRelu",
    10, MP_FloatTensor, (ins MP_OptFloat:$alpha)>;
def MP_ShrinkOp : MP_UnaryOp<"shrink", "Shrink", 9, MP_NumericTensor,
                             (ins MP_OptFloat:$bias, MP_OptFloat:$lambd)>;

def MP_IdentityOp : MP_OnnxOp<"identity", "Identity", 1, "inferSameAsFirst",
                              1, 1> {
  let arguments = (ins MP_AnyValue:$input);
  let results = (outs MP_AnyValue:$output);
}

def MP_IsNaNOp : MP_OnnxOp<"is_nan", "IsNaN", 9, "inferSameShapeBool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X);
  let results = (outs MP_BoolTensor:$Y);
}

def MP_IsInfOp : MP_OnnxOp<"is_inf", "IsInf", 10, "inferSameShapeBool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_OptInt:$detect_negative,
                       MP_OptInt:$detect_positive);
  let results = (outs MP_BoolTensor:$Y);
}

def MP_ClipOp : MP_OnnxOp<"clip", "Clip", 11, "inferSameAsFirst", 3, 1> {
  let arguments = (ins MP_NumericTensor:$input, MP_OptTensor:$min,
                       MP_OptTensor:$max);
  let results = (outs MP_NumericTensor:$output);
}

def MP_CastOp : MP_OnnxOp<"cast", "Cast", 6, "inferCast", 1, 1> {
  let summary = "ONNX Cast: convert to the element type given by `to`";
  let arguments = (ins MP_Tensor:$input, MP_Int:$to, MP_OptInt:$saturate,
                       MP_OptStr:$round_mode);
  let results = (outs MP_Tensor:$output);
  // The casts the passes insert have no round_mode (Cast-25's, for float8
  // e8m0 results only).
  let builders = [
    OpBuilder<(ins "::mlir::Type":$output, "::mlir::Value":$input,
                   "::mlir::IntegerAttr":$to, "::mlir::IntegerAttr":$saturate), [{
      build($_builder, $_state, output, input, to, saturate,
            ::mlir::StringAttr());
    }]>
  ];
}

def MP_CastLikeOp : MP_OnnxOp<"cast_like", "CastLike", 15, "inferCastLike",
                              2, 1> {
  let arguments = (ins MP_Tensor:$input, MP_Tensor:$target_type);
  let results = (outs MP_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Elementwise binary, comparisons, logic, variadic
//===----------------------------------------------------------------------===//

def MP_AddOp : MP_BinaryOp<"add", "Add", 7>;
def MP_SubOp : MP_BinaryOp<"sub", "Sub", 7>;
def MP_MulOp : MP_BinaryOp<"mul", "Mul", 7>;
def MP_DivOp : MP_BinaryOp<"div", "Div", 7>;
def MP_ModOp : MP_BinaryOp<"mod", "Mod", 10, MP_NumericTensor,
                           (ins MP_OptInt:$fmod)>;

def MP_PowOp : MP_OnnxOp<"pow", "Pow", 7, "inferBroadcast", 2, 1> {
  let arguments = (ins MP_NumericTensor:$X, MP_NumericTensor:$Y);
  let results = (outs MP_NumericTensor:$Z);
}

def MP_PReluOp : MP_OnnxOp<"prelu", "PRelu", 7, "inferBroadcast", 2, 1> {
  let arguments = (ins MP_NumericTensor:$X, MP_NumericTensor:$slope);
  let results = (outs MP_NumericTensor:$Y);
}

def MP_EqualOp : MP_CompareOp<"equal", "Equal", 7>;
def MP_LessOp : MP_CompareOp<"less", "Less", 7>;
def MP_GreaterOp : MP_CompareOp<"greater", "Greater", 7>;
def MP_LessOrEqualOp : MP_CompareOp<"less_or_equal", "LessOrEqual", 12>;
def MP_GreaterOrEqualOp : MP_CompareOp<"greater_or_equal", "GreaterOrEqual", 12>;
def MP_AndOp : MP_CompareOp<"and", "And", 7, MP_BoolTensor>;
def MP_OrOp : MP_CompareOp<"or", "Or", 7, MP_BoolTensor>;
def MP_XorOp : MP_CompareOp<"xor", "Xor", 7, MP_BoolTensor>;

// Bits of integers.
def MP_BitwiseAndOp : MP_BinaryOp<"bitwise_and", "BitwiseAnd", 18, MP_IntTensor>;
def MP_BitwiseOrOp : MP_BinaryOp<"bitwise_or", "BitwiseOr", 18, MP_IntTensor>;
def MP_BitwiseXorOp : MP_BinaryOp<"bitwise_xor", "BitwiseXor", 18, MP_IntTensor>;
def MP_BitwiseNotOp : MP_UnaryOp<"bitwise_not", "BitwiseNot", 18, MP_IntTensor>;
def MP_BitShiftOp : MP_BinaryOp<"bit_shift", "BitShift", 11, MP_IntTensor,
                                (ins MP_Str:$direction)> {
  let summary = "ONNX BitShift: `direction` \"LEFT\" or \"RIGHT\" (unsigned X)";
}

def MP_SumOp : MP_VariadicOp<"sum", "Sum", 8>;
def MP_MaxOp : MP_VariadicOp<"max", "Max", 8>;
def MP_MinOp : MP_VariadicOp<"min", "Min", 8>;
def MP_MeanOp : MP_VariadicOp<"mean", "Mean", 8>;

def MP_WhereOp : MP_OnnxOp<"where", "Where", 9, "inferWhere", 3, 1> {
  let arguments = (ins MP_BoolTensor:$condition, MP_Tensor:$X, MP_Tensor:$Y);
  let results = (outs MP_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Matrix products, convolution, pooling, normalization
//===----------------------------------------------------------------------===//

def MP_MatMulOp : MP_OnnxOp<"matmul", "MatMul", 1, "inferMatMul", 2, 1> {
  let arguments = (ins MP_NumericTensor:$A, MP_NumericTensor:$B);
  let results = (outs MP_NumericTensor:$Y);
}

def MP_GemmOp : MP_OnnxOp<"gemm", "Gemm", 7, "inferGemm", 3, 1> {
  let arguments = (ins MP_NumericTensor:$A, MP_NumericTensor:$B,
                       MP_OptTensor:$C, MP_OptFloat:$alpha, MP_OptFloat:$beta,
                       MP_OptInt:$transA, MP_OptInt:$transB);
  let results = (outs MP_NumericTensor:$Y);
}

def MP_EinsumOp : MP_OnnxOp<"einsum", "Einsum", 12, "inferEinsum", -1, 1> {
  let arguments = (ins Variadic<MP_NumericTensor>:$Inputs, MP_Str:$equation);
  let results = (outs MP_NumericTensor:$Output);
}

def MP_ConvOp : MP_OnnxOp<"conv", "Conv", 1, "inferConv", 3, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W,
                       MP_OptFloatTensor:$B, MP_OptStr:$auto_pad,
                       MP_OptInts:$dilations, MP_OptInt:$group,
                       MP_OptInts:$kernel_shape, MP_OptInts:$pads,
                       MP_OptInts:$strides);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_ConvTransposeOp : MP_OnnxOp<"conv_transpose", "ConvTranspose", 1,
                                   "inferConvTranspose", 3, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W,
                       MP_OptFloatTensor:$B, MP_OptStr:$auto_pad,
                       MP_OptInts:$dilations, MP_OptInt:$group,
                       MP_OptInts:$kernel_shape, MP_OptInts:$output_padding,
                       MP_OptInts:$output_shape, MP_OptInts:$pads,
                       MP_OptInts:$strides);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_MaxPoolOp : MP_OnnxOp<"max_pool", "MaxPool", 8, "inferPool", 1, 2> {
  let arguments = (ins MP_NumericTensor:$X, MP_OptStr:$auto_pad,
                       MP_OptInt:$ceil_mode, MP_OptInts:$dilations,
                       MP_Ints:$kernel_shape, MP_OptInts:$pads,
                       MP_OptInt:$storage_order, MP_OptInts:$strides);
  let results = (outs MP_NumericTensor:$Y, MP_I64Tensor:$Indices);
}

def MP_AveragePoolOp : MP_OnnxOp<"average_pool", "AveragePool", 7, "inferPool",
                                 1, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_OptStr:$auto_pad,
                       MP_OptInt:$ceil_mode, MP_OptInt:$count_include_pad,
                       MP_Ints:$kernel_shape, MP_OptInts:$pads,
                       MP_OptInts:$strides);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_LpPoolOp : MP_OnnxOp<"lp_pool", "LpPool", 11, "inferPool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_OptStr:$auto_pad,
                       MP_Ints:$kernel_shape, MP_OptInt:$p, MP_OptInts:$pads,
                       MP_OptInts:$strides);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_GlobalAveragePoolOp : MP_OnnxOp<"global_average_pool",
    "GlobalAveragePool", 1, "inferGlobalPool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_GlobalMaxPoolOp : MP_OnnxOp<"global_max_pool", "GlobalMaxPool", 1,
                                   "inferGlobalPool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_GlobalLpPoolOp : MP_OnnxOp<"global_lp_pool", "GlobalLpPool", 2,
                                  "inferGlobalPool", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_OptInt:$p);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_BatchNormalizationOp : MP_OnnxOp<"batch_normalization",
    "BatchNormalization", 9, "inferBatchNorm", 5, 3> {
  let description = [{
    ONNX BatchNormalization (schema 9 and later). All three outputs are
    results; `running_mean` and `running_var` are only meaningful (and only
    named in `mp.outputs`) in training mode.
  }];
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$scale,
                       MP_FloatTensor:$B, MP_FloatTensor:$input_mean,
                       MP_FloatTensor:$input_var, MP_OptFloat:$epsilon,
                       MP_OptFloat:$momentum, MP_OptInt:$training_mode);
  let results = (outs MP_FloatTensor:$Y, MP_FloatTensor:$running_mean,
                      MP_FloatTensor:$running_var);
}

def MP_InstanceNormalizationOp : MP_OnnxOp<"instance_normalization",
    "InstanceNormalization", 6, "inferSameAsFirst", 3, 1> {
  let arguments = (ins MP_FloatTensor:$input, MP_FloatTensor:$scale,
                       MP_FloatTensor:$B, MP_OptFloat:$epsilon);
  let results = (outs MP_FloatTensor:$output);
}

def MP_LayerNormalizationOp : MP_OnnxOp<"layer_normalization",
    "LayerNormalization", 17, "inferLayerNorm", 3, 3> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$Scale,
                       MP_OptFloatTensor:$B, MP_OptInt:$axis,
                       MP_OptFloat:$epsilon, MP_OptInt:$stash_type);
  let results = (outs MP_FloatTensor:$Y, MP_FloatTensor:$Mean,
                      MP_FloatTensor:$InvStdDev);
}

// RMSNormalization-23: y = x / sqrt(mean(x^2) + epsilon) * scale over the
// dims from `axis`; the statistics in stash_type (f32 or wider). Y takes
// scale's element type.
def MP_RMSNormalizationOp : MP_OnnxOp<"rms_normalization",
    "RMSNormalization", 23, "inferRmsNorm", 2, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$scale,
                       MP_OptInt:$axis, MP_OptFloat:$epsilon,
                       MP_OptInt:$stash_type);
  let results = (outs MP_FloatTensor:$Y);
}

// GroupNormalization-21: X [N, C, D...] in `num_groups` groups of channels,
// normalized over each group's channels and spatial dims, then scale[c] and
// bias[c] per channel. (Version 18's per-group scale and bias import as the
// function body.)
def MP_GroupNormalizationOp : MP_OnnxOp<"group_normalization",
    "GroupNormalization", 21, "inferSameAsFirst", 3, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$scale,
                       MP_FloatTensor:$bias, MP_OptFloat:$epsilon,
                       MP_Int:$num_groups, MP_OptInt:$stash_type);
  let results = (outs MP_FloatTensor:$Y);
}

// RotaryEmbedding-23: the first rotary_embedding_dim (default: all) of each
// head's dims rotated pairwise by the cos / sin caches (gathered by
// position_ids when given), halves or interleaved pairs. 4-D X is [batch,
// heads, seq, size], 3-D X [batch, seq, heads * size] (num_heads).
// mp-decompose-nodes lowers it.
def MP_RotaryEmbeddingOp : MP_OnnxOp<"rotary_embedding", "RotaryEmbedding", 23,
    "inferSameAsFirst", 4, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$cos_cache,
                       MP_FloatTensor:$sin_cache, MP_OptIntTensor:$position_ids,
                       MP_OptInt:$interleaved, MP_OptInt:$num_heads,
                       MP_OptInt:$rotary_embedding_dim);
  let results = (outs MP_FloatTensor:$Y);
}

// Attention-23 without past key / value, present outputs, softcap or the
// qk_matmul output (nodes with those import as the function body):
// softmax(scale * Q K^T + mask) V, 3-D ([batch, seq, heads * size], heads
// from q_num_heads / kv_num_heads) or 4-D ([batch, heads, seq, size]),
// grouped-query K / V heads, a bool or additive mask, is_causal.
// mp-decompose-nodes lowers it (mp/Dialect/MP/AttentionForm.h).
def MP_AttentionOp : MP_OnnxOp<"attention", "Attention", 23,
    "inferAttention", 4, 1> {
  let arguments = (ins MP_FloatTensor:$Q, MP_FloatTensor:$K,
                       MP_FloatTensor:$V, MP_OptTensor:$attn_mask,
                       MP_OptInt:$is_causal, MP_OptInt:$kv_num_heads,
                       MP_OptInt:$q_num_heads, MP_OptFloat:$scale,
                       MP_OptInt:$softmax_precision);
  let results = (outs MP_FloatTensor:$Y);
}

def MP_LRNOp : MP_OnnxOp<"lrn", "LRN", 1, "inferSameAsFirst", 1, 1> {
  let arguments = (ins MP_FloatTensor:$X, MP_OptFloat:$alpha,
                       MP_OptFloat:$beta, MP_OptFloat:$bias, MP_Int:$size);
  let results = (outs MP_FloatTensor:$Y);
}

//===----------------------------------------------------------------------===//
// Softmax, reductions, losses
//===----------------------------------------------------------------------===//

def MP_SoftmaxOp : MP_OnnxOp<"softmax", "Softmax", 13, "inferSameAsFirst",
                             1, 1> {
  let arguments = (ins MP_FloatTensor:$input, MP_OptInt:$axis);
  let results = (outs MP_FloatTensor:$output);
}

def MP_LogSoftmaxOp : MP_OnnxOp<"log_softmax", "LogSoftmax", 13,
                                "inferSameAsFirst", 1, 1> {
  let arguments = (ins MP_FloatTensor:$input, MP_OptInt:$axis);
  let results = (outs MP_FloatTensor:$output);
}

def MP_HardmaxOp : MP_OnnxOp<"hardmax", "Hardmax", 13, "inferSameAsFirst",
                             1, 1> {
  let arguments = (ins MP_FloatTensor:$input, MP_OptInt:$axis);
  let results = (outs MP_FloatTensor:$output);
}

def MP_ReduceSumOp : MP_OnnxOp<"reduce_sum", "ReduceSum", 13, "inferReduce",
                               2, 1> {
  let summary = "ONNX ReduceSum (schema 13 and later: axes as an input)";
  let arguments = (ins MP_NumericTensor:$data, MP_OptI64Tensor:$axes,
                       MP_OptInt:$keepdims, MP_OptInt:$noop_with_empty_axes);
  let results = (outs MP_NumericTensor:$reduced);
}

def MP_ReduceMeanOp : MP_ReduceOp<"reduce_mean", "ReduceMean", 1>;
def MP_ReduceMaxOp : MP_ReduceOp<"reduce_max", "ReduceMax", 1>;
def MP_ReduceMinOp : MP_ReduceOp<"reduce_min", "ReduceMin", 1>;
def MP_ReduceProdOp : MP_ReduceOp<"reduce_prod", "ReduceProd", 1>;
def MP_ReduceL1Op : MP_ReduceOp<"reduce_l1", "ReduceL1", 1>;
def MP_ReduceL2Op : MP_ReduceOp<"reduce_l2", "ReduceL2", 1>;
def MP_ReduceLogSumOp : MP_ReduceOp<"reduce_log_sum", "ReduceLogSum", 1>;
def MP_ReduceLogSumExpOp : MP_ReduceOp<"reduce_log_sum_exp",
                                       "ReduceLogSumExp", 1>;
def MP_ReduceSumSquareOp : MP_ReduceOp<"reduce_sum_square",
                                       "ReduceSumSquare", 1>;

def MP_ArgMaxOp : MP_OnnxOp<"arg_max", "ArgMax", 1, "inferArgReduce", 1, 1> {
  let arguments = (ins MP_NumericTensor:$data, MP_OptInt:$axis,
                       MP_OptInt:$keepdims, MP_OptInt:$select_last_index);
  let results = (outs MP_I64Tensor:$reduced);
}

def MP_ArgMinOp : MP_OnnxOp<"arg_min", "ArgMin", 1, "inferArgReduce", 1, 1> {
  let arguments = (ins MP_NumericTensor:$data, MP_OptInt:$axis,
                       MP_OptInt:$keepdims, MP_OptInt:$select_last_index);
  let results = (outs MP_I64Tensor:$reduced);
}

def MP_CumSumOp : MP_OnnxOp<"cum_sum", "CumSum", 11, "inferSameAsFirst", 2, 1> {
  let arguments = (ins MP_NumericTensor:$x, MP_IntTensor:$axis,
                       MP_OptInt:$exclusive, MP_OptInt:$reverse);
  let results = (outs MP_NumericTensor:$y);
}

def MP_SoftmaxCrossEntropyLossOp : MP_OnnxOp<"softmax_cross_entropy_loss",
    "SoftmaxCrossEntropyLoss", 13, "inferLoss", 3, 2> {
  let arguments = (ins MP_FloatTensor:$scores, MP_IntTensor:$labels,
                       MP_OptFloatTensor:$weights, MP_OptInt:$ignore_index,
                       MP_OptStr:$reduction);
  let results = (outs MP_FloatTensor:$output, MP_FloatTensor:$log_prob);
}

def MP_NegativeLogLikelihoodLossOp : MP_OnnxOp<"negative_log_likelihood_loss",
    "NegativeLogLikelihoodLoss", 13, "inferLoss", 3, 1> {
  let arguments = (ins MP_FloatTensor:$input, MP_IntTensor:$target,
                       MP_OptFloatTensor:$weight, MP_OptInt:$ignore_index,
                       MP_OptStr:$reduction);
  let results = (outs MP_FloatTensor:$loss);
}

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

def MP_LSTMOp : MP_OnnxOp<"lstm", "LSTM", 7, "inferRecurrent", 8, 3> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W, MP_FloatTensor:$R,
                       MP_OptFloatTensor:$B, MP_OptIntTensor:$sequence_lens,
                       MP_OptFloatTensor:$initial_h,
                       MP_OptFloatTensor:$initial_c, MP_OptFloatTensor:$P,
                       MP_OptFloats:$activation_alpha,
                       MP_OptFloats:$activation_beta, MP_OptStrs:$activations,
                       MP_OptFloat:$clip, MP_OptStr:$direction,
                       MP_OptInt:$hidden_size, MP_OptInt:$input_forget,
                       MP_OptInt:$layout);
  let results = (outs MP_FloatTensor:$Y, MP_FloatTensor:$Y_h,
                      MP_FloatTensor:$Y_c);
}

def MP_GRUOp : MP_OnnxOp<"gru", "GRU", 7, "inferRecurrent", 6, 2> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W, MP_FloatTensor:$R,
                       MP_OptFloatTensor:$B, MP_OptIntTensor:$sequence_lens,
                       MP_OptFloatTensor:$initial_h,
                       MP_OptFloats:$activation_alpha,
                       MP_OptFloats:$activation_beta, MP_OptStrs:$activations,
                       MP_OptFloat:$clip, MP_OptStr:$direction,
                       MP_OptInt:$hidden_size, MP_OptInt:$layout,
                       MP_OptInt:$linear_before_reset);
  let results = (outs MP_FloatTensor:$Y, MP_FloatTensor:$Y_h);
}

def MP_RNNOp : MP_OnnxOp<"rnn", "RNN", 7, "inferRecurrent", 6, 2> {
  let arguments = (ins MP_FloatTensor:$X, MP_FloatTensor:$W, MP_FloatTensor:$R,
                       MP_OptFloatTensor:$B, MP_OptIntTensor:$sequence_lens,
                       MP_OptFloatTensor:$initial_h,
                       MP_OptFloats:$activation_alpha,
                       MP_OptFloats:$activation_beta, MP_OptStrs:$activations,
                       MP_OptFloat:$clip, MP_OptStr:$direction,
                       MP_OptInt:$hidden_size, MP_OptInt:$layout);
  let results = (outs MP_FloatTensor:$Y, MP_FloatTensor:$Y_h);
}

//===----------------------------------------------------------------------===//
// Data movement and shapes
//===----------------------------------------------------------------------===//

def MP_ReshapeOp : MP_OnnxOp<"reshape", "Reshape", 5, "inferReshape", 2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_I64Tensor:$shape,
                       MP_OptInt:$allowzero);
  let results = (outs MP_Tensor:$reshaped);
}

def MP_TransposeOp : MP_OnnxOp<"transpose", "Transpose", 1, "inferTranspose",
                               1, 1> {
  let arguments = (ins MP_Tensor:$data, MP_OptInts:$perm);
  let results = (outs MP_Tensor:$transposed);
}

def MP_FlattenOp : MP_OnnxOp<"flatten", "Flatten", 1, "inferFlatten", 1, 1> {
  let arguments = (ins MP_Tensor:$input, MP_OptInt:$axis);
  let results = (outs MP_Tensor:$output);
}

def MP_SqueezeOp : MP_OnnxOp<"squeeze", "Squeeze", 13, "inferSqueeze", 2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_OptI64Tensor:$axes);
  let results = (outs MP_Tensor:$squeezed);
}

def MP_UnsqueezeOp : MP_OnnxOp<"unsqueeze", "Unsqueeze", 13, "inferUnsqueeze",
                               2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_I64Tensor:$axes);
  let results = (outs MP_Tensor:$expanded);
}

def MP_ConcatOp : MP_OnnxOp<"concat", "Concat", 4, "inferConcat", -1, 1> {
  let arguments = (ins Variadic<MP_Tensor>:$inputs, MP_Int:$axis);
  let results = (outs MP_Tensor:$concat_result);
}

def MP_SplitOp : MP_OnnxOp<"split", "Split", 13, "", 2, -1> {
  let summary = "ONNX Split (schema 13 and later: sizes as an input; 18: "
                "num_outputs, whose last part may be smaller)";
  let arguments = (ins MP_Tensor:$input, MP_OptI64Tensor:$split,
                       MP_OptInt:$axis, MP_OptInt:$num_outputs);
  let results = (outs Variadic<MP_Tensor>:$outputs);
  let hasVerifier = 1;
  let extraOnnxDeclarations = [{
    /// The outputs' types as the input's type and constant sizes (or an
    /// equal split) give them: the input's shape with the axis dim of each
    /// part, dynamic where unknown; empty for an unranked input. (Split has
    /// a variable number of results, so it is no InferTypeOpInterface op:
    /// mp-infer-shapes asks this.)
    ::llvm::SmallVector<::mlir::Type> inferOutputTypes();
  }];
}

def MP_SliceOp : MP_OnnxOp<"slice", "Slice", 10, "inferSlice", 5, 1> {
  let arguments = (ins MP_Tensor:$data, MP_IntTensor:$starts,
                       MP_IntTensor:$ends, MP_OptIntTensor:$axes,
                       MP_OptIntTensor:$steps);
  let results = (outs MP_Tensor:$output);
}

def MP_GatherOp : MP_OnnxOp<"gather", "Gather", 1, "inferGather", 2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_IntTensor:$indices, MP_OptInt:$axis);
  let results = (outs MP_Tensor:$output);
}

def MP_GatherElementsOp : MP_OnnxOp<"gather_elements", "GatherElements", 11,
                                    "inferGatherElements", 2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_IntTensor:$indices, MP_OptInt:$axis);
  let results = (outs MP_Tensor:$output);
}

def MP_GatherNDOp : MP_OnnxOp<"gather_nd", "GatherND", 12, "inferGatherND",
                              2, 1> {
  let arguments = (ins MP_Tensor:$data, MP_I64Tensor:$indices,
                       MP_OptInt:$batch_dims);
  let results = (outs MP_Tensor:$output);
}

def MP_ScatterElementsOp : MP_OnnxOp<"scatter_elements", "ScatterElements",
                                     11, "inferSameAsFirst", 3, 1> {
  let arguments = (ins MP_Tensor:$data, MP_IntTensor:$indices,
                       MP_Tensor:$updates, MP_OptInt:$axis,
                       MP_OptStr:$reduction);
  let results = (outs MP_Tensor:$output);
}

def MP_ScatterNDOp : MP_OnnxOp<"scatter_nd", "ScatterND", 11,
                               "inferSameAsFirst", 3, 1> {
  let arguments = (ins MP_Tensor:$data, MP_I64Tensor:$indices,
                       MP_Tensor:$updates, MP_OptStr:$reduction);
  let results = (outs MP_Tensor:$output);
}

def MP_TriluOp : MP_OnnxOp<"trilu", "Trilu", 14, "inferSameAsFirst", 2, 1> {
  let arguments = (ins MP_Tensor:$input, MP_OptI64Tensor:$k,
                       MP_OptInt:$upper);
  let results = (outs MP_Tensor:$output);
}

def MP_ShapeOp : MP_OnnxOp<"shape", "Shape", 1, "inferShape", 1, 1> {
  let arguments = (ins MP_Tensor:$data, MP_OptInt:$start, MP_OptInt:$end);
  let results = (outs MP_I64Tensor:$shape);
}

def MP_SizeOp : MP_OnnxOp<"size", "Size", 1, "inferSize", 1, 1> {
  let arguments = (ins MP_Tensor:$data);
  let results = (outs MP_I64Tensor:$size);
}

def MP_ExpandOp : MP_OnnxOp<"expand", "Expand", 8, "inferExpand", 2, 1> {
  let arguments = (ins MP_Tensor:$input, MP_I64Tensor:$shape);
  let results = (outs MP_Tensor:$output);
}

def MP_TileOp : MP_OnnxOp<"tile", "Tile", 6, "inferTile", 2, 1> {
  let arguments = (ins MP_Tensor:$input, MP_I64Tensor:$repeats);
  let results = (outs MP_Tensor:$output);
}

def MP_PadOp : MP_OnnxOp<"pad", "Pad", 11, "inferPad", 3, 1> {
  let summary = "ONNX Pad (schema 11 and later: pads as an input)";
  let arguments = (ins MP_Tensor:$data, MP_I64Tensor:$pads,
                       MP_OptTensor:$constant_value, MP_OptStr:$mode);
  let results = (outs MP_Tensor:$output);
}

def MP_ResizeOp : MP_OnnxOp<"resize", "Resize", 11, "inferResize", 4, 1> {
  let arguments = (ins MP_Tensor:$X, MP_OptTensor:$roi,
                       MP_OptFloatTensor:$scales, MP_OptI64Tensor:$sizes,
                       MP_OptStr:$coordinate_transformation_mode,
                       MP_OptFloat:$cubic_coeff_a, MP_OptInt:$exclude_outside,
                       MP_OptFloat:$extrapolation_value, MP_OptStr:$mode,
                       MP_OptStr:$nearest_mode);
  let results = (outs MP_Tensor:$Y);
}

// CenterCropPad-18: each of `axes` (default: all) cropped around its centre
// or zero-padded on both sides to `shape`'s size (the odd element at the
// end). mp-decompose-nodes lowers it to Slice and Pad.
def MP_CenterCropPadOp : MP_OnnxOp<"center_crop_pad", "CenterCropPad", 18,
    "inferCenterCropPad", 2, 1> {
  let arguments = (ins MP_Tensor:$input_data, MP_IntTensor:$shape,
                       MP_OptInts:$axes);
  let results = (outs MP_Tensor:$output_data);
}

def MP_DepthToSpaceOp : MP_OnnxOp<"depth_to_space", "DepthToSpace", 1,
                                  "inferDepthToSpace", 1, 1> {
  let arguments = (ins MP_Tensor:$input, MP_Int:$blocksize, MP_OptStr:$mode);
  let results = (outs MP_Tensor:$output);
}

def MP_SpaceToDepthOp : MP_OnnxOp<"space_to_depth", "SpaceToDepth", 1,
                                  "inferSpaceToDepth", 1, 1> {
  let arguments = (ins MP_Tensor:$input, MP_Int:$blocksize);
  let results = (outs MP_Tensor:$output);
}

def MP_DropoutOp : MP_OnnxOp<"dropout", "Dropout", 12, "inferDropout", 3, 2> {
  let summary = "ONNX Dropout (schema 12 and later: ratio and mode as inputs)";
  let arguments = (ins MP_FloatTensor:$data, MP_OptFloatTensor:$ratio,
                       AnyTypeOf<[TensorOf<[I1]>, MP_UnknownType, NoneType]>:$training_mode,
                       MP_OptInt:$seed);
  let results = (outs MP_FloatTensor:$output, MP_BoolTensor:$mask);
}

def MP_TopKOp : MP_OnnxOp<"top_k", "TopK", 10, "inferTopK", 2, 2> {
  let arguments = (ins MP_NumericTensor:$X, MP_I64Tensor:$K, MP_OptInt:$axis,
                       MP_OptInt:$largest, MP_OptInt:$sorted);
  let results = (outs MP_NumericTensor:$Values, MP_I64Tensor:$Indices);
}

def MP_NonZeroOp : MP_OnnxOp<"non_zero", "NonZero", 9, "inferNonZero", 1, 1> {
  let arguments = (ins MP_Tensor:$X);
  let results = (outs MP_I64Tensor:$Y);
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

def MP_ConstantOp : MP_OnnxOp<"constant", "Constant", 1, "inferConstant", 0, 1,
                              [ConstantLike]> {
  let summary = "ONNX Constant node";
  let description = [{
    An ONNX `Constant` node. Exactly one of its value attributes is set, with
    its ONNX name (`value`, `value_float`, `value_floats`, `value_int`,
    `value_ints`, `value_string`, `value_strings`).
  }];
  let arguments = (ins MP_OptTensorAttr:$value, MP_OptFloat:$value_float,
                       MP_OptFloats:$value_floats, MP_OptInt:$value_int,
                       MP_OptInts:$value_ints, MP_OptStr:$value_string,
                       MP_OptStrs:$value_strings);
  let results = (outs MP_Tensor:$output);
  let hasFolder = 1;
}

def MP_ConstantOfShapeOp : MP_OnnxOp<"constant_of_shape", "ConstantOfShape", 9,
                                     "inferConstantOfShape", 1, 1> {
  let arguments = (ins MP_I64Tensor:$input, MP_OptTensorAttr:$value);
  let results = (outs MP_Tensor:$output);
}

def MP_RangeOp : MP_OnnxOp<"range", "Range", 11, "inferRange", 3, 1> {
  let arguments = (ins MP_NumericTensor:$start, MP_NumericTensor:$limit,
                       MP_NumericTensor:$delta);
  let results = (outs MP_NumericTensor:$output);
}

include "mp/Dialect/MP/MPTrainingOps.td"

#endif // MP_DIALECT_MP_MPOPS_TD
