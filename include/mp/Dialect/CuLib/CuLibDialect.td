//===- CuLibDialect.td - the culib dialect ------------------*- tablegen -*-===//
//
// The dialect definition, shared by its attributes (CuLibAttrs.td) and its
// ops (CuLibOps.td).
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_CULIB_CULIBDIALECT_TD
#define MP_DIALECT_CULIB_CULIBDIALECT_TD

include "mlir/IR/OpBase.td"

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

    A call with the unit attribute `culib.at_load` runs once, when the
    runtime loads the plan, not on every run: it reads only weights and
    buffers made at load, and writes only buffers made at load
    (`culib.alloc at_load`). culib-hoist-weight-calls marks such calls.
  }];
  // The enum attributes (CuLibAttrs.td) print as #culib.<mnemonic><...>.
  let useDefaultAttributePrinterParser = 1;
  // `culib.at_load` on a call (CuLibDialect.cpp checks where it may be).
  let hasOperationAttrVerify = 1;
}

#endif // MP_DIALECT_CULIB_CULIBDIALECT_TD
