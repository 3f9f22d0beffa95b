//===- Elementwise.cpp - elementwise ops, casts, reductions ---------------===//
//
// Ops that become one culib.elementwise call (with the function's name and
// its ONNX parameters), casts, and reductions (Reduce*, ArgMax / ArgMin,
// TopK, CumSum).
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"
#include "mp/Runtime/ElementwiseFunctions.h"

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

using rt::cpu::ElementwiseFn;
using rt::cpu::ReduceFn;

/// Ops that map one-to-one onto a culib.elementwise function: the one given
/// (`fn`), or the one `fnOf` picks for the op (BitShift: by direction).
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  ElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx,
                      ElementwiseFn fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn) {}
  ElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx,
                      ElementwiseFn (*fnOf)(OpTy))
      : OpConversionPattern<OpTy>(tc, ctx), fnOf(fnOf) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), adaptor.getOperands(), out,
        culib::ElementwiseFnAttr::get(rewriter.getContext(),
                                      fnOf ? fnOf(op) : fn),
        FloatAttr(), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
  ElementwiseFn fn = ElementwiseFn::Identity;
  ElementwiseFn (*fnOf)(OpTy) = nullptr;
};

/// BitShift's function: its direction's.
ElementwiseFn bitShiftFn(BitShiftOp op) {
  return op.getDirection() == "LEFT" ? ElementwiseFn::BitShiftLeft
                                     : ElementwiseFn::BitShiftRight;
}

/// Gelu's function: exact (erf) or the tanh approximation.
ElementwiseFn geluFn(GeluOp op) {
  return op.getApproximate().value_or("none") == "tanh"
             ? ElementwiseFn::GeluTanh
             : ElementwiseFn::Gelu;
}

/// Gelu's gradient's function, for the same form.
ElementwiseFn geluGradFn(GeluGradOp op) {
  return op.getApproximate().value_or("none") == "tanh"
             ? ElementwiseFn::GeluTanhGrad
             : ElementwiseFn::GeluGrad;
}

struct ClipLowering : OpConversionPattern<ClipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClipOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = elementOf(op.getOutput());
    // Missing bounds are the type's infinities, or its extremes (integers).
    auto bound = [&](Value given, bool upper) -> Value {
      if (!isAbsent(given))
        return given;
      auto scalar = RankedTensorType::get({}, element);
      DenseElementsAttr value;
      if (auto floatType = dyn_cast<FloatType>(element)) {
        value = DenseElementsAttr::get(
            scalar, APFloat::getInf(floatType.getFloatSemantics(), !upper));
      } else {
        auto integer = cast<IntegerType>(element); // see the rule
        unsigned bits = integer.getWidth();
        APInt extreme =
            integer.isUnsigned()
                ? (upper ? APInt::getMaxValue(bits) : APInt::getMinValue(bits))
                : (upper ? APInt::getSignedMaxValue(bits)
                         : APInt::getSignedMinValue(bits));
        value = DenseElementsAttr::get(scalar, extreme);
      }
      return culib::WeightOp::create(
          rewriter, op.getLoc(), MemRefType::get({}, element),
          rewriter.getStringAttr(upper ? "+inf" : "-inf"), value);
    };
    Value lo = bound(adaptor.getMin(), false);
    Value hi = bound(adaptor.getMax(), true);
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), ValueRange{adaptor.getInput(), lo, hi}, out,
        culib::ElementwiseFnAttr::get(rewriter.getContext(),
                                      ElementwiseFn::Clip),
        FloatAttr(), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct CastLowering : OneCallLowering<CastOp> {
  using OneCallLowering::OneCallLowering;
  Value result(CastOp op) const override { return op.getOutput(); }
  void buildCall(CastOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    auto call =
        culib::CastOp::create(rewriter, op.getLoc(), adaptor.getInput(), out);
    if (std::optional<int64_t> saturate = op.getSaturate();
        saturate && !*saturate)
      call.setSaturate(false);
    // round_mode only rounds to float8 e8m0 (plans with another mode are
    // format 1.10).
    if (std::optional<StringRef> mode = op.getRoundMode();
        mode && isa<Float8E8M0FNUType>(elementOf(op.getOutput())))
      call.setRoundMode(*mode);
  }
};

