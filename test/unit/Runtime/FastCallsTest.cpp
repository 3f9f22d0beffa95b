//===- FastCallsTest.cpp - oneDNN calls against the reference kernels -----===//
//
// The fast CPU calls (FastCalls.h) must compute what the reference kernels
// compute: the same call, on the same buffers, once prepared on oneDNN and
// once through the reference CallFn. f32 results agree to summation order;
// bf16 and f16 results, both accumulated in f32 and rounded once, to a 16-bit
// ulp or two of the output's magnitude. What oneDNN runs differs by CPU (bf16
// needs bf16 dot products), so a call that is not prepared fast is skipped,
// except f32 and f16 (computed on f32 copies), which every oneDNN build runs.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/Tensor.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace mp::rt;
using mp::rt::test::ScopedSixteenBitProducts;

namespace {

/// A tensor of `dtype` filled with seeded normal values (rounded to dtype).
HostTensor randomTensor(DType dtype, Shape shape, unsigned seed) {
  HostTensor f32(DType::F32, shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < f32.numElements(); ++i)
    f32.as<float>()[i] = normal(rng);
  if (dtype == DType::F32)
    return f32;
  HostTensor t(dtype, std::move(shape));
  REQUIRE(cpu::cast(f32.view(), t.view()));
  return t;
}

std::vector<float> asFloats(const HostTensor &t) {
  HostTensor f32(DType::F32, t.shape());
  REQUIRE(cpu::cast(t.view(), f32.view()));
  return std::vector<float>(f32.as<float>(),
                            f32.as<float>() + f32.numElements());
}

struct Case {
  PlanCall call;
  std::vector<HostTensor> operands;
  DType yDtype;
  Shape yShape;
  std::vector<bool> constant; ///< per operand
  /// The results after the first (dtype, shape), for calls with several.
  std::vector<std::pair<DType, Shape>> moreResults;
};

/// fast and reference agree within the dtype's tolerance (see the file's
/// comment), relative to the largest reference value.
void checkClose(const HostTensor &fast, const HostTensor &reference) {
  std::vector<float> got = asFloats(fast), want = asFloats(reference);
  float scale = 0;
  for (float v : want)
    scale = std::max(scale, std::fabs(v));
  // f32: summation order; bf16 (8 significant bits): both round once from
  // f32 sums that differ in order, so one result may round the other way.
  // f16 (11 bits) likewise, to an f16 ulp or two.
  DType t = reference.dtype();
  float tol = (t == DType::F32   ? 1e-5f
               : t == DType::F16 ? 1.0f / 512
                                 : 1.0f / 64) *
              (scale + 1);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    bad += !(std::fabs(got[i] - want[i]) <= tol);
  CHECK(bad == 0);
}

/// Runs `c` fast (if prepared) and with the reference; false when the fast
/// kernels did not take it (with the reason in INFO). The reference runs on
/// copies of the operands (a call may update one in place).
bool compareWithReference(const Case &c) {
  std::vector<TensorView> operands, refOperands;
  std::vector<HostTensor> copies;
  for (const HostTensor &t : c.operands) {
    operands.push_back(t.view());
    copies.emplace_back(t.dtype(), t.shape());
    std::copy_n(static_cast<const char *>(t.data()), t.byteCount(),
                static_cast<char *>(copies.back().data()));
  }
  for (const HostTensor &t : copies)
    refOperands.push_back(t.view());
  std::vector<HostTensor> fastResults, refResults;
  fastResults.emplace_back(c.yDtype, c.yShape);
  refResults.emplace_back(c.yDtype, c.yShape);
  for (const auto &[dtype, shape] : c.moreResults) {
    fastResults.emplace_back(dtype, shape);
    refResults.emplace_back(dtype, shape);
  }
  std::vector<TensorView> fastViews, refViews;
  for (size_t i = 0; i < fastResults.size(); ++i) {
    fastViews.push_back(fastResults[i].view());
    refViews.push_back(refResults[i].view());
  }
  cpu::FastCallChoice fast =
      cpu::prepareFastCall(c.call, operands, fastViews, c.constant);
  if (!fast.call) {
    WARN(c.call.kind << " not prepared fast: " << fast.why);
    return false;
  }
  INFO("implementation " << fast.call->implementation());
  std::vector<unsigned char> scratch(fast.call->scratchBytes() + 64);
  Status ranFast = fast.call->run(scratch.data());
  INFO(ranFast.message());
  REQUIRE(ranFast);
  cpu::CallFn reference = cpu::cpuCallTable().find(c.call.kind);
  REQUIRE(reference);
  cpu::CallArgs args{c.call, refOperands, refViews, nullptr, 0};
  Status ranReference = reference(args);
  INFO(ranReference.message());
  REQUIRE(ranReference);
  for (size_t i = 0; i < fastResults.size(); ++i) {
    INFO("result " << i);
    checkClose(fastResults[i], refResults[i]);
  }
  return true;
}

PlanCall callOf(std::string kind, std::vector<PlanAttr> attrs) {
  PlanCall c;
  c.kind = std::move(kind);
  c.attributes = std::move(attrs);
  return c;
}

} // namespace

TEST_CASE("fast matmul calls compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  struct MatmulCase {
    const char *what;
    Shape a, b, d;
    bool transA, transB, bias;
    std::string epilogue;
    double alpha;
  };
  const MatmulCase cases[] = {
      {"2-D", {7, 5}, {5, 9}, {7, 9}, false, false, false, "none", 1.0},
      {"bias and relu",
       {7, 5},
       {5, 9},
       {7, 9},
       false,
       false,
       true,
       "relu",
       1.0},
      {"gelu", {4, 16}, {16, 8}, {4, 8}, false, false, true, "gelu", 1.0},
      {"gelu_tanh",
       {4, 16},
       {16, 8},
       {4, 8},
       false,
       false,
       true,
       "gelu_tanh",
       1.0},
      {"silu", {4, 16}, {16, 8}, {4, 8}, false, false, true, "silu", 1.0},
      {"sigmoid",
       {5, 16},
       {16, 8},
       {5, 8},
       false,
       false,
       false,
       "sigmoid",
       1.0},
      {"tanh", {4, 16}, {16, 8}, {4, 8}, false, false, true, "tanh", 1.0},
      {"hard_swish",
       {4, 16},
       {16, 8},
       {4, 8},
       false,
       false,
       true,
       "hard_swish",
       1.0},
      {"transposed B (a Gemm)",
       {3, 6},
       {10, 6},
       {3, 10},
       false,
       true,
       true,
       "none",
       1.0},
      {"transposed A, alpha",
       {6, 3},
       {6, 4},
       {3, 4},
       true,
       false,
       false,
       "none",
       0.5},
      {"batched, weights broadcast",
       {2, 3, 5},
       {5, 4},
       {2, 3, 4},
       false,
       false,
       false,
       "none",
       1.0},
      {"batch broadcast both ways",
       {2, 1, 3, 5},
       {3, 5, 4},
       {2, 3, 3, 4},
       false,
       false,
       false,
       "none",
       1.0},
      // One B for a batch of A: the batch folds into A's rows (a
      // sequence-first attention projection).
      {"rows folded, transposed B, bias",
       {7, 1, 16},
       {24, 16},
       {7, 1, 24},
       false,
       true,
       true,
       "relu",
       1.0},
      {"rows folded, 4-D",
       {2, 3, 5, 8},
       {8, 6},
       {2, 3, 5, 6},
       false,
       false,
       false,
       "none",
       2.0},
      // alpha scales the product, not the bias (oneDNN's weights scale).
      {"alpha with a bias",
       {4, 7},
       {7, 5},
       {4, 5},
       false,
       false,
       true,
       "none",
       0.5},
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (const MatmulCase &m : cases)
      for (bool constantB : {true, false}) {
        INFO(m.what << ", " << dtypeName(dtype)
                    << (constantB ? ", constant B" : ", B an activation"));
        Case c;
        c.call =
            callOf("cublaslt.matmul", {{"has_c", int64_t(0)},
                                       {"has_bias", int64_t(m.bias)},
                                       {"trans_a", int64_t(m.transA)},
                                       {"trans_b", int64_t(m.transB)},
                                       {"alpha", m.alpha},
                                       {"epilogue", m.epilogue},
                                       {"compute_type", int64_t(DType::F32)}});
        c.operands.push_back(randomTensor(dtype, m.a, 1));
        c.operands.push_back(randomTensor(dtype, m.b, 2));
        // An f16 plan's bias is f16 too (widened once, as a constant).
        if (m.bias)
          c.operands.push_back(randomTensor(
              dtype == DType::F16 ? DType::F16 : DType::F32, {m.d.back()}, 3));
        c.constant = {false, constantB, true};
        c.yDtype = dtype;
        c.yShape = m.d;
        bool ran = compareWithReference(c);
        if (dtype != DType::BF16)
          CHECK(ran);
      }
}

