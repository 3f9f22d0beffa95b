//===- DataMovement.cpp - weights, reshapes, slices, gathers --------------===//
//
// Initializers and constants become culib.weight buffers; reshapes are
// copies; transposes, concatenation, slicing, splitting, padding, resizing,
// broadcasting and the gather / scatter family are data-movement kernels.
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

struct InitializerLowering : OpConversionPattern<InitializerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(InitializerOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    rewriter.replaceOpWithNewOp<culib::WeightOp>(op, type, op.getNameAttr(),
                                                 op.getValue());
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast_or_null<ElementsAttr>(getConstantValue(op));
    if (!value)
      return rewriter.notifyMatchFailure(op, "constant has no tensor value");
    auto type = cast<MemRefType>(getTypeConverter()->convertType(op.getType()));
    std::string name = getNodeName(op);
    rewriter.replaceOpWithNewOp<culib::WeightOp>(
        op, type, rewriter.getStringAttr(name.empty() ? "constant" : name),
        value);
    return success();
  }
};

/// ConstantOfShape too large for mp-fold-constants to make a constant: its
/// one value as a rank-0 weight, broadcast to the (static) result: a fill.
struct ConstantOfShapeLowering : OpConversionPattern<ConstantOfShapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOfShapeOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = elementOf(op.getOutput());
    auto scalar = RankedTensorType::get({}, element);
    // ONNX's default value is a float 0.
    auto value = cast<DenseElementsAttr>(rewriter.getZeroAttr(scalar));
    if (auto given = dyn_cast_or_null<DenseElementsAttr>(op.getValueAttr()))
      value = given.reshape(scalar);
    std::string name = getNodeName(op);
    Value fill = culib::WeightOp::create(
        rewriter, op.getLoc(), MemRefType::get({}, element),
        rewriter.getStringAttr((name.empty() ? "constant_of_shape" : name) +
                               ".value"),
        value);
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::BroadcastOp::create(rewriter, op.getLoc(), fill, out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Reshape-like ops: the data are copied into a buffer of the new shape.
template <typename OpTy> struct CopyLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getOperands()[0], out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = cast<ShapedType>(op.getData().getType()).getRank();
    SmallVector<int64_t> perm;
    if (op.getPerm())
      perm.assign(op.getPerm()->begin(), op.getPerm()->end());
    else
      for (int64_t i = rank - 1; i >= 0; --i)
        perm.push_back(i);
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                         op.getTransposed());
    culib::TransposeOp::create(rewriter, op.getLoc(), adaptor.getData(), out,
                               rewriter.getDenseI64ArrayAttr(perm));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = cast<ShapedType>(op.getType()).getRank();
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                         op.getConcatResult());
    culib::ConcatOp::create(
        rewriter, op.getLoc(), adaptor.getInputs(), out,
        rewriter.getI64IntegerAttr(normalizeAxis(op.getAxis(), rank)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct GatherLowering : OneCallLowering<GatherOp> {
  using OneCallLowering::OneCallLowering;
  Value result(GatherOp op) const override { return op.getOutput(); }
  void buildCall(GatherOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t rank = cast<ShapedType>(op.getData().getType()).getRank();
    culib::GatherOp::create(rewriter, op.getLoc(), adaptor.getData(),
                            adaptor.getIndices(), out,
                            rewriter.getI64IntegerAttr(
                                normalizeAxis(op.getAxis().value_or(0), rank)));
  }
};

/// Expand, Tile: the result shape says everything.
template <typename OpTy, typename CallTy>
struct ShapeDrivenLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    CallTy::create(rewriter, op.getLoc(), adaptor.getOperands()[0], out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Normalized per-dim starts and steps of an ONNX Slice (the result type
/// has the sizes).
void sliceParams(ArrayRef<int64_t> dims, ArrayRef<int64_t> starts,
                 std::optional<SmallVector<int64_t>> axes,
                 std::optional<SmallVector<int64_t>> steps,
                 SmallVectorImpl<int64_t> &outStarts,
                 SmallVectorImpl<int64_t> &outSteps) {
  int64_t rank = dims.size();
  outStarts.assign(rank, 0);
  outSteps.assign(rank, 1);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = normalizeAxis(axes ? (*axes)[k] : k, rank);
    int64_t dim = dims[axis];
    int64_t step = steps ? (*steps)[k] : 1;
    int64_t start = starts[k];
    if (start < 0)
      start += dim;
    start = step > 0
                ? std::clamp<int64_t>(start, 0, dim)
                : std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    outStarts[axis] = start;
    outSteps[axis] = step;
  }
}

struct SliceLowering : OneCallLowering<SliceOp> {
  using OneCallLowering::OneCallLowering;
  Value result(SliceOp op) const override { return op.getOutput(); }
  void buildCall(SliceOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    SmallVector<int64_t> starts, steps;
    sliceParams(shapeOf(op.getData()), *constantInts(op.getStarts()),
                constantInts(op.getAxes()), constantInts(op.getSteps()), starts,
                steps);
    culib::SliceOp::create(rewriter, op.getLoc(), adaptor.getData(), out,
                           rewriter.getDenseI64ArrayAttr(starts),
                           rewriter.getDenseI64ArrayAttr(steps));
  }
};

struct SplitLowering : OpConversionPattern<SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> dims = shapeOf(op.getInput());
    int64_t axis = normalizeAxis(op.getAxis().value_or(0), dims.size());
    SmallVector<Value> outs;
    int64_t offset = 0;
    for (Value result : op.getOutputs()) {
      Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), result);
      SmallVector<int64_t> starts(dims.size(), 0), steps(dims.size(), 1);
      starts[axis] = offset;
      offset += shapeOf(result)[axis];
      culib::SliceOp::create(rewriter, op.getLoc(), adaptor.getInput(), out,
                             rewriter.getDenseI64ArrayAttr(starts),
                             rewriter.getDenseI64ArrayAttr(steps));
      outs.push_back(out);
    }
    rewriter.replaceOp(op, outs);
    return success();
  }
};

