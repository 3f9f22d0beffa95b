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
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <map>
#include <set>

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


/// The accumulation type of `op` on data of `element` type: the type
/// mp-autocast recorded (`mp.accumulation_type`), else f32 for 16-bit and
/// f32 data (the tensor-core contract) and f64 for f64. The culib verifiers
/// reject a combination the library calls do not support.
Type computeTypeFor(Type element, Operation *op) {
  if (auto recorded = op->getAttrOfType<TypeAttr>("mp.accumulation_type"))
    return recorded.getValue();
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

/// Explicit begin/end pads of a window (mp::explicitWindowPads).
SmallVector<int64_t> windowPads(StringRef autoPad,
                                std::optional<ArrayRef<int64_t>> pads,
                                ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations) {
  return explicitWindowPads(autoPad, pads, in, out, kernel, strides,
                            dilations);
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
    std::string name = getNodeName(op);
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
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
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
        // Any other C that broadcasts to [M, N] (a scalar, [M, 1], [1, N]
        // with beta != 1): expanded first, then cuBLASLt's C operand.
        c = culib::AllocOp::create(
            rewriter, op.getLoc(),
            MemRefType::get(y.getShape(), y.getElementType()), IntegerAttr());
        culib::BroadcastOp::create(rewriter, op.getLoc(), adaptor.getC(), c);
      }
    }
    culib::MatmulOp::create(
        rewriter, op.getLoc(), adaptor.getA(), adaptor.getB(), c, bias, out,
        rewriter.getBoolAttr(op.getTransA().value_or(0) != 0),
        rewriter.getBoolAttr(op.getTransB().value_or(0) != 0),
        rewriter.getF32FloatAttr(alpha),
        rewriter.getF32FloatAttr(c ? beta : 0.0f),
        TypeAttr::get(computeTypeFor(y.getElementType(), op)),
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
        TypeAttr::get(computeTypeFor(elementOf(op.getY()), op)),
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
      culib::BatchNormInferenceOp::create(rewriter, op.getLoc(),
                                          adaptor.getX(), scale, bias, mean,
                                          var, buffers[0],
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
                                 rewriter.getStringAttr(fn), FloatAttr(),
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
    culib::ElementwiseOp::create(rewriter, op.getLoc(),
                                 ValueRange{adaptor.getInput(), lo, hi}, out,
                                 rewriter.getStringAttr("clip"), FloatAttr(),
                                 FloatAttr());
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
                            TypeAttr::get(computeTypeFor(x.getElementType(), op)),
                            rewriter.getBoolAttr(false));
    rewriter.replaceOp(op, out);
    return success();
  }
  std::string fn;
};

//===----------------------------------------------------------------------===//
// Attribute and constant-operand helpers for the patterns below
//===----------------------------------------------------------------------===//

float floatAttrOr(Operation *op, StringRef name, float fallback) {
  if (auto attr = op->getAttrOfType<FloatAttr>(name))
    return attr.getValueAsDouble();
  return fallback;
}

int64_t intAttrOr(Operation *op, StringRef name, int64_t fallback) {
  if (auto attr = op->getAttrOfType<IntegerAttr>(name))
    return attr.getInt();
  return fallback;
}

std::string strAttrOr(Operation *op, StringRef name, StringRef fallback) {
  if (auto attr = op->getAttrOfType<StringAttr>(name))
    return attr.str();
  return fallback.str();
}

/// The integer values of a compile-time constant operand.
std::optional<SmallVector<int64_t>> constantInts(Value v) {
  if (isAbsent(v))
    return std::nullopt;
  auto attr = dyn_cast_or_null<DenseIntElementsAttr>(getConstantValue(v));
  if (!attr)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &i : attr.getValues<APInt>())
    values.push_back(i.getSExtValue());
  return values;
}

/// The values of a compile-time constant floating-point operand.
std::optional<SmallVector<double>> constantFloats(Value v) {
  if (isAbsent(v))
    return std::nullopt;
  auto attr = dyn_cast_or_null<DenseFPElementsAttr>(getConstantValue(v));
  if (!attr)
    return std::nullopt;
  SmallVector<double> values;
  for (const APFloat &f : attr.getValues<APFloat>())
    values.push_back(f.convertToDouble());
  return values;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// A buffer with `v`'s data in `shape` (a copy: reshapes are copies).
Value reshapeBuffer(ConversionPatternRewriter &rewriter, Location loc, Value v,
                    ArrayRef<int64_t> shape) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getShape() == shape)
    return v;
  Value out = culib::AllocOp::create(
      rewriter, loc, MemRefType::get(shape, type.getElementType()),
      IntegerAttr());
  culib::CopyOp::create(rewriter, loc, v, out);
  return out;
}

//===----------------------------------------------------------------------===//
// More elementwise ops
//===----------------------------------------------------------------------===//

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
      beta = rewriter.getF32FloatAttr(
          floatAttrOr(op, betaName, betaDefault));
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
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                         op->getResult(0));
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
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    bool fmod = intAttrOr(op, "fmod", 0) != 0;
    culib::ElementwiseOp::create(rewriter, op.getLoc(), adaptor.getOperands(),
                                 out,
                                 rewriter.getStringAttr(fmod ? "fmod" : "mod"),
                                 FloatAttr(), FloatAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

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
    start = step > 0 ? std::clamp<int64_t>(start, 0, dim)
                     : std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    outStarts[axis] = start;
    outSteps[axis] = step;
  }
}

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<int64_t> starts, steps;
    sliceParams(shapeOf(op.getData()), *constantInts(op.getStarts()),
                constantInts(op.getAxes()), constantInts(op.getSteps()),
                starts, steps);
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::SliceOp::create(rewriter, op.getLoc(), adaptor.getData(), out,
                           rewriter.getDenseI64ArrayAttr(starts),
                           rewriter.getDenseI64ArrayAttr(steps));
    rewriter.replaceOp(op, out);
    return success();
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

struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<int64_t> pads = *constantInts(op.getPads());
    double value = 0;
    if (!isAbsent(op.getConstantValue())) {
      Attribute attr = getConstantValue(op.getConstantValue());
      if (auto f = dyn_cast<DenseFPElementsAttr>(attr))
        value = (*f.getValues<APFloat>().begin()).convertToDouble();
      else if (auto i = dyn_cast<DenseIntElementsAttr>(attr))
        value = (*i.getValues<APInt>().begin()).getSExtValue();
    }
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::PadOp::create(
        rewriter, op.getLoc(), adaptor.getData(), out,
        rewriter.getStringAttr(strAttrOr(op, "mode", "constant")),
        rewriter.getDenseI64ArrayAttr(pads), rewriter.getF64FloatAttr(value));
    rewriter.replaceOp(op, out);
    return success();
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
    Value grouped = reshapeBuffer(rewriter, loc, adaptor.getOperands()[0], split);
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

struct GatherElementsLowering : OpConversionPattern<GatherElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getData()).size();
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::GatherElementsOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(), out,
        rewriter.getI64IntegerAttr(
            normalizeAxis(op.getAxis().value_or(0), rank)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// More library calls and NN kernels
//===----------------------------------------------------------------------===//

struct ConvTransposeLowering : OpConversionPattern<ConvTransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvTransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> x = shapeOf(op.getX()), w = shapeOf(op.getW()),
                      y = shapeOf(op.getY());
    size_t spatial = x.size() - 2;
    SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
    SmallVector<int64_t> dilations = orOnes(op.getDilations(), spatial);
    SmallVector<int64_t> outputPadding(spatial, 0);
    if (auto given = op.getOutputPadding())
      outputPadding.assign(given->begin(), given->end());
    // The total padding follows from the sizes; auto_pad / pads say how it
    // splits (ONNX ConvTranspose).
    SmallVector<int64_t> pads(2 * spatial, 0);
    std::string autoPad = op.getAutoPad().value_or("NOTSET").str();
    for (size_t i = 0; i < spatial; ++i) {
      int64_t full = strides[i] * (x[i + 2] - 1) + outputPadding[i] +
                     (w[i + 2] - 1) * dilations[i] + 1;
      int64_t total = full - y[i + 2];
      if (op.getPads() && autoPad == "NOTSET") {
        pads[i] = (*op.getPads())[i];
        pads[i + spatial] = (*op.getPads())[i + spatial];
      } else if (autoPad == "SAME_UPPER") {
        pads[i] = total / 2;
        pads[i + spatial] = total - total / 2;
      } else if (autoPad == "SAME_LOWER") {
        pads[i] = total - total / 2;
        pads[i + spatial] = total / 2;
      } else {
        // output_shape given: ONNX splits the total padding with the larger
        // half at the start (floor division, as its reference does).
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pads[i] = total - half;
        pads[i + spatial] = half;
      }
      // A negative end pad means output positions no input reaches: they are
      // the kernel's output padding (y's size already includes them).
      pads[i + spatial] = std::max<int64_t>(pads[i + spatial], 0);
    }
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    Value bias = isAbsent(adaptor.getB()) ? Value() : adaptor.getB();
    culib::ConvBwdDataOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), bias, out,
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getI64IntegerAttr(op.getGroup().value_or(1)),
        TypeAttr::get(computeTypeFor(elementOf(op.getY()), op)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct LRNLowering : OpConversionPattern<LRNOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LRNOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    culib::LRNOp::create(
        rewriter, op.getLoc(), adaptor.getX(), out,
        rewriter.getI64IntegerAttr(intAttrOr(op, "size", 1)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "alpha", 1e-4f)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "beta", 0.75f)),
        rewriter.getF32FloatAttr(floatAttrOr(op, "bias", 1.0f)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// LSTM, GRU, RNN -> one cudnn.rnn call.
template <typename OpTy>
struct RecurrentLowering : OpConversionPattern<OpTy> {
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
      results.push_back(i > 0 && result.use_empty()
                            ? Value()
                            : allocFor(rewriter, *getTypeConverter(),
                                       op.getLoc(), result));
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

struct InstanceNormLowering : OpConversionPattern<InstanceNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(InstanceNormalizationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::InstanceNormOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), adaptor.getScale(),
        adaptor.getB(), out,
        rewriter.getF32FloatAttr(floatAttrOr(op, "epsilon", 1e-5f)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

IntegerAttr ignoreIndexOf(Operation *op, OpBuilder &b) {
  if (auto attr = op->getAttrOfType<IntegerAttr>("ignore_index"))
    return b.getI64IntegerAttr(attr.getInt());
  return IntegerAttr();
}

struct NLLLossLowering : OpConversionPattern<NegativeLogLikelihoodLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NegativeLogLikelihoodLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getLoss());
    culib::NLLLossOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), adaptor.getTarget(),
        isAbsent(adaptor.getWeight()) ? Value() : adaptor.getWeight(), out,
        rewriter.getStringAttr(strAttrOr(op, "reduction", "mean")),
        ignoreIndexOf(op, rewriter));
    rewriter.replaceOp(op, out);
    return success();
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
        rewriter.getStringAttr(strAttrOr(op, "reduction", "mean")),
        ignoreIndexOf(op, rewriter));
    rewriter.replaceOp(op, {loss, logProb});
    return success();
  }
};

struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    SmallVector<Value> buffers = allocResults(rewriter, *getTypeConverter(), op);
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

struct CumSumLowering : OpConversionPattern<CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CumSumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getX()).size();
    int64_t axis = normalizeAxis((*constantInts(op.getAxis()))[0], rank);
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getY());
    culib::CumSumOp::create(
        rewriter, op.getLoc(), adaptor.getX(), out,
        rewriter.getI64IntegerAttr(axis),
        rewriter.getBoolAttr(intAttrOr(op, "exclusive", 0) != 0),
        rewriter.getBoolAttr(intAttrOr(op, "reverse", 0) != 0));
    rewriter.replaceOp(op, out);
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

template <typename OpTy>
struct ArgReduceLowering : OpConversionPattern<OpTy> {
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

struct TriluLowering : OpConversionPattern<TriluOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TriluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t k = 0;
    if (auto given = constantInts(op.getK()))
      k = (*given)[0];
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::TriluOp::create(rewriter, op.getLoc(), adaptor.getInput(), out,
                           rewriter.getBoolAttr(intAttrOr(op, "upper", 1) != 0),
                           rewriter.getI64IntegerAttr(k));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ScatterElementsLowering : OpConversionPattern<ScatterElementsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterElementsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t rank = shapeOf(op.getData()).size();
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::ScatterElementsOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(),
        adaptor.getUpdates(), out,
        rewriter.getI64IntegerAttr(
            normalizeAxis(intAttrOr(op, "axis", 0), rank)),
        rewriter.getStringAttr(strAttrOr(op, "reduction", "none")));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct ScatterNDLowering : OpConversionPattern<ScatterNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::ScatterNDOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(),
        adaptor.getUpdates(), out,
        rewriter.getStringAttr(strAttrOr(op, "reduction", "none")));
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct GatherNDLowering : OpConversionPattern<GatherNDOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherNDOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out =
        allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getOutput());
    culib::GatherNDOp::create(
        rewriter, op.getLoc(), adaptor.getData(), adaptor.getIndices(), out,
        rewriter.getI64IntegerAttr(intAttrOr(op, "batch_dims", 0)));
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// LpPool / GlobalLpPool: (sum over the window of |x|^p)^(1/p), as
/// |x| -> ^p -> average pool counting padding (padding adds 0) -> * window
/// size -> ^(1/p). Computed in the data's type, f32 for 16-bit data.
template <typename OpTy>
struct LpPoolLowering : OpConversionPattern<OpTy> {
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
      return culib::AllocOp::create(rewriter, loc,
                                    MemRefType::get(shape, element),
                                    IntegerAttr());
    };
    auto apply = [&](StringRef fn, ValueRange inputs, Value out) {
      culib::ElementwiseOp::create(rewriter, loc, inputs, out,
                                   rewriter.getStringAttr(fn), FloatAttr(),
                                   FloatAttr());
    };
    Value magnitude = buffer(x.getShape());
    apply("abs", {adaptor.getX()}, magnitude);
    Value powered = buffer(x.getShape());
    apply("pow", {magnitude, scalar("p", p)}, powered);
    Value mean = buffer(y.getShape());
    culib::PoolOp::create(rewriter, loc, powered, mean, Value(),
                          rewriter.getStringAttr("avg_include_pad"),
                          rewriter.getDenseI64ArrayAttr(kernel),
                          rewriter.getDenseI64ArrayAttr(pads),
                          rewriter.getDenseI64ArrayAttr(strides),
                          DenseI64ArrayAttr());
    Value sum = buffer(y.getShape());
    apply("mul", {mean, scalar("window", windowSize)}, sum);
    Value out = allocFor(rewriter, *this->getTypeConverter(), loc, op.getY());
    apply("pow", {sum, scalar("inverse_p", 1.0 / p)}, out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The terms of an Einsum equation without ellipses or repeated letters in
/// one operand ("bij,bjk->bik"); the output is spelled out (implicit output:
/// the letters used once, sorted). Nullopt for what the lowering does not
/// cover.
std::optional<SmallVector<std::string>> parseEinsum(StringRef equation,
                                                    size_t numInputs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq += c;
  if (StringRef(eq).contains("..."))
    return std::nullopt;
  StringRef lhs = eq, rhs;
  bool explicitOutput = StringRef(eq).contains("->");
  if (explicitOutput)
    std::tie(lhs, rhs) = StringRef(eq).split("->");
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  if (inputs.size() != numInputs || numInputs < 1 || numInputs > 2)
    return std::nullopt;
  SmallVector<std::string> terms;
  std::map<char, int> uses;
  for (StringRef term : inputs) {
    std::set<char> seen;
    for (char c : term) {
      if (!std::isalpha(static_cast<unsigned char>(c)) || !seen.insert(c).second)
        return std::nullopt;
      ++uses[c];
    }
    terms.push_back(term.str());
  }
  std::string out;
  if (explicitOutput) {
    std::set<char> seen;
    for (char c : rhs)
      if (!uses.count(c) || !seen.insert(c).second)
        return std::nullopt;
    out = rhs.str();
  } else {
    for (auto [c, n] : uses)
      if (n == 1)
        out += c;
  }
  terms.push_back(out);
  return terms;
}

/// Einsum of one or two operands as reductions, transposes and one batched
/// matmul: [batch, left, contracted] x [batch, contracted, right].
struct EinsumLowering : OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<std::string> terms =
        *parseEinsum(op.getEquation(), op.getInputs().size());
    std::string out = terms.back();
    Type element = elementOf(op.getOutput());
    std::map<char, int64_t> size;
    for (auto [term, input] : llvm::zip(terms, op.getInputs()))
      for (auto [i, c] : llvm::enumerate(term))
        size[c] = shapeOf(input)[i];

    // Letters an operand has that nothing else needs are summed first.
    SmallVector<Value> values(adaptor.getInputs().begin(),
                              adaptor.getInputs().end());
    SmallVector<std::string> names(terms.begin(), terms.end() - 1);
    for (size_t k = 0; k < values.size(); ++k) {
      std::string kept;
      SmallVector<int64_t> axes;
      for (auto [i, c] : llvm::enumerate(names[k])) {
        bool needed = out.find(c) != std::string::npos;
        for (size_t other = 0; other < names.size(); ++other)
          needed |= other != k && names[other].find(c) != std::string::npos;
        if (needed)
          kept += c;
        else
          axes.push_back(i);
      }
      if (axes.empty())
        continue;
      Value reduced = buffer(rewriter, loc, shapeFor(kept, size), element);
      culib::ReduceOp::create(rewriter, loc, values[k], reduced,
                              rewriter.getStringAttr("sum"),
                              rewriter.getDenseI64ArrayAttr(axes),
                              TypeAttr::get(computeTypeFor(element, op)),
                              rewriter.getBoolAttr(false));
      values[k] = reduced;
      names[k] = kept;
    }

    Value result;
    std::string resultNames;
    if (values.size() == 1) {
      result = values[0];
      resultNames = names[0];
    } else {
      std::string batch, left, right, contracted;
      for (char c : out) {
        bool inA = names[0].find(c) != std::string::npos;
        bool inB = names[1].find(c) != std::string::npos;
        (inA && inB ? batch : inA ? left : right) += c;
      }
      for (char c : names[0])
        if (out.find(c) == std::string::npos)
          contracted += c;
      auto extent = [&](const std::string &letters) {
        int64_t n = 1;
        for (char c : letters)
          n *= size[c];
        return n;
      };
      int64_t nb = extent(batch), nl = extent(left), nr = extent(right),
              nk = extent(contracted);
      Value a = reshapeBuffer(
          rewriter, loc,
          permute(rewriter, loc, values[0], names[0], batch + left + contracted,
                  size, element),
          {nb, nl, nk});
      Value b = reshapeBuffer(
          rewriter, loc,
          permute(rewriter, loc, values[1], names[1],
                  batch + contracted + right, size, element),
          {nb, nk, nr});
      Value product = buffer(rewriter, loc, {nb, nl, nr}, element);
      culib::MatmulOp::create(
          rewriter, loc, a, b, Value(), Value(), product,
          rewriter.getBoolAttr(false), rewriter.getBoolAttr(false),
          rewriter.getF32FloatAttr(1.0f), rewriter.getF32FloatAttr(0.0f),
          TypeAttr::get(computeTypeFor(element, op)),
          rewriter.getStringAttr("none"));
      resultNames = batch + left + right;
      result = reshapeBuffer(rewriter, loc, product,
                             shapeFor(resultNames, size));
    }
    Value permuted =
        permute(rewriter, loc, result, resultNames, out, size, element);
    // The result must be a buffer of its own, not an input (e.g. "ij->ij").
    if (!permuted.getDefiningOp<culib::AllocOp>()) {
      Value copy = allocFor(rewriter, *getTypeConverter(), loc, op.getOutput());
      culib::CopyOp::create(rewriter, loc, permuted, copy);
      permuted = copy;
    }
    rewriter.replaceOp(op, permuted);
    return success();
  }

