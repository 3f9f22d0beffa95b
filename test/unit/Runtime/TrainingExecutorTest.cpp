// Unit tests of State buffers in the CPU executor (mp/Runtime/Executor.h,
// plan format 1.1): a state keeps its value across runs and is updated in
// place by calls; readState / writeState / resetState; planWithState gives a
// checkpoint that resumes through savePlan / loadPlan; copyStateIntoWeights
// puts the state into another plan's weights by name. The plans are built by
// hand from existing calls (kernel.elementwise, kernel.reduce,
// cublaslt.matmul), among them a linear regression trained by SGD whose
// every step is checked against a double reference.
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/PlanBuilding.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;

namespace {

/// Builds a plan: arena buffers at multiples of 256; weights and states f32.
struct Builder {
  Plan plan;

  uint32_t arena(DType dtype, Shape shape, std::string name) {
    return appendArenaBuffer(plan, dtype, std::move(shape), std::move(name));
  }
  uint32_t weightOf(BufferStorage storage, const std::string &weightName,
                    std::string bufferName, Shape shape,
                    const std::vector<float> &values) {
    return appendWeightBuffer(plan, storage, weightName, std::move(bufferName),
                              std::move(shape), values);
  }
  uint32_t weight(const std::string &name, Shape shape,
                  const std::vector<float> &values) {
    return weightOf(BufferStorage::Weight, name, name, std::move(shape),
                    values);
  }
  uint32_t state(const std::string &name, Shape shape,
                 const std::vector<float> &values,
                 const std::string &weightName = "") {
    return weightOf(BufferStorage::State,
                    weightName.empty() ? name + ".init" : weightName, name,
                    std::move(shape), values);
  }
  void input(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.inputs.push_back({name, id, b.dtype, b.shape});
  }
  void output(const std::string &name, uint32_t id) {
    const PlanBuffer &b = plan.buffers[id];
    plan.outputs.push_back({name, id, b.dtype, b.shape});
  }
  void call(std::string kind, std::vector<uint32_t> operands,
            std::vector<uint32_t> results, std::vector<PlanAttr> attrs) {
    PlanCall c;
    c.kind = std::move(kind);
    c.operands = std::move(operands);
    c.results = std::move(results);
    c.attributes = std::move(attrs);
    plan.calls.push_back(std::move(c));
  }
  void elementwise(const char *fn, std::vector<uint32_t> operands,
                   uint32_t result) {
    call("kernel.elementwise", std::move(operands), {result},
         {{"fn", std::string(fn)}});
  }
};

HostTensor tensorOf(Shape shape, const std::vector<float> &values) {
  HostTensor t(DType::F32, std::move(shape));
  REQUIRE(static_cast<size_t>(t.numElements()) == values.size());
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> valuesOf(const HostTensor &t) {
  REQUIRE(t.dtype() == DType::F32);
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numElements());
}

std::vector<float> weightValues(const PlanWeight &w) {
  REQUIRE(w.dtype == DType::F32);
  return std::vector<float>(w.as<float>(), w.as<float>() + w.numElements());
}

CpuExecutor makeExecutor(Plan plan) {
  Result<CpuExecutor> exec = CpuExecutor::create(std::move(plan), "t.mpplan");
  INFO(exec.message());
  REQUIRE(exec);
  return exec.take();
}

/// acc (state, f32 [4], initial weight 'acc.init' = [1, 2, 3, 4]) += x each
/// run (kernel.elementwise add, in place); outputs: "total" bound to the
/// state itself and "doubled" = acc + acc, an arena buffer after the update.
Plan accumulatorPlan() {
  Builder b;
  b.plan.modelName = "accumulator";
  uint32_t x = b.arena(DType::F32, {4}, "x");
  uint32_t acc = b.state("acc", {4}, {1, 2, 3, 4});
  uint32_t doubled = b.arena(DType::F32, {4}, "doubled");
  b.input("x", x);
  b.output("total", acc);
  b.output("doubled", doubled);
  b.elementwise("add", {acc, x}, acc);
  b.elementwise("add", {acc, acc}, doubled);
  return b.plan;
}

} // namespace

