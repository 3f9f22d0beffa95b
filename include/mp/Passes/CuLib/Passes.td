//===- Passes.td - culib dialect transforms ----------------*- tablegen -*-===//
#ifndef MP_PASSES_CULIB_PASSES_TD
#define MP_PASSES_CULIB_PASSES_TD

include "mlir/Pass/PassBase.td"

def NHWCLayout : Pass<"culib-nhwc-layout", "mlir::func::FuncOp"> {
  let summary = "Run convolutions and their neighbours channels last (NHWC)";
  let description = [{
    Both backends run convolutions fastest channels last: cuDNN's tensor-core
    kernels read and write NHWC, and so do oneDNN's brgemm convolutions on
    the CPU (f32 and bf16; channels first, oneDNN would reorder the
    activations into its blocked layout and back around every convolution).
    This pass decides the layout at compile time, so no run-time layout
    conversions surround each convolution: every 2-D convolution
    (`culib.conv_fwd`, and in training steps `conv_bwd_data` and
    `conv_bwd_filter`) whose input element type is in `dtypes` becomes
    `layout = #culib.layout<nhwc>`, and so do the ops that follow
    it and can work channels last (pooling without indices and its
    backward, the batch norms and their backward, convolutions of any type,
    elementwise kernels and casts whose operands are 4-D, scalars or of
    lower rank with one dim other than 1, as a per-channel scale [C, 1, 1]):
    their 4-D activation buffers are re-typed to [N, H, W, C] (weight
    gradients to [K, R, S, C]). A graph's own permute to channels first
    (`culib.transpose` with perm [0, 3, 1, 2]: ConvNeXt's and Swin's blocks,
    tf2onnx's inputs) makes no call when a reader of its result can run
    channels last and its input is not written again: its NHWC result is
    its input. Filters (to [K, R, S, C]), graph
    inputs and any other NCHW buffer such an op reads are transposed once,
    right before the first reader: weights keep their ONNX layout in the
    plan, so that they stay exchangeable by name (an evaluation plan taking
    a training plan's state, weights loaded from files), and a filter
    transpose costs little next to the convolution (the CPU backend does it
    once, at load, for a weight only convolutions read). An NHWC buffer that
    an NCHW-only op or the function's
    return reads is transposed back once, right after it is written. Run it
    after convert-mp-to-culib and before culib-plan-memory (mp-compile
    does; `mp-opt --channels-last=...` sets its `dtypes`).
  }];
  let options = [
    ListOption<"dtypes", "dtypes", "std::string",
               "Element types (f16, bf16, f32, f64) of the convolutions that "
               "go channels last; default f16,bf16,f32; none: every "
               "convolution stays channels first">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FuseEpilogues : Pass<"culib-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fold activations, bias and residual adds and casts into the convolution or matmul that writes their input, and casts around pools";
  let description = [{
    `culib.conv_fwd` and `culib.matmul` have an activation epilogue that
    both backends run inside the call (cuDNN's fused
    convolution-bias-activation and cuBLASLt's RELU epilogue, oneDNN's
    post-ops on the CPU): a `culib.elementwise relu` whose input buffer
    only such a call writes and nothing else reads becomes that call's
    `activation` / `epilogue = relu`, the call writes the ReLU's output
    buffer, and the ReLU and the intermediate buffer go: one call and one
    round trip through memory fewer. A clip with constant one-element
    bounds (ReLU6) after a convolution becomes its `activation = clip` with
    `clip_min` / `clip_max` (cuBLASLt has no clip epilogue: not after a
    matmul). An add of a bias vector (over the last dim, D's type or f32)
    to a matmul's result without bias or epilogue becomes the matmul's
    `bias`, added in f32 before its one rounding. A GELU after a matmul
    without epilogue (an elementwise `gelu`, or the five calls exporters
    write: x * (1 + erf(x / sqrt 2)) * 0.5, the 0.5 on either product, x /
    sqrt 2 or x * (1 / sqrt 2)) becomes its exact `epilogue = gelu`,
    computed in f32 before the one rounding (without a matmul before it,
    one elementwise `gelu`); a SiLU (x * sigmoid(x), two
    calls), sigmoid, tanh or hard swish after a convolution its
    `activation` (silu, sigmoid, tanh, hard_swish), also in f32 before the
    rounding; an add of a tensor of y's type to a convolution's result
    without activation its `residual` (added before the activation, so a
    ReLU after the add folds too: ResNet's blocks), and to a matmul's
    result without C or epilogue its `c` with `beta = 1` (a transformer's
    residual). A matmul's result (without bias, C or epilogue) multiplied
    by a constant one-element float, or divided by one whose inverse is
    exact (a power of two), becomes its `alpha` times that constant: output
    scaling, applied to the f32 product before its one rounding (a bias
    added after the scaling then folds as well). A float cast (f32, f16, bf16) of such a call's result, where
    no residual of the old type is added, becomes the call's output type:
    the call rounds its f32 result once to the cast's type (autocast's
    boundaries: a 16-bit convolution or matmul widened into an f32 region,
    whose bias, GELU, residual add and final cast back then fold in too; an
    f32 result narrowed for the next 16-bit call); the unfused calls rounded
    to the old type first. A pool between two casts, 16-bit data widened to
    f32 and its result narrowed back (autocast keeps average pools in f32),
    runs on the 16-bit data and writes the narrow cast's output: every
    backend's pool sums in f32 and rounds once, so the values are the same,
    without the two f32 copies. ReLU commutes with rounding, and so does a clip whose bounds
    the output type holds exactly (the only ones folded), so a 16-bit
    result has the same bits as before. In a training step, an
    activation's gradient of a matmul's result (the gradient dY W^T that
    reaches the activation) -- `relu_grad(t, x)` or `where(greater(x, 0),
    t, 0)`, `gelu_grad(t, x)`, `gelu_tanh_grad(t, x)` -- becomes the
    matmul's `relu_grad` / `gelu_grad` / `gelu_tanh_grad` epilogue with the
    activation's input x as its `aux` operand (cuBLASLt's DRELU / DGELU),
    when the matmul has no bias or epilogue and x keeps its value from the
    matmul to the gradient. Calls that already have an
    epilogue, intermediate buffers read by anything else (a training step
    keeps the convolution's output for the ReLU's gradient) and output
    buffers used between the two calls are left alone. With `report`, a
    remark counts the fused calls and the bytes no longer written. Run it
    after culib-nhwc-layout and before culib-plan-memory (mp-compile does,
    unless its `fuse` option is off).
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the calls fused and the bytes saved">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FusionReport : Pass<"culib-fusion-report", "mlir::ModuleOp"> {
  let summary = "Write what the fusion passes did: calls before and after, per pattern";
  let description = [{
    The fusion passes run with `record=true` leave their figures on each
    function (`culib.fusion_record`). This pass counts the calls left, adds
    the calls each pattern removed to give the calls before the fusion
    stage, and writes per function and pattern the fused calls made, the
    calls fewer and the intermediate bytes no longer written: to `output`
    as JSON (a `.json` name) or text, or as a remark without `output`. The
    records are removed from the IR. mp-opt's `--fusion-report=FILE` and
    mp-compile's `fusion-report` option run it after the fusion passes.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "The report file (.json: JSON; else text); empty: a remark">,
  ];
}

def FuseAttention : Pass<"culib-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Make scaled dot-product attention one culib.attention call";
  let description = [{
    softmax(Q K^T * c + mask) V as exporters write it (two batched matmuls
    and a softmax over the last axis, with the slices, reshape copies and
    transposes that split heads off a projection and merge them back,
    constant factors on Q, K or the scores, an additive mask broadcast onto
    the scores, and float casts between) becomes one `culib.attention`
    reading Q, K, V and the mask where they start and writing O where its
    chain ends, through strided views: the scores, the probabilities and
    the head-split copies are never written, and everything inside is f32
    with one rounding at the store. Only when every intermediate is an arena
    buffer that the next call alone reads, the batch index splits into
    (batch, head) with one stride each in every view, and nothing between
    writes an input. With `report`, a remark counts the attentions folded,
    the calls and the bytes no longer written. Run it after culib-nhwc-layout
    and before the other fusion passes (mp-compile does, unless its `fuse`
    option is off).
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the attentions folded and the calls saved">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FuseNorms : Pass<"culib-fuse-norms", "mlir::func::FuncOp"> {
  let summary = "Make decomposed layer, RMS and group norms and scaled softmaxes one call each";
  let description = [{
    Exporters below opset 17 write LayerNorm as ReduceMean, Sub, Pow,
    ReduceMean, Add, Sqrt, Div, Mul and Add, which convert-mp-to-culib
    lowers to as many calls. A chain of them, x -> mean over the trailing
    dims (kept) -> deviation -> its square (pow 2 or d * d) -> mean -> plus
    a constant eps -> sqrt -> deviation / that -> times scale (-> plus
    bias), becomes one `culib.layer_norm` (axis, epsilon) writing the chain's
    output: statistics in f32 or wider on every backend, never less
    accurate, and seven intermediate buffers fewer. Only when every
    intermediate is an arena buffer the chain alone uses, nothing between
    writes x, scale or bias, scale and bias broadcast onto the normalised
    dims, and everything has x's float type. RMSNorm as torch exports it
    (x -> its square (pow 2 or x * x) -> mean over the trailing dims ->
    plus a constant eps -> sqrt -> reciprocal and x times that, or x
    divided by it -> times scale, in either order) becomes one
    `culib.rms_norm` (axis, epsilon) under the same conditions: six or
    seven calls one, the mean square in f32 or wider. GroupNorm as torch
    exports it (x [N, C, D...] copied (reshaped) to [N, groups, -1] ->
    instance norm with a scale of ones and a bias of zeros -> copied back to
    x's shape -> times a per-channel scale ([C] or [C, 1, ...]) -> plus a
    per-channel bias, optional) becomes one `culib.group_norm` (groups,
    the instance norm's epsilon): the same statistics, two copies and an
    elementwise call fewer. A softmax over the last dim whose input is x
    times a constant one-element float (or x divided by one whose inverse
    is exact, a power of two), x plus a
    mask (x's type, broadcast onto x), or both, becomes one
    `culib.scaled_softmax` (scale, mask): x scaled and masked in f32 inside
    the call, rounded once. A batch norm in inference whose one
    reader is an elementwise function (a ReLU) becomes its per-channel
    scale and shift, y = x * s + t with s = scale / sqrt(var + eps) and
    t = bias - mean * s: two programs over the weights (culib-hoist-weight-calls
    runs them once, at load), and a mul and an add that
    culib-fuse-elementwise fuses with the function: one pass over the
    activations instead of two (DenseNet-121: 62 batch norms and their
    ReLUs, 124 calls, become 62). s and t are f32; a 16-bit x (f16, bf16)
    is cast to f32 before the mul and the sum back after the add, casts
    that the fused program takes in (f32 inside, one rounding at its
    store). With `report`, a
    remark counts the norms folded and the bytes no longer written. Run it
    after culib-nhwc-layout and before culib-fuse-elementwise (mp-compile does,
    unless its `fuse` option is off).
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the norms folded and the bytes saved">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FuseElementwise : Pass<"culib-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Make groups of elementwise calls and float casts one fused call";
  let description = [{
    Each maximal group of `culib.elementwise` calls (functions from floats
    to floats: arithmetic, activations, math) and `culib.cast` calls between
    f16, bf16 and f32, connected through intermediate buffers that only the
    group uses and that have the shape of the group's result, becomes one
    `culib.fused_elementwise` call: its `program` computes every step in
    f32 and rounds once at the store, where the calls one by one rounded
    after each 16-bit step (so the fused result is never less accurate), and
    the intermediate buffers go. A group grows from its last call back to
    the calls that write its inputs, as long as nothing between a call and
    the group's end writes what the call reads, and within the runtime's
    limits (32 steps, 8 inputs). Comparisons, `where`, integer and bool
    functions, broadcast intermediates and buffers read elsewhere (a
    training step's saved activations) end a group. Before grouping, a
    ReLU's gradient as training steps write it, `where(x > 0, dy, 0)` (a
    comparison into a bool mask, then a select), becomes one
    `relu_grad(dy, x)`, which then joins a group like any function from
    floats to floats (ResNet-18's step: 17 fewer calls, and with the
    residual adds of the gradients before them 7 more); where x is of
    another float type than dy (a mixed-precision step's bf16 activation),
    a fused program of that one step, since an elementwise call takes one
    dtype. With `report`, a
    remark counts the calls before and after and the bytes no longer
    written. Run it after culib-fuse-epilogues (a ReLU that can be a
    convolution's epilogue is one) and before culib-plan-memory
    (mp-compile does, unless its `fuse` option is off).
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the calls fused and the bytes saved">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def AliasReshapes : Pass<"culib-alias-reshapes", "mlir::func::FuncOp"> {
  let summary = "Make the copies that only reshape views of their source, and fold transposes of transposes";
  let description = [{
    A `culib.copy` whose output has its own shape but the same element type
    and count as its input (a Reshape, Flatten, Squeeze or Unsqueeze, a
    reduction's kept dims dropped) moves every byte for nothing when the
    bytes could be seen with the new shape: training steps make dozens (the
    BERT-style encoder's step 51, each a pass over an activation or a
    gradient). This pass replaces such a copy by `culib.view` of its input,
    and its output buffer by the view, when that changes no value read: the
    output is written by the copy alone, and nothing writes the input after
    the copy (else the view would see the new bytes). A training step's
    state (`culib.state`, updated in place) is never viewed. The memory
    planner then keeps the input's bytes while the view is used. With
    `record`, the figures go to culib-fusion-report (calls fewer, bytes no
    longer written); with `report`, a remark says the same. Run it after the
    fusion passes (their patterns read through copies) and before
    culib-hoist-weight-calls (a view of a weight is a weight for it) and
    culib-plan-memory (mp-compile does, unless its `fuse` option is off).

    First, a transpose of a transpose's result reads the first one's input
    with the two permutations composed, and is a copy (then a view) when
    they undo one another: culib-nhwc-layout's transpose back to channels
    first right before an exporter's permute to channels last (ConvNeXt-T:
    26 such pairs, 51 calls fewer with their copies). The first transpose
    goes when nothing else reads its result; nothing happens when its input
    changes between the two. A transpose between channels first and last
    of a buffer whose spatial dims are 1 (culib-nhwc-layout's around a
    global pool: [N, 1, 1, C] to [N, C, 1, 1]) keeps the elements in order
    and is a copy too (only those: whether other transposes move only dims
    of size 1 can depend on the batch, and a dynamic-shape plan's compiles
    must agree); transposes of weights (filters, which the backends fold
    into their reorders at load) stay.
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the copies made views and their bytes">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FoldMatmulTransposes
    : Pass<"culib-fold-matmul-transposes", "mlir::func::FuncOp"> {
  let summary = "Make transposes of matmul operands the matmuls' trans_a / trans_b flags";
  let description = [{
    A `culib.transpose` that swaps the last two dims of a buffer (leading
    dims kept) and whose result only matmuls read, as A or B, writes a copy
    both libraries can do without: cuBLASLt and oneDNN read an operand
    transposed as they load it. This pass makes each such matmul read the
    transpose's input with its `trans_a` / `trans_b` flag flipped, and
    drops the transpose and its buffer. Training steps make them: each
    matmul's input gradient dY * W^T transposed the weight (the BERT-style
    encoder's step, 12), and attention's gradients transpose Q, K and the
    probabilities. Nothing happens when another call reads the result, when
    the result has another writer, or when the input changes between the
    transpose and a matmul. With `record`, the figures go to
    culib-fusion-report (operands folded, calls fewer, bytes no longer
    written); with `report`, a remark says the same. Run it after
    culib-alias-reshapes (transposes of transposes composed first) and
    culib-fuse-attention (whose patterns read K's transpose), before
    culib-hoist-weight-calls (a weight's transpose folded is no call at
    load either); mp-compile does, unless its `fuse` option is off.
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the transposes folded and their bytes">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def FuseBiasGradients
    : Pass<"culib-fuse-bias-gradients", "mlir::func::FuncOp"> {
  let summary = "Sum bias gradients in the matmul that computes the weight gradient";
  let description = [{
    A training step computes a linear layer's gradients from dY (its
    output's gradient, [..., N]): the weight gradient, a matmul contracting
    dY's rows (X^T dY, dY as B; or dY^T X for a Gemm with transB, dY as A
    read transposed), and the bias gradient, a sum of dY over every dim but
    the last (a `culib.reduce sum`). This pass makes the matmul write the
    sums too, as its `bias_grad` output (`bias_grad_of_a` when dY is A):
    cuBLASLt's BGRADB / BGRADA epilogues reduce the operand over the GEMM's
    k dim while they read it; the CPU sums it in f32 in the same call. The
    reduction call goes. Only when the matmul reads all of dY (itself or a
    view), dY does not change between the two calls, and every reader of
    the sums comes after both. With `record`, the figures go to culib-fusion-report
    (calls fewer); with `report`, a remark says the same. mp-compile runs
    it in its fusion stage, unless its `fuse` option is off.
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the bias gradients fused">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
}

def HoistWeightCalls : Pass<"culib-hoist-weight-calls", "mlir::func::FuncOp"> {
  let summary = "Run the calls that only derive buffers from weights once, at load";
  let description = [{
    A call whose every input is a weight (`culib.weight`) or a buffer
    another such call made, and whose every output is a buffer that only it
    writes and that the function does not return, computes the same bytes
    on every run: a channels-last filter transposed from the ONNX weight
    (culib-nhwc-layout), a weight cast to 16 bits (autocast), a fused
    program over constants. This pass marks it `culib.at_load` and its
    outputs `culib.alloc at_load`: the runtime runs it once, when it loads
    the plan, into memory of its own (kept, read-only, next to the
    weights), and skips it on every run. The plan keeps the weights
    themselves in their ONNX layout and type, so that they stay
    exchangeable by name (weights loaded from files, an evaluation plan
    taking a training plan's state) and external weights stay external.
    Training steps' parameters (`culib.state`) change every step: calls
    reading them are not hoisted. With `record`, the figures go to
    culib-fusion-report (calls per run fewer, bytes no longer written per
    run); with `report`, a remark says the same. Run it after the fusion
    passes (a cast a fused program absorbed is not a call of its own) and
    before culib-plan-memory, which leaves the buffers made at load out of
    the arena (mp-compile does, unless its `fuse` option is off).
  }];
  let options = [
    Option<"record", "record", "bool", /*default=*/"false",
           "Leave the figures on the function for culib-fusion-report">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Emit a remark with the calls hoisted and their bytes">,
  ];
  let dependentDialects = ["mp::culib::CuLibDialect"];
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

#endif // MP_PASSES_CULIB_PASSES_TD
