//===- DecomposeNodes.cpp - ONNX nodes as the typed ops they compute ------===//
//
// mp-decompose-nodes (Passes.td): ONNX nodes that have no typed op but are
// defined by a few of them (QuantizeLinear, DequantizeLinear,
// LpNormalization, Col2Im as a grouped ConvTranspose, Resize's antialiased
// and keep-aspect-ratio forms as matrix products) become those ops, so that
// plans run them on every backend with the kernels they already have
// (kernel.cast rounds to the narrow types as ONNX does:
// mp/Runtime/NarrowTypes.h).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/AttentionForm.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ResizeInterpolation.h"
#include "mp/Dialect/MP/ShapeInference.h"
#include "mp/Dialect/MP/TensorOpBuilder.h"
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

RankedTensorType staticTensor(Value v) { return staticTensorType(v); }

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

/// Replaces `op` by `y`, which takes the node's output names (plan buffers,
/// messages): on the op that makes it, or on an Identity when the rewrite
/// passed one of `op`'s operands through unchanged.
void replaceNamed(PatternRewriter &rewriter, Operation *op, Value y) {
  if (!y.getDefiningOp() || llvm::is_contained(op->getOperands(), y))
    y = IdentityOp::create(rewriter, op->getLoc(), y.getType(), y);
  if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
    y.getDefiningOp()->setAttr(MPDialect::kOutputNamesAttr, names);
  rewriter.replaceOp(op, y);
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
    return TensorOpBuilder(rewriter, loc).i64s(values);
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
    return TensorOpBuilder(rewriter, loc).cast(v, element);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    return TensorOpBuilder(rewriter, loc).reshape(v, shape);
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
    replaceNamed(rewriter, op, y);
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
    replaceNamed(rewriter, op,
                 DivOp::create(rewriter, op.getLoc(), xType, x, norm));
    return success();
  }
};

/// The ints of an ONNX attribute of a generic op, or `fallback`.
SmallVector<int64_t> intsAttrOr(OnnxGenericOp op, StringRef name,
                                SmallVector<int64_t> fallback) {
  DictionaryAttr attrs = op.getOnnxAttrsAttr();
  if (auto value =
          attrs ? attrs.getAs<DenseI64ArrayAttr>(name) : DenseI64ArrayAttr())
    return SmallVector<int64_t>(value.asArrayRef());
  return fallback;
}

