//===- Passes.h - transforms of the mp dialect ------------------*- C++ -*-===//
//
// Shape inference, constant folding, autocast, cast clean-up, tensor-core
// padding and the training passes (declared in Passes.td beside this file).
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_MP_PASSES_H
#define MP_PASSES_MP_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Pass/Pass.h"

namespace mp {
#define GEN_PASS_DECL
#include "mp/Passes/MP/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

#endif // MP_PASSES_MP_PASSES_H
