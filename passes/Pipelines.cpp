//===- Pipelines.cpp - MixPrec's pass pipelines ---------------------------===//
#include "mp/Passes/Pipelines.h"
#include "mp/Conversion/Passes.h"
#include "mp/Passes/CuLib/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

void mp::buildCompilePipeline(mlir::OpPassManager &pm) {
  pm.addNestedPass<mlir::func::FuncOp>(mp::createInferShapes());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createFoldConstants());
  pm.addPass(mp::createConvertMPToCuLib());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createNHWCLayout());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createPlanMemory());
}

void mp::buildAutocastPipeline(mlir::OpPassManager &pm,
                               const AutocastOptions &options,
                               std::optional<PadTensorCoresOptions> padding) {
  pm.addPass(mp::createAutocast(options));
  if (padding)
    pm.addNestedPass<mlir::func::FuncOp>(mp::createPadTensorCores(*padding));
  pm.addNestedPass<mlir::func::FuncOp>(mp::createCastCleanup());
}

namespace {
/// The options of mp-autocast-pipeline: those of mp-autocast.
struct AutocastPipelineOptions
    : mlir::PassPipelineOptions<AutocastPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("f16 (default) or bf16")};
  Option<std::string> level{
      *this, "level",
      llvm::cl::desc("default, tensor-cores-only or unsafe-force-all")};
  Option<std::string> policyFile{*this, "policy-file",
                                 llvm::cl::desc("A JSON policy file")};
  Option<std::string> keepIOTypes{
      *this, "keep-io-types",
      llvm::cl::desc("true (default) or false: graph inputs/outputs keep "
                     "their types")};
  ListOption<std::string> allowOps{*this, "allow",
                                   llvm::cl::desc("Op types to make ALLOW")};
  ListOption<std::string> inferOps{*this, "infer",
                                   llvm::cl::desc("Op types to make INFER")};
  ListOption<std::string> clearOps{*this, "clear",
                                   llvm::cl::desc("Op types to make CLEAR")};
  ListOption<std::string> denyOps{*this, "deny",
                                  llvm::cl::desc("Op types to make DENY")};
  ListOption<std::string> allowNodes{
      *this, "allow-nodes",
      llvm::cl::desc("Node names or globs in low precision")};
  ListOption<std::string> denyNodes{
      *this, "deny-nodes", llvm::cl::desc("Node names or globs kept in f32")};
  ListOption<std::string> reportFiles{
      *this, "report",
      llvm::cl::desc("Report files (.txt, .json, .dot, .svg)")};
  Option<bool> validate{
      *this, "validate",
      llvm::cl::desc("Validate on the CPU runtime and deny the nodes that "
                     "break the outputs (mp-autocast validate)"),
      llvm::cl::init(false)};
  ListOption<std::string> validateInputs{
      *this, "validate-inputs",
      llvm::cl::desc("Validation input files, in graph input order")};
  Option<unsigned> validateSeed{*this, "validate-seed",
                                llvm::cl::desc("Seed of random inputs"),
                                llvm::cl::init(0)};
  Option<double> validateTol{
      *this, "validate-tol",
      llvm::cl::desc("Largest max |error| / max |fp32 output|"),
      llvm::cl::init(1e-2)};
  Option<double> validateTimeLimit{
      *this, "validate-time-limit",
      llvm::cl::desc("Seconds after which validation stops searching"),
      llvm::cl::init(300)};
  Option<bool> pad{*this, "pad",
                   llvm::cl::desc("Pad low-precision GEMMs/convolutions for "
                                  "tensor cores (mp-pad-tensor-cores)"),
                   llvm::cl::init(true)};
  Option<int64_t> padMultiple{*this, "pad-multiple",
                              llvm::cl::desc("mp-pad-tensor-cores multiple"),
                              llvm::cl::init(8)};
  Option<double> padMaxGrowth{*this, "pad-max-growth",
                              llvm::cl::desc("mp-pad-tensor-cores max-growth"),
                              llvm::cl::init(1.35)};
  Option<std::string> padReport{
      *this, "pad-report",
      llvm::cl::desc("mp-pad-tensor-cores report file (.json or text)")};

  std::optional<mp::PadTensorCoresOptions> toPadOptions() const {
    if (!pad)
      return std::nullopt;
    mp::PadTensorCoresOptions o;
    o.multiple = padMultiple;
    o.maxGrowth = padMaxGrowth;
    o.reportFile = padReport;
    return o;
  }

  mp::AutocastOptions toPassOptions() const {
    mp::AutocastOptions o;
    o.target = target;
    o.level = level;
    o.policyFile = policyFile;
    o.keepIOTypes = keepIOTypes;
    o.allowOps.assign(allowOps.begin(), allowOps.end());
    o.inferOps.assign(inferOps.begin(), inferOps.end());
    o.clearOps.assign(clearOps.begin(), clearOps.end());
    o.denyOps.assign(denyOps.begin(), denyOps.end());
    o.allowNodes.assign(allowNodes.begin(), allowNodes.end());
    o.denyNodes.assign(denyNodes.begin(), denyNodes.end());
    o.reportFiles.assign(reportFiles.begin(), reportFiles.end());
    o.validate = validate;
    o.validateInputs.assign(validateInputs.begin(), validateInputs.end());
    o.validateSeed = validateSeed;
    o.validateTol = validateTol;
    o.validateTimeLimit = validateTimeLimit;
    return o;
  }
};
} // namespace

void mp::registerPipelines() {
  mlir::PassPipelineRegistration<>(
      "mp-compile",
      "Lower an imported model to memory-planned culib calls: "
      "mp-infer-shapes, mp-fold-constants, convert-mp-to-culib, "
      "culib-nhwc-layout, culib-plan-memory",
      [](mlir::OpPassManager &pm) { buildCompilePipeline(pm); });
  mlir::PassPipelineRegistration<AutocastPipelineOptions>(
      "mp-autocast-pipeline",
      "Mixed precision: mp-autocast (policy, four-colour algorithm, casts, "
      "constants, report), mp-pad-tensor-cores, mp-cast-cleanup",
      [](mlir::OpPassManager &pm, const AutocastPipelineOptions &options) {
        buildAutocastPipeline(pm, options.toPassOptions(),
                              options.toPadOptions());
      });
}
