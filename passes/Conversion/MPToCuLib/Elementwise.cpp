//===- Elementwise.cpp - elementwise ops, casts, reductions ---------------===//
//
// Ops that become one culib.elementwise call (with the function's name and
// its ONNX parameters), casts, and reductions (Reduce*, ArgMax / ArgMin,
// TopK, CumSum).
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

/// Ops that map one-to-one onto a culib.elementwise function.
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  ElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx, StringRef fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn.str()) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    culib::ElementwiseOp::create(rewriter, op.getLoc(), adaptor.getOperands(),
                                 out, rewriter.getStringAttr(fn), FloatAttr(),
                                 FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn;
};

struct ClipLowering : OpConversionPattern<ClipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = elementOf(op.getOutput());
    auto floatType = cast<FloatType>(element); // see whyNotLowerable
    // Missing bounds are the type's infinities.
    auto bound = [&](Value given, bool upper) -> Value {
      if (!isAbsent(given))
        return given;
      auto scalar = RankedTensorType::get({}, element);
      APFloat inf = APFloat::getInf(floatType.getFloatSemantics(), !upper);
      return culib::WeightOp::create(
          rewriter, op.getLoc(), MemRefType::get({}, element),
          rewriter.getStringAttr(upper ? "+inf" : "-inf"),
          DenseElementsAttr::get(scalar, inf));
    };
    Value lo = bound(adaptor.getMin(), false);
    Value hi = bound(adaptor.getMax(), true);
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), ValueRange{adaptor.getInput(), lo, hi}, out,
        rewriter.getStringAttr("clip"), FloatAttr(), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct CastLowering : OneCallLowering<CastOp> {
  using OneCallLowering::OneCallLowering;
  Value result(CastOp op) const override { return op.getOutput(); }
  void buildCall(CastOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::CastOp::create(rewriter, op.getLoc(), adaptor.getInput(), out);
  }
};

/// Reductions with `axes` as an attribute (ReduceMean, ...) and ReduceSum
/// (axes as a constant input).
template <typename OpTy> struct ReduceLowering : OpConversionPattern<OpTy> {
  ReduceLowering(const TypeConverter &tc, MLIRContext *ctx, StringRef fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn.str()) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getData().getType());
    int64_t rank = x.getRank();
    SmallVector<int64_t> axes;
    if constexpr (std::is_same_v<OpTy, ReduceSumOp>) {
      if (!isAbsent(op.getAxes())) {
        auto values = cast<DenseIntElementsAttr>(
            getConstantValue(op.getAxes())); // see whyNotLowerable
        for (const APInt &v : values.template getValues<APInt>())
          axes.push_back(v.getSExtValue());
      }
      if (axes.empty() && op.getNoopWithEmptyAxes().value_or(0)) {
        Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                             op.getReduced());
        culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getData(), out);
        rewriter.replaceOp(op, out);
        return success();
      }
    } else if (op.getAxes()) {
      axes.assign(op.getAxes()->begin(), op.getAxes()->end());
    }
    if (axes.empty())
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    for (int64_t &a : axes)
      a = normalizeAxis(a, rank);
    llvm::sort(axes);
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op.getReduced());
    culib::ReduceOp::create(
        rewriter, op.getLoc(), adaptor.getData(), out,
        rewriter.getStringAttr(fn), rewriter.getDenseI64ArrayAttr(axes),
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
        rewriter.getBoolAttr(false));
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn;
};

/// Unary activations with ONNX float attributes as alpha (and beta).
template <typename OpTy>
struct ParamElementwiseLowering : OpConversionPattern<OpTy> {
  ParamElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx,
                           StringRef fn, StringRef alphaName,
                           float alphaDefault, StringRef betaName = "",
                           float betaDefault = 0.0f)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn.str()),
        alphaName(alphaName.str()), betaName(betaName.str()),
        alphaDefault(alphaDefault), betaDefault(betaDefault) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    FloatAttr beta;
    if (!betaName.empty())
      beta = rewriter.getF32FloatAttr(floatAttrOr(op, betaName, betaDefault));
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), adaptor.getOperands(), out,
        rewriter.getStringAttr(fn),
        rewriter.getF32FloatAttr(floatAttrOr(op, alphaName, alphaDefault)),
        beta);
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn, alphaName, betaName;
  float alphaDefault, betaDefault;
};

