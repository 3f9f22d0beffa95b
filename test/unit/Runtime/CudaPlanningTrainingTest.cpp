//===- CudaPlanningTrainingTest.cpp - losses, optimizers ------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// gather, scatter_nd, the losses, loss scaling and the optimizers.
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

TEST_CASE("indexing, loss and training planning", "[cuda][planning]") {
  Addr at;
  SECTION("gather") {
    Result<GatherParams> p =
        planGather(callOf("kernel.gather", {{"axis", int64_t(-2)}}),
                   {at(DType::F16, {5, 7, 3}), at(DType::I64, {2, 4})},
                   {at(DType::F16, {5, 2, 4, 3})});
    REQUIRE(p);
    CHECK(p->outer == 5);
    CHECK(p->axisDim == 7);
    CHECK(p->n == 8);
    CHECK(p->inner == 3);
    CHECK(p->elemSize == 2);
  }
  SECTION("scatter_nd") {
    TensorDesc data = at(DType::F32, {4, 5, 6});
    PlanCall add =
        callOf("kernel.scatter_nd", {{"reduction", std::string("add")}});
    Result<ScatterNDPlan> p = planScatterND(
        add, {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})}, {data});
    REQUIRE(p);
    CHECK(p->copyBytes == 0); // in place
    CHECK(p->params.k == 2);
    CHECK(p->params.tuples == 3);
    CHECK(p->params.sliceLen == 6);
    CHECK(p->params.strides[0] == 30);
    CHECK(p->params.strides[1] == 6);
    Result<ScatterNDPlan> q = planScatterND(
        add, {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})},
        {at(DType::F32, {4, 5, 6})});
    REQUIRE(q);
    CHECK(q->copyBytes == 480);
    CHECK_FALSE(p->params.ordered); // atomics
    // mul, max, min and add without atomics (8 / 16-bit integers, bool):
    // the updates in tuple order.
    for (const char *r : {"mul", "max", "min"}) {
      INFO(r);
      Result<ScatterNDPlan> o = planScatterND(
          callOf("kernel.scatter_nd", {{"reduction", std::string(r)}}),
          {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})}, {data});
      REQUIRE(o);
      CHECK(o->params.ordered);
    }
    TensorDesc bytes = at(DType::I8, {4, 5, 6});
    Result<ScatterNDPlan> addI8 = planScatterND(
        add, {bytes, at(DType::I64, {3, 2}), at(DType::I8, {3, 6})}, {bytes});
    REQUIRE(addI8);
    CHECK(addI8->params.ordered);
    Result<ScatterNDPlan> none = planScatterND(
        callOf("kernel.scatter_nd", {}),
        {bytes, at(DType::I64, {3, 2}), at(DType::I8, {3, 6})}, {bytes});
    REQUIRE(none);
    CHECK_FALSE(none->params.ordered);
    CHECK(messageOf(planScatterND(
              callOf("kernel.scatter_nd", {{"reduction", std::string("avg")}}),
              {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})},
              {data})) == "attribute 'reduction' has an unknown value 'avg'");
  }
  SECTION("losses") {
    PlanCall nll =
        callOf("kernel.nll_loss", {{"has_weight", int64_t(0)},
                                   {"reduction", std::string("mean")},
                                   {"ignore_index", int64_t(-1)}});
    Result<LossParams> p =
        planLoss(LossKind::NllLoss, nll,
                 {at(DType::F32, {4, 10, 3}), at(DType::I64, {4, 3})},
                 {at(DType::F32, {})});
    REQUIRE(p);
    CHECK(p->n == 4);
    CHECK(p->c == 10);
    CHECK(p->inner == 3);
    CHECK(p->reduction == 2);
    CHECK(p->hasIgnore == 1);
    CHECK(p->ignoreIndex == -1);
    PlanCall sce = callOf(
        "kernel.softmax_cross_entropy_grad",
        {{"has_weights", int64_t(0)}, {"reduction", std::string("none")}});
    CHECK(messageOf(planLoss(LossKind::SoftmaxCrossEntropyGrad, sce,
                             {at(DType::F16, {4, 10}), at(DType::I32, {4}),
                              at(DType::F32, {1})},
                             {at(DType::F16, {4, 10})})) ==
          "softmax_cross_entropy_grad: dloss has shape [1], expected [4] "
          "(reduction none)");
  }
  SECTION("unscale, loss scale, optimizers") {
    TensorDesc scale = at(DType::F32, {1}), found = at(DType::F32, {1});
    TensorDesc g1 = at(DType::F16, {10}), u1 = at(DType::F32, {10}),
               g2 = at(DType::F32, {3});
    Result<std::vector<UnscaleParams>> u =
        planUnscale(callOf("kernel.unscale_check_finite", {}), {scale, g1, g2},
                    {found, u1, g2});
    REQUIRE(u);
    REQUIRE(u->size() == 2);
    CHECK((*u)[0].gDtype == 10);
    CHECK((*u)[1].u == g2.ptr<float>()); // in place
    CHECK(messageOf(planUnscale(callOf("kernel.unscale_check_finite", {}),
                                {scale, g1}, {found, at(DType::F16, {10})})) ==
          "u_1 must be f32 with g_1's shape [10], got f16 [10]");
    Result<LossScaleParams> ls = planLossScaleUpdate(
        callOf("kernel.loss_scale_update", {{"growth_interval", int64_t(3)}}),
        {found}, {scale, at(DType::I64, {1})});
    REQUIRE(ls);
    CHECK(ls->growthInterval == 3);
    CHECK(ls->growthFactor == 2.0);
    TensorDesc param = at(DType::F32, {10}), grad = at(DType::F32, {10}),
               step = at(DType::I64, {1});
    PlanCall sgd =
        callOf("kernel.sgd_step", {{"has_found_inf", int64_t(1)},
                                   {"has_momentum_buffer", int64_t(0)},
                                   {"lr", 0.1},
                                   {"momentum", 0.9}});
    CHECK(
        messageOf(planOptimizer(false, sgd, {grad, found}, {param, step})) ==
        "momentum 0.900000 needs a momentum_buffer (has_momentum_buffer = 1)");
    PlanCall adam = callOf("kernel.adam_step", {{"has_found_inf", int64_t(0)}});
    TensorDesc m = at(DType::F32, {10}), v = at(DType::F32, {10});
    Result<OptimizerParams> a =
        planOptimizer(true, adam, {grad}, {param, m, v, step});
    REQUIRE(a);
    CHECK(a->kind == 1);
    CHECK(a->lr == 1e-3);
    CHECK(a->foundInf == nullptr);
    CHECK(a->n == 10);
  }
}

