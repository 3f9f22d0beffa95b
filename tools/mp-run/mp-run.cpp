//===- mp-run.cpp - runs a plan file on the CPU or CUDA backend -----------===//
//
//   mp-run model.mpplan [inputs...] [options]
//   mp-run --train model.train.mpplan --data x.npy --labels y.npy [options]
//
// Loads a plan, binds input tensor files (.npy or ONNX TensorProto .pb) to
// its inputs, runs it with the CPU executor (or, with --backend=cuda, the
// CUDA executor), and writes, compares, times or prints the outputs. With
// --train it trains a training plan on a data set (Train.cpp). Links only
// MPRuntime (no LLVM/MLIR). docs/runtime.md describes the options; --help
// prints them.
//
// Exit status: 0 success, 1 an output did not match --compare, 2 any error
// (the message is "mp-run: <file>: error: ...", or "mp-run: error: ..."
// when no file is involved). Output files are written to temporary names
// and renamed only when every output has been written.
//
//===----------------------------------------------------------------------===//
#include "Train.h"

#include "mp/Runtime/CUDA/CudaPlanning.h"
#include "mp/Runtime/DynamicShapes.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"
#if MP_HAVE_CUDA_BACKEND
#include "mp/Runtime/CUDA/CudaExecutor.h"
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

using namespace mp::rt;
using mp::tools::Failure;
namespace fs = std::filesystem;

