//===- InitAll.h - register every MixPrec dialect and pass -------*- C++ -*-===//
#ifndef MP_INITALL_H
#define MP_INITALL_H

#include "mlir/IR/DialectRegistry.h"

#include "mp/Passes/Passes.h"
#include "mp/Passes/Pipelines.h"

namespace mp {
/// The dialects MixPrec tools work with: mp, culib and func.
void registerAllDialects(mlir::DialectRegistry &registry);
/// MixPrec's passes and pipelines, and MLIR's generic transforms
/// (canonicalize, cse, ...).
void registerAllPasses();
} // namespace mp

#endif // MP_INITALL_H