/// Col2Im: input [N, C * prod(block), L] holds the columns of image_shape
/// (sliding blocks of block_shape, with strides, dilations and pads); each
/// column element is added into the image. That is a ConvTranspose over
/// the input reshaped to [N, C * K, L_1, ..., L_n] with C groups and a
/// one-hot filter [C * K, 1, block...] (filter k of a channel has a 1 at
/// block position k), output_padding making the output image_shape.
struct DecomposeCol2Im : OpRewritePattern<OnnxGenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxGenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "Col2Im" || !op.getDomain().empty() ||
        op->getNumOperands() != 3 || op->getNumResults() != 1 ||
        op->getNumRegions() != 0)
      return failure();
    auto xType = staticTensor(op->getOperand(0));
    auto yType = staticTensor(op->getResult(0));
    std::optional<SmallVector<int64_t>> image =
        getConstantInts(op->getOperand(1));
    std::optional<SmallVector<int64_t>> block =
        getConstantInts(op->getOperand(2));
    if (!xType || !yType || !image || !block || xType.getRank() != 3 ||
        !isa<FloatType>(xType.getElementType()) || image->empty() ||
        image->size() != block->size())
      return failure();
    const size_t n = image->size();
    SmallVector<int64_t> dilations =
        intsAttrOr(op, "dilations", SmallVector<int64_t>(n, 1));
    SmallVector<int64_t> strides =
        intsAttrOr(op, "strides", SmallVector<int64_t>(n, 1));
    SmallVector<int64_t> pads =
        intsAttrOr(op, "pads", SmallVector<int64_t>(2 * n, 0));
    if (dilations.size() != n || strides.size() != n || pads.size() != 2 * n)
      return failure();
    int64_t blockSize = 1, columns = 1;
    SmallVector<int64_t> grid, outputPadding;
    for (size_t i = 0; i < n; ++i) {
      const int64_t extent = dilations[i] * ((*block)[i] - 1) + 1;
      const int64_t padded = (*image)[i] + pads[i] + pads[i + n];
      if ((*block)[i] < 1 || strides[i] < 1 || dilations[i] < 1 ||
          padded < extent)
        return failure();
      grid.push_back((padded - extent) / strides[i] + 1);
      outputPadding.push_back((padded - extent) % strides[i]);
      blockSize *= (*block)[i];
      columns *= grid.back();
    }
    const int64_t batch = xType.getDimSize(0);
    if (xType.getDimSize(1) % blockSize || xType.getDimSize(2) != columns)
      return failure();
    const int64_t channels = xType.getDimSize(1) / blockSize;
    SmallVector<int64_t> yShape = {batch, channels};
    yShape.append(image->begin(), image->end());
    if (yType.getShape() != ArrayRef<int64_t>(yShape))
      return failure();

    Type element = xType.getElementType();
    SmallVector<int64_t> gridShape = {batch, channels * blockSize};
    gridShape.append(grid);
    SmallVector<int64_t> filterShape = {channels * blockSize, 1};
    filterShape.append(block->begin(), block->end());
    // Filter (c, k) holds its 1 at block position k: element k of its K.
    SmallVector<APFloat> filter(
        size_t(channels * blockSize * blockSize),
        APFloat::getZero(cast<FloatType>(element).getFloatSemantics()));
    for (int64_t f = 0; f < channels * blockSize; ++f)
      filter[size_t(f * blockSize + f % blockSize)] =
          APFloat::getOne(cast<FloatType>(element).getFloatSemantics());
    auto filterType = RankedTensorType::get(filterShape, element);
    Location loc = op.getLoc();
    Value weight = ConstantOp::create(
        rewriter, loc, TypeRange{filterType}, ValueRange{},
        {rewriter.getNamedAttr("value",
                               DenseElementsAttr::get(filterType, filter))});
    Builder b{rewriter, loc, rewriter.getF32Type()};
    Value columnsAsGrid = b.reshape(op->getOperand(0), gridShape);
    Value none = NoneOp::create(rewriter, loc);
    auto y = ConvTransposeOp::create(
        rewriter, loc, yType, columnsAsGrid, weight, none, StringAttr(),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getI64IntegerAttr(channels),
        rewriter.getDenseI64ArrayAttr(*block),
        rewriter.getDenseI64ArrayAttr(outputPadding), DenseI64ArrayAttr(),
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides));
    replaceNamed(rewriter, op, y.getResult());
    return success();
  }
};