TEST_CASE("fast matmuls add a C operand (a residual) as the reference does",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // A transformer block's output projection: D = A B^T + C + bias, in
  // f32, bf16 and f16, with and without a ReLU epilogue.
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (const char *epilogue : {"none", "relu"}) {
      INFO(dtypeName(dtype) << ", " << epilogue);
      Case c;
      c.call =
          callOf("cublaslt.matmul", {{"has_c", int64_t(1)},
                                     {"has_bias", int64_t(1)},
                                     {"trans_b", int64_t(1)},
                                     {"beta", 1.0},
                                     {"epilogue", std::string(epilogue)},
                                     {"compute_type", int64_t(DType::F32)}});
      c.operands.push_back(randomTensor(dtype, {2, 7, 16}, 1));
      c.operands.push_back(randomTensor(dtype, {12, 16}, 2));
      c.operands.push_back(randomTensor(dtype, {2, 7, 12}, 3));
      c.operands.push_back(randomTensor(dtype, {12}, 4));
      c.constant = {false, true, false, true};
      c.yDtype = dtype;
      c.yShape = {2, 7, 12};
      bool ran = compareWithReference(c);
      if (dtype == DType::F32)
        CHECK(ran);
    }
}

TEST_CASE("fast matmuls sum B's rows into bias_grad as the reference does",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // A training step's weight gradient X^T dY with its bias gradient
  // sum(dY) (culib-fuse-bias-gradients), and the same with dY read
  // transposed, in f32 and bf16.
  for (DType dtype : {DType::F32, DType::BF16})
    for (int64_t transB : {0, 1}) {
      INFO(dtypeName(dtype) << ", trans_b " << transB);
      Case c;
      c.call =
          callOf("cublaslt.matmul", {{"has_c", int64_t(0)},
                                     {"has_bias", int64_t(0)},
                                     {"has_bias_grad", int64_t(1)},
                                     {"trans_a", int64_t(1)},
                                     {"trans_b", transB},
                                     {"compute_type", int64_t(DType::F32)}});
      c.operands.push_back(randomTensor(dtype, {40, 24}, 5));
      c.operands.push_back(
          randomTensor(dtype, transB ? Shape{12, 40} : Shape{40, 12}, 6));
      c.constant = {false, false};
      c.yDtype = dtype;
      c.yShape = {24, 12};
      c.moreResults = {{dtype, {1, 12}}};
      // bf16 products need a CPU with bf16 kernels (not AVX2 machines).
      bool ran = compareWithReference(c);
      if (dtype == DType::F32)
        CHECK(ran);
    }
  // dW = dY^T X (a Gemm with transB = 1): the sums of op(A) = dY^T over K.
  for (DType dtype : {DType::F32, DType::BF16}) {
    INFO(dtypeName(dtype) << ", bias_grad_of_a");
    Case c;
    c.call = callOf("cublaslt.matmul", {{"has_c", int64_t(0)},
                                        {"has_bias", int64_t(0)},
                                        {"has_bias_grad", int64_t(1)},
                                        {"bias_grad_of_a", int64_t(1)},
                                        {"trans_a", int64_t(1)},
                                        {"compute_type", int64_t(DType::F32)}});
    c.operands.push_back(randomTensor(dtype, {40, 12}, 7));
    c.operands.push_back(randomTensor(dtype, {40, 24}, 8));
    c.constant = {false, false};
    c.yDtype = dtype;
    c.yShape = {12, 24};
    c.moreResults = {{dtype, {12}}};
    bool ran = compareWithReference(c);
    if (dtype == DType::F32)
      CHECK(ran);
  }
}

TEST_CASE("fast matmuls apply activation gradients from aux as the reference "
          "does",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // A training step's dY W^T times the activation's derivative at its
  // forward input (aux), with and without a C summed in first.
  for (DType dtype : {DType::F32, DType::BF16})
    for (const char *epilogue : {"relu_grad", "gelu_grad", "gelu_tanh_grad"})
      for (int64_t hasC : {0, 1}) {
        INFO(dtypeName(dtype) << ", " << epilogue << ", C " << hasC);
        Case c;
        c.call =
            callOf("cublaslt.matmul", {{"has_c", hasC},
                                       {"has_bias", int64_t(0)},
                                       {"has_aux", int64_t(1)},
                                       {"trans_b", int64_t(1)},
                                       {"beta", hasC ? 1.0 : 0.0},
                                       {"epilogue", std::string(epilogue)},
                                       {"compute_type", int64_t(DType::F32)}});
        c.operands.push_back(randomTensor(dtype, {2, 16, 24}, 21));
        c.operands.push_back(randomTensor(dtype, {40, 24}, 22));
        if (hasC)
          c.operands.push_back(randomTensor(dtype, {2, 16, 40}, 23));
        c.operands.push_back(randomTensor(dtype, {2, 16, 40}, 24));
        c.constant = std::vector<bool>(c.operands.size(), false);
        c.constant[1] = true;
        c.yDtype = dtype;
        c.yShape = {2, 16, 40};
        bool ran = compareWithReference(c);
        if (dtype == DType::F32)
          CHECK(ran);
      }
}

TEST_CASE("fast matmul calls leave what oneDNN cannot do to the reference",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  HostTensor a = randomTensor(DType::F32, {3, 4}, 1),
             b = randomTensor(DType::F32, {4, 5}, 2),
             cT = randomTensor(DType::F32, {3, 5}, 3),
             bias = randomTensor(DType::F32, {5}, 4), y(DType::F32, {3, 5});
  auto prepare = [&](std::vector<PlanAttr> attrs,
                     std::vector<TensorView> operands) {
    attrs.push_back({"compute_type", int64_t(DType::F32)});
    return cpu::prepareFastCall(callOf("cublaslt.matmul", attrs), operands,
                                {y.view()}, {false, true, true});
  };
  cpu::FastCallChoice withC =
      prepare({{"has_c", int64_t(1)}, {"has_bias", int64_t(0)}, {"beta", 0.5}},
              {a.view(), b.view(), cT.view()});
  CHECK_FALSE(withC.call);
  CHECK(withC.why == "beta * C with beta other than 1 or C broadcast");
  // A call the reference rejects is left to it, so its message is the one.
  cpu::FastCallChoice bad = prepare(
      {{"has_c", int64_t(0)}, {"has_bias", int64_t(0)}}, {a.view(), a.view()});
  CHECK_FALSE(bad.call);
  CHECK_THAT(bad.why, Catch::Contains("reference kernel reports"));
}

