// Tests of the vectorised exp, sigmoid and tanh of fused programs
// (mp/Runtime/CPU/VectorMath.h) against libm, for every instruction set this
// CPU runs (the AVX-512, AVX2 and baseline loops are separate code), over
// the whole f32 range that matters and its edges: overflow, subnormal
// results, infinities and NaN, and lengths that leave a vector tail.
#include "mp/Runtime/CPU/VectorMath.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace mp::rt;
using cpu::ElementwiseFn;
using cpu::VectorIsa;

namespace {

std::vector<float> sampleInputs() {
  std::vector<float> x;
  for (float v = -110.f; v <= 110.f; v += 0.0137f)
    x.push_back(v);
  for (float v = -1.f; v <= 1.f; v += 1.3e-4f) // tanh's small-x branch
    x.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 0.2f, -0.2f, 88.72f, 88.73f,
                  -87.33f, -87.34f, -103.f, -104.f, inf, -inf,
                  std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  return x; // an odd length: a vector tail
}

/// got within rel * |ref| + abs of ref; NaN for NaN, and infinity where ref
/// rounds to one in f32.
bool close(float got, double exact, double rel, double abs) {
  const double ref = static_cast<float>(exact);
  if (std::isnan(ref))
    return std::isnan(got);
  if (std::isinf(ref))
    return got == ref;
  return std::fabs(got - ref) <= rel * std::fabs(ref) + abs;
}

} // namespace

TEST_CASE("vectorised exp, sigmoid and tanh match libm on every ISA",
          "[fused][vectormath]") {
  const std::vector<float> x = sampleInputs();
  REQUIRE(x.size() % 16 != 0);
  struct Fn {
    ElementwiseFn fn;
    double (*ref)(double);
    double rel, abs;
  };
  const Fn fns[] = {
      // a few f32 ulps; results below FLT_MIN may flush toward 0
      {ElementwiseFn::Exp, [](double v) { return std::exp(v); }, 5e-7, 1.2e-38},
      {ElementwiseFn::Sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); },
       5e-7, 1.2e-38},
      {ElementwiseFn::Tanh, [](double v) { return std::tanh(v); }, 0, 3e-7},
  };
  for (VectorIsa isa : cpu::supportedVectorIsas())
    for (const Fn &f : fns) {
      INFO(std::string(cpu::vectorIsaName(isa))
           << ", " << elementwiseFnName(f.fn));
      std::vector<float> y(x.size(), -1.f);
      cpu::vectorMath(f.fn, x.data(), y.data(), static_cast<int64_t>(x.size()),
                      isa);
      size_t bad = 0;
      for (size_t i = 0; i < x.size(); ++i)
        if (!close(y[i], f.ref(static_cast<double>(x[i])), f.rel, f.abs) &&
            bad++ < 5)
          UNSCOPED_INFO("x = " << x[i] << ": got " << y[i] << ", libm "
                               << f.ref(static_cast<double>(x[i])));
      CHECK(bad == 0);
      // In place gives the same.
      std::vector<float> inPlace = x;
      cpu::vectorMath(f.fn, inPlace.data(), inPlace.data(),
                      static_cast<int64_t>(x.size()), isa);
      CHECK(std::equal(inPlace.begin(), inPlace.end(), y.begin(),
                       [](float a, float b) {
                         return a == b || (std::isnan(a) && std::isnan(b));
                       }));
    }
}

TEST_CASE("vectorised exp gives 0, not a subnormal, below -88",
          "[fused][vectormath]") {
  // Masked attention scores (-inf, -1e9) must not leave subnormals, which
  // slow down every instruction touching them.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {-88.5f, -90.f, -1e9f, -inf, -100.f, -200.f,
                                -88.5f, -90.f, -1e9f, -inf, -100.f, -200.f,
                                -88.5f, -90.f, -1e9f, -inf, -100.f};
  for (VectorIsa isa : cpu::supportedVectorIsas()) {
    INFO(cpu::vectorIsaName(isa));
    std::vector<float> y(x.size(), 1.f);
    cpu::vectorMath(ElementwiseFn::Exp, x.data(), y.data(),
                    static_cast<int64_t>(x.size()), isa);
    for (float v : y)
      CHECK(v == 0.f);
    std::vector<float> row = {0.f,  -inf, 1.f,  -1e9f, -inf, 2.f,
                              -inf, -inf, -inf, -inf,  -inf, -inf,
                              -inf, -inf, -inf, -inf,  -inf, 3.f};
    cpu::softmaxInPlace(row.data(), static_cast<int64_t>(row.size()), isa);
    for (size_t i = 0; i < row.size(); ++i)
      if (i != 0 && i != 2 && i != 5 && i != 17)
        CHECK(row[i] == 0.f);
  }
}

TEST_CASE("vectorised softmax matches the libm one on every ISA",
          "[fused][vectormath]") {
  const float inf = std::numeric_limits<float>::infinity();
  // Lengths below, at and past a 16-lane vector, rows with masked (-inf)
  // entries, large values (exp overflows without the max subtracted) and
  // a row of -inf only.
  std::vector<std::vector<float>> rows = {{0.5f}, {1.f, 2.f, 3.f}};
  for (int64_t n : {16, 17, 197}) {
    std::vector<float> row(n);
    for (int64_t i = 0; i < n; ++i)
      row[i] = static_cast<float>(std::sin(0.7 * i) * 30 + (i % 5 ? 0 : 80));
    rows.push_back(row);
    for (int64_t i = 0; i < n; i += 3)
      row[i] = -inf;
    rows.push_back(row);
  }
  rows.push_back(std::vector<float>(19, -inf));
  for (VectorIsa isa : cpu::supportedVectorIsas())
    for (const std::vector<float> &row : rows) {
      INFO(cpu::vectorIsaName(isa) << ", length " << row.size());
      double max = -inf, sum = 0;
      for (float v : row)
        max = std::max<double>(max, v);
      std::vector<double> ref(row.size());
      for (size_t i = 0; i < row.size(); ++i)
        sum += ref[i] = std::exp(static_cast<double>(row[i]) - max);
      std::vector<float> got = row;
      cpu::softmaxInPlace(got.data(), static_cast<int64_t>(got.size()), isa);
      size_t bad = 0;
      for (size_t i = 0; i < row.size(); ++i)
        // x - max rounds in f32: exp's argument is off by up to half an
        // ulp of |x - max| (<= 128 here), relative 4e-6 in the result.
        if (!close(got[i], ref[i] / sum, 1e-5, 1e-38) && bad++ < 3)
          UNSCOPED_INFO("x[" << i << "] = " << row[i] << ": got " << got[i]
                             << ", libm " << ref[i] / sum);
      CHECK(bad == 0);
    }
}

TEST_CASE("the vector math ISA is one this CPU runs", "[fused][vectormath]") {
  std::vector<VectorIsa> isas = cpu::supportedVectorIsas();
  REQUIRE(!isas.empty());
  CHECK(isas.back() == VectorIsa::Baseline);
  CHECK(std::find(isas.begin(), isas.end(), cpu::vectorMathIsa()) !=
        isas.end());
}
