//===- CudaPlanningConvTest.cpp - convolutions, pooling -------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// the cuDNN descriptor dims, explicit padding, the algorithm-cache keys and
// pooling.
//
//===----------------------------------------------------------------------===//
#include "CudaPlanningTestSupport.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace mp::rt;
using namespace mp::rt::cuda;
using mp::rt::test::Addr;
using mp::rt::test::callOf;
using mp::rt::test::messageOf;

namespace {

PlanCall convCall(std::vector<int64_t> pads, std::vector<PlanAttr> extra = {},
                  bool hasBias = false) {
  size_t k = pads.size() / 2;
  std::vector<PlanAttr> a{{"has_bias", int64_t(hasBias)},
                          {"pads", std::move(pads)},
                          {"strides", std::vector<int64_t>(k, 1)},
                          {"dilations", std::vector<int64_t>(k, 1)},
                          {"compute_type", int64_t(1)}};
  for (PlanAttr &e : extra) {
    auto it = std::find_if(a.begin(), a.end(),
                           [&](const PlanAttr &x) { return x.name == e.name; });
    if (it != a.end())
      *it = e;
    else
      a.push_back(e);
  }
  return callOf("cudnn.conv_fwd", std::move(a));
}

/// The forward convolution with bias of x, w, b into y, no padding, with
/// the `extra` attributes.
Result<ConvPlan> planBiasConv(const TensorDesc &x, const TensorDesc &w,
                              const TensorDesc &b, const TensorDesc &y,
                              std::vector<PlanAttr> extra) {
  return planConv(ConvKind::Forward,
                  convCall({0, 0, 0, 0}, std::move(extra), true), {x, w, b},
                  {y});
}

} // namespace

