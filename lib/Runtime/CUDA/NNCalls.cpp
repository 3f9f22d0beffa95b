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

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

using NormCall = LaunchCall<NormParams, launchNorm>;

Result<std::unique_ptr<PreparedCall>> prepareLayerNorm(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planLayerNorm(a.call, a.operands, a.results));
  return preparedCall<NormCall>(p, "layer_norm kernel");
}

Result<std::unique_ptr<PreparedCall>>
prepareInstanceNorm(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planInstanceNorm(a.call, a.operands, a.results));
  return preparedCall<NormCall>(p, "instance_norm kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareLrn(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planLrn(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<LrnParams, launchLrn>>(p, "lrn kernel");
}

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

/// cudnn.rnn: per direction, the bias and initial state, the input
/// projections of every step (one GEMM), then per step the recurrent GEMM
/// and the gates; the final state is rounded into y_h / y_c.
struct RnnCall : PreparedCall {
  RnnPlan plan;
  explicit RnnCall(const RnnPlan &plan) : plan(plan) {}
  uint64_t workspaceBytes() const override { return plan.workspaceBytes; }

  Status enqueue(const RunContext &ctx) override {
    RnnParams p = plan.params;
    p.xw = reinterpret_cast<float *>(ctx.workspace + plan.xwOffset);
    p.hr = reinterpret_cast<float *>(ctx.workspace + plan.hrOffset);
    p.h = reinterpret_cast<float *>(ctx.workspace + plan.hOffset);
    p.c = reinterpret_cast<float *>(ctx.workspace + plan.cOffset);
    p.tmp = reinterpret_cast<float *>(ctx.workspace + plan.tmpOffset);
    const int64_t H = p.hidden, B = p.batch;
    const int64_t GH = (p.mode == kRnnLstm ? 4 : p.mode == kRnnGru ? 3 : 1) * H;
    const DType dtype = static_cast<DType>(p.dtype);
    const uint64_t stateBytes = static_cast<uint64_t>(B * H) * byteSize(dtype);
    for (int32_t dir = 0; dir < p.dirs; ++dir) {
      p.dir = dir;
      const bool reverse = plan.reverse || dir == 1;
      MP_CUDA_TRY(launchRnnPrep(p, ctx.error, ctx.stream), "rnn: bias, state");
      // xw += x W^T.
      GemmParams xw;
      xw.transB = 1;
      xw.aDtype = xw.bDtype = p.dtype;
      xw.accumulate = 1;
      xw.m = p.seq * B;
      xw.n = GH;
      xw.k = p.input;
      xw.a = p.x;
      xw.lda = p.input;
      xw.b = p.w;
      xw.ldb = p.input;
      xw.bOffset = dir * GH * p.input;
      xw.c = p.xw;
      xw.ldc = GH;
      MP_CUDA_TRY(launchGemm(xw, ctx.stream), "rnn: input projection");
      // hr = h R^T (GRU without linear_before_reset: z and r only).
      GemmParams hr;
      hr.transB = 1;
      hr.aDtype = code(DType::F32);
      hr.bDtype = p.dtype;
      hr.m = B;
      hr.n = plan.twoPhase ? 2 * H : GH;
      hr.k = H;
      hr.a = p.h;
      hr.lda = H;
      hr.b = p.r;
      hr.ldb = H;
      hr.bOffset = dir * GH * H;
      hr.c = p.hr;
      hr.ldc = GH;
      // GRU's candidate: hr[:, 2H:] = (r * h) R_h^T.
      GemmParams hh = hr;
      hh.n = H;
      hh.a = p.tmp;
      hh.bOffset = dir * GH * H + 2 * H * H;
      hh.cOffset = 2 * H;
      for (int64_t step = 0; step < p.seq; ++step) {
        p.t = reverse ? p.seq - 1 - step : step;
        MP_CUDA_TRY(launchGemm(hr, ctx.stream), "rnn: recurrent product");
        MP_CUDA_TRY(launchRnnGates(p, 0, ctx.stream), "rnn: gates");
        if (plan.twoPhase) {
          MP_CUDA_TRY(launchGemm(hh, ctx.stream), "rnn: candidate product");
          MP_CUDA_TRY(launchRnnGates(p, 1, ctx.stream), "rnn: candidate");
        }
      }
      for (auto [state, out] :
           {std::pair<float *, void *>{p.h, plan.yH}, {p.c, plan.yC}})
        if (out)
          MP_CUDA_TRY(
              launchCast(castOf(DType::F32, state, dtype,
                                static_cast<char *>(out) + dir * stateBytes,
                                B * H),
                         ctx.stream),
              "rnn: final state");
    }
    return Status::ok();
  }

private:
  static int32_t code(DType t) { return static_cast<int32_t>(t); }
};

Result<std::unique_ptr<PreparedCall>> prepareRnn(const PrepareArgs &a) {
  MP_TRY_PREPARE(plan, planRnn(a.call, a.operands, a.results));
  return preparedCall<RnnCall>(plan);
}

//===----------------------------------------------------------------------===//
// Selection and scans
//===----------------------------------------------------------------------===//

Result<std::unique_ptr<PreparedCall>> prepareTopk(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planTopk(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<TopkParams, launchTopk>>(p, "topk kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareCumsum(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planCumsum(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<ScanParams, launchCumsum>>(p, "cumsum kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareHardmax(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planHardmax(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<ScanParams, launchHardmax>>(p,
                                                             "hardmax kernel");
}

} // namespace

void addNNCalls(std::map<std::string, PrepareFn> &t) {
  t["kernel.layer_norm"] = prepareLayerNorm;
  t["kernel.instance_norm"] = prepareInstanceNorm;
  t["cudnn.lrn"] = prepareLrn;
  t["cudnn.rnn"] = prepareRnn;
  t["kernel.topk"] = prepareTopk;
  t["kernel.cumsum"] = prepareCumsum;
  t["kernel.hardmax"] = prepareHardmax;
}

} // namespace mp::rt::cuda
