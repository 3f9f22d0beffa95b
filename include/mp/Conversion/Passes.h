//===- Passes.h - conversions between MixPrec dialects ----------*- C++ -*-===//
//
// convert-mp-to-culib (declared in Passes.td beside this file); its patterns
// are in mp/Conversion/MPToCuLib.h.
//
//===----------------------------------------------------------------------===//
#ifndef MP_CONVERSION_PASSES_H
#define MP_CONVERSION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"

namespace mp {
#define GEN_PASS_DECL
#include "mp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Conversion/Passes.h.inc"
} // namespace mp

#endif // MP_CONVERSION_PASSES_H
