//===- FuseEpilogues.cpp - the culib-fuse-epilogues pass ------------------===//
//
// A ReLU right after a convolution or a matmul becomes the call's own
// activation epilogue: conv_fwd(x, w) -> t; relu(t) -> y becomes
// conv_fwd(x, w) -> y {activation = relu}, when the convolution alone
// writes t and the ReLU alone reads it, and nothing touches y between the
// two calls (the convolution now writes y earlier). Bias, C and alpha come
// before the epilogue on every backend, as they did before the ReLU.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mp {
#define GEN_PASS_DEF_FUSEEPILOGUES
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// What the patterns did, for the report.
struct FusionCounts {
  int64_t calls = 0; ///< ReLUs folded into their producer
  int64_t bytes = 0; ///< intermediate bytes no longer written (and read)
};

/// The output buffer and the epilogue of the calls with one.
Value outputOf(culib::ConvFwdOp op) { return op.getY(); }
Value outputOf(culib::MatmulOp op) { return op.getD(); }
culib::Epilogue epilogueOf(culib::ConvFwdOp op) { return op.getActivation(); }
culib::Epilogue epilogueOf(culib::MatmulOp op) { return op.getEpilogue(); }
void setEpilogue(culib::ConvFwdOp op, culib::Epilogue e) {
  op.setActivation(e);
}
void setEpilogue(culib::MatmulOp op, culib::Epilogue e) { op.setEpilogue(e); }

/// The CallOp that writes `t` as its output, when it is the only op
/// besides `reader` that uses t, a culib.alloc, and comes before it.
template <typename CallOp>
CallOp soleProducer(Value t, Operation *reader) {
  if (!t.getDefiningOp<culib::AllocOp>())
    return nullptr;
  CallOp producer;
  for (Operation *user : t.getUsers()) {
    if (user == reader)
      continue;
    auto call = dyn_cast<CallOp>(user);
    if (!call || producer || outputOf(call) != t)
      return nullptr;
    producer = call;
  }
  if (!producer || producer->getBlock() != reader->getBlock() ||
      !producer->isBeforeInBlock(reader))
    return nullptr;
  return producer;
}

/// Whether `y` is used by an op between `from` and `to` (exclusive).
bool usedBetween(Value y, Operation *from, Operation *to) {
  for (Operation *user : y.getUsers()) {
    Operation *inBlock = from->getBlock()->findAncestorOpInBlock(*user);
    if (inBlock && from->isBeforeInBlock(inBlock) &&
        inBlock->isBeforeInBlock(to))
      return true;
  }
  return false;
}

int64_t bytesOf(Value v) {
  auto type = cast<MemRefType>(v.getType());
  return type.getNumElements() *
         std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
}

/// relu(t) with t written by a CallOp (conv_fwd, matmul) -> the call
/// writes relu's output with a ReLU epilogue.
template <typename CallOp>
struct FoldReluInto : OpRewritePattern<culib::ElementwiseOp> {
  FoldReluInto(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp relu,
                                PatternRewriter &rewriter) const override {
    if (relu.getFn() != rt::cpu::ElementwiseFn::Relu ||
        relu.getInputs().size() != 1)
      return failure();
    Value t = relu.getInputs()[0], y = relu.getY();
    if (t.getType() != y.getType())
      return rewriter.notifyMatchFailure(relu, "not the same buffer type");
    CallOp producer = soleProducer<CallOp>(t, relu);
    if (!producer || epilogueOf(producer) != culib::Epilogue::none)
      return rewriter.notifyMatchFailure(relu, "no producer to fold into");
    if (usedBetween(y, producer, relu))
      return rewriter.notifyMatchFailure(relu, "y is used in between");
    // y must exist where the producer runs.
    if (Operation *def = y.getDefiningOp()) {
      if (def->getBlock() != producer->getBlock())
        return rewriter.notifyMatchFailure(relu, "y is made elsewhere");
      if (!def->isBeforeInBlock(producer))
        rewriter.moveOpBefore(def, producer);
    }
    rewriter.modifyOpInPlace(producer, [&] {
      setEpilogue(producer, culib::Epilogue::relu);
      producer->replaceUsesOfWith(t, y);
    });
    counts.calls += 1;
    counts.bytes += bytesOf(t);
    Operation *alloc = t.getDefiningOp();
    rewriter.eraseOp(relu);
    rewriter.eraseOp(alloc);
    return success();
  }

  FusionCounts &counts;
};

struct FuseEpiloguesPass
    : public mp::impl::FuseEpiloguesBase<FuseEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    FusionCounts counts;
    RewritePatternSet patterns(ctx);
    patterns.add<FoldReluInto<culib::ConvFwdOp>, FoldReluInto<culib::MatmulOp>>(
        ctx, counts);
    // Only the ops the patterns look at change: no folding or DCE of the
    // buffers' other ops.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(func, std::move(patterns), config)))
      return signalPassFailure();
    if (report)
      func.emitRemark() << "culib-fuse-epilogues: " << counts.calls
                        << " ReLU call(s) folded into their convolution or "
                           "matmul; "
                        << counts.bytes
                        << " intermediate bytes no longer written";
  }
};

} // namespace
