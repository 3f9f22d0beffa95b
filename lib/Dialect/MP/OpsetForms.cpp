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

/// Resize-18 with the `axes` attribute: roi, scales or sizes given for those
/// axes only -> the typed op's for every dim (roi [0, 1], scale 1, the
/// input's size elsewhere). Antialiasing and keep_aspect_ratio_policy other
/// than their defaults have no typed form.
Operation *typedResizeOf(OnnxGenericOp op, OpBuilder &builder) {
  ValueRange inputs = op.getInputs();
  DictionaryAttr attrs = op.getOnnxAttrsAttr();
  auto axesAttr = attrs ? attrs.getAs<DenseI64ArrayAttr>("axes") : nullptr;
  auto dataType = dyn_cast<RankedTensorType>(inputs[0].getType());
  if (!axesAttr || !dataType)
    return nullptr;
  const int64_t rank = dataType.getRank();
  SmallVector<int64_t> axes;
  for (int64_t axis : axesAttr.asArrayRef()) {
    if (axis < -rank || axis >= rank)
      return nullptr;
    axes.push_back(axis < 0 ? axis + rank : axis);
  }
  // The attributes first: nothing is built for a node without typed form.
  SmallVector<NamedAttribute> kept;
  static constexpr llvm::StringLiteral kTypedAttrs[] = {
      "coordinate_transformation_mode",
      "cubic_coeff_a",
      "exclude_outside",
      "extrapolation_value",
      "mode",
      "nearest_mode"};
  for (NamedAttribute attr : attrs) {
    StringRef name = attr.getName();
    if (name == "axes")
      continue;
    if (name == "antialias") {
      auto value = dyn_cast<IntegerAttr>(attr.getValue());
      if (!value || value.getInt() != 0)
        return nullptr;
      continue;
    }
    if (name == "keep_aspect_ratio_policy") {
      auto value = dyn_cast<StringAttr>(attr.getValue());
      if (!value || value.getValue() != "stretch")
        return nullptr;
      continue;
    }
    if (!llvm::is_contained(kTypedAttrs, name))
      return nullptr;
    kept.push_back(attr);
  }
  const size_t n = axes.size();
  auto present = [&](size_t i) {
    return i < inputs.size() && !isa<NoneType>(inputs[i].getType());
  };
  // Then the values, all constant and of the axes' length.
  std::optional<SmallVector<double>> roi, scales;
  std::optional<SmallVector<int64_t>> sizes;
  if (present(1) &&
      (!(roi = getConstantFloats(inputs[1])) || roi->size() != 2 * n))
    return nullptr;
  if (present(2) &&
      (!(scales = getConstantFloats(inputs[2])) || scales->size() != n))
    return nullptr;
  if (present(3) && (!(sizes = getConstantInts(inputs[3])) ||
                     sizes->size() != n || !dataType.hasStaticShape()))
    return nullptr;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  auto constant = [&](RankedTensorType type, DenseElementsAttr value) {
    return ConstantOp::create(builder, op.getLoc(), type, value, FloatAttr(),
                              DenseF32ArrayAttr(), IntegerAttr(),
                              DenseI64ArrayAttr(), StringAttr(), ArrayAttr())
        .getResult();
  };
  SmallVector<Value, 4> operands = {inputs[0]};
  for (size_t i = 1; i < 4; ++i)
    operands.push_back(i < inputs.size() ? inputs[i] : Value());
  if (roi) { // starts, then ends
    SmallVector<float> full(2 * rank, 0.0f);
    for (int64_t d = 0; d < rank; ++d)
      full[rank + d] = 1.0f;
    for (size_t i = 0; i < n; ++i) {
      full[axes[i]] = static_cast<float>((*roi)[i]);
      full[rank + axes[i]] = static_cast<float>((*roi)[n + i]);
    }
    auto type = RankedTensorType::get({2 * rank}, builder.getF32Type());
    operands[1] = constant(type, DenseElementsAttr::get(type, ArrayRef(full)));
  }
  if (scales) {
    SmallVector<float> full(rank, 1.0f);
    for (size_t i = 0; i < n; ++i)
      full[axes[i]] = static_cast<float>((*scales)[i]);
    auto type = RankedTensorType::get({rank}, builder.getF32Type());
    operands[2] = constant(type, DenseElementsAttr::get(type, ArrayRef(full)));
  }
  if (sizes) {
    SmallVector<int64_t> full(dataType.getShape());
    for (size_t i = 0; i < n; ++i)
      full[axes[i]] = (*sizes)[i];
    auto type = RankedTensorType::get({rank}, builder.getI64Type());
    operands[3] = constant(type, DenseIntElementsAttr::get(type, full));
  }
  for (Value &operand : operands)
    if (!operand)
      operand = NoneOp::create(builder, op.getLoc());
  OperationState state(op.getLoc(), ResizeOp::getOperationName());
  state.addOperands(operands);
  state.addAttributes(kept);
  if (Attribute names = op->getAttr(MPDialect::kOutputNamesAttr))
    state.addAttribute(MPDialect::kOutputNamesAttr, names);
  state.addTypes(op->getResultTypes());
  return builder.create(state);
}

