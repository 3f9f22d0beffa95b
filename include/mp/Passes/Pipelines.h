//===- Pipelines.h - MixPrec's pass pipelines -------------------*- C++ -*-===//
//
// The pipelines mp-opt offers (mp-compile, mp-autocast-pipeline), as
// functions that fill a pass manager.
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_PIPELINES_H
#define MP_PASSES_PIPELINES_H

#include "mp/Passes/CuLib/Passes.h"
#include "mp/Passes/MP/Passes.h"

#include <optional>

#include "llvm/ADT/StringRef.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mp {
/// The passes from an imported model to a memory-planned culib module (what
/// a plan is written from), registered as the `mp-compile` pipeline;
/// `layout` chooses the convolutions that go channels last, `fuse` runs the
/// culib fusion passes (culib-fuse-attention, -epilogues, -norms,
/// -elementwise, then culib-alias-reshapes and culib-hoist-weight-calls)
/// and, with a `fusionReport` file, culib-fusion-report after them.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const NHWCLayoutOptions &layout = {},
                          bool fuse = true, llvm::StringRef fusionReport = {});
/// mp-autocast with `options`, then (unless `padding` is empty)
/// mp-pad-tensor-cores on the low-precision ops, then mp-cast-cleanup:
/// registered as the `mp-autocast-pipeline` pipeline (the same options, and
/// `pad`, `pad-multiple`, `pad-max-growth`).
void buildAutocastPipeline(
    mlir::OpPassManager &pm, const AutocastOptions &options = {},
    std::optional<PadTensorCoresOptions> padding = PadTensorCoresOptions());
/// Registers `mp-compile` and `mp-autocast-pipeline` with mlir-opt-style
/// tools.
void registerPipelines();
} // namespace mp

#endif // MP_PASSES_PIPELINES_H
