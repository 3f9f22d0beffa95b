// Tests of the CPU backend's kernels (mp/Runtime/CPU/Kernels.h).
//
// Every kernel is compared with a straightforward reference written here:
// naive loops over the definition (numpy matmul broadcasting, ONNX Conv,
// MaxPool/AveragePool, BatchNormalization, Softmax), accumulating in double,
// on deterministic pseudo-random inputs (16-bit inputs are drawn, rounded to
// their type, and the reference uses the rounded values).
//
// Tolerances. Besides its value, the reference computes for each element a
// bound on the error that an f32 (f64 for f64 kernels) computation may make:
// eps * (number of operations) * (sum of the magnitudes of the terms).
//  * f32 / f64 outputs must be within that bound (plus the output rounding).
//  * 16-bit outputs must be what rounding an f32-accumulated value ONCE gives:
//    round16(ref - bound) <= y <= round16(ref + bound). Where the bound is
//    small against the 16-bit spacing this is round16(ref) or a neighbour
//    (1 ulp); a kernel that accumulated in 16 bits or rounded twice (e.g.
//    before the bias or the activation) falls outside.
// Results in the compute type's underflow range (below 16 * its smallest
// normal) get that much absolute slack. Max pooling and max indices must
// match exactly.
// Loops count mismatches and report the first few.
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
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
using cpu::Activation;
using cpu::Layout;

namespace {

//===----------------------------------------------------------------------===//
// Tensors, random data, comparisons
//===----------------------------------------------------------------------===//

std::vector<double> values(const HostTensor &t) {
  if (!t.data()) // a default HostTensor: no tensor
    return {};
  std::vector<double> r(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    r[i] = getD(t, i);
  return r;
}

/// A tensor filled with NaN-free garbage, so that unwritten outputs show.
HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numElements(); ++i) {
    if (t == DType::I64)
      r.as<int64_t>()[i] = -777;
    else
      setD(r, i, 12345.0);
  }
  return r;
}

/// The unit roundoff of a compute type (f32 for 16-bit and f32 data).
double unitRoundoff(DType t) { return t == DType::F64 ? 0x1p-53 : 0x1p-24; }

std::string shapeString(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/// Checks `got` against the reference with per-element error bounds `bound`
/// (see the file comment); exact when `exact`.
void expectClose(const HostTensor &got, const std::vector<double> &ref,
                 const std::vector<double> &bound, bool exact = false) {
  REQUIRE(static_cast<size_t>(got.numElements()) == ref.size());
  DType t = got.dtype();
  // Absolute slack for results in the compute type's underflow range.
  double tiny = t == DType::F64 ? 0x1p-1018 : 0x1p-122;
  int64_t bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = getD(got, static_cast<int64_t>(i)), r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (exact)
      ok = g == r;
    else if (t == DType::F32 || t == DType::F64)
      ok = std::fabs(g - r) <= bound[i] + tiny + std::fabs(r) * unitRoundoff(t) * 2;
    else
      ok = g >= roundTo(t, r - bound[i] - tiny) &&
           g <= roundTo(t, r + bound[i] + tiny);
    if (!ok && bad++ < 6)
      msg << "  element " << i << ": got " << g << ", expected " << r
          << " (bound " << bound[i] << ", " << dtypeName(t) << " expected "
          << roundTo(t, r) << ")\n";
  }
  INFO("mismatches: " << bad << " of " << ref.size() << "\n" << msg.str());
  CHECK(bad == 0);
}

