// Tests of the training plan calls (lib/Runtime/CPU/Calls/TrainingCalls.cpp),
// run through the CPU call table with hand-built PlanCalls:
//
//  * the backward calls read their attributes and has_* flags and give the
//    backward kernel's result (the kernels' gradients are checked against
//    finite differences in BackwardKernelsTest.cpp); unsupported LSTM
//    variants, bad attributes and buffer counts are errors;
//  * kernel.unscale_check_finite, kernel.loss_scale_update, kernel.sgd_step
//    and kernel.adam_step against GradScaler's and torch.optim's update
//    rules written out here in double: found_inf is cleared and set, a
//    skipped step leaves everything as it was, the scale halves on overflow
//    and grows after growth_interval clean steps. Buffers updated in place
//    are results only.
#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::cpu;

namespace {

HostTensor scalarF32(float v) { return filled(DType::F32, {1}, v); }
HostTensor scalarI64(int64_t v) {
  HostTensor t(DType::I64, {1});
  *t.as<int64_t>() = v;
  return t;
}

PlanCall makeCall(std::string kind, std::vector<PlanAttr> attributes) {
  PlanCall call;
  call.kind = std::move(kind);
  call.attributes = std::move(attributes);
  return call;
}

Status run(const PlanCall &call, std::vector<TensorView> operands,
           std::vector<TensorView> results) {
  CallFn fn = cpuCallTable().find(call.kind);
  REQUIRE(fn != nullptr);
  return fn(CallArgs{call, std::move(operands), std::move(results)});
}

void requireOk(const Status &s) {
  INFO("message: " << s.message());
  REQUIRE(s.isOk());
}

void expectError(const Status &s, const std::string &phrase) {
  INFO("message: " << s.message());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().find(phrase) != std::string::npos);
}

void expectClose(const std::vector<double> &got, const std::vector<double> &ref,
                 double tol, const std::string &what) {
  INFO(what);
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << ref[i]);
    CHECK(std::fabs(got[i] - ref[i]) <= tol * (1.0 + std::fabs(ref[i])));
  }
}

void setAttr(PlanCall &call, const std::string &name, PlanAttrValue value) {
  for (PlanAttr &a : call.attributes)
    if (a.name == name) {
      a.value = std::move(value);
      return;
    }
  call.attributes.push_back({name, std::move(value)});
}

} // namespace

TEST_CASE("the training calls are in the CPU call table",
          "[runtime][cpu][calls][training-calls]") {
  for (const char *kind :
       {"cudnn.conv_bwd_filter", "cudnn.pool_bwd", "cudnn.batch_norm_bwd",
        "kernel.softmax_cross_entropy_grad", "kernel.nll_loss_grad",
        "kernel.lstm_bwd", "kernel.unscale_check_finite",
        "kernel.loss_scale_update", "kernel.sgd_step", "kernel.adam_step"})
    CHECK(cpuCallTable().find(kind) != nullptr);
}

//===----------------------------------------------------------------------===//
// Backward calls
//===----------------------------------------------------------------------===//

TEST_CASE("cudnn.conv_bwd_filter reads pads, strides, dilations, groups",
          "[runtime][cpu][calls][training-calls]") {
  Rng rng(601);
  HostTensor x = randomTensor(DType::F32, {2, 4, 6, 5}, rng);
  HostTensor dy = randomTensor(DType::F32, {2, 6, 3, 4}, rng);
  HostTensor dw(DType::F32, {6, 2, 3, 2}), want(DType::F32, {6, 2, 3, 2});
  PlanCall call = makeCall("cudnn.conv_bwd_filter",
                           {{"pads", std::vector<int64_t>{1, 0, 1, 1}},
                            {"strides", std::vector<int64_t>{2, 1}},
                            {"dilations", std::vector<int64_t>{1, 2}},
                            {"groups", int64_t(2)},
                            {"compute_type", int64_t(1)}});
  requireOk(run(call, {x.view(), dy.view()}, {dw.view()}));
  ConvOptions o;
  o.padsBegin = {1, 0};
  o.padsEnd = {1, 1};
  o.strides = {2, 1};
  o.dilations = {1, 2};
  o.groups = 2;
  requireOk(convBackwardFilter(x.view(), dy.view(), want.view(), o));
  CHECK(values(dw) == values(want));

  setAttr(call, "pads", std::vector<int64_t>{1, 0});
  expectError(run(call, {x.view(), dy.view()}, {dw.view()}),
              "attribute 'pads' must have 4 values");
  setAttr(call, "pads", std::vector<int64_t>{1, 0, 1, 1});
  setAttr(call, "compute_type", int64_t(10));
  expectError(run(call, {x.view(), dy.view()}, {dw.view()}),
              "compute type f16 cannot accumulate f32 inputs");
  setAttr(call, "compute_type", int64_t(1));
  expectError(run(call, {x.view()}, {dw.view()}), "expects 2 operands");
  setAttr(call, "groups", int64_t(1));
  expectError(run(call, {x.view(), dy.view()}, {dw.view()}),
              "expected C/groups = 4");
}

