// Tests of fused elementwise programs: the program text
// (mp/Runtime/FusedProgram.h) and the CPU kernel behind
// "kernel.fused_elementwise" (cpu::fusedElementwise).
//
// The kernel's contract is the unfused calls' in f32: every step computes
// as cpu::elementwise does on f32 data, and y is rounded once. So its result
// is checked against that computed here step by step (each input cast to
// f32, each step an f32 elementwise call, the last value cast to y's dtype):
// f32 within 1e-6 relative, 16-bit values exactly the one rounding of it
// (or its neighbour when that value lies within the f32 bound of a
// midpoint).
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/FusedProgram.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using cpu::ElementwiseFn;

namespace {

FusedProgram parse(const std::string &text, size_t inputs) {
  std::string why;
  std::optional<FusedProgram> p = parseFusedProgram(text, inputs, why);
  INFO(text << ": " << why);
  REQUIRE(p);
  return *p;
}

std::string parseError(const std::string &text, size_t inputs) {
  std::string why;
  std::optional<FusedProgram> p = parseFusedProgram(text, inputs, why);
  CHECK(!p);
  return why;
}

HostTensor toF32(const TensorView &t) {
  HostTensor r(DType::F32, t.shape);
  REQUIRE(cpu::cast(t, r.view()).isOk());
  return r;
}

/// The program computed step by step with f32 elementwise calls, then cast
/// to `dtype`.
HostTensor stepByStep(const FusedProgram &program,
                      const std::vector<TensorView> &inputs, const Shape &shape,
                      DType dtype) {
  std::vector<HostTensor> in, steps;
  for (const TensorView &t : inputs)
    in.push_back(toF32(t));
  for (const FusedStep &step : program.steps) {
    std::vector<TensorView> args;
    for (const FusedOperand &a : step.args)
      args.push_back(a.isStep ? steps[a.index].view() : in[a.index].view());
    HostTensor out(DType::F32, shape);
    REQUIRE(cpu::elementwise(step.fn, args, out.view(),
                             cpu::ElementwiseParams{step.alpha, step.beta})
                .isOk());
    steps.push_back(std::move(out));
  }
  HostTensor y(dtype, shape);
  REQUIRE(cpu::cast(steps.back().view(), y.view()).isOk());
  return y;
}

HostTensor runFused(const FusedProgram &program,
                    const std::vector<TensorView> &inputs, const Shape &shape,
                    DType dtype) {
  HostTensor y(dtype, shape);
  Status s = cpu::fusedElementwise(program, inputs, y.view());
  INFO(s.message());
  REQUIRE(s.isOk());
  return y;
}

/// The f32 reference's values rounded once to y's dtype, within 1e-6.
void expectSameAsSteps(const HostTensor &got, const HostTensor &ref) {
  expectClose(got, values(toF32(ref.view())), 1e-6);
}

} // namespace

TEST_CASE("a fused program's text prints as it parses", "[fused]") {
  for (const char *text :
       {"sigmoid(x0); mul(x0, t0)",
        "div(x0, x1); erf(t0); add(t1, x2); mul(x0, t2); mul(t3, x3)",
        "leaky_relu(x0) alpha=0.2", "clip(x0) alpha=0 beta=6",
        "clip(x0, x1, x2)",
        "sum(x0, x1, x2); hard_sigmoid(t0) alpha=0.5 "
        "beta=0.25",
        "identity(x0)", "clip(x0) alpha=-inf beta=inf"}) {
    size_t inputs = 0;
    for (const char *c = text; *c; ++c)
      if (*c == 'x' && c[1] >= '0' && c[1] <= '9')
        inputs = std::max<size_t>(inputs, size_t(c[1] - '0') + 1);
    CHECK(printFusedProgram(parse(text, inputs)) == text);
  }
  FusedProgram p = parse("mul(x1, x0);neg( t0 )", 2);
  REQUIRE(p.steps.size() == 2);
  CHECK(p.steps[0].fn == ElementwiseFn::Mul);
  CHECK(p.steps[0].args[0] == FusedOperand{false, 1});
  CHECK(p.steps[1].args[0] == FusedOperand{true, 0});
  CHECK(printFusedProgram(p) == "mul(x1, x0); neg(t0)");
}

