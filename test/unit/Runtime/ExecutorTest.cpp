// Unit tests of the CPU executor (mp/Runtime/Executor.h) and the library-call
// adapters (lib/Runtime/CPU/Calls/LibraryCalls.cpp): small plans built by
// hand run end to end and their outputs are compared with values computed
// here by naive loops; binding, validation and call errors give the
// documented messages; plans survive savePlan/loadPlan; timing and
// benchmarks account for every call.
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/PlanBuilding.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace mp::rt;
using namespace mp::rt::test;
namespace fs = std::filesystem;

namespace {

/// Builds a plan: arena buffers are placed at multiples of 256.
struct PlanBuilder {
  Plan plan;

  uint32_t arena(DType dtype, Shape shape, std::string name = "") {
    return appendArenaBuffer(plan, dtype, std::move(shape), std::move(name));
  }
  uint32_t weight(const std::string &name, Shape shape,
                  const std::vector<float> &values) {
    return appendWeightBuffer(plan, BufferStorage::Weight, name, name,
                              std::move(shape), values);
  }
  /// A buffer made at load (BufferStorage::Derived).
  uint32_t derived(DType dtype, Shape shape, std::string name = "") {
    PlanBuffer b;
    b.id = static_cast<uint32_t>(plan.buffers.size());
    b.dtype = dtype;
    b.shape = std::move(shape);
    b.storage = BufferStorage::Derived;
    b.name = std::move(name);
    plan.buffers.push_back(std::move(b));
    return plan.buffers.back().id;
  }
  void input(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.inputs.push_back({name, id, b.dtype, b.shape});
  }
  void output(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.outputs.push_back({name, id, b.dtype, b.shape});
  }
  PlanCall &call(std::string kind, std::vector<uint32_t> operands,
                 std::vector<uint32_t> results, std::vector<PlanAttr> attrs,
                 std::string location) {
    PlanCall c;
    c.kind = std::move(kind);
    c.operands = std::move(operands);
    c.results = std::move(results);
    c.attributes = std::move(attrs);
    c.location = std::move(location);
    plan.calls.push_back(std::move(c));
    return plan.calls.back();
  }
  /// x (NHWC) convolved with the weight `w` [M, C, K, K] as
  /// culib-nhwc-layout writes it: the weight transposed to [M, K, K, C] by a
  /// call of its own, then a channels-last conv_fwd (stride 1, `pad` on
  /// every side) into y.
  void channelsLastConv(uint32_t x, uint32_t w, uint32_t y, int64_t pad) {
    const Shape &ws = plan.buffers[w].shape;
    uint32_t wT =
        arena(plan.buffers[w].dtype, {ws[0], ws[2], ws[3], ws[1]}, "w_nhwc");
    call("kernel.transpose", {w}, {wT},
         {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "conv");
    call("cudnn.conv_fwd", {x, wT}, {y},
         {{"has_bias", int64_t(0)},
          {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
          {"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"layout", std::string("nhwc")},
          {"compute_type", int64_t(DType::F32)}},
         "conv");
  }
};

/// An f32 host tensor with these values.
HostTensor tensorOf(Shape shape, const std::vector<float> &values) {
  HostTensor t(DType::F32, std::move(shape));
  REQUIRE(static_cast<size_t>(t.numElements()) == values.size());
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> valuesOf(const HostTensor &t) {
  REQUIRE(t.dtype() == DType::F32);
  const float *p = t.as<float>();
  return std::vector<float>(p, p + t.numElements());
}

/// Deterministic values in [-1, 1).
std::vector<float> ramp(size_t n, uint32_t seed) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float &v : out) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
  }
  return out;
}

void checkClose(const std::vector<float> &actual,
                const std::vector<double> &expected, double tol = 1e-5) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i << ": " << actual[i] << " vs " << expected[i]);
    CHECK(std::abs(actual[i] - expected[i]) <=
          tol * (1 + std::abs(expected[i])));
  }
}

/// x [2, 3] @ w [3, 4] + bias [4] (cublaslt.matmul), then softmax over the
/// last axis (cudnn.softmax).
struct MatmulSoftmax {
  std::vector<float> w = ramp(12, 1), bias = ramp(4, 2);
  PlanBuilder b;
  MatmulSoftmax() {
    uint32_t x = b.arena(DType::F32, {2, 3}, "x");
    uint32_t wid = b.weight("w", {3, 4}, w);
    uint32_t bid = b.weight("bias", {4}, bias);
    uint32_t h = b.arena(DType::F32, {2, 4}, "h");
    uint32_t y = b.arena(DType::F32, {2, 4}, "y");
    b.input("x", x);
    b.output("y", y);
    b.call("cublaslt.matmul", {x, wid, bid}, {h},
           {{"has_c", int64_t(0)},
            {"has_bias", int64_t(1)},
            {"compute_type", int64_t(1)},
            {"alpha", 1.0},
            {"epilogue", std::string("none")}},
           "MatMul_0");
    b.call("cudnn.softmax", {h}, {y},
           {{"axis", int64_t(-1)}, {"log", int64_t(0)}}, "Softmax_1");
  }
  std::vector<double> expected(const std::vector<float> &x) const {
    std::vector<double> y(8);
    for (int i = 0; i < 2; ++i) {
      double row[4], mx = -INFINITY, sum = 0;
      for (int j = 0; j < 4; ++j) {
        row[j] = bias[j];
        for (int k = 0; k < 3; ++k)
          row[j] += double(x[i * 3 + k]) * w[k * 4 + j];
        mx = std::max(mx, row[j]);
      }
      for (int j = 0; j < 4; ++j)
        sum += std::exp(row[j] - mx);
      for (int j = 0; j < 4; ++j)
        y[i * 4 + j] = std::exp(row[j] - mx) / sum;
    }
    return y;
  }
};

CpuExecutor makeExecutor(Plan plan) {
  Result<CpuExecutor> exec =
      CpuExecutor::create(std::move(plan), "test.mpplan");
  INFO(exec.message());
  REQUIRE(exec);
  return exec.take();
}

} // namespace

