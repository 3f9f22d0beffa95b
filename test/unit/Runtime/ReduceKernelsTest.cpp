// Tests of the CPU reduce kernel (mp/Runtime/CPU/ElementwiseKernels.h,
// reduce) and the kernel.reduce plan call.
//
// The reference gathers, for every output, the x elements it reduces (a
// naive walk over x) and applies the ONNX definition in double. f32 / f64
// results must be within a small relative bound; 16-bit results must be
// what rounding the reference once gives, up to the bound:
// round16(ref - bound) <= y <= round16(ref + bound). Integer results and
// arg indices are exact.
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using cpu::ReduceFn;

namespace {

HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  std::memset(r.data(), 0x5a, r.byteCount());
  return r;
}

/// The shape of y: x's with the reduced dims kept as 1 or dropped.
Shape reducedShape(const Shape &x, const std::vector<int64_t> &axes,
                   bool keep) {
  Shape r;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) {
    bool red = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!red)
      r.push_back(x[d]);
    else if (keep)
      r.push_back(1);
  }
  return r;
}

/// The reference: ONNX's definition in double. Integer data (isInt) sums
/// and takes the mean as integers.
std::vector<double> reference(const HostTensor &x,
                              const std::vector<int64_t> &axes, ReduceFn fn,
                              bool selectLast = false) {
  const Shape &s = x.shape();
  Shape kept = reducedShape(s, axes, true);
  int64_t yn = 1;
  for (int64_t d : kept)
    yn *= d;
  std::vector<std::vector<std::pair<double, int64_t>>> groups(
      static_cast<size_t>(yn));
  for (int64_t i = 0; i < x.numElements(); ++i) {
    int64_t rest = i, o = 0, step = 1, along = 0;
    for (size_t d = s.size(); d-- > 0;) {
      int64_t c = rest % s[d];
      rest /= s[d];
      if (kept[d] != 1 || s[d] == 1) {
        o += c * step;
        step *= s[d];
      }
      if (std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end())
        along = c;
    }
    groups[o].push_back({getD(x, i), along});
  }
  bool isInt = !isFloat(x.dtype());
  std::vector<double> r(static_cast<size_t>(yn));
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t o = 0; o < yn; ++o) {
    const auto &g = groups[o];
    double acc = 0;
    switch (fn) {
    case ReduceFn::Sum:
      for (auto &e : g)
        acc += e.first;
      break;
    case ReduceFn::Mean:
      for (auto &e : g)
        acc += e.first;
      acc = isInt ? std::trunc(acc / g.size()) : acc / g.size();
      break;
    case ReduceFn::Max:
      acc = -inf;
      for (auto &e : g)
        acc = std::isnan(e.first) || e.first > acc ? e.first : acc;
      break;
    case ReduceFn::Min:
      acc = inf;
      for (auto &e : g)
        acc = std::isnan(e.first) || e.first < acc ? e.first : acc;
      break;
    case ReduceFn::Prod:
      acc = 1;
      for (auto &e : g)
        acc *= e.first;
      break;
    case ReduceFn::L1:
      for (auto &e : g)
        acc += std::fabs(e.first);
      break;
    case ReduceFn::L2:
      for (auto &e : g)
        acc += e.first * e.first;
      acc = std::sqrt(acc);
      break;
    case ReduceFn::LogSum:
      for (auto &e : g)
        acc += e.first;
      acc = std::log(acc);
      break;
    case ReduceFn::LogSumExp:
      for (auto &e : g)
        acc += std::exp(e.first);
      acc = std::log(acc);
      break;
    case ReduceFn::SumSquare:
      for (auto &e : g)
        acc += e.first * e.first;
      break;
    case ReduceFn::ArgMax:
    case ReduceFn::ArgMin: {
      bool mx = fn == ReduceFn::ArgMax;
      double best = g[0].first;
      int64_t idx = 0;
      for (size_t k = 1; k < g.size(); ++k) {
        double v = g[k].first;
        bool better = mx ? v > best : v < best;
        if (better || (selectLast && v == best))
          best = v, idx = g[k].second;
      }
      acc = static_cast<double>(idx);
      break;
    }
    }
    r[o] = acc;
  }
  return r;
}