TEST_CASE("convolution planning: cuDNN descriptors", "[cuda][planning]") {
  Addr at;
  SECTION("2-D NCHW, symmetric pads: cuDNN pads") {
    TensorDesc x = at(DType::F16, {2, 4, 9, 9}),
               w = at(DType::F16, {8, 2, 3, 3}),
               y = at(DType::F16, {2, 8, 5, 5});
    Result<ConvPlan> p = planConv(
        ConvKind::Forward,
        convCall({1, 1, 1, 1}, {{"strides", std::vector<int64_t>{2, 2}},
                                {"groups", int64_t(2)}}),
        {x, w}, {y});
    REQUIRE(p);
    CHECK(p->dataType == DType::F16);
    CHECK(p->xDims == std::vector<int>{2, 4, 9, 9});
    CHECK(p->wDims == std::vector<int>{8, 2, 3, 3});
    CHECK(p->yDims == std::vector<int>{2, 8, 5, 5});
    CHECK(p->pads == std::vector<int>{1, 1});
    CHECK(p->strides == std::vector<int>{2, 2});
    CHECK(p->groups == 2);
    CHECK_FALSE(p->explicitPad);
    CHECK_FALSE(p->epilogue);
    CHECK_FALSE(p->convertIn0);
  }
  SECTION("1-D gets a trailing dim of 1") {
    TensorDesc x = at(DType::F32, {1, 3, 10}), w = at(DType::F32, {4, 3, 3}),
               y = at(DType::F32, {1, 4, 8});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->xDims == std::vector<int>{1, 3, 10, 1});
    CHECK(p->wDims == std::vector<int>{4, 3, 3, 1});
    CHECK(p->yDims == std::vector<int>{1, 4, 8, 1});
    CHECK(p->pads == std::vector<int>{0, 0});
    CHECK(p->strides == std::vector<int>{1, 1});
  }
  SECTION("asymmetric pads pad x explicitly") {
    TensorDesc x = at(DType::F16, {1, 2, 5, 5}),
               w = at(DType::F16, {3, 2, 2, 2}),
               y = at(DType::F16, {1, 3, 5, 5});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0, 1, 1}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->explicitPad);
    CHECK(p->pads == std::vector<int>{0, 0});
    CHECK(p->xDims == std::vector<int>{1, 2, 6, 6});
    CHECK(p->paddedShape == Shape{1, 2, 6, 6});
    CHECK(p->padBytes == 2 * 36 * 2);
    CHECK(p->padBegin == std::vector<int64_t>{0, 0});
  }
  SECTION("bias and relu: the epilogue over channels") {
    TensorDesc x = at(DType::F16, {2, 4, 6, 6}),
               w = at(DType::F16, {8, 4, 3, 3}), b = at(DType::F32, {8}),
               y = at(DType::F16, {2, 8, 4, 4});
    Result<ConvPlan> p =
        planBiasConv(x, w, b, y, {{"activation", std::string("relu")}});
    REQUIRE(p);
    CHECK(p->epilogue);
    CHECK(p->epi.act == kActRelu);
    CHECK(p->epi.biasDtype == 1);
    CHECK(p->epi.geom.outer == 2);
    CHECK(p->epi.geom.c == 8);
    CHECK(p->epi.geom.inner == 16);
    CHECK_FALSE(p->outputToScratch);
  }
  SECTION("clip (ReLU6): the epilogue clamps to the bounds") {
    TensorDesc x = at(DType::F16, {2, 4, 6, 6}),
               w = at(DType::F16, {8, 4, 3, 3}), b = at(DType::F32, {8}),
               y = at(DType::F16, {2, 8, 4, 4});
    Result<ConvPlan> p = planBiasConv(x, w, b, y,
                                      {{"activation", std::string("clip")},
                                       {"clip_min", 0.0},
                                       {"clip_max", 6.0}});
    REQUIRE(p);
    CHECK(p->epilogue);
    CHECK(p->epi.act == kActClip);
    CHECK(p->epi.clipMin == 0.0f);
    CHECK(p->epi.clipMax == 6.0f);
    // Without its bounds, or with them reversed, the call is refused.
    CHECK_FALSE(
        planBiasConv(x, w, b, y, {{"activation", std::string("clip")}}));
    CHECK_FALSE(planBiasConv(x, w, b, y,
                             {{"activation", std::string("clip")},
                              {"clip_min", 6.0},
                              {"clip_max", 0.0}}));
  }
  SECTION("SiLU, sigmoid, tanh, hard swish, GELU: the epilogue's "
          "activation") {
    TensorDesc x = at(DType::BF16, {2, 4, 6, 6}),
               w = at(DType::BF16, {8, 4, 3, 3}), b = at(DType::F32, {8}),
               y = at(DType::BF16, {2, 8, 4, 4});
    const std::pair<const char *, EpilogueAct> acts[] = {
        {"silu", kActSilu}, {"sigmoid", kActSigmoid},
        {"tanh", kActTanh}, {"hard_swish", kActHardSwish},
        {"gelu", kActGelu}, {"gelu_tanh", kActGeluTanh}};
    for (auto [name, act] : acts) {
      INFO(name);
      Result<ConvPlan> p =
          planBiasConv(x, w, b, y, {{"activation", std::string(name)}});
      REQUIRE(p);
      CHECK(p->epilogue);
      CHECK(p->epi.act == act);
    }
    Result<ConvPlan> unknown =
        planBiasConv(x, w, b, y, {{"activation", std::string("swish")}});
    REQUIRE_FALSE(unknown);
    CHECK_THAT(unknown.status().message(),
               Catch::Contains("(none, relu, gelu, gelu_tanh, clip, silu, "
                               "sigmoid, tanh, hard_swish)"));
  }
  SECTION("a residual goes to the epilogue; in place, cuDNN writes the "
          "scratch") {
    TensorDesc x = at(DType::F16, {2, 6, 6, 4}),
               w = at(DType::F16, {8, 3, 3, 4}), b = at(DType::F32, {8}),
               r = at(DType::F16, {2, 4, 4, 8}),
               y = at(DType::F16, {2, 4, 4, 8});
    PlanCall call = convCall({0, 0, 0, 0},
                             {{"has_residual", int64_t(1)},
                              {"layout", std::string("nhwc")},
                              {"activation", std::string("relu")}},
                             true);
    Result<ConvPlan> p = planConv(ConvKind::Forward, call, {x, w, b, r}, {y});
    REQUIRE(p);
    CHECK(p->epilogue);
    CHECK(p->epi.residualDtype == 10); // f16's ONNX code
    CHECK(p->epi.residual == r.ptr<const void>());
    CHECK(p->epi.act == kActRelu);
    CHECK_FALSE(p->outputToScratch);
    Result<ConvPlan> inPlace =
        planConv(ConvKind::Forward, call, {x, w, b, y}, {y});
    REQUIRE(inPlace);
    CHECK(inPlace->outputToScratch);
    CHECK(inPlace->outBytes == uint64_t(y.numElements()) * 2);
    // The CPU's words for a residual of another shape.
    Result<ConvPlan> bad = planConv(
        ConvKind::Forward, call, {x, w, b, at(DType::F16, {2, 4, 4, 4})}, {y});
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.status().message(), Catch::Contains("residual has shape"));
    // Plans from before the residual (no has_residual) have none.
    CHECK(planBiasConv(x, w, b, y, {{"layout", std::string("nhwc")}}));
  }
  SECTION("NHWC: dims in NCHW order; channels last for the epilogue") {
    TensorDesc x = at(DType::F16, {2, 6, 6, 4}),
               w = at(DType::F16, {8, 3, 3, 4}), b = at(DType::F16, {8}),
               y = at(DType::F16, {2, 4, 4, 8});
    Result<ConvPlan> p =
        planBiasConv(x, w, b, y, {{"layout", std::string("nhwc")}});
    REQUIRE(p);
    CHECK(p->nhwc);
    CHECK(p->xDims == std::vector<int>{2, 4, 6, 6});
    CHECK(p->wDims == std::vector<int>{8, 4, 3, 3});
    CHECK(p->yDims == std::vector<int>{2, 8, 4, 4});
    CHECK(p->epi.geom.c == 8);
    CHECK(p->epi.geom.inner == 1);
    CHECK(p->epi.geom.outer == 32);
  }
  SECTION("an f32 result of f16 inputs: cuDNN in f16, widened after") {
    // A cast folded into the convolution (culib-fuse-epilogues): the
    // tensor-core path, its result widened by the epilogue kernel.
    TensorDesc x = at(DType::F16, {1, 2, 4, 4}),
               w = at(DType::F16, {3, 2, 3, 3}),
               y = at(DType::F32, {1, 3, 2, 2});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->dataType == DType::F16);
    CHECK_FALSE(p->convertIn0);
    CHECK_FALSE(p->convertIn1);
    CHECK(p->outputToScratch);
    CHECK(p->outBytes == 12 * 2);
    CHECK(p->epilogue);
    CHECK(p->epi.accDtype == static_cast<int32_t>(DType::F16));
    CHECK(p->epi.outDtype == static_cast<int32_t>(DType::F32));
  }
  SECTION("an f16 result of f32 inputs computes in f32, rounded after") {
    TensorDesc x = at(DType::F32, {1, 2, 4, 4}),
               w = at(DType::F32, {3, 2, 3, 3}),
               y = at(DType::F16, {1, 3, 2, 2});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->dataType == DType::F32);
    CHECK(p->outputToScratch);
    CHECK(p->outBytes == 12 * 4);
    CHECK(p->epi.outDtype == static_cast<int32_t>(DType::F16));
  }
  SECTION("backward data (ConvTranspose)") {
    // x [N, C, in], w [C, M/g, k]: y = [N, M, (in - 1) * s + k - pads].
    TensorDesc x = at(DType::F16, {1, 4, 3, 3}),
               w = at(DType::F16, {4, 2, 3, 3}),
               y = at(DType::F16, {1, 2, 7, 7});
    PlanCall c = callOf("cudnn.conv_bwd_data",
                        {{"has_bias", int64_t(0)},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{2, 2}}});
    Result<ConvPlan> p = planConv(ConvKind::BackwardData, c, {x, w}, {y});
    REQUIRE(p);
    CHECK(p->xDims == std::vector<int>{1, 2, 7, 7}); // the data gradient
    CHECK(p->yDims == std::vector<int>{1, 4, 3, 3}); // the incoming gradient
    CHECK(p->wDims == std::vector<int>{4, 2, 3, 3});
    CHECK(p->strides == std::vector<int>{2, 2});
    // Output padding of 1 (< stride) is fine.
    TensorDesc y8 = at(DType::F16, {1, 2, 8, 8});
    CHECK(planConv(ConvKind::BackwardData, c, {x, w}, {y8}));
    // Asymmetric pads: the padded gradient, cropped.
    PlanCall asym = c;
    asym.attributes[1].value = std::vector<int64_t>{1, 1, 0, 0};
    TensorDesc y6 = at(DType::F16, {1, 2, 6, 6});
    Result<ConvPlan> q = planConv(ConvKind::BackwardData, asym, {x, w}, {y6});
    REQUIRE(q);
    CHECK(q->explicitPad);
    CHECK(q->paddedShape == Shape{1, 2, 7, 7});
  }
  SECTION("backward filter") {
    TensorDesc x = at(DType::BF16, {2, 4, 6, 6}),
               dy = at(DType::BF16, {2, 8, 4, 4}),
               dw = at(DType::F32, {8, 4, 3, 3});
    PlanCall c =
        callOf("cudnn.conv_bwd_filter", {{"compute_type", int64_t(1)}});
    Result<ConvPlan> p = planConv(ConvKind::BackwardFilter, c, {x, dy}, {dw});
    REQUIRE(p);
    CHECK(p->dataType == DType::F32);
    CHECK(p->convertIn0);
    CHECK(p->convertIn1);
    CHECK(p->xDims == std::vector<int>{2, 4, 6, 6});
    CHECK(p->yDims == std::vector<int>{2, 8, 4, 4});
    CHECK(p->wDims == std::vector<int>{8, 4, 3, 3});
    CHECK(messageOf(planConv(ConvKind::BackwardFilter, c,
                             {x, at(DType::BF16, {2, 8, 5, 5})}, {dw})) ==
          "conv_bwd_filter: dy has shape [2, 8, 5, 5], expected [2, 8, 4, 4]");
  }
  SECTION("errors as the CPU's") {
    TensorDesc x = at(DType::F16, {2, 4, 9, 9}),
               w = at(DType::F16, {8, 4, 3, 3});
    CHECK(messageOf(planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w},
                             {at(DType::F16, {2, 8, 6, 6})})) ==
          "conv: y has shape [2, 8, 6, 6], expected [2, 8, 7, 7]");
    CHECK(messageOf(planConv(ConvKind::Forward, convCall({0, 0}), {x, w},
                             {at(DType::F16, {2, 8, 7, 7})})) ==
          "attribute 'pads' must have 4 values (begins, then ends, for 2 "
          "spatial dims), got 2");
    TensorDesc x4 = at(DType::F16, {1, 1, 3, 3, 3, 3}),
               w4 = at(DType::F16, {1, 1, 1, 1, 1, 1});
    CHECK(messageOf(planConv(ConvKind::Forward,
                             convCall({0, 0, 0, 0, 0, 0, 0, 0}), {x4, w4},
                             {at(DType::F16, {1, 1, 3, 3, 3, 3})})) ==
          "conv: 4 spatial dimensions are not implemented on the GPU (cuDNN: "
          "1 to 3)");
  }
}