TEST_CASE("a state keeps its value across runs and is updated in place",
          "[executor][training]") {
  const Plan plan = accumulatorPlan();
  CpuExecutor exec = makeExecutor(plan);
  CHECK(exec.stateSize() == 16);
  HostTensor ones = tensorOf({4}, {1, 1, 1, 1});
  for (int run = 1; run <= 3; ++run) {
    INFO("run " << run);
    Result<std::vector<NamedTensor>> out = exec.run({{"x", ones.view()}});
    INFO(out.message());
    REQUIRE(out);
    const float r = static_cast<float>(run);
    CHECK(valuesOf((*out)[0].tensor) ==
          std::vector<float>{1 + r, 2 + r, 3 + r, 4 + r});
    CHECK(valuesOf((*out)[1].tensor) ==
          std::vector<float>{2 * (1 + r), 2 * (2 + r), 2 * (3 + r),
                             2 * (4 + r)});
  }
  // The plan's weights are not touched: the state has memory of its own.
  CHECK(weightValues(exec.plan().weights[0]) ==
        std::vector<float>{1, 2, 3, 4});

  SECTION("readState copies the state out, by name") {
    Result<std::vector<NamedTensor>> state = exec.readState();
    REQUIRE(state);
    REQUIRE(state->size() == 1);
    CHECK((*state)[0].name == "acc");
    CHECK((*state)[0].tensor.shape() == Shape{4});
    CHECK(valuesOf((*state)[0].tensor) == std::vector<float>{4, 5, 6, 7});
    // A copy: running again does not change it.
    REQUIRE(exec.run({{"x", ones.view()}}));
    CHECK(valuesOf((*state)[0].tensor) == std::vector<float>{4, 5, 6, 7});
  }
  SECTION("resetState starts again from the initial weight") {
    REQUIRE(exec.resetState().isOk());
    CHECK(valuesOf((*exec.readState())[0].tensor) ==
          std::vector<float>{1, 2, 3, 4});
    Result<std::vector<NamedTensor>> out = exec.run({{"x", ones.view()}});
    REQUIRE(out);
    CHECK(valuesOf((*out)[0].tensor) == std::vector<float>{2, 3, 4, 5});
  }
  SECTION("writeState sets it, with its dtype and shape checked") {
    HostTensor v = tensorOf({4}, {10, 20, 30, 40});
    REQUIRE(exec.writeState("acc", v.view()).isOk());
    Result<std::vector<NamedTensor>> out = exec.run({{"x", ones.view()}});
    REQUIRE(out);
    CHECK(valuesOf((*out)[0].tensor) == std::vector<float>{11, 21, 31, 41});

    HostTensor wrongShape = tensorOf({2, 2}, {1, 2, 3, 4});
    Status s = exec.writeState("acc", wrongShape.view());
    REQUIRE(!s);
    CHECK(s.message() == "state 'acc': expected f32 [4], got f32 [2, 2]");
    HostTensor wrongType(DType::F64, {4});
    s = exec.writeState("acc", wrongType.view());
    REQUIRE(!s);
    CHECK(s.message() == "state 'acc': expected f32 [4], got f64 [4]");
    s = exec.writeState("accumulator", v.view());
    REQUIRE(!s);
    CHECK(s.message() ==
          "no state named 'accumulator' (the plan's states: acc)");
    // Failed writes change nothing.
    CHECK(valuesOf((*exec.readState())[0].tensor) ==
          std::vector<float>{11, 21, 31, 41});
  }
  SECTION("executors of one plan have separate state") {
    CpuExecutor other = makeExecutor(plan);
    Result<std::vector<NamedTensor>> out = other.run({{"x", ones.view()}});
    REQUIRE(out);
    CHECK(valuesOf((*out)[0].tensor) == std::vector<float>{2, 3, 4, 5});
    CHECK(valuesOf((*exec.readState())[0].tensor) ==
          std::vector<float>{4, 5, 6, 7});
  }
  SECTION("a moved executor keeps its state") {
    CpuExecutor moved = std::move(exec);
    Result<std::vector<NamedTensor>> out = moved.run({{"x", ones.view()}});
    REQUIRE(out);
    CHECK(valuesOf((*out)[0].tensor) == std::vector<float>{5, 6, 7, 8});
  }
}

