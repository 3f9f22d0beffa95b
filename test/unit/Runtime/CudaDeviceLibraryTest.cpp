//===- CudaDeviceLibraryTest.cpp - cuBLASLt, cuDNN ------------------------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: matmul, the convolutions, pooling, batch norm and softmax.
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

TEST_CASE("CUDA: cublaslt.matmul", "[cuda][device]") {
  Rng rng(2);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    auto mm = [&](Shape a, Shape b, Shape d, std::vector<PlanAttr> extra,
                  std::optional<HostTensor> c = std::nullopt,
                  std::optional<HostTensor> bias = std::nullopt,
                  std::optional<DType> dt = std::nullopt) {
      std::vector<PlanAttr> attrs{{"has_c", int64_t(c.has_value())},
                                  {"has_bias", int64_t(bias.has_value())},
                                  {"compute_type", int64_t(1)}};
      for (PlanAttr &e : extra)
        attrs.push_back(e);
      std::vector<Arg> args{{"a", rnd(t, a, rng)}, {"b", rnd(t, b, rng)}};
      if (c)
        args.push_back({"c", std::move(*c)});
      if (bias)
        args.push_back({"bias", std::move(*bias)});
      compareCall(oneCall("cublaslt.matmul", attrs, std::move(args),
                          {{"d", dt.value_or(t), d}}));
    };
    mm({17, 33}, {33, 9}, {17, 9}, {});
    mm({33, 17}, {9, 33}, {17, 9},
       {{"trans_a", int64_t(1)}, {"trans_b", int64_t(1)}});
    mm({3, 5, 16}, {3, 16, 8}, {3, 5, 8}, {});        // strided batch
    mm({2, 3, 5, 16}, {16, 8}, {2, 3, 5, 8}, {});     // folded into M
    mm({2, 1, 4, 8}, {1, 3, 8, 6}, {2, 3, 4, 6}, {}); // broadcast both ways
    mm({3, 8, 4}, {8, 6}, {3, 4, 6}, {{"trans_a", int64_t(1)}});
    mm({16}, {16, 5}, {5}, {});
    mm({7, 16}, {16}, {7}, {});
    mm({8, 16}, {16, 24}, {8, 24}, {{"epilogue", std::string("relu")}},
       std::nullopt, rnd(t, {24}, rng));
    mm({8, 16}, {16, 24}, {8, 24}, {{"epilogue", std::string("gelu")}},
       std::nullopt, rnd(DType::F32, {24}, rng));
    // The activations culib-fuse-epilogues folds into matmuls (plan format
    // 1.5): the epilogue kernel after cuBLASLt.
    for (const char *act :
         {"gelu_tanh", "silu", "sigmoid", "tanh", "hard_swish"})
      mm({8, 16}, {16, 24}, {8, 24}, {{"epilogue", std::string(act)}},
         std::nullopt, rnd(DType::F32, {24}, rng));
    mm({8, 16}, {16, 24}, {8, 24}, {{"alpha", 0.5}, {"beta", 2.0}},
       rnd(t, {8, 24}, rng));
    mm({8, 16}, {16, 24}, {8, 24}, {{"beta", -1.0}}, rnd(t, {24}, rng));
    if (t != DType::F32) // f16/bf16 inputs, an f32 result
      mm({8, 16}, {16, 24}, {8, 24}, {}, std::nullopt, std::nullopt,
         DType::F32);
    else // f32 inputs narrowed to f16 (an output cast folded in): staged
      mm({8, 16}, {16, 24}, {8, 24}, {{"epilogue", std::string("gelu")}},
         std::nullopt, rnd(DType::F32, {24}, rng), DType::F16);
    // A weight gradient X^T dY with the bias gradient sum(dY) (format 1.8),
    // dY read as it is and transposed.
    for (int64_t transB : {0, 1}) {
      INFO("bias_grad, trans_b " << transB);
      std::vector<PlanAttr> attrs{
          {"has_c", int64_t(0)},         {"has_bias", int64_t(0)},
          {"has_bias_grad", int64_t(1)}, {"trans_a", int64_t(1)},
          {"trans_b", transB},           {"compute_type", int64_t(1)}};
      compareCall(
          oneCall("cublaslt.matmul", attrs,
                  {{"a", rnd(t, {64, 24}, rng)},
                   {"b", rnd(t, transB ? Shape{12, 64} : Shape{64, 12}, rng)}},
                  {{"d", t, {24, 12}}, {"bias_grad", t, {1, 12}}}));
    }
    // dW = dY^T X: the sums of op(A) = dY^T.
    compareCall(
        oneCall("cublaslt.matmul",
                {{"has_c", int64_t(0)},
                 {"has_bias", int64_t(0)},
                 {"has_bias_grad", int64_t(1)},
                 {"bias_grad_of_a", int64_t(1)},
                 {"trans_a", int64_t(1)},
                 {"compute_type", int64_t(1)}},
                {{"a", rnd(t, {64, 12}, rng)}, {"b", rnd(t, {64, 24}, rng)}},
                {{"d", t, {12, 24}}, {"bias_grad", t, {12}}}));
  }
}

