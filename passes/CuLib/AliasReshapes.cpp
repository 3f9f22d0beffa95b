//===- AliasReshapes.cpp - copies that only reshape become views ----------===//
//
// culib-alias-reshapes (Passes.td): a copy into a buffer of another shape
// moves bytes the next calls could read where they are; it becomes a
// culib.view of its input when no value read changes. So do transposes
// that only reshape, through a copy.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mp {
#define GEN_PASS_DEF_ALIASRESHAPES
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// A transpose of a transpose's result reads the first one's input with the
/// two permutations composed, and becomes a copy when they undo one another
/// (culib-nhwc-layout's transpose back to channels first right before an
/// exporter's permute to channels last: ConvNeXt's blocks); the first
/// transpose goes when nothing else reads its result. Only when the first
/// one's result has no other writer and its input does not change between
/// the two. `writers` (by root buffer) stays true: the rewritten calls
/// write what they wrote before.
void foldTransposePairs(
    Block &body, llvm::DenseMap<Value, llvm::SmallVector<Operation *>> &writers,
    IRRewriter &rewriter, int64_t &folded, int64_t &calls, int64_t &bytes) {
  llvm::SmallVector<culib::TransposeOp> transposes(
      body.getOps<culib::TransposeOp>());
  for (culib::TransposeOp second : transposes) {
    Value mid = second.getX();
    auto first =
        mid.getDefiningOp<culib::AllocOp>()
            ? dyn_cast_or_null<culib::TransposeOp>(
                  writers.lookup(mid).size() == 1 ? writers.lookup(mid).front()
                                                  : nullptr)
            : culib::TransposeOp();
    if (!first || !first->isBeforeInBlock(second) ||
        second->hasAttr(culib::kAtLoadAttr) ||
        first->hasAttr(culib::kAtLoadAttr))
      continue;
    Value x = first.getX();
    if (culib::writtenBetween(x, first, second))
      continue;
    ArrayRef<int64_t> p1 = first.getPerm(), p2 = second.getPerm();
    SmallVector<int64_t> composed;
    bool identity = true;
    for (size_t i = 0; i < p2.size(); ++i) {
      composed.push_back(p1[p2[i]]);
      identity &= composed.back() == static_cast<int64_t>(i);
    }
    rewriter.setInsertionPoint(second);
    Value y = second.getY();
    Operation *replacement =
        identity ? culib::CopyOp::create(rewriter, second.getLoc(), x, y)
                       .getOperation()
                 : culib::TransposeOp::create(
                       rewriter, second.getLoc(), x, y,
                       rewriter.getDenseI64ArrayAttr(composed))
                       .getOperation();
    for (Operation *&writer : writers[culib::viewRoot(y)])
      if (writer == second.getOperation())
        writer = replacement;
    rewriter.eraseOp(second);
    ++folded;
    // The first transpose goes with its result when nothing reads it.
    auto midAlloc = mid.getDefiningOp<culib::AllocOp>();
    if (llvm::all_of(mid.getUsers(), [&](Operation *user) {
          return user == first.getOperation();
        })) {
      bytes += culib::byteSize(cast<MemRefType>(mid.getType()));
      ++calls;
      writers.erase(mid);
      rewriter.eraseOp(first);
      rewriter.eraseOp(midAlloc);
    }
  }
}

