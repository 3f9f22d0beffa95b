//===- FuseElementwise.cpp - the culib-fuse-elementwise pass --------------===//
//
// Groups of culib.elementwise calls (functions from floats to floats) and
// float culib.cast calls, connected through buffers that nothing else
// touches, become one culib.fused_elementwise call whose program
// (mp/Runtime/FusedProgram.h) computes the group in f32 and rounds once at
// its store.
//
// A group grows from its last call (the root, whose output stays) towards
// the calls that write its inputs. The writer P of an input buffer t joins
// when:
//  * t is a culib.alloc that P alone writes, every other op that uses t is
//    already in the group (t is an intermediate value and disappears), and t
//    has the root's shape (intermediates are never broadcast);
//  * nothing between P and the root writes a buffer P reads from outside
//    the group (P's work moves to the root's place);
//  * the program stays within the runtime's limits (kMaxFusedSteps,
//    kMaxFusedInputs).
// A cast inside a group is no step: its value simply stays f32, so the
// rounding it did is gone (the program is never less accurate than the
// calls one by one). Groups of one call are left alone.
//
// Before grouping, a ReLU's gradient as training steps write it,
// where(x > 0, dy, 0) (a comparison into a bool mask, then a select), becomes
// one relu_grad(dy, x): a function from floats to floats, which can then
// join a group (the residual add of the gradients before it).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Runtime/FusedProgram.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mp {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