TEST_CASE("matmul + bias, then softmax", "[executor]") {
  MatmulSoftmax m;
  CpuExecutor exec = makeExecutor(m.b.plan);
  std::vector<float> x = ramp(6, 3);
  HostTensor input = tensorOf({2, 3}, x);
  Result<std::vector<NamedTensor>> out = exec.run({{"x", input.view()}});
  INFO(out.message());
  REQUIRE(out);
  REQUIRE(out->size() == 1);
  CHECK((*out)[0].name == "y");
  CHECK((*out)[0].tensor.shape() == Shape{2, 4});
  checkClose(valuesOf((*out)[0].tensor), m.expected(x));

  SECTION("runs reuse the arena and see new inputs") {
    std::vector<float> x2 = ramp(6, 4);
    HostTensor input2 = tensorOf({2, 3}, x2);
    Result<std::vector<NamedTensor>> again = exec.run({{"x", input2.view()}});
    REQUIRE(again);
    checkClose(valuesOf((*again)[0].tensor), m.expected(x2));
    // The first run's outputs were copied out, not views of the arena.
    checkClose(valuesOf((*out)[0].tensor), m.expected(x));
  }
}

TEST_CASE("matmul with C, beta, transposes and the gelu epilogue",
          "[executor]") {
  // d = gelu(2 * a^T @ b^T + 0.5 * c): a [3, 2] (transposed), b [4, 3].
  std::vector<float> a = ramp(6, 5), bw = ramp(12, 6), c = ramp(8, 7);
  PlanBuilder b;
  uint32_t aid = b.arena(DType::F32, {3, 2});
  uint32_t bid = b.weight("b", {4, 3}, bw);
  uint32_t cid = b.weight("c", {2, 4}, c);
  uint32_t d = b.arena(DType::F32, {2, 4});
  b.input("a", aid);
  b.output("d", d);
  b.call("cublaslt.matmul", {aid, bid, cid}, {d},
         {{"has_c", int64_t(1)},
          {"has_bias", int64_t(0)},
          {"trans_a", int64_t(1)},
          {"trans_b", int64_t(1)},
          {"alpha", 2.0},
          {"beta", 0.5},
          {"compute_type", int64_t(1)},
          {"epilogue", std::string("gelu")}},
         "Gemm");
  CpuExecutor exec = makeExecutor(b.plan);
  HostTensor input = tensorOf({3, 2}, a);
  auto out = exec.run({{"a", input.view()}});
  INFO(out.message());
  REQUIRE(out);
  std::vector<double> expected(8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 3; ++k)
        acc += double(a[k * 2 + i]) * bw[j * 3 + k];
      double v = 2 * acc + 0.5 * c[i * 4 + j];
      expected[i * 4 + j] = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    }
  checkClose(valuesOf((*out)[0].tensor), expected);
}

TEST_CASE("conv + bias + relu, then max pool with indices", "[executor]") {
  // x [1, 1, 4, 4], w [2, 1, 3, 3], pads 1 -> y [1, 2, 4, 4];
  // 2x2 max pool, stride 2 -> p [1, 2, 2, 2] and its indices.
  std::vector<float> x = ramp(16, 8), w = ramp(18, 9), bias = {0.1f, -0.2f};
  PlanBuilder b;
  uint32_t xid = b.arena(DType::F32, {1, 1, 4, 4}, "x");
  uint32_t wid = b.weight("w", {2, 1, 3, 3}, w);
  uint32_t bid = b.weight("b", {2}, bias);
  uint32_t yid = b.arena(DType::F32, {1, 2, 4, 4}, "y");
  uint32_t pid = b.arena(DType::F32, {1, 2, 2, 2}, "p");
  uint32_t iid = b.arena(DType::I64, {1, 2, 2, 2}, "i");
  b.input("x", xid);
  b.output("p", pid);
  b.output("i", iid);
  b.call("cudnn.conv_fwd", {xid, wid, bid}, {yid},
         {{"has_bias", int64_t(1)},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}},
          {"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"groups", int64_t(1)},
          {"compute_type", int64_t(1)},
          {"layout", std::string("nchw")},
          {"activation", std::string("relu")}},
         "Conv_0");
  b.call("cudnn.pool", {yid}, {pid, iid},
         {{"has_indices", int64_t(1)},
          {"mode", std::string("max")},
          {"window", std::vector<int64_t>{2, 2}},
          {"pads", std::vector<int64_t>{0, 0, 0, 0}},
          {"strides", std::vector<int64_t>{2, 2}}},
         "MaxPool_1");
  CpuExecutor exec = makeExecutor(b.plan);
  HostTensor input = tensorOf({1, 1, 4, 4}, x);
  auto out = exec.run({{"x", input.view()}});
  INFO(out.message());
  REQUIRE(out);

  double y[2][4][4];
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        double acc = bias[m];
        for (int ki = 0; ki < 3; ++ki)
          for (int kj = 0; kj < 3; ++kj) {
            int r = i + ki - 1, c = j + kj - 1;
            if (r >= 0 && r < 4 && c >= 0 && c < 4)
              acc += double(x[r * 4 + c]) * w[m * 9 + ki * 3 + kj];
          }
        y[m][i][j] = std::max(acc, 0.0);
      }
  std::vector<double> pooled;
  std::vector<int64_t> indices;
  for (int m = 0; m < 2; ++m)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double best = -INFINITY;
        int64_t at = -1;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj) {
            int r = 2 * i + di, c = 2 * j + dj;
            if (y[m][r][c] > best) {
              best = y[m][r][c];
              at = m * 16 + r * 4 + c;
            }
          }
        pooled.push_back(best);
        indices.push_back(at);
      }
  checkClose(valuesOf((*out)[0].tensor), pooled);
  const HostTensor &idx = (*out)[1].tensor;
  REQUIRE(idx.dtype() == DType::I64);
  // Ties (relu zeros) may pick any maximum: check the value at the index.
  for (size_t k = 0; k < indices.size(); ++k) {
    int64_t got = idx.as<int64_t>()[k];
    REQUIRE(got >= 0);
    REQUIRE(got < 32);
    CHECK(y[got / 16][(got % 16) / 4][got % 4] == Approx(pooled[k]));
  }
}

TEST_CASE("average pooling, with and without padding counted", "[executor]") {
  std::vector<float> x = ramp(9, 10);
  for (bool includePad : {false, true}) {
    PlanBuilder b;
    uint32_t xid = b.arena(DType::F32, {1, 1, 3, 3});
    uint32_t yid = b.arena(DType::F32, {1, 1, 2, 2});
    b.input("x", xid);
    b.output("y", yid);
    b.call("cudnn.pool", {xid}, {yid},
           {{"has_indices", int64_t(0)},
            {"mode", std::string(includePad ? "avg_include_pad" : "avg")},
            {"window", std::vector<int64_t>{2, 2}},
            {"pads", std::vector<int64_t>{1, 1, 0, 0}},
            {"strides", std::vector<int64_t>{2, 2}}},
           "AveragePool");
    CpuExecutor exec = makeExecutor(b.plan);
    HostTensor input = tensorOf({1, 1, 3, 3}, x);
    auto out = exec.run({{"x", input.view()}});
    INFO(out.message());
    REQUIRE(out);
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double sum = 0;
        int count = 0;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj) {
            int r = 2 * i + di - 1, c = 2 * j + dj - 1;
            if (r >= 0 && r < 3 && c >= 0 && c < 3) {
              sum += x[r * 3 + c];
              ++count;
            }
          }
        expected.push_back(sum / (includePad ? 4 : count));
      }
    checkClose(valuesOf((*out)[0].tensor), expected);
  }
}

