//===- Executor.cpp - runs a plan on the CPU backend ----------------------===//
#include "mp/Runtime/Executor.h"
#include "PlanInternal.h"
#include "WeakCache.h"
#include "mp/Runtime/DynamicShapes.h"

#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <numeric>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <variant>

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

/// The plan's cast and transpose calls between a channels-last
/// convolution's filter (operand 1 of conv_fwd / conv_bwd_data, result 0 of
/// conv_bwd_filter) and the channels-first buffer it is made from (a weight
/// or a training step's f32 master weight) or goes to (the f32 gradient):
/// the fast call may bind that buffer instead (cpu::FilterSource).
struct FilterChain {
  uint32_t buffer = 0;       ///< the channels-first buffer
  std::vector<size_t> calls; ///< the cast / transpose calls between
};

/// [0, 2, ..., n-1, 1] (channels to the end) or its inverse.
std::vector<int64_t> channelsPerm(size_t rank, bool toLast) {
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  if (toLast)
    std::rotate(perm.begin() + 1, perm.begin() + 2, perm.end());
  else
    std::rotate(perm.begin() + 1, perm.end() - 1, perm.end());
  return perm;
}

/// Finds FilterChains in a plan; `readers` / `writers` count each buffer's.
class FilterChains {
public:
  FilterChains(const Plan &plan, const std::vector<size_t> &readers,
               const std::vector<size_t> &writers)
      : plan_(plan), readers_(readers), writers_(writers),
        writerOf_(plan.buffers.size(), plan.calls.size()) {
    for (size_t i = 0; i < plan.calls.size(); ++i)
      for (uint32_t id : plan.calls[i].results)
        writerOf_[id] = i;
  }

  /// The chain from which call i's filter operand is made, if any.
  std::optional<FilterChain> operandChain(size_t i) const {
    const PlanCall &call = plan_.calls[i];
    if ((call.kind != "cudnn.conv_fwd" && call.kind != "cudnn.conv_bwd_data") ||
        call.operands.size() < 2)
      return std::nullopt;
    uint32_t filter = call.operands[1];
    size_t rank = plan_.buffer(filter)->shape.size();
    if (writers_[filter] != 1 || writerOf_[filter] >= i ||
        !isUnary(writerOf_[filter], "kernel.transpose", rank, true))
      return std::nullopt;
    FilterChain chain;
    chain.calls = {writerOf_[filter]};
    uint32_t from = plan_.calls[chain.calls[0]].operands[0];
    // (Calls at load make Derived buffers: a chain of them is folded too,
    // and the buffers they made are then not kept.)
    if (plan_.buffer(from)->storage == BufferStorage::Arena ||
        plan_.buffer(from)->storage == BufferStorage::Derived) {
      // Cast from a weight or state buffer that only this transpose reads.
      size_t cast = writerOf_[from];
      if (writers_[from] != 1 || readers_[from] != 1 ||
          cast >= chain.calls[0] || !isUnary(cast, "kernel.cast", 0, false))
        return std::nullopt;
      chain.calls.insert(chain.calls.begin(), cast);
      from = plan_.calls[cast].operands[0];
      if (plan_.buffer(from)->storage == BufferStorage::Arena ||
          plan_.buffer(from)->storage == BufferStorage::Derived)
        return std::nullopt;
    }
    // The source keeps its value from the chain's first call to call i (an
    // optimizer step writes a master weight after the convolutions).
    for (size_t j = chain.calls[0]; j < i; ++j)
      for (uint32_t id : plan_.calls[j].results)
        if (id == from)
          return std::nullopt;
    chain.buffer = from;
    return chain;
  }

  /// The chain that takes call i's dw result to a channels-first buffer,
  /// if any: the calls right after it, each the only reader of the last.
  std::optional<FilterChain> resultChain(size_t i) const {
    const PlanCall &call = plan_.calls[i];
    if (call.kind != "cudnn.conv_bwd_filter" || call.results.size() != 1)
      return std::nullopt;
    uint32_t last = call.results[0];
    size_t rank = plan_.buffer(last)->shape.size();
    FilterChain chain;
    bool transposed = false;
    for (size_t j = i + 1; j < plan_.calls.size() && chain.calls.size() < 2;
         ++j) {
      if (readers_[last] != 1 || plan_.calls[j].operands.size() != 1 ||
          plan_.calls[j].operands[0] != last)
        break;
      if (isUnary(j, "kernel.transpose", rank, false) && !transposed)
        transposed = true;
      else if (!isUnary(j, "kernel.cast", 0, false))
        break;
      chain.calls.push_back(j);
      last = plan_.calls[j].results[0];
    }
    if (!transposed || writers_[last] != 1)
      return std::nullopt;
    chain.buffer = last;
    return chain;
  }

private:
  /// Whether call j is a `kind` call of one operand and one result (a
  /// transpose: moving the channels of a rank-`rank` tensor to the end, or
  /// back).
  bool isUnary(size_t j, const char *kind, size_t rank, bool toLast) const {
    const PlanCall &c = plan_.calls[j];
    if (c.kind != kind || c.operands.size() != 1 || c.results.size() != 1)
      return false;
    if (c.kind != "kernel.transpose")
      return true;
    Result<std::vector<int64_t>> perm = cpu::intListAttr(c, "perm");
    return perm && rank >= 3 && *perm == channelsPerm(rank, toLast);
  }

