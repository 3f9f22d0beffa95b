//===- Train.cpp - mp-run --train: training with a training plan ----------===//
//
// A training plan (PlanTrainingInfo) runs one training step per run: it
// reads a batch from its data and label inputs, updates its State buffers in
// place and returns the loss (and optionally the predictions, whether the
// step was skipped, the loss scale). This file feeds it a data set for some
// epochs and reports what happens; see Train.h and docs/runtime.md.
//
// Everything that can be checked is checked before the first step: the
// plan, the files, their shapes and dtypes, the eval plan (with the state
// copied into it once), and that the --save directory exists. Files given
// with --log / --step-log are written as training goes; --save is written
// only at the end, by savePlan (a temporary file renamed over the path), so
// a failed run leaves no partial plan.
//
//===----------------------------------------------------------------------===//
#include "Train.h"
#include "Ranks.h"

#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"
#if MP_HAVE_CUDA_BACKEND
#include "mp/Runtime/CUDA/CudaExecutor.h"
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <unistd.h>

namespace mp::tools {

using namespace mp::rt;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string quoted(const std::string &s) { return "'" + s + "'"; }

std::string shapeText(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Shape tailOf(const Shape &shape) {
  return shape.empty() ? Shape{} : Shape(shape.begin() + 1, shape.end());
}

/// "f32 [100, 4] (100 samples of shape [4])".
std::string samplesText(const HostTensor &t) {
  return describeTensorType(t.dtype(), t.shape()) + " (" +
         std::to_string(t.shape()[0]) + " samples of shape " +
         shapeText(tailOf(t.shape())) + ")";
}

/// "f32 [32, 4] (batches of 32 samples of shape [4])".
std::string batchText(const PlanBinding &b) {
  return describeTensorType(b.dtype, b.shape) + " (batches of " +
         std::to_string(b.shape[0]) + " samples of shape " +
         shapeText(tailOf(b.shape)) + ")";
}

/// `x` converted to `dtype` with `shape` (the same number of elements).
Result<HostTensor> convert(const HostTensor &x, DType dtype, Shape shape) {
  HostTensor y(dtype, std::move(shape));
  if (y.numElements() != x.numElements())
    return Status::error("internal error: converting " +
                         describeTensorType(x.dtype(), x.shape()) + " to " +
                         describeTensorType(dtype, y.shape()));
  if (y.byteCount() && !y.data())
    return Status::error("out of memory (" + std::to_string(y.byteCount()) +
                         " bytes)");
  if (Status s = cpu::cast(x.view(), y.view()); !s)
    return s;
  return y;
}

/// Element i of an integer (or bool) tensor, exactly.
int64_t intAt(const HostTensor &t, int64_t i) {
  const void *p = t.data();
  switch (t.dtype()) {
  case DType::I64:
    return static_cast<const int64_t *>(p)[i];
  case DType::I32:
    return static_cast<const int32_t *>(p)[i];
  case DType::I16:
    return static_cast<const int16_t *>(p)[i];
  case DType::I8:
    return static_cast<const int8_t *>(p)[i];
  case DType::U8:
  case DType::Bool:
    return static_cast<const uint8_t *>(p)[i];
  case DType::U16:
    return static_cast<const uint16_t *>(p)[i];
  case DType::U32:
    return static_cast<const uint32_t *>(p)[i];
  case DType::U64:
    return static_cast<int64_t>(static_cast<const uint64_t *>(p)[i]);
  default:
    return static_cast<int64_t>(elementAsDouble(t, i));
  }
}

/// The index of the largest of the `n` values of row `row` (the first
/// maximum; NaN never wins unless the row is all NaN).
int64_t argmaxRow(const HostTensor &t, int64_t row, int64_t n) {
  int64_t best = 0;
  double bestValue = -INFINITY;
  bool found = false;
  for (int64_t k = 0; k < n; ++k) {
    double v = elementAsDouble(t, row * n + k);
    if (!std::isnan(v) && (!found || v > bestValue)) {
      best = k;
      bestValue = v;
      found = true;
    }
  }
  return best;
}

/// Copies samples order[first .. first + count) of `all` ([N, ...]) into
/// `batch` ([B, ...], B >= count); the rows after them are zeroed.
void gather(const HostTensor &all, const std::vector<int64_t> &order,
            int64_t first, int64_t count, HostTensor &batch) {
  const size_t rowBytes =
      all.shape()[0] ? all.byteCount() / static_cast<size_t>(all.shape()[0])
                     : 0;
  const auto *from = static_cast<const unsigned char *>(all.data());
  auto *to = static_cast<unsigned char *>(batch.data());
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(to + i * rowBytes, from + order[first + i] * rowBytes,
                rowBytes);
  size_t used = static_cast<size_t>(count) * rowBytes;
  if (batch.byteCount() > used)
    std::memset(to + used, 0, batch.byteCount() - used);
}

/// splitmix64: the same shuffles on every platform.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (n >= 1), by rejection.
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do
      v = next();
    while (v >= limit);
    return v % n;
  }
};

void shuffle(std::vector<int64_t> &order, Rng &rng) {
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
}

