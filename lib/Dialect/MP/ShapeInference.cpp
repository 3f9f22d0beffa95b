//===- ShapeInference.cpp - result types of typed mp ops ------------------===//
//
// Implements the ONNX shape/type rules of the typed ops. Each rule computes
// what is statically known and leaves the rest dynamic: a dim that cannot be
// computed is `?`, a result of unknown rank is unranked, and a result whose
// element type is unknown is `!mp.unknown`.
//
// This file holds what the rules share: the ONNX data types, type
// compatibility, ShapeContext and the helpers of ShapeInferenceInternal.h,
// and the rules of the constants and generators. The other rules are in
// ShapeInferenceElementwise.cpp, ShapeInferenceNN.cpp,
// ShapeInferenceReductions.cpp and ShapeInferenceDataMovement.cpp.
//
//===----------------------------------------------------------------------===//
#include "ShapeInferenceInternal.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mp;
using namespace mp::shape_detail;

//===----------------------------------------------------------------------===//
// ONNX data types
//===----------------------------------------------------------------------===//

Type mp::getTypeForOnnxDataType(MLIRContext *ctx, int64_t dataType) {
  Builder b(ctx);
  switch (dataType) {
  case 1: return b.getF32Type();
  case 2: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case 3: return b.getIntegerType(8);
  case 4: return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case 5: return b.getIntegerType(16);
  case 6: return b.getIntegerType(32);
  case 7: return b.getIntegerType(64);
  case 8: return StringType::get(ctx);
  case 9: return b.getI1Type();
  case 10: return b.getF16Type();
  case 11: return b.getF64Type();
  case 12: return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case 13: return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  case 14: return ComplexType::get(b.getF32Type());
  case 15: return ComplexType::get(b.getF64Type());
  case 16: return b.getBF16Type();
  case 17: return Float8E4M3FNType::get(ctx);
  case 18: return Float8E4M3FNUZType::get(ctx);
  case 19: return Float8E5M2Type::get(ctx);
  case 20: return Float8E5M2FNUZType::get(ctx);
  case 21:
    return IntegerType::get(ctx, 4, IntegerType::Unsigned);
  case 22:
    return b.getIntegerType(4);
  case 23:
    return Float4E2M1FNType::get(ctx);
  case 24:
    return Float8E8M0FNUType::get(ctx);
  case 25:
    return IntegerType::get(ctx, 2, IntegerType::Unsigned);
  case 26:
    return b.getIntegerType(2);
  default: return {};
  }
}

int64_t mp::getOnnxDataTypeForType(Type type) {
  if (type.isF32()) return 1;
  if (type.isF16()) return 10;
  if (type.isBF16()) return 16;
  if (type.isF64()) return 11;
  if (isa<StringType>(type)) return 8;
  if (isa<Float8E4M3FNType>(type)) return 17;
  if (isa<Float8E4M3FNUZType>(type)) return 18;
  if (isa<Float8E5M2Type>(type)) return 19;
  if (isa<Float8E5M2FNUZType>(type)) return 20;
  if (isa<Float4E2M1FNType>(type))
    return 23;
  if (isa<Float8E8M0FNUType>(type))
    return 24;
  if (auto complex = dyn_cast<ComplexType>(type)) {
    if (complex.getElementType().isF32()) return 14;
    if (complex.getElementType().isF64()) return 15;
    return 0;
  }
  if (auto integer = dyn_cast<IntegerType>(type)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return integer.isSignless() ? 9 : 0;
    case 2:
      return isUnsigned ? 25 : integer.isSignless() ? 26 : 0;
    case 4:
      return isUnsigned ? 21 : integer.isSignless() ? 22 : 0;
    case 8: return isUnsigned ? 2 : integer.isSignless() ? 3 : 0;
    case 16: return isUnsigned ? 4 : integer.isSignless() ? 5 : 0;
    case 32: return isUnsigned ? 12 : integer.isSignless() ? 6 : 0;
    case 64: return isUnsigned ? 13 : integer.isSignless() ? 7 : 0;
    default: return 0;
    }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Type compatibility
//===----------------------------------------------------------------------===//

bool mp::isCompatibleType(Type inferred, Type actual) {
  if (inferred == actual || isa<UnknownType>(inferred) ||
      isa<UnknownType>(actual))
    return true;
  auto a = dyn_cast<TensorType>(inferred);
  auto b = dyn_cast<TensorType>(actual);
  if (!a || !b)
    return false;
  if (!isa<UnknownType>(a.getElementType()) &&
      !isa<UnknownType>(b.getElementType()) &&
      a.getElementType() != b.getElementType())
    return false;
  if (!a.hasRank() || !b.hasRank())
    return true;
  if (a.getRank() != b.getRank())
    return false;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape()))
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return false;
  return true;
}

