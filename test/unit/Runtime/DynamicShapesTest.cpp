// Unit tests of dynamic-shape plans (mp/Runtime/DynamicShapes.h, format
// 1.9): where the compiler samples the ranges, the fit of what changes
// between the sampled plans (polynomials in several symbols, values that
// are none, weights that are or are not the corner of their largest form,
// plans of another structure), specialisation and binding with their
// errors, the file round trip and validation, and the CPU executor running
// one plan at several sizes.
#include "mp/Runtime/DynamicShapes.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/PlanBuilding.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

using namespace mp::rt;
using Catch::Matchers::Contains;

namespace {

PlanSymbol symbol(std::string name, int64_t min, int64_t max) {
  PlanSymbol s;
  s.name = std::move(name);
  s.min = min;
  s.max = max;
  return s;
}

/// The rows of the table the plans below read a corner of: row r is
/// 10 * r + column.
constexpr int64_t kTableRows = 6, kColumns = 4;
std::vector<float> tableRows(int64_t rows) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kColumns; ++c)
      out.push_back(static_cast<float>(10 * r + c));
  return out;
}

/// What a compiler would make of y = x + table[:b] (x: [b, 4]) at batch b:
/// the table's first b rows are a constant of the plan.
Plan tablePlanAt(int64_t b) {
  Plan plan;
  uint32_t x = appendArenaBuffer(plan, DType::F32, {b, kColumns}, "x");
  uint32_t rows = appendWeightBuffer(plan, BufferStorage::Weight, "rows",
                                     "rows", {b, kColumns}, tableRows(b));
  uint32_t y = appendArenaBuffer(plan, DType::F32, {b, kColumns}, "y");
  PlanCall add;
  add.kind = "kernel.elementwise";
  add.operands = {x, rows};
  add.results = {y};
  add.attributes = {{"fn", std::string("add")}};
  plan.calls.push_back(add);
  plan.inputs.push_back({"x", x, DType::F32, {b, kColumns}});
  plan.outputs.push_back({"y", y, DType::F32, {b, kColumns}});
  return plan;
}

/// The plans of `makePlan` at every sample point of `symbols`.
template <typename MakePlan>
Result<Plan> generalize(const std::vector<PlanSymbol> &symbols,
                        MakePlan makePlan) {
  Result<PlanSampling> sampling = planSampling(symbols);
  REQUIRE(sampling);
  std::vector<Plan> plans;
  for (const std::vector<int64_t> &point : sampling->points)
    plans.push_back(makePlan(point));
  return generalizePlans(symbols, *sampling, plans);
}

Plan dynamicTablePlan() {
  Result<Plan> plan = generalize(
      {symbol("batch", 1, kTableRows)},
      [](const std::vector<int64_t> &point) { return tablePlanAt(point[0]); });
  REQUIRE(plan);
  return plan.take();
}

/// A plan whose one call has an integer list attribute of the values
/// `values(point)` (generalizePlans does not look at what calls do).
template <typename Values>
Plan attributePlanAt(const std::vector<int64_t> &point, Values values,
                     Shape inputShape) {
  Plan plan;
  uint32_t x = appendArenaBuffer(plan, DType::F32, inputShape, "x");
  uint32_t y = appendArenaBuffer(plan, DType::F32, {1}, "y");
  PlanCall call;
  call.kind = "kernel.test";
  call.operands = {x};
  call.results = {y};
  call.attributes = {{"values", values(point)}};
  plan.calls.push_back(call);
  plan.inputs.push_back({"x", x, DType::F32, inputShape});
  plan.outputs.push_back({"y", y, DType::F32, {1}});
  return plan;
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("mp-dynamic-" + std::to_string(getpid()) + "-" + name))
      .string();
}

} // namespace

