//===- MasterWeights.cpp - f32 parameters, one low-precision copy --------===//
//
// mp-master-weights (Passes.td). After mp-training and autocast:
//  * every global an optimizer update writes (parameters and their state)
//    is f32 — a model that came in f16/bf16 gets its values widened, which
//    is exact, and its reads cast back to the type the graph used;
//  * each global is read once per step, and each low-precision copy of it
//    is made once and shared by all its users;
//  * gradients reach the updates in f32.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mp {
#define GEN_PASS_DEF_MASTERWEIGHTS
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// The value of `attr` converted to f32 elements, or null when it is not a
/// dense floating-point value.
Attribute widenToF32(Attribute attr, RankedTensorType f32Type) {
  auto elements = dyn_cast<ElementsAttr>(attr);
  if (!elements)
    return {};
  if (auto dense = dyn_cast<DenseElementsAttr>(elements)) {
    if (!isa<FloatType>(dense.getElementType()))
      return {};
    SmallVector<APFloat> values;
    for (APFloat v : dense.getValues<APFloat>()) {
      bool lost = false;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
    return DenseElementsAttr::get(f32Type, values);
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(elements)) {
    std::optional<mp::StoredBytes> stored = mp::storedBytes(resource);
    if (!stored)
      return {};
    ArrayRef<char> bytes = stored->bytes;
    Type element = resource.getType().getElementType();
    const llvm::fltSemantics &semantics =
        cast<FloatType>(element).getFloatSemantics();
    unsigned width = element.getIntOrFloatBitWidth();
    SmallVector<APFloat> values;
    for (size_t i = 0; i + width / 8 <= bytes.size(); i += width / 8) {
      uint64_t raw = 0;
      std::memcpy(&raw, bytes.data() + i, width / 8);
      APFloat v(semantics, APInt(width, raw));
      bool lost = false;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
    // A blob of another size than the type's is not this tensor's value.
    if (int64_t(values.size()) != f32Type.getNumElements() ||
        bytes.size() != values.size() * (width / 8))
      return {};
    return DenseElementsAttr::get(f32Type, values);
  }
  return {};
}

struct MasterWeightsPass
    : public mp::impl::MasterWeightsBase<MasterWeightsPass> {
  using Base::Base;

  /// Training-mode BatchNormalization of a low-precision model: its scale,
  /// bias and statistics come straight from the f32 masters (not their
  /// low-precision copies), its running statistics and its backward's scale
  /// and bias gradients are f32 (what cuDNN's batch norm takes and gives).
  LogicalResult batchNormInF32(ModuleOp module) {
    auto f32Source = [](Value v) -> Value {
      if (cast<ShapedType>(v.getType()).getElementType().isF32())
        return v;
      if (auto c = v.getDefiningOp<CastOp>())
        if (cast<ShapedType>(c.getInput().getType()).getElementType().isF32())
          return c.getInput();
      return {};
    };
    // A result retyped to f32: users that are not stores or casts to f32
    // get a cast back to the type they had.
    auto retypeToF32 = [](Value result) {
      auto type = cast<RankedTensorType>(result.getType());
      if (type.getElementType().isF32())
        return;
      auto f32Type = type.clone(Float32Type::get(result.getContext()));
      result.setType(f32Type);
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : result.getUses())
        uses.push_back(&use);
      for (OpOperand *use : uses) {
        Operation *user = use->getOwner();
        if (isa<ml_program::GlobalStoreOp>(user))
          continue;
        if (auto c = dyn_cast<CastOp>(user);
            c && cast<ShapedType>(c.getType()).getElementType().isF32()) {
          c.getResult().replaceAllUsesWith(result);
          c.erase();
          continue;
        }
        OpBuilder b(user);
        use->set(CastOp::create(
            b, user->getLoc(), type, result,
            b.getI64IntegerAttr(getOnnxDataTypeForType(type.getElementType())),
            IntegerAttr()));
      }
    };
    bool failed = false;
    module.walk([&](BatchNormalizationOp bn) {
      if (!bn.getTrainingMode().value_or(0))
        return;
      for (unsigned i = 1; i <= 4; ++i) {
        Value source = f32Source(bn->getOperand(i));
        if (!source) {
          bn.emitError() << "mp-master-weights: operand #" << i << " of "
                         << bn->getName()
                         << " must be an f32 parameter or statistic in "
                            "training mode, got "
                         << bn->getOperand(i).getType();
          failed = true;
          return;
        }
        bn->setOperand(i, source);
      }
      retypeToF32(bn->getResult(1));
      retypeToF32(bn->getResult(2));
    });
    module.walk([&](BatchNormGradOp grad) {
      if (Value source = f32Source(grad.getScale()))
        grad->setOperand(1, source);
      else
        return;
      retypeToF32(grad.getDScale());
      retypeToF32(grad.getDBias());
    });
    return failure(failed);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    MLIRContext *ctx = &getContext();

    // The globals updates write (with the first update writing each), and
    // the updates' gradients.
    llvm::MapVector<StringRef, Operation *> updated;
    SmallVector<Operation *> updates;
    module.walk([&](Operation *op) {
      if (auto sgd = dyn_cast<SGDUpdateOp>(op)) {
        updated.insert({sgd.getParam(), op});
        if (auto m = sgd.getMomentumBuffer())
          updated.insert({*m, op});
        updates.push_back(op);
      } else if (auto adam = dyn_cast<AdamUpdateOp>(op)) {
        updated.insert({adam.getParam(), op});
        updated.insert({adam.getExpAvg(), op});
        updated.insert({adam.getExpAvgSq(), op});
        updates.push_back(op);
      }
    });

    // The running statistics BatchNormalization stores each step are state
    // too, kept in f32 (cuDNN's batch norm takes f32 statistics).
    module.walk([&](ml_program::GlobalStoreOp store) {
      if (store.getValue().getDefiningOp<BatchNormalizationOp>())
        updated.insert({store.getGlobal().getLeafReference(), store});
    });

    // Widen low-precision globals to f32.
    for (auto [name, update] : updated) {
      auto global = symbols.lookup<ml_program::GlobalOp>(name);
      if (!global) {
        update->emitError()
            << "mp-master-weights: " << update->getName() << " updates @"
            << name << ", which is not a global of the module";
        return signalPassFailure();
      }
      auto type = dyn_cast<RankedTensorType>(global.getType());
      if (!type || !isa<FloatType>(type.getElementType()) ||
          type.getElementType().isF32())
        continue;
      auto f32Type = type.clone(Float32Type::get(ctx));
      Attribute widened = widenToF32(global.getValueAttr(), f32Type);
      if (!widened) {
        global.emitError() << "mp-master-weights: cannot widen the value of @"
                           << name << " to f32";
        return signalPassFailure();
      }
      global.setType(f32Type);
      global.setValueAttr(widened);
      // Reads give f32 now; the graph gets its original type by a cast.
      module.walk([&](ml_program::GlobalLoadOp load) {
        if (load.getGlobal().getLeafReference() != name)
          return;
        load.getResult().setType(f32Type);
        OpBuilder b(ctx);
        b.setInsertionPointAfter(load);
        auto cast = CastOp::create(
            b, load.getLoc(), type, load.getResult(),
            b.getI64IntegerAttr(getOnnxDataTypeForType(type.getElementType())),
            IntegerAttr());
        load.getResult().replaceAllUsesExcept(cast.getResult(), cast);
      });
    }

    if (failed(batchNormInF32(module)))
      return signalPassFailure();

    // Gradients in f32.
    for (Operation *op : updates) {
      OpOperand &grad = op->getOpOperand(0);
      auto type = cast<RankedTensorType>(grad.get().getType());
      if (type.getElementType().isF32())
        continue;
      // Right after the gradient: whatever later reads the updates'
      // gradients (mp-loss-scale's one finite check before the first
      // update) sees the cast.
      OpBuilder b(ctx);
      b.setInsertionPointAfterValue(grad.get());
      auto f32Type = type.clone(b.getF32Type());
      grad.set(CastOp::create(b, op->getLoc(), f32Type, grad.get(),
                              b.getI64IntegerAttr(1), IntegerAttr()));
    }

    // One read per global per function, one cast per (read, type).
    module.walk([&](func::FuncOp func) {
      llvm::MapVector<StringRef, ml_program::GlobalLoadOp> firstLoad;
      SmallVector<ml_program::GlobalLoadOp> loads;
      func.walk([&](ml_program::GlobalLoadOp load) { loads.push_back(load); });
      // Reads of a global the function stores to (running statistics) may
      // differ: they stay apart.
      llvm::DenseSet<StringRef> stored;
      func.walk([&](ml_program::GlobalStoreOp store) {
        stored.insert(store.getGlobal().getLeafReference());
      });
      for (auto load : loads) {
        StringRef name = load.getGlobal().getLeafReference();
        if (stored.contains(name))
          continue;
        auto [it, inserted] = firstLoad.insert({name, load});
        if (inserted)
          continue;
        // A later read of a global that nothing stores to in between is the
        // same value: only the optimizer (at the end) writes parameters.
        load.getResult().replaceAllUsesWith(it->second.getResult());
        load.erase();
      }
      for (auto [name, load] : firstLoad) {
        llvm::DenseMap<Type, CastOp> casts;
        SmallVector<CastOp> users;
        for (Operation *user : load.getResult().getUsers())
          if (auto cast = dyn_cast<CastOp>(user))
            users.push_back(cast);
        for (CastOp cast : users) {
          auto [it, inserted] = casts.insert({cast.getType(), cast});
          if (inserted) {
            cast->moveAfter(load);
            continue;
          }
          cast.getResult().replaceAllUsesWith(it->second.getResult());
          cast.erase();
        }
      }
    });
  }
};
} // namespace
