//===- Executor.h - runs a plan on the CPU backend ----------------*- C++
//-*-===//
//
// A CpuExecutor is one execution context for a loaded plan: it owns the
// activation arena and the workspace, and runs the plan's calls in order with
// the CPU call table (mp/Runtime/CPU/Calls.h).
//
//   Result<Plan> plan = loadPlan("model.mpplan");
//   Result<CpuExecutor> exec = CpuExecutor::create(plan.take());
//   Result<std::vector<NamedTensor>> outputs =
//       exec->run({{"x", input.view()}});
//
// Everything that can be checked before running is checked by create(): the
// plan's semantic rules (validatePlan) and that every call kind has a CPU
// implementation. The views of every call's buffers are computed once; a run
// binds the inputs (copies them into their buffers), runs the calls and copies
// the outputs out. Runs reuse the arena. An executor runs one plan at a time
// (it is not thread-safe); create one per thread to run a plan concurrently.
//
// A dynamic-shape plan (format 1.9, DynamicShapes.h) runs any input shapes
// within its ranges: bindInputs takes the symbols' values from the inputs'
// shapes and runs the static plan for them (specializePlan), prepared once
// per distinct shape (the last few are kept) in one arena planned for the
// maxima. plan() is then the dynamic-shape plan.
//
// State buffers (training plans, format 1.1) get memory of their own,
// initialised from their weights by create() and kept across runs: a
// training plan's run is one training step that updates them in place.
// readState / writeState / resetState access them, planWithState makes a
// plan (a checkpoint) whose initial weights are their current values, and
// copyStateIntoWeights puts them into another plan's weights of the same
// names (e.g. an inference plan, to evaluate the model being trained).
//
// docs/runtime.md describes the design.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_EXECUTOR_H
#define MP_RUNTIME_EXECUTOR_H

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"
#include "mp/Runtime/TensorIO.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mp::rt {

/// An input given to a run: the graph input's name and a view of the data
/// (copied into the arena; the view is not kept).
struct NamedView {
  std::string name;
  TensorView view;
};

/// "f32 [1, 3, 224, 224]" (a scalar is "f32 []").
std::string describeTensorType(DType dtype, const Shape &shape);

/// Wall time spent in each call of a plan, accumulated over timed runs.
struct CallTimes {
  size_t runs = 0;             ///< timed runs accumulated
  std::vector<double> totalMs; ///< per call (plan order), summed over runs

  /// Time per kind: calls per run, total ms per run, share of the total.
  struct KindRow {
    std::string kind;
    size_t calls = 0;
    double msPerRun = 0;
    double percent = 0;
  };
  /// Kinds sorted by time, slowest first.
  std::vector<KindRow> byKind(const Plan &plan) const;
  /// The indices of the `n` slowest calls, slowest first.
  std::vector<size_t> slowest(size_t n) const;
  /// Total ms per run over all calls.
  double msPerRun() const;
  /// The table mp-run --timing prints: by kind, then the `top` slowest calls
  /// with their locations.
  std::string format(const Plan &plan, size_t top = 10,
                     const std::function<std::string(size_t)>
                         &implementationOf = nullptr) const;
};

/// Statistics of timed runs (CpuExecutor::benchmark), in milliseconds.
struct BenchmarkStats {
  std::vector<double> runMs; ///< each timed run, in order
  double mean = 0, median = 0, min = 0, max = 0;
};

/// The benchmark loop of both executors (CpuExecutor, CudaExecutor): checks
/// the counts, runs `bindAndExecute` `warmup` times with the executor's
/// per-call timing flag `timing` off (warm-up runs are not in the per-call
/// times either), then `iterations` timed times, and returns their
/// statistics (wall time of each run).
Result<BenchmarkStats>
benchmarkRuns(int warmup, int iterations, bool &timing,
              const std::function<Status()> &bindAndExecute);