struct PadLowering : OneCallLowering<PadOp> {
  using OneCallLowering::OneCallLowering;
  Value result(PadOp op) const override { return op.getOutput(); }
  void buildCall(PadOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    SmallVector<int64_t> pads = *constantInts(op.getPads());
    // No pads, in any mode, copy x as it is (torch writes such a Pad before
    // an AveragePool): a copy, which culib-alias-reshapes can make a view.
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
      culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getData(), out);
      return;
    }
    double value = 0;
    if (!isAbsent(op.getConstantValue())) {
      Attribute attr = getConstantValue(op.getConstantValue());
      if (auto f = dyn_cast<DenseFPElementsAttr>(attr))
        value = (*f.getValues<APFloat>().begin()).convertToDouble();
      else if (auto i = dyn_cast<DenseIntElementsAttr>(attr))
        value = (*i.getValues<APInt>().begin()).getSExtValue();
    }
    culib::PadOp::create(
        rewriter, op.getLoc(), adaptor.getData(), out,
        rewriter.getStringAttr(strAttrOr(op, "mode", "constant")),
        rewriter.getDenseI64ArrayAttr(pads), rewriter.getF64FloatAttr(value));
  }
};

struct ResizeLowering : OpConversionPattern<ResizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ResizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> in = shapeOf(op.getX()), out = shapeOf(op.getY());
    SmallVector<double> scales;
    if (auto given = constantFloats(op.getScales()); given && !given->empty())
      scales = *given;
    else
      for (size_t i = 0; i < in.size(); ++i)
        scales.push_back(in[i] ? double(out[i]) / double(in[i]) : 1.0);
    ArrayAttr roi;
    if (auto values = constantFloats(op.getRoi()); values && !values->empty())
      roi = rewriter.getF64ArrayAttr(*values);
    Value buffer =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    culib::ResizeOp::create(
        rewriter, op.getLoc(), adaptor.getX(), buffer,
        rewriter.getStringAttr(strAttrOr(op, "mode", "nearest")),
        rewriter.getStringAttr(
            strAttrOr(op, "coordinate_transformation_mode", "half_pixel")),
        rewriter.getStringAttr(
            strAttrOr(op, "nearest_mode", "round_prefer_floor")),
        rewriter.getF32FloatAttr(floatAttrOr(op, "cubic_coeff_a", -0.75f)),
        rewriter.getI64IntegerAttr(intAttrOr(op, "exclude_outside", 0)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "extrapolation_value", 0.0f)),
        rewriter.getF64ArrayAttr(scales), roi);
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