/// Reads a data file whose samples are the rest of `input`'s shape, cast to
/// its dtype. `inputWhat` names the input in messages ("the plan's data
/// input 'x'").
bool loadData(const std::string &path, const PlanBinding &input,
              const std::string &inputWhat, HostTensor &out, Failure &failure) {
  Result<HostTensor> file = readTensorFile(path);
  if (!file) {
    failure = {path, file.message()};
    return false;
  }
  const Shape &shape = file->shape();
  if (shape.empty()) {
    failure = {path, "the data are " +
                         describeTensorType(file->dtype(), shape) +
                         ": they need a first dimension of samples"};
    return false;
  }
  if (tailOf(shape) != tailOf(input.shape)) {
    failure = {path, "the data are " + samplesText(*file) + ", but " +
                         inputWhat + " is " + batchText(input)};
    return false;
  }
  if (shape[0] == 0) {
    failure = {path, "the data have no samples"};
    return false;
  }
  if (file->dtype() == input.dtype) {
    out = file.take();
    return true;
  }
  Result<HostTensor> cast = convert(*file, input.dtype, shape);
  if (!cast) {
    failure = {path, "cannot convert the data to " +
                         std::string(dtypeName(input.dtype)) + ": " +
                         cast.message()};
    return false;
  }
  out = cast.take();
  return true;
}

/// Labels read from a file: the file's tensor and its class ids.
struct Labels {
  HostTensor file;
  int64_t perSample = 0;        ///< elements per sample in the file
  std::vector<int64_t> classes; ///< classification: every element, exactly
};

/// Reads a labels file with `samples` samples; classification labels must be
/// integer class ids in [0, numClasses) (numClasses 0: not checked).
bool loadLabels(const std::string &path, int64_t samples,
                const std::string &dataPath, bool classification,
                int64_t numClasses, const std::string &classesWhat, Labels &out,
                Failure &failure) {
  Result<HostTensor> file = readTensorFile(path);
  if (!file) {
    failure = {path, file.message()};
    return false;
  }
  const Shape &shape = file->shape();
  if (shape.empty() || shape[0] != samples) {
    failure = {path,
               "the labels are " + describeTensorType(file->dtype(), shape) +
                   " (" +
                   (shape.empty() ? std::string("no samples")
                                  : std::to_string(shape[0]) + " samples") +
                   "), but the data (" + dataPath + ") have " +
                   std::to_string(samples) + " samples"};
    return false;
  }
  out.perSample = file->numElements() / samples;
  if (classification) {
    if (isFloat(file->dtype())) {
      failure = {path, "the labels are " +
                           describeTensorType(file->dtype(), shape) +
                           ", but a classification plan needs integer class "
                           "ids (int32 or int64)"};
      return false;
    }
    out.classes.resize(static_cast<size_t>(file->numElements()));
    for (int64_t i = 0; i < file->numElements(); ++i) {
      int64_t c = intAt(*file, i);
      if (numClasses > 0 && (c < 0 || c >= numClasses)) {
        failure = {path, "sample " + std::to_string(i / out.perSample) +
                             " has the label " + std::to_string(c) +
                             ", which is not a class id in [0, " +
                             std::to_string(numClasses) + ") (" + classesWhat +
                             ")"};
        return false;
      }
      out.classes[static_cast<size_t>(i)] = c;
    }
  }
  out.file = file.take();
  return true;
}

/// The labels as the plan's label input takes them, [N, label sample...] in
/// its dtype: class ids or targets converted (the same number of elements
/// per sample), or class ids made one-hot for a float label input whose
/// last dim is the number of classes.
bool labelsForInput(const Labels &labels, const PlanBinding &input,
                    bool classification, const std::string &path,
                    HostTensor &out, Failure &failure) {
  const int64_t samples = labels.file.shape()[0];
  const Shape sample = tailOf(input.shape);
  const int64_t inputPerSample = numElements(sample);
  Shape shape = sample;
  shape.insert(shape.begin(), samples);
  if (classification && isFloat(input.dtype) && !sample.empty() &&
      labels.perSample * sample.back() == inputPerSample &&
      !(labels.perSample == inputPerSample && sample.back() == 1)) {
    // One-hot.
    const int64_t numClasses = sample.back();
    HostTensor hot(DType::F32, shape);
    if (hot.byteCount() && !hot.data()) {
      failure = {path, "out of memory"};
      return false;
    }
    std::memset(hot.data(), 0, hot.byteCount());
    for (size_t i = 0; i < labels.classes.size(); ++i) {
      int64_t c = labels.classes[i];
      if (c < 0 || c >= numClasses) {
        failure = {path, "sample " + std::to_string(i / labels.perSample) +
                             " has the label " + std::to_string(c) +
                             ", which is not a class id in [0, " +
                             std::to_string(numClasses) +
                             ") (the plan's label input " + quoted(input.name) +
                             " is " +
                             describeTensorType(input.dtype, input.shape) +
                             ", one-hot)"};
        return false;
      }
      hot.as<float>()[static_cast<int64_t>(i) * numClasses + c] = 1.0f;
    }
    if (input.dtype == DType::F32) {
      out = std::move(hot);
      return true;
    }
    Result<HostTensor> cast = convert(hot, input.dtype, shape);
    if (!cast) {
      failure = {path, cast.message()};
      return false;
    }
    out = cast.take();
    return true;
  }
  if (labels.perSample != inputPerSample) {
    failure = {
        path, "the labels are " +
                  describeTensorType(labels.file.dtype(), labels.file.shape()) +
                  " (" + std::to_string(labels.perSample) +
                  " per sample), but the plan's label input " +
                  quoted(input.name) + " is " +
                  describeTensorType(input.dtype, input.shape) + " (" +
                  std::to_string(inputPerSample) + " per sample" +
                  (classification && isFloat(input.dtype)
                       ? ", or one class id per row of one-hot labels"
                       : "") +
                  ")"};
    return false;
  }
  Result<HostTensor> cast = convert(labels.file, input.dtype, shape);
  if (!cast) {
    failure = {path, "cannot convert the labels to " +
                         std::string(dtypeName(input.dtype)) + ": " +
                         cast.message()};
    return false;
  }
  out = cast.take();
  return true;
}

