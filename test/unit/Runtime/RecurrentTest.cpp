// Tests of the CPU recurrent kernel (mp/Runtime/CPU/NNKernels.h: rnn) and
// its plan call cudnn.rnn.
//
// The kernel is compared with a straightforward per-timestep reference of
// ONNX LSTM / GRU / RNN written here in double (gate by gate, as the ONNX
// operator specification writes the equations), on pseudo-random weights,
// and with ONNX's backend test data (LSTM, GRU, RNN node tests) when it is
// installed. 16-bit inputs are rounded to their type first and the reference
// uses the rounded values; the kernel keeps its state in f32 and rounds each
// output once, so 16-bit outputs must be within about one ulp.
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/TensorIO.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
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

/// Relative tolerance of an output of dtype t (one rounding of the output
/// plus the f32 computation).
double tolerance(DType t) {
  switch (t) {
  case DType::F16: return 0x1p-10;
  case DType::BF16: return 0x1p-7;
  default: return 2e-5;
  }
}

void expectClose(const std::vector<double> &got, const std::vector<double> &ref,
                 double tol, const std::string &what) {
  INFO(what);
  REQUIRE(got.size() == ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= tol * (1.0 + std::fabs(ref[i])))) {
      if (bad < 5)
        UNSCOPED_INFO("element " << i << ": got " << got[i] << ", expected "
                                 << ref[i]);
      ++bad;
    }
  CHECK(bad == 0);
}

//===----------------------------------------------------------------------===//
// The reference: ONNX's equations, per timestep, in double
//===----------------------------------------------------------------------===//

double activationRef(const RnnActivation &a, double x) {
  switch (a.kind) {
  case RnnActivationKind::Relu: return std::max(0.0, x);
  case RnnActivationKind::Tanh: return std::tanh(x);
  case RnnActivationKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case RnnActivationKind::Affine: return a.alpha * x + a.beta;
  case RnnActivationKind::LeakyRelu: return x >= 0 ? x : a.alpha * x;
  case RnnActivationKind::ThresholdedRelu: return x > a.alpha ? x : 0.0;
  case RnnActivationKind::ScaledTanh: return a.alpha * std::tanh(a.beta * x);
  case RnnActivationKind::HardSigmoid:
    return std::max(0.0, std::min(1.0, a.alpha * x + a.beta));
  case RnnActivationKind::Elu: return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
  case RnnActivationKind::Softsign: return x / (1 + std::fabs(x));
  case RnnActivationKind::Softplus: return std::log(1 + std::exp(x));
  }
  return 0;
}

struct RnnCase {
  RnnOptions o;
  int64_t seq = 0, batch = 0, input = 0;
  // Values (already rounded to the tested dtype).
  std::vector<double> x, w, r, b, h0, c0, p;
  std::vector<int64_t> lens; // empty: all seq
};

struct RnnRef {
  std::vector<double> y, yH, yC;
};

