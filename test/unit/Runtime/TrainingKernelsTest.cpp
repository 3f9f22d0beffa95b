// Unit tests of the training kernels (mp/Runtime/CPU/TrainingKernels.h):
// loss scaling with PyTorch GradScaler's semantics (unscale + finite check,
// the scale update: backoff on overflow, growth after growth_interval clean
// steps, never to inf), and the SGD / Adam / AdamW steps against the update
// rules of torch.optim written out here in double, including skipped steps.
#include "mp/Runtime/CPU/TrainingKernels.h"
#include "mp/Runtime/Half.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::cpu;

namespace {

HostTensor f32(std::vector<float> values, Shape shape = {}) {
  if (shape.empty())
    shape = {static_cast<int64_t>(values.size())};
  HostTensor t(DType::F32, shape);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

HostTensor scalarF32(float v) { return f32({v}, {1}); }

HostTensor scalarI64(int64_t v) {
  HostTensor t(DType::I64, {1});
  *t.as<int64_t>() = v;
  return t;
}

float at(const HostTensor &t, int64_t i = 0) { return t.as<float>()[i]; }

} // namespace

TEST_CASE("unscale: multiplies by 1/scale and flags non-finite values",
          "[cpu][training]") {
  HostTensor scale = scalarF32(65536.0f), inv = scalarF32(0);
  REQUIRE(inverseScale(scale.view(), inv.view()).isOk());
  CHECK(at(inv) == 1.0f / 65536.0f);

  HostTensor found = scalarF32(0);
  HostTensor g = f32({65536.0f, -131072.0f, 3.0f});
  REQUIRE(unscaleAndCheckFinite(g.view(), inv.view(), found.view()).isOk());
  CHECK(at(g, 0) == 1.0f);
  CHECK(at(g, 1) == -2.0f);
  CHECK(at(g, 2) == 3.0f / 65536.0f);
  CHECK(at(found) == 0.0f);

  // One Inf in a second gradient sets the shared flag; a third, finite
  // gradient does not clear it.
  HostTensor bad = f32({1.0f, std::numeric_limits<float>::infinity()});
  REQUIRE(unscaleAndCheckFinite(bad.view(), inv.view(), found.view()).isOk());
  CHECK(at(found) == 1.0f);
  HostTensor fine = f32({2.0f});
  REQUIRE(unscaleAndCheckFinite(fine.view(), inv.view(), found.view()).isOk());
  CHECK(at(found) == 1.0f);

  HostTensor nan = f32({std::nanf("")});
  HostTensor found2 = scalarF32(0);
  REQUIRE(unscaleAndCheckFinite(nan.view(), inv.view(), found2.view()).isOk());
  CHECK(at(found2) == 1.0f);
}

TEST_CASE("unscale: f16 gradients, and inverse scale computed in double",
          "[cpu][training]") {
  // 1/3 in f64 rounded to f32 (GradScaler:
  // scale.double().reciprocal().float()).
  HostTensor scale = scalarF32(3.0f), inv = scalarF32(0);
  REQUIRE(inverseScale(scale.view(), inv.view()).isOk());
  CHECK(at(inv) == static_cast<float>(1.0 / 3.0));

  HostTensor g(DType::F16, {2});
  g.as<Half>()[0] = toHalf(6.0f);
  g.as<Half>()[1] = toHalf(65504.0f);
  HostTensor found = scalarF32(0);
  REQUIRE(unscaleAndCheckFinite(g.view(), inv.view(), found.view()).isOk());
  CHECK(toFloat(g.as<Half>()[0]) == toFloat(toHalf(6.0f * at(inv))));
  CHECK(at(found) == 0.0f);
  g.as<Half>()[1] = Half{0x7c00}; // +inf
  REQUIRE(unscaleAndCheckFinite(g.view(), inv.view(), found.view()).isOk());
  CHECK(at(found) == 1.0f);
}

TEST_CASE("loss scale: backoff on overflow, growth after the interval",
          "[cpu][training]") {
  // GradScaler's defaults, with a short interval: overflow halves the scale
  // and restarts the count; `interval` clean steps double it.
  LossScaleConfig config;
  config.growthInterval = 3;
  HostTensor scale = scalarF32(65536.0f), tracker = scalarI64(0);
  HostTensor overflow = scalarF32(1.0f), clean = scalarF32(0.0f);

  REQUIRE(updateLossScale(scale.view(), tracker.view(), overflow.view(), config)
              .isOk());
  CHECK(at(scale) == 32768.0f);
  CHECK(*tracker.as<int64_t>() == 0);
  for (int i = 1; i <= 2; ++i) {
    REQUIRE(updateLossScale(scale.view(), tracker.view(), clean.view(), config)
                .isOk());
    CHECK(at(scale) == 32768.0f);
    CHECK(*tracker.as<int64_t>() == i);
  }
  REQUIRE(updateLossScale(scale.view(), tracker.view(), clean.view(), config)
              .isOk());
  CHECK(at(scale) == 65536.0f);
  CHECK(*tracker.as<int64_t>() == 0);

  // An overflow in the middle of a run of clean steps restarts the count.
  REQUIRE(updateLossScale(scale.view(), tracker.view(), clean.view(), config)
              .isOk());
  REQUIRE(updateLossScale(scale.view(), tracker.view(), overflow.view(), config)
              .isOk());
  CHECK(at(scale) == 32768.0f);
  CHECK(*tracker.as<int64_t>() == 0);
}

TEST_CASE("loss scale: never grows to inf; bad configurations are errors",
          "[cpu][training]") {
  LossScaleConfig config;
  config.growthInterval = 1;
  HostTensor scale = scalarF32(std::numeric_limits<float>::max()),
             tracker = scalarI64(0), clean = scalarF32(0);
  REQUIRE(updateLossScale(scale.view(), tracker.view(), clean.view(), config)
              .isOk());
  CHECK(at(scale) == std::numeric_limits<float>::max());
  CHECK(*tracker.as<int64_t>() == 0);

  config.backoffFactor = 1.5;
  Status s =
      updateLossScale(scale.view(), tracker.view(), clean.view(), config);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find("backoff_factor") != std::string::npos);
  HostTensor wrongTracker = scalarF32(0);
  s = updateLossScale(scale.view(), wrongTracker.view(), clean.view(),
                      LossScaleConfig{});
  REQUIRE_FALSE(s.isOk());
  CHECK(
      s.message() ==
      "loss_scale_update: growth_tracker must be one i64 element, got f32 [1]");
}

