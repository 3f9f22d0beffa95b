//===- CudaPlanningBatchNormTest.cpp - batch norms ------------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// the batch norms, and whether cuDNN or the own kernels run them.
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

TEST_CASE("batch norm planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F16, {2, 3, 4, 5});
  auto param = [&](DType t) { return at(t, {3}); };
  SECTION("inference: per-channel geometry, any parameter dtype") {
    Result<BatchNormPlan> p =
        planBatchNorm(BatchNormKind::Inference,
                      callOf("cudnn.batch_norm_inference", {{"epsilon", 1e-5}}),
                      {x, param(DType::F32), param(DType::F16),
                       param(DType::BF16), param(DType::F32)},
                      {at(DType::F16, {2, 3, 4, 5})});
    REQUIRE(p);
    CHECK(p->params.geom.outer == 2);
    CHECK(p->params.geom.c == 3);
    CHECK(p->params.geom.inner == 20);
    CHECK(p->scratchBytes == 3 * 3 * sizeof(float));
  }
  SECTION("training: running statistics in place are fine, other overlaps "
          "are not") {
    TensorDesc mean = param(DType::F32), var = param(DType::F32);
    PlanCall c = callOf("cudnn.batch_norm_training",
                        {{"epsilon", 1e-5}, {"momentum", 0.9}});
    Result<BatchNormPlan> p =
        planBatchNorm(BatchNormKind::Training, c,
                      {x, param(DType::F32), param(DType::F32), mean, var},
                      {at(DType::F16, {2, 3, 4, 5}), mean, var});
    REQUIRE(p);
    CHECK(p->params.momentum == Approx(0.9f));
    CHECK(messageOf(planBatchNorm(
              BatchNormKind::Training, c,
              {x, param(DType::F32), param(DType::F32), mean, var},
              {at(DType::F16, {2, 3, 4, 5}), var, mean})) ==
          "batchNormTraining: runningMean overlaps inputVar");
  }
  SECTION("backward: f64 statistics per channel (own kernels)") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Backward, callOf("cudnn.batch_norm_bwd", {}),
        {x, param(DType::F32), at(DType::F16, {2, 3, 4, 5})},
        {at(DType::F16, {2, 3, 4, 5}), param(DType::F32), param(DType::F32)},
        BatchNormImpl::Own);
    REQUIRE(p);
    CHECK_FALSE(p->cudnn.use);
    CHECK(p->scratchBytes == 3 * 4 * sizeof(double));
    CHECK(p->params.epsilon == Approx(1e-5));
  }
}

