//===- TensorOpBuilder.cpp - mp ops of static shapes, built in a line -----===//
#include "mp/Dialect/MP/TensorOpBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mp;

RankedTensorType mp::staticTensorType(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() ? type : RankedTensorType();
}

ArrayRef<int64_t> mp::shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
Type mp::elementTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

Value TensorOpBuilder::constant(DenseElementsAttr value) {
  return ConstantOp::create(b, loc, TypeRange{value.getType()}, ValueRange{},
                            {b.getNamedAttr("value", value)})
      .getResult();
}

Value TensorOpBuilder::i64s(ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({int64_t(values.size())}, b.getIntegerType(64));
  return constant(DenseElementsAttr::get(type, values));
}

Value TensorOpBuilder::scalar(Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return constant(DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
}

Value TensorOpBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return ReshapeOp::create(b, loc,
                           RankedTensorType::get(shape, elementTypeOf(x)), x,
                           i64s(shape), IntegerAttr());
}

Value TensorOpBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(shapeOf(x)[p]);
  return TransposeOp::create(b, loc,
                             RankedTensorType::get(shape, elementTypeOf(x)), x,
                             b.getDenseI64ArrayAttr(perm));
}

Value TensorOpBuilder::expand(Value x, ArrayRef<int64_t> shape) {
  return ExpandOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(x)), x, i64s(shape));
}

Value TensorOpBuilder::slice(Value x, int64_t axis, int64_t begin,
                             int64_t end) {
  SmallVector<int64_t> shape(shapeOf(x));
  if (begin == 0 && end == shape[axis])
    return x;
  shape[axis] = end - begin;
  return SliceOp::create(b, loc, RankedTensorType::get(shape, elementTypeOf(x)),
                         x, i64s({begin}), i64s({end}), i64s({axis}),
                         NoneOp::create(b, loc));
}

Value TensorOpBuilder::concat(ValueRange inputs, int64_t axis) {
  if (inputs.size() == 1)
    return inputs.front();
  SmallVector<int64_t> shape(shapeOf(inputs.front()));
  shape[axis] = 0;
  for (Value input : inputs)
    shape[axis] += shapeOf(input)[axis];
  return ConcatOp::create(
      b, loc, RankedTensorType::get(shape, elementTypeOf(inputs.front())),
      inputs, b.getI64IntegerAttr(axis));
}

Value TensorOpBuilder::gather(Value data, Value indices, int64_t axis) {
  SmallVector<int64_t> shape(shapeOf(data).take_front(axis));
  llvm::append_range(shape, shapeOf(indices));
  llvm::append_range(shape, shapeOf(data).drop_front(axis + 1));
  return GatherOp::create(b, loc,
                          RankedTensorType::get(shape, elementTypeOf(data)),
                          data, indices, b.getI64IntegerAttr(axis));
}

Value TensorOpBuilder::matmul(Value x, Value y, ArrayRef<int64_t> shape) {
  return MatMulOp::create(b, loc,
                          RankedTensorType::get(shape, elementTypeOf(x)), x, y);
}

Value TensorOpBuilder::cast(Value x, Type element) {
  if (elementTypeOf(x) == element)
    return x;
  return CastOp::create(b, loc, RankedTensorType::get(shapeOf(x), element), x,
                        b.getI64IntegerAttr(getOnnxDataTypeForType(element)),
                        IntegerAttr());
}

Value TensorOpBuilder::add(Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
Value TensorOpBuilder::sub(Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
Value TensorOpBuilder::mul(Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
