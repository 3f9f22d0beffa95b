//===- Validation.h - mp-autocast's check on the CPU runtime ----*- C++ -*-===//
//
// mp-autocast's `validate` option: the fp32 model and mixed-precision
// variants of it run on the CPU runtime on sample inputs, and the nodes
// whose low precision breaks the outputs (error over the tolerance, relative
// to each output's scale) are found by bisection and kept in f32.
//
//===----------------------------------------------------------------------===//
#ifndef MP_AUTOCAST_VALIDATION_H
#define MP_AUTOCAST_VALIDATION_H

#include "mp/Autocast/PrecisionPolicy.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <functional>
#include <string>
#include <vector>

namespace mp::autocast {

/// `policy` with the nodes `denied` kept in f32.
PrecisionPolicy policyDenying(const PrecisionPolicy &policy,
                              const std::vector<std::string> &denied);

struct ValidationOptions {
  /// The largest max |error| / max |fp32 output| that passes.
  double tol = 1e-2;
  /// Seconds after which the search stops.
  double timeLimit = 300;
  /// Input files (.npy / .pb) in graph input order; empty: random inputs
  /// (normal floats, small non-negative integers) from `seed`.
  std::vector<std::string> inputFiles;
  unsigned seed = 0;
};

/// Compiles a clone of the module, whose dynamic input dims are set to 1,
/// into a plan file at `planPath`: in mixed precision with `policy`, or in
/// fp32 when it is null. The pipeline is the caller's (mp-autocast passes
/// its own, so that this library does not depend on the passes).
using CompileToPlan = std::function<mlir::LogicalResult(
    mlir::ModuleOp module, const PrecisionPolicy *policy,
    llvm::StringRef planPath)>;

/// The named low-precision nodes, in program order, of the colouring with
/// the nodes `denied` also kept in f32.
using LowNodes =
    std::function<std::vector<std::string>(const std::vector<std::string> &)>;

/// The nodes to keep in f32 so that the mixed-precision model's outputs are
/// within `options.tol` of the fp32 model's (empty when they are as
/// coloured); failure, with an error on `module`, when validation cannot
/// run. `notes` says what each probe found.
mlir::FailureOr<std::vector<std::string>>
findNodesToDeny(mlir::ModuleOp module, const PrecisionPolicy &policy,
                const ValidationOptions &options, const CompileToPlan &compile,
                const LowNodes &lowNodes, std::vector<std::string> &notes);

} // namespace mp::autocast

#endif // MP_AUTOCAST_VALIDATION_H
