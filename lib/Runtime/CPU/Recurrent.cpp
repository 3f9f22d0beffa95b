//===- Recurrent.cpp - ONNX LSTM / GRU / RNN (cuDNN RNN) on the CPU -------===//
//
// Per direction, in f32:
//   1. xw[seq*batch, G*H] = x[seq*batch, input] @ W^T + bias: the input
//      projection of every step in one sgemm (the bias folded in: Wb + Rb,
//      except GRU's Rb_h when the reset gate applies after the product);
//   2. per step, hr[batch, G*H] = H_prev @ R^T (one sgemm; GRU without
//      linear_before_reset: one for z and r, one for (r * H_prev) @ R_h^T),
//      then the gates element-wise, row by row.
// Activations are chosen once per direction, applied to whole rows.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/NNKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "rnn";

int64_t gateCount(RnnMode mode) {
  switch (mode) {
  case RnnMode::Lstm: return 4;
  case RnnMode::Gru: return 3;
  case RnnMode::Rnn: return 1;
  }
  return 1;
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char &c : r)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

/// Applies `a` to n floats in place (the switch outside the loops).
void applyActivation(const RnnActivation &a, float *v, int64_t n) {
  float alpha = a.alpha, beta = a.beta;
  switch (a.kind) {
  case RnnActivationKind::Relu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] > 0.0f ? v[i] : 0.0f;
    return;
  case RnnActivationKind::Tanh:
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::tanh(v[i]);
    return;
  case RnnActivationKind::Sigmoid:
    for (int64_t i = 0; i < n; ++i)
      v[i] = 1.0f / (1.0f + std::exp(-v[i]));
    return;
  case RnnActivationKind::Affine:
    for (int64_t i = 0; i < n; ++i)
      v[i] = alpha * v[i] + beta;
    return;
  case RnnActivationKind::LeakyRelu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] >= 0.0f ? v[i] : alpha * v[i];
    return;
  case RnnActivationKind::ThresholdedRelu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] > alpha ? v[i] : 0.0f;
    return;
  case RnnActivationKind::ScaledTanh:
    for (int64_t i = 0; i < n; ++i)
      v[i] = alpha * std::tanh(beta * v[i]);
    return;
  case RnnActivationKind::HardSigmoid:
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::max(0.0f, std::min(1.0f, alpha * v[i] + beta));
    return;
  case RnnActivationKind::Elu:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] >= 0.0f ? v[i] : alpha * (std::exp(v[i]) - 1.0f);
    return;
  case RnnActivationKind::Softsign:
    for (int64_t i = 0; i < n; ++i)
      v[i] = v[i] / (1.0f + std::fabs(v[i]));
    return;
  case RnnActivationKind::Softplus:
    for (int64_t i = 0; i < n; ++i)
      v[i] = std::log1p(std::exp(v[i]));
    return;
  }
}

void clipTo(float clip, float *v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::min(clip, std::max(-clip, v[i]));
}

/// A float operand widened to f32 (a view of it when it is f32).
struct F32Data {
  std::vector<float> copy;
  const float *p = nullptr;
  F32Data() = default;
  explicit F32Data(const TensorView &v) {
    if (v.dtype == DType::F32) {
      p = v.as<const float>();
      return;
    }
    copy.resize(static_cast<size_t>(v.numElements()));
    toF32(v.dtype, v.data, copy.data(), v.numElements());
    p = copy.data();
  }
};

} // namespace

size_t rnnActivationsPerDirection(RnnMode mode) {
  switch (mode) {
  case RnnMode::Lstm: return 3;
  case RnnMode::Gru: return 2;
  case RnnMode::Rnn: return 1;
  }
  return 1;
}