namespace {

constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

const char kUsage[] = R"(USAGE: mp-run model.mpplan [inputs...] [options]
       mp-run --train model.train.mpplan --data X --labels Y [options]

Runs a plan file (.mpplan) on the CPU backend (or the CUDA backend).

Inputs are tensor files, .npy or ONNX TensorProto (.pb), given as
NAME=FILE (bound to the plan input NAME) or as FILE (bound to the plan's
inputs in order, skipping those given by name). Every input is needed, with
the plan's dtype and shape exactly.

OPTIONS:
  --output-dir=DIR      write each output to DIR/<name>.npy (created if needed)
  --output-format=FMT   npy (default) or pb (ONNX TensorProto)
  --compare FILE...     expected outputs (NAME=FILE, or FILE in output order;
                        the files up to the next option);
                        per element |actual - expected| <= atol + rtol*|expected|
                        (NaN matches NaN; integers and bools must be equal)
  --rtol=X              relative tolerance (default 1e-3)
  --atol=X              absolute tolerance (default 1e-7)
  --scale-tol=X         instead of rtol/atol: a float output matches when
                        max |actual - expected| <= X * max |expected| (error
                        relative to the output's scale, for whole models)
  --timing[=N|all]      print the time per call kind and the N slowest
                        calls (default 10; all: every call, slowest first)
                        (CPU backend: after the CPU's kernels and threads
                        and the memory shared by a plan's executors and
                        each one's)
  --repeat=N            run N timed times, print mean/median/min ms per run
  --warmup=M            untimed runs before the timed ones (default 1 with
                        --repeat)
  --print-plan          print the plan's inputs, outputs, buffers and calls,
                        and (CPU backend) what runs each call
                        (without inputs, only print it)
  --zero-inputs         bind the inputs not given to zeros (to check that a
                        plan runs, or time it, without data)
  --backend=B           cpu (default: oneDNN's primitives for the calls it
                        covers, bf16 on CPUs with bf16 dot products, the
                        reference kernels for the rest), cpu-ref (the exact
                        reference kernels only) or cuda: run on the GPU
                        (needs an mp-run built with the CUDA backend and a
                        GPU)
  --check               only check that the backend accepts the plan, and
                        exit: the plan's structure and call kinds; with
                        --backend=cuda also every call's attributes, shapes
                        and dtypes (the GPU's host-side planning: no GPU is
                        needed)
  --threads=N           with the CPU backend, the threads of oneDNN and the
                        elementwise kernels (default: OMP_NUM_THREADS, else
                        the cores)
  --cuda-batch-norm=M   with --backend=cuda, who runs the batch norms: auto
                        (default: cuDNN for inference and f32 channels-first
                        training, the project's kernels for 16-bit or
                        channels-last training, which are faster),
                        spatial (cuDNN wherever it can), own (the project's
                        kernels)
  --weights=DIR|FILE    the bytes of the plan's external weights (a plan
                        saved without them, format 1.2): DIR/<name>.npy per
                        weight, or a plan file that has them; converted to
                        the plan's dtype, shapes and checksums checked
  --unchecked-weights   with --weights: accept values that differ from those
                        the plan was saved with (says how many differ)
  --help                this help

TRAINING (a training plan, made by mp-opt --mp-training):
  --train               train: run the plan once per batch of --data/--labels
                        (its state, e.g. parameters and optimizer moments,
                        persists from step to step); batches have the size
                        of the plan's data input; the last incomplete batch
                        of each epoch is left out
  --data=FILE           the samples (first dim: samples; the rest is the
                        shape of one sample of the plan's data input)
  --labels=FILE         class ids (int32/int64) for classification, targets
                        (floats) for regression; first dim: samples
  --epochs=N            passes over the data (default 1)
  --shuffle, --no-shuffle
                        shuffle the samples each epoch (default) or not
  --seed=S              the shuffling seed (default 0)
  --batch=N             check that the plan's batch size is N
  --eval-plan=FILE      an inference plan evaluated after each epoch with the
                        training state as its weights (by name), on
  --eval-data=FILE, --eval-labels=FILE
                        (accuracy for classification, MSE for regression)
  --save=FILE           write the trained plan (its state as initial values:
                        training resumes from it) at the end
  --log=FILE            CSV, one row per epoch: epoch,train_loss,
                        train_accuracy,eval_accuracy,skipped_steps,
                        loss_scale,seconds,eval_mse
  --step-log=FILE       CSV, one row per step: step,loss,skipped,loss_scale
                        (under mpirun: one file per rank, FILE.rank<R>)
  --checkpoint=FILE     write the plan with its state after every epoch,
                        with the number of epochs done (atomically)
  --resume              the plan is a --checkpoint: train on from the epoch
                        after it, with the data order of an uninterrupted run
  --state-dir=DIR       write every state buffer as DIR/<name>.npy at the end
  (--print-plan and --timing work with --train too)

DATA PARALLEL (mpirun -np N mp-run --train ..., a plan made with
--mp-training="... data-parallel=true"): every rank runs its slice of each
global batch of N times the plan's batch; rank 0 prints, logs, evaluates and
saves; the ranks' master weights are compared after every epoch.
  --collective-timeout=S
                        give up a collective after S seconds (default 300):
                        a rank that died or hangs ends the run with an error
  --simulate-failure=R:STEP:MODE
                        for testing: rank R, before its step STEP, exits
                        (exit), stops answering (hang) or changes a master
                        weight (corrupt)

Exit status: 0 success, 1 an output did not match --compare, 2 an error.
)";

int report(const Failure &f) {
  std::string message = f.message;
  // Runtime messages often start with the file already: do not repeat it.
  if (!f.file.empty() && message.rfind(f.file + ": ", 0) == 0)
    message = message.substr(f.file.size() + 2);
  if (f.file.empty())
    std::fprintf(stderr, "mp-run: error: %s\n", message.c_str());
  else
    std::fprintf(stderr, "mp-run: %s: error: %s\n", f.file.c_str(),
                 message.c_str());
  return kExitError;
}

struct Options {
  std::string planPath;
  std::vector<std::string> inputArgs;
  std::vector<std::string> compareArgs;
  std::string outputDir;
  std::string outputFormat = "npy";
  double rtol = 1e-3, atol = 1e-7;
  double scaleTol = 0; // > 0: compare against the output's scale
  bool timing = false, printPlan = false, zeroInputs = false, help = false;
  size_t timingCalls = 10;       ///< --timing=N: slowest calls listed
  int repeat = 0, warmup = -1;   ///< 0 / -1: not given
  std::string backend = "cpu";   ///< cpu, cpu-ref or cuda
  int threads = 0;               ///< --threads (0: not given)
  std::string cudaBatchNorm;     ///< --cuda-batch-norm (empty: not given)
  bool check = false;            ///< --check: validate for the backend only
  std::string weightsPath;       ///< --weights
  bool uncheckedWeights = false; ///< --unchecked-weights
  bool train = false;
  mp::tools::TrainOptions training;
  /// Options given that only --train takes / that --train does not take.
  std::vector<std::string> trainOnly, notWithTrain;
};

bool parseDouble(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (errno || *end || !std::isfinite(v) || v < 0)
    return false;
  out = v;
  return true;
}

bool parseU64(const std::string &text, uint64_t &out) {
  if (text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno)
    return false;
  out = v;
  return true;
}

bool parseCount(const std::string &text, int &out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  errno = 0;
  long v = std::strtol(text.c_str(), nullptr, 10);
  if (errno || v > 1000000000)
    return false;
  out = static_cast<int>(v);
  return true;
}

/// Parses the command line; a Failure for unknown options or bad values.
bool parseArgs(int argc, char **argv, Options &opts, Failure &failure) {
  bool inCompare = false;
  auto fail = [&](std::string message) {
    failure = {"", std::move(message) + " (see mp-run --help)"};
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (arg == "--")
        continue;
      if (inCompare)
        opts.compareArgs.push_back(arg);
      else if (opts.planPath.empty())
        opts.planPath = arg;
      else
        opts.inputArgs.push_back(arg);
      continue;
    }
    inCompare = false;
    size_t eq = arg.find('=');
    std::string key = arg.substr(0, eq);
    bool hasValue = eq != std::string::npos;
    std::string value = hasValue ? arg.substr(eq + 1) : "";
    // Options with a value also take it as the next argument.
    auto takeValue = [&]() -> bool {
      if (hasValue)
        return true;
      if (i + 1 >= argc)
        return false;
      value = argv[++i];
      return true;
    };
    static const char *const kNotWithTrain[] = {
        "--compare", "--output-dir", "--output-format",
        "--rtol",    "--atol",       "--scale-tol",
        "--repeat",  "--warmup",     "--zero-inputs"};
    for (const char *k : kNotWithTrain)
      if (key == k)
        opts.notWithTrain.push_back(key);
    mp::tools::TrainOptions &t = opts.training;
    if (key == "--train") {
      opts.train = true;
      if (hasValue) {
        if (!opts.planPath.empty())
          return fail("--train=" + value + ": the plan is given already ('" +
                      opts.planPath + "')");
        opts.planPath = value;
      }
    } else if (key == "--shuffle" && !hasValue) {
      t.shuffle = true;
      opts.trainOnly.push_back(key);
    } else if (key == "--no-shuffle" && !hasValue) {
      t.shuffle = false;
      opts.trainOnly.push_back(key);
    } else if (key == "--data" || key == "--labels" || key == "--eval-plan" ||
               key == "--eval-data" || key == "--eval-labels" ||
               key == "--save" || key == "--log" || key == "--step-log") {
      if (!takeValue() || value.empty())
        return fail(key + " needs a file name");
      (key == "--data"          ? t.dataPath
       : key == "--labels"      ? t.labelsPath
       : key == "--eval-plan"   ? t.evalPlanPath
       : key == "--eval-data"   ? t.evalDataPath
       : key == "--eval-labels" ? t.evalLabelsPath
       : key == "--save"        ? t.savePath
       : key == "--log"         ? t.logPath
                                : t.stepLogPath) = value;
      opts.trainOnly.push_back(key);
    } else if (key == "--epochs" || key == "--batch") {
      int v;
      if (!takeValue() || !parseCount(value, v) || v < 1)
        return fail(key + " needs a count >= 1, got '" + value + "'");
      (key == "--epochs" ? t.epochs : t.batch) = v;
      opts.trainOnly.push_back(key);
    } else if (key == "--checkpoint" || key == "--state-dir") {
      if (!takeValue() || value.empty())
        return fail(key + " needs a " +
                    (key == "--checkpoint" ? "file" : "directory") + " name");
      (key == "--checkpoint" ? t.checkpointPath : t.stateDir) = value;
      opts.trainOnly.push_back(key);
    } else if (key == "--resume" && !hasValue) {
      t.resume = true;
      opts.trainOnly.push_back(key);
    } else if (key == "--collective-timeout") {
      char *end = nullptr;
      double seconds = takeValue() ? std::strtod(value.c_str(), &end) : 0;
      if (value.empty() || !end || *end || !(seconds > 0) ||
          !std::isfinite(seconds))
        return fail("--collective-timeout needs seconds > 0, got '" + value +
                    "'");
      t.collectiveTimeout = seconds;
      opts.trainOnly.push_back(key);
    } else if (key == "--simulate-failure") {
      int rank = -1;
      long long step = 0;
      char mode[16] = {0};
      int used = 0;
      if (!takeValue() ||
          std::sscanf(value.c_str(), "%d:%lld:%15[a-z]%n", &rank, &step, mode,
                      &used) != 3 ||
          used != static_cast<int>(value.size()) || rank < 0 || step < 1 ||
          (std::string(mode) != "exit" && std::string(mode) != "hang" &&
           std::string(mode) != "corrupt"))
        return fail("--simulate-failure needs RANK:STEP:MODE (rank >= 0, "
                    "step >= 1, mode exit, hang or corrupt), got '" +
                    value + "'");
      t.failRank = rank;
      t.failStep = step;
      t.failMode = mode;
      opts.trainOnly.push_back(key);
    } else if (key == "--seed") {
      if (!takeValue() || !parseU64(value, t.seed))
        return fail("--seed needs an integer >= 0, got '" + value + "'");
      opts.trainOnly.push_back(key);
    } else if (key == "--backend") {
      if (!takeValue() ||
          (value != "cpu" && value != "cpu-ref" && value != "cuda"))
        return fail("--backend must be cpu, cpu-ref or cuda, got '" + value +
                    "'");
      opts.backend = value;
    } else if (key == "--threads") {
      int v;
      if (!takeValue() || !parseCount(value, v) || v < 1)
        return fail("--threads needs a count >= 1, got '" + value + "'");
      opts.threads = v;
    } else if (key == "--cuda-batch-norm") {
      if (!takeValue() ||
          (value != "auto" && value != "spatial" && value != "own"))
        return fail("--cuda-batch-norm must be auto, spatial or own, got '" +
                    value + "'");
      opts.cudaBatchNorm = value;
    } else if (key == "--weights") {
      if (!takeValue() || value.empty())
        return fail("--weights needs a directory or a plan file");
      opts.weightsPath = value;
    } else if (key == "--unchecked-weights" && !hasValue) {
      opts.uncheckedWeights = true;
    } else if (key == "--help" && !hasValue) {
      opts.help = true;
    } else if (key == "--timing") {
      opts.timing = true;
      if (hasValue) {
        int v;
        if (value == "all")
          opts.timingCalls = std::numeric_limits<size_t>::max();
        else if (parseCount(value, v) && v >= 0)
          opts.timingCalls = size_t(v);
        else
          return fail("--timing takes a count of calls or 'all', got '" +
                      value + "'");
      }
    } else if (key == "--print-plan" && !hasValue) {
      opts.printPlan = true;
    } else if (key == "--zero-inputs" && !hasValue) {
      opts.zeroInputs = true;
    } else if (key == "--check" && !hasValue) {
      opts.check = true;
    } else if (key == "--compare") {
      inCompare = true;
      if (hasValue)
        opts.compareArgs.push_back(value);
    } else if (key == "--output-dir") {
      if (!takeValue() || value.empty())
        return fail("--output-dir needs a directory");
      opts.outputDir = value;
    } else if (key == "--output-format") {
      if (!takeValue() || (value != "npy" && value != "pb"))
        return fail("--output-format must be npy or pb");
      opts.outputFormat = value;
    } else if (key == "--rtol" || key == "--atol" || key == "--scale-tol") {
      double v;
      if (!takeValue() || !parseDouble(value, v))
        return fail(key + " needs a finite number >= 0, got '" + value + "'");
      (key == "--rtol"   ? opts.rtol
       : key == "--atol" ? opts.atol
                         : opts.scaleTol) = v;
    } else if (key == "--repeat" || key == "--warmup") {
      int v;
      if (!takeValue() || !parseCount(value, v) || (key == "--repeat" && v < 1))
        return fail(key + " needs a count" +
                    (key == "--repeat" ? " >= 1" : std::string()) + ", got '" +
                    value + "'");
      (key == "--repeat" ? opts.repeat : opts.warmup) = v;
    } else {
      return fail("unknown option '" + arg + "'");
    }
  }
  return true;
}

/// "NAME=FILE" where NAME is one of `bindings`, or "FILE" (name empty).
/// An argument with '=' that is neither a binding's name nor an existing
/// file is an error (most likely a misspelt name).
bool splitNamed(const std::vector<PlanBinding> &bindings,
                const std::string &arg, std::string &name, std::string &file,
                Failure &failure, const char *what) {
  size_t eq = arg.find('=');
  name.clear();
  file = arg;
  if (eq == std::string::npos || eq == 0)
    return true;
  std::string prefix = arg.substr(0, eq);
  bool known =
      std::any_of(bindings.begin(), bindings.end(),
                  [&](const PlanBinding &b) { return b.name == prefix; });
  if (known) {
    name = prefix;
    file = arg.substr(eq + 1);
    if (!file.empty())
      return true;
    failure = {"", std::string("no file given for ") + what + " '" + name +
                       "' in '" + arg + "'"};
    return false;
  }
  std::error_code ec;
  if (fs::exists(arg, ec))
    return true;
  std::string names;
  for (const PlanBinding &b : bindings)
    names += (names.empty() ? "" : ", ") + b.name;
  failure = {"", std::string("unknown ") + what + " '" + prefix + "' in '" +
                     arg + "' (the plan's " + what +
                     "s: " + (names.empty() ? "none" : names) + ")"};
  return false;
}

struct BoundFile {
  std::string name; ///< the binding's name
  std::string file;
  HostTensor tensor;
};

/// Reads NAME=FILE / FILE arguments and assigns them to `bindings`: named
/// ones first, the others in order to the bindings not named.
bool bindFiles(const std::vector<PlanBinding> &bindings,
               const std::vector<std::string> &args,
               const std::string &planPath, const char *what,
               std::vector<BoundFile> &out, Failure &failure) {
  std::vector<std::string> names(args.size()), files(args.size());
  std::vector<bool> taken(bindings.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!splitNamed(bindings, args[i], names[i], files[i], failure, what))
      return false;
    if (names[i].empty())
      continue;
    for (size_t b = 0; b < bindings.size(); ++b)
      if (bindings[b].name == names[i]) {
        if (taken[b]) {
          failure = {"",
                     std::string(what) + " '" + names[i] + "' is given twice"};
          return false;
        }
        taken[b] = true;
      }
  }
  size_t next = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!names[i].empty())
      continue;
    while (next < bindings.size() && taken[next])
      ++next;
    if (next == bindings.size()) {
      std::string names;
      for (const PlanBinding &b : bindings)
        names += (names.empty() ? "" : ", ") + b.name;
      failure = {planPath, "the plan has " + std::to_string(bindings.size()) +
                               " " + what + (bindings.size() == 1 ? "" : "s") +
                               (names.empty() ? "" : " (" + names + ")") +
                               ", got " + std::to_string(args.size()) + " " +
                               what + " files"};
      return false;
    }
    names[i] = bindings[next].name;
    taken[next] = true;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    Result<HostTensor> tensor = readTensorFile(files[i]);
    if (!tensor) {
      failure = {files[i], tensor.message()};
      return false;
    }
    out.push_back({names[i], files[i], tensor.take()});
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string indexString(const Shape &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d)
    out += (d ? ", " : "") + std::to_string(index[d]);
  return out + "]";
}

