//===- RewriteConfig.h - greedy rewrites, nothing else ----------*- C++ -*-===//
//
// The mp passes that run patterns greedily over imported graphs
// (mp-cast-cleanup, mp-raise-composites, mp-prune-rows) want their patterns
// and nothing else: no folding, no constants hoisted or merged (Constant
// nodes keep their names and places, and a plan its order of weights and
// buffers), no region simplification.
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_MP_REWRITECONFIG_H
#define MP_PASSES_MP_REWRITECONFIG_H

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mp {

inline mlir::GreedyRewriteConfig onlyThesePatterns() {
  mlir::GreedyRewriteConfig config;
  config.enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);
  return config;
}

} // namespace mp

#endif // MP_PASSES_MP_REWRITECONFIG_H
