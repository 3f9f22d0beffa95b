// Tests of the CPU backward kernels (mp/Runtime/CPU/BackwardKernels.h).
//
// Every gradient is checked against central finite differences of the
// forward kernel it differentiates (conv, pool, batchNormTraining,
// logSoftmax + nllLoss, nllLoss, rnn) on small pseudo-random problems with
// strides, pads, dilations, groups, overlapping and ceil-mode windows,
// ignored labels, class weights and both LSTM directions: the scalar is
// L = sum(forward(...) * dy) for a random dy, so that dL/dinput is the
// backward's result. Linear forwards (conv in w, average pooling, NLL) take
// large steps; the others small ones with tolerances for f32 rounding (the
// losses run in f64). 16-bit variants must be within about one rounding of
// the f32 result on the same (rounded) inputs, f64 variants match f32. Bad
// shapes and dtypes must give an error Status naming the problem.
#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::cpu;

namespace {

/// t converted to dtype `to` (rounded once to 16-bit types).
HostTensor convert(const HostTensor &t, DType to) {
  HostTensor r(to, t.shape());
  for (int64_t i = 0; i < t.numElements(); ++i)
    setD(r, i, getD(t, i));
  return r;
}

double dot(const HostTensor &a, const HostTensor &b) {
  REQUIRE(a.numElements() == b.numElements());
  double s = 0.0;
  for (int64_t i = 0; i < a.numElements(); ++i)
    s += getD(a, i) * getD(b, i);
  return s;
}

/// Central differences of f with respect to every element of t (perturbed
/// in place and restored); the step actually taken after rounding counts.
std::vector<double> numericGrad(HostTensor &t, double h,
                                const std::function<double()> &f) {
  std::vector<double> g(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    double orig = getD(t, i);
    setD(t, i, orig + h);
    double xp = getD(t, i), fp = f();
    setD(t, i, orig - h);
    double xm = getD(t, i), fm = f();
    setD(t, i, orig);
    g[i] = (fp - fm) / (xp - xm);
  }
  return g;
}

/// Within about one rounding to dtype t of the reference (scaled by the
/// largest reference magnitude for values near 0).
void expectRounded(const std::vector<double> &got,
                   const std::vector<double> &ref, DType t,
                   const std::string &what) {
  double ulp = t == DType::F16 ? 0x1p-10 : t == DType::BF16 ? 0x1p-7 : 1e-6;
  double scale = 0.0;
  for (double v : ref)
    scale = std::max(scale, std::fabs(v));
  expectClose(got, ref, 1e-3 * ulp * scale, ulp, what);
}

void expectError(const Status &s, const std::string &phrase) {
  INFO("message: " << s.message());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find(phrase) != std::string::npos);
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

//===----------------------------------------------------------------------===//
// Convolution backward filter
//===----------------------------------------------------------------------===//

struct ConvCase {
  const char *name;
  Shape x, w;
  ConvOptions o;
};

Shape convOut(const ConvCase &c) {
  Shape y{c.x[0], c.w[0]};
  size_t k = c.x.size() - 2;
  for (size_t i = 0; i < k; ++i) {
    int64_t s = c.o.strides.empty() ? 1 : c.o.strides[i];
    int64_t d = c.o.dilations.empty() ? 1 : c.o.dilations[i];
    int64_t pb = c.o.padsBegin.empty() ? 0 : c.o.padsBegin[i];
    int64_t pe = c.o.padsEnd.empty() ? 0 : c.o.padsEnd[i];
    y.push_back((c.x[i + 2] + pb + pe - d * (c.w[i + 2] - 1) - 1) / s + 1);
  }
  return y;
}

ConvOptions convOpts(std::vector<int64_t> strides,
                     std::vector<int64_t> dilations,
                     std::vector<int64_t> padsBegin,
                     std::vector<int64_t> padsEnd, int64_t groups) {
  ConvOptions o;
  o.strides = std::move(strides);
  o.dilations = std::move(dilations);
  o.padsBegin = std::move(padsBegin);
  o.padsEnd = std::move(padsEnd);
  o.groups = groups;
  return o;
}

std::vector<ConvCase> convCases() {
  return {
      {"2-D, groups 2, strides, pads, dilations",
       {2, 4, 6, 5},
       {6, 2, 3, 2},
       convOpts({2, 1}, {1, 2}, {1, 0}, {1, 1}, 2)},
      {"1-D, stride 2, dilation 2",
       {2, 3, 9},
       {2, 3, 3},
       convOpts({2}, {2}, {2}, {1}, 1)},
      {"3-D, padded",
       {1, 2, 4, 3, 3},
       {3, 2, 2, 2, 2},
       convOpts({1, 2, 1}, {}, {1, 0, 1}, {0, 1, 1}, 1)},
      {"pointwise", {2, 3, 4, 4}, {5, 3, 1, 1}, convOpts({}, {}, {}, {}, 1)},
      {"depthwise",
       {2, 3, 5, 5},
       {3, 1, 3, 3},
       convOpts({1, 1}, {1, 1}, {1, 1}, {1, 1}, 3)},
      {"kernel as large as the padded input",
       {1, 2, 3, 2},
       {2, 2, 4, 3},
       convOpts({}, {}, {1, 0}, {0, 1}, 1)},
  };
}

TEST_CASE("conv backward filter matches finite differences of conv",
          "[cpu][backward]") {
  Rng rng(101);
  for (const ConvCase &c : convCases()) {
    INFO(c.name);
    HostTensor x = randomTensor(DType::F32, c.x, rng),
               w = randomTensor(DType::F32, c.w, rng);
    Shape yShape = convOut(c);
    HostTensor dy = randomTensor(DType::F32, yShape, rng),
               y(DType::F32, yShape);
    HostTensor dw(DType::F32, c.w);
    REQUIRE(convBackwardFilter(x.view(), dy.view(), dw.view(), c.o).isOk());
    // conv is linear in w: a large step has no truncation error.
    std::vector<double> ref = numericGrad(w, 0.5, [&] {
      REQUIRE(conv(x.view(), w.view(), y.view(), c.o).isOk());
      return dot(y, dy);
    });
    expectClose(values(dw), ref, 1e-4, 1e-4, "f32 dw");

    // f64 data computes in f64: the same values as f32 (within f32 rounding).
    HostTensor x64 = convert(x, DType::F64), dy64 = convert(dy, DType::F64);
    HostTensor dw64(DType::F64, c.w);
    REQUIRE(
        convBackwardFilter(x64.view(), dy64.view(), dw64.view(), c.o).isOk());
    expectClose(values(dw64), ref, 1e-4, 1e-4, "f64 dw");

    // 16-bit x and dy: f32 accumulation of the rounded values, dw rounded
    // once (to f16, or kept in f32).
    for (DType t : {DType::F16, DType::BF16}) {
      HostTensor xl = convert(x, t), dyl = convert(dy, t);
      HostTensor xr = convert(xl, DType::F32), dyr = convert(dyl, DType::F32);
      HostTensor want(DType::F32, c.w), got(t, c.w), got32(DType::F32, c.w);
      REQUIRE(
          convBackwardFilter(xr.view(), dyr.view(), want.view(), c.o).isOk());
      REQUIRE(
          convBackwardFilter(xl.view(), dyl.view(), got.view(), c.o).isOk());
      REQUIRE(
          convBackwardFilter(xl.view(), dyl.view(), got32.view(), c.o).isOk());
      expectRounded(values(got), values(want), t, "16-bit dw");
      expectClose(values(got32), values(want), 1e-6, 1e-6,
                  "f32 dw of 16-bit x");
    }
  }
}

TEST_CASE("conv backward filter: a column block smaller than the output",
          "[cpu][backward]") {
  // 4 MiB of im2col per block: [2*9, 300*300] needs several blocks.
  Rng rng(102);
  ConvCase c{
      "big", {1, 2, 302, 302}, {2, 2, 3, 3}, convOpts({}, {}, {}, {}, 1)};
  HostTensor x = randomTensor(DType::F32, c.x, rng);
  Shape yShape = convOut(c);
  HostTensor dy = randomTensor(DType::F32, yShape, rng);
  HostTensor dw(DType::F32, c.w), dw64(DType::F64, c.w);
  REQUIRE(convBackwardFilter(x.view(), dy.view(), dw.view(), c.o).isOk());
  HostTensor x64 = convert(x, DType::F64), dy64 = convert(dy, DType::F64);
  REQUIRE(convBackwardFilter(x64.view(), dy64.view(), dw64.view(), c.o).isOk());
  // A direct sum for one filter tap.
  double direct = 0.0;
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 300; ++j)
      direct += getD(dy64, (1 * 300 + i) * 300 + j) *
                getD(x64, (0 * 302 + i + 2) * 302 + j + 1);
  CHECK(getD(dw64, ((1 * 2 + 0) * 3 + 2) * 3 + 1) ==
        Approx(direct).epsilon(1e-12));
  expectClose(values(dw), values(dw64), 1e-3, 1e-4, "f32 against f64");
}