TEST_CASE("convolution algorithm cache keys", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F16, {2, 4, 9, 9}), w = at(DType::F16, {8, 4, 3, 3}),
             y = at(DType::F16, {2, 8, 7, 7});
  Result<ConvPlan> p =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w}, {y});
  REQUIRE(p);
  // The same shapes elsewhere in memory: the same key.
  Result<ConvPlan> q =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}),
               {at(DType::F16, {2, 4, 9, 9}), at(DType::F16, {8, 4, 3, 3})},
               {at(DType::F16, {2, 8, 7, 7})});
  REQUIRE(q);
  CHECK(convAlgoKey(*p, 0) == convAlgoKey(*q, 0));
  CHECK(convAlgoKey(*p, 0) ==
        "fwd dev0 f16 nchw x2,4,9,9 w8,4,3,3 y2,8,7,7 p0,0 s1,1 d1,1 g1");
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*p, 1));
  Result<ConvPlan> f32 =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}),
               {at(DType::F32, {2, 4, 9, 9}), at(DType::F32, {8, 4, 3, 3})},
               {at(DType::F32, {2, 8, 7, 7})});
  REQUIRE(f32);
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*f32, 0));
  Result<ConvPlan> dil = planConv(
      ConvKind::Forward,
      convCall({0, 0, 0, 0}, {{"dilations", std::vector<int64_t>{2, 2}}}),
      {x, w}, {at(DType::F16, {2, 8, 5, 5})});
  REQUIRE(dil);
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*dil, 0));
}

