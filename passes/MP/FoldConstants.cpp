//===- FoldConstants.cpp - evaluate shape computations at compile time ----===//
//
// Exported models compute shapes at run time: Shape -> Gather -> Concat ->
// Reshape, ConstantOfShape, Range, ... Plans need static shapes, so this
// pass evaluates such computations once the input shapes are known: Shape
// and Size of static tensors, and small ops whose operands are all constants.
// It refines result types as it goes (like mp-infer-shapes), so that a
// Reshape whose shape operand became a constant gets a static result type
// and its users can fold in turn, all in one forward walk.
//
// Only small tensors are evaluated (`max-elements`): this is for shape
// arithmetic, not for running the model at compile time.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/OpsetForms.h"
#include "mp/Dialect/MP/ShapeInference.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <optional>

namespace mp {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// A small constant tensor: integers (and bools, as 0/1) exactly as int64,
/// floats as double.
struct Value64 {
  Type element;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> ints;
  SmallVector<double> floats;

  bool isFloat() const { return isa<FloatType>(element); }
  int64_t size() const { return isFloat() ? floats.size() : ints.size(); }
  double asDouble(int64_t i) const {
    return isFloat() ? floats[i] : static_cast<double>(ints[i]);
  }
  int64_t asInt(int64_t i) const {
    return isFloat() ? static_cast<int64_t>(floats[i]) : ints[i];
  }
};

std::optional<Value64> readConstant(mlir::Value value) {
  auto attr = dyn_cast_or_null<DenseElementsAttr>(getConstantValue(value));
  if (!attr)
    return std::nullopt;
  Value64 v;
  v.element = attr.getElementType();
  v.shape.assign(attr.getType().getShape().begin(),
                 attr.getType().getShape().end());
  if (auto intType = dyn_cast<IntegerType>(v.element)) {
    bool isUnsigned = intType.isUnsigned() || intType.getWidth() == 1;
    for (const APInt &i : attr.getValues<APInt>())
      v.ints.push_back(isUnsigned ? static_cast<int64_t>(i.getZExtValue())
                                  : i.getSExtValue());
  } else if (isa<FloatType>(v.element)) {
    for (const APFloat &f : attr.getValues<APFloat>())
      v.floats.push_back(f.convertToDouble());
  } else {
    return std::nullopt;
  }
  return v;
}

/// The attribute for `v` as a tensor of `type` (same element count).
DenseElementsAttr toAttr(const Value64 &v, RankedTensorType type) {
  Type element = type.getElementType();
  if (auto floatType = dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> values;
    for (int64_t i = 0; i < v.size(); ++i) {
      APFloat f(v.asDouble(i));
      bool lost;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  auto intType = cast<IntegerType>(element);
  SmallVector<APInt> values;
  for (int64_t i = 0; i < v.size(); ++i) {
    int64_t x = v.asInt(i);
    if (intType.getWidth() == 1)
      x = x != 0;
    values.push_back(APInt(intType.getWidth(), static_cast<uint64_t>(x),
                           /*isSigned=*/!intType.isUnsigned(),
                           /*implicitTrunc=*/true));
  }
  return DenseElementsAttr::get(type, values);
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Row-major strides of `shape`, with 0 for dims broadcast into `to`.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> to) {
  SmallVector<int64_t> strides(to.size(), 0);
  int64_t stride = 1;
  for (int64_t i = shape.size() - 1, j = to.size() - 1; i >= 0; --i, --j) {
    strides[j] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

/// The flat index into an operand of each flat index of `to`.
SmallVector<int64_t> broadcastIndices(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> to) {
  SmallVector<int64_t> strides = broadcastStrides(shape, to);
  int64_t n = product(to);
  SmallVector<int64_t> result(n);
  SmallVector<int64_t> index(to.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t at = 0;
    for (size_t d = 0; d < to.size(); ++d)
      at += index[d] * strides[d];
    result[flat] = at;
    for (int64_t d = to.size() - 1; d >= 0; --d) {
      if (++index[d] < to[d])
        break;
      index[d] = 0;
    }
  }
  return result;
}

/// Evaluates an elementwise op of `inputs` into a tensor of `type`.
std::optional<Value64> elementwise(Operation *op, ArrayRef<Value64> inputs,
                                   RankedTensorType type) {
  Value64 out;
  out.element = type.getElementType();
  out.shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t n = product(out.shape);
  SmallVector<SmallVector<int64_t>> at;
  for (const Value64 &in : inputs)
    at.push_back(broadcastIndices(in.shape, out.shape));
  // Integer arithmetic when the operands are integers, else double.
  bool floatData = llvm::any_of(inputs.drop_front(isa<WhereOp>(op) ? 1 : 0),
                                [](const Value64 &v) { return v.isFloat(); });
  for (int64_t i = 0; i < n; ++i) {
    auto a = [&](size_t k) { return inputs[k].asDouble(at[k][i]); };
    auto ai = [&](size_t k) { return inputs[k].asInt(at[k][i]); };
    std::optional<double> f;
    std::optional<int64_t> r;
    if (floatData) {
      f = TypeSwitch<Operation *, std::optional<double>>(op)
              .Case([&](AddOp) { return a(0) + a(1); })
              .Case([&](SubOp) { return a(0) - a(1); })
              .Case([&](MulOp) { return a(0) * a(1); })
              .Case([&](DivOp) { return a(0) / a(1); })
              // Float Mod is C's fmod (ONNX requires fmod = 1 for floats).
              .Case([&](ModOp) { return std::fmod(a(0), a(1)); })
              .Case([&](NegOp) { return -a(0); })
              .Case([&](AbsOp) { return std::fabs(a(0)); })
              .Case([&](SqrtOp) { return std::sqrt(a(0)); })
              .Case([&](CeilOp) { return std::ceil(a(0)); })
              .Case([&](FloorOp) { return std::floor(a(0)); })
              .Case([&](MaxOp) { return std::max(a(0), a(1)); })
              .Case([&](MinOp) { return std::min(a(0), a(1)); })
              .Case([&](EqualOp) { return double(a(0) == a(1)); })
              .Case([&](LessOp) { return double(a(0) < a(1)); })
              .Case([&](GreaterOp) { return double(a(0) > a(1)); })
              .Case([&](WhereOp) { return ai(0) ? a(1) : a(2); })
              .Default([](Operation *) { return std::nullopt; });
      if (!f)
        return std::nullopt;
    } else {
      r = TypeSwitch<Operation *, std::optional<int64_t>>(op)
              .Case([&](AddOp) { return ai(0) + ai(1); })
              .Case([&](SubOp) { return ai(0) - ai(1); })
              .Case([&](MulOp) { return ai(0) * ai(1); })
              .Case([&](DivOp) -> std::optional<int64_t> {
                if (ai(1) == 0)
                  return std::nullopt;
                return ai(0) / ai(1);
              })
              .Case([&](ModOp mod) -> std::optional<int64_t> {
                if (ai(1) == 0)
                  return std::nullopt;
                // fmod = 1: the sign of the dividend (C's %); else of the
                // divisor (Python's %), as ONNX Mod says.
                int64_t rem = ai(0) % ai(1);
                if (!mod.getFmod().value_or(0) && rem != 0 &&
                    ((rem < 0) != (ai(1) < 0)))
                  rem += ai(1);
                return rem;
              })
              .Case([&](NegOp) { return -ai(0); })
              .Case([&](AbsOp) { return ai(0) < 0 ? -ai(0) : ai(0); })
              .Case([&](MaxOp) { return std::max(ai(0), ai(1)); })
              .Case([&](MinOp) { return std::min(ai(0), ai(1)); })
              .Case([&](EqualOp) { return int64_t(ai(0) == ai(1)); })
              .Case([&](LessOp) { return int64_t(ai(0) < ai(1)); })
              .Case([&](GreaterOp) { return int64_t(ai(0) > ai(1)); })
              .Case([&](NotOp) { return int64_t(!ai(0)); })
              .Case([&](AndOp) { return int64_t(ai(0) && ai(1)); })
              .Case([&](OrOp) { return int64_t(ai(0) || ai(1)); })
              .Case([&](WhereOp) { return ai(0) ? ai(1) : ai(2); })
              .Default([](Operation *) { return std::nullopt; });
      if (!r)
        return std::nullopt;
    }
    if (out.isFloat())
      out.floats.push_back(f ? *f : static_cast<double>(*r));
    else
      out.ints.push_back(r ? *r : static_cast<int64_t>(*f));
  }
  return out;
}

/// The value of `op`'s single result, or nullopt when it cannot be folded.
std::optional<Value64> evaluate(Operation *op, RankedTensorType type,
                                ArrayRef<std::optional<Value64>> operands) {
  auto constantOperand = [&](size_t i) -> const Value64 * {
    return i < operands.size() && operands[i] ? &*operands[i] : nullptr;
  };
  Value64 out;
  out.element = type.getElementType();
  out.shape.assign(type.getShape().begin(), type.getShape().end());
  // `in`'s elements as `out`'s element type.
  auto setFrom = [&](const Value64 &in) {
    for (int64_t i = 0; i < in.size(); ++i) {
      if (out.isFloat())
        out.floats.push_back(in.asDouble(i));
      else
        out.ints.push_back(in.asInt(i));
    }
    return out;
  };

  if (auto shapeOp = dyn_cast<ShapeOp>(op)) {
    auto input = dyn_cast<RankedTensorType>(shapeOp.getData().getType());
    if (!input || !input.hasStaticShape())
      return std::nullopt;
    int64_t rank = input.getRank();
    auto clampIndex = [&](int64_t i) {
      if (i < 0)
        i += rank;
      return std::clamp<int64_t>(i, 0, rank);
    };
    int64_t start = 0, end = rank;
    if (auto attr = op->getAttrOfType<IntegerAttr>("start"))
      start = clampIndex(attr.getInt());
    if (auto attr = op->getAttrOfType<IntegerAttr>("end"))
      end = clampIndex(attr.getInt());
    for (int64_t i = start; i < end; ++i)
      out.ints.push_back(input.getDimSize(i));
    return out;
  }
  if (auto sizeOp = dyn_cast<SizeOp>(op)) {
    auto input = dyn_cast<RankedTensorType>(sizeOp->getOperand(0).getType());
    if (!input || !input.hasStaticShape())
      return std::nullopt;
    out.ints.push_back(input.getNumElements());
    return out;
  }

  // EyeLike (no typed op): ones on the k-th diagonal of its input's shape,
  // whatever the input holds.
  if (auto generic = dyn_cast<OnnxGenericOp>(op);
      generic && generic.getDomain().empty() &&
      generic.getOpType() == "EyeLike") {
    if (out.shape.size() != 2 || generic->getNumOperands() != 1)
      return std::nullopt;
    DictionaryAttr attrs = generic.getOnnxAttrsAttr();
    auto kAttr = attrs ? attrs.getAs<IntegerAttr>("k") : IntegerAttr();
    const int64_t k = kAttr ? kAttr.getInt() : 0;
    for (int64_t r = 0; r < out.shape[0]; ++r)
      for (int64_t c = 0; c < out.shape[1]; ++c) {
        if (out.isFloat())
          out.floats.push_back(c - r == k ? 1.0 : 0.0);
        else
          out.ints.push_back(c - r == k ? 1 : 0);
      }
    return out;
  }

  // Everything else needs constant operands (absent optional ones are none).
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!isa<NoneType>(operand.getType()) && !constantOperand(i))
      return std::nullopt;

  if (auto cos = dyn_cast<ConstantOfShapeOp>(op)) {
    int64_t n = product(out.shape);
    double fill = 0;
    if (auto value = cos.getValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (!dense || dense.getNumElements() != 1)
        return std::nullopt;
      Value64 v;
      v.element = dense.getElementType();
      if (isa<FloatType>(v.element))
        fill = (*dense.getValues<APFloat>().begin()).convertToDouble();
      else
        fill = static_cast<double>(
            (*dense.getValues<APInt>().begin()).getSExtValue());
    }
    if (out.isFloat())
      out.floats.assign(n, fill);
    else
      out.ints.assign(n, static_cast<int64_t>(fill));
    return out;
  }
  if (isa<RangeOp>(op)) {
    int64_t n = product(out.shape);
    const Value64 &start = *constantOperand(0), &delta = *constantOperand(2);
    for (int64_t i = 0; i < n; ++i) {
      if (out.isFloat())
        out.floats.push_back(start.asDouble(0) + i * delta.asDouble(0));
      else
        out.ints.push_back(start.asInt(0) + i * delta.asInt(0));
    }
    return out;
  }
  // Same data, new shape.
  if (isa<IdentityOp, ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(op))
    return setFrom(*constantOperand(0));
  if (isa<CastOp>(op)) {
    // float8 / float4 results round by Cast's saturate and round_mode
    // (kernel.cast does, mp/Runtime/NarrowTypes.h); APFloat's conversion
    // does not: those casts run.
    if (isa<FloatType>(out.element) && out.element.getIntOrFloatBitWidth() <= 8)
      return std::nullopt;
    setFrom(*constantOperand(0));
    if (auto intType = dyn_cast<IntegerType>(out.element);
        intType && intType.getWidth() == 1)
      for (int64_t &v : out.ints)
        v = v != 0;
    return out;
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    const Value64 &data = *constantOperand(0), &indices = *constantOperand(1);
    int64_t rank = data.shape.size();
    int64_t axis = gather.getAxis().value_or(0);
    if (axis < 0)
      axis += rank;
    int64_t outer = product(ArrayRef(data.shape).take_front(axis));
    int64_t inner = product(ArrayRef(data.shape).drop_front(axis + 1));
    int64_t dim = data.shape[axis];
    Value64 picked = data;
    picked.ints.clear();
    picked.floats.clear();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < indices.size(); ++k) {
        int64_t index = indices.asInt(k);
        if (index < 0)
          index += dim;
        if (index < 0 || index >= dim)
          return std::nullopt;
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = (o * dim + index) * inner + i;
          if (data.isFloat())
            picked.floats.push_back(data.floats[at]);
          else
            picked.ints.push_back(data.ints[at]);
        }
      }
    return setFrom(picked);
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t rank = out.shape.size();
    int64_t axis = concat.getAxis();
    if (axis < 0)
      axis += rank;
    int64_t outer = product(ArrayRef(out.shape).take_front(axis));
    Value64 joined;
    joined.element = out.element;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t k = 0; k < operands.size(); ++k) {
        const Value64 &in = *operands[k];
        int64_t chunk = product(ArrayRef(in.shape).drop_front(axis));
        for (int64_t i = 0; i < chunk; ++i) {
          if (joined.isFloat())
            joined.floats.push_back(in.asDouble(o * chunk + i));
          else
            joined.ints.push_back(in.asInt(o * chunk + i));
        }
      }
    return setFrom(joined);
  }
  if (isa<SliceOp>(op)) {
    const Value64 &data = *constantOperand(0);
    int64_t rank = data.shape.size();
    SmallVector<int64_t> start(rank, 0), step(rank, 1);
    const Value64 *axes = constantOperand(3), *steps = constantOperand(4);
    const Value64 &starts = *constantOperand(1);
    for (int64_t k = 0; k < starts.size(); ++k) {
      int64_t axis = axes ? axes->asInt(k) : k;
      if (axis < 0)
        axis += rank;
      int64_t dim = data.shape[axis];
      int64_t s = starts.asInt(k);
      int64_t st = steps ? steps->asInt(k) : 1;
      if (s < 0)
        s += dim;
      s = st > 0 ? std::clamp<int64_t>(s, 0, dim)
                 : std::clamp<int64_t>(s, 0, dim - 1);
      start[axis] = s;
      step[axis] = st;
    }
    SmallVector<int64_t> index(rank, 0);
    int64_t n = product(out.shape);
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * data.shape[d + 1];
    Value64 sliced;
    sliced.element = data.element;
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d)
        at += (start[d] + index[d] * step[d]) * strides[d];
      if (data.isFloat())
        sliced.floats.push_back(data.floats[at]);
      else
        sliced.ints.push_back(data.ints[at]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    return setFrom(sliced);
  }
  if (auto transpose = dyn_cast<TransposeOp>(op)) {
    // Shape arithmetic transposes its [rank, 2] pads into ONNX's order.
    const Value64 *data = constantOperand(0);
    if (!data)
      return std::nullopt;
    int64_t rank = data->shape.size();
    SmallVector<int64_t> perm;
    if (std::optional<ArrayRef<int64_t>> given = transpose.getPerm())
      perm.assign(given->begin(), given->end());
    else
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    if (static_cast<int64_t>(perm.size()) != rank)
      return std::nullopt;
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * data->shape[d + 1];
    Value64 moved;
    moved.element = data->element;
    SmallVector<int64_t> index(rank, 0);
    for (int64_t flat = 0, n = product(out.shape); flat < n; ++flat) {
      int64_t at = 0;
      for (int64_t d = 0; d < rank; ++d)
        at += index[d] * strides[perm[d]];
      if (data->isFloat())
        moved.floats.push_back(data->floats[at]);
      else
        moved.ints.push_back(data->ints[at]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < out.shape[d])
          break;
        index[d] = 0;
      }
    }
    return setFrom(moved);
  }
  if (isa<AddOp, SubOp, MulOp, DivOp, ModOp, NegOp, AbsOp, SqrtOp, CeilOp,
          FloorOp, MaxOp, MinOp, EqualOp, LessOp, GreaterOp, NotOp, AndOp, OrOp,
          WhereOp>(op)) {
    SmallVector<Value64> inputs;
    for (const auto &operand : operands)
      inputs.push_back(*operand);
    if (isa<MaxOp, MinOp>(op) && inputs.size() != 2)
      return std::nullopt;
    return elementwise(op, inputs, type);
  }
  return std::nullopt;
}