TEST_CASE("planWithState makes a checkpoint that resumes",
          "[executor][training]") {
  TempDir dir;
  CpuExecutor exec = makeExecutor(accumulatorPlan());
  HostTensor ones = tensorOf({4}, {1, 1, 1, 1});
  REQUIRE(exec.run({{"x", ones.view()}}));
  REQUIRE(exec.run({{"x", ones.view()}}));

  Result<Plan> checkpoint = exec.planWithState();
  INFO(checkpoint.message());
  REQUIRE(checkpoint);
  // The state's initial weight holds the current value (an owned copy).
  REQUIRE(checkpoint->weights.size() == 1);
  CHECK(checkpoint->weights[0].name == "acc.init");
  CHECK(weightValues(checkpoint->weights[0]) == std::vector<float>{3, 4, 5, 6});
  CHECK(weightValues(exec.plan().weights[0]) == std::vector<float>{1, 2, 3, 4});
  REQUIRE(exec.run({{"x", ones.view()}}));
  CHECK(weightValues(checkpoint->weights[0]) == std::vector<float>{3, 4, 5, 6});

  const std::string path = dir.file("checkpoint.mpplan");
  REQUIRE(savePlan(*checkpoint, path).isOk());
  Result<Plan> loaded = loadPlan(path);
  INFO(loaded.message());
  REQUIRE(loaded);
  CHECK(loaded->formatMinor == 1);
  CHECK(loaded->buffers[1].storage == BufferStorage::State);
  CpuExecutor resumed = makeExecutor(loaded.take());
  Result<std::vector<NamedTensor>> out = resumed.run({{"x", ones.view()}});
  REQUIRE(out);
  CHECK(valuesOf((*out)[0].tensor) == std::vector<float>{4, 5, 6, 7});
  // resetState goes back to the checkpoint's value, not the first plan's.
  REQUIRE(resumed.resetState().isOk());
  CHECK(valuesOf((*resumed.readState())[0].tensor) ==
        std::vector<float>{3, 4, 5, 6});
}

TEST_CASE("a state may be a reshaped view of its weight, an operand of "
          "several calls and an input",
          "[executor][training]") {
  Builder b;
  uint32_t x = b.arena(DType::F32, {2, 2}, "x");
  uint32_t m = b.state("m", {2, 2}, {1, 2, 3, 4});
  b.plan.weights[0].shape = {4}; // the weight is [4], the buffer [2, 2]
  uint32_t set = b.state("set", {2, 2}, {0, 0, 0, 0});
  uint32_t y = b.arena(DType::F32, {2, 2}, "y");
  b.input("x", x);
  b.input("set", set); // written by every run
  b.output("y", y);
  b.elementwise("mul", {m, x}, m); // m *= x
  b.elementwise("add", {m, set}, y);
  CpuExecutor exec = makeExecutor(b.plan);
  HostTensor twos = tensorOf({2, 2}, {2, 2, 2, 2});
  HostTensor tens = tensorOf({2, 2}, {10, 10, 10, 10});
  for (float scale : {2.0f, 4.0f}) {
    Result<std::vector<NamedTensor>> out =
        exec.run({{"x", twos.view()}, {"set", tens.view()}});
    REQUIRE(out);
    CHECK(valuesOf((*out)[0].tensor) ==
          std::vector<float>{10 + scale, 10 + 2 * scale, 10 + 3 * scale,
                             10 + 4 * scale});
  }
  Result<Plan> checkpoint = exec.planWithState();
  REQUIRE(checkpoint);
  CHECK(checkpoint->weights[0].shape == Shape{4});
  CHECK(weightValues(checkpoint->weights[0]) ==
        std::vector<float>{4, 8, 12, 16});
  CHECK(weightValues(checkpoint->weights[1]) ==
        std::vector<float>{10, 10, 10, 10});
  Result<std::vector<NamedTensor>> state = exec.readState();
  REQUIRE(state);
  REQUIRE(state->size() == 2);
  CHECK((*state)[0].name == "m");
  CHECK((*state)[0].tensor.shape() == Shape{2, 2});
  CHECK((*state)[1].name == "set");
}

