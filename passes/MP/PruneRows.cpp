//===- PruneRows.cpp - the mp-prune-rows pass -----------------------------===//
//
// Rows a model computes and nothing reads. A classifier that reads one token
// of a Transformer (ViT's and BERT's [CLS]: Gather(x, 0, axis=1) after the
// encoder) reads 1 of the last layer's 197 rows, yet the graph computes all
// of them through the last layer's MLP. A slice of one axis moves up through
// the ops that compute each index of that axis from the same index of their
// operands, until it reaches a value something else reads whole.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ShapeInference.h"
#include "mp/Dialect/MP/TensorOpBuilder.h"
#include "mp/Passes/MP/Passes.h"

#include "RewriteConfig.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mp {
#define GEN_PASS_DEF_PRUNEROWS
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// Indices [begin, end) of one axis, step 1.
struct AxisRange {
  int64_t axis, begin, end;
  bool operator==(const AxisRange &o) const {
    return axis == o.axis && begin == o.begin && end == o.end;
  }
  bool operator!=(const AxisRange &o) const { return !(*this == o); }
};

/// The range a slice keeps when it slices one axis with step 1 and constant
/// bounds, on a static shape.
std::optional<AxisRange> rangeOf(SliceOp slice) {
  RankedTensorType type = staticTensorType(slice.getData());
  if (!type || !staticTensorType(slice.getOutput()))
    return std::nullopt;
  std::optional<SmallVector<int64_t>> starts =
      getConstantInts(slice.getStarts());
  std::optional<SmallVector<int64_t>> ends = getConstantInts(slice.getEnds());
  std::optional<SmallVector<int64_t>> axes =
      isa<NoneType>(slice.getAxes().getType())
          ? std::optional<SmallVector<int64_t>>(SmallVector<int64_t>{0})
          : getConstantInts(slice.getAxes());
  if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 ||
      axes->size() != 1)
    return std::nullopt;
  if (!isa<NoneType>(slice.getSteps().getType())) {
    std::optional<SmallVector<int64_t>> steps =
        getConstantInts(slice.getSteps());
    if (!steps || steps->size() != 1 || (*steps)[0] != 1)
      return std::nullopt;
  }
  int64_t rank = type.getRank();
  int64_t axis = (*axes)[0] < 0 ? (*axes)[0] + rank : (*axes)[0];
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  int64_t size = type.getDimSize(axis);
  auto clamp = [&](int64_t i) {
    return std::clamp(i < 0 ? i + size : i, int64_t(0), size);
  };
  int64_t begin = clamp((*starts)[0]), end = clamp((*ends)[0]);
  if (begin >= end || (begin == 0 && end == size))
    return std::nullopt;
  return AxisRange{axis, begin, end};
}

