//===- PatternUtils.cpp - helpers of the mp-to-culib patterns -------------===//
//
// Buffers, attributes and constant operands as the op-family patterns need
// them (declared in PopulatePatterns.h).
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

using namespace mlir;

namespace mp::mptoculib {

/// The accumulation type of `op` on data of `element` type: the type
/// mp-autocast recorded (`mp.accumulation_type`), else f32 for 16-bit and
/// f32 data (the tensor-core contract) and f64 for f64. The culib verifiers
/// reject a combination the library calls do not support.
Type computeTypeFor(Type element, Operation *op) {
  if (auto recorded = op->getAttrOfType<TypeAttr>("mp.accumulation_type"))
    return recorded.getValue();
  return element.isF64() ? element : Float32Type::get(element.getContext());
}

Type elementOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

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
  return explicitWindowPads(autoPad, pads, in, out, kernel, strides, dilations);
}

SmallVector<int64_t> orOnes(std::optional<ArrayRef<int64_t>> v, size_t n) {
  return v ? SmallVector<int64_t>(v->begin(), v->end())
           : SmallVector<int64_t>(n, 1);
}

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

std::optional<culib::LossReduction> lossReductionOf(Operation *op) {
  return culib::symbolizeLossReduction(strAttrOr(op, "reduction", "mean"));
}

void explainLossReduction(Operation *op, raw_ostream &os) {
  if (!lossReductionOf(op))
    os << "unknown reduction '" << strAttrOr(op, "reduction", "")
       << "' (none, sum, mean)";
}

std::optional<culib::ScatterReduction> scatterReductionOf(Operation *op) {
  return culib::symbolizeScatterReduction(strAttrOr(op, "reduction", "none"));
}

/// The values of a compile-time constant operand whose attribute is an
/// `AttrT`, each converted by `convert`.
template <typename AttrT, typename T, typename Element, typename Convert>
static std::optional<SmallVector<T>> constantValues(Value v, Convert convert) {
  if (isAbsent(v))
    return std::nullopt;
  auto attr = dyn_cast_or_null<AttrT>(getConstantValue(v));
  if (!attr)
    return std::nullopt;
  SmallVector<T> values;
  for (const Element &e : attr.template getValues<Element>())
    values.push_back(convert(e));
  return values;
}

std::optional<SmallVector<int64_t>> constantInts(Value v) {
  return constantValues<DenseIntElementsAttr, int64_t, APInt>(
      v, [](const APInt &i) { return i.getSExtValue(); });
}

std::optional<SmallVector<double>> constantFloats(Value v) {
  return constantValues<DenseFPElementsAttr, double, APFloat>(
      v, [](const APFloat &f) { return f.convertToDouble(); });
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

} // namespace mp::mptoculib