/// run() of both executors: bindInputs, execute, then readOutputs.
template <typename ExecutorT>
Result<std::vector<NamedTensor>> runOnce(ExecutorT &executor,
                                         const std::vector<NamedView> &inputs) {
  if (Status s = executor.bindInputs(inputs); !s)
    return s;
  if (Status s = executor.execute(); !s)
    return s;
  return executor.readOutputs();
}

/// Bytes of weights prepared at load that the process's CPU executors hold:
/// reordered into a oneDNN primitive's layout, converted to f32 (f16 weights
/// of fast calls) or transposed (channels-last f16 filters). Each is made once
/// per weight and shared by every executor of a plan loaded once (copies of
/// one Plan share its weight bytes): N executors on one plan hold the
/// weights once (the plan's, and these), plus one arena, workspace and set
/// of state buffers each (docs/runtime.md, "Serving from one process").
size_t preparedWeightBytes();

struct CpuExecutorOptions {
  /// Fast: the calls oneDNN covers run on its primitives, prepared here
  /// (FastCalls.h); Reference: the exact reference kernels run every call.
  cpu::CpuKernels kernels = cpu::CpuKernels::Fast;
  /// The threads of oneDNN and of the elementwise kernels (OpenMP's) for
  /// the runs of this executor, set on the thread that runs it; 0 leaves
  /// OpenMP's default (OMP_NUM_THREADS, else the cores). Results do not
  /// depend on it beyond oneDNN's summation order.
  int threads = 0;
  /// The ranks a data-parallel plan's comm.all_reduce calls reduce over
  /// (Communicator.h); null: this process alone.
  std::shared_ptr<Communicator> communicator;
};

class CpuExecutor {
public:
  /// Validates `plan` (validatePlan, messages prefixed with `name`) and that
  /// every call kind has a CPU implementation ("call #3 (kernel.foo at node
  /// 'x'): no CPU implementation of 'kernel.foo'"), allocates the arena and
  /// the workspace, prepares every call's views and, with fast kernels, the
  /// library primitives of the calls they cover.
  static Result<CpuExecutor> create(Plan plan,
                                    const std::string &name = "<plan>",
                                    const CpuExecutorOptions &options = {});

  /// What runs call i: the library's implementation (e.g.
  /// "onednn:brg:avx512_core_bf16") or "own" with the reason the reference
  /// kernel runs it ("own: a C operand (beta * C)"); "own" alone for calls
  /// no library covers.
  std::string implementationOf(size_t call) const;

  const Plan &plan() const { return plan_; }
  const CpuExecutorOptions &options() const { return options_; }

  /// Runs the plan: binds `inputs` (every graph input exactly once, by name,
  /// with the binding's dtype and shape), runs the calls in order and returns
  /// the outputs in the plan's output order. A failing call's message starts
  /// with PlanCall::describe ("call #3 (cudnn.conv_fwd at node 'conv1'): ").
  Result<std::vector<NamedTensor>> run(const std::vector<NamedView> &inputs);

  /// The three steps of run(), for callers that want them apart (benchmarks
  /// bind and execute without copying outputs out).
  Status bindInputs(const std::vector<NamedView> &inputs);
  Status execute();
  Result<std::vector<NamedTensor>> readOutputs() const;

  /// Runs `warmup` untimed then `iterations` timed runs (bind + execute; the
  /// inputs are copied in every run, since calls may reuse input buffers).
  Result<BenchmarkStats> benchmark(const std::vector<NamedView> &inputs,
                                   int warmup, int iterations);

  /// Per-call timing: when enabled, execute() adds each call's wall time
  /// (steady_clock) to callTimes().
  void setTiming(bool enabled) { timing_ = enabled; }
  const CallTimes &callTimes() const { return times_; }
  void resetCallTimes();

  size_t arenaSize() const { return plan_.arenaSize; }
  size_t workspaceSize() const;

  //===--------------------------------------------------------------------===//
  // State buffers (BufferStorage::State)
  //===--------------------------------------------------------------------===//