TEST_CASE("cudnn.pool_bwd: max, avg and avg_include_pad",
          "[runtime][cpu][calls][training-calls]") {
  Rng rng(602);
  HostTensor x = randomTensor(DType::F32, {1, 2, 5, 5}, rng);
  HostTensor dy = randomTensor(DType::F32, {1, 2, 3, 3}, rng);
  for (const char *mode : {"max", "avg", "avg_include_pad"}) {
    INFO(mode);
    HostTensor dx(DType::F32, x.shape()), want(DType::F32, x.shape());
    PlanCall call =
        makeCall("cudnn.pool_bwd", {{"mode", std::string(mode)},
                                    {"window", std::vector<int64_t>{3, 3}},
                                    {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                    {"strides", std::vector<int64_t>{2, 2}}});
    requireOk(run(call, {x.view(), dy.view()}, {dx.view()}));
    PoolOptions o;
    o.kind = std::string(mode) == "max" ? PoolKind::Max : PoolKind::Average;
    o.countIncludePad = std::string(mode) == "avg_include_pad";
    o.kernel = {3, 3};
    o.padsBegin = o.padsEnd = {1, 1};
    o.strides = {2, 2};
    requireOk(poolBackward(x.view(), dy.view(), want.view(), o));
    CHECK(values(dx) == values(want));
  }
  HostTensor dx(DType::F32, x.shape());
  PlanCall bad =
      makeCall("cudnn.pool_bwd", {{"mode", std::string("lp")},
                                  {"window", std::vector<int64_t>{3, 3}}});
  expectError(run(bad, {x.view(), dy.view()}, {dx.view()}),
              "attribute 'mode' has unknown value 'lp'");
  setAttr(bad, "mode", std::string("max"));
  bad.attributes.erase(bad.attributes.begin() + 1);
  expectError(run(bad, {x.view(), dy.view()}, {dx.view()}),
              "attribute 'window' is missing");
}

TEST_CASE("cudnn.batch_norm_bwd", "[runtime][cpu][calls][training-calls]") {
  Rng rng(603);
  HostTensor x = randomTensor(DType::F16, {2, 3, 2, 2}, rng),
             dy = randomTensor(DType::F16, {2, 3, 2, 2}, rng),
             scale = randomTensor(DType::F32, {3}, rng);
  HostTensor dx(DType::F16, x.shape()), ds(DType::F32, {3}),
      db(DType::F32, {3});
  HostTensor wx(DType::F16, x.shape()), ws(DType::F32, {3}),
      wb(DType::F32, {3});
  PlanCall call = makeCall("cudnn.batch_norm_bwd", {{"epsilon", 0.01}});
  requireOk(run(call, {x.view(), scale.view(), dy.view()},
                {dx.view(), ds.view(), db.view()}));
  BatchNormOptions o;
  o.epsilon = 0.01f;
  requireOk(batchNormBackward(x.view(), scale.view(), dy.view(), wx.view(),
                              ws.view(), wb.view(), o));
  CHECK(values(dx) == values(wx));
  CHECK(values(ds) == values(ws));
  CHECK(values(db) == values(wb));
  expectError(
      run(call, {x.view(), scale.view(), dy.view()}, {dx.view(), ds.view()}),
      "expects 3 results");
  setAttr(call, "epsilon", std::string("small"));
  expectError(run(call, {x.view(), scale.view(), dy.view()},
                  {dx.view(), ds.view(), db.view()}),
              "attribute 'epsilon' must be a float");
}

TEST_CASE("kernel.softmax_cross_entropy_grad and kernel.nll_loss_grad",
          "[runtime][cpu][calls][training-calls]") {
  Rng rng(604);
  HostTensor scores = randomTensor(DType::F32, {4, 3, 2}, rng);
  HostTensor labels = tensor(DType::I64, {4, 2}, {0, 2, 1, -1, 2, 2, 0, 1});
  HostTensor dloss = scalarF32(2.0f);
  HostTensor w = tensor(DType::F32, {3}, {0.5, 1.0, 2.0});
  HostTensor ds(DType::F32, scores.shape()), want(DType::F32, scores.shape());

  PlanCall sce = makeCall("kernel.softmax_cross_entropy_grad",
                          {{"reduction", std::string("mean")},
                           {"ignore_index", int64_t(-1)},
                           {"has_weights", int64_t(1)}});
  requireOk(run(sce, {scores.view(), labels.view(), dloss.view(), w.view()},
                {ds.view()}));
  requireOk(softmaxCrossEntropyGrad(scores.view(), labels.view(), dloss.view(),
                                    &w.view(), want.view(), LossReduction::Mean,
                                    -1));
  CHECK(values(ds) == values(want));
  // The ignored position (n 1, d 1) gets 0 in every class.
  for (int64_t c = 0; c < 3; ++c)
    CHECK(getD(ds, (1 * 3 + c) * 2 + 1) == 0.0);
  // The default reduction is mean; without ignore_index, -1 is out of range.
  PlanCall noIgnore = makeCall("kernel.softmax_cross_entropy_grad",
                               {{"has_weights", int64_t(0)}});
  expectError(
      run(noIgnore, {scores.view(), labels.view(), dloss.view()}, {ds.view()}),
      "label -1 at position 3 is outside [0, 3)");
  expectError(
      run(sce, {scores.view(), labels.view(), dloss.view()}, {ds.view()}),
      "expects 4 operands (from its has_* attributes), got 3");
  setAttr(sce, "reduction", std::string("max"));
  expectError(run(sce, {scores.view(), labels.view(), dloss.view(), w.view()},
                  {ds.view()}),
              "attribute 'reduction' must be none, sum or mean, got 'max'");

  HostTensor dlossNone = randomTensor(DType::F32, {4, 2}, rng);
  PlanCall nll =
      makeCall("kernel.nll_loss_grad", {{"reduction", std::string("none")},
                                        {"ignore_index", int64_t(-1)},
                                        {"has_weight", int64_t(0)}});
  requireOk(
      run(nll, {scores.view(), labels.view(), dlossNone.view()}, {ds.view()}));
  requireOk(nllLossGrad(scores.view(), labels.view(), dlossNone.view(), nullptr,
                        want.view(), LossReduction::None, -1));
  CHECK(values(ds) == values(want));
  CHECK(getD(ds, (0 * 3 + 0) * 2 + 0) == Approx(-getD(dlossNone, 0)));
  PlanCall nllSum =
      makeCall("kernel.nll_loss_grad", {{"reduction", std::string("sum")},
                                        {"ignore_index", int64_t(-1)},
                                        {"has_weight", int64_t(1)}});
  requireOk(run(nllSum, {scores.view(), labels.view(), dloss.view(), w.view()},
                {ds.view()}));
  CHECK(getD(ds, (0 * 3 + 2) * 2 + 1) == Approx(-2.0 * 2.0)); // w[2] * dloss
  HostTensor labels32 = tensor(DType::I32, {4, 2}, {0, 2, 1, -1, 2, 2, 0, 1});
  HostTensor ds2(DType::F32, scores.shape());
  requireOk(run(nllSum,
                {scores.view(), labels32.view(), dloss.view(), w.view()},
                {ds2.view()}));
  CHECK(values(ds2) == values(ds));
}

TEST_CASE("kernel.lstm_bwd binds its optional buffers and rejects what it "
          "does not support",
          "[runtime][cpu][calls][training-calls]") {
  Rng rng(605);
  const int64_t S = 3, B = 2, I = 3, H = 2, D = 2;
  HostTensor x = randomTensor(DType::F32, {S, B, I}, rng),
             w = randomTensor(DType::F32, {D, 4 * H, I}, rng),
             r = randomTensor(DType::F32, {D, 4 * H, H}, rng),
             b = randomTensor(DType::F32, {D, 8 * H}, rng),
             h0 = randomTensor(DType::F32, {D, B, H}, rng),
             dy = randomTensor(DType::F32, {S, D, B, H}, rng),
             dyC = randomTensor(DType::F32, {D, B, H}, rng);
  HostTensor dx(DType::F32, x.shape()), dw(DType::F32, w.shape()),
      dr(DType::F32, r.shape()), db(DType::F32, b.shape()),
      dh0(DType::F32, h0.shape());
  PlanCall call =
      makeCall("kernel.lstm_bwd", {{"hidden_size", H},
                                   {"direction", std::string("bidirectional")},
                                   {"has_b", int64_t(1)},
                                   {"has_initial_h", int64_t(1)},
                                   {"has_initial_c", int64_t(0)},
                                   {"has_dy", int64_t(1)},
                                   {"has_dy_h", int64_t(0)},
                                   {"has_dy_c", int64_t(1)},
                                   {"has_db", int64_t(1)},
                                   {"has_dinitial_h", int64_t(1)},
                                   {"has_dinitial_c", int64_t(0)}});
  std::vector<TensorView> in{x.view(),  w.view(),  r.view(),  b.view(),
                             h0.view(), dy.view(), dyC.view()};
  std::vector<TensorView> out{dx.view(), dw.view(), dr.view(), db.view(),
                              dh0.view()};
  requireOk(run(call, in, out));
  HostTensor wdx(DType::F32, x.shape()), wdw(DType::F32, w.shape()),
      wdr(DType::F32, r.shape()), wdb(DType::F32, b.shape()),
      wdh0(DType::F32, h0.shape());
  LstmBackwardOptions o;
  o.hiddenSize = H;
  o.direction = RnnDirection::Bidirectional;
  requireOk(lstmBackward(x.view(), w.view(), r.view(), &b.view(), &h0.view(),
                         nullptr, &dy.view(), nullptr, &dyC.view(), wdx.view(),
                         wdw.view(), wdr.view(), &wdb.view(), &wdh0.view(),
                         nullptr, o));
  CHECK(values(dx) == values(wdx));
  CHECK(values(dw) == values(wdw));
  CHECK(values(dr) == values(wdr));
  CHECK(values(db) == values(wdb));
  CHECK(values(dh0) == values(wdh0));

  // The default activations spelled out, and mode lstm, are fine.
  PlanCall spelled = call;
  setAttr(spelled, "activations",
          std::string("Sigmoid,Tanh,Tanh,Sigmoid,Tanh,Tanh"));
  setAttr(spelled, "mode", std::string("lstm"));
  setAttr(spelled, "has_sequence_lens", int64_t(0));
  requireOk(run(spelled, in, out));

  struct Bad {
    const char *attr;
    PlanAttrValue value;
    const char *message;
  };
  const Bad bads[] = {
      {"activations", std::string("Sigmoid,Relu,Tanh"),
       "only the default Sigmoid, Tanh, Tanh"},
      {"clip", 3.0, "attribute 'clip' is not supported"},
      {"input_forget", int64_t(1), "'input_forget' = 1 is not supported"},
      {"has_sequence_lens", int64_t(1), "sequence_lens is not supported"},
      {"has_p", int64_t(1), "p is not supported"},
      {"mode", std::string("gru"), "attribute 'mode' must be lstm"},
      {"direction", std::string("up"), "attribute 'direction' must be"},
      {"layout", int64_t(1), "attribute 'layout' must be 0"},
      {"hidden_size", int64_t(3), "w has shape [2, 8, 3], expected [2, 12, 3]"},
  };
  for (const Bad &bad : bads) {
    INFO(bad.attr);
    PlanCall c = call;
    setAttr(c, bad.attr, bad.value);
    expectError(run(c, in, out), bad.message);
  }
  PlanCall missing = call;
  setAttr(missing, "has_db", int64_t(0));
  expectError(run(missing, in, out),
              "expects 4 results (from its has_* attributes), got 5");
}

//===----------------------------------------------------------------------===//
// Loss scaling and optimizer calls
//===----------------------------------------------------------------------===//

TEST_CASE("kernel.unscale_check_finite clears found_inf, unscales into f32 "
          "and flags non-finite gradients",
          "[runtime][cpu][calls][training-calls]") {
  PlanCall call = makeCall("kernel.unscale_check_finite", {});
  HostTensor scale = scalarF32(1024.0f);
  HostTensor g32 = tensor(DType::F32, {2, 2}, {1024, -2048, 512, 3});
  HostTensor g16 = tensor(DType::F16, {3}, {2048, 65504, -1});
  HostTensor gbf = tensor(DType::BF16, {1}, {-4096});
  HostTensor g64 = tensor(DType::F64, {2}, {1e-3, 1e42});
  HostTensor found = scalarF32(1.0f); // stale: cleared first
  HostTensor u32(DType::F32, {2, 2}), u16(DType::F32, {3}),
      ubf(DType::F32, {1}), u64(DType::F32, {2});
  requireOk(run(call, {scale.view(), g32.view(), g16.view(), gbf.view()},
                {found.view(), u32.view(), u16.view(), ubf.view()}));
  CHECK(getD(found, 0) == 0.0);
  CHECK(values(u32) == std::vector<double>{1, -2, 0.5, 3.0 / 1024});
  CHECK(values(u16) == std::vector<double>{2, 65504.0 / 1024, -1.0 / 1024});
  CHECK(values(ubf) == std::vector<double>{-4});
  // The inputs are not touched.
  CHECK(values(g32) == std::vector<double>{1024, -2048, 512, 3});

  // f64 gradients are scaled in f64: 1e42 / 1024 overflows f32 and is
  // flagged like a non-finite gradient.
  requireOk(run(call, {scale.view(), g64.view()}, {found.view(), u64.view()}));
  CHECK(getD(u64, 0) == static_cast<float>(1e-3 / 1024));
  CHECK(getD(found, 0) == 1.0);

  // One Inf among several gradients sets the shared flag.
  setD(g16, 1, std::numeric_limits<double>::infinity());
  requireOk(run(call, {scale.view(), g32.view(), g16.view()},
                {found.view(), u32.view(), u16.view()}));
  CHECK(getD(found, 0) == 1.0);
  setD(g16, 1, 1.0);
  requireOk(run(call, {scale.view(), g32.view(), g16.view()},
                {found.view(), u32.view(), u16.view()}));
  CHECK(getD(found, 0) == 0.0);
  setD(g32, 3, std::nan(""));
  requireOk(run(call, {scale.view(), g32.view()}, {found.view(), u32.view()}));
  CHECK(getD(found, 0) == 1.0);

  // In place on an f32 gradient.
  HostTensor g = tensor(DType::F32, {2}, {4096, 8});
  requireOk(run(call, {scale.view(), g.view()}, {found.view(), g.view()}));
  CHECK(values(g) == std::vector<double>{4, 8.0 / 1024});
  CHECK(getD(found, 0) == 0.0);

  expectError(run(call, {scale.view()}, {found.view()}), "n >= 1");
  expectError(run(call, {scale.view(), g32.view()}, {found.view()}),
              "got 2 operands and 1 results");
  HostTensor u16Bad(DType::F16, {2, 2});
  expectError(
      run(call, {scale.view(), g32.view()}, {found.view(), u16Bad.view()}),
      "u_1 must be f32 with g_1's shape [2, 2], got f16 [2, 2]");
  HostTensor uShape(DType::F32, {4});
  expectError(
      run(call, {scale.view(), g32.view()}, {found.view(), uShape.view()}),
      "got f32 [4]");
  HostTensor gi = tensor(DType::I32, {1}, {3});
  expectError(run(call, {scale.view(), gi.view()}, {found.view(), ubf.view()}),
              "g_1 has dtype i32");
  HostTensor scale64 = filled(DType::F64, {1}, 2.0);
  expectError(
      run(call, {scale64.view(), g32.view()}, {found.view(), u32.view()}),
      "scale must be one f32 element");
  HostTensor found2 = filled(DType::F32, {2}, 0.0);
  expectError(
      run(call, {scale.view(), g32.view()}, {found2.view(), u32.view()}),
      "found_inf must be one f32 element");
  expectError(run(call, {scale.view(), g32.view(), g16.view()},
                  {found.view(), u32.view(), u32.view()}),
              "u_1 overlaps u_2");
}

TEST_CASE("kernel.loss_scale_update: backoff on overflow, growth after the "
          "interval",
          "[runtime][cpu][calls][training-calls]") {
  PlanCall call =
      makeCall("kernel.loss_scale_update", {{"growth_factor", 2.0},
                                            {"backoff_factor", 0.5},
                                            {"growth_interval", int64_t(3)}});
  HostTensor scale = scalarF32(65536.0f), tracker = scalarI64(2);
  HostTensor inf = scalarF32(1.0f), clean = scalarF32(0.0f);
  requireOk(run(call, {inf.view()}, {scale.view(), tracker.view()}));
  CHECK(getD(scale, 0) == 32768.0);
  CHECK(*tracker.as<int64_t>() == 0);
  for (int i = 1; i <= 2; ++i) {
    requireOk(run(call, {clean.view()}, {scale.view(), tracker.view()}));
    CHECK(getD(scale, 0) == 32768.0);
    CHECK(*tracker.as<int64_t>() == i);
  }
  requireOk(run(call, {clean.view()}, {scale.view(), tracker.view()}));
  CHECK(getD(scale, 0) == 65536.0);
  CHECK(*tracker.as<int64_t>() == 0);

  // GradScaler's defaults when the attributes are left out.
  PlanCall defaults = makeCall("kernel.loss_scale_update", {});
  requireOk(run(defaults, {inf.view()}, {scale.view(), tracker.view()}));
  CHECK(getD(scale, 0) == 32768.0);

  setAttr(call, "backoff_factor", 1.5);
  expectError(run(call, {inf.view()}, {scale.view(), tracker.view()}),
              "backoff_factor < 1");
  setAttr(call, "backoff_factor", 0.5);
  HostTensor tracker32 = filled(DType::I32, {1}, 0);
  expectError(run(call, {inf.view()}, {scale.view(), tracker32.view()}),
              "growth_tracker must be one i64 element");
  expectError(
      run(call, {inf.view(), inf.view()}, {scale.view(), tracker.view()}),
      "expects 1 operands");
  expectError(run(call, {scale.view()}, {scale.view(), tracker.view()}),
              "must not overlap");
}

namespace {

/// torch.optim.SGD, one step on one element, in double.
void sgdRef(double &p, double g, double &buf, int64_t step, double lr,
            double momentum, double dampening, double wd, bool nesterov) {
  double d = g + wd * p;
  if (momentum != 0) {
    buf = step == 0 ? d : momentum * buf + (1 - dampening) * d;
    d = nesterov ? d + momentum * buf : buf;
  }
  p -= lr * d;
}

/// torch.optim.Adam / AdamW, one step (the step-th, from 1), in double.
void adamRef(double &p, double g, double &m, double &v, int64_t step, double lr,
             double b1, double b2, double eps, double wd, bool decoupled) {
  if (wd != 0) {
    if (decoupled)
      p *= 1 - lr * wd;
    else
      g += wd * p;
  }
  m = b1 * m + (1 - b1) * g;
  v = b2 * v + (1 - b2) * g * g;
  double mhat = m / (1 - std::pow(b1, double(step)));
  double vhat = v / (1 - std::pow(b2, double(step)));
  p -= lr * mhat / (std::sqrt(vhat) + eps);
}

} // namespace

TEST_CASE("kernel.sgd_step against torch.optim.SGD, skipped on found_inf",
          "[runtime][cpu][calls][training-calls]") {
  const std::vector<double> p0{0.5, -1.25, 2.0}, g1{0.1, -0.2, 0.3},
      g2{-0.05, 0.4, 0.25};
  for (bool nesterov : {false, true}) {
    INFO("nesterov " << nesterov);
    const double lr = 0.1, mu = 0.9, damp = nesterov ? 0.0 : 0.25, wd = 0.01;
    PlanCall call =
        makeCall("kernel.sgd_step", {{"lr", lr},
                                     {"momentum", mu},
                                     {"dampening", damp},
                                     {"weight_decay", wd},
                                     {"nesterov", int64_t(nesterov)},
                                     {"has_found_inf", int64_t(1)},
                                     {"has_momentum_buffer", int64_t(1)}});
    HostTensor p = tensor(DType::F32, {3}, p0),
               buf = filled(DType::F32, {3}, 0), step = scalarI64(0),
               found = scalarF32(0);
    std::vector<double> rp = p0, rbuf(3, 0.0);
    int64_t rstep = 0;
    for (const std::vector<double> *gv : {&g1, &g2}) {
      HostTensor g = tensor(DType::F32, {3}, *gv);
      requireOk(run(call, {g.view(), found.view()},
                    {p.view(), buf.view(), step.view()}));
      for (size_t i = 0; i < 3; ++i)
        sgdRef(rp[i], (*gv)[i], rbuf[i], rstep, lr, mu, damp, wd, nesterov);
      ++rstep;
      expectClose(values(p), rp, 1e-6, "param");
      expectClose(values(buf), rbuf, 1e-6, "momentum_buffer");
      CHECK(*step.as<int64_t>() == rstep);
    }
    // found_inf set: nothing changes.
    std::vector<double> keepP = values(p), keepBuf = values(buf);
    setD(found, 0, 1.0);
    HostTensor g = tensor(DType::F32, {3}, g1);
    requireOk(run(call, {g.view(), found.view()},
                  {p.view(), buf.view(), step.view()}));
    CHECK(values(p) == keepP);
    CHECK(values(buf) == keepBuf);
    CHECK(*step.as<int64_t>() == 2);
  }

  // Plain SGD: no momentum buffer, no found_inf.
  PlanCall plain =
      makeCall("kernel.sgd_step", {{"lr", 0.5},
                                   {"has_found_inf", int64_t(0)},
                                   {"has_momentum_buffer", int64_t(0)}});
  HostTensor p = tensor(DType::F32, {3}, p0), g = tensor(DType::F32, {3}, g1),
             step = scalarI64(7);
  requireOk(run(plain, {g.view()}, {p.view(), step.view()}));
  expectClose(values(p), {0.45, -1.15, 1.85}, 1e-6, "plain param");
  CHECK(*step.as<int64_t>() == 8);

  PlanCall noLr =
      makeCall("kernel.sgd_step", {{"has_found_inf", int64_t(0)},
                                   {"has_momentum_buffer", int64_t(0)}});
  expectError(run(noLr, {g.view()}, {p.view(), step.view()}),
              "attribute 'lr' is missing");
  setAttr(plain, "momentum", 0.9);
  expectError(run(plain, {g.view()}, {p.view(), step.view()}),
              "needs a momentum_buffer");
  setAttr(plain, "momentum", 0.0);
  expectError(run(plain, {g.view()}, {p.view(), p.view(), step.view()}),
              "expects 2 results");
  HostTensor g16 = tensor(DType::F16, {3}, g1);
  expectError(run(plain, {g16.view()}, {p.view(), step.view()}),
              "grad must be f32 [3] like the parameter");
  expectError(run(plain, {p.view()}, {p.view(), step.view()}),
              "grad overlaps param");
  HostTensor step32 = filled(DType::I32, {1}, 0);
  expectError(run(plain, {g.view()}, {p.view(), step32.view()}),
              "step must be one i64 element");
}

TEST_CASE("kernel.adam_step against torch.optim.Adam / AdamW",
          "[runtime][cpu][calls][training-calls]") {
  const std::vector<double> p0{0.5, -1.25, 2.0, 0.0};
  const std::vector<std::vector<double>> grads{
      {0.1, -0.2, 0.3, 0.0}, {-0.05, 0.4, 0.25, 1e-3}, {0.2, 0.2, -0.1, 0.0}};
  for (bool decoupled : {false, true}) {
    INFO("decoupled " << decoupled);
    const double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.1;
    PlanCall call = makeCall("kernel.adam_step",
                             {{"lr", lr},
                              {"beta1", b1},
                              {"beta2", b2},
                              {"eps", eps},
                              {"weight_decay", wd},
                              {"decoupled_weight_decay", int64_t(decoupled)},
                              {"has_found_inf", int64_t(1)}});
    HostTensor p = tensor(DType::F32, {2, 2}, p0),
               m = filled(DType::F32, {2, 2}, 0),
               v = filled(DType::F32, {2, 2}, 0), step = scalarI64(0),
               found = scalarF32(0);
    std::vector<double> rp = p0, rm(4, 0.0), rv(4, 0.0);
    int64_t rstep = 0;
    for (size_t k = 0; k < grads.size(); ++k) {
      HostTensor g = tensor(DType::F32, {2, 2}, grads[k]);
      bool skip = k == 1; // the second step overflowed
      setD(found, 0, skip ? 1.0 : 0.0);
      requireOk(run(call, {g.view(), found.view()},
                    {p.view(), m.view(), v.view(), step.view()}));
      if (!skip) {
        ++rstep;
        for (size_t i = 0; i < 4; ++i)
          adamRef(rp[i], grads[k][i], rm[i], rv[i], rstep, lr, b1, b2, eps, wd,
                  decoupled);
      }
      expectClose(values(p), rp, 1e-5, "param");
      expectClose(values(m), rm, 1e-5, "exp_avg");
      expectClose(values(v), rv, 1e-5, "exp_avg_sq");
      CHECK(*step.as<int64_t>() == rstep);
    }
  }

  // Defaults (lr 1e-3, betas 0.9 / 0.999, eps 1e-8), no found_inf: the first
  // step moves every element with a non-zero gradient by lr.
  PlanCall defaults =
      makeCall("kernel.adam_step", {{"has_found_inf", int64_t(0)}});
  HostTensor p = tensor(DType::F32, {4}, p0),
             g = tensor(DType::F32, {4}, grads[0]),
             m = filled(DType::F32, {4}, 0), v = filled(DType::F32, {4}, 0),
             step = scalarI64(0);
  requireOk(
      run(defaults, {g.view()}, {p.view(), m.view(), v.view(), step.view()}));
  expectClose(values(p), {0.499, -1.249, 1.999, 0.0}, 1e-6, "first step");

  expectError(run(defaults, {g.view()}, {p.view(), m.view(), step.view()}),
              "expects 4 results");
  expectError(run(defaults, {g.view(), g.view()},
                  {p.view(), m.view(), v.view(), step.view()}),
              "expects 1 operands (from its has_* attributes), got 2");
  setAttr(defaults, "beta1", 1.5);
  expectError(
      run(defaults, {g.view()}, {p.view(), m.view(), v.view(), step.view()}),
      "needs 0 <= beta1, beta2 < 1");
  setAttr(defaults, "beta1", 0.9);
  expectError(
      run(defaults, {g.view()}, {p.view(), m.view(), m.view(), step.view()}),
      "exp_avg overlaps exp_avg_sq");
  HostTensor mBad = filled(DType::F32, {3}, 0);
  expectError(
      run(defaults, {g.view()}, {p.view(), mBad.view(), v.view(), step.view()}),
      "exp_avg must be f32 [4] like the parameter");
}

TEST_CASE("a GradScaler loop through the calls: overflow skips the step and "
          "halves the scale, clean steps grow it again",
          "[runtime][cpu][calls][training-calls]") {
  PlanCall unscale = makeCall("kernel.unscale_check_finite", {});
  PlanCall update =
      makeCall("kernel.loss_scale_update", {{"growth_factor", 2.0},
                                            {"backoff_factor", 0.5},
                                            {"growth_interval", int64_t(2)}});
  PlanCall sgd =
      makeCall("kernel.sgd_step", {{"lr", 1.0},
                                   {"has_found_inf", int64_t(1)},
                                   {"has_momentum_buffer", int64_t(0)}});
  HostTensor scale = scalarF32(65536.0f), tracker = scalarI64(0),
             found = scalarF32(0), step = scalarI64(0);
  HostTensor param = tensor(DType::F32, {2}, {1.0, 2.0});
  HostTensor grad32(DType::F32, {2});
  // f16 scaled gradients of a true gradient (0.25, -0.5); the second step
  // overflows f16.
  auto stepOnce = [&](bool overflow) {
    double s = getD(scale, 0);
    HostTensor g16 = tensor(DType::F16, {2}, {0.25 * s, -0.5 * s});
    if (overflow)
      setD(g16, 0, std::numeric_limits<double>::infinity());
    requireOk(run(unscale, {scale.view(), g16.view()},
                  {found.view(), grad32.view()}));
    requireOk(
        run(sgd, {grad32.view(), found.view()}, {param.view(), step.view()}));
    requireOk(run(update, {found.view()}, {scale.view(), tracker.view()}));
  };
  stepOnce(false);
  CHECK(values(param) == std::vector<double>{0.75, 2.5});
  CHECK(getD(scale, 0) == 65536.0);
  stepOnce(true);
  CHECK(getD(found, 0) == 1.0);
  CHECK(values(param) == std::vector<double>{0.75, 2.5}); // skipped
  CHECK(*step.as<int64_t>() == 1);
  CHECK(getD(scale, 0) == 32768.0);
  stepOnce(false);
  CHECK(getD(scale, 0) == 32768.0);
  CHECK(*tracker.as<int64_t>() == 1);
  stepOnce(false);
  CHECK(getD(scale, 0) == 65536.0); // grown after 2 clean steps
  CHECK(*tracker.as<int64_t>() == 0);
  CHECK(values(param) == std::vector<double>{0.25, 3.5});
  CHECK(*step.as<int64_t>() == 3);
}
