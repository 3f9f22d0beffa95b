//===- FuzzImportONNX.cpp - libFuzzer target for the ONNX importer --------===//
//
// Feeds each input to the importer as a binary ModelProto (or, built with
// MP_FUZZ_ONNX_TEXT, as ONNX's textual syntax), then verifies the module and
// runs mp-infer-shapes on what was imported: the importer and the shape
// inference of every typed op are the code that sees untrusted models.
//
// ONNX's own shape inference is off: it is ONNX 1.12's code, which crashes
// on some malformed nodes, and the importer runs it in a child process for
// exactly that reason (ONNXImportOptions::isolateShapeInference). Diagnostics
// are swallowed; any crash, sanitizer report or leak is a finding.
//
// scripts/fuzz.sh builds and runs it (docs/robustness.md).
//
//===----------------------------------------------------------------------===//
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"
#include "mp/Passes/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstddef>
#include <cstdint>

namespace {
#ifdef MP_FUZZ_ONNX_TEXT
constexpr mp::ONNXFormat kFormat = mp::ONNXFormat::Text;
constexpr const char *kBufferName = "/nonexistent/fuzz.onnxtxt";
#else
constexpr mp::ONNXFormat kFormat = mp::ONNXFormat::Binary;
constexpr const char *kBufferName = "/nonexistent/fuzz.onnx";
#endif

const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry *instance = [] {
    auto *r = new mlir::DialectRegistry();
    mp::registerAllDialects(*r);
    return r;
  }();
  return *instance;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: uniqued types and attributes of earlier
  // inputs would otherwise accumulate (and look like a leak).
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler swallow(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  mp::ONNXImportOptions options;
  options.format = kFormat;
  options.shapeInference = false;
  // External data is looked up in a directory that does not exist: a fuzzed
  // model must not read the fuzzer's files.
  options.externalDataDirectory = "/nonexistent";
  mlir::OwningOpRef<mlir::ModuleOp> module = mp::importONNXBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(data), size), kBufferName,
      &context, options);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;

  mlir::PassManager pm(&context);
  pm.addNestedPass<mlir::func::FuncOp>(mp::createInferShapes());
  (void)pm.run(*module);
  return 0;
}