  const Plan &plan_;
  const std::vector<size_t> &readers_, &writers_;
  std::vector<size_t> writerOf_; ///< a buffer's (last) writer
};

/// Weights transposed once at load (CpuExecutor::create), shared as the fast
/// calls' prepared constants are (WeakCache.h): one per weight bytes and
/// transpose, whichever executor made it first.
struct TransposeKey {
  const void *source;
  std::vector<int64_t> perm;
  DType dtype;
  Shape shape; ///< the transpose's
  bool operator==(const TransposeKey &o) const {
    return source == o.source && perm == o.perm && dtype == o.dtype &&
           shape == o.shape;
  }
};
detail::WeakCache<TransposeKey, void> &transposedWeights() {
  static detail::WeakCache<TransposeKey, void> cache;
  return cache;
}

/// The buffers a plan's calls at load make (BufferStorage::Derived), in one
/// block shared by the executors of the plan (WeakCache.h): named by the
/// bytes of the weights those calls read and by the calls themselves, so
/// that copies of one plan share it and no other plan finds it.
struct DerivedKey {
  std::vector<const void *> weights;
  std::string calls; ///< the calls at load, spelled out
  size_t bytes = 0;  ///< the block's
  bool operator==(const DerivedKey &o) const {
    return weights == o.weights && calls == o.calls && bytes == o.bytes;
  }
};
detail::WeakCache<DerivedKey, void> &derivedBuffers() {
  static detail::WeakCache<DerivedKey, void> cache;
  return cache;
}

/// An attribute's value spelled out (for DerivedKey).
std::string attrValueString(const PlanAttrValue &value) {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>)
          return v;
        else if constexpr (std::is_arithmetic_v<T>)
          return std::to_string(v);
        else {
          std::string out = "[";
          for (const auto &e : v)
            out += std::to_string(e) + ",";
          return out + "]";
        }
      },
      value);
}

/// Each Derived buffer's offset in its block (64-byte aligned), the block's
/// size and key.
struct DerivedLayout {
  std::map<uint32_t, size_t> offsets;
  DerivedKey key;
};
DerivedLayout layOutDerived(const Plan &plan) {
  DerivedLayout layout;
  for (const PlanBuffer &b : plan.buffers)
    if (b.storage == BufferStorage::Derived) {
      layout.offsets[b.id] = layout.key.bytes;
      layout.key.bytes += (b.byteCount() + 63) / 64 * 64;
    }
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &c = plan.calls[i];
    if (!c.atLoad)
      continue;
    std::string &s = layout.key.calls;
    s += c.kind + "(";
    for (uint32_t id : c.operands) {
      s += std::to_string(id) + ",";
      const PlanBuffer *b = plan.buffer(id);
      if (b->storage == BufferStorage::Weight)
        layout.key.weights.push_back(plan.weights[b->weight].data);
    }
    s += ")->(";
    for (uint32_t id : c.results)
      s += std::to_string(id) + ",";
    s += ")";
    for (const PlanAttr &a : c.attributes)
      s += a.name + "=" + attrValueString(a.value) + ";";
  }
  return layout;
}

} // namespace

size_t preparedWeightBytes() {
  return cpu::preparedConstantBytes() +
         derivedBuffers().liveBytes(
             [](const DerivedKey &key, const void *) { return key.bytes; }) +
         transposedWeights().liveBytes(
             [](const TransposeKey &key, const void *) {
               return static_cast<size_t>(numElements(key.shape)) *
                      byteSize(key.dtype);
             });
}

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
    if (plan.calls[i].atLoad) // not part of a run
      continue;
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

std::string CallTimes::format(
    const Plan &plan, size_t top,
    const std::function<std::string(size_t)> &implementationOf) const {
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
    std::snprintf(line, sizeof line, "  %-56s %12.3f %6.1f%%", what.c_str(), ms,
                  perRun > 0 ? 100.0 * ms / perRun : 0.0);
    out += line;
    if (implementationOf)
      out += "  " + implementationOf(i);
    out += "\n";
  }
  return out;
}

