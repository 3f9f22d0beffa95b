//===- ConvertMPToCuLib.cpp - mp tensor graph to culib calls on buffers ---===//
//
// Dialect conversion: every tensor becomes a static buffer (memref), every
// typed mp op writes its results into fresh `culib.alloc` buffers through
// the library call or kernel that computes it. The patterns are in one file
// per op family beside this one; this file has the type converter, the
// table of what can be lowered, and the pass, which checks every op against
// that table before converting anything.
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"
#include "mp/Conversion/Passes.h"
#include "mp/Dialect/MP/AttentionForm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"

namespace mp {
#define GEN_PASS_DEF_CONVERTMPTOCULIB
#include "mp/Conversion/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

bool mp::isPlanElementType(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return (llvm::is_contained({1u, 8u, 16u, 32u, 64u}, integer.getWidth()) &&
            !integer.isSigned()) ||
           isNarrowElementType(type);
  return type.isF16() || type.isBF16() || type.isF32() || type.isF64() ||
         isNarrowElementType(type);
}

bool mp::isNarrowElementType(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return (integer.getWidth() == 4 || integer.getWidth() == 2) &&
           !integer.isSigned();
  return isa<Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type,
             Float8E5M2FNUZType, Float4E2M1FNType, Float8E8M0FNUType>(type);
}

/// The ops that take or make the narrow types: the runtime stores them,
/// converts them and moves them, but computes nothing in them.
static bool handlesNarrowTypes(Operation *op) {
  return isa<CastOp, CastLikeOp, ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp,
             IdentityOp>(op);
}

BufferTypeConverter::BufferTypeConverter() {
  addConversion([](Type type) -> std::optional<Type> {
    if (isa<NoneType>(type))
      return type;
    return std::nullopt;
  });
  addConversion([](RankedTensorType type) -> std::optional<Type> {
    if (!type.hasStaticShape() || !isPlanElementType(type.getElementType()))
      return std::nullopt;
    return MemRefType::get(type.getShape(), type.getElementType());
  });
  addConversion([](MemRefType type) { return type; });
}

void LowerableOps::add(StringRef opName, const Rule &rule) {
  Rule &slot = rules[opName];
  if (rule)
    slot = rule;
}

std::string LowerableOps::whyNotLowerable(Operation *op) const {
  auto it = rules.find(op->getName().getStringRef());
  return it == rules.end() || !it->second ? std::string() : it->second(op);
}

void mp::populateMPToCuLibConversionPatterns(const TypeConverter &converter,
                                             RewritePatternSet &patterns,
                                             LowerableOps &lowerable,
                                             const StateBuffers &states) {
  populateTrainingPatterns(converter, patterns, lowerable, states);
  populateLibraryCallPatterns(converter, patterns, lowerable);
  populateNNPatterns(converter, patterns, lowerable);
  populateDataMovementPatterns(converter, patterns, lowerable);
  populateElementwisePatterns(converter, patterns, lowerable);
}

namespace {
struct ConvertMPToCuLibPass
    : public mp::impl::ConvertMPToCuLibBase<ConvertMPToCuLibPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    BufferTypeConverter typeConverter;
    RewritePatternSet patterns(ctx);
    LowerableOps lowerable;
    StateBuffers states;
    populateMPToCuLibConversionPatterns(typeConverter, patterns, lowerable,
                                        states);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
        patterns, typeConverter);
    populateReturnOpTypeConversionPattern(patterns, typeConverter);

