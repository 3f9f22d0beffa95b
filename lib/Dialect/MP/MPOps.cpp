//===- MPOps.cpp - ops of the mp dialect ---------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mp;

#define GET_OP_CLASSES
#include "mp/Dialect/MP/MPOps.cpp.inc"

//===----------------------------------------------------------------------===//
// InitializerOp
//===----------------------------------------------------------------------===//

LogicalResult InitializerOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Adaptor adaptor(operands, attributes, properties, regions);
  if (!adaptor.getValue())
    return failure();
  inferredReturnTypes.push_back(adaptor.getValue().getType());
  return success();
}

LogicalResult InitializerOp::verify() {
  if (getName().empty())
    return emitOpError("initializer must have a name");
  if (!isa<RankedTensorType>(getValue().getType()))
    return emitOpError("initializer value must be a ranked tensor");
  return success();
}

//===----------------------------------------------------------------------===//
// NoneOp
//===----------------------------------------------------------------------===//

OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }

//===----------------------------------------------------------------------===//
// OnnxGenericOp
//===----------------------------------------------------------------------===//

LogicalResult OnnxGenericOp::verify() {
  if (getOpType().empty())
    return emitOpError("op_type must not be empty");
  if (getVersion() < 1)
    return emitOpError("opset version must be positive, got ")
           << getVersion();
  size_t numNames = getRegionNames() ? getRegionNames()->size() : 0;
  if (numNames != getSubgraphs().size())
    return emitOpError("has ")
           << getSubgraphs().size() << " subgraph regions but " << numNames
           << " region names";
  for (Region &region : getSubgraphs()) {
    if (region.empty() || !isa<YieldOp>(region.front().getTerminator()))
      return emitOpError("subgraph regions must end with mp.yield");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

SmallVector<Type> SplitOp::inferOutputTypes() {
  auto inputType = dyn_cast<RankedTensorType>(getInput().getType());
  if (!inputType)
    return {};
  int64_t rank = inputType.getRank();
  int64_t axis = getAxis().value_or(0);
  if (axis < -rank || axis >= rank)
    return {};
  if (axis < 0)
    axis += rank;
  ShapeContext ctx(getContext(), getLoc(), getOperation()->getOperands(), {},
                   nullptr, kOnnxOpType);
  int64_t dim = inputType.getDimSize(axis);
  size_t numOutputs = getOutputs().size();
  SmallVector<int64_t> parts(numOutputs, ShapedType::kDynamic);
  if (auto sizes = ctx.getConstantInts(1)) {
    if (sizes->size() == numOutputs)
      parts.assign(sizes->begin(), sizes->end());
  } else if (ctx.isAbsent(1) && !ShapedType::isDynamic(dim)) {
    // Equal parts; when the dim does not divide (Split-18's num_outputs
    // only), each part has ceil(dim / n) and the last one the rest.
    int64_t n = static_cast<int64_t>(numOutputs);
    int64_t part = (dim + n - 1) / n;
    int64_t last = dim - part * (n - 1);
    if (dim % n == 0 || (getNumOutputs() && last >= 0)) {
      parts.assign(numOutputs, part);
      parts.back() = last;
    }
  }
  SmallVector<Type> types;
  for (int64_t part : parts) {
    SmallVector<int64_t> shape(inputType.getShape());
    shape[axis] = part;
    types.push_back(RankedTensorType::get(shape, inputType.getElementType()));
  }
  return types;
}

LogicalResult SplitOp::verify() {
  if (getOutputs().empty())
    return emitOpError("must have at least one output");
  auto inputType = dyn_cast<RankedTensorType>(getInput().getType());
  if (!inputType)
    return success();
  int64_t rank = inputType.getRank();
  int64_t axis = getAxis().value_or(0);
  if (axis < -rank || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  for (Value output : getOutputs()) {
    auto outputType = dyn_cast<RankedTensorType>(output.getType());
    if (!outputType)
      continue;
    if (outputType.getRank() != rank)
      return emitOpError("outputs must have the input's rank ") << rank;
    if (outputType.getElementType() != inputType.getElementType())
      return emitOpError("outputs must have the input's element type");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      int64_t in = inputType.getDimSize(d), out = outputType.getDimSize(d);
      if (!ShapedType::isDynamic(in) && !ShapedType::isDynamic(out) &&
          in != out)
        return emitOpError("output dim ")
               << d << " is " << out << " but the input's is " << in;
    }
  }
  // With constant sizes, their count and sum must match.
  ShapeContext ctx(getContext(), getLoc(), getOperation()->getOperands(), {},
                   nullptr, kOnnxOpType);
  int64_t dim = inputType.getDimSize(axis);
  int64_t numOutputs = getOutputs().size();
  if (auto sizes = ctx.getConstantInts(1)) {
    if (sizes->size() != getOutputs().size())
      return emitOpError("'split' gives ")
             << sizes->size() << " sizes for " << getOutputs().size()
             << " outputs";
    int64_t total = 0;
    for (int64_t s : *sizes) {
      if (s < 0)
        return emitOpError("'split' sizes must not be negative");
      total += s;
    }
    if (!ShapedType::isDynamic(dim) && total != dim)
      return emitOpError("'split' sizes add up to ")
             << total << " but the axis has " << dim << " elements";
  } else if (ctx.isAbsent(1) && !ShapedType::isDynamic(dim) &&
             dim % numOutputs != 0) {
    // Without sizes the axis is split into equal parts; num_outputs
    // (Split-18) gives the last part the rest, which must not be negative.
    int64_t part = (dim + numOutputs - 1) / numOutputs;
    if (!getNumOutputs() || dim - part * (numOutputs - 1) < 0)
      return emitOpError("cannot split the axis of ")
             << dim << " elements into " << numOutputs << " equal parts";
  }
  if (std::optional<int64_t> parts = getNumOutputs();
      parts && *parts != numOutputs)
    return emitOpError("num_outputs is ")
           << *parts << " but the op has " << numOutputs << " outputs";
  // The declared output types must agree with the parts the sizes give.
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getOutputs(), inferOutputTypes()))) {
    auto [output, inferred] = pair;
    auto outputType = dyn_cast<RankedTensorType>(output.getType());
    int64_t part = cast<RankedTensorType>(inferred).getDimSize(axis);
    if (!outputType || outputType.isDynamicDim(axis) ||
        ShapedType::isDynamic(part))
      continue;
    if (outputType.getDimSize(axis) != part)
      return emitOpError("output #")
             << i << " has " << outputType.getDimSize(axis)
             << " elements along the axis but the split gives it " << part;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) {
  if (auto value = getValueAttr())
    return value;
  MLIRContext *ctx = getContext();
  auto scalar = [](Type t) { return RankedTensorType::get({}, t); };
  auto vector = [](int64_t n, Type t) { return RankedTensorType::get({n}, t); };
  if (auto v = getValueFloatAttr())
    return DenseElementsAttr::get(scalar(Float32Type::get(ctx)),
                                  v.getValue());
  if (auto v = getValueIntAttr())
    return DenseElementsAttr::get(scalar(IntegerType::get(ctx, 64)),
                                  v.getValue());
  if (auto v = getValueFloatsAttr())
    return DenseElementsAttr::get(vector(v.size(), Float32Type::get(ctx)),
                                  v.asArrayRef());
  if (auto v = getValueIntsAttr())
    return DenseElementsAttr::get(vector(v.size(), IntegerType::get(ctx, 64)),
                                  v.asArrayRef());
  if (auto v = getValueStringAttr())
    return DenseElementsAttr::get(scalar(StringType::get(ctx)),
                                  {v.getValue()});
  if (auto v = getValueStringsAttr()) {
    SmallVector<StringRef> strings;
    for (Attribute s : v)
      strings.push_back(cast<StringAttr>(s).getValue());
    return DenseElementsAttr::get(vector(strings.size(), StringType::get(ctx)),
                                  strings);
  }
  return {};
}

