//===- ConvertMPToCuLib.cpp - mp tensor graph to culib calls on buffers ---===//
//
// Dialect conversion: every tensor becomes a static buffer (memref), every
// typed mp op writes its results into fresh `culib.alloc` buffers through
// the library call or kernel that computes it.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringSet.h"

namespace mp {
#define GEN_PASS_DEF_CONVERTMPTOCULIB
#include "mp/Passes/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The ONNX node name of an op (its NameLoc), for diagnostics and weights.
std::string nodeName(Operation *op) {
  std::string name;
  op->getLoc()->walk([&](Location loc) {
    if (auto named = dyn_cast<NameLoc>(loc)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

/// The accumulation type for data of `element` type: f32 for 16-bit and f32
/// data (the tensor-core contract), f64 for f64.
Type computeTypeFor(Type element) {
  return element.isF64() ? element : Float32Type::get(element.getContext());
}

Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

/// A new activation buffer for `result`.
Value allocFor(ConversionPatternRewriter &rewriter, const TypeConverter &tc,
               Location loc, Value result) {
  auto type = cast<MemRefType>(tc.convertType(result.getType()));
  return culib::AllocOp::create(rewriter, loc, type, IntegerAttr());
}

/// Allocations for every result of `op`, in order.
SmallVector<Value> allocResults(ConversionPatternRewriter &rewriter,
                                const TypeConverter &tc, Operation *op) {
  SmallVector<Value> buffers;
  for (Value result : op->getResults())
    buffers.push_back(allocFor(rewriter, tc, op->getLoc(), result));
  return buffers;
}

bool isAbsent(Value v) { return !v || isa<NoneType>(v.getType()); }

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Explicit begin/end pads for a conv or pool window, resolving auto_pad
/// from the (static) input and output sizes.
SmallVector<int64_t> windowPads(StringRef autoPad,
                                std::optional<ArrayRef<int64_t>> pads,
                                ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations) {
  size_t n = in.size();
  SmallVector<int64_t> result(2 * n, 0);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t needed = (out[i] - 1) * strides[i] +
                       (kernel[i] - 1) * dilations[i] + 1 - in[i];
      int64_t total = std::max<int64_t>(needed, 0);
      int64_t small = total / 2, large = total - small;
      result[i] = autoPad == "SAME_UPPER" ? small : large;
      result[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "VALID" && pads) {
    result.assign(pads->begin(), pads->end());
  }
  return result;
}

SmallVector<int64_t> orOnes(std::optional<ArrayRef<int64_t>> v, size_t n) {
  return v ? SmallVector<int64_t>(v->begin(), v->end())
           : SmallVector<int64_t>(n, 1);
}

//===----------------------------------------------------------------------===//
// Buffers: initializers, constants
//===----------------------------------------------------------------------===//

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
    std::string name = nodeName(op);
    rewriter.replaceOpWithNewOp<culib::WeightOp>(
        op, type, rewriter.getStringAttr(name.empty() ? "constant" : name),
        value);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Library calls
//===----------------------------------------------------------------------===//

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getX().getType());
    auto w = cast<ShapedType>(op.getW().getType());
    auto y = cast<ShapedType>(op.getY().getType());
    size_t spatial = x.getRank() - 2;
    SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
    SmallVector<int64_t> dilations = orOnes(op.getDilations(), spatial);
    SmallVector<int64_t> pads = windowPads(
        op.getAutoPad().value_or("NOTSET"), op.getPads(),
        x.getShape().drop_front(2), y.getShape().drop_front(2),
        w.getShape().drop_front(2), strides, dilations);
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    Value bias = isAbsent(adaptor.getB()) ? Value() : adaptor.getB();
    culib::ConvFwdOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), bias, out,
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getI64IntegerAttr(op.getGroup().value_or(1)),
        TypeAttr::get(computeTypeFor(x.getElementType())),
        rewriter.getStringAttr("nchw"), rewriter.getStringAttr("none"));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct GemmLowering : OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    float alpha = op.getAlpha() ? op.getAlpha()->convertToFloat() : 1.0f;
    float beta = op.getBeta() ? op.getBeta()->convertToFloat() : 1.0f;
    auto y = cast<ShapedType>(op.getY().getType());
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    Value c, bias;
    if (!isAbsent(adaptor.getC()) && beta != 0.0f) {
      auto cType = cast<ShapedType>(op.getC().getType());
      if (cType.getShape() == y.getShape()) {
        c = adaptor.getC();
      } else if (cType.getRank() == 1 && cType.getDimSize(0) == y.getDimSize(1) &&
                 beta == 1.0f && elementOf(op.getC()) == y.getElementType()) {
        bias = adaptor.getC();
      } else {
        return rewriter.notifyMatchFailure(op, "unsupported C");
      }
    }
    culib::MatmulOp::create(
        rewriter, op.getLoc(), adaptor.getA(), adaptor.getB(), c, bias, out,
        rewriter.getBoolAttr(op.getTransA().value_or(0) != 0),
        rewriter.getBoolAttr(op.getTransB().value_or(0) != 0),
        rewriter.getF32FloatAttr(alpha),
        rewriter.getF32FloatAttr(c ? beta : 0.0f),
        TypeAttr::get(computeTypeFor(y.getElementType())),
        rewriter.getStringAttr("none"));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    culib::MatmulOp::create(
        rewriter, op.getLoc(), adaptor.getA(), adaptor.getB(), Value(),
        Value(), out, rewriter.getBoolAttr(false), rewriter.getBoolAttr(false),
        rewriter.getF32FloatAttr(1.0f), rewriter.getF32FloatAttr(0.0f),
        TypeAttr::get(computeTypeFor(elementOf(op.getY()))),
        rewriter.getStringAttr("none"));
    rewriter.replaceOp(op, out);
    return success();
  }
};

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
    SmallVector<int64_t> pads = windowPads(
        op.getAutoPad().value_or("NOTSET"), op.getPads(),
        x.getShape().drop_front(2), y.getShape().drop_front(2), kernel,
        strides, dilations);
    SmallVector<Value> buffers =
        allocResults(rewriter, *this->getTypeConverter(), op);
    Value indices;
    if constexpr (std::is_same_v<PoolOpTy, MaxPoolOp>)
      if (!op.getIndices().use_empty())
        indices = buffers[1];
    culib::PoolOp::create(rewriter, op.getLoc(), adaptor.getX(), buffers[0],
                          indices, rewriter.getStringAttr(mode),
                          rewriter.getDenseI64ArrayAttr(kernel),
                          rewriter.getDenseI64ArrayAttr(pads),
                          rewriter.getDenseI64ArrayAttr(strides),
                          dilationsAttr);
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
    SmallVector<Value> buffers = allocResults(rewriter, *getTypeConverter(), op);
    if (op.getTrainingMode().value_or(0)) {
      float momentum =
          op.getMomentum() ? op.getMomentum()->convertToFloat() : 0.9f;
      culib::BatchNormTrainingOp::create(
          rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
          adaptor.getB(), adaptor.getInputMean(), adaptor.getInputVar(),
          buffers[0], buffers[1], buffers[2],
          rewriter.getF32FloatAttr(epsilon), rewriter.getF32FloatAttr(momentum));
    } else {
      culib::BatchNormInferenceOp::create(
          rewriter, op.getLoc(), adaptor.getX(), adaptor.getScale(),
          adaptor.getB(), adaptor.getInputMean(), adaptor.getInputVar(),
          buffers[0], rewriter.getF32FloatAttr(epsilon));
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

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

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
    culib::ElementwiseOp::create(rewriter, op.getLoc(),
                                 adaptor.getOperands(), out,
                                 rewriter.getStringAttr(fn), FloatAttr());
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
    culib::ElementwiseOp::create(rewriter, op.getLoc(),
                                 ValueRange{adaptor.getInput(), lo, hi}, out,
                                 rewriter.getStringAttr("clip"), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Reshape-like ops: the data are copied into a buffer of the new shape.
template <typename OpTy>
struct CopyLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getOperands()[0],
                          out);
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

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::CastOp::create(rewriter, op.getLoc(), adaptor.getInput(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = cast<ShapedType>(op.getData().getType()).getRank();
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::GatherOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(), out,
        rewriter.getI64IntegerAttr(normalizeAxis(op.getAxis().value_or(0), rank)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Reductions with `axes` as an attribute (ReduceMean, ...) and ReduceSum
/// (axes as a constant input).
template <typename OpTy>
struct ReduceLowering : OpConversionPattern<OpTy> {
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
    culib::ReduceOp::create(rewriter, op.getLoc(), adaptor.getData(), out,
                            rewriter.getStringAttr(fn),
                            rewriter.getDenseI64ArrayAttr(axes),
                            TypeAttr::get(computeTypeFor(x.getElementType())));
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn;
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// tensor<...> of static shape -> memref<...>; none stays none.
struct BufferTypeConverter : TypeConverter {
  BufferTypeConverter() {
    addConversion([](Type type) -> std::optional<Type> {
      if (isa<NoneType>(type))
        return type;
      return std::nullopt;
    });
    addConversion([](RankedTensorType type) -> std::optional<Type> {
      if (!type.hasStaticShape())
        return std::nullopt;
      return MemRefType::get(type.getShape(), type.getElementType());
    });
    addConversion([](MemRefType type) { return type; });
  }
};

/// Why a typed op with a lowering still cannot be lowered (its operands or
/// attributes are outside what the culib call supports), or "" if it can.
/// The pass checks every op with it before converting, so the patterns can
/// rely on these conditions.
std::string whyNotLowerable(Operation *op) {
  std::string why;
  llvm::raw_string_ostream os(why);
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    float beta = gemm.getBeta() ? gemm.getBeta()->convertToFloat() : 1.0f;
    if (!isAbsent(gemm.getC()) && beta != 0.0f) {
      auto c = cast<ShapedType>(gemm.getC().getType());
      auto y = cast<ShapedType>(gemm.getY().getType());
      bool full = c.getShape() == y.getShape();
      bool bias = c.getRank() == 1 && c.getDimSize(0) == y.getDimSize(1) &&
                  beta == 1.0f && c.getElementType() == y.getElementType();
      if (!full && !bias)
        os << "C of type '" << c << "' with beta = " << beta
           << " is neither a bias vector nor [M, N]";
    }
  } else if (auto matmul = dyn_cast<MatMulOp>(op)) {
    if (cast<ShapedType>(matmul.getA().getType()).getRank() < 2 ||
        cast<ShapedType>(matmul.getB().getType()).getRank() < 2)
      os << "1-D operands are not supported yet";
  } else if (auto bn = dyn_cast<BatchNormalizationOp>(op)) {
    for (Value stat : {bn.getScale(), bn.getB(), bn.getInputMean(),
                       bn.getInputVar()})
      if (!elementOf(stat).isF32()) {
        os << "scale, bias and statistics must be f32, got '"
           << stat.getType() << "'";
        break;
      }
  } else if (auto clip = dyn_cast<ClipOp>(op)) {
    if (!isa<FloatType>(elementOf(clip.getOutput())))
      os << "only floating-point Clip is supported";
  } else if (auto gather = dyn_cast<GatherOp>(op)) {
    Type index = elementOf(gather.getIndices());
    if (!index.isInteger(32) && !index.isInteger(64))
      os << "indices must be i32 or i64";
  } else if (auto sum = dyn_cast<ReduceSumOp>(op)) {
    if (!isAbsent(sum.getAxes()) &&
        !isa_and_nonnull<DenseIntElementsAttr>(getConstantValue(sum.getAxes())))
      os << "axes must be a compile-time constant";
  }
  return why;
}

void populateLowerings(BufferTypeConverter &tc, RewritePatternSet &patterns,
                       llvm::StringSet<> &lowered) {
  MLIRContext *ctx = patterns.getContext();
  auto note = [&](auto tag) {
    using OpTy = typename decltype(tag)::type;
    lowered.insert(OpTy::getOperationName());
  };
#define MP_SIMPLE(Pattern, OpTy)                                               \
  patterns.add<Pattern>(tc, ctx);                                              \
  note(llvm::type_identity<OpTy>{});
  MP_SIMPLE(InitializerLowering, InitializerOp)
  MP_SIMPLE(ConstantLowering, ConstantOp)
  MP_SIMPLE(ConvLowering, ConvOp)
  MP_SIMPLE(GemmLowering, GemmOp)
  MP_SIMPLE(MatMulLowering, MatMulOp)
  MP_SIMPLE(PoolLowering<MaxPoolOp>, MaxPoolOp)
  MP_SIMPLE(PoolLowering<AveragePoolOp>, AveragePoolOp)
  MP_SIMPLE(GlobalPoolLowering<GlobalAveragePoolOp>, GlobalAveragePoolOp)
  MP_SIMPLE(GlobalPoolLowering<GlobalMaxPoolOp>, GlobalMaxPoolOp)
  MP_SIMPLE(BatchNormLowering, BatchNormalizationOp)
  using SoftmaxPattern = SoftmaxLowering<SoftmaxOp, false>;
  using LogSoftmaxPattern = SoftmaxLowering<LogSoftmaxOp, true>;
  MP_SIMPLE(SoftmaxPattern, SoftmaxOp)
  MP_SIMPLE(LogSoftmaxPattern, LogSoftmaxOp)
  MP_SIMPLE(ClipLowering, ClipOp)
  MP_SIMPLE(TransposeLowering, TransposeOp)
  MP_SIMPLE(ConcatLowering, ConcatOp)
  MP_SIMPLE(CastLowering, CastOp)
  MP_SIMPLE(GatherLowering, GatherOp)
  MP_SIMPLE(CopyLowering<FlattenOp>, FlattenOp)
  MP_SIMPLE(CopyLowering<ReshapeOp>, ReshapeOp)
  MP_SIMPLE(CopyLowering<SqueezeOp>, SqueezeOp)
  MP_SIMPLE(CopyLowering<UnsqueezeOp>, UnsqueezeOp)
  MP_SIMPLE(CopyLowering<IdentityOp>, IdentityOp)
#undef MP_SIMPLE

#define MP_ELEMENTWISE(OpTy, fn)                                               \
  patterns.add<ElementwiseLowering<OpTy>>(tc, ctx, fn);                        \
  note(llvm::type_identity<OpTy>{});
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
#undef MP_ELEMENTWISE

#define MP_REDUCE(OpTy, fn)                                                    \
  patterns.add<ReduceLowering<OpTy>>(tc, ctx, fn);                             \
  note(llvm::type_identity<OpTy>{});
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
}

struct ConvertMPToCuLibPass
    : public mp::impl::ConvertMPToCuLibBase<ConvertMPToCuLibPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    BufferTypeConverter typeConverter;
    RewritePatternSet patterns(ctx);
    llvm::StringSet<> lowered;
    populateLowerings(typeConverter, patterns, lowered);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
        patterns, typeConverter);
    populateReturnOpTypeConversionPattern(patterns, typeConverter);

    // Say exactly what cannot be lowered before converting anything.
    bool unsupported = false;
    module.walk([&](Operation *op) {
      if (!isa<MPDialect>(op->getDialect()) || isa<NoneOp>(op))
        return;
      std::string node = nodeName(op);
      std::string where =
          node.empty() ? std::string("an unnamed node") : "node '" + node + "'";
      if (auto generic = dyn_cast<OnnxGenericOp>(op)) {
        op->emitError() << "cannot lower "
                        << (generic.getDomain().empty()
                                ? std::string()
                                : generic.getDomain().str() + "::")
                        << generic.getOpType() << " at " << where
                        << ": it has no typed op";
        unsupported = true;
        return;
      }
      if (!lowered.contains(op->getName().getStringRef())) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": no culib lowering yet";
        unsupported = true;
        return;
      }
      if (std::string why = whyNotLowerable(op); !why.empty()) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": " << why;
        unsupported = true;
        return;
      }
      for (Type type : op->getResultTypes()) {
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor || !tensor.hasStaticShape()) {
          op->emitError() << "cannot lower " << op->getName() << " at "
                          << where << ": result type " << type
                          << " is not static (plans need static shapes)";
          unsupported = true;
          return;
        }
      }
    });
    for (auto func : module.getOps<func::FuncOp>())
      for (Type type : func.getFunctionType().getInputs())
        if (!typeConverter.convertType(type)) {
          func.emitError() << "cannot lower @" << func.getName()
                           << ": argument type " << type
                           << " is not a static tensor (plans need static "
                              "shapes)";
          unsupported = true;
        }
    if (unsupported)
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addLegalDialect<culib::CuLibDialect>();
    target.addIllegalDialect<MPDialect>();
    target.addLegalOp<NoneOp>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return typeConverter.isSignatureLegal(op.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return typeConverter.isLegal(op); });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Missing optional inputs have no buffer: their none values go.
    module.walk([](NoneOp op) {
      if (op->use_empty())
        op->erase();
    });
  }
};
} // namespace