private:
  static SmallVector<int64_t> shapeFor(StringRef letters,
                                       std::map<char, int64_t> &size) {
    SmallVector<int64_t> shape;
    for (char c : letters)
      shape.push_back(size[c]);
    return shape;
  }
  static Value buffer(ConversionPatternRewriter &rewriter, Location loc,
                      ArrayRef<int64_t> shape, Type element) {
    return culib::AllocOp::create(rewriter, loc,
                                  MemRefType::get(shape, element),
                                  IntegerAttr());
  }
  /// `v` (dims named by `from`) with its dims in the order of `to`.
  static Value permute(ConversionPatternRewriter &rewriter, Location loc,
                       Value v, StringRef from, StringRef to,
                       std::map<char, int64_t> &size, Type element) {
    if (from == to)
      return v;
    SmallVector<int64_t> perm;
    for (char c : to)
      perm.push_back(from.find(c));
    Value out = buffer(rewriter, loc, shapeFor(to, size), element);
    culib::TransposeOp::create(rewriter, loc, v, out,
                               rewriter.getDenseI64ArrayAttr(perm));
    return out;
  }
};

/// CastLike: a cast to the type of the second operand.
struct CastLikeLowering : OpConversionPattern<CastLikeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastLikeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    culib::CastOp::create(rewriter, op.getLoc(), adaptor.getOperands()[0], out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Training: globals as state buffers, backward calls, optimizer updates
//===----------------------------------------------------------------------===//

/// The culib.state buffer of each ml_program global a function uses, made
/// before the conversion (prepareStateBuffers).
using StateBuffers = llvm::DenseMap<StringAttr, Value>;

template <typename OpTy>
struct StatefulPattern : OpConversionPattern<OpTy> {
  StatefulPattern(const TypeConverter &tc, MLIRContext *ctx,
                  const StateBuffers &states)
      : OpConversionPattern<OpTy>(tc, ctx), states(states) {}
  Value state(FlatSymbolRefAttr symbol) const {
    return states.lookup(symbol.getAttr());
  }
  Value state(StringRef symbol) const {
    return states.lookup(StringAttr::get(this->getContext(), symbol));
  }
  const StateBuffers &states;
};

struct GlobalLoadLowering : StatefulPattern<ml_program::GlobalLoadOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(ml_program::GlobalLoadOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer = state(op.getGlobal().getLeafReference());
    if (!buffer)
      return rewriter.notifyMatchFailure(op, "no state buffer");
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct GlobalStoreLowering : StatefulPattern<ml_program::GlobalStoreOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(ml_program::GlobalStoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer = state(op.getGlobal().getLeafReference());
    if (!buffer)
      return rewriter.notifyMatchFailure(op, "no state buffer");
    culib::CopyOp::create(rewriter, op.getLoc(), adaptor.getValue(), buffer);
    rewriter.eraseOp(op);
    return success();
  }
};

struct ConvGradFilterLowering : OpConversionPattern<ConvGradFilterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvGradFilterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dw = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getDW());
    culib::ConvBwdFilterOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getDY(), dw,
        op.getPadsAttr(), op.getStridesAttr(), op.getDilationsAttr(),
        op.getGroupAttr(),
        TypeAttr::get(computeTypeFor(elementOf(op.getX()), op)));
    rewriter.replaceOp(op, dw);
    return success();
  }
};