/// Resize-18+ with antialias or a keep_aspect_ratio_policy (forms no
/// runtime kernel takes) and constant scales or sizes: one matrix product
/// per resized axis with the interpolation weights ONNX's reference uses
/// (mp/Dialect/MP/ResizeInterpolation.h), in f32 (f64 for f64 data), the
/// result rounded once to X's type.
struct DecomposeResize : OpRewritePattern<OnnxGenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(OnnxGenericOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOpType() != "Resize" || !op.getDomain().empty() ||
        op.getVersion() < 18 || op->getNumOperands() < 3 ||
        op->getNumResults() != 1 || op->getNumRegions() != 0)
      return failure();
    DictionaryAttr attrs = op.getOnnxAttrsAttr();
    auto str = [&](StringRef name, StringRef fallback) {
      auto value = attrs ? attrs.getAs<StringAttr>(name) : StringAttr();
      return (value ? value.getValue() : fallback).str();
    };
    ResizeSettings settings;
    settings.antialias = intAttrOr(op, "antialias", 0) != 0;
    const std::string policy = str("keep_aspect_ratio_policy", "stretch");
    if (!settings.antialias && policy == "stretch")
      return failure();
    if (policy != "stretch" && policy != "not_larger" &&
        policy != "not_smaller")
      return failure();
    settings.mode = str("mode", "nearest");
    settings.coordinateTransformationMode =
        str("coordinate_transformation_mode", "half_pixel");
    settings.nearestMode = str("nearest_mode", "round_prefer_floor");
    settings.excludeOutside = intAttrOr(op, "exclude_outside", 0) != 0;
    if (auto a = attrs ? attrs.getAs<FloatAttr>("cubic_coeff_a") : FloatAttr())
      settings.cubicCoeffA = a.getValueAsDouble();

    auto xType = staticTensor(op->getOperand(0));
    auto yType = staticTensor(op->getResult(0));
    if (!xType || !yType || !isa<FloatType>(xType.getElementType()))
      return failure();
    const int64_t rank = xType.getRank();
    ArrayRef<int64_t> in = xType.getShape();
    if (llvm::is_contained(in, 0))
      return rewriter.notifyMatchFailure(op, "an empty input");
    SmallVector<int64_t> axes;
    for (int64_t axis : intsAttrOr(op, "axes", {})) {
      if (axis < -rank || axis >= rank)
        return failure();
      axes.push_back(axis < 0 ? axis + rank : axis);
    }
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    auto present = [&](unsigned i) {
      return i < op->getNumOperands() &&
             !isa<NoneType>(op->getOperand(i).getType());
    };
    // Each axis's size and the scale its coordinates are mapped with, as
    // the reference's _interpolate_nd computes them.
    SmallVector<ResizeAxis> resized(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d)
      resized[d] = {in[d], in[d], 1.0};
    if (present(3)) {
      std::optional<SmallVector<int64_t>> sizes =
          getConstantInts(op->getOperand(3));
      if (!sizes || sizes->size() != axes.size())
        return failure();
      for (auto [i, d] : llvm::enumerate(axes))
        resized[d] = {in[d], (*sizes)[i], double((*sizes)[i]) / double(in[d])};
      if (policy != "stretch") {
        double common = resized[axes.front()].scale;
        for (int64_t d : axes)
          common = policy == "not_larger" ? std::min(common, resized[d].scale)
                                          : std::max(common, resized[d].scale);
        for (int64_t d : axes)
          resized[d] = {in[d], int64_t(common * double(in[d]) + 0.5), common};
      }
    } else if (present(2)) {
      std::optional<SmallVector<double>> scales =
          getConstantFloats(op->getOperand(2));
      if (!scales || scales->size() != axes.size())
        return failure();
      for (auto [i, d] : llvm::enumerate(axes)) {
        // The model's f32 scale, as the reference multiplies it.
        const double scale = double(float((*scales)[i]));
        resized[d] = {in[d], int64_t(scale * double(in[d])), scale};
      }
    } else {
      return failure();
    }
    SmallVector<int64_t> out;
    for (const ResizeAxis &axis : resized) {
      // Empty axes (in or out 0) have no weights to interpolate with.
      if (axis.in < 1 || axis.out < 1)
        return rewriter.notifyMatchFailure(op, "an empty axis");
      out.push_back(axis.out);
    }
    if (yType.getShape() != ArrayRef<int64_t>(out))
      return failure();

    // The weights first: nothing is built for a node they refuse.
    SmallVector<std::vector<double>> matrices(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) {
      std::string error;
      matrices[d] = resizeInterpolationMatrix(resized[d], settings, error);
      if (matrices[d].empty())
        return rewriter.notifyMatchFailure(op, error);
      if (resized[d].in == resized[d].out &&
          isIdentityMatrix(matrices[d], resized[d].in))
        matrices[d].clear();
    }

    Location loc = op.getLoc();
    Type element = xType.getElementType();
    Type work = element.isF64() ? element : rewriter.getF32Type();
    Builder b{rewriter, loc, work};
    Value current = b.castTo(op->getOperand(0), work);
    SmallVector<int64_t> shape(in);
    for (int64_t d = 0; d < rank; ++d) {
      if (matrices[d].empty())
        continue;
      const int64_t inSize = resized[d].in, outSize = resized[d].out;
      int64_t before = 1, after = 1;
      for (int64_t i = 0; i < d; ++i)
        before *= shape[i];
      for (int64_t i = d + 1; i < rank; ++i)
        after *= shape[i];
      // Weights [out, in] times x as [before, in, after]; for the last axis
      // x as [before, in] times the weights transposed.
      const bool last = after == 1;
      SmallVector<int64_t> weightShape =
          last ? SmallVector<int64_t>{inSize, outSize}
               : SmallVector<int64_t>{outSize, inSize};
      SmallVector<APFloat> weights;
      const auto &semantics = cast<FloatType>(work).getFloatSemantics();
      for (int64_t r = 0; r < weightShape[0]; ++r)
        for (int64_t c = 0; c < weightShape[1]; ++c) {
          double w = last ? matrices[d][size_t(c * inSize + r)]
                          : matrices[d][size_t(r * inSize + c)];
          APFloat value(w);
          bool lost;
          value.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
          weights.push_back(value);
        }
      auto weightType = RankedTensorType::get(weightShape, work);
      Value weight = ConstantOp::create(
          rewriter, loc, TypeRange{weightType}, ValueRange{},
          {rewriter.getNamedAttr("value",
                                 DenseElementsAttr::get(weightType, weights))});
      Value product;
      if (last) {
        Value rows = b.reshape(current, {before, inSize});
        product = MatMulOp::create(
            rewriter, loc, RankedTensorType::get({before, outSize}, work), rows,
            weight);
      } else {
        Value slab = b.reshape(current, {before, inSize, after});
        product = MatMulOp::create(
            rewriter, loc,
            RankedTensorType::get({before, outSize, after}, work), weight,
            slab);
      }
      shape[d] = outSize;
      current = b.reshape(product, shape);
    }
    Value y = b.castTo(current, element);
    replaceNamed(rewriter, op, y);
    return success();
  }
};