struct IsInfLowering : OpConversionPattern<IsInfOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(IsInfOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op->getResult(0));
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), adaptor.getOperands(), out,
        rewriter.getStringAttr("is_inf"),
        rewriter.getF32FloatAttr(intAttrOr(op, "detect_negative", 1)),
        rewriter.getF32FloatAttr(intAttrOr(op, "detect_positive", 1)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ModLowering : OpConversionPattern<ModOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ModOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op->getResult(0));
    bool fmod = intAttrOr(op, "fmod", 0) != 0;
    culib::ElementwiseOp::create(rewriter, op.getLoc(), adaptor.getOperands(),
                                 out,
                                 rewriter.getStringAttr(fmod ? "fmod" : "mod"),
                                 FloatAttr(), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    SmallVector<Value> buffers =
        allocResults(rewriter, *getTypeConverter(), op);
    culib::TopKOp::create(
        rewriter, op.getLoc(), adaptor.getX(), buffers[0], buffers[1],
        rewriter.getI64IntegerAttr(
            normalizeAxis(op.getAxis().value_or(-1), rank)),
        rewriter.getBoolAttr(intAttrOr(op, "largest", 1) != 0),
        rewriter.getBoolAttr(intAttrOr(op, "sorted", 1) != 0));
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

struct CumSumLowering : OneCallLowering<CumSumOp> {
  using OneCallLowering::OneCallLowering;
  Value result(CumSumOp op) const override { return op.getY(); }
  void buildCall(CumSumOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    int64_t axis = normalizeAxis((*constantInts(op.getAxis()))[0], rank);
    culib::CumSumOp::create(
        rewriter, op.getLoc(), adaptor.getX(), out,
        rewriter.getI64IntegerAttr(axis),
        rewriter.getBoolAttr(intAttrOr(op, "exclusive", 0) != 0),
        rewriter.getBoolAttr(intAttrOr(op, "reverse", 0) != 0));
  }
};

template <typename OpTy> struct ArgReduceLowering : OpConversionPattern<OpTy> {
  ArgReduceLowering(const TypeConverter &tc, MLIRContext *ctx, StringRef fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn.str()) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getData().getType());
    int64_t axis = normalizeAxis(op.getAxis().value_or(0), x.getRank());
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op.getReduced());
    culib::ReduceOp::create(
        rewriter, op.getLoc(), adaptor.getData(), out,
        rewriter.getStringAttr(fn), rewriter.getDenseI64ArrayAttr({axis}),
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
        rewriter.getBoolAttr(op.getSelectLastIndex().value_or(0) != 0));
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn;
};

