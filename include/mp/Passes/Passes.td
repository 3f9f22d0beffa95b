//===- Passes.td - MixPrec passes ----------------------------*- tablegen -*-===//
#ifndef MP_PASSES_PASSES_TD
#define MP_PASSES_PASSES_TD

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

def FoldConstants : Pass<"mp-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate shape computations (Shape, Size, Range, small constant ops) at compile time";
  let description = [{
    Replaces `mp.shape` / `mp.size` of static tensors, and ops on small
    constant tensors (ConstantOfShape, Range, Cast, Gather, Concat, Slice,
    reshape-likes, integer and float arithmetic, comparisons, Where), by
    `mp.constant`s, refining result types on the way (as `mp-infer-shapes`).
    With the input shapes fixed, this turns the run-time shape arithmetic
    of exported models (Shape -> Gather -> Concat -> Reshape) into static
    shapes, which plans need.
  }];
  let options = [
    Option<"maxElements", "max-elements", "unsigned", "65536",
           "Largest result (in elements) that is evaluated">,
  ];
}

def ConvertMPToCuLib : Pass<"convert-mp-to-culib", "mlir::ModuleOp"> {
  let summary = "Lower typed mp ops to culib library calls and kernels on buffers";
  let description = [{
    Dialect conversion from the `mp` tensor graph to the `culib` dialect:
    tensors become buffers (`memref`), every op writes into a fresh
    `culib.alloc` (the memory planner later assigns arena offsets),
    initializers and constants become `culib.weight`, and each typed op
    becomes the library call or kernel that computes it (Conv → conv_fwd,
    Gemm/MatMul → matmul with bias/C, pools, batch norm, softmax, elementwise
    math, reductions, data movement). Functions take and return buffers.

    Plans are for static shapes: a value of dynamic shape is an error naming
    the node. A node kept as `mp.onnx_op`, or a typed op without a lowering,
    is reported as "cannot lower <op_type> at <node>".
  }];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def ExportPlan : Pass<"culib-export-plan", "mlir::ModuleOp"> {
  let summary = "Write the lowered, memory-planned module as a plan file";
  let description = [{
    Serializes a module in the `culib` dialect (after `culib-plan-memory`)
    into a plan file for the runtime (docs/plan-format.md): one call per
    culib op, the buffers with their arena offsets, the weights (16-bit ones
    as 16 bits) and the graph inputs and outputs by name. `mp-opt
    --emit=plan` runs it.
  }];
  let options = [
    Option<"outputPath", "output", "std::string", "\"\"",
           "The plan file to write">,
    Option<"modelName", "model-name", "std::string", "\"\"",
           "The model name recorded in the plan">,
  ];
}

def PlanMemory : Pass<"culib-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Assign arena offsets to culib buffers, reusing memory of dead buffers";
  let description = [{
    Static memory planning for a lowered function: every `culib.alloc` gets
    an `offset` in one activation arena such that buffers whose live ranges
    overlap never share bytes, while buffers that are dead by the time
    another is allocated reuse its bytes. A buffer lives from its `culib.alloc`
    to its last use (to the end of the function when it is returned).
    Placement is greedy by size (largest first, lowest offset that fits), with
    every buffer aligned to `alignment` bytes. The function gets
    `culib.arena_size` (the peak activation bytes, known at compile time);
    with `report`, a remark gives the arena size next to the bytes the
    buffers would take without reuse.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of every buffer (a power of two)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the arena size and the reuse it achieved">
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

def PadTensorCores : Pass<"mp-pad-tensor-cores", "mlir::func::FuncOp"> {
  let summary = "Pad GEMM and convolution dims to multiples of 8 for tensor cores";
  let description = [{
    Pads the dims of f16/bf16 MatMul and Gemm (M, N, K of both operands) and
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

#endif // MP_PASSES_PASSES_TD
