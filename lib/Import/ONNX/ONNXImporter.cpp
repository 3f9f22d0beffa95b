//===- ONNXImporter.cpp - ONNX models to the mp dialect -------------------===//
//
// The importer works in three steps:
//  1. load: parse the protobuf or the textual syntax into an onnx::ModelProto;
//  2. validate: opsets, names, definitions before uses, cycles, recursively
//     through subgraphs, so that nothing malformed reaches ONNX shape
//     inference or the builder; every problem is one diagnostic naming the
//     node;
//  3. build: one func.func per graph, one op per node in topological order.
//
// This file is compiled with exceptions (protobuf and ONNX may throw); every
// exception is caught here and turned into a diagnostic.
//
// The steps live in: ModelLoader.cpp (load), GraphValidator.cpp (validate),
// IsolatedShapeInference.cpp (ONNX shape inference, in a child process),
// ImportGraph.cpp and ImportTensors.cpp (build); ImporterInternal.h declares
// what they share. This file holds the entry points, which catch every
// exception, and ONNXDiagnosticHandler.
//
//===----------------------------------------------------------------------===//
#include "mp/Import/ONNXImporter.h"
#include "ImporterInternal.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/MemoryBuffer.h"

#include <fstream>
#include <new>

using namespace mlir;
using namespace mp;
using namespace mp::onnx_import;

