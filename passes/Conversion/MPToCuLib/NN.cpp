//===- NN.cpp - pooling, norms, softmax, RNNs, losses ---------------------===//
//
// The neural-network ops other than GEMMs and convolutions: pooling
// (max, average, global, Lp), batch / layer / instance normalisation, LRN,
// softmax and log-softmax, Hardmax, LSTM / GRU / RNN, the NLL and
// softmax-cross-entropy losses, and Dropout in inference.
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

/// MaxPool, AveragePool, LpPool is not lowered (no culib call).
template <typename PoolOpTy>
struct PoolLowering : OpConversionPattern<PoolOpTy> {
  using OpConversionPattern<PoolOpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<PoolOpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(PoolOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getX().getType());
    auto y = cast<ShapedType>(op.getY().getType());
    size_t spatial = x.getRank() - 2;
    SmallVector<int64_t> kernel(op.getKernelShape());
    SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
    SmallVector<int64_t> dilations(spatial, 1);
    std::string mode = "max";
    DenseI64ArrayAttr dilationsAttr;
    if constexpr (std::is_same_v<PoolOpTy, MaxPoolOp>) {
      dilations = orOnes(op.getDilations(), spatial);
      if (op.getDilations())
        dilationsAttr = rewriter.getDenseI64ArrayAttr(dilations);
    } else {
      mode = op.getCountIncludePad().value_or(0) ? "avg_include_pad" : "avg";
    }
    SmallVector<int64_t> pads =
        windowPads(op.getAutoPad().value_or("NOTSET"), op.getPads(),
                   x.getShape().drop_front(2), y.getShape().drop_front(2),
                   kernel, strides, dilations);
    SmallVector<Value> buffers =
        allocResults(rewriter, *this->getTypeConverter(), op);
    Value indices;
    if constexpr (std::is_same_v<PoolOpTy, MaxPoolOp>)
      if (!op.getIndices().use_empty())
        indices = buffers[1];
    culib::PoolOp::create(
        rewriter, op.getLoc(), adaptor.getX(), buffers[0], indices,
        rewriter.getStringAttr(mode), rewriter.getDenseI64ArrayAttr(kernel),
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides), dilationsAttr);
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

