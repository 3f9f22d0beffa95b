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

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def CuLib_Dialect : Dialect {
  let name = "culib";
  let cppNamespace = "::mp::culib";
  let summary = "library calls (cuBLASLt, cuDNN) and kernels on explicit buffers";
  let description = [{
    The `culib` dialect is what `convert-mp-to-culib` produces and what the
    plan serializer reads. Values are buffers (`memref`s with the identity
    layout): activations come from `culib.alloc` (their offsets in the
    activation arena are set by the memory planner), weights from
    `culib.weight`, and graph inputs/outputs are function arguments. Each op
    is one call the runtime makes, with the data types and the compute
    (accumulation) type it uses: 16-bit inputs with an `f32` compute type is
    the tensor-core contract.
  }];
}

class CuLib_Op<string mnemonic, list<Trait> traits = []>
    : Op<CuLib_Dialect, mnemonic, traits>;

def CuLib_Buffer : MemRefOf<[AnyType]>;
def CuLib_FloatBuffer : MemRefOf<[F16, BF16, F32, F64]>;

def CuLib_ComputeTypeAttr : TypeAttrOf<AnyFloat>;

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

def CuLib_AllocOp : CuLib_Op<"alloc"> {
  let summary = "an activation buffer in the arena";
  let description = [{
    A buffer for intermediate values. `offset` is its byte offset in the
    activation arena, set by the memory planner (buffers whose live ranges do
    not overlap share bytes).
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$offset);
  // Allocating is its only effect: an unused buffer is dead.
  let results = (outs Res<CuLib_Buffer, "", [MemAlloc<DefaultResource>]>:$buffer);
  let assemblyFormat = "attr-dict `:` type($buffer)";
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
  }];
  let arguments = (ins CuLib_FloatBuffer:$a, CuLib_FloatBuffer:$b,
                       Optional<CuLib_FloatBuffer>:$c,
                       Optional<CuLib_FloatBuffer>:$bias,
                       CuLib_FloatBuffer:$d,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.0">:$beta,
                       CuLib_ComputeTypeAttr:$compute_type,
                       DefaultValuedStrAttr<StrAttr, "none">:$epilogue);
  let assemblyFormat = [{
    `ins` `(` $a `,` $b `)` (`c` `(` $c^ `)`)? (`bias` `(` $bias^ `)`)?
    `outs` `(` $d `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_ConvFwdOp : CuLib_Op<"conv_fwd"> {
  let summary = "cudnnConvolutionForward (with optional bias and ReLU)";
  let description = [{
    An N-d convolution. `layout` is `nchw` (channels first, as ONNX) or
    `nhwc` (channels last: what tensor cores prefer for 16-bit data; the
    filter is then [K, spatial..., C/groups]). `pads` holds begin values for
    every spatial dim, then end values. An optional `bias` vector and
    `activation` (`none` or `relu`) make it cuDNN's fused
    convolution-bias-activation.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$w,
                       Optional<CuLib_FloatBuffer>:$bias,
                       CuLib_FloatBuffer:$y, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$groups,
                       CuLib_ComputeTypeAttr:$compute_type,
                       DefaultValuedStrAttr<StrAttr, "nchw">:$layout,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation);
  let assemblyFormat = [{
    `ins` `(` $x `,` $w `)` (`bias` `(` $bias^ `)`)? `outs` `(` $y `)`
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_PoolOp : CuLib_Op<"pool"> {
  let summary = "cudnnPoolingForward";
  let description = [{
    Max or average pooling (`mode`: `max`, `avg` excluding padding,
    `avg_include_pad`) in NCHW layout. The output shape is given by `y`
    (ceil mode is decided by the compiler); window positions outside the
    input count as padding. `indices` (max only, optional) receives ONNX
    MaxPool's flattened indices.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, CuLib_FloatBuffer:$y,
                       Optional<MemRefOf<[I64]>>:$indices, StrAttr:$mode,
                       DenseI64ArrayAttr:$window, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$strides,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations);
  let assemblyFormat = [{
    `ins` `(` $x `)` `outs` `(` $y `)` (`indices` `(` $indices^ `)`)?
    attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_BatchNormInferenceOp : CuLib_Op<"batch_norm_inference"> {
  let summary = "cudnnBatchNormalizationForwardInference";
  let description = [{
    y = scale * (x - mean) / sqrt(var + epsilon) + bias per channel (dim 1).
    The statistics, scale and bias are f32 even for 16-bit x, as cuDNN
    requires.
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, MemRefOf<[F32]>:$scale,
                       MemRefOf<[F32]>:$bias, MemRefOf<[F32]>:$mean,
                       MemRefOf<[F32]>:$variance, CuLib_FloatBuffer:$y,
                       F32Attr:$epsilon);
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
    BatchNormalization in training mode).
  }];
  let arguments = (ins CuLib_FloatBuffer:$x, MemRefOf<[F32]>:$scale,
                       MemRefOf<[F32]>:$bias, MemRefOf<[F32]>:$mean,
                       MemRefOf<[F32]>:$variance, CuLib_FloatBuffer:$y,
                       MemRefOf<[F32]>:$running_mean,
                       MemRefOf<[F32]>:$running_variance, F32Attr:$epsilon,
                       F32Attr:$momentum);
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


//===----------------------------------------------------------------------===//
// Project kernels: what no library call covers
//===----------------------------------------------------------------------===//

def CuLib_ElementwiseOp : CuLib_Op<"elementwise"> {
  let summary = "an elementwise kernel with numpy broadcasting";
  let description = [{
    `fn` names the function; its inputs broadcast (numpy rules) to the shape
    of `y`. Unary: abs, neg, exp, log, sqrt, reciprocal, relu, sigmoid, tanh,
    erf, floor, ceil, round, sign, sin, cos, not, gelu. Binary: add, sub,
    mul, div, pow, max, min, prelu, mod, fmod. Comparisons (bool `y`):
    equal, less, greater, less_equal, greater_equal, and, or, xor. Ternary:
    where (condition, x, y), clip (x, min, max). Computation happens in f32
    for 16-bit data, with one rounding at the store.
  }];
  let arguments = (ins Variadic<CuLib_Buffer>:$inputs, CuLib_Buffer:$y,
                       StrAttr:$fn, OptionalAttr<F32Attr>:$alpha);
  let assemblyFormat = [{
    $fn `ins` `(` $inputs `)` `outs` `(` $y `)` attr-dict `:` type(operands)
  }];
  let hasVerifier = 1;
}

def CuLib_CastOp : CuLib_Op<"cast"> {
  let summary = "element type conversion (round to nearest even)";
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y);
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
  let arguments = (ins CuLib_Buffer:$x, CuLib_Buffer:$y, StrAttr:$fn,
                       DenseI64ArrayAttr:$axes,
                       CuLib_ComputeTypeAttr:$compute_type);
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

#endif // MP_DIALECT_CULIB_CULIBOPS_TD