TEST_CASE("conv backward filter rejects bad shapes and dtypes",
          "[cpu][backward]") {
  HostTensor x = filled(DType::F32, {1, 4, 5, 5}, 1.0),
             dy = filled(DType::F32, {1, 2, 3, 3}, 1.0),
             dw(DType::F32, {2, 4, 3, 3});
  ConvOptions o;
  REQUIRE(convBackwardFilter(x.view(), dy.view(), dw.view(), o).isOk());
  CHECK(getD(dw, 0) == 9.0);
  HostTensor dyBad = filled(DType::F32, {1, 2, 3, 4}, 1.0);
  expectError(convBackwardFilter(x.view(), dyBad.view(), dw.view(), o),
              "dy has shape [1, 2, 3, 4], expected [1, 2, 3, 3]");
  HostTensor dwBad(DType::F32, {2, 3, 3, 3});
  expectError(convBackwardFilter(x.view(), dy.view(), dwBad.view(), o),
              "expected C/groups = 4");
  HostTensor dy16 = convert(dy, DType::F16);
  expectError(convBackwardFilter(x.view(), dy16.view(), dw.view(), o),
              "dy has dtype f16, x f32");
  HostTensor dw64(DType::F64, {2, 4, 3, 3});
  expectError(convBackwardFilter(x.view(), dy.view(), dw64.view(), o),
              "dw has dtype f64");
  HostTensor xi(DType::I32, {1, 4, 5, 5});
  expectError(convBackwardFilter(xi.view(), dy.view(), dw.view(), o),
              "x has dtype i32");
  ConvOptions g3 = o;
  g3.groups = 3;
  expectError(convBackwardFilter(x.view(), dy.view(), dw.view(), g3),
              "groups = 3");
  ConvOptions nhwc = o;
  nhwc.layout = Layout::NHWC;
  expectError(convBackwardFilter(x.view(), dy.view(), dw.view(), nhwc), "NCHW");
  ConvOptions badStrides = o;
  badStrides.strides = {1};
  expectError(convBackwardFilter(x.view(), dy.view(), dw.view(), badStrides),
              "strides has 1 entries");
  HostTensor x2(DType::F32, {4, 5});
  expectError(convBackwardFilter(x2.view(), dy.view(), dw.view(), o),
              "rank >= 3");
  HostTensor big(DType::F32, {1, 4, 2, 2});
  expectError(convBackwardFilter(big.view(), dy.view(), dw.view(), o),
              "smaller than the dilated kernel");
  TensorView inX{DType::F32, {2, 4, 3, 3}, x.data()};
  expectError(convBackwardFilter(x.view(), dy.view(), inX, o), "x overlaps dw");
}

//===----------------------------------------------------------------------===//
// Pooling backward
//===----------------------------------------------------------------------===//

struct PoolCase {
  const char *name;
  Shape x;
  PoolOptions o;
  bool ceil = false;
};

Shape poolOut(const PoolCase &c) {
  Shape y{c.x[0], c.x[1]};
  for (size_t i = 0; i + 2 < c.x.size(); ++i) {
    int64_t s = c.o.strides.empty() ? 1 : c.o.strides[i];
    int64_t d = c.o.dilations.empty() ? 1 : c.o.dilations[i];
    int64_t p = c.x[i + 2] + (c.o.padsBegin.empty() ? 0 : c.o.padsBegin[i]) +
                (c.o.padsEnd.empty() ? 0 : c.o.padsEnd[i]);
    int64_t span = d * (c.o.kernel[i] - 1) + 1;
    y.push_back((c.ceil ? ceilDiv(p - span, s) : (p - span) / s) + 1);
  }
  return y;
}

PoolOptions poolOpts(PoolKind kind, std::vector<int64_t> kernel,
                     std::vector<int64_t> strides,
                     std::vector<int64_t> padsBegin,
                     std::vector<int64_t> padsEnd,
                     std::vector<int64_t> dilations = {},
                     bool countIncludePad = false) {
  PoolOptions o;
  o.kind = kind;
  o.kernel = std::move(kernel);
  o.strides = std::move(strides);
  o.padsBegin = std::move(padsBegin);
  o.padsEnd = std::move(padsEnd);
  o.dilations = std::move(dilations);
  o.countIncludePad = countIncludePad;
  return o;
}

