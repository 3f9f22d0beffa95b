// Every gradient rule of mp-training checked against central finite
// differences, end to end: each case is a small function with one op (or a
// decomposed op such as LayerNorm or GELU); the test compiles it with
// `mp-training{loss=mse optimizer=none wrt-inputs=1}` (or cross-entropy),
// the compile pipeline and culib-export-plan, runs the plan on the CPU
// runtime, and compares the `grad:<input>` outputs with
// (L(x + h e_i) - L(x - h e_i)) / 2h measured with the same plan.
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"
#include "mp/Passes/Passes.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>

using namespace mlir;
namespace rt = mp::rt;

namespace {

struct Case {
  std::string name;
  /// func.func @main(...) with named inputs, or an ONNX text model (starts
  /// with '<'; its function ops are inlined: the ops of their bodies).
  std::string mlir;
  std::string loss = "mse";      ///< or cross-entropy
  /// Inputs whose values must stay away from a kink (relu, clip, max).
  double minAbs = 0.0;
  /// Compile with f32 convolutions channels last (mp-compile's default):
  /// the forward and backward calls then run NHWC; otherwise channels first
  /// throughout (culib-nhwc-layout's dtypes=none).
  bool channelsLast = false;
};

/// Compiles `source` into a plan file and loads it into an executor.
rt::CpuExecutor compile(const std::string &source, const std::string &loss,
                        bool channelsLast) {
  DialectRegistry registry;
  mp::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  std::string diagnostics;
  OwningOpRef<ModuleOp> module;
  if (!source.empty() && source[0] == '<') {
    mp::ONNXImportOptions options;
    options.format = mp::ONNXFormat::Text;
    module = mp::importONNXBuffer(source, "<case>", &context, options);
  } else {
    module = parseSourceString<ModuleOp>(source, &context);
  }
  REQUIRE(module);
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("mp-gradcheck", "mpplan", path));
  PassManager pm(&context);
  mp::TrainingOptions training;
  training.loss = loss;
  training.optimizer = "none";
  training.wrtInputs = true;
  pm.addPass(mp::createTraining(training));
  mp::NHWCLayoutOptions layout;
  if (!channelsLast)
    layout.dtypes = {"none"};
  mp::buildCompilePipeline(pm, layout);
  mp::ExportPlanOptions exportOptions;
  exportOptions.outputPath = path.str().str();
  pm.addPass(mp::createExportPlan(exportOptions));
  REQUIRE(succeeded(pm.run(*module)));
  rt::Result<rt::Plan> plan = rt::loadPlan(path.str().str());
  REQUIRE(plan);
  llvm::sys::fs::remove(path);
  rt::Result<rt::CpuExecutor> exec = rt::CpuExecutor::create(plan.take());
  REQUIRE(exec);
  return exec.take();
}

float lossOf(const std::vector<rt::NamedTensor> &outputs) {
  for (const rt::NamedTensor &t : outputs)
    if (t.name == "loss")
      return t.tensor.as<float>()[0];
  FAIL("no loss output");
  return 0;
}