double activateRef(Activation a, double v) {
  switch (a) {
  case Activation::None: return v;
  case Activation::Relu: return v > 0 ? v : 0;
  case Activation::Gelu: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * v *
           (1.0 + std::tanh(std::sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
  }
  return v;
}

/// The bound after the activation from the bound before it (slopes <= 1.13)
/// and the activation's own evaluation error.
double activatedBound(Activation a, double preBound, double ref, double u) {
  if (a == Activation::None)
    return preBound;
  return 1.2 * preBound + 8 * u * std::fabs(ref) + 1e-30;
}

const char *actName(Activation a) {
  switch (a) {
  case Activation::None: return "none";
  case Activation::Relu: return "relu";
  case Activation::Gelu: return "gelu";
  case Activation::GeluTanh: return "gelu_tanh";
  }
  return "?";
}

/// Row-major strides.
std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

/// Calls fn(index) for every multi-index of `extent`, last fastest.
void forEachIndex(const Shape &extent,
                  const std::function<void(const std::vector<int64_t> &)> &fn) {
  for (int64_t e : extent)
    if (e == 0)
      return;
  std::vector<int64_t> idx(extent.size(), 0);
  while (true) {
    fn(idx);
    size_t i = extent.size();
    for (; i-- > 0;) {
      if (++idx[i] < extent[i])
        break;
      idx[i] = 0;
    }
    if (i == static_cast<size_t>(-1))
      return;
  }
}

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
    << shapeString(m.b) << (m.transB ? "^T" : "") << " "
    << dtypeName(m.in) << "->" << dtypeName(m.out) << " alpha " << m.alpha;
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
  HostTensor d = m.cInPlace ? randomTensor(m.out, dShape, rng)
                            : garbage(m.out, dShape);
  HostTensor c = m.hasC && !m.cInPlace ? randomTensor(m.out, m.c, rng)
                                       : HostTensor();
  Shape cShape = m.cInPlace ? dShape : m.c;
  std::vector<double> cv = m.cInPlace ? values(d) : values(c);
  HostTensor bias = m.hasBias
                        ? randomTensor(m.biasF32 ? DType::F32 : m.out,
                                       {dShape.empty() || m.b.size() == 1
                                            ? 1
                                            : dShape.back()},
                                       rng)
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
      double x = ra == 1 ? av[k]
                         : (m.transA ? av[aBase + k * M + i]
                                     : av[aBase + i * K + k]);
      double y = rb == 1 ? bv[k]
                         : (m.transB ? bv[bBase + j * K + k]
                                     : bv[bBase + k * N + j]);
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
      {{3, 5, 7}, {7, 4}, false, false},  // batch folded into M
      {{3, 7, 5}, {7, 4}, true, false},   // transA: no folding
      {{3, 5, 7}, {3, 7, 4}, false, false},
      {{2, 1, 5, 7}, {1, 3, 7, 4}, false, false}, // batch broadcasting
      {{2, 1, 5, 7}, {3, 4, 7}, false, true},
      {{5, 7}, {2, 3, 7, 4}, false, false}, // only B batched
      {{1, 5, 7}, {2, 7, 4}, false, false},
      {{7}, {7, 4}, false, false},          // 1-D A
      {{2, 3, 5, 7}, {7}, false, false},    // 1-D B
      {{7}, {7}, false, false},             // scalar result
      {{7}, {2, 7, 3}, false, false},       // 1-D A, batched B
      {{4, 0}, {0, 6}, false, false},       // K = 0
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
  std::vector<Types> types = {{DType::F32, DType::F32},
                              {DType::F16, DType::F16},
                              {DType::BF16, DType::BF16},
                              {DType::F16, DType::F32},
                              {DType::BF16, DType::F32},
                              {DType::F32, DType::F16},
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
  REQUIRE(cpu::matmul(a.view(), b.view(), &c.view(), nullptr, d.view(), o)
              .isOk());
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
  REQUIRE(cpu::matmul(a.view(), b.view(), nullptr, &bias.view(), d.view())
              .isOk());
  // 1 + 2^-11 + 2^-20 -> 1 + 2^-10 (a running f16 sum would give 1).
  CHECK(toFloat(d.as<Half>()[0]) == 1.0f + 0x1p-10f);
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
  HostTensor badBias = f32({4}), bias16(DType::F16, {6});
  err(cpu::matmul(a.view(), b.view(), nullptr, &badBias.view(), d.view()),
      "bias has shape");
  err(cpu::matmul(a.view(), b.view(), nullptr, &bias16.view(), d.view()),
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

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n = 1, c = 1, m = 1, groups = 1;
  Shape in, ker;
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  Layout layout = Layout::NCHW;
  bool hasBias = false, biasF32 = false, hasResidual = false;
  bool residualInPlace = false; // residual is y itself
  Activation act = Activation::None;
  DType in16 = DType::F32, out = DType::F32;
};

std::string describe(const ConvCase &c) {
  std::ostringstream s;
  auto vec = [&](const char *name, const std::vector<int64_t> &v) {
    if (!v.empty())
      s << " " << name << shapeString(v);
  };
  s << (c.layout == Layout::NCHW ? "NCHW" : "NHWC") << " N " << c.n << " C "
    << c.c << " M " << c.m << " groups " << c.groups << " in "
    << shapeString(c.in) << " kernel " << shapeString(c.ker);
  vec("strides", c.strides);
  vec("dilations", c.dilations);
  vec("padsBegin", c.padsBegin);
  vec("padsEnd", c.padsEnd);
  s << " " << dtypeName(c.in16) << "->" << dtypeName(c.out)
    << (c.hasBias ? " bias" : "") << (c.biasF32 ? "(f32)" : "")
    << (c.hasResidual ? (c.residualInPlace ? " residual=y" : " residual") : "")
    << " act " << actName(c.act);
  return s.str();
}

int64_t attr(const std::vector<int64_t> &v, size_t i, int64_t deflt) {
  return v.empty() ? deflt : v[i];
}

Shape convOutSpatial(const ConvCase &c) {
  Shape o;
  for (size_t i = 0; i < c.in.size(); ++i) {
    int64_t span = attr(c.dilations, i, 1) * (c.ker[i] - 1) + 1;
    o.push_back((c.in[i] + attr(c.padsBegin, i, 0) + attr(c.padsEnd, i, 0) -
                 span) /
                    attr(c.strides, i, 1) +
                1);
  }
  return o;
}

/// [N, C, spatial...] or [N, spatial..., C].
Shape withChannels(Layout l, int64_t n, int64_t c, const Shape &spatial) {
  Shape s{n};
  if (l == Layout::NCHW)
    s.push_back(c);
  s.insert(s.end(), spatial.begin(), spatial.end());
  if (l == Layout::NHWC)
    s.push_back(c);
  return s;
}

/// Flat index of (n, c, flattened spatial position p) in either layout.
int64_t actIndex(Layout l, int64_t n, int64_t c, int64_t p, int64_t channels,
                 int64_t spatialSize) {
  return l == Layout::NCHW ? (n * channels + c) * spatialSize + p
                           : (n * spatialSize + p) * channels + c;
}

void runConvCase(const ConvCase &cc, uint64_t seed) {
  INFO(describe(cc));
  Rng rng(seed);
  size_t k = cc.in.size();
  Shape outSp = convOutSpatial(cc);
  int64_t cg = cc.c / cc.groups, mg = cc.m / cc.groups;
  Shape wShape = cc.layout == Layout::NCHW ? withChannels(Layout::NCHW, cc.m, cg, cc.ker)
                                           : withChannels(Layout::NHWC, cc.m, cg, cc.ker);
  HostTensor x = randomTensor(cc.in16, withChannels(cc.layout, cc.n, cc.c, cc.in), rng);
  HostTensor w = randomTensor(cc.in16, wShape, rng);
  Shape yShape = withChannels(cc.layout, cc.n, cc.m, outSp);
  HostTensor bias = cc.hasBias ? randomTensor(cc.biasF32 ? DType::F32 : cc.out,
                                              {cc.m}, rng)
                               : HostTensor();
  HostTensor res = cc.hasResidual && !cc.residualInPlace
                       ? randomTensor(cc.out, yShape, rng)
                       : HostTensor();
  HostTensor y = cc.residualInPlace ? randomTensor(cc.out, yShape, rng)
                                    : garbage(cc.out, yShape);
  std::vector<double> xv = values(x), wv = values(w), bv = values(bias),
                      rv = cc.residualInPlace ? values(y) : values(res);

  int64_t inSize = numElements(cc.in), kerSize = numElements(cc.ker),
          outSize = numElements(outSp);
  std::vector<int64_t> inSt = stridesOf(cc.in);
  std::vector<double> ref(static_cast<size_t>(y.numElements())),
      bound(ref.size());
  double u = unitRoundoff(cc.in16);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t m = 0; m < cc.m; ++m) {
      int64_t g = m / mg;
      int64_t q = 0;
      forEachIndex(outSp, [&](const std::vector<int64_t> &o) {
        double sum = 0, mag = 0;
        for (int64_t c = 0; c < cg; ++c) {
          int64_t t = 0;
          forEachIndex(cc.ker, [&](const std::vector<int64_t> &kk) {
            int64_t p = 0;
            bool inside = true;
            for (size_t j = 0; j < k; ++j) {
              int64_t i = o[j] * attr(cc.strides, j, 1) -
                          attr(cc.padsBegin, j, 0) +
                          kk[j] * attr(cc.dilations, j, 1);
              inside = inside && i >= 0 && i < cc.in[j];
              p += i * inSt[j];
            }
            if (inside) {
              double xval = xv[actIndex(cc.layout, n, g * cg + c, p, cc.c, inSize)];
              double wval = cc.layout == Layout::NCHW
                                ? wv[(m * cg + c) * kerSize + t]
                                : wv[(m * kerSize + t) * cg + c];
              sum += xval * wval;
              mag += std::fabs(xval * wval);
            }
            ++t;
          });
        }
        int64_t yi = actIndex(cc.layout, n, m, q, cc.m, outSize);
        if (cc.hasBias) {
          sum += bv[m];
          mag += std::fabs(bv[m]);
        }
        if (cc.hasResidual) {
          sum += rv[yi];
          mag += std::fabs(rv[yi]);
        }
        double r = activateRef(cc.act, sum);
        ref[yi] = r;
        bound[yi] = activatedBound(cc.act, (cg * kerSize + 8) * u * mag, r, u);
        ++q;
      });
    }

  cpu::ConvOptions o;
  o.strides = cc.strides;
  o.dilations = cc.dilations;
  o.padsBegin = cc.padsBegin;
  o.padsEnd = cc.padsEnd;
  o.groups = cc.groups;
  o.layout = cc.layout;
  o.activation = cc.act;
  TensorView resView = cc.residualInPlace ? y.view() : res.view();
  Status s = cpu::conv(x.view(), w.view(), cc.hasBias ? &bias.view() : nullptr,
                       cc.hasResidual ? &resView : nullptr, y.view(), o);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, ref, bound);
}

TEST_CASE("conv matches ONNX Conv in both layouts and every dtype",
          "[runtime][cpu][conv]") {
  struct Geo {
    int64_t n, c, m, groups;
    Shape in, ker;
    std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  };
  std::vector<Geo> geos = {
      // 1-D
      {2, 3, 4, 1, {11}, {3}, {2}, {}, {1}, {2}},
      {1, 6, 3, 3, {13}, {3}, {}, {2}, {2}, {0}},
      {2, 4, 8, 2, {5}, {1}, {}, {}, {}, {}}, // pointwise, groups
      // 2-D
      {2, 8, 5, 1, {7, 9}, {1, 1}, {}, {}, {}, {}}, // pointwise
      {1, 8, 6, 2, {4, 5}, {1, 1}, {}, {}, {}, {}}, // pointwise, groups
      {1, 6, 4, 1, {7, 9}, {1, 1}, {2, 2}, {}, {}, {}}, // 1x1 stride 2
      {2, 5, 7, 1, {9, 10}, {3, 3}, {}, {}, {1, 1}, {1, 1}},
      {1, 3, 4, 1, {11, 8}, {3, 3}, {2, 2}, {}, {0, 2}, {1, 0}},
      {1, 4, 3, 1, {12, 13}, {3, 2}, {1, 2}, {2, 3}, {2, 1}, {3, 0}},
      {2, 6, 6, 6, {9, 8}, {3, 3}, {2, 2}, {}, {1, 1}, {1, 1}}, // depthwise
      {1, 4, 6, 2, {6, 6}, {5, 5}, {}, {}, {4, 4}, {4, 3}}, // windows in pads
      {1, 3, 8, 1, {23, 21}, {7, 7}, {2, 2}, {}, {3, 3}, {3, 3}}, // stem-like
      {1, 2, 3, 1, {1, 1}, {1, 1}, {}, {}, {}, {}},
      {1, 3, 2, 1, {4, 4}, {4, 4}, {}, {}, {}, {}}, // kernel = input
      // 3-D
      {1, 4, 6, 2, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {2, 1, 1}, {1, 0, 1}, {0, 2, 1}},
      {2, 3, 5, 1, {3, 4, 5}, {1, 1, 1}, {}, {}, {}, {}}, // pointwise
      {1, 2, 2, 2, {4, 5, 3}, {3, 3, 3}, {2, 2, 2}, {}, {1, 1, 1}, {1, 1, 1}},
  };
  struct Types {
    DType in, out;
  };
  std::vector<Types> types = {{DType::F32, DType::F32},
                              {DType::F16, DType::F16},
                              {DType::BF16, DType::BF16},
                              {DType::F16, DType::F32},
                              {DType::F32, DType::BF16}};
  const Activation acts[] = {Activation::None, Activation::Relu,
                             Activation::Gelu, Activation::GeluTanh};
  uint64_t seed = 1000;
  int count = 0;
  for (const Geo &g : geos)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (const Types &ty : types) {
        ConvCase cc;
        cc.n = g.n;
        cc.c = g.c;
        cc.m = g.m;
        cc.groups = g.groups;
        cc.in = g.in;
        cc.ker = g.ker;
        cc.strides = g.strides;
        cc.dilations = g.dilations;
        cc.padsBegin = g.padsBegin;
        cc.padsEnd = g.padsEnd;
        cc.layout = layout;
        cc.in16 = ty.in;
        cc.out = ty.out;
        int variant = static_cast<int>(seed % 4);
        cc.hasBias = variant >= 1;
        cc.biasF32 = variant == 2;
        cc.hasResidual = variant >= 2;
        cc.residualInPlace = variant == 3;
        cc.act = acts[(seed / 4) % 4];
        runConvCase(cc, seed++);
        ++count;
      }
  CHECK(count == static_cast<int>(geos.size() * 2 * types.size()));
}

TEST_CASE("conv: im2col blocks and larger channels",
          "[runtime][cpu][conv]") {
  // Several column blocks per image (NCHW: 28 rows of 64 per block; NHWC:
  // 1820 pixels per block) and a ResNet-like bottleneck 1x1.
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (DType t : {DType::F32, DType::F16}) {
      ConvCase cc;
      cc.n = 2;
      cc.c = 32;
      cc.m = 8;
      cc.in = {64, 64};
      cc.ker = {3, 3};
      cc.padsBegin = {1, 1};
      cc.padsEnd = {1, 1};
      cc.layout = layout;
      cc.in16 = cc.out = t;
      cc.hasBias = true;
      cc.act = Activation::Relu;
      runConvCase(cc, 4242);

      ConvCase pw;
      pw.n = 1;
      pw.c = 64;
      pw.m = 48;
      pw.in = {14, 14};
      pw.ker = {1, 1};
      pw.layout = layout;
      pw.in16 = pw.out = t;
      pw.hasBias = pw.hasResidual = true;
      pw.act = Activation::Relu;
      runConvCase(pw, 4343);
    }
}

TEST_CASE("conv rejects bad arguments", "[runtime][cpu][conv]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor x = f32({1, 4, 8, 8}), w = f32({6, 2, 3, 3}), y = f32({1, 6, 6, 6});
  cpu::ConvOptions o;
  o.groups = 2;
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::conv(x.view(), w.view(), y.view(), o).isOk());
  cpu::ConvOptions g3 = o;
  g3.groups = 3;
  err(cpu::conv(x.view(), w.view(), y.view(), g3), "groups");
  err(cpu::conv(x.view(), f32({6, 3, 3, 3}).view(), y.view(), o),
      "input channels per group");
  err(cpu::conv(x.view(), w.view(), f32({1, 6, 8, 8}).view(), o), "y has shape");
  err(cpu::conv(x.view(), HostTensor(DType::F16, {6, 2, 3, 3}).view(), y.view(), o),
      "must match");
  err(cpu::conv(HostTensor(DType::I8, {1, 4, 8, 8}).view(), w.view(), y.view(), o),
      "x has dtype");
  cpu::ConvOptions bad = o;
  bad.strides = {1};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "strides has 1 entries");
  bad = o;
  bad.strides = {0, 1};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "strides must be >= 1");
  bad = o;
  bad.padsBegin = {-1, 0};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "padsBegin must be >= 0");
  HostTensor biasBad = f32({4}), res = f32({1, 6, 6, 5});
  err(cpu::conv(x.view(), w.view(), &biasBad.view(), nullptr, y.view(), o),
      "bias has shape");
  err(cpu::conv(x.view(), w.view(), nullptr, &res.view(), y.view(), o),
      "residual has shape");
  err(cpu::conv(f32({1, 4, 2, 2}).view(), w.view(), f32({1, 6, 0, 0}).view(), o),
      "smaller than the dilated kernel");
  err(cpu::conv(f32({4, 8}).view(), f32({6, 4}).view(), f32({4, 6}).view(), {}),
      "rank >= 3");
  err(cpu::conv(x.view(), w.view(), x.view(), o), "y has shape");
  cpu::ConvOptions nhwc = o;
  nhwc.layout = Layout::NHWC; // NCHW-shaped tensors read as NHWC
  err(cpu::conv(x.view(), w.view(), y.view(), nhwc), "input channels per group");
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  cpu::PoolKind kind = cpu::PoolKind::Max;
  int64_t n = 1, c = 1;
  Shape in, ker;
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  bool ceil = false;
  bool countIncludePad = false;
  Layout layout = Layout::NCHW;
  DType dtype = DType::F32;
  bool indices = false;
};

