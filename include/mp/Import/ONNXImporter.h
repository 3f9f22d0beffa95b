//===- ONNXImporter.h - ONNX models to the mp dialect ------------*- C++ -*-===//
//
// Imports ONNX models (binary protobuf or ONNX's textual syntax) into a module
// of the `mp` dialect: one `func.func` for the main graph, one op per node,
// `mp.initializer` ops for initializers. Errors are reported as MLIR
// diagnostics located at the offending ONNX node (`loc("<node name>")`); on
// error nothing is returned.
//
//===----------------------------------------------------------------------===//
#ifndef MP_IMPORT_ONNXIMPORTER_H
#define MP_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace mp {

enum class ONNXFormat {
  Auto,   ///< decide from the file name and contents
  Binary, ///< ModelProto in protobuf wire format (.onnx)
  Text,   ///< ONNX's textual syntax (onnx/defs/parser.h), e.g. .onnxtxt
};

struct ONNXImportOptions {
  ONNXFormat format = ONNXFormat::Auto;
  /// Run ONNX shape inference before import so intermediate values get types.
  bool shapeInference = true;
  /// Run ONNX shape inference in a forked child process: ONNX's inference
  /// has crashed on malformed nodes, and in a child that costs the inferred
  /// types, not the process. Programs that must not fork (e.g. with threads
  /// holding locks ONNX needs) can turn it off.
  bool isolateShapeInference = true;
  /// Import nodes that have a typed op as that op; when false every node
  /// becomes the generic `mp.onnx_op`.
  bool typedOps = true;
  /// Replace nodes of ONNX function ops that have no typed op (or none for
  /// their form: RMSNormalization, Gelu, Attention, ...) by their function
  /// bodies, and inline the model's local functions, so that they lower
  /// through the ops they are made of. Off: they stay generic ops, and an
  /// export gives them back as they were.
  bool inlineFunctions = true;
  /// Tensors of at most this many bytes are stored inline as dense elements;
  /// larger ones as `dense_resource` blobs that reuse the imported memory.
  /// (BOOL and STRING tensors are always inline: ONNX stores them in a
  /// layout other than MLIR's.)
  size_t inlineTensorLimit = 1024;
  /// Where external data files are looked up; empty: the model's directory.
  std::string externalDataDirectory;

  // Specialization: plans need static shapes, and some inputs (a Slice's
  // starts, a Reshape's shape) decide shapes. Applied before shape inference.

  /// Static shapes for graph inputs, by name. The rank must be the model's
  /// and static dims must agree; dynamic dims get the given sizes.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Sizes of symbolic dims (ONNX dim_param), e.g. {"batch_size", 1}, for
  /// every graph input and output dim that has that name.
  std::map<std::string, int64_t> dimParams;
  /// Graph inputs that become initializers, by name, with the tensor in the
  /// given file (ONNX TensorProto .pb or NumPy .npy; dtype and shape must
  /// agree with the input's type).
  std::map<std::string, std::string> frozenInputs;
};

/// Registers the dialects an imported module uses (mp, func).
void registerONNXImportDialects(mlir::DialectRegistry &registry);

/// Imports the model in `path`. Returns null after reporting errors.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(llvm::StringRef path, mlir::MLIRContext *context,
               const ONNXImportOptions &options = {});

/// Imports a model held in memory; `bufferName` names it in diagnostics and
/// is the base for relative external data paths.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXBuffer(llvm::StringRef contents, llvm::StringRef bufferName,
                 mlir::MLIRContext *context,
                 const ONNXImportOptions &options = {});

/// The format a file is in, from its name and first bytes.
ONNXFormat detectONNXFormat(llvm::StringRef path, llvm::StringRef head);

/// True when `path` names an ONNX model rather than MLIR (by extension, or by
/// contents for other names).
bool isONNXFile(llvm::StringRef path);

/// Prints diagnostics as `<file>: node '<name>': error: <message>`, the node
/// being the ONNX node named by the diagnostic's location.
class ONNXDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  ONNXDiagnosticHandler(mlir::MLIRContext *context, llvm::StringRef fileName,
                        llvm::raw_ostream &os);

private:
  std::string fileName;
};

} // namespace mp

#endif // MP_IMPORT_ONNXIMPORTER_H