//===----------------------------------------------------------------------===//
// CpuExecutor
//===----------------------------------------------------------------------===//

void CpuExecutor::AlignedFree::operator()(void *p) const { std::free(p); }

Result<CpuExecutor> CpuExecutor::create(Plan plan, const std::string &name,
                                        const CpuExecutorOptions &options) {
  if (plan.isDynamic())
    return createDynamic(std::move(plan), name, options);
  return createStatic(std::move(plan), name, options, nullptr);
}

Result<CpuExecutor> CpuExecutor::createStatic(Plan plan,
                                              const std::string &name,
                                              const CpuExecutorOptions &options,
                                              void *sharedArena) {
  // After validatePlan every buffer lies in the arena or in its weight and
  // every call names existing buffers: the views below are in bounds.
  if (Status s = validatePlan(plan, name); !s)
    return s;
  if (options.threads < 0)
    return Status::error(name +
                         ": threads must be >= 0 (0: the default), "
                         "got " +
                         std::to_string(options.threads));
  const cpu::CallTable &table = cpu::cpuCallTable();
  // oneDNN's primitives split their work for the threads there are when
  // they are made: the executor's, as its runs use.
  cpu::configureCpuThreads(options.kernels, options.threads);
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
  // the arena is zeroed. (State buffers are no bigger than their weights,
  // which exist.)
  uint64_t workspace = plan.maxWorkspaceSize();
  uint64_t stateBytes = 0;
  for (const PlanBuffer &b : plan.buffers)
    if (b.storage == BufferStorage::State)
      stateBytes += b.byteCount();
  uint64_t physical = plan_detail::physicalMemoryBytes();
  if (physical && (plan.arenaSize > physical || workspace > physical ||
                   stateBytes > physical ||
                   plan.arenaSize + workspace > physical - stateBytes))
    return Status::error(
        name + ": the plan needs " + std::to_string(plan.arenaSize) +
        " bytes of activation arena, " + std::to_string(workspace) +
        " bytes of workspace and " + std::to_string(stateBytes) +
        " bytes of state, more than this machine's " +
        std::to_string(physical) + " bytes of memory");
  if (!sharedArena) {
    exec.arena_.reset(allocateZeroed(plan.arenaSize));
    if (!exec.arena_)
      return Status::error(name + ": cannot allocate the activation arena of " +
                           std::to_string(plan.arenaSize) + " bytes");
    sharedArena = exec.arena_.get();
  }
  exec.workspace_.reset(allocateZeroed(workspace));
  if (!exec.workspace_)
    return Status::error(name + ": cannot allocate the workspace of " +
                         std::to_string(workspace) + " bytes");
  exec.workspaceSize_ = static_cast<size_t>(workspace);

  // Where each buffer's bytes are. Every state buffer gets its own block,
  // initialised with its weight's bytes.
  auto *arena = static_cast<unsigned char *>(sharedArena);
  exec.bufferData_.assign(plan.buffers.size(), nullptr);
  for (const PlanBuffer &b : plan.buffers) {
    switch (b.storage) {
    case BufferStorage::Arena:
      exec.bufferData_[b.id] = arena + b.offset;
      break;
    case BufferStorage::Weight:
      // Weights are read-only; the const is cast away only because operand
      // views share the TensorView type with results (never weights).
      exec.bufferData_[b.id] = const_cast<void *>(plan.weights[b.weight].data);
      break;
    case BufferStorage::State: {
      StateSlot slot;
      slot.buffer = b.id;
      slot.name = stateName(plan, b);
      slot.bytes = static_cast<size_t>(b.byteCount());
      slot.memory.reset(allocateZeroed(slot.bytes));
      if (!slot.memory)
        return Status::error(name + ": cannot allocate " +
                             std::to_string(slot.bytes) +
                             " bytes for the state buffer " +
                             quoted(slot.name));
      if (slot.bytes)
        std::memcpy(slot.memory.get(), plan.weights[b.weight].data,
                    slot.bytes);
      exec.bufferData_[b.id] = slot.memory.get();
      exec.state_.push_back(std::move(slot));
      break;
    }
    case BufferStorage::Derived:
      break; // below, once the others are placed
    }
  }
  std::sort(exec.state_.begin(), exec.state_.end(),
            [](const StateSlot &a, const StateSlot &b) {
              return a.buffer < b.buffer;
            });
  auto viewOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    TensorView v;
    v.dtype = b.dtype;
    v.shape = b.shape;
    v.data = exec.bufferData_[id];
    return v;
  };
  // Buffers made at load: the calls at load run now (the reference kernels:
  // once, so speed does not matter), into a block the executors of the plan
  // share; on every run they are skipped.
  DerivedLayout derived = layOutDerived(plan);
  auto placeDerived = [&](void *block) {
    for (auto [id, offset] : derived.offsets)
      exec.bufferData_[id] = static_cast<unsigned char *>(block) + offset;
  };
  if (!derived.offsets.empty()) {
    Status failedAtLoad = Status::ok();
    exec.derived_ =
        derivedBuffers().get(derived.key, [&]() -> std::shared_ptr<void> {
          std::shared_ptr<void> block(allocateZeroed(derived.key.bytes),
                                      AlignedFree());
          if (!block) {
            failedAtLoad = Status::error(name + ": cannot allocate " +
                                         std::to_string(derived.key.bytes) +
                                         " bytes for the buffers made at load");
            return nullptr;
          }
          placeDerived(block.get());
          for (size_t i = 0; i < plan.calls.size(); ++i) {
            const PlanCall &call = plan.calls[i];
            if (!call.atLoad)
              continue;
            std::vector<TensorView> operands, results;
            for (uint32_t id : call.operands)
              operands.push_back(viewOf(id));
            for (uint32_t id : call.results)
              results.push_back(viewOf(id));
            if (Status s = exec.prepared_[i].fn(
                    cpu::CallArgs{call, operands, results,
                                  exec.workspace_.get(), exec.workspaceSize_});
                !s) {
              failedAtLoad =
                  Status::error(call.describe(i) + " at load: " + s.message());
              return nullptr;
            }
          }
          return block;
        });
    if (!exec.derived_)
      return failedAtLoad;
    placeDerived(exec.derived_.get());
    for (size_t i = 0; i < plan.calls.size(); ++i)
      if (plan.calls[i].atLoad) {
        exec.prepared_[i].skipped = true;
        exec.prepared_[i].whyOwn = "ran once, at load";
      }
  }

  // Filters a plan transposes from a weight on every run (channels-last
  // convolutions read [K, R, S, C] made from the weight's [K, C, R, S]):
  // when the transposed buffer's one reader gets a fast call, the transpose
  // runs once here, into memory the executor keeps, the fast call takes that
  // as a constant (reordered once), and the transpose is skipped at run time.
  std::vector<size_t> readers(plan.buffers.size(), 0),
      writers(plan.buffers.size(), 0);
  for (const PlanCall &call : plan.calls) {
    for (uint32_t id : call.operands)
      ++readers[id];
    for (uint32_t id : call.results)
      ++writers[id];
  }
  std::map<uint32_t, size_t> transposedWeight; // buffer -> its transpose call
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    if (call.kind == "kernel.transpose" && call.operands.size() == 1 &&
        call.results.size() == 1 &&
        plan.buffer(call.operands[0])->storage == BufferStorage::Weight &&
        writers[call.results[0]] == 1 && readers[call.results[0]] == 1)
      transposedWeight[call.results[0]] = i;
  }

  FilterChains chains(plan, readers, writers);
  /// An operand chain whose source fast calls read, by its transpose call.
  struct FoldedChain {
    std::vector<size_t> calls, readers;
  };
  std::map<size_t, FoldedChain> folded;
  auto skipAsFolded = [&](const FoldedChain &chain) {
    std::string calls;
    for (size_t i : chain.readers)
      calls += (calls.empty() ? "" : ", ") + plan.calls[i].describe(i);
    for (size_t c : chain.calls) {
      exec.prepared_[c].skipped = true;
      exec.prepared_[c].whyOwn = "folded into the filter reorder of " + calls;
    }
  };

  size_t fastScratch = 0;
  std::set<size_t> filterFromSource; // calls whose filter chain is folded
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    Prepared &p = exec.prepared_[i];
    std::vector<bool> constant;
    for (uint32_t id : plan.calls[i].operands) {
      p.operands.push_back(viewOf(id));
      BufferStorage storage = plan.buffer(id)->storage;
      constant.push_back(storage == BufferStorage::Weight ||
                         storage == BufferStorage::Derived);
    }
    for (uint32_t id : plan.calls[i].results)
      p.results.push_back(viewOf(id));
    if (p.skipped) // ran at load, or folded into a filter reorder
      continue;
    if (options.kernels != cpu::CpuKernels::Fast) {
      p.whyOwn = "the reference kernels were asked for";
      continue;
    }
    // First choice: a filter made from (or going to) a channels-first
    // buffer by casts and transposes on every run, offered to the call as
    // that buffer: the reorder into (out of) the library's layout, which it
    // does anyway, then does them too. (A gradient may share arena bytes
    // with the call's operands, which are dead after it: the call writes it
    // through its scratch, after the primitive has run.)
    std::optional<FilterChain> dwChain = chains.resultChain(i);
    std::optional<FilterChain> chain =
        dwChain ? dwChain : chains.operandChain(i);
    cpu::FastCallChoice choice;
    if (chain) {
      cpu::FilterSource filter{viewOf(chain->buffer),
                               plan.buffer(chain->buffer)->storage ==
                                   BufferStorage::Weight};
      // (chain->buffer is a weight or state: a Derived buffer only ends a
      // chain when no cast leads to it, and operandChain then refuses.)
      choice = cpu::prepareFastCall(plan.calls[i], p.operands, p.results,
                                    constant, &filter);
      if (!choice.filterFromSource)
        choice = {}; // prepared below, as the plan's operands are
    }
    // Otherwise, transposed weights, made now for this call (or found made
    // by another executor of the plan).
    std::vector<std::shared_ptr<void>> madeNow;
    std::vector<size_t> transposes;
    if (!choice.call) {
      std::vector<TensorView> operands = p.operands;
      for (size_t k = 0; k < operands.size(); ++k) {
        auto it = transposedWeight.find(plan.calls[i].operands[k]);
        if (it == transposedWeight.end() || it->second >= i)
          continue;
        Prepared &t = exec.prepared_[it->second];
        const PlanCall &transposeCall = plan.calls[it->second];
        Result<std::vector<int64_t>> perm =
            cpu::intListAttr(transposeCall, "perm");
        if (!perm)
          continue; // the transpose runs every time and reports its error
        std::shared_ptr<void> memory = transposedWeights().get(
            TransposeKey{t.operands[0].data, *perm, operands[k].dtype,
                         operands[k].shape},
            [&]() -> std::shared_ptr<void> {
              std::shared_ptr<void> made(
                  allocateZeroed(operands[k].byteCount()), AlignedFree());
              TensorView into = operands[k];
              into.data = made.get();
              cpu::CallArgs args{transposeCall,
                                 t.operands,
                                 {into},
                                 exec.workspace_.get(),
                                 exec.workspaceSize_};
              if (!made || !t.fn(args))
                return nullptr;
              return made;
            });
        if (!memory)
          continue; // the transpose runs every time and reports its error
        operands[k].data = memory.get();
        constant[k] = true;
        madeNow.push_back(std::move(memory));
        transposes.push_back(it->second);
      }
      choice =
          cpu::prepareFastCall(plan.calls[i], operands, p.results, constant);
    }
    p.fast = std::move(choice.call);
    p.whyOwn = std::move(choice.why);
    if (!p.fast)
      continue;
    fastScratch = std::max(fastScratch, p.fast->scratchBytes());
    if (choice.filterFromSource && !dwChain)
      filterFromSource.insert(i);
    if (choice.filterFromSource) {
      if (dwChain) {
        skipAsFolded({dwChain->calls, {i}});
      } else {
        FoldedChain &f = folded[chain->calls.back()];
        f.calls = chain->calls;
        f.readers.push_back(i);
      }
    }
    for (size_t t : transposes) {
      exec.prepared_[t].skipped = true;
      exec.prepared_[t].whyOwn = "done once when the plan was loaded, for " +
                                 plan.calls[i].describe(i);
    }
    for (auto &memory : madeNow)
      exec.loadTimeBuffers_.push_back(std::move(memory));
  }
  // A filter's cast and transpose are not needed once every reader of
  // their result reads the source instead (the forward and the
  // backward-data convolution of a training step).
  for (const auto &[transpose, chain] : folded)
    if (chain.readers.size() == readers[plan.calls[transpose].results[0]])
      skipAsFolded(chain);
  // The buffers made at load are not kept when no call of a run reads them
  // any more: every convolution reading a filter made at load took its
  // channels-first weight instead (its reorder transposes and casts), as
  // the inference plans of f32 and bf16 convolutions do.
  if (exec.derived_) {
    auto isDerived = [&](uint32_t id) {
      return plan.buffer(id)->storage == BufferStorage::Derived;
    };
    bool needed =
        std::any_of(plan.outputs.begin(), plan.outputs.end(),
                    [&](const PlanBinding &b) { return isDerived(b.buffer); });
    for (size_t i = 0; i < plan.calls.size() && !needed; ++i) {
      if (plan.calls[i].atLoad || exec.prepared_[i].skipped)
        continue;
      const std::vector<uint32_t> &ops = plan.calls[i].operands;
      for (size_t k = 0; k < ops.size(); ++k)
        needed |= isDerived(ops[k]) && !(k == 1 && filterFromSource.count(i));
    }
    if (!needed) {
      // No view keeps pointing into the freed block.
      exec.derived_.reset();
      for (auto [id, offset] : derived.offsets)
        exec.bufferData_[id] = nullptr;
      for (size_t i = 0; i < plan.calls.size(); ++i) {
        Prepared &p = exec.prepared_[i];
        for (size_t k = 0; k < p.operands.size(); ++k)
          if (isDerived(plan.calls[i].operands[k]))
            p.operands[k].data = nullptr;
        for (size_t k = 0; k < p.results.size(); ++k)
          if (isDerived(plan.calls[i].results[k]))
            p.results[k].data = nullptr;
      }
    }
  }
  // The library's scratch memory is the workspace too (one call runs at a
  // time).
  if (fastScratch > exec.workspaceSize_) {
    exec.workspace_.reset(allocateZeroed(fastScratch));
    if (!exec.workspace_)
      return Status::error(name + ": cannot allocate the workspace of " +
                           std::to_string(fastScratch) + " bytes");
    exec.workspaceSize_ = fastScratch;
  }
  exec.plan_ = std::move(plan);
  exec.name_ = name;
  exec.options_ = options;
  exec.times_.totalMs.assign(exec.plan_.calls.size(), 0.0);
  return exec;
}