void check(const Case &c) {
  INFO("case " << c.name);
  rt::CpuExecutor exec = compile(c.mlir, c.loss, c.channelsLast);
  const rt::Plan &plan = exec.plan();
  if (c.channelsLast) {
    // Every backward convolution, pooling and batch norm must run channels
    // last, or this checks nothing new.
    size_t backward = 0, backwardNHWC = 0;
    for (const rt::PlanCall &call : plan.calls) {
      if (call.kind.find("bwd") == std::string::npos)
        continue;
      ++backward;
      const std::string *layout = call.attrAs<std::string>("layout");
      if (layout && *layout == "nhwc")
        ++backwardNHWC;
      else
        UNSCOPED_INFO("not channels last: " << call.kind);
    }
    REQUIRE(backward > 0);
    REQUIRE(backwardNHWC == backward);
  }
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<rt::HostTensor> inputs;
  std::vector<rt::NamedView> views;
  for (const rt::PlanBinding &in : plan.inputs) {
    rt::HostTensor t(in.dtype, in.shape);
    if (in.dtype == rt::DType::F32) {
      for (int64_t i = 0; i < t.numElements(); ++i) {
        float v = normal(rng);
        if (std::fabs(v) < c.minAbs)
          v = v < 0 ? v - float(c.minAbs) : v + float(c.minAbs);
        t.as<float>()[i] = v;
      }
    } else if (in.dtype == rt::DType::I64) {
      // Class labels for cross-entropy.
      int64_t classes = plan.output(plan.training->predictionOutput)->shape[1];
      for (int64_t i = 0; i < t.numElements(); ++i)
        t.as<int64_t>()[i] = rng() % classes;
    } else {
      FAIL("unexpected input dtype");
    }
    inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    views.push_back({plan.inputs[i].name, inputs[i].view()});
  rt::Result<std::vector<rt::NamedTensor>> base = exec.run(views);
  REQUIRE(base);

  size_t checked = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string &name = plan.inputs[i].name;
    if (inputs[i].dtype() != rt::DType::F32 || name == "label")
      continue;
    const rt::HostTensor *grad = nullptr;
    for (const rt::NamedTensor &t : *base)
      if (t.name == "grad:" + name)
        grad = &t.tensor;
    INFO("input " << name);
    REQUIRE(grad);
    REQUIRE(grad->numElements() == inputs[i].numElements());
    float scale = 0;
    for (int64_t e = 0; e < grad->numElements(); ++e)
      scale = std::max(scale, std::fabs(grad->as<float>()[e]));
    REQUIRE(scale > 0); // a gradient that is all zeros checks nothing
    // Up to 24 elements spread over the tensor.
    int64_t n = inputs[i].numElements();
    int64_t stride = std::max<int64_t>(1, n / 24);
    for (int64_t e = 0; e < n; e += stride) {
      float &x = inputs[i].as<float>()[e];
      float saved = x;
      float h = 1e-2f * std::max(1.0f, std::fabs(saved));
      x = saved + h;
      float plus = lossOf(*exec.run(views));
      x = saved - h;
      float minus = lossOf(*exec.run(views));
      x = saved;
      float numeric = (plus - minus) / (2 * h);
      float analytic = grad->as<float>()[e];
      INFO("element " << e << ": analytic " << analytic << ", numeric "
                      << numeric);
      CHECK(std::fabs(numeric - analytic) <= 2e-2f * scale + 1e-4f);
      ++checked;
    }
  }
  CHECK(checked > 0);
}

const char *kConv = R"(
func.func @main(%x: tensor<2x3x6x6xf32> {mp.name = "x"}, %w: tensor<4x3x3x3xf32> {mp.name = "w"}, %b: tensor<4xf32> {mp.name = "b"}) -> (tensor<2x4x3x3xf32> {mp.name = "y"}) {
  %y = mp.conv %x, %w, %b {pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 2, 2>, kernel_shape = array<i64: 3, 3>} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  return %y : tensor<2x4x3x3xf32>
})";

const char *kGroupConv = R"(
func.func @main(%x: tensor<1x4x5x5xf32> {mp.name = "x"}, %w: tensor<4x2x2x2xf32> {mp.name = "w"}) -> (tensor<1x4x3x3xf32> {mp.name = "y"}) {
  %none = mp.none
  %y = mp.conv %x, %w, %none {group = 2 : i64, dilations = array<i64: 2, 2>, kernel_shape = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<4x2x2x2xf32>, none) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
})";

// `s` is first: the data input of a training step has the batch dim first.
const char *kGemm = R"(
func.func @main(%s: tensor<3x5xf32> {mp.name = "s"}, %a: tensor<4x3xf32> {mp.name = "a"}, %b: tensor<5x4xf32> {mp.name = "b"}, %c: tensor<5xf32> {mp.name = "c"}) -> (tensor<3x5xf32> {mp.name = "y"}) {
  %g = mp.gemm %a, %b, %c {transA = 1 : i64, transB = 1 : i64, alpha = 0.5 : f32, beta = 2.0 : f32} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  %y = mp.mul %g, %s : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
})";

const char *kMatMul = R"(
func.func @main(%a: tensor<2x3x4xf32> {mp.name = "a"}, %b: tensor<4x5xf32> {mp.name = "b"}, %c: tensor<2x5x2xf32> {mp.name = "c"}) -> (tensor<2x3x2xf32> {mp.name = "y"}) {
  %ab = mp.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %y = mp.matmul %ab, %c : (tensor<2x3x5xf32>, tensor<2x5x2xf32>) -> tensor<2x3x2xf32>
  return %y : tensor<2x3x2xf32>
})";