TEST_CASE("copyStateIntoWeights puts the state into weights of the same name",
          "[executor][training]") {
  Builder b;
  uint32_t x = b.arena(DType::F32, {2}, "x");
  uint32_t w = b.state("w", {2}, {1, 2}, "w.init");
  uint32_t unnamed = b.state("", {3}, {7, 8, 9}, "bias");
  uint32_t idx = static_cast<uint32_t>(b.plan.buffers.size());
  {
    // An integer state: a step count.
    int64_t steps = 5;
    b.plan.weights.push_back(
        PlanWeight::copyOf("steps", DType::I64, {1}, &steps, 8));
    PlanBuffer s;
    s.id = idx;
    s.dtype = DType::I64;
    s.shape = {1};
    s.storage = BufferStorage::State;
    s.weight = static_cast<uint32_t>(b.plan.weights.size() - 1);
    b.plan.buffers.push_back(s);
  }
  b.input("x", x);
  b.elementwise("add", {w, x}, w);
  (void)unnamed;
  CpuExecutor exec = makeExecutor(b.plan);
  HostTensor inc = tensorOf({2}, {0.5f, 0.25f});
  REQUIRE(exec.run({{"x", inc.view()}}));
  Result<std::vector<NamedTensor>> state = exec.readState();
  REQUIRE(state);
  REQUIRE(state->size() == 3);
  CHECK((*state)[0].name == "w");
  CHECK((*state)[1].name == "bias"); // no buffer name: the weight's
  CHECK((*state)[2].name == "steps");

  // An inference plan: weights "w" (by the state's name, f32), "bias" (by
  // the initial weight's name, as f16), "steps" (i64) and an unrelated one.
  Builder inf;
  inf.weight("other", {2}, {5, 6});
  inf.weight("w", {2}, {0, 0});
  const uint16_t zeros[3] = {0, 0, 0};
  inf.plan.weights.push_back(
      PlanWeight::copyOf("bias", DType::F16, {3}, zeros, sizeof zeros));
  int64_t zero = 0;
  inf.plan.weights.push_back(
      PlanWeight::copyOf("steps", DType::I64, {1}, &zero, 8));
  Plan target = inf.plan;
  size_t copied = 99;
  Status s = exec.copyStateIntoWeights(target, &copied);
  INFO(s.message());
  REQUIRE(s);
  CHECK(copied == 3);
  CHECK(weightValues(target.weights[0]) == std::vector<float>{5, 6});
  CHECK(weightValues(target.weights[1]) == std::vector<float>{1.5f, 2.25f});
  const Half *h = target.weights[2].as<Half>();
  CHECK(toFloat(h[0]) == 7.0f);
  CHECK(toFloat(h[2]) == 9.0f);
  CHECK(*target.weights[3].as<int64_t>() == 5);
  // New owned copies: the inference plan's original weights are unchanged.
  CHECK(weightValues(inf.plan.weights[1]) == std::vector<float>{0, 0});
  // Later runs do not change the copies.
  REQUIRE(exec.run({{"x", inc.view()}}));
  CHECK(weightValues(target.weights[1]) == std::vector<float>{1.5f, 2.25f});

  SECTION("the initial weight's name matches too") {
    Plan byWeight;
    byWeight.weights.push_back(PlanWeight::copyOf(
        "w.init", DType::F32, {2}, target.weights[0].data, 8));
    REQUIRE(exec.copyStateIntoWeights(byWeight).isOk());
    CHECK(weightValues(byWeight.weights[0]) == std::vector<float>{2, 2.5f});
  }
  SECTION("no matching name: nothing is copied") {
    Plan none;
    none.weights.push_back(inf.plan.weights[0]);
    REQUIRE(exec.copyStateIntoWeights(none, &copied).isOk());
    CHECK(copied == 0);
  }
  SECTION("errors leave the target unchanged") {
    Plan bad = inf.plan;
    bad.weights[1] = PlanWeight::copyOf("w", DType::F32, {1, 3},
                                        std::vector<float>(3).data(), 12);
    Status e = exec.copyStateIntoWeights(bad, &copied);
    REQUIRE(!e);
    CHECK(e.message() == "weight 'w' (f32 [1, 3]) cannot take the value of "
                         "state 'w' (f32 [2]): the shapes differ");
    CHECK(copied == 0);
    CHECK(bad.weights[2].data == inf.plan.weights[2].data);

    Plan cast = inf.plan;
    cast.weights[3] = PlanWeight::copyOf("steps", DType::F32, {1},
                                         std::vector<float>(1).data(), 4);
    e = exec.copyStateIntoWeights(cast);
    REQUIRE(!e);
    CHECK(e.message() == "weight 'steps' (f32 [1]) cannot take the value of "
                         "state 'steps' (i64 [1]): only float states are "
                         "cast to another dtype");
    CHECK(cast.weights[1].data == inf.plan.weights[1].data);
  }
}

