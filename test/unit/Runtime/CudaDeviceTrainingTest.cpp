//===- CudaDeviceTrainingTest.cpp - losses, optimizers --------------------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: gather, scatter_nd, the losses, loss scaling and optimizer steps.
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

TEST_CASE("CUDA: gather, scatter_nd, and index errors", "[cuda][device]") {
  Rng rng(11);
  compareCall(oneCall("kernel.gather", {{"axis", int64_t(1)}},
                      {{"data", rnd(DType::F16, {3, 5, 4}, rng)},
                       {"indices", indices(DType::I64, {2, 2}, {0, -1, 4, 2})}},
                      {{"y", DType::F16, {3, 2, 2, 4}}}));
  compareCall(oneCall("kernel.gather", {{"axis", int64_t(0)}},
                      {{"data", rnd(DType::I64, {6, 3}, rng, -9, 9)},
                       {"indices", indices(DType::I32, {4}, {5, 0, 0, -6})}},
                      {{"y", DType::I64, {4, 3}}}));
  for (std::string red : {"none", "add"})
    compareCall(
        oneCall("kernel.scatter_nd", {{"reduction", red}},
                {{"data", rnd(DType::F32, {4, 5, 3}, rng)},
                 {"indices", indices(DType::I64, {3, 2}, {0, 1, 3, -1, 2, 2})},
                 {"updates", rnd(DType::F32, {3, 3}, rng)}},
                {{"y", DType::F32, {4, 5, 3}}}));
  // mul, max, min, and add without atomics: repeated indices combine in
  // tuple order, as the CPU does (the same bits).
  for (std::string red : {"mul", "max", "min", "add"})
    for (DType t : {DType::F32, DType::F16, DType::I8, DType::U16, DType::I64,
                    DType::Bool}) {
      INFO(red << " " << dtypeName(t));
      double lo = t == DType::Bool ? 0 : (isFloat(t) ? -2 : 0);
      double hi = t == DType::Bool ? 2 : (isFloat(t) ? 2 : 9);
      compareCall(oneCall(
          "kernel.scatter_nd", {{"reduction", red}},
          {{"data", rnd(t, {4, 5, 3}, rng, lo, hi)},
           {"indices", indices(DType::I64, {4, 2}, {0, 1, 3, -1, 0, 1, 0, 1})},
           {"updates", rnd(t, {4, 3}, rng, lo, hi)}},
          {{"y", t, {4, 5, 3}}}));
    }
#if MP_HAVE_CUDA_BACKEND
  OneCall bad = oneCall("kernel.gather", {{"axis", int64_t(0)}},
                        {{"data", rnd(DType::F32, {4}, rng)},
                         {"indices", indices(DType::I64, {2}, {1, 7})}},
                        {{"y", DType::F32, {2}}});
  if (!gpuOrWarn())
    return;
  Result<CudaExecutor> gpu = CudaExecutor::create(bad.plan, "gpu");
  REQUIRE(gpu);
  Result<std::vector<NamedTensor>> out = gpu->run(bad.views());
  REQUIRE_FALSE(out);
  CHECK(out.message() ==
        "call #0 (kernel.gather at node 'test'): index 7 is out of range");
#endif
}

TEST_CASE("CUDA: losses and their gradients", "[cuda][device]") {
  Rng rng(12);
  for (DType t : {DType::F32, DType::F16}) {
    for (std::string red : {"none", "sum", "mean"}) {
      INFO(dtypeName(t) << " " << red);
      HostTensor target =
          indices(DType::I64, {4, 3}, {0, 9, 3, -1, 2, 2, 7, 1, -1, 5, 6, 0});
      Shape lossShape = red == "none" ? Shape{4, 3} : Shape{};
      for (bool weighted : {false, true}) {
        std::vector<Arg> args{{"input", rnd(t, {4, 10, 3}, rng, -3, 0)},
                              {"target", clone(target)}};
        if (weighted)
          args.push_back({"weight", rnd(t, {10}, rng, 0.5, 2)});
        compareCall(oneCall("kernel.nll_loss",
                            {{"has_weight", int64_t(weighted)},
                             {"reduction", red},
                             {"ignore_index", int64_t(-1)}},
                            std::move(args), {{"loss", t, lossShape}}));
      }
      for (const char *kind :
           {"kernel.softmax_cross_entropy_grad", "kernel.nll_loss_grad"}) {
        bool sce = std::string(kind) == "kernel.softmax_cross_entropy_grad";
        std::vector<Arg> args{
            {sce ? "scores" : "input", rnd(t, {4, 10, 3}, rng, -3, 3)},
            {sce ? "labels" : "target", clone(target)},
            {"dloss", rnd(DType::F32, red == "none" ? Shape{4, 3} : Shape{1},
                          rng, 0.5, 2)},
            {sce ? "weights" : "weight", rnd(DType::F32, {10}, rng, 0.5, 2)}};
        compareCall(oneCall(kind,
                            {{sce ? "has_weights" : "has_weight", int64_t(1)},
                             {"reduction", red},
                             {"ignore_index", int64_t(-1)}},
                            std::move(args),
                            {{sce ? "dscores" : "dinput", t, {4, 10, 3}}}));
      }
    }
  }
}

