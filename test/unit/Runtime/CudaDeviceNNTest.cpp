//===- CudaDeviceNNTest.cpp - norms, rnn, topk ----------------------------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: the normalizations, cudnn.rnn, topk / cumsum / hardmax and
// kernel.lstm_bwd.
//
//===----------------------------------------------------------------------===//
#include "CudaDeviceTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

using namespace mp::rt;
using namespace mp::rt::test::cudadevice;

TEST_CASE("CUDA: layer_norm, rms_norm, group_norm, instance_norm, lrn",
          "[cuda][device]") {
  Rng rng(15);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    // The BERT case: the last axis, scale and bias of x's dtype.
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(1)},
                         {"has_mean", int64_t(0)},
                         {"has_inv_std_dev", int64_t(0)},
                         {"epsilon", 1e-12}},
                        {{"x", rnd(t, {2, 7, 768}, rng, -3, 3)},
                         {"scale", rnd(t, {768}, rng)},
                         {"bias", rnd(t, {768}, rng)}},
                        {{"y", t, {2, 7, 768}}}));
    // axis 1, a broadcast f32 scale, no bias, the statistics.
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(0)},
                         {"has_mean", int64_t(1)},
                         {"has_inv_std_dev", int64_t(1)},
                         {"axis", int64_t(1)}},
                        {{"x", rnd(t, {3, 4, 5}, rng, 1, 2)},
                         {"scale", rnd(DType::F32, {4, 1}, rng)}},
                        {{"y", t, {3, 4, 5}},
                         {"mean", DType::F32, {3, 1, 1}},
                         {"inv_std_dev", t, {3}}}));
    // In place (y is x).
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(1)},
                         {"has_mean", int64_t(0)},
                         {"has_inv_std_dev", int64_t(0)}},
                        {{"x", rnd(t, {5, 33}, rng)},
                         {"scale", rnd(t, {33}, rng)},
                         {"bias", rnd(t, {1}, rng)}},
                        {{"y", t, {5, 33}, 0, true}}));
    // RMS norm: a LLaMA-style row, and axis 1 with a broadcast f32 scale.
    compareCall(oneCall(
        "kernel.rms_norm", {{"epsilon", 1e-6}},
        {{"x", rnd(t, {2, 7, 512}, rng, -3, 3)}, {"scale", rnd(t, {512}, rng)}},
        {{"y", t, {2, 7, 512}}}));
    compareCall(oneCall("kernel.rms_norm",
                        {{"axis", int64_t(1)}, {"epsilon", 1e-3}},
                        {{"x", rnd(t, {3, 4, 5}, rng, 1, 2)},
                         {"scale", rnd(DType::F32, {4, 1}, rng)}},
                        {{"y", t, {3, 4, 5}}}));
    // Group norm: a diffusion UNet's 32 groups, and one group, no bias.
    compareCall(oneCall(
        "kernel.group_norm",
        {{"has_bias", int64_t(1)}, {"groups", int64_t(32)}, {"epsilon", 1e-5}},
        {{"x", rnd(t, {2, 64, 6, 6}, rng, -3, 3)},
         {"scale", rnd(t, {64}, rng)},
         {"bias", rnd(DType::F32, {64, 1, 1}, rng)}},
        {{"y", t, {2, 64, 6, 6}}}));
    compareCall(oneCall("kernel.group_norm",
                        {{"has_bias", int64_t(0)}, {"groups", int64_t(1)}},
                        {{"x", rnd(t, {3, 4, 7}, rng, 1, 2)},
                         {"scale", rnd(DType::F32, {4, 1}, rng)}},
                        {{"y", t, {3, 4, 7}}}));
    compareCall(oneCall("kernel.instance_norm", {{"epsilon", 1e-3}},
                        {{"x", rnd(t, {2, 3, 6, 7}, rng, -2, 2)},
                         {"scale", rnd(DType::F32, {3}, rng)},
                         {"bias", rnd(t, {3}, rng)}},
                        {{"y", t, {2, 3, 6, 7}}}));
    compareCall(oneCall(
        "cudnn.lrn",
        {{"size", int64_t(4)}, {"alpha", 1e-2}, {"beta", 0.6}, {"bias", 2.0}},
        {{"x", rnd(t, {2, 6, 3, 4}, rng, -2, 2)}}, {{"y", t, {2, 6, 3, 4}}}));
  }
}