TEST_CASE("comm.all_reduce planning: the bucket's place in the staging "
          "buffer",
          "[cuda][planning]") {
  Addr at;
  auto allReduce = [](const std::string &reduction, DType wire) {
    return callOf("comm.all_reduce",
                  {{"reduction", reduction}, {"reduce_type", int64_t(wire)}});
  };
  TensorDesc a = at(DType::F32, {3, 5}), b = at(DType::BF16, {7}),
             ya = at(DType::F32, {3, 5}), yb = at(DType::BF16, {7});
  Result<AllReducePlan> p =
      planAllReduce(allReduce("mean", DType::F16), {a, b}, {ya, yb});
  REQUIRE(p);
  CHECK(p->options.mean);
  CHECK(p->options.op == CollectiveOp::Sum);
  CHECK(p->options.wire == DType::F16);
  CHECK(p->total == 22);
  CHECK(p->stagingBytes == 44);
  CHECK(p->offset == std::vector<int64_t>{0, 15});
  REQUIRE(p->pack.size() == 2);
  CHECK(p->pack[1].srcDtype == int32_t(DType::BF16));
  CHECK(p->pack[1].dstDtype == int32_t(DType::F16));
  CHECK(p->pack[1].n == 7);
  CHECK(p->pack[1].src == b.ptr<const void>());
  CHECK(p->unpack[0].dst == ya.ptr<void>());
  CHECK(p->unpack[0].dstDtype == int32_t(DType::F32));
  // The scales for N ranks, as the CPU: a 16-bit mean divides first, an
  // f32 one last; a maximum neither.
  CHECK(cpu::allReducePreScale(p->options, 4) == 0.25f);
  CHECK(cpu::allReducePostDivisor(p->options, 4) == 1.0f);
  Result<AllReducePlan> f32 =
      planAllReduce(allReduce("mean", DType::F32), {a}, {ya});
  REQUIRE(f32);
  CHECK(cpu::allReducePreScale(f32->options, 4) == 1.0f);
  CHECK(cpu::allReducePostDivisor(f32->options, 4) == 4.0f);
  Result<AllReducePlan> max =
      planAllReduce(allReduce("max", DType::F32), {a}, {ya});
  REQUIRE(max);
  CHECK(max->options.op == CollectiveOp::Max);
  CHECK(cpu::allReducePostDivisor(max->options, 4) == 1.0f);
  // The CPU's checks: the messages are the CPU backend's.
  CHECK_THAT(messageOf(planAllReduce(allReduce("prod", DType::F32), {a}, {ya})),
             Catch::Contains("reduction 'prod' (mean, sum or max)"));
  CHECK_THAT(messageOf(planAllReduce(allReduce("mean", DType::F32), {a},
                                     {at(DType::F16, {3, 5})})),
             Catch::Contains("each result is its operand's float type"));
  CHECK_THAT(
      messageOf(planAllReduce(allReduce("mean", DType::F32), {a, b}, {ya})),
      Catch::Contains("as many results"));
}

