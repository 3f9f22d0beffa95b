// Tests of the CPU backend's matmul (mp/Runtime/CPU/Kernels.h) against
// numpy.matmul's semantics, accumulated in double.
// References, tolerances and helpers: CPUKernelsTestSupport.h.
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "CPUKernelsTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::cpu_kernels;

namespace {

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatmulCase {
  Shape a, b;
  bool transA = false, transB = false;
  bool hasC = false;
  Shape c;
  bool hasBias = false;
  bool biasF32 = false;
  double alpha = 1.0, beta = 1.0;
  Activation act = Activation::None;
  DType in = DType::F32, out = DType::F32;
  bool cInPlace = false; // C is D itself
};

std::string describe(const MatmulCase &m) {
  std::ostringstream s;
  s << "A " << shapeString(m.a) << (m.transA ? "^T" : "") << " B "
    << shapeString(m.b) << (m.transB ? "^T" : "") << " " << dtypeName(m.in)
    << "->" << dtypeName(m.out) << " alpha " << m.alpha;
  if (m.hasC)
    s << " C " << (m.cInPlace ? "=D" : shapeString(m.c)) << " beta " << m.beta;
  if (m.hasBias)
    s << " bias" << (m.biasF32 ? "(f32)" : "");
  s << " act " << actName(m.act);
  return s.str();
}

/// numpy.matmul's result shape.
Shape matmulShape(const MatmulCase &m) {
  size_t ra = m.a.size(), rb = m.b.size();
  Shape ba(m.a.begin(), m.a.end() - (ra >= 2 ? 2 : 1));
  Shape bb(m.b.begin(), m.b.end() - (rb >= 2 ? 2 : 1));
  size_t r = std::max(ba.size(), bb.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i < r - ba.size() ? 1 : ba[i - (r - ba.size())];
    int64_t y = i < r - bb.size() ? 1 : bb[i - (r - bb.size())];
    out[i] = x == 1 ? y : x;
  }
  if (ra >= 2)
    out.push_back(m.transA ? m.a[ra - 1] : m.a[ra - 2]);
  if (rb >= 2)
    out.push_back(m.transB ? m.b[rb - 2] : m.b[rb - 1]);
  return out;
}

/// Index into a tensor of shape `own` broadcast against the trailing dims of
/// `idx` (numpy: dims of size 1 repeat).
int64_t broadcastIndex(const Shape &own, const std::vector<int64_t> &idx) {
  int64_t off = 0;
  std::vector<int64_t> st = stridesOf(own);
  size_t shift = idx.size() - own.size();
  for (size_t i = 0; i < own.size(); ++i)
    off += (own[i] == 1 ? 0 : idx[i + shift]) * st[i];
  return off;
}

void runMatmulCase(const MatmulCase &m, uint64_t seed) {
  INFO(describe(m));
  Rng rng(seed);
  HostTensor a = randomTensor(m.in, m.a, rng);
  HostTensor b = randomTensor(m.in, m.b, rng);
  Shape dShape = matmulShape(m);
  HostTensor d =
      m.cInPlace ? randomTensor(m.out, dShape, rng) : garbage(m.out, dShape);
  HostTensor c =
      m.hasC && !m.cInPlace ? randomTensor(m.out, m.c, rng) : HostTensor();
  Shape cShape = m.cInPlace ? dShape : m.c;
  std::vector<double> cv = m.cInPlace ? values(d) : values(c);
  HostTensor bias =
      m.hasBias
          ? randomTensor(
                m.biasF32 ? DType::F32 : m.out,
                {dShape.empty() || m.b.size() == 1 ? 1 : dShape.back()}, rng)
          : HostTensor();
  std::vector<double> av = values(a), bv = values(b), biasv = values(bias);

  // Reference.
  size_t ra = m.a.size(), rb = m.b.size();
  int64_t M = ra >= 2 ? (m.transA ? m.a[ra - 1] : m.a[ra - 2]) : 1;
  int64_t K = ra >= 2 ? (m.transA ? m.a[ra - 2] : m.a[ra - 1]) : m.a[0];
  int64_t N = rb >= 2 ? (m.transB ? m.b[rb - 2] : m.b[rb - 1]) : 1;
  Shape batch = dShape;
  batch.resize(dShape.size() - (ra >= 2) - (rb >= 2));
  Shape aBatch(m.a.begin(), m.a.end() - (ra >= 2 ? 2 : 1));
  Shape bBatch(m.b.begin(), m.b.end() - (rb >= 2 ? 2 : 1));
  Shape full = batch;
  full.push_back(M);
  full.push_back(N); // D with M and N always present
  std::vector<double> ref(static_cast<size_t>(d.numElements())),
      bound(ref.size());
  double u = unitRoundoff(m.in);
  int64_t aMat = ra >= 2 ? m.a[ra - 2] * m.a[ra - 1] : K;
  int64_t bMat = rb >= 2 ? m.b[rb - 2] * m.b[rb - 1] : K;
  int64_t pos = 0;
  forEachIndex(full, [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> bi(idx.begin(), idx.end() - 2);
    int64_t i = idx[idx.size() - 2], j = idx.back();
    int64_t aBase = aBatch.empty() ? 0 : broadcastIndex(aBatch, bi) * aMat;
    int64_t bBase = bBatch.empty() ? 0 : broadcastIndex(bBatch, bi) * bMat;
    double sum = 0, mag = 0;
    for (int64_t k = 0; k < K; ++k) {
      double x =
          ra == 1 ? av[k]
                  : (m.transA ? av[aBase + k * M + i] : av[aBase + i * K + k]);
      double y =
          rb == 1 ? bv[k]
                  : (m.transB ? bv[bBase + j * K + k] : bv[bBase + k * N + j]);
      sum += x * y;
      mag += std::fabs(x * y);
    }
    double pre = m.alpha * sum;
    double preMag = std::fabs(m.alpha) * mag;
    if (m.hasC) {
      // C broadcasts against D's real shape (without dropped 1-D dims).
      std::vector<int64_t> dIdx = bi;
      if (ra >= 2)
        dIdx.push_back(i);
      if (rb >= 2)
        dIdx.push_back(j);
      double cval = cShape.empty() ? cv[0] : cv[broadcastIndex(cShape, dIdx)];
      pre += m.beta * cval;
      preMag += std::fabs(m.beta * cval);
    }
    if (m.hasBias) {
      pre += biasv[j];
      preMag += std::fabs(biasv[j]);
    }
    double r = activateRef(m.act, pre);
    ref[pos] = r;
    bound[pos] = activatedBound(m.act, (K + 8) * u * preMag, r, u);
    ++pos;
  });

  cpu::MatmulOptions o;
  o.transA = m.transA;
  o.transB = m.transB;
  o.alpha = m.alpha;
  o.beta = m.beta;
  o.epilogue = m.act;
  TensorView cView = m.cInPlace ? d.view() : c.view();
  Status s = cpu::matmul(a.view(), b.view(), m.hasC ? &cView : nullptr,
                         m.hasBias ? &bias.view() : nullptr, d.view(), o);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(d, ref, bound);
}

TEST_CASE("matmul matches numpy.matmul semantics with f32 accumulation",
          "[runtime][cpu][matmul]") {
  struct Shapes {
    Shape a, b;
    bool ta, tb;
  };
  std::vector<Shapes> shapes = {
      {{5, 7}, {7, 3}, false, false},
      {{7, 5}, {7, 3}, true, false},
      {{5, 7}, {3, 7}, false, true},
      {{7, 5}, {3, 7}, true, true},
      {{1, 1}, {1, 1}, false, false},
      {{13, 1}, {1, 17}, false, false},   // K = 1
      {{33, 65}, {65, 17}, false, false}, // odd sizes
      {{64, 300}, {96, 300}, false, true},
      {{3, 5, 7}, {7, 4}, false, false}, // batch folded into M
      {{3, 7, 5}, {7, 4}, true, false},  // transA: no folding
      {{3, 5, 7}, {3, 7, 4}, false, false},
      {{2, 1, 5, 7}, {1, 3, 7, 4}, false, false}, // batch broadcasting
      {{2, 1, 5, 7}, {3, 4, 7}, false, true},
      {{5, 7}, {2, 3, 7, 4}, false, false}, // only B batched
      {{1, 5, 7}, {2, 7, 4}, false, false},
      {{7}, {7, 4}, false, false},       // 1-D A
      {{2, 3, 5, 7}, {7}, false, false}, // 1-D B
      {{7}, {7}, false, false},          // scalar result
      {{7}, {2, 7, 3}, false, false},    // 1-D A, batched B
      {{4, 0}, {0, 6}, false, false},    // K = 0
      // One row or column of D (the GEMV paths), with transposes.
      {{1, 7}, {4, 7}, false, true},
      {{7, 1}, {7, 4}, true, false},
      {{5, 7}, {1, 7}, false, true},
      {{7, 5}, {7, 1}, true, false},
      {{3, 1, 7}, {3, 7, 4}, false, false},
  };
  struct Types {
    DType in, out;
  };
  std::vector<Types> types = {
      {DType::F32, DType::F32},   {DType::F16, DType::F16},
      {DType::BF16, DType::BF16}, {DType::F16, DType::F32},
      {DType::BF16, DType::F32},  {DType::F32, DType::F16},
      {DType::F64, DType::F64}};
  const Activation acts[] = {Activation::None, Activation::Relu,
                             Activation::Gelu, Activation::GeluTanh};
  uint64_t seed = 1;
  int count = 0;
  for (const Shapes &sh : shapes)
    for (const Types &ty : types)
      for (int variant = 0; variant < 4; ++variant) {
        MatmulCase m;
        m.a = sh.a;
        m.b = sh.b;
        m.transA = sh.ta;
        m.transB = sh.tb;
        m.in = ty.in;
        m.out = ty.out;
        m.act = acts[(variant + seed) % 4];
        Shape d = matmulShape(m);
        switch (variant) {
        case 0: // plain
          break;
        case 1: // alpha, full C, bias
          m.alpha = -0.75;
          m.hasC = true;
          m.c = d;
          m.beta = 0.5;
          m.hasBias = true;
          m.biasF32 = ty.out != DType::F64 && seed % 2;
          break;
        case 2: { // broadcast C: a row [N] or a column [M, 1] or a scalar
          m.hasC = true;
          m.beta = 1.0;
          int pick = static_cast<int>(seed % 3);
          if (d.empty() || pick == 2)
            m.c = {};
          else if (pick == 0 || d.size() < 2)
            m.c = {d.back()};
          else
            m.c = {d[d.size() - 2], 1};
          m.hasBias = true;
          break;
        }
        case 3: // C is D (in place), beta -1
          m.hasC = true;
          m.cInPlace = true;
          m.beta = -1.0;
          m.alpha = 2.0;
          break;
        }
        runMatmulCase(m, seed++);
        ++count;
      }
  CHECK(count == static_cast<int>(shapes.size() * types.size() * 4));
}

TEST_CASE("matmul: beta = 0 ignores C and C broadcasts over the batch",
          "[runtime][cpu][matmul]") {
  MatmulCase m;
  m.a = {2, 3, 4, 5};
  m.b = {5, 6};
  m.hasC = true;
  m.c = {3, 1, 6}; // broadcast over the batch and the rows
  m.beta = 0.25;
  m.out = DType::F32;
  runMatmulCase(m, 99);
  m.in = m.out = DType::BF16;
  runMatmulCase(m, 100);

  // beta = 0: C is not read (NaNs in C do not reach D).
  Rng rng(7);
  HostTensor a = randomTensor(DType::F32, {3, 4}, rng);
  HostTensor b = randomTensor(DType::F32, {4, 2}, rng);
  HostTensor c(DType::F32, {3, 2});
  for (int i = 0; i < 6; ++i)
    c.as<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  HostTensor d = garbage(DType::F32, {3, 2});
  cpu::MatmulOptions o;
  o.beta = 0.0;
  REQUIRE(
      cpu::matmul(a.view(), b.view(), &c.view(), nullptr, d.view(), o).isOk());
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k)
        s += getD(a, i * 4 + k) * getD(b, k * 2 + j);
      CHECK(getD(d, i * 2 + j) == Approx(s).epsilon(1e-6));
    }
}