std::vector<PoolCase> poolCases() {
  const PoolKind Max = PoolKind::Max, Avg = PoolKind::Average;
  return {
      {"max 2-D, overlapping windows, pads",
       {2, 2, 5, 6},
       poolOpts(Max, {3, 3}, {2, 1}, {1, 1}, {1, 0})},
      {"max 2-D, dilations, ceil mode",
       {1, 2, 7, 6},
       poolOpts(Max, {2, 2}, {2, 2}, {0, 1}, {1, 0}, {2, 1}),
       true},
      {"max 1-D", {2, 3, 8}, poolOpts(Max, {3}, {2}, {1}, {1})},
      {"max 3-D",
       {1, 2, 4, 3, 4},
       poolOpts(Max, {2, 2, 2}, {1, 1, 2}, {0, 1, 0}, {1, 0, 0})},
      {"avg, padding excluded, ceil mode",
       {2, 2, 5, 5},
       poolOpts(Avg, {3, 2}, {2, 2}, {1, 0}, {1, 1}),
       true},
      {"avg_include_pad, overlapping",
       {1, 3, 6, 5},
       poolOpts(Avg, {3, 3}, {1, 2}, {1, 1}, {1, 1}, {}, true)},
      {"avg 1-D, dilation", {2, 2, 9}, poolOpts(Avg, {3}, {2}, {2}, {0}, {2})},
      {"avg 4-D (the generic path of the forward)",
       {1, 1, 3, 3, 2, 3},
       poolOpts(Avg, {2, 2, 1, 2}, {1, 2, 1, 1}, {0, 1, 0, 1}, {1, 0, 0, 0})},
  };
}

TEST_CASE("pool backward matches finite differences of pool",
          "[cpu][backward]") {
  Rng rng(201);
  for (const PoolCase &c : poolCases()) {
    INFO(c.name);
    // Distinct values 0.05 apart, so that a step of 0.01 never changes a
    // window's maximum.
    HostTensor x(DType::F32, c.x);
    std::vector<int64_t> perm(static_cast<size_t>(x.numElements()));
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<int64_t>(i);
    for (size_t i = perm.size(); i > 1; --i)
      std::swap(perm[i - 1], perm[rng.next() % i]);
    for (int64_t i = 0; i < x.numElements(); ++i)
      setD(x, i, 0.05 * double(perm[i]) - 1.0);
    Shape yShape = poolOut(c);
    HostTensor dy = randomTensor(DType::F32, yShape, rng),
               y(DType::F32, yShape);
    HostTensor dx = filled(DType::F32, c.x, 777.0);
    Status st = poolBackward(x.view(), dy.view(), dx.view(), c.o);
    INFO(st.message());
    REQUIRE(st.isOk());
    std::vector<double> ref = numericGrad(x, 0.01, [&] {
      REQUIRE(pool(x.view(), y.view(), c.o).isOk());
      return dot(y, dy);
    });
    expectClose(values(dx), ref, 2e-4, 1e-3, "f32 dx");

    HostTensor x64 = convert(x, DType::F64), dy64 = convert(dy, DType::F64),
               dx64(DType::F64, c.x);
    REQUIRE(poolBackward(x64.view(), dy64.view(), dx64.view(), c.o).isOk());
    expectClose(values(dx64), values(dx), 1e-6, 1e-6, "f64 dx");

    for (DType t : {DType::F16, DType::BF16}) {
      HostTensor xl = convert(x, t), dyl = convert(dy, t), dxl(t, c.x);
      HostTensor xr = convert(xl, DType::F32), dyr = convert(dyl, DType::F32),
                 want(DType::F32, c.x);
      REQUIRE(poolBackward(xr.view(), dyr.view(), want.view(), c.o).isOk());
      REQUIRE(poolBackward(xl.view(), dyl.view(), dxl.view(), c.o).isOk());
      expectRounded(values(dxl), values(want), t, "16-bit dx");
    }
  }
}

TEST_CASE("max pool backward sends ties to the element pool's indices name",
          "[cpu][backward]") {
  Rng rng(202);
  PoolCase c{"ties",
             {2, 2, 6, 7},
             poolOpts(PoolKind::Max, {3, 2}, {1, 2}, {1, 1}, {1, 0}, {1, 2}),
             true};
  // Only the values 0 and 1: nearly every window has ties.
  HostTensor x(DType::F32, c.x);
  for (int64_t i = 0; i < x.numElements(); ++i)
    setD(x, i, double(rng.next() % 2));
  Shape yShape = poolOut(c);
  HostTensor y(DType::F32, yShape), idx(DType::I64, yShape);
  HostTensor dy = randomTensor(DType::F32, yShape, rng), dx(DType::F32, c.x);
  REQUIRE(pool(x.view(), y.view(), c.o, &idx.view()).isOk());
  REQUIRE(poolBackward(x.view(), dy.view(), dx.view(), c.o).isOk());
  std::vector<double> want(static_cast<size_t>(x.numElements()), 0.0);
  for (int64_t q = 0; q < idx.numElements(); ++q)
    if (idx.as<int64_t>()[q] >= 0)
      want[idx.as<int64_t>()[q]] += getD(dy, q);
  expectClose(values(dx), want, 1e-6, 1e-6, "dx");
}

TEST_CASE("pool backward in NHWC matches NCHW", "[cpu][backward]") {
  Rng rng(203);
  for (PoolKind kind : {PoolKind::Max, PoolKind::Average}) {
    PoolCase c{
        "nhwc", {2, 3, 5, 4}, poolOpts(kind, {2, 3}, {2, 1}, {1, 1}, {0, 1})};
    HostTensor x = randomTensor(DType::F32, c.x, rng);
    Shape yShape = poolOut(c);
    HostTensor dy = randomTensor(DType::F32, yShape, rng), dx(DType::F32, c.x);
    REQUIRE(poolBackward(x.view(), dy.view(), dx.view(), c.o).isOk());
    // [N, C, H, W] -> [N, H, W, C].
    auto toNhwc = [](const HostTensor &t) {
      const Shape &s = t.shape();
      HostTensor r(t.dtype(), {s[0], s[2], s[3], s[1]});
      for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t ch = 0; ch < s[1]; ++ch)
          for (int64_t i = 0; i < s[2] * s[3]; ++i)
            setD(r, (n * s[2] * s[3] + i) * s[1] + ch,
                 getD(t, (n * s[1] + ch) * s[2] * s[3] + i));
      return r;
    };
    PoolOptions o = c.o;
    o.layout = Layout::NHWC;
    HostTensor xt = toNhwc(x), dyt = toNhwc(dy), dxt(DType::F32, xt.shape());
    REQUIRE(poolBackward(xt.view(), dyt.view(), dxt.view(), o).isOk());
    CHECK(values(dxt) == values(toNhwc(dx)));
  }
}