TEST_CASE("fast 16-bit matmuls and convolutions accumulate in f32",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    SUCCEED("built without oneDNN");
    return;
  }
  // 4096 products of ones: an f16 running sum stops at 2048 (2048 + 1 rounds
  // back to 2048), a bf16 one at 256, an f32 one reaches 4096, which both
  // hold exactly. Native 16-bit kernels (f16: fastKernelsComputeF16) and f32
  // copies alike (MP_CPU_16BIT_PRODUCTS=f32: the name says so); into 16 bits
  // and into f32 (an output cast folded into the call).
  const int64_t k = 4096;
  for (DType in : {DType::F16, DType::BF16})
    for (const char *mode : {"native", "f32"})
      for (DType out : {in, DType::F32}) {
        INFO(dtypeName(in) << " into " << dtypeName(out) << ", products "
                           << mode << ", f16 kernels "
                           << cpu::fastKernelsComputeF16());
        ScopedSixteenBitProducts products(mode);
        auto ones = [&](Shape shape) {
          HostTensor t(in, std::move(shape));
          for (int64_t i = 0; i < t.numElements(); ++i) {
            if (in == DType::F16)
              t.as<Half>()[i] = toHalf(1.0f);
            else
              t.as<BFloat16>()[i] = toBFloat16(1.0f);
          }
          return t;
        };
        // Prepares `call` with a constant second operand, runs it into `r`
        // and checks every result is 4096.
        auto sumsOnes = [&](const PlanCall &call, const HostTensor &first,
                            const HostTensor &second, HostTensor &r) {
          cpu::FastCallChoice choice = cpu::prepareFastCall(
              call, {first.view(), second.view()}, {r.view()}, {false, true});
          REQUIRE(choice.call);
          const std::string impl = choice.call->implementation();
          INFO(call.kind << ": " << impl);
          if (std::string(mode) == "f32")
            CHECK(impl.find(", on f32 copies") != std::string::npos);
          std::vector<unsigned char> scratch(choice.call->scratchBytes() + 64);
          REQUIRE(choice.call->run(scratch.data()).isOk());
          for (float v : asFloats(r))
            CHECK(v == 4096.0f);
        };
        HostTensor d(out, {2, 3});
        sumsOnes(
            callOf("cublaslt.matmul", {{"has_c", int64_t(0)},
                                       {"has_bias", int64_t(0)},
                                       {"compute_type", int64_t(DType::F32)}}),
            ones({2, k}), ones({k, 3}), d);
        HostTensor y(out, {1, 2, 2, 3});
        sumsOnes(callOf("cudnn.conv_fwd",
                        {{"has_bias", int64_t(0)},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{1, 1}},
                         {"dilations", std::vector<int64_t>{1, 1}},
                         {"groups", int64_t(1)},
                         {"layout", std::string("nhwc")},
                         {"compute_type", int64_t(DType::F32)}}),
                 ones({1, 2, 2, k}), ones({3, 1, 1, k}), y);
      }
}

TEST_CASE("large 16-bit convolutions on f32 copies run in blocks of rows",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    SUCCEED("built without oneDNN");
    return;
  }
  // Channels last, x and y over 256 KiB in f32: where f16 goes through f32
  // copies (CPUs without f16 kernels; dense filters on those without f16
  // dot products) the call runs per block of output rows (its name says
  // so), each thread its own blocks, every block's padding and halo rows as
  // the whole convolution's.
  struct Conv {
    const char *what;
    int64_t n, h, w, c, m, k, stride, dilation;
    std::vector<int64_t> pads;
    bool residual;
    DType yDtype; ///< F16: the 16-bit dtype under test; F32
    const char *activation;
  };
  const Conv convs[] = {{"3x3, pads 1, relu",
                         2,
                         64,
                         64,
                         32,
                         64,
                         3,
                         1,
                         1,
                         {1, 1, 1, 1},
                         false,
                         DType::F16,
                         "relu"},
                        {"3x3 stride 2, pads 0 / 1",
                         2,
                         128,
                         96,
                         24,
                         48,
                         3,
                         2,
                         1,
                         {0, 0, 1, 1},
                         false,
                         DType::F16,
                         "none"},
                        {"5x5 dilated 2, pads 4",
                         2,
                         64,
                         64,
                         32,
                         64,
                         5,
                         1,
                         2,
                         {4, 4, 4, 4},
                         false,
                         DType::F16,
                         "silu"},
                        {"1x1 with a residual",
                         2,
                         96,
                         96,
                         16,
                         32,
                         1,
                         1,
                         1,
                         {0, 0, 0, 0},
                         true,
                         DType::F16,
                         "relu"},
                        {"3x3 into f32 (an output cast folded in)",
                         2,
                         64,
                         64,
                         32,
                         64,
                         3,
                         1,
                         1,
                         {1, 1, 1, 1},
                         false,
                         DType::F32,
                         "none"}};
  // bf16 too, where its products go through f32 copies (Intel's
  // AVX512-BF16 CPUs without AMX; here forced, on any CPU).
  for (DType narrow : {DType::F16, DType::BF16})
    for (const Conv &v : convs) {
      INFO(v.what << ", " << dtypeName(narrow));
      ScopedSixteenBitProducts products(narrow == DType::BF16 ? "f32"
                                                              : nullptr);
      const DType yDtype = v.yDtype == DType::F32 ? DType::F32 : narrow;
      const int64_t extent = (v.k - 1) * v.dilation + 1;
      const int64_t oh = (v.h + v.pads[0] + v.pads[2] - extent) / v.stride + 1;
      const int64_t ow = (v.w + v.pads[1] + v.pads[3] - extent) / v.stride + 1;
      PlanCall call =
          callOf("cudnn.conv_fwd",
                 {{"has_bias", int64_t(1)},
                  {"has_residual", int64_t(v.residual)},
                  {"pads", v.pads},
                  {"strides", std::vector<int64_t>{v.stride, v.stride}},
                  {"dilations", std::vector<int64_t>{v.dilation, v.dilation}},
                  {"groups", int64_t(1)},
                  {"layout", std::string("nhwc")},
                  {"activation", std::string(v.activation)},
                  {"compute_type", int64_t(DType::F32)}});
      std::vector<HostTensor> inputs;
      inputs.push_back(randomTensor(narrow, {v.n, v.h, v.w, v.c}, 11));
      inputs.push_back(randomTensor(narrow, {v.m, v.k, v.k, v.c}, 12));
      inputs.push_back(randomTensor(narrow, {v.m}, 13));
      if (v.residual)
        inputs.push_back(randomTensor(yDtype, {v.n, oh, ow, v.m}, 14));
      std::vector<TensorView> views;
      for (HostTensor &t : inputs)
        views.push_back(t.view());
      HostTensor fast(yDtype, {v.n, oh, ow, v.m}),
          reference(yDtype, {v.n, oh, ow, v.m});
      std::vector<bool> constant = {false, true, true, false};
      cpu::FastCallChoice choice =
          cpu::prepareFastCall(call, views, {fast.view()}, constant);
      REQUIRE(choice.call);
      const std::string impl = choice.call->implementation();
      INFO("implementation " << impl);
      if (narrow == DType::BF16)
        CHECK(impl.find(", bf16 in blocks of") != std::string::npos);
      else if (impl.find("fp16") == std::string::npos)
        CHECK(impl.find(", f16 in blocks of") != std::string::npos);
      std::vector<unsigned char> scratch(choice.call->scratchBytes() + 64);
      REQUIRE(choice.call->run(scratch.data()));
      cpu::CallArgs args{call, views, {reference.view()}, nullptr, 0};
      REQUIRE(cpu::cpuCallTable().find(call.kind)(args));
      checkClose(fast, reference);
    }
}

