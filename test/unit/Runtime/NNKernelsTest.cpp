// Tests of the CPU NN kernels other than rnn (mp/Runtime/CPU/NNKernels.h)
// and of their plan calls: each kernel against a naive reference written here
// in double on pseudo-random inputs (16-bit inputs rounded first, outputs
// within about one ulp of their type), against ONNX's documented examples,
// and against ONNX's backend test data when it is installed.
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/TensorIO.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#ifndef MP_ONNX_TESTDATA
#define MP_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::cpu;
namespace fs = std::filesystem;

namespace {

HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numElements(); ++i)
    setD(r, i, 777.0);
  return r;
}

double tolerance(DType t) {
  switch (t) {
  case DType::F16: return 0x1p-10;
  case DType::BF16: return 0x1p-7;
  case DType::F64: return 1e-12;
  default: return 2e-5;
  }
}

void expectClose(const std::vector<double> &got, const std::vector<double> &ref,
                 double tol, const std::string &what = "") {
  INFO(what);
  REQUIRE(got.size() == ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(ref[i])
                  ? std::isnan(got[i])
                  : std::fabs(got[i] - ref[i]) <= tol * (1.0 + std::fabs(ref[i]));
    if (!ok) {
      if (bad < 5)
        UNSCOPED_INFO("element " << i << ": got " << got[i] << ", expected "
                                 << ref[i]);
      ++bad;
    }
  }
  CHECK(bad == 0);
}

void expectError(const Status &s, const std::string &phrase) {
  INFO("message: " << s.message());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find(phrase) != std::string::npos);
}

fs::path nodeTest(const std::string &name) {
  return fs::path(MP_ONNX_TESTDATA) / "node" / name / "test_data_set_0";
}

bool haveTestData() {
  if (hasTensorProtoSupport() && fs::exists(nodeTest("test_lrn")))
    return true;
  WARN("ONNX backend test data not found in " MP_ONNX_TESTDATA);
  return false;
}

HostTensor readPb(const std::string &test, const std::string &file) {
  fs::path p = nodeTest(test) / file;
  Result<HostTensor> r = readTensorFile(p.string());
  INFO(p.string() << ": " << r.message());
  REQUIRE(r.isOk());
  return r.take();
}

/// A row-major multi-index iterator helper: strides of a shape.
std::vector<int64_t> stridesOf(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;)
    st[i - 1] = st[i] * s[i];
  return st;
}

} // namespace

//===----------------------------------------------------------------------===//
// Layer normalization, instance normalization, LRN
//===----------------------------------------------------------------------===//

TEST_CASE("layerNorm matches LayerNormalization-17", "[runtime][cpu][norm]") {
  Rng rng(1);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t axis : {-1, 1, 0}) {
      INFO(dtypeName(dt) << " axis " << axis);
      Shape xs{3, 4, 5};
      int64_t a = axis < 0 ? axis + 3 : axis;
      Shape inner(xs.begin() + a, xs.end());
      int64_t rowSize = numElements(inner), rows = 60 / rowSize;
      HostTensor x = randomTensor(dt, xs, rng, -2, 3);
      // scale broadcast along the first inner dim when there are two or more.
      Shape ss = inner;
      if (ss.size() >= 2)
        ss[0] = 1;
      HostTensor scale = randomTensor(dt, ss, rng);
      HostTensor bias = randomTensor(DType::F32, inner, rng);
      HostTensor y = garbage(dt, xs);
      Shape statShape(xs.begin(), xs.begin() + a);
      statShape.resize(3, 1);
      HostTensor mean = garbage(DType::F32, statShape),
                 inv = garbage(DType::F32, statShape);
      Status s = layerNorm(x.view(), scale.view(), &bias.view(), y.view(),
                           &mean.view(), &inv.view(), axis, 1e-3f);
      INFO(s.message());
      REQUIRE(s.isOk());
      std::vector<double> xv = values(x), sv = values(scale), bv = values(bias);
      std::vector<double> ry(60), rm(rows), ri(rows);
      int64_t innerCols = inner.back();
      for (int64_t r = 0; r < rows; ++r) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < rowSize; ++j)
          m += xv[r * rowSize + j];
        m /= rowSize;
        for (int64_t j = 0; j < rowSize; ++j)
          v += (xv[r * rowSize + j] - m) * (xv[r * rowSize + j] - m);
        v /= rowSize;
        double is = 1 / std::sqrt(v + 1e-3);
        rm[r] = m;
        ri[r] = is;
        for (int64_t j = 0; j < rowSize; ++j) {
          int64_t sj = ss.size() >= 2 ? j % (rowSize / inner[0]) : j;
          (void)innerCols;
          ry[r * rowSize + j] = (xv[r * rowSize + j] - m) * is * sv[sj] + bv[j];
        }
      }
      expectClose(values(y), ry, tolerance(dt), "y");
      expectClose(values(mean), rm, 1e-5, "mean");
      expectClose(values(inv), ri, 1e-5, "inv_std_dev");
    }
}