struct PoolGradLowering : OpConversionPattern<PoolGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PoolGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value dx = allocFor(rewriter, *getTypeConverter(), op.getLoc(), op.getDX());
    culib::PoolBwdOp::create(rewriter, op.getLoc(), adaptor.getX(),
                             adaptor.getDY(), dx, op.getModeAttr(),
                             op.getWindowAttr(), op.getPadsAttr(),
                             op.getStridesAttr(), op.getDilationsAttr());
    rewriter.replaceOp(op, dx);
    return success();
  }
};

struct BatchNormGradLowering : OpConversionPattern<BatchNormGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> buffers = allocResults(rewriter, *getTypeConverter(), op);
    culib::BatchNormBwdOp::create(rewriter, op.getLoc(), adaptor.getX(),
                                  adaptor.getScale(), adaptor.getDY(),
                                  buffers[0], buffers[1], buffers[2],
                                  op.getEpsilonAttr());
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

template <typename OpTy, typename CallTy>
struct LossGradLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value out = allocFor(rewriter, *this->getTypeConverter(), op.getLoc(),
                         op->getResult(0));
    ValueRange operands = adaptor.getOperands();
    Value weights = isAbsent(operands[3]) ? Value() : operands[3];
    CallTy::create(rewriter, op.getLoc(), operands[0], operands[1],
                   operands[2], weights, out, op.getReductionAttr(),
                   op.getIgnoreIndexAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct LSTMGradLowering : OpConversionPattern<LSTMGradOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LSTMGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> outs;
    for (Value r : op->getResults())
      outs.push_back(isa<NoneType>(r.getType())
                         ? Value()
                         : allocFor(rewriter, *getTypeConverter(), op.getLoc(),
                                    r));
    auto opt = [](Value v) { return isAbsent(v) ? Value() : v; };
    culib::LSTMBwdOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), adaptor.getR(),
        opt(adaptor.getB()), opt(adaptor.getInitialH()),
        opt(adaptor.getInitialC()), opt(adaptor.getDY()),
        opt(adaptor.getDYH()), opt(adaptor.getDYC()), outs[0], outs[1],
        outs[2], outs[3], outs[4], outs[5], op.getDirectionAttr(),
        op.getHiddenSizeAttr());
    SmallVector<Value> replacements;
    for (auto [r, buffer] : llvm::zip(op->getResults(), outs))
      replacements.push_back(buffer ? buffer
                                    : Value(NoneOp::create(rewriter, op.getLoc())));
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

struct UnscaleCheckFiniteLowering : OpConversionPattern<UnscaleCheckFiniteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UnscaleCheckFiniteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> buffers = allocResults(rewriter, *getTypeConverter(), op);
    culib::UnscaleCheckFiniteOp::create(
        rewriter, op.getLoc(), adaptor.getScale(), adaptor.getGradients(),
        buffers[0], ArrayRef<Value>(buffers).drop_front());
    rewriter.replaceOp(op, buffers);
    return success();
  }
};