TEST_CASE("pooling planning", "[cuda][planning]") {
  Addr at;
  auto call = [](const char *mode, bool indices) {
    return callOf("cudnn.pool", {{"has_indices", int64_t(indices)},
                                 {"mode", std::string(mode)},
                                 {"window", std::vector<int64_t>{2, 2}},
                                 {"pads", std::vector<int64_t>{0, 0, 1, 1}},
                                 {"strides", std::vector<int64_t>{2, 2}}});
  };
  TensorDesc x = at(DType::F16, {2, 3, 8, 8});
  SECTION("floor and ceil output sizes, asymmetric pads, indices") {
    Result<PoolPlan> floor =
        planPool(false, call("max", true), {x},
                 {at(DType::F16, {2, 3, 4, 4}), at(DType::I64, {2, 3, 4, 4})});
    REQUIRE(floor);
    CHECK(floor->params.k == 2);
    CHECK(floor->params.padB[0] == 0);
    CHECK(floor->params.padE[0] == 1);
    CHECK(floor->params.outSize == 16);
    CHECK(floor->params.inSize == 64);
    CHECK(floor->params.indices != nullptr);
    Result<PoolPlan> ceil = planPool(false, call("avg_include_pad", false), {x},
                                     {at(DType::F16, {2, 3, 5, 5})});
    REQUIRE(ceil);
    CHECK(ceil->params.countIncludePad == 1);
    CHECK(ceil->params.isMax == 0);
    CHECK(messageOf(planPool(false, call("max", false), {x},
                             {at(DType::F16, {2, 3, 6, 6})})) ==
          "pool: y [2, 3, 6, 6] has 6 outputs along spatial dimension 0, "
          "expected 4 (floor) or 5 (ceil)");
    CHECK(messageOf(planPool(
              false, call("avg", true), {x},
              {at(DType::F16, {2, 3, 4, 4}), at(DType::I64, {2, 3, 4, 4})})) ==
          "indices are only produced by mode 'max', not 'avg'");
  }
  SECTION("the backward's accumulator") {
    PlanCall c = call("max", false);
    c.kind = "cudnn.pool_bwd";
    c.attributes.erase(c.attributes.begin()); // no has_indices
    Result<PoolPlan> p = planPool(true, c, {x, at(DType::F16, {2, 3, 4, 4})},
                                  {at(DType::F16, {2, 3, 8, 8})});
    REQUIRE(p);
    CHECK(p->backward);
    CHECK(p->accType == DType::F32);
    CHECK(p->accBytes == 2 * 3 * 64 * 4);
    TensorDesc x32 = at(DType::F32, {2, 3, 8, 8});
    Result<PoolPlan> q = planPool(true, c, {x32, at(DType::F32, {2, 3, 4, 4})},
                                  {at(DType::F32, {2, 3, 8, 8})});
    REQUIRE(q);
    CHECK(q->accBytes == 0);
  }
}
