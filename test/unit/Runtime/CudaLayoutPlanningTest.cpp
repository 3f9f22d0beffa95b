//===- CudaLayoutPlanningTest.cpp - channels-last calls on the GPU --------===//
//
// The CUDA planning of the calls that culib-nhwc-layout makes channels last
// (runs in every build, no GPU needed): pooling and its backward, the batch
// norms and their backward, and the backward convolutions. Each NHWC plan
// must describe the same computation as the NCHW plan of the permuted
// tensors: the same cuDNN dims (always in NCHW order, with the NHWC tensor
// format), window geometry or per-channel geometry.
//
//===----------------------------------------------------------------------===//
#include "CudaPlanningTestSupport.h"

#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <catch2/catch.hpp>

using namespace mp::rt;
using namespace mp::rt::cuda;
using mp::rt::test::Addr;

namespace {

/// [N, C, spatial...] -> [N, spatial..., C].
Shape toNHWC(const Shape &s) {
  Shape out{s[0]};
  out.insert(out.end(), s.begin() + 2, s.end());
  out.push_back(s[1]);
  return out;
}

PlanCall withLayout(PlanCall call, const char *layout) {
  call.attributes.push_back({"layout", std::string(layout)});
  return call;
}

PlanCall poolCall(const char *kind, const char *mode) {
  PlanCall c;
  c.kind = kind;
  c.attributes = {{"mode", std::string(mode)},
                  {"window", std::vector<int64_t>{3, 2}},
                  {"pads", std::vector<int64_t>{1, 0, 1, 0}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"dilations", std::vector<int64_t>{1, 1}}};
  if (std::string(kind) == "cudnn.pool")
    c.attributes.push_back({"has_indices", int64_t(0)});
  return c;
}

PlanCall backwardConvCall(const char *kind, std::vector<int64_t> pads) {
  PlanCall c;
  c.kind = kind;
  c.attributes = {{"pads", std::move(pads)},
                  {"strides", std::vector<int64_t>{2, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"groups", int64_t(2)},
                  {"compute_type", int64_t(1)}};
  if (std::string(kind) == "cudnn.conv_bwd_data")
    c.attributes.push_back({"has_bias", int64_t(0)});
  return c;
}

} // namespace

TEST_CASE("NHWC pooling: channels last, the NCHW windows",
          "[cuda][planning][nhwc]") {
  Addr at;
  Shape x{2, 3, 7, 6}, y{2, 3, 4, 3};
  for (const char *mode : {"max", "avg", "avg_include_pad"}) {
    INFO(mode);
    Result<PoolPlan> nchw =
        planPool(false, withLayout(poolCall("cudnn.pool", mode), "nchw"),
                 {at(DType::F16, x)}, {at(DType::F16, y)});
    Result<PoolPlan> nhwc =
        planPool(false, withLayout(poolCall("cudnn.pool", mode), "nhwc"),
                 {at(DType::F16, toNHWC(x))}, {at(DType::F16, toNHWC(y))});
    REQUIRE(nchw);
    REQUIRE(nhwc);
    const PoolParams &a = nchw->params, &b = nhwc->params;
    CHECK(a.nhwc == 0);
    CHECK(b.nhwc == 1);
    CHECK(b.c == 3);
    CHECK(b.n == 2);
    for (int i = 0; i < 2; ++i) {
      CHECK(b.in[i] == a.in[i]);
      CHECK(b.out[i] == a.out[i]);
      CHECK(b.ker[i] == a.ker[i]);
      CHECK(b.padB[i] == a.padB[i]);
    }
    CHECK(b.inSize == 42);
    CHECK(b.outSize == 12);
  }
  SECTION("backward") {
    Result<PoolPlan> p =
        planPool(true, withLayout(poolCall("cudnn.pool_bwd", "max"), "nhwc"),
                 {at(DType::F16, toNHWC(x)), at(DType::F16, toNHWC(y))},
                 {at(DType::F16, toNHWC(x))});
    REQUIRE(p);
    CHECK(p->params.nhwc == 1);
    CHECK(p->params.c == 3);
    CHECK(p->params.in[0] == 7);
    CHECK(p->params.out[1] == 3);
  }
  SECTION("an NHWC y with other channels is refused") {
    Result<PoolPlan> p =
        planPool(false, withLayout(poolCall("cudnn.pool", "max"), "nhwc"),
                 {at(DType::F16, toNHWC(x))}, {at(DType::F16, {2, 4, 3, 4})});
    REQUIRE_FALSE(p);
    CHECK_THAT(p.message(), Catch::Contains("differ in batch or channels"));
  }
  SECTION("indices need NCHW") {
    PlanCall c = withLayout(poolCall("cudnn.pool", "max"), "nhwc");
    for (PlanAttr &a : c.attributes)
      if (a.name == "has_indices")
        a.value = int64_t(1);
    Result<PoolPlan> p =
        planPool(false, c, {at(DType::F16, toNHWC(x))},
                 {at(DType::F16, toNHWC(y)), at(DType::I64, toNHWC(y))});
    REQUIRE_FALSE(p);
    CHECK_THAT(p.message(), Catch::Contains("need layout 'nchw'"));
  }
  SECTION("an unknown layout is refused") {
    Result<PoolPlan> p =
        planPool(false, withLayout(poolCall("cudnn.pool", "max"), "chwn"),
                 {at(DType::F16, x)}, {at(DType::F16, y)});
    REQUIRE_FALSE(p);
    CHECK_THAT(p.message(), Catch::Contains("unknown value 'chwn'"));
  }
}

TEST_CASE("NHWC batch norm: the channel is the last dim",
          "[cuda][planning][nhwc]") {
  Addr at;
  Shape x{2, 5, 3, 4};
  auto bnCall = [](const char *kind, const char *layout) {
    PlanCall c;
    c.kind = kind;
    c.attributes = {{"epsilon", 1e-5}, {"layout", std::string(layout)}};
    if (std::string(kind) == "cudnn.batch_norm_training")
      c.attributes.push_back({"momentum", 0.9});
    return c;
  };
  auto stats = [&](int64_t c) { return at(DType::F32, {c}); };
  SECTION("inference") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Inference, bnCall("cudnn.batch_norm_inference", "nhwc"),
        {at(DType::F16, toNHWC(x)), stats(5), stats(5), stats(5), stats(5)},
        {at(DType::F16, toNHWC(x))});
    REQUIRE(p);
    CHECK(p->params.geom.outer == 2 * 3 * 4);
    CHECK(p->params.geom.c == 5);
    CHECK(p->params.geom.inner == 1);
    CHECK(p->cudnn.use);
    CHECK(p->cudnn.nhwc);
  }
  SECTION("training and backward") {
    Result<BatchNormPlan> t = planBatchNorm(
        BatchNormKind::Training, bnCall("cudnn.batch_norm_training", "nhwc"),
        {at(DType::F16, toNHWC(x)), stats(5), stats(5), stats(5), stats(5)},
        {at(DType::F16, toNHWC(x)), stats(5), stats(5)});
    REQUIRE(t);
    CHECK(t->params.geom.c == 5);
    Result<BatchNormPlan> b = planBatchNorm(
        BatchNormKind::Backward, bnCall("cudnn.batch_norm_bwd", "nhwc"),
        {at(DType::F16, toNHWC(x)), stats(5), at(DType::F16, toNHWC(x))},
        {at(DType::F16, toNHWC(x)), stats(5), stats(5)});
    REQUIRE(b);
    CHECK(b->params.geom.outer == 24);
    CHECK(b->params.geom.c == 5);
    CHECK(b->params.geom.inner == 1);
    // Auto: the 16-bit training forward and backward on the own kernels.
    for (const BatchNormPlan *p : {&*t, &*b}) {
      CHECK_FALSE(p->cudnn.use);
      CHECK_THAT(p->cudnn.whyNot, Catch::Contains("own kernels"));
    }
    // Asked for cuDNN: [N, C, H * W, 1] channels last.
    for (BatchNormKind kind :
         {BatchNormKind::Training, BatchNormKind::Backward}) {
      bool training = kind == BatchNormKind::Training;
      Result<BatchNormPlan> p = planBatchNorm(
          kind,
          bnCall(training ? "cudnn.batch_norm_training"
                          : "cudnn.batch_norm_bwd",
                 "nhwc"),
          training
              ? std::vector<TensorDesc>{at(DType::F16, toNHWC(x)), stats(5),
                                        stats(5), stats(5), stats(5)}
              : std::vector<TensorDesc>{at(DType::F16, toNHWC(x)), stats(5),
                                        at(DType::F16, toNHWC(x))},
          {at(DType::F16, toNHWC(x)), stats(5), stats(5)},
          BatchNormImpl::CudnnSpatial);
      REQUIRE(p);
      CHECK(p->cudnn.use);
      CHECK(p->cudnn.nhwc);
      CHECK(p->cudnn.dims == std::array<int32_t, 4>{2, 5, 12, 1});
    }
    // A batch beyond cuDNN's limit folds into the spatial dim channels
    // last (inference: N <= 65535).
    Shape rows{70000, 5};
    Result<BatchNormPlan> big = planBatchNorm(
        BatchNormKind::Inference, bnCall("cudnn.batch_norm_inference", "nhwc"),
        {at(DType::F16, rows), stats(5), stats(5), stats(5), stats(5)},
        {at(DType::F16, rows)});
    REQUIRE(big);
    CHECK(big->cudnn.use);
    CHECK(big->cudnn.dims == std::array<int32_t, 4>{1, 5, 70000, 1});
    Result<BatchNormPlan> f32 = planBatchNorm(
        BatchNormKind::Backward, bnCall("cudnn.batch_norm_bwd", "nhwc"),
        {at(DType::F32, toNHWC(x)), stats(5), at(DType::F32, toNHWC(x))},
        {at(DType::F32, toNHWC(x)), stats(5), stats(5)});
    REQUIRE(f32);
    // Auto: channels-last training backward on the own kernels in f32 too
    // (cuDNN 9's is slow channels last); inference stays on cuDNN.
    CHECK_FALSE(f32->cudnn.use);
    CHECK(f32->params.rowSlices == 3); // 24 rows: a slice per 8
    Result<BatchNormPlan> f32Inference = planBatchNorm(
        BatchNormKind::Inference, bnCall("cudnn.batch_norm_inference", "nhwc"),
        {at(DType::F32, toNHWC(x)), stats(5), stats(5), stats(5), stats(5)},
        {at(DType::F32, toNHWC(x))});
    REQUIRE(f32Inference);
    CHECK(f32Inference->cudnn.use);
  }
  SECTION("statistics of dim 1's size are refused in NHWC") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Inference, bnCall("cudnn.batch_norm_inference", "nhwc"),
        {at(DType::F16, x), stats(5), stats(5), stats(5), stats(5)},
        {at(DType::F16, x)});
    REQUIRE_FALSE(p);
  }
}