TEST_CASE("pool backward rejects bad shapes and dtypes", "[cpu][backward]") {
  PoolOptions o = poolOpts(PoolKind::Max, {2, 2}, {2, 2}, {}, {});
  HostTensor x = filled(DType::F32, {1, 2, 4, 5}, 1.0),
             dy = filled(DType::F32, {1, 2, 2, 2}, 1.0),
             dx(DType::F32, {1, 2, 4, 5});
  REQUIRE(poolBackward(x.view(), dy.view(), dx.view(), o).isOk());
  CHECK(values(dx)[0] == 1.0); // the first of four equal values
  CHECK(values(dx)[1] == 0.0);
  CHECK(values(dx)[4] == 0.0); // the last column is in no window
  HostTensor dyCeil = filled(DType::F32, {1, 2, 2, 3}, 1.0);
  REQUIRE(poolBackward(x.view(), dyCeil.view(), dx.view(), o).isOk());
  HostTensor dyBad(DType::F32, {1, 2, 2, 4});
  expectError(poolBackward(x.view(), dyBad.view(), dx.view(), o),
              "has 4 outputs along spatial dimension 1, expected 2 (floor) or "
              "3 (ceil)");
  HostTensor dxBad(DType::F32, {1, 2, 4, 4});
  expectError(poolBackward(x.view(), dy.view(), dxBad.view(), o),
              "dx has shape [1, 2, 4, 4]");
  HostTensor dx16(DType::F16, {1, 2, 4, 5});
  expectError(poolBackward(x.view(), dy.view(), dx16.view(), o),
              "must have x's dtype f32");
  HostTensor xi(DType::I64, {1, 2, 4, 5});
  expectError(poolBackward(xi.view(), dy.view(), dx.view(), o),
              "x has dtype i64");
  PoolOptions w1 = o;
  w1.kernel = {2};
  expectError(poolBackward(x.view(), dy.view(), dx.view(), w1),
              "window has 1 entries");
  HostTensor dyC(DType::F32, {1, 3, 2, 2});
  expectError(poolBackward(x.view(), dyC.view(), dx.view(), o),
              "differ in batch or channels");
  expectError(poolBackward(x.view(), dy.view(), x.view(), o), "x overlaps dx");
}

//===----------------------------------------------------------------------===//
// Batch normalization backward
//===----------------------------------------------------------------------===//

TEST_CASE("batch norm backward matches finite differences of the training "
          "forward",
          "[cpu][backward]") {
  Rng rng(301);
  for (Shape shape : {Shape{3, 2, 2, 3}, Shape{5, 3}, Shape{2, 2, 4}}) {
    INFO("x " << shape.size() << "-D");
    const int64_t C = shape[1];
    HostTensor x = randomTensor(DType::F32, shape, rng, -1.0, 2.0);
    HostTensor scale = randomTensor(DType::F32, {C}, rng, 0.5, 1.5),
               bias = randomTensor(DType::F32, {C}, rng);
    HostTensor dy = randomTensor(DType::F32, shape, rng);
    HostTensor dx(DType::F32, shape), dscale(DType::F32, {C}),
        dbias(DType::F32, {C});
    BatchNormOptions o;
    o.epsilon = 1e-3f;
    REQUIRE(batchNormBackward(x.view(), scale.view(), dy.view(), dx.view(),
                              dscale.view(), dbias.view(), o)
                .isOk());
    HostTensor mean = filled(DType::F32, {C}, 0.0),
               var = filled(DType::F32, {C}, 1.0);
    HostTensor y(DType::F32, shape), rm(DType::F32, {C}), rv(DType::F32, {C});
    auto loss = [&] {
      REQUIRE(batchNormTraining(x.view(), scale.view(), bias.view(),
                                mean.view(), var.view(), y.view(), rm.view(),
                                rv.view(), o)
                  .isOk());
      return dot(y, dy);
    };
    expectClose(values(dx), numericGrad(x, 1e-2, loss), 2e-3, 2e-3, "dx");
    expectClose(values(dscale), numericGrad(scale, 1e-2, loss), 2e-3, 2e-3,
                "dscale");
    expectClose(values(dbias), numericGrad(bias, 0.5, loss), 1e-4, 1e-4,
                "dbias");

    // The gradient with respect to x of the normalized output sums to 0 per
    // channel (shifting x shifts the mean).
    std::vector<double> sums(static_cast<size_t>(C), 0.0);
    int64_t inner = x.numElements() / shape[0] / C;
    for (int64_t i = 0; i < x.numElements(); ++i)
      sums[(i / inner) % C] += getD(dx, i);
    for (double s : sums)
      CHECK(std::fabs(s) < 1e-4);

    HostTensor x64 = convert(x, DType::F64), dy64 = convert(dy, DType::F64),
               dx64(DType::F64, shape);
    REQUIRE(batchNormBackward(x64.view(), scale.view(), dy64.view(),
                              dx64.view(), dscale.view(), dbias.view(), o)
                .isOk());
    expectClose(values(dx64), values(dx), 1e-6, 1e-5, "f64 dx");

    for (DType t : {DType::F16, DType::BF16}) {
      HostTensor xl = convert(x, t), dyl = convert(dy, t), dxl(t, shape);
      HostTensor xr = convert(xl, DType::F32), dyr = convert(dyl, DType::F32),
                 want(DType::F32, shape), ws(DType::F32, {C}),
                 wb(DType::F32, {C});
      HostTensor gs(DType::F32, {C}), gb(DType::F32, {C});
      REQUIRE(batchNormBackward(xr.view(), scale.view(), dyr.view(),
                                want.view(), ws.view(), wb.view(), o)
                  .isOk());
      REQUIRE(batchNormBackward(xl.view(), scale.view(), dyl.view(), dxl.view(),
                                gs.view(), gb.view(), o)
                  .isOk());
      expectRounded(values(dxl), values(want), t, "16-bit dx");
      expectClose(values(gs), values(ws), 1e-6, 1e-6, "dscale of 16-bit x");
      expectClose(values(gb), values(wb), 1e-6, 1e-6, "dbias of 16-bit x");
    }
  }
}