void printOutputSummary(const NamedTensor &out) {
  const HostTensor &t = out.tensor;
  std::printf("output %s: %s", out.name.c_str(),
              describeTensorType(t.dtype(), t.shape()).c_str());
  const int64_t shown = std::min<int64_t>(t.numElements(), 8);
  std::printf(" = [");
  for (int64_t i = 0; i < shown; ++i)
    std::printf("%s%.6g", i ? ", " : "", elementAsDouble(t, i));
  std::printf("%s]\n", shown < t.numElements() ? ", ..." : "");
}

//===----------------------------------------------------------------------===//
// Comparing
//===----------------------------------------------------------------------===//

/// Compares one output with its expected tensor; prints a line; returns
/// whether they match.
bool compareOutput(const NamedTensor &actual, const BoundFile &expected,
                   double rtol, double atol, double scaleTol) {
  const HostTensor &a = actual.tensor, &e = expected.tensor;
  const char *name = actual.name.c_str();
  if (a.dtype() != e.dtype() || a.shape() != e.shape()) {
    std::printf("output %s: MISMATCH: the output is %s, %s is %s\n", name,
                describeTensorType(a.dtype(), a.shape()).c_str(),
                expected.file.c_str(),
                describeTensorType(e.dtype(), e.shape()).c_str());
    return false;
  }
  const int64_t n = a.numElements();
  int64_t mismatches = 0, first = -1;
  double maxAbs = 0, maxRel = 0;
  const bool exact = !isFloat(a.dtype());
  // With --scale-tol, the bound is the same for every element.
  const bool byScale = scaleTol > 0 && !exact;
  if (byScale) {
    double scale = 0;
    for (int64_t i = 0; i < n; ++i)
      scale = std::max(scale, std::abs(elementAsDouble(e, i)));
    atol = scaleTol * scale;
    rtol = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    double x = elementAsDouble(a, i), y = elementAsDouble(e, i);
    if (exact) {
      // Compare the bytes: exact for 64-bit integers too.
      size_t size = byteSize(a.dtype());
      ok = std::memcmp(static_cast<const char *>(a.data()) + i * size,
                       static_cast<const char *>(e.data()) + i * size,
                       size) == 0;
    } else if (std::isnan(x) || std::isnan(y)) {
      ok = std::isnan(x) && std::isnan(y);
    } else if (x == y) {
      ok = true; // equal infinities too
    } else {
      double diff = std::abs(x - y);
      ok = diff <= atol + rtol * std::abs(y);
      if (std::isfinite(diff)) {
        maxAbs = std::max(maxAbs, diff);
        maxRel = std::max(maxRel, y != 0 ? diff / std::abs(y) : INFINITY);
      } else {
        maxAbs = maxRel = INFINITY;
      }
    }
    if (exact && !ok) {
      double diff = std::abs(x - y);
      maxAbs = std::max(maxAbs, diff);
      maxRel = std::max(maxRel, y != 0 ? diff / std::abs(y) : INFINITY);
    }
    if (!ok && mismatches++ == 0)
      first = i;
  }
  std::printf("output %s: %s, max abs error %.3g, max rel error %.3g, %lld of "
              "%lld elements mismatch",
              name, mismatches ? "MISMATCH" : "ok", maxAbs, maxRel,
              static_cast<long long>(mismatches), static_cast<long long>(n));
  if (byScale)
    std::printf(", max abs error / max |expected| = %.3g (limit %.3g)",
                atol > 0 ? maxAbs * scaleTol / atol : maxAbs, scaleTol);
  if (first >= 0)
    std::printf(" (first at %s: actual %.9g, expected %.9g)",
                indexString(a.shape(), first).c_str(),
                elementAsDouble(a, first), elementAsDouble(e, first));
  std::printf("\n");
  return mismatches == 0;
}