const ReduceFn kValueFns[] = {
    ReduceFn::Sum,       ReduceFn::Mean,     ReduceFn::Max, ReduceFn::Min,
    ReduceFn::Prod,      ReduceFn::L1,       ReduceFn::L2,  ReduceFn::LogSum,
    ReduceFn::LogSumExp, ReduceFn::SumSquare};

/// Runs reduce over axes (y's dims kept or dropped) and checks it.
void checkReduce(const HostTensor &x, ReduceFn fn,
                 const std::vector<int64_t> &axes, bool keep, double tol,
                 bool selectLast = false) {
  bool arg = fn == ReduceFn::ArgMax || fn == ReduceFn::ArgMin;
  std::vector<int64_t> normalized = axes; // the kernel gets them as given
  for (int64_t &a : normalized)
    a += a < 0 ? static_cast<int64_t>(x.shape().size()) : 0;
  HostTensor y = garbage(arg ? DType::I64 : x.dtype(),
                         reducedShape(x.shape(), normalized, keep));
  cpu::ReduceOptions options;
  options.selectLastIndex = selectLast;
  Status s = cpu::reduce(x.view(), y.view(), fn, axes, options);
  INFO("fn " << cpu::reduceFnName(fn) << ", keepdims " << keep << ", "
             << axes.size() << " axes starting at " << axes[0]);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, reference(x, normalized, fn, selectLast), tol);
}

} // namespace

TEST_CASE("reduce matches ONNX Reduce* for every fn, float dtype and axes",
          "[runtime][cpu][reduce]") {
  const std::vector<std::vector<int64_t>> axesSets = {
      {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1}, {0, 1, 2}};
  Rng rng(3);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t));
    double tol = t == DType::F64 ? 1e-12 : 2e-6;
    for (ReduceFn fn : kValueFns) {
      // Positive data for log_sum, near 1 for prod, signed otherwise.
      double lo = fn == ReduceFn::LogSum ? 0.1
                  : fn == ReduceFn::Prod ? 0.6
                                         : -2;
      double hi = fn == ReduceFn::Prod ? 1.4 : 2;
      HostTensor x = randomTensor(t, {2, 3, 4}, rng, lo, hi);
      for (const auto &axes : axesSets)
        for (bool keep : {true, false})
          checkReduce(x, fn, axes, keep, tol);
      // Size-1 dims among reduced and kept ones, negative axes.
      HostTensor z = randomTensor(t, {3, 1, 5, 2}, rng, lo, hi);
      checkReduce(z, fn, {1}, true, tol);
      checkReduce(z, fn, {-1}, false, tol);
      checkReduce(z, fn, {0, -2}, true, tol);
    }
  }
}

TEST_CASE(
    "reduce: long rows and middle axes (LayerNorm, global pooling shapes)",
    "[runtime][cpu][reduce]") {
  Rng rng(17);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    double tol = t == DType::F64 ? 1e-12 : 2e-6;
    HostTensor rows = randomTensor(t, {3, 4, 2500}, rng, -1, 3); // over chunks
    for (ReduceFn fn : {ReduceFn::Mean, ReduceFn::Sum, ReduceFn::Max,
                        ReduceFn::SumSquare, ReduceFn::LogSumExp})
      checkReduce(rows, fn, {2}, true, tol);
    HostTensor mid = randomTensor(t, {2, 300, 1100}, rng, -1, 3);
    for (ReduceFn fn :
         {ReduceFn::Mean, ReduceFn::Min, ReduceFn::L2, ReduceFn::LogSumExp})
      checkReduce(mid, fn, {1}, false, tol);
    HostTensor nchw = randomTensor(t, {2, 8, 7, 7}, rng, -1, 3);
    checkReduce(nchw, ReduceFn::Mean, {2, 3}, true, tol);
    checkReduce(nchw, ReduceFn::Max, {0, 2, 3}, false, tol);
  }
  // Sums of many f32 values accumulate in more than f32: 2^24 + 1 + 1 + ...
  HostTensor big = tensor(DType::F32, {5}, {16777216, 1, 1, 1, 1});
  HostTensor y = garbage(DType::F32, {});
  REQUIRE(cpu::reduce(big.view(), y.view(), ReduceFn::Sum, {0}).isOk());
  CHECK(getD(y, 0) == 16777220.0);
}

