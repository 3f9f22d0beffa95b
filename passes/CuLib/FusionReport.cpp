//===- FusionReport.cpp - the culib-fusion-report pass --------------------===//
//
// The fusion passes, run with `record`, leave per pattern what they did on
// each function (culib.fusion_record: calls made, calls fewer, intermediate
// bytes no longer written). This pass counts the calls left, adds up the
// calls there were before the fusion stage, writes it all as text or JSON
// (like the autocast report) and drops the records from the IR.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mp {
#define GEN_PASS_DEF_FUSIONREPORT
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

struct PatternFigures {
  std::string pass, pattern;
  int64_t fused = 0, callsRemoved = 0, bytes = 0;
};

struct FunctionFigures {
  std::string name;
  int64_t callsAfter = 0;
  std::vector<PatternFigures> patterns;
  int64_t callsBefore() const {
    int64_t n = callsAfter;
    for (const PatternFigures &p : patterns)
      n += p.callsRemoved;
    return n;
  }
  int64_t bytes() const {
    int64_t n = 0;
    for (const PatternFigures &p : patterns)
      n += p.bytes;
    return n;
  }
};

void writeText(llvm::raw_ostream &os, ArrayRef<FunctionFigures> functions) {
  for (const FunctionFigures &f : functions) {
    os << "function " << f.name << ": " << f.callsBefore() << " calls -> "
       << f.callsAfter << "; " << f.bytes()
       << " intermediate bytes no longer written\n";
    for (const PatternFigures &p : f.patterns)
      os << "  " << p.pass << " " << p.pattern << ": " << p.fused
         << " fused call(s), " << p.callsRemoved << " calls fewer, " << p.bytes
         << " bytes\n";
  }
}

llvm::json::Value toJson(ArrayRef<FunctionFigures> functions) {
  llvm::json::Array list;
  for (const FunctionFigures &f : functions) {
    llvm::json::Array patterns;
    for (const PatternFigures &p : f.patterns)
      patterns.push_back(llvm::json::Object{{"pass", p.pass},
                                            {"pattern", p.pattern},
                                            {"fused", p.fused},
                                            {"calls_removed", p.callsRemoved},
                                            {"bytes_not_written", p.bytes}});
    list.push_back(llvm::json::Object{{"function", f.name},
                                      {"calls_before", f.callsBefore()},
                                      {"calls_after", f.callsAfter},
                                      {"bytes_not_written", f.bytes()},
                                      {"patterns", std::move(patterns)}});
  }
  return llvm::json::Object{{"functions", std::move(list)}};
}

struct FusionReportPass : public mp::impl::FusionReportBase<FusionReportPass> {
  using Base::Base;

  void runOnOperation() override {
    std::vector<FunctionFigures> functions;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      FunctionFigures figures;
      figures.name = func.getSymName().str();
      func.walk([&](Operation *op) {
        // Calls per run: those at load run once.
        figures.callsAfter += culib::getCallBuffers(op).has_value() &&
                              !op->hasAttr(culib::kAtLoadAttr);
      });
      if (auto record =
              func->getAttrOfType<ArrayAttr>(culib::kFusionRecordAttr)) {
        for (auto entry : record.getAsRange<DictionaryAttr>()) {
          PatternFigures p;
          auto str = [&](StringRef key) {
            auto v = entry.getAs<StringAttr>(key);
            return v ? v.str() : std::string();
          };
          auto num = [&](StringRef key) {
            auto v = entry.getAs<IntegerAttr>(key);
            return v ? v.getInt() : int64_t(0);
          };
          p.pass = str("pass");
          p.pattern = str("pattern");
          p.fused = num("fused");
          p.callsRemoved = num("calls_removed");
          p.bytes = num("bytes");
          figures.patterns.push_back(std::move(p));
        }
        func->removeAttr(culib::kFusionRecordAttr);
      }
      functions.push_back(std::move(figures));
    }
    if (output.empty()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      writeText(os, functions);
      getOperation().emitRemark() << "culib-fusion-report:\n" << text;
      return;
    }
    std::error_code ec;
    llvm::raw_fd_ostream os(output, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      getOperation().emitError() << "cannot write the fusion report '" << output
                                 << "': " << ec.message();
      return signalPassFailure();
    }
    if (StringRef(output).ends_with(".json"))
      os << llvm::formatv("{0:2}", toJson(functions)) << "\n";
    else
      writeText(os, functions);
  }
};

} // namespace
