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

#endif // MP_PASSES_PASSES_TD