TEST_CASE("matmul: 16-bit results are rounded once from f32",
          "[runtime][cpu][matmul]") {
  // 1 x 3 @ 3 x 1 with products whose exact f32 sum sits just above a tie
  // between two f16 values: rounding each partial result to f16 (or the
  // product before adding the bias) would land elsewhere.
  HostTensor a(DType::F16, {1, 3}), b(DType::F16, {3, 1}),
      bias(DType::F32, {1}), d(DType::F16, {1, 1});
  // 1 + 2^-11 is the tie between 1 and 1 + 2^-10 in f16; + 2^-20 breaks it.
  a.as<Half>()[0] = toHalf(1.0f);
  a.as<Half>()[1] = toHalf(0x1p-11f);
  a.as<Half>()[2] = toHalf(0x1p-10f);
  b.as<Half>()[0] = toHalf(1.0f);
  b.as<Half>()[1] = toHalf(1.0f);
  b.as<Half>()[2] = toHalf(0x1p-10f);
  bias.as<float>()[0] = 0.0f;
  REQUIRE(
      cpu::matmul(a.view(), b.view(), nullptr, &bias.view(), d.view()).isOk());
  // 1 + 2^-11 + 2^-20 -> 1 + 2^-10 (a running f16 sum would give 1).
  CHECK(toFloat(d.as<Half>()[0]) == 1.0f + 0x1p-10f);
  // Into f32 (an output cast folded into the matmul), with its f16 bias:
  // the exact f32 sum, no rounding to f16 on the way.
  HostTensor wide(DType::F32, {1, 1}), bias16(DType::F16, {1});
  bias16.as<Half>()[0] = toHalf(0.5f);
  REQUIRE(cpu::matmul(a.view(), b.view(), nullptr, &bias16.view(), wide.view())
              .isOk());
  CHECK(wide.as<float>()[0] == 1.5f + 0x1p-11f + 0x1p-20f);
}