TEST_CASE("batch norm inference and training", "[executor]") {
  // x [2, 3, 2]: per channel c over n and the spatial position.
  std::vector<float> x = ramp(12, 11), scale = {1.0f, 2.0f, 0.5f},
                     bias = {0.0f, 0.1f, -0.3f}, mean = {0.1f, -0.2f, 0.3f},
                     var = {1.0f, 0.5f, 2.0f};
  const double eps = 1e-3, momentum = 0.75;
  auto at = [](int n, int c, int s) { return n * 6 + c * 2 + s; };

  SECTION("inference") {
    PlanBuilder b;
    uint32_t xid = b.arena(DType::F32, {2, 3, 2});
    uint32_t ids[4] = {b.weight("scale", {3}, scale),
                       b.weight("bias", {3}, bias), b.weight("mean", {3}, mean),
                       b.weight("var", {3}, var)};
    uint32_t yid = b.arena(DType::F32, {2, 3, 2});
    b.input("x", xid);
    b.output("y", yid);
    b.call("cudnn.batch_norm_inference", {xid, ids[0], ids[1], ids[2], ids[3]},
           {yid}, {{"epsilon", eps}}, "BN");
    CpuExecutor exec = makeExecutor(b.plan);
    HostTensor input = tensorOf({2, 3, 2}, x);
    auto out = exec.run({{"x", input.view()}});
    INFO(out.message());
    REQUIRE(out);
    std::vector<double> expected(12);
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int s = 0; s < 2; ++s)
          expected[at(n, c, s)] =
              scale[c] * (x[at(n, c, s)] - mean[c]) / std::sqrt(var[c] + eps) +
              bias[c];
    checkClose(valuesOf((*out)[0].tensor), expected);
  }

  SECTION("training") {
    PlanBuilder b;
    uint32_t xid = b.arena(DType::F32, {2, 3, 2});
    uint32_t ids[4] = {b.weight("scale", {3}, scale),
                       b.weight("bias", {3}, bias), b.weight("mean", {3}, mean),
                       b.weight("var", {3}, var)};
    uint32_t yid = b.arena(DType::F32, {2, 3, 2});
    uint32_t rm = b.arena(DType::F32, {3});
    uint32_t rv = b.arena(DType::F32, {3});
    b.input("x", xid);
    b.output("y", yid);
    b.output("running_mean", rm);
    b.output("running_var", rv);
    b.call("cudnn.batch_norm_training", {xid, ids[0], ids[1], ids[2], ids[3]},
           {yid, rm, rv}, {{"epsilon", eps}, {"momentum", momentum}}, "BN");
    CpuExecutor exec = makeExecutor(b.plan);
    HostTensor input = tensorOf({2, 3, 2}, x);
    auto out = exec.run({{"x", input.view()}});
    INFO(out.message());
    REQUIRE(out);
    std::vector<double> y(12), runMean(3), runVar(3);
    for (int c = 0; c < 3; ++c) {
      double m = 0, v = 0;
      for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 2; ++s)
          m += x[at(n, c, s)] / 4.0;
      for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 2; ++s)
          v += (x[at(n, c, s)] - m) * (x[at(n, c, s)] - m) / 4.0;
      for (int n = 0; n < 2; ++n)
        for (int s = 0; s < 2; ++s)
          y[at(n, c, s)] =
              scale[c] * (x[at(n, c, s)] - m) / std::sqrt(v + eps) + bias[c];
      runMean[c] = mean[c] * momentum + m * (1 - momentum);
      runVar[c] = var[c] * momentum + v * (1 - momentum);
    }
    checkClose(valuesOf((*out)[0].tensor), y, 1e-4);
    checkClose(valuesOf((*out)[1].tensor), runMean);
    checkClose(valuesOf((*out)[2].tensor), runVar);
  }
}

TEST_CASE("log softmax and an output that is a weight", "[executor]") {
  std::vector<float> x = ramp(6, 12), constant = {1.5f, -2.5f};
  PlanBuilder b;
  uint32_t xid = b.arena(DType::F32, {3, 2});
  uint32_t yid = b.arena(DType::F32, {3, 2});
  uint32_t cid = b.weight("constant", {2}, constant);
  b.input("x", xid);
  b.output("y", yid);
  b.output("constant", cid);
  b.call("cudnn.softmax", {xid}, {yid},
         {{"axis", int64_t(0)}, {"log", int64_t(1)}}, "");
  CpuExecutor exec = makeExecutor(b.plan);
  HostTensor input = tensorOf({3, 2}, x);
  auto out = exec.run({{"x", input.view()}});
  INFO(out.message());
  REQUIRE(out);
  std::vector<double> expected(6);
  for (int j = 0; j < 2; ++j) {
    double sum = 0;
    for (int i = 0; i < 3; ++i)
      sum += std::exp(double(x[i * 2 + j]));
    for (int i = 0; i < 3; ++i)
      expected[i * 2 + j] = x[i * 2 + j] - std::log(sum);
  }
  checkClose(valuesOf((*out)[0].tensor), expected);
  CHECK((*out)[1].name == "constant");
  CHECK(valuesOf((*out)[1].tensor) == constant);
}

TEST_CASE("inputs are checked by name, dtype and shape", "[executor]") {
  MatmulSoftmax m;
  CpuExecutor exec = makeExecutor(m.b.plan);
  HostTensor good = tensorOf({2, 3}, ramp(6, 1));
  HostTensor shorter = tensorOf({2, 2}, ramp(4, 1));
  HostTensor f64(DType::F64, {2, 3});

  auto message = [&](const std::vector<NamedView> &inputs) {
    auto out = exec.run(inputs);
    REQUIRE_FALSE(out);
    return out.message();
  };
  CHECK(message({{"x", shorter.view()}}) ==
        "input 'x': expected f32 [2, 3], got f32 [2, 2]");
  CHECK(message({{"x", f64.view()}}) ==
        "input 'x': expected f32 [2, 3], got f64 [2, 3]");
  CHECK(message({}) == "input 'x' is missing (expected f32 [2, 3])");
  CHECK(message({{"x", good.view()}, {"z", good.view()}}) ==
        "unknown input 'z' (the plan's inputs: x)");
  CHECK(message({{"x", good.view()}, {"x", good.view()}}) ==
        "input 'x' is given twice");
  // After the errors, a good run still works.
  CHECK(exec.run({{"x", good.view()}}));
}