TEST_CASE("a fused program that is wrong says why", "[fused]") {
  CHECK(parseError("frobnicate(x0)", 1) ==
        "step 0: unknown function 'frobnicate'");
  CHECK(parseError("greater(x0, x1)", 2) ==
        "step 0: 'greater' does not map floats to floats");
  CHECK(parseError("where(x0, x1, x2)", 3) ==
        "step 0: 'where' does not map floats to floats");
  CHECK(parseError("neg(t0)", 1) == "step 0: 't0' is not an earlier step");
  CHECK(parseError("neg(x1)", 1) == "step 0: 'x1' is not an input of the call");
  CHECK(parseError("add(x0)", 1) == "step 0: 'add' takes 2 arguments, got 1");
  CHECK(parseError("clip(x0, x0)", 1) ==
        "step 0: 'clip' takes 1 or 3 arguments, got 2");
  CHECK(parseError("neg(x0) gamma=1", 1) ==
        "step 0: bad parameter 'gamma=1' (alpha=V or beta=V)");
  CHECK(parseError("neg x0", 1) == "step 0: expected 'fn(args)', got 'neg x0'");
  CHECK(parseError("neg(y0)", 1) ==
        "step 0: bad argument 'y0' (xN: input N, tN: step N's result)");
  CHECK(parseError("neg(x0)", 2) == "input x1 is not used");
  CHECK(parseError("neg(x0)", 0).find("takes 1 to 8 inputs") == 0);
  std::string longProgram = "neg(x0)";
  for (int i = 0; i < 32; ++i)
    longProgram += "; neg(t" + std::to_string(i) + ")";
  CHECK(parseError(longProgram, 1) == "has 33 steps (1 to 32)");
}

TEST_CASE("a fused program computes its steps in f32 and rounds once",
          "[fused]") {
  struct Case {
    const char *program;
    std::vector<Shape> inputs;
    Shape y;
  };
  // Large enough for several chunks and threads, broadcasts of every kind.
  const Shape big{3, 40, 700};
  const std::vector<Case> cases = {
      {"sigmoid(x0); mul(x0, t0)", {big}, big},
      {"div(x0, x1); erf(t0); add(t1, x2); mul(x0, t2); mul(t3, x3)",
       {big, {}, {}, {}},
       big},
      {"add(x0, x1); relu(t0)", {big, {700}}, big},
      {"mul(x0, x1); add(t0, x2); tanh(t1)", {big, {3, 1, 1}, {40, 1}}, big},
      {"sub(x1, x0); exp(t0); clip(t1, x2, x3); sum(t2, x0, x1)",
       {{5, 1, 9}, {1, 7, 9}, {}, {1}},
       {5, 7, 9}},
      {"pow(x0, x1); sqrt(t0); leaky_relu(t1) alpha=0.3", {big, {}}, big},
      {"identity(x0)", {big}, big},
      // Per-channel operands of channels-last activations: rows shorter
      // than a chunk, repeated (the kernel's long blocks), with a scalar.
      {"mul(x0, x1); add(t0, x2); relu(t1)",
       {{2, 9, 11, 24}, {1, 1, 1, 24}, {24}},
       {2, 9, 11, 24}},
      {"add(x0, x1); mul(t0, x2)", {{3, 130, 7}, {7}, {}}, {3, 130, 7}},
  };
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
  Rng rng(42);
  for (const Case &c : cases)
    for (DType inType : dtypes)
      for (DType yType : dtypes) {
        FusedProgram program = parse(c.program, c.inputs.size());
        std::vector<HostTensor> inputs;
        for (size_t k = 0; k < c.inputs.size(); ++k)
          inputs.push_back(randomTensor(k == 0 ? inType : DType::F32,
                                        c.inputs[k], rng, k == 0 ? -3.0 : 0.5,
                                        k == 0 ? 3.0 : 2.0));
        std::vector<TensorView> views;
        for (const HostTensor &t : inputs)
          views.push_back(t.view());
        INFO(c.program << ": x0 " << dtypeName(inType) << ", y "
                       << dtypeName(yType));
        expectSameAsSteps(runFused(program, views, c.y, yType),
                          stepByStep(program, views, c.y, yType));
      }
}

