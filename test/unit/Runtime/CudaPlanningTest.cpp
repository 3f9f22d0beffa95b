//===- CudaPlanningTest.cpp - the CUDA backend's planning -----------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// the call table, launch sizes and the workspace layout, and checkPlanForCuda;
// the planners by family are in CudaPlanning*Test.cpp.
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

TEST_CASE("the CUDA call table: kinds, and the CPU implements them all",
          "[cuda][planning]") {
  const std::vector<std::string> &kinds = cudaCallKinds();
  CHECK(std::is_sorted(kinds.begin(), kinds.end()));
  for (const char *k : {"cublaslt.matmul",
                        "cudnn.conv_fwd",
                        "cudnn.conv_bwd_data",
                        "cudnn.conv_bwd_filter",
                        "cudnn.pool",
                        "cudnn.pool_bwd",
                        "cudnn.batch_norm_inference",
                        "cudnn.batch_norm_training",
                        "cudnn.batch_norm_bwd",
                        "cudnn.softmax",
                        "kernel.elementwise",
                        "kernel.cast",
                        "kernel.reduce",
                        "kernel.copy",
                        "kernel.transpose",
                        "kernel.unscale_check_finite",
                        "kernel.loss_scale_update",
                        "kernel.sgd_step",
                        "kernel.adam_step",
                        "kernel.softmax_cross_entropy_grad",
                        "kernel.nll_loss",
                        "kernel.gather",
                        "kernel.scatter_nd"})
    CHECK(isCudaCallKind(k));
  CHECK(isCudaCallKind("kernel.concat"));
  CHECK(isCudaCallKind("kernel.layer_norm"));
  CHECK_FALSE(isCudaCallKind("kernel.no_such_call"));
  for (const std::string &k : kinds)
    CHECK(cpu::cpuCallTable().find(k) != nullptr);
  // And the other way round: the GPU has every kind of the CPU.
  for (const std::string &k : cpu::cpuCallTable().kinds()) {
    INFO(k);
    CHECK(isCudaCallKind(k));
  }
}

TEST_CASE("launch sizes and the workspace layout", "[cuda][planning]") {
  LaunchConfig c = launchFor(1000, 256);
  CHECK(c.threads == 256);
  CHECK(c.blocks == 4);
  CHECK(launchFor(0).blocks == 1);
  CHECK(launchFor(int64_t(1) << 40, 256, 8192).blocks == 8192);
  CHECK(launchFor(1, 128).blocks == 1);

  WorkspaceLayout ws;
  CHECK(ws.add(10) == 0);
  CHECK(ws.add(300) == 256);
  CHECK(ws.add(0) == 768);
  CHECK(ws.add(1) == 768);
  CHECK(ws.total() == 769);

  CHECK(addressAlignment(0) == 256);
  CHECK(addressAlignment(4096 + 16) == 16);
  CHECK(addressAlignment(4096 + 2) == 2);
  CHECK(addressAlignment(4096 + 512) == 256);
}

TEST_CASE("checkPlanForCuda lists the calls the GPU does not implement",
          "[cuda][planning]") {
  Plan plan;
  plan.arenaSize = 4096;
  plan.buffers.push_back({0, DType::F32, {4}, BufferStorage::Arena, 0, 0, "x"});
  plan.buffers.push_back(
      {1, DType::F32, {4}, BufferStorage::Arena, 256, 0, "y"});
  plan.buffers.push_back(
      {2, DType::F32, {2}, BufferStorage::Arena, 512, 0, "v"});
  plan.buffers.push_back(
      {3, DType::I64, {2}, BufferStorage::Arena, 768, 0, "i"});
  plan.inputs.push_back({"x", 0, DType::F32, {4}});
  plan.outputs.push_back({"y", 1, DType::F32, {4}});
  PlanCall relu;
  relu.kind = "kernel.elementwise";
  relu.operands = {0};
  relu.results = {1};
  relu.attributes = {{"fn", std::string("relu")}};
  relu.location = "Relu_0";
  plan.calls.push_back(relu);
  REQUIRE(checkPlanForCuda(plan, "p.mpplan"));

  // Every CPU kind has a GPU implementation: kinds of a newer plan format.
  PlanCall future;
  future.kind = "kernel.future_call";
  future.operands = {1};
  future.results = {2, 3};
  future.location = "Future_1";
  plan.calls.push_back(future);
  PlanCall other;
  other.kind = "cudnn.future_call";
  other.operands = {0};
  other.results = {1};
  plan.calls.push_back(other);
  Status s = checkPlanForCuda(plan, "p.mpplan");
  REQUIRE_FALSE(s);
  CHECK(s.message() ==
        "p.mpplan: the CUDA backend does not implement 2 calls: call #1 "
        "(kernel.future_call at node 'Future_1'), call #2 "
        "(cudnn.future_call)");

  plan.calls.resize(1);
  plan.calls[0].attributes = {{"fn", std::string("sqrt")}};
  plan.buffers[1].dtype = DType::F16;
  plan.outputs[0].dtype = DType::F16;
  Status t = checkPlanForCuda(plan, "p.mpplan");
  REQUIRE_FALSE(t);
  CHECK(t.message() == "p.mpplan: call #0 (kernel.elementwise at node "
                       "'Relu_0'): elementwise sqrt: y has dtype f16; "
                       "expected f32");
}
