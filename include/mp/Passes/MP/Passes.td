//===- Passes.td - mp dialect transforms -------------------*- tablegen -*-===//
#ifndef MP_PASSES_MP_PASSES_TD
#define MP_PASSES_MP_PASSES_TD

include "mlir/Pass/PassBase.td"

def InferShapes : Pass<"mp-infer-shapes", "mlir::func::FuncOp"> {
  let summary = "Refine the result types of typed mp ops from their operands";
  let description = [{
    Re-runs the result-type inference of every typed op in program order and
    replaces each result type by the more refined of its current type and the
    inferred one (a `?` dim becomes static, an unranked tensor ranked,
    `!mp.unknown` a tensor type). The function's result types follow the
    values it returns. Use it after import with `--onnx-shape-inference=false`,
    on hand-written IR, or after passes that change operand types.

    With `require-static`, every op result that is still not a tensor of
    static shape afterwards is reported as an error: tensor-core padding and
    static memory planning need static shapes.
  }];
  let options = [
    Option<"requireStatic", "require-static", "bool", /*default=*/"false",
           "Report an error for each result whose shape is not static">
  ];
}

def DecomposeNodes : Pass<"mp-decompose-nodes",
                                 "mlir::func::FuncOp"> {
  let summary = "ONNX nodes without a typed op as the typed ops they compute";
  let description = [{
    Replaces ONNX nodes (`mp.onnx_op` of the default domain) whose tensors
    have static shapes by the typed ops they are defined by:

    QuantizeLinear and DequantizeLinear, computed in f32 as ONNX defines
    them: per tensor, per axis (`axis`, a 1-D scale) or per block
    (`block_size`, the scale repeated along `axis`).

    * QuantizeLinear to an integer type: `round(x / scale) + zero_point`
      (ties to even), clipped to the type's range, cast (exact). To float8
      or float4: `x / scale + zero_point` cast with ONNX's rounding and
      `saturate`.
    * DequantizeLinear: `(x - zero_point) * scale` in f32, then rounded once
      to the output type (the scale's, or `output_dtype`).

    Blocks that do not divide the axis, a `precision` other than the
    default, and dynamic shapes are left as they are (and reported by
    convert-mp-to-culib).

    LpNormalization: `x / ReduceL1(x)` or `x / ReduceL2(x)` over `axis`
    (keeping the dim), as ONNX's reference (a zero norm gives NaN or inf).

    Col2Im with constant `image_shape` and `block_shape`: a ConvTranspose
    with C groups over the columns reshaped to [N, C * K, L_1, ..., L_n] and
    a one-hot filter [C * K, 1, block...] (each column element is added at
    its image position, as ONNX's reference does), with the node's strides,
    dilations and pads and the output_padding that gives image_shape.

    Resize-18+ with `antialias` or a `keep_aspect_ratio_policy` (forms the
    runtime kernels do not take) and constant scales or sizes: one matrix
    product per resized axis with the interpolation weights of ONNX's
    reference implementation (mp/Dialect/MP/ResizeInterpolation.h: its
    coordinate transformations, coefficients, edge-clamped neighbours and
    exclude_outside; keep_aspect_ratio's common scale with the sizes
    rounded half up), in f32 (f64 for f64 data), rounded once to X's type.
    tf_crop_and_resize (its extrapolation value is no weighted sum) stays.

    mp.attention (Attention-23): 3-D inputs split into heads, grouped-query
    K / V heads repeated, a bool mask made additive and is_causal's -inf
    triangle added (mp/Dialect/MP/AttentionForm.h), then matmul, scale,
    mask, softmax (in f32 for 16-bit data) and matmul, which
    culib-fuse-attention makes one call.

    mp.rotary_embedding (RotaryEmbedding-23): the caches gathered by
    position_ids and broadcast over the heads, the rotated dims' halves (or
    interleaved pairs) x1, x2 replaced by cos * x1 - sin * x2 and
    sin * x1 + cos * x2, the other dims passed on.

    mp.center_crop_pad (CenterCropPad-18): a Slice of the centred window on
    the axes that shrink, a Pad with zeros (the odd one at the end) on those
    that grow.

    Part of the `mp-compile` pipeline, after mp-infer-shapes: import and
    export keep the nodes.
  }];
}

def RaiseComposites : Pass<"mp-raise-composites", "mlir::func::FuncOp"> {
  let summary = "The node chains exporters write for LayerNormalization and GELU as the typed ops";
  let description = [{
    Replaces the elementwise chains that exporters write for ops their opset
    lacks by the typed op:

    * a layer norm, `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)`,
      over the last dims (the square as Pow 2 or a product), then an
      optional `* scale` and `+ bias` of the normalised dims' shape ->
      `mp.layer_normalization` (f32 statistics);
    * GELU, `x * 0.5 * (1 + erf(x / sqrt 2))` (or `x * (1 / sqrt 2)`) ->
      `mp.gelu`, and `x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 *
      x^3)))` -> `mp.gelu` with `approximate = "tanh"`, their products in any
      order.

    Only chains whose intermediate values nothing else reads are replaced;
    the result keeps the last node's output name.

    mp-training runs it before it differentiates (its `raise-composites`
    option): one typed op then has one gradient rule and lowers to one call
    each way, where the chain's gradient is a chain again whose
    intermediates the backward pass keeps, so the culib fusion stage could
    fuse neither. Inference plans do not need it (culib-fuse-norms and
    culib-fuse-epilogues fold the same chains), and ONNX export must keep
    the nodes as the model wrote them.
  }];
  let statistics = [
    Statistic<"raisedLayerNorms", "layer-norms", "Layer norm chains raised">,
    Statistic<"raisedGelus", "gelus", "GELU chains raised">,
  ];
}

def FoldConstants : Pass<"mp-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate shape computations (Shape, Size, Range, small constant ops) at compile time";
  let description = [{
    Replaces `mp.shape` / `mp.size` of static tensors, ONNX EyeLike nodes
    (their input's shape alone decides them), and ops on small
    constant tensors (ConstantOfShape, Range, Cast, Gather, Concat, Slice,
    Transpose, reshape-likes, integer and float arithmetic with Mod,
    comparisons, Where), by `mp.constant`s, refining result types on the
    way (as `mp-infer-shapes`, mp.split's outputs included).
    With the input shapes fixed, this turns the run-time shape arithmetic
    of exported models (Shape -> Gather -> Concat -> Reshape) into static
    shapes, which plans need.

    Nodes in a form of another opset than the typed op's become the typed
    op (include/mp/Dialect/MP/OpsetForms.h): opset 18's axes inputs,
    Resize-18's `axes`, and the forms of opsets 1-12 (legacy `broadcast`,
    attribute axes, pads, starts and splits, Softmax before 13, Dropout in
    inference), once what they need is constant.
  }];
  let options = [
    Option<"maxElements", "max-elements", "unsigned", "65536",
           "Largest result (in elements) that is evaluated">,
  ];
}

def Autocast : Pass<"mp-autocast", "mlir::ModuleOp"> {
  let summary = "Run tensor-core ops in f16/bf16 and keep sensitive ops in f32 (four-colour algorithm)";
  let description = [{
    Colours every op with floating-point data from the precision policy
    (docs/policy.md): ALLOW ops (Conv, MatMul, Gemm, LSTM, ...) go to the
    target type, DENY ops (softmax, norms, reductions, exp/log/pow, losses)
    stay f32, INFER ops follow their neighbours and CLEAR ops (data movement)
    take their neighbours' precision. The colouring follows TensorFlow's
    algorithm over the whole function, nested regions included: deny spreads
    forward through infer/clear ops that feed other fp32 or infer ops; infer
    and clear ops that only feed fp32 ops join them (which moves a cast,
    never adds one), so decomposed LayerNorm, softmax and GELU chains stay
    f32 as a whole; infer/clear ops between low-precision ops, infer ops that
    follow them, and clear ops connected to them go low.

    Then exactly one cast per (value, type) is inserted right after the
    value's definition and shared by all its consumers; casts already in the
    model are reused. Initializers and constants read in low precision are
    converted at compile time (f16: finite values beyond ±65504 are clamped,
    with one warning per tensor); an initializer that only f32 ops read stays
    f32. Graph inputs and outputs keep their types unless
    `keep-io-types=false`. Low-precision tensor-core ops get
    `mp.accumulation_type = f32` (the lowering's compute type).

    `report` writes what was decided and why: .txt, .json, .dot (the graph
    coloured by precision) or .svg (through Graphviz); several files may be
    given, comma-separated. mp-opt's `--mp-report=FILE` sets it too.
  }];
  let options = [
    Option<"target", "target", "std::string", "\"\"",
           "Low-precision type: f16 (default) or bf16">,
    Option<"level", "level", "std::string", "\"\"",
           "default, tensor-cores-only or unsafe-force-all">,
    Option<"policyFile", "policy-file", "std::string", "\"\"",
           "A JSON policy file applied on top of the built-in policy">,
    Option<"keepIOTypes", "keep-io-types", "std::string", "\"\"",
           "true (default): graph inputs and outputs keep their types; "
           "false: they take the precision of their neighbours">,
    ListOption<"allowOps", "allow", "std::string",
               "Op types (ONNX op_type) to make ALLOW">,
    ListOption<"inferOps", "infer", "std::string",
               "Op types to make INFER">,
    ListOption<"clearOps", "clear", "std::string",
               "Op types to make CLEAR">,
    ListOption<"denyOps", "deny", "std::string",
               "Op types to make DENY">,
    ListOption<"allowNodes", "allow-nodes", "std::string",
               "Node names or globs to run in low precision">,
    ListOption<"denyNodes", "deny-nodes", "std::string",
               "Node names or globs to keep in f32">,
    ListOption<"reportFiles", "report", "std::string",
               "Report files (.txt, .json, .dot, .svg)">,
    Option<"validate", "validate", "bool", /*default=*/"false",
           "Run fp32 and mixed precision on sample inputs on the CPU runtime "
           "and deny the nodes responsible for errors over validate-tol "
           "(also mp-opt --mp-validate)">,
    ListOption<"validateInputs", "validate-inputs", "std::string",
               "Input files (.npy/.pb) for validation, in input order; "
               "default: random inputs from validate-seed">,
    Option<"validateSeed", "validate-seed", "unsigned", /*default=*/"0",
           "Seed of the random validation inputs">,
    Option<"validateTol", "validate-tol", "double", /*default=*/"1e-2",
           "Largest accepted max |error| / max |fp32 output| per output">,
    Option<"validateTimeLimit", "validate-time-limit", "double",
           /*default=*/"300", "Seconds after which validation stops searching">,
  ];
}

def CastCleanup : Pass<"mp-cast-cleanup", "mlir::func::FuncOp"> {
  let summary = "One cast per (value, type); fold exact cast round trips";
  let description = [{
    Merges casts of the same value to the same type into the one that
    dominates the others; replaces a cast to the type its input already has
    by the input; shortens cast(cast(x)) to cast(x) when the first cast
    widens exactly (f16 or bf16 to f32 or f64, f32 to f64), so an exact round
    trip such as f16 -> f32 -> f16 disappears, while lossy ones
    (f32 -> f16 -> f32) are never folded; removes casts nobody reads.
    `mp-autocast` leaves this form behind; run it standalone on imported
    models that carry redundant casts.
  }];
}

def PruneRows : Pass<"mp-prune-rows", "mlir::func::FuncOp"> {
  let summary = "Compute only the rows of an axis that the graph reads";
  let description = [{
    A classifier that reads one token of a Transformer (ViT's and BERT's
    [CLS]: `Gather(x, 0, axis=1)` after the encoder, or a Slice) reads one
    of the last layer's rows, yet the graph computes every row through
    that layer's MLP (ViT-B/16: 196 of 197 rows of the last layer's
    out-projection and MLP, about 6% of the model's FLOPs, for nothing).
    This pass moves a slice of one axis (step 1, constant bounds; a Gather
    of one constant index becomes such a slice and a reshape) up through
    the op that computes the sliced value when every reader of that value
    takes the same slice and the op computes each index of the axis from
    the same index of its operands: elementwise ops (operands that
    broadcast along the axis are read whole), reductions, softmax and
    layer norms along other axes, a matmul's rows and batch axes,
    transposes (the axis permuted) and reshapes that keep the dims up to
    the axis. It stops at a value something reads whole: in ViT, the
    attention's queries take the slice, its keys and values are computed
    for every row. The result is exact: the same arithmetic on fewer rows.
    mp-compile runs it after mp-fold-constants; a training step, whose
    backward reads the forward's values whole, keeps them.
  }];
}

def PadTensorCores : Pass<"mp-pad-tensor-cores", "mlir::func::FuncOp"> {
  let summary = "Pad GEMM and convolution dims to multiples of 8 for tensor cores";
  let description = [{
    Pads the dims of f16/bf16 MatMul and Gemm (N and K of both operands;
    M, the rows, is left alone: tensor cores take any, and a padded M cost
    a pad and a slice of the activations per GEMM) and
    Conv (input and output channels; 3 input channels with 32 or 64 output
    channels pad to 4) with zeros to multiples of `multiple`, runs the padded
    op and slices the result. Constant operands (weights, biases) are padded
    at compile time, activations with an `mp.pad`. Ops that are already
    aligned, grouped convolutions, ops with dynamic K/N and ops whose input,
    filter or result would grow by more than `max-growth` (in bytes) are
    skipped, with the reason in the report.

    The padded feature axis (N, output channels) is carried through ops that
    keep zeros zero (ReLU, LeakyReLU, Tanh, Clip around 0, bias adds,
    residual adds, Mul, BatchNormalization with constant parameters, pooling,
    Cast) into the next GEMM/convolution, which takes the padded width as its
    K / input channels with zero rows in its weights. So an MLP or a conv
    stack has no slice/pad pair between layers; a value is sliced once,
    where its original shape is observed (a graph output, a softmax, a
    reshape, ...). Padded and unpadded graphs compute the same values.

    Only low-precision ops are padded unless `all-types` (for f32 graphs and
    equivalence tests). `mp-autocast-pipeline` runs it after `mp-autocast`.
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"8",
           "Pad to multiples of this (8 for f16/bf16, 16 for fp8, 64 on A100+)">,
    Option<"maxGrowth", "max-growth", "double", /*default=*/"1.35",
           "Skip an op whose input, filter or result grows more than this (bytes)">,
    ListOption<"opTypes", "ops", "std::string",
               "Op types to pad (default MatMul, Gemm, Conv)">,
    Option<"allTypes", "all-types", "bool", /*default=*/"false",
           "Pad f32 ops too (by default only f16/bf16 ones)">,
    Option<"reportFile", "report", "std::string", "\"\"",
           "Write what was padded or skipped and why (.json or text)">,
  ];
}


//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

def Training : Pass<"mp-training", "mlir::ModuleOp"> {
  let summary = "Turn an inference graph into a training step (loss, gradients, optimizer)";
  let description = [{
    Rewrites the module's function into one training step:

      (batch, label) -> (loss, prediction)

    with the parameters and the optimizer state as mutable `ml_program.global`
    variables that the step updates in place. It appends the loss on a new
    `label` input (`cross-entropy` on logits, or on probabilities when the
    output is not a Softmax; `mse`), builds reverse-mode gradients through
    GradientOpInterface, and the optimizer update (`sgd` with momentum,
    dampening and Nesterov, `adam`, `adamw`) of every parameter: every
    floating-point initializer that the loss depends on, except those listed
    in `frozen`. BatchNormalization switches to training mode; its running
    statistics become globals updated each step.

    `optimizer=none` builds no update: the gradients become outputs named
    `grad:<parameter>` (and, with `wrt-inputs`, `grad:<input>` for every
    floating-point input), for gradient checks and custom loops.

    `data-parallel=true` makes a step for N ranks, each on its shard of the
    global batch: the parameter gradients are averaged over the ranks by
    `mp.all_reduce` ops, grouped into buckets of `bucket-mb` megabytes in
    the order the backward pass computes them, each issued right after its
    last gradient; `reduce-type` is what travels. The function gets the
    `mp.data_parallel` attribute (mp-loss-scale then agrees on the
    found-inf flag across the ranks).

    The function gets an `mp.training` attribute naming its inputs and
    outputs, which the plan carries for `mp-run --train`.
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"cross-entropy\"",
           "cross-entropy (logits, or probabilities), or mse">,
    Option<"label", "label", "std::string", "\"label\"",
           "Name of the new label input">,
    Option<"output", "output", "std::string", "\"\"",
           "The output the loss is on (default: the only/first output)">,
    Option<"optimizer", "optimizer", "std::string", "\"sgd\"",
           "sgd, adam, adamw, or none (gradients as outputs)">,
    Option<"learningRate", "lr", "double", "0.01", "Learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"weightDecay", "weight-decay", "double", "0.0",
           "Weight decay (L2 for sgd/adam, decoupled for adamw)">,
    Option<"beta1", "beta1", "double", "0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam beta2">,
    Option<"epsilon", "eps", "double", "1e-8", "Adam epsilon">,
    ListOption<"frozen", "frozen", "std::string",
               "Initializers that stay constant (not trained)">,
    Option<"wrtInputs", "wrt-inputs", "bool", "false",
           "With optimizer=none: also output the gradients of the inputs">,
    Option<"raiseComposites", "raise-composites", "bool", "true",
           "Differentiate the layer norm and GELU chains that exporters "
           "write as the typed ops (mp-raise-composites)">,
    Option<"dataParallel", "data-parallel", "bool", "false",
           "A step for N ranks (mpirun): gradients averaged over the ranks "
           "(mp.all_reduce buckets) before the updates">,
    Option<"reduceType", "reduce-type", "std::string", "\"f32\"",
           "What the gradient all-reduce sends and sums: f32, bf16 or f16 "
           "(divided by the rank count first)">,
    Option<"bucketMegabytes", "bucket-mb", "double", "25.0",
           "Gradient bucket size in megabytes of f32 (DDP's default 25)">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def MasterWeights : Pass<"mp-master-weights", "mlir::ModuleOp"> {
  let summary = "Keep parameters and optimizer state in f32; one low-precision copy per parameter per step";
  let description = [{
    Run after mp-training and autocast. Every global the optimizer updates
    becomes f32 (a model that came in f16 gets f32 master weights, widened
    exactly), every read of a parameter in low precision goes through one
    cast shared by all its users, and gradients reach the optimizer in f32.
  }];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def LossScale : Pass<"mp-loss-scale", "mlir::ModuleOp"> {
  let summary = "Static or dynamic loss scaling (PyTorch GradScaler semantics)";
  let description = [{
    Run after mp-training (and autocast, mp-master-weights). The backward
    pass starts from the loss scale instead of 1; the f32 gradients are
    unscaled with one finite check (`mp.unscale_check_finite`); optimizer
    updates are skipped when a gradient is not finite; with `mode=dynamic`
    the scale is a global updated by `mp.loss_scale_update` (backoff on
    overflow, growth after `interval` clean steps), all without a host
    read. The step gets two more outputs: `skipped` (1 when the update was
    skipped) and `loss_scale` (the scale after this step's update).
    `mode=auto` (the default) is `dynamic` when the step computes in f16 and
    `none` otherwise, with a remark that says so: bf16 and f32 have f32's
    exponent range, so their gradients do not underflow where f16's do;
    `mode=dynamic` or `static` scales them anyway.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"auto\"",
           "auto (dynamic with f16, else none), dynamic, static, or none">,
    Option<"initScale", "init-scale", "double", "65536.0",
           "Initial (dynamic) or fixed (static) loss scale">,
    Option<"growthFactor", "growth-factor", "double", "2.0",
           "Scale multiplier after `interval` clean steps">,
    Option<"backoffFactor", "backoff-factor", "double", "0.5",
           "Scale multiplier after a non-finite step">,
    Option<"growthInterval", "interval", "int64_t", "2000",
           "Clean steps between growths">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

#endif // MP_PASSES_MP_PASSES_TD