TEST_CASE("CUDA: cudnn.conv_fwd", "[cuda][device]") {
  Rng rng(3);
  auto conv = [&](DType t, Shape x, Shape w, Shape y, std::vector<int64_t> pads,
                  std::vector<int64_t> strides, std::vector<int64_t> dil,
                  int64_t groups, std::string layout, std::string act,
                  bool bias, std::optional<DType> yt = std::nullopt) {
    INFO("dtype " << dtypeName(t) << " x " << x.size() << "-d " << layout);
    std::vector<Arg> args{{"x", rnd(t, x, rng)}, {"w", rnd(t, w, rng)}};
    int64_t m = layout == "nhwc" ? y.back() : y[1];
    if (bias)
      args.push_back({"bias", rnd(DType::F32, {m}, rng)});
    compareCall(oneCall("cudnn.conv_fwd",
                        {{"has_bias", int64_t(bias)},
                         {"pads", pads},
                         {"strides", strides},
                         {"dilations", dil},
                         {"groups", groups},
                         {"compute_type", int64_t(1)},
                         {"layout", layout},
                         {"activation", act},
                         {"clip_min", 0.0}, // for "clip" (ReLU6)
                         {"clip_max", 0.5}},
                        std::move(args), {{"y", yt.value_or(t), y}}));
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    conv(t, {2, 4, 9, 9}, {8, 4, 3, 3}, {2, 8, 9, 9}, {1, 1, 1, 1}, {1, 1},
         {1, 1}, 1, "nchw", "none", false);
    conv(t, {2, 4, 9, 9}, {6, 2, 3, 3}, {2, 6, 4, 4}, {0, 0, 1, 1}, {2, 2},
         {1, 1}, 2, "nchw", "relu", true);
    conv(t, {1, 3, 11, 10}, {4, 3, 3, 3}, {1, 4, 7, 6}, {0, 0, 0, 0}, {1, 1},
         {2, 2}, 1, "nchw", "none", true);
    conv(t, {2, 7, 7, 4}, {8, 3, 3, 4}, {2, 5, 5, 8}, {0, 0, 0, 0}, {1, 1},
         {1, 1}, 1, "nhwc", "relu", true);
    conv(t, {2, 7, 7, 4}, {8, 1, 1, 4}, {2, 7, 7, 8}, {0, 0, 0, 0}, {1, 1},
         {1, 1}, 1, "nhwc", "clip", true);
    // The activations culib-fuse-epilogues folds (EfficientNet's SiLU on a
    // depthwise convolution, ...).
    for (const char *act :
         {"silu", "sigmoid", "tanh", "hard_swish", "gelu", "gelu_tanh"})
      conv(t, {2, 7, 7, 8}, {8, 3, 3, 1}, {2, 7, 7, 8}, {1, 1, 1, 1}, {1, 1},
           {1, 1}, 8, "nhwc", act, true);
    // A 16-bit convolution into f32 (an output cast folded in): cuDNN in
    // 16 bits, the epilogue kernel widening.
    if (t != DType::F32)
      conv(t, {2, 7, 7, 4}, {8, 3, 3, 4}, {2, 5, 5, 8}, {0, 0, 0, 0}, {1, 1},
           {1, 1}, 1, "nhwc", "gelu", true, DType::F32);
    conv(t, {2, 3, 20}, {5, 3, 3}, {2, 5, 20}, {1, 1}, {1}, {1}, 1, "nchw",
         "none", false);
    conv(t, {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {1, 3, 3, 4, 5},
         {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, 1, "nchw", "none", false);
  }
  conv(DType::F16, {2, 4, 8, 8}, {8, 4, 3, 3}, {2, 8, 6, 6}, {0, 0, 0, 0},
       {1, 1}, {1, 1}, 1, "nchw", "relu", true, DType::F32);
  // A residual (a ResNet block's shortcut) before the ReLU, apart from y
  // and in place.
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (bool inPlace : {false, true}) {
      INFO("residual " << dtypeName(t) << (inPlace ? ", in place" : ""));
      std::vector<Arg> args{{"x", rnd(t, {2, 5, 5, 8}, rng)},
                            {"w", rnd(t, {16, 1, 1, 8}, rng)},
                            {"bias", rnd(DType::F32, {16}, rng)},
                            {"residual", rnd(t, {2, 5, 5, 16}, rng)}};
      Res y{"y", t, {2, 5, 5, 16}};
      if (inPlace)
        y.aliasOf = 3;
      if (inPlace)
        y.keepOperand = true;
      compareCall(oneCall("cudnn.conv_fwd",
                          {{"has_bias", int64_t(1)},
                           {"has_residual", int64_t(1)},
                           {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                           {"strides", std::vector<int64_t>{1, 1}},
                           {"dilations", std::vector<int64_t>{1, 1}},
                           {"compute_type", int64_t(1)},
                           {"layout", std::string("nhwc")},
                           {"activation", std::string("relu")}},
                          std::move(args), {y}));
    }
}

TEST_CASE("CUDA: cudnn.conv_bwd_data and conv_bwd_filter", "[cuda][device]") {
  Rng rng(4);
  for (DType t : {DType::F32, DType::F16}) {
    INFO("dtype " << dtypeName(t));
    // ConvTranspose: stride 2, output padding 1, groups 2, bias.
    compareCall(oneCall("cudnn.conv_bwd_data",
                        {{"has_bias", int64_t(1)},
                         {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                         {"strides", std::vector<int64_t>{2, 2}},
                         {"groups", int64_t(2)}},
                        {{"x", rnd(t, {2, 4, 5, 5}, rng)},
                         {"w", rnd(t, {4, 3, 3, 3}, rng)},
                         {"bias", rnd(t, {6}, rng)}},
                        {{"y", t, {2, 6, 10, 10}}}));
    // Asymmetric pads.
    compareCall(oneCall(
        "cudnn.conv_bwd_data",
        {{"has_bias", int64_t(0)}, {"pads", std::vector<int64_t>{1, 0, 0, 1}}},
        {{"x", rnd(t, {1, 3, 4, 4}, rng)}, {"w", rnd(t, {3, 2, 3, 3}, rng)}},
        {{"y", t, {1, 2, 5, 5}}}));
    // The filter gradient, in the data's dtype and in f32.
    for (DType dw : {t, DType::F32})
      compareCall(oneCall("cudnn.conv_bwd_filter",
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"groups", int64_t(2)},
                           {"compute_type", int64_t(1)}},
                          {{"x", rnd(t, {2, 4, 9, 9}, rng)},
                           {"dy", rnd(t, {2, 6, 5, 5}, rng)}},
                          {{"dw", dw, {6, 2, 3, 3}}}),
                  Tol{2e-2, 2e-2});
    compareCall(oneCall("cudnn.conv_bwd_filter",
                        {{"pads", std::vector<int64_t>{0, 0, 1, 1}}},
                        {{"x", rnd(t, {2, 3, 6, 6}, rng)},
                         {"dy", rnd(t, {2, 4, 6, 6}, rng)}},
                        {{"dw", t, {4, 3, 2, 2}}}),
                Tol{2e-2, 2e-2});
  }
}

TEST_CASE("CUDA: cudnn.pool and pool_bwd", "[cuda][device]") {
  Rng rng(5);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    for (std::string mode : {"max", "avg", "avg_include_pad"}) {
      INFO("mode " << mode);
      bool max = mode == "max";
      std::vector<Res> res{{"y", t, {2, 3, 5, 5}}};
      if (max)
        res.push_back({"indices", DType::I64, {2, 3, 5, 5}});
      // Ceil-mode output (5 of 4..5), asymmetric pads.
      compareCall(oneCall("cudnn.pool",
                          {{"has_indices", int64_t(max)},
                           {"mode", mode},
                           {"window", std::vector<int64_t>{3, 3}},
                           {"pads", std::vector<int64_t>{1, 1, 0, 0}},
                           {"strides", std::vector<int64_t>{2, 2}}},
                          {{"x", rnd(t, {2, 3, 9, 9}, rng)}}, res));
      compareCall(oneCall(
          "cudnn.pool_bwd",
          {{"mode", mode},
           {"window", std::vector<int64_t>{3, 3}},
           {"pads", std::vector<int64_t>{1, 1, 0, 0}},
           {"strides", std::vector<int64_t>{2, 2}}},
          {{"x", rnd(t, {2, 3, 9, 9}, rng)}, {"dy", rnd(t, {2, 3, 5, 5}, rng)}},
          {{"dx", t, {2, 3, 9, 9}}}));
    }
    // Dilation, 1-D and 3-D.
    compareCall(oneCall("cudnn.pool",
                        {{"has_indices", int64_t(0)},
                         {"mode", std::string("max")},
                         {"window", std::vector<int64_t>{2, 2}},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{1, 1}},
                         {"dilations", std::vector<int64_t>{2, 2}}},
                        {{"x", rnd(t, {1, 2, 6, 6}, rng)}},
                        {{"y", t, {1, 2, 4, 4}}}));
    compareCall(oneCall("cudnn.pool",
                        {{"has_indices", int64_t(0)},
                         {"mode", std::string("avg")},
                         {"window", std::vector<int64_t>{3}},
                         {"pads", std::vector<int64_t>{1, 1}},
                         {"strides", std::vector<int64_t>{2}}},
                        {{"x", rnd(t, {2, 3, 10}, rng)}},
                        {{"y", t, {2, 3, 5}}}));
    compareCall(oneCall("cudnn.pool",
                        {{"has_indices", int64_t(0)},
                         {"mode", std::string("max")},
                         {"window", std::vector<int64_t>{2, 2, 2}},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{2, 2, 2}}},
                        {{"x", rnd(t, {1, 2, 4, 6, 4}, rng)}},
                        {{"y", t, {1, 2, 2, 3, 2}}}));
  }
}

