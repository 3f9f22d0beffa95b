// Tests of the CPU elementwise and cast kernels
// (mp/Runtime/CPU/ElementwiseKernels.h) and their plan calls.
//
// Float functions are compared with references computed here in double from
// the same (rounded) inputs. f32 / f64 results must be within a small
// relative bound of the reference; 16-bit results must be what rounding an
// f32 result ONCE gives: round16(ref - bound) <= y <= round16(ref + bound)
// (round16(ref) or its neighbour when ref is near a midpoint), so a kernel
// that computed in 16 bits or rounded twice falls outside. Integer and bool
// results are exact.
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/IntegerPow.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using cpu::ElementwiseFn;

namespace {

/// A tensor filled with a recognizable value, so that unwritten outputs show.
HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  std::memset(r.data(), 0x5a, r.byteCount());
  return r;
}

/// The flat index into `in` (broadcast to `out`) of y's element `flat`.
int64_t broadcastIndex(const Shape &in, const Shape &out, int64_t flat) {
  int64_t idx = 0, step = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t coord = flat % out[d];
    flat /= out[d];
    size_t back = out.size() - 1 - d;
    if (back < in.size()) {
      size_t j = in.size() - 1 - back;
      if (in[j] != 1)
        idx += coord * step;
      step *= in[j];
    }
  }
  return idx;
}

void expectExact(const HostTensor &got, const std::vector<double> &ref) {
  expectClose(got, ref, 0.0);
}

/// Tolerance of a computation in dtype t's compute type.
double tolFor(DType t) { return t == DType::F64 ? 1e-12 : 4e-6; }

const DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

using Ref1 = std::function<double(double)>;
using Ref2 = std::function<double(double, double)>;