RnnRef reference(const RnnCase &c) {
  const RnnOptions &o = c.o;
  int64_t H = o.hiddenSize, I = c.input, B = c.batch, T = c.seq;
  int64_t D = o.direction == RnnDirection::Bidirectional ? 2 : 1;
  int64_t G = o.mode == RnnMode::Lstm ? 4 : o.mode == RnnMode::Gru ? 3 : 1;
  std::vector<RnnActivation> acts = o.activations;
  if (acts.empty())
    acts = *parseRnnActivations(o.mode, D, "");
  size_t per = rnnActivationsPerDirection(o.mode);
  RnnRef out;
  out.y.assign(T * D * B * H, 0.0);
  out.yH.assign(D * B * H, 0.0);
  out.yC.assign(D * B * H, 0.0);
  auto clip = [&](double v) {
    return o.clip ? std::min<double>(*o.clip, std::max<double>(-*o.clip, v)) : v;
  };
  for (int64_t d = 0; d < D; ++d) {
    bool rev = o.direction == RnnDirection::Reverse || d == 1;
    auto f = [&](double v) { return activationRef(acts[d * per], v); };
    auto g = [&](double v) { return activationRef(acts[d * per + 1], v); };
    auto hAct = [&](double v) { return activationRef(acts[d * per + 2], v); };
    auto W = [&](int64_t gate, int64_t j, int64_t i) {
      return c.w[((d * G + gate) * H + j) * I + i];
    };
    auto R = [&](int64_t gate, int64_t j, int64_t i) {
      return c.r[((d * G + gate) * H + j) * H + i];
    };
    auto Wb = [&](int64_t gate, int64_t j) {
      return c.b.empty() ? 0.0 : c.b[d * 2 * G * H + gate * H + j];
    };
    auto Rb = [&](int64_t gate, int64_t j) {
      return c.b.empty() ? 0.0 : c.b[d * 2 * G * H + (G + gate) * H + j];
    };
    for (int64_t bi = 0; bi < B; ++bi) {
      int64_t len = c.lens.empty() ? T : c.lens[bi];
      std::vector<double> h(H, 0.0), cs(H, 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (!c.h0.empty())
          h[j] = c.h0[(d * B + bi) * H + j];
        if (!c.c0.empty())
          cs[j] = c.c0[(d * B + bi) * H + j];
      }
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = rev ? len - 1 - s : s;
        const double *xt = c.x.data() + (t * B + bi) * I;
        // pre(gate, j) = x W^T + Wb + h R^T + Rb, the common term.
        auto xw = [&](int64_t gate, int64_t j) {
          double v = Wb(gate, j);
          for (int64_t i = 0; i < I; ++i)
            v += xt[i] * W(gate, j, i);
          return v;
        };
        auto hr = [&](int64_t gate, int64_t j, const std::vector<double> &hv) {
          double v = 0;
          for (int64_t i = 0; i < H; ++i)
            v += hv[i] * R(gate, j, i);
          return v;
        };
        std::vector<double> hn(H), cn(H);
        if (o.mode == RnnMode::Rnn) {
          for (int64_t j = 0; j < H; ++j)
            hn[j] = f(clip(xw(0, j) + hr(0, j, h) + Rb(0, j)));
        } else if (o.mode == RnnMode::Gru) {
          std::vector<double> z(H), rg(H), rh(H);
          for (int64_t j = 0; j < H; ++j) {
            z[j] = f(clip(xw(0, j) + hr(0, j, h) + Rb(0, j)));
            rg[j] = f(clip(xw(1, j) + hr(1, j, h) + Rb(1, j)));
            rh[j] = rg[j] * h[j];
          }
          for (int64_t j = 0; j < H; ++j) {
            double pre = o.linearBeforeReset
                             ? xw(2, j) + rg[j] * (hr(2, j, h) + Rb(2, j))
                             : xw(2, j) + hr(2, j, rh) + Rb(2, j);
            double cand = g(clip(pre));
            hn[j] = (1 - z[j]) * cand + z[j] * h[j];
          }
        } else { // LSTM: gates i, o, f, c; peepholes i, o, f
          auto P = [&](int64_t k, int64_t j) {
            return c.p.empty() ? 0.0 : c.p[d * 3 * H + k * H + j];
          };
          for (int64_t j = 0; j < H; ++j) {
            double ig = f(clip(xw(0, j) + hr(0, j, h) + Rb(0, j) + P(0, j) * cs[j]));
            double fg = o.inputForget
                            ? 1 - ig
                            : f(clip(xw(2, j) + hr(2, j, h) + Rb(2, j) +
                                     P(2, j) * cs[j]));
            double cg = g(clip(xw(3, j) + hr(3, j, h) + Rb(3, j)));
            cn[j] = fg * cs[j] + ig * cg;
            double og = f(clip(xw(1, j) + hr(1, j, h) + Rb(1, j) + P(1, j) * cn[j]));
            hn[j] = og * hAct(cn[j]);
          }
          cs = cn;
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j)
          out.y[((t * D + d) * B + bi) * H + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        out.yH[(d * B + bi) * H + j] = h[j];
        out.yC[(d * B + bi) * H + j] = cs[j];
      }
    }
  }
  return out;
}