/// A dynamic-shape plan's static plans, by symbol values, the most recently
/// used first, in one arena planned for the maxima.
struct CpuExecutor::Dynamic {
  /// Enough for a server alternating between a few batch sizes; each keeps
  /// its prepared library calls.
  static constexpr size_t kKept = 4;
  struct Specialized {
    std::vector<int64_t> values;
    std::unique_ptr<CpuExecutor> exec;
  };
  std::unique_ptr<void, AlignedFree> arena;
  std::list<Specialized> recent;
  CpuExecutor *current = nullptr;
};

Result<CpuExecutor>
CpuExecutor::createDynamic(Plan plan, const std::string &name,
                           const CpuExecutorOptions &options) {
  if (Status s = validatePlan(plan, name); !s)
    return s;
  CpuExecutor exec;
  exec.dynamic_ = std::make_shared<Dynamic>();
  exec.dynamic_->arena.reset(allocateZeroed(plan.arenaSize));
  if (!exec.dynamic_->arena)
    return Status::error(name + ": cannot allocate the activation arena of " +
                         std::to_string(plan.arenaSize) + " bytes");
  // The plan at the maxima, prepared now: create() reports what it would
  // for a static plan (a call kind without CPU implementation, memory).
  std::vector<int64_t> maxima;
  for (const PlanSymbol &s : plan.symbols)
    maxima.push_back(s.max);
  Result<Plan> largest = specializePlan(plan, maxima);
  if (!largest)
    return Status::error(name + ": " + largest.message());
  Result<CpuExecutor> prepared =
      createStatic(largest.take(), name, options, exec.dynamic_->arena.get());
  if (!prepared)
    return prepared.status();
  exec.dynamic_->recent.push_front(
      {maxima, std::make_unique<CpuExecutor>(prepared.take())});
  exec.dynamic_->current = exec.dynamic_->recent.front().exec.get();
  exec.plan_ = std::move(plan);
  exec.name_ = name;
  exec.options_ = options;
  exec.times_.totalMs.assign(exec.plan_.calls.size(), 0.0);
  return exec;
}

