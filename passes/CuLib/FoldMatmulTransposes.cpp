//===- FoldMatmulTransposes.cpp - transposed operands read in place -------===//
//
// culib-fold-matmul-transposes (Passes.td): a transpose that swaps the last
// two dims of a buffer only matmuls read becomes their trans_a / trans_b
// flag; the matmuls read its input, transposed as they load it.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mp {
#define GEN_PASS_DEF_FOLDMATMULTRANSPOSES
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// Whether `perm` keeps the leading dims and swaps the last two: what a
/// matmul's trans flag does to its operand.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

struct FoldMatmulTransposesPass
    : public mp::impl::FoldMatmulTransposesBase<FoldMatmulTransposesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();
    llvm::DenseMap<Value, llvm::SmallVector<Operation *>> writers =
        culib::callWriters(body, culib::viewRoot);

    IRRewriter rewriter(&getContext());
    int64_t transposesFolded = 0, operandsFolded = 0, bytes = 0;
    llvm::SmallVector<culib::TransposeOp> transposes(
        body.getOps<culib::TransposeOp>());
    for (culib::TransposeOp transpose : transposes) {
      auto out = transpose.getY().getDefiningOp<culib::AllocOp>();
      if (!out || out.getAtLoad() || transpose->hasAttr(culib::kAtLoadAttr) ||
          !swapsLastTwo(transpose.getPerm()) ||
          writers.lookup(out.getBuffer()).size() != 1)
        continue;
      // Every other user: a matmul after the transpose reading the result as
      // A or B (not C, bias or aux, not as its output), with the input
      // unchanged between
      // the two.
      Value x = transpose.getX();
      llvm::SmallVector<Operation *> xWriters =
          writers.lookup(culib::viewRoot(x));
      llvm::SmallVector<culib::MatmulOp> readers;
      bool foldable = true;
      for (Operation *user : out.getBuffer().getUsers()) {
        if (user == transpose.getOperation())
          continue;
        auto matmul = dyn_cast<culib::MatmulOp>(user);
        foldable = matmul && matmul->getBlock() == &body &&
                   transpose->isBeforeInBlock(matmul) &&
                   matmul.getC() != out.getBuffer() &&
                   matmul.getBias() != out.getBuffer() &&
                   matmul.getAux() != out.getBuffer() &&
                   matmul.getD() != out.getBuffer() &&
                   !culib::anyBetween(xWriters, transpose, matmul);
        if (!foldable)
          break;
        readers.push_back(matmul);
      }
      if (!foldable || readers.empty())
        continue;
      for (culib::MatmulOp matmul : readers) {
        rewriter.modifyOpInPlace(matmul, [&] {
          if (matmul.getA() == out.getBuffer()) {
            matmul.getAMutable().assign(x);
            matmul.setTransA(!matmul.getTransA());
            ++operandsFolded;
          }
          if (matmul.getB() == out.getBuffer()) {
            matmul.getBMutable().assign(x);
            matmul.setTransB(!matmul.getTransB());
            ++operandsFolded;
          }
        });
      }
      bytes += culib::byteSize(out.getBuffer().getType());
      rewriter.eraseOp(transpose);
      rewriter.eraseOp(out);
      ++transposesFolded;
    }
    if (record)
      culib::recordFusion(func, getArgument(), "transposed matmul operands",
                          operandsFolded, transposesFolded, bytes);
    if (report)
      func.emitRemark() << "culib-fold-matmul-transposes: " << transposesFolded
                        << " transpose call(s) folded into " << operandsFolded
                        << " matmul operand(s); " << bytes
                        << " bytes no longer written";
  }
};

} // namespace