TEST_CASE("a fused program keeps f32 where the calls one by one rounded",
          "[fused]") {
  // x * 3 + 1 in f16: one by one, x * 3 is rounded to f16 before the add.
  // Fused, the f32 product is added and the sum rounded once, which the
  // first value tells apart: 3 * 0.337646484375 + 1 = 2.012939453125 rounds
  // to 2.013671875, while 3x rounded first (1.0126953125) gives 2.01171875.
  HostTensor x = tensor(DType::F16, {2}, {0.337646484375, 0.3});
  HostTensor three = tensor(DType::F16, {}, {3.0}),
             one = tensor(DType::F16, {}, {1.0});
  FusedProgram program = parse("mul(x0, x1); add(t0, x2)", 3);
  HostTensor y =
      runFused(program, {x.view(), three.view(), one.view()}, {2}, DType::F16);
  for (int64_t i = 0; i < 2; ++i) {
    double exact =
        static_cast<double>(1.0f + 3.0f * static_cast<float>(getD(x, i)));
    CHECK(getD(y, i) == roundTo(DType::F16, exact));
  }
  HostTensor product(DType::F16, {2}), twice(DType::F16, {2});
  REQUIRE(cpu::elementwise(ElementwiseFn::Mul, {x.view(), three.view()},
                           product.view())
              .isOk());
  REQUIRE(cpu::elementwise(ElementwiseFn::Add, {product.view(), one.view()},
                           twice.view())
              .isOk());
  CHECK(getD(y, 0) == 2.013671875);
  CHECK(getD(twice, 0) == 2.01171875);
}

TEST_CASE("a fused call in place, and the errors of bad calls", "[fused]") {
  Rng rng(7);
  HostTensor x = randomTensor(DType::F32, {2, 300}, rng);
  HostTensor expected = stepByStep(parse("exp(x0); neg(t0)", 1), {x.view()},
                                   {2, 300}, DType::F32);
  REQUIRE(
      cpu::fusedElementwise(parse("exp(x0); neg(t0)", 1), {x.view()}, x.view())
          .isOk());
  expectSameAsSteps(x, expected);

  HostTensor i32(DType::I32, {4}), y(DType::F32, {4});
  Status s = cpu::fusedElementwise(parse("neg(x0)", 1), {i32.view()}, y.view());
  CHECK(s.message() == "fused_elementwise: input 0 is i32 (f16, bf16 or f32)");
  HostTensor wide(DType::F32, {5});
  s = cpu::fusedElementwise(parse("neg(x0)", 1), {wide.view()}, y.view());
  CHECK(s.message() ==
        "fused_elementwise: input 0 [5] does not broadcast to y [4]");

  // A program made in code is checked as a parsed one.
  FusedProgram wrong;
  wrong.steps.push_back(FusedStep{ElementwiseFn::Add, {{false, 0}}, {}, {}});
  s = cpu::fusedElementwise(wrong, {y.view()}, y.view());
  CHECK(s.message() == "fused_elementwise: the program step 0: 'add' takes 2 "
                       "arguments, got 1");
  wrong.steps[0] = FusedStep{ElementwiseFn::Neg, {{true, 0}}, {}, {}};
  s = cpu::fusedElementwise(wrong, {y.view()}, y.view());
  CHECK(s.message() ==
        "fused_elementwise: the program step 0: 't0' is not an earlier step");

  // Through the plan call: the program is checked against the operands.
  PlanCall call;
  call.kind = "kernel.fused_elementwise";
  call.operands = {0};
  call.results = {1};
  call.attributes.push_back({"program", PlanAttrValue(std::string("add(x0)"))});
  Result<FusedProgram> parsed = cpu::fusedProgramOf(call, 1);
  REQUIRE(!parsed);
  CHECK(parsed.status().message() ==
        "program 'add(x0)': step 0: 'add' takes 2 arguments, got 1");
}