TEST_CASE("layerNormGrad is the gradient of layerNorm",
          "[runtime][cpu][norm][training]") {
  // Rows of the dims from `axis`; statistics from layerNorm itself. The
  // reference: the derivative of sum(w * y) by central differences of the
  // forward pass in double, where y = (x - mean) / sqrt(var + eps) * s + b.
  Rng rng(7);
  const double eps = 1e-3;
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t axis : {-1, 1}) {
      INFO(dtypeName(dt) << " axis " << axis);
      const Shape xs{3, 4, 5};
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const Shape inner(xs.begin() + a, xs.end());
      const int64_t rowSize = numElements(inner), rows = 60 / rowSize;
      HostTensor x = randomTensor(dt, xs, rng, -2, 3);
      HostTensor dy = randomTensor(dt, xs, rng, -1, 1);
      HostTensor scale = randomTensor(dt, inner, rng, 0.5, 1.5);
      HostTensor y = garbage(dt, xs);
      Shape statShape(xs.begin(), xs.begin() + a);
      statShape.resize(3, 1);
      HostTensor mean = garbage(DType::F32, statShape),
                 inv = garbage(DType::F32, statShape);
      REQUIRE(layerNorm(x.view(), scale.view(), nullptr, y.view(), &mean.view(),
                        &inv.view(), axis, static_cast<float>(eps))
                  .isOk());
      HostTensor dx = garbage(dt, xs), dscale = garbage(dt, inner),
                 dbias = garbage(dt, inner);
      Status s = layerNormGrad(dy.view(), x.view(), scale.view(), mean.view(),
                               inv.view(), dx.view(), dscale.view(),
                               &dbias.view(), axis);
      INFO(s.message());
      REQUIRE(s.isOk());
      const std::vector<double> xv = values(x), w = values(dy),
                                sv = values(scale);
      // x̂ of a row in double.
      auto normalize = [&](const std::vector<double> &row) {
        double m = 0, v = 0;
        for (double e : row)
          m += e;
        m /= rowSize;
        for (double e : row)
          v += (e - m) * (e - m);
        v /= rowSize;
        std::vector<double> xhat;
        for (double e : row)
          xhat.push_back((e - m) / std::sqrt(v + eps));
        return xhat;
      };
      // sum(w * y) for row r with x[r] replaced by `row`.
      auto objective = [&](int64_t r, const std::vector<double> &row) {
        const std::vector<double> xhat = normalize(row);
        double total = 0;
        for (int64_t j = 0; j < rowSize; ++j)
          total += w[r * rowSize + j] * xhat[j] * sv[j];
        return total;
      };
      std::vector<double> rdx(60), rdscale(rowSize, 0.0), rdbias(rowSize, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> row(xv.begin() + r * rowSize,
                                xv.begin() + (r + 1) * rowSize);
        for (int64_t j = 0; j < rowSize; ++j) {
          const double h = 1e-5, keep = row[j];
          row[j] = keep + h;
          const double up = objective(r, row);
          row[j] = keep - h;
          const double down = objective(r, row);
          row[j] = keep;
          rdx[r * rowSize + j] = (up - down) / (2 * h);
        }
        const std::vector<double> xhat = normalize(row);
        for (int64_t j = 0; j < rowSize; ++j) {
          rdscale[j] += w[r * rowSize + j] * xhat[j];
          rdbias[j] += w[r * rowSize + j];
        }
      }
      const double tol = dt == DType::F32 ? 1e-4 : 2e-2;
      expectClose(values(dx), rdx, tol, "dx");
      expectClose(values(dscale), rdscale, tol, "dscale");
      expectClose(values(dbias), rdbias, tol, "dbias");
    }
  // Statistics that are not f32 and a scale of the wrong size are refused.
  HostTensor x(DType::F32, {2, 3}), scale(DType::F32, {3}),
      stats(DType::F32, {2, 1}), stats16(DType::F16, {2, 1}),
      small(DType::F32, {2}), dx(DType::F32, {2, 3}), ds(DType::F32, {3});
  Status s16 = layerNormGrad(x.view(), x.view(), scale.view(), stats16.view(),
                             stats.view(), dx.view(), ds.view(), nullptr);
  CHECK_FALSE(s16);
  CHECK(s16.message().find("mean must hold the 2 f32 statistics") !=
        std::string::npos);
  Status sSmall = layerNormGrad(x.view(), x.view(), small.view(), stats.view(),
                                stats.view(), dx.view(), ds.view(), nullptr);
  CHECK_FALSE(sSmall);
  CHECK(sSmall.message().find("scale must hold the 3 values") !=
        std::string::npos);
}

TEST_CASE("rmsNorm divides by the root mean square, no mean subtracted",
          "[runtime][cpu][norm]") {
  Rng rng(2);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t axis : {-1, 1}) {
      INFO(dtypeName(dt) << " axis " << axis);
      // Rows of 1-2.5 plus an offset: a layer norm would subtract the mean.
      Shape xs{3, 4, 5};
      int64_t a = axis < 0 ? axis + 3 : axis;
      Shape inner(xs.begin() + a, xs.end());
      int64_t rowSize = numElements(inner), rows = 60 / rowSize;
      HostTensor x = randomTensor(dt, xs, rng, 1, 2.5);
      Shape ss = inner;
      if (ss.size() >= 2)
        ss[0] = 1; // broadcast along the first normalized dim
      HostTensor scale = randomTensor(dt, ss, rng);
      HostTensor y = garbage(dt, xs);
      Status s = rmsNorm(x.view(), scale.view(), y.view(), axis, 1e-3f);
      INFO(s.message());
      REQUIRE(s.isOk());
      std::vector<double> xv = values(x), sv = values(scale), ry(60);
      for (int64_t r = 0; r < rows; ++r) {
        double squares = 0;
        for (int64_t j = 0; j < rowSize; ++j)
          squares += xv[r * rowSize + j] * xv[r * rowSize + j];
        double inv = 1 / std::sqrt(squares / rowSize + 1e-3);
        for (int64_t j = 0; j < rowSize; ++j) {
          int64_t sj = ss.size() >= 2 ? j % (rowSize / inner[0]) : j;
          ry[r * rowSize + j] = xv[r * rowSize + j] * inv * sv[sj];
        }
      }
      expectClose(values(y), ry, tolerance(dt), "y");
    }
  // In place, and the checks (the CPU's words, shared with CUDA planning).
  HostTensor x = randomTensor(DType::F32, {2, 4}, rng);
  std::vector<double> before = values(x);
  HostTensor ones = randomTensor(DType::F32, {4}, rng, 1, 1);
  REQUIRE(rmsNorm(x.view(), ones.view(), x.view(), -1, 0.f).isOk());
  for (int64_t r = 0; r < 2; ++r) {
    double squares = 0;
    for (int64_t j = 0; j < 4; ++j)
      squares += before[r * 4 + j] * before[r * 4 + j];
    for (int64_t j = 0; j < 4; ++j)
      CHECK(values(x)[r * 4 + j] ==
            Approx(before[r * 4 + j] / std::sqrt(squares / 4)).epsilon(1e-5));
  }
  HostTensor wrong = randomTensor(DType::F32, {3}, rng);
  CHECK(rmsNorm(x.view(), wrong.view(), x.view()).message() ==
        "rms_norm: scale [3] does not broadcast to [4]");
  CHECK(rmsNorm(x.view(), ones.view(), x.view(), -1, -1.f).message() ==
        "rms_norm: epsilon must be >= 0");
}

