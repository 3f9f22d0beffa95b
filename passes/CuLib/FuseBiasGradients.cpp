//===- FuseBiasGradients.cpp - bias gradients in the weight gradient's call
//-===//
//
// culib-fuse-bias-gradients (Passes.td): a training step's bias gradient,
// the sum of dY over every dim but the last, is computed by the matmul that
// reads dY for the weight gradient, X^T dY or dY^T X (cuBLASLt's BGRADB /
// BGRADA epilogues), not by a reduction call of its own.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mp {
#define GEN_PASS_DEF_FUSEBIASGRADIENTS
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// Whether `axes` name every dim of a rank-`rank` buffer but the last.
bool allButLast(ArrayRef<int64_t> axes, int64_t rank) {
  llvm::SmallVector<bool> named(rank, false);
  for (int64_t axis : axes) {
    int64_t d = axis < 0 ? axis + rank : axis;
    if (d < 0 || d >= rank || named[d])
      return false;
    named[d] = true;
  }
  return static_cast<int64_t>(axes.size()) == rank - 1 && !named[rank - 1];
}

/// The calls that read `buffer`, directly or through views of it.
void readersOf(Value buffer, llvm::SmallVectorImpl<Operation *> &readers) {
  for (Operation *user : buffer.getUsers()) {
    if (auto view = dyn_cast<culib::ViewOp>(user))
      readersOf(view.getBuffer(), readers);
    else
      readers.push_back(user);
  }
}

struct FuseBiasGradientsPass
    : public mp::impl::FuseBiasGradientsBase<FuseBiasGradientsPass> {
  using Base::Base;

  /// The matmul that reads all of `y` as a [rows, n] operand whose rows it
  /// contracts (B as it is, or A transposed), without a bias gradient yet,
  /// with y unchanged between `reduce` and it; `ofA` says which operand.
  culib::MatmulOp
  weightGradientReading(culib::ReduceOp reduce, Block &body,
                        const llvm::SmallVector<Operation *> &yWriters,
                        bool &ofA) {
    Value y = reduce.getX();
    auto yType = cast<MemRefType>(y.getType());
    int64_t n = yType.getShape().back();
    auto readsAllOfY = [&](Value operand) {
      auto type = cast<MemRefType>(operand.getType());
      return culib::viewRoot(operand) == culib::viewRoot(y) &&
             type.getRank() == 2 && type.getShape().back() == n &&
             type.getNumElements() == yType.getNumElements() &&
             type.getElementType() == yType.getElementType();
    };
    for (culib::MatmulOp matmul : body.getOps<culib::MatmulOp>()) {
      if (matmul.getBiasGrad())
        continue;
      if (!matmul.getTransB() && readsAllOfY(matmul.getB()))
        ofA = false;
      else if (matmul.getTransA() && readsAllOfY(matmul.getA()))
        ofA = true;
      else
        continue;
      if (culib::anyBetween(yWriters, reduce, matmul))
        continue;
      return matmul;
    }
    return nullptr;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    llvm::DenseMap<Value, llvm::SmallVector<Operation *>> writers =
        culib::callWriters(body, culib::viewRoot);

    IRRewriter rewriter(&getContext());
    int64_t fused = 0;
    llvm::SmallVector<culib::ReduceOp> reduces(body.getOps<culib::ReduceOp>());
    for (culib::ReduceOp reduce : reduces) {
      Value y = reduce.getX(), grad = reduce.getY();
      auto yType = cast<MemRefType>(y.getType());
      auto gradAlloc = grad.getDefiningOp<culib::AllocOp>();
      if (reduce.getFn() != rt::cpu::ReduceFn::Sum || yType.getRank() < 2 ||
          !allButLast(reduce.getAxes(), yType.getRank()) || !gradAlloc ||
          gradAlloc.getAtLoad() || reduce->hasAttr(culib::kAtLoadAttr) ||
          writers.lookup(grad).size() != 1)
        continue;
      bool ofA = false;
      culib::MatmulOp matmul = weightGradientReading(
          reduce, body, writers.lookup(culib::viewRoot(y)), ofA);
      if (!matmul)
        continue;
      // The gradient's readers all come after both calls (the sums are
      // written when the later of the two ran before), and the matmul
      // reads it in no operand.
      Operation *last = matmul->isBeforeInBlock(reduce) ? reduce.getOperation()
                                                        : matmul.getOperation();
      llvm::SmallVector<Operation *> readers;
      readersOf(grad, readers);
      if (llvm::any_of(readers, [&](Operation *reader) {
            return reader != reduce.getOperation() &&
                   (reader == matmul.getOperation() ||
                    reader->getBlock() != &body ||
                    !last->isBeforeInBlock(reader));
          }))
        continue;
      // The matmul now writes the gradient: its buffer must exist by then.
      if (matmul->isBeforeInBlock(gradAlloc))
        gradAlloc->moveBefore(matmul);
      rewriter.modifyOpInPlace(matmul, [&] {
        matmul.getBiasGradMutable().assign(grad);
        matmul.setBiasGradOfA(ofA);
      });
      writers[grad] = {matmul.getOperation()};
      rewriter.eraseOp(reduce);
      ++fused;
    }
    // No intermediate buffer goes: the sums are written as before, by
    // another call.
    if (record)
      culib::recordFusion(func, getArgument(),
                          "bias gradients in the weight gradient", fused, fused,
                          /*bytes=*/0);
    if (report)
      func.emitRemark() << "culib-fuse-bias-gradients: " << fused
                        << " bias gradient(s) summed by the matmul of their "
                           "weight gradient";
  }
};

} // namespace