Result<std::vector<RnnActivation>>
parseRnnActivations(RnnMode mode, size_t numDirections, std::string_view names,
                    const std::vector<double> &alphas,
                    const std::vector<double> &betas) {
  size_t perDir = rnnActivationsPerDirection(mode);
  std::vector<std::string> list;
  if (trim(names).empty()) {
    static const char *const lstm[] = {"sigmoid", "tanh", "tanh"};
    static const char *const gru[] = {"sigmoid", "tanh"};
    const char *const *defaults = mode == RnnMode::Lstm  ? lstm
                                  : mode == RnnMode::Gru ? gru
                                                         : lstm + 1;
    list.assign(defaults, defaults + perDir);
  } else {
    size_t start = 0;
    while (true) {
      size_t comma = names.find(',', start);
      list.push_back(lower(trim(names.substr(
          start, comma == std::string_view::npos ? comma : comma - start))));
      if (comma == std::string_view::npos)
        break;
      start = comma + 1;
    }
  }
  if (list.size() == perDir && numDirections == 2) {
    std::vector<std::string> twice = list;
    twice.insert(twice.end(), list.begin(), list.end());
    list = std::move(twice);
  }
  if (list.size() != perDir * numDirections)
    return Status::error(std::string(kOp) + ": " + std::to_string(list.size()) +
                         " activations given ('" + std::string(names) +
                         "'), expected " + std::to_string(perDir) + " per " +
                         "direction for " + std::to_string(numDirections) +
                         " direction(s)");
  std::vector<RnnActivation> result;
  size_t nextAlpha = 0, nextBeta = 0;
  auto take = [](const std::vector<double> &from, size_t &next, float deflt) {
    return next < from.size() ? static_cast<float>(from[next++]) : deflt;
  };
  for (const std::string &name : list) {
    RnnActivation a;
    if (name == "relu") {
      a.kind = RnnActivationKind::Relu;
    } else if (name == "tanh") {
      a.kind = RnnActivationKind::Tanh;
    } else if (name == "sigmoid") {
      a.kind = RnnActivationKind::Sigmoid;
    } else if (name == "affine") {
      a.kind = RnnActivationKind::Affine;
      a.alpha = take(alphas, nextAlpha, 1.0f);
      a.beta = take(betas, nextBeta, 0.0f);
    } else if (name == "leakyrelu") {
      a.kind = RnnActivationKind::LeakyRelu;
      a.alpha = take(alphas, nextAlpha, 0.01f);
    } else if (name == "thresholdedrelu") {
      a.kind = RnnActivationKind::ThresholdedRelu;
      a.alpha = take(alphas, nextAlpha, 1.0f);
    } else if (name == "scaledtanh") {
      a.kind = RnnActivationKind::ScaledTanh;
      a.alpha = take(alphas, nextAlpha, 1.0f);
      a.beta = take(betas, nextBeta, 1.0f);
    } else if (name == "hardsigmoid") {
      a.kind = RnnActivationKind::HardSigmoid;
      a.alpha = take(alphas, nextAlpha, 0.2f);
      a.beta = take(betas, nextBeta, 0.5f);
    } else if (name == "elu") {
      a.kind = RnnActivationKind::Elu;
      a.alpha = take(alphas, nextAlpha, 1.0f);
    } else if (name == "softsign") {
      a.kind = RnnActivationKind::Softsign;
    } else if (name == "softplus") {
      a.kind = RnnActivationKind::Softplus;
    } else {
      return Status::error(std::string(kOp) + ": unknown activation '" +
                           name + "'");
    }
    result.push_back(a);
  }
  return result;
}

namespace {

struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
};

Status checkShape(std::string_view name, const TensorView &v,
                  const Shape &expected) {
  if (v.shape != expected)
    return fail(kOp, std::string(name) + " has shape " + shapeStr(v.shape) +
                         ", expected " + shapeStr(expected));
  return Status::ok();
}