namespace {

OwningOpRef<ModuleOp> importUnchecked(llvm::StringRef path,
                                      llvm::StringRef contents, bool fromFile,
                                      MLIRContext *ctx,
                                      const ONNXImportOptions &options) {
  // LLVM's new-handler aborts on a failed allocation; while ONNX and
  // protobuf work on the model, a failed allocation (absurd sizes in a
  // corrupt file) throws std::bad_alloc instead and becomes a diagnostic.
  std::new_handler llvmNewHandler = std::set_new_handler(nullptr);
  llvm::scope_exit restoreNewHandler(
      [&] { std::set_new_handler(llvmNewHandler); });
  try {
    ONNXFormat format = options.format;
    std::unique_ptr<llvm::MemoryBuffer> textBuffer;
    if (format == ONNXFormat::Auto) {
      llvm::StringRef head = contents;
      std::unique_ptr<llvm::MemoryBuffer> headBuffer;
      if (fromFile) {
        auto buffer = llvm::MemoryBuffer::getFileSlice(path, 512, 0);
        if (buffer)
          headBuffer = std::move(*buffer);
        else if (auto whole = llvm::MemoryBuffer::getFile(path))
          headBuffer = std::move(*whole);
        if (headBuffer)
          head = headBuffer->getBuffer();
      }
      format = detectONNXFormat(path, head);
    }
    onnx::ModelProto model;
    if (format == ONNXFormat::Text) {
      if (fromFile) {
        auto buffer = llvm::MemoryBuffer::getFile(path);
        if (!buffer) {
          emitError(UnknownLoc::get(ctx)) << "cannot read '" << path
                                          << "': " << buffer.getError().message();
          return {};
        }
        textBuffer = std::move(*buffer);
        contents = textBuffer->getBuffer();
      }
      if (!loadText(contents, model, ctx))
        return {};
    }
    MappedWeights mapped;
    if (format != ONNXFormat::Text) {
      bool done = fromFile &&
                  loadMapped(path,
                             std::max<size_t>(4096,
                                              options.inlineTensorLimit + 1),
                             model, mapped);
      if (!done && !loadBinary(path, contents, fromFile, model, ctx))
        return {};
    }
    Importer importer(ctx, path, options);
    if (mapped.file)
      importer.useMappedWeights(model, std::move(mapped));
    return importer.importModel(model);
  } catch (const std::bad_alloc &) {
    emitError(UnknownLoc::get(ctx))
        << "cannot import ONNX model: out of memory";
  } catch (const std::exception &e) {
    emitError(UnknownLoc::get(ctx)) << "cannot import ONNX model: " << e.what();
  } catch (...) {
    emitError(UnknownLoc::get(ctx)) << "cannot import ONNX model";
  }
  return {};
}

/// Imports, and makes sure that a failure is never silent: every failing
/// path should report its own error, this catches the ones that do not.
OwningOpRef<ModuleOp> importImpl(llvm::StringRef path, llvm::StringRef contents,
                                 bool fromFile, MLIRContext *ctx,
                                 const ONNXImportOptions &options) {
  bool reported = false;
  OwningOpRef<ModuleOp> module;
  {
    // Watches, and passes every diagnostic on to the caller's handler.
    ScopedDiagnosticHandler watch(ctx, [&](Diagnostic &diag) {
      reported |= diag.getSeverity() == DiagnosticSeverity::Error;
      return failure();
    });
    module = importUnchecked(path, contents, fromFile, ctx, options);
  }
  if (!module && !reported)
    emitError(UnknownLoc::get(ctx))
        << "cannot import ONNX model (internal error: the failure was not "
           "reported)";
  return module;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void mp::registerONNXImportDialects(DialectRegistry &registry) {
  registry.insert<MPDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> mp::importONNXFile(llvm::StringRef path,
                                         MLIRContext *context,
                                         const ONNXImportOptions &options) {
  return importImpl(path, {}, /*fromFile=*/true, context, options);
}

OwningOpRef<ModuleOp> mp::importONNXBuffer(llvm::StringRef contents,
                                           llvm::StringRef bufferName,
                                           MLIRContext *context,
                                           const ONNXImportOptions &options) {
  return importImpl(bufferName, contents, /*fromFile=*/false, context, options);
}

ONNXFormat mp::detectONNXFormat(llvm::StringRef path, llvm::StringRef head) {
  if (path.ends_with(".onnxtxt") || path.ends_with(".onnx.txt") ||
      path.ends_with(".onnxtext"))
    return ONNXFormat::Text;
  if (path.ends_with(".onnx") || path.ends_with(".pb"))
    return ONNXFormat::Binary;
  // ONNX text starts with `<` (the model header) after optional whitespace
  // and comments.
  llvm::StringRef rest = head;
  while (true) {
    rest = rest.ltrim();
    if (rest.starts_with("#")) {
      rest = rest.drop_until([](char c) { return c == '\n'; });
      continue;
    }
    break;
  }
  return rest.starts_with("<") ? ONNXFormat::Text : ONNXFormat::Binary;
}

bool mp::isONNXFile(llvm::StringRef path) {
  if (path.ends_with(".mlir") || path.ends_with(".mlirbc"))
    return false;
  if (path.ends_with(".onnx") || path.ends_with(".onnxtxt") ||
      path.ends_with(".onnx.txt") || path.ends_with(".onnxtext") ||
      path.ends_with(".pb"))
    return true;
  // Other names: look at the contents. MLIR bytecode starts with "ML\xefR";
  // MLIR text is printable; ONNX text starts with `<`; anything else that is
  // binary is taken as an ONNX protobuf.
  if (path == "-" || path.empty())
    return false;
  std::ifstream file(path.str(), std::ios::binary);
  if (!file)
    return false;
  char buffer[512];
  file.read(buffer, sizeof(buffer));
  llvm::StringRef bytes(buffer, static_cast<size_t>(file.gcount()));
  if (bytes.starts_with("ML\xefR"))
    return false;
  if (llvm::any_of(bytes, [](char c) {
        unsigned char u = static_cast<unsigned char>(c);
        return u < 0x09 || (u > 0x0d && u < 0x20);
      }))
    return true;
  return detectONNXFormat(path, bytes) == ONNXFormat::Text;
}

ONNXDiagnosticHandler::ONNXDiagnosticHandler(MLIRContext *context,
                                             llvm::StringRef fileName,
                                             llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context), fileName(fileName.str()) {
  setHandler([this, &os](Diagnostic &diag) {
    auto print = [&](Diagnostic &d, llvm::StringRef severity) {
      os << this->fileName << ": ";
      std::optional<std::string> node;
      d.getLocation()->walk([&](Location loc) {
        if (auto name = dyn_cast<NameLoc>(loc)) {
          node = name.getName().str();
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (node)
        os << (node->empty() ? std::string("unnamed node")
                             : "node '" + *node + "'")
           << ": ";
      os << severity << ": " << d.str() << "\n";
    };
    auto severityName = [](DiagnosticSeverity s) -> llvm::StringRef {
      switch (s) {
      case DiagnosticSeverity::Error: return "error";
      case DiagnosticSeverity::Warning: return "warning";
      case DiagnosticSeverity::Note: return "note";
      case DiagnosticSeverity::Remark: return "remark";
      }
      return "error";
    };
    print(diag, severityName(diag.getSeverity()));
    for (Diagnostic &note : diag.getNotes())
      print(note, "note");
    return success();
  });
}