    // Say exactly what cannot be lowered before converting anything.
    bool unsupported = false;
    // Subgraphs of ops that cannot be lowered are not reported again.
    module.walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
      if (!isa_and_nonnull<MPDialect>(op->getDialect()) || isa<NoneOp>(op))
        return WalkResult::advance();
      // An unnamed node (ONNX's test models, inlined function bodies) is
      // named by the value it writes, so that two of them read apart.
      std::string node = getNodeName(op);
      std::string where = "node '" + node + "'";
      if (node.empty()) {
        auto outputs =
            op->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr);
        auto first = outputs && !outputs.empty()
                         ? dyn_cast<StringAttr>(outputs[0])
                         : StringAttr();
        where = first && !first.getValue().empty()
                    ? "the unnamed node writing '" + first.str() + "'"
                    : std::string("an unnamed node");
      }
      if (auto generic = dyn_cast<OnnxGenericOp>(op)) {
        op->emitError() << "cannot lower "
                        << (generic.getDomain().empty()
                                ? std::string()
                                : generic.getDomain().str() + "::")
                        << generic.getOpType() << " at " << where
                        << ": it has no typed op";
        unsupported = true;
        return WalkResult::skip();
      }
      // mp-decompose-nodes computes attention as the ops of its canonical
      // form; what is left has no such form.
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        std::string why = attentionFormError(attention);
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": "
                        << (why.empty() ? "mp-decompose-nodes computes it "
                                          "(part of mp-compile); run it first"
                                        : why);
        unsupported = true;
        return WalkResult::skip();
      }
      if (isa<CenterCropPadOp>(op)) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": mp-decompose-nodes (part of mp-compile) "
                           "computes it when the shape is a constant";
        unsupported = true;
        return WalkResult::skip();
      }
      if (isa<RotaryEmbeddingOp>(op)) {
        op->emitError()
            << "cannot lower " << op->getName() << " at " << where
            << ": mp-decompose-nodes (part of mp-compile) computes it when X "
               "is 3-D or 4-D, num_heads splits a 3-D X, "
               "rotary_embedding_dim is even and at most the head size, and "
               "the caches are [batch, seq, dim / 2] or [positions, dim / 2] "
               "with position_ids [batch, seq], all static";
        unsupported = true;
        return WalkResult::skip();
      }
      if (!lowerable.contains(op->getName().getStringRef())) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": no culib lowering yet";
        unsupported = true;
        return WalkResult::skip();
      }
      // An operand that is no static tensor comes from a value already
      // reported (a result below, a generic op, a function argument): the
      // op is skipped without a message of its own, so that one problem
      // gives one diagnostic, not one per op downstream. The lowering
      // rules below may then read their operands' shapes.
      if (!llvm::all_of(op->getOperandTypes(), [](Type type) {
            auto tensor = dyn_cast<RankedTensorType>(type);
            return isa<NoneType>(type) || (tensor && tensor.hasStaticShape());
          })) {
        unsupported = true;
        return WalkResult::skip();
      }
      auto narrowType = [](Type type) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        return tensor && isNarrowElementType(tensor.getElementType());
      };
      if (!handlesNarrowTypes(op) &&
          (llvm::any_of(op->getOperandTypes(), narrowType) ||
           llvm::any_of(op->getResultTypes(), narrowType))) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": the runtime computes nothing in float8, float4, "
                           "int4 or int2 elements (Cast, CastLike and "
                           "reshapes take them)";
        unsupported = true;
        return WalkResult::skip();
      }
      if (std::string why = lowerable.whyNotLowerable(op); !why.empty()) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": " << why;
        unsupported = true;
        return WalkResult::skip();
      }
      for (Type type : op->getResultTypes()) {
        if (isa<NoneType>(type))
          continue;
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor || !tensor.hasStaticShape()) {
          op->emitError() << "cannot lower " << op->getName() << " at " << where
                          << ": result type " << type
                          << " is not static (plans need static shapes)";
          unsupported = true;
          return WalkResult::skip();
        }
        if (!isPlanElementType(tensor.getElementType())) {
          op->emitError() << "cannot lower " << op->getName() << " at " << where
                          << ": element type " << tensor.getElementType()
                          << " has no runtime buffers (numbers, bool and the "
                             "narrow types only)";
          unsupported = true;
          return WalkResult::skip();
        }
      }
      return WalkResult::advance();
    });
    for (auto func : module.getOps<func::FuncOp>())
      for (auto [i, type] : llvm::enumerate(func.getFunctionType().getInputs()))
        if (!typeConverter.convertType(type)) {
          auto name = func.getArgAttrOfType<StringAttr>(i, "mp.name");
          // The symbolic dims (ONNX dim_params) the user can bind.
          std::string symbols;
          if (auto params =
                  func.getArgAttrOfType<ArrayAttr>(i, "mp.dim_params"))
            for (auto param : params.getAsRange<StringAttr>())
              if (param && !param.getValue().empty())
                symbols += (symbols.empty() ? "" : ", ") + param.str() + "=N";
          // At the function's location, not on it: the diagnostic would
          // print the whole function.
          mlir::emitError(func.getLoc())
              << "cannot lower @" << func.getName() << ": argument #" << i
              << (name ? " '" + name.str() + "'" : std::string())
              << " has type " << type
              << ", which is not a static tensor of numbers, bool or a narrow "
                 "type (plans need static shapes"
              << (symbols.empty() ? std::string()
                                  : "; bind " + symbols + " with --dim-param")
              << ")";
          unsupported = true;
        }
    if (unsupported)
      return signalPassFailure();
    if (failed(prepareStateBuffers(module, states)))
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addIllegalDialect<ml_program::MLProgramDialect>();
    target.addLegalOp<ml_program::GlobalOp>();
    target.addLegalDialect<culib::CuLibDialect>();
    target.addIllegalDialect<MPDialect>();
    target.addLegalOp<NoneOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return typeConverter.isSignatureLegal(op.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return typeConverter.isLegal(op); });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Globals live on as culib.state buffers. A returned state buffer is
    // copied out at the end, so outputs are the values after the step's
    // updates and never alias state.
    for (auto global :
         llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
      global.erase();
    module.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        if (!operand.get().getDefiningOp<culib::StateOp>())
          continue;
        auto type = cast<MemRefType>(operand.get().getType());
        Value copy =
            culib::AllocOp::create(b, ret.getLoc(), type, IntegerAttr());
        culib::CopyOp::create(b, ret.getLoc(), operand.get(), copy);
        operand.set(copy);
      }
    });

    // Missing optional inputs have no buffer: their none values go.
    module.walk([](NoneOp op) {
      if (op->use_empty())
        op->erase();
    });
  }
};
} // namespace
