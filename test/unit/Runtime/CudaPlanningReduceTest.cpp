//===- CudaPlanningReduceTest.cpp - reduce and softmax --------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// kernel.reduce's geometry and cudnn.softmax.
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

TEST_CASE("reduce planning: kept and reduced dims, the loop",
          "[cuda][planning]") {
  Addr at;
  auto call = [](const char *fn, std::vector<int64_t> axes) {
    return callOf("kernel.reduce", {{"fn", std::string(fn)},
                                    {"axes", std::move(axes)},
                                    {"compute_type", int64_t(1)}});
  };
  SECTION("the last axis of a wide row: a block per output") {
    TensorDesc x = at(DType::F16, {8, 1024}), y = at(DType::F16, {8, 1});
    Result<ReduceParams> p = planReduce(call("mean", {1}), x, y);
    REQUIRE(p);
    CHECK(p->op == kRedMean);
    CHECK(p->ySize == 8);
    CHECK(p->count == 1024);
    CHECK(p->blockPerOutput == 1);
    CHECK(p->keptRank == 1);
    CHECK(p->keptStrides[0] == 1024);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedStrides[0] == 1);
  }
  SECTION("a middle axis: a thread per output") {
    TensorDesc x = at(DType::F32, {2, 3, 4}), y = at(DType::F32, {2, 4});
    Result<ReduceParams> p = planReduce(call("sum", {-2}), x, y);
    REQUIRE(p);
    CHECK(p->blockPerOutput == 0);
    CHECK(p->keptRank == 2);
    CHECK(p->keptDims[0] == 2);
    CHECK(p->keptStrides[0] == 12);
    CHECK(p->keptDims[1] == 4);
    CHECK(p->keptStrides[1] == 1);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedDims[0] == 3);
    CHECK(p->reducedStrides[0] == 4);
  }
  SECTION("neighbouring reduced dims merge") {
    TensorDesc x = at(DType::F32, {2, 3, 4, 5}),
               y = at(DType::F32, {2, 1, 1, 5});
    Result<ReduceParams> p = planReduce(call("max", {1, 2}), x, y);
    REQUIRE(p);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedDims[0] == 12);
    CHECK(p->reducedStrides[0] == 5);
    CHECK(p->count == 12);
  }
  SECTION("argmax gives i64; errors as the CPU") {
    TensorDesc x = at(DType::F32, {2, 3});
    Result<ReduceParams> p =
        planReduce(call("argmax", {1}), x, at(DType::I64, {2}));
    REQUIRE(p);
    CHECK(p->outDtype == 7);
    CHECK(messageOf(planReduce(call("sum", {}), x, at(DType::F32, {2}))) ==
          "reduce sum: axes is empty");
    CHECK(messageOf(planReduce(call("sum", {1, -1}), x, at(DType::F32, {2}))) ==
          "reduce sum: axis -1 appears twice");
    CHECK(messageOf(planReduce(call("sum", {1}), x, at(DType::F32, {3}))) ==
          "reduce sum: y [3] is not x [2, 3] reduced over the axes ([2, 1] or "
          "[2])");
    Result<ReduceParams> lse =
        planReduce(call("log_sum_exp", {1}), x, at(DType::F32, {2}));
    REQUIRE(lse);
    CHECK(lse->op == kRedLogSumExp);
  }
}

TEST_CASE("softmax planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::BF16, {2, 5, 3}), y = at(DType::BF16, {2, 5, 3});
  Result<SoftmaxParams> p = planSoftmax(
      callOf("cudnn.softmax", {{"axis", int64_t(1)}, {"log", int64_t(1)}}), x,
      y);
  REQUIRE(p);
  CHECK(p->outer == 2);
  CHECK(p->len == 5);
  CHECK(p->inner == 3);
  CHECK(p->log == 1);
  CHECK(messageOf(planSoftmax(callOf("cudnn.softmax", {{"axis", int64_t(3)}}),
                              x, y)) ==
        "softmax: axis 3 is out of range for x [2, 5, 3]");
}

TEST_CASE("scaled softmax planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F16, {2, 4, 6}), y = at(DType::F16, {2, 4, 6});
  TensorDesc mask = at(DType::F32, {2, 1, 6});
  PlanCall call = callOf("kernel.scaled_softmax",
                         {{"has_mask", int64_t(1)}, {"scale", 0.5}});
  Result<SoftmaxParams> p = planScaledSoftmax(call, {x, mask}, {y});
  REQUIRE(p);
  CHECK(p->outer == 8);
  CHECK(p->len == 6);
  CHECK(p->inner == 1);
  CHECK(p->scale == 0.5f);
  CHECK(p->rank == 3);
  CHECK(p->maskStrides[0] == 6);
  CHECK(p->maskStrides[1] == 0); // broadcast over the rows
  CHECK(p->maskStrides[2] == 1);
  CHECK(p->mask == mask.ptr<void>());
  CHECK(messageOf(planScaledSoftmax(call, {x, at(DType::F32, {3, 6})}, {y})) ==
        "scaled_softmax: mask [3, 6] does not broadcast to [2, 4, 6]");
}
