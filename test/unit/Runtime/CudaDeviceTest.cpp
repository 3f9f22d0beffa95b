//===- CudaDeviceTest.cpp - every CUDA call against the CPU call ----------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs with a tolerance per dtype. Without a device (cudaGetDeviceCount
// fails or reports 0) the GPU part only WARNs and returns, so the tests
// pass on machines without GPUs and really run on GPU machines.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestSupport.h"

#include "mp/Runtime/CUDA/CudaPlanning.h"
#include "mp/Runtime/Executor.h"
#if MP_HAVE_CUDA_BACKEND
#include "mp/Runtime/CUDA/CudaExecutor.h"
#endif

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

using namespace mp::rt;
using mp::rt::test::getD;
using mp::rt::test::randomTensor;
using mp::rt::test::Rng;
using mp::rt::test::setD;

namespace {

/// An argument of a one-call plan (copies share the tensor: initializer
/// lists copy their elements).
struct Arg {
  std::string name;
  std::shared_ptr<HostTensor> value;
  Arg(std::string n, HostTensor v)
      : name(std::move(n)), value(std::make_shared<HostTensor>(std::move(v))) {}
};

HostTensor clone(const HostTensor &t) {
  HostTensor c(t.dtype(), t.shape());
  if (t.byteCount())
    std::memcpy(c.data(), t.data(), t.byteCount());
  return c;
}
struct Res {
  std::string name;
  DType dtype;
  Shape shape;
  int aliasOf = -1; ///< the result is this argument's buffer (in place)
  /// With aliasOf: the buffer stays an operand too (unscale's u_i = g_i,
  /// batch norm's running statistics); otherwise it is a result only.
  bool keepOperand = false;
};

/// A plan of one call: its arguments are graph inputs, its results graph
/// outputs (arena buffers; results may alias arguments).
struct OneCall {
  Plan plan;
  std::vector<std::shared_ptr<HostTensor>> values;
  std::vector<NamedView> views() const {
    std::vector<NamedView> v;
    for (size_t i = 0; i < values.size(); ++i)
      v.push_back({plan.inputs[i].name, values[i]->view()});
    return v;
  }
};

OneCall oneCall(const std::string &kind, std::vector<PlanAttr> attrs,
                std::vector<Arg> args, std::vector<Res> results) {
  OneCall c;
  uint64_t offset = 0;
  auto place = [&](DType t, const Shape &s, const std::string &name) {
    uint32_t id = static_cast<uint32_t>(c.plan.buffers.size());
    PlanBuffer b{id, t, s, BufferStorage::Arena, offset, 0, name};
    offset += (b.byteCount() + 255) / 256 * 256 + 256;
    c.plan.buffers.push_back(b);
    return id;
  };
  PlanCall call;
  call.kind = kind;
  call.attributes = std::move(attrs);
  call.location = "test";
  for (Arg &a : args) {
    uint32_t id = place(a.value->dtype(), a.value->shape(), a.name);
    c.plan.inputs.push_back({a.name, id, a.value->dtype(), a.value->shape()});
    call.operands.push_back(id);
    c.values.push_back(a.value);
  }
  for (const Res &r : results) {
    uint32_t id = r.aliasOf >= 0 ? call.operands[r.aliasOf]
                                 : place(r.dtype, r.shape, r.name);
    c.plan.outputs.push_back({r.name, id, r.dtype, r.shape});
    call.results.push_back(id);
  }
  // In-place results are not operands of their call (docs/plan-format.md).
  for (const Res &r : results)
    if (r.aliasOf >= 0 && !r.keepOperand)
      call.operands[r.aliasOf] = UINT32_MAX;
  call.operands.erase(
      std::remove(call.operands.begin(), call.operands.end(), UINT32_MAX),
      call.operands.end());
  c.plan.arenaSize = offset + 256;
  c.plan.calls.push_back(call);
  return c;
}

struct Tol {
  double rtol, atol;
};

// Used only where the CUDA backend is built.
[[maybe_unused]] Tol tolFor(DType t) {
  switch (t) {
  case DType::F16:
    return {4e-3, 2e-3};
  case DType::BF16:
    return {3e-2, 2e-2};
  case DType::F32:
    return {2e-4, 2e-5};
  case DType::F64:
    return {1e-9, 1e-12};
  default:
    return {0, 0};
  }
}

/// Whether a GPU is there (warns once per process when not).
bool gpuOrWarn() {
  static bool warned = false;
#if MP_HAVE_CUDA_BACKEND
  std::string why;
  if (cudaDeviceCount(&why) > 0)
    return true;
  if (!warned)
    WARN("no CUDA device (" << why
                            << "): the GPU parts of the CUDA tests did not run "
                               "(the CPU reference and the CUDA planning did)");
#else
  if (!warned)
    WARN("built without the CUDA backend: the GPU parts of the CUDA tests did "
         "not run (the CPU reference and the CUDA planning did)");
#endif
  warned = true;
  return false;
}

[[maybe_unused]] void compareTensors(const std::string &name,
                                     const HostTensor &gpu,
                                     const HostTensor &cpu, Tol tol) {
  INFO("output " << name);
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  bool exact = !isFloat(cpu.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < cpu.numElements(); ++i) {
    double g = getD(gpu, i), c = getD(cpu, i);
    bool ok;
    if (exact)
      ok =
          std::memcmp(
              static_cast<const char *>(gpu.data()) + i * byteSize(cpu.dtype()),
              static_cast<const char *>(cpu.data()) + i * byteSize(cpu.dtype()),
              byteSize(cpu.dtype())) == 0;
    else if (std::isnan(c) || std::isnan(g))
      ok = std::isnan(c) && std::isnan(g);
    else if (c == g)
      ok = true;
    else
      ok = std::abs(g - c) <= tol.atol + tol.rtol * std::abs(c);
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad) {
    INFO(bad << " of " << cpu.numElements() << " elements differ; first at "
             << first << ": GPU " << getD(gpu, first) << ", CPU "
             << getD(cpu, first));
    CHECK(bad == 0);
  }
}

/// Runs `c` on the CPU and, with a GPU, on the CUDA executor (twice: the
/// second run replays the CUDA graph), and compares every output.
/// `tol` overrides the per-dtype tolerance.
/// `batchNorm` picks who runs batch norms on the GPU.
void compareCall(const OneCall &c, std::optional<Tol> tol = std::nullopt,
                 cuda::BatchNormImpl batchNorm = cuda::BatchNormImpl::Auto) {
  Result<CpuExecutor> cpu = CpuExecutor::create(c.plan, "cpu");
  REQUIRE(cpu);
  Result<std::vector<NamedTensor>> expected = cpu->run(c.views());
  INFO((expected ? std::string() : expected.message()));
  REQUIRE(expected);
  Status planned = cuda::checkPlanForCuda(c.plan, "plan");
  INFO(planned.message());
  REQUIRE(planned);
#if MP_HAVE_CUDA_BACKEND
  if (!gpuOrWarn())
    return;
  CudaExecutorOptions options;
  options.batchNorm = batchNorm;
  Result<CudaExecutor> gpu = CudaExecutor::create(c.plan, "gpu", options);
  INFO((gpu ? std::string() : gpu.message()));
  REQUIRE(gpu);
  for (int run = 0; run < 2; ++run) {
    Result<std::vector<NamedTensor>> got = gpu->run(c.views());
    INFO("run " << run << ": " << (got ? std::string() : got.message()));
    REQUIRE(got);
    REQUIRE(got->size() == expected->size());
    for (size_t i = 0; i < got->size(); ++i)
      compareTensors((*got)[i].name, (*got)[i].tensor, (*expected)[i].tensor,
                     tol.value_or(tolFor((*expected)[i].tensor.dtype())));
  }
#else
  gpuOrWarn();
#endif
}

HostTensor rnd(DType t, Shape s, Rng &rng, double lo = -1, double hi = 1) {
  return randomTensor(t, std::move(s), rng, lo, hi);
}

HostTensor indices(DType t, Shape s, std::vector<int64_t> values) {
  HostTensor r(t, std::move(s));
  for (size_t i = 0; i < values.size(); ++i)
    setD(r, static_cast<int64_t>(i), static_cast<double>(values[i]));
  return r;
}

HostTensor scalarF32(float v) {
  HostTensor t(DType::F32, {1});
  *t.as<float>() = v;
  return t;
}

} // namespace

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
    mm({8, 16}, {16, 24}, {8, 24}, {{"alpha", 0.5}, {"beta", 2.0}},
       rnd(t, {8, 24}, rng));
    mm({8, 16}, {16, 24}, {8, 24}, {{"beta", -1.0}}, rnd(t, {24}, rng));
    if (t != DType::F32) // f16/bf16 inputs, an f32 result
      mm({8, 16}, {16, 24}, {8, 24}, {}, std::nullopt, std::nullopt,
         DType::F32);
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
                         {"activation", act}},
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
    conv(t, {2, 3, 20}, {5, 3, 3}, {2, 5, 20}, {1, 1}, {1}, {1}, 1, "nchw",
         "none", false);
    conv(t, {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {1, 3, 3, 4, 5},
         {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {1, 1, 1}, 1, "nchw", "none", false);
  }
  conv(DType::F16, {2, 4, 8, 8}, {8, 4, 3, 3}, {2, 8, 6, 6}, {0, 0, 0, 0},
       {1, 1}, {1, 1}, 1, "nchw", "relu", true, DType::F32);
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
  // Every variant on cuDNN (Auto: persistent mode for the f16 channels-last
  // training forward; CudnnSpatial) and on the own kernels; a 16-bit bias
  // always runs on the own kernels.
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
            {{2, 4, 3, 8}, "nhwc"}}) {
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
        std::vector<PlanAttr> training = common;
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
        compareCall(oneCall("cudnn.batch_norm_bwd", common,
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

TEST_CASE("CUDA: kernel.elementwise", "[cuda][device]") {
  Rng rng(8);
  auto ew = [&](const std::string &fn, std::vector<Arg> args, Res res,
                std::vector<PlanAttr> extra = {}) {
    INFO("fn " << fn);
    std::vector<PlanAttr> attrs{{"fn", fn}};
    for (PlanAttr &e : extra)
      attrs.push_back(e);
    compareCall(oneCall("kernel.elementwise", attrs, std::move(args), {res}));
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    for (const char *fn :
         {"identity", "abs",        "neg",          "exp",       "relu",
          "sigmoid",  "tanh",       "erf",          "floor",     "ceil",
          "round",    "sign",       "sin",          "cos",       "softplus",
          "softsign", "hard_swish", "gelu",         "gelu_tanh", "leaky_relu",
          "elu",      "selu",       "hard_sigmoid", "atan",      "sinh"})
      ew(fn, {{"x", rnd(t, {3, 17}, rng, -3, 3)}}, {"y", t, {3, 17}});
    for (const char *fn : {"log", "sqrt", "reciprocal"})
      ew(fn, {{"x", rnd(t, {3, 17}, rng, 0.1, 3)}}, {"y", t, {3, 17}});
    for (const char *fn :
         {"add", "sub", "mul", "div", "max", "min", "prelu", "mod", "fmod"})
      ew(fn,
         {{"a", rnd(t, {2, 3, 17}, rng, -3, 3)},
          {"b", rnd(t, {3, 1}, rng, 0.5, 3)}},
         {"y", t, {2, 3, 17}});
    ew("pow", {{"a", rnd(t, {4, 5}, rng, 0.5, 2)}, {"b", rnd(t, {5}, rng)}},
       {"y", t, {4, 5}});
    for (const char *fn : {"greater", "less", "equal", "less_equal"})
      ew(fn, {{"a", rnd(t, {4, 5}, rng)}, {"b", rnd(t, {1, 5}, rng)}},
         {"y", DType::Bool, {4, 5}});
    ew("where",
       {{"c", rnd(DType::Bool, {4, 1}, rng, 0, 2)},
        {"a", rnd(t, {4, 5}, rng)},
        {"b", rnd(t, {5}, rng)}},
       {"y", t, {4, 5}});
    ew("clip",
       {{"x", rnd(t, {4, 5}, rng, -2, 2)},
        {"lo", rnd(t, {}, rng, -1, -0.5)},
        {"hi", rnd(t, {5}, rng, 0.5, 1)}},
       {"y", t, {4, 5}});
    ew("clip", {{"x", rnd(t, {4, 5}, rng, -2, 2)}}, {"y", t, {4, 5}},
       {{"alpha", -0.5}, {"beta", 0.75}});
    for (const char *fn : {"sum", "mean", "max"})
      ew(fn,
         {{"a", rnd(t, {4, 5}, rng)},
          {"b", rnd(t, {5}, rng)},
          {"c", rnd(t, {4, 1}, rng)}},
         {"y", t, {4, 5}});
    ew("is_nan", {{"x", rnd(t, {6}, rng)}}, {"y", DType::Bool, {6}});
  }
  for (DType t : {DType::I32, DType::I64, DType::I8, DType::U8}) {
    INFO("dtype " << dtypeName(t));
    double lo = t == DType::U8 ? 0 : -50;
    for (const char *fn : {"add", "sub", "mul", "div", "max", "min"})
      ew(fn,
         {{"a", rnd(t, {3, 7}, rng, lo, 50)}, {"b", rnd(t, {7}, rng, 1, 9)}},
         {"y", t, {3, 7}});
    ew("greater",
       {{"a", rnd(t, {3, 7}, rng, lo / 10, 5)},
        {"b", rnd(t, {7}, rng, lo / 10, 5)}},
       {"y", DType::Bool, {3, 7}});
    ew("clip", {{"x", rnd(t, {3, 7}, rng, lo, 50)}}, {"y", t, {3, 7}},
       {{"alpha", 2.5}, {"beta", 1e10}});
    // Bounds beyond the dtype's range saturate to it (the CPU's cast).
    ew("clip", {{"x", rnd(t, {3, 7}, rng, lo, 50)}}, {"y", t, {3, 7}},
       {{"alpha", -1e10}, {"beta", 300.0}});
  }
  // Integer remainders, pow and prelu with negative and zero divisors
  // (x mod 0 gives 0, as the CPU); shifts of unsigned integers, by up to
  // more than the width.
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64}) {
    INFO("dtype " << dtypeName(t));
    for (const char *fn : {"mod", "fmod", "div", "prelu"})
      ew(fn,
         {{"a", rnd(t, {3, 7}, rng, -50, 50)}, {"b", rnd(t, {7}, rng, -9, 9)}},
         {"y", t, {3, 7}});
    ew("pow",
       {{"a", rnd(t, {3, 7}, rng, -5, 5)}, {"b", rnd(t, {7}, rng, -2, 7)}},
       {"y", t, {3, 7}});
    ew("shrink", {{"x", rnd(t, {3, 7}, rng, -50, 50)}}, {"y", t, {3, 7}},
       {{"alpha", 2.5}, {"beta", 300.0}}); // saturates
    ew("pow",
       {{"a", rnd(t, {3, 7}, rng, 0, 9)},
        {"b", rnd(DType::F32, {7}, rng, -1, 3)}},
       {"y", t, {3, 7}});
  }
  // Powers beyond 2^53 (and i64 saturation): both backends round the same
  // products (mp/Runtime/IntegerPow.h).
  ew("pow",
     {{"a", indices(DType::I64, {4}, {3, 13, 82, -7})},
      {"b", indices(DType::I64, {4}, {34, 17, 10, 40})}},
     {"y", DType::I64, {4}});
  for (DType t : {DType::U8, DType::U16, DType::U32, DType::U64}) {
    INFO("dtype " << dtypeName(t));
    for (const char *fn : {"mod", "fmod", "div", "max", "min", "add", "mul"})
      ew(fn,
         {{"a", rnd(t, {3, 7}, rng, 0, 200)}, {"b", rnd(t, {7}, rng, 0, 9)}},
         {"y", t, {3, 7}});
    double bits = 8.0 * static_cast<double>(byteSize(t));
    for (const char *fn : {"bitshift_left", "bitshift_right"})
      ew(fn,
         {{"a", rnd(t, {3, 7}, rng, 0, 200)},
          {"b", rnd(t, {7}, rng, 0, bits + 3)}},
         {"y", t, {3, 7}});
    ew("pow", {{"a", rnd(t, {3, 7}, rng, 0, 6)}, {"b", rnd(t, {7}, rng, 0, 5)}},
       {"y", t, {3, 7}});
  }
  {
    // u64 above 2^63: unsigned order, division and remainders.
    auto u64 = [](std::vector<uint64_t> v) {
      HostTensor t(DType::U64, {static_cast<int64_t>(v.size())});
      std::copy(v.begin(), v.end(), t.as<uint64_t>());
      return t;
    };
    const uint64_t big = uint64_t(1) << 63;
    const std::vector<uint64_t> a{big + 5, 7, big, ~uint64_t(0), 3, big + 1};
    const std::vector<uint64_t> b{3, big + 2, big, 10, 0, 2};
    for (const char *fn :
         {"max", "min", "div", "mod", "fmod", "sub", "add", "bitshift_right"})
      ew(fn, {{"a", u64(a)}, {"b", u64(b)}}, {"y", DType::U64, {6}});
    for (const char *fn : {"greater", "less_equal", "equal"})
      ew(fn, {{"a", u64(a)}, {"b", u64(b)}}, {"y", DType::Bool, {6}});
    ew("max", {{"a", u64(a)}, {"b", u64(b)}, {"c", u64({1, 2, 3, 4, 5, big})}},
       {"y", DType::U64, {6}});
  }
  ew("and",
     {{"a", rnd(DType::Bool, {8}, rng, 0, 2)},
      {"b", rnd(DType::Bool, {8}, rng, 0, 2)}},
     {"y", DType::Bool, {8}});
  ew("not", {{"a", rnd(DType::Bool, {8}, rng, 0, 2)}}, {"y", DType::Bool, {8}});
  ew("where",
     {{"c", rnd(DType::Bool, {8}, rng, 0, 2)},
      {"a", rnd(DType::I64, {8}, rng, -9, 9)},
      {"b", rnd(DType::I64, {8}, rng, -9, 9)}},
     {"y", DType::I64, {8}});
}

TEST_CASE("CUDA: kernel.cast, copy, broadcast, slice, concat, transpose",
          "[cuda][device]") {
  Rng rng(9);
  const DType all[] = {DType::F32, DType::F16, DType::BF16,
                       DType::F64, DType::I8,  DType::U8,
                       DType::I32, DType::I64, DType::Bool};
  for (DType from : all)
    for (DType to : all) {
      INFO(dtypeName(from) << " -> " << dtypeName(to));
      double lo = from == DType::Bool ? 0
                  : from == DType::U8 ? 0
                  : from == DType::I8 ? -128
                                      : -300;
      double hi = from == DType::Bool ? 2
                  : from == DType::U8 ? 256
                  : from == DType::I8 ? 128
                                      : 300;
      HostTensor x = rnd(from, {37}, rng, lo, hi);
      if (isFloat(from)) {
        setD(x, 0, std::numeric_limits<double>::quiet_NaN());
        setD(x, 1, std::numeric_limits<double>::infinity());
        setD(x, 2, 1e20);
        setD(x, 3, -2.5);
        setD(x, 4, 0.5);
      }
      compareCall(
          oneCall("kernel.cast", {}, {{"x", std::move(x)}}, {{"y", to, {37}}}),
          Tol{0, 0});
    }
  compareCall(oneCall("kernel.copy", {}, {{"x", rnd(DType::F16, {3, 4}, rng)}},
                      {{"y", DType::F16, {12}}}));
  compareCall(oneCall("kernel.broadcast", {},
                      {{"x", rnd(DType::F32, {3, 1}, rng)}},
                      {{"y", DType::F32, {2, 3, 5}}}));
  compareCall(oneCall("kernel.slice",
                      {{"starts", std::vector<int64_t>{1, 9, 0}},
                       {"steps", std::vector<int64_t>{2, -3, 1}}},
                      {{"x", rnd(DType::BF16, {4, 10, 6}, rng)}},
                      {{"y", DType::BF16, {2, 3, 6}}}));
  compareCall(oneCall("kernel.concat", {{"axis", int64_t(1)}},
                      {{"a", rnd(DType::F16, {2, 3, 4}, rng)},
                       {"b", rnd(DType::F16, {2, 0, 4}, rng)},
                       {"c", rnd(DType::F16, {2, 5, 4}, rng)}},
                      {{"y", DType::F16, {2, 8, 4}}}));
  for (auto [shape, perm] : std::vector<std::pair<Shape, std::vector<int64_t>>>{
           {{2, 3, 4}, {0, 2, 1}},
           {{2, 3, 4, 5}, {3, 1, 0, 2}},
           {{64, 48}, {1, 0}},
           {{2, 1, 3}, {}}}) {
    Shape y;
    std::vector<int64_t> p = perm;
    if (p.empty())
      for (size_t i = shape.size(); i-- > 0;)
        p.push_back(static_cast<int64_t>(i));
    for (int64_t d : p)
      y.push_back(shape[d]);
    compareCall(oneCall("kernel.transpose", {{"perm", perm}},
                        {{"x", rnd(DType::BF16, shape, rng)}},
                        {{"y", DType::BF16, y}}));
  }
}

TEST_CASE("CUDA: kernel.reduce", "[cuda][device]") {
  Rng rng(10);
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::F64})
    for (const char *fn : {"sum", "mean", "max", "min", "prod", "l1", "l2",
                           "sum_square", "log_sum", "log_sum_exp"})
      for (auto [shape, axes, y] :
           std::vector<std::tuple<Shape, std::vector<int64_t>, Shape>>{
               {{4, 300}, {1}, {4, 1}},
               {{3, 5, 7}, {1}, {3, 7}},
               {{3, 5, 7}, {0, 2}, {5}},
               {{2, 3, 0}, {2}, {2, 3}}}) {
        std::string f = fn;
        if (!isFloat(t) && (f == "l2" || f == "log_sum"))
          continue;
        if (f == "prod" && shape == Shape{4, 300})
          continue; // overflows to inf / wraps: compared elsewhere
        INFO(fn << " " << dtypeName(t) << " axes " << axes.size());
        double lo = f == "log_sum" ? 0.1 : -2, hi = 2;
        if (!isFloat(t)) {
          lo = -20;
          hi = 20;
        }
        compareCall(
            oneCall("kernel.reduce",
                    {{"fn", f}, {"axes", axes}, {"compute_type", int64_t(1)}},
                    {{"x", rnd(t, shape, rng, lo, hi)}}, {{"y", t, y}}),
            Tol{2e-3, 1e-3});
      }
  for (const char *fn : {"argmax", "argmin"})
    for (int64_t last : {0, 1}) {
      HostTensor x = rnd(DType::F16, {6, 40}, rng, -3, 3);
      setD(x, 5, 100); // ties and a NaN
      setD(x, 17, 100);
      setD(x, 41, std::numeric_limits<double>::quiet_NaN());
      compareCall(oneCall("kernel.reduce",
                          {{"fn", std::string(fn)},
                           {"axes", std::vector<int64_t>{1}},
                           {"compute_type", int64_t(1)},
                           {"select_last_index", last}},
                          {{"x", std::move(x)}}, {{"y", DType::I64, {6}}}));
    }
}

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

