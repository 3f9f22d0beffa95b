//===- CudaDeviceDataTest.cpp - trilu, pad, resize ------------------------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: trilu, tile, pad, gather_elements / _nd, scatter_elements, resize.
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

TEST_CASE("CUDA: trilu, tile, pad", "[cuda][device]") {
  Rng rng(18);
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::I64}) {
    INFO("dtype " << dtypeName(t));
    for (int64_t upper : {0, 1})
      for (int64_t k : {int64_t(-2), int64_t(0), int64_t(3), int64_t(1) << 62})
        compareCall(oneCall("kernel.trilu", {{"upper", upper}, {"k", k}},
                            {{"x", rnd(t, {2, 5, 7}, rng, -9, 9)}},
                            {{"y", t, {2, 5, 7}}}));
    compareCall(oneCall("kernel.trilu", {}, {{"x", rnd(t, {6, 6}, rng, -9, 9)}},
                        {{"y", t, {6, 6}, 0, true}}));
    compareCall(oneCall("kernel.tile", {},
                        {{"x", rnd(t, {2, 3, 1}, rng, -9, 9)}},
                        {{"y", t, {4, 3, 5}}}));
    for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
      INFO("mode " << mode);
      // Pads past the size of x (reflect and wrap repeat), negative pads
      // (cropping).
      compareCall(oneCall("kernel.pad",
                          {{"mode", mode},
                           {"pads", std::vector<int64_t>{2, 7, -1, 1, 9, 0}},
                           {"value", -3.0}},
                          {{"x", rnd(t, {3, 4, 5}, rng, -9, 9)}},
                          {{"y", t, {6, 20, 4}}}));
    }
  }
  // A single element along a dim (reflect of one element), bool constant.
  compareCall(oneCall("kernel.pad",
                      {{"mode", std::string("reflect")},
                       {"pads", std::vector<int64_t>{0, 2, 0, 3}}},
                      {{"x", rnd(DType::F32, {4, 1}, rng)}},
                      {{"y", DType::F32, {4, 6}}}));
  compareCall(oneCall(
      "kernel.pad", {{"pads", std::vector<int64_t>{1, 1}}, {"value", 1.0}},
      {{"x", rnd(DType::Bool, {3}, rng, 0, 1)}}, {{"y", DType::Bool, {5}}}));
}

TEST_CASE("CUDA: gather_elements, gather_nd, scatter_elements",
          "[cuda][device]") {
  Rng rng(19);
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::U8}) {
    INFO("dtype " << dtypeName(t));
    compareCall(
        oneCall("kernel.gather_elements", {{"axis", int64_t(1)}},
                {{"data", rnd(t, {3, 4, 2}, rng, 0, 9)},
                 {"indices", indices(DType::I64, {2, 5, 2},
                                     {0, 3, -1, 2, 1, 1, 0,  0, -4, 3,
                                      2, 2, 1,  0, 3, 3, -2, 0, 1,  2})}},
                {{"y", t, {2, 5, 2}}}));
    compareCall(oneCall("kernel.gather_nd", {},
                        {{"data", rnd(t, {4, 3, 5}, rng, 0, 9)},
                         {"indices", indices(DType::I32, {2, 2, 2},
                                             {0, 1, 3, -1, 2, 2, -4, 0})}},
                        {{"y", t, {2, 2, 5}}}));
    compareCall(
        oneCall("kernel.gather_nd", {{"batch_dims", int64_t(1)}},
                {{"data", rnd(t, {2, 3, 4}, rng, 0, 9)},
                 {"indices", indices(DType::I64, {2, 3, 2},
                                     {0, 1, 2, 3, 1, 0, 2, 2, 0, 0, 1, -1})}},
                {{"y", t, {2, 3}}}));
  }
  // Repeated indices: in order for none, combined for the reductions.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::U8, DType::Bool}) {
    INFO("dtype " << dtypeName(t));
    for (std::string red : {"none", "add", "mul", "max", "min"}) {
      INFO("reduction " << red);
      compareCall(oneCall(
          "kernel.scatter_elements", {{"axis", int64_t(0)}, {"reduction", red}},
          {{"data", rnd(t, {4, 3}, rng, 0, 4)},
           {"indices",
            indices(DType::I64, {5, 3},
                    {1, 0, 3, 1, 0, -1, 3, 2, 3, 1, 2, 0, -3, 0, 0})},
           {"updates", rnd(t, {5, 3}, rng, 0, 4)}},
          {{"y", t, {4, 3}}}));
    }
  }
  // In place, along the last axis.
  compareCall(oneCall("kernel.scatter_elements", {{"axis", int64_t(-1)}},
                      {{"data", rnd(DType::F32, {3, 6}, rng)},
                       {"indices", indices(DType::I32, {2, 2}, {5, 0, 2, 2})},
                       {"updates", rnd(DType::F32, {2, 2}, rng)}},
                      {{"y", DType::F32, {3, 6}, 0, true}}));