/// `axis` of a rank-`rank` value, negative ones counted from the end.
int64_t normalized(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

constexpr int64_t kWhole = -1;

/// The axis of a broadcast operand that holds result axis `axis`, kWhole
/// when the operand broadcasts along it (missing or of size 1), nullopt
/// when the operand is not a static tensor of a broadcastable shape.
std::optional<int64_t> broadcastAxis(Value operand, int64_t axis,
                                     ArrayRef<int64_t> result) {
  if (isa<NoneType>(operand.getType()))
    return kWhole;
  RankedTensorType type = staticTensorType(operand);
  if (!type || type.getRank() > int64_t(result.size()))
    return std::nullopt;
  int64_t at = axis - (int64_t(result.size()) - type.getRank());
  if (at < 0 || type.getDimSize(at) == 1)
    return kWhole;
  if (type.getDimSize(at) != result[axis])
    return std::nullopt;
  return at;
}

/// Ops that compute each element from the elements at the same (broadcast)
/// index of their operands.
bool isElementwise(Operation *op) {
  return isa<AbsOp, NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp, ReluOp,
             SigmoidOp, TanhOp, ErfOp, GeluOp, LeakyReluOp, HardSwishOp,
             HardSigmoidOp, SoftplusOp, IdentityOp, ClipOp, CastOp, AddOp,
             SubOp, MulOp, DivOp, PowOp, WhereOp, SumOp, MaxOp, MinOp, EqualOp,
             LessOp, GreaterOp, NotOp, AndOp, OrOp>(op);
}

/// The reduced axes of a reduction with a static input (all of them when
/// none are given), and whether it keeps them.
std::optional<std::pair<SmallVector<int64_t>, bool>> reduction(Operation *op) {
  std::optional<SmallVector<int64_t>> axes;
  std::optional<uint64_t> keepdims;
  auto fromAttr = [&](auto reduce) {
    if (std::optional<ArrayRef<int64_t>> given = reduce.getAxes())
      axes = SmallVector<int64_t>(*given);
    keepdims = reduce.getKeepdims();
  };
  bool known =
      TypeSwitch<Operation *, bool>(op)
          .Case<ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
                ReduceL1Op, ReduceL2Op, ReduceLogSumOp, ReduceLogSumExpOp,
                ReduceSumSquareOp>([&](auto reduce) {
            fromAttr(reduce);
            return true;
          })
          .Case([&](ReduceSumOp reduce) {
            if (!isa<NoneType>(reduce.getAxes().getType())) {
              axes = getConstantInts(reduce.getAxes());
              if (!axes)
                return false;
              if (axes->empty() &&
                  reduce.getNoopWithEmptyAxes().value_or(0) != 0)
                return false;
            }
            keepdims = reduce.getKeepdims();
            return true;
          })
          .Default([](Operation *) { return false; });
  RankedTensorType input =
      known ? staticTensorType(op->getOperand(0)) : RankedTensorType();
  if (!input)
    return std::nullopt;
  int64_t rank = input.getRank();
  SmallVector<int64_t> reduced;
  if (!axes || axes->empty())
    for (int64_t i = 0; i < rank; ++i)
      reduced.push_back(i);
  for (int64_t a : axes.value_or(SmallVector<int64_t>{}))
    reduced.push_back(normalized(a, rank));
  return std::make_pair(reduced, keepdims.value_or(1) != 0);
}

/// For an op whose result's `axis` is sliced: the axis of each operand to
/// slice alike (kWhole: read whole), or nullopt when an index of that axis
/// depends on other indices of it (a reduction or softmax along it, a
/// matmul's columns) or the op is not one this pass knows.
std::optional<SmallVector<int64_t>> operandAxes(Operation *op, int64_t axis) {
  RankedTensorType resultType = staticTensorType(op->getResult(0));
  if (!resultType)
    return std::nullopt;
  ArrayRef<int64_t> result = resultType.getShape();
  int64_t rank = result.size();
  using Axes = std::optional<SmallVector<int64_t>>;
  auto firstOnly = [&](int64_t inputAxis) -> Axes {
    SmallVector<int64_t> axes(op->getNumOperands(), kWhole);
    axes[0] = inputAxis;
    return axes;
  };
  if (isElementwise(op)) {
    SmallVector<int64_t> axes;
    for (Value operand : op->getOperands()) {
      std::optional<int64_t> at = broadcastAxis(operand, axis, result);
      if (!at)
        return std::nullopt;
      axes.push_back(*at);
    }
    return axes;
  }
  if (auto reduced = reduction(op)) {
    auto [reducedAxes, keep] = *reduced;
    // The input axis that becomes result axis `axis`.
    int64_t inputRank = shapeOf(op->getOperand(0)).size(), seen = 0;
    for (int64_t i = 0; i < inputRank; ++i) {
      bool isReduced = llvm::is_contained(reducedAxes, i);
      if (keep ? i == axis : (!isReduced && seen++ == axis))
        return isReduced ? Axes() : firstOnly(i);
    }
    return std::nullopt;
  }
  return TypeSwitch<Operation *, Axes>(op)
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto softmax) -> Axes {
        if (normalized(softmax.getAxis().value_or(-1), rank) == axis)
          return std::nullopt;
        return firstOnly(axis);
      })
      .Case([&](LayerNormalizationOp norm) -> Axes {
        // Only Y is read; the statistics would need their own slices.
        if (!norm.getMean().use_empty() || !norm.getInvStdDev().use_empty() ||
            axis >= normalized(norm.getAxis().value_or(-1), rank))
          return std::nullopt;
        return firstOnly(axis);
      })
      .Case([&](MatMulOp matmul) -> Axes {
        RankedTensorType a = staticTensorType(matmul.getA());
        RankedTensorType b = staticTensorType(matmul.getB());
        if (!a || !b || a.getRank() < 2 || b.getRank() < 2 || axis == rank - 1)
          return std::nullopt;
        if (axis == rank - 2) // A's rows
          return SmallVector<int64_t>{a.getRank() - 2, kWhole};
        // A batch axis: each operand broadcasts along it or is sliced.
        ArrayRef<int64_t> batch = result.drop_back(2);
        auto batchAxis = [&](RankedTensorType t) -> std::optional<int64_t> {
          int64_t at = axis - (int64_t(batch.size()) - (t.getRank() - 2));
          if (at < 0 || t.getDimSize(at) == 1)
            return kWhole;
          return t.getDimSize(at) == batch[axis] ? std::optional(at)
                                                 : std::nullopt;
        };
        std::optional<int64_t> inA = batchAxis(a), inB = batchAxis(b);
        if (!inA || !inB)
          return std::nullopt;
        return SmallVector<int64_t>{*inA, *inB};
      })
      .Case([&](TransposeOp transpose) -> Axes {
        std::optional<ArrayRef<int64_t>> perm = transpose.getPerm();
        return firstOnly(perm ? (*perm)[axis] : rank - 1 - axis);
      })
      .Case([&](GemmOp gemm) -> Axes {
        // Rows of A (of Aᵀ with transA) and of a C that has them.
        if (axis != 0)
          return std::nullopt;
        std::optional<int64_t> inC = broadcastAxis(gemm.getC(), axis, result);
        if (!inC)
          return std::nullopt;
        return SmallVector<int64_t>{gemm.getTransA().value_or(0) ? 1 : 0,
                                    kWhole, *inC};
      })
      .Case([&](SliceOp inner) -> Axes {
        // A slice of later axes (the queries' columns of a fused QKV
        // projection). Only later ones: two slices trade places once, not
        // back and forth.
        RankedTensorType input = staticTensorType(inner.getData());
        std::optional<SmallVector<int64_t>> axes =
            isa<NoneType>(inner.getAxes().getType())
                ? std::nullopt
                : getConstantInts(inner.getAxes());
        if (!input || !axes || llvm::any_of(*axes, [&](int64_t a) {
              return normalized(a, rank) <= axis;
            }))
          return std::nullopt;
        return firstOnly(axis);
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The slice of a reshape's input that gives `range` of its output: the
/// elements of indices [begin, end) of output axis `axis`, under each index
/// of the dims before it, are whole indices [from, to) of one input axis
/// (ViT's [S*B, E] -> [S, B, E] and [S, B*H, D] -> [S*B, E]).
std::optional<AxisRange> reshapeInputRange(ReshapeOp reshape,
                                           const AxisRange &range) {
  RankedTensorType input = staticTensorType(reshape.getData());
  RankedTensorType output = staticTensorType(reshape.getReshaped());
  if (!input || !output)
    return std::nullopt;
  ArrayRef<int64_t> in = input.getShape(), out = output.getShape();
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= d;
    return p;
  };
  int64_t outer = product(out.take_front(range.axis));
  int64_t inner = product(out.drop_front(range.axis + 1));
  int64_t first = range.begin * inner, last = range.end * inner;
  for (int64_t k = 0; k < int64_t(in.size()); ++k) {
    if (product(in.take_front(k)) != outer)
      continue;
    int64_t row = product(in.drop_front(k + 1));
    if (in[k] != 1 && first % row == 0 && last % row == 0)
      return AxisRange{k, first / row, last / row};
  }
  return std::nullopt;
}

RankedTensorType withDim(Type type, int64_t axis, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[axis] = size;
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// `value`'s indices [begin, end) of `axis`: an equal slice of it in the
/// block (the same operand of several ops, as a residual's), moved before
/// `before` with its constant bounds where it comes later, else a new one.
Value sliceOnce(TensorOpBuilder &build, PatternRewriter &rewriter, Value value,
                const AxisRange &range, Operation *before) {
  Block *block = before->getBlock();
  auto isLater = [&](Operation *op) {
    return op && op->getBlock() == block && !op->isBeforeInBlock(before);
  };
  for (Operation *user : value.getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || slice->getBlock() != block || slice.getData() != value ||
        rangeOf(slice) != range)
      continue;
    if (!isLater(slice))
      return slice.getOutput();
    SmallVector<Operation *> bounds;
    for (Value operand : slice->getOperands().drop_front())
      if (Operation *def = operand.getDefiningOp(); isLater(def))
        bounds.push_back(def);
    if (!llvm::all_of(bounds, [](Operation *def) {
          return isa<ConstantOp, NoneOp>(def);
        }))
      continue;
    for (Operation *def : bounds)
      rewriter.moveOpBefore(def, before);
    rewriter.moveOpBefore(slice, before);
    return slice.getOutput();
  }
  return build.slice(value, range.axis, range.begin, range.end);
}

/// slice(op(x, ...)) -> op(slice(x), ...) when every reader of op's result
/// takes the same slice of one axis and op computes each index of that axis
/// from the same index of its operands.
struct SliceBeforeOp : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    std::optional<AxisRange> range = rangeOf(slice);
    Value sliced = slice.getData();
    Operation *op = sliced.getDefiningOp();
    if (!range || !op || op->getNumRegions() != 0 || sliced != op->getResult(0))
      return rewriter.notifyMatchFailure(slice, "not a sliceable producer");
    SmallVector<SliceOp> readers;
    for (Operation *user : sliced.getUsers()) {
      auto other = dyn_cast<SliceOp>(user);
      if (!other || rangeOf(other) != range)
        return rewriter.notifyMatchFailure(slice, "the whole value is read");
      readers.push_back(other);
    }
    TensorOpBuilder build(rewriter, op->getLoc());
    int64_t size = range->end - range->begin;
    Value replacement;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      std::optional<AxisRange> from = reshapeInputRange(reshape, *range);
      if (!from)
        return rewriter.notifyMatchFailure(slice, "rows mix under reshape");
      rewriter.setInsertionPoint(op);
      replacement = build.reshape(
          sliceOnce(build, rewriter, reshape.getData(), *from, op),
          withDim(reshape.getType(), range->axis, size).getShape());
    } else {
      std::optional<SmallVector<int64_t>> axes = operandAxes(op, range->axis);
      if (!axes)
        return rewriter.notifyMatchFailure(slice, "rows depend on each other");
      rewriter.setInsertionPoint(op);
      SmallVector<Value> operands;
      for (auto [operand, at] : llvm::zip(op->getOperands(), *axes))
        operands.push_back(
            at == kWhole
                ? operand
                : sliceOnce(build, rewriter, operand,
                            AxisRange{at, range->begin, range->end}, op));
      Operation *narrow = rewriter.clone(*op);
      narrow->setOperands(operands);
      // (A layer norm's statistics, unread, keep their leading dims.)
      for (OpResult result : narrow->getResults())
        if (auto type = dyn_cast<RankedTensorType>(result.getType());
            type && type.getRank() > range->axis &&
            type.getDimSize(range->axis) ==
                cast<RankedTensorType>(sliced.getType())
                    .getDimSize(range->axis))
          result.setType(withDim(type, range->axis, size));
      replacement = narrow->getResult(0);
    }
    for (SliceOp reader : readers)
      rewriter.replaceOp(reader, replacement);
    if (op->use_empty())
      rewriter.eraseOp(op);
    return success();
  }
};