std::string describe(const PoolCase &p) {
  std::ostringstream s;
  auto vec = [&](const char *name, const std::vector<int64_t> &v) {
    if (!v.empty())
      s << " " << name << shapeString(v);
  };
  s << (p.kind == cpu::PoolKind::Max ? "max" : "avg") << " "
    << (p.layout == Layout::NCHW ? "NCHW" : "NHWC") << " N " << p.n << " C "
    << p.c << " in " << shapeString(p.in) << " kernel " << shapeString(p.ker);
  vec("strides", p.strides);
  vec("dilations", p.dilations);
  vec("padsBegin", p.padsBegin);
  vec("padsEnd", p.padsEnd);
  s << (p.ceil ? " ceil" : "") << (p.countIncludePad ? " count_include_pad" : "")
    << " " << dtypeName(p.dtype) << (p.indices ? " indices" : "");
  return s.str();
}

void runPoolCase(const PoolCase &pc, uint64_t seed) {
  INFO(describe(pc));
  Rng rng(seed);
  size_t k = pc.in.size();
  Shape outSp;
  for (size_t i = 0; i < k; ++i) {
    int64_t span = attr(pc.dilations, i, 1) * (pc.ker[i] - 1) + 1;
    int64_t num = pc.in[i] + attr(pc.padsBegin, i, 0) + attr(pc.padsEnd, i, 0) - span;
    int64_t s = attr(pc.strides, i, 1);
    outSp.push_back((pc.ceil ? (num + s - 1) / s : num / s) + 1);
  }
  HostTensor x = randomTensor(pc.dtype, withChannels(pc.layout, pc.n, pc.c, pc.in), rng);
  HostTensor y = garbage(pc.dtype, withChannels(pc.layout, pc.n, pc.c, outSp));
  HostTensor idx = pc.indices ? garbage(DType::I64, y.shape()) : HostTensor();
  std::vector<double> xv = values(x);
  int64_t inSize = numElements(pc.in), outSize = numElements(outSp);
  std::vector<int64_t> inSt = stridesOf(pc.in);
  std::vector<double> ref(static_cast<size_t>(y.numElements())), bound(ref.size());
  std::vector<int64_t> refIdx(ref.size());
  for (int64_t n = 0; n < pc.n; ++n)
    for (int64_t c = 0; c < pc.c; ++c) {
      int64_t q = 0;
      forEachIndex(outSp, [&](const std::vector<int64_t> &o) {
        double best = -INFINITY, sum = 0, mag = 0;
        int64_t bestIdx = -1, inside = 0, padded = 0;
        forEachIndex(pc.ker, [&](const std::vector<int64_t> &t) {
          bool in = true, inPad = true;
          int64_t p = 0;
          for (size_t j = 0; j < k; ++j) {
            int64_t i = o[j] * attr(pc.strides, j, 1) - attr(pc.padsBegin, j, 0) +
                        t[j] * attr(pc.dilations, j, 1);
            in = in && i >= 0 && i < pc.in[j];
            inPad = inPad && i >= -attr(pc.padsBegin, j, 0) &&
                    i < pc.in[j] + attr(pc.padsEnd, j, 0);
            p += i * inSt[j];
          }
          padded += inPad;
          if (!in)
            return;
          ++inside;
          int64_t xi = actIndex(pc.layout, n, c, p, pc.c, inSize);
          double v = xv[xi];
          if (bestIdx < 0 || v > best) {
            best = v;
            bestIdx = (n * pc.c + c) * inSize + p;
          }
          sum += v;
          mag += std::fabs(v);
        });
        int64_t yi = actIndex(pc.layout, n, c, q, pc.c, outSize);
        if (pc.kind == cpu::PoolKind::Max) {
          ref[yi] = best;
          refIdx[yi] = bestIdx;
        } else {
          int64_t count = pc.countIncludePad ? padded : inside;
          ref[yi] = count ? sum / count : 0.0;
          bound[yi] = count ? (numElements(pc.ker) + 2) * 0x1p-24 * mag / count : 0.0;
        }
        ++q;
      });
    }
  cpu::PoolOptions o;
  o.kind = pc.kind;
  o.kernel = pc.ker;
  o.strides = pc.strides;
  o.dilations = pc.dilations;
  o.padsBegin = pc.padsBegin;
  o.padsEnd = pc.padsEnd;
  o.countIncludePad = pc.countIncludePad;
  o.layout = pc.layout;
  Status s = cpu::pool(x.view(), y.view(), o, pc.indices ? &idx.view() : nullptr);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, ref, bound, pc.kind == cpu::PoolKind::Max);
  if (pc.indices) {
    int64_t bad = 0;
    for (int64_t i = 0; i < idx.numElements(); ++i)
      bad += idx.as<int64_t>()[i] != refIdx[i];
    CHECK(bad == 0);
  }
}

