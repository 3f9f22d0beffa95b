//===- Validation.cpp - mp-autocast's check on the CPU runtime ------------===//
//
// Runs mixed-precision variants of a module against its fp32 form on the
// CPU runtime and finds, by bisection over the low-precision nodes in
// program order, the nodes whose low precision breaks the outputs
// (declared in mp/Autocast/Validation.h).
//
//===----------------------------------------------------------------------===//
#include "mp/Autocast/Validation.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <random>

using namespace mlir;
using namespace mp;
using namespace mp::autocast;

PrecisionPolicy
mp::autocast::policyDenying(const PrecisionPolicy &policy,
                            const std::vector<std::string> &denied) {
  PrecisionPolicy result = policy;
  for (const std::string &name : denied)
    llvm::consumeError(result.addNodeOverride(
        name, PrecisionClass::Deny,
        "mp-validate (low precision broke the outputs)"));
  return result;
}

namespace {

/// Runs mixed-precision variants of a module against its fp32 form on the
/// CPU runtime, and finds nodes whose low precision breaks the outputs.
class Validator {
public:
  Validator(ModuleOp original, PrecisionPolicy policy,
            const ValidationOptions &options, CompileToPlan compile)
      : original(original), policy(std::move(policy)), tol(options.tol),
        timeLimit(options.timeLimit), inputFiles(options.inputFiles),
        seed(options.seed), compile(std::move(compile)),
        start(std::chrono::steady_clock::now()) {}

  /// Nodes to deny (empty when the mixed-precision model passes as it is);
  /// failure when validation itself cannot run. `notes` explains.
  FailureOr<std::vector<std::string>> run(const LowNodes &lowNodes,
                                          std::vector<std::string> &notes) {
    FailureOr<std::vector<rt::NamedTensor>> reference = runVariant(nullptr);
    if (failed(reference))
      return failure();
    referenceOutputs = std::move(*reference);
    std::vector<std::string> denied;
    FailureOr<double> error = probe(denied, "the mixed-precision model");
    if (failed(error))
      return failure();
    notes.push_back(llvm::formatv("mixed precision as coloured: error {0:e2} "
                                  "(limit {1:e2})",
                                  *error, tol));
    while (*error > tol) {
      if (elapsed() > timeLimit) {
        notes.push_back(llvm::formatv(
            "stopped after {0:F1} s (validate-time-limit): the error is still "
            "{1:e2}",
            elapsed(), *error));
        break;
      }
      std::vector<std::string> candidates = lowNodes(denied);
      if (candidates.empty()) {
        notes.push_back("no named low-precision node is left to deny");
        break;
      }
      // The shortest prefix of the low nodes (program order) that, alone in
      // low precision, breaks the outputs: its last node is responsible.
      int64_t lo = -1, hi = static_cast<int64_t>(candidates.size()) - 1;
      std::optional<double> errorAtHi = *error;
      while (hi - lo > 1 && elapsed() <= timeLimit) {
        int64_t mid = (lo + hi) / 2;
        std::vector<std::string> withSuffixDenied = denied;
        withSuffixDenied.insert(withSuffixDenied.end(),
                                candidates.begin() + mid + 1, candidates.end());
        FailureOr<double> e =
            probe(withSuffixDenied, llvm::formatv("the first {0} of {1} "
                                                  "low-precision nodes",
                                                  mid + 1, candidates.size()));
        if (failed(e))
          return failure();
        if (*e > tol) {
          hi = mid;
          errorAtHi = *e;
        } else {
          lo = mid;
        }
      }
      const std::string &culprit = candidates[hi];
      denied.push_back(culprit);
      FailureOr<double> after =
          probe(denied, "after denying '" + culprit + "'");
      if (failed(after))
        return failure();
      notes.push_back(llvm::formatv(
          "denied '{0}': in low precision (with the low nodes before it) the "
          "error is {1:e2}; without it {2:e2}",
          culprit, errorAtHi.value_or(*error), *after));
      error = after;
    }
    notes.push_back(llvm::formatv("{0} probes in {1:F1} s", probes, elapsed()));
    return denied;
  }

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

  /// The largest output error of the mixed-precision variant with `denied`.
  FailureOr<double> probe(const std::vector<std::string> &denied,
                          const std::string &what) {
    ++probes;
    FailureOr<std::vector<rt::NamedTensor>> outputs = runVariant(&denied);
    if (failed(outputs))
      return failure();
    double worst = 0;
    for (auto [ref, got] : llvm::zip(referenceOutputs, *outputs)) {
      double scale = 0, err = 0;
      int64_t n = std::min(ref.tensor.numElements(), got.tensor.numElements());
      for (int64_t i = 0; i < n; ++i) {
        double a = rt::elementAsDouble(ref.tensor, i);
        double b = rt::elementAsDouble(got.tensor, i);
        if (!std::isfinite(b) && std::isfinite(a)) {
          err = INFINITY;
          break;
        }
        if (std::isfinite(a)) {
          scale = std::max(scale, std::fabs(a));
          err = std::max(err, std::fabs(a - b));
        }
      }
      worst = std::max(worst, scale > 0 ? err / scale : err);
    }
    llvm::errs() << llvm::formatv(
        "mp-validate: probe {0} ({1:F1} s): {2}: error {3:e2} {4}\n", probes,
        elapsed(), what, worst, worst > tol ? "> limit" : "ok");
    return worst;
  }