TEST_CASE("CUDA: layer_norm, instance_norm, lrn", "[cuda][device]") {
  Rng rng(15);
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    // The BERT case: the last axis, scale and bias of x's dtype.
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(1)},
                         {"has_mean", int64_t(0)},
                         {"has_inv_std_dev", int64_t(0)},
                         {"epsilon", 1e-12}},
                        {{"x", rnd(t, {2, 7, 768}, rng, -3, 3)},
                         {"scale", rnd(t, {768}, rng)},
                         {"bias", rnd(t, {768}, rng)}},
                        {{"y", t, {2, 7, 768}}}));
    // axis 1, a broadcast f32 scale, no bias, the statistics.
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(0)},
                         {"has_mean", int64_t(1)},
                         {"has_inv_std_dev", int64_t(1)},
                         {"axis", int64_t(1)}},
                        {{"x", rnd(t, {3, 4, 5}, rng, 1, 2)},
                         {"scale", rnd(DType::F32, {4, 1}, rng)}},
                        {{"y", t, {3, 4, 5}},
                         {"mean", DType::F32, {3, 1, 1}},
                         {"inv_std_dev", t, {3}}}));
    // In place (y is x).
    compareCall(oneCall("kernel.layer_norm",
                        {{"has_bias", int64_t(1)},
                         {"has_mean", int64_t(0)},
                         {"has_inv_std_dev", int64_t(0)}},
                        {{"x", rnd(t, {5, 33}, rng)},
                         {"scale", rnd(t, {33}, rng)},
                         {"bias", rnd(t, {1}, rng)}},
                        {{"y", t, {5, 33}, 0, true}}));
    compareCall(oneCall("kernel.instance_norm", {{"epsilon", 1e-3}},
                        {{"x", rnd(t, {2, 3, 6, 7}, rng, -2, 2)},
                         {"scale", rnd(DType::F32, {3}, rng)},
                         {"bias", rnd(t, {3}, rng)}},
                        {{"y", t, {2, 3, 6, 7}}}));
    compareCall(oneCall(
        "cudnn.lrn",
        {{"size", int64_t(4)}, {"alpha", 1e-2}, {"beta", 0.6}, {"bias", 2.0}},
        {{"x", rnd(t, {2, 6, 3, 4}, rng, -2, 2)}}, {{"y", t, {2, 6, 3, 4}}}));
  }
}