  /// Bytes of all state buffers (0 for plans without state).
  size_t stateSize() const;
  /// Sets every state buffer to its initial weight again (as after create).
  Status resetState();
  /// A copy of every state buffer, in buffer id order, named by stateName
  /// (the buffer's name, or its initial weight's when it has none).
  Result<std::vector<NamedTensor>> readState() const;
  /// Overwrites the state buffer named `name` (stateName) with `value`,
  /// which must have its dtype and shape.
  Status writeState(const std::string &name, const TensorView &value);
  /// A copy of the plan whose state buffers' initial weights hold the
  /// current state (new owned copies; the other weights are shared): saved
  /// with savePlan, it is a checkpoint that resumes where this executor is.
  Result<Plan> planWithState() const;
  /// Puts the current state into `target`'s weights: every weight of
  /// `target` named like a state buffer (stateName, or else the name of a
  /// state's initial weight) gets a new owned copy of that state's bytes.
  /// The shapes must be equal (the state buffer's or its initial weight's);
  /// a float state goes into a weight of another float dtype by a cast
  /// (rounding to nearest even), other dtype differences are errors. On an
  /// error `target` is unchanged. `copied`, if given, receives the number of
  /// weights replaced (weights without a matching state are left alone).
  Status copyStateIntoWeights(Plan &target, size_t *copied = nullptr) const;

private:
  /// A call ready to run: its implementation and the views of its buffers.
  struct Prepared {
    cpu::CallFn fn = nullptr;
    std::vector<TensorView> operands, results;
    /// The library primitive that runs the call instead of fn, if any.
    std::unique_ptr<cpu::PreparedCall> fast;
    std::string whyOwn; ///< without `fast`: why the reference runs it
    /// Not run: a call at load (run when the executor was made), done once
    /// when the plan was loaded (an older plan's weight transpose that only
    /// a fast call reads), or folded into a fast call's filter reorder (a
    /// channels-last filter's cast and transpose of a training step).
    bool skipped = false;
  };
  struct AlignedFree {
    void operator()(void *p) const;
  };
  /// A state buffer's own memory.
  struct StateSlot {
    uint32_t buffer = 0; ///< its id
    std::string name;    ///< stateName
    std::unique_ptr<void, AlignedFree> memory;
    size_t bytes = 0;
  };
  struct Dynamic;
  CpuExecutor() = default;
  /// `arena`: memory of plan.arenaSize bytes to use (a dynamic-shape plan's
  /// specialisations share one); null: allocate it.
  static Result<CpuExecutor> createStatic(Plan plan, const std::string &name,
                                          const CpuExecutorOptions &options,
                                          void *arena);
  static Result<CpuExecutor> createDynamic(Plan plan, const std::string &name,
                                           const CpuExecutorOptions &options);
  const StateSlot *findState(const std::string &name) const;

  Plan plan_;
  std::string name_;
  CpuExecutorOptions options_;
  std::unique_ptr<void, AlignedFree> arena_;
  std::vector<StateSlot> state_; ///< in buffer id order
  /// Per buffer id: where its bytes are (arena, weight or state memory).
  std::vector<void *> bufferData_;
  std::unique_ptr<void, AlignedFree> workspace_;
  /// Weights transposed once at load for the fast calls that read them
  /// (shared with the other executors of the plan).
  std::vector<std::shared_ptr<void>> loadTimeBuffers_;
  /// The buffers the plan's calls at load made (BufferStorage::Derived),
  /// shared with the other executors of the plan.
  std::shared_ptr<void> derived_;
  size_t workspaceSize_ = 0;
  std::vector<Prepared> prepared_; ///< one per call, in plan order
  bool timing_ = false;
  CallTimes times_;
  /// A dynamic-shape plan's specialisations; null for a static plan.
  std::shared_ptr<Dynamic> dynamic_;
};

} // namespace mp::rt

#endif // MP_RUNTIME_EXECUTOR_H
