//===- mp-opt.cpp - the MixPrec optimizer driver ---------------------------===//
//
// mlir-opt for the mp dialects, which also reads ONNX models: binary `.onnx`
// files and ONNX's textual syntax (`.onnxtxt`). MLIR input goes through
// MlirOptMain unchanged; ONNX input is imported, then the same pass pipeline
// options apply and the result is printed (or written as bytecode).
//
//===----------------------------------------------------------------------===//
#include "mp/Autocast/PrecisionPolicy.h"
#include "mp/Config.h"
#include "mp/Export/ONNXExporter.h"
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Passes/Passes.h"
#include "mp/Runtime/DynamicShapes.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace {
enum class InputFormat { Auto, MLIR, ONNX, ONNXText };

llvm::cl::OptionCategory onnxCategory("ONNX input options");

// Defaults for every mp-autocast run whose own options leave them unset
// (mp::setAutocastToolDefaults).
llvm::cl::list<std::string> autocastReportFiles(
    "mp-report",
    llvm::cl::desc("Write the mp-autocast report to these files (.txt, .json, "
                   ".dot, .svg; comma-separated)"),
    llvm::cl::CommaSeparated);
llvm::cl::opt<bool> autocastValidate(
    "mp-validate",
    llvm::cl::desc("mp-autocast: run fp32 and mixed precision on sample inputs "
                   "on the CPU runtime and deny the nodes responsible for "
                   "errors over --mp-validate-tol"),
    llvm::cl::init(false));
llvm::cl::list<std::string> autocastValidateInputs(
    "mp-validate-inputs",
    llvm::cl::desc("Validation inputs (.npy/.pb), in graph input order"),
    llvm::cl::CommaSeparated);
llvm::cl::opt<double> autocastValidateTol(
    "mp-validate-tol",
    llvm::cl::desc("Validation: largest max |error| / max |fp32 output| "
                   "(default 1e-2)"),
    llvm::cl::init(-1.0));
llvm::cl::opt<double> autocastValidateTimeLimit(
    "mp-validate-time-limit",
    llvm::cl::desc("Validation: seconds after which the search stops "
                   "(default 300)"),
    llvm::cl::init(-1.0));

llvm::cl::opt<InputFormat> inputFormat(
    "input-format", llvm::cl::desc("Format of the input file"),
    llvm::cl::values(
        clEnumValN(InputFormat::Auto, "auto",
                   "from the file extension (.onnx, .onnxtxt: ONNX; else MLIR)"),
        clEnumValN(InputFormat::MLIR, "mlir", "MLIR text or bytecode"),
        clEnumValN(InputFormat::ONNX, "onnx", "ONNX protobuf"),
        clEnumValN(InputFormat::ONNXText, "onnx-text", "ONNX textual syntax")),
    llvm::cl::init(InputFormat::Auto), llvm::cl::cat(onnxCategory));

llvm::cl::opt<bool> onnxShapeInference(
    "onnx-shape-inference",
    llvm::cl::desc("Run ONNX shape inference before import (default on)"),
    llvm::cl::init(true), llvm::cl::cat(onnxCategory));

llvm::cl::opt<bool> onnxTypedOps(
    "onnx-typed-ops",
    llvm::cl::desc("Import nodes as typed ops where one exists; off: every "
                   "node becomes mp.onnx_op (default on)"),
    llvm::cl::init(true), llvm::cl::cat(onnxCategory));

llvm::cl::opt<bool> onnxInlineFunctions(
    "onnx-inline-functions",
    llvm::cl::desc("Replace ONNX function ops without a typed op "
                   "(RMSNormalization, Gelu, Attention, ...) and calls of the "
                   "model's local functions by their bodies (default on)"),
    llvm::cl::init(true), llvm::cl::cat(onnxCategory));

llvm::cl::opt<unsigned> onnxInlineLimit(
    "onnx-inline-limit",
    llvm::cl::desc("Tensors up to this many bytes are imported as inline dense "
                   "attributes, larger ones as dense_resource blobs"),
    llvm::cl::init(1024), llvm::cl::cat(onnxCategory));