TEST_CASE("reduce: integers reduce exactly", "[runtime][cpu][reduce]") {
  Rng rng(23);
  for (DType t : {DType::I32, DType::I64, DType::I8, DType::U8, DType::U32}) {
    INFO("dtype " << dtypeName(t));
    bool small = t == DType::I8 || t == DType::U8;
    bool uns = t == DType::U8 || t == DType::U32;
    for (ReduceFn fn :
         {ReduceFn::Sum, ReduceFn::Mean, ReduceFn::Max, ReduceFn::Min,
          ReduceFn::Prod, ReduceFn::L1, ReduceFn::SumSquare}) {
      // Values whose results fit the type.
      double lo = uns ? 0 : (small ? -3 : -50), hi = small ? 4 : 50;
      if (fn == ReduceFn::Prod)
        lo = uns ? 1 : (small ? -1 : -2), hi = small ? 2 : 4;
      HostTensor x = randomTensor(t, {2, 3, 4}, rng, lo, hi);
      for (const std::vector<int64_t> &axes :
           std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}})
        for (bool keep : {true, false})
          checkReduce(x, fn, axes, keep, 0);
    }
  }
  // Mean truncates toward zero; sums wrap in the type; int64 sums are exact
  // beyond 2^53.
  HostTensor m = tensor(DType::I32, {2, 2}, {-7, 0, 7, 0});
  HostTensor my = garbage(DType::I32, {2});
  REQUIRE(cpu::reduce(m.view(), my.view(), ReduceFn::Mean, {1}).isOk());
  CHECK(getD(my, 0) == -3);
  CHECK(getD(my, 1) == 3);
  HostTensor u = tensor(DType::U8, {2}, {200, 100});
  HostTensor uy = garbage(DType::U8, {1});
  REQUIRE(cpu::reduce(u.view(), uy.view(), ReduceFn::Sum, {0}).isOk());
  CHECK(getD(uy, 0) == 44);
  HostTensor big(DType::I64, {3});
  big.as<int64_t>()[0] = (int64_t(1) << 53) + 1;
  big.as<int64_t>()[1] = 1;
  big.as<int64_t>()[2] = -2;
  HostTensor by(DType::I64, {1});
  REQUIRE(cpu::reduce(big.view(), by.view(), ReduceFn::Sum, {0}).isOk());
  CHECK(by.as<int64_t>()[0] == int64_t(1) << 53);
  REQUIRE(cpu::reduce(big.view(), by.view(), ReduceFn::Max, {0}).isOk());
  CHECK(by.as<int64_t>()[0] == (int64_t(1) << 53) + 1);
}

TEST_CASE("reduce: bool max and min are any and all (ReduceMax/Min-20)",
          "[runtime][cpu][reduce]") {
  HostTensor x(DType::Bool, {2, 3});
  const uint8_t bits[] = {0, 1, 0, 1, 1, 1};
  std::memcpy(x.data(), bits, sizeof bits);
  HostTensor any(DType::Bool, {2}), all(DType::Bool, {2});
  REQUIRE(cpu::reduce(x.view(), any.view(), ReduceFn::Max, {1}).isOk());
  REQUIRE(cpu::reduce(x.view(), all.view(), ReduceFn::Min, {1}).isOk());
  CHECK(any.as<uint8_t>()[0] == 1);
  CHECK(any.as<uint8_t>()[1] == 1);
  CHECK(all.as<uint8_t>()[0] == 0);
  CHECK(all.as<uint8_t>()[1] == 1);
  // Other functions of bools are errors.
  HostTensor sum(DType::Bool, {2});
  Status s = cpu::reduce(x.view(), sum.view(), ReduceFn::Sum, {1});
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find("x has dtype bool") != std::string::npos);
}

