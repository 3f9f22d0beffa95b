//===- Training.cpp - inference graph -> training step
//---------------------===//
//
// mp-training (Passes.td): loss, reverse-mode gradients through
// GradientOpInterface, and the optimizer updates on ml_program globals.
// docs/training.md describes the step it builds.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/GradientOpInterface.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mp {
#define GEN_PASS_DEF_TRAINING
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

std::string describe(Operation *op) {
  std::string node = getNodeName(op);
  return op->getName().getStringRef().str() +
         (node.empty() ? std::string(" (unnamed node)")
                       : " at node '" + node + "'");
}

Value scalarConstant(OpBuilder &b, Location loc, Type element, double v) {
  auto type = RankedTensorType::get({}, element);
  auto value = DenseElementsAttr::get(type, b.getFloatAttr(element, v));
  return ConstantOp::create(b, loc, TypeRange{type}, ValueRange{},
                            {b.getNamedAttr("value", value)})
      .getResult();
}

/// A fresh module-level symbol name based on `base`.
std::string uniqueSymbol(SymbolTable &symbols, llvm::StringSet<> &taken,
                         StringRef base) {
  std::string name = base.empty() ? std::string("param") : base.str();
  std::string candidate = name;
  for (int i = 1; symbols.lookup(candidate) || taken.contains(candidate); ++i)
    candidate = name + "#" + std::to_string(i);
  taken.insert(candidate);
  return candidate;
}