/// fn on one random input of every float dtype, against ref.
void checkUnary(ElementwiseFn fn, const Ref1 &ref, double lo, double hi,
                cpu::ElementwiseParams params = {}) {
  Rng rng(static_cast<uint64_t>(fn) * 7919 + 1);
  for (DType t : kFloatTypes) {
    INFO("fn " << cpu::elementwiseFnName(fn) << ", dtype " << dtypeName(t));
    HostTensor x = randomTensor(t, {3, 67}, rng, lo, hi);
    HostTensor y = garbage(t, {3, 67});
    Status s = cpu::elementwise(fn, {x.view()}, y.view(), params);
    INFO(s.message());
    REQUIRE(s.isOk());
    std::vector<double> xs = values(x), r(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      r[i] = ref(xs[i]);
    expectClose(y, r, tolFor(t));
  }
}

/// fn on inputs a (shape sa) and b (shape sb) broadcast to `out`.
void checkBinary(ElementwiseFn fn, const Ref2 &ref, DType t, const Shape &sa,
                 const Shape &sb, const Shape &out, double lo, double hi,
                 double blo, double bhi) {
  Rng rng(static_cast<uint64_t>(fn) * 104729 + static_cast<uint64_t>(t));
  INFO("fn " << cpu::elementwiseFnName(fn) << ", dtype " << dtypeName(t));
  HostTensor a = randomTensor(t, sa, rng, lo, hi);
  HostTensor b = randomTensor(t, sb, rng, blo, bhi);
  HostTensor y = garbage(t, out);
  Status s = cpu::elementwise(fn, {a.view(), b.view()}, y.view());
  INFO(s.message());
  REQUIRE(s.isOk());
  std::vector<double> r(static_cast<size_t>(y.numElements()));
  for (int64_t i = 0; i < y.numElements(); ++i)
    r[i] = ref(getD(a, broadcastIndex(sa, out, i)),
               getD(b, broadcastIndex(sb, out, i)));
  expectClose(y, r, isFloat(t) ? tolFor(t) : 0.0);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// checkUnary of F::fn against the expression `ref` of x over [lo, hi].
#define MP_CHECK_UNARY(fn, ref, lo, hi)                                        \
  checkUnary(F::fn, [](double x) { return ref; }, lo, hi)

TEST_CASE("elementwise unary float functions match their definitions",
          "[runtime][cpu][elementwise]") {
  using F = ElementwiseFn;
  const double selA = 1.67326319217681884765625,
               selG = 1.05070102214813232421875;
  MP_CHECK_UNARY(Identity, x, -4, 4);
  MP_CHECK_UNARY(Abs, std::fabs(x), -4, 4);
  MP_CHECK_UNARY(Neg, -x, -4, 4);
  MP_CHECK_UNARY(Exp, std::exp(x), -5, 5);
  MP_CHECK_UNARY(Log, std::log(x), 0.1, 4);
  MP_CHECK_UNARY(Sqrt, std::sqrt(x), 0, 4);
  MP_CHECK_UNARY(Reciprocal, 1 / x, 0.2, 3);
  MP_CHECK_UNARY(Relu, x > 0 ? x : 0, -4, 4);
  checkUnary(F::Sigmoid, sigmoid, -6, 6);
  MP_CHECK_UNARY(Tanh, std::tanh(x), -4, 4);
  MP_CHECK_UNARY(Erf, std::erf(x), -3, 3);
  MP_CHECK_UNARY(Floor, std::floor(x), -4, 4);
  MP_CHECK_UNARY(Ceil, std::ceil(x), -4, 4);
  MP_CHECK_UNARY(Round, std::nearbyint(x), -4, 4);
  MP_CHECK_UNARY(Sign, double((x > 0) - (x < 0)), -4, 4);
  MP_CHECK_UNARY(Sin, std::sin(x), -4, 4);
  MP_CHECK_UNARY(Cos, std::cos(x), -4, 4);
  MP_CHECK_UNARY(Tan, std::tan(x), -1.2, 1.2);
  MP_CHECK_UNARY(Asin, std::asin(x), -0.9, 0.9);
  MP_CHECK_UNARY(Acos, std::acos(x), -0.9, 0.9);
  MP_CHECK_UNARY(Atan, std::atan(x), -4, 4);
  MP_CHECK_UNARY(Sinh, std::sinh(x), -4, 4);
  MP_CHECK_UNARY(Cosh, std::cosh(x), -4, 4);
  MP_CHECK_UNARY(Asinh, std::asinh(x), -4, 4);
  MP_CHECK_UNARY(Acosh, std::acosh(x), 1.1, 4);
  MP_CHECK_UNARY(Atanh, std::atanh(x), -0.9, 0.9);
  MP_CHECK_UNARY(Softplus, std::log(1 + std::exp(x)), -6, 6);
  MP_CHECK_UNARY(Softsign, x / (1 + std::fabs(x)), -4, 4);
  checkUnary(
      F::HardSwish,
      [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); },
      -5, 5);
  checkUnary(
      F::Gelu,
      [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4,
      4);
  checkUnary(
      F::GeluTanh,
      [](double x) {
        return 0.5 * x *
               (1 +
                std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
      },
      -4, 4);
  // Parameters: ONNX's defaults, then given values.
  MP_CHECK_UNARY(LeakyRelu, x < 0 ? 0.01 * x : x, -4, 4);
  checkUnary(F::LeakyRelu, [](double x) { return x < 0 ? 0.25 * x : x; }, -4, 4,
             {0.25, std::nullopt});
  MP_CHECK_UNARY(Elu, x < 0 ? std::exp(x) - 1 : x, -4, 4);
  checkUnary(F::Elu,
             [](double x) { return x < 0 ? 0.7 * (std::exp(x) - 1) : x; }, -4,
             4, {0.7, std::nullopt});
  checkUnary(F::Celu,
             [](double x) {
               return std::max(0.0, x) +
                      std::min(0.0, 1.3 * (std::exp(x / 1.3) - 1));
             },
             -4, 4, {1.3, std::nullopt});
  checkUnary(
      F::Selu,
      [&](double x) {
        return x > 0 ? selG * x : selG * (selA * std::exp(x) - selA);
      },
      -4, 4);
  checkUnary(F::Selu,
             [](double x) {
               return x > 0 ? 1.1 * x : 1.1 * (1.5 * std::exp(x) - 1.5);
             },
             -4, 4, {1.5, 1.1});
  checkUnary(
      F::HardSigmoid,
      [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); }, -5,
      5);
  checkUnary(
      F::HardSigmoid,
      [](double x) { return std::max(0.0, std::min(1.0, 0.3 * x + 0.4)); }, -5,
      5, {0.3, 0.4});
  MP_CHECK_UNARY(ThresholdedRelu, x > 1.0 ? x : 0, -4, 4);
  checkUnary(F::ThresholdedRelu, [](double x) { return x > 0.25 ? x : 0; }, -4,
             4, {0.25, std::nullopt});
  checkUnary(
      F::Shrink, [](double x) { return x < -0.5 ? x : (x > 0.5 ? x : 0); }, -2,
      2);
  checkUnary(
      F::Shrink,
      [](double x) { return x < -0.3 ? x + 0.1 : (x > 0.3 ? x - 0.1 : 0); }, -2,
      2, {0.3, 0.1});
  checkUnary(F::Clip, [](double x) { return std::min(1.0, std::max(-0.5, x)); },
             -2, 2, {-0.5, 1.0});
}
#undef MP_CHECK_UNARY

TEST_CASE("elementwise: special values of round, sign, is_nan, is_inf",
          "[runtime][cpu][elementwise]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : kFloatTypes) {
    INFO("dtype " << dtypeName(t));
    // Round is half to even.
    HostTensor x =
        tensor(t, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.25, -3.75});
    HostTensor y = garbage(t, {8});
    REQUIRE(
        cpu::elementwise(ElementwiseFn::Round, {x.view()}, y.view()).isOk());
    expectExact(y, {0, 2, 2, -0.0, -2, -2, 3, -4});

    HostTensor special = tensor(t, {5}, {inf, -inf, nan, 0.0, -2.0});
    HostTensor sign = garbage(t, {5});
    REQUIRE(cpu::elementwise(ElementwiseFn::Sign, {special.view()}, sign.view())
                .isOk());
    expectExact(sign, {1, -1, nan, 0, -1});
    HostTensor b = garbage(DType::Bool, {5});
    REQUIRE(cpu::elementwise(ElementwiseFn::IsNan, {special.view()}, b.view())
                .isOk());
    expectExact(b, {0, 0, 1, 0, 0});
    REQUIRE(cpu::elementwise(ElementwiseFn::IsInf, {special.view()}, b.view())
                .isOk());
    expectExact(b, {1, 1, 0, 0, 0});
    // alpha = detect_negative, beta = detect_positive.
    REQUIRE(cpu::elementwise(ElementwiseFn::IsInf, {special.view()}, b.view(),
                             {0.0, 1.0})
                .isOk());
    expectExact(b, {1, 0, 0, 0, 0});
    REQUIRE(cpu::elementwise(ElementwiseFn::IsInf, {special.view()}, b.view(),
                             {1.0, 0.0})
                .isOk());
    expectExact(b, {0, 1, 0, 0, 0});
  }
}

TEST_CASE("elementwise: 16-bit results are rounded once from f32",
          "[runtime][cpu][elementwise]") {
  HostTensor y = garbage(DType::F16, {1});
  // Mean of three f16 values: the f32 sum (not an f16 partial sum) is divided.
  HostTensor p = tensor(DType::F16, {1}, {2048});
  HostTensor q = tensor(DType::F16, {1}, {1});
  HostTensor r = tensor(DType::F16, {1}, {1});
  REQUIRE(cpu::elementwise(ElementwiseFn::Sum, {p.view(), q.view(), r.view()},
                           y.view())
              .isOk());
  CHECK(getD(y, 0) == 2050.0); // f16 partial sums would give 2048
  REQUIRE(cpu::elementwise(ElementwiseFn::Mean, {p.view(), q.view(), r.view()},
                           y.view())
              .isOk());
  CHECK(getD(y, 0) == roundTo(DType::F16, 2050.0 / 3));
}

//===----------------------------------------------------------------------===//
// Binary, broadcasting
//===----------------------------------------------------------------------===//