/// DepthToSpace / SpaceToDepth: reshape, transpose, reshape.
template <typename OpTy>
struct BlockRearrangeLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> x = shapeOf(op->getOperand(0));
    int64_t b = op.getBlocksize();
    int64_t n = x[0], c = x[1], h = x[2], w = x[3];
    SmallVector<int64_t> split, perm;
    if constexpr (std::is_same_v<OpTy, DepthToSpaceOp>) {
      if (strAttrOr(op, "mode", "DCR") == "DCR") {
        split = {n, b, b, c / (b * b), h, w};
        perm = {0, 3, 4, 1, 5, 2};
      } else {
        split = {n, c / (b * b), b, b, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      }
    } else {
      split = {n, c, h / b, b, w / b, b};
      perm = {0, 3, 5, 1, 2, 4};
    }
    Location loc = op.getLoc();
    Value grouped =
        reshapeBuffer(rewriter, loc, adaptor.getOperands()[0], split);
    SmallVector<int64_t> permuted;
    for (int64_t p : perm)
      permuted.push_back(split[p]);
    Type element = cast<MemRefType>(grouped.getType()).getElementType();
    Value moved = culib::AllocOp::create(
        rewriter, loc, MemRefType::get(permuted, element), IntegerAttr());
    culib::TransposeOp::create(rewriter, loc, grouped, moved,
                               rewriter.getDenseI64ArrayAttr(perm));
    Value out = reshapeBuffer(rewriter, loc, moved, shapeOf(op->getResult(0)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct GatherElementsLowering : OneCallLowering<GatherElementsOp> {
  using OneCallLowering::OneCallLowering;
  Value result(GatherElementsOp op) const override { return op.getOutput(); }
  void buildCall(GatherElementsOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getData()).size();
    culib::GatherElementsOp::create(rewriter, op.getLoc(), adaptor.getData(),
                                    adaptor.getIndices(), out,
                                    rewriter.getI64IntegerAttr(normalizeAxis(
                                        op.getAxis().value_or(0), rank)));
  }
};

struct TriluLowering : OneCallLowering<TriluOp> {
  using OneCallLowering::OneCallLowering;
  Value result(TriluOp op) const override { return op.getOutput(); }
  void buildCall(TriluOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t k = 0;
    if (auto given = constantInts(op.getK()))
      k = (*given)[0];
    culib::TriluOp::create(rewriter, op.getLoc(), adaptor.getInput(), out,
                           rewriter.getBoolAttr(intAttrOr(op, "upper", 1) != 0),
                           rewriter.getI64IntegerAttr(k));
  }
};

struct ScatterElementsLowering : OneCallLowering<ScatterElementsOp> {
  using OneCallLowering::OneCallLowering;
  Value result(ScatterElementsOp op) const override { return op.getOutput(); }
  void buildCall(ScatterElementsOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getData()).size();
    culib::ScatterElementsOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(),
        adaptor.getUpdates(), out,
        rewriter.getI64IntegerAttr(
            normalizeAxis(intAttrOr(op, "axis", 0), rank)),
        culib::ScatterReductionAttr::get(
            rewriter.getContext(), *scatterReductionOf(op))); // see the rule
  }
};

struct ScatterNDLowering : OneCallLowering<ScatterNDOp> {
  using OneCallLowering::OneCallLowering;
  Value result(ScatterNDOp op) const override { return op.getOutput(); }
  void buildCall(ScatterNDOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::ScatterNDOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(),
        adaptor.getUpdates(), out,
        culib::ScatterReductionAttr::get(
            rewriter.getContext(), *scatterReductionOf(op))); // see the rule
  }
};

struct GatherNDLowering : OneCallLowering<GatherNDOp> {
  using OneCallLowering::OneCallLowering;
  Value result(GatherNDOp op) const override { return op.getOutput(); }
  void buildCall(GatherNDOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::GatherNDOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(), out,
        rewriter.getI64IntegerAttr(intAttrOr(op, "batch_dims", 0)));
  }
};

} // namespace

