//===- ImporterInternal.h - what the importer's files share -----*- C++ -*-===//
//
// Declarations shared by the importer's files (not installed): limits, the
// checks of GraphValidator.cpp, the loaders of ModelLoader.cpp, ONNX shape
// inference (IsolatedShapeInference.cpp) and the Importer, whose methods are
// in ImportTensors.cpp and ImportGraph.cpp. The files are compiled with
// exceptions; only ONNXImporter.cpp's entry points catch them.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H
#define MP_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H

#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp::onnx_import {

/// The newest IR version of the ONNX release this build links.
constexpr int64_t kMaxKnownIRVersion = onnx::Version::IR_VERSION;
/// No tensor may claim more elements than this (2^40): such claims come
/// from corrupt or hostile files and would overflow byte counts.
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Subgraph nesting deeper than this is rejected rather than recursed into.
constexpr int kMaxGraphDepth = 64;
/// Protobuf message nesting the parser accepts: three levels per subgraph
/// (graph, node, attribute) plus room for nested types. Protobuf's default
/// of 100 would reject models of 33 nested subgraphs as "corrupt".
constexpr int kMaxMessageDepth = 3 * kMaxGraphDepth + 64;
/// Bracket nesting accepted in ONNX text; ONNX's recursive-descent parser
/// would overflow the stack on deeper input.
constexpr int kMaxTextNesting = 4 * kMaxGraphDepth + 64;

bool isDefaultDomain(llvm::StringRef domain);

/// "op_type", or "domain::op_type" outside the default domain.
std::string describeNode(const onnx::NodeProto &node);
/// Rewrites a node of a newer opset whose form differs from its typed op's
/// (ReduceMean-18's axes input) into the typed op's form where that computes
/// the same (OpsetForms.cpp). `lookup` gives the value of a name in scope,
/// to read constant inputs. Returns the name of the input that became an
/// attribute (empty: none), which the op keeps as `mp.axes_input` so that an
/// export can use it again.
std::string
rewriteToTypedForm(onnx::NodeProto &node, int64_t version,
                   llvm::function_ref<mlir::Value(llvm::StringRef)> lookup);

/// The typed op the importer makes of `node`, whose schema at the model's
/// opset is `schema`: its op has one in `table`, the schema is at least as
/// new as the typed op's, and the typed op has every attribute the node sets
/// and room for its inputs and outputs. Null: the node is a generic op.
const OnnxOpInfo *typedOpFor(const onnx::NodeProto &node,
                             const onnx::OpSchema &schema,
                             const llvm::StringMap<OnnxOpInfo> &table,
                             mlir::MLIRContext *ctx);

/// Bytes per element of a fixed-size ONNX data type as the IR stores it (one
/// per element for the packed narrow types), 0 for others.
size_t elementByteSize(int dataType);
/// The bits of an element of ONNX's packed types (int4, uint4, float4e2m1:
/// 4; int2, uint2: 2), 0 for the others.
unsigned packedBits(int dataType);
/// The bytes of `count` elements in an ONNX file (raw_data, external data):
/// packed for the narrow types.
size_t onnxDataBytes(int dataType, int64_t count);

/// Checks what can be checked of a tensor without reading external data:
/// its data type, its dims, and that it holds as many values as they need.
/// Returns the element count. Runs before ONNX shape inference, which reads
/// small tensors (shapes, axes) and crashes on some malformed ones.
mlir::FailureOr<int64_t> checkTensor(const onnx::TensorProto &tensor,
                                     mlir::Location loc, llvm::StringRef what);

//===----------------------------------------------------------------------===//
// Validation (GraphValidator.cpp)
//===----------------------------------------------------------------------===//

/// Checks a (sub)graph and computes a topological order of its nodes.
class GraphValidator {
public:
  GraphValidator(mlir::MLIRContext *ctx, const llvm::StringMap<int64_t> &opsets)
      : ctx(ctx), opsets(opsets) {}