/// Runs one random case of `dtype` through the kernel and the reference.
void runCase(RnnCase c, DType dtype, Rng &rng, bool withBias, bool withInit,
             bool withPeep, bool withLens) {
  const RnnOptions &o = c.o;
  int64_t H = o.hiddenSize;
  int64_t D = o.direction == RnnDirection::Bidirectional ? 2 : 1;
  int64_t G = o.mode == RnnMode::Lstm ? 4 : o.mode == RnnMode::Gru ? 3 : 1;
  bool lstm = o.mode == RnnMode::Lstm;
  HostTensor x = randomTensor(dtype, {c.seq, c.batch, c.input}, rng);
  HostTensor w = randomTensor(dtype, {D, G * H, c.input}, rng, -0.6, 0.6);
  HostTensor r = randomTensor(dtype, {D, G * H, H}, rng, -0.6, 0.6);
  HostTensor b = randomTensor(dtype, {D, 2 * G * H}, rng, -0.5, 0.5);
  HostTensor h0 = randomTensor(dtype, {D, c.batch, H}, rng);
  HostTensor c0 = randomTensor(dtype, {D, c.batch, H}, rng);
  HostTensor p = randomTensor(dtype, {D, 3 * H}, rng, -0.5, 0.5);
  HostTensor lens(DType::I32, {c.batch});
  for (int64_t i = 0; i < c.batch; ++i) {
    int32_t len = static_cast<int32_t>(c.seq - (i % (c.seq + 1)));
    lens.as<int32_t>()[i] = len;
    if (withLens)
      c.lens.push_back(len);
  }
  c.x = values(x);
  c.w = values(w);
  c.r = values(r);
  if (withBias)
    c.b = values(b);
  if (withInit) {
    c.h0 = values(h0);
    if (lstm)
      c.c0 = values(c0);
  }
  if (withPeep && lstm)
    c.p = values(p);
  HostTensor y = filled(dtype, {c.seq, D, c.batch, H}, 777.0);
  HostTensor yH = filled(dtype, {D, c.batch, H}, 777.0);
  HostTensor yC = filled(dtype, {D, c.batch, H}, 777.0);
  Status s = rnn(x.view(), w.view(), r.view(), withBias ? &b.view() : nullptr,
                 withLens ? &lens.view() : nullptr,
                 withInit ? &h0.view() : nullptr,
                 withInit && lstm ? &c0.view() : nullptr,
                 withPeep && lstm ? &p.view() : nullptr, &y.view(), &yH.view(),
                 lstm ? &yC.view() : nullptr, o);
  INFO(s.message());
  REQUIRE(s.isOk());
  RnnRef ref = reference(c);
  double tol = tolerance(dtype);
  expectClose(values(y), ref.y, tol, "y");
  expectClose(values(yH), ref.yH, tol, "y_h");
  if (lstm)
    expectClose(values(yC), ref.yC, tol, "y_c");
}

} // namespace

TEST_CASE("rnn: LSTM, GRU and RNN match a per-timestep reference",
          "[runtime][cpu][rnn]") {
  Rng rng(42);
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru, RnnMode::Rnn})
    for (RnnDirection dir : {RnnDirection::Forward, RnnDirection::Reverse,
                             RnnDirection::Bidirectional})
      for (DType dtype : {DType::F32, DType::BF16, DType::F16})
        for (int variant = 0; variant < 3; ++variant) {
          RnnCase c;
          c.o.mode = mode;
          c.o.direction = dir;
          c.o.hiddenSize = 5 + variant;
          c.o.linearBeforeReset = variant == 1;
          c.seq = 4 + variant;
          c.batch = 3;
          c.input = 6;
          INFO("mode " << int(mode) << " direction " << int(dir) << " dtype "
                       << dtypeName(dtype) << " variant " << variant);
          // variant 0: nothing optional; 1: bias, initial state, peepholes;
          // 2: everything and sequence lengths.
          runCase(c, dtype, rng, variant >= 1, variant >= 1, variant >= 1,
                  variant == 2);
        }
}