#if MP_HAVE_CUDA_BACKEND
  OneCall bad = oneCall("kernel.gather_elements", {},
                        {{"data", rnd(DType::F32, {4}, rng)},
                         {"indices", indices(DType::I64, {2}, {1, -5})}},
                        {{"y", DType::F32, {2}}});
  REQUIRE(cuda::checkPlanForCuda(bad.plan, "bad"));
  if (!gpuOrWarn())
    return;
  Result<CudaExecutor> gpu = CudaExecutor::create(bad.plan, "gpu");
  REQUIRE(gpu);
  Result<std::vector<NamedTensor>> out = gpu->run(bad.views());
  REQUIRE_FALSE(out);
  CHECK(out.message() == "call #0 (kernel.gather_elements at node 'test'): "
                         "index -5 is out of range");
#endif
}

TEST_CASE("CUDA: resize", "[cuda][device]") {
  Rng rng(20);
  auto resize = [&](DType t, Shape x, Shape y, std::vector<double> scales,
                    std::vector<PlanAttr> extra) {
    std::vector<PlanAttr> attrs{{"scales", scales}};
    for (PlanAttr &e : extra)
      attrs.push_back(e);
    compareCall(oneCall("kernel.resize", attrs, {{"x", rnd(t, x, rng, -5, 5)}},
                        {{"y", t, y}}));
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    for (std::string mode : {"nearest", "linear", "cubic"})
      for (std::string ct : {"half_pixel", "pytorch_half_pixel",
                             "align_corners", "asymmetric"}) {
        INFO(mode << " " << ct);
        resize(t, {1, 2, 5, 4}, {1, 2, 9, 7}, {1, 1, 1.8, 1.75},
               {{"mode", mode}, {"coordinate_transformation_mode", ct}});
        resize(t, {2, 8, 6}, {2, 3, 4}, {1, 0.375, 0.7},
               {{"mode", mode}, {"coordinate_transformation_mode", ct}});
      }
    resize(t, {1, 1, 6, 6}, {1, 1, 9, 4}, {1, 1, 1.5, 0.7},
           {{"mode", std::string("cubic")},
            {"cubic_coeff_a", -0.5},
            {"exclude_outside", int64_t(1)}});
    resize(
        t, {1, 3, 5, 5}, {1, 3, 8, 3}, {1, 1, 1.6, 0.6},
        {{"mode", std::string("linear")},
         {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
         {"roi", std::vector<double>{0, 0, -0.2, 0.3, 1, 1, 1.1, 0.9}},
         {"extrapolation_value", 7.0}});
  }
  for (std::string nm :
       {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    resize(DType::I32, {3, 4}, {6, 10}, {2, 2.5},
           {{"nearest_mode", nm},
            {"coordinate_transformation_mode", std::string("asymmetric")}});
  resize(DType::U8, {4, 4}, {6, 3}, {1.5, 0.75},
         {{"coordinate_transformation_mode",
           std::string("tf_half_pixel_for_nn")}});
  resize(DType::I16, {6}, {9}, {1.5},
         {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
          {"roi", std::vector<double>{-0.3, 1.2}},
          {"extrapolation_value", -4.0}});
}