/// mp.attention: matmul, scale, mask, softmax (f32 for 16-bit data) and
/// matmul (mp/Dialect/MP/AttentionForm.h), which culib-fuse-attention makes
/// one call again.
struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (std::string error = attentionFormError(op); !error.empty())
      return rewriter.notifyMatchFailure(op, error);
    Value y = decomposeAttention(rewriter, op.getLoc(), op);
    replaceNamed(rewriter, op, y);
    return success();
  }
};

/// mp.rotary_embedding: as ONNX's reference computes it. With x as
/// [B, H, S, D] (4-D) or [B, S, H, D] (3-D, split by num_heads) and the
/// caches as [B, S, R/2] (gathered by position_ids) broadcast over the
/// heads: the first R dims' halves (or interleaved pairs) x1, x2 become
/// cos * x1 - sin * x2 and sin * x1 + cos * x2; the other dims pass.
struct DecomposeRotaryEmbedding : OpRewritePattern<RotaryEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RotaryEmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    auto xType = staticTensor(op.getX());
    auto cosType = staticTensor(op.getCosCache());
    auto sinType = staticTensor(op.getSinCache());
    if (!xType || !cosType || !sinType || cosType != sinType)
      return rewriter.notifyMatchFailure(op, "shapes not static or equal");
    const int64_t rank = xType.getRank();
    ArrayRef<int64_t> x = xType.getShape();
    if (rank != 3 && rank != 4)
      return failure();
    const int64_t batch = x[0], seq = rank == 4 ? x[2] : x[1];
    int64_t heads = rank == 4 ? x[1] : op.getNumHeads().value_or(0);
    if (heads < 1 || (rank == 3 && x[2] % heads))
      return rewriter.notifyMatchFailure(op, "num_heads does not split X");
    const int64_t size = rank == 4 ? x[3] : x[2] / heads;
    const int64_t rotated = op.getRotaryEmbeddingDim().value_or(0)
                                ? int64_t(*op.getRotaryEmbeddingDim())
                                : size;
    if (rotated % 2 || rotated > size || rotated < 2)
      return rewriter.notifyMatchFailure(op, "bad rotary_embedding_dim");
    const int64_t half = rotated / 2;
    Value ids = op.getPositionIds();
    const bool gathered = ids && !isa<NoneType>(ids.getType());
    auto idsType = gathered ? staticTensor(ids) : RankedTensorType();
    if (gathered
            ? !idsType || idsType.getShape() != ArrayRef<int64_t>{batch, seq} ||
                  cosType.getRank() != 2 || cosType.getDimSize(1) != half
            : cosType.getShape() != ArrayRef<int64_t>{batch, seq, half})
      return rewriter.notifyMatchFailure(op, "caches do not fit X");

    TensorOpBuilder ops(rewriter, op.getLoc());
    Type element = xType.getElementType();
    Value cos = ops.cast(op.getCosCache(), element);
    Value sin = ops.cast(op.getSinCache(), element);
    if (gathered) {
      cos = ops.gather(cos, ids, 0);
      sin = ops.gather(sin, ids, 0);
    }
    // x as [B, H, S, D] or [B, S, H, D]; the caches broadcast over H.
    SmallVector<int64_t> cacheShape =
        rank == 4 ? SmallVector<int64_t>{batch, 1, seq, half}
                  : SmallVector<int64_t>{batch, seq, 1, half};
    cos = ops.reshape(cos, cacheShape);
    sin = ops.reshape(sin, cacheShape);
    Value x4 = ops.reshape(
        op.getX(), rank == 4 ? x : ArrayRef<int64_t>{batch, seq, heads, size});
    SmallVector<int64_t> lead(shapeOf(x4).take_front(3));
    Value part = ops.slice(x4, 3, 0, rotated);
    Value x1, x2;
    auto withLast = [&](ArrayRef<int64_t> last) {
      SmallVector<int64_t> shape(lead);
      shape.append(last.begin(), last.end());
      return shape;
    };
    if (op.getInterleaved().value_or(0)) {
      Value pairs = ops.reshape(part, withLast({half, 2}));
      x1 = ops.reshape(ops.slice(pairs, 4, 0, 1), withLast({half}));
      x2 = ops.reshape(ops.slice(pairs, 4, 1, 2), withLast({half}));
    } else {
      x1 = ops.slice(part, 3, 0, half);
      x2 = ops.slice(part, 3, half, rotated);
    }
    Value real = ops.sub(ops.mul(cos, x1), ops.mul(sin, x2));
    Value imag = ops.add(ops.mul(sin, x1), ops.mul(cos, x2));
    Value turned;
    if (op.getInterleaved().value_or(0))
      turned = ops.reshape(ops.concat({ops.reshape(real, withLast({half, 1})),
                                       ops.reshape(imag, withLast({half, 1}))},
                                      4),
                           withLast({rotated}));
    else
      turned = ops.concat({real, imag}, 3);
    if (rotated < size)
      turned = ops.concat({turned, ops.slice(x4, 3, rotated, size)}, 3);
    Value y = ops.reshape(turned, x);
    replaceNamed(rewriter, op, y);
    return success();
  }
};