TEST_CASE("reduce: an empty reduction gives the identity",
          "[runtime][cpu][reduce]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    INFO("dtype " << dtypeName(t));
    HostTensor x(t, {2, 0, 3});
    HostTensor y = garbage(t, {2, 1, 3});
    struct {
      ReduceFn fn;
      double want;
    } cases[] = {{ReduceFn::Sum, 0},          {ReduceFn::Prod, 1},
                 {ReduceFn::Max, -inf},       {ReduceFn::Min, inf},
                 {ReduceFn::LogSumExp, -inf}, {ReduceFn::LogSum, -inf},
                 {ReduceFn::L1, 0},           {ReduceFn::L2, 0},
                 {ReduceFn::SumSquare, 0},    {ReduceFn::Mean, nan}};
    for (const auto &c : cases) {
      INFO("fn " << cpu::reduceFnName(c.fn));
      REQUIRE(cpu::reduce(x.view(), y.view(), c.fn, {1}).isOk());
      expectClose(y, std::vector<double>(6, c.want), 0);
    }
  }
  HostTensor xi(DType::I32, {0, 2});
  HostTensor yi = garbage(DType::I32, {2});
  REQUIRE(cpu::reduce(xi.view(), yi.view(), ReduceFn::Max, {0}).isOk());
  CHECK(getD(yi, 0) == std::numeric_limits<int32_t>::lowest());
  REQUIRE(cpu::reduce(xi.view(), yi.view(), ReduceFn::Mean, {0}).isOk());
  CHECK(getD(yi, 1) == 0);
  // Nothing kept: an empty y, nothing to do.
  HostTensor e(DType::F32, {0, 3});
  HostTensor ey(DType::F32, {0});
  CHECK(cpu::reduce(e.view(), ey.view(), ReduceFn::Sum, {1}).isOk());
}

TEST_CASE("reduce: argmax / argmin, ties and select_last_index",
          "[runtime][cpu][reduce]") {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                  DType::U8}) {
    INFO("dtype " << dtypeName(t));
    // Rows with ties: [1, 3, 3, 2], [5, 5, 0, 0], [2, 2, 2, 2].
    HostTensor x = tensor(t, {3, 4}, {1, 3, 3, 2, 5, 5, 0, 0, 2, 2, 2, 2});
    for (bool last : {false, true})
      for (ReduceFn fn : {ReduceFn::ArgMax, ReduceFn::ArgMin})
        for (bool keep : {true, false}) {
          checkReduce(x, fn, {1}, keep, 0, last);
          checkReduce(x, fn, {0}, keep, 0, last);
        }
    Rng rng(31);
    HostTensor r = randomTensor(t, {3, 5, 1200}, rng, 0, 20);
    for (bool last : {false, true})
      for (int64_t axis : {0, 1, 2}) {
        checkReduce(r, ReduceFn::ArgMax, {axis}, true, 0, last);
        checkReduce(r, ReduceFn::ArgMin, {axis}, false, 0, last);
      }
  }
  // Known values: first / last index of the maximum.
  HostTensor x = tensor(DType::F32, {4}, {1, 3, 3, 2});
  HostTensor y(DType::I64, {});
  cpu::ReduceOptions last;
  last.selectLastIndex = true;
  REQUIRE(cpu::reduce(x.view(), y.view(), ReduceFn::ArgMax, {0}).isOk());
  CHECK(y.as<int64_t>()[0] == 1);
  REQUIRE(cpu::reduce(x.view(), y.view(), ReduceFn::ArgMax, {0}, last).isOk());
  CHECK(y.as<int64_t>()[0] == 2);
  // NaN is the extreme (numpy.argmax); max propagates it.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  HostTensor n = tensor(DType::F32, {5}, {1, nan, 7, nan, 0});
  REQUIRE(cpu::reduce(n.view(), y.view(), ReduceFn::ArgMax, {0}).isOk());
  CHECK(y.as<int64_t>()[0] == 1);
  REQUIRE(cpu::reduce(n.view(), y.view(), ReduceFn::ArgMin, {0}, last).isOk());
  CHECK(y.as<int64_t>()[0] == 3);
  HostTensor ny(DType::F32, {});
  REQUIRE(cpu::reduce(n.view(), ny.view(), ReduceFn::Max, {0}).isOk());
  CHECK(std::isnan(getD(ny, 0)));
}