TEST_CASE("groupNorm normalizes each image's groups of channels",
          "[runtime][cpu][norm]") {
  Rng rng(3);
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int64_t groups : {1, 2, 6}) {
      INFO(dtypeName(dt) << " groups " << groups);
      const int64_t n = 2, c = 6, spatial = 5;
      HostTensor x = randomTensor(dt, {n, c, spatial}, rng, -2, 3);
      // Per channel, as exporters write them ([C, 1]) and as a vector.
      HostTensor scale = randomTensor(dt, {c, 1}, rng);
      HostTensor bias = randomTensor(DType::F32, {c}, rng);
      HostTensor y = garbage(dt, {n, c, spatial});
      Status s = groupNorm(x.view(), scale.view(), &bias.view(), y.view(),
                           groups, 1e-3f);
      INFO(s.message());
      REQUIRE(s.isOk());
      std::vector<double> xv = values(x), sv = values(scale), bv = values(bias);
      std::vector<double> ry(xv.size());
      const int64_t size = c / groups * spatial;
      for (int64_t item = 0; item < n * groups; ++item) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < size; ++j)
          m += xv[item * size + j];
        m /= size;
        for (int64_t j = 0; j < size; ++j)
          v += (xv[item * size + j] - m) * (xv[item * size + j] - m);
        v /= size;
        for (int64_t j = 0; j < size; ++j) {
          int64_t ch = (item % groups) * (c / groups) + j / spatial;
          ry[item * size + j] =
              (xv[item * size + j] - m) / std::sqrt(v + 1e-3) * sv[ch] + bv[ch];
        }
      }
      expectClose(values(y), ry, tolerance(dt), "y");
    }
  // The checks (the CPU's words, shared with CUDA planning).
  HostTensor x = randomTensor(DType::F32, {1, 6, 4}, rng);
  HostTensor scale = randomTensor(DType::F32, {6}, rng);
  CHECK(groupNorm(x.view(), scale.view(), nullptr, x.view(), 4).message() ==
        "group_norm: groups must divide the 6 channels, got 4");
  HostTensor wide = randomTensor(DType::F32, {6, 4}, rng);
  CHECK(groupNorm(x.view(), wide.view(), nullptr, x.view(), 3).message() ==
        "group_norm: scale [6, 4] must hold one value per channel ([6] or "
        "[6, 1, ...])");
  // In place, without a bias: each group has mean 0 and variance 1.
  REQUIRE(groupNorm(x.view(),
                    randomTensor(DType::F32, {1, 6, 1}, rng, 1, 1).view(),
                    nullptr, x.view(), 3, 0.f)
              .isOk());
  std::vector<double> out = values(x);
  for (int64_t g = 0; g < 3; ++g) {
    double m = 0, v = 0;
    for (int64_t j = 0; j < 8; ++j)
      m += out[g * 8 + j] / 8;
    for (int64_t j = 0; j < 8; ++j)
      v += (out[g * 8 + j] - m) * (out[g * 8 + j] - m) / 8;
    CHECK(m == Approx(0).margin(1e-5));
    CHECK(v == Approx(1).epsilon(1e-4));
  }
}

TEST_CASE("layerNorm: ONNX backend test data", "[runtime][cpu][norm][onnx]") {
  if (!haveTestData())
    return;
  struct Case {
    const char *name;
    int64_t axis;
    float epsilon;
  };
  for (Case c : {Case{"test_layer_normalization_2d_axis0", 0, 1e-5f},
                 Case{"test_layer_normalization_2d_axis_negative_1", -1, 1e-5f},
                 Case{"test_layer_normalization_3d_axis1_epsilon", 1, 0.1f},
                 Case{"test_layer_normalization_4d_axis_negative_3", -3, 1e-5f},
                 Case{"test_layer_normalization_default_axis", -1, 1e-5f}}) {
    INFO(c.name);
    HostTensor x = readPb(c.name, "input_0.pb"), w = readPb(c.name, "input_1.pb"),
               b = readPb(c.name, "input_2.pb");
    HostTensor ey = readPb(c.name, "output_0.pb"),
               em = readPb(c.name, "output_1.pb"),
               ei = readPb(c.name, "output_2.pb");
    HostTensor y(DType::F32, ey.shape()), m(DType::F32, em.shape()),
        i(DType::F32, ei.shape());
    Status s = layerNorm(x.view(), w.view(), &b.view(), y.view(), &m.view(),
                         &i.view(), c.axis, c.epsilon);
    INFO(s.message());
    REQUIRE(s.isOk());
    expectClose(values(y), values(ey), 1e-5, "Y");
    expectClose(values(m), values(em), 1e-5, "Mean");
    expectClose(values(i), values(ei), 1e-5, "InvStdDev");
  }
}

TEST_CASE("instanceNorm and lrn match ONNX", "[runtime][cpu][norm]") {
  Rng rng(2);
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtypeName(dt));
    Shape xs{2, 5, 3, 4};
    HostTensor x = randomTensor(dt, xs, rng, -2, 2);
    HostTensor scale = randomTensor(dt, {5}, rng), bias = randomTensor(dt, {5}, rng);
    HostTensor y = garbage(dt, xs);
    REQUIRE(instanceNorm(x.view(), scale.view(), bias.view(), y.view(), 0.01f)
                .isOk());
    std::vector<double> xv = values(x), sv = values(scale), bv = values(bias);
    std::vector<double> ref(xv.size());
    for (int64_t nc = 0; nc < 10; ++nc) {
      double m = 0, v = 0;
      for (int j = 0; j < 12; ++j)
        m += xv[nc * 12 + j] / 12;
      for (int j = 0; j < 12; ++j)
        v += (xv[nc * 12 + j] - m) * (xv[nc * 12 + j] - m) / 12;
      for (int j = 0; j < 12; ++j)
        ref[nc * 12 + j] = sv[nc % 5] * (xv[nc * 12 + j] - m) /
                               std::sqrt(v + 0.01) + bv[nc % 5];
    }
    expectClose(values(y), ref, tolerance(dt), "instance norm");

    LrnOptions o;
    o.size = 4; // window [c - 1, c + 2]
    o.alpha = 0.3f;
    o.beta = 0.6f;
    o.bias = 1.5f;
    HostTensor ly = garbage(dt, xs);
    REQUIRE(lrn(x.view(), ly.view(), o).isOk());
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 5; ++c)
        for (int64_t j = 0; j < 12; ++j) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - 1);
               k <= std::min<int64_t>(4, c + 2); ++k)
            sq += xv[(n * 5 + k) * 12 + j] * xv[(n * 5 + k) * 12 + j];
          int64_t i = (n * 5 + c) * 12 + j;
          ref[i] = xv[i] / std::pow(1.5 + 0.3 / 4 * sq, 0.6);
        }
    expectClose(values(ly), ref, tolerance(dt), "lrn");
  }
}