template <typename GlobalPoolOpTy>
struct GlobalPoolLowering : OpConversionPattern<GlobalPoolOpTy> {
  using OpConversionPattern<GlobalPoolOpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<GlobalPoolOpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(GlobalPoolOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getX().getType());
    size_t spatial = x.getRank() - 2;
    SmallVector<int64_t> window(x.getShape().drop_front(2));
    Value out =
        allocFor(rewriter, *this->getTypeConverter(), op.getLoc(), op.getY());
    bool isMax = std::is_same_v<GlobalPoolOpTy, GlobalMaxPoolOp>;
    culib::PoolOp::create(
        rewriter, op.getLoc(), adaptor.getX(), out, Value(),
        rewriter.getStringAttr(isMax ? "max" : "avg"),
        rewriter.getDenseI64ArrayAttr(window),
        rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(2 * spatial, 0)),
        rewriter.getDenseI64ArrayAttr(SmallVector<int64_t>(spatial, 1)),
        DenseI64ArrayAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct BatchNormLowering : OpConversionPattern<BatchNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    float epsilon = op.getEpsilon() ? op.getEpsilon()->convertToFloat() : 1e-5f;
    SmallVector<Value> buffers =
        allocResults(rewriter, *getTypeConverter(), op);
    if (op.getTrainingMode().value_or(0)) {
      float momentum =
          op.getMomentum() ? op.getMomentum()->convertToFloat() : 0.9f;
      auto training = culib::BatchNormTrainingOp::create(
          rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
          adaptor.getB(), adaptor.getInputMean(), adaptor.getInputVar(),
          buffers[0], buffers[1], buffers[2], rewriter.getF32FloatAttr(epsilon),
          rewriter.getF32FloatAttr(momentum));
      // mp-training's data-parallel steps: the global batch's statistics.
      if (op->hasAttr(MPDialect::kSyncRanksAttr))
        training.setSyncRanks(true);
    } else {
      // cuDNN takes scale, bias and statistics in f32 for 16-bit data: 16-bit
      // ones (ONNX allows them; onnxconverter-common writes them) are
      // widened first, which is exact.
      auto widened = [&](Value stat) -> Value {
        auto type = cast<MemRefType>(stat.getType());
        if (type.getElementType().isF32())
          return stat;
        Value f32 = culib::AllocOp::create(
            rewriter, op.getLoc(),
            MemRefType::get(type.getShape(), rewriter.getF32Type()),
            IntegerAttr());
        culib::CastOp::create(rewriter, op.getLoc(), stat, f32);
        return f32;
      };
      // In operand order (function arguments are evaluated in any order).
      Value scale = widened(adaptor.getScale());
      Value bias = widened(adaptor.getB());
      Value mean = widened(adaptor.getInputMean());
      Value var = widened(adaptor.getInputVar());
      culib::BatchNormInferenceOp::create(rewriter, op.getLoc(), adaptor.getX(),
                                          scale, bias, mean, var, buffers[0],
                                          rewriter.getF32FloatAttr(epsilon));
    }
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

template <typename SoftmaxOpTy, bool isLog>
struct SoftmaxLowering : OpConversionPattern<SoftmaxOpTy> {
  using OpConversionPattern<SoftmaxOpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<SoftmaxOpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(SoftmaxOpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = cast<ShapedType>(op.getInput().getType()).getRank();
    int64_t axis = normalizeAxis(op.getAxis().value_or(-1), rank);
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op.getOutput());
    culib::SoftmaxOp::create(rewriter, op.getLoc(), adaptor.getInput(), out,
                             rewriter.getI64IntegerAttr(axis),
                             rewriter.getBoolAttr(isLog));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct DropoutLowering : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Inference: the identity, and a mask of ones (see whyNotLowerable).
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getData(), out);
    SmallVector<Value> results{out};
    if (!op.getMask().use_empty()) {
      auto type = cast<RankedTensorType>(op.getMask().getType());
      results.push_back(culib::WeightOp::create(
          rewriter, op.getLoc(),
          MemRefType::get(type.getShape(), type.getElementType()),
          rewriter.getStringAttr(getNodeName(op) + ".mask"),
          DenseElementsAttr::get(type, true)));
    } else {
      results.push_back(Value());
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LRNLowering : OneCallLowering<LRNOp> {
  using OneCallLowering::OneCallLowering;
  Value result(LRNOp op) const override { return op.getY(); }
  void buildCall(LRNOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::LRNOp::create(
        rewriter, op.getLoc(), adaptor.getX(), out,
        rewriter.getI64IntegerAttr(intAttrOr(op, "size", 1)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "alpha", 1e-4f)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "beta", 0.75f)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "bias", 1.0f)));
  }
};

