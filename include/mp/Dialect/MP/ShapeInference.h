//===- ShapeInference.h - result types of typed mp ops -----------*- C++ -*-===//
//
// Result-type inference for the typed ONNX ops, following the ONNX operator
// specifications. Each function in mp::shape infers the result types of one
// family of ops from the operand types, the attributes and constant operands.
// Static dims are computed where ONNX semantics allow; other dims stay dynamic
// (`?`), and a result whose rank is unknown is an unranked tensor. Semantic
// errors (e.g. mismatched ranks) are reported at the op's location.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_SHAPEINFERENCE_H
#define MP_DIALECT_MP_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include <functional>
#include <optional>
#include <type_traits>

namespace mp {

/// A dimension list; std::nullopt means "rank unknown".
using Dims = std::optional<llvm::SmallVector<int64_t, 6>>;

/// Everything a shape function may look at.
class ShapeContext {
public:
  using AttrLookup = std::function<mlir::Attribute(llvm::StringRef)>;

  ShapeContext(mlir::MLIRContext *context, std::optional<mlir::Location> loc,
               mlir::ValueRange operands, mlir::DictionaryAttr attributes,
               AttrLookup inherent, llvm::StringRef onnxOpType)
      : context(context), loc(loc), operands(operands),
        attributes(attributes), inherent(std::move(inherent)),
        onnxOpType(onnxOpType) {}

  mlir::MLIRContext *getContext() const { return context; }
  llvm::StringRef getOpType() const { return onnxOpType; }
  unsigned getNumOperands() const { return operands.size(); }
  mlir::Value getOperand(unsigned i) const { return operands[i]; }
  mlir::Type getOperandType(unsigned i) const {
    return i < operands.size() ? operands[i].getType() : mlir::Type();
  }
  /// True when operand i is absent (an optional input given as `none`).
  bool isAbsent(unsigned i) const;
  /// The element type of operand i, or null when it is not a known tensor.
  mlir::Type getElementType(unsigned i) const;
  /// The dims of operand i, nullopt when unranked or not a tensor.
  Dims getDims(unsigned i) const;