TEST_CASE("fast convolutions compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  struct ConvCase {
    const char *what;
    int64_t n, c, h, w, m, k, groups, stride, dilation;
    std::vector<int64_t> pads; // begin h, w, end h, w
    bool bias;
    std::string activation;
  };
  const ConvCase cases[] = {
      {"3x3", 2, 8, 9, 9, 16, 3, 1, 1, 1, {1, 1, 1, 1}, true, "relu"},
      {"1x1 stride 2", 1, 16, 8, 8, 8, 1, 1, 2, 1, {0, 0, 0, 0}, false, "none"},
      {"grouped", 1, 8, 7, 7, 12, 3, 4, 1, 1, {1, 1, 1, 1}, true, "none"},
      {"1x1, ReLU6 (clip)",
       2,
       8,
       6,
       6,
       16,
       1,
       1,
       1,
       1,
       {0, 0, 0, 0},
       true,
       "clip"},
      {"depthwise, stride 2",
       2,
       8,
       10,
       10,
       8,
       3,
       8,
       2,
       1,
       {1, 1, 0, 0},
       true,
       "relu"},
      {"dilated, asymmetric pads",
       1,
       4,
       11,
       11,
       6,
       3,
       1,
       1,
       2,
       {2, 1, 0, 2},
       false,
       "none"},
      // The activations culib-fuse-epilogues folds (oneDNN eltwise
      // post-ops): EfficientNet's SiLU after a 1x1 and a depthwise
      // convolution, and the others.
      {"1x1, SiLU", 2, 8, 6, 6, 16, 1, 1, 1, 1, {0, 0, 0, 0}, true, "silu"},
      {"1x1, GELU", 2, 8, 6, 6, 16, 1, 1, 1, 1, {0, 0, 0, 0}, true, "gelu"},
      {"1x1, GELU (tanh)",
       2,
       8,
       6,
       6,
       16,
       1,
       1,
       1,
       1,
       {0, 0, 0, 0},
       true,
       "gelu_tanh"},
      {"depthwise, SiLU",
       1,
       8,
       7,
       7,
       8,
       3,
       8,
       1,
       1,
       {1, 1, 1, 1},
       true,
       "silu"},
      {"3x3, sigmoid",
       1,
       4,
       6,
       6,
       8,
       3,
       1,
       1,
       1,
       {1, 1, 1, 1},
       false,
       "sigmoid"},
      {"3x3, tanh", 1, 4, 6, 6, 8, 3, 1, 1, 1, {1, 1, 1, 1}, true, "tanh"},
      {"1x1, hard swish",
       1,
       8,
       5,
       5,
       8,
       1,
       1,
       1,
       1,
       {0, 0, 0, 0},
       true,
       "hard_swish"},
      {"7x7 stride 2 (a stem)",
       1,
       3,
       20,
       20,
       8,
       7,
       1,
       2,
       1,
       {3, 3, 3, 3},
       true,
       "relu"},
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool nhwc : {false, true})
      for (const ConvCase &v : cases)
        for (bool constantW : {true, false}) {
          INFO(v.what << ", " << dtypeName(dtype)
                      << (nhwc ? ", nhwc" : ", nchw")
                      << (constantW ? ", constant filter"
                                    : ", filter reordered per run"));
          int64_t span = v.dilation * (v.k - 1) + 1;
          int64_t oh = (v.h + v.pads[0] + v.pads[2] - span) / v.stride + 1;
          int64_t ow = (v.w + v.pads[1] + v.pads[3] - span) / v.stride + 1;
          int64_t cg = v.c / v.groups;
          Case c;
          c.call = callOf(
              "cudnn.conv_fwd",
              {{"has_bias", int64_t(v.bias)},
               {"pads", v.pads},
               {"strides", std::vector<int64_t>{v.stride, v.stride}},
               {"dilations", std::vector<int64_t>{v.dilation, v.dilation}},
               {"groups", v.groups},
               {"layout", std::string(nhwc ? "nhwc" : "nchw")},
               {"activation", v.activation},
               {"clip_min", 0.0},
               {"clip_max", 0.5},
               {"compute_type", int64_t(DType::F32)}});
          Shape x =
              nhwc ? Shape{v.n, v.h, v.w, v.c} : Shape{v.n, v.c, v.h, v.w};
          Shape w = nhwc ? Shape{v.m, v.k, v.k, cg} : Shape{v.m, cg, v.k, v.k};
          c.operands.push_back(randomTensor(dtype, x, 5));
          c.operands.push_back(randomTensor(dtype, w, 6));
          if (v.bias)
            c.operands.push_back(randomTensor(
                dtype == DType::F16 ? DType::F16 : DType::F32, {v.m}, 7));
          c.constant = {false, constantW, true};
          c.yDtype = dtype;
          c.yShape = nhwc ? Shape{v.n, oh, ow, v.m} : Shape{v.n, v.m, oh, ow};
          bool ran = compareWithReference(c);
          if (dtype != DType::BF16)
            CHECK(ran);
        }
}

TEST_CASE("fast convolutions add a residual before the activation, as the "
          "reference does",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // A ResNet block's last 1x1 convolution: y = relu(conv + bias + shortcut),
  // channels last (what culib-nhwc-layout makes) and channels first.
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool nhwc : {true, false})
      for (const char *activation : {"relu", "none"}) {
        INFO(dtypeName(dtype)
             << (nhwc ? ", nhwc, " : ", nchw, ") << activation);
        Case c;
        c.call = callOf("cudnn.conv_fwd",
                        {{"has_bias", int64_t(1)},
                         {"has_residual", int64_t(1)},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{1, 1}},
                         {"dilations", std::vector<int64_t>{1, 1}},
                         {"groups", int64_t(1)},
                         {"layout", std::string(nhwc ? "nhwc" : "nchw")},
                         {"activation", std::string(activation)},
                         {"compute_type", int64_t(DType::F32)}});
        Shape x = nhwc ? Shape{2, 5, 5, 8} : Shape{2, 8, 5, 5};
        Shape w = nhwc ? Shape{16, 1, 1, 8} : Shape{16, 8, 1, 1};
        Shape y = nhwc ? Shape{2, 5, 5, 16} : Shape{2, 16, 5, 5};
        c.operands.push_back(randomTensor(dtype, x, 5));
        c.operands.push_back(randomTensor(dtype, w, 6));
        c.operands.push_back(randomTensor(
            dtype == DType::F16 ? DType::F16 : DType::F32, {16}, 7));
        c.operands.push_back(randomTensor(dtype, y, 8));
        c.constant = {false, true, true, false};
        c.yDtype = dtype;
        c.yShape = y;
        bool ran = compareWithReference(c);
        if (dtype != DType::BF16)
          CHECK(ran);
      }
}

TEST_CASE("fast pooling computes what the reference computes", "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  struct PoolCase {
    const char *what;
    std::string mode;
    int64_t k, stride, dilation;
    std::vector<int64_t> pads; // begin h, w, end h, w
  };
  const PoolCase cases[] = {
      {"max 3x3/2 (a ResNet stem)", "max", 3, 2, 1, {1, 1, 1, 1}},
      {"max 2x2/2", "max", 2, 2, 1, {0, 0, 0, 0}},
      {"max dilated", "max", 2, 1, 2, {0, 0, 0, 0}},
      {"average, padding excluded", "avg", 3, 1, 1, {1, 1, 1, 1}},
      {"average, padding included", "avg_include_pad", 3, 2, 1, {1, 0, 1, 1}},
  };
  const int64_t n = 2, c = 8, h = 9, w = 9;
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool nhwc : {false, true})
      for (const PoolCase &p : cases) {
        INFO(p.what << ", " << dtypeName(dtype)
                    << (nhwc ? ", nhwc" : ", nchw"));
        int64_t span = p.dilation * (p.k - 1) + 1;
        int64_t oh = (h + p.pads[0] + p.pads[2] - span) / p.stride + 1;
        int64_t ow = (w + p.pads[1] + p.pads[3] - span) / p.stride + 1;
        Case cs;
        std::vector<PlanAttr> attrs = {
            {"has_indices", int64_t(0)},
            {"mode", p.mode},
            {"window", std::vector<int64_t>{p.k, p.k}},
            {"pads", p.pads},
            {"strides", std::vector<int64_t>{p.stride, p.stride}},
            {"layout", std::string(nhwc ? "nhwc" : "nchw")}};
        if (p.dilation != 1)
          attrs.push_back(
              {"dilations", std::vector<int64_t>{p.dilation, p.dilation}});
        cs.call = callOf("cudnn.pool", attrs);
        cs.operands.push_back(randomTensor(
            dtype, nhwc ? Shape{n, h, w, c} : Shape{n, c, h, w}, 8));
        cs.constant = {false};
        cs.yDtype = dtype;
        cs.yShape = nhwc ? Shape{n, oh, ow, c} : Shape{n, c, oh, ow};
        bool ran = compareWithReference(cs);
        // oneDNN has only a reference kernel for dilated pooling, which
        // the project's own kernel beats.
        if (dtype != DType::BF16 && p.dilation == 1)
          CHECK(ran);
      }
}