struct LossScaleUpdateLowering : StatefulPattern<LossScaleUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(LossScaleUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    culib::LossScaleUpdateOp::create(
        rewriter, op.getLoc(), adaptor.getFoundInf(), state(op.getScaleAttr()),
        state(op.getGrowthTrackerAttr()), op.getGrowthFactorAttr(),
        op.getBackoffFactorAttr(), op.getGrowthIntervalAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct SGDUpdateLowering : StatefulPattern<SGDUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(SGDUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value momentum = op.getMomentumBufferAttr()
                         ? state(op.getMomentumBufferAttr())
                         : Value();
    Value flag = isAbsent(adaptor.getFoundInf()) ? Value() : adaptor.getFoundInf();
    culib::SGDStepOp::create(rewriter, op.getLoc(), adaptor.getGrad(), flag,
                             state(op.getParamAttr()), momentum,
                             state(op.getStepAttr()), op.getLrAttr(),
                             op.getMomentumAttr(), op.getDampeningAttr(),
                             op.getWeightDecayAttr(), op.getNesterovAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct AdamUpdateLowering : StatefulPattern<AdamUpdateOp> {
  using StatefulPattern::StatefulPattern;
  LogicalResult
  matchAndRewrite(AdamUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value flag = isAbsent(adaptor.getFoundInf()) ? Value() : adaptor.getFoundInf();
    culib::AdamStepOp::create(
        rewriter, op.getLoc(), adaptor.getGrad(), flag,
        state(op.getParamAttr()), state(op.getExpAvgAttr()),
        state(op.getExpAvgSqAttr()), state(op.getStepAttr()), op.getLrAttr(),
        op.getBeta1Attr(), op.getBeta2Attr(), op.getEpsAttr(),
        op.getWeightDecayAttr(), op.getDecoupledWeightDecayAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

/// The globals `op` reads or writes, by symbol.
SmallVector<StringRef> globalsOf(Operation *op) {
  SmallVector<StringRef> names;
  if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
    names.push_back(load.getGlobal().getLeafReference());
  else if (auto store = dyn_cast<ml_program::GlobalStoreOp>(op))
    names.push_back(store.getGlobal().getLeafReference());
  else if (isa<SGDUpdateOp, AdamUpdateOp, LossScaleUpdateOp>(op))
    for (NamedAttribute attr : op->getAttrs())
      if (auto symbol = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
        names.push_back(symbol.getValue());
  return names;
}

/// A culib.state at the start of each function for every global it uses;
/// an error for a global that does not exist or has no tensor value.
LogicalResult prepareStateBuffers(ModuleOp module, StateBuffers &states) {
  bool failed = false;
  module.walk([&](func::FuncOp func) {
    if (func.isExternal())
      return;
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&func.getBody().front());
    func.walk([&](Operation *op) {
      for (StringRef name : globalsOf(op)) {
        StringAttr key = StringAttr::get(func.getContext(), name);
        if (states.count(key))
          continue;
        auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
            op, key);
        auto type = global ? dyn_cast<RankedTensorType>(global.getType())
                           : RankedTensorType();
        auto value = global ? dyn_cast_or_null<ElementsAttr>(global.getValueAttr())
                            : ElementsAttr();
        if (!type || !type.hasStaticShape() || !value) {
          op->emitError() << "cannot lower: global @" << name
                          << " must exist with a static tensor type and an "
                             "initial value";
          failed = true;
          continue;
        }
        auto state = culib::StateOp::create(
            b, global.getLoc(),
            MemRefType::get(type.getShape(), type.getElementType()), key,
            value);
        states[key] = state.getBuffer();
      }
    });
  });
  return failure(failed);
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

/// Element types the runtime has buffers of: ONNX's numeric types and bool.
bool isPlanElementType(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return llvm::is_contained({1u, 8u, 16u, 32u, 64u}, integer.getWidth()) &&
           !integer.isSigned();
  return type.isF16() || type.isBF16() || type.isF32() || type.isF64();
}

/// tensor<...> of static shape -> memref<...>; none stays none.
struct BufferTypeConverter : TypeConverter {
  BufferTypeConverter() {
    addConversion([](Type type) -> std::optional<Type> {
      if (isa<NoneType>(type))
        return type;
      return std::nullopt;
    });
    addConversion([](RankedTensorType type) -> std::optional<Type> {
      if (!type.hasStaticShape() || !isPlanElementType(type.getElementType()))
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
      if (c.getElementType() != y.getElementType())
        os << "C of type '" << c << "' does not have the type of Y";
    }
  } else if (auto matmul = dyn_cast<MatMulOp>(op)) {
    if (cast<ShapedType>(matmul.getA().getType()).getRank() < 2 ||
        cast<ShapedType>(matmul.getB().getType()).getRank() < 2)
      os << "1-D operands are not supported yet";
  } else if (auto bn = dyn_cast<BatchNormalizationOp>(op)) {
    // In inference the lowering widens 16-bit statistics; training updates
    // the running statistics in place, which must then be f32 already.
    if (bn.getTrainingMode().value_or(0))
      for (Value stat : {bn.getScale(), bn.getB(), bn.getInputMean(),
                         bn.getInputVar()})
        if (!elementOf(stat).isF32()) {
          os << "in training mode, scale, bias and statistics must be f32, "
                "got '"
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
  } else if (auto slice = dyn_cast<SliceOp>(op)) {
    if (!constantInts(slice.getStarts()) ||
        (!isAbsent(slice.getAxes()) && !constantInts(slice.getAxes())) ||
        (!isAbsent(slice.getSteps()) && !constantInts(slice.getSteps())))
      os << "starts, axes and steps must be compile-time constants";
  } else if (auto split = dyn_cast<SplitOp>(op)) {
    for (Value result : split.getOutputs())
      if (!cast<ShapedType>(result.getType()).hasStaticShape())
        os << "the split sizes must be known at compile time";
  } else if (auto pad = dyn_cast<PadOp>(op)) {
    if (!constantInts(pad.getPads()))
      os << "pads must be a compile-time constant";
    else if (!isAbsent(pad.getConstantValue()) &&
             !getConstantValue(pad.getConstantValue()))
      os << "constant_value must be a compile-time constant";
  } else if (auto resize = dyn_cast<ResizeOp>(op)) {
    if (!isAbsent(resize.getScales()) && !constantFloats(resize.getScales()))
      os << "scales must be a compile-time constant";
    if (strAttrOr(op, "coordinate_transformation_mode", "") ==
            "tf_crop_and_resize" &&
        !constantFloats(resize.getRoi()))
      os << "roi must be a compile-time constant";
  } else if (auto topk = dyn_cast<TopKOp>(op)) {
    (void)topk;
  } else if (auto cumsum = dyn_cast<CumSumOp>(op)) {
    if (!constantInts(cumsum.getAxis()))
      os << "axis must be a compile-time constant";
  } else if (auto dropout = dyn_cast<DropoutOp>(op)) {
    if (!isAbsent(dropout.getTrainingMode())) {
      auto mode = dyn_cast_or_null<DenseIntElementsAttr>(
          getConstantValue(dropout.getTrainingMode()));
      if (!mode || (*mode.getValues<APInt>().begin()).getBoolValue())
        os << "only inference (training_mode false) is supported";
    }
  } else if (isa<LSTMOp, GRUOp, RNNOp>(op)) {
    if (intAttrOr(op, "layout", 0) != 0)
      os << "only layout 0 is supported";
  } else if (isa<DepthToSpaceOp, SpaceToDepthOp>(op)) {
    if (cast<ShapedType>(op->getOperand(0).getType()).getRank() != 4)
      os << "the input must be 4-D";
  } else if (auto einsum = dyn_cast<EinsumOp>(op)) {
    if (!parseEinsum(einsum.getEquation(), einsum.getInputs().size()))
      os << "only equations of one or two operands without ellipses or "
            "repeated letters in one operand (diagonals) are supported";
    else if (!isa<FloatType>(elementOf(einsum.getOutput())))
      os << "only floating-point Einsum is supported (cuBLASLt)";
  } else if (auto trilu = dyn_cast<TriluOp>(op)) {
    if (!isAbsent(trilu.getK()) && !constantInts(trilu.getK()))
      os << "k must be a compile-time constant";
  } else if (isa<MaxPoolOp, AveragePoolOp, GlobalMaxPoolOp,
                 GlobalAveragePoolOp, LpPoolOp, GlobalLpPoolOp>(op)) {
    if (!isa<FloatType>(elementOf(op->getOperand(0))))
      os << "cuDNN pooling takes floating-point data only";
    else if (intAttrOr(op, "storage_order", 0) != 0)
      os << "only storage_order 0 (row-major indices) is supported";
  } else if (auto ln = dyn_cast<LayerNormalizationOp>(op)) {
    if (intAttrOr(op, "stash_type", 1) != 1)
      os << "only stash_type 1 (f32 statistics) is supported";
  }
  return why;
}

void populateLowerings(BufferTypeConverter &tc, RewritePatternSet &patterns,
                       llvm::StringSet<> &lowered, const StateBuffers &states) {
  MLIRContext *ctx = patterns.getContext();
  auto note = [&](auto tag) {
    using OpTy = typename decltype(tag)::type;
    lowered.insert(OpTy::getOperationName());
  };
  // Training.
  patterns.add<GlobalLoadLowering, GlobalStoreLowering,
               LossScaleUpdateLowering, SGDUpdateLowering, AdamUpdateLowering>(
      tc, ctx, states);
  for (StringRef name :
       {LossScaleUpdateOp::getOperationName(), SGDUpdateOp::getOperationName(),
        AdamUpdateOp::getOperationName()})
    lowered.insert(name);
  patterns.add<ConvGradFilterLowering, PoolGradLowering, BatchNormGradLowering,
               LossGradLowering<SoftmaxCrossEntropyGradOp,
                                culib::SoftmaxCrossEntropyGradOp>,
               LossGradLowering<NLLLossGradOp, culib::NLLLossGradOp>,
               LSTMGradLowering, UnscaleCheckFiniteLowering>(tc, ctx);
  for (StringRef name :
       {ConvGradFilterOp::getOperationName(), PoolGradOp::getOperationName(),
        BatchNormGradOp::getOperationName(),
        SoftmaxCrossEntropyGradOp::getOperationName(),
        NLLLossGradOp::getOperationName(), LSTMGradOp::getOperationName(),
        UnscaleCheckFiniteOp::getOperationName()})
    lowered.insert(name);
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
  MP_SIMPLE(IsInfLowering, IsInfOp)
  MP_SIMPLE(ModLowering, ModOp)
  MP_SIMPLE(SliceLowering, SliceOp)
  MP_SIMPLE(SplitLowering, SplitOp)
  MP_SIMPLE(PadLowering, PadOp)
  MP_SIMPLE(ResizeLowering, ResizeOp)
  MP_SIMPLE(DropoutLowering, DropoutOp)
  MP_SIMPLE(GatherElementsLowering, GatherElementsOp)
  MP_SIMPLE(ConvTransposeLowering, ConvTransposeOp)
  MP_SIMPLE(LRNLowering, LRNOp)
  MP_SIMPLE(LayerNormLowering, LayerNormalizationOp)
  MP_SIMPLE(InstanceNormLowering, InstanceNormalizationOp)
  MP_SIMPLE(NLLLossLowering, NegativeLogLikelihoodLossOp)
  MP_SIMPLE(SoftmaxCrossEntropyLowering, SoftmaxCrossEntropyLossOp)
  MP_SIMPLE(TopKLowering, TopKOp)
  MP_SIMPLE(CumSumLowering, CumSumOp)
  MP_SIMPLE(HardmaxLowering, HardmaxOp)
  MP_SIMPLE(CastLikeLowering, CastLikeOp)
  MP_SIMPLE(TriluLowering, TriluOp)
  MP_SIMPLE(EinsumLowering, EinsumOp)
  MP_SIMPLE(LpPoolLowering<LpPoolOp>, LpPoolOp)
  MP_SIMPLE(LpPoolLowering<GlobalLpPoolOp>, GlobalLpPoolOp)
  MP_SIMPLE(ScatterElementsLowering, ScatterElementsOp)
  MP_SIMPLE(ScatterNDLowering, ScatterNDOp)
  MP_SIMPLE(GatherNDLowering, GatherNDOp)
  using ExpandPattern = ShapeDrivenLowering<ExpandOp, culib::BroadcastOp>;
  using TilePattern = ShapeDrivenLowering<TileOp, culib::TileOp>;
  MP_SIMPLE(ExpandPattern, ExpandOp)
  MP_SIMPLE(TilePattern, TileOp)
  MP_SIMPLE(BlockRearrangeLowering<DepthToSpaceOp>, DepthToSpaceOp)
  MP_SIMPLE(BlockRearrangeLowering<SpaceToDepthOp>, SpaceToDepthOp)
#undef MP_SIMPLE

  patterns.add<RecurrentLowering<LSTMOp>>(tc, ctx, "lstm");
  patterns.add<RecurrentLowering<GRUOp>>(tc, ctx, "gru");
  patterns.add<RecurrentLowering<RNNOp>>(tc, ctx, "rnn");
  patterns.add<ArgReduceLowering<ArgMaxOp>>(tc, ctx, "argmax");
  patterns.add<ArgReduceLowering<ArgMinOp>>(tc, ctx, "argmin");
  for (StringRef name :
       {LSTMOp::getOperationName(), GRUOp::getOperationName(),
        RNNOp::getOperationName(), ArgMaxOp::getOperationName(),
        ArgMinOp::getOperationName()})
    lowered.insert(name);

#define MP_PARAM(OpTy, fn, ...)                                                \
  patterns.add<ParamElementwiseLowering<OpTy>>(tc, ctx, fn, __VA_ARGS__);      \
  note(llvm::type_identity<OpTy>{});
  MP_PARAM(LeakyReluOp, "leaky_relu", "alpha", 0.01f)
  MP_PARAM(EluOp, "elu", "alpha", 1.0f)
  MP_PARAM(CeluOp, "celu", "alpha", 1.0f)
  MP_PARAM(SeluOp, "selu", "alpha", 1.67326319217681884765625f, "gamma",
           1.05070102214813232421875f)
  MP_PARAM(HardSigmoidOp, "hard_sigmoid", "alpha", 0.2f, "beta", 0.5f)
  MP_PARAM(ThresholdedReluOp, "thresholded_relu", "alpha", 1.0f)
  MP_PARAM(ShrinkOp, "shrink", "lambd", 0.5f, "bias", 0.0f)
#undef MP_PARAM

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
    StateBuffers states;
    populateLowerings(typeConverter, patterns, lowered, states);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
        patterns, typeConverter);
    populateReturnOpTypeConversionPattern(patterns, typeConverter);

    // Say exactly what cannot be lowered before converting anything.
    bool unsupported = false;
    // Subgraphs of ops that cannot be lowered are not reported again.
    module.walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
      if (!isa_and_nonnull<MPDialect>(op->getDialect()) || isa<NoneOp>(op))
        return WalkResult::advance();
      std::string node = getNodeName(op);
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
        return WalkResult::skip();
      }
      if (!lowered.contains(op->getName().getStringRef())) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": no culib lowering yet";
        unsupported = true;
        return WalkResult::skip();
      }
      if (std::string why = whyNotLowerable(op); !why.empty()) {
        op->emitError() << "cannot lower " << op->getName() << " at " << where
                        << ": " << why;
        unsupported = true;
        return WalkResult::skip();
      }
      for (Type type : op->getResultTypes()) {
        if (isa<NoneType>(type))
          continue;
        auto tensor = dyn_cast<RankedTensorType>(type);
        if (!tensor || !tensor.hasStaticShape()) {
          op->emitError() << "cannot lower " << op->getName() << " at "
                          << where << ": result type " << type
                          << " is not static (plans need static shapes)";
          unsupported = true;
          return WalkResult::skip();
        }
        if (!isPlanElementType(tensor.getElementType())) {
          op->emitError() << "cannot lower " << op->getName() << " at "
                          << where << ": element type "
                          << tensor.getElementType()
                          << " has no runtime buffers (numbers and bool only)";
          unsupported = true;
          return WalkResult::skip();
        }
      }
      return WalkResult::advance();
    });
    for (auto func : module.getOps<func::FuncOp>())
      for (Type type : func.getFunctionType().getInputs())
        if (!typeConverter.convertType(type)) {
          func.emitError() << "cannot lower @" << func.getName()
                           << ": argument type " << type
                           << " is not a static tensor of numbers or bool "
                              "(plans need static shapes)";
          unsupported = true;
        }
    if (unsupported)
      return signalPassFailure();
    if (failed(prepareStateBuffers(module, states)))
      return signalPassFailure();

    ConversionTarget target(*ctx);
    target.addIllegalDialect<ml_program::MLProgramDialect>();
    target.addLegalOp<ml_program::GlobalOp>();
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

    // Globals live on as culib.state buffers. A returned state buffer is
    // copied out at the end, so outputs are the values after the step's
    // updates and never alias state.
    for (auto global :
         llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
      global.erase();
    module.walk([&](func::ReturnOp ret) {
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        if (!operand.get().getDefiningOp<culib::StateOp>())
          continue;
        auto type = cast<MemRefType>(operand.get().getType());
        Value copy = culib::AllocOp::create(b, ret.getLoc(), type, IntegerAttr());
        culib::CopyOp::create(b, ret.getLoc(), operand.get(), copy);
        operand.set(copy);
      }
    });

    // Missing optional inputs have no buffer: their none values go.
    module.walk([](NoneOp op) {
      if (op->use_empty())
        op->erase();
    });
  }
};
} // namespace
