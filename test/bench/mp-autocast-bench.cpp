//===- mp-autocast-bench.cpp - mp-autocast on synthetic graphs ------------===//
//
// Builds a function of about --ops typed mp ops (a repeated block of
// matmuls, bias adds, activations, softmax, transposes and an Erf chain:
// every colour and propagation rule is exercised) and times mp-autocast +
// mp-cast-cleanup on it. Prints one JSON line: ops, build and pass seconds,
// peak RSS after building and after the pass. scripts/bench_autocast.py runs
// it for several sizes (one process each, so RSS figures are per size).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/InitAll.h"
#include "mp/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <sys/resource.h>

using namespace mlir;

static llvm::cl::opt<int64_t> numOps("ops", llvm::cl::desc("About this many ops"),
                                     llvm::cl::init(100000));

static int64_t peakRSSBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(argc, argv, "mp-autocast benchmark\n");
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  MLIRContext context(registry);
  context.disableMultithreading();
  context.loadAllAvailableDialects();

  auto start = std::chrono::steady_clock::now();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  auto act = RankedTensorType::get({8, 64}, b.getF32Type());
  auto actT = RankedTensorType::get({64, 8}, b.getF32Type());
  auto weightType = RankedTensorType::get({64, 64}, b.getF32Type());
  auto biasType = RankedTensorType::get({64}, b.getF32Type());
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, "synthetic",
                                   b.getFunctionType({act}, {act}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  auto make = [&](StringRef name, ValueRange operands, Type type,
                  ArrayRef<NamedAttribute> attrs, const Twine &node) {
    OperationState state(NameLoc::get(b.getStringAttr(node)), name);
    state.addOperands(operands);
    state.addTypes(type);
    state.addAttributes(attrs);
    return b.create(state)->getResult(0);
  };
  auto initializer = [&](StringRef name, RankedTensorType type, float v) {
    OperationState state(loc, "mp.initializer");
    state.addAttribute("name", b.getStringAttr(name));
    state.addAttribute("value", DenseElementsAttr::get(type, v));
    state.addTypes(type);
    return b.create(state)->getResult(0);
  };
  Value w = initializer("w", weightType, 0.01f);
  Value bias = initializer("bias", biasType, 0.5f);
  Value scale = initializer("scale", RankedTensorType::get({}, b.getF32Type()),
                            1.4142f);
  auto perm = b.getNamedAttr("perm", b.getDenseI64ArrayAttr({1, 0}));
  auto axis = b.getNamedAttr("axis", b.getI64IntegerAttr(1));
  Value x = entry->getArgument(0);
  const int64_t opsPerBlock = 12;
  int64_t blocks = std::max<int64_t>(1, numOps / opsPerBlock);
  for (int64_t i = 0; i < blocks; ++i) {
    std::string p = "block" + std::to_string(i) + "/";
    Value m1 = make("mp.matmul", {x, w}, act, {}, p + "mm1");
    Value a1 = make("mp.add", {m1, bias}, act, {}, p + "bias");
    Value r = make("mp.relu", {a1}, act, {}, p + "relu");
    Value m2 = make("mp.matmul", {r, w}, act, {}, p + "mm2");
    Value s = make("mp.softmax", {m2}, act, {axis}, p + "softmax");
    Value t = make("mp.transpose", {s}, actT, {perm}, p + "t1");
    Value t2 = make("mp.transpose", {t}, act, {perm}, p + "t2");
    Value e = make("mp.mul", {t2, x}, act, {}, p + "mul");
    Value d = make("mp.div", {e, scale}, act, {}, p + "div");
    Value g = make("mp.erf", {d}, act, {}, p + "erf");
    Value h = make("mp.add", {g, x}, act, {}, p + "add");
    x = make("mp.mul", {h, h}, act, {}, p + "square");
  }
  func::ReturnOp::create(b, loc, x);
  double buildSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t rssAfterBuild = peakRSSBytes();

  PassManager pm(&context);
  mp::buildAutocastPipeline(pm);
  if (getenv("MP_BENCH_TIMING"))
    pm.enableTiming();
  start = std::chrono::steady_clock::now();
  if (failed(pm.run(module))) {
    llvm::errs() << "mp-autocast-bench: the pipeline failed\n";
    return 1;
  }
  double passSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  int64_t casts = 0, ops = 0;
  func.walk([&](Operation *op) {
    ++ops;
    casts += isa<mp::CastOp>(op);
  });
  llvm::outs() << "{\"ops\": " << blocks * opsPerBlock
               << ", \"ops_after\": " << ops << ", \"casts\": " << casts
               << ", \"build_seconds\": " << buildSeconds
               << ", \"pass_seconds\": " << passSeconds
               << ", \"peak_rss_after_build_bytes\": " << rssAfterBuild
               << ", \"peak_rss_bytes\": " << peakRSSBytes() << "}\n";
  module->erase();
  return 0;
}