llvm::cl::opt<std::string> onnxExternalDataDir(
    "onnx-external-data-dir",
    llvm::cl::desc("Directory of external data files (default: the model's)"),
    llvm::cl::init(""), llvm::cl::cat(onnxCategory));

llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Static shape of a graph input, NAME:D0xD1x... (e.g. "
                   "input:1x3x224x224); repeatable"),
    llvm::cl::cat(onnxCategory));

llvm::cl::list<std::string> dimParams(
    "dim-param",
    llvm::cl::desc("Size of a symbolic dim (ONNX dim_param), NAME=SIZE (e.g. "
                   "batch_size=1), or with --emit=plan a range NAME=MIN:MAX "
                   "(e.g. batch=1:8): a dynamic-shape plan that runs every "
                   "size in it; repeatable"),
    llvm::cl::cat(onnxCategory));

llvm::cl::list<std::string> frozenInputs(
    "freeze-input",
    llvm::cl::desc("Make a graph input a constant with the tensor in a .pb "
                   "or .npy file, NAME=FILE; repeatable"),
    llvm::cl::cat(onnxCategory));

llvm::cl::OptionCategory outputCategory("Output options");

enum class EmitKind { Auto, MLIR, Plan, ONNX };
llvm::cl::opt<EmitKind> emitKind(
    "emit", llvm::cl::desc("What to write"),
    llvm::cl::values(
        clEnumValN(EmitKind::Auto, "auto",
                   "from the output file's extension: .onnx writes ONNX, "
                   "anything else MLIR (default)"),
        clEnumValN(EmitKind::MLIR, "mlir", "the module"),
        clEnumValN(EmitKind::ONNX, "onnx",
                   "an ONNX model (Cast nodes and 16-bit initializers where "
                   "the passes put them; weights in <file>.data when the "
                   "model is over 2 GB)"),
        clEnumValN(EmitKind::Plan, "plan",
                   "a plan file for mp-run / the runtime: runs the "
                   "mp-compile pipeline after any given passes")),
    llvm::cl::init(EmitKind::Auto), llvm::cl::cat(outputCategory));

llvm::cl::list<std::string> channelsLast(
    "channels-last",
    llvm::cl::desc("With --emit=plan: the element types whose convolutions "
                   "run channels last (culib-nhwc-layout's dtypes: f16, "
                   "bf16, f32, f64; default f16,bf16,f32), or none"),
    llvm::cl::CommaSeparated, llvm::cl::cat(outputCategory));

llvm::cl::opt<std::string> fusionReportFile(
    "fusion-report",
    llvm::cl::desc("With --emit=plan: write what the fusion passes did (calls "
                   "before and after, per pattern; culib-fusion-report) to "
                   "this file: .json or text"),
    llvm::cl::init(""));
llvm::cl::opt<bool> fuseCalls(
    "fuse",
    llvm::cl::desc("With --emit=plan: fuse calls (culib-fuse-attention: "
                   "softmax(Q K^T s + mask) V into one call; "
                   "culib-fuse-epilogues: biases, activations, residual "
                   "adds and casts into the convolution or matmul before "
                   "them; culib-fuse-norms: decomposed layer norms into one "
                   "call; culib-fuse-elementwise: groups of elementwise "
                   "calls and casts into one; culib-alias-reshapes: "
                   "copies that only reshape into views; "
                   "culib-fold-matmul-transposes: transposes of matmul "
                   "operands into their trans flags; "
                   "culib-fuse-bias-gradients: bias gradients into the "
                   "weight gradient's matmul; "
                   "culib-hoist-weight-calls: "
                   "calls deriving buffers from weights run once, at "
                   "load); default true"),
    llvm::cl::init(true), llvm::cl::cat(outputCategory));

llvm::cl::opt<bool> onnxExternalData(
    "onnx-external-data",
    llvm::cl::desc("With ONNX output: always put large initializers in "
                   "<file>.data (by default only for models over 2 GB)"),
    llvm::cl::init(false), llvm::cl::cat(outputCategory));

llvm::cl::opt<bool> printPolicy(
    "mp-print-policy",
    llvm::cl::desc("Print the built-in precision policy (Markdown) and exit"),
    llvm::cl::init(false), llvm::cl::cat(outputCategory));