TEST_CASE("SGD with momentum, dampening, Nesterov and weight decay",
          "[cpu][training]") {
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    SGDConfig config;
    config.lr = 0.1;
    config.momentum = 0.9;
    config.weightDecay = 0.01;
    config.nesterov = nesterov;
    HostTensor p = f32({1.0f, -2.0f}), buf = f32({0, 0}), step = scalarI64(0);
    std::vector<double> ref = {1.0, -2.0}, refBuf = {0, 0};
    const std::vector<std::vector<float>> grads = {{0.5f, 0.25f},
                                                   {-1.0f, 2.0f}};
    for (size_t k = 0; k < grads.size(); ++k) {
      HostTensor g = f32(grads[k]);
      REQUIRE(sgdStep(p.view(), g.view(), buf.view(), step.view(), {}, config)
                  .isOk());
      for (size_t i = 0; i < 2; ++i) {
        double d = grads[k][i] + 0.01 * ref[i];
        refBuf[i] = k == 0 ? d : 0.9 * refBuf[i] + d;
        d = nesterov ? d + 0.9 * refBuf[i] : refBuf[i];
        ref[i] -= 0.1 * d;
        CHECK(at(p, i) == Approx(ref[i]).epsilon(1e-6));
        CHECK(at(buf, i) == Approx(refBuf[i]).epsilon(1e-6));
      }
    }
    CHECK(*step.as<int64_t>() == 2);
  }
}