/// An i64 list constant before `op`.
Value i64Constant(OpBuilder &builder, Location loc, ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({int64_t(values.size())}, builder.getI64Type());
  return ConstantOp::create(builder, loc, type,
                            DenseIntElementsAttr::get(type, values),
                            FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
                            DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
}

/// The forms of opsets 1-6 (older exporters, ONNX's pytorch-converted and
/// pytorch-operator test models) whose typed op came later with the same
/// computation, or with attributes that became inputs:
///  * Add, Sub, Mul, Div, Pow with the legacy `broadcast` (B onto A from
///    `axis`; without axis from the end: numpy's rule) -> the typed op, B
///    reshaped with trailing 1s when `axis` is given;
///  * Sum, Max, Min, Mean (equal shapes), Gemm (`broadcast` of C),
///    MaxPool-1, AveragePool-1 and BatchNormalization-6 in test mode -> the
///    typed op without the attributes that said so (and the outputs the
///    typed op always has);
///  * PRelu-6 with a slope per channel -> the slope reshaped onto dim 1;
///    Clip-6 -> its `min` / `max` as constant inputs;
///  * ReduceSum (`axes`), Pad-2 (`pads`, `value`), Slice-1 (`starts`,
///    `ends`, `axes`) and Split-2 (`split`) -> the typed op with those as
///    constant inputs.
/// `consumed_inputs` (opsets < 6) said nothing about the values.
Operation *typedLegacyFormOf(OnnxGenericOp op, OpBuilder &builder) {
  StringRef opType = op.getOpType();
  ValueRange inputs = op.getInputs();
  auto *dialect = op->getContext()->getLoadedDialect<MPDialect>();
  auto info = dialect->getOnnxOpTable().find(opType);
  if (info == dialect->getOnnxOpTable().end() ||
      int64_t(op.getVersion()) >= info->second.sinceVersion || inputs.empty())
    return nullptr;
  DictionaryAttr attrs = op.getOnnxAttrsAttr();
  auto intAttr = [&](StringRef name) -> std::optional<int64_t> {
    auto a = attrs ? attrs.getAs<IntegerAttr>(name) : IntegerAttr();
    return a ? std::optional<int64_t>(a.getInt()) : std::nullopt;
  };
  auto intsAttr = [&](StringRef name) -> std::optional<ArrayRef<int64_t>> {
    auto a = attrs ? attrs.getAs<DenseI64ArrayAttr>(name) : nullptr;
    return a ? std::optional<ArrayRef<int64_t>>(a.asArrayRef()) : std::nullopt;
  };
  // The attributes the typed op keeps, and those this form drops.
  SmallVector<NamedAttribute> kept;
  auto sortAttrs = [&](std::initializer_list<StringRef> keep,
                       std::initializer_list<StringRef> drop) {
    if (!attrs)
      return true;
    for (NamedAttribute a : attrs) {
      StringRef name = a.getName().getValue();
      if (llvm::is_contained(keep, name))
        kept.push_back(a);
      else if (!llvm::is_contained(drop, name) && name != "consumed_inputs")
        return false;
    }
    return true;
  };
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  Location loc = op.getLoc();
  SmallVector<Value> operands(inputs.begin(), inputs.end());
  static constexpr llvm::StringLiteral kBinary[] = {"Add", "Sub", "Mul", "Div",
                                                    "Pow"};
  static constexpr llvm::StringLiteral kVariadic[] = {"Sum", "Max", "Min",
                                                      "Mean"};
  if (llvm::is_contained(kBinary, opType) && inputs.size() == 2) {
    if (!sortAttrs({}, {"broadcast", "axis"}))
      return nullptr;
    std::optional<int64_t> axis = intAttr("axis");
    if (axis && intAttr("broadcast").value_or(0) == 1) {
      auto a = dyn_cast<RankedTensorType>(inputs[0].getType());
      auto b = dyn_cast<RankedTensorType>(inputs[1].getType());
      if (!a || !b || !b.hasStaticShape())
        return nullptr;
      int64_t start = *axis < 0 ? *axis + a.getRank() : *axis;
      int64_t trailing = a.getRank() - start - b.getRank();
      if (start < 0 || trailing < 0)
        return nullptr;
      if (trailing > 0) {
        SmallVector<int64_t> shape(b.getShape());
        shape.append(trailing, 1);
        OperationState reshape(loc, ReshapeOp::getOperationName());
        reshape.addOperands({inputs[1], i64Constant(builder, loc, shape)});
        reshape.addTypes(RankedTensorType::get(shape, b.getElementType()));
        operands[1] = builder.create(reshape)->getResult(0);
      }
    }
  } else if (llvm::is_contained(kVariadic, opType)) {
    if (!sortAttrs({}, {}))
      return nullptr;
  } else if (opType == "PRelu" && inputs.size() == 2) {
    if (!sortAttrs({}, {}))
      return nullptr;
    // PRelu-6's slope of C values is per channel (dim 1): [C, 1, ...].
    auto x = dyn_cast<RankedTensorType>(inputs[0].getType());
    auto slope = dyn_cast<RankedTensorType>(inputs[1].getType());
    if (!x || !slope || !slope.hasStaticShape())
      return nullptr;
    if (slope.getRank() == 1 && x.getRank() > 2 && slope.getDimSize(0) > 1) {
      if (x.isDynamicDim(1) || x.getDimSize(1) != slope.getDimSize(0))
        return nullptr;
      SmallVector<int64_t> shape(x.getRank() - 1, 1);
      shape[0] = slope.getDimSize(0);
      OperationState reshape(loc, ReshapeOp::getOperationName());
      reshape.addOperands({inputs[1], i64Constant(builder, loc, shape)});
      reshape.addTypes(RankedTensorType::get(shape, slope.getElementType()));
      operands[1] = builder.create(reshape)->getResult(0);
    }
  } else if (opType == "Clip" && inputs.size() == 1) {
    // Clip-6: the bounds as attributes (absent: unbounded).
    auto x = dyn_cast<RankedTensorType>(inputs[0].getType());
    if (!x || !isa<FloatType>(x.getElementType()) ||
        !sortAttrs({}, {"min", "max"}))
      return nullptr;
    auto scalar = RankedTensorType::get({}, x.getElementType());
    for (StringRef bound : {"min", "max"}) {
      auto value = attrs ? attrs.getAs<FloatAttr>(bound) : FloatAttr();
      if (!value) {
        operands.push_back(NoneOp::create(builder, loc));
        continue;
      }
      operands.push_back(ConstantOp::create(
          builder, loc, scalar,
          DenseElementsAttr::get(
              scalar,
              FloatAttr::get(x.getElementType(), value.getValueAsDouble())),
          FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(), DenseI64ArrayAttr(),
          StringAttr(), ArrayAttr()));
    }
  } else if (opType == "Gemm") {
    if (!sortAttrs({"alpha", "beta", "transA", "transB"}, {"broadcast"}))
      return nullptr;
  } else if (opType == "MaxPool" || opType == "AveragePool") {
    if (!sortAttrs({"auto_pad", "kernel_shape", "pads", "strides"}, {}))
      return nullptr;
  } else if (opType == "BatchNormalization") {
    // Test mode (inference), per channel: the typed op's computation.
    if (intAttr("is_test").value_or(0) != 1 ||
        intAttr("spatial").value_or(1) != 1 ||
        !sortAttrs({"epsilon", "momentum"}, {"is_test", "spatial"}))
      return nullptr;
  } else if (opType == "ReduceSum" && inputs.size() == 1) {
    if (!sortAttrs({"keepdims"}, {"axes"}))
      return nullptr;
    if (std::optional<ArrayRef<int64_t>> axes = intsAttr("axes"))
      operands.push_back(i64Constant(builder, loc, *axes));
  } else if (opType == "Pad" && inputs.size() == 1) {
    std::optional<ArrayRef<int64_t>> pads = intsAttr("pads");
    if (!pads || !sortAttrs({"mode"}, {"pads", "value"}))
      return nullptr;
    auto data = dyn_cast<RankedTensorType>(inputs[0].getType());
    auto valueAttr = attrs ? attrs.getAs<FloatAttr>("value") : FloatAttr();
    if (!data || (valueAttr && !isa<FloatType>(data.getElementType())))
      return nullptr;
    operands.push_back(i64Constant(builder, loc, *pads));
    if (valueAttr) {
      auto scalar = RankedTensorType::get({}, data.getElementType());
      operands.push_back(ConstantOp::create(
          builder, loc, scalar,
          DenseElementsAttr::get(scalar,
                                 FloatAttr::get(data.getElementType(),
                                                valueAttr.getValueAsDouble())),
          FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(), DenseI64ArrayAttr(),
          StringAttr(), ArrayAttr()));
    } else {
      operands.push_back(NoneOp::create(builder, loc));
    }
  } else if (opType == "Slice" && inputs.size() == 1) {
    std::optional<ArrayRef<int64_t>> starts = intsAttr("starts"),
                                     ends = intsAttr("ends");
    if (!starts || !ends || !sortAttrs({}, {"starts", "ends", "axes"}))
      return nullptr;
    operands.push_back(i64Constant(builder, loc, *starts));
    operands.push_back(i64Constant(builder, loc, *ends));
    if (std::optional<ArrayRef<int64_t>> axes = intsAttr("axes"))
      operands.push_back(i64Constant(builder, loc, *axes));
    else
      operands.push_back(NoneOp::create(builder, loc));
    operands.push_back(NoneOp::create(builder, loc)); // steps
  } else if (opType == "Split" && inputs.size() == 1) {
    if (!sortAttrs({"axis"}, {"split"}))
      return nullptr;
    if (std::optional<ArrayRef<int64_t>> split = intsAttr("split"))
      operands.push_back(i64Constant(builder, loc, *split));
    else
      operands.push_back(NoneOp::create(builder, loc));
  } else {
    return nullptr;
  }
  OperationState state(loc, info->second.opName.getStringRef());
  state.addOperands(operands);
  state.addAttributes(kept);
  SmallVector<Type> types(op->getResultTypes());
  // Outputs the typed op always has and the old form had not (unnamed).
  if (opType == "MaxPool" && types.size() == 1) {
    auto y = dyn_cast<RankedTensorType>(types[0]);
    if (!y)
      return nullptr;
    types.push_back(RankedTensorType::get(y.getShape(), builder.getI64Type()));
  } else if (opType == "BatchNormalization" && types.size() == 1 &&
             inputs.size() == 5) {
    types.push_back(inputs[3].getType());
    types.push_back(inputs[4].getType());
  }
  if (auto names = op->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr)) {
    SmallVector<Attribute> all(names.getValue());
    all.resize(types.size(), builder.getStringAttr(""));
    state.addAttribute(MPDialect::kOutputNamesAttr, builder.getArrayAttr(all));
  }
  state.addTypes(types);
  return builder.create(state);
}