TEST_CASE("rnn: clip, input_forget, activations with parameters",
          "[runtime][cpu][rnn]") {
  Rng rng(7);
  SECTION("LSTM clip and input_forget") {
    RnnCase c;
    c.o.mode = RnnMode::Lstm;
    c.o.hiddenSize = 4;
    c.o.clip = 0.3f;
    c.o.inputForget = true;
    c.seq = 3, c.batch = 2, c.input = 3;
    runCase(c, DType::F32, rng, true, true, true, false);
  }
  SECTION("GRU and RNN with parameterized activations, both directions") {
    for (RnnMode mode : {RnnMode::Gru, RnnMode::Rnn}) {
      RnnCase c;
      c.o.mode = mode;
      c.o.direction = RnnDirection::Bidirectional;
      c.o.hiddenSize = 3;
      std::string names = mode == RnnMode::Gru
                              ? "HardSigmoid,ScaledTanh,Sigmoid,LeakyRelu"
                              : "Affine,Elu";
      auto acts = parseRnnActivations(mode, 2, names, {0.3, 0.7, 0.9},
                                      {0.4, 1.5});
      INFO(acts.message());
      REQUIRE(acts.isOk());
      c.o.activations = *acts;
      c.seq = 3, c.batch = 2, c.input = 2;
      runCase(c, DType::F32, rng, true, true, false, false);
    }
  }
}

TEST_CASE("rnn: parseRnnActivations", "[runtime][cpu][rnn]") {
  auto a = parseRnnActivations(RnnMode::Lstm, 2, " sigmoid , Tanh,Relu");
  REQUIRE(a.isOk());
  REQUIRE(a->size() == 6); // one direction's list, repeated
  CHECK((*a)[2].kind == RnnActivationKind::Relu);
  CHECK((*a)[5].kind == RnnActivationKind::Relu);
  auto b = parseRnnActivations(RnnMode::Gru, 1, "LeakyRelu,HardSigmoid",
                               {0.5}, {});
  REQUIRE(b.isOk());
  CHECK((*b)[0].alpha == 0.5f);
  CHECK((*b)[1].alpha == 0.2f); // defaults of HardSigmoid
  CHECK((*b)[1].beta == 0.5f);
  CHECK_FALSE(parseRnnActivations(RnnMode::Rnn, 1, "Tanh,Tanh").isOk());
  auto bad = parseRnnActivations(RnnMode::Rnn, 1, "Swish");
  REQUIRE_FALSE(bad.isOk());
  CHECK(bad.message().find("unknown activation 'swish'") != std::string::npos);
}