  /// An attribute by ONNX name, null when absent.
  mlir::Attribute getAttr(llvm::StringRef name) const;
  int64_t getInt(llvm::StringRef name, int64_t defaultValue) const;
  float getFloat(llvm::StringRef name, float defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>> getInts(llvm::StringRef name) const;
  llvm::StringRef getString(llvm::StringRef name,
                            llvm::StringRef defaultValue) const;

  /// The values of operand i when it is a compile-time constant of integer
  /// (resp. floating-point) type.
  std::optional<llvm::SmallVector<int64_t>> getConstantInts(unsigned i) const;
  std::optional<llvm::SmallVector<double>> getConstantFloats(unsigned i) const;

  /// Reports an error at the op (when a location is known) and fails.
  llvm::LogicalResult emitError(const llvm::Twine &message) const;

  /// A tensor type of `elementType` (or !mp.unknown when that is null).
  mlir::Type makeTensor(const Dims &dims, mlir::Type elementType) const;

private:
  mlir::MLIRContext *context;
  std::optional<mlir::Location> loc;
  mlir::ValueRange operands;
  mlir::DictionaryAttr attributes;
  AttrLookup inherent;
  llvm::StringRef onnxOpType;
};

/// The type ONNX data type `onnxDataType` (TensorProto::DataType) maps to, or
/// null when it has no mapping.
mlir::Type getTypeForOnnxDataType(mlir::MLIRContext *context,
                                  int64_t onnxDataType);
/// The inverse of getTypeForOnnxDataType; 0 (UNDEFINED) when none.
int64_t getOnnxDataTypeForType(mlir::Type type);

/// True when a value of type `inferred` may have type `actual`: equal element
/// types and ranks, and dims that agree wherever both are static. Unranked
/// tensors and !mp.unknown are compatible with any refinement.
bool isCompatibleType(mlir::Type inferred, mlir::Type actual);
bool areCompatibleTypeLists(mlir::TypeRange inferred, mlir::TypeRange actual);
/// The more refined of two compatible types.
mlir::Type refineType(mlir::Type a, mlir::Type b);
/// Refines the result types of `op` (an mp op) by what its operands now
/// say: InferTypeOpInterface ops, and mp.split (a variable number of
/// results). Fails when inference reports an error (emitted on `op`).
mlir::LogicalResult refineResultTypes(mlir::Operation *op);

/// The compile-time value of `value`: an initializer's tensor, or the
/// attribute a ConstantLike op (mp.constant, ...) folds to; null otherwise.
mlir::Attribute getConstantValue(mlir::Value value);

/// getConstantValue's integers (axes, pads, sizes); nullopt for a null or
/// none value, one that is not constant, or a non-integer constant.
std::optional<llvm::SmallVector<int64_t>> getConstantInts(mlir::Value value);
/// getConstantValue's floats (scales, roi), as getConstantInts.
std::optional<llvm::SmallVector<double>> getConstantFloats(mlir::Value value);

/// Explicit pads of a conv or pool window (begins for every spatial dim, then
/// ends), resolving ONNX auto_pad from the static input and output sizes:
/// SAME_UPPER puts the odd pad at the end, SAME_LOWER at the begin, VALID
/// has none, NOTSET uses `pads` (zeros when absent).
llvm::SmallVector<int64_t>
explicitWindowPads(llvm::StringRef autoPad,
                   std::optional<llvm::ArrayRef<int64_t>> pads,
                   llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
                   llvm::ArrayRef<int64_t> kernel,
                   llvm::ArrayRef<int64_t> strides,
                   llvm::ArrayRef<int64_t> dilations);

/// Broadcasts two dim lists (numpy rules); failure on a static mismatch.
llvm::FailureOr<Dims> broadcastDims(const Dims &a, const Dims &b);

namespace shape {
#define MP_SHAPE_FN(name)                                                      \
  llvm::LogicalResult name(ShapeContext &ctx,                                  \
                           llvm::SmallVectorImpl<mlir::Type> &results);
MP_SHAPE_FN(inferSameAsFirst)
MP_SHAPE_FN(inferSameShapeBool)
MP_SHAPE_FN(inferBroadcast)
MP_SHAPE_FN(inferBroadcastToBool)
MP_SHAPE_FN(inferWhere)
MP_SHAPE_FN(inferCast)
MP_SHAPE_FN(inferCastLike)
MP_SHAPE_FN(inferMatMul)
MP_SHAPE_FN(inferGemm)
MP_SHAPE_FN(inferEinsum)
MP_SHAPE_FN(inferConv)
MP_SHAPE_FN(inferConvTranspose)
MP_SHAPE_FN(inferPool)
MP_SHAPE_FN(inferGlobalPool)
MP_SHAPE_FN(inferBatchNorm)
MP_SHAPE_FN(inferLayerNorm)
MP_SHAPE_FN(inferRmsNorm)
MP_SHAPE_FN(inferAttention)
MP_SHAPE_FN(inferReduce)
MP_SHAPE_FN(inferArgReduce)
MP_SHAPE_FN(inferLoss)
MP_SHAPE_FN(inferRecurrent)
MP_SHAPE_FN(inferReshape)
MP_SHAPE_FN(inferTranspose)
MP_SHAPE_FN(inferFlatten)
MP_SHAPE_FN(inferSqueeze)
MP_SHAPE_FN(inferUnsqueeze)
MP_SHAPE_FN(inferConcat)
MP_SHAPE_FN(inferSlice)
MP_SHAPE_FN(inferGather)
MP_SHAPE_FN(inferGatherElements)
MP_SHAPE_FN(inferGatherND)
MP_SHAPE_FN(inferShape)
MP_SHAPE_FN(inferSize)
MP_SHAPE_FN(inferExpand)
MP_SHAPE_FN(inferTile)
MP_SHAPE_FN(inferPad)
MP_SHAPE_FN(inferCenterCropPad)
MP_SHAPE_FN(inferResize)
MP_SHAPE_FN(inferDepthToSpace)
MP_SHAPE_FN(inferSpaceToDepth)
MP_SHAPE_FN(inferDropout)
MP_SHAPE_FN(inferTopK)
MP_SHAPE_FN(inferNonZero)
MP_SHAPE_FN(inferConstant)
MP_SHAPE_FN(inferConstantOfShape)
MP_SHAPE_FN(inferRange)
#undef MP_SHAPE_FN
} // namespace shape

namespace detail {
template <typename OpTy, typename = void>
struct HasInherentAttrLookup : std::false_type {};
template <typename OpTy>
struct HasInherentAttrLookup<
    OpTy, std::void_t<decltype(OpTy::getInherentAttr(
              std::declval<mlir::MLIRContext *>(),
              std::declval<const typename OpTy::Properties &>(),
              std::declval<llvm::StringRef>()))>> : std::true_type {};

/// Looks up inherent attributes of OpTy stored in `properties`.
template <typename OpTy>
ShapeContext::AttrLookup
makeInherentAttrLookup(mlir::MLIRContext *context,
                       mlir::OpaqueProperties properties) {
  if constexpr (HasInherentAttrLookup<OpTy>::value) {
    const auto *props =
        properties ? properties.as<const typename OpTy::Properties *>()
                   : nullptr;
    return [context, props](llvm::StringRef name) -> mlir::Attribute {
      if (!props)
        return {};
      std::optional<mlir::Attribute> attr =
          OpTy::getInherentAttr(context, *props, name);
      return attr ? *attr : mlir::Attribute();
    };
  } else {
    return [](llvm::StringRef) { return mlir::Attribute(); };
  }
}
} // namespace detail
} // namespace mp

#endif // MP_DIALECT_MP_SHAPEINFERENCE_H