TEST_CASE("batch norm backward: NHWC matches NCHW", "[cpu][backward]") {
  Rng rng(302);
  HostTensor x = randomTensor(DType::F32, {2, 3, 4}, rng),
             dy = randomTensor(DType::F32, {2, 3, 4}, rng),
             scale = randomTensor(DType::F32, {3}, rng);
  HostTensor dx(DType::F32, {2, 3, 4}), ds(DType::F32, {3}),
      db(DType::F32, {3});
  REQUIRE(batchNormBackward(x.view(), scale.view(), dy.view(), dx.view(),
                            ds.view(), db.view())
              .isOk());
  auto swap = [](const HostTensor &t) { // [2, 3, 4] <-> [2, 4, 3]
    const Shape &s = t.shape();
    HostTensor r(t.dtype(), {s[0], s[2], s[1]});
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t i = 0; i < s[1]; ++i)
        for (int64_t j = 0; j < s[2]; ++j)
          setD(r, (n * s[2] + j) * s[1] + i,
               getD(t, (n * s[1] + i) * s[2] + j));
    return r;
  };
  HostTensor xt = swap(x), dyt = swap(dy), dxt(DType::F32, xt.shape());
  HostTensor ds2(DType::F32, {3}), db2(DType::F32, {3});
  BatchNormOptions o;
  o.layout = Layout::NHWC;
  REQUIRE(batchNormBackward(xt.view(), scale.view(), dyt.view(), dxt.view(),
                            ds2.view(), db2.view(), o)
              .isOk());
  expectClose(values(dxt), values(swap(dx)), 1e-6, 1e-6, "dx");
  expectClose(values(ds2), values(ds), 1e-6, 1e-6, "dscale");
  expectClose(values(db2), values(db), 1e-6, 1e-6, "dbias");
}

TEST_CASE("batch norm backward rejects bad shapes and dtypes",
          "[cpu][backward]") {
  HostTensor x = filled(DType::F32, {2, 3, 2}, 1.0),
             dy = filled(DType::F32, {2, 3, 2}, 1.0),
             s = filled(DType::F32, {3}, 1.0);
  HostTensor dx(DType::F32, {2, 3, 2}), ds(DType::F32, {3}),
      db(DType::F32, {3});
  REQUIRE(batchNormBackward(x.view(), s.view(), dy.view(), dx.view(), ds.view(),
                            db.view())
              .isOk());
  CHECK(values(db) == std::vector<double>{4, 4, 4});
  HostTensor s2(DType::F32, {2});
  expectError(batchNormBackward(x.view(), s2.view(), dy.view(), dx.view(),
                                ds.view(), db.view()),
              "scale is f32 [2], expected a float [3]");
  HostTensor dx16(DType::F16, {2, 3, 2});
  expectError(batchNormBackward(x.view(), s.view(), dy.view(), dx16.view(),
                                ds.view(), db.view()),
              "dx (f16 [2, 3, 2]) must have x's dtype and shape");
  HostTensor dyBad(DType::F32, {2, 3, 3});
  expectError(batchNormBackward(x.view(), s.view(), dyBad.view(), dx.view(),
                                ds.view(), db.view()),
              "dy (f32 [2, 3, 3])");
  HostTensor x1(DType::F32, {3}), dy1(DType::F32, {3}), dx1(DType::F32, {3});
  expectError(batchNormBackward(x1.view(), s.view(), dy1.view(), dx1.view(),
                                ds.view(), db.view()),
              "rank >= 2");
  HostTensor dbI(DType::I32, {3});
  expectError(batchNormBackward(x.view(), s.view(), dy.view(), dx.view(),
                                ds.view(), dbI.view()),
              "dbias is i32 [3]");
  expectError(batchNormBackward(x.view(), s.view(), dy.view(), dy.view(),
                                ds.view(), db.view()),
              "dx overlaps dy");
  BatchNormOptions bad;
  bad.epsilon = -1.0f;
  expectError(batchNormBackward(x.view(), s.view(), dy.view(), dx.view(),
                                ds.view(), db.view(), bad),
              "epsilon");
  HostTensor empty(DType::F32, {0, 3, 2});
  HostTensor dxE(DType::F32, {0, 3, 2});
  expectError(batchNormBackward(empty.view(), s.view(), empty.view(),
                                dxE.view(), ds.view(), db.view()),
              "no elements per channel");
}

//===----------------------------------------------------------------------===//
// Loss gradients
//===----------------------------------------------------------------------===//

struct LossCase {
  const char *name;
  Shape scores;
  LossReduction reduction;
  bool weights;
  std::optional<int64_t> ignore;
  DType labelType;
};

std::vector<LossCase> lossCases() {
  const LossReduction None = LossReduction::None, Sum = LossReduction::Sum,
                      Mean = LossReduction::Mean;
  return {
      {"[N, C], mean", {4, 5}, Mean, false, std::nullopt, DType::I64},
      {"[N, C], mean, weights, ignore_index",
       {6, 4},
       Mean,
       true,
       2,
       DType::I32},
      {"[N, C, d], sum, ignore_index", {2, 4, 3}, Sum, false, 0, DType::I64},
      {"[N, C, d1, d2], none, weights, ignore_index -1",
       {3, 4, 2, 2},
       None,
       true,
       -1,
       DType::I32},
      {"[N, C, d], mean, weights",
       {2, 3, 4},
       Mean,
       true,
       std::nullopt,
       DType::I64},
  };
}

/// Labels in [0, C), a few set to the ignored value.
HostTensor makeLabels(const LossCase &c, Rng &rng) {
  Shape ls{c.scores[0]};
  ls.insert(ls.end(), c.scores.begin() + 2, c.scores.end());
  HostTensor labels(c.labelType, ls);
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    int64_t v = static_cast<int64_t>(rng.next() % uint64_t(c.scores[1]));
    if (c.ignore && i % 3 == 1)
      v = *c.ignore;
    setD(labels, i, double(v));
  }
  return labels;
}

HostTensor dlossFor(const LossCase &c, const HostTensor &labels, Rng &rng) {
  return c.reduction == LossReduction::None
             ? randomTensor(DType::F32, labels.shape(), rng)
             : filled(DType::F32, {}, 0.75);
}