TEST_CASE("CUDA: loss scaling and optimizer steps", "[cuda][device]") {
  Rng rng(13);
  // Unscale: f16, f32 (in place) and f64 gradients; with an inf.
  for (bool inf : {false, true}) {
    HostTensor g1 = rnd(DType::F16, {10}, rng, -100, 100);
    if (inf)
      setD(g1, 3, std::numeric_limits<double>::infinity());
    compareCall(oneCall("kernel.unscale_check_finite", {},
                        {{"scale", scalarF32(1024)},
                         {"g1", std::move(g1)},
                         {"g2", rnd(DType::F32, {7}, rng, -100, 100)},
                         {"g3", rnd(DType::F64, {5}, rng, -100, 100)}},
                        {{"found_inf", DType::F32, {1}},
                         {"u1", DType::F32, {10}},
                         {"u2", DType::F32, {7}, 2, true},
                         {"u3", DType::F32, {5}}}),
                Tol{0, 0});
  }
  // The loss-scale update, found_inf set and not, at the growth interval.
  for (float found : {0.0f, 1.0f}) {
    HostTensor tracker(DType::I64, {1});
    *tracker.as<int64_t>() = 2;
    compareCall(oneCall("kernel.loss_scale_update",
                        {{"growth_interval", int64_t(3)}},
                        {{"found_inf", scalarF32(found)},
                         {"scale", scalarF32(65536)},
                         {"tracker", std::move(tracker)}},
                        {{"scale", DType::F32, {1}, 1},
                         {"tracker", DType::I64, {1}, 2}}),
                Tol{0, 0});
  }
  // SGD (momentum, Nesterov, weight decay) and Adam / AdamW: the CPU's
  // bits, first step and a later one, skipped when found_inf is set.
  for (int64_t step0 : {0, 5})
    for (float found : {0.0f, 1.0f}) {
      HostTensor step(DType::I64, {1});
      *step.as<int64_t>() = step0;
      compareCall(oneCall("kernel.sgd_step",
                          {{"has_found_inf", int64_t(1)},
                           {"has_momentum_buffer", int64_t(1)},
                           {"lr", 0.1},
                           {"momentum", 0.9},
                           {"weight_decay", 1e-2},
                           {"nesterov", int64_t(1)}},
                          {{"grad", rnd(DType::F32, {33}, rng)},
                           {"found_inf", scalarF32(found)},
                           {"param", rnd(DType::F32, {33}, rng)},
                           {"buf", rnd(DType::F32, {33}, rng)},
                           {"step", clone(step)}},
                          {{"param", DType::F32, {33}, 2},
                           {"buf", DType::F32, {33}, 3},
                           {"step", DType::I64, {1}, 4}}),
                  Tol{0, 0});
      for (int64_t decoupled : {0, 1})
        compareCall(oneCall("kernel.adam_step",
                            {{"has_found_inf", int64_t(1)},
                             {"lr", 1e-2},
                             {"weight_decay", 1e-2},
                             {"decoupled_weight_decay", decoupled}},
                            {{"grad", rnd(DType::F32, {33}, rng)},
                             {"found_inf", scalarF32(found)},
                             {"param", rnd(DType::F32, {33}, rng)},
                             {"m", rnd(DType::F32, {33}, rng)},
                             {"v", rnd(DType::F32, {33}, rng, 0, 1)},
                             {"step", clone(step)}},
                            {{"param", DType::F32, {33}, 2},
                             {"m", DType::F32, {33}, 3},
                             {"v", DType::F32, {33}, 4},
                             {"step", DType::I64, {1}, 5}}),
                    Tol{1e-6, 1e-7});
    }
}