/// A progress bar on stderr, redrawn in place (only on a terminal).
class Progress {
public:
  Progress() : enabled_(::isatty(::fileno(stderr)) != 0) {}
  void update(int epoch, int epochs, int64_t done, int64_t total, double loss,
              Clock::time_point start) {
    if (!enabled_)
      return;
    auto now = Clock::now();
    if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100))
      return;
    last_ = now;
    drawn_ = true;
    constexpr int kWidth = 24;
    int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kWidth)
      bar += '>' + std::string(static_cast<size_t>(kWidth - filled - 1), ' ');
    double elapsed = secondsSince(start);
    double eta = done ? elapsed / static_cast<double>(done) *
                            static_cast<double>(total - done)
                      : 0;
    std::fprintf(stderr,
                 "\r\033[Kepoch %d/%d [%s] %lld/%lld  loss %.4g  ETA %.0f s",
                 epoch, epochs, bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), loss, eta);
    std::fflush(stderr);
  }
  void clear() {
    if (enabled_ && drawn_) {
      std::fputs("\r\033[K", stderr);
      std::fflush(stderr);
    }
    drawn_ = false;
  }

private:
  bool enabled_;
  bool drawn_ = false;
  Clock::time_point last_;
};

/// A CSV file written row by row (flushed, so that it can be watched).
class CsvFile {
public:
  bool open(const std::string &path, const char *header, Failure &failure) {
    path_ = path;
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) {
      failure = {path, std::string("cannot create the file: ") +
                           std::strerror(errno)};
      return false;
    }
    return row(header, failure);
  }
  bool row(const std::string &line, Failure &failure) {
    if (!file_)
      return true;
    if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) < 0 ||
        std::fflush(file_) != 0) {
      failure = {path_,
                 std::string("cannot write the file: ") + std::strerror(errno)};
      return false;
    }
    return true;
  }
  bool close(Failure &failure) {
    if (!file_)
      return true;
    bool ok = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok)
      failure = {path_,
                 std::string("cannot write the file: ") + std::strerror(errno)};
    return ok;
  }
  ~CsvFile() {
    if (file_)
      std::fclose(file_);
  }

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

