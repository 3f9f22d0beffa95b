//===- Executor.cpp - runs a plan on the CPU backend ----------------------===//
#include "mp/Runtime/Executor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include <unistd.h>

namespace mp::rt {

namespace {

/// The arena is at least 256-byte aligned (docs/plan-format.md: the compiler
/// places buffers at multiples of 256 for cuBLASLt/cuDNN; the CPU keeps it).
constexpr size_t kArenaAlignment = 256;

/// A zeroed block of at least `size` bytes (at least one alignment unit, so
/// that empty arenas still have a valid address), or null.
void *allocateZeroed(uint64_t size) {
  if (size > std::numeric_limits<size_t>::max() - kArenaAlignment)
    return nullptr;
  size_t rounded =
      std::max<size_t>(kArenaAlignment, (size + kArenaAlignment - 1) /
                                            kArenaAlignment * kArenaAlignment);
  void *p = std::aligned_alloc(kArenaAlignment, rounded);
  if (p)
    std::memset(p, 0, rounded);
  return p;
}

/// The machine's physical memory in bytes (0 when unknown).
uint64_t physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

std::string quoted(const std::string &s) { return "'" + s + "'"; }

std::string inputNames(const Plan &plan) {
  std::string out;
  for (const PlanBinding &b : plan.inputs)
    out += (out.empty() ? "" : ", ") + b.name;
  return out.empty() ? "none" : out;
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

std::string describeTensorType(DType dtype, const Shape &shape) {
  std::string out = std::string(dtypeName(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

//===----------------------------------------------------------------------===//
// CallTimes
//===----------------------------------------------------------------------===//

double CallTimes::msPerRun() const {
  if (runs == 0)
    return 0;
  return std::accumulate(totalMs.begin(), totalMs.end(), 0.0) /
         static_cast<double>(runs);
}

std::vector<CallTimes::KindRow> CallTimes::byKind(const Plan &plan) const {
  std::map<std::string, KindRow> rows;
  double perRun = msPerRun();
  for (size_t i = 0; i < totalMs.size() && i < plan.calls.size(); ++i) {
    KindRow &row = rows[plan.calls[i].kind];
    row.kind = plan.calls[i].kind;
    ++row.calls;
    row.msPerRun += runs ? totalMs[i] / static_cast<double>(runs) : 0;
  }
  std::vector<KindRow> out;
  for (auto &[kind, row] : rows) {
    row.percent = perRun > 0 ? 100.0 * row.msPerRun / perRun : 0;
    out.push_back(row);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KindRow &a, const KindRow &b) {
                     return a.msPerRun > b.msPerRun;
                   });
  return out;
}

std::vector<size_t> CallTimes::slowest(size_t n) const {
  std::vector<size_t> order(totalMs.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return totalMs[a] > totalMs[b]; });
  order.resize(std::min(n, order.size()));
  return order;
}

std::string CallTimes::format(const Plan &plan, size_t top) const {
  std::string out;
  char line[512];
  double perRun = msPerRun();
  std::snprintf(line, sizeof line, "time per run by call kind (%zu run%s):\n",
                runs, runs == 1 ? "" : "s");
  out += line;
  std::snprintf(line, sizeof line, "  %-32s %6s %12s %7s\n", "kind", "calls",
                "total ms", "%");
  out += line;
  size_t calls = 0;
  for (const KindRow &row : byKind(plan)) {
    std::snprintf(line, sizeof line, "  %-32s %6zu %12.3f %6.1f%%\n",
                  row.kind.c_str(), row.calls, row.msPerRun, row.percent);
    out += line;
    calls += row.calls;
  }
  std::snprintf(line, sizeof line, "  %-32s %6zu %12.3f %6.1f%%\n", "total",
                calls, perRun, perRun > 0 ? 100.0 : 0.0);
  out += line;
  std::vector<size_t> worst = slowest(top);
  if (worst.empty())
    return out;
  std::snprintf(line, sizeof line, "slowest calls:\n  %-56s %12s %7s\n", "call",
                "ms", "%");
  out += line;
  for (size_t i : worst) {
    double ms = runs ? totalMs[i] / static_cast<double>(runs) : 0;
    std::string what = i < plan.calls.size() ? plan.calls[i].describe(i)
                                             : "call #" + std::to_string(i);
    std::snprintf(line, sizeof line, "  %-56s %12.3f %6.1f%%\n", what.c_str(),
                  ms, perRun > 0 ? 100.0 * ms / perRun : 0.0);
    out += line;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// CpuExecutor
//===----------------------------------------------------------------------===//

void CpuExecutor::AlignedFree::operator()(void *p) const { std::free(p); }

Result<CpuExecutor> CpuExecutor::create(Plan plan, const std::string &name) {
  // After validatePlan every buffer lies in the arena or in its weight and
  // every call names existing buffers: the views below are in bounds.
  if (Status s = validatePlan(plan, name); !s)
    return s;
  const cpu::CallTable &table = cpu::cpuCallTable();
  CpuExecutor exec;
  exec.prepared_.reserve(plan.calls.size());
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    Prepared prepared;
    prepared.fn = table.find(call.kind);
    if (!prepared.fn)
      return Status::error(call.describe(i) + ": no CPU implementation of " +
                           quoted(call.kind));
    exec.prepared_.push_back(std::move(prepared));
  }

  // A plan (hostile or made for a bigger machine) may declare more memory
  // than there is: say so instead of being killed by the OOM killer while
  // the arena is zeroed.
  uint64_t workspace = plan.maxWorkspaceSize();
  uint64_t physical = physicalMemoryBytes();
  if (physical && (plan.arenaSize > physical || workspace > physical ||
                   plan.arenaSize + workspace > physical))
    return Status::error(
        name + ": the plan needs " + std::to_string(plan.arenaSize) +
        " bytes of activation arena and " + std::to_string(workspace) +
        " bytes of workspace, more than this machine's " +
        std::to_string(physical) + " bytes of memory");
  exec.arena_.reset(allocateZeroed(plan.arenaSize));
  if (!exec.arena_)
    return Status::error(name + ": cannot allocate the activation arena of " +
                         std::to_string(plan.arenaSize) + " bytes");
  exec.workspace_.reset(allocateZeroed(workspace));
  if (!exec.workspace_)
    return Status::error(name + ": cannot allocate the workspace of " +
                         std::to_string(workspace) + " bytes");
  exec.workspaceSize_ = static_cast<size_t>(workspace);

  auto *arena = static_cast<unsigned char *>(exec.arena_.get());
  auto viewOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    TensorView v;
    v.dtype = b.dtype;
    v.shape = b.shape;
    // Weights are read-only; the const is cast away only because operand
    // views share the TensorView type with results (which are never weights).
    v.data = b.storage == BufferStorage::Arena
                 ? static_cast<void *>(arena + b.offset)
                 : const_cast<void *>(plan.weights[b.weight].data);
    return v;
  };
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    for (uint32_t id : plan.calls[i].operands)
      exec.prepared_[i].operands.push_back(viewOf(id));
    for (uint32_t id : plan.calls[i].results)
      exec.prepared_[i].results.push_back(viewOf(id));
  }
  exec.plan_ = std::move(plan);
  exec.name_ = name;
  exec.times_.totalMs.assign(exec.plan_.calls.size(), 0.0);
  return exec;
}

Status CpuExecutor::bindInputs(const std::vector<NamedView> &inputs) {
  std::vector<bool> bound(plan_.inputs.size(), false);
  auto *arena = static_cast<unsigned char *>(arena_.get());
  for (const NamedView &input : inputs) {
    auto it = std::find_if(
        plan_.inputs.begin(), plan_.inputs.end(),
        [&](const PlanBinding &b) { return b.name == input.name; });
    if (it == plan_.inputs.end())
      return Status::error("unknown input " + quoted(input.name) +
                           " (the plan's inputs: " + inputNames(plan_) + ")");
    size_t index = static_cast<size_t>(it - plan_.inputs.begin());
    if (bound[index])
      return Status::error("input " + quoted(input.name) + " is given twice");
    bound[index] = true;
    const PlanBinding &binding = *it;
    if (input.view.dtype != binding.dtype || input.view.shape != binding.shape)
      return Status::error(
          "input " + quoted(input.name) + ": expected " +
          describeTensorType(binding.dtype, binding.shape) + ", got " +
          describeTensorType(input.view.dtype, input.view.shape));
    size_t bytes = input.view.byteCount();
    if (bytes > 0 && !input.view.data)
      return Status::error("input " + quoted(input.name) + " has no data");
    const PlanBuffer &buffer = *plan_.buffer(binding.buffer);
    if (bytes > 0)
      std::memcpy(arena + buffer.offset, input.view.data, bytes);
  }
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i])
      return Status::error(
          "input " + quoted(plan_.inputs[i].name) + " is missing (expected " +
          describeTensorType(plan_.inputs[i].dtype, plan_.inputs[i].shape) +
          ")");
  return Status::ok();
}

Status CpuExecutor::execute() {
  for (size_t i = 0; i < prepared_.size(); ++i) {
    const Prepared &p = prepared_[i];
    cpu::CallArgs args{plan_.calls[i], p.operands, p.results, workspace_.get(),
                       workspaceSize_};
    auto start = std::chrono::steady_clock::now();
    Status s = p.fn(args);
    if (timing_)
      times_.totalMs[i] += msSince(start);
    if (!s)
      return Status::error(plan_.calls[i].describe(i) + ": " + s.message());
  }
  if (timing_)
    ++times_.runs;
  return Status::ok();
}

Result<std::vector<NamedTensor>> CpuExecutor::readOutputs() const {
  std::vector<NamedTensor> outputs;
  outputs.reserve(plan_.outputs.size());
  const auto *arena = static_cast<const unsigned char *>(arena_.get());
  for (const PlanBinding &binding : plan_.outputs) {
    const PlanBuffer &buffer = *plan_.buffer(binding.buffer);
    NamedTensor out{binding.name, HostTensor(binding.dtype, binding.shape)};
    if (out.tensor.byteCount() > 0 && !out.tensor.data())
      return Status::error("output " + quoted(binding.name) +
                           ": cannot allocate " +
                           std::to_string(out.tensor.byteCount()) + " bytes");
    const void *source = buffer.storage == BufferStorage::Arena
                             ? static_cast<const void *>(arena + buffer.offset)
                             : plan_.weights[buffer.weight].data;
    if (out.tensor.byteCount() > 0)
      std::memcpy(out.tensor.data(), source, out.tensor.byteCount());
    outputs.push_back(std::move(out));
  }
  return outputs;
}

Result<std::vector<NamedTensor>>
CpuExecutor::run(const std::vector<NamedView> &inputs) {
  if (Status s = bindInputs(inputs); !s)
    return s;
  if (Status s = execute(); !s)
    return s;
  return readOutputs();
}

Result<BenchmarkStats>
CpuExecutor::benchmark(const std::vector<NamedView> &inputs, int warmup,
                       int iterations) {
  if (warmup < 0)
    return Status::error(
        "the number of warmup runs must not be negative, got " +
        std::to_string(warmup));
  if (iterations < 1)
    return Status::error("the number of timed runs must be at least 1, got " +
                         std::to_string(iterations));
  // Warmup runs are not part of the per-call times either.
  bool timing = timing_;
  timing_ = false;
  for (int i = 0; i < warmup; ++i) {
    Status s = bindInputs(inputs);
    if (s)
      s = execute();
    if (!s) {
      timing_ = timing;
      return s;
    }
  }
  timing_ = timing;
  BenchmarkStats stats;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = bindInputs(inputs); !s)
      return s;
    if (Status s = execute(); !s)
      return s;
    stats.runMs.push_back(msSince(start));
  }
  std::vector<double> sorted = stats.runMs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  stats.min = sorted.front();
  stats.max = sorted.back();
  stats.median =
      n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  stats.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) /
               static_cast<double>(n);
  return stats;
}

void CpuExecutor::resetCallTimes() {
  times_.runs = 0;
  times_.totalMs.assign(plan_.calls.size(), 0.0);
}

} // namespace mp::rt
