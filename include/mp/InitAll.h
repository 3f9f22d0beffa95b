//===- InitAll.h - register every MixPrec dialect and pass -------*- C++ -*-===//
#ifndef MP_INITALL_H
#define MP_INITALL_H

#include "mlir/IR/DialectRegistry.h"

#include <optional>
#include "mp/Passes/Passes.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mp {
/// The dialects MixPrec tools work with: mp, culib and func.
void registerAllDialects(mlir::DialectRegistry &registry);
/// MixPrec's passes and pipelines, and MLIR's generic transforms
/// (canonicalize, cse, ...).
void registerAllPasses();
/// The passes from an imported model to a memory-planned culib module (what
/// a plan is written from), registered as the `mp-compile` pipeline.
void buildCompilePipeline(mlir::OpPassManager &pm);
/// mp-autocast with `options`, then (unless `padding` is empty)
/// mp-pad-tensor-cores on the low-precision ops, then mp-cast-cleanup:
/// registered as the `mp-autocast-pipeline` pipeline (the same options, and
/// `pad`, `pad-multiple`, `pad-max-growth`).
void buildAutocastPipeline(
    mlir::OpPassManager &pm, const AutocastOptions &options = {},
    std::optional<PadTensorCoresOptions> padding = PadTensorCoresOptions());
} // namespace mp

#endif // MP_INITALL_H