/// CastLike: a cast to the type of the second operand.
struct CastLikeLowering : OpConversionPattern<CastLikeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastLikeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op->getResult(0));
    culib::CastOp::create(rewriter, op.getLoc(), adaptor.getOperands()[0], out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mp::populateElementwisePatterns(const TypeConverter &tc,
                                     RewritePatternSet &patterns,
                                     LowerableOps &lowerable) {
#define MP_ELEMENTWISE(OpTy, fn)                                               \
  addLowering<ElementwiseLowering<OpTy>, OpTy>(tc, patterns, lowerable, fn);
  MP_ELEMENTWISE(AbsOp, "abs")
  MP_ELEMENTWISE(NegOp, "neg")
  MP_ELEMENTWISE(ExpOp, "exp")
  MP_ELEMENTWISE(LogOp, "log")
  MP_ELEMENTWISE(SqrtOp, "sqrt")
  MP_ELEMENTWISE(ReciprocalOp, "reciprocal")
  MP_ELEMENTWISE(ReluOp, "relu")
  MP_ELEMENTWISE(SigmoidOp, "sigmoid")
  MP_ELEMENTWISE(TanhOp, "tanh")
  MP_ELEMENTWISE(ErfOp, "erf")
  MP_ELEMENTWISE(FloorOp, "floor")
  MP_ELEMENTWISE(CeilOp, "ceil")
  MP_ELEMENTWISE(RoundOp, "round")
  MP_ELEMENTWISE(SignOp, "sign")
  MP_ELEMENTWISE(SinOp, "sin")
  MP_ELEMENTWISE(CosOp, "cos")
  MP_ELEMENTWISE(NotOp, "not")
  MP_ELEMENTWISE(AddOp, "add")
  MP_ELEMENTWISE(SubOp, "sub")
  MP_ELEMENTWISE(MulOp, "mul")
  MP_ELEMENTWISE(DivOp, "div")
  MP_ELEMENTWISE(PowOp, "pow")
  MP_ELEMENTWISE(PReluOp, "prelu")
  MP_ELEMENTWISE(EqualOp, "equal")
  MP_ELEMENTWISE(LessOp, "less")
  MP_ELEMENTWISE(GreaterOp, "greater")
  MP_ELEMENTWISE(LessOrEqualOp, "less_equal")
  MP_ELEMENTWISE(GreaterOrEqualOp, "greater_equal")
  MP_ELEMENTWISE(AndOp, "and")
  MP_ELEMENTWISE(OrOp, "or")
  MP_ELEMENTWISE(XorOp, "xor")
  MP_ELEMENTWISE(WhereOp, "where")
  MP_ELEMENTWISE(TanOp, "tan")
  MP_ELEMENTWISE(AsinOp, "asin")
  MP_ELEMENTWISE(AcosOp, "acos")
  MP_ELEMENTWISE(AtanOp, "atan")
  MP_ELEMENTWISE(SinhOp, "sinh")
  MP_ELEMENTWISE(CoshOp, "cosh")
  MP_ELEMENTWISE(AsinhOp, "asinh")
  MP_ELEMENTWISE(AcoshOp, "acosh")
  MP_ELEMENTWISE(AtanhOp, "atanh")
  MP_ELEMENTWISE(SoftplusOp, "softplus")
  MP_ELEMENTWISE(SoftsignOp, "softsign")
  MP_ELEMENTWISE(HardSwishOp, "hard_swish")
  MP_ELEMENTWISE(IsNaNOp, "is_nan")
  MP_ELEMENTWISE(SumOp, "sum")
  MP_ELEMENTWISE(MeanOp, "mean")
  MP_ELEMENTWISE(MaxOp, "max")
  MP_ELEMENTWISE(MinOp, "min")
#undef MP_ELEMENTWISE

#define MP_PARAM(OpTy, fn, ...)                                                \
  addLowering<ParamElementwiseLowering<OpTy>, OpTy>(tc, patterns, lowerable,   \
                                                    fn, __VA_ARGS__);
  MP_PARAM(LeakyReluOp, "leaky_relu", "alpha", 0.01f)
  MP_PARAM(EluOp, "elu", "alpha", 1.0f)
  MP_PARAM(CeluOp, "celu", "alpha", 1.0f)
  MP_PARAM(SeluOp, "selu", "alpha", 1.67326319217681884765625f, "gamma",
           1.05070102214813232421875f)
  MP_PARAM(HardSigmoidOp, "hard_sigmoid", "alpha", 0.2f, "beta", 0.5f)
  MP_PARAM(ThresholdedReluOp, "thresholded_relu", "alpha", 1.0f)
  MP_PARAM(ShrinkOp, "shrink", "lambd", 0.5f, "bias", 0.0f)
#undef MP_PARAM

  addLowering<ClipLowering, ClipOp>(tc, patterns, lowerable);
  addRule<ClipOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (!isa<FloatType>(elementOf(cast<ClipOp>(op).getOutput())))
      os << "only floating-point Clip is supported";
  });
  addLowering<IsInfLowering, IsInfOp>(tc, patterns, lowerable);
  addLowering<ModLowering, ModOp>(tc, patterns, lowerable);
  addLowering<CastLowering, CastOp>(tc, patterns, lowerable);
  addLowering<CastLikeLowering, CastLikeOp>(tc, patterns, lowerable);

#define MP_REDUCE(OpTy, fn)                                                    \
  addLowering<ReduceLowering<OpTy>, OpTy>(tc, patterns, lowerable, fn);
  MP_REDUCE(ReduceSumOp, "sum")
  MP_REDUCE(ReduceMeanOp, "mean")
  MP_REDUCE(ReduceMaxOp, "max")
  MP_REDUCE(ReduceMinOp, "min")
  MP_REDUCE(ReduceProdOp, "prod")
  MP_REDUCE(ReduceL1Op, "l1")
  MP_REDUCE(ReduceL2Op, "l2")
  MP_REDUCE(ReduceLogSumOp, "log_sum")
  MP_REDUCE(ReduceLogSumExpOp, "log_sum_exp")
  MP_REDUCE(ReduceSumSquareOp, "sum_square")
#undef MP_REDUCE
  addRule<ReduceSumOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto sum = cast<ReduceSumOp>(op);
    if (!isAbsent(sum.getAxes()) &&
        !isa_and_nonnull<DenseIntElementsAttr>(getConstantValue(sum.getAxes())))
      os << "axes must be a compile-time constant";
  });
  addLowering<ArgReduceLowering<ArgMaxOp>, ArgMaxOp>(tc, patterns, lowerable,
                                                     "argmax");
  addLowering<ArgReduceLowering<ArgMinOp>, ArgMinOp>(tc, patterns, lowerable,
                                                     "argmin");
  addLowering<TopKLowering, TopKOp>(tc, patterns, lowerable);
  addLowering<CumSumLowering, CumSumOp>(tc, patterns, lowerable);
  addRule<CumSumOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (!constantInts(cast<CumSumOp>(op).getAxis()))
      os << "axis must be a compile-time constant";
  });
}