TEST_CASE("elementwise binary float functions broadcast as numpy",
          "[runtime][cpu][elementwise]") {
  using F = ElementwiseFn;
  struct Case {
    F fn;
    Ref2 ref;
    double lo, hi, blo, bhi;
  };
  auto pyMod = [](double a, double b) {
    double r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  };
  std::vector<Case> cases = {
      {F::Add, [](double a, double b) { return a + b; }, -4, 4, -4, 4},
      {F::Sub, [](double a, double b) { return a - b; }, -4, 4, -4, 4},
      {F::Mul, [](double a, double b) { return a * b; }, -4, 4, -4, 4},
      {F::Div, [](double a, double b) { return a / b; }, -4, 4, 0.5, 3},
      {F::Pow, [](double a, double b) { return std::pow(a, b); }, 0.1, 3, -2,
       2},
      {F::Mod, pyMod, -6, 6, -3, -0.5},
      {F::Mod, pyMod, -6, 6, 0.5, 3},
      {F::Fmod, [](double a, double b) { return std::fmod(a, b); }, -6, 6, -3,
       3},
      {F::PRelu, [](double a, double s) { return a < 0 ? s * a : a; }, -4, 4,
       -1, 1},
      {F::ReluGrad, [](double dy, double x) { return x > 0 ? dy : 0.0; }, -4, 4,
       -4, 4},
      // dy * d/dx [x Phi(x)], and of the tanh form.
      {F::GeluGrad,
       [](double dy, double x) {
         return dy * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                      x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
       },
       -4, 4, -5, 5},
      {F::GeluTanhGrad,
       [](double dy, double x) {
         const double k = std::sqrt(2 / M_PI), c = 0.044715;
         const double t = std::tanh(k * (x + c * x * x * x));
         return dy * (0.5 * (1 + t) +
                      0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x));
       },
       -4, 4, -5, 5},
      {F::Max, [](double a, double b) { return std::max(a, b); }, -4, 4, -4, 4},
      {F::Min, [](double a, double b) { return std::min(a, b); }, -4, 4, -4, 4},
  };
  struct Shapes {
    Shape a, b, out;
  };
  std::vector<Shapes> shapes = {
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}, // same shape
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},    // a column per row
      {{2, 3, 4}, {4}, {2, 3, 4}},       // a row vector ([M, N] + [N])
      {{3, 1}, {2, 3, 4}, {2, 3, 4}},    // the broadcast operand first
      {{}, {2, 3}, {2, 3}},              // a scalar
      {{2, 3}, {}, {2, 3}},
      {{1}, {4, 1}, {4, 1}},
      {{4, 1}, {1, 5}, {4, 5}}, // an outer product
      {{700}, {1}, {700}},      // longer than a chunk
      {{2, 1, 600}, {3, 1}, {2, 3, 600}},
  };
  for (const Case &c : cases)
    for (DType t : kFloatTypes)
      for (const Shapes &s : shapes) {
        INFO("a " << s.a.size() << "-d, b " << s.b.size() << "-d, y "
                  << s.out.size() << "-d");
        checkBinary(c.fn, c.ref, t, s.a, s.b, s.out, c.lo, c.hi, c.blo, c.bhi);
      }
}

TEST_CASE(
    "elementwise: max and min propagate NaN, variadic sum, mean, max, min",
    "[runtime][cpu][elementwise]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : kFloatTypes) {
    INFO("dtype " << dtypeName(t));
    HostTensor a = tensor(t, {4}, {nan, 1, 2, nan});
    HostTensor b = tensor(t, {4}, {1, nan, 0, nan});
    HostTensor y = garbage(t, {4});
    REQUIRE(cpu::elementwise(ElementwiseFn::Max, {a.view(), b.view()}, y.view())
                .isOk());
    expectExact(y, {nan, nan, 2, nan});
    REQUIRE(cpu::elementwise(ElementwiseFn::Min, {a.view(), b.view()}, y.view())
                .isOk());
    expectExact(y, {nan, nan, 0, nan});

    // Three inputs of different shapes: [2, 3], [3], [2, 1].
    Rng rng(5);
    HostTensor p = randomTensor(t, {2, 3}, rng, -4, 4);
    HostTensor q = randomTensor(t, {3}, rng, -4, 4);
    HostTensor r = randomTensor(t, {2, 1}, rng, -4, 4);
    HostTensor out = garbage(t, {2, 3});
    for (ElementwiseFn fn : {ElementwiseFn::Sum, ElementwiseFn::Mean,
                             ElementwiseFn::Max, ElementwiseFn::Min}) {
      INFO("fn " << cpu::elementwiseFnName(fn));
      REQUIRE(cpu::elementwise(fn, {p.view(), q.view(), r.view()}, out.view())
                  .isOk());
      std::vector<double> ref(6);
      for (int64_t i = 0; i < 6; ++i) {
        double v[3] = {getD(p, i), getD(q, i % 3), getD(r, i / 3)};
        switch (fn) {
        case ElementwiseFn::Sum:
          ref[i] = v[0] + v[1] + v[2];
          break;
        case ElementwiseFn::Mean:
          ref[i] = (v[0] + v[1] + v[2]) / 3;
          break;
        case ElementwiseFn::Max:
          ref[i] = std::max({v[0], v[1], v[2]});
          break;
        default:
          ref[i] = std::min({v[0], v[1], v[2]});
          break;
        }
      }
      expectClose(out, ref, tolFor(t));
    }
    // One input: a copy (broadcast).
    HostTensor one = garbage(t, {2, 3});
    REQUIRE(
        cpu::elementwise(ElementwiseFn::Sum, {q.view()}, one.view()).isOk());
    expectExact(one, {getD(q, 0), getD(q, 1), getD(q, 2), getD(q, 0),
                      getD(q, 1), getD(q, 2)});
  }
}

