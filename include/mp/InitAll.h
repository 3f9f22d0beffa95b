//===- InitAll.h - register every MixPrec dialect and pass -------*- C++ -*-===//
#ifndef MP_INITALL_H
#define MP_INITALL_H

#include "mlir/IR/DialectRegistry.h"
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
/// mp-autocast with `options`, then mp-cast-cleanup on every function:
/// registered as the `mp-autocast-pipeline` pipeline (same options).
void buildAutocastPipeline(mlir::OpPassManager &pm,
                           const AutocastOptions &options = {});
} // namespace mp

#endif // MP_INITALL_H