void mp::populateDataMovementPatterns(const TypeConverter &tc,
                                      RewritePatternSet &patterns,
                                      LowerableOps &lowerable) {
  addLowering<InitializerLowering, InitializerOp>(tc, patterns, lowerable);
  addLowering<ConstantLowering, ConstantOp>(tc, patterns, lowerable);
  addLowering<ConstantOfShapeLowering, ConstantOfShapeOp>(tc, patterns,
                                                          lowerable);
  addRule<ConstantOfShapeOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto value = dyn_cast_or_null<DenseElementsAttr>(
        cast<ConstantOfShapeOp>(op).getValueAttr());
    if (cast<ConstantOfShapeOp>(op).getValueAttr() &&
        (!value || value.getNumElements() != 1))
      os << "'value' must be a one-element tensor";
  });
  addLowering<CopyLowering<FlattenOp>, FlattenOp>(tc, patterns, lowerable);
  addLowering<CopyLowering<ReshapeOp>, ReshapeOp>(tc, patterns, lowerable);
  addLowering<CopyLowering<SqueezeOp>, SqueezeOp>(tc, patterns, lowerable);
  addLowering<CopyLowering<UnsqueezeOp>, UnsqueezeOp>(tc, patterns, lowerable);
  addLowering<CopyLowering<IdentityOp>, IdentityOp>(tc, patterns, lowerable);
  addLowering<TransposeLowering, TransposeOp>(tc, patterns, lowerable);
  addLowering<ConcatLowering, ConcatOp>(tc, patterns, lowerable);
  using ExpandPattern = ShapeDrivenLowering<ExpandOp, culib::BroadcastOp>;
  using TilePattern = ShapeDrivenLowering<TileOp, culib::TileOp>;
  addLowering<ExpandPattern, ExpandOp>(tc, patterns, lowerable);
  addLowering<TilePattern, TileOp>(tc, patterns, lowerable);
  addLowering<BlockRearrangeLowering<DepthToSpaceOp>, DepthToSpaceOp>(
      tc, patterns, lowerable);
  addLowering<BlockRearrangeLowering<SpaceToDepthOp>, SpaceToDepthOp>(
      tc, patterns, lowerable);
  addRule<DepthToSpaceOp, SpaceToDepthOp>(
      lowerable, [](Operation *op, raw_ostream &os) {
        if (cast<ShapedType>(op->getOperand(0).getType()).getRank() != 4)
          os << "the input must be 4-D";
      });

  addLowering<SliceLowering, SliceOp>(tc, patterns, lowerable);
  addRule<SliceOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto slice = cast<SliceOp>(op);
    if (!constantInts(slice.getStarts()) ||
        (!isAbsent(slice.getAxes()) && !constantInts(slice.getAxes())) ||
        (!isAbsent(slice.getSteps()) && !constantInts(slice.getSteps())))
      os << "starts, axes and steps must be compile-time constants";
  });
  addLowering<SplitLowering, SplitOp>(tc, patterns, lowerable);
  addRule<SplitOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (llvm::any_of(cast<SplitOp>(op).getOutputs(), [](Value result) {
          return !cast<ShapedType>(result.getType()).hasStaticShape();
        }))
      os << "the split sizes must be known at compile time";
  });
  addLowering<PadLowering, PadOp>(tc, patterns, lowerable);
  addRule<PadOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto pad = cast<PadOp>(op);
    if (!constantInts(pad.getPads()))
      os << "pads must be a compile-time constant";
    else if (!isAbsent(pad.getConstantValue()) &&
             !getConstantValue(pad.getConstantValue()))
      os << "constant_value must be a compile-time constant";
  });
  addLowering<ResizeLowering, ResizeOp>(tc, patterns, lowerable);
  addRule<ResizeOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto resize = cast<ResizeOp>(op);
    if (!isAbsent(resize.getScales()) && !constantFloats(resize.getScales()))
      os << "scales must be a compile-time constant";
    if (strAttrOr(op, "coordinate_transformation_mode", "") ==
            "tf_crop_and_resize" &&
        !constantFloats(resize.getRoi()))
      os << "roi must be a compile-time constant";
  });
  addLowering<TriluLowering, TriluOp>(tc, patterns, lowerable);
  addRule<TriluOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto trilu = cast<TriluOp>(op);
    if (!isAbsent(trilu.getK()) && !constantInts(trilu.getK()))
      os << "k must be a compile-time constant";
  });

  addLowering<GatherLowering, GatherOp>(tc, patterns, lowerable);
  addRule<GatherOp>(lowerable, [](Operation *op, raw_ostream &os) {
    Type index = elementOf(cast<GatherOp>(op).getIndices());
    if (!index.isInteger(32) && !index.isInteger(64))
      os << "indices must be i32 or i64";
  });
  addLowering<GatherElementsLowering, GatherElementsOp>(tc, patterns,
                                                        lowerable);
  addLowering<GatherNDLowering, GatherNDOp>(tc, patterns, lowerable);
  addLowering<ScatterElementsLowering, ScatterElementsOp>(tc, patterns,
                                                          lowerable);
  addLowering<ScatterNDLowering, ScatterNDOp>(tc, patterns, lowerable);
  addRule<ScatterElementsOp, ScatterNDOp>(
      lowerable, [](Operation *op, raw_ostream &os) {
        if (!scatterReductionOf(op))
          os << "unknown reduction '" << strAttrOr(op, "reduction", "")
             << "' (none, add, mul, max, min)";
      });
}