/// The forms before opset 13 that the typed ops (of opset 13) do not take:
/// Unsqueeze and Squeeze with an `axes` attribute (the typed ops' input),
/// Softmax and LogSoftmax over the last axis (before 13 they flatten the
/// input at `axis`, default 1: the same op when the dims after it are 1), and
/// Dropout without a mask that is read (an identity in inference, before it
/// had a training_mode input). The typed op has one result: the node's
/// first (FoldConstants replaces that one).
Operation *typedPre13FormOf(OnnxGenericOp op, OpBuilder &builder) {
  StringRef opType = op.getOpType();
  ValueRange inputs = op.getInputs();
  // Dropout's mask, when nothing reads it, goes.
  const bool unusedMask = opType == "Dropout" && op->getNumResults() == 2 &&
                          op->getResult(1).use_empty();
  if (inputs.empty())
    return nullptr;
  if (op->getNumResults() != 1 && !unusedMask)
    return typedLegacyFormOf(op, builder); // Split-2
  auto dataType = dyn_cast<RankedTensorType>(inputs[0].getType());
  DictionaryAttr attrs = op.getOnnxAttrsAttr();
  auto onlyAttrs = [&](std::initializer_list<StringRef> allowed) {
    return !attrs || llvm::all_of(attrs, [&](NamedAttribute attr) {
      return llvm::is_contained(allowed, attr.getName().getValue());
    });
  };
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  auto finish = [&](OperationState &state) {
    if (auto names = op->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr))
      state.addAttribute(MPDialect::kOutputNamesAttr,
                         builder.getArrayAttr(names.getValue().take_front(1)));
    state.addTypes(op->getResult(0).getType());
    return builder.create(state);
  };
  if ((opType == "Unsqueeze" || opType == "Squeeze") && inputs.size() == 1 &&
      onlyAttrs({"axes"})) {
    auto axes = attrs ? attrs.getAs<DenseI64ArrayAttr>("axes") : nullptr;
    if (!axes && opType == "Unsqueeze")
      return nullptr;
    OperationState state(op.getLoc(), opType == "Unsqueeze"
                                          ? UnsqueezeOp::getOperationName()
                                          : SqueezeOp::getOperationName());
    state.addOperands(inputs[0]);
    if (axes) {
      auto type =
          RankedTensorType::get({int64_t(axes.size())}, builder.getI64Type());
      Value axesValue =
          ConstantOp::create(builder, op.getLoc(), type,
                             DenseIntElementsAttr::get(type, axes.asArrayRef()),
                             FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
                             DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
      state.addOperands(axesValue);
    } else {
      Value none = NoneOp::create(builder, op.getLoc());
      state.addOperands(none);
    }
    return finish(state);
  }
  if ((opType == "Softmax" || opType == "LogSoftmax") && inputs.size() == 1 &&
      dataType && dataType.getRank() > 0 && onlyAttrs({"axis"})) {
    auto axisAttr = attrs ? attrs.getAs<IntegerAttr>("axis") : nullptr;
    int64_t axis = axisAttr ? axisAttr.getInt() : 1;
    const int64_t rank = dataType.getRank();
    if (axis < 0)
      axis += rank;
    // Over [axis, rank): the typed op's over `axis` when the dims after it
    // are 1 (a classifier's [N, 1000, 1, 1]).
    for (int64_t d = axis + 1; d < rank; ++d)
      if (dataType.isDynamicDim(d) || dataType.getDimSize(d) != 1)
        return nullptr; // a softmax over several dims: no typed form
    if (axis < 0 || axis >= rank)
      return nullptr;
    OperationState state(op.getLoc(), opType == "Softmax"
                                          ? SoftmaxOp::getOperationName()
                                          : LogSoftmaxOp::getOperationName());
    state.addOperands(inputs[0]);
    state.addAttribute("axis", builder.getI64IntegerAttr(axis));
    return finish(state);
  }
  if (opType == "Dropout" && onlyAttrs({"ratio", "is_test"})) {
    OperationState state(op.getLoc(), IdentityOp::getOperationName());
    state.addOperands(inputs[0]);
    return finish(state);
  }
  return typedLegacyFormOf(op, builder);
}

} // namespace

Operation *typedFormOf(OnnxGenericOp op, OpBuilder &builder) {
  if (op.getDomain().empty() && op.getVersion() < 13)
    if (Operation *typed = typedPre13FormOf(op, builder))
      return typed;
  if (op.getDomain().empty() && op.getOpType() == "Resize" &&
      op.getVersion() >= 18 && !op.getInputs().empty() &&
      op->getNumResults() == 1)
    return typedResizeOf(op, builder);
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