/// printf's `format` of v, "nan" for any NaN (not "-nan").
std::string number(const char *format, double v) {
  if (std::isnan(v))
    return "nan";
  char text[64];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

/// "%.6g", or "" for NaN (a value that does not apply).
std::string csvNumber(double v) {
  if (std::isnan(v))
    return "";
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

/// The index of the output named `name` in the plan's output order.
size_t outputIndex(const Plan &plan, const std::string &name) {
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    if (plan.outputs[i].name == name)
      return i;
  return SIZE_MAX;
}

std::string bindingList(const std::vector<PlanBinding> &list) {
  std::string out;
  for (const PlanBinding &b : list)
    out += (out.empty() ? "" : ", ") + b.name;
  return out.empty() ? "none" : out;
}

/// The inference plan of --eval-plan and its data.
struct EvalSet {
  std::string planPath;
  Plan plan;
  const PlanBinding *input = nullptr;
  size_t output = 0; ///< index in plan.outputs
  int64_t batch = 0;
  HostTensor data; ///< [N, sample...] in the input's dtype
  Labels labels;
  std::vector<double> targets; ///< regression: every label element
  int64_t samples = 0;
  int64_t numClasses = 0;      ///< classification: the output's last dim
  int64_t rowsPerSample = 0;   ///< classification: argmax rows per sample
  int64_t valuesPerSample = 0; ///< regression: output values per sample
};

/// Sets up --eval-plan: picks its input and output, reads and checks the
/// eval data and labels against them.
bool setUpEval(const TrainOptions &opts, const Plan &train, EvalSet &eval,
               Failure &failure) {
  const PlanTrainingInfo &info = *train.training;
  const bool classification = info.isClassification();
  eval.planPath = opts.evalPlanPath;
  Result<Plan> plan = loadPlan(opts.evalPlanPath);
  if (!plan) {
    failure = {opts.evalPlanPath, plan.message()};
    return false;
  }
  eval.plan = plan.take();
  const Plan &p = eval.plan;
  // The input: named like the training plan's data input, or the only one.
  eval.input = p.input(info.dataInput);
  if (!eval.input && p.inputs.size() == 1)
    eval.input = &p.inputs[0];
  if (!eval.input) {
    failure = {opts.evalPlanPath,
               "the eval plan has the inputs " + bindingList(p.inputs) +
                   ": none is named " + quoted(info.dataInput) +
                   " like the training plan's data input, and there is more "
                   "than one"};
    return false;
  }
  if (p.inputs.size() != 1) {
    failure = {opts.evalPlanPath,
               "the eval plan has the inputs " + bindingList(p.inputs) +
                   ": mp-run --train can only feed it one (its data)"};
    return false;
  }
  if (eval.input->shape.empty() || eval.input->shape[0] < 1) {
    failure = {opts.evalPlanPath,
               "the eval plan's input " + quoted(eval.input->name) + " is " +
                   describeTensorType(eval.input->dtype, eval.input->shape) +
                   ": it needs a batch dimension first"};
    return false;
  }
  eval.batch = eval.input->shape[0];
  // The output: named like the training plan's predictions, or the only one.
  eval.output = SIZE_MAX;
  if (!info.predictionOutput.empty())
    eval.output = outputIndex(p, info.predictionOutput);
  if (eval.output == SIZE_MAX && p.outputs.size() == 1)
    eval.output = 0;
  if (eval.output == SIZE_MAX) {
    failure = {opts.evalPlanPath,
               "the eval plan has the outputs " + bindingList(p.outputs) +
                   ": none is named " +
                   quoted(info.predictionOutput.empty()
                              ? std::string("<no prediction_output>")
                              : info.predictionOutput) +
                   " like the training plan's predictions, and there is "
                   "more than one"};
    return false;
  }
  const PlanBinding &out = p.outputs[eval.output];
  const int64_t outElements = numElements(out.shape);
  if (out.shape.empty() || outElements % eval.batch != 0 ||
      (classification && out.shape.back() < 1)) {
    failure = {opts.evalPlanPath,
               "the eval plan's output " + quoted(out.name) + " is " +
                   describeTensorType(out.dtype, out.shape) +
                   ", which does not hold a prediction for each of its " +
                   std::to_string(eval.batch) + " samples"};
    return false;
  }
  if (!loadData(opts.evalDataPath, *eval.input,
                "the eval plan's input " + quoted(eval.input->name), eval.data,
                failure))
    return false;
  eval.samples = eval.data.shape()[0];
  std::string classesWhat;
  if (classification) {
    eval.numClasses = out.shape.back();
    eval.rowsPerSample = outElements / eval.numClasses / eval.batch;
    classesWhat = "the eval plan's output " + quoted(out.name) + " has " +
                  std::to_string(eval.numClasses) + " classes";
  } else {
    eval.valuesPerSample = outElements / eval.batch;
  }
  if (!loadLabels(opts.evalLabelsPath, eval.samples, opts.evalDataPath,
                  classification, eval.numClasses, classesWhat, eval.labels,
                  failure))
    return false;
  const int64_t wanted =
      classification ? eval.rowsPerSample : eval.valuesPerSample;
  if (eval.labels.perSample != wanted) {
    failure = {
        opts.evalLabelsPath,
        "the labels are " +
            describeTensorType(eval.labels.file.dtype(),
                               eval.labels.file.shape()) +
            " (" + std::to_string(eval.labels.perSample) +
            " per sample), but the eval plan's output " + quoted(out.name) +
            " is " + describeTensorType(out.dtype, out.shape) + " (" +
            std::to_string(wanted) + (classification ? " class id" : " value") +
            (wanted == 1 ? "" : "s") + " per sample)"};
    return false;
  }
  if (!classification) {
    eval.targets.resize(static_cast<size_t>(eval.labels.file.numElements()));
    for (int64_t i = 0; i < eval.labels.file.numElements(); ++i)
      eval.targets[static_cast<size_t>(i)] =
          elementAsDouble(eval.labels.file, i);
  }
  return true;
}

/// The eval plan with the training state as its weights (an error when no
/// weight gets any: it would evaluate its own weights).
/// The eval plan runs on the training plan's backend (Exec).
template <typename Exec>
Result<Exec> evalExecutor(const Exec &train, const EvalSet &eval,
                          size_t *copied = nullptr) {
  Plan plan = eval.plan;
  size_t n = 0;
  if (Status s = train.copyStateIntoWeights(plan, &n); !s)
    return Status::error("cannot take the training state: " + s.message());
  if (n == 0)
    return Status::error(
        "none of the eval plan's " + std::to_string(plan.weights.size()) +
        " weights is named like a state of the training plan, so it would "
        "not evaluate the model being trained");
  if (copied)
    *copied = n;
  return Exec::create(std::move(plan), eval.planPath, train.options());
}

/// Runs the eval set through the eval plan in its batches (the last one
/// padded with zeros, whose predictions are ignored): the accuracy
/// (classification) or the mean squared error (regression).
template <typename Exec>
Result<double> evaluate(const Exec &train, const EvalSet &eval,
                        bool classification) {
  Result<Exec> exec = evalExecutor(train, eval);
  if (!exec)
    return exec.status();
  HostTensor batch(eval.input->dtype, eval.input->shape);
  std::vector<int64_t> order(static_cast<size_t>(eval.samples));
  for (int64_t i = 0; i < eval.samples; ++i)
    order[static_cast<size_t>(i)] = i;
  int64_t correct = 0, counted = 0;
  double squares = 0;
  for (int64_t first = 0; first < eval.samples; first += eval.batch) {
    const int64_t count = std::min(eval.batch, eval.samples - first);
    gather(eval.data, order, first, count, batch);
    Result<std::vector<NamedTensor>> out =
        exec->run({{eval.input->name, batch.view()}});
    if (!out)
      return out.status();
    const HostTensor &pred = (*out)[eval.output].tensor;
    if (classification) {
      const int64_t rows = count * eval.rowsPerSample;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t label =
            eval.labels
                .classes[static_cast<size_t>(first * eval.rowsPerSample + r)];
        correct += argmaxRow(pred, r, eval.numClasses) == label;
        ++counted;
      }
    } else {
      const int64_t values = count * eval.valuesPerSample;
      for (int64_t v = 0; v < values; ++v) {
        double d =
            elementAsDouble(pred, v) -
            eval.targets[static_cast<size_t>(first * eval.valuesPerSample + v)];
        squares += d * d;
        ++counted;
      }
    }
  }
  if (counted == 0)
    return NAN;
  return classification ? static_cast<double>(correct) / counted
                        : squares / counted;
}

template <typename Exec>
int train(const TrainOptions &opts, Ranks &ranks, Failure &failure, Exec exec);

/// --simulate-failure on this rank, now: "exit" ends the process at once
/// (as a crash would), "hang" stops answering, "corrupt" changes the first
/// master weight (its first element + 1), which the next agreement check
/// finds.
template <typename Exec>
Status simulateFailure(const std::string &mode, const Plan &plan, Exec &exec) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (mode == "exit")
    std::_Exit(3);
  if (mode == "hang")
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
  Result<std::vector<NamedTensor>> state = exec.readState();
  if (!state)
    return state.status();
  const std::set<std::string> masters = masterWeightNames(plan);
  for (NamedTensor &t : *state)
    if (masters.count(t.name) && t.tensor.dtype() == DType::F32 &&
        t.tensor.numElements() > 0) {
      static_cast<float *>(t.tensor.data())[0] += 1.0f;
      return exec.writeState(t.name, t.tensor.view());
    }
  return Status::error("--simulate-failure=...:corrupt: the plan has no f32 "
                       "master weight");
}

