//===- CudaDeviceTest.cpp - every CUDA call against the CPU call ----------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: loading the libraries, no device, a training step's state across
// runs; the calls by family are in CudaDevice*Test.cpp.
//
//===----------------------------------------------------------------------===//
#include "CudaDeviceTestSupport.h"
#include "mp/Runtime/PlanBuilding.h"

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

TEST_CASE("CUDA: cuBLASLt and cuDNN load with every function the backend "
          "calls",
          "[cuda][device]") {
#if MP_HAVE_CUDA_BACKEND
  // dlopen and dlsym only: no GPU needed. A function added to the tables
  // (DynamicLibs.h) that the installed library lacks fails here, not on
  // the first GPU machine.
  Status s = cudaLibrariesAvailable();
  INFO(s.message());
  CHECK(s);
#else
  SUCCEED("built without the CUDA backend");
#endif
}

TEST_CASE("CUDA: NCCL loads with every function the data-parallel calls "
          "use",
          "[cuda][device]") {
#if MP_HAVE_CUDA_BACKEND
  // As above: dlopen and dlsym, and NCCL's version (bf16 needs 2.10).
  Status s = ncclAvailable();
  INFO(s.message());
  CHECK(s);
#else
  SUCCEED("built without the CUDA backend");
#endif
}

TEST_CASE("CUDA: no device is a clear error; unsupported calls are listed",
          "[cuda][device]") {
#if MP_HAVE_CUDA_BACKEND
  Rng rng(1);
  // A kind of a newer plan format (the GPU has every kind the CPU has).
  OneCall c = oneCall("kernel.future_call", {{"axis", int64_t(-1)}},
                      {{"x", rnd(DType::F32, {4, 8}, rng)}},
                      {{"v", DType::F32, {4, 2}}, {"i", DType::I64, {4, 2}}});
  Result<CudaExecutor> e = CudaExecutor::create(c.plan, "p.mpplan");
  REQUIRE_FALSE(e);
  CHECK(e.message() == "p.mpplan: the CUDA backend does not implement 1 "
                       "call: call #0 (kernel.future_call at node 'test')");
  std::string why;
  if (cudaDeviceCount(&why) == 0) {
    OneCall ok =
        oneCall("kernel.elementwise", {{"fn", std::string("relu")}},
                {{"x", rnd(DType::F32, {4}, rng)}}, {{"y", DType::F32, {4}}});
    Result<CudaExecutor> none = CudaExecutor::create(ok.plan, "p.mpplan");
    REQUIRE_FALSE(none);
    CHECK_THAT(none.message(), Catch::StartsWith("no CUDA device ("));
  }
#else
  WARN("built without the CUDA backend");
#endif
}

