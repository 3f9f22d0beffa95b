//===- ONNXExporter.h - mp dialect to ONNX models ----------------*- C++ -*-===//
//
// Writes a module in the mp dialect (imported, possibly rewritten by the
// mixed-precision passes) back as an ONNX model that ONNX Runtime loads: every
// node, name, attribute, doc string, initializer and the model metadata the
// importer kept, Cast nodes and 16-bit initializers where the passes put
// them. Models over protobuf's 2 GB limit keep their weights in an external
// data file.
//
//===----------------------------------------------------------------------===//
#ifndef MP_EXPORT_ONNXEXPORTER_H
#define MP_EXPORT_ONNXEXPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mp {

struct ONNXExportOptions {
  /// Initializers of at least this many bytes go to the external data file
  /// when the model would not fit in one protobuf (2 GB), or always with
  /// `forceExternalData`.
  int64_t externalDataThreshold = 1024;
  bool forceExternalData = false;
  /// The external data file, relative to the model's directory; default:
  /// "<model file name>.data".
  std::string externalDataFile;
};

/// Writes `module` as an ONNX model to `path`, atomically (no partial file
/// on failure). Problems are reported as diagnostics on the module.
mlir::LogicalResult exportONNXFile(mlir::ModuleOp module, llvm::StringRef path,
                                   const ONNXExportOptions &options = {});

/// The serialized ModelProto of `module` (weights inline; fails over 2 GB).
mlir::FailureOr<std::string> exportONNXToString(mlir::ModuleOp module);

} // namespace mp

#endif // MP_EXPORT_ONNXEXPORTER_H