bool mp::areCompatibleTypeLists(TypeRange inferred, TypeRange actual) {
  if (inferred.size() != actual.size())
    return false;
  for (auto [a, b] : llvm::zip(inferred, actual))
    if (!isCompatibleType(a, b))
      return false;
  return true;
}

LogicalResult mp::refineResultTypes(Operation *op) {
  SmallVector<Type> inferred;
  if (auto split = dyn_cast<SplitOp>(op)) {
    inferred = split.inferOutputTypes();
  } else if (auto inferrable = dyn_cast<InferTypeOpInterface>(op)) {
    if (failed(inferrable.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), inferred)))
      return failure();
  }
  for (auto [result, type] : llvm::zip(op->getResults(), inferred))
    result.setType(refineType(result.getType(), type));
  return success();
}

Type mp::refineType(Type a, Type b) {
  if (!a || isa<UnknownType>(a))
    return b;
  if (!b || isa<UnknownType>(b))
    return a;
  auto ta = dyn_cast<TensorType>(a);
  auto tb = dyn_cast<TensorType>(b);
  if (!ta || !tb || !isCompatibleType(a, b))
    return a;
  Type element = isa<UnknownType>(ta.getElementType()) ? tb.getElementType()
                                                       : ta.getElementType();
  if (!ta.hasRank() && !tb.hasRank())
    return UnrankedTensorType::get(element);
  if (!ta.hasRank() || !tb.hasRank()) {
    auto ranked = ta.hasRank() ? ta : tb;
    return RankedTensorType::get(ranked.getShape(), element);
  }
  SmallVector<int64_t> dims;
  for (auto [x, y] : llvm::zip(ta.getShape(), tb.getShape()))
    dims.push_back(ShapedType::isDynamic(x) ? y : x);
  return RankedTensorType::get(dims, element);
}

FailureOr<Dims> mp::broadcastDims(const Dims &a, const Dims &b) {
  if (!a || !b)
    return Dims();
  size_t rank = std::max(a->size(), b->size());
  SmallVector<int64_t, 6> out(rank, kDynamic);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a->size() ? 1 : (*a)[i - (rank - a->size())];
    int64_t y = i < rank - b->size() ? 1 : (*b)[i - (rank - b->size())];
    if (x == 1)
      out[i] = y;
    else if (y == 1)
      out[i] = x;
    else if (ShapedType::isDynamic(x))
      out[i] = ShapedType::isDynamic(y) ? kDynamic : y;
    else if (ShapedType::isDynamic(y) || x == y)
      out[i] = x;
    else
      return failure();
  }
  return Dims(out);
}

//===----------------------------------------------------------------------===//
// ShapeContext
//===----------------------------------------------------------------------===//

bool ShapeContext::isAbsent(unsigned i) const {
  return i >= operands.size() || isa<NoneType>(operands[i].getType());
}

Type ShapeContext::getElementType(unsigned i) const {
  if (i >= operands.size())
    return {};
  auto tensor = dyn_cast<TensorType>(operands[i].getType());
  if (!tensor || isa<UnknownType>(tensor.getElementType()))
    return {};
  return tensor.getElementType();
}

Dims ShapeContext::getDims(unsigned i) const {
  if (i >= operands.size())
    return std::nullopt;
  auto tensor = dyn_cast<RankedTensorType>(operands[i].getType());
  if (!tensor)
    return std::nullopt;
  return SmallVector<int64_t, 6>(tensor.getShape());
}

Attribute ShapeContext::getAttr(StringRef name) const {
  if (inherent)
    if (Attribute attr = inherent(name))
      return attr;
  return attributes ? attributes.get(name) : Attribute();
}

int64_t ShapeContext::getInt(StringRef name, int64_t defaultValue) const {
  if (auto attr = dyn_cast_or_null<IntegerAttr>(getAttr(name)))
    return attr.getInt();
  return defaultValue;
}

float ShapeContext::getFloat(StringRef name, float defaultValue) const {
  if (auto attr = dyn_cast_or_null<FloatAttr>(getAttr(name)))
    return attr.getValueAsDouble();
  return defaultValue;
}

std::optional<SmallVector<int64_t>>
ShapeContext::getInts(StringRef name) const {
  if (auto attr = dyn_cast_or_null<DenseI64ArrayAttr>(getAttr(name)))
    return SmallVector<int64_t>(attr.asArrayRef());
  return std::nullopt;
}

StringRef ShapeContext::getString(StringRef name,
                                  StringRef defaultValue) const {
  if (auto attr = dyn_cast_or_null<StringAttr>(getAttr(name)))
    return attr.getValue();
  return defaultValue;
}

LogicalResult ShapeContext::emitError(const Twine &message) const {
  if (loc)
    return mlir::emitError(*loc) << "ONNX " << onnxOpType << ": " << message;
  return failure();
}