const char *kArithmetic = R"(
func.func @main(%a: tensor<2x3xf32> {mp.name = "a"}, %b: tensor<3xf32> {mp.name = "b"}, %c: tensor<2x1xf32> {mp.name = "c"}) -> (tensor<2x3xf32> {mp.name = "y"}) {
  %s = mp.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %d = mp.sub %s, %c : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %m = mp.mul %d, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %two = mp.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %c2 = mp.mul %c, %c : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %den = mp.add %c2, %two : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %y = mp.div %m, %den : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
})";

const char *kReluClip = R"(
func.func @main(%x: tensor<3x4xf32> {mp.name = "x"}) -> (tensor<3x4xf32> {mp.name = "y"}) {
  %r = mp.relu %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %lo = mp.constant {value = dense<-0.5> : tensor<f32>} : () -> tensor<f32>
  %hi = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %c = mp.clip %x, %lo, %hi : (tensor<3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<3x4xf32>
  %y = mp.add %r, %c : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
})";

const char *kBatchNorm = R"(
func.func @main(%x: tensor<4x3x2x2xf32> {mp.name = "x"}, %s: tensor<3xf32> {mp.name = "scale"}, %b: tensor<3xf32> {mp.name = "bias"}) -> (tensor<4x3x2x2xf32> {mp.name = "y"}) {
  %m = mp.initializer "bn.running_mean" dense<[0.0, 0.1, -0.1]> : tensor<3xf32>
  %v = mp.initializer "bn.running_var" dense<[1.0, 0.5, 2.0]> : tensor<3xf32>
  %y, %rm, %rv = mp.batch_normalization %x, %s, %b, %m, %v {epsilon = 1.0e-5 : f32} : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<4x3x2x2xf32>
})";

const char *kPools = R"(
func.func @main(%x: tensor<1x2x5x5xf32> {mp.name = "x"}) -> (tensor<1x2x3x3xf32> {mp.name = "y"}) {
  %mx, %idx = mp.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi64>)
  %av = mp.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  %ai = mp.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  %g = mp.global_average_pool %x : (tensor<1x2x5x5xf32>) -> tensor<1x2x1x1xf32>
  %s1 = mp.add %mx, %av : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %s2 = mp.mul %s1, %ai : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = mp.add %s2, %g : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  return %y : tensor<1x2x3x3xf32>
})";