TEST_CASE("rnn: ONNX documented LSTM example (test_lstm_defaults inputs)",
          "[runtime][cpu][rnn]") {
  // onnx/backend/test/case/node/lstm.py, defaults: x = [[1,2],[3,4],[5,6]]
  // (seq 1, batch 3), all weights 0.1, hidden 3; Y_h from the numpy
  // reference: h = o * tanh(c), c = i * g with i = o = sigmoid(0.1*(x0+x1)),
  // g = tanh(0.1*(x0+x1)).
  HostTensor x(DType::F32, {1, 3, 2});
  for (int i = 0; i < 6; ++i)
    x.as<float>()[i] = static_cast<float>(i + 1);
  HostTensor w = filled(DType::F32, {1, 12, 2}, 0.1);
  HostTensor r = filled(DType::F32, {1, 12, 3}, 0.1);
  HostTensor yH(DType::F32, {1, 3, 3});
  RnnOptions o;
  o.hiddenSize = 3;
  REQUIRE(rnn(x.view(), w.view(), r.view(), nullptr, nullptr, nullptr, nullptr,
              nullptr, nullptr, &yH.view(), nullptr, o)
              .isOk());
  for (int bi = 0; bi < 3; ++bi) {
    double s = 0.1 * ((2 * bi + 1) + (2 * bi + 2));
    double gate = 1 / (1 + std::exp(-s)), c = gate * std::tanh(s);
    double expected = gate * std::tanh(c);
    for (int j = 0; j < 3; ++j)
      CHECK(yH.as<float>()[bi * 3 + j] == Approx(expected).epsilon(1e-6));
  }
  // The example's expected Y_h (ONNX's test_lstm_defaults output_0).
  const double published[3] = {0.0952412, 0.25606447, 0.40323776};
  for (int bi = 0; bi < 3; ++bi)
    CHECK(yH.as<float>()[bi * 3] == Approx(published[bi]).epsilon(1e-6));
}

TEST_CASE("rnn: rejects bad arguments", "[runtime][cpu][rnn]") {
  HostTensor x(DType::F32, {2, 1, 3}), w(DType::F32, {1, 8, 3}),
      r(DType::F32, {1, 8, 2}), yH(DType::F32, {1, 1, 2});
  RnnOptions o;
  o.mode = RnnMode::Lstm;
  o.hiddenSize = 2;
  auto run = [&](const TensorView &wv, const RnnOptions &opts,
                 const TensorView *lens = nullptr) {
    return rnn(x.view(), wv, r.view(), nullptr, lens, nullptr, nullptr,
               nullptr, nullptr, &yH.view(), nullptr, opts);
  };
  Status ok = run(w.view(), o);
  INFO(ok.message());
  CHECK(ok.isOk());
  HostTensor wBad(DType::F32, {1, 6, 3});
  Status bad = run(wBad.view(), o);
  CHECK(bad.message().find("w has shape [1, 6, 3], expected [1, 8, 3]") !=
        std::string::npos);
  HostTensor lens(DType::I32, {1});
  lens.as<int32_t>()[0] = 3;
  Status badLen = run(w.view(), o, &lens.view());
  CHECK(badLen.message().find("sequence_lens[0] = 3 is outside [0, 2]") !=
        std::string::npos);
  RnnOptions gru = o;
  gru.mode = RnnMode::Gru;
  HostTensor c0(DType::F32, {1, 1, 2});
  Status noC = rnn(x.view(), w.view(), r.view(), nullptr, nullptr, nullptr,
                   &c0.view(), nullptr, nullptr, &yH.view(), nullptr, gru);
  CHECK(noC.message().find("LSTM only") != std::string::npos);
  HostTensor x16(DType::F16, {2, 1, 3});
  Status mixed = rnn(x16.view(), w.view(), r.view(), nullptr, nullptr, nullptr,
                     nullptr, nullptr, nullptr, &yH.view(), nullptr, o);
  CHECK(mixed.message().find("w has dtype f32; expected x's dtype f16") !=
        std::string::npos);
  // A hidden_size whose gate count times it overflows (a fuzzed plan).
  RnnOptions huge = o;
  huge.hiddenSize = int64_t(5548434740920451071);
  Status tooBig = run(w.view(), huge);
  CHECK(tooBig.message().find("hidden_size must be in [1, 2^40], got "
                              "5548434740920451071") != std::string::npos);
}

//===----------------------------------------------------------------------===//
// The plan call
//===----------------------------------------------------------------------===//