struct TrainingPass : public mp::impl::TrainingBase<TrainingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isExternal())
        funcs.push_back(f);
    if (funcs.size() != 1) {
      emitError(module.getLoc())
          << "mp-training needs exactly one function, the "
             "module has "
          << funcs.size();
      return signalPassFailure();
    }
    if (failed(checkOptions(module)))
      return signalPassFailure();
    // Exported models compute shapes at run time (Shape -> Gather -> Concat
    // -> Reshape); with the inputs static, folding them gives the static
    // shapes every gradient rule needs.
    OpPassManager shapes(func::FuncOp::getOperationName());
    shapes.addPass(createInferShapes());
    shapes.addPass(createFoldConstants());
    // Layer norms and GELUs written as chains get their own gradient rules.
    if (raiseComposites)
      shapes.addPass(createRaiseComposites());
    if (failed(runPipeline(shapes, funcs.front())) ||
        failed(build(funcs.front())))
      return signalPassFailure();
  }

  LogicalResult checkOptions(ModuleOp module) {
    if (loss != "cross-entropy" && loss != "cross-entropy-probs" &&
        loss != "mse")
      return emitError(module.getLoc())
             << "mp-training: unknown loss '" << loss
             << "' (cross-entropy, cross-entropy-probs or mse)";
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw" &&
        optimizer != "none")
      return emitError(module.getLoc())
             << "mp-training: unknown optimizer '" << optimizer
             << "' (sgd, adam, adamw or none)";
    if (!(learningRate > 0))
      return emitError(module.getLoc())
             << "mp-training: lr must be positive, got " << learningRate;
    if (momentum < 0 || weightDecay < 0 || dampening < 0)
      return emitError(module.getLoc())
             << "mp-training: momentum, dampening and "
                "weight-decay must not be negative";
    if (nesterov && (momentum <= 0 || dampening != 0))
      return emitError(module.getLoc())
             << "mp-training: nesterov needs momentum > 0 "
                "and dampening 0 (as torch.optim.SGD)";
    if (wrtInputs && optimizer != "none")
      return emitError(module.getLoc())
             << "mp-training: wrt-inputs needs optimizer=none";
    if (label.empty())
      return emitError(module.getLoc())
             << "mp-training: label must not be empty";
    if (reduceType != "f32" && reduceType != "bf16" && reduceType != "f16")
      return emitError(module.getLoc())
             << "mp-training: reduce-type must be f32, bf16 or f16, got '"
             << reduceType << "'";
    if (!(bucketMegabytes > 0))
      return emitError(module.getLoc())
             << "mp-training: bucket-mb must be positive, got "
             << bucketMegabytes;
    // Not the defaults (Passes.td) without data-parallel: a mistake.
    const TrainingOptions defaults;
    if (!dataParallel && (reduceType != defaults.reduceType ||
                          bucketMegabytes != defaults.bucketMegabytes))
      return emitError(module.getLoc())
             << "mp-training: reduce-type and bucket-mb need "
                "data-parallel=true";
    return success();
  }

  LogicalResult build(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return emitError(func.getLoc(),
                       "mp-training needs a function with one block");
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = &getContext();

    // Static shapes everywhere: the gradient rules and plans rely on them.
    for (BlockArgument arg : body.getArguments())
      if (auto t = dyn_cast<RankedTensorType>(arg.getType());
          !t || !t.hasStaticShape())
        return emitError(func.getLoc())
               << "mp-training needs static shapes: input #"
               << arg.getArgNumber() << " has type " << arg.getType()
               << " (fix the batch size on import)";
    for (Operation &op : body.without_terminator())
      for (Type t : op.getResultTypes())
        if (!isa<NoneType>(t))
          if (auto rt = dyn_cast<RankedTensorType>(t);
              !rt || !rt.hasStaticShape())
            return op.emitError()
                   << "mp-training needs static shapes: " << describe(&op)
                   << " has result type " << t;

    // The output the loss is on.
    auto outputName = [&](unsigned i) -> std::string {
      auto name =
          func.getResultAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
      return name ? name.str() : "output" + std::to_string(i);
    };
    if (ret.getNumOperands() == 0)
      return emitError(func.getLoc(),
                       "mp-training: the function has no output");
    unsigned outputIndex = 0;
    if (!output.empty()) {
      bool found = false;
      for (unsigned i = 0; i < ret.getNumOperands() && !found; ++i)
        if (outputName(i) == output) {
          outputIndex = i;
          found = true;
        }
      if (!found)
        return emitError(func.getLoc())
               << "mp-training: no output named '" << output << "'";
    }
    Value prediction = ret.getOperand(outputIndex);
    std::string predictionName = outputName(outputIndex);
    if (!isFloatTensor(prediction.getType()))
      return emitError(func.getLoc())
             << "mp-training: output '" << predictionName
             << "' is not a floating-point tensor";
    auto predType = cast<RankedTensorType>(prediction.getType());
    // Inputs and outputs are bound by name: the new ones must not clash.
    if (predictionName == "loss")
      return emitError(func.getLoc())
             << "mp-training: output 'loss' is the name of the loss output; "
                "rename the model's output";
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name =
              func.getArgAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
          name && name.getValue() == label)
        return emitError(func.getLoc())
               << "mp-training: the model already has an input named '" << label
               << "' (name the label input otherwise: label=NAME)";

    llvm::StringSet<> frozenNames;
    for (const std::string &f : frozen)
      frozenNames.insert(f);

    // BatchNormalization trains with batch statistics; its running
    // statistics are state the step updates.
    SmallVector<BatchNormalizationOp> batchNorms;
    for (auto bn : body.getOps<BatchNormalizationOp>()) {
      bn.setTrainingModeAttr(IntegerAttr::get(IntegerType::get(ctx, 64), 1));
      batchNorms.push_back(bn);
    }
    llvm::DenseSet<Value> statistics;
    for (auto bn : batchNorms) {
      statistics.insert(bn.getInputMean());
      statistics.insert(bn.getInputVar());
    }

    // Differentiable leaves: floating-point initializers (not scalars, not
    // frozen, not statistics) and, with wrt-inputs, the inputs.
    SmallVector<InitializerOp> candidates;
    llvm::DenseSet<Value> needsGrad;
    for (auto init : body.getOps<InitializerOp>()) {
      auto type = cast<RankedTensorType>(init.getType());
      if (!isa<FloatType>(type.getElementType()) || type.getNumElements() < 2 ||
          frozenNames.contains(init.getName()) ||
          statistics.contains(init.getResult()))
        continue;
      candidates.push_back(init);
      needsGrad.insert(init.getResult());
    }
    if (wrtInputs)
      for (BlockArgument arg : body.getArguments())
        if (isFloatTensor(arg.getType()))
          needsGrad.insert(arg);
    // Float results of ops that read a value needing a gradient need one.
    auto propagateNeedsGrad = [&] {
      for (Operation &op : body.without_terminator()) {
        if (!llvm::any_of(op.getOperands(),
                          [&](Value v) { return needsGrad.contains(v); }))
          continue;
        for (Value r : op.getResults())
          if (isFloatTensor(r.getType()))
            needsGrad.insert(r);
      }
    };
    propagateNeedsGrad();
    for (const std::string &f : frozen)
      if (llvm::none_of(body.getOps<InitializerOp>(),
                        [&](InitializerOp i) { return i.getName() == f; }))
        return emitError(func.getLoc()) << "mp-training: frozen initializer '"
                                        << f << "' does not exist";

    // The label input and the loss, before the return.
    OpBuilder b(ret);
    Location lossLoc = NameLoc::get(b.getStringAttr("loss"), func.getLoc());
    RankedTensorType labelType;
    if (loss == "mse") {
      labelType = predType;
    } else {
      if (predType.getRank() < 2)
        return emitError(func.getLoc())
               << "mp-training: cross-entropy needs an output "
                  "of shape [batch, classes, ...], got "
               << predType;
      SmallVector<int64_t> shape(predType.getShape());
      shape.erase(shape.begin() + 1);
      labelType = RankedTensorType::get(shape, b.getIntegerType(64));
    }
    unsigned labelIndex = func.getNumArguments();
    if (failed(func.insertArgument(
            labelIndex, labelType,
            b.getDictionaryAttr({b.getNamedAttr(MPDialect::kArgNameAttr,
                                                b.getStringAttr(label))}),
            func.getLoc())))
      return failure();
    Value labelValue = func.getArgument(labelIndex);

    Value lossValue;
    if (loss == "mse") {
      Value diff = SubOp::create(b, lossLoc, prediction, labelValue);
      Value sq = MulOp::create(b, lossLoc, diff, diff);
      lossValue = ReduceMeanOp::create(
          b, lossLoc, RankedTensorType::get({}, predType.getElementType()), sq,
          DenseI64ArrayAttr(), b.getI64IntegerAttr(0));
    } else {
      Value scores = prediction;
      bool probabilities = loss == "cross-entropy-probs";
      if (auto softmax = prediction.getDefiningOp<SoftmaxOp>()) {
        int64_t axis = int64_t(softmax.getAxis().value_or(-1));
        if (axis < 0)
          axis += predType.getRank();
        if (axis != 1)
          return emitError(softmax.getLoc())
                 << "mp-training: cross-entropy needs the classes on axis 1, "
                    "but output '"
                 << predictionName << "' is a Softmax over axis " << axis;
        // Cross-entropy of softmax(x) is computed from x: exact, stable.
        scores = softmax.getInput();
        probabilities = false;
      }
      if (probabilities) {
        Value logP = LogOp::create(b, lossLoc, scores.getType(), scores);
        lossValue = NegativeLogLikelihoodLossOp::create(
            b, lossLoc,
            TypeRange{RankedTensorType::get({}, predType.getElementType())},
            logP, labelValue, NoneOp::create(b, lossLoc), IntegerAttr(),
            b.getStringAttr("mean"));
      } else {
        auto sce = SoftmaxCrossEntropyLossOp::create(
            b, lossLoc,
            TypeRange{RankedTensorType::get({}, predType.getElementType()),
                      scores.getType()},
            scores, labelValue, NoneOp::create(b, lossLoc), IntegerAttr(),
            b.getStringAttr("mean"));
        lossValue = sce.getResult(0);
      }
    }
    if (!needsGrad.contains(prediction) && !needsGrad.empty())
      return emitError(func.getLoc())
             << "mp-training: output '" << predictionName
             << "' does not depend on any parameter";
    // The loss ops are differentiable where their inputs are.
    propagateNeedsGrad();

    // Reverse mode, from the loss seed (1, or the loss scale once
    // mp-loss-scale has run) back to the leaves.
    Value seed = scalarConstant(
        b, lossLoc,
        cast<RankedTensorType>(lossValue.getType()).getElementType(), 1.0);
    seed.getDefiningOp()->setAttr("mp.loss_seed", b.getUnitAttr());
    llvm::DenseMap<Value, Value> grads;
    grads[lossValue] = seed;
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      if (&op != seed.getDefiningOp())
        forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        resultGrads.push_back(grads.lookup(r));
        any |= bool(resultGrads.back());
      }
      if (!any || isa<InitializerOp, ConstantOp>(op) ||
          llvm::none_of(op->getOperands(),
                        [&](Value v) { return needsGrad.contains(v); }))
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError()
               << "mp-training: no gradient rule for " << describe(op);
      SmallVector<Value> operandGrads;
      // A rule's error says what is unsupported; report it as one error
      // that also names the op and node it is about.
      SmallVector<std::string> ruleErrors;
      LogicalResult built = failure();
      {
        ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &d) {
          if (d.getSeverity() != DiagnosticSeverity::Error)
            return failure();
          ruleErrors.push_back(d.str());
          return success();
        });
        built = rule.buildGradients(b, resultGrads, operandGrads);
      }
      if (failed(built)) {
        InFlightDiagnostic diag = op->emitError()
                                  << "mp-training: cannot differentiate "
                                  << describe(op);
        for (const std::string &e : ruleErrors)
          diag << ": " << e;
        return diag;
      }
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
        if (!g || !needsGrad.contains(operand))
          continue;
        Value &slot = grads[operand];
        slot = slot ? Value(AddOp::create(b, g.getLoc(), slot, g)) : g;
      }
    }

    // Parameters: the candidates a gradient reached become globals.
    SymbolTable symbols(func->getParentOp());
    llvm::StringSet<> taken;
    struct Parameter {
      std::string symbol;
      Value grad;
      RankedTensorType type;
      Location loc;
    };
    SmallVector<Parameter> parameters;
    OpBuilder moduleBuilder(func);
    auto addGlobal = [&](StringRef symbol, RankedTensorType type,
                         Attribute value, Location loc) {
      auto global = ml_program::GlobalOp::create(
          moduleBuilder, loc, moduleBuilder.getStringAttr(symbol),
          TypeAttr::get(type), moduleBuilder.getUnitAttr(), value,
          moduleBuilder.getStringAttr("private"));
      symbols.insert(global);
      return global;
    };
    for (InitializerOp init : candidates) {
      Value g = grads.lookup(init.getResult());
      if (!g)
        continue;
      std::string symbol = uniqueSymbol(symbols, taken, init.getName());
      auto type = cast<RankedTensorType>(init.getType());
      addGlobal(symbol, type, init.getValue(), init.getLoc());
      OpBuilder at(init);
      Value load = ml_program::GlobalLoadOp::create(
          at, init.getLoc(), type, FlatSymbolRefAttr::get(ctx, symbol));
      init.getResult().replaceAllUsesWith(load);
      init.erase();
      parameters.push_back({symbol, g, type, load.getLoc()});
    }
    if (parameters.empty() && !wrtInputs)
      return emitError(func.getLoc(),
                       "mp-training: no trainable parameter reaches the "
                       "loss (every initializer frozen or scalar?)");

    // Running statistics of BatchNormalization: globals stored each step.
    // Each statistic operand gets its own global (an initializer that
    // several statistics share starts them all, but they evolve apart).
    for (auto bn : batchNorms) {
      for (auto [input, running] :
           {std::pair<OpOperand *, Value>{&bn.getInputMeanMutable(),
                                          bn.getRunningMean()},
            std::pair<OpOperand *, Value>{&bn.getInputVarMutable(),
                                          bn.getRunningVar()}}) {
        auto init = input->get().getDefiningOp<InitializerOp>();
        if (!init)
          return bn.emitError() << "mp-training: the statistics of "
                                << describe(bn) << " must be initializers";
        std::string symbol = uniqueSymbol(symbols, taken, init.getName());
        auto type = cast<RankedTensorType>(init.getType());
        addGlobal(symbol, type, init.getValue(), init.getLoc());
        OpBuilder at(init);
        Value load = ml_program::GlobalLoadOp::create(
            at, init.getLoc(), type, FlatSymbolRefAttr::get(ctx, symbol));
        input->set(load);
        if (init->use_empty())
          init.erase();
        ml_program::GlobalStoreOp::create(
            b, bn.getLoc(), FlatSymbolRefAttr::get(ctx, symbol), running);
      }
    }

    // Data parallel: the gradients are averaged over the ranks before
    // anything reads them, in buckets issued as soon as their last gradient
    // is computed.
    if (dataParallel) {
      SmallVector<Value *> gradSlots;
      for (Parameter &p : parameters)
        gradSlots.push_back(&p.grad);
      reduceGradients(func, gradSlots);
      func->setAttr("mp.data_parallel", b.getUnitAttr());
      // Batch statistics over the global batch (SyncBatchNorm), so that N
      // ranks train as one process on the whole batch does.
      func.walk([&](Operation *op) {
        if (isa<BatchNormGradOp>(op) ||
            (isa<BatchNormalizationOp>(op) &&
             cast<BatchNormalizationOp>(op).getTrainingMode().value_or(0)))
          op->setAttr(MPDialect::kSyncRanksAttr, b.getUnitAttr());
      });
    }

    // Outputs: loss, prediction, then gradients (optimizer=none).
    SmallVector<Value> results{lossValue, prediction};
    SmallVector<std::string> names{"loss", predictionName};
    if (optimizer == "none") {
      for (const Parameter &p : parameters) {
        results.push_back(p.grad);
        names.push_back("grad:" + p.symbol);
      }
      if (wrtInputs)
        for (BlockArgument arg : body.getArguments()) {
          if (arg == labelValue || !isFloatTensor(arg.getType()))
            continue;
          Value g = grads.lookup(arg);
          if (!g) {
            // The loss does not depend on it: zeros (not x - x, which is
            // NaN where x is not finite).
            auto type = cast<RankedTensorType>(arg.getType());
            auto zeros = DenseElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), 0.0));
            g = ConstantOp::create(b, func.getLoc(), TypeRange{type},
                                   ValueRange{},
                                   {b.getNamedAttr("value", zeros)})
                    .getResult();
          }
          auto name = func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), MPDialect::kArgNameAttr);
          results.push_back(g);
          names.push_back(
              "grad:" + (name ? name.str()
                              : "input" + std::to_string(arg.getArgNumber())));
        }
    } else {
      for (const Parameter &p : parameters)
        addUpdate(b, symbols, taken, addGlobal, p.symbol, p.grad, p.type,
                  p.loc);
    }

    ret->setOperands(results);
    SmallVector<Type> resultTypes;
    for (Value v : results)
      resultTypes.push_back(v.getType());
    func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
    SmallVector<DictionaryAttr> resultAttrs;
    for (const std::string &n : names)
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(MPDialect::kArgNameAttr, b.getStringAttr(n))}));
    func.setAllResultAttrs(resultAttrs);

    auto inputName = [&](unsigned i) -> std::string {
      auto name = func.getArgAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
      return name ? name.str() : "input" + std::to_string(i);
    };
    SmallVector<NamedAttribute> info{
        b.getNamedAttr("data_input", b.getStringAttr(inputName(0))),
        b.getNamedAttr("label_input", b.getStringAttr(label)),
        b.getNamedAttr("loss_output", b.getStringAttr("loss")),
        b.getNamedAttr("prediction_output", b.getStringAttr(predictionName)),
        b.getNamedAttr(
            "task",
            b.getStringAttr(loss == "mse" ? "regression" : "classification"))};
    func->setAttr("mp.training", b.getDictionaryAttr(info));

    // Drop what no output needs (gradients of non-parameters, unused
    // forward results).
    bool erased = true;
    while (erased) {
      erased = false;
      SmallVector<Operation *> dead;
      for (Operation &op : body.without_terminator())
        if (op.use_empty() && isPure(&op) && !op.hasAttr("mp.loss_seed"))
          dead.push_back(&op);
      for (Operation *op : llvm::reverse(dead)) {
        op->erase();
        erased = true;
      }
    }
    return success();
  }

  /// Replaces each gradient by its mean over the ranks: one mp.all_reduce
  /// per bucket of about `bucket-mb` megabytes (f32 bytes), the gradients in
  /// the order the backward pass computes them, each bucket right after
  /// its last gradient (DDP's buckets, without its first-iteration
  /// discovery: the order is static here).
  void reduceGradients(func::FuncOp func, ArrayRef<Value *> gradSlots) {
    Block &body = func.getBody().front();
    // Distinct gradients by the position of their definition (arguments
    // first).
    SmallVector<Value> distinct;
    llvm::SmallDenseSet<Value> seen;
    for (Value *slot : gradSlots)
      if (seen.insert(*slot).second)
        distinct.push_back(*slot);
    llvm::stable_sort(distinct, [](Value a, Value b) {
      Operation *pa = a.getDefiningOp(), *pb = b.getDefiningOp();
      if (!pa || !pb)
        return !pa && pb;
      return pa->isBeforeInBlock(pb);
    });
    auto bytesOf = [](Value g) {
      return 4.0 * cast<RankedTensorType>(g.getType()).getNumElements();
    };
    const double bucketBytes = bucketMegabytes * 1024.0 * 1024.0;
    OpBuilder b(func.getContext());
    Type reduceElement = reduceType == "bf16"  ? Type(b.getBF16Type())
                         : reduceType == "f16" ? Type(b.getF16Type())
                                               : Type(b.getF32Type());
    llvm::DenseMap<Value, Value> reduced;
    Operation *lastCollective = nullptr;
    size_t first = 0;
    while (first < distinct.size()) {
      // The next gradient always; the ones after it while they fit.
      size_t end = first + 1;
      double bytes = bytesOf(distinct[first]);
      while (end < distinct.size() &&
             bytes + bytesOf(distinct[end]) <= bucketBytes)
        bytes += bytesOf(distinct[end++]);
      ArrayRef<Value> bucket(distinct.data() + first, end - first);
      // After the bucket's last gradient and after the previous bucket (two
      // results of one op can be in two buckets).
      Operation *after = bucket.back().getDefiningOp();
      if (lastCollective && (!after || after->isBeforeInBlock(lastCollective)))
        after = lastCollective;
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Type> types;
      for (Value g : bucket)
        types.push_back(g.getType());
      auto collective = AllReduceOp::create(b, bucket.front().getLoc(), types,
                                            bucket, b.getStringAttr("mean"),
                                            TypeAttr::get(reduceElement));
      for (auto [g, r] : llvm::zip(bucket, collective.getOutputs()))
        reduced[g] = r;
      lastCollective = collective;
      first = end;
    }
    for (Value *slot : gradSlots)
      *slot = reduced.lookup(*slot);
  }

  template <typename AddGlobal>
  void addUpdate(OpBuilder &b, SymbolTable &symbols, llvm::StringSet<> &taken,
                 AddGlobal &addGlobal, StringRef param, Value grad,
                 RankedTensorType type, Location loc) {
    MLIRContext *ctx = b.getContext();
    auto zerosOf = [&](RankedTensorType t) -> Attribute {
      if (isa<FloatType>(t.getElementType()))
        return DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0));
      return DenseElementsAttr::get(t, b.getIntegerAttr(t.getElementType(), 0));
    };
    auto stateOf = [&](StringRef suffix, RankedTensorType t) {
      std::string symbol =
          uniqueSymbol(symbols, taken, (param + "." + suffix).str());
      addGlobal(symbol, t, zerosOf(t), loc);
      return FlatSymbolRefAttr::get(ctx, symbol);
    };
    auto stepType = RankedTensorType::get({1}, b.getIntegerType(64));
    auto f32 = [&](double v) { return b.getF32FloatAttr(v); };
    Value noFlag = NoneOp::create(b, loc);
    // Updates happen in f32; a low-precision model gets f32 master copies
    // from mp-master-weights, which widens the parameter globals.
    if (!cast<RankedTensorType>(grad.getType()).getElementType().isF32()) {
      auto f32Type =
          cast<RankedTensorType>(grad.getType()).clone(b.getF32Type());
      grad = CastOp::create(
          b, loc, f32Type, grad,
          b.getI64IntegerAttr(getOnnxDataTypeForType(b.getF32Type())),
          IntegerAttr());
    }
    // The state globals are made in a fixed order (not as call arguments,
    // whose evaluation order is unspecified), so the module is the same
    // whatever compiler built mp-opt.
    if (optimizer == "sgd") {
      FlatSymbolRefAttr momentumBuffer =
          momentum != 0 ? stateOf("momentum", type) : FlatSymbolRefAttr();
      FlatSymbolRefAttr step = stateOf("step", stepType);
      SGDUpdateOp::create(
          b, loc, grad, noFlag, FlatSymbolRefAttr::get(ctx, param),
          momentumBuffer, step, f32(learningRate), f32(momentum),
          f32(dampening), f32(weightDecay), b.getBoolAttr(nesterov));
    } else {
      FlatSymbolRefAttr expAvg = stateOf("exp_avg", type);
      FlatSymbolRefAttr expAvgSq = stateOf("exp_avg_sq", type);
      FlatSymbolRefAttr step = stateOf("step", stepType);
      AdamUpdateOp::create(
          b, loc, grad, noFlag, FlatSymbolRefAttr::get(ctx, param), expAvg,
          expAvgSq, step, f32(learningRate), f32(beta1), f32(beta2),
          f32(epsilon), f32(weightDecay), b.getBoolAttr(optimizer == "adamw"));
    }
  }
};
} // namespace
