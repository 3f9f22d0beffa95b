//===- Passes.td - dialect conversions ---------------------*- tablegen -*-===//
#ifndef MP_CONVERSION_PASSES_TD
#define MP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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

#endif // MP_CONVERSION_PASSES_TD