/// A transpose between channels first and channels last of a buffer whose
/// spatial dims are 1 ([N, C, 1, 1] and [N, 1, 1, C], culib-nhwc-layout's
/// around a global pool) keeps the elements in order: it becomes a copy (and
/// with the copies below, a view). Only those: whether another transpose
/// moves only dims of size 1 can depend on the batch (a dynamic-shape plan's
/// compiles at each size must take the same path). Transposes of weights
/// stay: they are filter transposes, which the backends fold into their
/// weight reorders at load.
void copyReshapingTransposes(
    Block &body, llvm::DenseMap<Value, llvm::SmallVector<Operation *>> &writers,
    IRRewriter &rewriter, int64_t &copied) {
  llvm::SmallVector<culib::TransposeOp> transposes(
      body.getOps<culib::TransposeOp>());
  for (culib::TransposeOp transpose : transposes) {
    if (transpose->hasAttr(culib::kAtLoadAttr) ||
        culib::isWeightBuffer(culib::viewRoot(transpose.getX())))
      continue;
    ArrayRef<int64_t> shape =
        cast<MemRefType>(transpose.getX().getType()).getShape();
    ArrayRef<int64_t> perm = transpose.getPerm();
    bool toNHWC = perm == ArrayRef<int64_t>(culib::kToNHWC);
    bool toNCHW = perm == ArrayRef<int64_t>(culib::kToNCHW);
    // The spatial dims: 2 and 3 channels first, 1 and 2 channels last.
    if (!(toNHWC && shape[2] == 1 && shape[3] == 1) &&
        !(toNCHW && shape[1] == 1 && shape[2] == 1))
      continue;
    rewriter.setInsertionPoint(transpose);
    Value y = transpose.getY();
    auto copy = culib::CopyOp::create(rewriter, transpose.getLoc(),
                                      transpose.getX(), y);
    for (Operation *&writer : writers[culib::viewRoot(y)])
      if (writer == transpose.getOperation())
        writer = copy;
    rewriter.eraseOp(transpose);
    ++copied;
  }
}

struct AliasReshapesPass
    : public mp::impl::AliasReshapesBase<AliasReshapesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();

    // Each buffer's writers (by root), in program order.
    llvm::DenseMap<Value, llvm::SmallVector<Operation *>> writers =
        culib::callWriters(body, culib::viewRoot);

    IRRewriter rewriter(&getContext());
    int64_t transposesFolded = 0, transposeCalls = 0, transposeBytes = 0;
    foldTransposePairs(body, writers, rewriter, transposesFolded,
                       transposeCalls, transposeBytes);
    int64_t transposesCopied = 0;
    copyReshapingTransposes(body, writers, rewriter, transposesCopied);

    llvm::SmallVector<culib::CopyOp> copies(body.getOps<culib::CopyOp>());
    int64_t viewed = 0, bytes = 0;
    for (culib::CopyOp copy : copies) {
      Value from = culib::viewRoot(copy.getX());
      auto out = copy.getY().getDefiningOp<culib::AllocOp>();
      if (!out || out.getAtLoad() || from.getDefiningOp<culib::StateOp>())
        continue;
      // The output: written by the copy alone.
      if (writers.lookup(out.getBuffer()).size() != 1)
        continue;
      // The input: not written after the copy.
      if (llvm::any_of(writers.lookup(from),
                       [&](Operation *w) { return copy->isBeforeInBlock(w); }))
        continue;
      // The view takes the copy's place: every other use of the output
      // must come after it (a read before the copy would read nothing the
      // program wrote).
      if (llvm::any_of(out.getBuffer().getUsers(), [&](Operation *user) {
            return user != copy.getOperation() &&
                   !copy->isBeforeInBlock(body.findAncestorOpInBlock(*user));
          }))
        continue;
      rewriter.setInsertionPoint(copy);
      auto view = culib::ViewOp::create(rewriter, copy.getLoc(),
                                        out.getBuffer().getType(), copy.getX());
      rewriter.replaceAllUsesExcept(out.getBuffer(), view.getBuffer(), copy);
      rewriter.eraseOp(copy);
      rewriter.eraseOp(out);
      ++viewed;
      bytes += culib::byteSize(view.getBuffer().getType());
    }
    if (record) {
      culib::recordFusion(func, getArgument(), "transposes of transposes",
                          transposesFolded, transposeCalls, transposeBytes);
      culib::recordFusion(func, getArgument(), "reshape copies as views",
                          viewed, viewed, bytes);
    }
    if (report)
      func.emitRemark() << "culib-alias-reshapes: " << transposesFolded
                        << " transpose(s) of a transpose read the first's "
                           "input, "
                        << viewed << " copy call(s) made views; " << bytes
                        << " bytes no longer copied; " << transposesCopied
                        << " transpose(s) of [N, 1, 1, C] or [N, C, 1, 1] "
                           "made copies";
  }
};

} // namespace