//===----------------------------------------------------------------------===//
// BatchNormGradOp
//===----------------------------------------------------------------------===//

LogicalResult BatchNormGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  Adaptor adaptor(operands, attributes, properties, regions);
  Type scale = adaptor.getScale().getType();
  inferredReturnTypes.append({adaptor.getX().getType(), scale, scale});
  return success();
}

//===----------------------------------------------------------------------===//
// AllReduceOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty() || getInputs().size() != getOutputs().size())
    return emitOpError("needs as many outputs as inputs (and at least one), "
                       "got ")
           << getInputs().size() << " and " << getOutputs().size();
  for (auto [in, out] : llvm::zip(getInputs(), getOutputs()))
    if (in.getType() != out.getType())
      return emitOpError("output ")
             << out.getType() << " does not have the type of its input "
             << in.getType();
  StringRef reduction = getReduction();
  if (reduction != "mean" && reduction != "sum" && reduction != "max")
    return emitOpError("reduction must be mean, sum or max, got '")
           << reduction << "'";
  Type wire = getReduceType();
  if (!wire.isF32() && !wire.isBF16() && !wire.isF16())
    return emitOpError("reduce_type must be f32, bf16 or f16, got ") << wire;
  return success();
}

//===----------------------------------------------------------------------===//
// UnscaleCheckFiniteOp
//===----------------------------------------------------------------------===//

LogicalResult UnscaleCheckFiniteOp::verify() {
  if (getGradients().empty())
    return emitOpError("needs at least one gradient");
  if (getGradients().size() != getUnscaled().size())
    return emitOpError("has ")
           << getGradients().size() << " gradients but "
           << getUnscaled().size() << " unscaled results";
  for (auto [grad, unscaled] : llvm::zip(getGradients(), getUnscaled())) {
    auto in = dyn_cast<ShapedType>(grad.getType());
    auto out = cast<ShapedType>(unscaled.getType());
    if (in && in.hasRank() && in.getShape() != out.getShape())
      return emitOpError("unscaled result ")
             << out << " does not have the shape of its gradient " << in;
  }
  return success();
}