/// --timing of a data-parallel run: what its steps' all-reduces moved.
void printCommunication(const CommunicationStats &steps, int ranks,
                        size_t runs) {
  if (runs == 0)
    return;
  const double n = static_cast<double>(runs);
  std::printf("communication (%d rank%s): %.3g all-reduces, %.0f bytes "
              "reduced, %.3f ms per step (%.1f MB/s)\n",
              ranks, ranks == 1 ? "" : "s", steps.collectives / n,
              steps.bytes / n, 1e3 * steps.seconds / n,
              steps.seconds > 0 ? steps.bytes / steps.seconds / 1e6 : 0.0);
}

int trainOnRanks(const TrainOptions &opts, Ranks &ranks, Failure &failure) {
  auto fail = [&](std::string file, std::string message) {
    failure = {std::move(file), std::move(message)};
    return 2;
  };
  const std::string &planPath = opts.planPath;

  // The plan.
  Result<Plan> loaded = loadPlan(planPath);
  if (!loaded)
    return fail(planPath, loaded.message());
  if (!loaded->training)
    return fail(planPath,
                "not a training plan: it has no training information "
                "(mp-opt --mp-training ... --emit=plan makes training plans)");
  if (!fillWeights(*loaded, planPath, opts.weightsPath, opts.uncheckedWeights,
                   failure))
    return 2;
  if (ranks.distributed() && !isDataParallel(*loaded))
    return fail(planPath,
                "not a data-parallel plan, so the " +
                    std::to_string(ranks.size()) +
                    " ranks would each train a model of their own: compile "
                    "it with --mp-training=\"... data-parallel=true\"");
  if (opts.printPlan && ranks.isRoot())
    printPlan(*loaded);
#if MP_HAVE_CUDA_BACKEND
  if (opts.backend == "cuda") {
    CudaExecutorOptions options = cudaExecutorOptions(opts.cudaBatchNorm);
    // One GPU per rank: the ranks on a machine take its GPUs in turn; NCCL
    // joins them (bootstrapped through MPI).
    options.communicator = ranks.communicator();
    if (ranks.distributed())
      if (int gpus = cudaDeviceCount(); gpus > 0)
        options.device = launcherLocalRank() % gpus;
    Result<CudaExecutor> created =
        CudaExecutor::create(loaded.take(), planPath, options);
    if (!created)
      return fail(planPath, created.message());
    return train(opts, ranks, failure, created.take());
  }
#endif
  // Ranks on one machine share its cores: without --threads, each takes
  // its share (N ranks of T threads on fewer cores spin and wait on each
  // other).
  int threads = opts.threads;
  if (threads == 0 && ranks.distributed())
    threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                        launcherLocalSize());
  CpuExecutorOptions options = cpuExecutorOptions(opts.backend, threads);
  options.communicator = ranks.communicator();
  Result<CpuExecutor> created =
      CpuExecutor::create(loaded.take(), planPath, options);
  if (!created)
    return fail(planPath, created.message());
  return train(opts, ranks, failure, created.take());
}

} // namespace

int runTraining(const TrainOptions &opts, int (*report)(const Failure &)) {
  Result<Ranks> ranks = Ranks::start(opts.collectiveTimeout);
  if (!ranks)
    return report({"", ranks.message()});
  Failure failure;
  const int rc = trainOnRanks(opts, *ranks, failure);
  if (rc == 0) {
    ranks->finish();
    return 0;
  }
  if (ranks->distributed())
    failure.message =
        "rank " + std::to_string(ranks->rank()) + ": " + failure.message;
  report(failure);
  std::fflush(stdout);
  std::fflush(stderr);
  // The other ranks would wait for this one in their next collective.
  ranks->abortAll(rc);
  return rc;
}