struct FoldConstantsPass
    : public mp::impl::FoldConstantsBase<FoldConstantsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    OpBuilder builder(&getContext());
    bool failedInference = false;
    SmallVector<Operation *> folded;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa_and_nonnull<MPDialect>(op->getDialect()))
        return;
      // A reduction whose axes input (opset 18) has folded becomes its typed
      // op, which lowers; the generic one goes with the folded ops.
      if (auto generic = dyn_cast<OnnxGenericOp>(op))
        if (Operation *typed = typedFormOf(generic, builder)) {
          if (failed(refineResultTypes(typed))) {
            failedInference = true;
            return;
          }
          // A typed form may drop results nothing reads (Dropout's mask).
          for (auto [from, to] :
               llvm::zip(generic->getResults(), typed->getResults()))
            from.replaceAllUsesWith(to);
          folded.push_back(op);
          return;
        }
      // Refine first: a folded operand may have made the type static.
      if (failed(refineResultTypes(op))) {
        failedInference = true;
        return;
      }
      if (op->getNumResults() != 1)
        return;
      if (isa<InitializerOp, ConstantOp, NoneOp>(op))
        return;
      auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      if (!type || !type.hasStaticShape() ||
          type.getNumElements() > static_cast<int64_t>(maxElements) ||
          !(isa<IntegerType, FloatType>(type.getElementType())))
        return;
      SmallVector<std::optional<Value64>> operands;
      for (mlir::Value operand : op->getOperands())
        operands.push_back(readConstant(operand));
      std::optional<Value64> value = evaluate(op, type, operands);
      if (!value || value->size() != type.getNumElements())
        return;
      builder.setInsertionPoint(op);
      auto constant =
          ConstantOp::create(builder, op->getLoc(), type, toAttr(*value, type),
                             FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
                             DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
      // mp.outputs (the ONNX output name) stays with the value.
      if (Attribute names = op->getAttr("mp.outputs"))
        constant->setAttr("mp.outputs", names);
      op->getResult(0).replaceAllUsesWith(constant);
      folded.push_back(op);
    });
    for (Operation *op : folded)
      op->erase();
    if (failedInference)
      return signalPassFailure();

    // Constants nothing uses any more (the inputs of folded shape
    // computations) go; initializers stay (they are named model state).
    SmallVector<Operation *> dead;
    func.walk([&](ConstantOp op) {
      if (op->use_empty())
        dead.push_back(op);
    });
    for (Operation *op : dead)
      op->erase();

    if (!func.isExternal())
      if (auto ret =
              dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator()))
        func.setFunctionType(FunctionType::get(
            &getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
  }
};
} // namespace
