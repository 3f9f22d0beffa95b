//===- OpsetForms.h - operator forms that changed across opsets -*- C++ -*-===//
//
// Some ONNX operators changed form in later opsets without changing what they
// compute: ReduceMean-18 and its kin take `axes` as an input instead of an
// attribute. The typed mp ops keep the attribute form; a node in the input
// form becomes the typed op where its axes are constant (so does Pad-18 with
// an `axes` input): at import
// (lib/Import/ONNX/OpsetForms.cpp) or, when the axes are computed from
// shapes, once mp-fold-constants has folded them (typedFormOf). The ONNX
// exporter writes the opset's form back.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_OPSETFORMS_H
#define MP_DIALECT_MP_OPSETFORMS_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringRef.h"

namespace mp {
class OnnxGenericOp;

/// Whether `opType` of ai.onnx at schema `version` takes its reduction axes
/// as an input where the typed op has an `axes` attribute (the reductions
/// but ReduceSum, from opset 18 on).
bool takesAxesAsInput(llvm::StringRef opType, int64_t version);

/// The typed op for a generic op in a newer form whose extra inputs are now
/// constant, created before `op` with its results' names: a reduction with
/// its axes as an input, Pad-18 with pads for some `axes` only (the typed
/// op gets pads for every dim). Null when there is none (inputs not
/// constant, `noop_with_empty_axes` with no axes, an attribute the typed op
/// lacks). The caller replaces and erases `op`.
mlir::Operation *typedFormOf(OnnxGenericOp op, mlir::OpBuilder &builder);

} // namespace mp

#endif // MP_DIALECT_MP_OPSETFORMS_H