TEST_CASE("CUDA: cudnn.rnn (LSTM, GRU, RNN)", "[cuda][device]") {
  Rng rng(16);
  // seq 5, batch 3, input 4, hidden 6.
  const int64_t S = 5, B = 3, I = 4, H = 6;
  auto rnn = [&](DType t, std::string mode, std::string direction,
                 std::vector<PlanAttr> extra, bool withB, bool withLens,
                 bool withInit, bool withP, bool yc) {
    INFO(mode << " " << direction << " dtype " << dtypeName(t));
    int64_t G = mode == "lstm" ? 4 : mode == "gru" ? 3 : 1;
    int64_t D = direction == "bidirectional" ? 2 : 1;
    std::vector<PlanAttr> attrs{{"has_b", int64_t(withB)},
                                {"has_sequence_lens", int64_t(withLens)},
                                {"has_initial_h", int64_t(withInit)},
                                {"has_initial_c", int64_t(withInit && yc)},
                                {"has_p", int64_t(withP)},
                                {"has_y", int64_t(1)},
                                {"has_y_h", int64_t(1)},
                                {"has_y_c", int64_t(yc)},
                                {"mode", mode},
                                {"direction", direction},
                                {"hidden_size", H}};
    for (PlanAttr &e : extra)
      attrs.push_back(e);
    std::vector<Arg> args{{"x", rnd(t, {S, B, I}, rng)},
                          {"w", rnd(t, {D, G * H, I}, rng, -0.5, 0.5)},
                          {"r", rnd(t, {D, G * H, H}, rng, -0.5, 0.5)}};
    if (withB)
      args.push_back({"b", rnd(t, {D, 2 * G * H}, rng, -0.5, 0.5)});
    if (withLens)
      args.push_back({"sequence_lens", indices(DType::I32, {B}, {5, 2, 0})});
    if (withInit)
      args.push_back({"initial_h", rnd(t, {D, B, H}, rng)});
    if (withInit && yc)
      args.push_back({"initial_c", rnd(t, {D, B, H}, rng)});
    if (withP)
      args.push_back({"p", rnd(t, {D, 3 * H}, rng, -0.5, 0.5)});
    std::vector<Res> res{{"y", t, {S, D, B, H}}, {"y_h", t, {D, B, H}}};
    if (yc)
      res.push_back({"y_c", t, {D, B, H}});
    // 16-bit data: the state stays f32 on both sides; rounding differences
    // of the inputs to the gates grow a little over the steps.
    std::optional<Tol> tol;
    if (t != DType::F32)
      tol = Tol{2e-2, 1e-2};
    compareCall(oneCall("cudnn.rnn", attrs, std::move(args), res), tol);
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    rnn(t, "lstm", "forward", {}, true, false, false, false, true);
    rnn(t, "gru", "forward", {}, true, false, false, false, false);
    rnn(t, "rnn", "forward", {}, true, false, false, false, false);
  }
  const DType f = DType::F32;
  // LSTM: bidirectional with lengths, initial state and peepholes; reverse
  // with clip and input_forget; other activations.
  rnn(f, "lstm", "bidirectional", {}, true, true, true, true, true);
  rnn(f, "lstm", "reverse", {{"clip", 0.7}, {"input_forget", int64_t(1)}}, true,
      true, true, false, true);
  rnn(f, "lstm", "forward",
      {{"activations", std::string("HardSigmoid,Softsign,ScaledTanh")},
       {"activation_alpha", std::vector<double>{0.3, 0.8}},
       {"activation_beta", std::vector<double>{0.4, 1.5}}},
      false, false, true, false, true);
  // GRU: both reset orders, bidirectional, lengths, clip.
  for (int64_t lbr : {0, 1}) {
    rnn(f, "gru", "bidirectional", {{"linear_before_reset", lbr}}, true, true,
        true, false, false);
    rnn(f, "gru", "reverse", {{"linear_before_reset", lbr}, {"clip", 0.5}},
        true, false, true, false, false);
  }
  // RNN: Relu, LeakyRelu per direction.
  rnn(f, "rnn", "bidirectional",
      {{"activations", std::string("Relu,LeakyRelu")}}, true, true, true, false,
      false);
  rnn(f, "rnn", "reverse",
      {{"activations", std::string("Affine")},
       {"activation_alpha", std::vector<double>{0.5}},
       {"activation_beta", std::vector<double>{0.1}}},
      false, false, false, false, false);
}

