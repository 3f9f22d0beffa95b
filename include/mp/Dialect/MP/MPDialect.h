//===- MPDialect.h - the mp dialect ------------------------------*- C++ -*-===//
//
// Include this header to use the `mp` dialect: its dialect class, types and
// ops.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_MPDIALECT_H
#define MP_DIALECT_MP_MPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/StringMap.h"

#include "mp/Dialect/MP/ShapeInference.h"

namespace mp {
/// What the importer needs to know about a typed op.
struct OnnxOpInfo {
  mlir::RegisteredOperationName opName;
  int64_t sinceVersion; ///< first ONNX schema version the op represents
  int numInputs;        ///< -1: variadic
  int numOutputs;       ///< -1: variadic
};
} // namespace mp

#include "mp/Dialect/MP/MPOpsDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "mp/Dialect/MP/MPOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "mp/Dialect/MP/MPOps.h.inc"

namespace mp {
/// The ONNX node name a location carries (its first NameLoc), or "".
std::string getNodeName(mlir::Location loc);
/// The ONNX node name of `op`, or "".
inline std::string getNodeName(mlir::Operation *op) {
  return getNodeName(op->getLoc());
}
} // namespace mp

#endif // MP_DIALECT_MP_MPDIALECT_H