namespace {

/// Linear regression trained by SGD, all in the plan:
///   pred = x @ w                         cublaslt.matmul
///   diff = pred - y; loss = mean(diff^2) kernel.elementwise, kernel.reduce
///   grad = (2 / B) x^T @ diff            cublaslt.matmul (trans_a, alpha)
///   w -= lr * grad                       kernel.elementwise mul, sub
/// x [B, D], y [B, 1], w a state [D, 1] starting at 0.
constexpr int kB = 4, kD = 3;
constexpr float kLr = 0.25f;

Plan sgdPlan() {
  Builder b;
  b.plan.modelName = "linear-sgd";
  uint32_t x = b.arena(DType::F32, {kB, kD}, "x");
  uint32_t y = b.arena(DType::F32, {kB, 1}, "y");
  uint32_t w = b.state("w", {kD, 1}, std::vector<float>(kD, 0.0f));
  uint32_t lr = b.weight("lr", {}, {kLr});
  uint32_t pred = b.arena(DType::F32, {kB, 1}, "pred");
  uint32_t diff = b.arena(DType::F32, {kB, 1}, "diff");
  uint32_t sq = b.arena(DType::F32, {kB, 1}, "sq");
  uint32_t loss = b.arena(DType::F32, {}, "loss");
  uint32_t grad = b.arena(DType::F32, {kD, 1}, "grad");
  uint32_t step = b.arena(DType::F32, {kD, 1}, "step");
  b.input("x", x);
  b.input("y", y);
  b.output("loss", loss);
  b.output("pred", pred);
  auto matmul = [&](uint32_t a, uint32_t bb, uint32_t d, int64_t transA,
                    double alpha) {
    b.call("cublaslt.matmul", {a, bb}, {d},
           {{"has_c", int64_t(0)},
            {"has_bias", int64_t(0)},
            {"compute_type", int64_t(1)},
            {"trans_a", transA},
            {"alpha", alpha}});
  };
  matmul(x, w, pred, 0, 1.0);
  b.elementwise("sub", {pred, y}, diff);
  b.elementwise("mul", {diff, diff}, sq);
  b.call("kernel.reduce", {sq}, {loss},
         {{"fn", std::string("mean")}, {"axes", std::vector<int64_t>{0, 1}}});
  matmul(x, diff, grad, 1, 2.0 / kB);
  b.elementwise("mul", {grad, lr}, step);
  b.elementwise("sub", {w, step}, w);
  PlanTrainingInfo t;
  t.dataInput = "x";
  t.labelInput = "y";
  t.lossOutput = "loss";
  t.predictionOutput = "pred";
  t.task = "regression";
  b.plan.training = t;
  return b.plan;
}

} // namespace