/// Reductions with `axes` as an attribute (ReduceMean, ...) and ReduceSum
/// (axes as a constant input).
template <typename OpTy> struct ReduceLowering : OpConversionPattern<OpTy> {
  ReduceLowering(const TypeConverter &tc, MLIRContext *ctx, ReduceFn fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn) {}
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
        culib::ReduceFnAttr::get(rewriter.getContext(), fn),
        rewriter.getDenseI64ArrayAttr(axes),
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
        rewriter.getBoolAttr(false));
    rewriter.replaceOp(op, out);
    return success();
  }
  ReduceFn fn;
};

/// Unary activations with ONNX float attributes as alpha (and beta).
template <typename OpTy>
struct ParamElementwiseLowering : OpConversionPattern<OpTy> {
  /// `fn`'s spelling and ONNX defaults come from ElementwiseFunctions.def;
  /// the op's attributes `alphaName` (and `betaName`) override them.
  ParamElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx,
                           ElementwiseFn fn, StringRef alphaName,
                           StringRef betaName = "")
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn), alphaName(alphaName.str()),
        betaName(betaName.str()),
        alphaDefault(static_cast<float>(rt::cpu::infoOf(fn).alpha)),
        betaDefault(static_cast<float>(rt::cpu::infoOf(fn).beta)) {}
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
        culib::ElementwiseFnAttr::get(rewriter.getContext(), fn),
        rewriter.getF32FloatAttr(floatAttrOr(op, alphaName, alphaDefault)),
        beta);
    rewriter.replaceOp(op, out);
    return success();
  }
  ElementwiseFn fn;
  std::string alphaName, betaName;
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
        culib::ElementwiseFnAttr::get(rewriter.getContext(),
                                      ElementwiseFn::IsInf),
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
    culib::ElementwiseOp::create(
        rewriter, op.getLoc(), adaptor.getOperands(), out,
        culib::ElementwiseFnAttr::get(rewriter.getContext(),
                                      fmod ? ElementwiseFn::Fmod
                                           : ElementwiseFn::Mod),
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
  ArgReduceLowering(const TypeConverter &tc, MLIRContext *ctx, ReduceFn fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn) {}
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
        culib::ReduceFnAttr::get(rewriter.getContext(), fn),
        rewriter.getDenseI64ArrayAttr({axis}),
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
        rewriter.getBoolAttr(op.getSelectLastIndex().value_or(0) != 0));
    rewriter.replaceOp(op, out);
    return success();
  }
  ReduceFn fn;
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
#define MP_ELEMENTWISE(OpTy, Fn)                                               \
  addLowering<ElementwiseLowering<OpTy>, OpTy>(tc, patterns, lowerable,        \
                                               ElementwiseFn::Fn);
  MP_ELEMENTWISE(AbsOp, Abs)
  MP_ELEMENTWISE(NegOp, Neg)
  MP_ELEMENTWISE(ExpOp, Exp)
  MP_ELEMENTWISE(LogOp, Log)
  MP_ELEMENTWISE(SqrtOp, Sqrt)
  MP_ELEMENTWISE(ReciprocalOp, Reciprocal)
  MP_ELEMENTWISE(ReluOp, Relu)
  MP_ELEMENTWISE(SigmoidOp, Sigmoid)
  MP_ELEMENTWISE(TanhOp, Tanh)
  MP_ELEMENTWISE(ErfOp, Erf)
  MP_ELEMENTWISE(FloorOp, Floor)
  MP_ELEMENTWISE(CeilOp, Ceil)
  MP_ELEMENTWISE(RoundOp, Round)
  MP_ELEMENTWISE(SignOp, Sign)
  MP_ELEMENTWISE(SinOp, Sin)
  MP_ELEMENTWISE(CosOp, Cos)
  MP_ELEMENTWISE(NotOp, Not)
  MP_ELEMENTWISE(AddOp, Add)
  MP_ELEMENTWISE(SubOp, Sub)
  MP_ELEMENTWISE(MulOp, Mul)
  MP_ELEMENTWISE(DivOp, Div)
  MP_ELEMENTWISE(PowOp, Pow)
  MP_ELEMENTWISE(PReluOp, PRelu)
  MP_ELEMENTWISE(EqualOp, Equal)
  MP_ELEMENTWISE(LessOp, Less)
  MP_ELEMENTWISE(GreaterOp, Greater)
  MP_ELEMENTWISE(LessOrEqualOp, LessEqual)
  MP_ELEMENTWISE(GreaterOrEqualOp, GreaterEqual)
  MP_ELEMENTWISE(AndOp, And)
  MP_ELEMENTWISE(OrOp, Or)
  MP_ELEMENTWISE(XorOp, Xor)
  MP_ELEMENTWISE(BitwiseAndOp, BitwiseAnd)
  MP_ELEMENTWISE(BitwiseOrOp, BitwiseOr)
  MP_ELEMENTWISE(BitwiseXorOp, BitwiseXor)
  MP_ELEMENTWISE(BitwiseNotOp, BitwiseNot)
  MP_ELEMENTWISE(WhereOp, Where)
  MP_ELEMENTWISE(TanOp, Tan)
  MP_ELEMENTWISE(AsinOp, Asin)
  MP_ELEMENTWISE(AcosOp, Acos)
  MP_ELEMENTWISE(AtanOp, Atan)
  MP_ELEMENTWISE(SinhOp, Sinh)
  MP_ELEMENTWISE(CoshOp, Cosh)
  MP_ELEMENTWISE(AsinhOp, Asinh)
  MP_ELEMENTWISE(AcoshOp, Acosh)
  MP_ELEMENTWISE(AtanhOp, Atanh)
  MP_ELEMENTWISE(SoftplusOp, Softplus)
  MP_ELEMENTWISE(SoftsignOp, Softsign)
  MP_ELEMENTWISE(HardSwishOp, HardSwish)
  MP_ELEMENTWISE(IsNaNOp, IsNan)
  MP_ELEMENTWISE(SumOp, Sum)
  MP_ELEMENTWISE(MeanOp, Mean)
  MP_ELEMENTWISE(MaxOp, Max)
  MP_ELEMENTWISE(MinOp, Min)