Status check(const TensorView &x, const TensorView &w, const TensorView &r,
             const TensorView *b, const TensorView *seqLens,
             const TensorView *initH, const TensorView *initC,
             const TensorView *p, const TensorView *y, const TensorView *yH,
             const TensorView *yC, const RnnOptions &o, Dims &d) {
  const std::pair<const char *, const TensorView *> views[] = {
      {"x", &x},         {"w", &w},         {"r", &r},   {"b", b},
      {"sequence_lens", seqLens},          {"initial_h", initH},
      {"initial_c", initC}, {"p", p},       {"y", y},    {"y_h", yH},
      {"y_c", yC}};
  for (auto [name, v] : views)
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;
  if (!isF32or16(x.dtype))
    return fail(kOp, "x has dtype " + std::string(dtypeName(x.dtype)) +
                         "; expected f32, f16 or bf16");
  for (auto [name, v] : views)
    if (v && v != seqLens && v->dtype != x.dtype)
      return fail(kOp, std::string(name) + " has dtype " +
                           std::string(dtypeName(v->dtype)) +
                           "; expected x's dtype " +
                           std::string(dtypeName(x.dtype)));
  if (o.mode != RnnMode::Lstm && (initC || p || yC))
    return fail(kOp, "initial_c, p and y_c are for LSTM only");
  if (Status s = rnnDims(kOp, x.shape, o.hiddenSize,
                         o.direction == RnnDirection::Bidirectional, d);
      !s)
    return s;
  d.gates = gateCount(o.mode);
  int64_t gh = d.gates * d.hidden;
  if (Status s = checkShape("w", w, {d.dirs, gh, d.input}); !s)
    return s;
  if (Status s = checkShape("r", r, {d.dirs, gh, d.hidden}); !s)
    return s;
  if (b)
    if (Status s = checkShape("b", *b, {d.dirs, 2 * gh}); !s)
      return s;
  if (seqLens) {
    if (seqLens->dtype != DType::I32 && seqLens->dtype != DType::I64)
      return fail(kOp, "sequence_lens has dtype " +
                           std::string(dtypeName(seqLens->dtype)) +
                           "; expected i32 or i64");
    if (Status s = checkShape("sequence_lens", *seqLens, {d.batch}); !s)
      return s;
  }
  Shape state{d.dirs, d.batch, d.hidden};
  if (initH)
    if (Status s = checkShape("initial_h", *initH, state); !s)
      return s;
  if (initC)
    if (Status s = checkShape("initial_c", *initC, state); !s)
      return s;
  if (p)
    if (Status s = checkShape("p", *p, {d.dirs, 3 * d.hidden}); !s)
      return s;
  if (y)
    if (Status s = checkShape("y", *y, {d.seq, d.dirs, d.batch, d.hidden}); !s)
      return s;
  if (yH)
    if (Status s = checkShape("y_h", *yH, state); !s)
      return s;
  if (yC)
    if (Status s = checkShape("y_c", *yC, state); !s)
      return s;
  size_t perDir = rnnActivationsPerDirection(o.mode);
  if (!o.activations.empty() &&
      o.activations.size() != perDir * static_cast<size_t>(d.dirs))
    return fail(kOp, std::to_string(o.activations.size()) +
                         " activations given, expected " +
                         std::to_string(perDir * d.dirs));
  if (o.clip && !(*o.clip > 0.0f))
    return fail(kOp, "clip must be > 0, got " + std::to_string(*o.clip));
  if (!fitsBlasInt({d.seq * d.batch, gh, d.input, d.hidden}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  for (const TensorView *out : {y, yH, yC})
    if (out)
      for (auto [name, in] : views)
        if (in && in != y && in != yH && in != yC &&
            overlaps(in->data, in->byteCount(), out->data, out->byteCount()))
          return fail(kOp, std::string(name) + " overlaps an output");
  return Status::ok();
}

} // namespace

Status checkRnn(const TensorView &x, const TensorView &w, const TensorView &r,
                const TensorView *b, const TensorView *sequenceLens,
                const TensorView *initialH, const TensorView *initialC,
                const TensorView *p, const TensorView *y, const TensorView *yH,
                const TensorView *yC, const RnnOptions &options) {
  Dims d;
  return check(x, w, r, b, sequenceLens, initialH, initialC, p, y, yH, yC,
               options, d);
}

Status rnn(const TensorView &x, const TensorView &w, const TensorView &r,
           const TensorView *b, const TensorView *seqLens,
           const TensorView *initH, const TensorView *initC,
           const TensorView *p, const TensorView *y, const TensorView *yH,
           const TensorView *yC, const RnnOptions &o) {
  Dims d;
  if (Status s = check(x, w, r, b, seqLens, initH, initC, p, y, yH, yC, o, d);
      !s)
    return s;
  std::vector<RnnActivation> acts = o.activations;
  if (acts.empty()) {
    Result<std::vector<RnnActivation>> defaults =
        parseRnnActivations(o.mode, static_cast<size_t>(d.dirs), "");
    acts = *defaults;
  }

  // Sequence lengths, checked.
  std::vector<int64_t> lens(static_cast<size_t>(d.batch), d.seq);
  if (seqLens)
    for (int64_t i = 0; i < d.batch; ++i) {
      int64_t len = seqLens->dtype == DType::I32
                        ? seqLens->as<const int32_t>()[i]
                        : seqLens->as<const int64_t>()[i];
      if (len < 0 || len > d.seq)
        return fail(kOp, "sequence_lens[" + std::to_string(i) + "] = " +
                             std::to_string(len) + " is outside [0, " +
                             std::to_string(d.seq) + "]");
      lens[i] = len;
    }

  const int64_t H = d.hidden, G = d.gates, GH = G * H, B = d.batch;
  const int64_t stateSize = B * H;
  const DType dt = x.dtype;
  const size_t elt = byteSize(dt);
  const bool gruResetAfter = o.mode == RnnMode::Gru && o.linearBeforeReset;

  F32Data xf(x), wf(w), rf(r);
  F32Data bf, hf, cf, pf;
  if (b)
    bf = F32Data(*b);
  if (initH)
    hf = F32Data(*initH);
  if (initC)
    cf = F32Data(*initC);
  if (p)
    pf = F32Data(*p);

  std::vector<float> xw(static_cast<size_t>(std::max<int64_t>(d.seq * B, 1) * GH));
  std::vector<float> hr(static_cast<size_t>(B * GH));
  std::vector<float> h(static_cast<size_t>(stateSize)),
      c(static_cast<size_t>(stateSize)), hNew(static_cast<size_t>(stateSize)),
      cNew(static_cast<size_t>(stateSize)), tmp(static_cast<size_t>(stateSize));
  std::vector<float> bias(static_cast<size_t>(GH)), rbH(static_cast<size_t>(H));
  std::vector<float> yRow(static_cast<size_t>(stateSize));

  auto storeState = [&](const float *src, const TensorView *dst, int64_t dir) {
    if (dst)
      fromF32(src, dt, static_cast<char *>(dst->data) + dir * stateSize * elt,
              stateSize);
  };

  for (int64_t dir = 0; dir < d.dirs; ++dir) {
    bool reverse = o.direction == RnnDirection::Reverse || dir == 1;
    const RnnActivation *act = acts.data() + dir * rnnActivationsPerDirection(o.mode);
    const float *wd = wf.p + dir * GH * d.input;
    const float *rd = rf.p + dir * GH * H;

    // The bias folded into the input projection: Wb + Rb, except GRU's
    // Rb_h with linear_before_reset, which the reset gate multiplies.
    std::fill(bias.begin(), bias.end(), 0.0f);
    std::fill(rbH.begin(), rbH.end(), 0.0f);
    if (b) {
      const float *wb = bf.p + dir * 2 * GH, *rb = wb + GH;
      for (int64_t i = 0; i < GH; ++i)
        bias[i] = wb[i] + rb[i];
      if (gruResetAfter) {
        std::copy(rb + 2 * H, rb + 3 * H, rbH.begin());
        for (int64_t i = 0; i < H; ++i)
          bias[2 * H + i] = wb[2 * H + i];
      }
    }
    // 1. Input projections of every step.
    if (d.seq * B > 0) {
      for (int64_t row = 0; row < d.seq * B; ++row)
        std::copy(bias.begin(), bias.end(), xw.begin() + row * GH);
      sgemm(false, true, d.seq * B, GH, d.input, 1.0f, xf.p, d.input, wd,
            d.input, 1.0f, xw.data(), GH);
    }

    // Initial state.
    if (initH)
      std::copy(hf.p + dir * stateSize, hf.p + (dir + 1) * stateSize, h.begin());
    else
      std::fill(h.begin(), h.end(), 0.0f);
    if (initC)
      std::copy(cf.p + dir * stateSize, cf.p + (dir + 1) * stateSize, c.begin());
    else
      std::fill(c.begin(), c.end(), 0.0f);
    const float *peep = p ? pf.p + dir * 3 * H : nullptr;

    for (int64_t step = 0; step < d.seq; ++step) {
      int64_t t = reverse ? d.seq - 1 - step : step;
      float *gx = xw.data() + t * B * GH; // [B, GH]

      // 2. Recurrent products.
      // GRU's candidate gate gets its recurrent term below (the reset gate
      // applies before or after the product).
      int64_t added = o.mode == RnnMode::Gru ? 2 * H : GH;
      sgemm(false, true, B, gruResetAfter ? GH : added, H, 1.0f, h.data(), H,
            rd, H, 0.0f, hr.data(), GH);
      for (int64_t bi = 0; bi < B; ++bi) {
        float *g = gx + bi * GH;
        const float *hrow = hr.data() + bi * GH;
        for (int64_t j = 0; j < added; ++j)
          g[j] += hrow[j];
      }

      // 3. Gates, row by row (one batch entry each).
      switch (o.mode) {
      case RnnMode::Rnn:
        for (int64_t bi = 0; bi < B; ++bi) {
          float *g = gx + bi * GH;
          if (o.clip)
            clipTo(*o.clip, g, H);
          applyActivation(act[0], g, H);
          std::copy(g, g + H, hNew.begin() + bi * H);
        }
        break;
      case RnnMode::Lstm:
        for (int64_t bi = 0; bi < B; ++bi) {
          float *g = gx + bi * GH;
          float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
          const float *cPrev = c.data() + bi * H;
          if (peep)
            for (int64_t j = 0; j < H; ++j) {
              gi[j] += peep[j] * cPrev[j];
              gf[j] += peep[2 * H + j] * cPrev[j];
            }
          if (o.clip) { // o is clipped below, after its peephole term
            clipTo(*o.clip, gi, H);
            clipTo(*o.clip, gf, 2 * H); // f and c
          }
          applyActivation(act[0], gi, H);
          if (o.inputForget)
            for (int64_t j = 0; j < H; ++j)
              gf[j] = 1.0f - gi[j];
          else
            applyActivation(act[0], gf, H);
          applyActivation(act[1], gc, H);
          float *cn = cNew.data() + bi * H;
          for (int64_t j = 0; j < H; ++j)
            cn[j] = gf[j] * cPrev[j] + gi[j] * gc[j];
          if (peep)
            for (int64_t j = 0; j < H; ++j)
              go[j] += peep[H + j] * cn[j];
          if (o.clip)
            clipTo(*o.clip, go, H);
          applyActivation(act[0], go, H);
          float *hn = hNew.data() + bi * H;
          std::copy(cn, cn + H, hn);
          applyActivation(act[2], hn, H);
          for (int64_t j = 0; j < H; ++j)
            hn[j] *= go[j];
        }
        break;
      case RnnMode::Gru: {
        // z and r first: the candidate needs r.
        for (int64_t bi = 0; bi < B; ++bi) {
          float *g = gx + bi * GH;
          if (o.clip)
            clipTo(*o.clip, g, 2 * H);
          applyActivation(act[0], g, 2 * H);
        }
        if (gruResetAfter) {
          // h~ = g(x W_h + Wb_h + r * (H R_h^T + Rb_h)).
          for (int64_t bi = 0; bi < B; ++bi) {
            float *g = gx + bi * GH;
            const float *hrh = hr.data() + bi * GH + 2 * H;
            for (int64_t j = 0; j < H; ++j)
              g[2 * H + j] += g[H + j] * (hrh[j] + rbH[j]);
          }
        } else {
          // h~ = g(x W_h + Wb_h + (r * H) R_h^T + Rb_h).
          for (int64_t bi = 0; bi < B; ++bi)
            for (int64_t j = 0; j < H; ++j)
              tmp[bi * H + j] = gx[bi * GH + H + j] * h[bi * H + j];
          float *hh = hr.data() + 2 * H;
          sgemm(false, true, B, H, H, 1.0f, tmp.data(), H, rd + 2 * H * H, H,
                0.0f, hh, GH);
          for (int64_t bi = 0; bi < B; ++bi)
            for (int64_t j = 0; j < H; ++j)
              gx[bi * GH + 2 * H + j] += hh[bi * GH + j];
        }
        for (int64_t bi = 0; bi < B; ++bi) {
          float *g = gx + bi * GH;
          float *cand = g + 2 * H;
          if (o.clip)
            clipTo(*o.clip, cand, H);
          applyActivation(act[1], cand, H);
          const float *z = g, *hPrev = h.data() + bi * H;
          float *hn = hNew.data() + bi * H;
          for (int64_t j = 0; j < H; ++j)
            hn[j] = (1.0f - z[j]) * cand[j] + z[j] * hPrev[j];
        }
        break;
      }
      }

      // 4. Entries past their sequence length keep their state and give 0.
      for (int64_t bi = 0; bi < B; ++bi) {
        float *yr = yRow.data() + bi * H;
        if (t < lens[bi]) {
          std::copy(hNew.begin() + bi * H, hNew.begin() + (bi + 1) * H,
                    h.begin() + bi * H);
          if (o.mode == RnnMode::Lstm)
            std::copy(cNew.begin() + bi * H, cNew.begin() + (bi + 1) * H,
                      c.begin() + bi * H);
          std::copy(h.begin() + bi * H, h.begin() + (bi + 1) * H, yr);
        } else {
          std::fill(yr, yr + H, 0.0f);
        }
      }
      if (y)
        fromF32(yRow.data(), dt,
                static_cast<char *>(y->data) +
                    (t * d.dirs + dir) * stateSize * elt,
                stateSize);
    }
    storeState(h.data(), yH, dir);
    storeState(c.data(), yC, dir);
  }
  return Status::ok();
}

} // namespace mp::rt::cpu