namespace {

/// The training loop on a created executor (CpuExecutor or CudaExecutor).
template <typename Exec>
int train(const TrainOptions &opts, Ranks &ranks, Failure &failure, Exec exec) {
  auto fail = [&](std::string file, std::string message) {
    failure = {std::move(file), std::move(message)};
    return 2;
  };
  const bool root = ranks.isRoot();
  const std::string &planPath = opts.planPath;
  const Plan &plan = exec.plan();
  const PlanTrainingInfo &info = *plan.training;
  const bool classification = info.isClassification();
  const PlanBinding &dataInput = *plan.input(info.dataInput);
  const PlanBinding &labelInput = *plan.input(info.labelInput);
  for (const PlanBinding &b : plan.inputs)
    if (b.name != info.dataInput && b.name != info.labelInput)
      return fail(planPath, "the plan has the input " + quoted(b.name) +
                                " besides its data input " +
                                quoted(info.dataInput) + " and label input " +
                                quoted(info.labelInput) +
                                ": mp-run --train cannot feed it");
  const int64_t batch = dataInput.shape[0];
  if (opts.batch > 0 && opts.batch != batch)
    return fail(planPath,
                "--batch " + std::to_string(opts.batch) +
                    ": the plan was compiled for batches of " +
                    std::to_string(batch) + " (its data input " +
                    quoted(dataInput.name) + " is " +
                    describeTensorType(dataInput.dtype, dataInput.shape) + ")");
  const size_t lossIndex = outputIndex(plan, info.lossOutput);
  const size_t predIndex = info.predictionOutput.empty()
                               ? SIZE_MAX
                               : outputIndex(plan, info.predictionOutput);
  const size_t skippedIndex = info.skippedOutput.empty()
                                  ? SIZE_MAX
                                  : outputIndex(plan, info.skippedOutput);
  const size_t scaleIndex =
      info.scaleOutput.empty() ? SIZE_MAX : outputIndex(plan, info.scaleOutput);

  // Classes: the predictions' last dim.
  int64_t numClasses = 0;
  std::string classesWhat;
  if (classification && predIndex != SIZE_MAX &&
      !plan.outputs[predIndex].shape.empty()) {
    numClasses = plan.outputs[predIndex].shape.back();
    classesWhat = "the plan's predictions " + quoted(info.predictionOutput) +
                  " have " + std::to_string(numClasses) + " classes";
  }

  // The data and labels.
  HostTensor data;
  if (!loadData(opts.dataPath, dataInput,
                "the plan's data input " + quoted(dataInput.name), data,
                failure))
    return 2;
  const int64_t samples = data.shape()[0];
  // N ranks run one global batch of N * batch samples per step, each its
  // own slice of it.
  const int64_t globalBatch = batch * ranks.size();
  if (samples < globalBatch)
    return fail(
        opts.dataPath,
        "the data have " + std::to_string(samples) +
            " samples, fewer than one batch of " + std::to_string(globalBatch) +
            (ranks.distributed()
                 ? " (" + std::to_string(ranks.size()) + " ranks of " +
                       std::to_string(batch) + ")"
                 : std::string()) +
            " (the plan's data input " + quoted(dataInput.name) + " is " +
            describeTensorType(dataInput.dtype, dataInput.shape) + ")");
  Labels labels;
  HostTensor labelData;
  if (!loadLabels(opts.labelsPath, samples, opts.dataPath, classification,
                  numClasses, classesWhat, labels, failure) ||
      !labelsForInput(labels, labelInput, classification, opts.labelsPath,
                      labelData, failure))
    return 2;

  // Training accuracy: the argmax over the predictions' last dim, one row
  // per class id of the labels.
  bool accuracy = false;
  if (classification && predIndex != SIZE_MAX) {
    const PlanBinding &pred = plan.outputs[predIndex];
    const int64_t rows =
        numClasses > 0 ? numElements(pred.shape) / numClasses : 0;
    accuracy = numClasses > 0 && rows == batch * labels.perSample;
    if (!accuracy && root)
      std::fprintf(stderr,
                   "mp-run: warning: the plan's predictions %s are %s, which "
                   "is not one row of class scores per label (%lld per "
                   "sample): the training accuracy is not reported\n",
                   quoted(pred.name).c_str(),
                   describeTensorType(pred.dtype, pred.shape).c_str(),
                   static_cast<long long>(labels.perSample));
  }

  // The eval set: checked, and the state copied into the eval plan once,
  // before training.
  std::optional<EvalSet> eval;
  size_t evalWeightsCopied = 0;
  if (!opts.evalPlanPath.empty() && root) {
    eval.emplace();
    if (!setUpEval(opts, plan, *eval, failure))
      return 2;
    Result<Exec> probe = evalExecutor(exec, *eval, &evalWeightsCopied);
    if (!probe)
      return fail(opts.evalPlanPath, probe.message());
  }

  // --save, --checkpoint, --state-dir: fail now rather than after
  // training.
  for (const std::string &path : {opts.savePath, opts.checkpointPath}) {
    if (path.empty() || !root)
      continue;
    std::error_code ec;
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty())
      dir = ".";
    if (!fs::is_directory(dir, ec))
      return fail(path, "cannot save the trained plan there: " +
                            quoted(dir.string()) + " is not a directory");
    if (fs::is_directory(path, ec))
      return fail(path, "cannot save the trained plan: it is a directory");
  }
  if (!opts.stateDir.empty() && root) {
    std::error_code ec;
    if (!fs::is_directory(opts.stateDir, ec))
      return fail(opts.stateDir, "--state-dir: not a directory");
  }

  // --resume: where the checkpoint's run stopped.
  int firstEpoch = 1;
  if (opts.resume) {
    if (info.epochsDone == 0)
      return fail(planPath, "--resume: the plan is no checkpoint of a run "
                            "(its training information records no epochs "
                            "done; mp-run --train --checkpoint writes them)");
    if (static_cast<int64_t>(info.epochsDone) >= opts.epochs)
      return fail(planPath, "--resume: the checkpoint's run has done " +
                                std::to_string(info.epochsDone) + " epoch" +
                                (info.epochsDone == 1 ? "" : "s") +
                                " already, --epochs is " +
                                std::to_string(opts.epochs));
    firstEpoch = static_cast<int>(info.epochsDone) + 1;
  }