TEST_CASE("matmul bias gradients sum op(B)'s rows in f32 and round once",
          "[runtime][cpu][matmul]") {
  // B [3, 2] (a weight gradient's dY): column 0 is 256, 1, 1, whose exact
  // sum 258 is a bf16 value that a running bf16 sum misses (256 + 1 ties
  // to 256, twice); column 1 is -1.5, 2.5, 0.25.
  HostTensor b(DType::BF16, {3, 2});
  const float values[] = {256, -1.5f, 1, 2.5f, 1, 0.25f};
  for (int i = 0; i < 6; ++i)
    b.as<BFloat16>()[i] = toBFloat16(values[i]);
  // Any shape with the sums in its last dim: the [1, 1, N] a reduction
  // keeping its dims writes.
  HostTensor grad(DType::BF16, {1, 1, 2});
  REQUIRE(cpu::matmulBiasGradient(b.view(), /*kIsRows=*/true, grad.view()));
  CHECK(toFloat(grad.as<BFloat16>()[0]) == 258.0f);
  CHECK(toFloat(grad.as<BFloat16>()[1]) == 1.25f);

  // K as columns: a [2, 3] operand (B read transposed, or A) sums its
  // rows' elements.
  HostTensor bt(DType::F32, {2, 3}), sums(DType::F32, {2});
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c)
      bt.as<float>()[c * 3 + r] = values[r * 2 + c];
  REQUIRE(cpu::matmulBiasGradient(bt.view(), /*kIsRows=*/false, sums.view()));
  CHECK(sums.as<float>()[0] == 258.0f);
  CHECK(sums.as<float>()[1] == 1.25f);

  // Wrong shapes are refused by name.
  Status wrong = cpu::matmulBiasGradient(bt.view(), true, sums.view());
  CHECK_FALSE(wrong);
  CHECK(wrong.message().find("bias_grad [2] must hold the 3 sums over K") !=
        std::string::npos);
  HostTensor batched(DType::F32, {2, 3, 2});
  CHECK_FALSE(cpu::matmulBiasGradient(batched.view(), true, sums.view()));
}