TEST_CASE("batch norm: cuDNN or the own kernels", "[cuda][planning]") {
  Addr at;
  auto f32 = [&](int64_t c) { return at(DType::F32, {c}); };
  PlanCall inference =
      callOf("cudnn.batch_norm_inference", {{"epsilon", 1e-5}});
  PlanCall training = callOf("cudnn.batch_norm_training",
                             {{"epsilon", 1e-5}, {"momentum", 0.9}});
  PlanCall backward = callOf("cudnn.batch_norm_bwd", {{"epsilon", 1e-5}});
  auto forward = [&](const PlanCall &call, BatchNormKind kind, DType t, Shape s,
                     DType paramType = DType::F32,
                     BatchNormImpl impl = BatchNormImpl::Auto) {
    int64_t c = s[1];
    std::vector<TensorDesc> ops{at(t, s), at(paramType, {c}), f32(c), f32(c),
                                f32(c)};
    std::vector<TensorDesc> res{at(t, s)};
    if (kind == BatchNormKind::Training) {
      res.push_back(ops[3]); // running statistics in place
      res.push_back(ops[4]);
    }
    Result<BatchNormPlan> p = planBatchNorm(kind, call, ops, res, impl);
    REQUIRE(p);
    return *p;
  };

  SECTION("f32 and f16 NCHW: cuDNN, spatial dims folded into [N, C, S, 1]") {
    for (DType t : {DType::F32, DType::F16}) {
      BatchNormPlan p =
          forward(inference, BatchNormKind::Inference, t, {2, 3, 4, 5, 6});
      CHECK(p.cudnn.use);
      CHECK_FALSE(p.cudnn.nhwc);
      CHECK(p.cudnn.dtype == t);
      CHECK(p.cudnn.dims == std::array<int32_t, 4>{2, 3, 120, 1});
      CHECK(p.scratchBytes == 0);
    }
    BatchNormPlan rank2 =
        forward(inference, BatchNormKind::Inference, DType::F32, {8, 6});
    CHECK(rank2.cudnn.dims == std::array<int32_t, 4>{8, 6, 1, 1});
  }
  SECTION("training: scratch for the batch mean and unbiased variance") {
    BatchNormPlan p =
        forward(training, BatchNormKind::Training, DType::F16, {4, 3, 5, 5},
                DType::F32, BatchNormImpl::CudnnSpatial);
    REQUIRE(p.cudnn.use);
    CHECK(p.scratchBytes == 2 * 3 * sizeof(float));
  }
  SECTION("16-bit training: the own kernels unless cuDNN is asked for") {
    for (DType t : {DType::F16, DType::BF16}) {
      BatchNormPlan automatic =
          forward(training, BatchNormKind::Training, t, {2, 3, 4});
      CHECK_FALSE(automatic.cudnn.use);
      CHECK_THAT(automatic.cudnn.whyNot, Catch::Contains("own kernels"));
      BatchNormPlan cudnn =
          forward(training, BatchNormKind::Training, t, {2, 3, 4}, DType::F32,
                  BatchNormImpl::CudnnSpatial);
      CHECK(cudnn.cudnn.use);
      CHECK(cudnn.cudnn.dtype == t);
    }
    // f32 training stays on cuDNN.
    CHECK(forward(training, BatchNormKind::Training, DType::F32, {2, 3, 4})
              .cudnn.use);
  }
  SECTION("channels-last training and backward: the own kernels, row "
          "slices") {
    PlanCall nhwcTraining =
        callOf("cudnn.batch_norm_training", {{"epsilon", 1e-5},
                                             {"momentum", 0.9},
                                             {"layout", std::string("nhwc")}});
    PlanCall nhwcBackward =
        callOf("cudnn.batch_norm_bwd",
               {{"epsilon", 1e-5}, {"layout", std::string("nhwc")}});
    // ResNet-50's first batch norm at batch 64: 64 * 112 * 112 rows of 64
    // channels: 2 blocks of 32 channels, 256 slices.
    Shape s{64, 112, 112, 64};
    TensorDesc xs = at(DType::F32, s);
    std::vector<TensorDesc> ops{xs, f32(64), f32(64), f32(64), f32(64)};
    Result<BatchNormPlan> t =
        planBatchNorm(BatchNormKind::Training, nhwcTraining, ops,
                      {at(DType::F32, s), ops[3], ops[4]});
    REQUIRE(t);
    CHECK_FALSE(t->cudnn.use);
    CHECK_THAT(t->cudnn.whyNot, Catch::Contains("channels-last"));
    CHECK(t->params.geom.inner == 1);
    CHECK(t->params.rowSlices == 256);
    CHECK(t->doublesOffset == 3 * 64 * sizeof(float));
    CHECK(t->scratchBytes ==
          3 * 64 * sizeof(float) + (4 * 64 + 256 * 64 * 2) * sizeof(double));
    Result<BatchNormPlan> b = planBatchNorm(
        BatchNormKind::Backward, nhwcBackward, {xs, f32(64), at(DType::F32, s)},
        {at(DType::F32, s), f32(64), f32(64)});
    REQUIRE(b);
    CHECK_FALSE(b->cudnn.use);
    CHECK(b->params.rowSlices == 256);
    CHECK(b->doublesOffset == 0);
    CHECK(b->scratchBytes == (4 * 64 + 256 * 64 * 2) * sizeof(double));
    // Few rows: a slice per 8 rows; cuDNN when asked for.
    Result<BatchNormPlan> few = planBatchNorm(
        BatchNormKind::Backward, nhwcBackward,
        {at(DType::F32, {2, 3, 64}), f32(64), at(DType::F32, {2, 3, 64})},
        {at(DType::F32, {2, 3, 64}), f32(64), f32(64)});
    REQUIRE(few);
    CHECK(few->params.rowSlices == 1);
    CHECK(planBatchNorm(BatchNormKind::Training, nhwcTraining, ops,
                        {at(DType::F32, s), ops[3], ops[4]},
                        BatchNormImpl::CudnnSpatial)
              ->cudnn.use);
    // Inference stays on cuDNN.
    CHECK(planBatchNorm(
              BatchNormKind::Inference,
              callOf("cudnn.batch_norm_inference",
                     {{"epsilon", 1e-5}, {"layout", std::string("nhwc")}}),
              ops, {at(DType::F32, s)})
              ->cudnn.use);
  }
  SECTION("the own kernels where cuDNN cannot run it") {

    BatchNormPlan halfScale = forward(inference, BatchNormKind::Inference,
                                      DType::F16, {2, 3, 4}, DType::F16);
    CHECK_FALSE(halfScale.cudnn.use);
    CHECK(halfScale.cudnn.whyNot ==
          "scale is f16 (cuDNN's per-channel tensors are f32)");

    BatchNormPlan one =
        forward(training, BatchNormKind::Training, DType::F32, {1, 3, 1});
    CHECK_FALSE(one.cudnn.use);
    CHECK(one.cudnn.whyNot == "one element per channel (no unbiased variance)");
    // [1, 3, 1]: one element per channel, so one row of channels: the
    // row-slice statistics, 1 slice (floats rounded up to 8 bytes, then 4
    // doubles per channel and 2 per slice and channel).
    CHECK(one.params.rowSlices == 1);
    CHECK(one.scratchBytes == 40 + (3 * 4 + 1 * 3 * 2) * sizeof(double));
    // Inference and backward have no running variance: cuDNN runs them.
    CHECK(forward(inference, BatchNormKind::Inference, DType::F32, {1, 3, 1})
              .cudnn.use);

    BatchNormPlan own = forward(inference, BatchNormKind::Inference, DType::F32,
                                {2, 3, 4}, DType::F32, BatchNormImpl::Own);
    CHECK_FALSE(own.cudnn.use);
    CHECK(own.cudnn.whyNot == "the own kernels were asked for");

    TensorDesc x = at(DType::F32, {2, 3, 4});
    Result<BatchNormPlan> inPlace =
        planBatchNorm(BatchNormKind::Inference, inference,
                      {x, f32(3), f32(3), f32(3), f32(3)}, {x});
    REQUIRE(inPlace);
    CHECK_FALSE(inPlace->cudnn.use);
    CHECK(inPlace->cudnn.whyNot == "y is x (in place)");

    Result<BatchNormPlan> backwardF64 = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F64, {2, 3, 4}), f32(3), at(DType::F64, {2, 3, 4})},
        {at(DType::F64, {2, 3, 4}), f32(3), f32(3)});
    REQUIRE(backwardF64);
    CHECK_FALSE(backwardF64->cudnn.use);
    CHECK(backwardF64->cudnn.whyNot ==
          "x is f64 (cuDNN's batch norm: f16, bf16 or f32)");
    CHECK(backwardF64->scratchBytes == 3 * 4 * sizeof(double));

    Result<BatchNormPlan> halfGrad = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {2, 3, 4})},
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {3})},
        BatchNormImpl::CudnnSpatial);
    REQUIRE(halfGrad);
    CHECK_FALSE(halfGrad->cudnn.use);
    CHECK(halfGrad->cudnn.whyNot ==
          "dbias is f16 (cuDNN's per-channel tensors are f32)");
  }
  SECTION("channels first, a batch beyond cuDNN's limit runs on the own "
          "kernels") {
    BatchNormPlan big =
        forward(inference, BatchNormKind::Inference, DType::F32, {70000, 3});
    CHECK_FALSE(big.cudnn.use);
    CHECK(big.cudnn.whyNot ==
          "a batch of 70000 (cuDNN's batch norm takes up to 65535)");
    CHECK(forward(training, BatchNormKind::Training, DType::F32, {70000, 3})
              .cudnn.use);
  }
  SECTION("backward on cuDNN needs no scratch") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {2, 3, 4})},
        {at(DType::F16, {2, 3, 4}), f32(3), f32(3)},
        BatchNormImpl::CudnnSpatial);
    REQUIRE(p);
    CHECK(p->cudnn.use);
    CHECK(p->cudnn.dims == std::array<int32_t, 4>{2, 3, 4, 1});
    CHECK(p->scratchBytes == 0);
  }
}
