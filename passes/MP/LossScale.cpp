//===- LossScale.cpp - static and dynamic loss scaling --------------------===//
//
// mp-loss-scale (Passes.td), with PyTorch GradScaler's semantics:
//   backward seed = scale                  (instead of 1)
//   found_inf, g_i = unscale_check_finite(scale, g_i...)
//   updates skipped when found_inf          (sgd/adam take the flag)
//   dynamic: loss_scale_update(found_inf)   (backoff / growth, in place)
// The step returns `skipped` (found_inf) and `loss_scale`.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mp {
#define GEN_PASS_DEF_LOSSSCALE
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// Whether any value of `func` (arguments, results of its ops) is an f16
/// tensor or scalar: the step then has f16 gradients that can underflow.
bool computesInF16(func::FuncOp func) {
  auto isF16 = [](Type t) { return isa<Float16Type>(getElementTypeOrSelf(t)); };
  if (llvm::any_of(func.getArgumentTypes(), isF16))
    return true;
  WalkResult found = func.walk([&](Operation *op) {
    return llvm::any_of(op->getResultTypes(), isF16) ? WalkResult::interrupt()
                                                     : WalkResult::advance();
  });
  return found.wasInterrupted();
}

struct LossScalePass : public mp::impl::LossScaleBase<LossScalePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "auto" && mode != "dynamic" && mode != "static" &&
        mode != "none") {
      emitError(module.getLoc()) << "mp-loss-scale: unknown mode '" << mode
                                 << "' (auto, dynamic, static or none)";
      return signalPassFailure();
    }
    if (!(initScale > 0) || !std::isfinite(double(initScale)) ||
        !(growthFactor > 1) || !(backoffFactor > 0 && backoffFactor < 1) ||
        growthInterval < 1) {
      emitError(module.getLoc())
          << "mp-loss-scale: need init-scale > 0, growth-factor > 1, "
             "0 < backoff-factor < 1 and interval >= 1";
      return signalPassFailure();
    }
    if (mode == "none")
      return;
    // A second run finds no seed (the first replaced it by the scale): look
    // for its mark first, so that it says what happened.
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("mp.loss_scaled")) {
        emitError(f.getLoc()) << "mp-loss-scale: @" << f.getName()
                              << " is already loss-scaled (mode "
                              << f->getAttr("mp.loss_scaled") << ")";
        return signalPassFailure();
      }
    ConstantOp seed;
    func::FuncOp func;
    module.walk([&](ConstantOp c) {
      if (c->hasAttr("mp.loss_seed")) {
        seed = c;
        func = c->getParentOfType<func::FuncOp>();
      }
    });
    if (!seed) {
      emitError(module.getLoc(),
                "mp-loss-scale: no training step (run mp-training "
                "first)");
      return signalPassFailure();
    }
    if (mode == "auto") {
      if (!computesInF16(func)) {
        emitRemark(func.getLoc())
            << "mp-loss-scale: @" << func.getName()
            << " computes in no f16: bf16 and f32 have f32's exponent range, "
               "so its gradients need no loss scaling (mode=dynamic or "
               "static scales them anyway)";
        return;
      }
    }
    // What runs: auto with f16 is dynamic.
    const std::string scaling = mode == "auto" ? "dynamic" : mode.getValue();
    MLIRContext *ctx = &getContext();
    SymbolTable symbols(module);
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Location loc =
        NameLoc::get(StringAttr::get(ctx, "loss_scale"), seed.getLoc());
    auto scaleType = RankedTensorType::get({}, Float32Type::get(ctx));

    // The scale: a global (dynamic) or a constant (static).
    OpBuilder b(seed);
    Value scale;
    FlatSymbolRefAttr scaleSymbol, trackerSymbol;
    if (scaling == "dynamic") {
      OpBuilder mb(func);
      auto makeGlobal = [&](StringRef base, RankedTensorType type,
                            Attribute value) {
        std::string name = base.str();
        for (int i = 1; symbols.lookup(name); ++i)
          name = base.str() + "#" + std::to_string(i);
        auto g = ml_program::GlobalOp::create(
            mb, loc, mb.getStringAttr(name), TypeAttr::get(type),
            mb.getUnitAttr(), value, mb.getStringAttr("private"));
        symbols.insert(g);
        return FlatSymbolRefAttr::get(ctx, g.getSymName());
      };
      scaleSymbol = makeGlobal(
          "loss_scale", scaleType,
          DenseElementsAttr::get(scaleType, b.getF32FloatAttr(initScale)));
      auto trackerType = RankedTensorType::get({1}, b.getIntegerType(64));
      trackerSymbol = makeGlobal(
          "loss_scale.growth_tracker", trackerType,
          DenseElementsAttr::get(trackerType, b.getI64IntegerAttr(0)));
      scale = ml_program::GlobalLoadOp::create(b, loc, scaleType, scaleSymbol);
    } else {
      scale = ConstantOp::create(
          b, loc, TypeRange{scaleType}, ValueRange{},
          {b.getNamedAttr(
              "value", DenseElementsAttr::get(scaleType,
                                              b.getF32FloatAttr(initScale)))});
    }
    // The backward pass starts from the scale.
    Value seedValue = scale;
    auto seedType = cast<RankedTensorType>(seed.getType());
    if (seedType.getElementType() != scaleType.getElementType())
      seedValue = CastOp::create(b, loc, seedType, scale,
                                 b.getI64IntegerAttr(getOnnxDataTypeForType(
                                     seedType.getElementType())),
                                 IntegerAttr());
    if (seedType.getShape() != scaleType.getShape()) {
      seed.emitError() << "mp-loss-scale: the loss seed must be a scalar, got "
                       << seedType;
      return signalPassFailure();
    }
    seed.getResult().replaceAllUsesWith(seedValue);
    seed.erase();

    // Unscale what the updates (or, without optimizer, the gradient
    // outputs) read, with one finite check.
    // The updates go last, in their order, so that the one finite check
    // before the first update sees every gradient.
    SmallVector<Operation *> updateOps;
    for (Operation &op : body)
      if (isa<SGDUpdateOp, AdamUpdateOp>(op))
        updateOps.push_back(&op);
    for (Operation *op : updateOps)
      op->moveBefore(ret);
    SmallVector<OpOperand *> gradUses;
    Operation *firstUpdate = nullptr, *lastUpdate = nullptr;
    for (Operation &op : body) {
      if (isa<SGDUpdateOp, AdamUpdateOp>(op)) {
        gradUses.push_back(&op.getOpOperand(0));
        if (!firstUpdate)
          firstUpdate = &op;
        lastUpdate = &op;
      }
    }
    if (gradUses.empty())
      for (OpOperand &operand : ret->getOpOperands()) {
        auto name = func.getResultAttrOfType<StringAttr>(
            operand.getOperandNumber(), MPDialect::kArgNameAttr);
        if (name && name.getValue().starts_with("grad:"))
          gradUses.push_back(&operand);
      }
    if (gradUses.empty()) {
      emitError(func.getLoc(),
                "mp-loss-scale: the step has no gradients to unscale");
      return signalPassFailure();
    }
    OpBuilder ub(firstUpdate ? firstUpdate : ret.getOperation());
    SmallVector<Value> grads;
    SmallVector<Type> unscaledTypes;
    for (OpOperand *use : gradUses) {
      grads.push_back(use->get());
      unscaledTypes.push_back(
          cast<RankedTensorType>(use->get().getType()).clone(ub.getF32Type()));
    }
    auto flagType = RankedTensorType::get({1}, ub.getF32Type());
    auto unscale = UnscaleCheckFiniteOp::create(ub, loc, flagType,
                                                unscaledTypes, scale, grads);
    Value foundInf = unscale.getFoundInf();
    // Data parallel: every rank skips the same steps and backs off together
    // (the flag's maximum over the ranks), whatever its own gradients saw.
    if (func->hasAttr("mp.data_parallel"))
      foundInf = AllReduceOp::create(
                     ub, loc, TypeRange{flagType}, ValueRange{foundInf},
                     ub.getStringAttr("max"), TypeAttr::get(ub.getF32Type()))
                     .getOutputs()
                     .front();
    for (auto [use, unscaled] : llvm::zip(gradUses, unscale.getUnscaled()))
      use->set(unscaled);
    for (OpOperand *use : gradUses)
      if (isa<SGDUpdateOp, AdamUpdateOp>(use->getOwner())) {
        Value noFlag = use->getOwner()->getOperand(1);
        use->getOwner()->setOperand(1, foundInf);
        if (Operation *none = noFlag.getDefiningOp();
            none && isa<NoneOp>(none) && none->use_empty())
          none->erase();
      }

    if (scaling == "dynamic") {
      OpBuilder after(ctx);
      if (lastUpdate)
        after.setInsertionPointAfter(lastUpdate);
      else
        after.setInsertionPoint(ret);
      LossScaleUpdateOp::create(after, loc, foundInf, scaleSymbol,
                                trackerSymbol,
                                after.getF32FloatAttr(growthFactor),
                                after.getF32FloatAttr(backoffFactor),
                                after.getI64IntegerAttr(growthInterval));
    }

    // Outputs: skipped, loss_scale.
    SmallVector<Value> results(ret.getOperands());
    results.push_back(foundInf);
    results.push_back(scale);
    ret->setOperands(results);
    SmallVector<Type> types;
    for (Value v : results)
      types.push_back(v.getType());
    unsigned first = func.getNumResults();
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), types));
    OpBuilder nb(ctx);
    func.setResultAttr(first, MPDialect::kArgNameAttr,
                       nb.getStringAttr("skipped"));
    func.setResultAttr(first + 1, MPDialect::kArgNameAttr,
                       nb.getStringAttr("loss_scale"));
    if (auto info = func->getAttrOfType<DictionaryAttr>("mp.training")) {
      NamedAttrList attrs(info);
      attrs.set("skipped_output", nb.getStringAttr("skipped"));
      attrs.set("scale_output", nb.getStringAttr("loss_scale"));
      func->setAttr("mp.training", attrs.getDictionary(ctx));
    }
    func->setAttr("mp.loss_scaled", nb.getStringAttr(scaling));
  }
};
} // namespace