TEST_CASE("CUDA: batch norm", "[cuda][device]") {
  // Every variant on cuDNN (CudnnSpatial; Auto for inference and f32
  // channels-first training) and on the own kernels (Own; Auto for 16-bit or
  // channels-last training); a 16-bit bias always runs on the own kernels.
  using cuda::BatchNormImpl;
  Rng rng(6);
  for (BatchNormImpl impl :
       {BatchNormImpl::Auto, BatchNormImpl::CudnnSpatial, BatchNormImpl::Own})
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      for (auto [s, layout] :
           {std::pair<Shape, const char *>{{4, 3, 5, 5}, "nchw"},
            {{8, 6}, "nchw"},
            {{2, 3, 4, 2, 3}, "nchw"},
            {{4, 5, 5, 3}, "nhwc"},
            {{2, 4, 3, 8}, "nhwc"},
            // Channels last, the own kernels' row slices: 40 channels (a
            // block of 32 and a partial one), 3,000 rows in 256 slices of
            // which some sum two groups of 8 rows.
            {{30, 10, 10, 40}, "nhwc"}}) {
        INFO("impl " << static_cast<int>(impl) << ", dtype " << dtypeName(t)
                     << ", layout " << layout << ", rank " << s.size());
        int64_t c = std::string(layout) == "nhwc" ? s.back() : s[1];
        std::vector<PlanAttr> common{{"epsilon", 1e-5},
                                     {"layout", std::string(layout)}};
        for (DType biasType : {DType::F32, DType::F16})
          compareCall(oneCall("cudnn.batch_norm_inference", common,
                              {{"x", rnd(t, s, rng)},
                               {"scale", rnd(DType::F32, {c}, rng)},
                               {"bias", rnd(biasType, {c}, rng)},
                               {"mean", rnd(DType::F32, {c}, rng)},
                               {"var", rnd(DType::F32, {c}, rng, 0.5, 2)}},
                              {{"y", t, s}}),
                      std::nullopt, impl);
        // And as a data-parallel step's (sync_ranks), one rank: the
        // synchronised passes give the plain batch norm's results.
        for (bool synced : {false, true}) {
          INFO("sync_ranks " << synced);
          std::vector<PlanAttr> attrs = common;
          if (synced)
            attrs.push_back({"sync_ranks", int64_t(1)});
          std::vector<PlanAttr> training = attrs;
          training.push_back({"momentum", 0.9});
          compareCall(oneCall("cudnn.batch_norm_training", training,
                              {{"x", rnd(t, s, rng)},
                               {"scale", rnd(DType::F32, {c}, rng)},
                               {"bias", rnd(DType::F32, {c}, rng)},
                               {"mean", rnd(DType::F32, {c}, rng)},
                               {"var", rnd(DType::F32, {c}, rng, 0.5, 2)}},
                              {{"y", t, s},
                               {"running_mean", DType::F32, {c}, 3, true},
                               {"running_var", DType::F32, {c}, 4, true}}),
                      std::nullopt, impl);
          compareCall(oneCall("cudnn.batch_norm_bwd", attrs,
                              {{"x", rnd(t, s, rng)},
                               {"scale", rnd(DType::F32, {c}, rng)},
                               {"dy", rnd(t, s, rng)}},
                              {{"dx", t, s},
                               {"dscale", DType::F32, {c}},
                               {"dbias", DType::F32, {c}}}),
                      Tol{1e-2, 1e-2}, impl);
        }
      }
    }
}