Status CpuExecutor::bindInputs(const std::vector<NamedView> &inputs) {
  if (dynamic_) {
    std::vector<std::pair<std::string, Shape>> shapes;
    for (const NamedView &input : inputs)
      shapes.emplace_back(input.name, input.view.shape);
    Result<std::vector<int64_t>> values = bindSymbols(plan_, shapes);
    if (!values)
      return values.status();
    std::list<Dynamic::Specialized> &recent = dynamic_->recent;
    auto it = std::find_if(
        recent.begin(), recent.end(),
        [&](const Dynamic::Specialized &s) { return s.values == *values; });
    if (it != recent.end()) {
      recent.splice(recent.begin(), recent, it);
    } else {
      Result<Plan> plan = specializePlan(plan_, *values);
      if (!plan)
        return Status::error(name_ + ": " + plan.message());
      Result<CpuExecutor> prepared = createStatic(
          plan.take(),
          name_ + " (" + describeSymbolValues(plan_.symbols, *values) + ")",
          options_, dynamic_->arena.get());
      if (!prepared)
        return prepared.status();
      recent.push_front(
          {*values, std::make_unique<CpuExecutor>(prepared.take())});
      if (recent.size() > Dynamic::kKept)
        recent.pop_back();
    }
    dynamic_->current = recent.front().exec.get();
    return dynamic_->current->bindInputs(inputs);
  }
  std::vector<bool> bound(plan_.inputs.size(), false);
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
    if (bytes > 0)
      std::memcpy(bufferData_[binding.buffer], input.view.data, bytes);
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
  if (dynamic_) {
    CpuExecutor &current = *dynamic_->current;
    current.timing_ = timing_;
    Status s = current.execute();
    if (timing_) {
      for (size_t i = 0; i < times_.totalMs.size(); ++i)
        times_.totalMs[i] += current.times_.totalMs[i];
      times_.runs += current.times_.runs;
      current.resetCallTimes();
    }
    return s;
  }
  cpu::configureCpuThreads(options_.kernels, options_.threads);
  for (size_t i = 0; i < prepared_.size(); ++i) {
    const Prepared &p = prepared_[i];
    if (p.skipped)
      continue;
    auto start = std::chrono::steady_clock::now();
    Status s = p.fast
                   ? p.fast->run(workspace_.get())
                   : p.fn(cpu::CallArgs{plan_.calls[i], p.operands, p.results,
                                        workspace_.get(), workspaceSize_,
                                        options_.communicator.get()});
    if (timing_)
      times_.totalMs[i] += msSince(start);
    if (!s)
      return Status::error(plan_.calls[i].describe(i) + ": " + s.message());
  }
  if (timing_)
    ++times_.runs;
  return Status::ok();
}

