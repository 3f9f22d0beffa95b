//===- DataCalls.cpp - data calls on the project's own CUDA kernels -------===//
//
// kernel.trilu, kernel.tile, kernel.pad, kernel.gather_elements,
// kernel.gather_nd, kernel.scatter_elements and kernel.resize: each prepare
// function plans the call (CudaPlanningData.cpp) and keeps the kernel
// parameters; enqueue launches (DataKernels.cu).
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"

namespace mp::rt::cuda {

namespace {

Result<std::unique_ptr<PreparedCall>> prepareTrilu(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planTrilu(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<TriluParams, launchTrilu>>(p, "trilu kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareTile(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planTile(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<TileParams, launchTile>>(p, "tile kernel");
}

Result<std::unique_ptr<PreparedCall>> preparePad(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planPad(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<PadParams, launchPad>>(p, "pad kernel");
}

Result<std::unique_ptr<PreparedCall>>
prepareGatherElements(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planGatherElements(a.call, a.operands, a.results));
  return preparedCall<CheckedLaunchCall<ElementsParams, launchGatherElements>>(
      p, "gather_elements kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareGatherND(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planGatherND(a.call, a.operands, a.results));
  return preparedCall<CheckedLaunchCall<GatherNDParams, launchGatherND>>(
      p, "gather_nd kernel");
}

/// y = data (unless in place), then the updates.
struct ScatterElementsCall : PreparedCall {
  ScatterElementsPlan plan;
  const void *data;
  ScatterElementsCall(const ScatterElementsPlan &plan, const void *data)
      : plan(plan), data(data) {}
  Status enqueue(const RunContext &ctx) override {
    if (plan.copyBytes)
      MP_CUDA_TRY(cudaMemcpyAsync(plan.params.out, data, plan.copyBytes,
                                  cudaMemcpyDeviceToDevice, ctx.stream),
                  "scatter_elements: copying data");
    return cudaStatus(launchScatterElements(plan.params, ctx.error, ctx.stream),
                      "scatter_elements kernel");
  }
};

Result<std::unique_ptr<PreparedCall>>
prepareScatterElements(const PrepareArgs &a) {
  MP_TRY_PREPARE(plan, planScatterElements(a.call, a.operands, a.results));
  return preparedCall<ScatterElementsCall>(plan,
                                           a.operands[0].ptr<const void>());
}

Result<std::unique_ptr<PreparedCall>> prepareResize(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planResize(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<ResizeParams, launchResize>>(p,
                                                              "resize kernel");
}

} // namespace

void addDataCalls(std::map<std::string, PrepareFn> &t) {
  MP_ADD_PREPARE("kernel.trilu", prepareTrilu);
  MP_ADD_PREPARE("kernel.tile", prepareTile);
  MP_ADD_PREPARE("kernel.pad", preparePad);
  MP_ADD_PREPARE("kernel.gather_elements", prepareGatherElements);
  MP_ADD_PREPARE("kernel.gather_nd", prepareGatherND);
  MP_ADD_PREPARE("kernel.scatter_elements", prepareScatterElements);
  MP_ADD_PREPARE("kernel.resize", prepareResize);
}

} // namespace mp::rt::cuda