TEST_CASE("CUDA: topk, cumsum, hardmax", "[cuda][device]") {
  Rng rng(17);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8,
                  DType::I64, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    // Few distinct values: ties (the lower index first) everywhere.
    HostTensor x = rnd(t, {3, 12, 5}, rng, 0, 6);
    for (int64_t i = 0; i < x.numElements(); ++i)
      setD(x, i, std::floor(getD(x, i)));
    for (int64_t largest : {0, 1})
      compareCall(oneCall(
          "kernel.topk", {{"axis", int64_t(1)}, {"largest", largest}},
          {{"x", clone(x)}},
          {{"values", t, {3, 4, 5}}, {"indices", DType::I64, {3, 4, 5}}}));
    compareCall(
        oneCall("kernel.topk", {}, {{"x", rnd(t, {7, 33}, rng, 0, 100)}},
                {{"values", t, {7, 33}}, {"indices", DType::I32, {7, 33}}}));
  }
  // NaN ranks above every number.
  HostTensor nan = rnd(DType::F32, {2, 6}, rng);
  setD(nan, 1, std::nan(""));
  setD(nan, 9, std::nan(""));
  for (int64_t largest : {0, 1})
    compareCall(oneCall(
        "kernel.topk", {{"largest", largest}}, {{"x", clone(nan)}},
        {{"values", DType::F32, {2, 3}}, {"indices", DType::I64, {2, 3}}}));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::I64}) {
    INFO("dtype " << dtypeName(t));
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1})
        compareCall(oneCall("kernel.cumsum",
                            {{"axis", int64_t(1)},
                             {"exclusive", exclusive},
                             {"reverse", reverse}},
                            {{"x", rnd(t, {3, 17, 4}, rng, -50, 50)}},
                            {{"y", t, {3, 17, 4}}}));
    // The last axis, in place.
    compareCall(oneCall("kernel.cumsum", {{"axis", int64_t(-1)}},
                        {{"x", rnd(t, {5, 40}, rng, -50, 50)}},
                        {{"y", t, {5, 40}, 0, true}}));
  }
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    HostTensor x = rnd(t, {4, 6, 3}, rng, 0, 4);
    for (int64_t i = 0; i < x.numElements(); ++i)
      setD(x, i, std::floor(getD(x, i))); // ties: the first maximum
    if (t == DType::F32)
      setD(x, 0, std::nan(""));
    compareCall(oneCall("kernel.hardmax", {{"axis", int64_t(1)}},
                        {{"x", clone(x)}}, {{"y", t, {4, 6, 3}}}));
    compareCall(oneCall("kernel.hardmax", {}, {{"x", clone(x)}},
                        {{"y", t, {4, 6, 3}, 0, true}}));
  }
}

