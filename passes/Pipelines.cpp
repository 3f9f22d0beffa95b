//===- Pipelines.cpp - MixPrec's pass pipelines ---------------------------===//
#include "mp/Passes/Pipelines.h"
#include "mp/Conversion/Passes.h"
#include "mp/Passes/CuLib/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

void mp::buildCompilePipeline(mlir::OpPassManager &pm,
                              const NHWCLayoutOptions &layout, bool fuse,
                              llvm::StringRef fusionReport) {
  pm.addNestedPass<mlir::func::FuncOp>(mp::createInferShapes());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createDecomposeNodes());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createFoldConstants());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createPruneRows());
  pm.addPass(mp::createConvertMPToCuLib());
  pm.addNestedPass<mlir::func::FuncOp>(mp::createNHWCLayout(layout));
  if (fuse) {
    // With a report, each pass leaves its figures for culib-fusion-report.
    const bool record = !fusionReport.empty();
    FuseAttentionOptions attention;
    attention.record = record;
    FuseEpiloguesOptions epilogues;
    epilogues.record = record;
    FuseNormsOptions norms;
    norms.record = record;
    FuseElementwiseOptions elementwise;
    elementwise.record = record;
    pm.addNestedPass<mlir::func::FuncOp>(mp::createFuseAttention(attention));
    pm.addNestedPass<mlir::func::FuncOp>(mp::createFuseEpilogues(epilogues));
    pm.addNestedPass<mlir::func::FuncOp>(mp::createFuseNorms(norms));
    pm.addNestedPass<mlir::func::FuncOp>(
        mp::createFuseElementwise(elementwise));
    AliasReshapesOptions views;
    views.record = record;
    pm.addNestedPass<mlir::func::FuncOp>(mp::createAliasReshapes(views));
    FoldMatmulTransposesOptions transposes;
    transposes.record = record;
    pm.addNestedPass<mlir::func::FuncOp>(
        mp::createFoldMatmulTransposes(transposes));
    FuseBiasGradientsOptions biasGradients;
    biasGradients.record = record;
    pm.addNestedPass<mlir::func::FuncOp>(
        mp::createFuseBiasGradients(biasGradients));
    HoistWeightCallsOptions hoist;
    hoist.record = record;
    pm.addNestedPass<mlir::func::FuncOp>(mp::createHoistWeightCalls(hoist));
    if (record)
      pm.addPass(
          mp::createFusionReport(FusionReportOptions{fusionReport.str()}));
  }
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
/// mp-autocast-pipeline's own options: the padding. Every other option is
/// mp-autocast's, declared once in Passes.td and parsed by the pass itself.
struct PaddingPipelineOptions
    : mlir::PassPipelineOptions<PaddingPipelineOptions> {
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
};

/// Splits a pass-options string ("a=1 b={x,y} c='p q'") into the options
/// whose name starts with "pad" and the others, each as an options string.
void splitPaddingOptions(llvm::StringRef options, std::string &padding,
                         std::string &others) {
  size_t start = 0;
  int depth = 0;
  char quote = 0;
  auto flush = [&](size_t end) {
    llvm::StringRef token = options.slice(start, end).trim();
    start = end + 1;
    if (token.empty())
      return;
    std::string &into = token.starts_with("pad") ? padding : others;
    if (!into.empty())
      into += ' ';
    into += token.str();
  };
  for (size_t i = 0; i < options.size(); ++i) {
    char c = options[i];
    if (quote) {
      quote = c == quote ? 0 : quote;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      --depth;
    } else if (c == ' ' && depth == 0) {
      flush(i);
    }
  }
  flush(options.size());
}

/// mp-compile's options: culib-nhwc-layout's dtypes, under the name mp-opt's
/// --channels-last flag has, and whether the fusion passes run (--fuse).
struct CompilePipelineOptions
    : mlir::PassPipelineOptions<CompilePipelineOptions> {
  ListOption<std::string> channelsLast{
      *this, "channels-last",
      llvm::cl::desc("Element types whose convolutions run channels last "
                     "(culib-nhwc-layout's dtypes; default f16,bf16,f32; "
                     "none)")};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("Run the culib fusion passes "
                                   "(culib-fuse-attention, "
                                   "culib-fuse-epilogues, culib-fuse-norms, "
                                   "culib-fuse-elementwise, "
                                   "culib-alias-reshapes, "
                                   "culib-hoist-weight-calls); default true"),
                    llvm::cl::init(true)};
  Option<std::string> fusionReport{
      *this, "fusion-report",
      llvm::cl::desc("Write the fusion passes' report (culib-fusion-report) "
                     "to this file: .json or text")};
};
} // namespace

void mp::registerPipelines() {
  mlir::PassPipelineRegistration<CompilePipelineOptions>(
      "mp-compile",
      "Lower an imported model to memory-planned culib calls: "
      "mp-infer-shapes, mp-fold-constants, convert-mp-to-culib, "
      "culib-nhwc-layout, culib-fuse-attention, culib-fuse-epilogues, "
      "culib-fuse-norms, culib-fuse-elementwise, "
      "culib-plan-memory",
      [](mlir::OpPassManager &pm, const CompilePipelineOptions &options) {
        NHWCLayoutOptions layout;
        layout.dtypes.assign(options.channelsLast.begin(),
                             options.channelsLast.end());
        buildCompilePipeline(pm, layout, options.fuse, options.fusionReport);
      });
  mlir::registerPassPipeline(
      "mp-autocast-pipeline",
      "Mixed precision: mp-autocast (policy, four-colour algorithm, casts, "
      "constants, report), mp-pad-tensor-cores, mp-cast-cleanup; takes every "
      "mp-autocast option and the pad options below",
      [](mlir::OpPassManager &pm, llvm::StringRef options,
         llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)>
             errorHandler) -> mlir::LogicalResult {
        std::string paddingOptions, autocastOptions;
        splitPaddingOptions(options, paddingOptions, autocastOptions);
        PaddingPipelineOptions padding;
        if (mlir::failed(padding.parseFromString(paddingOptions)))
          return mlir::failure();
        std::unique_ptr<mlir::Pass> autocast = mp::createAutocast();
        if (mlir::failed(
                autocast->initializeOptions(autocastOptions, errorHandler)))
          return mlir::failure();
        pm.addPass(std::move(autocast));
        if (std::optional<mp::PadTensorCoresOptions> pad =
                padding.toPadOptions())
          pm.addNestedPass<mlir::func::FuncOp>(mp::createPadTensorCores(*pad));
        pm.addNestedPass<mlir::func::FuncOp>(mp::createCastCleanup());
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)>
             printOptions) { printOptions(PaddingPipelineOptions()); });
}