TEST_CASE("instanceNorm and lrn: ONNX backend test data",
          "[runtime][cpu][norm][onnx]") {
  if (!haveTestData())
    return;
  for (auto [name, eps] : {std::pair<const char *, float>{
                               "test_instancenorm_example", 1e-5f},
                           {"test_instancenorm_epsilon", 0.01f}}) {
    INFO(name);
    HostTensor x = readPb(name, "input_0.pb"), s = readPb(name, "input_1.pb"),
               b = readPb(name, "input_2.pb"), e = readPb(name, "output_0.pb");
    HostTensor y(DType::F32, e.shape());
    REQUIRE(instanceNorm(x.view(), s.view(), b.view(), y.view(), eps).isOk());
    expectClose(values(y), values(e), 1e-5);
  }
  HostTensor x = readPb("test_lrn", "input_0.pb"),
             e = readPb("test_lrn", "output_0.pb");
  HostTensor y(DType::F32, e.shape());
  LrnOptions o;
  o.size = 3;
  o.alpha = 0.0002f;
  o.beta = 0.5f;
  o.bias = 2.0f;
  REQUIRE(lrn(x.view(), y.view(), o).isOk());
  expectClose(values(y), values(e), 1e-5, "test_lrn");
}

TEST_CASE("normalizations reject bad arguments", "[runtime][cpu][norm]") {
  HostTensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3}), s3(DType::F32, {3}),
      s4(DType::F32, {4}), m(DType::F32, {3, 1});
  expectError(layerNorm(x.view(), s4.view(), nullptr, y.view(), nullptr,
                        nullptr, -1),
              "scale [4] does not broadcast to [3]");
  expectError(layerNorm(x.view(), s3.view(), nullptr, y.view(), nullptr,
                        nullptr, 2),
              "axis 2 is out of range");
  expectError(layerNorm(x.view(), s3.view(), nullptr, y.view(), &m.view(),
                        nullptr, -1),
              "mean has shape [3, 1], expected [2, 1]");
  HostTensor yBad(DType::F16, {2, 3});
  expectError(layerNorm(x.view(), s3.view(), nullptr, yBad.view(), nullptr,
                        nullptr, -1),
              "y is f16 [2, 3], expected x's f32 [2, 3]");
  HostTensor x4(DType::F32, {1, 3, 2}), y4(DType::F32, {1, 3, 2});
  expectError(instanceNorm(x4.view(), s4.view(), s3.view(), y4.view()),
              "scale [4] does not broadcast to [3]");
  LrnOptions o;
  o.size = 0;
  expectError(lrn(x4.view(), y4.view(), o), "size must be >= 1");
}

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss
//===----------------------------------------------------------------------===//

namespace {

/// Reference NLL loss over [N, C, inner] in double.
std::vector<double> nllRef(const std::vector<double> &in,
                           const std::vector<double> &target,
                           const std::vector<double> *weight, int64_t n,
                           int64_t c, int64_t inner, LossReduction red,
                           std::optional<int64_t> ignore) {
  std::vector<double> loss(n * inner);
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t t = static_cast<int64_t>(target[i * inner + j]);
      if (ignore && t == *ignore) {
        loss[i * inner + j] = 0;
        continue;
      }
      double w = weight ? (*weight)[t] : 1.0;
      loss[i * inner + j] = -in[(i * c + t) * inner + j] * w;
      sum += loss[i * inner + j];
      wsum += w;
    }
  if (red == LossReduction::None)
    return loss;
  return {red == LossReduction::Sum ? sum : sum / wsum};
}

} // namespace

TEST_CASE("nllLoss matches NegativeLogLikelihoodLoss", "[runtime][cpu][loss]") {
  Rng rng(5);
  for (DType dt : {DType::F32, DType::F16, DType::F64})
    for (LossReduction red :
         {LossReduction::None, LossReduction::Sum, LossReduction::Mean})
      for (int variant = 0; variant < 3; ++variant) {
        INFO(dtypeName(dt) << " reduction " << int(red) << " variant "
                           << variant);
        int64_t n = 3, c = 4, inner = variant == 0 ? 1 : 6;
        Shape is{n, c}, ts{n};
        if (variant > 0) {
          is.insert(is.end(), {2, 3});
          ts.insert(ts.end(), {2, 3});
        }
        HostTensor input = randomTensor(dt, is, rng, -3, 0);
        HostTensor target(variant == 2 ? DType::I32 : DType::I64, ts);
        std::vector<double> tv;
        for (int64_t i = 0; i < n * inner; ++i) {
          int64_t t = static_cast<int64_t>(rng.next() % (c + 1)) - 1; // -1..c-1
          tv.push_back(static_cast<double>(t));
          setD(target, i, static_cast<double>(t));
        }
        std::optional<int64_t> ignore = -1;
        HostTensor weight = randomTensor(dt, {c}, rng, 0.2, 2);
        bool useWeight = variant != 0;
        std::vector<double> wv = values(weight);
        HostTensor loss = garbage(dt, red == LossReduction::None ? ts : Shape{});
        Status s = nllLoss(input.view(), target.view(),
                           useWeight ? &weight.view() : nullptr, loss.view(),
                           red, ignore);
        INFO(s.message());
        REQUIRE(s.isOk());
        expectClose(values(loss),
                    nllRef(values(input), tv, useWeight ? &wv : nullptr, n, c,
                           inner, red, ignore),
                    tolerance(dt));
      }
}

TEST_CASE("nllLoss: ONNX example and errors", "[runtime][cpu][loss]") {
  // onnx/backend/test/case/node/negativeloglikelihoodloss.py, input_shape
  // [N, C] = [3, 5] with target [2, 1, 4] → loss mean = -(x[0,2]+x[1,1]+x[2,4])/3.
  HostTensor input(DType::F32, {3, 5});
  for (int i = 0; i < 15; ++i)
    input.as<float>()[i] = -0.1f * static_cast<float>(i);
  HostTensor target = tensor(DType::I64, {3}, {2, 1, 4});
  HostTensor loss(DType::F32, {});
  REQUIRE(nllLoss(input.view(), target.view(), nullptr, loss.view(),
                  LossReduction::Mean)
              .isOk());
  CHECK(loss.as<float>()[0] == Approx((0.2 + 0.6 + 1.4) / 3));
  HostTensor bad = tensor(DType::I64, {3}, {2, 5, 4});
  expectError(nllLoss(input.view(), bad.view(), nullptr, loss.view(),
                      LossReduction::Mean),
              "target 5 at 1 is outside [0, 5)");
  // An out-of-range target that is ignored is fine.
  REQUIRE(nllLoss(input.view(), bad.view(), nullptr, loss.view(),
                  LossReduction::Sum, 5)
              .isOk());
  CHECK(loss.as<float>()[0] == Approx(0.2 + 1.4));
  HostTensor lossBad(DType::F32, {3, 1});
  expectError(nllLoss(input.view(), target.view(), nullptr, lossBad.view(),
                      LossReduction::None),
              "loss has shape [3, 1], expected [3]");
}

