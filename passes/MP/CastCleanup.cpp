//===- CastCleanup.cpp - the mp-cast-cleanup pass -------------------------===//
//
// One cast per (value, type), exact round trips folded, lossy ones kept.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "RewriteConfig.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/DenseMap.h"

namespace mp {
#define GEN_PASS_DEF_CASTCLEANUP
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

Type elementOf(Value v) {
  auto shaped = dyn_cast<ShapedType>(v.getType());
  return shaped ? shaped.getElementType() : Type();
}

/// Whether every value of `from` converts to `to` exactly, so that a cast
/// through `to` can be skipped when it is followed by another cast.
bool widensExactly(Type from, Type to) {
  if (!from || !to)
    return false;
  if (from.isF16() || from.isBF16())
    return to.isF32() || to.isF64();
  if (from.isF32())
    return to.isF64();
  return false;
}

/// cast(x) to the type x already has is x.
struct FoldIdentityCast : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// cast(cast(x, A), B) is cast(x, B) when x -> A is exact: f16 -> f32 -> f16
/// folds to x, f16 -> f32 -> f64 to one cast. f32 -> f16 -> f32 is lossy and
/// stays.
struct FoldExactCastChain : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner || !widensExactly(elementOf(inner.getInput()),
                                 elementOf(inner.getResult())))
      return failure();
    Value source = inner.getInput();
    if (source.getType() == op.getType()) {
      rewriter.replaceOp(op, source);
      return success();
    }
    auto shortened = CastOp::create(rewriter, op.getLoc(), op.getType(), source,
                                    op.getToAttr(), op.getSaturateAttr(),
                                    op.getRoundModeAttr());
    shortened->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, shortened.getResult());
    return success();
  }
};

struct CastCleanupPass : mp::impl::CastCleanupBase<CastCleanupPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldIdentityCast, FoldExactCastChain>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     onlyThesePatterns())))
      return signalPassFailure();
    mergeDuplicateCasts();
  }

  /// Casts of one value to one type with the same rounding (saturate,
  /// round_mode): every cast dominated by another is replaced by it.
  void mergeDuplicateCasts() {
    using Key = std::tuple<Value, Type, Attribute, Attribute>;
    llvm::DenseMap<Key, SmallVector<CastOp, 2>> groups;
    getOperation().walk([&](CastOp op) {
      groups[{op.getInput(), op.getType(), op.getSaturateAttr(),
              op.getRoundModeAttr()}]
          .push_back(op);
    });
    DominanceInfo dominance(getOperation());
    for (auto &entry : groups) {
      SmallVector<CastOp, 2> &casts = entry.second;
      if (casts.size() < 2)
        continue;
      SmallVector<CastOp, 2> kept;
      for (CastOp op : casts) {
        CastOp dominator;
        for (CastOp other : kept)
          if (dominance.properlyDominates(other.getOperation(),
                                          op.getOperation())) {
            dominator = other;
            break;
          }
        if (dominator) {
          op.getResult().replaceAllUsesWith(dominator.getResult());
          op->erase();
        } else {
          kept.push_back(op);
        }
      }
    }
  }
};

} // namespace
