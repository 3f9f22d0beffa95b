// Tests of the CPU backend's batch normalization and softmax
// (mp/Runtime/CPU/Kernels.h), and the hidden kernel timings. Matmul,
// convolution and pooling: MatmulKernelsTest.cpp, ConvKernelsTest.cpp,
// PoolKernelsTest.cpp; references and tolerances shared by all four:
// CPUKernelsTestSupport.h.
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "CPUKernelsTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::cpu_kernels;

namespace {

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

TEST_CASE("scaledSoftmax is softmax(x * scale + mask) over the last dim",
          "[runtime][cpu][softmax]") {
  uint64_t seed = 9100;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (bool hasMask : {false, true}) {
      INFO(dtypeName(t) << (hasMask ? " with a mask" : ""));
      Rng rng(seed++);
      const Shape shape{2, 3, 7};
      HostTensor x = randomTensor(t, shape, rng, -6, 6);
      // One mask value per image and column, broadcast over the rows.
      HostTensor mask = randomTensor(t, {2, 1, 7}, rng, -3, 0);
      HostTensor y = garbage(t, shape);
      const float scale = 0.75f;
      Status s = cpu::scaledSoftmax(x.view(), hasMask ? &mask.view() : nullptr,
                                    y.view(), scale);
      INFO(s.message());
      REQUIRE(s.isOk());
      std::vector<double> xv = values(x), mv = values(mask), ref(xv.size());
      for (int64_t r = 0; r < 6; ++r) {
        std::vector<double> row(7);
        for (int64_t j = 0; j < 7; ++j)
          row[j] = xv[r * 7 + j] * scale + (hasMask ? mv[(r / 3) * 7 + j] : 0);
        double mx = *std::max_element(row.begin(), row.end()), sum = 0;
        for (double &v : row)
          sum += (v = std::exp(v - mx));
        for (int64_t j = 0; j < 7; ++j)
          ref[r * 7 + j] = row[j] / sum;
      }
      std::vector<double> bound(ref.size());
      for (size_t i = 0; i < ref.size(); ++i)
        bound[i] = 32 * unitRoundoff(t) * (std::fabs(ref[i]) + 1e-3);
      expectClose(y, ref, bound);
    }
  // The checks, shared with the fast call and CUDA planning.
  HostTensor x(DType::F32, {2, 3}), y(DType::F32, {2, 3}),
      wide(DType::F32, {4}), bf(DType::BF16, {3});
  CHECK(cpu::scaledSoftmax(x.view(), &wide.view(), y.view(), 1.f).message() ==
        "scaled_softmax: mask [4] does not broadcast to [2, 3]");
  CHECK(cpu::scaledSoftmax(x.view(), &bf.view(), y.view(), 1.f).message() ==
        "scaled_softmax: mask has dtype bf16; expected x's or f32");
  CHECK(cpu::scaledSoftmax(x.view(), &y.view(), y.view(), 1.f).message() ==
        "scaled_softmax: mask overlaps y");
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