bool isFusedType(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

using culib::memrefOf;

bool isFloatBuffer(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && isFusedType(type.getElementType());
}

/// The output buffer of a call the pass can fuse, or null: an elementwise
/// function from floats to floats on f16 / bf16 / f32 buffers, or a cast
/// between those types that keeps the shape.
Value fusableOutput(Operation *op) {
  if (auto ew = dyn_cast<culib::ElementwiseOp>(op)) {
    if (!rt::isFusableFn(ew.getFn()) ||
        ew.getInputs().size() > rt::kMaxFusedStepArgs ||
        !llvm::all_of(ew.getInputs(), isFloatBuffer) ||
        !isFloatBuffer(ew.getY()))
      return nullptr;
    return ew.getY();
  }
  if (auto castOp = dyn_cast<culib::CastOp>(op)) {
    if (!isFloatBuffer(castOp.getX()) || !isFloatBuffer(castOp.getY()) ||
        memrefOf(castOp.getX()).getShape() !=
            memrefOf(castOp.getY()).getShape())
      return nullptr;
    return castOp.getY();
  }
  return nullptr;
}

ValueRange fusableInputs(Operation *op) {
  if (auto ew = dyn_cast<culib::ElementwiseOp>(op))
    return ew.getInputs();
  return cast<culib::CastOp>(op)->getOperands().take_front(1);
}

/// One group: its calls, the root last.
struct Group {
  Operation *root = nullptr;
  llvm::SetVector<Operation *> ops;
  llvm::SmallPtrSet<Value, 8> internal; ///< buffers that disappear
  int64_t steps = 0;                    ///< elementwise calls (casts: none)
};

class GroupBuilder {
public:
  explicit GroupBuilder(llvm::DenseSet<Operation *> &taken) : taken(taken) {}

  Group build(Operation *root) {
    Group group;
    group.root = root;
    group.ops.insert(root);
    group.steps = isa<culib::ElementwiseOp>(root);
    // Breadth first over the group's inputs; a writer that cannot join now
    // may join after another op joined (its output's other readers).
    bool grew = true;
    while (grew) {
      grew = false;
      for (size_t i = 0; i < group.ops.size(); ++i)
        for (Value input : fusableInputs(group.ops[i]))
          if (Operation *writer = joinable(group, input)) {
            group.ops.insert(writer);
            group.internal.insert(input);
            group.steps += isa<culib::ElementwiseOp>(writer);
            grew = true;
          }
    }
    return group;
  }

private:
  /// The writer of `t` if it can join the group.
  Operation *joinable(const Group &group, Value t) {
    if (group.internal.contains(t))
      return nullptr;
    Value rootOut = fusableOutput(group.root);
    if (t == rootOut || memrefOf(t).getShape() != memrefOf(rootOut).getShape())
      return nullptr;
    // Read by the group alone, written by one fusable call before it.
    Operation *writer = culib::soleWriter(t, group.ops.getArrayRef());
    if (!writer || taken.contains(writer) || fusableOutput(writer) != t)
      return nullptr;
    // One step is kept for the identity a cast root may need.
    if (group.steps + isa<culib::ElementwiseOp>(writer) >=
        static_cast<int64_t>(rt::kMaxFusedSteps))
      return nullptr;
    if (countExternals(group, writer, t) > rt::kMaxFusedInputs)
      return nullptr;
    // Its reads move to the root: nothing in between may write them.
    for (Value input : fusableInputs(writer))
      if (input == rootOut || culib::writtenBetween(input, writer, group.root,
                                                    group.ops.getArrayRef()))
        return nullptr;
    return writer;
  }

  /// The inputs the fused call would read with `writer` in the group and
  /// `t` internal.
  static size_t countExternals(const Group &group, Operation *writer, Value t) {
    llvm::SmallPtrSet<Value, 8> externals;
    auto add = [&](Operation *op) {
      for (Value input : fusableInputs(op))
        if (input != t && !group.internal.contains(input))
          externals.insert(input);
    };
    for (Operation *op : group.ops)
      add(op);
    add(writer);
    return externals.size();
  }

  llvm::DenseSet<Operation *> &taken;
};

/// The program of a group, and the buffers it reads (its x0, x1, ...).
struct Lowered {
  rt::FusedProgram program;
  SmallVector<Value> inputs;
};

Lowered lowerGroup(const Group &group) {
  Lowered lowered;
  // What each buffer is inside the program.
  llvm::DenseMap<Value, rt::FusedOperand> operandOf;
  auto operand = [&](Value v) {
    if (auto it = operandOf.find(v); it != operandOf.end())
      return it->second;
    rt::FusedOperand x{false, static_cast<uint32_t>(lowered.inputs.size())};
    lowered.inputs.push_back(v);
    operandOf[v] = x;
    return x;
  };
  SmallVector<Operation *> ordered(group.ops.begin(), group.ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ordered) {
    if (auto castOp = dyn_cast<culib::CastOp>(op)) {
      operandOf[castOp.getY()] = operand(castOp.getX());
      continue;
    }
    auto ew = cast<culib::ElementwiseOp>(op);
    rt::FusedStep step;
    step.fn = ew.getFn();
    for (Value input : ew.getInputs())
      step.args.push_back(operand(input));
    // The values a plan's elementwise call would carry (culib-export-plan).
    if (FloatAttr alpha = ew.getAlphaAttr())
      step.alpha = alpha.getValueAsDouble();
    if (FloatAttr beta = ew.getBetaAttr())
      step.beta = beta.getValueAsDouble();
    operandOf[ew.getY()] =
        rt::FusedOperand{true, uint32_t(lowered.program.steps.size())};
    lowered.program.steps.push_back(std::move(step));
  }
  // Every step feeds the root, so the root's value is the last step's,
  // unless the group is casts only: an identity step then copies (and
  // rounds once) the input.
  rt::FusedOperand result = operandOf.lookup(fusableOutput(group.root));
  if (!result.isStep) {
    rt::FusedStep copy;
    copy.args.push_back(result);
    lowered.program.steps.push_back(std::move(copy));
  }
  return lowered;
}

/// where(greater(x, 0), dy, 0) -> relu_grad(dy, x), when the mask is the
/// comparison's alone and only the select reads it, dy, x and y have one
/// shape, dy and y one type, and x does not change between the two calls.
/// x of another float type (a mixed-precision step's bf16 activation against
/// its f32 gradient) makes a fused program of the one step, since an
/// elementwise call takes one dtype and a program any float types (x's
/// values are exact in f32: the comparison is the same).
struct FoldReluGradient : public OpRewritePattern<culib::ElementwiseOp> {
  FoldReluGradient(MLIRContext *context, int64_t &folded, int64_t &bytes)
      : OpRewritePattern(context), folded(folded), bytes(bytes) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp select,
                                PatternRewriter &rewriter) const override {
    using rt::cpu::ElementwiseFn;
    std::optional<culib::ReluGradientForm> form =
        culib::matchReluGradient(select);
    if (!form)
      return failure();
    culib::ElementwiseOp compare = form->compare;
    Value dy = form->dy, x = form->x, y = select.getY();
    if (!isFloatBuffer(y) || !isFloatBuffer(x) || dy.getType() != y.getType() ||
        memrefOf(x).getShape() != memrefOf(y).getShape() ||
        culib::writtenBetween(x, compare, select))
      return failure();
    rewriter.setInsertionPoint(select);
    if (x.getType() == y.getType()) {
      culib::ElementwiseOp::create(rewriter, select.getLoc(), ValueRange{dy, x},
                                   y, ElementwiseFn::ReluGrad,
                                   /*alpha=*/FloatAttr(), /*beta=*/FloatAttr());
    } else {
      rt::FusedStep step;
      step.fn = ElementwiseFn::ReluGrad;
      step.args = {rt::FusedOperand{false, 0}, rt::FusedOperand{false, 1}};
      rt::FusedProgram program;
      program.steps.push_back(std::move(step));
      culib::FusedElementwiseOp::create(rewriter, select.getLoc(),
                                        ValueRange{dy, x}, y,
                                        printFusedProgram(program));
    }
    bytes += culib::eraseCallsAndTheirBuffers(
        {compare.getOperation(), select.getOperation()}, y, rewriter);
    ++folded;
    return success();
  }

  int64_t &folded, &bytes;
};