TEST_CASE("nllLoss: ONNX backend test data", "[runtime][cpu][loss][onnx]") {
  if (!haveTestData())
    return;
  struct Case {
    const char *name;
    LossReduction red;
    std::optional<int64_t> ignore;
  };
  for (Case c :
       {Case{"test_nllloss_NC", LossReduction::None, std::nullopt},
        Case{"test_nllloss_NCd1_weight", LossReduction::Mean, std::nullopt},
        Case{"test_nllloss_NCd1_mean_weight_negative_ii", LossReduction::Mean, -1},
        Case{"test_nllloss_NCd1d2d3_sum_weight_high_ii", LossReduction::Sum, 10},
        Case{"test_nllloss_NCd1d2_with_weight", LossReduction::None, std::nullopt},
        Case{"test_nllloss_NCd1d2d3d4d5_mean_weight", LossReduction::Mean,
             std::nullopt}}) {
    INFO(c.name);
    HostTensor in = readPb(c.name, "input_0.pb"),
               t = readPb(c.name, "input_1.pb"), e = readPb(c.name, "output_0.pb");
    bool hasWeight = fs::exists(nodeTest(c.name) / "input_2.pb");
    HostTensor w = hasWeight ? readPb(c.name, "input_2.pb") : HostTensor();
    HostTensor loss(in.dtype(), e.shape());
    Status s = nllLoss(in.view(), t.view(), hasWeight ? &w.view() : nullptr,
                       loss.view(), c.red, c.ignore);
    INFO(s.message());
    REQUIRE(s.isOk());
    expectClose(values(loss), values(e), 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

namespace {

/// Naive ConvTranspose in double, by the scatter definition.
std::vector<double> convTransposeRef(const HostTensor &x, const HostTensor &w,
                                     const std::vector<double> *bias,
                                     const Shape &ys,
                                     const ConvTransposeOptions &o) {
  size_t k = x.shape().size() - 2;
  int64_t n = x.shape()[0], c = x.shape()[1], mg = w.shape()[1];
  int64_t cg = c / o.groups, m = ys[1];
  std::vector<double> xv = values(x), wv = values(w);
  std::vector<double> y(numElements(ys), 0.0);
  Shape in(x.shape().begin() + 2, x.shape().end()),
      ker(w.shape().begin() + 2, w.shape().end()), out(ys.begin() + 2, ys.end());
  auto ist = stridesOf(in), kst = stridesOf(ker), ost = stridesOf(out);
  int64_t inSize = numElements(in), kSize = numElements(ker),
          oSize = numElements(out);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inSize; ++i)
        for (int64_t kk = 0; kk < kSize; ++kk) {
          int64_t off = 0;
          bool ok = true;
          for (size_t d = 0; d < k; ++d) {
            int64_t id = i / ist[d] % in[d], kd = kk / kst[d] % ker[d];
            int64_t s = o.strides.empty() ? 1 : o.strides[d];
            int64_t dl = o.dilations.empty() ? 1 : o.dilations[d];
            int64_t pb = o.padsBegin.empty() ? 0 : o.padsBegin[d];
            int64_t od = id * s - pb + kd * dl;
            if (od < 0 || od >= out[d])
              ok = false;
            off += od * ost[d];
          }
          if (!ok)
            continue;
          int64_t grp = ch / cg;
          for (int64_t mm = 0; mm < mg; ++mm)
            y[(b * m + grp * mg + mm) * oSize + off] +=
                xv[(b * c + ch) * inSize + i] * wv[(ch * mg + mm) * kSize + kk];
        }
  if (bias)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t mm = 0; mm < m; ++mm)
        for (int64_t p = 0; p < oSize; ++p)
          y[(b * m + mm) * oSize + p] += (*bias)[mm];
  return y;
}

} // namespace

TEST_CASE("convTranspose matches ONNX ConvTranspose in 1-D, 2-D and 3-D",
          "[runtime][cpu][convtranspose]") {
  Rng rng(9);
  struct Case {
    Shape x, w;
    ConvTransposeOptions o;
    std::vector<int64_t> outPad;
  };
  std::vector<Case> cases;
  {
    Case c{{2, 4, 7}, {4, 3, 3}, {}, {1}};
    c.o.strides = {2};
    c.o.padsBegin = {1};
    c.o.padsEnd = {0};
    cases.push_back(c);
  }
  {
    Case c{{1, 4, 5, 6}, {4, 2, 3, 2}, {}, {0, 1}};
    c.o.strides = {2, 3};
    c.o.dilations = {2, 1};
    c.o.padsBegin = {1, 0};
    c.o.padsEnd = {2, 1};
    c.o.groups = 2;
    cases.push_back(c);
  }
  {
    Case c{{1, 2, 3, 4, 2}, {2, 3, 2, 3, 2}, {}, {0, 0, 0}};
    c.o.strides = {1, 2, 2};
    cases.push_back(c);
  }
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (const Case &c : cases) {
      INFO(dtypeName(dt) << " x " << c.x.size());
      size_t k = c.x.size() - 2;
      Shape ys{c.x[0], c.w[1] * c.o.groups};
      for (size_t d = 0; d < k; ++d) {
        int64_t s = c.o.strides.empty() ? 1 : c.o.strides[d];
        int64_t dl = c.o.dilations.empty() ? 1 : c.o.dilations[d];
        int64_t pb = c.o.padsBegin.empty() ? 0 : c.o.padsBegin[d];
        int64_t pe = c.o.padsEnd.empty() ? 0 : c.o.padsEnd[d];
        ys.push_back(s * (c.x[2 + d] - 1) + c.outPad[d] +
                     dl * (c.w[2 + d] - 1) + 1 - pb - pe);
      }
      HostTensor x = randomTensor(dt, c.x, rng), w = randomTensor(dt, c.w, rng);
      HostTensor bias = randomTensor(DType::F32, {ys[1]}, rng);
      HostTensor y = garbage(dt, ys);
      Status s = convTranspose(x.view(), w.view(), &bias.view(), y.view(), c.o);
      INFO(s.message());
      REQUIRE(s.isOk());
      std::vector<double> bv = values(bias);
      expectClose(values(y), convTransposeRef(x, w, &bv, ys, c.o),
                  dt == DType::F32 ? 1e-5 : tolerance(dt) * 2);
    }
}

TEST_CASE("convTranspose: ONNX backend test data and errors",
          "[runtime][cpu][convtranspose]") {
  if (haveTestData()) {
    struct Case {
      const char *name;
      std::vector<int64_t> strides, dilations, pads;
    };
    for (const Case &c :
         {Case{"test_convtranspose", {}, {}, {}},
          Case{"test_convtranspose_1d", {}, {}, {}},
          Case{"test_convtranspose_3d", {}, {}, {}},
          Case{"test_convtranspose_dilations", {}, {2, 2}, {}},
          Case{"test_convtranspose_pads", {3, 2}, {}, {1, 2, 1, 2}},
          Case{"test_convtranspose_kernel_shape", {3, 2}, {}, {}}}) {
      INFO(c.name);
      HostTensor x = readPb(c.name, "input_0.pb"),
                 w = readPb(c.name, "input_1.pb"),
                 e = readPb(c.name, "output_0.pb");
      ConvTransposeOptions o;
      o.strides = c.strides;
      o.dilations = c.dilations;
      if (!c.pads.empty()) {
        o.padsBegin.assign(c.pads.begin(), c.pads.begin() + c.pads.size() / 2);
        o.padsEnd.assign(c.pads.begin() + c.pads.size() / 2, c.pads.end());
      }
      HostTensor y(DType::F32, e.shape());
      Status s = convTranspose(x.view(), w.view(), nullptr, y.view(), o);
      INFO(s.message());
      REQUIRE(s.isOk());
      expectClose(values(y), values(e), 1e-5);
    }
  }
  HostTensor x(DType::F32, {1, 2, 3}), w(DType::F32, {2, 1, 2}),
      y(DType::F32, {1, 1, 4}), yBig(DType::F32, {1, 1, 6});
  ConvTransposeOptions o;
  CHECK(convTranspose(x.view(), w.view(), nullptr, y.view(), o).isOk());
  expectError(convTranspose(x.view(), w.view(), nullptr, yBig.view(), o),
              "expected 4 plus an output padding");
  o.groups = 3;
  expectError(convTranspose(x.view(), w.view(), nullptr, y.view(), o),
              "groups = 3 must be >= 1 and divide the input channels (2)");
  HostTensor w16(DType::F16, {2, 1, 2});
  expectError(convTranspose(x.view(), w16.view(), nullptr, y.view(), {}),
              "x and w have dtypes f32 and f16");
}

//===----------------------------------------------------------------------===//
// TopK, CumSum, Trilu, Hardmax
//===----------------------------------------------------------------------===//

TEST_CASE("topk: ONNX examples, ties and dtypes", "[runtime][cpu][topk]") {
  // onnx/backend/test/case/node/topk.py: x = arange(12).reshape(3, 4), k = 3.
  std::vector<double> xv;
  for (int i = 0; i < 12; ++i)
    xv.push_back(i);
  for (DType dt : {DType::F32, DType::I64, DType::BF16}) {
    HostTensor x = tensor(dt, {3, 4}, xv);
    HostTensor v(dt, {3, 3}), idx(DType::I64, {3, 3});
    REQUIRE(topk(x.view(), v.view(), idx.view(), 1, true).isOk());
    CHECK(values(v) == std::vector<double>{3, 2, 1, 7, 6, 5, 11, 10, 9});
    CHECK(values(idx) == std::vector<double>{3, 2, 1, 3, 2, 1, 3, 2, 1});
    REQUIRE(topk(x.view(), v.view(), idx.view(), -1, false).isOk());
    CHECK(values(v) == std::vector<double>{0, 1, 2, 4, 5, 6, 8, 9, 10});
    CHECK(values(idx) == std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2});
  }
  // Ties keep the lower index first; along axis 0 with inner elements.
  HostTensor x = tensor(DType::F32, {4, 2}, {1, 5, 3, 5, 3, 2, 1, 5});
  HostTensor v(DType::F32, {2, 2}), idx(DType::I32, {2, 2});
  REQUIRE(topk(x.view(), v.view(), idx.view(), 0, true).isOk());
  CHECK(values(v) == std::vector<double>{3, 5, 3, 5});
  CHECK(values(idx) == std::vector<double>{1, 0, 2, 1});
  REQUIRE(topk(x.view(), v.view(), idx.view(), 0, false).isOk());
  CHECK(values(v) == std::vector<double>{1, 2, 1, 5});
  CHECK(values(idx) == std::vector<double>{0, 2, 3, 0});
  // Random data against a stable sort.
  Rng rng(11);
  HostTensor r(DType::F32, {5, 30, 3});
  for (int64_t i = 0; i < r.numElements(); ++i)
    r.as<float>()[i] = static_cast<float>(rng.next() % 7); // many ties
  HostTensor rv(DType::F32, {5, 8, 3}), ri(DType::I64, {5, 8, 3});
  REQUIRE(topk(r.view(), rv.view(), ri.view(), 1, true).isOk());
  size_t bad = 0;
  for (int64_t o = 0; o < 5; ++o)
    for (int64_t in = 0; in < 3; ++in) {
      std::vector<int64_t> order(30);
      for (int64_t i = 0; i < 30; ++i)
        order[i] = i;
      auto at = [&](int64_t i) { return r.as<float>()[(o * 30 + i) * 3 + in]; };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return at(a) > at(b); });
      for (int64_t j = 0; j < 8; ++j) {
        int64_t p = (o * 8 + j) * 3 + in;
        bad += ri.as<int64_t>()[p] != order[j] || rv.as<float>()[p] != at(order[j]);
      }
    }
  CHECK(bad == 0);
  HostTensor tooMany(DType::F32, {5, 31, 3}), tmi(DType::I64, {5, 31, 3});
  expectError(topk(r.view(), tooMany.view(), tmi.view(), 1),
              "with at most 30 entries along axis 1");
}