  /// `outer` holds the names visible from enclosing graphs.
  mlir::LogicalResult
  validate(const onnx::GraphProto &graph, const llvm::StringSet<> &outer,
           int depth,
           llvm::DenseMap<const onnx::GraphProto *, std::vector<int>> &orders);

  mlir::Location nodeLoc(const onnx::NodeProto &node) {
    return mlir::NameLoc::get(mlir::StringAttr::get(ctx, node.name()));
  }

private:
  mlir::LogicalResult checkDomain(const onnx::NodeProto &node,
                                  mlir::Location loc);

  /// Checks a node against its ONNX operator schema where ONNX knows the
  /// domain: what ONNX's checker verifies and shape inference relies on
  /// (it crashes on e.g. a Scan without `body`). Custom domains only get the
  /// checks that need no schema.
  mlir::LogicalResult checkSchema(const onnx::NodeProto &node,
                                  mlir::Location loc);

  /// Names a subgraph uses that it does not define itself.
  void collectFreeNames(const onnx::GraphProto &graph,
                        llvm::SetVector<llvm::StringRef> &names, int depth);

  mlir::MLIRContext *ctx;
  const llvm::StringMap<int64_t> &opsets;
};

//===----------------------------------------------------------------------===//
// ONNX shape inference (IsolatedShapeInference.cpp)
//===----------------------------------------------------------------------===//

enum class InferenceOutcome { Done, Failed, Crashed, OutOfMemory };

/// Runs ONNX shape inference on `model` in this process.
InferenceOutcome inferShapesHere(onnx::ModelProto &model, std::string &message);

/// Runs ONNX shape inference on `model` in a child process and copies the
/// types it infers into `model`. ONNX's inference has crashed on malformed
/// nodes that pass the schema checks (a Transpose `perm` out of range, some RNN
/// shapes); in a child such a crash costs the types, not the import.
/// `message` says why when the outcome is not Done.
InferenceOutcome inferShapesIsolated(onnx::ModelProto &model,
                                     std::string &message);

//===----------------------------------------------------------------------===//
// Building (ImportTensors.cpp, ImportGraph.cpp)
//===----------------------------------------------------------------------===//

/// The raw data of the main graph's large initializers, left in the mapped
/// model file: protobuf would copy every byte of it into strings.
struct MappedWeights {
  std::shared_ptr<llvm::MemoryBuffer> file;
  /// Per initializer of the main graph (in order): its raw data in `file`,
  /// or empty when it was parsed normally.
  std::vector<llvm::ArrayRef<char>> spans;
};

class Importer {
public:
  Importer(mlir::MLIRContext *ctx, llvm::StringRef path,
           const ONNXImportOptions &options)
      : ctx(ctx), builder(ctx), path(path.str()), options(options),
        dialect(ctx->getOrLoadDialect<MPDialect>()) {
    ctx->getOrLoadDialect<mlir::func::FuncDialect>();
    externalDir = options.externalDataDirectory;
    if (externalDir.empty()) {
      externalDir = llvm::sys::path::parent_path(path).str();
      if (externalDir.empty())
        externalDir = ".";
    }
  }

  mlir::OwningOpRef<mlir::ModuleOp> importModel(onnx::ModelProto &model);

  /// The main graph's large initializers of `model` have their data in
  /// `weights` (the mapped model file).
  void useMappedWeights(onnx::ModelProto &model, MappedWeights weights) {
    mappedFile = std::move(weights.file);
    for (auto [i, span] : llvm::enumerate(weights.spans))
      if (!span.empty())
        mappedData[&model.graph().initializer(i)] = span;
  }

private:
  std::shared_ptr<llvm::MemoryBuffer> mappedFile;
  llvm::DenseMap<const onnx::TensorProto *, llvm::ArrayRef<char>> mappedData;

  /// Values visible in a graph, chained to the enclosing graph's scope.
  struct Scope {
    llvm::StringMap<mlir::Value> values;
    const Scope *parent = nullptr;
    mlir::Value lookup(llvm::StringRef name) const {
      for (const Scope *s = this; s; s = s->parent) {
        auto it = s->values.find(name);
        if (it != s->values.end())
          return it->second;
      }
      return {};
    }
  };