struct FuseElementwisePass
    : public mp::impl::FuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t reluGradients = 0, reluGradientBytes = 0;
    {
      RewritePatternSet patterns(&getContext());
      patterns.add<FoldReluGradient>(&getContext(), reluGradients,
                                     reluGradientBytes);
      if (failed(culib::applyFusionPatterns(func, std::move(patterns))))
        return signalPassFailure();
    }
    llvm::DenseSet<Operation *> taken;
    GroupBuilder builder(taken);
    SmallVector<Group> groups;
    for (Block &block : func.getBody()) {
      SmallVector<Operation *> calls;
      for (Operation &op : block)
        if (fusableOutput(&op))
          calls.push_back(&op);
      // Roots last to first: a call that a later group absorbed is taken.
      for (Operation *root : llvm::reverse(calls)) {
        if (taken.contains(root))
          continue;
        Group group = builder.build(root);
        if (group.ops.size() < 2)
          continue;
        taken.insert(group.ops.begin(), group.ops.end());
        groups.push_back(std::move(group));
      }
    }

    IRRewriter rewriter(&getContext());
    int64_t callsBefore = 0, bytes = 0;
    for (const Group &group : groups) {
      Lowered lowered = lowerGroup(group);
      rewriter.setInsertionPoint(group.root);
      culib::FusedElementwiseOp::create(
          rewriter, group.root->getLoc(), lowered.inputs,
          fusableOutput(group.root), printFusedProgram(lowered.program));
      callsBefore += static_cast<int64_t>(group.ops.size());
      for (Operation *op : group.ops)
        rewriter.eraseOp(op);
      for (Value t : group.internal) {
        bytes += culib::byteSize(memrefOf(t));
        rewriter.eraseOp(t.getDefiningOp());
      }
    }
    if (record)
      culib::recordFusion(func, getArgument(), "ReLU gradient", reluGradients,
                          reluGradients, reluGradientBytes);
    if (record)
      culib::recordFusion(func, getArgument(), "elementwise program",
                          static_cast<int64_t>(groups.size()),
                          callsBefore - static_cast<int64_t>(groups.size()),
                          bytes);
    if (report)
      func.emitRemark() << "culib-fuse-elementwise: " << reluGradients
                        << " ReLU gradient(s) made one call each, "
                        << callsBefore
                        << " elementwise / cast call(s) fused into "
                        << groups.size() << " call(s); "
                        << bytes + reluGradientBytes
                        << " intermediate bytes no longer written";
  }
};

} // namespace