TEST_CASE("fast elementwise calls compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  const Shape shape{2, 3, 5, 7};
  for (DType dtype : {DType::F32, DType::BF16}) {
    auto unary = [&](std::string fn, std::vector<PlanAttr> attrs = {}) {
      INFO(fn << ", " << dtypeName(dtype));
      attrs.push_back({"fn", fn});
      Case c;
      c.call = callOf("kernel.elementwise", attrs);
      c.operands.push_back(randomTensor(dtype, shape, 9));
      c.constant = {false};
      c.yDtype = dtype;
      c.yShape = shape;
      bool ran = compareWithReference(c);
      if (dtype == DType::F32) // bf16 needs avx512_core (oneDNN)
        CHECK(ran);
    };
    for (const char *fn : {"relu", "exp", "tanh", "sigmoid", "gelu",
                           "gelu_tanh", "hard_swish", "abs", "neg"})
      unary(fn);
    unary("leaky_relu", {{"alpha", 0.1}});
    unary("elu", {{"alpha", 0.5}});
    unary("clip", {{"alpha", -0.5}, {"beta", 0.75}});

    // clip(x, lo, hi) with constant scalar bounds (ReLU6).
    {
      INFO("clip with constant bounds, " << dtypeName(dtype));
      Case c;
      c.call = callOf("kernel.elementwise", {{"fn", std::string("clip")}});
      c.operands.push_back(randomTensor(dtype, shape, 10));
      HostTensor lo(dtype, {}), hi(dtype, {});
      HostTensor loF(DType::F32, {}), hiF(DType::F32, {});
      *loF.as<float>() = -0.25f;
      *hiF.as<float>() = 0.5f;
      REQUIRE(cpu::cast(loF.view(), lo.view()));
      REQUIRE(cpu::cast(hiF.view(), hi.view()));
      c.operands.push_back(std::move(lo));
      c.operands.push_back(std::move(hi));
      c.constant = {false, true, true};
      c.yDtype = dtype;
      c.yShape = shape;
      bool ran = compareWithReference(c);
      if (dtype == DType::F32)
        CHECK(ran);
    }

    // pow(x, 2) with a constant exponent, of the base's dtype or an
    // integer one: oneDNN's square.
    for (DType exponentType : {dtype, DType::I64}) {
      INFO("pow(x, 2), exponent " << dtypeName(exponentType) << ", "
                                  << dtypeName(dtype));
      Case c;
      c.call = callOf("kernel.elementwise", {{"fn", std::string("pow")}});
      c.operands.push_back(randomTensor(dtype, shape, 14));
      HostTensor two(exponentType, {}), twoF(DType::F32, {});
      *twoF.as<float>() = 2.0f;
      REQUIRE(cpu::cast(twoF.view(), two.view()));
      c.operands.push_back(std::move(two));
      c.constant = {false, true};
      c.yDtype = dtype;
      c.yShape = shape;
      bool ran = compareWithReference(c);
      if (dtype == DType::F32)
        CHECK(ran);
    }

    // GELU's gradients (dy, x): oneDNN's eltwise backward.
    for (const char *fn : {"gelu_grad", "gelu_tanh_grad"}) {
      INFO(fn << ", " << dtypeName(dtype));
      Case c;
      c.call = callOf("kernel.elementwise", {{"fn", std::string(fn)}});
      c.operands.push_back(randomTensor(dtype, shape, 15));
      c.operands.push_back(randomTensor(dtype, shape, 16));
      c.constant = {false, false};
      c.yDtype = dtype;
      c.yShape = shape;
      bool ran = compareWithReference(c);
      if (dtype == DType::F32)
        CHECK(ran);
    }

    // Binary, with the second operand broadcast, or the first (commutative
    // add and mul swap them).
    // oneDNN has jit kernels for a second operand that is whole, one
    // value, per channel (dim 1) or per (N, C); others (e.g. [3, 1, 7]) get
    // its reference code, which the project's kernel beats, so they stay
    // there.
    struct BinaryCase {
      std::string fn;
      Shape a, b;
      bool jit;
    };
    for (const BinaryCase &bc :
         std::vector<BinaryCase>{{"add", shape, shape, true},
                                 {"sub", shape, {3, 1, 7}, false},
                                 {"mul", {5, 7}, shape, false},
                                 {"mul", {1}, shape, true},
                                 {"div", shape, {1}, true},
                                 {"sub", shape, {3, 1, 1}, true},
                                 {"add", shape, {2, 3, 1, 1}, true}}) {
      INFO(bc.fn << ", " << dtypeName(dtype));
      Case c;
      c.call = callOf("kernel.elementwise", {{"fn", bc.fn}});
      c.operands.push_back(randomTensor(dtype, bc.a, 11));
      c.operands.push_back(randomTensor(dtype, bc.b, 12));
      c.constant = {false, false};
      c.yDtype = dtype;
      c.yShape = shape;
      bool ran = compareWithReference(c);
      if (bc.jit && dtype == DType::F32)
        CHECK(ran);
    }
  }
}

TEST_CASE("fast f16 exp, tanh, sigmoid, gelu and elu compute what the "
          "reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // Through f32 copies (every oneDNN build): rounded once into f16.
  for (const char *fn :
       {"exp", "tanh", "sigmoid", "gelu", "gelu_tanh", "elu"}) {
    INFO(fn);
    Case c;
    c.call = callOf("kernel.elementwise", {{"fn", std::string(fn)}});
    c.operands.push_back(randomTensor(DType::F16, {2, 3, 5, 7}, 13));
    c.constant = {false};
    c.yDtype = DType::F16;
    c.yShape = {2, 3, 5, 7};
    CHECK(compareWithReference(c));
  }
}

