//===- Training.cpp - state, backward calls, updates ----------------------===//
//
// ml_program globals (parameters, optimizer state, the loss scale) become
// culib.state buffers made at the start of each function; the backward
// ops, the finite check and the optimizer and loss-scale updates become
// their culib calls.
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

template <typename OpTy> struct StatefulPattern : OpConversionPattern<OpTy> {
  StatefulPattern(const TypeConverter &tc, MLIRContext *ctx,
                  const StateBuffers &states)
      : OpConversionPattern<OpTy>(tc, ctx), states(states) {}
  Value state(FlatSymbolRefAttr symbol) const {
    return states.lookup(symbol.getAttr());
  }
  Value state(StringRef symbol) const {
    return states.lookup(StringAttr::get(this->getContext(), symbol));
  }
  const StateBuffers &states;
};

struct GlobalLoadLowering : StatefulPattern<ml_program::GlobalLoadOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(ml_program::GlobalLoadOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer = state(op.getGlobal().getLeafReference());
    if (!buffer)
      return rewriter.notifyMatchFailure(op, "no state buffer");
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct GlobalStoreLowering : StatefulPattern<ml_program::GlobalStoreOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(ml_program::GlobalStoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer = state(op.getGlobal().getLeafReference());
    if (!buffer)
      return rewriter.notifyMatchFailure(op, "no state buffer");
    culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getValue(), buffer);
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConvGradFilterLowering : OpConversionPattern<ConvGradFilterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvGradFilterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dw = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getDW());
    culib::ConvBwdFilterOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getDY(), dw,
        op.getPadsAttr(), op.getStridesAttr(), op.getDilationsAttr(),
        op.getGroupAttr(),
        TypeAttr::get(computeTypeFor(elementOf(op.getX()), op)));
    rewriter.replaceOp(op, dw);
    return success();
  }
};

struct PoolGradLowering : OpConversionPattern<PoolGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PoolGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dx = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getDX());
    culib::PoolBwdOp::create(rewriter, op.getLoc(), adaptor.getX(),
                             adaptor.getDY(), dx, op.getModeAttr(),
                             op.getWindowAttr(), op.getPadsAttr(),
                             op.getStridesAttr(), op.getDilationsAttr());
    rewriter.replaceOp(op, dx);
    return success();
  }
};

struct BatchNormGradLowering : OpConversionPattern<BatchNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> buffers =
        allocResults(rewriter, *getTypeConverter(), op);
    auto backward = culib::BatchNormBwdOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
        adaptor.getDY(), buffers[0], buffers[1], buffers[2],
        op.getEpsilonAttr());
    if (op->hasAttr(MPDialect::kSyncRanksAttr))
      backward.setSyncRanks(true);
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

/// The layer norm's gradient: dX and dScale always, dBias where it is read.
struct LayerNormGradLowering : OpConversionPattern<LayerNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> buffers;
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      buffers.push_back(
          i == 2 && result.use_empty()
              ? Value()
              : allocFor(rewriter, *getTypeConverter(), op.getLoc(), result));
    culib::LayerNormGradOp::create(
        rewriter, op.getLoc(), adaptor.getDY(), adaptor.getX(),
        adaptor.getScale(), adaptor.getMean(), adaptor.getInvStdDev(),
        buffers[0], buffers[1], buffers[2], op.getAxisAttr());
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

template <typename OpTy, typename CallTy>
struct LossGradLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    ValueRange operands = adaptor.getOperands();
    Value weights = isAbsent(operands[3]) ? Value() : operands[3];
    CallTy::create(
        rewriter, op.getLoc(), operands[0], operands[1], operands[2], weights,
        out,
        culib::LossReductionAttr::get(rewriter.getContext(),
                                      *lossReductionOf(op)), // see the rule
        op.getIgnoreIndexAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct LSTMGradLowering : OpConversionPattern<LSTMGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LSTMGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    for (Value r : op->getResults())
      outs.push_back(
          isa<NoneType>(r.getType())
              ? Value()
              : allocFor(rewriter, *getTypeConverter(), op.getLoc(), r));
    auto opt = [](Value v) { return isAbsent(v) ? Value() : v; };
    culib::LSTMBwdOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), adaptor.getR(),
        opt(adaptor.getB()), opt(adaptor.getInitialH()),
        opt(adaptor.getInitialC()), opt(adaptor.getDY()), opt(adaptor.getDYH()),
        opt(adaptor.getDYC()), outs[0], outs[1], outs[2], outs[3], outs[4],
        outs[5], op.getDirectionAttr(), op.getHiddenSizeAttr());
    SmallVector<Value> replacements;
    for (auto [r, buffer] : llvm::zip(op->getResults(), outs))
      replacements.push_back(
          buffer ? buffer : Value(NoneOp::create(rewriter, op.getLoc())));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

struct UnscaleCheckFiniteLowering : OpConversionPattern<UnscaleCheckFiniteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UnscaleCheckFiniteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> buffers =
        allocResults(rewriter, *getTypeConverter(), op);
    culib::UnscaleCheckFiniteOp::create(
        rewriter, op.getLoc(), adaptor.getScale(), adaptor.getGradients(),
        buffers[0], ArrayRef<Value>(buffers).drop_front());
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

struct AllReduceLowering : OpConversionPattern<AllReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<culib::CollectiveReduction> reduction =
        culib::symbolizeCollectiveReduction(op.getReduction());
    if (!reduction)
      return rewriter.notifyMatchFailure(op, "unknown reduction");
    SmallVector<Value> buffers =
        allocResults(rewriter, *getTypeConverter(), op);
    culib::AllReduceOp::create(
        rewriter, op.getLoc(), adaptor.getInputs(), buffers,
        culib::CollectiveReductionAttr::get(op.getContext(), *reduction),
        op.getReduceTypeAttr());
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

