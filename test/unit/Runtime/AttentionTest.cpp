// Tests of the fused attention call (kernel.attention, mp/Runtime/Attention.h):
// the exact CPU kernel against the formula computed here in double, on the
// layouts culib-fuse-attention makes (Q, K and V slices of one [L, B, 3E]
// projection, O written as [L * B, E]), with and without broadcast masks, in
// f32, bf16 and f16; the oneDNN path against the exact kernel; and the
// geometry checks every backend shares.
#include "mp/Runtime/Attention.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/CPU/NNKernels.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;

namespace {

/// Torch's MultiheadAttention layout: qkv [L, B, 3 * H * D], Q, K and V
/// the three thirds, heads split from each; O as [L * B, H * D].
struct Layout {
  int64_t batch, heads, length, dim;
  AttentionShape shape() const {
    return {batch, heads, length, length, dim, dim};
  }
  int64_t hidden() const { return heads * dim; }
  AttentionView input(int64_t third) const {
    return {third * hidden(), {3 * hidden(), dim, batch * 3 * hidden(), 1}};
  }
  AttentionView output() const {
    return {0, {hidden(), dim, batch * hidden(), 1}};
  }
};

cpu::AttentionOptions optionsOf(const Layout &l, float scale) {
  cpu::AttentionOptions o;
  o.shape = l.shape();
  o.q = l.input(0);
  o.k = l.input(1);
  o.v = l.input(2);
  o.o = l.output();
  o.scale = scale;
  return o;
}

/// The formula in double, from the stored (rounded) inputs.
std::vector<double> expected(const HostTensor &qkv, const HostTensor *mask,
                             const HostTensor &o,
                             const cpu::AttentionOptions &a) {
  const AttentionShape &n = a.shape;
  std::vector<double> out(o.numElements(), 0.0);
  for (int64_t b = 0; b < n.batch; ++b)
    for (int64_t h = 0; h < n.heads; ++h)
      for (int64_t i = 0; i < n.queries; ++i) {
        std::vector<double> s(n.keys);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n.keys; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < n.headDim; ++d)
            dot +=
                getD(qkv, a.q.at(b, h, i, d)) * getD(qkv, a.k.at(b, h, j, d));
          s[j] =
              a.scale * dot + (mask ? getD(*mask, a.mask.at(b, h, i, j)) : 0.0);
          max = std::max(max, s[j]);
        }
        double sum = 0;
        for (double &v : s)
          sum += v = std::exp(v - max);
        for (int64_t e = 0; e < n.valueDim; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < n.keys; ++j)
            acc += s[j] / sum * getD(qkv, a.v.at(b, h, j, e));
          out[a.o.at(b, h, i, e)] = acc;
        }
      }
  return out;
}

/// A causal mask [1, L, L]: 0 on and below the diagonal, -inf above.
HostTensor causalMask(DType t, int64_t length) {
  HostTensor m(t, {1, length, length});
  for (int64_t i = 0; i < length; ++i)
    for (int64_t j = 0; j < length; ++j)
      setD(m, i * length + j,
           j <= i ? 0.0 : -std::numeric_limits<double>::infinity());
  return m;
}

/// Tolerance relative to |value| + 1: f32 sums in another order; 16-bit
/// outputs within their one rounding of that.
double toleranceOf(DType t) { return t == DType::F32 ? 2e-6 : 2e-6; }

PlanCall attentionCall(const cpu::AttentionOptions &a, bool mask) {
  PlanCall c;
  c.kind = "kernel.attention";
  c.attributes = {{"shape", a.shape.toList()}, {"q_view", a.q.toList()},
                  {"k_view", a.k.toList()},    {"v_view", a.v.toList()},
                  {"o_view", a.o.toList()},    {"scale", double(a.scale)},
                  {"has_mask", int64_t(mask)}};
  if (mask)
    c.attributes.push_back({"mask_view", a.mask.toList()});
  return c;
}

} // namespace

