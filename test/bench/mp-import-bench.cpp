//===- mp-import-bench.cpp - time and memory of importing one model -------===//
//
// Imports an ONNX model (parse, validation, ONNX shape inference, building
// and verifying the mp module) and prints one JSON line with the wall time of
// each repetition and the process's peak resident memory. Run it in a fresh
// process per measurement: peak memory is per process.
//
//===----------------------------------------------------------------------===//
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <vector>

using namespace mlir;

static llvm::cl::opt<std::string> modelPath(llvm::cl::Positional,
                                            llvm::cl::Required,
                                            llvm::cl::desc("<model.onnx>"));
static llvm::cl::opt<unsigned> repeat("repeat",
                                      llvm::cl::desc("Imports to time"),
                                      llvm::cl::init(1));

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "ONNX import benchmark\n");
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  std::vector<double> seconds;
  for (unsigned i = 0; i < repeat; ++i) {
    MLIRContext context(registry);
    mp::ONNXDiagnosticHandler handler(&context, modelPath, llvm::errs());
    auto start = std::chrono::steady_clock::now();
    OwningOpRef<ModuleOp> module = mp::importONNXFile(modelPath, &context);
    auto end = std::chrono::steady_clock::now();
    if (!module)
      return 1;
    seconds.push_back(std::chrono::duration<double>(end - start).count());
  }
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  llvm::outs() << "{\"model\": \"" << modelPath << "\", \"best_s\": "
               << sorted.front() << ", \"median_s\": "
               << sorted[sorted.size() / 2]
               << ", \"peak_rss_bytes\": " << usage.ru_maxrss * 1024 << "}\n";
  return 0;
}
