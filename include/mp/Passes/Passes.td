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

#endif // MP_PASSES_PASSES_TD