TEST_CASE("attention: the exact kernel computes softmax(s Q K^T + mask) V "
          "on strided views, rounding once",
          "[attention]") {
  const Layout l{2, 3, 7, 4};
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    INFO("dtype " << dtypeName(t));
    Rng rng(11);
    HostTensor qkv =
        randomTensor(t, {l.length, l.batch, 3 * l.hidden()}, rng, -2.0, 2.0);
    cpu::AttentionOptions a = optionsOf(l, 0.5f);
    SECTION("no mask") {
      HostTensor o(t, {l.length * l.batch, l.hidden()});
      REQUIRE(cpu::attention(qkv.view(), qkv.view(), qkv.view(), nullptr,
                             o.view(), a));
      expectClose(o, expected(qkv, nullptr, o, a), toleranceOf(t));
    }
    SECTION("a causal mask broadcast over batch and heads") {
      HostTensor mask = causalMask(DType::F32, l.length);
      a.mask = {0, {0, 0, l.length, 1}};
      HostTensor o(t, {l.length * l.batch, l.hidden()});
      REQUIRE(cpu::attention(qkv.view(), qkv.view(), qkv.view(), &mask.view(),
                             o.view(), a));
      std::vector<double> want = expected(qkv, &mask, o, a);
      expectClose(o, want, toleranceOf(t));
      // The first query sees only the first key: O is V's first row.
      for (int64_t e = 0; e < l.dim; ++e)
        CHECK(getD(o, a.o.at(1, 2, 0, e)) == getD(qkv, a.v.at(1, 2, 0, e)));
    }
    SECTION("an additive mask per batch, in the buffers' own dtype") {
      HostTensor mask =
          randomTensor(t, {l.batch, 1, l.length, l.length}, rng, -3.0, 3.0);
      a.mask = {0, {l.length * l.length, 0, l.length, 1}};
      HostTensor o(t, {l.length * l.batch, l.hidden()});
      REQUIRE(cpu::attention(qkv.view(), qkv.view(), qkv.view(), &mask.view(),
                             o.view(), a));
      expectClose(o, expected(qkv, &mask, o, a), toleranceOf(t));
    }
  }
}

TEST_CASE("attention: a row with every key masked gives NaN, as its softmax "
          "does",
          "[attention]") {
  const Layout l{1, 1, 3, 2};
  Rng rng(3);
  HostTensor qkv = randomTensor(DType::F32, {3, 1, 6}, rng);
  HostTensor mask = filled(DType::F32, {3, 3}, 0.0);
  for (int64_t j = 0; j < 3; ++j)
    setD(mask, 3 + j, -std::numeric_limits<double>::infinity());
  cpu::AttentionOptions a = optionsOf(l, 1.f);
  a.mask = {0, {0, 0, 3, 1}};
  HostTensor o(DType::F32, {3, 2});
  REQUIRE(cpu::attention(qkv.view(), qkv.view(), qkv.view(), &mask.view(),
                         o.view(), a));
  CHECK(std::isnan(getD(o, a.o.at(0, 0, 1, 0))));
  CHECK(std::isfinite(getD(o, a.o.at(0, 0, 0, 0))));
  CHECK(std::isfinite(getD(o, a.o.at(0, 0, 2, 1))));
}