TEST_CASE("cudnn.rnn call: operands and results follow the has_* attributes",
          "[runtime][cpu][rnn][calls]") {
  CallFn fn = cpuCallTable().find("cudnn.rnn");
  REQUIRE(fn);
  Rng rng(3);
  int64_t T = 3, B = 2, I = 4, H = 3;
  // A 2-direction GRU with bias and initial_h, y and y_h wanted, y_c not.
  HostTensor x = randomTensor(DType::F32, {T, B, I}, rng);
  HostTensor w = randomTensor(DType::F32, {2, 3 * H, I}, rng);
  HostTensor r = randomTensor(DType::F32, {2, 3 * H, H}, rng);
  HostTensor b = randomTensor(DType::F32, {2, 6 * H}, rng);
  HostTensor h0 = randomTensor(DType::F32, {2, B, H}, rng);
  HostTensor y(DType::F32, {T, 2, B, H}), yH(DType::F32, {2, B, H});
  PlanCall call;
  call.kind = "cudnn.rnn";
  call.attributes = {{"mode", std::string("gru")},
                     {"direction", std::string("bidirectional")},
                     {"hidden_size", int64_t(H)},
                     {"activations", std::string("Sigmoid,Tanh,Sigmoid,Relu")},
                     {"linear_before_reset", int64_t(1)},
                     {"input_forget", int64_t(0)},
                     {"has_b", int64_t(1)},
                     {"has_sequence_lens", int64_t(0)},
                     {"has_initial_h", int64_t(1)},
                     {"has_initial_c", int64_t(0)},
                     {"has_p", int64_t(0)},
                     {"has_y", int64_t(1)},
                     {"has_y_h", int64_t(1)},
                     {"has_y_c", int64_t(0)}};
  CallArgs args{call,
                {x.view(), w.view(), r.view(), b.view(), h0.view()},
                {y.view(), yH.view()}};
  Status s = fn(args);
  INFO(s.message());
  REQUIRE(s.isOk());

  RnnCase c;
  c.o.mode = RnnMode::Gru;
  c.o.direction = RnnDirection::Bidirectional;
  c.o.hiddenSize = H;
  c.o.linearBeforeReset = true;
  c.o.activations = *parseRnnActivations(RnnMode::Gru, 2,
                                         "Sigmoid,Tanh,Sigmoid,Relu");
  c.seq = T, c.batch = B, c.input = I;
  c.x = values(x), c.w = values(w), c.r = values(r), c.b = values(b);
  c.h0 = values(h0);
  RnnRef ref = reference(c);
  expectClose(values(y), ref.y, 2e-5, "y");
  expectClose(values(yH), ref.yH, 2e-5, "y_h");

  SECTION("a count that does not match has_* is an error") {
    CallArgs fewer{call, {x.view(), w.view(), r.view(), b.view()},
                   {y.view(), yH.view()}};
    Status e = fn(fewer);
    CHECK(e.message().find("expects 5 operands") != std::string::npos);
  }
  SECTION("a bad mode is an error") {
    PlanCall bad = call;
    bad.attributes[0].value = std::string("lstmx");
    CallArgs a{bad, args.operands, args.results};
    CHECK(fn(a).message().find("attribute 'mode'") != std::string::npos);
  }
}

//===----------------------------------------------------------------------===//
// ONNX backend test data
//===----------------------------------------------------------------------===//