TEST_CASE("softmax cross entropy grad matches finite differences of "
          "logSoftmax + nllLoss",
          "[cpu][backward]") {
  Rng rng(401);
  for (const LossCase &c : lossCases()) {
    INFO(c.name);
    HostTensor scores = randomTensor(DType::F64, c.scores, rng, -2.0, 2.0);
    HostTensor labels = makeLabels(c, rng), dloss = dlossFor(c, labels, rng);
    HostTensor w = randomTensor(DType::F64, {c.scores[1]}, rng, 0.2, 2.0);
    const TensorView *wv = c.weights ? &w.view() : nullptr;
    HostTensor up = c.reduction == LossReduction::None
                        ? convert(dloss, DType::F64)
                        : filled(DType::F64, {}, 0.75);
    HostTensor lsm(DType::F64, c.scores);
    HostTensor loss(DType::F64, c.reduction == LossReduction::None
                                    ? labels.shape()
                                    : Shape{});
    auto forward = [&] {
      REQUIRE(logSoftmax(scores.view(), lsm.view(), 1).isOk());
      REQUIRE(nllLoss(lsm.view(), labels.view(), wv, loss.view(), c.reduction,
                      c.ignore)
                  .isOk());
      return dot(loss, up);
    };
    HostTensor ds(DType::F64, c.scores);
    REQUIRE(softmaxCrossEntropyGrad(scores.view(), labels.view(), dloss.view(),
                                    wv, ds.view(), c.reduction, c.ignore)
                .isOk());
    std::vector<double> ref = numericGrad(scores, 1e-5, forward);
    expectClose(values(ds), ref, 1e-8, 1e-6, "f64 dscores");

    // f32 weights and scores; f16 / bf16 scores against f32 on the same
    // values.
    HostTensor w32 = convert(w, DType::F32);
    const TensorView *w32v = c.weights ? &w32.view() : nullptr;
    HostTensor s32 = convert(scores, DType::F32), ds32(DType::F32, c.scores);
    REQUIRE(softmaxCrossEntropyGrad(s32.view(), labels.view(), dloss.view(),
                                    w32v, ds32.view(), c.reduction, c.ignore)
                .isOk());
    expectClose(values(ds32), ref, 1e-6, 1e-5, "f32 dscores");
    for (DType t : {DType::F16, DType::BF16}) {
      HostTensor sl = convert(scores, t), dsl(t, c.scores);
      HostTensor sr = convert(sl, DType::F32), want(DType::F32, c.scores);
      REQUIRE(softmaxCrossEntropyGrad(sr.view(), labels.view(), dloss.view(),
                                      w32v, want.view(), c.reduction, c.ignore)
                  .isOk());
      REQUIRE(softmaxCrossEntropyGrad(sl.view(), labels.view(), dloss.view(),
                                      w32v, dsl.view(), c.reduction, c.ignore)
                  .isOk());
      expectRounded(values(dsl), values(want), t, "16-bit dscores");
    }
  }
}

TEST_CASE("nll loss grad matches finite differences of nllLoss",
          "[cpu][backward]") {
  Rng rng(402);
  for (const LossCase &c : lossCases()) {
    INFO(c.name);
    HostTensor input = randomTensor(DType::F64, c.scores, rng, -3.0, 0.0);
    HostTensor labels = makeLabels(c, rng), dloss = dlossFor(c, labels, rng);
    HostTensor w = randomTensor(DType::F64, {c.scores[1]}, rng, 0.2, 2.0);
    const TensorView *wv = c.weights ? &w.view() : nullptr;
    HostTensor loss(DType::F64, c.reduction == LossReduction::None
                                    ? labels.shape()
                                    : Shape{});
    HostTensor up = c.reduction == LossReduction::None
                        ? convert(dloss, DType::F64)
                        : filled(DType::F64, {}, 0.75);
    HostTensor din = filled(DType::F64, c.scores, 777.0);
    REQUIRE(nllLossGrad(input.view(), labels.view(), dloss.view(), wv,
                        din.view(), c.reduction, c.ignore)
                .isOk());
    std::vector<double> ref = numericGrad(input, 0.5, [&] {
      REQUIRE(nllLoss(input.view(), labels.view(), wv, loss.view(), c.reduction,
                      c.ignore)
                  .isOk());
      return dot(loss, up);
    });
    expectClose(values(din), ref, 1e-10, 1e-9, "f64 dinput");

    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      HostTensor il = convert(input, t), dl(t, c.scores);
      HostTensor w32 = convert(w, DType::F32);
      REQUIRE(nllLossGrad(il.view(), labels.view(), dloss.view(),
                          c.weights ? &w32.view() : nullptr, dl.view(),
                          c.reduction, c.ignore)
                  .isOk());
      expectRounded(values(dl), ref, t, "dinput");
    }
  }
}

