//===- main.cpp - summarize an ONNX model with the MixPrec C++ API --------===//
//
// Usage: mp-summary <model.onnx | model.onnxtxt>
//
// Imports the model into the mp dialect and prints the graph's inputs and
// outputs (their ONNX names) and how many ops of each name it has. Import
// errors are printed as `<file>: node '<name>': error: ...`; the exit status
// is then 1.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace {
/// The ONNX name of a graph input or output, kept in its `mp.name`.
std::string onnxName(mlir::DictionaryAttr attrs) {
  if (attrs)
    if (auto name = attrs.getAs<mlir::StringAttr>(mp::MPDialect::kArgNameAttr))
      return name.str();
  return "<unnamed>";
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: " << argv[0] << " <model.onnx>\n";
    return 2;
  }
  llvm::StringRef path = argv[1];

  mlir::DialectRegistry registry;
  mp::registerONNXImportDialects(registry);
  mlir::MLIRContext context(registry);
  mp::ONNXDiagnosticHandler diagnostics(&context, path, llvm::errs());

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mp::importONNXFile(path, &context);
  if (!module)
    return 1;

  for (auto func : module->getOps<mlir::func::FuncOp>()) {
    llvm::outs() << "graph: " << func.getName() << "\n";
    llvm::outs() << "inputs:";
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      llvm::outs() << " " << onnxName(func.getArgAttrDict(i));
    llvm::outs() << "\noutputs:";
    for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
      llvm::outs() << " " << onnxName(func.getResultAttrDict(i));
    llvm::outs() << "\n";

    // Every op of the graph (subgraphs included), but not the terminator.
    std::map<std::string, unsigned> counts;
    func.walk([&](mlir::Operation *op) {
      if (op != func.getOperation() && !llvm::isa<mlir::func::ReturnOp>(op))
        ++counts[op->getName().getStringRef().str()];
    });
    llvm::outs() << "ops:\n";
    for (const auto &[name, count] : counts)
      llvm::outs() << "  " << name << ": " << count << "\n";
  }
  return 0;
}