// A 1x1 convolution first: culib-nhwc-layout starts at convolutions, and
// the batch norm and the pools after it then run channels last too.
const char *kConvBatchNormPools = R"(
func.func @main(%x: tensor<2x3x5x5xf32> {mp.name = "x"}, %w: tensor<2x3x1x1xf32> {mp.name = "w"}, %s: tensor<2xf32> {mp.name = "scale"}, %b: tensor<2xf32> {mp.name = "bias"}) -> (tensor<2x2x3x3xf32> {mp.name = "y"}) {
  %none = mp.none
  %c = mp.conv %x, %w, %none {kernel_shape = array<i64: 1, 1>} : (tensor<2x3x5x5xf32>, tensor<2x3x1x1xf32>, none) -> tensor<2x2x5x5xf32>
  %m = mp.initializer "bn.running_mean" dense<[0.0, 0.1]> : tensor<2xf32>
  %v = mp.initializer "bn.running_var" dense<[1.0, 0.5]> : tensor<2xf32>
  %n, %rm, %rv = mp.batch_normalization %c, %s, %b, %m, %v {epsilon = 1.0e-5 : f32} : (tensor<2x2x5x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2x5x5xf32>, tensor<2xf32>, tensor<2xf32>)
  %mx, %idx = mp.max_pool %n {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x2x5x5xf32>) -> (tensor<2x2x3x3xf32>, tensor<2x2x3x3xi64>)
  %av = mp.average_pool %n {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x2x5x5xf32>) -> tensor<2x2x3x3xf32>
  %ai = mp.average_pool %n {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<2x2x5x5xf32>) -> tensor<2x2x3x3xf32>
  %g = mp.global_average_pool %n : (tensor<2x2x5x5xf32>) -> tensor<2x2x1x1xf32>
  %s1 = mp.add %mx, %av : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %s2 = mp.mul %s1, %ai : (tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %y = mp.add %s2, %g : (tensor<2x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x3x3xf32>
  return %y : tensor<2x2x3x3xf32>
})";

const char *kShapes = R"(
func.func @main(%x: tensor<2x3x4xf32> {mp.name = "x"}, %w: tensor<2x4x3xf32> {mp.name = "w"}) -> (tensor<2x12xf32> {mp.name = "y"}) {
  %t = mp.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %p = mp.mul %t, %w : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %shape = mp.constant {value = dense<[2, 3, 4]> : tensor<3xi64>} : () -> tensor<3xi64>
  %r = mp.reshape %p, %shape : (tensor<2x4x3xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %y = mp.flatten %r {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  return %y : tensor<2x12xf32>
})";

const char *kSoftmax = R"(
func.func @main(%x: tensor<3x5xf32> {mp.name = "x"}) -> (tensor<3x5xf32> {mp.name = "y"}) {
  %s = mp.softmax %x {axis = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %l = mp.log_softmax %x {axis = 0 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = mp.add %s, %l : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
})";

// Logits from a scaled input: the loss is SoftmaxCrossEntropyLoss.
const char *kCrossEntropy = R"(
func.func @main(%x: tensor<4x6xf32> {mp.name = "x"}, %w: tensor<6xf32> {mp.name = "w"}) -> (tensor<4x6xf32> {mp.name = "logits"}) {
  %y = mp.mul %x, %w : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
})";

// Softmax output: cross-entropy is computed from its input.
const char *kCrossEntropyOnProbabilities = R"(
func.func @main(%x: tensor<4x6xf32> {mp.name = "x"}) -> (tensor<4x6xf32> {mp.name = "probs"}) {
  %y = mp.softmax %x {axis = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
})";

// Probabilities that do not come from a Softmax: cross-entropy-probs is
// NegativeLogLikelihoodLoss(Log(p)).
const char *kProbabilities = R"(
func.func @main(%x: tensor<4x6xf32> {mp.name = "x"}) -> (tensor<4x6xf32> {mp.name = "p"}) {
  %y = mp.sigmoid %x : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
})";

// LayerNorm as PyTorch exports it before opset 17.
const char *kLayerNorm = R"(
func.func @main(%x: tensor<2x3x8xf32> {mp.name = "x"}, %g: tensor<8xf32> {mp.name = "gamma"}, %b: tensor<8xf32> {mp.name = "beta"}) -> (tensor<2x3x8xf32> {mp.name = "y"}) {
  %mean = mp.reduce_mean %x {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %d = mp.sub %x, %mean : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %two = mp.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %sq = mp.pow %d, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %var = mp.reduce_mean %sq {axes = array<i64: -1>, keepdims = 1 : i64} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = mp.constant {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = mp.add %var, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %std = mp.sqrt %ve : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %n = mp.div %d, %std : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %s = mp.mul %n, %g : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %y = mp.add %s, %b : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
})";

// GELU as exported with Erf.
const char *kGelu = R"(
func.func @main(%x: tensor<3x4xf32> {mp.name = "x"}) -> (tensor<3x4xf32> {mp.name = "y"}) {
  %r2 = mp.constant {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %xs = mp.div %x, %r2 : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %e = mp.erf %xs : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %one = mp.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %e1 = mp.add %e, %one : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %half = mp.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %xh = mp.mul %x, %half : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %y = mp.mul %xh, %e1 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
})";

// An embedding lookup with a repeated row (its gradients add up), scaled
// by the data input `x`.
const char *kGather = R"(
func.func @main(%x: tensor<2x3x4xf32> {mp.name = "x"}, %table: tensor<6x4xf32> {mp.name = "table"}) -> (tensor<2x3x4xf32> {mp.name = "y"}) {
  %ids = mp.constant {value = dense<[[0, 5, 2], [2, 3, 0]]> : tensor<2x3xi64>} : () -> tensor<2x3xi64>
  %g = mp.gather %table, %ids {axis = 0 : i64} : (tensor<6x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %y = mp.mul %g, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
})";

const char *kElementwise = R"(
func.func @main(%x: tensor<3x4xf32> {mp.name = "x"}) -> (tensor<3x4xf32> {mp.name = "y"}) {
  %s = mp.sigmoid %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %t = mp.tanh %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %e = mp.exp %t : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %st = mp.mul %s, %e : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %n = mp.neg %st : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %two = mp.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %p = mp.add %s, %two : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  %l = mp.log %p : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %r = mp.reciprocal %p : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %lr = mp.add %l, %r : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %y = mp.add %lr, %n : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
})";

const char *kLSTM = R"(
func.func @main(%x: tensor<3x2x4xf32> {mp.name = "x"}, %w: tensor<2x20x4xf32> {mp.name = "w"}, %r: tensor<2x20x5xf32> {mp.name = "r"}, %b: tensor<2x40xf32> {mp.name = "b"}, %h0: tensor<2x2x5xf32> {mp.name = "h0"}, %c0: tensor<2x2x5xf32> {mp.name = "c0"}) -> (tensor<3x2x2x5xf32> {mp.name = "y"}) {
  %none = mp.none
  %y, %yh, %yc = mp.lstm %x, %w, %r, %b, %none, %h0, %c0, %none {direction = "bidirectional", hidden_size = 5 : i64} : (tensor<3x2x4xf32>, tensor<2x20x4xf32>, tensor<2x20x5xf32>, tensor<2x40xf32>, none, tensor<2x2x5xf32>, tensor<2x2x5xf32>, none) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>)
  return %y : tensor<3x2x2x5xf32>
})";