TEST_CASE("cumsum: ONNX examples and dtypes", "[runtime][cpu][cumsum]") {
  // onnx cumsum.py: x = [1, 2, 3, 4, 5].
  std::vector<double> xv{1, 2, 3, 4, 5};
  struct Case {
    bool exclusive, reverse;
    std::vector<double> expected;
  };
  for (DType dt : {DType::F32, DType::F64, DType::I32, DType::I64, DType::F16})
    for (const Case &c : {Case{false, false, {1, 3, 6, 10, 15}},
                          Case{true, false, {0, 1, 3, 6, 10}},
                          Case{false, true, {15, 14, 12, 9, 5}},
                          Case{true, true, {14, 12, 9, 5, 0}}}) {
      HostTensor x = tensor(dt, {5}, xv), y = garbage(dt, {5});
      REQUIRE(cumsum(x.view(), y.view(), 0, c.exclusive, c.reverse).isOk());
      CHECK(values(y) == c.expected);
    }
  // 2-D, axis 0 and 1 (cumsum_2d_axis_0 / _1): x = [[1, 2, 3], [4, 5, 6]].
  HostTensor x = tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor y(DType::F32, {2, 3});
  REQUIRE(cumsum(x.view(), y.view(), 0).isOk());
  CHECK(values(y) == std::vector<double>{1, 2, 3, 5, 7, 9});
  REQUIRE(cumsum(x.view(), y.view(), -1).isOk());
  CHECK(values(y) == std::vector<double>{1, 3, 6, 4, 9, 15});
  // In place.
  REQUIRE(cumsum(x.view(), x.view(), 1, false, true).isOk());
  CHECK(values(x) == std::vector<double>{6, 5, 3, 15, 11, 6});
  HostTensor b(DType::Bool, {2, 3}), yb(DType::Bool, {2, 3});
  expectError(cumsum(b.view(), yb.view(), 0), "x has dtype bool");
  expectError(cumsum(x.view(), y.view(), 2), "axis 2 is out of range");
}

