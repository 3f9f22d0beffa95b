//===- Passes.h - MixPrec passes ---------------------------------*- C++ -*-===//
#ifndef MP_PASSES_PASSES_H
#define MP_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Pass/Pass.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"

namespace mp {
#define GEN_PASS_DECL
#include "mp/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Passes/Passes.h.inc"
} // namespace mp

#endif // MP_PASSES_PASSES_H