// Attention-style slicing of a fused projection, and a fire-module Concat.
const char *kSliceConcatSplit = R"(
func.func @main(%x: tensor<2x3x12xf32> {mp.name = "x"}) -> (tensor<2x3x10xf32> {mp.name = "y"}) {
  %s = mp.constant {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %e = mp.constant {value = dense<[8]> : tensor<1xi64>} : () -> tensor<1xi64>
  %a = mp.constant {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = mp.none
  %q = mp.slice %x, %s, %e, %a, %none : (tensor<2x3x12xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<2x3x6xf32>
  %sizes = mp.constant {value = dense<[4, 8]> : tensor<2xi64>} : () -> tensor<2xi64>
  %p0, %p1 = mp.split %x, %sizes {axis = 2 : i64} : (tensor<2x3x12xf32>, tensor<2xi64>) -> (tensor<2x3x4xf32>, tensor<2x3x8xf32>)
  %m = mp.mul %p0, %p0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y = mp.concat %q, %m {axis = 2 : i64} : (tensor<2x3x6xf32>, tensor<2x3x4xf32>) -> tensor<2x3x10xf32>
  return %y : tensor<2x3x10xf32>
})";

// LayerNormalization as one op (opset 17 exports), over the last two axes.
const char *kFusedLayerNorm = R"(
func.func @main(%x: tensor<2x3x4xf32> {mp.name = "x"}, %g: tensor<3x4xf32> {mp.name = "gamma"}, %b: tensor<4xf32> {mp.name = "beta"}) -> (tensor<2x3x4xf32> {mp.name = "y"}) {
  %y, %m, %s = mp.layer_normalization %x, %g, %b {axis = -2 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y : tensor<2x3x4xf32>
})";

// The function ops of opsets 20-23: Gelu, RMSNormalization,
// GroupNormalization and Attention import as typed ops with gradient rules
// of their own.
const char *kGelu20 = R"(<ir_version: 10, opset_import: ["" : 20]>
g (float[3, 4] x) => (float[3, 4] y, float[3, 4] t) {
  y = Gelu (x)
  t = Gelu <approximate = "tanh"> (x)
})";
const char *kRMSNorm23 = R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 8] x, float[8] scale) => (float[2, 3, 8] y) {
  y = RMSNormalization <epsilon = 1e-5> (x, scale)
})";
const char *kRMSNorm23Axis1 = R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 8] x, float[1, 8] scale) => (float[2, 3, 8] y) {
  y = RMSNormalization <axis = 1, epsilon = 1e-3> (x, scale)
})";
const char *kGroupNorm21 = R"(<ir_version: 10, opset_import: ["" : 21]>
g (float[2, 4, 3, 3] x, float[4] scale, float[4] bias) => (float[2, 4, 3, 3] y) {
  y = GroupNormalization <num_groups = 2, epsilon = 1e-5> (x, scale, bias)
})";
const char *kAttention23 = R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[1, 2, 4, 8] q, float[1, 2, 5, 8] k, float[1, 2, 5, 8] v) => (float[1, 2, 4, 8] y) {
  y = Attention (q, k, v)
})";
// 3-D inputs with grouped-query heads (4 Q heads on 2 K / V heads), a
// float mask broadcast over batch and heads, causal and a scale.
const char *kAttention23Gqa = R"(<ir_version: 10, opset_import: ["" : 23]>
g (float[2, 3, 16] q, float[2, 5, 8] k, float[2, 5, 6] v, float[3, 5] mask) => (float[2, 3, 12] y) {
  y = Attention <q_num_heads = 4, kv_num_heads = 2, is_causal = 1, scale = 0.3> (q, k, v, mask)
})";

} // namespace