TEST_CASE("pool matches ONNX MaxPool / AveragePool", "[runtime][cpu][pool]") {
  struct Geo {
    Shape in, ker;
    std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
    bool ceil;
  };
  std::vector<Geo> geos = {
      {{13, 13}, {3, 3}, {2, 2}, {}, {1, 1}, {1, 1}, false}, // ResNet max pool
      {{7, 7}, {7, 7}, {}, {}, {}, {}, false},
      {{6, 7}, {3, 3}, {2, 2}, {}, {}, {}, true}, // ceil: windows past the end
      {{9, 8}, {2, 3}, {2, 1}, {}, {1, 0}, {0, 2}, true},
      {{10, 11}, {3, 2}, {1, 2}, {2, 3}, {2, 1}, {1, 2}, false}, // dilations
      {{1, 3}, {2, 2}, {}, {}, {2, 1}, {2, 1}, false}, // windows only in pads
      {{17}, {4}, {3}, {}, {2}, {1}, true},            // 1-D
      {{12}, {3}, {1}, {3}, {0}, {4}, false},
      {{5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 2}, {1, 0, 1}, {0, 1, 1}, true}, // 3-D
      {{4, 3, 5, 4}, {2, 2, 3, 2}, {1, 2, 2, 1}, {}, {1, 0, 1, 0}, {0, 1, 1, 1}, false}, // 4-D
  };
  uint64_t seed = 5000;
  int count = 0;
  for (const Geo &g : geos)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (int kind = 0; kind < 3; ++kind) {
          PoolCase pc;
          pc.n = 2;
          pc.c = 3;
          pc.in = g.in;
          pc.ker = g.ker;
          pc.strides = g.strides;
          pc.dilations = g.dilations;
          pc.padsBegin = g.padsBegin;
          pc.padsEnd = g.padsEnd;
          pc.ceil = g.ceil;
          pc.layout = layout;
          pc.dtype = t;
          pc.kind = kind == 0 ? cpu::PoolKind::Max : cpu::PoolKind::Average;
          pc.countIncludePad = kind == 2;
          pc.indices = kind == 0 && layout == Layout::NCHW;
          runPoolCase(pc, seed++);
          ++count;
        }
  CHECK(count == static_cast<int>(geos.size() * 2 * 3 * 3));
}