Type ShapeContext::makeTensor(const Dims &dims, Type elementType) const {
  if (!elementType)
    return UnknownType::get(context);
  if (!dims)
    return UnrankedTensorType::get(elementType);
  return RankedTensorType::get(*dims, elementType);
}

/// Shape constants are small; anything larger is not read at compile time.
static constexpr int64_t kMaxConstantElements = 1 << 16;

/// The raw little-endian bytes of a resource elements attribute (dense ones
/// are read through their typed values).
static std::optional<ArrayRef<char>> getRawData(ElementsAttr attr) {
  if (!isa<DenseResourceElementsAttr>(attr))
    return std::nullopt;
  std::optional<StoredBytes> stored = storedBytes(attr);
  if (!stored)
    return std::nullopt;
  return stored->bytes;
}

template <typename T>
static std::optional<SmallVector<T>> readValues(Attribute attr) {
  auto elements = dyn_cast_or_null<ElementsAttr>(attr);
  if (!elements || elements.getNumElements() > kMaxConstantElements)
    return std::nullopt;
  Type elementType = elements.getElementType();
  SmallVector<T> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(elements)) {
    if (isa<IntegerType>(elementType)) {
      bool isUnsigned = elementType.isUnsignedInteger() ||
                        elementType.getIntOrFloatBitWidth() == 1;
      for (const APInt &v : dense.getValues<APInt>())
        values.push_back(isUnsigned ? static_cast<T>(v.getZExtValue())
                                    : static_cast<T>(v.getSExtValue()));
      return values;
    }
    if (isa<FloatType>(elementType)) {
      for (const APFloat &v : dense.getValues<APFloat>())
        values.push_back(static_cast<T>(v.convertToDouble()));
      return values;
    }
    return std::nullopt;
  }
  std::optional<ArrayRef<char>> raw = getRawData(elements);
  if (!raw)
    return std::nullopt;
  int64_t n = elements.getNumElements();
  auto read = [&](auto tag) -> std::optional<SmallVector<T>> {
    using E = typename decltype(tag)::type;
    if (raw->size() != static_cast<size_t>(n) * sizeof(E))
      return std::nullopt;
    for (int64_t i = 0; i < n; ++i) {
      E v;
      std::memcpy(&v, raw->data() + i * sizeof(E), sizeof(E));
      values.push_back(static_cast<T>(v));
    }
    return values;
  };
  if (elementType.isInteger(64))
    return elementType.isUnsignedInteger() ? read(llvm::type_identity<uint64_t>{})
                                           : read(llvm::type_identity<int64_t>{});
  if (elementType.isInteger(32))
    return elementType.isUnsignedInteger() ? read(llvm::type_identity<uint32_t>{})
                                           : read(llvm::type_identity<int32_t>{});
  if (elementType.isF32())
    return read(llvm::type_identity<float>{});
  if (elementType.isF64())
    return read(llvm::type_identity<double>{});
  return std::nullopt;
}

Attribute mp::getConstantValue(Value value) {
  if (auto initializer = value.getDefiningOp<InitializerOp>())
    return initializer.getValue();
  Attribute attr;
  if (matchPattern(value, m_Constant(&attr)))
    return attr;
  return {};
}

std::optional<SmallVector<int64_t>> mp::getConstantInts(Value value) {
  if (!value || isa<NoneType>(value.getType()))
    return std::nullopt;
  auto elements = dyn_cast_or_null<ElementsAttr>(getConstantValue(value));
  if (!elements || !isa<IntegerType>(elements.getElementType()))
    return std::nullopt;
  return readValues<int64_t>(elements);
}

std::optional<SmallVector<double>> mp::getConstantFloats(Value value) {
  if (!value || isa<NoneType>(value.getType()))
    return std::nullopt;
  auto elements = dyn_cast_or_null<ElementsAttr>(getConstantValue(value));
  if (!elements || !isa<FloatType>(elements.getElementType()))
    return std::nullopt;
  return readValues<double>(elements);
}

std::optional<SmallVector<int64_t>>
ShapeContext::getConstantInts(unsigned i) const {
  if (isAbsent(i))
    return std::nullopt;
  Attribute attr = getConstantValue(operands[i]);
  if (!attr)
    return std::nullopt;
  return readValues<int64_t>(attr);
}