TEST_CASE("fast fused programs compute what the reference computes",
          "[fused][cpu][fast]") {
  if (!cpu::haveFastKernels()) {
    WARN("built without oneDNN: no fast calls to check");
    return;
  }
  struct Case {
    const char *program;
    std::vector<Shape> inputs;
    bool chain; ///< oneDNN's binary with post-ops takes it
  };
  const Shape y{2, 9, 9, 24};
  const std::vector<Case> cases = {
      {"sigmoid(x0); mul(x0, t0)", {y}, true}, // SiLU
      {"add(x0, x1); relu(t0)", {y, y}, true}, // residual
      {"add(x0, x1); tanh(t0); mul(t1, x2)", {y, {24}, {}}, true},
      {"sub(x1, x0); exp(t0)", {y, y}, true}, // x - t as -(t - x)
      {"mul(x0, x1); sub(x2, t0)", {y, {}, y}, true},
      {"identity(x0)", {y}, true},                       // a cast
      {"exp(x0); add(t0, x0); mul(t0, t1)", {y}, false}, // t0 read twice
      {"div(x0, x1); erf(t0); add(t1, x2); mul(x0, t2)", {y, {}, {}}, false},
      {"tanh(x0); sigmoid(t0); exp(t1)", {y}, true},
      {"mul(x0, x1); sum(t0, x2)", {y, {24}, {}}, true},
      // A batch norm before a ReLU, channels last: per-channel scale and
      // shift as rows of y's last dim (y seen as [rows, C]).
      {"mul(x0, x1); add(t0, x2); relu(t1)", {y, {24}, {1, 1, 1, 24}}, true},
      // Steps that do not read the step before: no chain, whatever their
      // functions (the result is the last step's).
      {"exp(x0); neg(x0)", {y}, false},
      {"exp(x0); neg(t0); add(x1, x2)", {y, y, y}, false},
      {"exp(x0); div(x1, t0)", {y, y}, false},
  };
  Rng rng(3);
  for (const Case &c : cases)
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
      INFO(c.program << ", " << dtypeName(dtype));
      std::vector<HostTensor> inputs;
      std::vector<TensorView> views;
      for (const Shape &s : c.inputs) {
        inputs.push_back(randomTensor(dtype, s, rng, -2.0, 2.0));
        views.push_back(inputs.back().view());
      }
      PlanCall call;
      call.kind = "kernel.fused_elementwise";
      for (size_t k = 0; k < inputs.size(); ++k)
        call.operands.push_back(static_cast<uint32_t>(k));
      call.results = {static_cast<uint32_t>(inputs.size())};
      call.attributes.push_back(
          {"program", PlanAttrValue(std::string(c.program))});
      HostTensor fast(dtype, y);
      cpu::FastCallChoice choice =
          cpu::prepareFastCall(call, views, {fast.view()}, {});
      REQUIRE(choice.call);
      const std::string impl = choice.call->implementation();
      INFO("implementation " << impl);
      // bf16 primitives need avx512_core; f16 ones f16 kernels.
      const bool onednnType =
          dtype == DType::F32 ||
          (dtype == DType::F16 && cpu::fastKernelsComputeF16());
      if (c.chain && onednnType)
        CHECK(impl.rfind("onednn:", 0) == 0);
      if (!c.chain || (dtype == DType::F16 && !onednnType))
        CHECK(impl.rfind("own:fused", 0) == 0);
      std::vector<unsigned char> scratch(choice.call->scratchBytes() + 64);
      REQUIRE(choice.call->run(scratch.data()).isOk());
      HostTensor reference =
          runFused(parse(c.program, c.inputs.size()), views, y, dtype);
      // oneDNN's and the own vectorised exp / tanh / sigmoid are within a few
      // f32 ulps of libm's: 16-bit results may round to the neighbour.
      const double tol = dtype == DType::F32   ? 1e-5
                         : dtype == DType::F16 ? 1.0 / 512
                                               : 1.0 / 64;
      expectClose(fast, values(reference), tol);
    }
}
