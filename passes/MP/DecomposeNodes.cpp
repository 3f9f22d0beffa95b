//===- DecomposeNodes.cpp - ONNX nodes as the typed ops they compute ------===//
//
// mp-decompose-nodes (Passes.td): ONNX nodes that have no typed op but are
// defined by a few of them (QuantizeLinear, DequantizeLinear,
// LpNormalization) become those ops, so that plans run them on every backend
// with the kernels they already have (kernel.cast rounds to the narrow types
// as ONNX does: mp/Runtime/NarrowTypes.h).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ShapeInference.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mp {
#define GEN_PASS_DEF_DECOMPOSENODES
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

RankedTensorType staticTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() ? type : RankedTensorType();
}

int64_t intAttrOr(OnnxGenericOp op, StringRef name, int64_t fallback) {
  DictionaryAttr attrs = op.getOnnxAttrsAttr();
  auto value = attrs ? attrs.getAs<IntegerAttr>(name) : IntegerAttr();
  return value ? value.getInt() : fallback;
}

/// The range of an integer quantized type, or nullopt for the float ones.
std::optional<std::pair<double, double>> integerRange(Type element) {
  auto integer = dyn_cast<IntegerType>(element);
  if (!integer || integer.getWidth() > 16)
    return std::nullopt;
  unsigned bits = integer.getWidth();
  if (integer.isUnsigned())
    return std::make_pair(0.0, std::ldexp(1.0, bits) - 1);
  return std::make_pair(-std::ldexp(1.0, bits - 1),
                        std::ldexp(1.0, bits - 1) - 1);
}

/// Builds the typed ops of one Q/DQ node, all in f32 and of static shapes.
struct Builder {
  PatternRewriter &rewriter;
  Location loc;
  Type f32;

  RankedTensorType f32Like(RankedTensorType t) const {
    return RankedTensorType::get(t.getShape(), f32);
  }
  Value i64List(ArrayRef<int64_t> values) {
    auto type =
        RankedTensorType::get({int64_t(values.size())}, rewriter.getI64Type());
    return ConstantOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{},
        {rewriter.getNamedAttr("value",
                               DenseIntElementsAttr::get(type, values))});
  }
  Value scalar(double v) {
    auto type = RankedTensorType::get({}, f32);
    return ConstantOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{},
        {rewriter.getNamedAttr(
            "value",
            DenseElementsAttr::get(
                type, rewriter.getF32FloatAttr(static_cast<float>(v))))});
  }
  Value castTo(Value v, Type element) {
    auto type = mlir::cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return v;
    return CastOp::create(
        rewriter, loc, RankedTensorType::get(type.getShape(), element), v,
        rewriter.getI64IntegerAttr(getOnnxDataTypeForType(element)),
        IntegerAttr());
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    auto type = mlir::cast<RankedTensorType>(v.getType());
    return ReshapeOp::create(
        rewriter, loc, RankedTensorType::get(shape, type.getElementType()), v,
        i64List(shape), IntegerAttr());
  }

  /// A scale or zero point of `param`'s shape as f32 that broadcasts onto
  /// `x` (shape `xShape`): per tensor as it is, per axis reshaped onto
  /// `axis`, per block repeated `block` times along it. Null when it does
  /// not fit.
  Value broadcastable(Value param, ArrayRef<int64_t> xShape, int64_t axis,
                      int64_t block) {
    auto type = staticTensor(param);
    if (!type)
      return Value();
    Value v = castTo(param, f32);
    const int64_t rank = int64_t(xShape.size());
    if (type.getNumElements() == 1 && block == 0)
      return type.getRank() <= rank ? v : Value();
    if (axis < 0 || axis >= rank)
      return Value();
    if (block == 0) {
      if (type.getRank() != 1 || type.getDimSize(0) != xShape[axis])
        return Value();
      SmallVector<int64_t> shape(rank, 1);
      shape[axis] = xShape[axis];
      return reshape(v, shape);
    }
    // Blocks: [.., C/B, ..] -> [.., C/B, 1, ..] -> [.., C/B, B, ..] -> [.., C,
    // ..]
    if (type.getRank() != rank || xShape[axis] % block ||
        type.getDimSize(axis) != xShape[axis] / block)
      return Value();
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && type.getDimSize(d) != xShape[d])
        return Value();
    SmallVector<int64_t> split(type.getShape());
    split.insert(split.begin() + axis + 1, 1);
    v = reshape(v, split);
    split[axis + 1] = block;
    v = ExpandOp::create(rewriter, loc, RankedTensorType::get(split, f32), v,
                         i64List(split));
    return reshape(v, xShape);
  }
  template <typename OpTy>
  Value binary(Value a, Value b, ArrayRef<int64_t> shape) {
    return OpTy::create(rewriter, loc, RankedTensorType::get(shape, f32), a, b);
  }
};