TEST_CASE("CUDA: cudnn.rnn (LSTM, GRU, RNN)", "[cuda][device]") {
  Rng rng(16);
  // seq 5, batch 3, input 4, hidden 6.
  const int64_t S = 5, B = 3, I = 4, H = 6;
  auto rnn = [&](DType t, std::string mode, std::string direction,
                 std::vector<PlanAttr> extra, bool withB, bool withLens,
                 bool withInit, bool withP, bool yc) {
    INFO(mode << " " << direction << " dtype " << dtypeName(t));
    int64_t G = mode == "lstm" ? 4 : mode == "gru" ? 3 : 1;
    int64_t D = direction == "bidirectional" ? 2 : 1;
    std::vector<PlanAttr> attrs{{"has_b", int64_t(withB)},
                                {"has_sequence_lens", int64_t(withLens)},
                                {"has_initial_h", int64_t(withInit)},
                                {"has_initial_c", int64_t(withInit && yc)},
                                {"has_p", int64_t(withP)},
                                {"has_y", int64_t(1)},
                                {"has_y_h", int64_t(1)},
                                {"has_y_c", int64_t(yc)},
                                {"mode", mode},
                                {"direction", direction},
                                {"hidden_size", H}};
    for (PlanAttr &e : extra)
      attrs.push_back(e);
    std::vector<Arg> args{{"x", rnd(t, {S, B, I}, rng)},
                          {"w", rnd(t, {D, G * H, I}, rng, -0.5, 0.5)},
                          {"r", rnd(t, {D, G * H, H}, rng, -0.5, 0.5)}};
    if (withB)
      args.push_back({"b", rnd(t, {D, 2 * G * H}, rng, -0.5, 0.5)});
    if (withLens)
      args.push_back({"sequence_lens", indices(DType::I32, {B}, {5, 2, 0})});
    if (withInit)
      args.push_back({"initial_h", rnd(t, {D, B, H}, rng)});
    if (withInit && yc)
      args.push_back({"initial_c", rnd(t, {D, B, H}, rng)});
    if (withP)
      args.push_back({"p", rnd(t, {D, 3 * H}, rng, -0.5, 0.5)});
    std::vector<Res> res{{"y", t, {S, D, B, H}}, {"y_h", t, {D, B, H}}};
    if (yc)
      res.push_back({"y_c", t, {D, B, H}});
    // 16-bit data: the state stays f32 on both sides; rounding differences
    // of the inputs to the gates grow a little over the steps.
    std::optional<Tol> tol;
    if (t != DType::F32)
      tol = Tol{2e-2, 1e-2};
    compareCall(oneCall("cudnn.rnn", attrs, std::move(args), res), tol);
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    rnn(t, "lstm", "forward", {}, true, false, false, false, true);
    rnn(t, "gru", "forward", {}, true, false, false, false, false);
    rnn(t, "rnn", "forward", {}, true, false, false, false, false);
  }
  const DType f = DType::F32;
  // LSTM: bidirectional with lengths, initial state and peepholes; reverse
  // with clip and input_forget; other activations.
  rnn(f, "lstm", "bidirectional", {}, true, true, true, true, true);
  rnn(f, "lstm", "reverse", {{"clip", 0.7}, {"input_forget", int64_t(1)}}, true,
      true, true, false, true);
  rnn(f, "lstm", "forward",
      {{"activations", std::string("HardSigmoid,Softsign,ScaledTanh")},
       {"activation_alpha", std::vector<double>{0.3, 0.8}},
       {"activation_beta", std::vector<double>{0.4, 1.5}}},
      false, false, true, false, true);
  // GRU: both reset orders, bidirectional, lengths, clip.
  for (int64_t lbr : {0, 1}) {
    rnn(f, "gru", "bidirectional", {{"linear_before_reset", lbr}}, true, true,
        true, false, false);
    rnn(f, "gru", "reverse", {{"linear_before_reset", lbr}, {"clip", 0.5}},
        true, false, true, false, false);
  }
  // RNN: Relu, LeakyRelu per direction.
  rnn(f, "rnn", "bidirectional",
      {{"activations", std::string("Relu,LeakyRelu")}}, true, true, true, false,
      false);
  rnn(f, "rnn", "reverse",
      {{"activations", std::string("Affine")},
       {"activation_alpha", std::vector<double>{0.5}},
       {"activation_beta", std::vector<double>{0.1}}},
      false, false, false, false, false);
}