TEST_CASE("loss grads: everything ignored gives zeros, bad inputs errors",
          "[cpu][backward]") {
  HostTensor scores = filled(DType::F32, {2, 3}, 0.5);
  HostTensor labels(DType::I64, {2});
  labels.as<int64_t>()[0] = 1;
  labels.as<int64_t>()[1] = 1;
  HostTensor dloss = filled(DType::F32, {1}, 1.0);
  HostTensor ds = filled(DType::F32, {2, 3}, 777.0);
  REQUIRE(softmaxCrossEntropyGrad(scores.view(), labels.view(), dloss.view(),
                                  nullptr, ds.view(), LossReduction::Mean, 1)
              .isOk());
  CHECK(values(ds) == std::vector<double>(6, 0.0));
  REQUIRE(nllLossGrad(scores.view(), labels.view(), dloss.view(), nullptr,
                      ds.view(), LossReduction::Mean, 1)
              .isOk());
  CHECK(values(ds) == std::vector<double>(6, 0.0));

  // Mean without weights: dscores = (softmax - onehot) / 2.
  REQUIRE(softmaxCrossEntropyGrad(scores.view(), labels.view(), dloss.view(),
                                  nullptr, ds.view(), LossReduction::Mean)
              .isOk());
  CHECK(getD(ds, 0) == Approx(1.0 / 6));
  CHECK(getD(ds, 1) == Approx(-1.0 / 3));

  labels.as<int64_t>()[1] = 3;
  HostTensor before = filled(DType::F32, {2, 3}, 777.0);
  ds = filled(DType::F32, {2, 3}, 777.0);
  expectError(softmaxCrossEntropyGrad(scores.view(), labels.view(),
                                      dloss.view(), nullptr, ds.view(),
                                      LossReduction::Sum),
              "label 3 at position 1 is outside [0, 3)");
  CHECK(values(ds) == values(before)); // nothing written
  expectError(nllLossGrad(scores.view(), labels.view(), dloss.view(), nullptr,
                          ds.view(), LossReduction::Sum, -100),
              "target 3 at position 1 is outside [0, 3)");
  labels.as<int64_t>()[1] = -100; // ignored: fine
  REQUIRE(nllLossGrad(scores.view(), labels.view(), dloss.view(), nullptr,
                      ds.view(), LossReduction::Sum, -100)
              .isOk());

  HostTensor fl(DType::F32, {2});
  expectError(softmaxCrossEntropyGrad(scores.view(), fl.view(), dloss.view(),
                                      nullptr, ds.view(), LossReduction::Sum),
              "labels has dtype f32; expected i32 or i64");
  HostTensor l3(DType::I64, {3});
  expectError(nllLossGrad(scores.view(), l3.view(), dloss.view(), nullptr,
                          ds.view(), LossReduction::Sum),
              "target has shape [3], expected [2]");
  expectError(softmaxCrossEntropyGrad(scores.view(), labels.view(),
                                      dloss.view(), nullptr, ds.view(),
                                      LossReduction::None),
              "dloss has shape [1], expected [2] (reduction none)");
  HostTensor w2(DType::F32, {2});
  expectError(softmaxCrossEntropyGrad(scores.view(), labels.view(),
                                      dloss.view(), &w2.view(), ds.view(),
                                      LossReduction::Sum),
              "weights is f32 [2], expected a float [3]");
  HostTensor ds16(DType::F16, {2, 3});
  expectError(nllLossGrad(scores.view(), labels.view(), dloss.view(), nullptr,
                          ds16.view(), LossReduction::Sum),
              "dinput (f16 [2, 3]) must have input's dtype and shape");
  HostTensor s1(DType::F32, {3});
  expectError(softmaxCrossEntropyGrad(s1.view(), labels.view(), dloss.view(),
                                      nullptr, ds.view(), LossReduction::Sum),
              "scores must be [N, C] or [N, C, d1..dk]");
  expectError(softmaxCrossEntropyGrad(scores.view(), labels.view(),
                                      dloss.view(), nullptr, scores.view(),
                                      LossReduction::Sum),
              "scores overlaps dscores");
}

//===----------------------------------------------------------------------===//
// LSTM backward
//===----------------------------------------------------------------------===//

struct LstmCase {
  const char *name;
  int64_t seq, batch, input, hidden;
  RnnDirection direction;
  bool withB, withInit, withDy, withDyH, withDyC;
};

TEST_CASE("LSTM backward matches finite differences of rnn",
          "[cpu][backward]") {
  const RnnDirection Fwd = RnnDirection::Forward, Rev = RnnDirection::Reverse,
                     Bi = RnnDirection::Bidirectional;
  const LstmCase cases[] = {
      {"bidirectional, every input and output", 3, 2, 3, 2, Bi, true, true,
       true, true, true},
      {"forward, y only", 4, 2, 2, 3, Fwd, true, false, true, false, false},
      {"reverse, y_h and y_c only, no bias", 3, 1, 2, 2, Rev, false, true,
       false, true, true},
      {"bidirectional, y_h only", 2, 3, 2, 2, Bi, true, false, false, true,
       false},
  };
  Rng rng(501);
  for (const LstmCase &c : cases) {
    INFO(c.name);
    const int64_t D = c.direction == Bi ? 2 : 1, G = 4 * c.hidden;
    const Shape state{D, c.batch, c.hidden};
    HostTensor x = randomTensor(DType::F32, {c.seq, c.batch, c.input}, rng),
               w = randomTensor(DType::F32, {D, G, c.input}, rng, -0.7, 0.7),
               r = randomTensor(DType::F32, {D, G, c.hidden}, rng, -0.7, 0.7),
               b = randomTensor(DType::F32, {D, 2 * G}, rng, -0.5, 0.5),
               h0 = randomTensor(DType::F32, state, rng),
               c0 = randomTensor(DType::F32, state, rng);
    HostTensor dy =
                   randomTensor(DType::F32, {c.seq, D, c.batch, c.hidden}, rng),
               dyH = randomTensor(DType::F32, state, rng),
               dyC = randomTensor(DType::F32, state, rng);
    const TensorView *bv = c.withB ? &b.view() : nullptr;
    const TensorView *h0v = c.withInit ? &h0.view() : nullptr;
    const TensorView *c0v = c.withInit ? &c0.view() : nullptr;
    HostTensor dx(DType::F32, x.shape()), dw(DType::F32, w.shape()),
        dr(DType::F32, r.shape()), db(DType::F32, b.shape()),
        dh0(DType::F32, state), dc0(DType::F32, state);
    LstmBackwardOptions o;
    o.hiddenSize = c.hidden;
    o.direction = c.direction;
    Status st = lstmBackward(
        x.view(), w.view(), r.view(), bv, h0v, c0v,
        c.withDy ? &dy.view() : nullptr, c.withDyH ? &dyH.view() : nullptr,
        c.withDyC ? &dyC.view() : nullptr, dx.view(), dw.view(), dr.view(),
        c.withB ? &db.view() : nullptr, c.withInit ? &dh0.view() : nullptr,
        c.withInit ? &dc0.view() : nullptr, o);
    INFO(st.message());
    REQUIRE(st.isOk());

    RnnOptions ro;
    ro.mode = RnnMode::Lstm;
    ro.direction = c.direction;
    ro.hiddenSize = c.hidden;
    HostTensor y(DType::F32, dy.shape()), yH(DType::F32, state),
        yC(DType::F32, state);
    auto loss = [&] {
      REQUIRE(rnn(x.view(), w.view(), r.view(), bv, nullptr, h0v, c0v, nullptr,
                  &y.view(), &yH.view(), &yC.view(), ro)
                  .isOk());
      return (c.withDy ? dot(y, dy) : 0.0) + (c.withDyH ? dot(yH, dyH) : 0.0) +
             (c.withDyC ? dot(yC, dyC) : 0.0);
    };
    const double h = 1e-2, tol = 2e-3;
    expectClose(values(dx), numericGrad(x, h, loss), tol, tol, "dx");
    expectClose(values(dw), numericGrad(w, h, loss), tol, tol, "dw");
    expectClose(values(dr), numericGrad(r, h, loss), tol, tol, "dr");
    if (c.withB) {
      std::vector<double> ref = numericGrad(b, h, loss);
      expectClose(values(db), ref, tol, tol, "db");
    }
    if (c.withInit) {
      expectClose(values(dh0), numericGrad(h0, h, loss), tol, tol,
                  "dinitial_h");
      expectClose(values(dc0), numericGrad(c0, h, loss), tol, tol,
                  "dinitial_c");
    }

    // f64 computes in f64; f16 within a rounding of f32 on the same values.
    auto run = [&](DType t, std::vector<HostTensor> &grads) {
      std::vector<HostTensor> in;
      for (const HostTensor *v : {&x, &w, &r, &b, &h0, &c0, &dy, &dyH, &dyC})
        in.push_back(convert(*v, t));
      grads.clear();
      for (const HostTensor *v : {&dx, &dw, &dr, &db, &dh0, &dc0})
        grads.emplace_back(t, v->shape());
      REQUIRE(lstmBackward(in[0].view(), in[1].view(), in[2].view(),
                           c.withB ? &in[3].view() : nullptr,
                           c.withInit ? &in[4].view() : nullptr,
                           c.withInit ? &in[5].view() : nullptr,
                           c.withDy ? &in[6].view() : nullptr,
                           c.withDyH ? &in[7].view() : nullptr,
                           c.withDyC ? &in[8].view() : nullptr, grads[0].view(),
                           grads[1].view(), grads[2].view(),
                           c.withB ? &grads[3].view() : nullptr,
                           c.withInit ? &grads[4].view() : nullptr,
                           c.withInit ? &grads[5].view() : nullptr, o)
                  .isOk());
      return in;
    };
    std::vector<HostTensor> g64;
    run(DType::F64, g64);
    expectClose(values(g64[0]), values(dx), 1e-5, 1e-5, "f64 dx");
    expectClose(values(g64[1]), values(dw), 1e-5, 1e-5, "f64 dw");
    expectClose(values(g64[2]), values(dr), 1e-5, 1e-5, "f64 dr");
    std::vector<HostTensor> g16;
    std::vector<HostTensor> in16 = run(DType::F16, g16);
    std::vector<HostTensor> in32;
    for (HostTensor &t : in16)
      in32.push_back(convert(t, DType::F32));
    std::vector<HostTensor> want;
    for (const HostTensor *v : {&dx, &dw, &dr})
      want.emplace_back(DType::F32, v->shape());
    REQUIRE(lstmBackward(in32[0].view(), in32[1].view(), in32[2].view(),
                         c.withB ? &in32[3].view() : nullptr,
                         c.withInit ? &in32[4].view() : nullptr,
                         c.withInit ? &in32[5].view() : nullptr,
                         c.withDy ? &in32[6].view() : nullptr,
                         c.withDyH ? &in32[7].view() : nullptr,
                         c.withDyC ? &in32[8].view() : nullptr, want[0].view(),
                         want[1].view(), want[2].view(), nullptr, nullptr,
                         nullptr, o)
                .isOk());
    expectRounded(values(g16[0]), values(want[0]), DType::F16, "f16 dx");
    expectRounded(values(g16[1]), values(want[1]), DType::F16, "f16 dw");
    expectRounded(values(g16[2]), values(want[2]), DType::F16, "f16 dr");
  }
}