#undef MP_ELEMENTWISE

#define MP_PARAM(OpTy, Fn, ...)                                                \
  addLowering<ParamElementwiseLowering<OpTy>, OpTy>(                           \
      tc, patterns, lowerable, ElementwiseFn::Fn, __VA_ARGS__);
  // The ONNX attributes that set alpha and beta (their defaults:
  // ElementwiseFunctions.def).
  MP_PARAM(LeakyReluOp, LeakyRelu, "alpha")
  MP_PARAM(EluOp, Elu, "alpha")
  MP_PARAM(CeluOp, Celu, "alpha")
  MP_PARAM(SeluOp, Selu, "alpha", "gamma")
  MP_PARAM(HardSigmoidOp, HardSigmoid, "alpha", "beta")
  MP_PARAM(ThresholdedReluOp, ThresholdedRelu, "alpha")
  MP_PARAM(ShrinkOp, Shrink, "lambd", "bias")
#undef MP_PARAM

  addLowering<ClipLowering, ClipOp>(tc, patterns, lowerable);
  addRule<ClipOp>(lowerable, [](Operation *op, raw_ostream &os) {
    Type element = elementOf(cast<ClipOp>(op).getOutput());
    auto integer = dyn_cast<IntegerType>(element);
    if (!isa<FloatType>(element) && !(integer && integer.getWidth() > 1))
      os << "Clip takes float and integer tensors";
  });
  addLowering<ElementwiseLowering<BitShiftOp>, BitShiftOp>(
      tc, patterns, lowerable, &bitShiftFn);
  addRule<BitShiftOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto shift = cast<BitShiftOp>(op);
    auto integer = dyn_cast<IntegerType>(elementOf(shift.getC()));
    if (shift.getDirection() != "LEFT" && shift.getDirection() != "RIGHT")
      os << "direction must be \"LEFT\" or \"RIGHT\", not \""
         << shift.getDirection() << "\"";
    else if (!integer || !integer.isUnsigned())
      os << "BitShift takes unsigned integers";
  });
  addLowering<ElementwiseLowering<GeluOp>, GeluOp>(tc, patterns, lowerable,
                                                   &geluFn);
  addRule<GeluOp>(lowerable, [](Operation *op, raw_ostream &os) {
    StringRef approximate = cast<GeluOp>(op).getApproximate().value_or("none");
    if (approximate != "none" && approximate != "tanh")
      os << "approximate must be \"none\" or \"tanh\", not \"" << approximate
         << "\"";
  });
  addLowering<ElementwiseLowering<GeluGradOp>, GeluGradOp>(
      tc, patterns, lowerable, &geluGradFn);
  addRule<GeluGradOp>(lowerable, [](Operation *op, raw_ostream &os) {
    StringRef approximate =
        cast<GeluGradOp>(op).getApproximate().value_or("none");
    if (approximate != "none" && approximate != "tanh")
      os << "approximate must be \"none\" or \"tanh\", not \"" << approximate
         << "\"";
  });
  addLowering<IsInfLowering, IsInfOp>(tc, patterns, lowerable);
  addLowering<ModLowering, ModOp>(tc, patterns, lowerable);
  addLowering<CastLowering, CastOp>(tc, patterns, lowerable);
  addRule<CastOp>(lowerable, [](Operation *op, raw_ostream &os) {
    StringRef mode = cast<CastOp>(op).getRoundMode().value_or("up");
    if (mode != "up" && mode != "down" && mode != "nearest")
      os << "round_mode must be \"up\", \"down\" or \"nearest\", not \"" << mode
         << "\"";
  });
  addLowering<CastLikeLowering, CastLikeOp>(tc, patterns, lowerable);