TEST_CASE("optimizer steps are skipped when found_inf is set",
          "[cpu][training]") {
  HostTensor p = f32({1.0f}), g = f32({std::nanf("")}), buf = f32({0.5f});
  HostTensor step = scalarI64(4), found = scalarF32(1.0f);
  SGDConfig sgd;
  sgd.momentum = 0.9;
  REQUIRE(
      sgdStep(p.view(), g.view(), buf.view(), step.view(), found.view(), sgd)
          .isOk());
  CHECK(at(p) == 1.0f);
  CHECK(at(buf) == 0.5f);
  CHECK(*step.as<int64_t>() == 4);

  HostTensor m = f32({0.1f}), v = f32({0.2f});
  REQUIRE(adamStep(p.view(), g.view(), m.view(), v.view(), step.view(),
                   found.view(), AdamConfig{})
              .isOk());
  CHECK(at(p) == 1.0f);
  CHECK(at(m) == 0.1f);
  CHECK(at(v) == 0.2f);
  CHECK(*step.as<int64_t>() == 4);
}

TEST_CASE("Adam and AdamW follow torch.optim with bias correction",
          "[cpu][training]") {
  for (bool decoupled : {false, true}) {
    INFO("AdamW " << decoupled);
    AdamConfig config;
    config.lr = 0.01;
    config.weightDecay = 0.1;
    config.decoupledWeightDecay = decoupled;
    HostTensor p = f32({0.5f, -1.5f, 2.0f}), m = f32({0, 0, 0}),
               v = f32({0, 0, 0}), step = scalarI64(0);
    std::vector<double> ref = {0.5, -1.5, 2.0}, rm(3, 0), rv(3, 0);
    const std::vector<std::vector<float>> grads = {
        {0.1f, -0.2f, 0.3f}, {0.05f, 0.4f, -0.3f}, {-0.2f, 0.1f, 0.0f}};
    for (size_t k = 0; k < grads.size(); ++k) {
      HostTensor g = f32(grads[k]);
      REQUIRE(adamStep(p.view(), g.view(), m.view(), v.view(), step.view(), {},
                       config)
                  .isOk());
      double t = static_cast<double>(k + 1);
      for (size_t i = 0; i < 3; ++i) {
        double d = grads[k][i];
        if (decoupled)
          ref[i] *= 1 - 0.01 * 0.1;
        else
          d += 0.1 * ref[i];
        rm[i] = 0.9 * rm[i] + 0.1 * d;
        rv[i] = 0.999 * rv[i] + 0.001 * d * d;
        double denom =
            std::sqrt(rv[i]) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8;
        ref[i] -= 0.01 / (1 - std::pow(0.9, t)) * rm[i] / denom;
        CHECK(at(p, i) == Approx(ref[i]).epsilon(1e-5));
      }
    }
    CHECK(*step.as<int64_t>() == 3);
  }
}

TEST_CASE("training kernels check their operands", "[cpu][training]") {
  HostTensor p = f32({1.0f, 2.0f}), g = f32({1.0f}), step = scalarI64(0);
  Status s = sgdStep(p.view(), g.view(), {}, step.view(), {}, SGDConfig{});
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message() ==
        "sgd_step: grad must be f32 [2] like the parameter, got f32 [1]");
  HostTensor g2 = f32({1.0f, 1.0f});
  SGDConfig nesterov;
  nesterov.nesterov = true;
  s = sgdStep(p.view(), g2.view(), {}, step.view(), {}, nesterov);
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find("Nesterov") != std::string::npos);
  HostTensor half(DType::F16, {2});
  s = adamStep(half.view(), g2.view(), g2.view(), g2.view(), step.view(), {},
               AdamConfig{});
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message() ==
        "adam_step: param must be f32 (master weights), got f16");
}