TEST_CASE("attention: geometries outside the buffers, writing an element "
          "twice or over an input are refused",
          "[attention]") {
  const Layout l{2, 2, 5, 4};
  HostTensor qkv(DType::F32, {5, 2, 24});
  HostTensor o(DType::F32, {10, 8});
  cpu::AttentionOptions a = optionsOf(l, 1.f);
  auto error = [&](const cpu::AttentionOptions &bad, const TensorView &out) {
    Status s =
        cpu::attention(qkv.view(), qkv.view(), qkv.view(), nullptr, out, bad);
    CHECK(!s);
    return s.message();
  };
  cpu::AttentionOptions beyond = a;
  beyond.v.offset += 1;
  CHECK_THAT(error(beyond, o.view()),
             Catch::Contains("v view reaches element 240 of a buffer of 240"));
  cpu::AttentionOptions twice = a;
  twice.o.strides[1] = 1; // heads overlap the columns
  CHECK_THAT(error(twice, o.view()),
             Catch::Contains("o view writes some elements twice"));
  cpu::AttentionOptions negative = a;
  negative.q.strides[2] = -1;
  CHECK_THAT(error(negative, o.view()),
             Catch::Contains("q view has a negative offset or stride"));
  HostTensor big(DType::F32, {5, 2, 24});
  cpu::AttentionOptions inPlace = a;
  inPlace.o = {0, {24, 4, 48, 1}};
  Status s = cpu::attention(big.view(), big.view(), big.view(), nullptr,
                            big.view(), inPlace);
  CHECK_THAT(s.message(), Catch::Contains("o overlaps an input"));
  cpu::AttentionOptions empty = a;
  empty.shape.keys = 0;
  CHECK_THAT(error(empty, o.view()), Catch::Contains("sizes must be positive"));
  // Numbers from a hostile plan file: refused, not overflowed.
  cpu::AttentionOptions huge = a;
  huge.k.strides[2] = int64_t(1) << 62;
  CHECK_THAT(error(huge, o.view()), Catch::Contains("k view overflows"));
  cpu::AttentionOptions many = a;
  many.shape.batch = int64_t(1) << 40;
  many.shape.queries = int64_t(1) << 30;
  CHECK_THAT(error(many, o.view()), Catch::Contains("sizes overflow"));
}

TEST_CASE("attention: the plan call reads its views and scale, and the fast "
          "CPU path computes what the exact kernel does",
          "[attention]") {
  // ViT-like sizes (a query count that is no multiple of anything), and a
  // causal mask. On one thread the problems run as one block of batched
  // matmuls; on two, 4 heads run one per thread at a time and 3 heads
  // (uneven) as a block again.
  struct Run {
    int threads;
    Layout l;
    bool blocksPerThread;
  };
  for (const Run &r :
       {Run{1, {1, 4, 37, 16}, false}, Run{2, {1, 4, 37, 16}, true},
        Run{2, {1, 3, 37, 16}, false}})
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      for (bool withMask : {false, true}) {
        const Layout &l = r.l;
        ScopedCpuThreads threads(r.threads);
        INFO(r.threads << " threads, " << l.heads << " heads, dtype "
                       << dtypeName(t) << (withMask ? ", mask" : ""));
        Rng rng(5);
        HostTensor qkv = randomTensor(t, {l.length, l.batch, 3 * l.hidden()},
                                      rng, -2.0, 2.0);
        HostTensor mask = causalMask(DType::F32, l.length);
        cpu::AttentionOptions a = optionsOf(l, 0.25f);
        a.mask = {0, {0, 0, l.length, 1}};
        PlanCall call = attentionCall(a, withMask);
        std::vector<TensorView> operands = {qkv.view(), qkv.view(), qkv.view()};
        if (withMask)
          operands.push_back(mask.view());
        HostTensor exact(t, {l.length * l.batch, l.hidden()});
        HostTensor fast(t, {l.length * l.batch, l.hidden()});
        cpu::CallFn reference = cpu::cpuCallTable().find("kernel.attention");
        REQUIRE(reference);
        cpu::CallArgs args{call, operands, {exact.view()}, nullptr, 0};
        Status ran = reference(args);
        INFO(ran.message());
        REQUIRE(ran);
        expectClose(exact, expected(qkv, withMask ? &mask : nullptr, exact, a),
                    toleranceOf(t));

        cpu::FastCallChoice choice = cpu::prepareFastCall(
            call, operands, {fast.view()}, {false, false, false, false});
        if (!cpu::haveFastKernels()) {
          CHECK(!choice.call);
          continue;
        }
        INFO("not prepared: " << choice.why);
        REQUIRE(choice.call);
        INFO("implementation " << choice.call->implementation());
        // (A runtime built without OpenMP has one thread whatever is set.)
        CHECK((choice.call->implementation().find("per thread") !=
               std::string::npos) ==
              (r.blocksPerThread && cpu::cpuThreads() >= 2));
        std::vector<unsigned char> scratch(choice.call->scratchBytes());
        REQUIRE(choice.call->run(scratch.data()));
        // Both round once from f32 values that differ by summation order
        // and the vectorised exp: within a 16-bit ulp or two.
        double tol = t == DType::F32 ? 1e-5 : t == DType::F16 ? 2e-3 : 1.6e-2;
        expectClose(fast, values(exact), tol);
      }
    }
}