TEST_CASE("matmul activation-gradient epilogues scale the product by the "
          "derivative at aux",
          "[runtime][cpu][matmul]") {
  // D = act'(aux) * (A B + C), against the derivatives in double: A [3, 4],
  // B [4, 5], aux spanning the activations' interesting range.
  Rng rng(31);
  for (DType out : {DType::F32, DType::BF16})
    for (cpu::ActivationGradient g :
         {cpu::ActivationGradient::Relu, cpu::ActivationGradient::Gelu,
          cpu::ActivationGradient::GeluTanh}) {
      INFO(dtypeName(out) << ", gradient " << static_cast<int>(g));
      HostTensor a = randomTensor(DType::F32, {3, 4}, rng, -1, 1);
      HostTensor b = randomTensor(DType::F32, {4, 5}, rng, -1, 1);
      HostTensor c = randomTensor(out, {3, 5}, rng, -1, 1);
      HostTensor aux = randomTensor(out, {3, 5}, rng, -3, 3);
      HostTensor d(out, {3, 5});
      cpu::MatmulOptions o;
      o.beta = 1.0;
      o.epilogueGradient = g;
      REQUIRE(cpu::matmul(a.view(), b.view(), &c.view(), nullptr, d.view(), o,
                          &aux.view())
                  .isOk());
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          double v = getD(c, i * 5 + j);
          for (int64_t k = 0; k < 4; ++k)
            v += getD(a, i * 4 + k) * getD(b, k * 5 + j);
          const double x = getD(aux, i * 5 + j);
          double derivative;
          if (g == cpu::ActivationGradient::Relu) {
            derivative = x > 0 ? 1 : 0;
          } else if (g == cpu::ActivationGradient::Gelu) {
            derivative = 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                         x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
          } else {
            const double k = std::sqrt(2 / M_PI),
                         t = std::tanh(k * (x + 0.044715 * x * x * x));
            derivative = 0.5 * (1 + t) +
                         0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
          }
          const double expected = derivative * v;
          // One rounding to D's type.
          const double tol = out == DType::F32 ? 1e-5 : 1e-2;
          CHECK(std::fabs(getD(d, i * 5 + j) - expected) <=
                tol * (1 + std::fabs(expected)));
        }
    }
  // aux goes with a gradient epilogue, has D's shape, and takes no bias.
  HostTensor a(DType::F32, {2, 3}), b(DType::F32, {3, 4}),
      d(DType::F32, {2, 4}), aux(DType::F32, {2, 4}), wrong(DType::F32, {4, 2}),
      bias(DType::F32, {4});
  cpu::MatmulOptions gelu;
  gelu.epilogueGradient = cpu::ActivationGradient::Gelu;
  auto message = [](const Status &s) { return s.message(); };
  CHECK_THAT(message(cpu::matmul(a.view(), b.view(), nullptr, nullptr, d.view(),
                                 gelu)),
             Catch::Contains("needs aux"));
  CHECK_THAT(message(cpu::matmul(a.view(), b.view(), nullptr, nullptr, d.view(),
                                 cpu::MatmulOptions{}, &aux.view())),
             Catch::Contains("aux goes with"));
  CHECK_THAT(message(cpu::matmul(a.view(), b.view(), nullptr, nullptr, d.view(),
                                 gelu, &wrong.view())),
             Catch::Contains("aux has shape [4, 2]"));
  CHECK_THAT(message(cpu::matmul(a.view(), b.view(), nullptr, &bias.view(),
                                 d.view(), gelu, &aux.view())),
             Catch::Contains("takes no bias"));
}