struct DecomposeQDQ : OpRewritePattern<OnnxGenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxGenericOp op,
                                PatternRewriter &rewriter) const override {
    StringRef opType = op.getOpType();
    const bool quantize = opType == "QuantizeLinear";
    if ((!quantize && opType != "DequantizeLinear") ||
        !op.getDomain().empty() || op->getNumResults() != 1 ||
        op->getNumOperands() < 2 || op->getNumOperands() > 3 ||
        op->getNumRegions() != 0)
      return failure();
    if (intAttrOr(op, "precision", 0) != 0)
      return failure();
    auto xType = staticTensor(op->getOperand(0));
    auto yType = staticTensor(op->getResult(0));
    if (!xType || !yType || xType.getShape() != yType.getShape())
      return failure();
    Value zeroPoint =
        op->getNumOperands() == 3 && !isa<NoneType>(op->getOperand(2).getType())
            ? op->getOperand(2)
            : Value();
    const int64_t rank = xType.getRank();
    int64_t axis = intAttrOr(op, "axis", 1);
    if (axis < 0)
      axis += rank;
    const int64_t block = intAttrOr(op, "block_size", 0);
    if (block < 0)
      return failure();

    Builder b{rewriter, op.getLoc(), rewriter.getF32Type()};
    ArrayRef<int64_t> shape = xType.getShape();
    Value scale = b.broadcastable(op->getOperand(1), shape, axis, block);
    Value zero =
        zeroPoint ? b.broadcastable(zeroPoint, shape, axis, block) : Value();
    if (!scale || (zeroPoint && !zero))
      return failure();
    Value x = b.castTo(op->getOperand(0), b.f32);
    Type target = yType.getElementType();
    Value y;
    if (quantize) {
      Value q = b.binary<DivOp>(x, scale, shape);
      std::optional<std::pair<double, double>> range = integerRange(target);
      if (range)
        q = RoundOp::create(rewriter, op.getLoc(), q.getType(), q);
      if (zero)
        q = b.binary<AddOp>(q, zero, shape);
      if (range) {
        q = ClipOp::create(rewriter, op.getLoc(), q.getType(), q,
                           b.scalar(range->first), b.scalar(range->second));
        y = b.castTo(q, target);
      } else {
        // Float8 and float4: Cast's rounding, with the node's saturate.
        y = CastOp::create(
            rewriter, op.getLoc(), yType, q,
            rewriter.getI64IntegerAttr(getOnnxDataTypeForType(target)),
            rewriter.getI64IntegerAttr(intAttrOr(op, "saturate", 1)));
      }
    } else {
      if (zero)
        x = b.binary<SubOp>(x, zero, shape);
      y = b.castTo(b.binary<MulOp>(x, scale, shape), target);
    }
    // The value keeps the node's output name (plan buffers, messages).
    if (Operation *last = y.getDefiningOp())
      if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
        last->setAttr(MPDialect::kOutputNamesAttr, names);
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// LpNormalization: x / ReduceL{p}(x) over `axis`, the dim kept.
struct DecomposeLpNormalization : OpRewritePattern<OnnxGenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxGenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "LpNormalization" || !op.getDomain().empty() ||
        op->getNumOperands() != 1 || op->getNumResults() != 1 ||
        op->getNumRegions() != 0)
      return failure();
    auto xType = staticTensor(op->getOperand(0));
    if (!xType || xType != op->getResult(0).getType() ||
        !isa<FloatType>(xType.getElementType()) || xType.getRank() == 0)
      return failure();
    const int64_t rank = xType.getRank();
    int64_t axis = intAttrOr(op, "axis", -1);
    if (axis < 0)
      axis += rank;
    const int64_t p = intAttrOr(op, "p", 2);
    if (axis < 0 || axis >= rank || (p != 1 && p != 2))
      return failure();
    SmallVector<int64_t> reducedShape(xType.getShape());
    reducedShape[axis] = 1;
    auto reducedType =
        RankedTensorType::get(reducedShape, xType.getElementType());
    DenseI64ArrayAttr axes = rewriter.getDenseI64ArrayAttr({axis});
    IntegerAttr keep = rewriter.getI64IntegerAttr(1);
    Value x = op->getOperand(0);
    Value norm = p == 1 ? ReduceL1Op::create(rewriter, op.getLoc(), reducedType,
                                             x, axes, keep)
                              .getResult()
                        : ReduceL2Op::create(rewriter, op.getLoc(), reducedType,
                                             x, axes, keep)
                              .getResult();
    auto y = DivOp::create(rewriter, op.getLoc(), xType, x, norm);
    if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
      y->setAttr(MPDialect::kOutputNamesAttr, names);
    rewriter.replaceOp(op, y.getResult());
    return success();
  }
};

struct DecomposeNodesPass
    : public mp::impl::DecomposeNodesBase<DecomposeNodesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeQDQ, DecomposeLpNormalization>(&getContext());
    // Only these rewrites: no folding, and constants stay where they are
    // (the plan's buffers keep their order).
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