  CsvFile log, stepLog;
  if (!opts.logPath.empty() && root &&
      !log.open(opts.logPath,
                "epoch,train_loss,train_accuracy,eval_accuracy,skipped_steps,"
                "loss_scale,seconds,eval_mse",
                failure))
    return 2;
  if (!opts.stepLogPath.empty() &&
      !stepLog.open(ranks.perRankPath(opts.stepLogPath),
                    "step,loss,skipped,loss_scale", failure))
    return 2;

  const int64_t steps = samples / globalBatch;
  const int64_t leftOver = samples - steps * globalBatch;
  if (root)
    std::printf("train: model '%s', %s, %lld samples in %lld batches of "
                "%lld, %d epoch%s\n",
                plan.modelName.c_str(), info.task.c_str(),
                static_cast<long long>(samples), static_cast<long long>(steps),
                static_cast<long long>(globalBatch), opts.epochs,
                opts.epochs == 1 ? "" : "s");
  if (root && ranks.distributed())
    std::printf("data parallel: %d ranks (%s), %lld samples each per step\n",
                ranks.size(), ranks.communicator()->describe().c_str(),
                static_cast<long long>(batch));
  if (root && opts.resume)
    std::printf("resuming after epoch %d of %d\n", firstEpoch - 1, opts.epochs);
  if (eval)
    std::printf("eval: model '%s', %lld samples in batches of %lld; %zu of "
                "its %zu weights come from the training state\n",
                eval->plan.modelName.c_str(),
                static_cast<long long>(eval->samples),
                static_cast<long long>(eval->batch), evalWeightsCopied,
                eval->plan.weights.size());
  std::fflush(stdout);
  if (leftOver && root)
    std::fprintf(stderr,
                 "mp-run: note: the last %lld samples do not fill a batch "
                 "of %lld and are left out of each epoch%s\n",
                 static_cast<long long>(leftOver),
                 static_cast<long long>(globalBatch),
                 opts.shuffle ? " (different ones each epoch: the data are "
                                "shuffled)"
                              : "");
  std::fflush(stdout);

  exec.setTiming(opts.timing);
  HostTensor dataBatch(dataInput.dtype, dataInput.shape);
  HostTensor labelBatch(labelInput.dtype, labelInput.shape);
  if ((dataBatch.byteCount() && !dataBatch.data()) ||
      (labelBatch.byteCount() && !labelBatch.data()))
    return fail("", "out of memory for a batch");
  std::vector<int64_t> order(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i)
    order[static_cast<size_t>(i)] = i;
  Rng rng{opts.seed};
  Progress progress;
  int64_t globalStep = 0;
  double scale = NAN;
  // A resumed run sees the data in the order the uninterrupted one does.
  for (int epoch = 1; epoch < firstEpoch; ++epoch) {
    if (opts.shuffle)
      shuffle(order, rng);
    globalStep += steps;
  }
  // The ranks start from the same weights (the same plan) and must stay
  // so: checked before the first step and after every epoch.
  auto checkRanksAgree = [&](const std::string &when) -> bool {
    if (!ranks.distributed())
      return true;
    Result<std::vector<NamedTensor>> state = exec.readState();
    if (!state) {
      fail(planPath, state.message());
      return false;
    }
    uint64_t low = 0, high = 0;
    Result<bool> same =
        ranks.agree(masterWeightsChecksum(plan, *state), low, high);
    if (!same) {
      fail(planPath,
           when + ": comparing the ranks' master weights: " + same.message());
      return false;
    }
    if (!*same) {
      char text[96];
      std::snprintf(text, sizeof text, "%016llx to %016llx",
                    static_cast<unsigned long long>(low),
                    static_cast<unsigned long long>(high));
      fail(planPath, when + ": the ranks' master weights differ (checksums " +
                         text +
                         "): their training has diverged, so it "
                         "stops here");
      return false;
    }
    return true;
  };
  if (!checkRanksAgree("before the first step"))
    return 2;
  CommunicationStats stepCommunication; // the steps' collectives only