//===----------------------------------------------------------------------===//
// Writing outputs
//===----------------------------------------------------------------------===//

/// A file name for an output: its name with characters other than letters,
/// digits, '.', '-', '_' replaced by '_' (ONNX names may hold '/' or ':').
std::string fileNameFor(const std::string &name) {
  std::string out = name.empty() ? std::string("output") : name;
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' &&
        c != '_')
      c = '_';
  if (out == "." || out == "..")
    out = "_";
  return out;
}

/// Writes every output to temporary files, then renames them all: on any
/// error no output file is left (temporaries are removed).
bool writeOutputs(const std::vector<NamedTensor> &outputs, const Options &opts,
                  Failure &failure) {
  std::error_code ec;
  fs::create_directories(opts.outputDir, ec);
  if (ec || !fs::is_directory(opts.outputDir)) {
    failure = {opts.outputDir, "cannot create the output directory" +
                                   (ec ? ": " + ec.message() : std::string())};
    return false;
  }
  std::vector<std::pair<std::string, std::string>> written; // temp, final
  auto cleanup = [&] {
    for (const auto &[temp, final] : written)
      fs::remove(temp, ec);
  };
  for (const NamedTensor &out : outputs) {
    std::string final = (fs::path(opts.outputDir) /
                         (fileNameFor(out.name) + "." + opts.outputFormat))
                            .string();
    for (const auto &entry : written)
      if (entry.second == final) {
        cleanup();
        failure = {final, "two outputs map to this file name"};
        return false;
      }
    std::string temp = final + ".tmp-" + std::to_string(::getpid());
    written.emplace_back(temp, final);
    Status s = opts.outputFormat == "pb"
                   ? writeTensorProto(temp, out.tensor.view(), out.name)
                   : writeNpy(temp, out.tensor.view());
    if (!s) {
      cleanup();
      std::string message = s.message();
      if (message.rfind(temp + ": ", 0) == 0)
        message = message.substr(temp.size() + 2);
      failure = {final, "cannot write output '" + out.name + "': " + message};
      return false;
    }
  }
  for (const auto &[temp, final] : written) {
    fs::rename(temp, final, ec);
    if (ec) {
      failure = {final, "cannot rename the output file: " + ec.message()};
      cleanup();
      return false;
    }
  }
  return true;
}