TEST_CASE("trilu: ONNX Trilu", "[runtime][cpu][trilu]") {
  Rng rng(13);
  for (DType dt : {DType::F32, DType::I64, DType::F16, DType::Bool})
    for (bool upper : {true, false})
      for (int64_t k : {-7, -1, 0, 2, 9}) {
        Shape s{2, 3, 5};
        HostTensor x(dt, s), y(dt, s);
        std::memset(y.data(), 0x55, y.byteCount());
        auto *xb = static_cast<unsigned char *>(x.data());
        for (size_t i = 0; i < x.byteCount(); ++i)
          xb[i] = static_cast<unsigned char>(rng.next() | 1); // never 0
        if (dt == DType::Bool)
          std::memset(x.data(), 1, x.byteCount());
        REQUIRE(trilu(x.view(), y.view(), upper, k).isOk());
        size_t elt = byteSize(dt), bad = 0;
        for (int64_t m = 0; m < 2; ++m)
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 5; ++j) {
              bool keep = upper ? j - i >= k : j - i <= k;
              size_t off = ((m * 3 + i) * 5 + j) * elt;
              for (size_t byte = 0; byte < elt; ++byte) {
                unsigned char got = static_cast<unsigned char *>(y.data())[off + byte];
                bad += got != (keep ? xb[off + byte] : 0);
              }
            }
        INFO(dtypeName(dt) << " upper " << upper << " k " << k);
        CHECK(bad == 0);
      }
  HostTensor v(DType::F32, {3}), w(DType::F32, {3});
  expectError(trilu(v.view(), w.view(), true), "x needs rank >= 2");
}

TEST_CASE("hardmax: ONNX Hardmax-13", "[runtime][cpu][hardmax]") {
  // onnx hardmax.py example (axis -1), with the tie [2, 2, 1, 1] to the first.
  std::vector<double> xv{3, 0, 1, 2, 2, 1, 2, 1, 0, 3, 2, 1, 2, 2, 1, 1};
  std::vector<double> expected{1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0};
  for (DType dt : {DType::F32, DType::F16, DType::F64}) {
    HostTensor x = tensor(dt, {4, 4}, xv), y = garbage(dt, {4, 4});
    REQUIRE(hardmax(x.view(), y.view()).isOk());
    CHECK(values(y) == expected);
  }
  // axis 0 on [2, 3]: the first maximum of each column.
  HostTensor x = tensor(DType::F32, {2, 3}, {1, 5, 2, 4, 5, 0});
  HostTensor y(DType::F32, {2, 3});
  REQUIRE(hardmax(x.view(), y.view(), 0).isOk());
  CHECK(values(y) == std::vector<double>{0, 1, 1, 1, 0, 0});
  HostTensor xi(DType::I32, {2, 3}), yi(DType::I32, {2, 3});
  expectError(hardmax(xi.view(), yi.view()), "x has dtype i32");
}

TEST_CASE("topk, cumsum, trilu, hardmax: ONNX backend test data",
          "[runtime][cpu][onnx]") {
  if (!haveTestData())
    return;
  {
    HostTensor x = readPb("test_top_k_smallest", "input_0.pb"),
               ev = readPb("test_top_k_smallest", "output_0.pb"),
               ei = readPb("test_top_k_smallest", "output_1.pb");
    HostTensor v(x.dtype(), ev.shape()), i(DType::I64, ei.shape());
    REQUIRE(topk(x.view(), v.view(), i.view(), 1, false).isOk());
    CHECK(values(v) == values(ev));
    CHECK(values(i) == values(ei));
  }
  for (auto [name, axis] : {std::pair<const char *, int64_t>{
                                "test_hardmax_axis_0", 0},
                            {"test_hardmax_axis_1", 1},
                            {"test_hardmax_negative_axis", -1},
                            {"test_hardmax_one_hot", -1}}) {
    INFO(name);
    HostTensor x = readPb(name, "input_0.pb"), e = readPb(name, "output_0.pb");
    HostTensor y(x.dtype(), e.shape());
    REQUIRE(hardmax(x.view(), y.view(), axis).isOk());
    CHECK(values(y) == values(e));
  }
  for (auto [name, upper] : {std::pair<const char *, bool>{"test_triu_neg", true},
                             {"test_tril_pos", false},
                             {"test_triu_out_pos", true},
                             {"test_tril_square_neg", false}}) {
    INFO(name);
    HostTensor x = readPb(name, "input_0.pb"), k = readPb(name, "input_1.pb"),
               e = readPb(name, "output_0.pb");
    HostTensor y(x.dtype(), e.shape());
    REQUIRE(trilu(x.view(), y.view(), upper, k.as<int64_t>()[0]).isOk());
    CHECK(values(y) == values(e));
  }
  {
    HostTensor x = readPb("test_cumsum_2d_negative_axis", "input_0.pb"),
               a = readPb("test_cumsum_2d_negative_axis", "input_1.pb"),
               e = readPb("test_cumsum_2d_negative_axis", "output_0.pb");
    HostTensor y(x.dtype(), e.shape());
    int64_t axis = a.dtype() == DType::I32 ? a.as<int32_t>()[0] : a.as<int64_t>()[0];
    REQUIRE(cumsum(x.view(), y.view(), axis).isOk());
    CHECK(values(y) == values(e));
  }
}

//===----------------------------------------------------------------------===//
// Plan calls
//===----------------------------------------------------------------------===//