std::optional<SmallVector<double>>
ShapeContext::getConstantFloats(unsigned i) const {
  if (isAbsent(i))
    return std::nullopt;
  Attribute attr = getConstantValue(operands[i]);
  if (!attr)
    return std::nullopt;
  return readValues<double>(attr);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Normalizes a possibly negative axis; failure when out of [-rank, rank).
FailureOr<int64_t> shape_detail::normalizeAxis(ShapeContext &ctx, int64_t axis,
                                               int64_t rank, StringRef what) {
  if (axis < -rank || axis >= rank)
    return ctx.emitError(Twine(what) + " " + Twine(axis) +
                         " is out of range for rank " + Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

/// a * b for dims; dynamic when either is, or when the product overflows
/// (hostile attributes must not produce negative dims).
int64_t shape_detail::mulDims(int64_t a, int64_t b) {
  int64_t product;
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ||
      __builtin_mul_overflow(a, b, &product))
    return kDynamic;
  return product;
}

LogicalResult shape_detail::requireRank(ShapeContext &ctx, unsigned operand,
                                        const Dims &dims, int64_t minRank,
                                        StringRef what) {
  if (dims && static_cast<int64_t>(dims->size()) < minRank)
    return ctx.emitError(Twine(what) + " must have rank >= " + Twine(minRank) +
                         ", got " + Twine(dims->size()));
  return success();
}

bool shape_detail::dimsConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// The length of a 1-D operand (a shape, axes or pads vector), if known.
std::optional<int64_t> shape_detail::vectorLength(ShapeContext &ctx,
                                                  unsigned i) {
  Dims d = ctx.getDims(i);
  if (!d || d->size() != 1 || ShapedType::isDynamic((*d)[0]))
    return std::nullopt;
  return (*d)[0];
}

//===----------------------------------------------------------------------===//
// Constants and generators
//===----------------------------------------------------------------------===//

LogicalResult shape::inferConstant(ShapeContext &ctx,
                                   SmallVectorImpl<Type> &results) {
  MLIRContext *c = ctx.getContext();
  Builder b(c);
  static const char *valueAttrs[] = {"value",        "sparse_value",
                                     "value_float",  "value_floats",
                                     "value_int",    "value_ints",
                                     "value_string", "value_strings"};
  int set = 0;
  for (const char *name : valueAttrs)
    set += ctx.getAttr(name) ? 1 : 0;
  if (set != 1)
    return ctx.emitError("exactly one value attribute must be set, found " +
                         Twine(set));
  if (auto v = dyn_cast_or_null<ElementsAttr>(ctx.getAttr("value")))
    results.push_back(v.getType());
  else if (ctx.getAttr("value_float"))
    results.push_back(RankedTensorType::get({}, b.getF32Type()));
  else if (ctx.getAttr("value_int"))
    results.push_back(RankedTensorType::get({}, b.getI64Type()));
  else if (ctx.getAttr("value_string"))
    results.push_back(RankedTensorType::get({}, StringType::get(c)));
  else if (auto v = dyn_cast_or_null<DenseF32ArrayAttr>(
               ctx.getAttr("value_floats")))
    results.push_back(RankedTensorType::get({v.size()}, b.getF32Type()));
  else if (auto v =
               dyn_cast_or_null<DenseI64ArrayAttr>(ctx.getAttr("value_ints")))
    results.push_back(RankedTensorType::get({v.size()}, b.getI64Type()));
  else if (auto v = dyn_cast_or_null<ArrayAttr>(ctx.getAttr("value_strings")))
    results.push_back(RankedTensorType::get({static_cast<int64_t>(v.size())},
                                            StringType::get(c)));
  else
    return ctx.emitError("value attribute has the wrong kind");
  return success();
}

LogicalResult shape::inferConstantOfShape(ShapeContext &ctx,
                                          SmallVectorImpl<Type> &results) {
  Type element = Float32Type::get(ctx.getContext());
  if (auto value = dyn_cast_or_null<ElementsAttr>(ctx.getAttr("value"))) {
    if (value.getNumElements() != 1)
      return ctx.emitError("'value' must hold exactly one element");
    element = value.getElementType();
  }
  Dims out;
  if (auto shape = ctx.getConstantInts(0)) {
    for (int64_t d : *shape)
      if (d < 0)
        return ctx.emitError("shape must not have negative dims");
    out = SmallVector<int64_t, 6>(shape->begin(), shape->end());
  } else if (auto n = vectorLength(ctx, 0)) {
    out = SmallVector<int64_t, 6>(*n, kDynamic);
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferRange(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  Type element = ctx.getElementType(0);
  for (unsigned i = 0; i < 3; ++i) {
    Dims d = ctx.getDims(i);
    if (d && !d->empty())
      return ctx.emitError("start, limit and delta must be scalars");
  }
  int64_t length = kDynamic;
  auto start = ctx.getConstantFloats(0), limit = ctx.getConstantFloats(1),
       delta = ctx.getConstantFloats(2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 &&
      delta->size() == 1) {
    if ((*delta)[0] == 0)
      return ctx.emitError("delta must not be 0");
    length = std::max<int64_t>(
        static_cast<int64_t>(
            std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0])),
        0);
  }
  results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{length}, element));
  return success();
}