template <typename Exec> int runInference(Exec &exec, const Options &opts);
int runOnBackend(Plan plan, const Options &opts);

/// --check: whether the backend accepts the plan, without running it. For
/// the CUDA backend this is its host-side planning of every call
/// (cuda::checkPlanForCuda), so no GPU is needed.
int checkOnly(const Options &opts) {
  if (opts.train || !opts.inputArgs.empty() || !opts.compareArgs.empty())
    return report({"", "--check takes a plan alone (no inputs, --compare or "
                       "--train)"});
  Result<Plan> plan = loadPlan(opts.planPath);
  if (!plan)
    return report({opts.planPath, plan.message()});
  size_t calls = plan->calls.size();
  if (opts.backend == "cuda") {
    if (Status s = cuda::checkPlanForCuda(*plan, opts.planPath); !s)
      return report({opts.planPath, s.message()});
  } else {
    Result<CpuExecutor> exec = CpuExecutor::create(plan.take(), opts.planPath);
    if (!exec)
      return report({opts.planPath, exec.message()});
  }
  std::printf("%s: the %s backend accepts all %zu calls\n",
              opts.planPath.c_str(), opts.backend.c_str(), calls);
  return 0;
}

/// --backend=cuda: whether it can run here (the reason when not).
bool cudaUsable(std::string &why) {
#if MP_HAVE_CUDA_BACKEND
  return cudaDeviceCount(&why) > 0;
#else
  why = "this mp-run was built without the CUDA backend (configure with the "
        "CUDA toolkit, MP_ENABLE_CUDA; docs/runtime.md)";
  return false;
#endif
}