TEST_CASE("the sample points of a range", "[dynamic]") {
  SECTION("a batch from 1: the fit starts at 2, 1 is checked") {
    Result<PlanSampling> s = planSampling({symbol("batch", 1, 8)});
    REQUIRE(s);
    CHECK(s->fitValues[0] == std::vector<int64_t>{2, 5, 8});
    REQUIRE(s->gridSize == 3);
    CHECK(s->points.back() != std::vector<int64_t>{8});
    CHECK(s->points[s->gridSize - 1] == std::vector<int64_t>{8});
    // Checked: 1 and a value of the other parity than the grid's ends.
    std::vector<std::vector<int64_t>> checks(s->points.begin() + 3,
                                             s->points.end());
    CHECK(checks == std::vector<std::vector<int64_t>>{{1}, {3}});
  }
  SECTION("two symbols: a 3 x 3 grid, each symbol checked alone, then both") {
    Result<PlanSampling> s =
        planSampling({symbol("batch", 1, 4), symbol("seq", 16, 128)});
    REQUIRE(s);
    CHECK(s->fitValues[1] == std::vector<int64_t>{16, 72, 128});
    CHECK(s->gridSize == 9);
    CHECK(s->points[8] == std::vector<int64_t>{4, 128});
    // batch 1..4 fits at 2, 3, 4 and is checked at 1; seq at 17 and 127.
    CHECK(s->fitValues[0] == std::vector<int64_t>{2, 3, 4});
    CHECK(s->points.size() == 9 + 1 + 2 + 1);
    CHECK(s->points.back() == std::vector<int64_t>{1, 17});
  }
  SECTION("a short range is fitted at every value") {
    Result<PlanSampling> s = planSampling({symbol("n", 2, 3)});
    REQUIRE(s);
    CHECK(s->fitValues[0] == std::vector<int64_t>{2, 3});
    CHECK(s->points.size() == 2);
  }
  SECTION("bad ranges") {
    CHECK_THAT(planSampling({symbol("n", 0, 3)}).message(),
               Contains("1 <= min <= max"));
    CHECK_THAT(planSampling({symbol("n", 5, 3)}).message(),
               Contains("1 <= min <= max"));
    CHECK_THAT(planSampling({symbol("a", 1, 2), symbol("b", 1, 2),
                             symbol("c", 1, 2), symbol("d", 1, 2)})
                   .message(),
               Contains("at most 3"));
  }
}

TEST_CASE("the fit: polynomials in several symbols", "[dynamic]") {
  auto values = [](const std::vector<int64_t> &p) {
    int64_t b = p[0], s = p[1];
    // Constant, linear, a product, quadratic in one symbol.
    return std::vector<int64_t>{7, 3 * s, b * s, b * s * s + 3 * s - 2};
  };
  Result<Plan> plan =
      generalize({symbol("batch", 1, 4), symbol("seq", 16, 128)},
                 [&](const std::vector<int64_t> &p) {
                   return attributePlanAt(p, values, {p[0], p[1]});
                 });
  REQUIRE(plan);
  const PlanCall &call = plan->calls[0];
  REQUIRE(call.symbolicAttributes.size() == 3);
  CHECK(call.symbolicAttributes[0].index == 1);
  CHECK(call.symbolicAttributes[0].value.str(plan->symbols) == "3*seq");
  CHECK(call.symbolicAttributes[1].value.str(plan->symbols) == "batch*seq");
  CHECK(call.symbolicAttributes[2].value.str(plan->symbols) ==
        "batch*seq*seq + 3*seq - 2");
  // The input's dims are the symbols themselves.
  CHECK(symbolicShapeString(*plan, plan->buffers[0]) == "[batch, seq]");
  // At a point no compile saw.
  Result<Plan> at = specializePlan(*plan, {3, 50});
  REQUIRE(at);
  CHECK(*at->calls[0].attrAs<std::vector<int64_t>>("values") ==
        values({3, 50}));
  CHECK(at->inputs[0].shape == Shape{3, 50});
  CHECK_FALSE(at->isDynamic());
}