TEST_CASE("pool: max ties keep the first index and windows may lie in the padding",
          "[runtime][cpu][pool]") {
  // x = [[1, 5, 5], [5, 2, 0]]: 2x2 windows, stride 1, pads 1 at the end.
  HostTensor x(DType::F32, {1, 1, 2, 3}), y(DType::F32, {1, 1, 2, 3}),
      idx(DType::I64, {1, 1, 2, 3});
  const float xv[] = {1, 5, 5, 5, 2, 0};
  std::memcpy(x.data(), xv, sizeof xv);
  cpu::PoolOptions o;
  o.kernel = {2, 2};
  o.padsEnd = {1, 1};
  REQUIRE(cpu::pool(x.view(), y.view(), o, &idx.view()).isOk());
  const float ye[] = {5, 5, 5, 5, 2, 0};
  const int64_t ie[] = {1, 1, 2, 3, 4, 5};
  for (int i = 0; i < 6; ++i) {
    CHECK(y.as<float>()[i] == ye[i]);
    CHECK(idx.as<int64_t>()[i] == ie[i]);
  }
  // A window entirely in the padding: -inf and index -1 for max, 0 for
  // average.
  HostTensor x1(DType::F16, {1, 1, 1}), y1(DType::F16, {1, 1, 4}),
      i1(DType::I64, {1, 1, 4});
  x1.as<Half>()[0] = toHalf(3.0f);
  cpu::PoolOptions p;
  p.kernel = {2};
  p.padsBegin = {2};
  p.padsEnd = {2};
  REQUIRE(cpu::pool(x1.view(), y1.view(), p, &i1.view()).isOk());
  CHECK(std::isinf(toFloat(y1.as<Half>()[0])));
  CHECK(i1.as<int64_t>()[0] == -1);
  CHECK(toFloat(y1.as<Half>()[1]) == 3.0f);
  CHECK(i1.as<int64_t>()[1] == 0);
  p.kind = cpu::PoolKind::Average;
  REQUIRE(cpu::pool(x1.view(), y1.view(), p).isOk());
  CHECK(toFloat(y1.as<Half>()[0]) == 0.0f);
  CHECK(toFloat(y1.as<Half>()[1]) == 3.0f);
  p.countIncludePad = true;
  REQUIRE(cpu::pool(x1.view(), y1.view(), p).isOk());
  CHECK(toFloat(y1.as<Half>()[1]) == 1.5f);
}