/// mp.center_crop_pad: a Slice of the centred window on the axes that
/// shrink, then a Pad with zeros (the odd one at the end) on those that
/// grow.
struct DecomposeCenterCropPad : OpRewritePattern<CenterCropPadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CenterCropPadOp op,
                                PatternRewriter &rewriter) const override {
    auto inType = staticTensor(op.getInputData());
    auto outType = staticTensor(op.getOutputData());
    if (!inType || !outType || inType.getRank() != outType.getRank())
      return rewriter.notifyMatchFailure(op, "shapes not static");
    const int64_t rank = inType.getRank();
    TensorOpBuilder ops(rewriter, op.getLoc());
    Value x = op.getInputData();
    SmallVector<int64_t> pads(2 * rank, 0);
    bool padded = false;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t in = inType.getDimSize(d), out = outType.getDimSize(d);
      if (out < in) {
        const int64_t start = (in - out) / 2;
        x = ops.slice(x, d, start, start + out);
      } else if (out > in) {
        pads[d] = (out - in) / 2;
        pads[d + rank] = out - in - pads[d];
        padded = true;
      }
    }
    if (padded)
      x = PadOp::create(rewriter, op.getLoc(), outType, x, ops.i64s(pads),
                        NoneOp::create(rewriter, op.getLoc()),
                        rewriter.getStringAttr("constant"));
    replaceNamed(rewriter, op, x);
    return success();
  }
};

struct DecomposeNodesPass
    : public mp::impl::DecomposeNodesBase<DecomposeNodesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeQDQ, DecomposeLpNormalization, DecomposeCol2Im,
                 DecomposeResize, DecomposeAttention, DecomposeRotaryEmbedding,
                 DecomposeCenterCropPad>(&getContext());
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