TEST_CASE("the fit refuses what is not a polynomial", "[dynamic]") {
  SECTION("a halving (a strided convolution over a dynamic size)") {
    Result<Plan> plan =
        generalize({symbol("h", 32, 64)}, [](const std::vector<int64_t> &p) {
          return attributePlanAt(p,
                                 [](const std::vector<int64_t> &q) {
                                   return std::vector<int64_t>{(q[0] - 1) / 2 +
                                                               1};
                                 },
                                 {p[0]});
        });
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.message(),
               Contains("call #0 (kernel.test) attribute 'values' element 0 "
                        "is 16 at h=32"));
    CHECK_THAT(plan.message(), Contains("not a polynomial in the symbols"));
  }
  SECTION("a value that changes only at 1 (the check at 1 sees it)") {
    Result<Plan> plan =
        generalize({symbol("batch", 1, 8)}, [](const std::vector<int64_t> &p) {
          return attributePlanAt(p,
                                 [](const std::vector<int64_t> &q) {
                                   return std::vector<int64_t>{q[0] == 1 ? 0
                                                                         : 384};
                                 },
                                 {p[0]});
        });
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.message(), Contains("0 at batch=1"));
  }
  SECTION("another structure at some size") {
    Result<Plan> plan =
        generalize({symbol("batch", 1, 8)}, [](const std::vector<int64_t> &p) {
          Plan plan = tablePlanAt(std::min<int64_t>(p[0], kTableRows));
          if (p[0] == 3)
            plan.calls.push_back(plan.calls[0]);
          return plan;
        });
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.message(),
               Contains("the plan compiled at batch=3 differs from the one "
                        "at the maxima (batch=8): 2 calls"));
  }
  SECTION("a symbol that is no input's dim") {
    Result<Plan> plan =
        generalize({symbol("n", 2, 9)}, [](const std::vector<int64_t> &p) {
          return attributePlanAt(p,
                                 [](const std::vector<int64_t> &q) {
                                   return std::vector<int64_t>{q[0]};
                                 },
                                 {2});
        });
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.message(),
               Contains("symbol 'n' is not a dim of any input"));
  }
}

TEST_CASE("constants computed from the dims", "[dynamic]") {
  SECTION("the leading corner of the largest form: kept once, cut at run "
          "time") {
    Plan plan = dynamicTablePlan();
    REQUIRE(plan.weights.size() == 1);
    CHECK(plan.weights[0].shape == Shape{kTableRows, kColumns});
    Result<Plan> at = specializePlan(plan, {2});
    REQUIRE(at);
    const PlanBuffer &rows = *at->buffer(1);
    CHECK(rows.shape == Shape{2, kColumns});
    const PlanWeight &corner = at->weights[rows.weight];
    CHECK(corner.shape == Shape{2, kColumns});
    std::vector<float> expected = tableRows(2);
    CHECK(std::vector<float>(corner.as<float>(),
                             corner.as<float>() + expected.size()) == expected);
    CHECK(validatePlan(*at));
  }
  SECTION("other values: refused") {
    Result<Plan> plan =
        generalize({symbol("batch", 1, 6)}, [](const std::vector<int64_t> &p) {
          Plan plan = tablePlanAt(p[0]);
          // Not a corner: every row depends on the batch.
          float *data = const_cast<float *>(plan.weights[0].as<float>());
          data[0] = static_cast<float>(p[0]);
          return plan;
        });
    REQUIRE_FALSE(plan);
    CHECK_THAT(plan.message(),
               Contains("the constant 'rows' [2, 4] at batch=2 is not the "
                        "leading corner of its form at the maxima [6, 4]"));
  }
}

TEST_CASE("binding the symbols from the inputs", "[dynamic]") {
  Plan plan = dynamicTablePlan();
  Result<std::vector<int64_t>> values = bindSymbols(plan, {{"x", {4, 4}}});
  REQUIRE(values);
  CHECK(*values == std::vector<int64_t>{4});
  CHECK_THAT(bindSymbols(plan, {{"x", {7, 4}}}).message(),
             Contains("input 'x' dim 0 (batch) is 7, outside the plan's "
                      "range 1..6"));
  CHECK_THAT(bindSymbols(plan, {{"x", {4}}}).message(),
             Contains("input 'x' has rank 1, but the plan's 2"));
  CHECK_THAT(bindSymbols(plan, {}).message(),
             Contains("no input gives symbol 'batch'"));
  CHECK_THAT(specializePlan(plan, {0}).message(),
             Contains("outside the plan's range 1..6"));
}