TEST_CASE("NHWC backward convolutions: cuDNN dims as for NCHW",
          "[cuda][planning][nhwc]") {
  Addr at;
  // A grouped convolution x [2, 4, 9, 7] * w [6, 2, 3, 2] (2 groups),
  // strides (2, 1), pads begin (1, 0) end (1, 0): y [2, 6, 5, 6].
  Shape x{2, 4, 9, 7}, w{6, 2, 3, 2}, y{2, 6, 5, 6};
  SECTION("backward filter") {
    Result<ConvPlan> nchw = planConv(
        ConvKind::BackwardFilter,
        withLayout(backwardConvCall("cudnn.conv_bwd_filter", {1, 0, 1, 0}),
                   "nchw"),
        {at(DType::F16, x), at(DType::F16, y)}, {at(DType::F16, w)});
    Result<ConvPlan> nhwc = planConv(
        ConvKind::BackwardFilter,
        withLayout(backwardConvCall("cudnn.conv_bwd_filter", {1, 0, 1, 0}),
                   "nhwc"),
        {at(DType::F16, toNHWC(x)), at(DType::F16, toNHWC(y))},
        {at(DType::F16, toNHWC(w))});
    REQUIRE(nchw);
    REQUIRE(nhwc);
    CHECK(nhwc->nhwc);
    CHECK_FALSE(nchw->nhwc);
    CHECK(nhwc->xDims == nchw->xDims);
    CHECK(nhwc->wDims == nchw->wDims);
    CHECK(nhwc->yDims == nchw->yDims);
    CHECK(nhwc->wDims == std::vector<int>{6, 2, 3, 2});
    CHECK(nhwc->pads == nchw->pads);
  }
  SECTION("backward filter: a dy of the wrong shape is refused") {
    Result<ConvPlan> p = planConv(
        ConvKind::BackwardFilter,
        withLayout(backwardConvCall("cudnn.conv_bwd_filter", {1, 0, 1, 0}),
                   "nhwc"),
        {at(DType::F16, toNHWC(x)), at(DType::F16, y)},
        {at(DType::F16, toNHWC(w))});
    REQUIRE_FALSE(p);
    CHECK_THAT(p.message(), Catch::Contains("dy has shape [2, 6, 5, 6], "
                                            "expected [2, 5, 6, 6]"));
  }
  SECTION("backward data, asymmetric pads: the padded gradient in NHWC") {
    // dx of the convolution above with pads end (2, 0): x and y swap roles.
    Result<ConvPlan> nchw = planConv(
        ConvKind::BackwardData,
        withLayout(backwardConvCall("cudnn.conv_bwd_data", {1, 0, 2, 0}),
                   "nchw"),
        {at(DType::F16, {2, 6, 5, 6}), at(DType::F16, {6, 1, 3, 2})},
        {at(DType::F16, {2, 2, 9, 7})});
    Result<ConvPlan> nhwc = planConv(
        ConvKind::BackwardData,
        withLayout(backwardConvCall("cudnn.conv_bwd_data", {1, 0, 2, 0}),
                   "nhwc"),
        {at(DType::F16, toNHWC({2, 6, 5, 6})),
         at(DType::F16, toNHWC({6, 1, 3, 2}))},
        {at(DType::F16, toNHWC({2, 2, 9, 7}))});
    REQUIRE(nchw);
    REQUIRE(nhwc);
    CHECK(nhwc->xDims == nchw->xDims);
    CHECK(nhwc->wDims == nchw->wDims);
    CHECK(nhwc->yDims == nchw->yDims);
    REQUIRE(nhwc->explicitPad);
    CHECK(nchw->paddedShape == Shape{2, 2, 12, 7});
    CHECK(nhwc->paddedShape == Shape{2, 12, 7, 2});
  }
}
