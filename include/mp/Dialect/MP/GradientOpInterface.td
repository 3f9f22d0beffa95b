//===- GradientOpInterface.td - reverse-mode rules of ops ----*- tablegen -*-===//
#ifndef MP_DIALECT_MP_GRADIENTOPINTERFACE_TD
#define MP_DIALECT_MP_GRADIENTOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def MP_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::mp";
  let description = [{
    The reverse-mode rule of an op: given the gradients of the loss with
    respect to its results, build (at the builder's insertion point, with
    `mp` ops) the gradients with respect to its operands. mp-training walks
    the graph from the loss backwards and calls it on every op that some
    gradient reaches. The rules live in lib/Dialect/MP/Gradients/ and are
    attached as external models (registerGradientModels).
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients. `resultGradients` has one entry per
        result, null where no gradient reaches that result. On success
        `operandGradients` has one entry per operand, null for operands that
        have none (integer operands, shapes, running statistics). Fails with
        an error at the op for cases the rule does not handle.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGradients,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGradients)>,
  ];
}

#endif // MP_DIALECT_MP_GRADIENTOPINTERFACE_TD