/// LSTM, GRU, RNN -> one cudnn.rnn call.
template <typename OpTy> struct RecurrentLowering : OpConversionPattern<OpTy> {
  RecurrentLowering(const TypeConverter &tc, MLIRContext *ctx, StringRef mode)
      : OpConversionPattern<OpTy>(tc, ctx), mode(mode.str()) {}
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto present = [](Value v) { return isAbsent(v) ? Value() : v; };
    SmallVector<Value> results;
    for (Value result : op->getResults())
      results.push_back(result.use_empty()
                            ? Value()
                            : allocFor(rewriter, *this->getTypeConverter(),
                                       op.getLoc(), result));
    std::string direction = strAttrOr(op, "direction", "forward");
    int64_t directions = direction == "bidirectional" ? 2 : 1;
    // Default activations per direction, as ONNX defines them.
    SmallVector<std::string> activations;
    if (auto given = op->template getAttrOfType<ArrayAttr>("activations")) {
      for (Attribute a : given)
        activations.push_back(cast<StringAttr>(a).str());
    } else {
      SmallVector<std::string> one =
          mode == "lstm"  ? SmallVector<std::string>{"Sigmoid", "Tanh", "Tanh"}
          : mode == "gru" ? SmallVector<std::string>{"Sigmoid", "Tanh"}
                          : SmallVector<std::string>{"Tanh"};
      for (int64_t d = 0; d < directions; ++d)
        activations.append(one.begin(), one.end());
    }
    auto floats = [&](StringRef name) -> ArrayAttr {
      if (auto given = op->template getAttrOfType<ArrayAttr>(name)) {
        SmallVector<float> values;
        for (Attribute a : given)
          values.push_back(cast<FloatAttr>(a).getValueAsDouble());
        return rewriter.getF32ArrayAttr(values);
      }
      return ArrayAttr();
    };
    FloatAttr clip;
    if (auto given = op->template getAttrOfType<FloatAttr>("clip"))
      clip = rewriter.getF32FloatAttr(given.getValueAsDouble());
    Value initialC, peepholes;
    if constexpr (std::is_same_v<OpTy, LSTMOp>) {
      initialC = present(adaptor.getInitialC());
      peepholes = present(adaptor.getP());
    }
    int64_t hidden = intAttrOr(op, "hidden_size", 0);
    if (hidden == 0)
      hidden = shapeOf(op.getR()).back();
    culib::RNNOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), adaptor.getR(),
        present(adaptor.getB()), present(adaptor.getSequenceLens()),
        present(adaptor.getInitialH()), initialC, peepholes, results[0],
        results[1], results.size() > 2 ? results[2] : Value(),
        rewriter.getStringAttr(mode), rewriter.getStringAttr(direction),
        rewriter.getI64IntegerAttr(hidden),
        rewriter.getStringAttr(llvm::join(activations, ",")),
        floats("activation_alpha"), floats("activation_beta"), clip,
        rewriter.getI64IntegerAttr(intAttrOr(op, "input_forget", 0)),
        rewriter.getI64IntegerAttr(intAttrOr(op, "linear_before_reset", 0)));
    // Unused results have no buffer; nothing reads them.
    SmallVector<Value> replacements;
    for (auto [i, r] : llvm::enumerate(results))
      replacements.push_back(r);
    rewriter.replaceOp(op, replacements);
    return success();
  }
  std::string mode;
};

struct LayerNormLowering : OpConversionPattern<LayerNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    SmallVector<Value> results;
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      results.push_back(
          i > 0 && result.use_empty()
              ? Value()
              : allocFor(rewriter, *getTypeConverter(), op.getLoc(), result));
    culib::LayerNormOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
        isAbsent(adaptor.getB()) ? Value() : adaptor.getB(), results[0],
        results[1], results[2],
        rewriter.getI64IntegerAttr(
            normalizeAxis(op.getAxis().value_or(-1), rank)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "epsilon", 1e-5f)));
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct RMSNormLowering : OneCallLowering<RMSNormalizationOp> {
  using OneCallLowering::OneCallLowering;
  Value result(RMSNormalizationOp op) const override { return op.getY(); }
  void buildCall(RMSNormalizationOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    culib::RMSNormOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(), out,
        rewriter.getI64IntegerAttr(
            normalizeAxis(op.getAxis().value_or(-1), rank)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "epsilon", 1e-5f)));
  }
};

struct GroupNormLowering : OneCallLowering<GroupNormalizationOp> {
  using OneCallLowering::OneCallLowering;
  Value result(GroupNormalizationOp op) const override { return op.getY(); }
  void buildCall(GroupNormalizationOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::GroupNormOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
        adaptor.getBias(), out, rewriter.getI64IntegerAttr(op.getNumGroups()),
        rewriter.getF32FloatAttr(floatAttrOr(op, "epsilon", 1e-5f)));
  }
};