  /// Compiles a clone of the module (fp32 when `denied` is null, else mixed
  /// precision with those nodes denied) to a plan and runs it.
  FailureOr<std::vector<rt::NamedTensor>>
  runVariant(const std::vector<std::string> *denied) {
    OwningOpRef<ModuleOp> clone = original.clone();
    MLIRContext *ctx = original.getContext();
    // Plans need static shapes: dynamic input dims become 1.
    for (auto func : clone->getOps<func::FuncOp>()) {
      SmallVector<Type> inputs;
      for (BlockArgument arg : func.getArguments()) {
        if (auto t = dyn_cast<RankedTensorType>(arg.getType())) {
          SmallVector<int64_t> shape(t.getShape());
          for (int64_t &d : shape)
            if (ShapedType::isDynamic(d))
              d = 1;
          arg.setType(t.clone(shape));
        }
        inputs.push_back(arg.getType());
      }
      func.setFunctionType(
          FunctionType::get(ctx, inputs, func.getResultTypes()));
    }
    SmallString<128> planPath;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "mp-validate", "mpplan", planPath))
      return original.emitError("mp-validate: cannot create a temporary "
                                "file: ")
             << ec.message();
    llvm::FileRemover removePlan(planPath);
    std::optional<PrecisionPolicy> probePolicy;
    if (denied)
      probePolicy = policyDenying(policy, *denied);
    if (failed(compile(*clone, probePolicy ? &*probePolicy : nullptr,
                       planPath.str())))
      return original.emitError("mp-validate: cannot compile the ")
             << (denied ? "mixed-precision" : "fp32")
             << " model for the CPU runtime (see above)";
    rt::Result<rt::Plan> plan = rt::loadPlan(planPath.str().str());
    if (!plan)
      return original.emitError("mp-validate: ") << plan.status().message();
    rt::Result<rt::CpuExecutor> exec = rt::CpuExecutor::create(plan.take());
    if (!exec)
      return original.emitError("mp-validate: ") << exec.status().message();
    if (inputs.empty() && failed(makeInputs(exec->plan())))
      return failure();
    std::vector<rt::NamedView> views;
    for (auto [binding, tensor] : llvm::zip(exec->plan().inputs, inputs))
      views.push_back({binding.name, tensor.view()});
    rt::Result<std::vector<rt::NamedTensor>> outputs = exec->run(views);
    if (!outputs)
      return original.emitError("mp-validate: running the plan: ")
             << outputs.status().message();
    return outputs.take();
  }

  /// The inputs: the given files, else random values (normal floats, small
  /// non-negative integers) from the seed.
  LogicalResult makeInputs(const rt::Plan &plan) {
    if (!inputFiles.empty() && inputFiles.size() != plan.inputs.size())
      return original.emitError("mp-validate: ")
             << inputFiles.size() << " input files for " << plan.inputs.size()
             << " graph inputs";
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (auto [i, binding] : llvm::enumerate(plan.inputs)) {
      if (!inputFiles.empty()) {
        rt::Result<rt::HostTensor> t = rt::readTensorFile(inputFiles[i]);
        if (!t)
          return original.emitError("mp-validate: ") << t.status().message();
        if (t->dtype() != binding.dtype || t->shape() != binding.shape)
          return original.emitError("mp-validate: '")
                 << inputFiles[i] << "' is "
                 << rt::describeTensorType(t->dtype(), t->shape())
                 << ", graph input '" << binding.name << "' needs "
                 << rt::describeTensorType(binding.dtype, binding.shape);
        inputs.push_back(t.take());
        continue;
      }
      rt::HostTensor t(binding.dtype, binding.shape);
      for (int64_t j = 0; j < t.numElements(); ++j) {
        switch (binding.dtype) {
        case rt::DType::F32:
          t.as<float>()[j] = normal(rng);
          break;
        case rt::DType::F16:
          t.as<uint16_t>()[j] = rt::toHalf(normal(rng)).bits;
          break;
        case rt::DType::I64:
          t.as<int64_t>()[j] = static_cast<int64_t>(rng() % 4);
          break;
        case rt::DType::I32:
          t.as<int32_t>()[j] = static_cast<int32_t>(rng() % 4);
          break;
        default:
          static_cast<uint8_t *>(t.data())[j] = 0;
          break;
        }
      }
      inputs.push_back(std::move(t));
    }
    return success();
  }

  ModuleOp original;
  PrecisionPolicy policy;
  double tol, timeLimit;
  std::vector<std::string> inputFiles;
  unsigned seed;
  CompileToPlan compile;
  std::chrono::steady_clock::time_point start;
  std::vector<rt::HostTensor> inputs;
  std::vector<rt::NamedTensor> referenceOutputs;
  unsigned probes = 0;
};
} // namespace

FailureOr<std::vector<std::string>> mp::autocast::findNodesToDeny(
    ModuleOp module, const PrecisionPolicy &policy,
    const ValidationOptions &options, const CompileToPlan &compile,
    const LowNodes &lowNodes, std::vector<std::string> &notes) {
  return Validator(module, policy, options, compile).run(lowNodes, notes);
}
