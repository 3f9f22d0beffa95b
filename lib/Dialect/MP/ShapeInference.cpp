//===- ShapeInference.cpp - result types of typed mp ops -----------------===//
//
// Implements the ONNX shape/type rules of the typed ops. Each rule computes
// what is statically known and leaves the rest dynamic: a dim that cannot be
// computed is `?`, a result of unknown rank is unranked, and a result whose
// element type is unknown is `!mp.unknown`.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ConstantData.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mp;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

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
  if (auto complex = dyn_cast<ComplexType>(type)) {
    if (complex.getElementType().isF32()) return 14;
    if (complex.getElementType().isF64()) return 15;
    return 0;
  }
  if (auto integer = dyn_cast<IntegerType>(type)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return integer.isSignless() ? 9 : 0;
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
static FailureOr<int64_t> normalizeAxis(ShapeContext &ctx, int64_t axis,
                                        int64_t rank, StringRef what = "axis") {
  if (axis < -rank || axis >= rank)
    return ctx.emitError(Twine(what) + " " + Twine(axis) +
                         " is out of range for rank " + Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

/// a * b for dims; dynamic when either is, or when the product overflows
/// (hostile attributes must not produce negative dims).
static int64_t mulDims(int64_t a, int64_t b) {
  int64_t product;
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ||
      __builtin_mul_overflow(a, b, &product))
    return kDynamic;
  return product;
}

static LogicalResult requireRank(ShapeContext &ctx, unsigned operand,
                                 const Dims &dims, int64_t minRank,
                                 StringRef what) {
  if (dims && static_cast<int64_t>(dims->size()) < minRank)
    return ctx.emitError(Twine(what) + " must have rank >= " + Twine(minRank) +
                         ", got " + Twine(dims->size()));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult shape::inferSameAsFirst(ShapeContext &ctx,
                                      SmallVectorImpl<Type> &results) {
  Type type = ctx.getOperandType(0);
  results.push_back(type ? type : UnknownType::get(ctx.getContext()));
  return success();
}

LogicalResult shape::inferSameShapeBool(ShapeContext &ctx,
                                        SmallVectorImpl<Type> &results) {
  results.push_back(ctx.makeTensor(ctx.getDims(0),
                                   IntegerType::get(ctx.getContext(), 1)));
  return success();
}

static FailureOr<Dims> broadcastOperands(ShapeContext &ctx, unsigned first) {
  Dims dims = ctx.getDims(first);
  for (unsigned i = first + 1; i < ctx.getNumOperands(); ++i) {
    FailureOr<Dims> next = broadcastDims(dims, ctx.getDims(i));
    if (failed(next)) {
      std::string message;
      llvm::raw_string_ostream os(message);
      os << "operand shapes are not broadcastable: ";
      llvm::interleave(
          llvm::seq<unsigned>(first, ctx.getNumOperands()), os,
          [&](unsigned j) { os << ctx.getOperandType(j); }, ", ");
      return ctx.emitError(message);
    }
    dims = *next;
  }
  return dims;
}

LogicalResult shape::inferBroadcast(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  if (ctx.getNumOperands() == 0)
    return ctx.emitError("needs at least one input");
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  results.push_back(ctx.makeTensor(*dims, ctx.getElementType(0)));
  return success();
}

LogicalResult shape::inferBroadcastToBool(ShapeContext &ctx,
                                          SmallVectorImpl<Type> &results) {
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  results.push_back(
      ctx.makeTensor(*dims, IntegerType::get(ctx.getContext(), 1)));
  return success();
}

LogicalResult shape::inferWhere(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  Type element = ctx.getElementType(1);
  if (!element)
    element = ctx.getElementType(2);
  results.push_back(ctx.makeTensor(*dims, element));
  return success();
}

LogicalResult shape::inferCast(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  int64_t to = ctx.getInt("to", 0);
  Type element = getTypeForOnnxDataType(ctx.getContext(), to);
  if (!element)
    return ctx.emitError("'to' is not a known ONNX data type: " + Twine(to));
  results.push_back(ctx.makeTensor(ctx.getDims(0), element));
  return success();
}

LogicalResult shape::inferCastLike(ShapeContext &ctx,
                                   SmallVectorImpl<Type> &results) {
  results.push_back(ctx.makeTensor(ctx.getDims(0), ctx.getElementType(1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

static bool dimsConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

LogicalResult shape::inferMatMul(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims a = ctx.getDims(0), b = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (!a || !b) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  if (a->empty() || b->empty())
    return ctx.emitError("operands must not be scalars");
  // 1-D operands are promoted to matrices and the added dim removed after.
  bool aVector = a->size() == 1, bVector = b->size() == 1;
  SmallVector<int64_t, 6> am = *a, bm = *b;
  if (aVector)
    am.insert(am.begin(), 1);
  if (bVector)
    bm.push_back(1);
  int64_t k1 = am.back(), k2 = bm[bm.size() - 2];
  if (dimsConflict(k1, k2))
    return ctx.emitError("contraction dims differ: " + Twine(k1) + " vs " +
                         Twine(k2));
  Dims aBatch = SmallVector<int64_t, 6>(am.begin(), am.end() - 2);
  Dims bBatch = SmallVector<int64_t, 6>(bm.begin(), bm.end() - 2);
  FailureOr<Dims> batch = broadcastDims(aBatch, bBatch);
  if (failed(batch))
    return ctx.emitError("batch dims are not broadcastable");
  SmallVector<int64_t, 6> out = **batch;
  if (!aVector)
    out.push_back(am[am.size() - 2]);
  if (!bVector)
    out.push_back(bm.back());
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGemm(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims a = ctx.getDims(0), b = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if ((a && a->size() != 2) || (b && b->size() != 2))
    return ctx.emitError("A and B must be matrices");
  bool transA = ctx.getInt("transA", 0), transB = ctx.getInt("transB", 0);
  int64_t m = a ? (*a)[transA ? 1 : 0] : kDynamic;
  int64_t ka = a ? (*a)[transA ? 0 : 1] : kDynamic;
  int64_t kb = b ? (*b)[transB ? 1 : 0] : kDynamic;
  int64_t n = b ? (*b)[transB ? 0 : 1] : kDynamic;
  if (dimsConflict(ka, kb))
    return ctx.emitError("contraction dims differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  if (!ctx.isAbsent(2)) {
    Dims c = ctx.getDims(2);
    Dims mn = SmallVector<int64_t, 6>{m, n};
    FailureOr<Dims> bc = broadcastDims(mn, c);
    // Unidirectional: C may not grow [M, N] (a dim of 1 in [M, N] included).
    if (failed(bc) || (c && c->size() > 2) ||
        (*bc && (dimsConflict((**bc)[0], m) || dimsConflict((**bc)[1], n))))
      return ctx.emitError("C is not unidirectionally broadcastable to [M, N]");
  }
  results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{m, n}, element));
  return success();
}

LogicalResult shape::inferEinsum(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  StringRef equation = ctx.getString("equation", "");
  Type element = ctx.getElementType(0);
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  size_t arrow = eq.find("->");
  StringRef lhs = StringRef(eq).substr(0, arrow);
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ctx.getNumOperands())
    return ctx.emitError("equation has " + Twine(terms.size()) +
                         " inputs but the op has " +
                         Twine(ctx.getNumOperands()));
  if (eq.find("...") != std::string::npos) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  llvm::DenseMap<char, int64_t> sizes;
  llvm::DenseMap<char, int> counts;
  std::string order;
  for (auto [i, term] : llvm::enumerate(terms)) {
    Dims dims = ctx.getDims(i);
    if (dims && dims->size() != term.size())
      return ctx.emitError("term '" + term + "' does not match operand rank " +
                           Twine(dims->size()));
    for (auto [j, c] : llvm::enumerate(term)) {
      if (!counts.count(c))
        order.push_back(c);
      counts[c]++;
      int64_t d = dims ? (*dims)[j] : kDynamic;
      auto it = sizes.find(c);
      // A label's sizes must agree (1 broadcasts, as in numpy.einsum).
      if (it != sizes.end() && !ShapedType::isDynamic(it->second) &&
          !ShapedType::isDynamic(d) && it->second != 1 && d != 1 &&
          it->second != d)
        return ctx.emitError("label '" + Twine(c) + "' has size " +
                             Twine(it->second) + " and " + Twine(d));
      if (it == sizes.end() || ShapedType::isDynamic(it->second) ||
          it->second == 1)
        sizes[c] = (it != sizes.end() && d == 1) ? it->second : d;
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    // Implicit mode: letters seen once, in alphabetical order.
    for (char c : order)
      if (counts[c] == 1)
        out.push_back(c);
    llvm::sort(out);
  }
  SmallVector<int64_t, 6> dims;
  for (char c : out) {
    if (!sizes.count(c))
      return ctx.emitError("output label '" + Twine(c) +
                           "' does not appear in the inputs");
    dims.push_back(sizes[c]);
  }
  results.push_back(ctx.makeTensor(dims, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
struct WindowParams {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  StringRef autoPad;
  bool ceilMode = false;
};
} // namespace

/// Reads the window attributes common to Conv and the pools for `spatial`
/// spatial dims.
static LogicalResult readWindow(ShapeContext &ctx, size_t spatial,
                                ArrayRef<int64_t> kernelFromWeights,
                                WindowParams &p) {
  auto getOr = [&](StringRef name, size_t n, int64_t fill,
                   SmallVector<int64_t> &out) -> LogicalResult {
    if (auto v = ctx.getInts(name)) {
      if (v->size() != n)
        return ctx.emitError("'" + name + "' must have " + Twine(n) +
                             " values, has " + Twine(v->size()));
      out = *v;
    } else {
      out.assign(n, fill);
    }
    return success();
  };
  if (auto k = ctx.getInts("kernel_shape")) {
    if (k->size() != spatial)
      return ctx.emitError("'kernel_shape' must have " + Twine(spatial) +
                           " values, has " + Twine(k->size()));
    p.kernel = *k;
  } else {
    p.kernel.assign(kernelFromWeights.begin(), kernelFromWeights.end());
  }
  if (failed(getOr("strides", spatial, 1, p.strides)) ||
      failed(getOr("dilations", spatial, 1, p.dilations)) ||
      failed(getOr("pads", 2 * spatial, 0, p.pads)))
    return failure();
  for (int64_t s : p.strides)
    if (s <= 0)
      return ctx.emitError("strides must be positive");
  for (int64_t d : p.dilations)
    if (d <= 0)
      return ctx.emitError("dilations must be positive");
  for (int64_t pad : p.pads)
    if (pad < 0)
      return ctx.emitError("pads must not be negative");
  p.autoPad = ctx.getString("auto_pad", "NOTSET");
  if (p.autoPad != "NOTSET" && p.autoPad != "VALID" &&
      p.autoPad != "SAME_UPPER" && p.autoPad != "SAME_LOWER")
    return ctx.emitError("unknown auto_pad '" + p.autoPad + "'");
  p.ceilMode = ctx.getInt("ceil_mode", 0) != 0;
  return success();
}

/// The output size of one spatial dim of a convolution or pooling window.
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t dilation, int64_t padBegin, int64_t padEnd,
                            StringRef autoPad, bool ceilMode) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel))
    return kDynamic;
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
    return llvm::divideCeil(in, stride);
  int64_t effective = (kernel - 1) * dilation + 1;
  if (autoPad == "VALID")
    return in < effective ? 0 : llvm::divideCeil(in - effective + 1, stride);
  int64_t span = in + padBegin + padEnd - effective;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? llvm::divideCeil(span, stride) : span / stride) + 1;
  // With ceil mode the last window must start inside the (left-padded) input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult shape::inferConv(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")) ||
      failed(requireRank(ctx, 1, w, 3, "W")))
    return failure();
  if (x && w && x->size() != w->size())
    return ctx.emitError("X has rank " + Twine(x->size()) +
                         " but W has rank " + Twine(w->size()));
  Dims rankSource = x ? x : w;
  if (!rankSource) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t spatial = rankSource->size() - 2;
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0)
    return ctx.emitError("group must be positive");
  if (x && w && !ShapedType::isDynamic((*x)[1]) &&
      !ShapedType::isDynamic((*w)[1]) && (*x)[1] != (*w)[1] * group)
    return ctx.emitError("X has " + Twine((*x)[1]) + " channels but W expects " +
                         Twine((*w)[1]) + " x group " + Twine(group));
  if (w && !ShapedType::isDynamic((*w)[0]) && (*w)[0] % group != 0)
    return ctx.emitError("output channels " + Twine((*w)[0]) +
                         " are not divisible by group " + Twine(group));
  if (!ctx.isAbsent(2)) {
    Dims b = ctx.getDims(2);
    if (b && (b->size() != 1 || (w && dimsConflict((*b)[0], (*w)[0]))))
      return ctx.emitError("B must be a vector of the output channel count");
  }
  SmallVector<int64_t> kernelFromWeights(spatial, kDynamic);
  if (w)
    kernelFromWeights.assign(w->begin() + 2, w->end());
  WindowParams p;
  if (failed(readWindow(ctx, spatial, kernelFromWeights, p)))
    return failure();
  if (w)
    for (size_t i = 0; i < spatial; ++i)
      if (dimsConflict(p.kernel[i], (*w)[i + 2]))
        return ctx.emitError("kernel_shape does not match W");
  SmallVector<int64_t, 6> out;
  out.push_back(x ? (*x)[0] : kDynamic);
  out.push_back(w ? (*w)[0] : kDynamic);
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(windowOutput(x ? (*x)[i + 2] : kDynamic, p.kernel[i],
                               p.strides[i], p.dilations[i], p.pads[i],
                               p.pads[i + spatial], p.autoPad, false));
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferConvTranspose(ShapeContext &ctx,
                                        SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")) ||
      failed(requireRank(ctx, 1, w, 3, "W")))
    return failure();
  if (x && w && x->size() != w->size())
    return ctx.emitError("X and W ranks differ");
  Dims rankSource = x ? x : w;
  if (!rankSource) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t spatial = rankSource->size() - 2;
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0)
    return ctx.emitError("group must be positive");
  SmallVector<int64_t> kernelFromWeights(spatial, kDynamic);
  if (w)
    kernelFromWeights.assign(w->begin() + 2, w->end());
  WindowParams p;
  if (failed(readWindow(ctx, spatial, kernelFromWeights, p)))
    return failure();
  SmallVector<int64_t> outputPadding(spatial, 0);
  if (auto v = ctx.getInts("output_padding"))
    if (v->size() == spatial)
      outputPadding = *v;
  SmallVector<int64_t, 6> out;
  out.push_back(x ? (*x)[0] : kDynamic);
  out.push_back(w ? mulDims((*w)[1], group) : kDynamic);
  auto outputShape = ctx.getInts("output_shape");
  for (size_t i = 0; i < spatial; ++i) {
    if (outputShape && outputShape->size() >= spatial) {
      out.push_back((*outputShape)[outputShape->size() - spatial + i]);
      if (out.back() < 0)
        return ctx.emitError("output_shape must not be negative");
      continue;
    }
    int64_t in = x ? (*x)[i + 2] : kDynamic;
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(p.kernel[i])) {
      out.push_back(kDynamic);
    } else if (p.autoPad == "SAME_UPPER" || p.autoPad == "SAME_LOWER") {
      out.push_back(in * p.strides[i]);
    } else {
      out.push_back(p.strides[i] * (in - 1) + outputPadding[i] +
                    (p.kernel[i] - 1) * p.dilations[i] + 1 - p.pads[i] -
                    p.pads[i + spatial]);
      if (out.back() < 0)
        return ctx.emitError("pads remove more than the " +
                             Twine(out.back() + p.pads[i] +
                                   p.pads[i + spatial]) +
                             " elements of output dim " + Twine(i + 2));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferPool(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  bool hasIndices = ctx.getOpType() == "MaxPool";
  if (failed(requireRank(ctx, 0, x, 3, "X")))
    return failure();
  auto kernel = ctx.getInts("kernel_shape");
  if (!kernel)
    return ctx.emitError("'kernel_shape' is required");
  if (x && kernel->size() != x->size() - 2)
    return ctx.emitError("'kernel_shape' has " + Twine(kernel->size()) +
                         " values for " + Twine(x->size() - 2) +
                         " spatial dims");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    if (hasIndices)
      results.push_back(ctx.makeTensor(std::nullopt, i64));
    return success();
  }
  size_t spatial = x->size() - 2;
  WindowParams p;
  if (failed(readWindow(ctx, spatial, *kernel, p)))
    return failure();
  SmallVector<int64_t, 6> out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(windowOutput((*x)[i + 2], p.kernel[i], p.strides[i],
                               p.dilations[i], p.pads[i], p.pads[i + spatial],
                               p.autoPad, p.ceilMode));
  results.push_back(ctx.makeTensor(out, element));
  if (hasIndices)
    results.push_back(ctx.makeTensor(out, i64));
  return success();
}

LogicalResult shape::inferGlobalPool(ShapeContext &ctx,
                                     SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")))
    return failure();
  if (x)
    for (size_t i = 2; i < x->size(); ++i)
      (*x)[i] = 1;
  results.push_back(ctx.makeTensor(x, ctx.getElementType(0)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult shape::inferBatchNorm(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  if (failed(requireRank(ctx, 0, x, 2, "X")))
    return failure();
  int64_t channels = x ? (*x)[1] : kDynamic;
  static const char *names[] = {"scale", "B", "input_mean", "input_var"};
  for (unsigned i = 1; i < 5; ++i) {
    Dims d = ctx.getDims(i);
    if (d && (d->size() != 1 || dimsConflict((*d)[0], channels)))
      return ctx.emitError(Twine(names[i - 1]) +
                           " must be a vector of the channel count " +
                           (ShapedType::isDynamic(channels)
                                ? Twine("C")
                                : Twine(channels)));
  }
  results.push_back(ctx.getOperandType(0));
  results.push_back(ctx.getOperandType(3));
  results.push_back(ctx.getOperandType(4));
  return success();
}

LogicalResult shape::inferLayerNorm(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type stash = getTypeForOnnxDataType(ctx.getContext(),
                                      ctx.getInt("stash_type", 1));
  if (!stash)
    return ctx.emitError("unknown stash_type");
  results.push_back(ctx.getOperandType(0));
  Dims statistics;
  if (x) {
    FailureOr<int64_t> axis =
        normalizeAxis(ctx, ctx.getInt("axis", -1), x->size());
    if (failed(axis))
      return failure();
    statistics = *x;
    for (size_t i = *axis; i < x->size(); ++i)
      (*statistics)[i] = 1;
  }
  results.push_back(ctx.makeTensor(statistics, stash));
  results.push_back(ctx.makeTensor(statistics, stash));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

LogicalResult shape::inferReduce(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  std::optional<SmallVector<int64_t>> axes;
  bool axesKnown = true;
  if (ctx.getOpType() == "ReduceSum") {
    if (!ctx.isAbsent(1)) {
      axes = ctx.getConstantInts(1);
      axesKnown = axes.has_value();
    }
    if ((!axes || axes->empty()) && axesKnown &&
        ctx.getInt("noop_with_empty_axes", 0)) {
      results.push_back(ctx.getOperandType(0));
      return success();
    }
  } else {
    axes = ctx.getInts("axes");
  }
  if (!x || !axesKnown) {
    Dims out;
    if (x && keepdims)
      out = SmallVector<int64_t, 6>(x->size(), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size();
  llvm::SmallBitVector reduced(rank, !axes || axes->empty());
  if (axes)
    for (int64_t axis : *axes) {
      FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
      if (failed(a))
        return failure();
      reduced.set(*a);
    }
  SmallVector<int64_t, 6> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced.test(i))
      out.push_back((*x)[i]);
    else if (keepdims)
      out.push_back(1);
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferArgReduce(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  bool keepdims = ctx.getInt("keepdims", 1) != 0;
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, i64));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(ctx, ctx.getInt("axis", 0), x->size());
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> out = *x;
  if (keepdims)
    out[*axis] = 1;
  else
    out.erase(out.begin() + *axis);
  results.push_back(ctx.makeTensor(out, i64));
  return success();
}

LogicalResult shape::inferLoss(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims scores = ctx.getDims(0), labels = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  StringRef reduction = ctx.getString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.emitError("unknown reduction '" + reduction + "'");
  if (scores && scores->size() < 2)
    return ctx.emitError("scores must have rank >= 2");
  if (scores && labels && labels->size() + 1 != scores->size())
    return ctx.emitError("labels must have rank " + Twine(scores->size() - 1));
  Dims lossDims;
  if (reduction != "none")
    lossDims = SmallVector<int64_t, 6>();
  else if (labels)
    lossDims = labels;
  results.push_back(ctx.makeTensor(lossDims, element));
  if (ctx.getOpType() == "SoftmaxCrossEntropyLoss")
    results.push_back(ctx.makeTensor(scores, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

LogicalResult shape::inferRecurrent(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1), r = ctx.getDims(2);
  Type element = ctx.getElementType(0);
  StringRef direction = ctx.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return ctx.emitError("unknown direction '" + direction + "'");
  int64_t numDirections = direction == "bidirectional" ? 2 : 1;
  if ((x && x->size() != 3) || (w && w->size() != 3) || (r && r->size() != 3))
    return ctx.emitError("X, W and R must have rank 3");
  if (w && dimsConflict((*w)[0], numDirections))
    return ctx.emitError("W's first dim must be num_directions " +
                         Twine(numDirections));
  int64_t hidden = ctx.getInt("hidden_size", kDynamic);
  if (ShapedType::isDynamic(hidden) && r)
    hidden = (*r)[2];
  bool batchMajor = ctx.getInt("layout", 0) != 0;
  int64_t seq = x ? (*x)[batchMajor ? 1 : 0] : kDynamic;
  int64_t batch = x ? (*x)[batchMajor ? 0 : 1] : kDynamic;
  SmallVector<int64_t, 6> y =
      batchMajor ? SmallVector<int64_t, 6>{batch, seq, numDirections, hidden}
                 : SmallVector<int64_t, 6>{seq, numDirections, batch, hidden};
  SmallVector<int64_t, 6> state =
      batchMajor ? SmallVector<int64_t, 6>{batch, numDirections, hidden}
                 : SmallVector<int64_t, 6>{numDirections, batch, hidden};
  results.push_back(ctx.makeTensor(y, element));
  results.push_back(ctx.makeTensor(state, element));
  if (ctx.getOpType() == "LSTM")
    results.push_back(ctx.makeTensor(state, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement and shapes
//===----------------------------------------------------------------------===//

/// The element count of a static shape; none when a dim is dynamic or the
/// count overflows (a hostile shape operand).
static std::optional<int64_t> numElements(const Dims &dims) {
  if (!dims)
    return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *dims) {
    n = mulDims(n, d);
    if (ShapedType::isDynamic(n))
      return std::nullopt;
  }
  return n;
}

/// The length of a 1-D operand (a shape, axes or pads vector), if known.
static std::optional<int64_t> vectorLength(ShapeContext &ctx, unsigned i) {
  Dims d = ctx.getDims(i);
  if (!d || d->size() != 1 || ShapedType::isDynamic((*d)[0]))
    return std::nullopt;
  return (*d)[0];
}

LogicalResult shape::inferReshape(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto shape = ctx.getConstantInts(1);
  if (!shape) {
    Dims out;
    if (auto n = vectorLength(ctx, 1))
      out = SmallVector<int64_t, 6>(*n, kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  bool allowZero = ctx.getInt("allowzero", 0) != 0;
  SmallVector<int64_t, 6> out;
  int inferIndex = -1;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    if (d == -1) {
      if (inferIndex >= 0)
        return ctx.emitError("shape has more than one -1");
      inferIndex = i;
      out.push_back(kDynamic);
    } else if (d == 0 && !allowZero) {
      if (x && i >= x->size())
        return ctx.emitError("shape copies dim " + Twine(i) +
                             " (0) beyond the input's rank");
      out.push_back(x ? (*x)[i] : kDynamic);
    } else if (d < 0) {
      return ctx.emitError("invalid dim " + Twine(d) + " in shape");
    } else {
      out.push_back(d);
    }
  }
  std::optional<int64_t> total = numElements(x);
  if (inferIndex >= 0 && total) {
    int64_t known = 1;
    bool allKnown = true;
    for (auto [i, d] : llvm::enumerate(out))
      if (static_cast<int>(i) != inferIndex) {
        known = mulDims(known, d);
        if (ShapedType::isDynamic(known))
          allKnown = false;
      }
    if (allKnown && known != 0) {
      if (*total % known != 0)
        return ctx.emitError("cannot reshape " + Twine(*total) +
                             " elements into the requested shape");
      out[inferIndex] = *total / known;
    }
  } else if (inferIndex < 0 && total) {
    if (auto n = numElements(Dims(out)); n && *n != *total)
      return ctx.emitError("cannot reshape " + Twine(*total) +
                           " elements into " + Twine(*n));
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferTranspose(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto perm = ctx.getInts("perm");
  if (!x) {
    Dims out;
    if (perm)
      out = SmallVector<int64_t, 6>(perm->size(), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size();
  SmallVector<int64_t> p;
  if (perm) {
    p = *perm;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      p.push_back(i);
  }
  if (static_cast<int64_t>(p.size()) != rank)
    return ctx.emitError("perm has " + Twine(p.size()) + " values for rank " +
                         Twine(rank));
  llvm::SmallBitVector seen(rank);
  SmallVector<int64_t, 6> out;
  for (int64_t axis : p) {
    if (axis < 0 || axis >= rank || seen.test(axis))
      return ctx.emitError("perm is not a permutation of 0.." +
                           Twine(rank - 1));
    seen.set(axis);
    out.push_back((*x)[axis]);
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferFlatten(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  if (!x) {
    results.push_back(
        ctx.makeTensor(SmallVector<int64_t, 6>{kDynamic, kDynamic}, element));
    return success();
  }
  int64_t rank = x->size();
  int64_t axis = ctx.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.emitError("axis " + Twine(axis) + " is out of range for rank " +
                         Twine(rank));
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) = mulDims(i < axis ? outer : inner, (*x)[i]);
  results.push_back(
      ctx.makeTensor(SmallVector<int64_t, 6>{outer, inner}, element));
  return success();
}

LogicalResult shape::inferSqueeze(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  std::optional<SmallVector<int64_t>> axes;
  if (!ctx.isAbsent(1)) {
    axes = ctx.getConstantInts(1);
    if (!axes) {
      Dims out;
      if (auto n = vectorLength(ctx, 1); n && x) {
        // Unsigned arithmetic: more axes than dims would wrap around.
        if (*n > static_cast<int64_t>(x->size()))
          return ctx.emitError("axes has " + Twine(*n) + " values for rank " +
                               Twine(x->size()));
        out = SmallVector<int64_t, 6>(x->size() - *n, kDynamic);
      }
      results.push_back(ctx.makeTensor(out, element));
      return success();
    }
  }
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  int64_t rank = x->size();
  llvm::SmallBitVector drop(rank);
  if (axes) {
    for (int64_t axis : *axes) {
      FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
      if (failed(a))
        return failure();
      if (!ShapedType::isDynamic((*x)[*a]) && (*x)[*a] != 1)
        return ctx.emitError("cannot squeeze dim " + Twine(*a) + " of size " +
                             Twine((*x)[*a]));
      drop.set(*a);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      if (ShapedType::isDynamic((*x)[i])) {
        results.push_back(ctx.makeTensor(std::nullopt, element));
        return success();
      }
      if ((*x)[i] == 1)
        drop.set(i);
    }
  }
  SmallVector<int64_t, 6> out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop.test(i))
      out.push_back((*x)[i]);
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferUnsqueeze(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto axes = ctx.getConstantInts(1);
  if (!x || !axes) {
    Dims out;
    if (auto n = vectorLength(ctx, 1); n && x)
      out = SmallVector<int64_t, 6>(x->size() + *n, kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size() + axes->size();
  llvm::SmallBitVector inserted(rank);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
    if (failed(a))
      return failure();
    if (inserted.test(*a))
      return ctx.emitError("axes contain " + Twine(*a) + " twice");
    inserted.set(*a);
  }
  SmallVector<int64_t, 6> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted.test(i) ? 1 : (*x)[next++]);
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferConcat(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  if (ctx.getNumOperands() == 0)
    return ctx.emitError("needs at least one input");
  Type element;
  Dims out;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    if (!element)
      element = ctx.getElementType(i);
    else if (ctx.getElementType(i) && ctx.getElementType(i) != element)
      return ctx.emitError("inputs have different element types");
  }
  int64_t rank = -1;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i)
    if (Dims d = ctx.getDims(i)) {
      if (rank >= 0 && static_cast<int64_t>(d->size()) != rank)
        return ctx.emitError("inputs have different ranks");
      rank = d->size();
    }
  if (rank < 0) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(ctx, ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> dims(rank, kDynamic);
  int64_t total = 0;
  bool totalKnown = true;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    Dims d = ctx.getDims(i);
    if (!d) {
      totalKnown = false;
      continue;
    }
    for (int64_t j = 0; j < rank; ++j) {
      if (j == *axis)
        continue;
      if (dimsConflict(dims[j], (*d)[j]))
        return ctx.emitError("inputs differ in dim " + Twine(j) +
                             " outside the concatenation axis");
      if (ShapedType::isDynamic(dims[j]))
        dims[j] = (*d)[j];
    }
    if (ShapedType::isDynamic((*d)[*axis]))
      totalKnown = false;
    else
      total += (*d)[*axis];
  }
  dims[*axis] = totalKnown ? total : kDynamic;
  results.push_back(ctx.makeTensor(dims, element));
  return success();
}

LogicalResult shape::inferSlice(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  int64_t rank = x->size();
  auto starts = ctx.getConstantInts(1), ends = ctx.getConstantInts(2);
  std::optional<SmallVector<int64_t>> axes, steps;
  bool axesKnown = ctx.isAbsent(3) || (axes = ctx.getConstantInts(3));
  bool stepsKnown = ctx.isAbsent(4) || (steps = ctx.getConstantInts(4));
  SmallVector<int64_t, 6> out = *x;
  if (!axesKnown) {
    // Any axis may be sliced.
    results.push_back(
        ctx.makeTensor(SmallVector<int64_t, 6>(rank, kDynamic), element));
    return success();
  }
  size_t count = starts ? starts->size() : ends ? ends->size()
                 : axes ? axes->size() : vectorLength(ctx, 1).value_or(rank);
  if ((starts && ends && starts->size() != ends->size()) ||
      (axes && axes->size() != count) || (steps && steps->size() != count))
    return ctx.emitError("starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
    if (failed(a))
      return failure();
    int64_t dim = (*x)[*a];
    if (!starts || !ends || !stepsKnown || ShapedType::isDynamic(dim)) {
      out[*a] = kDynamic;
      continue;
    }
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0)
      return ctx.emitError("steps must not be 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      out[*a] = end > start ? llvm::divideCeil(end - start, step) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      out[*a] = start > end ? llvm::divideCeil(start - end, -step) : 0;
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGather(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), indices = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (!x || !indices) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  if (x->empty())
    return ctx.emitError("data must have rank >= 1");
  FailureOr<int64_t> axis = normalizeAxis(ctx, ctx.getInt("axis", 0), x->size());
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> out(x->begin(), x->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(x->begin() + *axis + 1, x->end());
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGatherElements(ShapeContext &ctx,
                                         SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), indices = ctx.getDims(1);
  if (x && indices && x->size() != indices->size())
    return ctx.emitError("data and indices must have the same rank");
  if (x)
    if (failed(normalizeAxis(ctx, ctx.getInt("axis", 0), x->size())))
      return failure();
  results.push_back(ctx.makeTensor(indices, ctx.getElementType(0)));
  return success();
}

/// ONNX GatherND: indices [..., k] pick slices of data after batch_dims:
/// the result is indices.shape[:-1] + data.shape[batch_dims + k:].
LogicalResult shape::inferGatherND(ShapeContext &ctx,
                                   SmallVectorImpl<Type> &results) {
  Dims data = ctx.getDims(0), indices = ctx.getDims(1);
  int64_t batchDims = ctx.getInt("batch_dims", 0);
  if (!data || !indices || indices->empty() ||
      ShapedType::isDynamic(indices->back())) {
    results.push_back(ctx.makeTensor(std::nullopt, ctx.getElementType(0)));
    return success();
  }
  int64_t k = indices->back();
  if (batchDims < 0 || batchDims + k > static_cast<int64_t>(data->size()) ||
      batchDims >= static_cast<int64_t>(indices->size()))
    return ctx.emitError("indices' last dim plus batch_dims exceeds the rank "
                         "of data");
  SmallVector<int64_t, 6> out(indices->begin(), indices->end() - 1);
  out.append(data->begin() + batchDims + k, data->end());
  results.push_back(ctx.makeTensor(out, ctx.getElementType(0)));
  return success();
}

LogicalResult shape::inferShape(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  if (!x) {
    results.push_back(
        ctx.makeTensor(SmallVector<int64_t, 6>{kDynamic}, i64));
    return success();
  }
  int64_t rank = x->size();
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  results.push_back(ctx.makeTensor(
      SmallVector<int64_t, 6>{std::max<int64_t>(end - start, 0)}, i64));
  return success();
}

LogicalResult shape::inferSize(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{},
                                   IntegerType::get(ctx.getContext(), 64)));
  return success();
}

LogicalResult shape::inferExpand(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto shape = ctx.getConstantInts(1);
  if (!shape) {
    Dims out;
    if (auto n = vectorLength(ctx, 1); n && x)
      out = SmallVector<int64_t, 6>(std::max<int64_t>(*n, x->size()), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  for (int64_t d : *shape)
    if (d < 0)
      return ctx.emitError("shape must not have negative dims");
  FailureOr<Dims> out =
      broadcastDims(x, SmallVector<int64_t, 6>(shape->begin(), shape->end()));
  if (failed(out))
    return ctx.emitError("input is not broadcastable to the requested shape");
  results.push_back(ctx.makeTensor(*out, element));
  return success();
}

LogicalResult shape::inferTile(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto repeats = ctx.getConstantInts(1);
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  SmallVector<int64_t, 6> out(x->size(), kDynamic);
  if (repeats) {
    if (repeats->size() != x->size())
      return ctx.emitError("repeats has " + Twine(repeats->size()) +
                           " values for rank " + Twine(x->size()));
    for (size_t i = 0; i < x->size(); ++i) {
      if ((*repeats)[i] < 0)
        return ctx.emitError("repeats must not be negative");
      out[i] = mulDims((*x)[i], (*repeats)[i]);
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferPad(ShapeContext &ctx,
                              SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  StringRef mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return ctx.emitError("unknown mode '" + mode + "'");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  SmallVector<int64_t, 6> out(x->size(), kDynamic);
  if (auto pads = ctx.getConstantInts(1)) {
    size_t rank = x->size();
    if (pads->size() != 2 * rank)
      return ctx.emitError("pads has " + Twine(pads->size()) +
                           " values for rank " + Twine(rank));
    for (size_t i = 0; i < rank; ++i) {
      if (ShapedType::isDynamic((*x)[i]))
        continue;
      out[i] = (*x)[i] + (*pads)[i] + (*pads)[i + rank];
      if (out[i] < 0)
        return ctx.emitError("pads remove more than the " + Twine((*x)[i]) +
                             " elements of dim " + Twine(i));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferResize(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  StringRef mode = ctx.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.emitError("unknown mode '" + mode + "'");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t rank = x->size();
  SmallVector<int64_t, 6> out(rank, kDynamic);
  if (auto sizes = ctx.getConstantInts(3); sizes && !sizes->empty()) {
    if (sizes->size() != rank)
      return ctx.emitError("sizes has " + Twine(sizes->size()) +
                           " values for rank " + Twine(rank));
    for (int64_t d : *sizes)
      if (d < 0)
        return ctx.emitError("sizes must not be negative");
    out.assign(sizes->begin(), sizes->end());
  } else if (auto scales = ctx.getConstantFloats(2);
             scales && !scales->empty()) {
    if (scales->size() != rank)
      return ctx.emitError("scales has " + Twine(scales->size()) +
                           " values for rank " + Twine(rank));
    for (size_t i = 0; i < rank; ++i) {
      if ((*scales)[i] <= 0)
        return ctx.emitError("scales must be positive");
      if (!ShapedType::isDynamic((*x)[i]))
        out[i] = static_cast<int64_t>(std::floor((*x)[i] * (*scales)[i]));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

static LogicalResult inferBlockRearrange(ShapeContext &ctx,
                                         SmallVectorImpl<Type> &results,
                                         bool toSpace) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  int64_t block = ctx.getInt("blocksize", 0);
  if (block <= 0)
    return ctx.emitError("blocksize must be positive");
  if (block > (int64_t(1) << 20))
    return ctx.emitError("blocksize " + Twine(block) + " is too large");
  if (x && x->size() != 4)
    return ctx.emitError("input must have rank 4");
  SmallVector<int64_t, 6> out(4, kDynamic);
  if (x) {
    auto [n, c, h, w] = std::make_tuple((*x)[0], (*x)[1], (*x)[2], (*x)[3]);
    out[0] = n;
    if (toSpace) {
      if (!ShapedType::isDynamic(c) && c % (block * block) != 0)
        return ctx.emitError("channels must be divisible by blocksize^2");
      out[1] = ShapedType::isDynamic(c) ? kDynamic : c / (block * block);
      out[2] = mulDims(h, block);
      out[3] = mulDims(w, block);
    } else {
      if ((!ShapedType::isDynamic(h) && h % block) ||
          (!ShapedType::isDynamic(w) && w % block))
        return ctx.emitError("height and width must be divisible by blocksize");
      out[1] = mulDims(c, block * block);
      out[2] = ShapedType::isDynamic(h) ? kDynamic : h / block;
      out[3] = ShapedType::isDynamic(w) ? kDynamic : w / block;
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferDepthToSpace(ShapeContext &ctx,
                                       SmallVectorImpl<Type> &results) {
  return inferBlockRearrange(ctx, results, /*toSpace=*/true);
}

LogicalResult shape::inferSpaceToDepth(ShapeContext &ctx,
                                       SmallVectorImpl<Type> &results) {
  return inferBlockRearrange(ctx, results, /*toSpace=*/false);
}

LogicalResult shape::inferDropout(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  results.push_back(ctx.getOperandType(0));
  results.push_back(ctx.makeTensor(ctx.getDims(0),
                                   IntegerType::get(ctx.getContext(), 1)));
  return success();
}

LogicalResult shape::inferTopK(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  if (x) {
    FailureOr<int64_t> axis =
        normalizeAxis(ctx, ctx.getInt("axis", -1), x->size());
    if (failed(axis))
      return failure();
    auto k = ctx.getConstantInts(1);
    if (k && k->size() == 1) {
      if ((*k)[0] < 0)
        return ctx.emitError("K must not be negative");
      if (!ShapedType::isDynamic((*x)[*axis]) && (*k)[0] > (*x)[*axis])
        return ctx.emitError("K " + Twine((*k)[0]) + " exceeds the axis size " +
                             Twine((*x)[*axis]));
    }
    (*x)[*axis] = (k && k->size() == 1) ? (*k)[0] : kDynamic;
  }
  results.push_back(ctx.makeTensor(x, ctx.getElementType(0)));
  results.push_back(ctx.makeTensor(x, i64));
  return success();
}

LogicalResult shape::inferNonZero(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  results.push_back(ctx.makeTensor(
      SmallVector<int64_t, 6>{x ? static_cast<int64_t>(x->size()) : kDynamic,
                              kDynamic},
      IntegerType::get(ctx.getContext(), 64)));
  return success();
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

SmallVector<int64_t>
mp::explicitWindowPads(StringRef autoPad, std::optional<ArrayRef<int64_t>> pads,
                       ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                       ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
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
