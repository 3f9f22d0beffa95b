//===- FuzzPlan.cpp - libFuzzer target for the plan reader and executor ---===//
//
// Feeds each input to the runtime as a plan file (parsePlan: FlatBuffers
// verification, version checks, validatePlan), prepares a CPU executor for
// what loads (every call's kind, attributes and buffers checked), and runs
// small plans on zero inputs: a plan file is as untrusted as a model, and a
// call whose attributes were not checked crashes only when it runs.
//
// Plans whose arena and workspace pass kPrepareLimitBytes are loaded but not
// prepared (a valid plan may need gigabytes, and the fuzzer's memory limit
// would report them), and plans above kRunLimitBytes are prepared but not
// run, to keep each input fast. Any crash, sanitizer report, leak or timeout
// is a finding. scripts/fuzz.sh builds and runs it
// (docs/robustness.md).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
constexpr uint64_t kPrepareLimitBytes = uint64_t(256) << 20;
constexpr uint64_t kRunLimitBytes = uint64_t(4) << 20;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace mp::rt;
  Result<Plan> plan = parsePlan(data, size, "fuzz.mpplan");
  if (!plan || plan->arenaSize > kPrepareLimitBytes ||
      plan->maxWorkspaceSize() > kPrepareLimitBytes)
    return 0;
  Result<CpuExecutor> executor = CpuExecutor::create(plan.take(), "fuzz");
  if (!executor)
    return 0;
  if (executor->arenaSize() + executor->workspaceSize() > kRunLimitBytes)
    return 0;

  std::vector<HostTensor> inputs;
  std::vector<NamedView> views;
  for (const PlanBinding &binding : executor->plan().inputs) {
    inputs.emplace_back(binding.dtype, binding.shape);
    std::memset(inputs.back().data(), 0, inputs.back().byteCount());
    views.push_back({binding.name, inputs.back().view()});
  }
  (void)executor->run(views);
  return 0;
}