TEST_CASE("attention: a call with a wrong view attribute is refused by name",
          "[attention]") {
  cpu::AttentionOptions a = optionsOf(Layout{1, 1, 2, 2}, 1.f);
  PlanCall call = attentionCall(a, false);
  for (PlanAttr &attr : call.attributes)
    if (attr.name == "k_view")
      attr.value = std::vector<int64_t>{0, 1, 2};
  Result<cpu::AttentionOptions> options = cpu::attentionOptionsOf(call, false);
  REQUIRE(!options);
  CHECK_THAT(options.status().message(),
             Catch::Contains("attribute 'k_view' must have 5 elements"));
}

TEST_CASE("attention: plans with the call are format 1.4, fused programs "
          "alone keep 1.3",
          "[attention][plan]") {
  Plan plan;
  PlanCall fused;
  fused.kind = "kernel.fused_elementwise";
  plan.calls.push_back(fused);
  CHECK(plan.requiredFormatMinor() == 3);
  plan.calls.push_back(
      attentionCall(optionsOf(Layout{1, 1, 2, 2}, 1.f), false));
  CHECK(plan.requiredFormatMinor() == 4);
  CHECK(kPlanFormatMinor >= 4);
}

TEST_CASE("plans with a convolution's residual are format 1.4", "[plan]") {
  Plan plan;
  PlanCall conv;
  conv.kind = "cudnn.conv_fwd";
  conv.attributes = {{"has_bias", int64_t(1)}, {"has_residual", int64_t(0)}};
  plan.calls.push_back(conv);
  CHECK(plan.requiredFormatMinor() == 0);
  plan.calls[0].attributes[1].value = int64_t(1);
  CHECK(plan.requiredFormatMinor() == 4);
}

TEST_CASE("plans with the activations 1.4 lacks are format 1.5", "[plan]") {
  Plan plan;
  PlanCall matmul;
  matmul.kind = "cublaslt.matmul";
  matmul.attributes = {{"epilogue", std::string("gelu")}};
  plan.calls.push_back(matmul);
  CHECK(plan.requiredFormatMinor() == 0);
  for (const char *epilogue :
       {"gelu_tanh", "silu", "sigmoid", "tanh", "hard_swish"}) {
    INFO(epilogue);
    plan.calls[0].attributes[0].value = std::string(epilogue);
    CHECK(plan.requiredFormatMinor() == 5);
  }
  PlanCall conv;
  conv.kind = "cudnn.conv_fwd";
  conv.attributes = {{"activation", std::string("silu")}};
  plan.calls[0] = conv;
  CHECK(plan.requiredFormatMinor() == 0);
  for (const char *activation : {"gelu", "gelu_tanh"}) {
    plan.calls[0].attributes[0].value = std::string(activation);
    CHECK(plan.requiredFormatMinor() == 5);
  }
  CHECK(kPlanFormatMinor >= 5);
}

TEST_CASE(
    "plans with an RMS or a group norm or a scaled softmax are format 1.6",
    "[plan]") {
  Plan plan;
  PlanCall conv;
  conv.kind = "cudnn.conv_fwd";
  conv.attributes = {{"activation", std::string("gelu")}};
  plan.calls.push_back(conv);
  CHECK(plan.requiredFormatMinor() == 5);
  PlanCall rms;
  rms.kind = "kernel.rms_norm";
  plan.calls.push_back(rms);
  CHECK(plan.requiredFormatMinor() == 6);
  plan.calls.back().kind = "kernel.group_norm";
  CHECK(plan.requiredFormatMinor() == 6);
  plan.calls.back().kind = "kernel.scaled_softmax";
  CHECK(plan.requiredFormatMinor() == 6);
  CHECK(kPlanFormatMinor >= 6);
}
