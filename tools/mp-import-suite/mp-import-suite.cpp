//===- mp-import-suite.cpp - import every model of an ONNX test corpus ----===//
//
// Imports every ONNX model below the given directories (`model.onnx` in a
// test's directory, or a `*.onnx` file as in light/; by default the backend
// test data of the ONNX this build links: node/, pytorch-converted/,
// pytorch-operator/, simple/ and light/) and prints, per corpus,
// how many models imported with typed ops only, imported but kept some nodes
// as generic `mp.onnx_op` ("unsupported" by typed ops), failed with a
// diagnostic, or crashed. Each import runs in a child process, so a crash is
// counted rather than ending the run. With --round-trip every imported module
// is also printed, parsed and printed again, and the two prints compared.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mlir;

namespace {
llvm::cl::list<std::string> corpora(llvm::cl::Positional,
                                    llvm::cl::desc("<corpus directories>"));
llvm::cl::opt<bool> roundTrip("round-trip",
                              llvm::cl::desc("Check print/parse/print too"),
                              llvm::cl::init(false));
llvm::cl::opt<bool> verbose("v", llvm::cl::desc("Print one line per model"),
                            llvm::cl::init(false));
llvm::cl::opt<double> minImportRate(
    "min-import-rate",
    llvm::cl::desc("Exit non-zero when a corpus imports less than this "
                   "fraction of its models (imported + unsupported)"),
    llvm::cl::init(0.0));
llvm::cl::opt<std::string> failuresFile(
    "failures", llvm::cl::desc("Write each failure's diagnostic to this file"),
    llvm::cl::init(""));

enum class Outcome { Typed = 0, Generic = 1, Failed = 2, Crashed = 3 };

struct Result {
  Outcome outcome;
  std::string detail; // generic op types, or the diagnostic
};

/// Runs in the child: imports one model, reports on `out`.
int importOne(const std::string &path, llvm::raw_ostream &out) {
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  std::string diagnostics;
  llvm::raw_string_ostream diagStream(diagnostics);
  mp::ONNXDiagnosticHandler handler(&context, path, diagStream);
  OwningOpRef<ModuleOp> module = mp::importONNXFile(path, &context);
  if (!module) {
    out << "F" << diagnostics;
    return 0;
  }
  if (roundTrip) {
    std::string first, second;
    llvm::raw_string_ostream firstStream(first), secondStream(second);
    OpPrintingFlags flags;
    module->print(firstStream, flags);
    // A context of its own: in this one the resource blobs' names are taken,
    // and the parser would rename the reparsed ones.
    MLIRContext reparseContext(registry);
    OwningOpRef<ModuleOp> reparsed =
        parseSourceString<ModuleOp>(first, &reparseContext);
    if (!reparsed) {
      out << "F" << "round trip: the printed module does not parse: "
          << diagnostics;
      return 0;
    }
    reparsed->print(secondStream, flags);
    if (first != second) {
      out << "F" << "round trip: print -> parse -> print differs";
      return 0;
    }
  }
  std::set<std::string> generic;
  module->walk([&](mp::OnnxGenericOp op) {
    generic.insert((op.getDomain().empty() ? "" : op.getDomain().str() + "::") +
                   op.getOpType().str());
  });
  if (generic.empty()) {
    out << "T";
    return 0;
  }
  out << "G";
  bool first = true;
  for (const std::string &g : generic) {
    out << (first ? "" : ",") << g;
    first = false;
  }
  return 0;
}

Result runIsolated(const std::string &path) {
  int fds[2];
  if (pipe(fds) != 0)
    return {Outcome::Crashed, "pipe failed"};
  llvm::outs().flush();
  llvm::errs().flush();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    llvm::raw_string_ostream os(report);
    importOne(path, os);
    os.flush();
    size_t written = 0;
    while (written < report.size()) {
      ssize_t n = write(fds[1], report.data() + written, report.size() - written);
      if (n <= 0)
        break;
      written += n;
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string report;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0)
    report.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || report.empty()) {
    std::string why = WIFSIGNALED(status)
                          ? "killed by signal " + std::to_string(WTERMSIG(status))
                          : "exit status " + std::to_string(WEXITSTATUS(status));
    return {Outcome::Crashed, why};
  }
  Outcome outcome = report[0] == 'T'   ? Outcome::Typed
                    : report[0] == 'G' ? Outcome::Generic
                                       : Outcome::Failed;
  return {outcome, report.substr(1)};
}
} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "Imports every model.onnx of ONNX test corpora and counts the outcomes\n");
  std::vector<std::string> dirs(corpora.begin(), corpora.end());
  if (dirs.empty())
    for (const char *suite :
         {"node", "pytorch-converted", "pytorch-operator", "simple", "light"})
      dirs.push_back(std::string(MP_ONNX_TESTDATA_DIR) + "/" + suite);

  std::unique_ptr<llvm::raw_fd_ostream> failures;
  if (!failuresFile.empty()) {
    std::error_code ec;
    failures = std::make_unique<llvm::raw_fd_ostream>(failuresFile, ec);
    if (ec) {
      llvm::errs() << "cannot write '" << failuresFile << "': " << ec.message()
                   << "\n";
      return 2;
    }
  }

  bool belowRate = false;
  size_t totalCrashes = 0;
  for (const std::string &dir : dirs) {
    std::vector<std::string> models;
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
         it != end && !ec; it.increment(ec))
      if (llvm::sys::path::extension(it->path()) == ".onnx")
        models.push_back(it->path());
    if (ec || models.empty()) {
      llvm::errs() << "no models found under '" << dir << "'\n";
      return 2;
    }
    std::sort(models.begin(), models.end());
    size_t counts[4] = {0, 0, 0, 0};
    std::map<std::string, int> genericOps;
    for (const std::string &model : models) {
      Result result = runIsolated(model);
      ++counts[static_cast<int>(result.outcome)];
      std::string name =
          llvm::sys::path::filename(model) == "model.onnx"
              ? llvm::sys::path::filename(llvm::sys::path::parent_path(model))
                    .str()
              : llvm::sys::path::stem(model).str();
      if (result.outcome == Outcome::Generic) {
        llvm::SmallVector<llvm::StringRef> ops;
        llvm::StringRef(result.detail).split(ops, ',');
        for (llvm::StringRef op : ops)
          ++genericOps[op.str()];
      }
      if (result.outcome >= Outcome::Failed) {
        llvm::StringRef firstLine =
            llvm::StringRef(result.detail).split('\n').first;
        if (failures)
          *failures << model << "\n" << result.detail << "\n\n";
        if (verbose || result.outcome == Outcome::Crashed)
          llvm::outs() << (result.outcome == Outcome::Crashed ? "CRASH  "
                                                              : "FAIL   ")
                       << name << ": " << firstLine << "\n";
      } else if (verbose) {
        llvm::outs() << (result.outcome == Outcome::Typed ? "TYPED  "
                                                          : "GENERIC")
                     << " " << name
                     << (result.detail.empty() ? "" : " (" + result.detail + ")")
                     << "\n";
      }
    }
    size_t total = models.size();
    size_t imported = counts[0] + counts[1];
    double rate = static_cast<double>(imported) / total;
    totalCrashes += counts[3];
    llvm::outs() << llvm::sys::path::filename(dir) << ": " << total
                 << " models: " << imported << " imported ("
                 << llvm::format("%.1f", 100.0 * rate) << "%): " << counts[0]
                 << " with typed ops only, " << counts[1]
                 << " unsupported (some nodes kept as mp.onnx_op); "
                 << counts[2] << " failed with a diagnostic; " << counts[3]
                 << " crashed\n";
    if (!genericOps.empty()) {
      llvm::outs() << "  ops kept generic (models):";
      for (auto &[op, n] : genericOps)
        llvm::outs() << " " << op << "(" << n << ")";
      llvm::outs() << "\n";
    }
    if (rate < minImportRate)
      belowRate = true;
  }
  return (belowRate || totalCrashes) ? 1 : 0;
}