TEST_CASE("linear regression trained by SGD in the plan",
          "[executor][training]") {
  const Plan plan = sgdPlan();
  CpuExecutor exec = makeExecutor(plan);
  const double trueW[kD] = {0.5, -1.25, 2.0};
  Rng rng(42);
  double w[kD] = {0, 0, 0}; // the double reference
  double firstLoss = -1, lastLoss = -1;
  for (int stepIndex = 0; stepIndex < 60; ++stepIndex) {
    std::vector<float> xs(kB * kD), ys(kB);
    for (int i = 0; i < kB; ++i) {
      double t = 0;
      for (int k = 0; k < kD; ++k) {
        xs[i * kD + k] = static_cast<float>(rng.uniform(-1, 1));
        t += xs[i * kD + k] * trueW[k];
      }
      ys[i] = static_cast<float>(t);
    }
    // Reference step.
    double diff[kB], loss = 0;
    for (int i = 0; i < kB; ++i) {
      double p = 0;
      for (int k = 0; k < kD; ++k)
        p += double(xs[i * kD + k]) * w[k];
      diff[i] = p - ys[i];
      loss += diff[i] * diff[i] / kB;
    }
    for (int k = 0; k < kD; ++k) {
      double g = 0;
      for (int i = 0; i < kB; ++i)
        g += double(xs[i * kD + k]) * diff[i];
      w[k] -= double(kLr) * (2.0 / kB) * g;
    }
    HostTensor xt = tensorOf({kB, kD}, xs), yt = tensorOf({kB, 1}, ys);
    Result<std::vector<NamedTensor>> out =
        exec.run({{"x", xt.view()}, {"y", yt.view()}});
    INFO("step " << stepIndex << ": " << out.message());
    REQUIRE(out);
    double got = (*out)[0].tensor.as<float>()[0];
    CHECK(std::abs(got - loss) <= 1e-4 * (1 + loss));
    if (stepIndex == 0)
      firstLoss = got;
    lastLoss = got;
    std::vector<float> state = valuesOf((*exec.readState())[0].tensor);
    for (int k = 0; k < kD; ++k)
      CHECK(std::abs(state[k] - w[k]) <= 1e-4);
  }
  CHECK(lastLoss < firstLoss / 100);
  std::vector<float> learned = valuesOf((*exec.readState())[0].tensor);
  for (int k = 0; k < kD; ++k)
    CHECK(std::abs(learned[k] - trueW[k]) < 0.05);

  // The trained weight goes into an inference plan y = x @ w.
  Builder inf;
  uint32_t x = inf.arena(DType::F32, {1, kD}, "x");
  uint32_t wid = inf.weight("w", {kD, 1}, std::vector<float>(kD, 0.0f));
  uint32_t y = inf.arena(DType::F32, {1, 1}, "y");
  inf.input("x", x);
  inf.output("y", y);
  inf.call("cublaslt.matmul", {x, wid}, {y},
           {{"has_c", int64_t(0)}, {"has_bias", int64_t(0)},
            {"compute_type", int64_t(1)}});
  Plan target = inf.plan;
  REQUIRE(exec.copyStateIntoWeights(target).isOk());
  CpuExecutor infer = makeExecutor(target);
  HostTensor probe = tensorOf({1, kD}, {1, 1, 1});
  Result<std::vector<NamedTensor>> out = infer.run({{"x", probe.view()}});
  REQUIRE(out);
  CHECK(std::abs((*out)[0].tensor.as<float>()[0] -
                 (learned[0] + learned[1] + learned[2])) < 1e-5);
}

TEST_CASE("create() checks state buffers like the loader",
          "[executor][training]") {
  Plan plan = accumulatorPlan();
  plan.buffers[1].shape = {5};
  Result<CpuExecutor> exec = CpuExecutor::create(plan, "t.mpplan");
  REQUIRE(!exec);
  CHECK(exec.message() ==
        "t.mpplan: buffer 1 ('acc') (f32 [5]) does not match its weight #0 "
        "'acc.init' (f32 [4]): a state buffer has its initial weight's dtype "
        "and number of elements");
}
