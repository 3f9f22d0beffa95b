//===- TensorOpBuilder.h - mp ops of static shapes, built in a line -*- C++
//-*-===//
//
// The small builders the decompositions of function ops share
// (AttentionForm.h, the RotaryEmbedding rewrite of mp-decompose-nodes):
// each makes one mp op of static shape before the builder's insertion
// point, its result type computed here, and skips ops that would change
// nothing (a reshape to the same shape, a cast to the same type).
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_TENSOROPBUILDER_H
#define MP_DIALECT_MP_TENSOROPBUILDER_H

#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Builders.h"

namespace mp {

class TensorOpBuilder {
public:
  TensorOpBuilder(mlir::OpBuilder &builder, mlir::Location loc)
      : b(builder), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

  mlir::Value constant(mlir::DenseElementsAttr value);
  /// A 1-D i64 constant.
  mlir::Value i64s(llvm::ArrayRef<int64_t> values);
  /// A rank-0 constant of `element`.
  mlir::Value scalar(mlir::Type element, double value);

  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  mlir::Value expand(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// x[..., begin:end, ...] along `axis`.
  mlir::Value slice(mlir::Value x, int64_t axis, int64_t begin, int64_t end);
  mlir::Value concat(mlir::ValueRange inputs, int64_t axis);
  mlir::Value gather(mlir::Value data, mlir::Value indices, int64_t axis);
  mlir::Value matmul(mlir::Value x, mlir::Value y,
                     llvm::ArrayRef<int64_t> shape);
  mlir::Value cast(mlir::Value x, mlir::Type element);
  /// Elementwise with numpy broadcasting (the result type inferred).
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

/// `v`'s type when it is a ranked tensor of static shape, else null.
mlir::RankedTensorType staticTensorType(mlir::Value v);
/// The shape and element type of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
mlir::Type elementTypeOf(mlir::Value v);

} // namespace mp

#endif // MP_DIALECT_MP_TENSOROPBUILDER_H
