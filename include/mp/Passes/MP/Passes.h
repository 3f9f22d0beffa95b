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

#include <functional>
#include <string>
#include <vector>

namespace mp {
#define GEN_PASS_DECL
#include "mp/Passes/MP/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Passes/MP/Passes.h.inc"

/// A tool's defaults for every mp-autocast run whose own options leave them
/// unset (mp-opt's --mp-report and --mp-validate* flags): reports to write,
/// and validation (a negative tol / time limit: the pass option's).
struct AutocastToolDefaults {
  std::vector<std::string> reportFiles;
  bool validate = false;
  std::vector<std::string> validateInputs;
  double validateTol = -1;
  double validateTimeLimit = -1;
};
/// Where mp-autocast reads them, when it runs (after the tool has parsed its
/// command line); without a source, the defaults are empty.
void setAutocastToolDefaults(std::function<AutocastToolDefaults()> source);
} // namespace mp

#endif // MP_PASSES_MP_PASSES_H