TEST_CASE("reduce rejects bad arguments", "[runtime][cpu][reduce]") {
  HostTensor x(DType::F32, {2, 3, 4});
  HostTensor y(DType::F32, {2, 1, 4});
  auto err = [](Status s) {
    REQUIRE_FALSE(s.isOk());
    return s.message();
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::Sum, {})),
             Contains("reduce sum: axes is empty"));
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::Sum, {1, -2})),
             Contains("axis -2 appears twice"));
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::Sum, {3})),
             Contains("axis 3 is out of range for x [2, 3, 4]"));
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::Sum, {2})),
             Contains("y [2, 1, 4] is not x [2, 3, 4] reduced over the axes "
                      "([2, 3, 1] or [2, 3])"));
  HostTensor y16(DType::F16, {2, 1, 4});
  CHECK_THAT(err(cpu::reduce(x.view(), y16.view(), ReduceFn::Sum, {1})),
             Contains("y has dtype f16; expected f32"));
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::ArgMax, {1})),
             Contains("y has dtype f32; expected i64"));
  HostTensor yi(DType::I64, {2});
  CHECK_THAT(err(cpu::reduce(x.view(), yi.view(), ReduceFn::ArgMax, {1, 2})),
             Contains("reduces exactly one axis, got 2"));
  HostTensor b(DType::Bool, {2, 3, 4}), yb(DType::Bool, {2, 1, 4});
  CHECK_THAT(err(cpu::reduce(b.view(), yb.view(), ReduceFn::Sum, {1})),
             Contains("x has dtype bool; expected a float or integer dtype"));
  HostTensor e(DType::F32, {2, 0}), ye(DType::I64, {2});
  CHECK_THAT(err(cpu::reduce(e.view(), ye.view(), ReduceFn::ArgMin, {1})),
             Contains("axis 1 of x [2, 0] is empty"));
  cpu::ReduceOptions bad;
  bad.computeType = DType::I32;
  CHECK_THAT(err(cpu::reduce(x.view(), y.view(), ReduceFn::Sum, {1}, bad)),
             Contains("compute type i32 is not f32 or f64"));
  CHECK(cpu::parseReduceFn("log_sum_exp") == ReduceFn::LogSumExp);
  CHECK_FALSE(cpu::parseReduceFn("median"));
}

TEST_CASE("kernel.reduce through the CPU call table",
          "[runtime][cpu][reduce][calls]") {
  cpu::CallFn fn = cpu::cpuCallTable().find("kernel.reduce");
  REQUIRE(fn);
  HostTensor x = tensor(DType::F16, {2, 3}, {1, 5, 5, 4, 2, 6});
  HostTensor y = garbage(DType::F16, {2, 1});
  PlanCall call;
  call.kind = "kernel.reduce";
  call.operands = {0};
  call.results = {1};
  call.attributes = {{"fn", std::string("mean")},
                     {"axes", std::vector<int64_t>{1}},
                     {"compute_type", int64_t(1)}};
  cpu::CallArgs args{call, {x.view()}, {y.view()}};
  Status s = fn(args);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, {11.0 / 3, 4}, 2e-6);

  HostTensor idx = garbage(DType::I64, {2});
  cpu::CallArgs argArgs{call, {x.view()}, {idx.view()}};
  call.attributes = {{"fn", std::string("argmax")},
                     {"axes", std::vector<int64_t>{1}},
                     {"compute_type", int64_t(1)},
                     {"select_last_index", int64_t(1)}};
  REQUIRE(fn(argArgs).isOk());
  CHECK(idx.as<int64_t>()[0] == 2);
  CHECK(idx.as<int64_t>()[1] == 2);
  call.attributes[3].value = int64_t(0);
  REQUIRE(fn(argArgs).isOk());
  CHECK(idx.as<int64_t>()[0] == 1);

  call.attributes = {{"fn", std::string("median")},
                     {"axes", std::vector<int64_t>{1}}};
  CHECK_THAT(fn(args).message(),
             Catch::Matchers::Contains("unknown reduce fn 'median'"));
  call.attributes = {{"fn", std::string("sum")}};
  CHECK_THAT(fn(args).message(),
             Catch::Matchers::Contains("attribute 'axes' is missing"));
  call.attributes = {{"fn", std::string("sum")},
                     {"axes", std::vector<int64_t>{1}},
                     {"compute_type", int64_t(99)}};
  CHECK_THAT(fn(args).message(),
             Catch::Matchers::Contains(
                 "attribute 'compute_type' is not a known dtype code: 99"));
}