#define MP_REDUCE(OpTy, Fn)                                                    \
  addLowering<ReduceLowering<OpTy>, OpTy>(tc, patterns, lowerable,             \
                                          ReduceFn::Fn);
  MP_REDUCE(ReduceSumOp, Sum)
  MP_REDUCE(ReduceMeanOp, Mean)
  MP_REDUCE(ReduceMaxOp, Max)
  MP_REDUCE(ReduceMinOp, Min)
  MP_REDUCE(ReduceProdOp, Prod)
  MP_REDUCE(ReduceL1Op, L1)
  MP_REDUCE(ReduceL2Op, L2)
  MP_REDUCE(ReduceLogSumOp, LogSum)
  MP_REDUCE(ReduceLogSumExpOp, LogSumExp)
  MP_REDUCE(ReduceSumSquareOp, SumSquare)
#undef MP_REDUCE
  addRule<ReduceSumOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto sum = cast<ReduceSumOp>(op);
    if (!isAbsent(sum.getAxes()) &&
        !isa_and_nonnull<DenseIntElementsAttr>(getConstantValue(sum.getAxes())))
      os << "axes must be a compile-time constant";
  });
  addLowering<ArgReduceLowering<ArgMaxOp>, ArgMaxOp>(tc, patterns, lowerable,
                                                     ReduceFn::ArgMax);
  addLowering<ArgReduceLowering<ArgMinOp>, ArgMinOp>(tc, patterns, lowerable,
                                                     ReduceFn::ArgMin);
  addLowering<TopKLowering, TopKOp>(tc, patterns, lowerable);
  addLowering<CumSumLowering, CumSumOp>(tc, patterns, lowerable);
  addRule<CumSumOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (!constantInts(cast<CumSumOp>(op).getAxis()))
      os << "axis must be a compile-time constant";
  });
}