TEST_CASE("CUDA: kernel.lstm_bwd", "[cuda][device]") {
  Rng rng(21);
  const int64_t S = 4, B = 3, I = 5, H = 4;
  auto bwd = [&](DType t, std::string direction, bool withB, bool withInit,
                 bool withDy, bool withDyState, bool withDb, bool withDinit) {
    INFO(direction << " dtype " << dtypeName(t));
    const int64_t D = direction == "bidirectional" ? 2 : 1;
    std::vector<PlanAttr> attrs{{"has_b", int64_t(withB)},
                                {"has_initial_h", int64_t(withInit)},
                                {"has_initial_c", int64_t(withInit)},
                                {"has_dy", int64_t(withDy)},
                                {"has_dy_h", int64_t(withDyState)},
                                {"has_dy_c", int64_t(withDyState)},
                                {"has_db", int64_t(withDb)},
                                {"has_dinitial_h", int64_t(withDinit)},
                                {"has_dinitial_c", int64_t(withDinit)},
                                {"direction", direction},
                                {"hidden_size", H}};
    std::vector<Arg> args{{"x", rnd(t, {S, B, I}, rng)},
                          {"w", rnd(t, {D, 4 * H, I}, rng, -0.5, 0.5)},
                          {"r", rnd(t, {D, 4 * H, H}, rng, -0.5, 0.5)}};
    if (withB)
      args.push_back({"b", rnd(t, {D, 8 * H}, rng, -0.5, 0.5)});
    if (withInit) {
      args.push_back({"initial_h", rnd(t, {D, B, H}, rng)});
      args.push_back({"initial_c", rnd(t, {D, B, H}, rng)});
    }
    if (withDy)
      args.push_back({"dy", rnd(t, {S, D, B, H}, rng)});
    if (withDyState) {
      args.push_back({"dy_h", rnd(t, {D, B, H}, rng)});
      args.push_back({"dy_c", rnd(t, {D, B, H}, rng)});
    }
    std::vector<Res> res{{"dx", t, {S, B, I}},
                         {"dw", t, {D, 4 * H, I}},
                         {"dr", t, {D, 4 * H, H}}};
    if (withDb)
      res.push_back({"db", t, {D, 8 * H}});
    if (withDinit) {
      res.push_back({"dinitial_h", t, {D, B, H}});
      res.push_back({"dinitial_c", t, {D, B, H}});
    }
    std::optional<Tol> tol;
    if (t == DType::F16 || t == DType::BF16)
      tol = Tol{3e-2, 2e-2};
    else if (t == DType::F32)
      tol = Tol{1e-3, 1e-4};
    compareCall(oneCall("kernel.lstm_bwd", attrs, std::move(args), res), tol);
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    bwd(t, "forward", true, true, true, true, true, true);
  bwd(DType::F32, "bidirectional", true, true, true, true, true, true);
  bwd(DType::F64, "reverse", false, false, true, false, false, true);
  bwd(DType::F32, "forward", true, false, false, true, true, false);
  bwd(DType::F32, "reverse", false, true, true, false, true, true);
}

TEST_CASE("CUDA: attention (flash-style kernel) against the CPU's",
          "[cuda][device]") {
  Rng rng(23);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    // ViT-B/16's heads (64 dims) over 50 tokens, torch's [L, N, 3E] layout,
    // and a causal mask [1, L, L] broadcast over batch and heads.
    const int64_t L = 50, N = 2, H = 3, D = 64, E = H * D;
    HostTensor qkv = rnd(t, {L, N, 3 * E}, rng, -2, 2);
    HostTensor mask(DType::F32, {1, L, L});
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        mask.as<float>()[i * L + j] =
            j <= i ? 0.f : -std::numeric_limits<float>::infinity();
    auto view = [&](int64_t third) {
      return std::vector<int64_t>{third * E, 3 * E, D, N * 3 * E, 1};
    };
    for (bool withMask : {false, true}) {
      std::vector<PlanAttr> attrs = {
          {"shape", std::vector<int64_t>{N, H, L, L, D, D}},
          {"q_view", view(0)},
          {"k_view", view(1)},
          {"v_view", view(2)},
          {"o_view", std::vector<int64_t>{0, E, D, N * E, 1}},
          {"scale", 0.125},
          {"has_mask", int64_t(withMask)}};
      std::vector<Arg> args = {
          {"q", clone(qkv)}, {"k", clone(qkv)}, {"v", clone(qkv)}};
      if (withMask) {
        attrs.push_back({"mask_view", std::vector<int64_t>{0, 0, 0, L, 1}});
        args.emplace_back("mask", clone(mask));
      }
      compareCall(
          oneCall("kernel.attention", attrs, args, {{"o", t, {L * N, E}}}));
    }
  }
}