TEST_CASE("call kinds without a CPU implementation are rejected up front",
          "[executor]") {
  MatmulSoftmax m;
  m.b.plan.calls[1].kind = "kernel.foo";
  m.b.plan.calls[1].location = "x";
  Result<CpuExecutor> exec = CpuExecutor::create(m.b.plan);
  REQUIRE_FALSE(exec);
  CHECK(exec.message() ==
        "call #1 (kernel.foo at node 'x'): no CPU implementation of "
        "'kernel.foo'");
}

TEST_CASE("invalid plans are rejected by create", "[executor]") {
  MatmulSoftmax m;
  m.b.plan.arenaSize = 100; // buffers no longer fit
  Result<CpuExecutor> exec = CpuExecutor::create(m.b.plan, "bad.mpplan");
  REQUIRE_FALSE(exec);
  CHECK(exec.message().rfind("bad.mpplan: buffer ", 0) == 0);
  CHECK(exec.message().find("does not fit in the arena") != std::string::npos);
}

TEST_CASE("plans that need more memory than the machine has are rejected",
          "[executor][hostile]") {
  // A valid plan whose arena is declared at 1 PiB: a clear error before any
  // allocation, not an out-of-memory kill while the arena is zeroed.
  MatmulSoftmax m;
  m.b.plan.arenaSize = uint64_t(1) << 50;
  Result<CpuExecutor> exec = CpuExecutor::create(m.b.plan, "huge.mpplan");
  REQUIRE_FALSE(exec);
  CHECK(exec.message().rfind("huge.mpplan: the plan needs 1125899906842624 "
                             "bytes of activation arena",
                             0) == 0);
  CHECK(exec.message().find("more than this machine's") != std::string::npos);
}

TEST_CASE("call errors name the call and the problem", "[executor]") {
  HostTensor input = tensorOf({2, 3}, ramp(6, 1));
  auto runError = [&](MatmulSoftmax &m) {
    Result<CpuExecutor> exec = CpuExecutor::create(m.b.plan);
    REQUIRE(exec);
    auto out = exec->run({{"x", input.view()}});
    REQUIRE_FALSE(out);
    return out.message();
  };
  SECTION("unknown epilogue") {
    MatmulSoftmax m;
    m.b.plan.calls[0].attributes[4].value = std::string("clip");
    CHECK(runError(m) ==
          "call #0 (cublaslt.matmul at node 'MatMul_0'): attribute 'epilogue' "
          "has unknown value 'clip' (none, relu, gelu, gelu_tanh, silu, "
          "sigmoid, tanh, hard_swish, or with aux relu_grad, gelu_grad, "
          "gelu_tanh_grad)");
  }
  SECTION("missing has_bias") {
    MatmulSoftmax m;
    m.b.plan.calls[0].attributes.erase(m.b.plan.calls[0].attributes.begin() +
                                       1);
    CHECK(runError(m) == "call #0 (cublaslt.matmul at node 'MatMul_0'): "
                         "attribute 'has_bias' is missing");
  }
  SECTION("has_bias disagrees with the operands") {
    MatmulSoftmax m;
    m.b.plan.calls[0].attributes[1].value = int64_t(0);
    CHECK(runError(m) == "call #0 (cublaslt.matmul at node 'MatMul_0'): "
                         "expects 2 operands, got 3");
  }
  SECTION("attribute of the wrong type") {
    MatmulSoftmax m;
    m.b.plan.calls[1].attributes[0].value = 1.5;
    CHECK(runError(m) == "call #1 (cudnn.softmax at node 'Softmax_1'): "
                         "attribute 'axis' must be an int");
  }
  SECTION("compute type that cannot accumulate the inputs") {
    MatmulSoftmax m;
    m.b.plan.calls[0].attributes[2].value = int64_t(10); // f16
    CHECK(runError(m) == "call #0 (cublaslt.matmul at node 'MatMul_0'): "
                         "compute type f16 cannot accumulate f32 inputs");
  }
  SECTION("the kernel's own checks") {
    MatmulSoftmax m;
    m.b.plan.calls[1].attributes[0].value = int64_t(5); // axis out of range
    std::string message = runError(m);
    CHECK(message.rfind("call #1 (cudnn.softmax at node 'Softmax_1'): ", 0) ==
          0);
    CHECK(message.find("axis") != std::string::npos);
  }
}

TEST_CASE("plans run the same after savePlan and loadPlan", "[executor]") {
  TempDir dir;
  std::string path = (dir.path / "mm.mpplan").string();
  MatmulSoftmax m;
  REQUIRE(savePlan(m.b.plan, path));
  Result<Plan> loaded = loadPlan(path);
  INFO(loaded.message());
  REQUIRE(loaded);
  CpuExecutor fromFile = makeExecutor(loaded.take());
  CpuExecutor inMemory = makeExecutor(m.b.plan);
  std::vector<float> x = ramp(6, 13);
  HostTensor input = tensorOf({2, 3}, x);
  auto a = fromFile.run({{"x", input.view()}});
  auto b = inMemory.run({{"x", input.view()}});
  REQUIRE(a);
  REQUIRE(b);
  CHECK(valuesOf((*a)[0].tensor) == valuesOf((*b)[0].tensor));
  checkClose(valuesOf((*a)[0].tensor), m.expected(x));
}

