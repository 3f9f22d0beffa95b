//===- OpsetForms.cpp - operator forms that changed across opsets ---------===//

#include "mp/Dialect/MP/OpsetForms.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ShapeInference.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace mp {

bool takesAxesAsInput(llvm::StringRef opType, int64_t version) {
  static constexpr llvm::StringLiteral kReductions[] = {
      "ReduceMean",   "ReduceMax",       "ReduceMin",
      "ReduceProd",   "ReduceL1",        "ReduceL2",
      "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return version >= 18 && llvm::is_contained(kReductions, opType);
}

namespace {

/// Pad-18 with an `axes` input: (data, pads, constant_value, axes), the pads
/// given for those axes only -> the typed op's pads for every dim.
Operation *typedPadOf(OnnxGenericOp op, OpBuilder &builder) {
  ValueRange inputs = op.getInputs();
  auto dataType = dyn_cast<RankedTensorType>(inputs[0].getType());
  std::optional<SmallVector<int64_t>> pads = getConstantInts(inputs[1]);
  std::optional<SmallVector<int64_t>> axes = getConstantInts(inputs[3]);
  if (!dataType || !pads || !axes || pads->size() != 2 * axes->size())
    return nullptr;
  int64_t rank = dataType.getRank();
  SmallVector<int64_t> full(2 * rank, 0);
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    if (axis < -rank || axis >= rank)
      return nullptr; // the verifier of the typed op cannot say it better
    int64_t a = axis < 0 ? axis + rank : axis;
    full[a] = (*pads)[i];
    full[a + rank] = (*pads)[i + axes->size()];
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  auto padsType = RankedTensorType::get({2 * rank}, builder.getI64Type());
  Value fullPads = ConstantOp::create(
      builder, op.getLoc(), padsType, DenseIntElementsAttr::get(padsType, full),
      FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(), DenseI64ArrayAttr(),
      StringAttr(), ArrayAttr());
  OperationState state(op.getLoc(), PadOp::getOperationName());
  state.addOperands({inputs[0], fullPads, inputs[2]});
  if (DictionaryAttr attrs = op.getOnnxAttrsAttr())
    for (NamedAttribute attr : attrs) {
      if (attr.getName() != "mode")
        return nullptr;
      state.addAttribute(attr.getName(), attr.getValue());
    }
  if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
    state.addAttribute(MPDialect::kOutputNamesAttr, names);
  state.addTypes(op->getResultTypes());
  return builder.create(state);
}

} // namespace

Operation *typedFormOf(OnnxGenericOp op, OpBuilder &builder) {
  if (op.getDomain().empty() && op.getOpType() == "Pad" &&
      op.getVersion() >= 18 && op.getInputs().size() == 4 &&
      !isa<NoneType>(op.getInputs()[3].getType()) && op->getNumResults() == 1)
    return typedPadOf(op, builder);
  if (!op.getDomain().empty() ||
      !takesAxesAsInput(op.getOpType(), op.getVersion()) ||
      op.getInputs().empty() || op.getInputs().size() > 2 ||
      op->getNumResults() != 1)
    return nullptr;
  auto *dialect = op->getContext()->getLoadedDialect<MPDialect>();
  auto info = dialect->getOnnxOpTable().find(op.getOpType());
  if (info == dialect->getOnnxOpTable().end())
    return nullptr;

  SmallVector<int64_t> axes;
  if (op.getInputs().size() == 2 &&
      !isa<NoneType>(op.getInputs()[1].getType())) {
    std::optional<SmallVector<int64_t>> constant =
        getConstantInts(op.getInputs()[1]);
    if (!constant)
      return nullptr;
    axes = std::move(*constant);
  }
  OperationState state(op.getLoc(), info->second.opName.getStringRef());
  state.addOperands(op.getInputs()[0]);
  if (DictionaryAttr attrs = op.getOnnxAttrsAttr())
    for (NamedAttribute attr : attrs) {
      if (attr.getName() == "noop_with_empty_axes") {
        auto noop = dyn_cast<IntegerAttr>(attr.getValue());
        if (axes.empty() && (!noop || noop.getInt() != 0))
          return nullptr; // reduces nothing: no typed form
        continue;
      }
      if (attr.getName() != "keepdims")
        return nullptr; // an attribute the typed op does not have
      state.addAttribute(attr.getName(), attr.getValue());
    }
  if (!axes.empty())
    state.addAttribute("axes", builder.getDenseI64ArrayAttr(axes));
  if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
    state.addAttribute(MPDialect::kOutputNamesAttr, names);
  state.addTypes(op->getResultTypes());
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  Operation *typed = builder.create(state);
  return typed;
}

} // namespace mp
