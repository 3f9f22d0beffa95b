//===- NNCalls.cpp - NN calls on the project's own CUDA kernels -----------===//
//
// kernel.layer_norm, kernel.instance_norm, cudnn.lrn, cudnn.rnn,
// kernel.lstm_bwd, kernel.topk, kernel.cumsum and kernel.hardmax: each
// prepare function plans the call (CudaPlanningNN.cpp) and keeps the kernel
// parameters; enqueue fills in the workspace pointers and launches
// (NNKernels.cu).
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"

namespace mp::rt::cuda {

namespace {

#define MP_TRY_PLAN(var, expr)                                                 \
  auto var##Result = (expr);                                                   \
  if (!var##Result)                                                            \
    return var##Result.status();                                               \
  auto var = var##Result.take()

/// A call that is one launcher on parameters planned once.
template <typename Params, cudaError_t (*Launch)(const Params &, cudaStream_t)>
struct LaunchCall : PreparedCall {
  Params p;
  const char *what;
  LaunchCall(const Params &p, const char *what) : p(p), what(what) {}
  Status enqueue(const RunContext &ctx) override {
    return cudaStatus(Launch(p, ctx.stream), what);
  }
};

template <typename T, typename... A>
Result<std::unique_ptr<PreparedCall>> made(A &&...args) {
  return std::unique_ptr<PreparedCall>(new T(std::forward<A>(args)...));
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

using NormCall = LaunchCall<NormParams, launchNorm>;

Result<std::unique_ptr<PreparedCall>> prepareLayerNorm(const PrepareArgs &a) {
  MP_TRY_PLAN(p, planLayerNorm(a.call, a.operands, a.results));
  return made<NormCall>(p, "layer_norm kernel");
}

Result<std::unique_ptr<PreparedCall>>
prepareInstanceNorm(const PrepareArgs &a) {
  MP_TRY_PLAN(p, planInstanceNorm(a.call, a.operands, a.results));
  return made<NormCall>(p, "instance_norm kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareLrn(const PrepareArgs &a) {
  MP_TRY_PLAN(p, planLrn(a.call, a.operands, a.results));
  return made<LaunchCall<LrnParams, launchLrn>>(p, "lrn kernel");
}

} // namespace

void addNNCalls(std::map<std::string, PrepareFn> &t) {
  t["kernel.layer_norm"] = prepareLayerNorm;
  t["kernel.instance_norm"] = prepareInstanceNorm;
  t["cudnn.lrn"] = prepareLrn;
}

} // namespace mp::rt::cuda