TEST_CASE("per-call timing and benchmarks", "[executor]") {
  MatmulSoftmax m;
  CpuExecutor exec = makeExecutor(m.b.plan);
  HostTensor input = tensorOf({2, 3}, ramp(6, 1));
  std::vector<NamedView> inputs = {{"x", input.view()}};

  REQUIRE(exec.run(inputs));
  CHECK(exec.callTimes().runs == 0); // off by default
  exec.setTiming(true);
  for (int i = 0; i < 3; ++i)
    REQUIRE(exec.run(inputs));
  const CallTimes &times = exec.callTimes();
  CHECK(times.runs == 3);
  REQUIRE(times.totalMs.size() == 2);
  CHECK(times.totalMs[0] > 0);
  auto kinds = times.byKind(exec.plan());
  REQUIRE(kinds.size() == 2);
  double percent = 0;
  for (const auto &row : kinds) {
    CHECK(row.calls == 1);
    percent += row.percent;
  }
  CHECK(percent == Approx(100.0));
  CHECK(times.slowest(1).size() == 1);
  std::string table = times.format(exec.plan());
  CHECK(table.find("cublaslt.matmul") != std::string::npos);
  CHECK(table.find("call #1 (cudnn.softmax at node 'Softmax_1')") !=
        std::string::npos);

  exec.resetCallTimes();
  Result<BenchmarkStats> stats = exec.benchmark(inputs, 2, 5);
  REQUIRE(stats);
  CHECK(stats->runMs.size() == 5);
  CHECK(stats->min <= stats->median);
  CHECK(stats->median <= stats->max);
  // (The mean of equal times may round one ulp below them.)
  CHECK(stats->mean >= stats->min * (1 - 1e-12));
  CHECK(exec.callTimes().runs == 5); // warmup runs are not timed
  CHECK_FALSE(exec.benchmark(inputs, 0, 0));
  CHECK_FALSE(exec.benchmark(inputs, -1, 1));
  // The last benchmark run's outputs are readable.
  auto out = exec.readOutputs();
  REQUIRE(out);
  checkClose(valuesOf((*out)[0].tensor), m.expected(ramp(6, 1)));
}

/// `t` (any float dtype) as f32 values, and f32 `values` as a `dtype`
/// tensor.
std::vector<float> floatsOf(const HostTensor &t) {
  HostTensor f32(DType::F32, t.shape());
  REQUIRE(cpu::cast(t.view(), f32.view()));
  return valuesOf(f32);
}
HostTensor tensorOf(DType dtype, Shape shape,
                    const std::vector<float> &values) {
  HostTensor f32 = tensorOf(shape, values), t(dtype, shape);
  REQUIRE(cpu::cast(f32.view(), t.view()));
  return t;
}

TEST_CASE("a weight's channels-last transpose is folded into the filter's "
          "reorder, or done once at load",
          "[executor][fast]") {
  // x [1, 5, 5, 4] (NHWC) conv with the weight w [8, 4, 3, 3] transposed to
  // [8, 3, 3, 4] on the way, as culib-nhwc-layout writes channels-last
  // plans. f32: the convolution reorders the weight itself, channels first
  // (no transposed copy is kept); f16 (computed on as f32, so oneDNN's
  // reorder cannot read it): the transpose runs once, when the plan is
  // loaded, and the convolution takes its result as a constant.
  for (DType dtype : {DType::F32, DType::F16}) {
    INFO(dtypeName(dtype));
    PlanBuilder b;
    const Shape wShape{8, 4, 3, 3};
    HostTensor wValues = tensorOf(dtype, wShape, ramp(8 * 4 * 3 * 3, 3));
    b.plan.weights.push_back(PlanWeight::copyOf(
        "w", dtype, wShape, wValues.data(), wValues.byteCount()));
    uint32_t wid = b.arena(dtype, wShape, "w");
    b.plan.buffers[wid].storage = BufferStorage::Weight;
    b.plan.buffers[wid].weight =
        static_cast<uint32_t>(b.plan.weights.size() - 1);
    uint32_t x = b.arena(dtype, {1, 5, 5, 4}, "x");
    uint32_t y = b.arena(dtype, {1, 3, 3, 8}, "y");
    b.input("x", x);
    b.output("y", y);
    b.channelsLastConv(x, wid, y, /*pad=*/0);
    HostTensor in = tensorOf(dtype, {1, 5, 5, 4}, ramp(100, 4));

    CpuExecutorOptions reference;
    reference.kernels = cpu::CpuKernels::Reference;
    Result<CpuExecutor> ref = CpuExecutor::create(b.plan, "ref", reference);
    Result<CpuExecutor> fast = CpuExecutor::create(b.plan, "fast");
    REQUIRE(ref);
    REQUIRE(fast);
    CHECK(ref->implementationOf(0) ==
          "own: the reference kernels were asked for");
    if (!cpu::haveFastKernels()) {
      CHECK(fast->implementationOf(1) == "own: built without oneDNN");
      return;
    }
    CHECK_THAT(fast->implementationOf(1), Catch::StartsWith("onednn:"));
    CHECK(fast->implementationOf(0) ==
          std::string(dtype == DType::F32
                          ? "skipped: folded into the filter reorder of "
                          : "skipped: done once when the plan was loaded, "
                            "for ") +
              "call #1 (cudnn.conv_fwd at node 'conv')");
    // Twice: the second run must not depend on the first's arena.
    for (int run = 0; run < 2; ++run) {
      Result<std::vector<NamedTensor>> want = ref->run({{"x", in.view()}});
      Result<std::vector<NamedTensor>> got = fast->run({{"x", in.view()}});
      REQUIRE(want);
      REQUIRE(got);
      std::vector<double> expected;
      for (float v : floatsOf((*want)[0].tensor))
        expected.push_back(v);
      // f16: both round once from f32 sums of another order.
      checkClose(floatsOf((*got)[0].tensor), expected,
                 dtype == DType::F32 ? 1e-5 : 2e-3);
    }
  }
}