TEST_CASE("CUDA: a training step keeps its state across runs and graph "
          "replays",
          "[cuda][device]") {
  // y = x @ w (state), loss-free: w -= lr * (x^T @ dy) with dy an input:
  // three calls, two of them updating the state in place.
  Rng rng(14);
  Plan plan;
  HostTensor w0 = rnd(DType::F32, {8, 4}, rng);
  plan.weights.push_back(
      PlanWeight::copyOf("w", DType::F32, {8, 4}, w0.data(), w0.byteCount()));
  HostTensor s0(DType::I64, {1});
  *s0.as<int64_t>() = 0;
  plan.weights.push_back(
      PlanWeight::copyOf("step0", DType::I64, {1}, s0.data(), s0.byteCount()));
  plan.buffers.push_back(
      {0, DType::F32, {16, 8}, BufferStorage::Arena, 0, 0, "x"});
  plan.buffers.push_back(
      {1, DType::F32, {16, 4}, BufferStorage::Arena, 1024, 0, "dy"});
  plan.buffers.push_back(
      {2, DType::F32, {8, 4}, BufferStorage::State, 0, 0, "w"});
  plan.buffers.push_back(
      {3, DType::F32, {16, 4}, BufferStorage::Arena, 2048, 0, "y"});
  plan.buffers.push_back(
      {4, DType::F32, {8, 4}, BufferStorage::Arena, 3072, 0, "dw"});
  plan.buffers.push_back(
      {5, DType::I64, {1}, BufferStorage::State, 0, 1, "step"});
  plan.arenaSize = 4096;
  plan.inputs = {{"x", 0, DType::F32, {16, 8}}, {"dy", 1, DType::F32, {16, 4}}};
  plan.outputs = {{"y", 3, DType::F32, {16, 4}}, {"w", 2, DType::F32, {8, 4}}};
  PlanCall fwd;
  fwd.kind = "cublaslt.matmul";
  fwd.operands = {0, 2};
  fwd.results = {3};
  fwd.attributes = {{"has_c", int64_t(0)},
                    {"has_bias", int64_t(0)},
                    {"compute_type", int64_t(1)}};
  PlanCall grad = fwd;
  grad.operands = {0, 1};
  grad.results = {4};
  grad.attributes.push_back({"trans_a", int64_t(1)});
  PlanCall sgd;
  sgd.kind = "kernel.sgd_step";
  sgd.operands = {4};
  sgd.results = {2, 5};
  sgd.attributes = {{"has_found_inf", int64_t(0)},
                    {"has_momentum_buffer", int64_t(0)},
                    {"lr", 0.05}};
  plan.calls = {fwd, grad, sgd};
  REQUIRE(validatePlan(plan, "p"));
  REQUIRE(cuda::checkPlanForCuda(plan, "p"));
#if MP_HAVE_CUDA_BACKEND
  if (!gpuOrWarn())
    return;
  CpuExecutor cpu = CpuExecutor::create(plan, "cpu").take();
  Result<CudaExecutor> gpuR = CudaExecutor::create(plan, "gpu");
  REQUIRE(gpuR);
  CudaExecutor gpu = gpuR.take();
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    HostTensor x = rnd(DType::F32, {16, 8}, rng),
               dy = rnd(DType::F32, {16, 4}, rng);
    std::vector<NamedView> in{{"x", x.view()}, {"dy", dy.view()}};
    Result<std::vector<NamedTensor>> e = cpu.run(in);
    Result<std::vector<NamedTensor>> g = gpu.run(in);
    REQUIRE(e);
    REQUIRE(g);
    for (size_t i = 0; i < e->size(); ++i)
      compareTensors((*e)[i].name, (*g)[i].tensor, (*e)[i].tensor,
                     {1e-4, 1e-5});
    if (step >= 1)
      CHECK(gpu.usesGraph());
  }
  Result<std::vector<NamedTensor>> cs = cpu.readState(), gs = gpu.readState();
  REQUIRE(cs);
  REQUIRE(gs);
  REQUIRE(gs->size() == 2);
  CHECK((*gs)[1].name == "step");
  CHECK(*(*gs)[1].tensor.as<int64_t>() == 4);
  compareTensors("w", (*gs)[0].tensor, (*cs)[0].tensor, {1e-4, 1e-5});
  // Checkpoint, reset, write.
  Result<Plan> saved = gpu.planWithState();
  REQUIRE(saved);
  REQUIRE(gpu.resetState());
  Result<std::vector<NamedTensor>> reset = gpu.readState();
  REQUIRE(reset);
  CHECK(std::memcmp((*reset)[0].tensor.data(), w0.data(), w0.byteCount()) == 0);
  REQUIRE(gpu.writeState("w", (*cs)[0].tensor.view()));
  CHECK_FALSE(gpu.writeState("nope", w0.view()));
  gpu.setTiming(true);
  HostTensor x = rnd(DType::F32, {16, 8}, rng),
             dy = rnd(DType::F32, {16, 4}, rng);
  REQUIRE(gpu.run({{"x", x.view()}, {"dy", dy.view()}}));
  CHECK(gpu.callTimes().runs == 1);
  CHECK(gpu.callTimes().totalMs.size() == 3);
#endif
}

TEST_CASE("CUDA: calls at load run once, before the first run, and stay out "
          "of every run",
          "[cuda][device]") {
  // y = x + neg(transpose(w)): the transpose and the neg at load, the add
  // on every run (twice: the second run replays the CUDA graph, which must
  // not hold the calls at load).
  Rng rng(41);
  HostTensor w = rnd(DType::F32, {3, 4}, rng);
  const float *wv = w.as<float>();
  OneCall c;
  Plan &p = c.plan;
  uint32_t x = appendArenaBuffer(p, DType::F32, {4, 3}, "x");
  uint32_t wid = appendWeightBuffer(p, BufferStorage::Weight, "w", "w", {3, 4},
                                    std::vector<float>(wv, wv + 12));
  auto derived = [&](const std::string &name) {
    PlanBuffer b;
    b.id = static_cast<uint32_t>(p.buffers.size());
    b.dtype = DType::F32;
    b.shape = {4, 3};
    b.storage = BufferStorage::Derived;
    b.name = name;
    p.buffers.push_back(b);
    return b.id;
  };
  uint32_t wT = derived("wT"), negT = derived("negT");
  uint32_t y = appendArenaBuffer(p, DType::F32, {4, 3}, "y");
  p.inputs.push_back({"x", x, DType::F32, {4, 3}});
  p.outputs.push_back({"y", y, DType::F32, {4, 3}});
  PlanCall t{"kernel.transpose",
             {wid},
             {wT},
             0,
             {{"perm", std::vector<int64_t>{1, 0}}},
             "w_t",
             true};
  PlanCall neg{"kernel.elementwise",         {wT},    {negT}, 0,
               {{"fn", std::string("neg")}}, "w_neg", true};
  PlanCall add{"kernel.elementwise",         {x, negT}, {y},  0,
               {{"fn", std::string("add")}}, "add",     false};
  p.calls = {t, neg, add};
  c.values.push_back(
      std::make_shared<HostTensor>(rnd(DType::F32, {4, 3}, rng)));
  compareCall(c);
}