TEST_CASE("CUDA: topk, cumsum, hardmax", "[cuda][device]") {
  Rng rng(17);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::U8,
                  DType::I64, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    // Few distinct values: ties (the lower index first) everywhere.
    HostTensor x = rnd(t, {3, 12, 5}, rng, 0, 6);
    for (int64_t i = 0; i < x.numElements(); ++i)
      setD(x, i, std::floor(getD(x, i)));
    for (int64_t largest : {0, 1})
      compareCall(oneCall(
          "kernel.topk", {{"axis", int64_t(1)}, {"largest", largest}},
          {{"x", clone(x)}},
          {{"values", t, {3, 4, 5}}, {"indices", DType::I64, {3, 4, 5}}}));
    compareCall(
        oneCall("kernel.topk", {}, {{"x", rnd(t, {7, 33}, rng, 0, 100)}},
                {{"values", t, {7, 33}}, {"indices", DType::I32, {7, 33}}}));
  }
  // NaN ranks above every number.
  HostTensor nan = rnd(DType::F32, {2, 6}, rng);
  setD(nan, 1, std::nan(""));
  setD(nan, 9, std::nan(""));
  for (int64_t largest : {0, 1})
    compareCall(oneCall(
        "kernel.topk", {{"largest", largest}}, {{"x", clone(nan)}},
        {{"values", DType::F32, {2, 3}}, {"indices", DType::I64, {2, 3}}}));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::I64}) {
    INFO("dtype " << dtypeName(t));
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1})
        compareCall(oneCall("kernel.cumsum",
                            {{"axis", int64_t(1)},
                             {"exclusive", exclusive},
                             {"reverse", reverse}},
                            {{"x", rnd(t, {3, 17, 4}, rng, -50, 50)}},
                            {{"y", t, {3, 17, 4}}}));
    // The last axis, in place.
    compareCall(oneCall("kernel.cumsum", {{"axis", int64_t(-1)}},
                        {{"x", rnd(t, {5, 40}, rng, -50, 50)}},
                        {{"y", t, {5, 40}, 0, true}}));
  }
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    HostTensor x = rnd(t, {4, 6, 3}, rng, 0, 4);
    for (int64_t i = 0; i < x.numElements(); ++i)
      setD(x, i, std::floor(getD(x, i))); // ties: the first maximum
    if (t == DType::F32)
      setD(x, 0, std::nan(""));
    compareCall(oneCall("kernel.hardmax", {{"axis", int64_t(1)}},
                        {{"x", clone(x)}}, {{"y", t, {4, 6, 3}}}));
    compareCall(oneCall("kernel.hardmax", {}, {{"x", clone(x)}},
                        {{"y", t, {4, 6, 3}, 0, true}}));
  }
}

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

