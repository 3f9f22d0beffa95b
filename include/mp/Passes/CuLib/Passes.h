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
#include "mp/Runtime/Plan.h"

#include <optional>

namespace mp {
#define GEN_PASS_DECL
#include "mp/Passes/CuLib/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Passes/CuLib/Passes.h.inc"

/// The plan of a memory-planned culib module (after culib-plan-memory) with
/// one function, in memory: what culib-export-plan writes. Errors are
/// emitted on the module; `fileName` names the plan in messages. Its weights
/// may point into the module's constants: valid while the module lives.
std::optional<rt::Plan> translateToPlan(mlir::ModuleOp module,
                                        llvm::StringRef modelName,
                                        llvm::StringRef fileName = "<plan>");
} // namespace mp

#endif // MP_PASSES_CULIB_PASSES_H