size_t CpuExecutor::workspaceSize() const {
  return dynamic_ ? dynamic_->current->workspaceSize() : workspaceSize_;
}

std::string CpuExecutor::implementationOf(size_t call) const {
  if (dynamic_)
    return dynamic_->current->implementationOf(call);
  if (call >= prepared_.size())
    return "";
  const Prepared &p = prepared_[call];
  if (p.fast)
    return p.fast->implementation();
  if (p.skipped)
    return "skipped: " + p.whyOwn;
  return p.whyOwn.empty() ? "own" : "own: " + p.whyOwn;
}

Result<std::vector<NamedTensor>> CpuExecutor::readOutputs() const {
  if (dynamic_)
    return dynamic_->current->readOutputs();
  std::vector<NamedTensor> outputs;
  outputs.reserve(plan_.outputs.size());
  for (const PlanBinding &binding : plan_.outputs) {
    NamedTensor out{binding.name, HostTensor(binding.dtype, binding.shape)};
    if (out.tensor.byteCount() > 0 && !out.tensor.data())
      return Status::error("output " + quoted(binding.name) +
                           ": cannot allocate " +
                           std::to_string(out.tensor.byteCount()) + " bytes");
    if (out.tensor.byteCount() > 0)
      std::memcpy(out.tensor.data(), bufferData_[binding.buffer],
                  out.tensor.byteCount());
    outputs.push_back(std::move(out));
  }
  return outputs;
}

