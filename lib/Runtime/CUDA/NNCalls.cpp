//===- NNCalls.cpp - NN calls on the project's own CUDA kernels -----------===//
//
// kernel.attention, kernel.layer_norm, kernel.instance_norm, cudnn.lrn,
// cudnn.rnn,
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
prepareLayerNormGrad(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planLayerNormGrad(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<LayerNormGradParams, launchLayerNormGrad>>(
      p, "layer_norm_grad kernels");
}

Result<std::unique_ptr<PreparedCall>> prepareRmsNorm(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planRmsNorm(a.call, a.operands, a.results));
  return preparedCall<NormCall>(p, "rms_norm kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareGroupNorm(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planGroupNorm(a.call, a.operands, a.results));
  return preparedCall<NormCall>(p, "group_norm kernel");
}

Result<std::unique_ptr<PreparedCall>> prepareAttention(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planAttention(a.call, a.operands, a.results));
  return preparedCall<LaunchCall<AttentionParams, launchAttention>>(
      p, "attention kernel (flash-style, f32)");
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

/// kernel.lstm_bwd: per direction the forward again (one GEMM for the
/// input projections, per step the recurrent GEMM and the gates), the
/// steps backward (the gate gradients, then dh = da R), then dW, dR, dx
/// (GEMMs over every step) and db; the T gradients are rounded into the
/// results at the end.
struct LstmBwdCall : PreparedCall {
  LstmBwdPlan plan;
  explicit LstmBwdCall(const LstmBwdPlan &plan) : plan(plan) {}
  uint64_t workspaceBytes() const override { return plan.workspaceBytes; }

  Status enqueue(const RunContext &ctx) override {
    LstmBwdParams p = plan.params;
    void **scratch[12] = {&p.gates, &p.hPrev, &p.cPrev, &p.cAfter,
                          &p.h,     &p.c,     &p.dh0,   &p.dc0,
                          &p.dx,    &p.dw,    &p.dr,    &p.db};
    for (size_t i = 0; i < 12; ++i)
      *scratch[i] = ctx.workspace + plan.offsets[i];
    const DType t = p.f64 ? DType::F64 : DType::F32;
    const int32_t tc = static_cast<int32_t>(t);
    const int64_t S = p.seq, B = p.batch, I = p.input, H = p.hidden, GH = 4 * H,
                  SB = S * B;
    const uint64_t tBytes = byteSize(t);
    MP_CUDA_TRY(cudaMemsetAsync(p.dx, 0, SB * I * tBytes, ctx.stream),
                "lstm_bwd: clearing dx");
    // The GEMMs, in cuBLAS terms C (T) = op(A) op(B).
    auto gemm = [&](bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                    const void *a, int32_t aDtype, int64_t lda, int64_t aOffset,
                    const void *b, int32_t bDtype, int64_t ldb, int64_t bOffset,
                    void *c, int64_t ldc, int64_t cOffset, bool accumulate) {
      GemmParams g;
      g.transA = transA;
      g.transB = transB;
      g.m = m;
      g.n = n;
      g.k = k;
      g.a = a;
      g.aDtype = aDtype;
      g.lda = lda;
      g.aOffset = aOffset;
      g.b = b;
      g.bDtype = bDtype;
      g.ldb = ldb;
      g.bOffset = bOffset;
      g.c = c;
      g.ldc = ldc;
      g.cOffset = cOffset;
      g.accumulate = accumulate;
      g.f64 = p.f64;
      return launchGemm(g, ctx.stream);
    };
    for (int32_t dir = 0; dir < p.dirs; ++dir) {
      p.dir = dir;
      const bool reverse = plan.reverse || dir == 1;
      auto timeOf = [&](int64_t step) { return reverse ? S - 1 - step : step; };
      // 1. The forward: gates = x W^T + Wb + Rb, then per step.
      MP_CUDA_TRY(launchLstmBwd(p, kLstmForwardInit, ctx.stream),
                  "lstm_bwd: forward init");
      MP_CUDA_TRY(gemm(false, true, SB, GH, I, p.x, p.dtype, I, 0, p.w, p.dtype,
                       I, dir * GH * I, p.gates, GH, 0, true),
                  "lstm_bwd: input projection");
      for (int64_t step = 0; step < S; ++step) {
        p.t = timeOf(step);
        MP_CUDA_TRY(gemm(false, true, B, GH, H, p.h, tc, H, 0, p.r, p.dtype, H,
                         dir * GH * H, p.gates, GH, p.t * B * GH, true),
                    "lstm_bwd: recurrent product");
        MP_CUDA_TRY(launchLstmBwd(p, kLstmForwardStep, ctx.stream),
                    "lstm_bwd: forward step");
      }
      // 2. Backward through the steps.
      MP_CUDA_TRY(launchLstmBwd(p, kLstmBackwardInit, ctx.stream),
                  "lstm_bwd: backward init");
      for (int64_t step = S - 1; step >= 0; --step) {
        p.t = timeOf(step);
        MP_CUDA_TRY(launchLstmBwd(p, kLstmBackwardStep, ctx.stream),
                    "lstm_bwd: backward step");
        MP_CUDA_TRY(gemm(false, false, B, H, GH, p.gates, tc, GH, p.t * B * GH,
                         p.r, p.dtype, H, dir * GH * H, p.dh0, H, dir * B * H,
                         false),
                    "lstm_bwd: dh");
      }
      // 3. dW = da^T x, dR = da^T h_prev, dx += da W, db.
      MP_CUDA_TRY(gemm(true, false, GH, I, SB, p.gates, tc, GH, 0, p.x, p.dtype,
                       I, 0, p.dw, I, dir * GH * I, false),
                  "lstm_bwd: dw");
      MP_CUDA_TRY(gemm(true, false, GH, H, SB, p.gates, tc, GH, 0, p.hPrev, tc,
                       H, 0, p.dr, H, dir * GH * H, false),
                  "lstm_bwd: dr");
      MP_CUDA_TRY(gemm(false, false, SB, I, GH, p.gates, tc, GH, 0, p.w,
                       p.dtype, I, dir * GH * I, p.dx, I, 0, true),
                  "lstm_bwd: dx");
      MP_CUDA_TRY(launchLstmBwd(p, kLstmBiasGrad, ctx.stream), "lstm_bwd: db");
    }
    // The gradients rounded once into dx, dw, dr, db, dinitial_h/c.
    const void *from[6] = {p.dx, p.dw, p.dr, p.db, p.dh0, p.dc0};
    const DType outType = static_cast<DType>(p.dtype);
    for (size_t i = 0; i < 6; ++i)
      if (plan.out[i] && plan.outElements[i])
        MP_CUDA_TRY(launchCast(castOf(t, from[i], outType, plan.out[i],
                                      plan.outElements[i]),
                               ctx.stream),
                    "lstm_bwd: rounding the gradients");
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> prepareLstmBwd(const PrepareArgs &a) {
  MP_TRY_PREPARE(plan, planLstmBwd(a.call, a.operands, a.results));
  return preparedCall<LstmBwdCall>(plan);
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
  MP_ADD_PREPARE("kernel.attention", prepareAttention);
  MP_ADD_PREPARE("kernel.layer_norm", prepareLayerNorm);
  MP_ADD_PREPARE("kernel.layer_norm_grad", prepareLayerNormGrad);
  MP_ADD_PREPARE("kernel.instance_norm", prepareInstanceNorm);
  MP_ADD_PREPARE("kernel.rms_norm", prepareRmsNorm);
  MP_ADD_PREPARE("kernel.group_norm", prepareGroupNorm);
  MP_ADD_PREPARE("cudnn.lrn", prepareLrn);
  MP_ADD_PREPARE("cudnn.rnn", prepareRnn);
  MP_ADD_PREPARE("kernel.lstm_bwd", prepareLstmBwd);
  MP_ADD_PREPARE("kernel.topk", prepareTopk);
  MP_ADD_PREPARE("kernel.cumsum", prepareCumsum);
  MP_ADD_PREPARE("kernel.hardmax", prepareHardmax);
}

} // namespace mp::rt::cuda