/// A bf16 training step's convolutions as culib-nhwc-layout and mixed
/// precision write them: the f32 filter `w` [8, 4, 3, 3] (a state buffer:
/// the master weight, or an input) is cast to bf16 and transposed to
/// [8, 3, 3, 4] for the forward and backward-data convolutions, and the
/// backward-filter call's bf16 dw [8, 3, 3, 4] is cast to f32 and transposed
/// back into the gradient g [8, 4, 3, 3]. Outputs y, dx (cast to f32) and g.
struct ChannelsLastTrainingConvs {
  PlanBuilder b;
  std::vector<float> w;
  explicit ChannelsLastTrainingConvs(
      bool filterIsState, std::vector<float> weights = ramp(8 * 4 * 3 * 3, 5))
      : w(std::move(weights)) {
    const std::vector<PlanAttr> window = {
        {"pads", std::vector<int64_t>{0, 0, 0, 0}},
        {"strides", std::vector<int64_t>{1, 1}},
        {"dilations", std::vector<int64_t>{1, 1}},
        {"layout", std::string("nhwc")},
        {"compute_type", int64_t(DType::F32)}};
    auto withBias = [&](std::vector<PlanAttr> attrs) {
      attrs.push_back({"has_bias", int64_t(0)});
      return attrs;
    };
    const auto bf16 = DType::BF16, f32 = DType::F32;
    uint32_t x = b.arena(f32, {1, 5, 5, 4}, "x");
    uint32_t dy = b.arena(f32, {1, 3, 3, 8}, "dy");
    uint32_t wf = filterIsState
                      ? appendWeightBuffer(b.plan, BufferStorage::State, "w",
                                           "w", {8, 4, 3, 3}, w)
                      : b.arena(f32, {8, 4, 3, 3}, "w");
    b.input("x", x);
    b.input("dy", dy);
    if (!filterIsState)
      b.input("w", wf);
    uint32_t xb = b.arena(bf16, {1, 5, 5, 4}),
             dyb = b.arena(bf16, {1, 3, 3, 8});
    uint32_t wb = b.arena(bf16, {8, 4, 3, 3}), wT = b.arena(bf16, {8, 3, 3, 4});
    uint32_t yb = b.arena(bf16, {1, 3, 3, 8}),
             dxb = b.arena(bf16, {1, 5, 5, 4});
    uint32_t dwb = b.arena(bf16, {8, 3, 3, 4}),
             dwf = b.arena(f32, {8, 3, 3, 4});
    uint32_t y = b.arena(f32, {1, 3, 3, 8}, "y"),
             dx = b.arena(f32, {1, 5, 5, 4}, "dx"),
             g = b.arena(f32, {8, 4, 3, 3}, "g");
    b.call("kernel.cast", {x}, {xb}, {}, "x_bf16");    // 0
    b.call("kernel.cast", {dy}, {dyb}, {}, "dy_bf16"); // 1
    b.call("kernel.cast", {wf}, {wb}, {}, "w_bf16");   // 2
    b.call("kernel.transpose", {wb}, {wT},             // 3
           {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "w_nhwc");
    b.call("cudnn.conv_fwd", {xb, wT}, {yb}, withBias(window), "conv"); // 4
    b.call("cudnn.conv_bwd_data", {dyb, wT}, {dxb}, withBias(window),   // 5
           "conv/grad");
    b.call("cudnn.conv_bwd_filter", {xb, dyb}, {dwb}, window, // 6
           "conv/grad");
    b.call("kernel.cast", {dwb}, {dwf}, {}, "dw_f32"); // 7
    b.call("kernel.transpose", {dwf}, {g},             // 8
           {{"perm", std::vector<int64_t>{0, 3, 1, 2}}}, "dw_nchw");
    b.call("kernel.cast", {yb}, {y}, {}, "y_f32");    // 9
    b.call("kernel.cast", {dxb}, {dx}, {}, "dx_f32"); // 10
    b.output("y", y);
    b.output("dx", dx);
    b.output("g", g);
  }
};

TEST_CASE("a training step's filter casts and transposes fold into the "
          "convolutions' reorders",
          "[executor][fast]") {
  if (!cpu::haveFastKernels()) {
    SUCCEED("built without oneDNN");
    return;
  }
  // On oneDNN's bf16 kernels (CPUs with bf16 products) and on f32 copies
  // (CPUs whose bf16 products are slow, or that have none; forced here by
  // MP_CPU_16BIT_PRODUCTS on any CPU). On copies the f32 master weight is
  // rounded to bf16 on its way to the f32 primitive, and the f32 dw
  // rounded to bf16 values on its way to the gradient, as the plan's casts
  // do.
  for (const char *products : {"native", "f32"}) {
    INFO("products " << products);
    const bool copies = std::string(products) == "f32";
    const std::string isa = cpu::fastKernelIsa();
    if (!copies && isa != "avx512_core_bf16" && isa != "avx512_core_amx") {
      WARN("oneDNN's bf16 convolutions need avx512_core_bf16 (here: " << isa
                                                                      << ")");
      continue;
    }
    ScopedSixteenBitProducts sixteenBit(products);
    ChannelsLastTrainingConvs step(/*filterIsState=*/true);
    CpuExecutorOptions reference;
    reference.kernels = cpu::CpuKernels::Reference;
    Result<CpuExecutor> ref =
        CpuExecutor::create(step.b.plan, "ref", reference);
    Result<CpuExecutor> fast = CpuExecutor::create(step.b.plan, "fast");
    REQUIRE(ref);
    REQUIRE(fast);
    for (size_t call : {4, 5, 6}) {
      CHECK_THAT(fast->implementationOf(call), Catch::StartsWith("onednn:"));
      if (copies)
        CHECK_THAT(fast->implementationOf(call),
                   Catch::EndsWith(", on f32 copies"));
    }
    // The forward and backward-data convolutions read the master weight.
    for (size_t call : {2, 3})
      CHECK(fast->implementationOf(call) ==
            "skipped: folded into the filter reorder of call #4 "
            "(cudnn.conv_fwd at node 'conv'), call #5 (cudnn.conv_bwd_data "
            "at node 'conv/grad')");
    // The backward-filter call writes the f32 gradient.
    for (size_t call : {7, 8})
      CHECK(fast->implementationOf(call) ==
            "skipped: folded into the filter reorder of call #6 "
            "(cudnn.conv_bwd_filter at node 'conv/grad')");
    HostTensor x = tensorOf({1, 5, 5, 4}, ramp(100, 6)),
               dy = tensorOf({1, 3, 3, 8}, ramp(72, 7));
    for (int run = 0; run < 2; ++run) {
      Result<std::vector<NamedTensor>> want =
          ref->run({{"x", x.view()}, {"dy", dy.view()}});
      Result<std::vector<NamedTensor>> got =
          fast->run({{"x", x.view()}, {"dy", dy.view()}});
      REQUIRE(want);
      REQUIRE(got);
      for (size_t k = 0; k < 3; ++k) {
        INFO((*want)[k].name);
        std::vector<double> expected;
        for (float v : valuesOf((*want)[k].tensor))
          expected.push_back(v);
        // bf16 results: one rounding each, summed in another order.
        checkClose(valuesOf((*got)[k].tensor), expected, 2e-2);
      }
      // g holds bf16 values, as the plan's cast of the bf16 dw makes them.
      for (float v : valuesOf((*got)[2].tensor))
        CHECK(toFloat(toBFloat16(v)) == v);
    }
    // Weights of 1 + 2^-8, half-way between two bf16 values: the plan's
    // cast rounds them to 1 (to even), so with x and dy of ones every
    // result is a count (9 to 72 products), exact in bf16. Computed from
    // the f32 master weight without that rounding, y would be 36.14...
    // (bf16: 36.25) instead of 36.
    ChannelsLastTrainingConvs halfway(
        /*filterIsState=*/true,
        std::vector<float>(8 * 4 * 3 * 3, 1.0f + 0x1p-8f));
    Result<CpuExecutor> exact =
        CpuExecutor::create(halfway.b.plan, "fast halfway");
    REQUIRE(exact);
    HostTensor ones = tensorOf({1, 5, 5, 4}, std::vector<float>(100, 1.0f)),
               dyOnes = tensorOf({1, 3, 3, 8}, std::vector<float>(72, 1.0f));
    Result<std::vector<NamedTensor>> counts =
        exact->run({{"x", ones.view()}, {"dy", dyOnes.view()}});
    REQUIRE(counts);
    for (float v : valuesOf((*counts)[0].tensor))
      CHECK(v == 36.0f);
    for (float v : valuesOf((*counts)[1].tensor)) {
      CHECK(v == std::round(v));
      CHECK(v >= 8.0f);
    }
  }

  // A filter that is an input may change while the step runs (its bytes
  // are in the arena): the plan's calls make the filter.
  ChannelsLastTrainingConvs fromInput(/*filterIsState=*/false);
  Result<CpuExecutor> plain = CpuExecutor::create(fromInput.b.plan, "input");
  REQUIRE(plain);
  for (size_t call : {2, 3})
    CHECK_THAT(plain->implementationOf(call), Catch::StartsWith("own:"));
  // (The gradient's chain does not depend on where the filter comes from.)
  CHECK_THAT(plain->implementationOf(7), Catch::StartsWith("skipped:"));
}

TEST_CASE("the elementwise, cast and transpose kernels give the same bits on "
          "any number of threads",
          "[executor]") {
  // Large enough to be split over the threads (CPU/Parallel.h), with blocks
  // (20,001 elements, b broadcast along them) that the ranges cut anywhere.
  PlanBuilder b;
  const int64_t rows = 7, cols = 20001;
  uint32_t x = b.arena(DType::F32, {rows, cols}, "x");
  uint32_t bias = b.weight("b", {rows, 1}, ramp(rows, 5));
  uint32_t s = b.arena(DType::F32, {rows, cols}, "s");
  uint32_t d = b.arena(DType::F32, {rows, cols}, "d");
  uint32_t h = b.arena(DType::BF16, {rows, cols}, "h");
  b.input("x", x);
  b.output("d", d);
  b.output("h", h);
  b.call("kernel.elementwise", {x}, {s}, {{"fn", std::string("sin")}}, "sin");
  b.call("kernel.elementwise", {s, bias}, {d}, {{"fn", std::string("sub")}},
         "sub");
  b.call("kernel.cast", {d}, {h}, {}, "cast");
  // Transposes split over the threads: one 2-D transpose (bands of rows),
  // and a batch of them ([7, 3, 6667] -> [6667, 3, 7]: the batch loop).
  uint32_t t2 = b.arena(DType::F32, {cols, rows}, "t2");
  uint32_t d3 = b.arena(DType::F32, {rows, 3, cols / 3}, "d3");
  uint32_t t3 = b.arena(DType::F32, {cols / 3, 3, rows}, "t3");
  b.output("t2", t2);
  b.output("t3", t3);
  b.call("kernel.transpose", {d}, {t2}, {{"perm", std::vector<int64_t>{1, 0}}},
         "transpose");
  b.call("kernel.copy", {d}, {d3}, {}, "reshape");
  b.call("kernel.transpose", {d3}, {t3},
         {{"perm", std::vector<int64_t>{2, 1, 0}}}, "transpose3");
  HostTensor in = tensorOf({rows, cols}, ramp(rows * cols, 7));
  std::vector<std::vector<NamedTensor>> results;
  for (int threads : {1, 2, 3}) {
    CpuExecutorOptions options;
    options.kernels = cpu::CpuKernels::Reference;
    options.threads = threads;
    Result<CpuExecutor> exec = CpuExecutor::create(b.plan, "plan", options);
    REQUIRE(exec);
    Result<std::vector<NamedTensor>> out = exec->run({{"x", in.view()}});
    REQUIRE(out);
    results.push_back(out.take());
  }
  for (size_t r = 1; r < results.size(); ++r)
    for (size_t o = 0; o < 4; ++o) {
      const HostTensor &want = results[0][o].tensor,
                       &got = results[r][o].tensor;
      REQUIRE(got.byteCount() == want.byteCount());
      CHECK(std::memcmp(got.data(), want.data(), want.byteCount()) == 0);
    }
  // And they are the values: d = sin(x) - b[row].
  std::vector<float> dv = valuesOf(results[0][0].tensor), xv = valuesOf(in),
                     bv = ramp(rows, 5);
  for (int64_t i = 0; i < rows * cols; i += 997)
    CHECK(std::fabs(dv[i] - (std::sin(xv[i]) - bv[i / cols])) <= 1e-5f);
  std::vector<float> t2v = valuesOf(results[0][2].tensor),
                     t3v = valuesOf(results[0][3].tensor);
  for (int64_t i = 0; i < rows * cols; i += 991) {
    int64_t row = i / cols, col = i % cols;
    CHECK(t2v[col * rows + row] == dv[i]);
    // d viewed as [7, 3, 6667]: (row, col / 6667, col % 6667).
    int64_t mid = col / (cols / 3), last = col % (cols / 3);
    CHECK(t3v[(last * 3 + mid) * rows + row] == dv[i]);
  }
  CpuExecutorOptions negative;
  negative.threads = -1;
  CHECK_THAT(CpuExecutor::create(b.plan, "plan", negative).message(),
             Catch::Contains("threads must be >= 0"));
}

TEST_CASE("executors on one plan run concurrently and share its prepared "
          "weights",
          "[executor][concurrent]") {
  // The serving pattern (docs/runtime.md, "Serving from one process"): one
  // loaded plan, one executor per thread. A channels-last convolution whose
  // filter the plan transposes from a weight (made once at load), a matmul
  // against a weight (reordered by oneDNN), relu and softmax.
  PlanBuilder b;
  uint32_t x = b.arena(DType::F32, {2, 6, 6, 4}, "x");
  uint32_t w = b.weight("w", {8, 4, 3, 3}, ramp(8 * 4 * 3 * 3, 11));
  uint32_t c = b.arena(DType::F32, {2, 6, 6, 8}, "c");
  uint32_t r = b.arena(DType::F32, {2, 6, 6, 8}, "r");
  uint32_t m = b.weight("m", {8, 40}, ramp(8 * 40, 12));
  uint32_t p = b.arena(DType::F32, {2, 6, 6, 40}, "p");
  uint32_t y = b.arena(DType::F32, {2, 6, 6, 40}, "y");
  b.input("x", x);
  b.output("y", y);
  b.channelsLastConv(x, w, c, /*pad=*/1);
  b.call("kernel.elementwise", {c}, {r}, {{"fn", std::string("relu")}}, "relu");
  b.call("cublaslt.matmul", {r, m}, {p},
         {{"has_c", int64_t(0)},
          {"has_bias", int64_t(0)},
          {"compute_type", int64_t(DType::F32)}},
         "matmul");
  b.call("cudnn.softmax", {p}, {y}, {{"axis", int64_t(-1)}}, "softmax");
  // As plans of format 1.7 have it: the transpose a call at load, its
  // filter a buffer made at load (shared by the executors, then dropped:
  // the convolution reads the channels-first weight).
  const bool atLoad = GENERATE(false, true);
  INFO("transpose at load: " << atLoad);
  if (atLoad) {
    b.plan.calls[0].atLoad = true;
    b.plan.buffers[b.plan.calls[0].results[0]].storage = BufferStorage::Derived;
  }

  constexpr int kThreads = 4, kInputs = 4, kRuns = 12;
  std::vector<HostTensor> inputs;
  for (int i = 0; i < kInputs; ++i)
    inputs.push_back(tensorOf({2, 6, 6, 4}, ramp(2 * 6 * 6 * 4, 20 + i)));
  // One OpenMP thread per executor: results then do not depend on how
  // oneDNN splits the work, so every thread must reproduce them exactly.
  CpuExecutorOptions options;
  options.threads = 1;

  const size_t before = preparedWeightBytes();
  std::vector<std::vector<float>> want;
  size_t prepared = 0;
  {
    Result<CpuExecutor> single = CpuExecutor::create(b.plan, "one", options);
    REQUIRE(single);
    prepared = preparedWeightBytes();
    for (const HostTensor &in : inputs) {
      Result<std::vector<NamedTensor>> out = single->run({{"x", in.view()}});
      INFO((out ? "" : out.status().message()));
      REQUIRE(out);
      want.push_back(valuesOf((*out)[0].tensor));
    }
  }
  CHECK(preparedWeightBytes() == before); // freed with the last executor
  if (cpu::haveFastKernels())
    CHECK(prepared > before); // the transposed filter, oneDNN's layouts

  std::vector<CpuExecutor> executors;
  for (int t = 0; t < kThreads; ++t) {
    Result<CpuExecutor> exec = CpuExecutor::create(b.plan, "serving", options);
    REQUIRE(exec);
    executors.push_back(exec.take());
    if (cpu::haveFastKernels()) {
      CHECK_THAT(executors.back().implementationOf(1),
                 Catch::StartsWith("onednn:"));
      CHECK_THAT(executors.back().implementationOf(3),
                 Catch::StartsWith("onednn:"));
    }
    // Made once: the second and later executors add no prepared weights.
    CHECK(preparedWeightBytes() == prepared);
  }
  // Catch's assertions are not thread-safe: the threads record, the test
  // checks after joining.
  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < kRuns; ++run) {
        int i = (t + run) % kInputs;
        Result<std::vector<NamedTensor>> out =
            executors[t].run({{"x", inputs[i].view()}});
        if (!out) {
          ++failures[t];
          continue;
        }
        // (Not valuesOf: it asserts.)
        const HostTensor &y = (*out)[0].tensor;
        mismatches[t] +=
            y.dtype() != DType::F32 ||
            std::vector<float>(y.as<float>(),
                               y.as<float>() + y.numElements()) != want[i];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(failures[t] == 0);
    CHECK(mismatches[t] == 0);
  }
  executors.clear();
  CHECK(preparedWeightBytes() == before);
}

