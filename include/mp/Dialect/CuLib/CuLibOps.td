//===- CuLibOps.td - the culib dialect -----------------------*- tablegen -*-===//
//
// The lowered form: one op per cuBLASLt / cuDNN library call, plus project
// kernels for what no library call covers, all on explicit buffers (memrefs)
// in destination-passing style: every op reads its `ins` and writes its
// `outs`, nothing returns a value but buffer definitions.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_CULIB_CULIBOPS_TD
#define MP_DIALECT_CULIB_CULIBOPS_TD

include "mp/Dialect/CuLib/CuLibAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class CuLib_Op<string mnemonic, list<Trait> traits = []>
    : Op<CuLib_Dialect, mnemonic, traits>;

def CuLib_Buffer : MemRefOf<[AnyType]>;
def CuLib_FloatBuffer : MemRefOf<[F16, BF16, F32, F64]>;

def CuLib_ComputeTypeAttr : TypeAttrOf<AnyFloat>;

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def CuLib_AllocOp : CuLib_Op<"alloc"> {
  let summary = "an activation buffer in the arena, or a buffer made at load";
  let description = [{
    A buffer for intermediate values. `offset` is its byte offset in the
    activation arena, set by the memory planner (buffers whose live ranges do
    not overlap share bytes).

    With `at_load`, the buffer is derived from weights once, when the
    runtime loads the plan, by the calls marked `culib.at_load`
    (culib-hoist-weight-calls), and is read-only afterwards: memory of its
    own, never in the arena, so it has no `offset`. Only such calls write
    it.
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset, UnitAttr:$at_load);
  // Allocating is its only effect: an unused buffer is dead.
  let results = (outs Res<CuLib_Buffer, "", [MemAlloc<DefaultResource>]>:$buffer);
  let assemblyFormat = "(`at_load` $at_load^)? attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def CuLib_ViewOp : CuLib_Op<"view", [Pure]> {
  let summary = "the bytes of a buffer seen with another shape (no call)";
  let description = [{
    `buffer` is `source`'s bytes with another shape of the same element type
    and count: no call, no memory of its own. The memory planner keeps the
    source's bytes while the view is used, and the plan gives both buffers
    the same bytes (culib-alias-reshapes makes views of the copies that
    only reshape).
  }];
  let arguments = (ins CuLib_Buffer:$source);
  let results = (outs CuLib_Buffer:$buffer);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($buffer)";
  let hasVerifier = 1;
}

def CuLib_WeightOp : CuLib_Op<"weight", [Pure]> {
  let summary = "a read-only weight buffer with its value";
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  let results = (outs CuLib_Buffer:$buffer);
  let assemblyFormat = "$name $value attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Library calls
//===----------------------------------------------------------------------===//

def CuLib_MatmulOp : CuLib_Op<"matmul", [AttrSizedOperandSegments]> {
  let summary = "cublasLtMatmul: D = epilogue(alpha * op(A) op(B) + beta * C + bias)";
  let description = [{
    A (batched) matrix product as one `cublasLtMatmul` call. `trans_a` /
    `trans_b` transpose the last two dims of A / B; leading dims are batch
    dims and broadcast (numpy rules). `C` (optional, shaped like D) is
    scaled by `beta`; `bias` (optional) is a vector over D's last dim added
    before the `epilogue` activation (`none`, `relu` or `gelu`), as
    cuBLASLt's BIAS/RELU_BIAS/GELU_BIAS epilogues do. `compute_type` is the
    accumulation type (`f32` for 16-bit inputs: the tensor-core contract).
    `bias_grad` (optional, a second output) gets the sums of op(B) over
    the contraction dim (N values; with `bias_grad_of_a`, of op(A): M
    values), accumulated in f32 and rounded once, in any shape of ones but
    its last dim and the summed operand's element type: in a training
    step's weight gradient dW = X^T dY (or dY^T X), the bias gradient
    sum(dY) (cuBLASLt's BGRADB / BGRADA epilogues; culib-fuse-bias-gradients
    folds the reduction in). The summed operand must be rank 2.
    The activation-gradient epilogues (`relu_grad`, `gelu_grad`,
    `gelu_tanh_grad`) read `aux` (D's shape: the activation's forward
    input) and take no bias: D = act'(aux) * (alpha * op(A) op(B) + beta *
    C), in f32 and rounded once (cuBLASLt's DRELU / DGELU): in a training
    step, the gradient dY W^T reaching an activation becomes the gradient
    of its input (culib-fuse-epilogues).
  }];
  let arguments = (ins CuLib_FloatBuffer:$a, CuLib_FloatBuffer:$b,
                       Optional<CuLib_FloatBuffer>:$c,
                       Optional<CuLib_FloatBuffer>:$bias,
                       Optional<CuLib_FloatBuffer>:$aux,
                       CuLib_FloatBuffer:$d,
                       Optional<CuLib_FloatBuffer>:$bias_grad,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0">:$beta,
                       CuLib_ComputeTypeAttr:$compute_type,
                       CuLib_EpilogueOrNone:$epilogue,
                       DefaultValuedAttr<BoolAttr, "false">:$bias_grad_of_a);
  let assemblyFormat = [{
    `ins` `(` $a `,` $b `)` (`c` `(` $c^ `)`)? (`bias` `(` $bias^ `)`)?
    (`aux` `(` $aux^ `)`)?
    `outs` `(` $d `)` (`bias_grad` `(` $bias_grad^ `)`)? attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_ConvFwdOp : CuLib_Op<"conv_fwd", [AttrSizedOperandSegments]> {
  let summary = "cudnnConvolutionForward (with optional bias, residual and activation)";
  let description = [{
    An N-d convolution. `layout` is `nchw` (channels first, as ONNX) or
    `nhwc` (channels last: what tensor cores prefer for 16-bit data; the
    filter is then [K, spatial..., C/groups]). `pads` holds begin values for
    every spatial dim, then end values. An optional `bias` vector, an
    optional `residual` (y's shape and type: cuDNN's z, a ResNet block's
    shortcut) and `activation` (`none`, `relu`, `clip` to [`clip_min`,
    `clip_max`]: ReLU6, `silu`, `sigmoid`, `tanh`, `hard_swish`) make it a
    fused convolution-bias-add-activation, y = activation(conv + bias +
    residual) in f32 and rounded once (the project's epilogue kernel after
    cuDNN; oneDNN's post-ops on the CPU).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$w,
                       Optional<CuLib_FloatBuffer>:$bias,
                       Optional<CuLib_FloatBuffer>:$residual,
                       CuLib_FloatBuffer:$y, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       CuLib_ComputeTypeAttr:$compute_type,
                       CuLib_LayoutOrNCHW:$layout,
                       CuLib_EpilogueOrNone:$activation,
                       OptionalAttr<F32Attr>:$clip_min,
                       OptionalAttr<F32Attr>:$clip_max);
  let assemblyFormat = [{
    `ins` `(` $x `,` $w `)` (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? `outs` `(` $y `)`
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_PoolOp : CuLib_Op<"pool"> {
  let summary = "cudnnPoolingForward";
  let description = [{
    Max or average pooling (`mode`: `max`, `avg` excluding padding,
    `avg_include_pad`) in `layout` `nchw` (ONNX's) or `nhwc` (channels last,
    set by culib-nhwc-layout). The output shape is given by `y` (ceil mode
    is decided by the compiler); window positions outside the input count
    as padding. `indices` (max only, optional, `nchw` only) receives ONNX
    MaxPool's flattened indices.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$y,
                       Optional<MemRefOf<[I64]>>:$indices, StrAttr:$mode,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       CuLib_LayoutOrNCHW:$layout);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` (`indices` `(` $indices^ `)`)?
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_BatchNormInferenceOp : CuLib_Op<"batch_norm_inference"> {
  let summary = "cudnnBatchNormalizationForwardInference";
  let description = [{
    y = scale * (x - mean) / sqrt(var + epsilon) + bias per channel (dim 1
    in `layout` `nchw`, the last dim in `nhwc`). The statistics, scale and
    bias are f32 even for 16-bit x, as cuDNN requires.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, MemRefOf<[F32]>:$scale,
                       MemRefOf<[F32]>:$bias, MemRefOf<[F32]>:$mean,
                       MemRefOf<[F32]>:$variance, CuLib_FloatBuffer:$y,
                       F32Attr:$epsilon,
                       CuLib_LayoutOrNCHW:$layout);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `,` $bias `,` $mean `,` $variance `)`
    `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_BatchNormTrainingOp : CuLib_Op<"batch_norm_training"> {
  let summary = "cudnnBatchNormalizationForwardTraining";
  let description = [{
    Normalizes with the batch statistics and writes the updated running
    statistics: running = momentum * running + (1 - momentum) * batch (ONNX
    BatchNormalization in training mode). `layout` as for
    batch_norm_inference. With `sync_ranks` (a data-parallel step) the
    statistics are those of the global batch: every rank's sums are added
    up (SyncBatchNorm).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, MemRefOf<[F32]>:$scale,
                       MemRefOf<[F32]>:$bias, MemRefOf<[F32]>:$mean,
                       MemRefOf<[F32]>:$variance, CuLib_FloatBuffer:$y,
                       MemRefOf<[F32]>:$running_mean,
                       MemRefOf<[F32]>:$running_variance, F32Attr:$epsilon,
                       F32Attr:$momentum,
                       CuLib_LayoutOrNCHW:$layout,
                       UnitAttr:$sync_ranks);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `,` $bias `,` $mean `,` $variance `)`
    `outs` `(` $y `,` $running_mean `,` $running_variance `)` attr-dict
    `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_SoftmaxOp : CuLib_Op<"softmax"> {
  let summary = "cudnnSoftmaxForward (accurate / log mode) over one axis";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$y,
                       I64Attr:$axis, DefaultValuedAttr<BoolAttr, "false">:$log);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}


def CuLib_ScaledSoftmaxOp : CuLib_Op<"scaled_softmax"> {
  let summary = "softmax(x * scale + mask) over the last dim";
  let description = [{
    y = softmax(x * scale + mask) along x's last dim, computed in f32 (f64
    for f64 data) from x and the optional `mask` (broadcast to x's shape,
    numpy rules; x's type or f32) and rounded once. culib-fuse-norms makes
    it from a softmax whose input is a constant scale of x, x plus a mask,
    or both (attention scores outside a fused attention, temperature
    scaling).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, Optional<CuLib_FloatBuffer>:$mask,
                       CuLib_FloatBuffer:$y,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let assemblyFormat = [{
    `ins` `(` $x `)` (`mask` `(` $mask^ `)`)? `outs` `(` $y `)` attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_ConvBwdDataOp : CuLib_Op<"conv_bwd_data"> {
  let summary = "cudnnConvolutionBackwardData: a transposed convolution";
  let description = [{
    ONNX ConvTranspose: `w` is [C, M/groups, K...]; `y`'s spatial sizes
    (which include ONNX's output_padding) are given by its type. `pads` holds
    begin values for every spatial dim, then end values. `layout` `nhwc`:
    x, y channels last and `w` [C, K..., M/groups].
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$w,
                       Optional<CuLib_FloatBuffer>:$bias,
                       CuLib_FloatBuffer:$y, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       CuLib_ComputeTypeAttr:$compute_type,
                       CuLib_LayoutOrNCHW:$layout);
  let assemblyFormat = [{
    `ins` `(` $x `,` $w `)` (`bias` `(` $bias^ `)`)? `outs` `(` $y `)`
    attr-dict `:` type(operands)
  }];
}

def CuLib_LRNOp : CuLib_Op<"lrn"> {
  let summary = "cudnnLRNCrossChannelForward (ONNX LRN)";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$y,
                       I64Attr:$size, F32Attr:$alpha, F32Attr:$beta,
                       F32Attr:$bias);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_RNNOp : CuLib_Op<"rnn", [AttrSizedOperandSegments]> {
  let summary = "cudnnRNNForward: ONNX LSTM, GRU or RNN (layout 0)";
  let description = [{
    `mode` is `lstm`, `gru` or `rnn`; the operands and attributes are ONNX's
    (`activations` as comma-separated ONNX names). Absent optional outputs
    are not computed.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$w,
                       CuLib_FloatBuffer:$r,
                       Optional<CuLib_FloatBuffer>:$b,
                       Optional<MemRefOf<[I32]>>:$sequence_lens,
                       Optional<CuLib_FloatBuffer>:$initial_h,
                       Optional<CuLib_FloatBuffer>:$initial_c,
                       Optional<CuLib_FloatBuffer>:$p,
                       Optional<CuLib_FloatBuffer>:$y,
                       Optional<CuLib_FloatBuffer>:$y_h,
                       Optional<CuLib_FloatBuffer>:$y_c,
                       StrAttr:$mode, StrAttr:$direction, I64Attr:$hidden_size,
                       StrAttr:$activations,
                       OptionalAttr<F32ArrayAttr>:$activation_alpha,
                       OptionalAttr<F32ArrayAttr>:$activation_beta,
                       OptionalAttr<F32Attr>:$clip,
                       DefaultValuedAttr<I64Attr, "0">:$input_forget,
                       DefaultValuedAttr<I64Attr, "0">:$linear_before_reset);
  let assemblyFormat = [{
    `ins` `(` $x `,` $w `,` $r `)` (`b` `(` $b^ `)`)?
    (`sequence_lens` `(` $sequence_lens^ `)`)?
    (`initial_h` `(` $initial_h^ `)`)? (`initial_c` `(` $initial_c^ `)`)?
    (`p` `(` $p^ `)`)? `outs` (`y` `(` $y^ `)`)? (`y_h` `(` $y_h^ `)`)?
    (`y_c` `(` $y_c^ `)`)? attr-dict `:` type(operands)
  }];
}

//===----------------------------------------------------------------------===//
// Project kernels: what no library call covers
//===----------------------------------------------------------------------===//

def CuLib_ElementwiseOp : CuLib_Op<"elementwise"> {
  let summary = "an elementwise kernel with numpy broadcasting";
  let description = [{
    `fn` names the function; its inputs broadcast (numpy rules) to the shape
    of `y`. The functions, their parameters (`alpha`, `beta`) and semantics
    are listed in docs/plan-format.md ("Call reference"): unary math and
    activations (abs ... atanh, leaky_relu, elu, selu, hard_sigmoid, ...),
    binary arithmetic (add, sub, mul, div, pow, mod, fmod, prelu, bit
    shifts), comparisons and logic (bool `y`), ternary where and clip, and
    variadic sum, mean, max, min. Computation happens in f32 for 16-bit data,
    with one rounding at the store.
  }];
  let arguments = (ins Variadic<CuLib_Buffer>:$inputs, CuLib_Buffer:$y,
                       CuLib_ElementwiseFnAttr:$fn, OptionalAttr<F32Attr>:$alpha,
                       OptionalAttr<F32Attr>:$beta);
  let assemblyFormat = [{
    $fn `ins` `(` $inputs `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_FusedElementwiseOp : CuLib_Op<"fused_elementwise"> {
  let summary = "elementwise functions and float casts as one call";
  let description = [{
    A group of elementwise functions (and the float casts between them) that
    culib-fuse-elementwise made one call: `program` lists the steps
    (mp/Runtime/FusedProgram.h; docs/plan-format.md): `xK` is input K,
    broadcast (numpy rules) to y's shape, `tK` step K's result, and the last
    step gives y. Every value inside is f32; y is rounded once at the store,
    so the group is never less accurate than its calls one by one. Inputs
    and y are f16, bf16 or f32 buffers.
  }];
  let arguments = (ins Variadic<CuLib_FloatBuffer>:$inputs,
                       CuLib_FloatBuffer:$y, StrAttr:$program);
  let assemblyFormat = [{
    $program `ins` `(` $inputs `)` `outs` `(` $y `)` attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_AttentionOp : CuLib_Op<"attention"> {
  let summary = "softmax(scale * Q K^T + mask) V as one call (f32 inside)";
  let description = [{
    Scaled dot-product attention, which culib-fuse-attention makes of the
    calls exporters write for it (mp/Runtime/Attention.h): for every batch
    b, head h and query row i, `s_j = scale * sum_d Q[b,h,i,d] K[b,h,j,d]`
    (`+ mask[b,h,i,j]`, additive: a causal mask is -inf above the diagonal),
    `O[b,h,i,:] = sum_j softmax(s)_j V[b,h,j,:]`. Scores, softmax and sums
    are f32 whatever the buffers' float types; O is rounded once at the
    store. `shape` is [batch, heads, queries, keys, head_dim, value_dim];
    each `*_view` is [offset, stride b, stride h, stride row, stride column]
    in elements of its buffer, so Q, K and V may be slices of one projection
    and O may land in the layout the next call reads (no transposes or
    copies); a mask stride of 0 broadcasts it.
  }];
  let arguments = (ins CuLib_FloatBuffer:$q, CuLib_FloatBuffer:$k,
                       CuLib_FloatBuffer:$v, Optional<CuLib_FloatBuffer>:$mask,
                       CuLib_FloatBuffer:$o, DenseI64ArrayAttr:$shape,
                       DenseI64ArrayAttr:$q_view, DenseI64ArrayAttr:$k_view,
                       DenseI64ArrayAttr:$v_view, DenseI64ArrayAttr:$o_view,
                       OptionalAttr<DenseI64ArrayAttr>:$mask_view,
                       F32Attr:$scale);
  let assemblyFormat = [{
    `ins` `(` $q `,` $k `,` $v `)` (`mask` `(` $mask^ `)`)? `outs` `(` $o `)`
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_CastOp : CuLib_Op<"cast"> {
  let summary = "element type conversion (round to nearest even)";
  let description = [{
    Any element type to any other (docs/plan-format.md, `kernel.cast`).
    `saturate` (ONNX Cast's, for float8 results): a value beyond the type's
    range becomes its largest value (true, the default) or infinity / NaN.
    `round_mode` (Cast-25's, for float8 e8m0 results): "up" (the default),
    "down" or "nearest".
  }];
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       DefaultValuedAttr<BoolAttr, "true">:$saturate,
                       DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_ReduceOp : CuLib_Op<"reduce"> {
  let summary = "a reduction over some axes";
  let description = [{
    `fn`: sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp,
    sum_square, argmax, argmin (i64 `y`, one axis). `y` keeps the reduced
    dims as 1 or drops them. Accumulates in `compute_type` (f32 for 16-bit
    data).
  }];
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y, CuLib_ReduceFnAttr:$fn,
                       DenseI64ArrayAttr:$axes,
                       CuLib_ComputeTypeAttr:$compute_type,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let assemblyFormat = [{
    $fn `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_TransposeOp : CuLib_Op<"transpose"> {
  let summary = "y = x with its dims permuted";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       DenseI64ArrayAttr:$perm);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_CopyOp : CuLib_Op<"copy"> {
  let summary = "copies the bytes of x to y (reshapes are copies of views)";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_GatherOp : CuLib_Op<"gather"> {
  let summary = "ONNX Gather along one axis (negative indices wrap)";
  let arguments = (ins CuLib_Buffer:$data, MemRefOf<[I32, I64]>:$indices,
                       CuLib_Buffer:$y, I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $data `,` $indices `)` `outs` `(` $y `)` attr-dict `:`
    type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_ConcatOp : CuLib_Op<"concat"> {
  let summary = "concatenation along one axis";
  let arguments = (ins Variadic<CuLib_Buffer>:$inputs, CuLib_Buffer:$y,
                       I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $inputs `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_BroadcastOp : CuLib_Op<"broadcast"> {
  let summary = "y = x broadcast (numpy rules) to the shape of y (ONNX Expand)";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_TileOp : CuLib_Op<"tile"> {
  let summary = "y = x repeated along each dim (y dim / x dim times)";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_SliceOp : CuLib_Op<"slice"> {
  let summary = "y[i...] = x[starts + i * steps ...]";
  let description = [{
    One start and one (non-zero) step per dim of x; the sizes are those of y. Starts are normalized: 0 <= start < dim wherever y has elements.
  }];
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$steps);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_PadOp : CuLib_Op<"pad"> {
  let summary = "pads x into y (ONNX Pad; negative pads crop)";
  let description = [{
    `mode`: constant (with `value`), reflect, edge or wrap. `pads` holds the begin pads of every dim, then the end pads.
  }];
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       StrAttr:$mode, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_ResizeOp : CuLib_Op<"resize"> {
  let summary = "ONNX Resize-13 (nearest, N-linear, cubic)";
  let description = [{
    `scales` (one per dim) are the model's scales, or y / x sizes when the model gave sizes; `roi` only for tf_crop_and_resize.
  }];
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       StrAttr:$mode, StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode, F32Attr:$cubic_coeff_a,
                       DefaultValuedAttr<I64Attr, "0">:$exclude_outside,
                       DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value,
                       F64ArrayAttr:$scales, OptionalAttr<F64ArrayAttr>:$roi);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_GatherElementsOp : CuLib_Op<"gather_elements"> {
  let summary = "ONNX GatherElements";
  let arguments = (ins CuLib_Buffer:$data, CuLib_Buffer:$indices, CuLib_Buffer:$y, I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $data `,` $indices `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_GatherNDOp : CuLib_Op<"gather_nd"> {
  let summary = "ONNX GatherND";
  let arguments = (ins CuLib_Buffer:$data, CuLib_Buffer:$indices, CuLib_Buffer:$y, DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let assemblyFormat = [{
    `ins` `(` $data `,` $indices `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_ScatterElementsOp : CuLib_Op<"scatter_elements"> {
  let summary = "ONNX ScatterElements: y = data with updates scattered along axis";
  let arguments = (ins CuLib_Buffer:$data, MemRefOf<[I32, I64]>:$indices,
                       CuLib_Buffer:$updates, CuLib_Buffer:$y, I64Attr:$axis,
                       CuLib_ScatterReductionOrNone:$reduction);
  let assemblyFormat = [{
    `ins` `(` $data `,` $indices `,` $updates `)` `outs` `(` $y `)` attr-dict
    `:` type(operands)
  }];
}

def CuLib_ScatterNDOp : CuLib_Op<"scatter_nd"> {
  let summary = "ONNX ScatterND: y = data with updates scattered";
  let arguments = (ins CuLib_Buffer:$data, MemRefOf<[I32, I64]>:$indices,
                       CuLib_Buffer:$updates, CuLib_Buffer:$y,
                       CuLib_ScatterReductionOrNone:$reduction);
  let assemblyFormat = [{
    `ins` `(` $data `,` $indices `,` $updates `)` `outs` `(` $y `)` attr-dict
    `:` type(operands)
  }];
}

def CuLib_LayerNormOp : CuLib_Op<"layer_norm", [AttrSizedOperandSegments]> {
  let summary = "ONNX LayerNormalization (statistics in f32)";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$scale,
                       Optional<CuLib_FloatBuffer>:$bias, CuLib_FloatBuffer:$y,
                       Optional<CuLib_FloatBuffer>:$mean,
                       Optional<CuLib_FloatBuffer>:$inv_std_dev,
                       I64Attr:$axis, F32Attr:$epsilon);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `)` (`bias` `(` $bias^ `)`)? `outs` `(` $y `)`
    (`mean` `(` $mean^ `)`)? (`inv_std_dev` `(` $inv_std_dev^ `)`)?
    attr-dict `:` type(operands)
  }];
}

def CuLib_RMSNormOp : CuLib_Op<"rms_norm"> {
  let summary = "RMS normalization (RMSNorm; ONNX RMSNormalization-23)";
  let description = [{
    y = x / sqrt(mean(x^2) + epsilon) * scale over x's dims from `axis`
    (the mean of the squares in f32 or wider, no mean subtracted), `scale`
    broadcast from the right onto those dims. culib-fuse-norms makes it
    from the chain exporters write (Pow or Mul, ReduceMean, Add, Sqrt,
    Reciprocal and Mul, or Div).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$scale,
                       CuLib_FloatBuffer:$y, I64Attr:$axis, F32Attr:$epsilon);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_GroupNormOp : CuLib_Op<"group_norm"> {
  let summary = "group normalization (GroupNorm; ONNX GroupNormalization-21)";
  let description = [{
    x [N, C, D...] (channels first) in `groups` groups of C / groups
    channels: y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c],
    the (biased) statistics over each group's channels and spatial dims in
    f32 or wider. `scale` and `bias` (optional) hold one value per channel
    ([C], or [C, 1, ...] as exporters write them). culib-fuse-norms makes it
    from the chain torch exports (Reshape to [N, groups, -1],
    InstanceNormalization with unit scale and zero bias, Reshape back, Mul,
    Add).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$scale,
                       Optional<CuLib_FloatBuffer>:$bias, CuLib_FloatBuffer:$y,
                       I64Attr:$groups, F32Attr:$epsilon);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `)` (`bias` `(` $bias^ `)`)? `outs` `(` $y `)`
    attr-dict `:` type(operands)
  }];
}

def CuLib_InstanceNormOp : CuLib_Op<"instance_norm"> {
  let summary = "ONNX InstanceNormalization";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$scale,
                       CuLib_FloatBuffer:$bias, CuLib_FloatBuffer:$y,
                       F32Attr:$epsilon);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `,` $bias `)` `outs` `(` $y `)` attr-dict `:`
    type(operands)
  }];
}

def CuLib_NLLLossOp : CuLib_Op<"nll_loss"> {
  let summary = "ONNX NegativeLogLikelihoodLoss on log-probabilities";
  let arguments = (ins CuLib_FloatBuffer:$input, MemRefOf<[I32, I64]>:$target,
                       Optional<CuLib_FloatBuffer>:$weight,
                       CuLib_FloatBuffer:$loss, CuLib_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let assemblyFormat = [{
    `ins` `(` $input `,` $target `)` (`weight` `(` $weight^ `)`)?
    `outs` `(` $loss `)` attr-dict `:` type(operands)
  }];
}

def CuLib_TopKOp : CuLib_Op<"topk"> {
  let summary = "ONNX TopK: the k largest (or smallest) along an axis";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$values,
                       MemRefOf<[I64]>:$indices, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $values `,` $indices `)` attr-dict `:`
    type(operands)
  }];
}

def CuLib_CumSumOp : CuLib_Op<"cumsum"> {
  let summary = "ONNX CumSum";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_TriluOp : CuLib_Op<"trilu"> {
  let summary = "ONNX Trilu on the last two dims";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       BoolAttr:$upper, I64Attr:$k);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}

def CuLib_HardmaxOp : CuLib_Op<"hardmax"> {
  let summary = "ONNX Hardmax: 1 at the first maximum along axis";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y,
                       I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
}


//===----------------------------------------------------------------------===//
// Training: state, backward calls, loss scaling, optimizer updates
//===----------------------------------------------------------------------===//

def CuLib_StateOp : CuLib_Op<"state"> {
  let summary = "a persistent, mutable buffer (parameters, optimizer state)";
  let description = [{
    A buffer that keeps its contents from one run of the plan to the next,
    initialised with `value` when the plan is loaded: the lowering of an
    `ml_program.global`. Calls that update it in place list it among their
    outputs. Never shared with other buffers (no arena offset).
  }];
  let arguments = (ins StrAttr:$name, ElementsAttr:$value);
  // Not Pure: two states with equal initial values are different buffers.
  let results = (outs Res<CuLib_Buffer, "", [MemAlloc<DefaultResource>]>:$buffer);
  let assemblyFormat = "$name $value attr-dict `:` type($buffer)";
}

def CuLib_ConvBwdFilterOp : CuLib_Op<"conv_bwd_filter"> {
  let summary = "cudnnConvolutionBackwardFilter: dW of a convolution";
  let description = [{
    `layout` `nhwc`: x and dy channels last, dw [K, R..., C/groups].
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$dy,
                       CuLib_FloatBuffer:$dw, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       CuLib_ComputeTypeAttr:$compute_type,
                       CuLib_LayoutOrNCHW:$layout);
  let assemblyFormat = [{
    `ins` `(` $x `,` $dy `)` `outs` `(` $dw `)` attr-dict `:` type(operands)
  }];
}

def CuLib_PoolBwdOp : CuLib_Op<"pool_bwd"> {
  let summary = "cudnnPoolingBackward: dX of max or average pooling";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$dy,
                       CuLib_FloatBuffer:$dx, StrAttr:$mode,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       CuLib_LayoutOrNCHW:$layout);
  let assemblyFormat = [{
    `ins` `(` $x `,` $dy `)` `outs` `(` $dx `)` attr-dict `:` type(operands)
  }];
}

def CuLib_BatchNormBwdOp : CuLib_Op<"batch_norm_bwd"> {
  let summary = "cudnnBatchNormalizationBackward (batch statistics recomputed)";
  let description = [{
    With `sync_ranks`, the statistics and the sums of dy and dy * x̂ that dx
    needs are the global batch's (SyncBatchNorm); dscale and dbias stay
    this rank's sums, which the gradient buckets then average.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, MemRefOf<[F32]>:$scale,
                       CuLib_FloatBuffer:$dy, CuLib_FloatBuffer:$dx,
                       MemRefOf<[F32]>:$dscale, MemRefOf<[F32]>:$dbias,
                       F32Attr:$epsilon,
                       CuLib_LayoutOrNCHW:$layout,
                       UnitAttr:$sync_ranks);
  let assemblyFormat = [{
    `ins` `(` $x `,` $scale `,` $dy `)` `outs` `(` $dx `,` $dscale `,` $dbias `)`
    attr-dict `:` type(operands)
  }];
}

def CuLib_LayerNormGradOp : CuLib_Op<"layer_norm_grad"> {
  let summary = "gradient of a layer norm from its forward statistics";
  let description = [{
    With x̂ = (x - mean) * inv_std_dev and g = dy * scale over x's dims from
    `axis`: dx = inv_std_dev * (g - mean(g) - x̂ * mean(g * x̂)), in f32 and
    rounded once; dscale = Σ dy * x̂ and dbias (optional) = Σ dy over the
    rows (the dims before `axis`). mean and inv_std_dev are culib.layer_norm's
    f32 outputs, one value per row; scale, dscale and dbias hold the
    normalized dims' values. One call for what the gradient rule computes
    in a dozen (mp.layer_norm_grad).
  }];
  let arguments = (ins CuLib_FloatBuffer:$dy, CuLib_FloatBuffer:$x,
                       CuLib_FloatBuffer:$scale, MemRefOf<[F32]>:$mean,
                       MemRefOf<[F32]>:$inv_std_dev, CuLib_FloatBuffer:$dx,
                       CuLib_FloatBuffer:$dscale,
                       Optional<CuLib_FloatBuffer>:$dbias, I64Attr:$axis);
  let assemblyFormat = [{
    `ins` `(` $dy `,` $x `,` $scale `,` $mean `,` $inv_std_dev `)`
    `outs` `(` $dx `,` $dscale `)` (`dbias` `(` $dbias^ `)`)?
    attr-dict `:` type(operands)
  }];
}

def CuLib_SoftmaxCrossEntropyGradOp : CuLib_Op<"softmax_cross_entropy_grad"> {
  let summary = "gradient of softmax cross-entropy w.r.t. the scores";
  let arguments = (ins CuLib_FloatBuffer:$scores, MemRefOf<[I32, I64]>:$labels,
                       CuLib_FloatBuffer:$dloss,
                       Optional<CuLib_FloatBuffer>:$weights,
                       CuLib_FloatBuffer:$dscores, CuLib_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let assemblyFormat = [{
    `ins` `(` $scores `,` $labels `,` $dloss `)` (`weights` `(` $weights^ `)`)?
    `outs` `(` $dscores `)` attr-dict `:` type(operands)
  }];
}

def CuLib_NLLLossGradOp : CuLib_Op<"nll_loss_grad"> {
  let summary = "gradient of negative log-likelihood w.r.t. its input";
  let arguments = (ins CuLib_FloatBuffer:$input, MemRefOf<[I32, I64]>:$target,
                       CuLib_FloatBuffer:$dloss,
                       Optional<CuLib_FloatBuffer>:$weight,
                       CuLib_FloatBuffer:$dinput, CuLib_LossReductionAttr:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let assemblyFormat = [{
    `ins` `(` $input `,` $target `,` $dloss `)` (`weight` `(` $weight^ `)`)?
    `outs` `(` $dinput `)` attr-dict `:` type(operands)
  }];
}

def CuLib_LSTMBwdOp : CuLib_Op<"lstm_bwd", [AttrSizedOperandSegments]> {
  let summary = "LSTM backward (cudnnRNNBackwardData/Weights), forward recomputed";
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$w,
                       CuLib_FloatBuffer:$r, Optional<CuLib_FloatBuffer>:$b,
                       Optional<CuLib_FloatBuffer>:$initial_h,
                       Optional<CuLib_FloatBuffer>:$initial_c,
                       Optional<CuLib_FloatBuffer>:$dy,
                       Optional<CuLib_FloatBuffer>:$dy_h,
                       Optional<CuLib_FloatBuffer>:$dy_c,
                       CuLib_FloatBuffer:$dx, CuLib_FloatBuffer:$dw,
                       CuLib_FloatBuffer:$dr, Optional<CuLib_FloatBuffer>:$db,
                       Optional<CuLib_FloatBuffer>:$dinitial_h,
                       Optional<CuLib_FloatBuffer>:$dinitial_c,
                       StrAttr:$direction, I64Attr:$hidden_size);
  let assemblyFormat = [{
    `ins` `(` $x `,` $w `,` $r `)` (`b` `(` $b^ `)`)?
    (`initial_h` `(` $initial_h^ `)`)? (`initial_c` `(` $initial_c^ `)`)?
    (`dy` `(` $dy^ `)`)? (`dy_h` `(` $dy_h^ `)`)? (`dy_c` `(` $dy_c^ `)`)?
    `outs` `(` $dx `,` $dw `,` $dr `)` (`db` `(` $db^ `)`)?
    (`dinitial_h` `(` $dinitial_h^ `)`)? (`dinitial_c` `(` $dinitial_c^ `)`)?
    attr-dict `:` type(operands)
  }];
}

def CuLib_UnscaleCheckFiniteOp : CuLib_Op<"unscale_check_finite",
                                          [AttrSizedOperandSegments]> {
  let summary = "gradients times 1/scale into f32, with one non-finite flag";
  let arguments = (ins MemRefOf<[F32]>:$scale,
                       Variadic<CuLib_FloatBuffer>:$grads,
                       MemRefOf<[F32]>:$found_inf,
                       Variadic<MemRefOf<[F32]>>:$unscaled);
  let assemblyFormat = [{
    `ins` `(` $scale `,` $grads `)` `outs` `(` $found_inf `,` $unscaled `)`
    attr-dict `:` type($scale) `,` type($grads) `->` type($found_inf) `,`
    type($unscaled)
  }];
  let hasVerifier = 1;
}

def CuLib_AllReduceOp : CuLib_Op<"all_reduce", [AttrSizedOperandSegments]> {
  let summary = "buffers reduced over the ranks of a data-parallel run";
  let description = [{
    `outputs_i` = the `reduction` of `inputs_i` over every rank (runtime
    call `comm.all_reduce`, on MPI or NCCL): `mean` averages gradients,
    `max` agrees on a found-inf flag. The buffers of one op are one bucket,
    packed into one message of `reduce_type` elements (f32, bf16 or f16; a
    16-bit mean divides by the rank count before it rounds). Each output has
    its input's type. Every rank runs the same calls in the same order.
  }];
  let arguments = (ins Variadic<CuLib_FloatBuffer>:$inputs,
                       Variadic<CuLib_FloatBuffer>:$outputs,
                       CuLib_CollectiveReductionAttr:$reduction,
                       CuLib_ComputeTypeAttr:$reduce_type);
  let assemblyFormat = [{
    $reduction `ins` `(` $inputs `)` `outs` `(` $outputs `)` attr-dict `:`
    type($inputs) `->` type($outputs)
  }];
  let hasVerifier = 1;
}

def CuLib_LossScaleUpdateOp : CuLib_Op<"loss_scale_update"> {
  let summary = "GradScaler's scale update, in place on state buffers";
  let arguments = (ins MemRefOf<[F32]>:$found_inf, MemRefOf<[F32]>:$scale,
                       MemRefOf<[I64]>:$growth_tracker,
                       F32Attr:$growth_factor, F32Attr:$backoff_factor,
                       I64Attr:$growth_interval);
  let assemblyFormat = [{
    `ins` `(` $found_inf `)` `outs` `(` $scale `,` $growth_tracker `)`
    attr-dict `:` type(operands)
  }];
}

def CuLib_SGDStepOp : CuLib_Op<"sgd_step", [AttrSizedOperandSegments]> {
  let summary = "fused torch.optim.SGD step, in place on state buffers";
  let arguments = (ins MemRefOf<[F32]>:$grad,
                       Optional<MemRefOf<[F32]>>:$found_inf,
                       MemRefOf<[F32]>:$param,
                       Optional<MemRefOf<[F32]>>:$momentum_buffer,
                       MemRefOf<[I64]>:$step, F32Attr:$lr, F32Attr:$momentum,
                       F32Attr:$dampening, F32Attr:$weight_decay,
                       BoolAttr:$nesterov);
  let assemblyFormat = [{
    `ins` `(` $grad `)` (`found_inf` `(` $found_inf^ `)`)? `outs` `(` $param `)`
    (`momentum_buffer` `(` $momentum_buffer^ `)`)? `step` `(` $step `)`
    attr-dict `:` type(operands)
  }];
}

def CuLib_AdamStepOp : CuLib_Op<"adam_step"> {
  let summary = "fused torch.optim.Adam/AdamW step, in place on state buffers";
  let arguments = (ins MemRefOf<[F32]>:$grad,
                       Optional<MemRefOf<[F32]>>:$found_inf,
                       MemRefOf<[F32]>:$param, MemRefOf<[F32]>:$exp_avg,
                       MemRefOf<[F32]>:$exp_avg_sq, MemRefOf<[I64]>:$step,
                       F32Attr:$lr, F32Attr:$beta1, F32Attr:$beta2,
                       F32Attr:$eps, F32Attr:$weight_decay,
                       BoolAttr:$decoupled_weight_decay);
  let assemblyFormat = [{
    `ins` `(` $grad `)` (`found_inf` `(` $found_inf^ `)`)?
    `outs` `(` $param `,` $exp_avg `,` $exp_avg_sq `,` $step `)`
    attr-dict `:` type(operands)
  }];
}

#endif // MP_DIALECT_CULIB_CULIBOPS_TD