TEST_CASE("elementwise: clip with tensors, where, in place",
          "[runtime][cpu][elementwise]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I32, DType::U8}) {
    INFO("dtype " << dtypeName(t));
    bool flt = isFloat(t);
    HostTensor x = tensor(t, {2, 3}, {0, 1, 2, 3, 4, flt ? nan : 5});
    HostTensor lo = tensor(t, {3}, {1, 1, 3});
    HostTensor hi = tensor(t, {2, 1}, {2, 4});
    HostTensor y = garbage(t, {2, 3});
    REQUIRE(cpu::elementwise(ElementwiseFn::Clip,
                             {x.view(), lo.view(), hi.view()}, y.view())
                .isOk());
    // min > max gives max (ONNX); NaN stays NaN.
    expectExact(y, {1, 1, 2, 3, 4, flt ? nan : 4});
    // Clip with attribute bounds.
    REQUIRE(
        cpu::elementwise(ElementwiseFn::Clip, {x.view()}, y.view(), {1.0, 3.0})
            .isOk());
    expectExact(y, {1, 1, 2, 3, 3, flt ? nan : 3});

    HostTensor c = tensor(DType::Bool, {2, 1}, {1, 0});
    HostTensor w = garbage(t, {2, 3});
    REQUIRE(cpu::elementwise(ElementwiseFn::Where,
                             {c.view(), x.view(), lo.view()}, w.view())
                .isOk());
    expectExact(w, {0, 1, 2, 1, 1, 3});

    // In place: y is x.
    HostTensor z = tensor(t, {2, 3}, {0, 1, 2, 3, 4, 5});
    REQUIRE(
        cpu::elementwise(ElementwiseFn::Add, {z.view(), lo.view()}, z.view())
            .isOk());
    expectExact(z, {1, 2, 5, 4, 5, 8});
  }
}

//===----------------------------------------------------------------------===//
// Integers and bool
//===----------------------------------------------------------------------===//

TEST_CASE("elementwise integer semantics: div truncates, mod takes the "
          "divisor's sign",
          "[runtime][cpu][elementwise]") {
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64}) {
    INFO("dtype " << dtypeName(t));
    HostTensor a = tensor(t, {8}, {7, -7, 7, -7, 6, 5, 0, -100});
    HostTensor b = tensor(t, {8}, {3, 3, -3, -3, 3, 0, 4, -1});
    HostTensor y = garbage(t, {8});
    auto run = [&](ElementwiseFn fn) {
      Status s = cpu::elementwise(fn, {a.view(), b.view()}, y.view());
      INFO(s.message());
      REQUIRE(s.isOk());
    };
    run(ElementwiseFn::Div);
    expectExact(y, {2, -2, -2, 2, 2, 0, 0, 100}); // x / 0 gives 0
    run(ElementwiseFn::Mod);
    expectExact(y, {1, 2, -2, -1, 0, 0, 0, 0});
    run(ElementwiseFn::Fmod);
    expectExact(y, {1, -1, 1, -1, 0, 0, 0, 0});
    run(ElementwiseFn::Add);
    expectExact(y, {10, -4, 4, -10, 9, 5, 4, -101});
    run(ElementwiseFn::Mul);
    expectExact(y, {21, -21, -21, 21, 18, 0, 0, 100});
    run(ElementwiseFn::PRelu);
    expectExact(y, {7, -21, 7, 21, 6, 5, 0, 100});
    run(ElementwiseFn::Max);
    expectExact(y, {7, 3, 7, -3, 6, 5, 4, -1});
    HostTensor u = garbage(t, {8});
    REQUIRE(cpu::elementwise(ElementwiseFn::Abs, {a.view()}, u.view()).isOk());
    expectExact(u, {7, 7, 7, 7, 6, 5, 0, 100});
    REQUIRE(cpu::elementwise(ElementwiseFn::Neg, {a.view()}, u.view()).isOk());
    expectExact(u, {-7, 7, -7, 7, -6, -5, 0, 100});
    REQUIRE(cpu::elementwise(ElementwiseFn::Relu, {a.view()}, u.view()).isOk());
    expectExact(u, {7, 0, 7, 0, 6, 5, 0, 0});
    REQUIRE(cpu::elementwise(ElementwiseFn::Sign, {a.view()}, u.view()).isOk());
    expectExact(u, {1, -1, 1, -1, 1, 1, 0, -1});
  }
  // Wrap-around (two's complement), MIN / -1.
  HostTensor a = tensor(DType::I8, {3}, {100, -128, -128});
  HostTensor b = tensor(DType::I8, {3}, {100, -1, 1});
  HostTensor y = garbage(DType::I8, {3});
  REQUIRE(cpu::elementwise(ElementwiseFn::Add, {a.view(), b.view()}, y.view())
              .isOk());
  expectExact(y, {-56, 127, -127});
  REQUIRE(cpu::elementwise(ElementwiseFn::Div, {a.view(), b.view()}, y.view())
              .isOk());
  expectExact(y, {1, -128, -128});
  // Unsigned mod and div.
  HostTensor ua = tensor(DType::U32, {3}, {7, 4000000000.0, 5});
  HostTensor ub = tensor(DType::U32, {3}, {3, 7, 0});
  HostTensor uy = garbage(DType::U32, {3});
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Mod, {ua.view(), ub.view()}, uy.view())
          .isOk());
  expectExact(uy, {1, 4000000000.0 - 7 * 571428571.0, 0});
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Div, {ua.view(), ub.view()}, uy.view())
          .isOk());
  expectExact(uy, {2, 571428571, 0});
}