/// Gather(x, c) of one constant index c along `axis` is
/// Reshape(Slice(x, c:c+1 along axis)): a slice that SliceBeforeOp moves up.
/// Only where it can move: else the gather stays as it is.
struct GatherAsSlice : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp gather,
                                PatternRewriter &rewriter) const override {
    RankedTensorType data = staticTensorType(gather.getData());
    RankedTensorType result = staticTensorType(gather.getOutput());
    RankedTensorType indicesType = staticTensorType(gather.getIndices());
    std::optional<SmallVector<int64_t>> indices =
        getConstantInts(gather.getIndices());
    if (!data || !result || !indicesType || indicesType.getNumElements() != 1 ||
        !indices || indices->size() != 1)
      return rewriter.notifyMatchFailure(gather, "not one constant index");
    int64_t axis = normalized(gather.getAxis().value_or(0), data.getRank());
    int64_t index = (*indices)[0];
    if (index < 0)
      index += data.getDimSize(axis);
    Operation *producer = gather.getData().getDefiningOp();
    if (index < 0 || index >= data.getDimSize(axis) || !producer ||
        producer->getNumRegions() != 0 ||
        gather.getData() != producer->getResult(0) ||
        !(isa<ReshapeOp>(producer)
              ? reshapeInputRange(cast<ReshapeOp>(producer),
                                  AxisRange{axis, index, index + 1})
                    .has_value()
              : operandAxes(producer, axis).has_value()))
      return rewriter.notifyMatchFailure(gather, "nothing to move the row to");
    TensorOpBuilder build(rewriter, gather.getLoc());
    Value row = build.slice(gather.getData(), axis, index, index + 1);
    rewriter.replaceOp(gather, build.reshape(row, result.getShape()));
    return success();
  }
};

struct PruneRowsPass : public mp::impl::PruneRowsBase<PruneRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    // Only graphs that read a part of a value (most do not) run the driver.
    bool anyRowRead = false;
    getOperation().walk(
        [&](Operation *op) { anyRowRead |= isa<SliceOp, GatherOp>(op); });
    if (!anyRowRead)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<SliceBeforeOp, GatherAsSlice>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     onlyThesePatterns())))
      return signalPassFailure();
  }
};

} // namespace