TEST_CASE("CUDA: kernel.scaled_softmax", "[cuda][device]") {
  Rng rng(8);
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (bool hasMask : {false, true}) {
      INFO("dtype " << dtypeName(t) << (hasMask ? " with a mask" : ""));
      std::vector<Arg> in = {{"x", rnd(t, {2, 3, 300}, rng, -8, 8)}};
      if (hasMask)
        in.emplace_back("mask", rnd(DType::F32, {2, 1, 300}, rng, -4, 0));
      compareCall(oneCall("kernel.scaled_softmax",
                          {{"has_mask", int64_t(hasMask)}, {"scale", 0.125}},
                          std::move(in), {{"y", t, {2, 3, 300}}}));
    }
}

TEST_CASE("CUDA: cudnn.softmax", "[cuda][device]") {
  Rng rng(7);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (int64_t log : {0, 1})
      for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
               {{4, 1000}, -1}, {{3, 7, 5}, 1}, {{6, 10}, 1}, {{2, 3}, 0}}) {
        INFO("dtype " << dtypeName(t) << " log " << log << " axis " << axis);
        compareCall(oneCall("cudnn.softmax", {{"axis", axis}, {"log", log}},
                            {{"x", rnd(t, shape, rng, -4, 4)}},
                            {{"y", t, shape}}));
      }
}