struct LossScaleUpdateLowering : StatefulPattern<LossScaleUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(LossScaleUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    culib::LossScaleUpdateOp::create(
        rewriter, op.getLoc(), adaptor.getFoundInf(), state(op.getScaleAttr()),
        state(op.getGrowthTrackerAttr()), op.getGrowthFactorAttr(),
        op.getBackoffFactorAttr(), op.getGrowthIntervalAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct SGDUpdateLowering : StatefulPattern<SGDUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(SGDUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value momentum = op.getMomentumBufferAttr()
                         ? state(op.getMomentumBufferAttr())
                         : Value();
    Value flag =
        isAbsent(adaptor.getFoundInf()) ? Value() : adaptor.getFoundInf();
    culib::SGDStepOp::create(rewriter, op.getLoc(), adaptor.getGrad(), flag,
                             state(op.getParamAttr()), momentum,
                             state(op.getStepAttr()), op.getLrAttr(),
                             op.getMomentumAttr(), op.getDampeningAttr(),
                             op.getWeightDecayAttr(), op.getNesterovAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct AdamUpdateLowering : StatefulPattern<AdamUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(AdamUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value flag =
        isAbsent(adaptor.getFoundInf()) ? Value() : adaptor.getFoundInf();
    culib::AdamStepOp::create(
        rewriter, op.getLoc(), adaptor.getGrad(), flag,
        state(op.getParamAttr()), state(op.getExpAvgAttr()),
        state(op.getExpAvgSqAttr()), state(op.getStepAttr()), op.getLrAttr(),
        op.getBeta1Attr(), op.getBeta2Attr(), op.getEpsAttr(),
        op.getWeightDecayAttr(), op.getDecoupledWeightDecayAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The globals `op` reads or writes, by symbol.
SmallVector<StringRef> globalsOf(Operation *op) {
  SmallVector<StringRef> names;
  if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
    names.push_back(load.getGlobal().getLeafReference());
  else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op))
    names.push_back(store.getGlobal().getLeafReference());
  else if (isa<SGDUpdateOp, AdamUpdateOp, LossScaleUpdateOp>(op))
    for (NamedAttribute attr : op->getAttrs())
      if (auto symbol = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
        names.push_back(symbol.getValue());
  return names;
}

} // namespace

LogicalResult mp::prepareStateBuffers(ModuleOp module, StateBuffers &states) {
  bool failed = false;
  module.walk([&](func::FuncOp func) {
    if (func.isExternal())
      return;
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&func.getBody().front());
    func.walk([&](Operation *op) {
      for (StringRef name : globalsOf(op)) {
        StringAttr key = StringAttr::get(func.getContext(), name);
        if (states.count(key))
          continue;
        auto global =
            SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op, key);
        auto type = global ? dyn_cast<RankedTensorType>(global.getType())
                           : RankedTensorType();
        auto value = global
                         ? dyn_cast_or_null<ElementsAttr>(global.getValueAttr())
                         : ElementsAttr();
        if (!type || !type.hasStaticShape() || !value) {
          op->emitError() << "cannot lower: global @" << name
                          << " must exist with a static tensor type and an "
                             "initial value";
          failed = true;
          continue;
        }
        auto state = culib::StateOp::create(
            b, global.getLoc(),
            MemRefType::get(type.getShape(), type.getElementType()), key,
            value);
        states[key] = state.getBuffer();
      }
    });
  });
  return failure(failed);
}

void mp::populateTrainingPatterns(const TypeConverter &tc,
                                  RewritePatternSet &patterns,
                                  LowerableOps &lowerable,
                                  const StateBuffers &states) {
  MLIRContext *ctx = patterns.getContext();
  // ml_program globals are lowered wherever they are used; they are not
  // among the mp ops the pass checks.
  patterns.add<GlobalLoadLowering, GlobalStoreLowering, LossScaleUpdateLowering,
               SGDUpdateLowering, AdamUpdateLowering>(tc, ctx, states);
  lowerable.add<LossScaleUpdateOp, SGDUpdateOp, AdamUpdateOp>();
  addLowering<ConvGradFilterLowering, ConvGradFilterOp>(tc, patterns,
                                                        lowerable);
  addLowering<PoolGradLowering, PoolGradOp>(tc, patterns, lowerable);
  addLowering<BatchNormGradLowering, BatchNormGradOp>(tc, patterns, lowerable);
  addLowering<LayerNormGradLowering, LayerNormGradOp>(tc, patterns, lowerable);
  addRule<LayerNormGradOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto grad = cast<LayerNormGradOp>(op);
    for (Value statistic : {grad.getMean(), grad.getInvStdDev()})
      if (!elementOf(statistic).isF32()) {
        os << "the statistics must be f32, got '" << statistic.getType() << "'";
        return;
      }
  });
  addLowering<LossGradLowering<SoftmaxCrossEntropyGradOp,
                               culib::SoftmaxCrossEntropyGradOp>,
              SoftmaxCrossEntropyGradOp>(tc, patterns, lowerable);
  addLowering<LossGradLowering<NLLLossGradOp, culib::NLLLossGradOp>,
              NLLLossGradOp>(tc, patterns, lowerable);
  addRule<SoftmaxCrossEntropyGradOp, NLLLossGradOp>(lowerable,
                                                    explainLossReduction);
  addLowering<LSTMGradLowering, LSTMGradOp>(tc, patterns, lowerable);
  addLowering<UnscaleCheckFiniteLowering, UnscaleCheckFiniteOp>(tc, patterns,
                                                                lowerable);
  addLowering<AllReduceLowering, AllReduceOp>(tc, patterns, lowerable);
}