Result<std::vector<NamedTensor>>
CpuExecutor::run(const std::vector<NamedView> &inputs) {
  return runOnce(*this, inputs);
}

Result<BenchmarkStats>
CpuExecutor::benchmark(const std::vector<NamedView> &inputs, int warmup,
                       int iterations) {
  return benchmarkRuns(warmup, iterations, timing_, [&]() -> Status {
    if (Status s = bindInputs(inputs); !s)
      return s;
    return execute();
  });
}

Result<BenchmarkStats>
benchmarkRuns(int warmup, int iterations, bool &timing,
              const std::function<Status()> &bindAndExecute) {
  if (warmup < 0)
    return Status::error(
        "the number of warmup runs must not be negative, got " +
        std::to_string(warmup));
  if (iterations < 1)
    return Status::error("the number of timed runs must be at least 1, got " +
                         std::to_string(iterations));
  bool timingWanted = timing;
  timing = false;
  for (int i = 0; i < warmup; ++i)
    if (Status s = bindAndExecute(); !s) {
      timing = timingWanted;
      return s;
    }
  timing = timingWanted;
  BenchmarkStats stats;
  for (int i = 0; i < iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = bindAndExecute(); !s)
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

//===----------------------------------------------------------------------===//
// State buffers
//===----------------------------------------------------------------------===//

namespace {

std::string stateNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

} // namespace

size_t CpuExecutor::stateSize() const {
  size_t total = 0;
  for (const StateSlot &slot : state_)
    total += slot.bytes;
  return total;
}

const CpuExecutor::StateSlot *
CpuExecutor::findState(const std::string &name) const {
  for (const StateSlot &slot : state_)
    if (slot.name == name)
      return &slot;
  return nullptr;
}

Status CpuExecutor::resetState() {
  for (StateSlot &slot : state_) {
    const PlanBuffer &b = *plan_.buffer(slot.buffer);
    if (slot.bytes)
      std::memcpy(slot.memory.get(), plan_.weights[b.weight].data, slot.bytes);
  }
  return Status::ok();
}

Result<std::vector<NamedTensor>> CpuExecutor::readState() const {
  std::vector<NamedTensor> out;
  out.reserve(state_.size());
  for (const StateSlot &slot : state_) {
    const PlanBuffer &b = *plan_.buffer(slot.buffer);
    NamedTensor t{slot.name, HostTensor(b.dtype, b.shape)};
    if (slot.bytes && !t.tensor.data())
      return Status::error("state " + quoted(slot.name) + ": cannot allocate " +
                           std::to_string(slot.bytes) + " bytes");
    if (slot.bytes)
      std::memcpy(t.tensor.data(), slot.memory.get(), slot.bytes);
    out.push_back(std::move(t));
  }
  return out;
}

Status CpuExecutor::writeState(const std::string &name,
                               const TensorView &value) {
  const StateSlot *slot = findState(name);
  if (!slot) {
    std::vector<std::string> names;
    for (const StateSlot &s : state_)
      names.push_back(s.name);
    return Status::error("no state named " + quoted(name) +
                         " (the plan's states: " + stateNames(names) + ")");
  }
  const PlanBuffer &b = *plan_.buffer(slot->buffer);
  if (value.dtype != b.dtype || value.shape != b.shape)
    return Status::error("state " + quoted(name) + ": expected " +
                         describeTensorType(b.dtype, b.shape) + ", got " +
                         describeTensorType(value.dtype, value.shape));
  if (slot->bytes && !value.data)
    return Status::error("state " + quoted(name) + ": the value has no data");
  if (slot->bytes)
    std::memcpy(slot->memory.get(), value.data, slot->bytes);
  return Status::ok();
}

Result<Plan> CpuExecutor::planWithState() const {
  try {
    Plan out = plan_;
    for (const StateSlot &slot : state_) {
      const PlanBuffer &b = *plan_.buffer(slot.buffer);
      PlanWeight &w = out.weights[b.weight];
      w = PlanWeight::copyOf(w.name, w.dtype, w.shape, slot.memory.get(),
                             slot.bytes);
    }
    return out;
  } catch (const std::bad_alloc &) {
    return Status::error(name_ + ": out of memory copying the state (" +
                         std::to_string(stateSize()) + " bytes)");
  }
}

Status CpuExecutor::copyStateIntoWeights(Plan &target, size_t *copied) const {
  if (copied)
    *copied = 0;
  // Names: a state's own name first, then its initial weight's.
  std::unordered_map<std::string, const StateSlot *> byName;
  for (const StateSlot &slot : state_)
    byName.emplace(slot.name, &slot);
  for (const StateSlot &slot : state_)
    byName.emplace(plan_.weights[plan_.buffer(slot.buffer)->weight].name,
                   &slot);
  // Build every replacement first, so that an error leaves `target` as it
  // was.
  std::vector<std::pair<size_t, PlanWeight>> replacements;
  try {
    for (size_t i = 0; i < target.weights.size(); ++i) {
      const PlanWeight &w = target.weights[i];
      auto it = byName.find(w.name);
      if (it == byName.end())
        continue;
      const StateSlot &slot = *it->second;
      const PlanBuffer &b = *plan_.buffer(slot.buffer);
      const PlanWeight &initial = plan_.weights[b.weight];
      std::string what = "weight " + quoted(w.name) + " (" +
                         describeTensorType(w.dtype, w.shape) +
                         ") cannot take the value of state " +
                         quoted(slot.name) + " (" +
                         describeTensorType(b.dtype, b.shape) + ")";
      if (w.shape != b.shape && w.shape != initial.shape)
        return Status::error(what + ": the shapes differ");
      if (w.dtype == b.dtype) {
        replacements.emplace_back(
            i, PlanWeight::copyOf(w.name, w.dtype, w.shape, slot.memory.get(),
                                  slot.bytes));
        continue;
      }
      if (!isFloat(w.dtype) || !isFloat(b.dtype))
        return Status::error(what + ": only float states are cast to another "
                                    "dtype");
      HostTensor converted(w.dtype, w.shape);
      if (converted.byteCount() && !converted.data())
        return Status::error(what + ": out of memory");
      TensorView from{b.dtype, w.shape, slot.memory.get()};
      if (Status s = cpu::cast(from, converted.view()); !s)
        return Status::error(what + ": " + s.message());
      replacements.emplace_back(
          i, PlanWeight::copyOf(w.name, w.dtype, w.shape, converted.data(),
                                converted.byteCount()));
    }
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory copying the state into weights");
  }
  for (auto &[index, weight] : replacements)
    target.weights[index] = std::move(weight);
  if (copied)
    *copied = replacements.size();
  return Status::ok();
}

} // namespace mp::rt
