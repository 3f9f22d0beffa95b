//===- CuLibDialect.h - the culib dialect ------------------------*- C++ -*-===//
#ifndef MP_DIALECT_CULIB_CULIBDIALECT_H
#define MP_DIALECT_CULIB_CULIBDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mp/Dialect/CuLib/CuLibOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "mp/Dialect/CuLib/CuLibOps.h.inc"

#endif // MP_DIALECT_CULIB_CULIBDIALECT_H