TEST_CASE("matmul rejects bad arguments", "[runtime][cpu][matmul]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor a = f32({4, 5}), b = f32({5, 6}), d = f32({4, 6});
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::matmul(a.view(), b.view(), d.view()).isOk());
  err(cpu::matmul(a.view(), f32({6, 6}).view(), d.view()), "inner dimensions");
  err(cpu::matmul(a.view(), b.view(), f32({4, 5}).view()), "D has shape");
  err(cpu::matmul(f32({2, 4, 5}).view(), f32({3, 5, 6}).view(),
                  f32({3, 4, 6}).view()),
      "do not broadcast");
  err(cpu::matmul(a.view(), HostTensor(DType::F16, {5, 6}).view(), d.view()),
      "different dtypes");
  err(cpu::matmul(HostTensor(DType::I32, {4, 5}).view(),
                  HostTensor(DType::I32, {5, 6}).view(), d.view()),
      "expected f32");
  err(cpu::matmul(HostTensor(DType::F64, {4, 5}).view(),
                  HostTensor(DType::F64, {5, 6}).view(), d.view()),
      "f64");
  err(cpu::matmul(a.view(), b.view(), HostTensor(DType::I64, {4, 6}).view()),
      "D has dtype");
  HostTensor badC = f32({3, 6}), c16(DType::F16, {4, 6});
  err(cpu::matmul(a.view(), b.view(), &badC.view(), nullptr, d.view()),
      "does not broadcast");
  err(cpu::matmul(a.view(), b.view(), &c16.view(), nullptr, d.view()),
      "C has dtype");
  HostTensor badBias = f32({4}), bias64(DType::F64, {6});
  err(cpu::matmul(a.view(), b.view(), nullptr, &badBias.view(), d.view()),
      "bias has shape");
  err(cpu::matmul(a.view(), b.view(), nullptr, &bias64.view(), d.view()),
      "bias has dtype");
  cpu::MatmulOptions t;
  t.transA = true;
  err(cpu::matmul(f32({5}).view(), b.view(), f32({6}).view(), t), "transA");
  HostTensor shared = f32({4, 6});
  TensorView aInD{DType::F32, {4, 5}, shared.data()};
  err(cpu::matmul(aInD, b.view(), shared.view()), "A overlaps D");
  TensorView noData = d.view();
  noData.data = nullptr;
  err(cpu::matmul(a.view(), b.view(), noData), "no data");
  TensorView negative = a.view();
  negative.shape = {-4, 5};
  err(cpu::matmul(negative, b.view(), d.view()), "negative");
  cpu::MatmulOptions nanAlpha;
  nanAlpha.alpha = std::nan("");
  err(cpu::matmul(a.view(), b.view(), d.view(), nanAlpha), "finite");
}

} // namespace
