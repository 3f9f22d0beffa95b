//===- Passes.h - transforms of the culib dialect ---------------*- C++ -*-===//
//
// Channels-last layout, memory planning and plan export on lowered modules
// (declared in Passes.td beside this file).
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_CULIB_PASSES_H
#define MP_PASSES_CULIB_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"

namespace mp {
#define GEN_PASS_DECL
#include "mp/Passes/CuLib/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

#endif // MP_PASSES_CULIB_PASSES_H