TEST_CASE("NN plan calls read their attributes and optional buffers",
          "[runtime][cpu][calls]") {
  const CallTable &table = cpuCallTable();
  for (const char *kind :
       {"cudnn.rnn", "cudnn.conv_bwd_data", "cudnn.lrn", "kernel.layer_norm",
        "kernel.instance_norm", "kernel.nll_loss", "kernel.topk",
        "kernel.cumsum", "kernel.trilu", "kernel.hardmax"})
    CHECK(table.find(kind) != nullptr);

  SECTION("kernel.layer_norm without bias, with inv_std_dev only") {
    Rng rng(21);
    HostTensor x = randomTensor(DType::F32, {2, 6}, rng),
               s = randomTensor(DType::F32, {6}, rng);
    HostTensor y(DType::F32, {2, 6}), inv(DType::F32, {2, 1});
    PlanCall call;
    call.kind = "kernel.layer_norm";
    call.attributes = {{"axis", int64_t(1)},     {"epsilon", 0.5},
                       {"has_bias", int64_t(0)}, {"has_mean", int64_t(0)},
                       {"has_inv_std_dev", int64_t(1)}};
    CallArgs args{call, {x.view(), s.view()}, {y.view(), inv.view()}};
    Status st = table.find(call.kind)(args);
    INFO(st.message());
    REQUIRE(st.isOk());
    HostTensor ry(DType::F32, {2, 6}), ri(DType::F32, {2, 1});
    REQUIRE(layerNorm(x.view(), s.view(), nullptr, ry.view(), nullptr,
                      &ri.view(), 1, 0.5f)
                .isOk());
    CHECK(values(y) == values(ry));
    CHECK(values(inv) == values(ri));
    call.attributes[3].value = int64_t(1); // has_mean but no buffer for it
    expectError(table.find(call.kind)(args), "expects 3 results");
  }
  SECTION("cudnn.conv_bwd_data with bias, pads begins then ends") {
    Rng rng(22);
    HostTensor x = randomTensor(DType::F32, {1, 2, 3, 3}, rng),
               w = randomTensor(DType::F32, {2, 1, 3, 3}, rng),
               b = randomTensor(DType::F32, {1}, rng);
    HostTensor y(DType::F32, {1, 1, 3, 5});
    PlanCall call;
    call.kind = "cudnn.conv_bwd_data";
    call.attributes = {{"pads", std::vector<int64_t>{1, 0, 1, 0}},
                       {"strides", std::vector<int64_t>{1, 1}},
                       {"dilations", std::vector<int64_t>{1, 1}},
                       {"groups", int64_t(1)},
                       {"compute_type", int64_t(1)},
                       {"has_bias", int64_t(1)}};
    CallArgs args{call, {x.view(), w.view(), b.view()}, {y.view()}};
    Status st = table.find(call.kind)(args);
    INFO(st.message());
    REQUIRE(st.isOk());
    ConvTransposeOptions o;
    o.padsBegin = {1, 0};
    o.padsEnd = {1, 0};
    std::vector<double> bv = values(b);
    expectClose(values(y), convTransposeRef(x, w, &bv, y.shape(), o), 1e-5);
  }
  SECTION("kernel.nll_loss, kernel.topk, kernel.cumsum, kernel.trilu, "
          "kernel.hardmax, cudnn.lrn, kernel.instance_norm") {
    HostTensor in = tensor(DType::F32, {2, 3}, {-1, -2, -3, -4, -5, -6});
    HostTensor t = tensor(DType::I32, {2}, {2, 0});
    HostTensor loss(DType::F32, {});
    PlanCall nll;
    nll.kind = "kernel.nll_loss";
    nll.attributes = {{"reduction", std::string("sum")},
                      {"ignore_index", int64_t(0)},
                      {"has_weight", int64_t(0)}};
    REQUIRE(table.find(nll.kind)(CallArgs{nll, {in.view(), t.view()}, {loss.view()}})
                .isOk());
    CHECK(loss.as<float>()[0] == 3.0f); // the second target is ignored

    HostTensor v(DType::F32, {2, 1}), i(DType::I64, {2, 1});
    PlanCall tk;
    tk.kind = "kernel.topk";
    tk.attributes = {{"axis", int64_t(-1)}, {"largest", int64_t(0)},
                     {"sorted", int64_t(1)}};
    REQUIRE(table.find(tk.kind)(CallArgs{tk, {in.view()}, {v.view(), i.view()}})
                .isOk());
    CHECK(values(v) == std::vector<double>{-3, -6});
    CHECK(values(i) == std::vector<double>{2, 2});

    HostTensor y(DType::F32, {2, 3});
    PlanCall cs;
    cs.kind = "kernel.cumsum";
    cs.attributes = {{"axis", int64_t(0)}, {"exclusive", int64_t(1)},
                     {"reverse", int64_t(0)}};
    REQUIRE(table.find(cs.kind)(CallArgs{cs, {in.view()}, {y.view()}}).isOk());
    CHECK(values(y) == std::vector<double>{0, 0, 0, -1, -2, -3});
    cs.attributes.erase(cs.attributes.begin());
    expectError(table.find(cs.kind)(CallArgs{cs, {in.view()}, {y.view()}}),
                "attribute 'axis' is missing");

    PlanCall tr;
    tr.kind = "kernel.trilu";
    tr.attributes = {{"upper", int64_t(0)}, {"k", int64_t(0)}};
    REQUIRE(table.find(tr.kind)(CallArgs{tr, {in.view()}, {y.view()}}).isOk());
    CHECK(values(y) == std::vector<double>{-1, 0, 0, -4, -5, 0});

    PlanCall hm;
    hm.kind = "kernel.hardmax";
    hm.attributes = {{"axis", int64_t(0)}};
    REQUIRE(table.find(hm.kind)(CallArgs{hm, {in.view()}, {y.view()}}).isOk());
    CHECK(values(y) == std::vector<double>{1, 1, 1, 0, 0, 0});

    HostTensor x4 = tensor(DType::F32, {1, 2, 1, 1}, {1, 2}), y4(DType::F32, {1, 2, 1, 1});
    PlanCall lr;
    lr.kind = "cudnn.lrn";
    lr.attributes = {{"size", int64_t(3)}, {"alpha", 3.0}, {"beta", 1.0},
                     {"bias", 1.0}};
    REQUIRE(table.find(lr.kind)(CallArgs{lr, {x4.view()}, {y4.view()}}).isOk());
    CHECK(y4.as<float>()[0] == Approx(1.0 / (1 + 5.0)));

    HostTensor sc = tensor(DType::F32, {2}, {1, 1}), bi = tensor(DType::F32, {2}, {0.5, -0.5});
    PlanCall inorm;
    inorm.kind = "kernel.instance_norm";
    inorm.attributes = {{"epsilon", 1e-5}};
    REQUIRE(table.find(inorm.kind)(
                    CallArgs{inorm, {x4.view(), sc.view(), bi.view()}, {y4.view()}})
                .isOk());
    CHECK(values(y4) == std::vector<double>{0.5, -0.5}); // one element: x - mean = 0
  }
}