namespace {

fs::path nodeTest(const std::string &name) {
  return fs::path(MP_ONNX_TESTDATA) / "node" / name / "test_data_set_0";
}

HostTensor readPb(const fs::path &path) {
  Result<HostTensor> r = readTensorFile(path.string());
  INFO(path.string() << ": " << r.message());
  REQUIRE(r.isOk());
  return r.take();
}

/// Runs an ONNX recurrent node test: inputs X, W, R[, B[, sequence_lens,
/// initial_h, initial_c, P]], output Y_h.
void checkOnnxTest(const std::string &name, RnnMode mode, int64_t hidden) {
  INFO(name);
  fs::path d = nodeTest(name);
  std::vector<HostTensor> in;
  for (int i = 0; fs::exists(d / ("input_" + std::to_string(i) + ".pb")); ++i)
    in.push_back(readPb(d / ("input_" + std::to_string(i) + ".pb")));
  HostTensor expected = readPb(d / "output_0.pb");
  REQUIRE(in.size() >= 3);
  auto opt = [&](size_t i) { return i < in.size() ? &in[i].view() : nullptr; };
  HostTensor yH(DType::F32, expected.shape());
  RnnOptions o;
  o.mode = mode;
  o.hiddenSize = hidden;
  Status s = rnn(in[0].view(), in[1].view(), in[2].view(), opt(3), opt(4),
                 opt(5), opt(6), opt(7), nullptr, &yH.view(), nullptr, o);
  INFO(s.message());
  REQUIRE(s.isOk());
  std::vector<double> ref = values(expected);
  expectClose(values(yH), ref, 1e-5, "Y_h");
}

} // namespace

TEST_CASE("rnn: ONNX backend test data", "[runtime][cpu][rnn][onnx]") {
  if (!hasTensorProtoSupport() || !fs::exists(nodeTest("test_lstm_defaults"))) {
    WARN("ONNX backend test data not found in " MP_ONNX_TESTDATA);
    return;
  }
  checkOnnxTest("test_lstm_defaults", RnnMode::Lstm, 3);
  checkOnnxTest("test_lstm_with_initial_bias", RnnMode::Lstm, 4);
  checkOnnxTest("test_lstm_with_peepholes", RnnMode::Lstm, 3);
  checkOnnxTest("test_gru_defaults", RnnMode::Gru, 5);
  checkOnnxTest("test_gru_with_initial_bias", RnnMode::Gru, 3);
  checkOnnxTest("test_gru_seq_length", RnnMode::Gru, 5);
  checkOnnxTest("test_simple_rnn_defaults", RnnMode::Rnn, 4);
  checkOnnxTest("test_simple_rnn_with_initial_bias", RnnMode::Rnn, 5);
  checkOnnxTest("test_rnn_seq_length", RnnMode::Rnn, 5);
}

TEST_CASE("rnn timings (2-layer LSTM language model shapes)", "[.][bench]") {
  // PyTorch word_language_model defaults: seq 35, batch 20, 650 units.
  Rng rng(1);
  int64_t T = 35, B = 20, H = 650;
  HostTensor x = randomTensor(DType::F32, {T, B, H}, rng);
  HostTensor w = randomTensor(DType::F32, {1, 4 * H, H}, rng, -0.05, 0.05);
  HostTensor r = randomTensor(DType::F32, {1, 4 * H, H}, rng, -0.05, 0.05);
  HostTensor b = randomTensor(DType::F32, {1, 8 * H}, rng, -0.05, 0.05);
  HostTensor y1(DType::F32, {T, 1, B, H}), y2(DType::F32, {T, 1, B, H});
  RnnOptions o;
  o.hiddenSize = H;
  auto start = std::chrono::steady_clock::now();
  int reps = 5;
  for (int i = 0; i < reps; ++i) {
    REQUIRE(rnn(x.view(), w.view(), r.view(), &b.view(), nullptr, nullptr,
                nullptr, nullptr, &y1.view(), nullptr, nullptr, o)
                .isOk());
    TensorView in2{DType::F32, {T, B, H}, y1.data()};
    REQUIRE(rnn(in2, w.view(), r.view(), &b.view(), nullptr, nullptr, nullptr,
                nullptr, &y2.view(), nullptr, nullptr, o)
                .isOk());
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              reps;
  double gflop = 2.0 * 2 * T * B * 4 * H * (H + H) * 1e-9;
  WARN("2-layer LSTM, seq 35, batch 20, hidden 650: " << ms << " ms ("
                                                       << gflop / ms * 1e3
                                                       << " GFLOP/s)");
}
