//===- CudaDeviceElementwiseTest.cpp - elementwise, reduce ----------------===//
//
// Each test builds plans of one call on random data, runs them on the CPU
// executor (the reference) and checks them with the CUDA planner
// (checkPlanForCuda) in every build; where the CUDA backend is built and a
// GPU is present it also runs them on the CudaExecutor and compares the
// outputs (CudaDeviceTestSupport.h). Without a device the GPU part only
// WARNs and returns.
// Here: kernel.elementwise, the casts and copies, kernel.reduce.
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
    for (const char *fn : {"gelu_grad", "gelu_tanh_grad"})
      ew(fn,
         {{"dy", rnd(t, {2, 3, 17}, rng, -3, 3)},
          {"x", rnd(t, {2, 3, 17}, rng, -4, 4)}},
         {"y", t, {2, 3, 17}});
    ew("relu_grad",
       {{"dy", rnd(t, {2, 3, 17}, rng, -3, 3)},
        {"x", rnd(t, {2, 3, 17}, rng, -3, 3)}},
       {"y", t, {2, 3, 17}});
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
