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

#include "mp/Runtime/ElementwiseFunctions.h"
#include "mp/Runtime/ReduceFunctions.h"

#include "mp/Dialect/CuLib/CuLibOpsDialect.h.inc"

#include "mp/Dialect/CuLib/CuLibEnums.h.inc"

namespace mp::culib {
/// The runtime's function enums as culib attributes spell them (the plan's
/// words): parse a keyword, or the spelling of a value.
mlir::FailureOr<rt::cpu::ElementwiseFn>
parseElementwiseFn(mlir::AsmParser &parser);
mlir::FailureOr<rt::cpu::ReduceFn> parseReduceFn(mlir::AsmParser &parser);
llvm::StringRef spellingOf(rt::cpu::ElementwiseFn fn);
llvm::StringRef spellingOf(rt::cpu::ReduceFn fn);
/// The plan's spelling of a culib enum attribute (layout, epilogue, the
/// reductions, the functions); nullopt for other attributes.
std::optional<llvm::StringRef> enumSpelling(mlir::Attribute attr);
/// True when a shape `from` broadcasts (numpy rules) to exactly `to` (the
/// verifiers' and the fusion passes' rule for broadcast operands).
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);
/// The unit attribute of a call that runs once, when the plan is loaded
/// (culib-hoist-weight-calls; CuLibDialect.td says where it may be).
inline constexpr llvm::StringLiteral kAtLoadAttr = "culib.at_load";
/// Whether `v` is a weight's bytes: a culib.weight, or a culib.view of one.
bool isWeightBuffer(mlir::Value v);
} // namespace mp::culib

#define GET_ATTRDEF_CLASSES
#include "mp/Dialect/CuLib/CuLibAttrs.h.inc"

#define GET_OP_CLASSES
#include "mp/Dialect/CuLib/CuLibOps.h.inc"

#endif // MP_DIALECT_CULIB_CULIBDIALECT_H