TEST_CASE("a batch norm over the ranks runs on the own kernels, pass by "
          "pass",
          "[cuda][planning]") {
  Addr at;
  const Shape shape{2, 4, 3, 3};
  std::vector<TensorDesc> ins{at(DType::F32, shape), at(DType::F32, {4}),
                              at(DType::F32, shape)},
      outs{at(DType::F32, shape), at(DType::F32, {4}), at(DType::F32, {4})};
  for (const char *layout : {"nchw", "nhwc"}) {
    INFO(layout);
    const Shape xs = std::string(layout) == "nchw" ? shape : Shape{2, 3, 3, 4};
    std::vector<TensorDesc> xin{at(DType::F32, xs), at(DType::F32, {4}),
                                at(DType::F32, xs)},
        xout{at(DType::F32, xs), at(DType::F32, {4}), at(DType::F32, {4})};
    PlanCall synced =
        callOf("cudnn.batch_norm_bwd", {{"epsilon", 1e-5},
                                        {"layout", std::string(layout)},
                                        {"sync_ranks", int64_t(1)}});
    // cuDNN would take this one; synchronised, the own kernels do.
    Result<BatchNormPlan> p =
        planBatchNorm(BatchNormKind::Backward, synced, xin, xout,
                      BatchNormImpl::CudnnSpatial);
    INFO(messageOf(p));
    REQUIRE(p);
    CHECK(p->sync);
    CHECK_FALSE(p->cudnn.use);
    CHECK(p->params.rowSlices == 0);
    // chanD's 4 doubles and the pass's 2 sums per channel.
    CHECK(p->scratchBytes == p->doublesOffset + 6 * 4 * sizeof(double));
  }
  PlanCall local = callOf("cudnn.batch_norm_bwd", {{"epsilon", 1e-5}});
  Result<BatchNormPlan> plain = planBatchNorm(
      BatchNormKind::Backward, local, ins, outs, BatchNormImpl::CudnnSpatial);
  REQUIRE(plain);
  CHECK_FALSE(plain->sync);
  // Inference has no batch statistics to share.
  PlanCall inference = callOf("cudnn.batch_norm_inference",
                              {{"epsilon", 1e-5}, {"sync_ranks", int64_t(1)}});
  Result<BatchNormPlan> inf =
      planBatchNorm(BatchNormKind::Inference, inference,
                    {ins[0], ins[1], at(DType::F32, {4}), at(DType::F32, {4}),
                     at(DType::F32, {4})},
                    {at(DType::F32, shape)}, BatchNormImpl::Own);
  REQUIRE(inf);
  CHECK_FALSE(inf->sync);
}
