//===- GradientOpInterface.h - reverse-mode rules of mp ops ------*- C++ -*-===//
//
// GradientOpInterface (GradientOpInterface.td) and the registration of its
// rules for the typed ops, which live in lib/Dialect/MP/Gradients*.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_GRADIENTOPINTERFACE_H
#define MP_DIALECT_MP_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

#include "mp/Dialect/MP/GradientOpInterface.h.inc"

namespace mp {
/// Attaches the gradient rules to the mp ops that have one.
void registerGradientModels(mlir::DialectRegistry &registry);
} // namespace mp

#endif // MP_DIALECT_MP_GRADIENTOPINTERFACE_H