/// Parses "NAME<sep>VALUE" options into `out`; false (with a message) on
/// a malformed one.
bool splitOption(llvm::StringRef option, llvm::StringRef flag, char sep,
                 std::string &name, std::string &value) {
  size_t at = option.rfind(sep);
  if (at == llvm::StringRef::npos || at == 0 || at + 1 == option.size()) {
    llvm::errs() << "mp-opt: error: --" << flag << "=" << option
                 << ": expected NAME" << sep << "VALUE\n";
    return false;
  }
  name = option.substr(0, at).str();
  value = option.substr(at + 1).str();
  return true;
}

/// The --dim-param ranges (NAME=MIN:MAX), in the order given.
std::vector<mp::rt::PlanSymbol> dimRanges;

/// The specialization options as importer options; false on a bad one.
bool readSpecializationOptions(mp::ONNXImportOptions &options) {
  for (const std::string &option : inputShapes) {
    std::string name, dims;
    if (!splitOption(option, "input-shape", ':', name, dims))
      return false;
    std::vector<int64_t> shape;
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(dims).split(parts, 'x');
    for (llvm::StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d) || d < 0) {
        llvm::errs() << "mp-opt: error: --input-shape=" << option
                     << ": dims must be non-negative integers joined by 'x'\n";
        return false;
      }
      shape.push_back(d);
    }
    options.inputShapes[name] = shape;
  }
  dimRanges.clear();
  for (const std::string &option : dimParams) {
    std::string name, size;
    if (!splitOption(option, "dim-param", '=', name, size))
      return false;
    if (llvm::StringRef(size).contains(':')) {
      auto [lo, hi] = llvm::StringRef(size).split(':');
      mp::rt::PlanSymbol range;
      range.name = name;
      if (lo.getAsInteger(10, range.min) || hi.getAsInteger(10, range.max) ||
          range.min < 1 || range.max < range.min) {
        llvm::errs() << "mp-opt: error: --dim-param=" << option
                     << ": a range is MIN:MAX with 1 <= MIN <= MAX\n";
        return false;
      }
      dimRanges.push_back(range);
      continue;
    }
    int64_t d;
    if (llvm::StringRef(size).getAsInteger(10, d) || d < 0) {
      llvm::errs() << "mp-opt: error: --dim-param=" << option
                   << ": the size must be a non-negative integer\n";
      return false;
    }
    options.dimParams[name] = d;
  }
  for (const std::string &option : frozenInputs) {
    std::string name, file;
    size_t at = option.find('=');
    if (at == std::string::npos || at == 0 || at + 1 == option.size()) {
      llvm::errs() << "mp-opt: error: --freeze-input=" << option
                   << ": expected NAME=FILE\n";
      return false;
    }
    options.frozenInputs[option.substr(0, at)] = option.substr(at + 1);
  }
  return true;
}