TEST_CASE("fast elementwise calls leave the rest to the reference",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  HostTensor x = randomTensor(DType::F32, {4, 5}, 1),
             row = randomTensor(DType::F32, {5}, 2), y(DType::F32, {4, 5});
  auto why = [&](std::vector<PlanAttr> attrs, std::vector<TensorView> ops,
                 std::vector<bool> constant) {
    cpu::FastCallChoice c = cpu::prepareFastCall(
        callOf("kernel.elementwise", attrs), ops, {y.view()}, constant);
    CHECK_FALSE(c.call);
    return c.why;
  };
  CHECK_THAT(why({{"fn", std::string("sin")}}, {x.view()}, {false}),
             Catch::Contains("no oneDNN eltwise for sin"));
  // A broadcast first operand of a function that does not commute.
  CHECK_THAT(
      why({{"fn", std::string("sub")}}, {row.view(), x.view()}, {false, false}),
      Catch::Contains("broadcast first operand"));
  // Clip bounds that change between runs.
  HostTensor lo(DType::F32, {}), hi(DType::F32, {});
  *lo.as<float>() = 0;
  *hi.as<float>() = 6;
  CHECK_THAT(why({{"fn", std::string("clip")}},
                 {x.view(), lo.view(), hi.view()}, {false, false, false}),
             Catch::Contains("not constant scalars"));
  *lo.as<float>() = 7;
  CHECK_THAT(why({{"fn", std::string("clip")}},
                 {x.view(), lo.view(), hi.view()}, {false, true, true}),
             Catch::Contains("min > max"));
  // pow with another exponent, or one that may change.
  HostTensor exponent(DType::F32, {});
  *exponent.as<float>() = 3;
  CHECK_THAT(why({{"fn", std::string("pow")}}, {x.view(), exponent.view()},
                 {false, true}),
             Catch::Contains("other than a constant 2"));
  *exponent.as<float>() = 2;
  CHECK_THAT(why({{"fn", std::string("pow")}}, {x.view(), exponent.view()},
                 {false, false}),
             Catch::Contains("other than a constant 2"));
  // f16 relu: one pass either way; through f32 copies it would be three.
  HostTensor h(DType::F16, {4, 5}), hy(DType::F16, {4, 5});
  cpu::FastCallChoice f16 = cpu::prepareFastCall(
      callOf("kernel.elementwise", {{"fn", std::string("relu")}}), {h.view()},
      {hy.view()}, {false});
  if (cpu::fastKernelsComputeF16()) {
    CHECK(f16.call);
  } else {
    CHECK_FALSE(f16.call);
    CHECK_THAT(f16.why, Catch::Contains("F16C"));
  }
}

TEST_CASE("fast softmax computes what the reference computes", "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (int64_t log : {0, 1})
      for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
               {{4, 1000}, -1}, {{3, 7, 5}, 1}, {{2, 12, 16, 16}, 3}}) {
        INFO(dtypeName(dtype) << ", log " << log << ", axis " << axis);
        Case c;
        c.call = callOf("cudnn.softmax", {{"axis", axis}, {"log", log}});
        c.operands.push_back(randomTensor(dtype, shape, 13));
        c.constant = {false};
        c.yDtype = dtype;
        c.yShape = shape;
        bool ran = compareWithReference(c);
        // oneDNN has jit kernels for the innermost axis only (others are
        // left to the reference); bf16 needs avx512_core.
        bool innermost = axis == -1 || axis + 1 == int64_t(shape.size());
        if (dtype != DType::BF16 && innermost)
          CHECK(ran);
      }
}

TEST_CASE("fast scaled softmax computes what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  // Masks: one per row, per column (broadcast over rows), a whole one, f32
  // for 16-bit x, and none.
  struct MaskCase {
    Shape shape;
    bool f32;
  };
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (const MaskCase &m : std::vector<MaskCase>{{{2, 1, 1}, false},
                                                   {{1, 1000}, false},
                                                   {{2, 3, 1000}, true},
                                                   {{}, false}}) {
      INFO(dtypeName(dtype)
           << ", mask rank " << m.shape.size() << (m.f32 ? " f32" : ""));
      const bool hasMask = !m.shape.empty();
      Case c;
      c.call = callOf("kernel.scaled_softmax",
                      {{"has_mask", int64_t(hasMask)}, {"scale", 0.125}});
      c.operands.push_back(randomTensor(dtype, {2, 3, 1000}, 13));
      c.constant = {false};
      if (hasMask) {
        c.operands.push_back(
            randomTensor(m.f32 ? DType::F32 : dtype, m.shape, 14));
        c.constant.push_back(true);
      }
      c.yDtype = dtype;
      c.yShape = {2, 3, 1000};
      CHECK(compareWithReference(c));
    }
}

TEST_CASE("fast convolution gradients compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  struct GradCase {
    const char *what;
    int64_t n, c, h, w, m, k, groups, stride, dilation;
    std::vector<int64_t> pads; // begin h, w, end h, w
  };
  const GradCase cases[] = {
      {"3x3", 2, 8, 9, 9, 16, 3, 1, 1, 1, {1, 1, 1, 1}},
      {"1x1 stride 2", 1, 16, 8, 8, 8, 1, 1, 2, 1, {0, 0, 0, 0}},
      {"grouped", 1, 8, 7, 7, 12, 3, 4, 1, 1, {1, 1, 1, 1}},
      {"depthwise stride 2", 2, 8, 10, 10, 8, 3, 8, 2, 1, {1, 1, 1, 1}},
      {"dilated", 1, 4, 11, 11, 6, 3, 1, 1, 2, {2, 2, 2, 2}},
  };
  // 16-bit gradients on the CPU's 16-bit kernels and on f32 copies (the
  // path of CPUs whose 16-bit products are slow, or that have none): every
  // one is prepared fast, one way or the other.
  for (const char *products : {"native", "f32"})
    for (DType dtype : {DType::F32, DType::BF16, DType::F16})
      for (bool nhwc : {false, true})
        for (const GradCase &v : cases) {
          INFO(v.what << ", " << dtypeName(dtype)
                      << (nhwc ? ", nhwc" : ", nchw") << ", products "
                      << products);
          ScopedSixteenBitProducts sixteenBit(products);
          int64_t span = v.dilation * (v.k - 1) + 1;
          int64_t oh = (v.h + v.pads[0] + v.pads[2] - span) / v.stride + 1;
          int64_t ow = (v.w + v.pads[1] + v.pads[3] - span) / v.stride + 1;
          int64_t cg = v.c / v.groups;
          Shape x =
              nhwc ? Shape{v.n, v.h, v.w, v.c} : Shape{v.n, v.c, v.h, v.w};
          Shape w = nhwc ? Shape{v.m, v.k, v.k, cg} : Shape{v.m, cg, v.k, v.k};
          Shape y = nhwc ? Shape{v.n, oh, ow, v.m} : Shape{v.n, v.m, oh, ow};
          std::vector<PlanAttr> window = {
              {"pads", v.pads},
              {"strides", std::vector<int64_t>{v.stride, v.stride}},
              {"dilations", std::vector<int64_t>{v.dilation, v.dilation}},
              {"groups", v.groups},
              {"layout", std::string(nhwc ? "nhwc" : "nchw")},
              {"compute_type", int64_t(DType::F32)}};
          {
            INFO("conv_bwd_data");
            Case c;
            std::vector<PlanAttr> attrs = window;
            attrs.push_back({"has_bias", int64_t(0)});
            c.call = callOf("cudnn.conv_bwd_data", attrs);
            c.operands.push_back(randomTensor(dtype, y, 14));
            c.operands.push_back(randomTensor(dtype, w, 15));
            c.constant = {false, true};
            c.yDtype = dtype;
            c.yShape = x;
            CHECK(compareWithReference(c));
          }
          {
            INFO("conv_bwd_filter");
            Case c;
            c.call = callOf("cudnn.conv_bwd_filter", window);
            c.operands.push_back(randomTensor(dtype, x, 16));
            c.operands.push_back(randomTensor(dtype, y, 17));
            c.constant = {false, false};
            c.yDtype = dtype;
            c.yShape = w;
            CHECK(compareWithReference(c));
          }
        }
}