  mlir::LogicalResult readOpsets(const onnx::ModelProto &model);
  /// Replaces the nodes of ONNX function ops that would import as generic
  /// ops, and calls of the model's local functions, by their bodies
  /// (InlineFunctions.cpp). True when it changed the graph.
  mlir::FailureOr<bool> inlineFunctionOps(onnx::ModelProto &model,
                                          mlir::Location fileLoc);
  /// Applies options.inputShapes, dimParams and frozenInputs to the graph.
  mlir::LogicalResult specializeInputs(onnx::GraphProto &graph,
                                       mlir::Location fileLoc);
  mlir::LogicalResult importGraph(onnx::GraphProto &graph, mlir::Block *block,
                                  Scope &scope,
                                  llvm::SmallVectorImpl<mlir::Value> &outputs);
  mlir::LogicalResult importNode(onnx::NodeProto &node, mlir::Block *block,
                                 Scope &scope);
  mlir::FailureOr<mlir::Type> importType(const onnx::TypeProto &type,
                                         mlir::Location loc,
                                         llvm::StringRef what);
  /// `blobName` names the resource blob if the tensor becomes one.
  /// importTensor for ONNX's packed narrow types (int4, uint4, float4e2m1,
  /// int2, uint2): unpacked to one element per byte, as MLIR stores them.
  mlir::FailureOr<mlir::ElementsAttr>
  importPackedTensor(onnx::TensorProto &tensor, mlir::RankedTensorType type,
                     int64_t count, unsigned bits, mlir::Location loc,
                     llvm::StringRef what, const std::string &blobName);
  mlir::FailureOr<mlir::ElementsAttr> importTensor(onnx::TensorProto &tensor,
                                                   mlir::Location loc,
                                                   llvm::StringRef what,
                                                   llvm::StringRef blobName);
  mlir::FailureOr<mlir::Attribute> importAttribute(onnx::AttributeProto &attr,
                                                   mlir::Location loc);
  mlir::FailureOr<mlir::AsmResourceBlob>
  loadExternalData(const onnx::TensorProto &tensor, size_t byteSize,
                   size_t align, mlir::Location loc, llvm::StringRef what);
  mlir::Value getNone(mlir::Block *block);
  mlir::Location nodeLoc(const onnx::NodeProto &node) {
    return mlir::NameLoc::get(builder.getStringAttr(node.name()));
  }
  mlir::ArrayAttr dimParamsAttr(const onnx::TypeProto &type);

  mlir::MLIRContext *ctx;
  mlir::OpBuilder builder;
  std::string path;
  std::string externalDir;
  const ONNXImportOptions &options;
  MPDialect *dialect;
  llvm::StringMap<int64_t> opsets;
  llvm::DenseMap<const onnx::GraphProto *, std::vector<int>> orders;
  /// Types of intermediate values from value_info and graph outputs.
  llvm::StringMap<const onnx::TypeProto *> declaredTypes;
  llvm::DenseMap<mlir::Block *, mlir::Value> noneValues;
};

//===----------------------------------------------------------------------===//
// Loading (ModelLoader.cpp)
//===----------------------------------------------------------------------===//

/// Parses a model file of at least 64 MB by mapping it and leaving the
/// large weights in the mapping; false (with `model` untouched) when the
/// file does not lend itself to that, and the caller parses it normally.
bool loadMapped(llvm::StringRef path, size_t threshold, onnx::ModelProto &model,
                MappedWeights &weights);

/// Parses a binary model from the file `path` or from `contents`; false
/// after a diagnostic when it cannot.
bool loadBinary(llvm::StringRef path, llvm::StringRef contents, bool fromFile,
                onnx::ModelProto &model, mlir::MLIRContext *ctx);

/// Parses a model in the ONNX textual syntax; false after a diagnostic when
/// it cannot.
bool loadText(llvm::StringRef contents, onnx::ModelProto &model,
              mlir::MLIRContext *ctx);

} // namespace mp::onnx_import

#endif // MP_LIB_IMPORT_ONNX_IMPORTERINTERNAL_H
