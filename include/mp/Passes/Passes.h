//===- Passes.h - every MixPrec pass ----------------------------*- C++ -*-===//
//
// The passes of both dialects and the conversion between them, for code
// that uses several; each group has its own header and Passes.td:
// mp/Passes/MP, mp/Passes/CuLib and mp/Conversion.
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_PASSES_H
#define MP_PASSES_PASSES_H

#include "mp/Conversion/Passes.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Passes/MP/Passes.h"

#endif // MP_PASSES_PASSES_H
