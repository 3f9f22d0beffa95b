//===- ShapeInferenceReductions.cpp - reductions, losses and RNNs ---------===//
//
// The result types of the reductions, the arg reductions, the losses and
// the recurrent networks.
//
//===----------------------------------------------------------------------===//
#include "ShapeInferenceInternal.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mp;
using namespace mp::shape_detail;

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

LogicalResult shape::inferReduce(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  std::optional<SmallVector<int64_t>> axes;
  bool axesKnown = true;
  if (ctx.getOpType() == "ReduceSum") {
    if (!ctx.isAbsent(1)) {
      axes = ctx.getConstantInts(1);
      axesKnown = axes.has_value();
    }
    if ((!axes || axes->empty()) && axesKnown &&
        ctx.getInt("noop_with_empty_axes", 0)) {
      results.push_back(ctx.getOperandType(0));
      return success();
    }
  } else {
    axes = ctx.getInts("axes");
  }
  if (!x || !axesKnown) {
    Dims out;
    if (x && keepdims)
      out = SmallVector<int64_t, 6>(x->size(), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size();
  llvm::SmallBitVector reduced(rank, !axes || axes->empty());
  if (axes)
    for (int64_t axis : *axes) {
      FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
      if (failed(a))
        return failure();
      reduced.set(*a);
    }
  SmallVector<int64_t, 6> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.test(i))
      out.push_back((*x)[i]);
    else if (keepdims)
      out.push_back(1);
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferArgReduce(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, i64));
    return success();
  }
  FailureOr<int64_t> axis =
      normalizeAxis(ctx, ctx.getInt("axis", 0), x->size());
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> out = *x;
  if (keepdims)
    out[*axis] = 1;
  else
    out.erase(out.begin() + *axis);
  results.push_back(ctx.makeTensor(out, i64));
  return success();
}

LogicalResult shape::inferLoss(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims scores = ctx.getDims(0), labels = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  StringRef reduction = ctx.getString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.emitError("unknown reduction '" + reduction + "'");
  if (scores && scores->size() < 2)
    return ctx.emitError("scores must have rank >= 2");
  if (scores && labels && labels->size() + 1 != scores->size())
    return ctx.emitError("labels must have rank " + Twine(scores->size() - 1));
  Dims lossDims;
  if (reduction != "none")
    lossDims = SmallVector<int64_t, 6>();
  else if (labels)
    lossDims = labels;
  results.push_back(ctx.makeTensor(lossDims, element));
  if (ctx.getOpType() == "SoftmaxCrossEntropyLoss")
    results.push_back(ctx.makeTensor(scores, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

LogicalResult shape::inferRecurrent(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1), r = ctx.getDims(2);
  Type element = ctx.getElementType(0);
  StringRef direction = ctx.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return ctx.emitError("unknown direction '" + direction + "'");
  int64_t numDirections = direction == "bidirectional" ? 2 : 1;
  if ((x && x->size() != 3) || (w && w->size() != 3) || (r && r->size() != 3))
    return ctx.emitError("X, W and R must have rank 3");
  if (w && dimsConflict((*w)[0], numDirections))
    return ctx.emitError("W's first dim must be num_directions " +
                         Twine(numDirections));
  int64_t hidden = ctx.getInt("hidden_size", kDynamic);
  if (ShapedType::isDynamic(hidden) && r)
    hidden = (*r)[2];
  bool batchMajor = ctx.getInt("layout", 0) != 0;
  int64_t seq = x ? (*x)[batchMajor ? 1 : 0] : kDynamic;
  int64_t batch = x ? (*x)[batchMajor ? 0 : 1] : kDynamic;
  SmallVector<int64_t, 6> y =
      batchMajor ? SmallVector<int64_t, 6>{batch, seq, numDirections, hidden}
                 : SmallVector<int64_t, 6>{seq, numDirections, batch, hidden};
  SmallVector<int64_t, 6> state =
      batchMajor ? SmallVector<int64_t, 6>{batch, numDirections, hidden}
                 : SmallVector<int64_t, 6>{numDirections, batch, hidden};
  results.push_back(ctx.makeTensor(y, element));
  results.push_back(ctx.makeTensor(state, element));
  if (ctx.getOpType() == "LSTM")
    results.push_back(ctx.makeTensor(state, element));
  return success();
}