TEST_CASE("elementwise: integer pow, bitshift, and random integer arithmetic",
          "[runtime][cpu][elementwise]") {
  // Pow: an integer base with integer and float exponents; a float base
  // with an integer exponent.
  HostTensor base = tensor(DType::I32, {4}, {2, -3, 5, 7});
  HostTensor ie = tensor(DType::I64, {4}, {10, 3, 0, 2});
  HostTensor fe = tensor(DType::F32, {4}, {0.5, 2, 1.5, -1});
  HostTensor y = garbage(DType::I32, {4});
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Pow, {base.view(), ie.view()}, y.view())
          .isOk());
  expectExact(y, {1024, -27, 1, 49});
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Pow, {base.view(), fe.view()}, y.view())
          .isOk());
  expectExact(y, {1, 9, 11, 0}); // truncated: sqrt 2, 5^1.5 = 11.18, 1/7
  HostTensor fb = tensor(DType::F16, {4}, {2, -3, 0.5, 7});
  HostTensor fy = garbage(DType::F16, {4});
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Pow, {fb.view(), ie.view()}, fy.view())
          .isOk());
  expectExact(fy, {1024, -27, 1, 49});
  HostTensor e16 = tensor(DType::F32, {1}, {0.1}); // not rounded to f16 first
  REQUIRE(
      cpu::elementwise(ElementwiseFn::Pow, {fb.view(), e16.view()}, fy.view())
          .isOk());
  expectClose(fy,
              {std::pow(2.0, double(0.1f)), std::nan(""),
               std::pow(0.5, double(0.1f)), std::pow(7.0, double(0.1f))},
              4e-6);

  for (DType t : {DType::U8, DType::U16, DType::U32, DType::U64}) {
    INFO("dtype " << dtypeName(t));
    HostTensor a = tensor(t, {5}, {1, 3, 255, 16, 1});
    HostTensor s = tensor(t, {5}, {0, 2, 1, 4, 100});
    HostTensor r = garbage(t, {5});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitShiftLeft, {a.view(), s.view()},
                             r.view())
                .isOk());
    double wide = t == DType::U8 ? 254 : 510;
    expectExact(r, {1, 12, wide, t == DType::U8 ? 0.0 : 256.0, 0});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitShiftRight, {a.view(), s.view()},
                             r.view())
                .isOk());
    expectExact(r, {1, 0, 127, 1, 0});
  }

  // Random integer add / sub / mul / min against int64 arithmetic with wrap.
  Rng rng(11);
  for (DType t : {DType::I16, DType::I32, DType::U16, DType::U64}) {
    INFO("dtype " << dtypeName(t));
    HostTensor a(t, {3, 50}), b(t, {50});
    for (int64_t i = 0; i < a.numElements(); ++i)
      setD(a, i, std::floor(rng.uniform(0, 30000)));
    for (int64_t i = 0; i < b.numElements(); ++i)
      setD(b, i, std::floor(rng.uniform(0, 30000)));
    HostTensor r = garbage(t, {3, 50});
    auto wrapTo = [t](double v) {
      int64_t i = static_cast<int64_t>(v);
      switch (t) {
      case DType::I16:
        return double(int16_t(uint16_t(i)));
      case DType::U16:
        return double(uint16_t(i));
      case DType::I32:
        return double(int32_t(uint32_t(i)));
      default:
        return double(uint64_t(i));
      }
    };
    for (auto [fn, f] : std::vector<std::pair<ElementwiseFn, Ref2>>{
             {ElementwiseFn::Add, [](double x, double z) { return x + z; }},
             {ElementwiseFn::Sub, [](double x, double z) { return x - z; }},
             {ElementwiseFn::Mul, [](double x, double z) { return x * z; }},
             {ElementwiseFn::Min,
              [](double x, double z) { return std::min(x, z); }}}) {
      if (t == DType::U64 && fn == ElementwiseFn::Sub)
        continue; // 2^64 - small is not exact in double
      REQUIRE(cpu::elementwise(fn, {a.view(), b.view()}, r.view()).isOk());
      std::vector<double> ref(150);
      for (int64_t i = 0; i < 150; ++i)
        ref[i] = wrapTo(f(getD(a, i), getD(b, i % 50)));
      expectExact(r, ref);
    }
  }
}

