//===- AliasReshapes.cpp - copies that only reshape become views ----------===//
//
// culib-alias-reshapes (Passes.td): a copy into a buffer of another shape
// moves bytes the next calls could read where they are; it becomes a
// culib.view of its input when no value read changes.
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

/// The buffer whose bytes `v` are: through views to an alloc, a weight, a
/// state or a function argument.
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<culib::ViewOp>())
    v = view.getSource();
  return v;
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
    llvm::DenseMap<Value, llvm::SmallVector<Operation *>> writers;
    for (Operation &op : body)
      if (std::optional<culib::CallBuffers> buffers =
              culib::getCallBuffers(&op))
        for (const culib::NamedBuffer &out : buffers->outs)
          if (out.value)
            writers[rootOf(out.value)].push_back(&op);

    llvm::SmallVector<culib::CopyOp> copies(body.getOps<culib::CopyOp>());
    IRRewriter rewriter(&getContext());
    int64_t viewed = 0, bytes = 0;
    for (culib::CopyOp copy : copies) {
      Value from = rootOf(copy.getX());
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
    if (record)
      culib::recordFusion(func, getArgument(), "reshape copies as views",
                          viewed, viewed, bytes);
    if (report)
      func.emitRemark() << "culib-alias-reshapes: " << viewed
                        << " copy call(s) made views; " << bytes
                        << " bytes no longer copied";
  }
};

} // namespace