TEST_CASE("a dynamic-shape plan file", "[dynamic]") {
  Plan plan = dynamicTablePlan();
  CHECK(plan.requiredFormatMinor() == 9);
  std::string path = tempPath("table.mpplan");
  REQUIRE(savePlan(plan, path));
  Result<Plan> loaded = loadPlan(path);
  std::filesystem::remove(path);
  REQUIRE(loaded);
  CHECK(loaded->formatMinor == 9);
  REQUIRE(loaded->symbols.size() == 1);
  CHECK(loaded->symbols[0].name == "batch");
  CHECK(loaded->symbols[0].min == 1);
  CHECK(loaded->symbols[0].max == kTableRows);
  for (uint32_t id : {0u, 1u, 2u})
    CHECK(symbolicShapeString(*loaded, *loaded->buffer(id)) == "[batch, 4]");

  SECTION("validation") {
    Plan bad = plan;
    bad.buffers[0].symbolicShape[0].value.terms[0].coefficient = 2;
    CHECK_THAT(validatePlan(bad).message(),
               Contains("buffer 0 'x' dim 0: 2*batch is 12 at the symbols' "
                        "maxima, but the plan holds 6"));
    bad = plan;
    bad.symbols.push_back(symbol("other", 1, 2));
    CHECK_THAT(validatePlan(bad).message(),
               Contains("powers for the plan's 2"));
    bad = plan;
    bad.symbols.clear();
    CHECK_THAT(validatePlan(bad).message(),
               Contains("has symbolic dims, but the plan has no symbols"));
    bad = plan;
    bad.symbols[0].min = 0;
    CHECK_THAT(validatePlan(bad).message(), Contains("(1 <= min <= max)"));
    bad = plan;
    bad.calls[0].symbolicAttributes.push_back(
        {0, "nope", bad.buffers[0].symbolicShape[0].value});
    CHECK_THAT(validatePlan(bad).message(),
               Contains("attribute 'nope' has a symbolic value but is "
                        "missing"));
  }
}

TEST_CASE("the CPU executor runs a dynamic-shape plan at any size in its "
          "range",
          "[dynamic][executor]") {
  Result<CpuExecutor> exec = CpuExecutor::create(dynamicTablePlan());
  REQUIRE(exec);
  CHECK(exec->plan().isDynamic());
  // Every size, twice over (the second time from the kept specialisations
  // or made again), each against x + table[:b].
  for (int64_t round = 0; round < 2; ++round)
    for (int64_t b : {1, 3, 6, 2, 5, 4}) {
      std::vector<float> x(static_cast<size_t>(b * kColumns));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.5f * static_cast<float>(i) + static_cast<float>(round);
      TensorView view{DType::F32, {b, kColumns}, x.data()};
      Result<std::vector<NamedTensor>> out = exec->run({{"x", view}});
      REQUIRE(out);
      const HostTensor &y = (*out)[0].tensor;
      REQUIRE(y.shape() == Shape{b, kColumns});
      std::vector<float> table = tableRows(b);
      for (size_t i = 0; i < x.size(); ++i)
        CHECK(y.as<float>()[i] == x[i] + table[i]);
    }
  std::vector<float> x(7 * kColumns);
  TensorView tooMany{DType::F32, {7, kColumns}, x.data()};
  CHECK_THAT(exec->run({{"x", tooMany}}).message(),
             Contains("outside the plan's range 1..6"));
  TensorView wrongDim{DType::F32, {2, 3}, x.data()};
  CHECK_THAT(exec->run({{"x", wrongDim}}).message(),
             Contains("input 'x': expected f32 [2, 4], got f32 [2, 3]"));
}