TEST_CASE("calls at load run once, when the executor is made, and their "
          "buffers are shared",
          "[executor]") {
  // y = x + neg(transpose(w)): the transpose and the neg run at load (a
  // chain: the neg reads what the transpose made), the add on every run.
  std::vector<float> w = ramp(12, 7), x = ramp(12, 8);
  PlanBuilder b;
  uint32_t xid = b.arena(DType::F32, {4, 3}, "x");
  uint32_t wid = b.weight("w", {3, 4}, w);
  uint32_t wT = b.derived(DType::F32, {4, 3}, "wT");
  uint32_t negT = b.derived(DType::F32, {4, 3}, "negT");
  uint32_t y = b.arena(DType::F32, {4, 3}, "y");
  b.input("x", xid);
  b.output("y", y);
  b.call("kernel.transpose", {wid}, {wT},
         {{"perm", std::vector<int64_t>{1, 0}}}, "w_t")
      .atLoad = true;
  b.call("kernel.elementwise", {wT}, {negT}, {{"fn", std::string("neg")}},
         "w_neg")
      .atLoad = true;
  b.call("kernel.elementwise", {xid, negT}, {y}, {{"fn", std::string("add")}},
         "add");
  REQUIRE(b.plan.requiredFormatMinor() == 7);

  size_t before = preparedWeightBytes();
  CpuExecutor exec = makeExecutor(b.plan);
  size_t afterOne = preparedWeightBytes();
  // The two buffers made at load, 64-byte aligned.
  CHECK(afterOne >= before + 128);
  CpuExecutor other = makeExecutor(b.plan);
  CHECK(preparedWeightBytes() == afterOne); // found, not made again
  CHECK(exec.implementationOf(0) == "skipped: ran once, at load");
  CHECK(exec.implementationOf(1) == "skipped: ran once, at load");
  CHECK(exec.implementationOf(2).rfind("skipped", 0) == std::string::npos);

  std::vector<double> expected(12);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j)
      expected[i * 3 + j] = double(x[i * 3 + j]) - w[j * 4 + i];
  HostTensor input = tensorOf({4, 3}, x);
  exec.setTiming(true);
  for (CpuExecutor *e : {&exec, &other, &exec}) {
    auto out = e->run({{"x", input.view()}});
    INFO(out.message());
    REQUIRE(out);
    checkClose(valuesOf((*out)[0].tensor), expected);
  }
  // A run is one call: the timing table counts only it.
  std::vector<CallTimes::KindRow> rows = exec.callTimes().byKind(exec.plan());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].kind == "kernel.elementwise");
  CHECK(rows[0].calls == 1);

  // A call at load that fails stops create with its name and "at load".
  Plan bad = b.plan;
  bad.calls[0].attributes = {{"perm", std::vector<int64_t>{0, 0}}};
  Result<CpuExecutor> refused = CpuExecutor::create(bad, "bad.mpplan");
  REQUIRE(!refused);
  CHECK(refused.message().find("call #0 (kernel.transpose at node 'w_t') at "
                               "load: ") != std::string::npos);
}