TEST_CASE("fast batch norm inference computes what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool nhwc : {false, true}) {
      INFO(dtypeName(dtype) << (nhwc ? ", nhwc" : ", nchw"));
      const int64_t c = 12;
      Shape shape = nhwc ? Shape{2, 5, 7, c} : Shape{2, c, 5, 7};
      Case cs;
      cs.call = callOf(
          "cudnn.batch_norm_inference",
          {{"epsilon", 1e-3}, {"layout", std::string(nhwc ? "nhwc" : "nchw")}});
      cs.operands.push_back(randomTensor(dtype, shape, 18));
      for (unsigned seed : {19u, 20u, 21u})
        cs.operands.push_back(randomTensor(DType::F32, {c}, seed));
      // A positive variance.
      HostTensor var = randomTensor(DType::F32, {c}, 22);
      for (int64_t i = 0; i < c; ++i)
        var.as<float>()[i] = 0.5f + std::fabs(var.as<float>()[i]);
      cs.operands.push_back(std::move(var));
      cs.constant = {false, true, true, true, true};
      cs.yDtype = dtype;
      cs.yShape = shape;
      bool ran = compareWithReference(cs);
      if (dtype != DType::BF16) // bf16 needs avx512_core (oneDNN)
        CHECK(ran);
    }
  // 16-bit per-channel tensors stay on the reference kernel.
  HostTensor x = randomTensor(DType::F32, {2, 3, 4, 4}, 1),
             y(DType::F32, {2, 3, 4, 4});
  HostTensor half = randomTensor(DType::F16, {3}, 2),
             f = randomTensor(DType::F32, {3}, 3);
  cpu::FastCallChoice c = cpu::prepareFastCall(
      callOf("cudnn.batch_norm_inference", {{"epsilon", 1e-5}}),
      {x.view(), half.view(), f.view(), f.view(), f.view()}, {y.view()},
      {false, true, true, true, true});
  CHECK_FALSE(c.call);
  CHECK_THAT(c.why, Catch::Contains("per-channel tensors of dtype f16"));
}

TEST_CASE("fast batch norm training and backward compute what the reference "
          "computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool nhwc : {false, true})
      for (int64_t c : {int64_t(12), int64_t(64)}) {
        INFO(dtypeName(dtype) << (nhwc ? ", nhwc" : ", nchw") << ", C=" << c);
        Shape shape = nhwc ? Shape{3, 5, 7, c} : Shape{3, c, 5, 7};
        std::string layout = nhwc ? "nhwc" : "nchw";
        {
          INFO("batch_norm_training");
          Case cs;
          cs.call = callOf(
              "cudnn.batch_norm_training",
              {{"epsilon", 1e-3}, {"momentum", 0.9}, {"layout", layout}});
          // x off centre: the statistics must not rely on a zero mean.
          HostTensor x = randomTensor(DType::F32, shape, 30);
          for (int64_t i = 0; i < x.numElements(); ++i)
            x.as<float>()[i] = 3.f + 2.f * x.as<float>()[i];
          HostTensor xd(dtype, shape);
          REQUIRE(cpu::cast(x.view(), xd.view()));
          cs.operands.push_back(std::move(xd));
          for (unsigned seed : {31u, 32u, 33u})
            cs.operands.push_back(randomTensor(DType::F32, {c}, seed));
          HostTensor var = randomTensor(DType::F32, {c}, 34);
          for (int64_t i = 0; i < c; ++i)
            var.as<float>()[i] = 0.5f + std::fabs(var.as<float>()[i]);
          cs.operands.push_back(std::move(var));
          cs.constant = {false, false, false, false, false};
          cs.yDtype = dtype;
          cs.yShape = shape;
          cs.moreResults = {{DType::F32, {c}}, {DType::F32, {c}}};
          bool ran = compareWithReference(cs);
          if (dtype != DType::BF16) // bf16 needs avx512_core (oneDNN)
            CHECK(ran);
        }
        {
          INFO("batch_norm_bwd");
          Case cs;
          cs.call = callOf("cudnn.batch_norm_bwd",
                           {{"epsilon", 1e-3}, {"layout", layout}});
          cs.operands.push_back(randomTensor(dtype, shape, 35));
          cs.operands.push_back(randomTensor(DType::F32, {c}, 36));
          cs.operands.push_back(randomTensor(dtype, shape, 37));
          cs.constant = {false, false, false};
          cs.yDtype = dtype;
          cs.yShape = shape;
          cs.moreResults = {{DType::F32, {c}}, {DType::F32, {c}}};
          bool ran = compareWithReference(cs);
          if (dtype != DType::BF16)
            CHECK(ran);
        }
      }
  // 16-bit per-channel tensors stay on the reference kernel.
  HostTensor x = randomTensor(DType::F32, {2, 3, 4, 4}, 1),
             dx(DType::F32, {2, 3, 4, 4});
  HostTensor half = randomTensor(DType::F16, {3}, 2), dscale(DType::F32, {3}),
             dbias(DType::F32, {3});
  cpu::FastCallChoice c = cpu::prepareFastCall(
      callOf("cudnn.batch_norm_bwd", {{"epsilon", 1e-5}}),
      {x.view(), half.view(), x.view()},
      {dx.view(), dscale.view(), dbias.view()}, {false, false, false});
  CHECK_FALSE(c.call);
  CHECK_THAT(c.why, Catch::Contains("per-channel tensors of dtype f16"));
}

TEST_CASE("fast LSTMs compute what the reference computes", "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  const int64_t T = 7, B = 3, I = 5, H = 6;
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (bool reverse : {false, true})
      for (int variant = 0; variant < 3; ++variant) {
        // 0: only x, the weights and y; 1: a bias and the initial h and c
        // too (an exported LSTM layer); 2: and the final h and c.
        const bool full = variant > 0, stateOut = variant == 2;
        INFO(dtypeName(dtype) << (reverse ? ", reverse" : ", forward")
                              << (full ? ", with b, h0, c0" : "")
                              << (stateOut ? ", y_h, y_c" : ""));
        Case c;
        c.call =
            callOf("cudnn.rnn",
                   {{"mode", std::string("lstm")},
                    {"direction", std::string(reverse ? "reverse" : "forward")},
                    {"hidden_size", H},
                    {"has_b", int64_t(full)},
                    {"has_sequence_lens", int64_t(0)},
                    {"has_initial_h", int64_t(full)},
                    {"has_initial_c", int64_t(full)},
                    {"has_p", int64_t(0)},
                    {"has_y", int64_t(1)},
                    {"has_y_h", int64_t(stateOut)},
                    {"has_y_c", int64_t(stateOut)}});
        c.operands.push_back(randomTensor(dtype, {T, B, I}, 40));
        c.operands.push_back(randomTensor(dtype, {1, 4 * H, I}, 41));
        c.operands.push_back(randomTensor(dtype, {1, 4 * H, H}, 42));
        c.constant = {false, true, true};
        if (full) {
          c.operands.push_back(randomTensor(dtype, {1, 8 * H}, 43));
          c.operands.push_back(randomTensor(dtype, {1, B, H}, 44));
          c.operands.push_back(randomTensor(dtype, {1, B, H}, 45));
          c.constant.insert(c.constant.end(), {true, false, false});
        }
        if (stateOut)
          c.moreResults = {{dtype, {1, B, H}}, {dtype, {1, B, H}}};
        c.yDtype = dtype;
        c.yShape = {T, 1, B, H};
        bool ran = compareWithReference(c);
        // oneDNN's LSTMs are brgemm code on avx512_core and up, bf16 on
        // avx512_core_bf16; below, its "ref" RNN, which runs jit GEMMs and
        // cells and which the call takes too (scripts/check-portability.sh
        // runs this on AVX2).
        if (dtype != DType::BF16)
          CHECK(ran);
      }
  // What oneDNN's cells do not have stays on the reference kernel.
  HostTensor x = randomTensor(DType::F32, {T, B, I}, 1),
             w = randomTensor(DType::F32, {2, 4 * H, I}, 2),
             r = randomTensor(DType::F32, {2, 4 * H, H}, 3),
             y(DType::F32, {T, 2, B, H});
  std::vector<PlanAttr> attrs = {{"mode", std::string("lstm")},
                                 {"direction", std::string("bidirectional")},
                                 {"hidden_size", H},
                                 {"has_b", int64_t(0)},
                                 {"has_sequence_lens", int64_t(0)},
                                 {"has_initial_h", int64_t(0)},
                                 {"has_initial_c", int64_t(0)},
                                 {"has_p", int64_t(0)},
                                 {"has_y", int64_t(1)},
                                 {"has_y_h", int64_t(0)},
                                 {"has_y_c", int64_t(0)}};
  cpu::FastCallChoice bidirectional = cpu::prepareFastCall(
      callOf("cudnn.rnn", attrs), {x.view(), w.view(), r.view()}, {y.view()},
      {false, true, true});
  CHECK_FALSE(bidirectional.call);
  CHECK_THAT(bidirectional.why, Catch::Contains("bidirectional"));
  HostTensor w1 = randomTensor(DType::F32, {1, 4 * H, I}, 2),
             r1 = randomTensor(DType::F32, {1, 4 * H, H}, 3),
             y1(DType::F32, {T, 1, B, H});
  attrs[1].value = std::string("forward");
  cpu::FastCallChoice changing = cpu::prepareFastCall(
      callOf("cudnn.rnn", attrs), {x.view(), w1.view(), r1.view()}, {y1.view()},
      {false, false, true});
  CHECK_FALSE(changing.call);
  CHECK_THAT(changing.why, Catch::Contains("weights that change"));
}