TEST_CASE("gradients: Gelu-20, RMSNormalization-23, GroupNormalization-21, "
          "Attention-23",
          "[gradcheck]") {
  check({"gelu-20", kGelu20});
  check({"rms-norm-23", kRMSNorm23});
  check({"rms-norm-23-axis-1", kRMSNorm23Axis1});
  check({"group-norm-21", kGroupNorm21});
  check({"attention-23", kAttention23});
  check({"attention-23-gqa-3d", kAttention23Gqa});
}

TEST_CASE("gradients: LayerNormalization (fused)", "[gradcheck]") {
  check({"fused-layer-norm", kFusedLayerNorm});
}
TEST_CASE("gradients: Slice, Split (one output unused), Concat",
          "[gradcheck]") {
  check({"slice-concat-split", kSliceConcatSplit});
}
TEST_CASE("gradients: Conv (strides, asymmetric pads, bias)", "[gradcheck]") {
  check({"conv", kConv});
}
TEST_CASE("gradients: grouped, dilated Conv", "[gradcheck]") {
  check({"group-conv", kGroupConv});
}
TEST_CASE("gradients: Gemm (transposes, alpha, beta, broadcast C)",
          "[gradcheck]") {
  check({"gemm", kGemm});
}
TEST_CASE("gradients: batched and broadcast MatMul", "[gradcheck]") {
  check({"matmul", kMatMul});
}
TEST_CASE("gradients: Add, Sub, Mul, Div with broadcasting", "[gradcheck]") {
  check({"arithmetic", kArithmetic});
}
TEST_CASE("gradients: Relu and Clip", "[gradcheck]") {
  check({"relu-clip", kReluClip, "mse", 0.1});
}
TEST_CASE("gradients: BatchNormalization in training mode", "[gradcheck]") {
  check({"batch-norm", kBatchNorm});
}
TEST_CASE("gradients: MaxPool, AveragePool, GlobalAveragePool",
          "[gradcheck]") {
  check({"pools", kPools});
}
TEST_CASE("gradients: channels last (culib-nhwc-layout): Conv, grouped "
          "dilated Conv, BatchNormalization, pools",
          "[gradcheck][nhwc]") {
  SECTION("conv") { check({"conv-nhwc", kConv, "mse", 0, true}); }
  SECTION("group-conv") {
    check({"group-conv-nhwc", kGroupConv, "mse", 0, true});
  }
  SECTION("conv-batch-norm-pools") {
    check({"conv-batch-norm-pools-nhwc", kConvBatchNormPools, "mse", 0, true});
  }
}
TEST_CASE("gradients: Transpose, Reshape, Flatten", "[gradcheck]") {
  check({"shapes", kShapes});
}
TEST_CASE("gradients: Softmax and LogSoftmax", "[gradcheck]") {
  check({"softmax", kSoftmax});
}
TEST_CASE("gradients: SoftmaxCrossEntropyLoss on logits", "[gradcheck]") {
  check({"cross-entropy", kCrossEntropy, "cross-entropy"});
}
TEST_CASE("gradients: cross-entropy of a Softmax output", "[gradcheck]") {
  check({"cross-entropy-softmax", kCrossEntropyOnProbabilities,
         "cross-entropy"});
}
TEST_CASE("gradients: cross-entropy on probabilities (Log + NLL)",
          "[gradcheck]") {
  check({"cross-entropy-probs", kProbabilities, "cross-entropy-probs"});
}
TEST_CASE("gradients: decomposed LayerNorm (ReduceMean, Pow, Sqrt, ...)",
          "[gradcheck]") {
  check({"layer-norm", kLayerNorm});
}
TEST_CASE("gradients: Erf / GELU", "[gradcheck]") { check({"gelu", kGelu}); }
TEST_CASE("gradients: Gather (embedding)", "[gradcheck]") {
  check({"gather", kGather});
}
TEST_CASE("gradients: Sigmoid, Tanh, Exp, Log, Reciprocal, Neg",
          "[gradcheck]") {
  check({"elementwise", kElementwise});
}
TEST_CASE("gradients: bidirectional LSTM", "[gradcheck]") {
  check({"lstm", kLSTM});
}