  for (int epoch = firstEpoch; epoch <= opts.epochs; ++epoch) {
    const Clock::time_point start = Clock::now();
    if (opts.shuffle)
      shuffle(order, rng);
    double lossSum = 0;
    int64_t lossCount = 0, skippedSteps = 0, correct = 0, counted = 0;
    for (int64_t step = 0; step < steps; ++step) {
      if (ranks.rank() == opts.failRank && globalStep + 1 == opts.failStep) {
        if (Status s = simulateFailure(opts.failMode, plan, exec); !s)
          return fail(planPath, s.message());
      }
      const int64_t first = step * globalBatch + ranks.rank() * batch;
      gather(data, order, first, batch, dataBatch);
      gather(labelData, order, first, batch, labelBatch);
      Status s = exec.bindInputs({{dataInput.name, dataBatch.view()},
                                  {labelInput.name, labelBatch.view()}});
      const CommunicationStats before = ranks.communicator()->stats();
      if (s)
        s = exec.execute();
      const CommunicationStats &after = ranks.communicator()->stats();
      stepCommunication.collectives += after.collectives - before.collectives;
      stepCommunication.bytes += after.bytes - before.bytes;
      stepCommunication.seconds += after.seconds - before.seconds;
      if (!s) {
        progress.clear();
        return fail(planPath, "epoch " + std::to_string(epoch) + ", step " +
                                  std::to_string(step + 1) + ": " +
                                  s.message());
      }
      Result<std::vector<NamedTensor>> outputs = exec.readOutputs();
      if (!outputs) {
        progress.clear();
        return fail(planPath, outputs.message());
      }
      const double loss = elementAsDouble((*outputs)[lossIndex].tensor, 0);
      const bool skipped =
          skippedIndex != SIZE_MAX &&
          elementAsDouble((*outputs)[skippedIndex].tensor, 0) != 0;
      if (scaleIndex != SIZE_MAX)
        scale = elementAsDouble((*outputs)[scaleIndex].tensor, 0);
      if (skipped) {
        ++skippedSteps;
      } else {
        lossSum += loss;
        ++lossCount;
      }
      if (accuracy) {
        const HostTensor &pred = (*outputs)[predIndex].tensor;
        const int64_t per = labels.perSample;
        for (int64_t r = 0; r < batch * per; ++r) {
          int64_t sample = order[static_cast<size_t>(first + r / per)];
          int64_t label =
              labels.classes[static_cast<size_t>(sample * per + r % per)];
          correct += argmaxRow(pred, r, numClasses) == label;
          ++counted;
        }
      }
      ++globalStep;
      if (!stepLog.row(std::to_string(globalStep) + "," + number("%.6g", loss) +
                           "," + (skipped ? "1" : "0") + "," + csvNumber(scale),
                       failure)) {
        progress.clear();
        return 2;
      }
      if (root)
        progress.update(epoch, opts.epochs, step + 1, steps,
                        lossCount ? lossSum / lossCount : NAN, start);
    }
    progress.clear();

    // The epoch's figures over all ranks (each rank's steps are skipped
    // together: the found-inf flag is agreed on).
    std::vector<double> totals{lossSum, static_cast<double>(lossCount),
                               static_cast<double>(correct),
                               static_cast<double>(counted)};
    if (ranks.distributed()) {
      if (Status s = ranks.sum(totals); !s)
        return fail(planPath,
                    "epoch " + std::to_string(epoch) +
                        ": summing the ranks' losses: " + s.message());
      lossSum = totals[0];
      lossCount = static_cast<int64_t>(totals[1]);
      correct = static_cast<int64_t>(totals[2]);
      counted = static_cast<int64_t>(totals[3]);
    }
    if (!checkRanksAgree("after epoch " + std::to_string(epoch)))
      return 2;
    const double trainLoss = lossCount ? lossSum / lossCount : NAN;
    const double trainAccuracy =
        accuracy && counted ? static_cast<double>(correct) / counted : NAN;
    double evalMetric = NAN;
    if (eval) {
      Result<double> metric = evaluate(exec, *eval, classification);
      if (!metric)
        return fail(opts.evalPlanPath,
                    "epoch " + std::to_string(epoch) + ": " + metric.message());
      evalMetric = *metric;
    }
    const double seconds = secondsSince(start);

    std::string line =
        "epoch " + std::to_string(epoch) + "/" + std::to_string(opts.epochs);
    line += "  loss " + number("%.4g", trainLoss);
    if (!std::isnan(trainAccuracy))
      line += "  train acc " + number("%.2f", 100 * trainAccuracy) + "%";
    if (eval)
      line += classification
                  ? "  eval acc " + number("%.2f", 100 * evalMetric) + "%"
                  : "  eval mse " + number("%.4g", evalMetric);
    if (skippedIndex != SIZE_MAX)
      line += "  skipped " + std::to_string(skippedSteps);
    if (scaleIndex != SIZE_MAX)
      line += "  scale " + number("%g", scale);
    line += "  " + number("%.2f", seconds) + " s";
    if (root)
      std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    if (!log.row(std::to_string(epoch) + "," + number("%.6g", trainLoss) + "," +
                     csvNumber(trainAccuracy) + "," +
                     csvNumber(classification ? evalMetric : NAN) + "," +
                     std::to_string(skippedSteps) + "," + csvNumber(scale) +
                     "," + csvNumber(seconds) + "," +
                     csvNumber(classification ? NAN : evalMetric),
                 failure))
      return 2;
    // --checkpoint: the run so far, which --resume continues.
    if (!opts.checkpointPath.empty() && root) {
      Result<Plan> checkpoint = exec.planWithState();
      if (!checkpoint)
        return fail(opts.checkpointPath, checkpoint.message());
      checkpoint->training->epochsDone = static_cast<uint32_t>(epoch);
      if (Status s = savePlan(*checkpoint, opts.checkpointPath); !s)
        return fail(opts.checkpointPath, s.message());
    }
  }
  if (!log.close(failure) || !stepLog.close(failure))
    return 2;

  if (opts.timing && root) {
    std::fputs(timingReport(exec, opts.timingCalls).c_str(), stdout);
    if (isDataParallel(plan))
      printCommunication(stepCommunication, ranks.size(),
                         exec.callTimes().runs);
  }
  if (!opts.stateDir.empty() && root) {
    Result<std::vector<NamedTensor>> state = exec.readState();
    if (!state)
      return fail(opts.stateDir, state.message());
    for (const NamedTensor &t : *state) {
      std::string file = t.name;
      std::replace(file.begin(), file.end(), '/', '_');
      const std::string path =
          (fs::path(opts.stateDir) / (file + ".npy")).string();
      if (Status s = writeNpy(path, t.tensor.view()); !s)
        return fail(path, s.message());
    }
  }
  if (!opts.savePath.empty() && root) {
    Result<Plan> trained = exec.planWithState();
    if (!trained)
      return fail(opts.savePath, trained.message());
    if (Status s = savePlan(*trained, opts.savePath); !s)
      return fail(opts.savePath, s.message());
    std::printf("saved the trained plan to %s\n", opts.savePath.c_str());
  }
  return 0;
}

} // namespace

} // namespace mp::tools