TEST_CASE("fast GRU and RNN cells compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  const int64_t T = 6, B = 3, I = 5, H = 7;
  struct Cell {
    const char *what, *mode;
    int64_t gates;
    std::vector<PlanAttr> attrs;
  };
  const Cell cells[] = {
      {"GRU", "gru", 3, {}},
      {"GRU, linear before reset",
       "gru",
       3,
       {{"linear_before_reset", int64_t(1)}}},
      {"RNN (Tanh)", "rnn", 1, {}},
      {"RNN (Relu)", "rnn", 1, {{"activations", std::string("Relu")}}}};
  for (DType dtype : {DType::F32, DType::BF16, DType::F16})
    for (const Cell &cell : cells)
      for (bool reverse : {false, true})
        for (bool full : {false, true}) {
          // full: a bias, the initial h and the final h.
          INFO(cell.what << ", " << dtypeName(dtype)
                         << (reverse ? ", reverse" : ", forward")
                         << (full ? ", with b, h0, y_h" : ""));
          std::vector<PlanAttr> attrs = {
              {"mode", std::string(cell.mode)},
              {"direction", std::string(reverse ? "reverse" : "forward")},
              {"hidden_size", H},
              {"has_b", int64_t(full)},
              {"has_sequence_lens", int64_t(0)},
              {"has_initial_h", int64_t(full)},
              {"has_initial_c", int64_t(0)},
              {"has_p", int64_t(0)},
              {"has_y", int64_t(1)},
              {"has_y_h", int64_t(full)},
              {"has_y_c", int64_t(0)}};
          attrs.insert(attrs.end(), cell.attrs.begin(), cell.attrs.end());
          Case c;
          c.call = callOf("cudnn.rnn", attrs);
          const int64_t G = cell.gates;
          c.operands.push_back(randomTensor(dtype, {T, B, I}, 50));
          c.operands.push_back(randomTensor(dtype, {1, G * H, I}, 51));
          c.operands.push_back(randomTensor(dtype, {1, G * H, H}, 52));
          c.constant = {false, true, true};
          if (full) {
            c.operands.push_back(randomTensor(dtype, {1, 2 * G * H}, 53));
            c.operands.push_back(randomTensor(dtype, {1, B, H}, 54));
            c.constant.insert(c.constant.end(), {true, false});
            c.moreResults = {{dtype, {1, B, H}}};
          }
          c.yDtype = dtype;
          c.yShape = {T, 1, B, H};
          bool ran = compareWithReference(c);
          // (GRUs and RNNs: oneDNN's "ref" RNN on every ISA.)
          if (dtype != DType::BF16)
            CHECK(ran);
        }
}

TEST_CASE("fast layer norm and LRN compute what the reference computes",
          "[cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    // Over the last dim, and over the last two (axis 1 of a 3-D x).
    for (int64_t axis : {-1, 1})
      for (bool withBias : {false, true}) {
        INFO("layer norm, axis " << axis << (withBias ? ", bias, " : ", ")
                                 << dtypeName(dtype));
        const Shape x{3, 4, 20};
        const Shape row =
            axis == -1 ? Shape{20} : Shape{4, 20}; // one value per element
        Case c;
        c.call = callOf("kernel.layer_norm", {{"axis", axis},
                                              {"epsilon", 1e-5},
                                              {"has_bias", int64_t(withBias)},
                                              {"has_mean", int64_t(0)},
                                              {"has_inv_std_dev", int64_t(0)}});
        c.operands.push_back(randomTensor(dtype, x, 21));
        c.operands.push_back(randomTensor(DType::F32, row, 22));
        c.constant = {false, true};
        if (withBias) {
          c.operands.push_back(randomTensor(DType::F32, row, 23));
          c.constant.push_back(true);
        }
        c.yDtype = dtype;
        c.yShape = x;
        bool ran = compareWithReference(c);
        if (dtype == DType::F32)
          CHECK(ran);
      }
    for (int64_t size : {3, 5}) {
      INFO("lrn, size " << size << ", " << dtypeName(dtype));
      Case c;
      c.call = callOf(
          "cudnn.lrn",
          {{"size", size}, {"alpha", 1e-2}, {"beta", 0.75}, {"bias", 2.0}});
      c.operands.push_back(randomTensor(dtype, {2, 32, 5, 6}, 24));
      c.constant = {false};
      c.yDtype = dtype;
      c.yShape = {2, 32, 5, 6};
      bool ran = compareWithReference(c);
      // oneDNN's jit LRN: size 5, channels in blocks of 16 (else its
      // reference code, which the call refuses).
      if (dtype == DType::F32 && size == 5)
        CHECK(ran);
    }
  }

  // What stays on the reference kernels.
  HostTensor x = randomTensor(DType::F32, {3, 20}, 25),
             scale = randomTensor(DType::F32, {20}, 26),
             scalar = randomTensor(DType::F32, {1}, 27), y(DType::F32, {3, 20}),
             mean(DType::F32, {3, 1});
  auto layerNormWhy = [&](std::vector<TensorView> operands,
                          std::vector<TensorView> results, bool hasMean) {
    cpu::FastCallChoice c = cpu::prepareFastCall(
        callOf("kernel.layer_norm", {{"axis", int64_t(-1)},
                                     {"epsilon", 1e-5},
                                     {"has_bias", int64_t(0)},
                                     {"has_mean", int64_t(hasMean)},
                                     {"has_inv_std_dev", int64_t(0)}}),
        operands, results, {false, true});
    CHECK_FALSE(c.call);
    return c.why;
  };
  CHECK_THAT(
      layerNormWhy({x.view(), scale.view()}, {y.view(), mean.view()}, true),
      Catch::Contains("mean and inverse standard deviation"));
  CHECK_THAT(layerNormWhy({x.view(), scalar.view()}, {y.view()}, false),
             Catch::Contains("one value per element of the row"));
  HostTensor x4 = randomTensor(DType::F32, {1, 6, 3, 3}, 28),
             y4(DType::F32, {1, 6, 3, 3});
  cpu::FastCallChoice even =
      cpu::prepareFastCall(callOf("cudnn.lrn", {{"size", int64_t(4)},
                                                {"alpha", 1e-4},
                                                {"beta", 0.75},
                                                {"bias", 1.0}}),
                           {x4.view()}, {y4.view()}, {false});
  CHECK_FALSE(even.call);
  CHECK_THAT(even.why, Catch::Contains("even size"));
}
