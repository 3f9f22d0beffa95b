//===- InferShapes.cpp - refine result types of typed mp ops --------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mp {
#define GEN_PASS_DEF_INFERSHAPES
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {
struct InferShapesPass : public mp::impl::InferShapesBase<InferShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    bool failedInference = false;
    // Program order: operands are refined before their users are visited.
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa_and_nonnull<MPDialect>(op->getDialect()) &&
          failed(refineResultTypes(op)))
        failedInference = true;
    });
    if (failedInference)
      return signalPassFailure();

    // The signature follows the returned values.
    if (!func.isExternal()) {
      auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
      func.setFunctionType(FunctionType::get(
          &getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
    }

    if (requireStatic) {
      bool dynamic = false;
      func.walk([&](Operation *op) {
        for (auto [i, result] : llvm::enumerate(op->getResults())) {
          if (isa<NoneType>(result.getType()))
            continue;
          auto tensor = dyn_cast<RankedTensorType>(result.getType());
          if (!tensor || !tensor.hasStaticShape()) {
            op->emitError()
                << "result #" << i << " has type " << result.getType()
                << ", which is not a tensor of static shape";
            dynamic = true;
          }
        }
      });
      if (dynamic)
        signalPassFailure();
    }
  }
};
} // namespace