/// The module of the input file (ONNX, or MLIR when --emit=plan needs the
/// module here); null after reporting an error.
OwningOpRef<ModuleOp> importModule(MLIRContext &context,
                                   llvm::StringRef inputFilename,
                                   const mp::ONNXImportOptions &options,
                                   bool isONNX) {
  if (!isONNX) {
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto input = openInputFile(inputFilename, &error);
    if (!input) {
      llvm::errs() << error << "\n";
      return nullptr;
    }
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  if (inputFilename == "-") {
    std::string error;
    auto input = openInputFile("-", &error);
    if (!input) {
      llvm::errs() << error << "\n";
      return nullptr;
    }
    return mp::importONNXBuffer(input->getBuffer(), "<stdin>", &context,
                                options);
  }
  return mp::importONNXFile(inputFilename, &context, options);
}

/// A pass manager for `module` with the command line's pass pipeline (and
/// options, from `config`, which must outlive the run: the passes may point
/// into it); null after reporting a bad pipeline.
std::unique_ptr<PassManager> cliPassManager(MLIRContext &context,
                                            ModuleOp module,
                                            MlirOptMainConfig &config) {
  // Implicit nesting, as mlir-opt does: `--mp-infer-shapes` alone works.
  auto pm =
      std::make_unique<PassManager>(&context, module->getName().getStringRef(),
                                    OpPassManager::Nesting::Implicit);
  pm->enableVerifier(config.shouldVerifyPasses());
  if (failed(applyPassManagerCLOptions(*pm)) ||
      failed(config.setupPassPipeline(*pm)))
    return nullptr;
  return pm;
}

/// --emit=plan with dim ranges: the model compiled at the sample points of
/// the ranges (rt::planSampling), the plans generalized into one
/// dynamic-shape plan (rt::generalizePlans), written to `outputFilename`.
/// The maxima are compiled last, so that reports (--fusion-report,
/// --mp-report) describe the plan at them.
LogicalResult compileDynamicPlan(llvm::StringRef inputFilename,
                                 llvm::StringRef outputFilename,
                                 DialectRegistry &registry,
                                 mp::ONNXImportOptions options) {
  std::string source = inputFilename == "-" ? "<stdin>" : inputFilename.str();
  if (inputFilename == "-") {
    llvm::errs() << "mp-opt: error: a dynamic-shape plan (--dim-param with a "
                    "range) compiles the model several times: give it as a "
                    "file, not on standard input\n";
    return failure();
  }
  mp::rt::Result<mp::rt::PlanSampling> sampling =
      mp::rt::planSampling(dimRanges);
  if (!sampling) {
    llvm::errs() << "mp-opt: error: " << sampling.message() << "\n";
    return failure();
  }
  const size_t largest = sampling->gridSize - 1;
  std::vector<size_t> order;
  for (size_t p = 0; p < sampling->points.size(); ++p)
    if (p != largest)
      order.push_back(p);
  order.push_back(largest);
  std::vector<mp::rt::Plan> plans(sampling->points.size());
  for (size_t p : order) {
    const std::vector<int64_t> &point = sampling->points[p];
    for (size_t s = 0; s < dimRanges.size(); ++s)
      options.dimParams[dimRanges[s].name] = point[s];
    MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
    MLIRContext context(registry);
    context.printOpOnDiagnostic(false);
    mp::ONNXDiagnosticHandler diagnostics(&context, source, llvm::errs());
    std::string at = mp::rt::describeSymbolValues(dimRanges, point);
    auto note = [&]() {
      llvm::errs() << "mp-opt: note: while compiling " << source << " at " << at
                   << " for a dynamic-shape plan\n";
      return failure();
    };
    OwningOpRef<ModuleOp> module =
        importModule(context, inputFilename, options, /*isONNX=*/true);
    if (!module)
      return note();
    std::unique_ptr<PassManager> pm = cliPassManager(context, *module, config);
    if (!pm)
      return failure();
    mp::NHWCLayoutOptions layout;
    layout.dtypes.assign(channelsLast.begin(), channelsLast.end());
    mp::buildCompilePipeline(*pm, layout, fuseCalls,
                             p == largest ? fusionReportFile.getValue() : "");
    if (failed(pm->run(*module)))
      return note();
    std::optional<mp::rt::Plan> plan = mp::translateToPlan(
        *module, llvm::sys::path::filename(inputFilename), outputFilename);
    if (!plan)
      return note();
    // Its weights may point into the module's constants, which go with the
    // context: the plan keeps copies.
    for (mp::rt::PlanWeight &w : plan->weights)
      w = mp::rt::PlanWeight::copyOf(w.name, w.dtype, w.shape, w.data, w.size);
    plans[p] = std::move(*plan);
  }
  mp::rt::Result<mp::rt::Plan> plan =
      mp::rt::generalizePlans(dimRanges, *sampling, plans);
  if (!plan) {
    llvm::errs() << source
                 << ": error: no dynamic-shape plan: " << plan.message()
                 << "\n";
    return failure();
  }
  if (mp::rt::Status s = mp::rt::savePlan(*plan, outputFilename.str()); !s) {
    llvm::errs() << "mp-opt: error: " << s.message() << "\n";
    return failure();
  }
  return success();
}

/// Reads the input (ONNX, or MLIR when --emit=plan needs the module here),
/// runs the configured pipeline, writes the result.
LogicalResult runOnONNX(llvm::StringRef inputFilename,
                        llvm::StringRef outputFilename,
                        DialectRegistry &registry, bool isONNX) {
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  MLIRContext context(registry);
  context.allowUnregisteredDialects(config.shouldAllowUnregisteredDialects());
  context.printOpOnDiagnostic(!config.shouldVerifyDiagnostics());
  mp::ONNXDiagnosticHandler diagnostics(
      &context, inputFilename == "-" ? "<stdin>" : inputFilename,
      llvm::errs());

  mp::ONNXImportOptions options;
  if (inputFormat == InputFormat::ONNX)
    options.format = mp::ONNXFormat::Binary;
  else if (inputFormat == InputFormat::ONNXText)
    options.format = mp::ONNXFormat::Text;
  options.shapeInference = onnxShapeInference;
  options.typedOps = onnxTypedOps;
  options.inlineFunctions = onnxInlineFunctions;
  options.inlineTensorLimit = onnxInlineLimit;
  options.externalDataDirectory = onnxExternalDataDir;
  if (!readSpecializationOptions(options))
    return failure();
  if (!channelsLast.empty() && emitKind != EmitKind::Plan) {
    llvm::errs() << "mp-opt: error: --channels-last applies to --emit=plan "
                    "(for other output, run --culib-nhwc-layout=dtypes=...)\n";
    return failure();
  }
  if (fuseCalls.getNumOccurrences() && emitKind != EmitKind::Plan) {
    llvm::errs() << "mp-opt: error: --fuse applies to --emit=plan (for other "
                    "output, run --mp-compile=fuse=...)\n";
    return failure();
  }
  if (!fusionReportFile.empty() && (emitKind != EmitKind::Plan || !fuseCalls)) {
    llvm::errs() << "mp-opt: error: --fusion-report applies to --emit=plan "
                    "with fusion on (for other output, run "
                    "--mp-compile=fusion-report=...)\n";
    return failure();
  }
  if (!dimRanges.empty()) {
    if (emitKind != EmitKind::Plan || !isONNX) {
      llvm::errs() << "mp-opt: error: --dim-param=" << dimRanges.front().name
                   << "=" << dimRanges.front().min << ":"
                   << dimRanges.front().max
                   << " is a range: ranges make a dynamic-shape plan from "
                      "ONNX input (--emit=plan); give a size otherwise\n";
      return failure();
    }
    if (outputFilename == "-") {
      llvm::errs() << "mp-opt: error: --emit=plan writes a binary file: give "
                      "one with -o (e.g. -o model.mpplan)\n";
      return failure();
    }
    return compileDynamicPlan(inputFilename, outputFilename, registry, options);
  }

  OwningOpRef<ModuleOp> module =
      importModule(context, inputFilename, options, isONNX);
  if (!module)
    return failure();

  std::unique_ptr<PassManager> passManager =
      cliPassManager(context, *module, config);
  if (!passManager)
    return failure();
  PassManager &pm = *passManager;
  std::string planPath;
  if (emitKind == EmitKind::Plan) {
    if (outputFilename == "-") {
      llvm::errs() << "mp-opt: error: --emit=plan writes a binary file: give "
                      "one with -o (e.g. -o model.mpplan)\n";
      return failure();
    }
    mp::NHWCLayoutOptions layout;
    layout.dtypes.assign(channelsLast.begin(), channelsLast.end());
    mp::buildCompilePipeline(pm, layout, fuseCalls, fusionReportFile);
    mp::ExportPlanOptions exportOptions;
    exportOptions.outputPath = outputFilename.str();
    exportOptions.modelName =
        llvm::sys::path::filename(inputFilename).str();
    pm.addPass(mp::createExportPlan(exportOptions));
  }
  if (failed(pm.run(*module)))
    return failure();
  // The plan is written (atomically) by culib-export-plan.
  if (emitKind == EmitKind::Plan)
    return success();
  if (emitKind == EmitKind::ONNX) {
    if (outputFilename == "-") {
      llvm::errs() << "mp-opt: error: ONNX output is a binary file: give one "
                      "with -o (e.g. -o model.mp.onnx)\n";
      return failure();
    }
    mp::ONNXExportOptions exportOptions;
    exportOptions.forceExternalData = onnxExternalData;
    return mp::exportONNXFile(*module, outputFilename, exportOptions);
  }

  // The output file only appears once everything succeeded.
  Location fileLoc = UnknownLoc::get(&context);
  auto write = [&](llvm::raw_ostream &os) -> LogicalResult {
    if (config.shouldEmitBytecode()) {
      BytecodeWriterConfig writerConfig("MixPrec");
      return writeBytecodeToFile(*module, os, writerConfig);
    }
    module->print(os, OpPrintingFlags());
    os << "\n";
    return success();
  };
  auto writeError = [&](std::error_code ec) {
    return emitError(fileLoc) << "cannot write '" << outputFilename
                              << "': " << ec.message();
  };

  // A new or regular output file is written as a temporary file renamed
  // into place: no partial output even if mp-opt dies while writing, and
  // the files the module still maps (external data) stay intact when the
  // output replaces one of them.
  llvm::sys::fs::file_status status;
  bool exists = !llvm::sys::fs::status(outputFilename, status);
  if (outputFilename != "-" &&
      (!exists || status.type() == llvm::sys::fs::file_type::regular_file)) {
    auto temp =
        llvm::sys::fs::TempFile::create(outputFilename + ".tmp-%%%%%%");
    if (temp) {
      std::error_code ec;
      LogicalResult written = failure();
      {
        llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
        written = write(os);
        os.flush();
        if (os.has_error()) {
          ec = os.error();
          os.clear_error();
        }
      }
      if (failed(written) || ec) {
        llvm::consumeError(temp->discard());
        return ec ? writeError(ec) : failure();
      }
      if (llvm::Error error = temp->keep(outputFilename))
        return writeError(llvm::errorToErrorCode(std::move(error)));
      return success();
    }
    // E.g. a missing directory: reported below.
    llvm::consumeError(temp.takeError());
  }

  // Standard output, devices, pipes: written in place.
  std::string error;
  auto output = openOutputFile(outputFilename, &error);
  if (!output)
    return emitError(fileLoc) << error;
  if (failed(write(output->os())))
    return failure();
  // A failed write (a full disk) is an error, and a partial regular file
  // goes; never a device such as /dev/full, though.
  output->os().flush();
  if (output->os().has_error()) {
    std::error_code ec = output->os().error();
    output->os().clear_error();
    if (outputFilename != "-" &&
        !llvm::sys::fs::is_regular_file(outputFilename))
      output->keep();
    return writeError(ec);
  }
  output->keep();
  return success();
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  mp::registerAllPasses();
  mp::setAutocastToolDefaults([] {
    mp::AutocastToolDefaults d;
    d.reportFiles.assign(autocastReportFiles.begin(),
                         autocastReportFiles.end());
    d.validate = autocastValidate;
    d.validateInputs.assign(autocastValidateInputs.begin(),
                            autocastValidateInputs.end());
    d.validateTol = autocastValidateTol;
    d.validateTimeLimit = autocastValidateTimeLimit;
    return d;
  });

  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "MixPrec " << MP_VERSION << " (CUDA toolkit: "
       << (MP_HAVE_CUDA ? MP_CUDA_VERSION : "not found") << ")\n";
  });
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv,
      "MixPrec optimizer driver: mixed-precision passes on ONNX and MLIR "
      "(reads .onnx, .onnxtxt and .mlir)\n",
      registry);

  if (printPolicy) {
    mp::autocast::PrecisionPolicy::defaults().writeMarkdown(llvm::outs());
    return 0;
  }
  if (emitKind == EmitKind::Auto)
    emitKind = llvm::StringRef(outputFilename).ends_with(".onnx")
                   ? EmitKind::ONNX
                   : EmitKind::MLIR;
  bool isONNX = inputFormat == InputFormat::ONNX ||
                inputFormat == InputFormat::ONNXText ||
                (inputFormat == InputFormat::Auto &&
                 mp::isONNXFile(inputFilename));
  if (!isONNX && emitKind == EmitKind::MLIR)
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
  return asMainReturnCode(
      runOnONNX(inputFilename, outputFilename, registry, isONNX));
}