TEST_CASE("elementwise: bool logic and comparisons give bool",
          "[runtime][cpu][elementwise]") {
  HostTensor p = tensor(DType::Bool, {4}, {0, 0, 1, 1});
  HostTensor q = tensor(DType::Bool, {4}, {0, 1, 0, 1});
  HostTensor y = garbage(DType::Bool, {4});
  auto run = [&](ElementwiseFn fn, std::vector<TensorView> in) {
    Status s = cpu::elementwise(fn, in, y.view());
    INFO(s.message());
    REQUIRE(s.isOk());
  };
  run(ElementwiseFn::And, {p.view(), q.view()});
  expectExact(y, {0, 0, 0, 1});
  run(ElementwiseFn::Or, {p.view(), q.view()});
  expectExact(y, {0, 1, 1, 1});
  run(ElementwiseFn::Xor, {p.view(), q.view()});
  expectExact(y, {0, 1, 1, 0});
  run(ElementwiseFn::Not, {p.view()});
  expectExact(y, {1, 1, 0, 0});
  run(ElementwiseFn::Equal, {p.view(), q.view()});
  expectExact(y, {1, 0, 0, 1});
  run(ElementwiseFn::Less, {p.view(), q.view()});
  expectExact(y, {0, 1, 0, 0});
  // A true stored as another non-zero byte is still true.
  static_cast<uint8_t *>(p.data())[3] = 7;
  run(ElementwiseFn::And, {p.view(), q.view()});
  expectExact(y, {0, 0, 0, 1});

  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                  DType::U64}) {
    INFO("dtype " << dtypeName(t));
    bool flt = isFloat(t);
    HostTensor a = tensor(t, {2, 3}, {1, 2, 3, 4, 5, flt ? nan : 6});
    HostTensor b = tensor(t, {3}, {2, 2, 2});
    HostTensor r = garbage(DType::Bool, {2, 3});
    struct {
      ElementwiseFn fn;
      std::vector<double> want;
    } cases[] = {
        {ElementwiseFn::Equal, {0, 1, 0, 0, 0, 0}},
        {ElementwiseFn::Less, {1, 0, 0, 0, 0, 0}},
        {ElementwiseFn::Greater, {0, 0, 1, 1, 1, flt ? 0.0 : 1.0}},
        {ElementwiseFn::LessEqual, {1, 1, 0, 0, 0, 0}},
        {ElementwiseFn::GreaterEqual, {0, 1, 1, 1, 1, flt ? 0.0 : 1.0}},
    };
    for (const auto &c : cases) {
      INFO("fn " << cpu::elementwiseFnName(c.fn));
      REQUIRE(cpu::elementwise(c.fn, {a.view(), b.view()}, r.view()).isOk());
      expectExact(r, c.want);
    }
  }
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_CASE("elementwise rejects bad arguments", "[runtime][cpu][elementwise]") {
  HostTensor a(DType::F32, {2, 3}), b(DType::F32, {4}), y(DType::F32, {2, 3});
  HostTensor i32(DType::I32, {2, 3}), yb(DType::Bool, {2, 3});
  auto err = [](Status s) {
    REQUIRE_FALSE(s.isOk());
    return s.message();
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(
      err(cpu::elementwise(ElementwiseFn::Add, {a.view(), b.view()}, y.view())),
      Contains("input 1 [4] does not broadcast to y [2, 3]"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Add, {a.view()}, y.view())),
             Contains("expects 2 inputs, got 1"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Add, {a.view(), i32.view()},
                                  y.view())),
             Contains("input 1 has dtype i32; expected f32"));
  CHECK_THAT(
      err(cpu::elementwise(ElementwiseFn::Exp, {i32.view()}, i32.view())),
      Contains("elementwise exp: does not take dtype i32"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Less, {a.view(), a.view()},
                                  y.view())),
             Contains("y has dtype f32; expected bool"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::BitShiftLeft,
                                  {i32.view(), i32.view()}, i32.view())),
             Contains("does not take dtype i32"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::And, {a.view(), a.view()},
                                  yb.view())),
             Contains("does not take dtype f32"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Where,
                                  {a.view(), a.view(), a.view()}, y.view())),
             Contains("input 0 has dtype f32; expected bool"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Clip, {a.view(), a.view()},
                                  y.view())),
             Contains("expects 1 (x) or 3 (x, min, max) inputs, got 2"));
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Sum, {}, y.view())),
             Contains("expects 1 or more inputs, got 0"));
  // y partly overlapping an input.
  TensorView shifted = y.view();
  shifted.shape = {2, 2};
  TensorView inside = y.view();
  inside.shape = {2, 2};
  inside.data = y.as<float>() + 1;
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Abs, {shifted}, inside)),
             Contains("y overlaps input 0"));
  // A view without data.
  TensorView none{DType::F32, {2, 3}, nullptr};
  CHECK_THAT(err(cpu::elementwise(ElementwiseFn::Abs, {none}, y.view())),
             Contains("input 0 has no data"));
  CHECK_FALSE(cpu::parseElementwiseFn("frobnicate"));
  CHECK(cpu::parseElementwiseFn("gelu_tanh") == ElementwiseFn::GeluTanh);
  CHECK(cpu::elementwiseFnName(ElementwiseFn::BitShiftRight) ==
        "bitshift_right");
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