TEST_CASE("LSTM backward: the bias gradients of Wb and Rb are equal, and "
          "bad inputs are errors",
          "[cpu][backward]") {
  Rng rng(502);
  const int64_t S = 2, B = 2, I = 3, H = 2;
  HostTensor x = randomTensor(DType::F32, {S, B, I}, rng),
             w = randomTensor(DType::F32, {1, 4 * H, I}, rng),
             r = randomTensor(DType::F32, {1, 4 * H, H}, rng),
             b = randomTensor(DType::F32, {1, 8 * H}, rng),
             dyH = randomTensor(DType::F32, {1, B, H}, rng);
  HostTensor dx(DType::F32, x.shape()), dw(DType::F32, w.shape()),
      dr(DType::F32, r.shape()), db(DType::F32, b.shape());
  LstmBackwardOptions o;
  o.hiddenSize = H;
  REQUIRE(lstmBackward(x.view(), w.view(), r.view(), &b.view(), nullptr,
                       nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                       dw.view(), dr.view(), &db.view(), nullptr, nullptr, o)
              .isOk());
  std::vector<double> dbv = values(db);
  CHECK(std::vector<double>(dbv.begin(), dbv.begin() + 4 * H) ==
        std::vector<double>(dbv.begin() + 4 * H, dbv.end()));

  // No incoming gradient at all: every gradient is 0.
  REQUIRE(lstmBackward(x.view(), w.view(), r.view(), &b.view(), nullptr,
                       nullptr, nullptr, nullptr, nullptr, dx.view(), dw.view(),
                       dr.view(), &db.view(), nullptr, nullptr, o)
              .isOk());
  CHECK(values(dw) == std::vector<double>(size_t(w.numElements()), 0.0));

  HostTensor wBad(DType::F32, {1, 4 * H, I + 1});
  expectError(lstmBackward(x.view(), wBad.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "w has shape [1, 8, 4], expected [1, 8, 3]");
  HostTensor dwBad(DType::F32, {2, 4 * H, I});
  expectError(lstmBackward(x.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dwBad.view(), dr.view(), nullptr, nullptr, nullptr,
                           o),
              "dw has shape [2, 8, 3], expected [1, 8, 3]");
  HostTensor r16 = convert(r, DType::F16);
  expectError(lstmBackward(x.view(), w.view(), r16.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "r has dtype f16; expected x's dtype f32");
  HostTensor dyBad(DType::F32, {S, 2, B, H});
  expectError(lstmBackward(x.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, &dyBad.view(), nullptr, nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "dy has shape [2, 2, 2, 2], expected [2, 1, 2, 2]");
  LstmBackwardOptions h0 = o;
  h0.hiddenSize = 0;
  expectError(lstmBackward(x.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, h0),
              "hidden_size must be in [1, 2^40]");
  expectError(lstmBackward(x.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dw.view(), nullptr, nullptr, nullptr, o),
              "dr has shape");
  HostTensor xi(DType::I32, {S, B, I});
  expectError(lstmBackward(xi.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "x has dtype i32");
  HostTensor x2(DType::F32, {S, B});
  expectError(lstmBackward(x2.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, dx.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "x must be [seq_length, batch_size, input_size]");
  expectError(lstmBackward(x.view(), w.view(), r.view(), nullptr, nullptr,
                           nullptr, nullptr, &dyH.view(), nullptr, x.view(),
                           dw.view(), dr.view(), nullptr, nullptr, nullptr, o),
              "dx overlaps x");
}

} // namespace