int runMain(int argc, char **argv) {
  Options opts;
  Failure failure;
  if (!parseArgs(argc, argv, opts, failure))
    return report(failure);
  if (opts.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (opts.planPath.empty())
    return report({"", "no plan file given (see mp-run --help)"});
  if (opts.uncheckedWeights && opts.weightsPath.empty())
    return report({"", "--unchecked-weights needs --weights"});
  if (!opts.cudaBatchNorm.empty() && opts.backend != "cuda")
    return report({"", "--cuda-batch-norm needs --backend=cuda"});
  if (opts.threads > 0 && opts.backend == "cuda")
    return report({"", "--threads is for the CPU backend (--backend=cpu or "
                       "cpu-ref)"});
  if (opts.cudaBatchNorm.empty())
    opts.cudaBatchNorm = "auto";
  if (opts.check)
    return checkOnly(opts);
  if (opts.backend == "cuda") {
    std::string why;
    if (!cudaUsable(why))
      return report({"", "--backend=cuda: no CUDA device: " + why});
  }
  if (opts.train) {
    if (!opts.notWithTrain.empty())
      return report({"", opts.notWithTrain[0] +
                             " cannot be used with --train (see mp-run "
                             "--help)"});
    if (!opts.inputArgs.empty())
      return report({"", "--train takes its data from --data and --labels, "
                         "not from input files ('" +
                             opts.inputArgs[0] + "')"});
    mp::tools::TrainOptions &t = opts.training;
    if (t.dataPath.empty() || t.labelsPath.empty())
      return report({"", "--train needs --data and --labels (see mp-run "
                         "--help)"});
    if (!t.evalPlanPath.empty() &&
        (t.evalDataPath.empty() || t.evalLabelsPath.empty()))
      return report({"", "--eval-plan needs --eval-data and --eval-labels"});
    if (t.evalPlanPath.empty() &&
        (!t.evalDataPath.empty() || !t.evalLabelsPath.empty()))
      return report({"", "--eval-data and --eval-labels need --eval-plan"});
    t.planPath = opts.planPath;
    t.printPlan = opts.printPlan;
    t.timing = opts.timing;
    t.timingCalls = opts.timingCalls;
    t.backend = opts.backend;
    t.threads = opts.threads;
    t.cudaBatchNorm = opts.cudaBatchNorm;
    t.weightsPath = opts.weightsPath;
    t.uncheckedWeights = opts.uncheckedWeights;
    return mp::tools::runTraining(t, report);
  }
  if (!opts.trainOnly.empty())
    return report({"", opts.trainOnly[0] +
                           " is an option of --train (see mp-run --help)"});

  Result<Plan> plan = loadPlan(opts.planPath);
  if (!plan)
    return report({opts.planPath, plan.message()});
  if (!mp::tools::fillWeights(*plan, opts.planPath, opts.weightsPath,
                              opts.uncheckedWeights, failure))
    return report(failure);
  if (opts.printPlan) {
    mp::tools::printPlan(*plan);
    if (opts.inputArgs.empty() && !plan->inputs.empty() && !opts.zeroInputs) {
      // What each call runs on, as the CPU executor prepares it (a plan
      // saved without its weights cannot be prepared: it says so).
      bool unfilled = std::any_of(
          plan->weights.begin(), plan->weights.end(),
          [](const PlanWeight &w) { return w.external && !w.data; });
      if (opts.backend != "cuda" && unfilled) {
        std::printf("what runs each call: not prepared (the plan's external "
                    "weights are not filled: --weights)\n");
      } else if (opts.backend != "cuda") {
        Result<CpuExecutor> exec = CpuExecutor::create(
            plan.take(), opts.planPath,
            mp::tools::cpuExecutorOptions(opts.backend, opts.threads));
        if (!exec)
          return report({opts.planPath, exec.message()});
        mp::tools::printImplementations(*exec);
      }
      return 0;
    }
  }
  return runOnBackend(plan.take(), opts);
}

/// Binds the input files, runs (or benchmarks) the plan on `exec` and
/// writes, compares or prints the outputs: the same for every backend.
template <typename Exec> int runInference(Exec &exec, const Options &opts) {
  Failure failure;
  const Plan &p = exec.plan();

  std::vector<BoundFile> inputs, expected;
  if (!bindFiles(p.inputs, opts.inputArgs, opts.planPath, "input", inputs,
                 failure) ||
      !bindFiles(p.outputs, opts.compareArgs, opts.planPath, "output", expected,
                 failure))
    return report(failure);
  if (opts.zeroInputs)
    for (const PlanBinding &b : p.inputs)
      if (std::none_of(inputs.begin(), inputs.end(), [&](const BoundFile &in) {
            return in.name == b.name;
          })) {
        HostTensor zeros(b.dtype, b.shape);
        std::memset(zeros.data(), 0, zeros.byteCount());
        inputs.push_back({b.name, "<zeros>", std::move(zeros)});
      }
  std::vector<NamedView> views;
  for (const BoundFile &in : inputs)
    views.push_back({in.name, in.tensor.view()});
  // Name the input's file in binding errors (shape, dtype).
  auto inputFailure = [&](const std::string &message) -> Failure {
    for (const BoundFile &in : inputs)
      if (message.rfind("input '" + in.name + "': ", 0) == 0)
        return {in.file, message};
    return {opts.planPath, message};
  };

  exec.setTiming(opts.timing);
  std::vector<NamedTensor> outputs;
  if (opts.repeat > 0 || opts.warmup >= 0) {
    int repeat = opts.repeat > 0 ? opts.repeat : 1;
    int warmup = opts.warmup >= 0 ? opts.warmup : 1;
    Result<BenchmarkStats> stats = exec.benchmark(views, warmup, repeat);
    if (!stats)
      return report(inputFailure(stats.message()));
    std::printf("%d run%s (after %d warmup): mean %.3f ms, median %.3f ms, "
                "min %.3f ms, max %.3f ms\n",
                repeat, repeat == 1 ? "" : "s", warmup, stats->mean,
                stats->median, stats->min, stats->max);
    Result<std::vector<NamedTensor>> out = exec.readOutputs();
    if (!out)
      return report({opts.planPath, out.message()});
    outputs = out.take();
  } else {
    Result<std::vector<NamedTensor>> out = exec.run(views);
    if (!out)
      return report(inputFailure(out.message()));
    outputs = out.take();
  }
  if (opts.timing)
    std::fputs(mp::tools::timingReport(exec, opts.timingCalls).c_str(), stdout);

  if (!opts.outputDir.empty() && !writeOutputs(outputs, opts, failure))
    return report(failure);
  if (expected.empty()) {
    if (opts.outputDir.empty())
      for (const NamedTensor &out : outputs)
        printOutputSummary(out);
    return 0;
  }
  bool allMatch = true;
  for (const BoundFile &e : expected)
    for (const NamedTensor &out : outputs)
      if (out.name == e.name)
        allMatch &= compareOutput(out, e, opts.rtol, opts.atol, opts.scaleTol);
  return allMatch ? 0 : kExitMismatch;
}

int runOnBackend(Plan plan, const Options &opts) {
  if (opts.backend == "cuda") {
#if MP_HAVE_CUDA_BACKEND
    Result<CudaExecutor> exec = CudaExecutor::create(
        std::move(plan), opts.planPath,
        mp::tools::cudaExecutorOptions(opts.cudaBatchNorm));
    if (!exec)
      return report({opts.planPath, exec.message()});
    return runInference(*exec, opts);
#endif
  }
  Result<CpuExecutor> exec = CpuExecutor::create(
      std::move(plan), opts.planPath,
      mp::tools::cpuExecutorOptions(opts.backend, opts.threads));
  if (!exec)
    return report({opts.planPath, exec.message()});
  return runInference(*exec, opts);
}

} // namespace