TEST_CASE("cast: every f16 and bf16 value round-trips through f32 and f64",
          "[runtime][cpu][cast]") {
  for (DType t16 : {DType::F16, DType::BF16}) {
    INFO("dtype " << dtypeName(t16));
    HostTensor all(t16, {65536});
    for (uint32_t i = 0; i < 65536; ++i)
      all.as<uint16_t>()[i] = static_cast<uint16_t>(i);
    for (DType wide : {DType::F32, DType::F64}) {
      HostTensor w(wide, {65536}), back(t16, {65536});
      REQUIRE(cpu::cast(all.view(), w.view()).isOk());
      REQUIRE(cpu::cast(w.view(), back.view()).isOk());
      int64_t bad = 0;
      for (uint32_t i = 0; i < 65536; ++i) {
        uint16_t h = static_cast<uint16_t>(i);
        double expect = t16 == DType::F16 ? toFloat(Half::fromBits(h))
                                          : toFloat(BFloat16::fromBits(h));
        double got = getD(w, i);
        uint16_t again = back.as<uint16_t>()[i];
        bool nan = std::isnan(expect);
        bool ok = nan ? std::isnan(got) && std::isnan(getD(back, i))
                      : (got == expect && again == h);
        bad += !ok;
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("cast: rounding, truncation, bool and integer edge cases",
          "[runtime][cpu][cast]") {
  auto castTo = [](const HostTensor &x, DType t) {
    HostTensor y = garbage(t, x.shape());
    Status s = cpu::cast(x.view(), y.view());
    INFO(s.message());
    REQUIRE(s.isOk());
    return y;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Float -> integer truncates toward zero; NaN and inf do not crash.
  HostTensor f = tensor(DType::F32, {6}, {2.7, -2.7, 0.5, -0.0, 127.9, -129});
  expectExact(castTo(f, DType::I32), {2, -2, 0, 0, 127, -129});
  expectExact(castTo(f, DType::I64), {2, -2, 0, 0, 127, -129});
  HostTensor odd = tensor(DType::F64, {3}, {nan, inf, -inf});
  for (DType t : {DType::I8, DType::I32, DType::I64, DType::U8, DType::U64})
    castTo(odd, t); // the values are unspecified
  // f16 -> int.
  expectExact(castTo(tensor(DType::F16, {2}, {-3.5, 65504}), DType::I32),
              {-3, 65504});
  // To bool: != 0 (NaN is true); from bool: 0 / 1.
  HostTensor g = tensor(DType::F32, {4}, {0.0, -0.0, 0.25, nan});
  expectExact(castTo(g, DType::Bool), {0, 0, 1, 1});
  expectExact(castTo(tensor(DType::I64, {3}, {0, -5, 256}), DType::Bool),
              {0, 1, 1});
  HostTensor bools = tensor(DType::Bool, {2}, {1, 0});
  expectExact(castTo(bools, DType::F16), {1, 0});
  expectExact(castTo(bools, DType::I64), {1, 0});
  // Integer -> integer wraps.
  HostTensor ints = tensor(DType::I32, {4}, {300, -1, 65536 + 7, -129});
  expectExact(castTo(ints, DType::U8), {44, 255, 7, 127});
  expectExact(castTo(ints, DType::U16), {300, 65535, 7, 65536 - 129});
  expectExact(castTo(ints, DType::I8), {44, -1, 7, 127});
  // To f16 rounds to nearest even, overflow gives inf.
  HostTensor mid =
      tensor(DType::F32, {4}, {1 + 0x1p-11, 1 + 3 * 0x1p-11, 65520, 70000});
  expectExact(castTo(mid, DType::F16), {1, 1 + 0x1p-9, inf, inf});
  // f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is above the midpoint, which
  // rounding through f32 (to 1 + 2^-11, a tie) would lose.
  HostTensor d = tensor(DType::F64, {1}, {1 + 0x1p-11 + 0x1p-40});
  expectExact(castTo(d, DType::F16), {1 + 0x1p-10});
  // An integer above f16's range; int64 -> f32 rounds once.
  expectExact(castTo(tensor(DType::I64, {2}, {100000, 2049}), DType::F16),
              {inf, 2048});
  expectExact(castTo(tensor(DType::I64, {1}, {16777217}), DType::F32),
              {16777216});
  // f16 <-> bf16 through the exact f32.
  expectExact(
      castTo(tensor(DType::F16, {2}, {1 + 0x1p-10, 3.140625}), DType::BF16),
      {1, roundTo(DType::BF16, 3.140625)});
  expectExact(castTo(tensor(DType::BF16, {2}, {1e30, 0.1}), DType::F16),
              {inf, roundTo(DType::F16, roundTo(DType::BF16, 0.1))});
  // Shapes may differ when the counts agree.
  HostTensor s = tensor(DType::I32, {2, 2}, {1, 2, 3, 4});
  HostTensor flat = garbage(DType::F64, {4});
  REQUIRE(cpu::cast(s.view(), flat.view()).isOk());
  expectExact(flat, {1, 2, 3, 4});
  HostTensor wrong(DType::F32, {5});
  Status bad = cpu::cast(s.view(), wrong.view());
  REQUIRE_FALSE(bad.isOk());
  CHECK_THAT(bad.message(),
             Catch::Matchers::Contains(
                 "x [2, 2] and y [5] have different numbers of elements"));
}

//===----------------------------------------------------------------------===//
// Plan calls
//===----------------------------------------------------------------------===//

TEST_CASE("kernel.elementwise and kernel.cast through the CPU call table",
          "[runtime][cpu][elementwise][calls]") {
  cpu::CallFn ew = cpu::cpuCallTable().find("kernel.elementwise");
  cpu::CallFn cast = cpu::cpuCallTable().find("kernel.cast");
  REQUIRE(ew);
  REQUIRE(cast);
  HostTensor x = tensor(DType::F32, {4}, {-2, -1, 0.5, 3});
  HostTensor y = garbage(DType::F32, {4});

  PlanCall call;
  call.kind = "kernel.elementwise";
  call.operands = {0};
  call.results = {1};
  call.attributes = {{"fn", std::string("leaky_relu")}, {"alpha", 0.5}};
  cpu::CallArgs args{call, {x.view()}, {y.view()}};
  Status s = ew(args);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectExact(y, {-1, -0.5, 0.5, 3});

  // An int alpha is read as a float; beta for selu's gamma.
  call.attributes = {
      {"fn", std::string("selu")}, {"alpha", int64_t(2)}, {"beta", 0.5}};
  REQUIRE(ew(args).isOk());
  expectClose(y,
              {0.5 * 2 * (std::exp(-2.0) - 1), 0.5 * 2 * (std::exp(-1.0) - 1),
               0.25, 1.5},
              4e-6);

  // Binary with broadcasting.
  HostTensor b = tensor(DType::F32, {1}, {10});
  call.attributes = {{"fn", std::string("sub")}};
  cpu::CallArgs args2{call, {x.view(), b.view()}, {y.view()}};
  REQUIRE(ew(args2).isOk());
  expectExact(y, {-12, -11, -9.5, -7});

  // Errors name the problem.
  call.attributes = {{"fn", std::string("frobnicate")}};
  CHECK_THAT(ew(args).message(),
             Catch::Matchers::Contains("unknown elementwise fn 'frobnicate'"));
  call.attributes = {};
  CHECK_THAT(ew(args).message(),
             Catch::Matchers::Contains("attribute 'fn' is missing"));
  call.attributes = {{"fn", std::string("elu")}, {"alpha", std::string("x")}};
  CHECK_THAT(ew(args).message(),
             Catch::Matchers::Contains("attribute 'alpha' must be a float"));
  cpu::CallArgs noResult{call, {x.view()}, {}};
  CHECK_THAT(ew(noResult).message(),
             Catch::Matchers::Contains("expects 1 results, got 0"));

  PlanCall c;
  c.kind = "kernel.cast";
  HostTensor h = garbage(DType::F16, {4});
  cpu::CallArgs cargs{c, {x.view()}, {h.view()}};
  REQUIRE(cast(cargs).isOk());
  expectExact(h, {-2, -1, 0.5, 3});
}

//===----------------------------------------------------------------------===//
// Timings (hidden: mp-runtime-tests "[elementwise-bench]")
//===----------------------------------------------------------------------===//

TEST_CASE("elementwise, cast and reduce timings (BERT / ResNet-50 shapes)",
          "[.][bench][elementwise-bench]") {
  auto time = [](const char *what, int64_t bytes,
                 const std::function<Status()> &f) {
    REQUIRE(f().isOk()); // warm up
    int reps = 10;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      REQUIRE(f().isOk());
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count() /
        reps;
    std::printf("%-48s %8.3f ms  %6.2f GB/s\n", what, s * 1e3,
                bytes / s * 1e-9);
  };
  Rng rng(1);
  const int64_t bs = 4 * 128, h = 768; // BERT-base activations, batch 4
  HostTensor a = randomTensor(DType::F32, {bs, h}, rng, -1, 1);
  HostTensor b = randomTensor(DType::F32, {bs, h}, rng, -1, 1);
  HostTensor bias = randomTensor(DType::F32, {h}, rng, -1, 1);
  HostTensor y(DType::F32, {bs, h});
  int64_t n = bs * h * 4;
  time("add f32 [512,768] + [512,768]", 3 * n, [&] {
    return cpu::elementwise(ElementwiseFn::Add, {a.view(), b.view()}, y.view());
  });
  time("add f32 [512,768] + [768]", 2 * n, [&] {
    return cpu::elementwise(ElementwiseFn::Add, {a.view(), bias.view()},
                            y.view());
  });
  time("gelu f32 [512,768]", 2 * n, [&] {
    return cpu::elementwise(ElementwiseFn::Gelu, {a.view()}, y.view());
  });
  HostTensor a16(DType::F16, {bs, h}), b16(DType::F16, {bs, h}),
      y16(DType::F16, {bs, h});
  REQUIRE(cpu::cast(a.view(), a16.view()).isOk());
  REQUIRE(cpu::cast(b.view(), b16.view()).isOk());
  time("add f16 [512,768] + [512,768]", 3 * n / 2, [&] {
    return cpu::elementwise(ElementwiseFn::Add, {a16.view(), b16.view()},
                            y16.view());
  });
  time("cast f32 -> f16 [512,768]", n + n / 2,
       [&] { return cpu::cast(a.view(), y16.view()); });
  HostTensor mean(DType::F32, {bs, 1});
  time("reduce mean f32 [512,768] over 1", n, [&] {
    return cpu::reduce(a.view(), mean.view(), cpu::ReduceFn::Mean, {1});
  });
  HostTensor mean16(DType::F16, {bs, 1});
  time("reduce mean f16 [512,768] over 1", n / 2, [&] {
    return cpu::reduce(a16.view(), mean16.view(), cpu::ReduceFn::Mean, {1});
  });
  HostTensor act = randomTensor(DType::F32, {32, 2048, 7, 7}, rng, 0, 1);
  HostTensor relu(DType::F32, {32, 2048, 7, 7}),
      pooled(DType::F32, {32, 2048, 1, 1});
  int64_t an = act.numElements() * 4;
  time("relu f32 [32,2048,7,7]", 2 * an, [&] {
    return cpu::elementwise(ElementwiseFn::Relu, {act.view()}, relu.view());
  });
  time("reduce mean f32 [32,2048,7,7] over 2,3", an, [&] {
    return cpu::reduce(act.view(), pooled.view(), cpu::ReduceFn::Mean, {2, 3});
  });
  HostTensor seq = randomTensor(DType::F32, {4, 128, 768}, rng, 0, 1);
  HostTensor mid(DType::F32, {4, 768});
  time("reduce sum f32 [4,128,768] over 1", n, [&] {
    return cpu::reduce(seq.view(), mid.view(), cpu::ReduceFn::Sum, {1});
  });
  HostTensor scores = randomTensor(DType::F32, {4 * 12 * 128, 128}, rng, -3, 3);
  HostTensor mx(DType::F32, {4 * 12 * 128});
  time("reduce max f32 [6144,128] over 1", scores.numElements() * 4, [&] {
    return cpu::reduce(scores.view(), mx.view(), cpu::ReduceFn::Max, {1});
  });
}

TEST_CASE("integer pow: f64 by squaring, the cast rules",
          "[cpu][elementwise]") {
  // Exact below 2^53; beyond, the products of squaring (the GPU computes
  // the same ones, mp/Runtime/IntegerPow.h); results beyond the dtype
  // saturate; negative exponents truncate toward zero.
  CHECK(integerPow(3, 4) == 81.0);
  CHECK(integerPow(-2, 5) == -32.0);
  CHECK(integerPow(2, -1) == 0.5);
  CHECK(integerPow(0, 0) == 1.0);
  CHECK(integerPow(9, 0.5) == std::pow(9.0, 0.5));
  // 3^34 = 16677181699666569 is not a double: squaring's products round
  // it down to ...568 (the C library's pow rounds it up to ...570).
  CHECK(integerPow(3, 34) == 16677181699666568.0);
  HostTensor a(DType::I8, {4}), b(DType::I8, {4}), y(DType::I8, {4});
  int8_t av[] = {2, -2, 3, 5}, bv[] = {6, 7, -1, 2};
  std::memcpy(a.data(), av, 4);
  std::memcpy(b.data(), bv, 4);
  REQUIRE(cpu::elementwise(ElementwiseFn::Pow, {a.view(), b.view()}, y.view())
              .isOk());
  const int8_t *out = y.as<int8_t>();
  CHECK(out[0] == 64);
  CHECK(out[1] == -128); // -128 exactly
  CHECK(out[2] == 0);    // 1/3 truncated
  CHECK(out[3] == 25);
}

TEST_CASE("elementwise: bitwise and, or, xor and not on every integer dtype",
          "[runtime][cpu][elementwise]") {
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                  DType::U16, DType::U32, DType::U64}) {
    INFO("dtype " << dtypeName(t));
    const bool isSigned =
        t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
    // Broadcast: a [2, 2] against b [2].
    HostTensor a = tensor(t, {2, 2}, {12, 10, 0, isSigned ? -1.0 : 7.0});
    HostTensor b = tensor(t, {2}, {10, 6});
    HostTensor r = garbage(t, {2, 2});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitwiseAnd, {a.view(), b.view()},
                             r.view())
                .isOk());
    expectExact(r, {8, 2, 0, isSigned ? 6.0 : 6.0});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitwiseOr, {a.view(), b.view()},
                             r.view())
                .isOk());
    expectExact(r, {14, 14, 10, isSigned ? -1.0 : 7.0});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitwiseXor, {a.view(), b.view()},
                             r.view())
                .isOk());
    expectExact(r, {6, 12, 10, isSigned ? -7.0 : 1.0});
    REQUIRE(cpu::elementwise(ElementwiseFn::BitwiseNot, {a.view()}, r.view())
                .isOk());
    if (isSigned)
      expectExact(r, {-13, -11, -1, 0});
    else if (t == DType::U8)
      expectExact(r, {243, 245, 255, 248});
  }
  // Not on floats or bool.
  HostTensor f = tensor(DType::F32, {1}, {1});
  CHECK_FALSE(cpu::elementwise(ElementwiseFn::BitwiseAnd, {f.view(), f.view()},
                               f.view())
                  .isOk());
}