struct InstanceNormLowering : OneCallLowering<InstanceNormalizationOp> {
  using OneCallLowering::OneCallLowering;
  Value result(InstanceNormalizationOp op) const override {
    return op.getOutput();
  }
  void buildCall(InstanceNormalizationOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::InstanceNormOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), adaptor.getScale(),
        adaptor.getB(), out,
        rewriter.getF32FloatAttr(floatAttrOr(op, "epsilon", 1e-5f)));
  }
};

IntegerAttr ignoreIndexOf(Operation *op, OpBuilder &b) {
  if (auto attr = op->getAttrOfType<IntegerAttr>("ignore_index"))
    return b.getI64IntegerAttr(attr.getInt());
  return IntegerAttr();
}

struct NLLLossLowering : OneCallLowering<NegativeLogLikelihoodLossOp> {
  using OneCallLowering::OneCallLowering;
  Value result(NegativeLogLikelihoodLossOp op) const override {
    return op.getLoss();
  }
  void buildCall(NegativeLogLikelihoodLossOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::NLLLossOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), adaptor.getTarget(),
        isAbsent(adaptor.getWeight()) ? Value() : adaptor.getWeight(), out,
        culib::LossReductionAttr::get(rewriter.getContext(),
                                      *lossReductionOf(op)), // see the rule
        ignoreIndexOf(op, rewriter));
  }
};

/// SoftmaxCrossEntropyLoss = log-softmax over the classes + NLL loss.
struct SoftmaxCrossEntropyLowering
    : OpConversionPattern<SoftmaxCrossEntropyLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftmaxCrossEntropyLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value logProb =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getLogProb());
    culib::SoftmaxOp::create(rewriter, op.getLoc(), adaptor.getScores(),
                             logProb, rewriter.getI64IntegerAttr(1),
                             rewriter.getBoolAttr(true));
    Value loss =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::NLLLossOp::create(
        rewriter, op.getLoc(), logProb, adaptor.getLabels(),
        isAbsent(adaptor.getWeights()) ? Value() : adaptor.getWeights(), loss,
        culib::LossReductionAttr::get(rewriter.getContext(),
                                      *lossReductionOf(op)), // see the rule
        ignoreIndexOf(op, rewriter));
    rewriter.replaceOp(op, {loss, logProb});
    return success();
  }
};