namespace mp::tools {

#if MP_HAVE_CUDA_BACKEND
CudaExecutorOptions cudaExecutorOptions(const std::string &batchNorm) {
  CudaExecutorOptions o;
  o.batchNorm = batchNorm == "own"       ? rt::cuda::BatchNormImpl::Own
                : batchNorm == "spatial" ? rt::cuda::BatchNormImpl::CudnnSpatial
                                         : rt::cuda::BatchNormImpl::Auto;
  return o;
}
#endif

CpuExecutorOptions cpuExecutorOptions(const std::string &backend, int threads) {
  CpuExecutorOptions o;
  o.kernels = backend == "cpu-ref" ? rt::cpu::CpuKernels::Reference
                                   : rt::cpu::CpuKernels::Fast;
  o.threads = threads;
  return o;
}

/// "CPU kernels: oneDNN on <ISA>, N threads" for an executor.
std::string cpuKernelsLine(const CpuExecutor &exec) {
  std::string isa = rt::cpu::haveFastKernels()
                        ? "oneDNN on " + rt::cpu::fastKernelIsa()
                        : "reference kernels only (built without oneDNN)";
  if (exec.options().kernels == rt::cpu::CpuKernels::Reference)
    isa = "reference kernels (--backend=cpu-ref)";
  int threads = exec.options().threads > 0 ? exec.options().threads
                                           : rt::cpu::cpuThreads();
  return "CPU kernels: " + isa + ", " + std::to_string(threads) +
         (threads == 1 ? " thread" : " threads");
}

/// "memory: ..." for an executor: what the executors of one plan share and
/// what each has (docs/runtime.md, "Serving from one process").
std::string memoryLine(const CpuExecutor &exec) {
  size_t weights = 0;
  for (const rt::PlanWeight &w : exec.plan().weights)
    weights += w.size;
  auto mib = [](size_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
    return std::string(text);
  };
  return "memory: weights " + mib(weights) + " and " +
         mib(rt::preparedWeightBytes()) +
         " prepared at load, shared by the executors of the plan; per "
         "executor: arena " +
         mib(exec.arenaSize()) + ", workspace " + mib(exec.workspaceSize()) +
         ", state " + mib(exec.stateSize());
}

std::string timingReport(const CpuExecutor &exec, size_t slowestCalls) {
  return cpuKernelsLine(exec) + "\n" + memoryLine(exec) + "\n" +
         exec.callTimes().format(exec.plan(), slowestCalls, [&](size_t i) {
           return exec.implementationOf(i);
         });
}

void printImplementations(const CpuExecutor &exec) {
  std::printf("what runs each call (%s):\n", cpuKernelsLine(exec).c_str());
  const Plan &plan = exec.plan();
  for (size_t i = 0; i < plan.calls.size(); ++i)
    std::printf("  %s: %s\n", plan.calls[i].describe(i).c_str(),
                exec.implementationOf(i).c_str());
}

#if MP_HAVE_CUDA_BACKEND
std::string timingReport(const CudaExecutor &exec, size_t slowestCalls) {
  return exec.callTimes().format(exec.plan(), slowestCalls);
}
#endif

bool fillWeights(Plan &plan, const std::string &planPath,
                 const std::string &weightsPath, bool unchecked,
                 Failure &failure) {
  size_t external = 0;
  for (const PlanWeight &w : plan.weights)
    external += w.external && !w.data;
  if (weightsPath.empty())
    return true; // an unfilled plan is refused by the executor, by name
  if (!external) {
    failure = {weightsPath, "--weights: the plan has no external weights (it "
                            "holds all of its weights)"};
    return false;
  }
  Result<WeightSource> source = WeightSource::open(weightsPath);
  if (!source) {
    failure = {weightsPath, source.message()};
    return false;
  }
  FillWeightsOptions options;
  options.verifyChecksums = !unchecked;
  Result<FillWeightsReport> filled =
      fillExternalWeights(plan, *source, options);
  if (!filled) {
    failure = {weightsPath, filled.message()};
    return false;
  }
  std::fprintf(stderr,
               "mp-run: %s: filled %zu external weights (%llu bytes) "
               "from %s",
               planPath.c_str(), filled->filled,
               static_cast<unsigned long long>(filled->bytes),
               weightsPath.c_str());
  if (filled->checksumDiffers)
    std::fprintf(stderr,
                 "; %zu of them differ from the values the plan was "
                 "saved with (--unchecked-weights)",
                 filled->checksumDiffers);
  std::fprintf(stderr, "\n");
  return true;
}

void printPlan(const Plan &plan) {
  std::printf("plan: model '%s', producer '%s', format %u.%u\n",
              plan.modelName.c_str(), plan.producer.c_str(), plan.formatMajor,
              plan.formatMinor);
  uint64_t weightBytes = 0, externalBytes = 0;
  size_t external = 0;
  for (const PlanWeight &w : plan.weights) {
    weightBytes += w.size;
    if (w.external && !w.data) {
      ++external;
      externalBytes += w.size;
    }
  }
  std::string externalText =
      external ? ", " + std::to_string(external) + " external (" +
                     std::to_string(externalBytes) + " bytes)"
               : std::string();
  size_t atLoad = 0;
  uint64_t derivedBytes = 0;
  for (const PlanCall &c : plan.calls)
    atLoad += c.atLoad;
  for (const PlanBuffer &b : plan.buffers)
    if (b.storage == BufferStorage::Derived)
      derivedBytes += b.byteCount();
  // Calls per run first: those at load run once, when the plan is loaded.
  std::string atLoadText = atLoad ? " per run, " + std::to_string(atLoad) +
                                        " at load (making " +
                                        std::to_string(derivedBytes) + " bytes)"
                                  : std::string();
  std::printf("arena: %llu bytes; workspace: %llu bytes; weights: %zu (%llu "
              "bytes%s); buffers: %zu; calls: %zu%s\n",
              static_cast<unsigned long long>(plan.arenaSize),
              static_cast<unsigned long long>(plan.maxWorkspaceSize()),
              plan.weights.size(), static_cast<unsigned long long>(weightBytes),
              externalText.c_str(), plan.buffers.size(),
              plan.calls.size() - atLoad, atLoadText.c_str());
  // A dynamic-shape plan's shapes with their symbols (the sizes above are
  // at the maxima).
  auto typeOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    if (b.symbolicShape.empty())
      return describeTensorType(b.dtype, b.shape);
    return std::string(dtypeName(b.dtype)) + " " + symbolicShapeString(plan, b);
  };
  if (plan.isDynamic())
    std::printf("symbols: %s (the arena is planned for the maxima)\n",
                describeSymbols(plan.symbols).c_str());
  for (const PlanBinding &b : plan.inputs)
    std::printf("input  %s: %s (buffer %u)\n", b.name.c_str(),
                typeOf(b.buffer).c_str(), b.buffer);
  for (const PlanBinding &b : plan.outputs)
    std::printf("output %s: %s (buffer %u)\n", b.name.c_str(),
                typeOf(b.buffer).c_str(), b.buffer);
  for (const PlanBuffer &b : plan.buffers) {
    std::string where =
        b.storage == BufferStorage::Arena
            ? "arena offset " + std::to_string(b.offset)
        : b.storage == BufferStorage::Derived ? std::string("made at load")
        : b.storage == BufferStorage::Weight
            ? "weight '" + plan.weights[b.weight].name + "'"
            : "state, initially weight '" + plan.weights[b.weight].name + "'";
    const bool hasWeight =
        b.storage == BufferStorage::Weight || b.storage == BufferStorage::State;
    if (hasWeight && plan.weights[b.weight].external &&
        !plan.weights[b.weight].data)
      where += " (external)";
    std::printf("buffer %u%s: %s, %s\n", b.id,
                b.name.empty() ? "" : (" '" + b.name + "'").c_str(),
                typeOf(b.id).c_str(), where.c_str());
  }
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &c = plan.calls[i];
    auto ids = [](const std::vector<uint32_t> &v) {
      std::string out;
      for (uint32_t id : v)
        out += (out.empty() ? "" : ", ") + std::to_string(id);
      return out;
    };
    std::string symbolic;
    for (const PlanSymbolicValue &v : c.symbolicAttributes)
      symbolic += (symbolic.empty() ? "; " : ", ") + v.attribute +
                  (c.attrAs<int64_t>(v.attribute)
                       ? ""
                       : "[" + std::to_string(v.index) + "]") +
                  " = " + v.value.str(plan.symbols);
    std::printf("%s: (%s) -> (%s)%s%s\n", c.describe(i).c_str(),
                ids(c.operands).c_str(), ids(c.results).c_str(),
                c.atLoad ? " at load" : "", symbolic.c_str());
  }
  if (const std::optional<PlanTrainingInfo> &t = plan.training) {
    std::printf("training: task %s, data input %s, label input %s, loss "
                "output %s",
                t->task.c_str(), t->dataInput.c_str(), t->labelInput.c_str(),
                t->lossOutput.c_str());
    if (!t->predictionOutput.empty())
      std::printf(", prediction output %s", t->predictionOutput.c_str());
    if (!t->skippedOutput.empty())
      std::printf(", skipped output %s", t->skippedOutput.c_str());
    if (!t->scaleOutput.empty())
      std::printf(", scale output %s", t->scaleOutput.c_str());
    if (t->epochsDone > 0)
      std::printf(", a checkpoint after %u epoch%s", t->epochsDone,
                  t->epochsDone == 1 ? "" : "s");
    std::printf("\n");
  }
}

} // namespace mp::tools

int main(int argc, char **argv) {
  // Nothing below throws on purpose; a bad_alloc (e.g. a huge input file)
  // still ends with a message rather than a crash.
  try {
    return runMain(argc, argv);
  } catch (const std::exception &e) {
    return report({"", std::string("unexpected failure: ") + e.what()});
  }
}