TEST_CASE("globalPool matches GlobalAveragePool / GlobalMaxPool",
          "[runtime][cpu][pool]") {
  uint64_t seed = 6000;
  for (Shape spatial : {Shape{7, 7}, Shape{1, 1}, Shape{13}, Shape{3, 4, 5}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (cpu::PoolKind kind : {cpu::PoolKind::Max, cpu::PoolKind::Average}) {
          INFO("spatial " << shapeString(spatial) << " "
                          << (layout == Layout::NCHW ? "NCHW" : "NHWC") << " "
                          << dtypeName(t)
                          << (kind == cpu::PoolKind::Max ? " max" : " avg"));
          Rng rng(seed++);
          int64_t n = 2, c = 5, sz = numElements(spatial);
          HostTensor x = randomTensor(t, withChannels(layout, n, c, spatial), rng);
          HostTensor y = garbage(t, withChannels(layout, n, c, Shape(spatial.size(), 1)));
          std::vector<double> ref(n * c), bound(n * c);
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ch = 0; ch < c; ++ch) {
              double best = -INFINITY, sum = 0, mag = 0;
              for (int64_t p = 0; p < sz; ++p) {
                double v = getD(x, actIndex(layout, b, ch, p, c, sz));
                best = std::max(best, v);
                sum += v;
                mag += std::fabs(v);
              }
              ref[b * c + ch] = kind == cpu::PoolKind::Max ? best : sum / sz;
              bound[b * c + ch] = 4 * 0x1p-24 * mag / sz;
            }
          Status s = cpu::globalPool(kind, x.view(), y.view(), layout);
          INFO(s.message());
          REQUIRE(s.isOk());
          expectClose(y, ref, bound, kind == cpu::PoolKind::Max);
        }
}

TEST_CASE("pool rejects bad arguments", "[runtime][cpu][pool]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor x = f32({1, 2, 6, 7}), y = f32({1, 2, 3, 3});
  cpu::PoolOptions o;
  o.kernel = {3, 3};
  o.strides = {2, 2};
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::pool(x.view(), f32({1, 2, 2, 3}).view(), o).isOk()); // floor
  REQUIRE(cpu::pool(x.view(), y.view(), o).isOk());                  // ceil
  err(cpu::pool(x.view(), f32({1, 2, 4, 3}).view(), o), "floor");
  err(cpu::pool(x.view(), f32({1, 3, 3, 3}).view(), o), "batch or channels");
  err(cpu::pool(x.view(), HostTensor(DType::F16, {1, 2, 3, 3}).view(), o),
      "must match");
  cpu::PoolOptions bad = o;
  bad.kernel = {3};
  err(cpu::pool(x.view(), y.view(), bad), "kernel has 1 entries");
  bad = o;
  bad.kernel = {0, 3};
  err(cpu::pool(x.view(), y.view(), bad), "kernel must be >= 1");
  HostTensor idx32(DType::I32, {1, 2, 3, 3}), idx = HostTensor(DType::I64, {1, 2, 3, 3});
  err(cpu::pool(x.view(), y.view(), o, &idx32.view()), "i64");
  cpu::PoolOptions avg = o;
  avg.kind = cpu::PoolKind::Average;
  err(cpu::pool(x.view(), y.view(), avg, &idx.view()), "max pooling");
  cpu::PoolOptions big = o;
  big.kernel = {9, 3};
  err(cpu::pool(x.view(), y.view(), big), "smaller than the dilated window");
  err(cpu::globalPool(cpu::PoolKind::Max, x.view(), f32({1, 2, 1, 2}).view()),
      "must be 1");
  err(cpu::pool(f32({2, 6}).view(), f32({2, 3}).view(), o), "rank >= 3");
  err(cpu::pool(x.view(), x.view(), o), "y overlaps x");
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

TEST_CASE("batchNormInference matches the ONNX formula",
          "[runtime][cpu][batchnorm]") {
  uint64_t seed = 7000;
  for (Shape shape : {Shape{2, 3, 4, 5}, Shape{3, 4}, Shape{2, 5, 3, 2, 2},
                      Shape{1, 7, 9}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (bool paramsF32 : {true, false}) {
          INFO(shapeString(shape) << " " << (layout == Layout::NCHW ? "NCHW" : "NHWC")
                                  << " " << dtypeName(t)
                                  << (paramsF32 ? " f32 params" : ""));
          Rng rng(seed++);
          int64_t c = layout == Layout::NCHW ? shape[1] : shape.back();
          DType pt = paramsF32 ? DType::F32 : t;
          HostTensor x = randomTensor(t, shape, rng, -3, 3);
          HostTensor scale = randomTensor(pt, {c}, rng, -2, 2);
          HostTensor bias = randomTensor(pt, {c}, rng);
          HostTensor mean = randomTensor(pt, {c}, rng);
          HostTensor var = randomTensor(pt, {c}, rng, 0.1, 3);
          HostTensor y = garbage(t, shape);
          float eps = 1e-3f;
          std::vector<double> ref(x.numElements()), bound(ref.size());
          int64_t inner = 1;
          for (size_t i = 2; i < shape.size(); ++i)
            inner *= shape[i];
          for (int64_t i = 0; i < x.numElements(); ++i) {
            int64_t ch = layout == Layout::NCHW ? (i / inner) % c : i % c;
            double a = getD(scale, ch) / std::sqrt(getD(var, ch) + double(eps));
            double d = getD(x, i) - getD(mean, ch);
            ref[i] = d * a + getD(bias, ch);
            bound[i] = 8 * 0x1p-24 *
                       (std::fabs(d * a) + std::fabs(getD(bias, ch)) +
                        std::fabs(getD(mean, ch) * a));
          }
          cpu::BatchNormOptions o;
          o.epsilon = eps;
          o.layout = layout;
          Status s = cpu::batchNormInference(x.view(), scale.view(), bias.view(),
                                             mean.view(), var.view(), y.view(), o);
          INFO(s.message());
          REQUIRE(s.isOk());
          expectClose(y, ref, bound);
          // In place.
          REQUIRE(cpu::batchNormInference(x.view(), scale.view(), bias.view(),
                                          mean.view(), var.view(), x.view(), o)
                      .isOk());
          expectClose(x, ref, bound);
        }
}

TEST_CASE("batchNormTraining matches ONNX BatchNormalization-15 training",
          "[runtime][cpu][batchnorm]") {
  uint64_t seed = 8000;
  for (Shape shape : {Shape{4, 3, 5, 6}, Shape{6, 4}, Shape{2, 3, 2, 3, 4}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (DType statT : {DType::F32, t})
          for (bool inPlace : {false, true}) {
            INFO(shapeString(shape) << " "
                                    << (layout == Layout::NCHW ? "NCHW" : "NHWC")
                                    << " " << dtypeName(t) << " stats "
                                    << dtypeName(statT)
                                    << (inPlace ? " in place" : ""));
            Rng rng(seed++);
            int64_t c = layout == Layout::NCHW ? shape[1] : shape.back();
            HostTensor x = randomTensor(t, shape, rng, 1, 4); // mean far from 0
            HostTensor scale = randomTensor(statT, {c}, rng, -2, 2);
            HostTensor bias = randomTensor(statT, {c}, rng);
            HostTensor im = randomTensor(statT, {c}, rng);
            HostTensor iv = randomTensor(statT, {c}, rng, 0.1, 3);
            HostTensor y = garbage(t, shape);
            HostTensor rm = garbage(statT, {c}), rv = garbage(statT, {c});
            HostTensor bm = garbage(DType::F32, {c}), bvar = garbage(DType::F32, {c});
            float eps = 1e-5f, mom = 0.8f;
            int64_t inner = 1;
            for (size_t i = 2; i < shape.size(); ++i)
              inner *= shape[i];
            std::vector<double> sum(c, 0), sq(c, 0), cnt(c, 0);
            auto chOf = [&](int64_t i) {
              return layout == Layout::NCHW ? (i / inner) % c : i % c;
            };
            for (int64_t i = 0; i < x.numElements(); ++i) {
              sum[chOf(i)] += getD(x, i);
              cnt[chOf(i)] += 1;
            }
            for (int64_t ch = 0; ch < c; ++ch)
              sum[ch] /= cnt[ch];
            for (int64_t i = 0; i < x.numElements(); ++i) {
              double d = getD(x, i) - sum[chOf(i)];
              sq[chOf(i)] += d * d;
            }
            std::vector<double> mean(c), var(c), rmRef(c), rvRef(c), sBound(c);
            for (int64_t ch = 0; ch < c; ++ch) {
              mean[ch] = sum[ch];
              var[ch] = sq[ch] / cnt[ch]; // biased, as numpy.var
              rmRef[ch] = getD(im, ch) * mom + mean[ch] * (1 - double(mom));
              rvRef[ch] = getD(iv, ch) * mom + var[ch] * (1 - double(mom));
              sBound[ch] = 4 * 0x1p-24 * (std::fabs(getD(im, ch)) + std::fabs(mean[ch]) +
                                          std::fabs(getD(iv, ch)) + var[ch]);
            }
            std::vector<double> ref(x.numElements()), bound(ref.size());
            for (int64_t i = 0; i < x.numElements(); ++i) {
              int64_t ch = chOf(i);
              double a = getD(scale, ch) / std::sqrt(var[ch] + double(eps));
              double d = getD(x, i) - mean[ch];
              ref[i] = d * a + getD(bias, ch);
              bound[i] = 8 * 0x1p-24 *
                         (std::fabs(d * a) + std::fabs(getD(bias, ch)) +
                          std::fabs(mean[ch] * a));
            }
            cpu::BatchNormOptions o;
            o.epsilon = eps;
            o.momentum = mom;
            o.layout = layout;
            const TensorView &rmView = inPlace ? im.view() : rm.view();
            const TensorView &rvView = inPlace ? iv.view() : rv.view();
            Status s = cpu::batchNormTraining(
                x.view(), scale.view(), bias.view(), im.view(), iv.view(),
                y.view(), rmView, rvView, o, &bm.view(), &bvar.view());
            INFO(s.message());
            REQUIRE(s.isOk());
            expectClose(y, ref, bound);
            expectClose(inPlace ? im : rm, rmRef, sBound);
            expectClose(inPlace ? iv : rv, rvRef, sBound);
            std::vector<double> zero(c, 0.0);
            expectClose(bm, mean, zero);
            expectClose(bvar, var, zero);
          }
}

TEST_CASE("batch norm rejects bad arguments", "[runtime][cpu][batchnorm]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor x = f32({2, 3, 4}), y = f32({2, 3, 4}), p = f32({3}), q = f32({3}),
             r = f32({3}), v = f32({3});
  for (int i = 0; i < 3; ++i)
    p.as<float>()[i] = q.as<float>()[i] = r.as<float>()[i] = v.as<float>()[i] = 1;
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::batchNormInference(x.view(), p.view(), q.view(), r.view(), v.view(),
                                  y.view())
              .isOk());
  err(cpu::batchNormInference(x.view(), f32({4}).view(), q.view(), r.view(),
                              v.view(), y.view()),
      "scale has shape");
  err(cpu::batchNormInference(x.view(), p.view(), q.view(), r.view(), v.view(),
                              f32({2, 3, 5}).view()),
      "x's dtype and shape");
  err(cpu::batchNormInference(x.view(), p.view(), q.view(),
                              HostTensor(DType::I32, {3}).view(), v.view(),
                              y.view()),
      "mean has dtype");
  cpu::BatchNormOptions nhwc;
  nhwc.layout = Layout::NHWC; // channels = 4
  err(cpu::batchNormInference(x.view(), p.view(), q.view(), r.view(), v.view(),
                              y.view(), nhwc),
      "expected [4]");
  err(cpu::batchNormInference(f32({3}).view(), p.view(), q.view(), r.view(),
                              v.view(), f32({3}).view()),
      "rank >= 2");
  cpu::BatchNormOptions negEps;
  negEps.epsilon = -1;
  err(cpu::batchNormInference(x.view(), p.view(), q.view(), r.view(), v.view(),
                              y.view(), negEps),
      "epsilon");
  HostTensor rm = f32({3}), rv = f32({3});
  REQUIRE(cpu::batchNormTraining(x.view(), p.view(), q.view(), r.view(), v.view(),
                                 y.view(), rm.view(), rv.view())
              .isOk());
  err(cpu::batchNormTraining(x.view(), p.view(), q.view(), r.view(), v.view(),
                             y.view(), rm.view(), rm.view()),
      "overlaps");
  err(cpu::batchNormTraining(x.view(), p.view(), q.view(), r.view(), v.view(),
                             y.view(), p.view(), rv.view()),
      "runningMean overlaps scale");
  err(cpu::batchNormTraining(f32({0, 3}).view(), p.view(), q.view(), r.view(),
                             v.view(), f32({0, 3}).view(), rm.view(), rv.view()),
      "no elements");
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

TEST_CASE("softmax and logSoftmax match the definition",
          "[runtime][cpu][softmax]") {
  struct Case {
    Shape shape;
    int64_t axis;
    double range;
  };
  std::vector<Case> cases = {
      {{5, 7}, 1, 3},     {{5, 7}, -1, 3},  {{5, 7}, 0, 3},
      {{2, 3, 4}, 1, 5},  {{2, 3, 4}, -3, 5}, {{3, 1}, 1, 1},
      {{4, 1000}, 1, 8},  {{3, 17}, 1, 100}, // exp(100) overflows f32
      {{6}, 0, 2},        {{2, 3, 4, 5}, 2, 30},
  };
  uint64_t seed = 9000;
  for (const Case &cs : cases)
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
      for (bool log : {false, true})
        for (bool inPlace : {false, true}) {
          INFO(shapeString(cs.shape) << " axis " << cs.axis << " range "
                                     << cs.range << " " << dtypeName(t)
                                     << (log ? " log" : "")
                                     << (inPlace ? " in place" : ""));
          Rng rng(seed++);
          HostTensor x = randomTensor(t, cs.shape, rng, -cs.range, cs.range);
          HostTensor y = garbage(t, cs.shape);
          int64_t rank = cs.shape.size();
          int64_t axis = cs.axis < 0 ? cs.axis + rank : cs.axis;
          int64_t len = cs.shape[axis], inner = 1;
          for (int64_t i = axis + 1; i < rank; ++i)
            inner *= cs.shape[i];
          std::vector<double> xv = values(x), ref(xv.size()), bound(xv.size());
          double u = unitRoundoff(t);
          for (int64_t i = 0; i < x.numElements(); ++i) {
            int64_t base = (i / (len * inner)) * len * inner + i % inner;
            double mx = -INFINITY, s = 0;
            for (int64_t l = 0; l < len; ++l)
              mx = std::max(mx, xv[base + l * inner]);
            for (int64_t l = 0; l < len; ++l)
              s += std::exp(xv[base + l * inner] - mx);
            double d = xv[i] - mx;
            ref[i] = log ? d - std::log(s) : std::exp(d) / s;
            bound[i] = log ? 8 * u * (std::fabs(d) + std::fabs(std::log(s)) + 1)
                           : 8 * u * std::fabs(ref[i]) * (1 + std::fabs(d));
          }
          HostTensor &out = inPlace ? x : y;
          Status s = log ? cpu::logSoftmax(x.view(), out.view(), cs.axis)
                         : cpu::softmax(x.view(), out.view(), cs.axis);
          INFO(s.message());
          REQUIRE(s.isOk());
          expectClose(out, ref, bound);
        }
}

TEST_CASE("softmax rejects bad arguments", "[runtime][cpu][softmax]") {
  HostTensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3});
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  std::memset(x.data(), 0, x.byteCount());
  REQUIRE(cpu::softmax(x.view(), y.view(), 1).isOk());
  CHECK(y.as<float>()[0] == Approx(1.0 / 3));
  err(cpu::softmax(x.view(), y.view(), 2), "out of range");
  err(cpu::logSoftmax(x.view(), y.view(), -3), "out of range");
  err(cpu::softmax(x.view(), HostTensor(DType::F32, {3, 2}).view()),
      "x's dtype and shape");
  err(cpu::softmax(x.view(), HostTensor(DType::F16, {2, 3}).view()),
      "x's dtype and shape");
  err(cpu::softmax(HostTensor(DType::I64, {2, 3}).view(),
                   HostTensor(DType::I64, {2, 3}).view()),
      "x has dtype");
  TensorView shifted = y.view();
  shifted.data = x.as<float>() + 1;
  err(cpu::softmax(x.view(), shifted), "overlaps");
}

//===----------------------------------------------------------------------===//
// Timing (hidden: run with `mp-runtime-tests "[bench]"`)
//===----------------------------------------------------------------------===//

double secondsPerCall(const std::function<void()> &fn) {
  fn(); // warm up
  int reps = 0;
  auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    fn();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
  } while (elapsed < 1.0 && reps < 1000);
  return elapsed / reps;
}

TEST_CASE("CPU kernel timings (ResNet-50 shapes)", "[.][bench]") {
  Rng rng(1);
  struct ConvBench {
    const char *name;
    int64_t c, m, hw, k, stride, pad;
  };
  for (ConvBench b : {ConvBench{"3x3 64->64 56x56", 64, 64, 56, 3, 1, 1},
                      ConvBench{"1x1 256->64 56x56", 256, 64, 56, 1, 1, 0},
                      ConvBench{"1x1 64->256 56x56", 64, 256, 56, 1, 1, 0},
                      ConvBench{"3x3 256->256 14x14", 256, 256, 14, 3, 1, 1},
                      ConvBench{"7x7/2 3->64 224x224", 3, 64, 224, 7, 2, 3}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16}) {
        int64_t o = (b.hw + 2 * b.pad - b.k) / b.stride + 1;
        HostTensor x = randomTensor(t, withChannels(layout, 1, b.c, {b.hw, b.hw}), rng);
        HostTensor w = randomTensor(
            t, layout == Layout::NCHW ? Shape{b.m, b.c, b.k, b.k} : Shape{b.m, b.k, b.k, b.c},
            rng);
        HostTensor bias = randomTensor(t, {b.m}, rng);
        HostTensor y(t, withChannels(layout, 1, b.m, {o, o}));
        cpu::ConvOptions opt;
        opt.strides = {b.stride, b.stride};
        opt.padsBegin = opt.padsEnd = {b.pad, b.pad};
        opt.layout = layout;
        opt.activation = Activation::Relu;
        double sec = secondsPerCall([&] {
          REQUIRE(cpu::conv(x.view(), w.view(), &bias.view(), nullptr, y.view(), opt)
                      .isOk());
        });
        double flops = 2.0 * b.m * b.c * b.k * b.k * o * o;
        std::printf("conv %-22s %s %s: %8.3f ms  %6.1f GFLOP/s\n", b.name,
                    layout == Layout::NCHW ? "NCHW" : "NHWC",
                    std::string(dtypeName(t)).c_str(), sec * 1e3,
                    flops / sec * 1e-9);
      }
  {
    HostTensor a = randomTensor(DType::F32, {1, 2048}, rng);
    HostTensor w = randomTensor(DType::F32, {1000, 2048}, rng);
    HostTensor d(DType::F32, {1, 1000});
    cpu::MatmulOptions o;
    o.transB = true;
    double sec = secondsPerCall(
        [&] { REQUIRE(cpu::matmul(a.view(), w.view(), d.view(), o).isOk()); });
    std::printf("matmul fc 1x2048 @ 2048x1000^T: %8.3f ms  %6.1f GFLOP/s\n",
                sec * 1e3, 2.0 * 2048 * 1000 / sec * 1e-9);
  }
  {
    HostTensor x = randomTensor(DType::F32, {1, 64, 112, 112}, rng);
    HostTensor y(DType::F32, {1, 64, 56, 56});
    cpu::PoolOptions p;
    p.kernel = {3, 3};
    p.strides = {2, 2};
    p.padsBegin = p.padsEnd = {1, 1};
    double sec = secondsPerCall(
        [&] { REQUIRE(cpu::pool(x.view(), y.view(), p).isOk()); });
    std::printf("maxpool 3x3/2 64x112x112: %8.3f ms\n", sec * 1e3);
  }
  CHECK(true);
}

} // namespace