TEST_CASE("CUDA: kernel.lstm_bwd", "[cuda][device]") {
  Rng rng(21);
  const int64_t S = 4, B = 3, I = 5, H = 4;
  auto bwd = [&](DType t, std::string direction, bool withB, bool withInit,
                 bool withDy, bool withDyState, bool withDb, bool withDinit) {
    INFO(direction << " dtype " << dtypeName(t));
    const int64_t D = direction == "bidirectional" ? 2 : 1;
    std::vector<PlanAttr> attrs{{"has_b", int64_t(withB)},
                                {"has_initial_h", int64_t(withInit)},
                                {"has_initial_c", int64_t(withInit)},
                                {"has_dy", int64_t(withDy)},
                                {"has_dy_h", int64_t(withDyState)},
                                {"has_dy_c", int64_t(withDyState)},
                                {"has_db", int64_t(withDb)},
                                {"has_dinitial_h", int64_t(withDinit)},
                                {"has_dinitial_c", int64_t(withDinit)},
                                {"direction", direction},
                                {"hidden_size", H}};
    std::vector<Arg> args{{"x", rnd(t, {S, B, I}, rng)},
                          {"w", rnd(t, {D, 4 * H, I}, rng, -0.5, 0.5)},
                          {"r", rnd(t, {D, 4 * H, H}, rng, -0.5, 0.5)}};
    if (withB)
      args.push_back({"b", rnd(t, {D, 8 * H}, rng, -0.5, 0.5)});
    if (withInit) {
      args.push_back({"initial_h", rnd(t, {D, B, H}, rng)});
      args.push_back({"initial_c", rnd(t, {D, B, H}, rng)});
    }
    if (withDy)
      args.push_back({"dy", rnd(t, {S, D, B, H}, rng)});
    if (withDyState) {
      args.push_back({"dy_h", rnd(t, {D, B, H}, rng)});
      args.push_back({"dy_c", rnd(t, {D, B, H}, rng)});
    }
    std::vector<Res> res{{"dx", t, {S, B, I}},
                         {"dw", t, {D, 4 * H, I}},
                         {"dr", t, {D, 4 * H, H}}};
    if (withDb)
      res.push_back({"db", t, {D, 8 * H}});
    if (withDinit) {
      res.push_back({"dinitial_h", t, {D, B, H}});
      res.push_back({"dinitial_c", t, {D, B, H}});
    }
    std::optional<Tol> tol;
    if (t == DType::F16 || t == DType::BF16)
      tol = Tol{3e-2, 2e-2};
    else if (t == DType::F32)
      tol = Tol{1e-3, 1e-4};
    compareCall(oneCall("kernel.lstm_bwd", attrs, std::move(args), res), tol);
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    bwd(t, "forward", true, true, true, true, true, true);
  bwd(DType::F32, "bidirectional", true, true, true, true, true, true);
  bwd(DType::F64, "reverse", false, false, true, false, false, true);
  bwd(DType::F32, "forward", true, false, false, true, true, false);
  bwd(DType::F32, "reverse", false, true, true, false, true, true);
}