struct HardmaxLowering : OpConversionPattern<HardmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HardmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getInput()).size();
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::HardmaxOp::create(rewriter, op.getLoc(), adaptor.getInput(), out,
                             rewriter.getI64IntegerAttr(normalizeAxis(
                                 op.getAxis().value_or(-1), rank)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// LpPool / GlobalLpPool: (sum over the window of |x|^p)^(1/p), as
/// |x| -> ^p -> average pool counting padding (padding adds 0) -> * window
/// size -> ^(1/p). Computed in the data's type, f32 for 16-bit data.
template <typename OpTy> struct LpPoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto x = cast<ShapedType>(op.getX().getType());
    auto y = cast<ShapedType>(op.getY().getType());
    Type element = x.getElementType();
    size_t spatial = x.getRank() - 2;
    SmallVector<int64_t> kernel, strides, pads;
    if constexpr (std::is_same_v<OpTy, LpPoolOp>) {
      kernel.assign(op.getKernelShape().begin(), op.getKernelShape().end());
      strides = orOnes(op.getStrides(), spatial);
      pads = windowPads(op.getAutoPad().value_or("NOTSET"), op.getPads(),
                        x.getShape().drop_front(2), y.getShape().drop_front(2),
                        kernel, strides, SmallVector<int64_t>(spatial, 1));
    } else {
      kernel.assign(x.getShape().begin() + 2, x.getShape().end());
      strides.assign(spatial, 1);
      pads.assign(2 * spatial, 0);
    }
    double p = intAttrOr(op, "p", 2);
    int64_t windowSize = 1;
    for (int64_t k : kernel)
      windowSize *= k;
    auto scalar = [&](StringRef name, double value) -> Value {
      auto type = RankedTensorType::get({}, element);
      APFloat f(value);
      bool lost;
      f.convert(cast<FloatType>(element).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      return culib::WeightOp::create(
          rewriter, loc, MemRefType::get({}, element),
          rewriter.getStringAttr(getNodeName(op) + "." + name),
          DenseElementsAttr::get(type, f));
    };
    auto buffer = [&](ArrayRef<int64_t> shape) -> Value {
      return culib::AllocOp::create(
          rewriter, loc, MemRefType::get(shape, element), IntegerAttr());
    };
    auto apply = [&](rt::cpu::ElementwiseFn fn, ValueRange inputs, Value out) {
      culib::ElementwiseOp::create(rewriter, loc, inputs, out, fn, FloatAttr(),
                                   FloatAttr());
    };
    Value magnitude = buffer(x.getShape());
    apply(rt::cpu::ElementwiseFn::Abs, {adaptor.getX()}, magnitude);
    Value powered = buffer(x.getShape());
    apply(rt::cpu::ElementwiseFn::Pow, {magnitude, scalar("p", p)}, powered);
    Value mean = buffer(y.getShape());
    culib::PoolOp::create(rewriter, loc, powered, mean, Value(),
                          rewriter.getStringAttr("avg_include_pad"),
                          rewriter.getDenseI64ArrayAttr(kernel),
                          rewriter.getDenseI64ArrayAttr(pads),
                          rewriter.getDenseI64ArrayAttr(strides),
                          DenseI64ArrayAttr());
    Value sum = buffer(y.getShape());
    apply(rt::cpu::ElementwiseFn::Mul, {mean, scalar("window", windowSize)},
          sum);
    Value out = allocFor(rewriter, *this->getTypeConverter(), loc, op.getY());
    apply(rt::cpu::ElementwiseFn::Pow, {sum, scalar("inverse_p", 1.0 / p)},
          out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mp::populateNNPatterns(const TypeConverter &tc,
                            RewritePatternSet &patterns,
                            LowerableOps &lowerable) {
  addLowering<PoolLowering<MaxPoolOp>, MaxPoolOp>(tc, patterns, lowerable);
  addLowering<PoolLowering<AveragePoolOp>, AveragePoolOp>(tc, patterns,
                                                          lowerable);
  addLowering<GlobalPoolLowering<GlobalAveragePoolOp>, GlobalAveragePoolOp>(
      tc, patterns, lowerable);
  addLowering<GlobalPoolLowering<GlobalMaxPoolOp>, GlobalMaxPoolOp>(
      tc, patterns, lowerable);
  addLowering<LpPoolLowering<LpPoolOp>, LpPoolOp>(tc, patterns, lowerable);
  addLowering<LpPoolLowering<GlobalLpPoolOp>, GlobalLpPoolOp>(tc, patterns,
                                                              lowerable);
  addRule<MaxPoolOp, AveragePoolOp, GlobalMaxPoolOp, GlobalAveragePoolOp,
          LpPoolOp, GlobalLpPoolOp>(
      lowerable, [](Operation *op, raw_ostream &os) {
        if (!isa<FloatType>(elementOf(op->getOperand(0))))
          os << "cuDNN pooling takes floating-point data only";
        else if (intAttrOr(op, "storage_order", 0) != 0)
          os << "only storage_order 0 (row-major indices) is supported";
      });

  addLowering<BatchNormLowering, BatchNormalizationOp>(tc, patterns, lowerable);
  addRule<BatchNormalizationOp>(lowerable, [](Operation *op, raw_ostream &os) {
    // In inference the lowering widens 16-bit statistics; training updates
    // the running statistics in place, which must then be f32 already.
    auto bn = cast<BatchNormalizationOp>(op);
    if (bn.getTrainingMode().value_or(0))
      for (Value stat :
           {bn.getScale(), bn.getB(), bn.getInputMean(), bn.getInputVar()})
        if (!elementOf(stat).isF32()) {
          os << "in training mode, scale, bias and statistics must be f32, "
                "got '"
             << stat.getType() << "'";
          break;
        }
  });
  addLowering<LayerNormLowering, LayerNormalizationOp>(tc, patterns, lowerable);
  addRule<LayerNormalizationOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (intAttrOr(op, "stash_type", 1) != 1)
      os << "only stash_type 1 (f32 statistics) is supported";
  });
  addLowering<RMSNormLowering, RMSNormalizationOp>(tc, patterns, lowerable);
  addRule<RMSNormalizationOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto norm = cast<RMSNormalizationOp>(op);
    if (intAttrOr(op, "stash_type", 1) != 1)
      os << "only stash_type 1 (f32 statistics) is supported";
    else if (elementOf(norm.getY()) != elementOf(norm.getX()))
      os << "Y's element type must be X's (scale's is '"
         << elementOf(norm.getScale()) << "', X's '" << elementOf(norm.getX())
         << "')";
  });
  addLowering<GroupNormLowering, GroupNormalizationOp>(tc, patterns, lowerable);
  addRule<GroupNormalizationOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto norm = cast<GroupNormalizationOp>(op);
    ArrayRef<int64_t> x = shapeOf(norm.getX());
    int64_t groups = norm.getNumGroups();
    if (intAttrOr(op, "stash_type", 1) != 1)
      os << "only stash_type 1 (f32 statistics) is supported";
    else if (x.size() < 2)
      os << "X needs rank >= 2 ([N, C, ...])";
    else if (groups < 1 || x[1] % groups)
      os << "num_groups " << groups << " does not divide the " << x[1]
         << " channels";
    else if (shapeOf(norm.getScale()) != ArrayRef<int64_t>{x[1]} ||
             shapeOf(norm.getBias()) != ArrayRef<int64_t>{x[1]})
      os << "scale and bias must hold one value per channel ([" << x[1] << "])";
  });
  addLowering<InstanceNormLowering, InstanceNormalizationOp>(tc, patterns,
                                                             lowerable);
  addLowering<LRNLowering, LRNOp>(tc, patterns, lowerable);

  using SoftmaxPattern = SoftmaxLowering<SoftmaxOp, false>;
  using LogSoftmaxPattern = SoftmaxLowering<LogSoftmaxOp, true>;
  addLowering<SoftmaxPattern, SoftmaxOp>(tc, patterns, lowerable);
  addLowering<LogSoftmaxPattern, LogSoftmaxOp>(tc, patterns, lowerable);
  addLowering<HardmaxLowering, HardmaxOp>(tc, patterns, lowerable);

  addLowering<RecurrentLowering<LSTMOp>, LSTMOp>(tc, patterns, lowerable,
                                                 "lstm");
  addLowering<RecurrentLowering<GRUOp>, GRUOp>(tc, patterns, lowerable, "gru");
  addLowering<RecurrentLowering<RNNOp>, RNNOp>(tc, patterns, lowerable, "rnn");
  addRule<LSTMOp, GRUOp, RNNOp>(lowerable, [](Operation *op, raw_ostream &os) {
    if (intAttrOr(op, "layout", 0) != 0)
      os << "only layout 0 is supported";
  });

  addLowering<NLLLossLowering, NegativeLogLikelihoodLossOp>(tc, patterns,
                                                            lowerable);
  addLowering<SoftmaxCrossEntropyLowering, SoftmaxCrossEntropyLossOp>(
      tc, patterns, lowerable);
  addRule<NegativeLogLikelihoodLossOp, SoftmaxCrossEntropyLossOp>(
      lowerable, explainLossReduction);
  addLowering<DropoutLowering, DropoutOp>(tc, patterns, lowerable);
  addRule<DropoutOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto dropout = cast<DropoutOp>(op);
    if (!isAbsent(dropout.getTrainingMode())) {
      auto mode = dyn_cast_or_null<DenseIntElementsAttr>(
          getConstantValue(dropout.getTrainingMode()));
      if (!mode || (*mode.getValues<APInt>().begin()).getBoolValue())
        os << "only inference (training_mode false) is supported";
    }
  });
}
