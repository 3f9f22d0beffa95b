//===- RecurrentBackward.cpp - ONNX LSTM backward on the CPU --------------===//
//
// Backpropagation through time for ONNX LSTM (layout 0, default
// activations), per direction, in T (f32, or f64 for f64 data):
//   1. the forward again, as Recurrent.cpp computes it: xw = x @ W^T + Wb +
//      Rb for every step in one GEMM, then per step a = xw[t] + h @ R^T and
//      the gates i, o, f, c; the activated gates, the cell state after each
//      step and the state before it are kept;
//   2. backward over the steps in reverse order of processing, with dh / dc
//      the gradients flowing into the state (starting from dy_h / dy_c):
//        dh += dy[t];  dc += dh * o * (1 - tanh(c)^2)
//        da_i = dc * g * i (1 - i)      da_o = dh * tanh(c) * o (1 - o)
//        da_f = dc * c_prev * f (1 - f) da_c = dc * i * (1 - g^2)
//        dh = da @ R;  dc = dc * f
//   3. dW = da^T @ x, dR = da^T @ h_prev over all steps (one GEMM each),
//      dWb = dRb = the column sums of da, dx += da @ W.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "lstm_bwd";

std::string dt(DType t) { return std::string(dtypeName(t)); }

struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
};

using Named = std::pair<const char *, const TensorView *>;

Status checkShape(std::string_view name, const TensorView &v,
                  const Shape &expected) {
  if (v.shape != expected)
    return fail(kOp, std::string(name) + " has shape " + shapeStr(v.shape) +
                         ", expected " + shapeStr(expected));
  return Status::ok();
}

Status check(const std::vector<Named> &inputs,
             const std::vector<Named> &outputs, const TensorView &x,
             const LstmBackwardOptions &o, Dims &d) {
  for (const std::vector<Named> *list : {&inputs, &outputs})
    for (auto [name, v] : *list)
      if (v)
        if (Status s = checkView(kOp, name, *v); !s)
          return s;
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f16, bf16 or f64");
  for (const std::vector<Named> *list : {&inputs, &outputs})
    for (auto [name, v] : *list)
      if (v && v->dtype != x.dtype)
        return fail(kOp, std::string(name) + " has dtype " + dt(v->dtype) +
                             "; expected x's dtype " + dt(x.dtype));
  if (Status s = rnnDims(kOp, x.shape, o.hiddenSize,
                         o.direction == RnnDirection::Bidirectional, d);
      !s)
    return s;
  const int64_t gh = 4 * d.hidden;
  const Shape wShape{d.dirs, gh, d.input}, rShape{d.dirs, gh, d.hidden},
      bShape{d.dirs, 2 * gh}, state{d.dirs, d.batch, d.hidden},
      yShape{d.seq, d.dirs, d.batch, d.hidden};
  // Every view but x by name: inputs and outputs in the call's order.
  const Shape *expected[] = {&wShape, &rShape, &bShape, &state,   &state,
                             &yShape, &state,  &state,  &x.shape, &wShape,
                             &rShape, &bShape, &state,  &state};
  size_t next = 0;
  for (const std::vector<Named> *list : {&inputs, &outputs})
    for (size_t i = list == &inputs ? 1 : 0; i < list->size(); ++i, ++next)
      if (const TensorView *v = (*list)[i].second)
        if (Status s = checkShape((*list)[i].first, *v, *expected[next]); !s)
          return s;
  if (!fitsBlasInt({d.seq * d.batch, gh, d.input, d.hidden}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorView *out = outputs[i].second;
    if (!out)
      continue;
    for (auto [name, in] : inputs)
      if (in &&
          overlaps(in->data, in->byteCount(), out->data, out->byteCount()))
        return fail(kOp, std::string(outputs[i].first) + " overlaps " + name);
    for (size_t j = i + 1; j < outputs.size(); ++j)
      if (const TensorView *other = outputs[j].second)
        if (overlaps(other->data, other->byteCount(), out->data,
                     out->byteCount()))
          return fail(kOp, std::string(outputs[i].first) + " overlaps " +
                               outputs[j].first);
  }
  return Status::ok();
}

/// The elements of v (f32, f16, bf16 for float T; f64 for double T) in T;
/// zeros of `n` elements for a null v.
template <typename T> std::vector<T> widen(const TensorView *v, int64_t n) {
  return v ? widenTo<T>(*v) : std::vector<T>(static_cast<size_t>(n), T(0));
}

/// Rounds T values once into v (when given).
template <typename T>
void narrow(const std::vector<T> &src, const TensorView *v) {
  if (v)
    narrowInto(src, *v);
}

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const T *a,
          int64_t lda, const T *b, int64_t ldb, T beta, T *c, int64_t ldc) {
  if constexpr (std::is_same_v<T, double>)
    dgemm(transA, transB, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
  else
    sgemm(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

template <typename T> T sigmoid(T v) { return T(1) / (T(1) + std::exp(-v)); }

template <typename T>
void run(const Dims &d, const LstmBackwardOptions &o, const TensorView &x,
         const TensorView &w, const TensorView &r, const TensorView *b,
         const TensorView *initH, const TensorView *initC, const TensorView *dy,
         const TensorView *dyH, const TensorView *dyC, const TensorView &dx,
         const TensorView &dw, const TensorView &dr, const TensorView *db,
         const TensorView *dinitH, const TensorView *dinitC) {
  const int64_t S = d.seq, B = d.batch, I = d.input, H = d.hidden, GH = 4 * H,
                SB = S * B, BH = B * H;
  const std::vector<T> xv = widen<T>(&x, 0), wv = widen<T>(&w, 0),
                       rv = widen<T>(&r, 0), bv = widen<T>(b, d.dirs * 2 * GH),
                       h0 = widen<T>(initH, d.dirs * BH),
                       c0 = widen<T>(initC, d.dirs * BH),
                       dyv = widen<T>(dy, S * d.dirs * BH),
                       dyHv = widen<T>(dyH, d.dirs * BH),
                       dyCv = widen<T>(dyC, d.dirs * BH);
  std::vector<T> dxv(static_cast<size_t>(SB * I), T(0)),
      dwv(static_cast<size_t>(d.dirs * GH * I)),
      drv(static_cast<size_t>(d.dirs * GH * H)),
      dbv(static_cast<size_t>(d.dirs * 2 * GH)),
      dh0(static_cast<size_t>(d.dirs * BH)),
      dc0(static_cast<size_t>(d.dirs * BH));
  // Per time position t: the activated gates [B, 4H] (in gates, then their
  // pre-activation gradients), the state before the step and the cell
  // state after it.
  std::vector<T> gates(static_cast<size_t>(SB * GH)),
      hPrev(static_cast<size_t>(SB * H)), cPrev(static_cast<size_t>(SB * H)),
      cAfter(static_cast<size_t>(SB * H));
  std::vector<T> h(static_cast<size_t>(BH)), c(static_cast<size_t>(BH)),
      dh(static_cast<size_t>(BH)), dc(static_cast<size_t>(BH));

  for (int64_t dir = 0; dir < d.dirs; ++dir) {
    const bool reverse = o.direction == RnnDirection::Reverse || dir == 1;
    const T *wd = wv.data() + dir * GH * I, *rd = rv.data() + dir * GH * H;
    const T *wb = bv.data() + dir * 2 * GH, *rb = wb + GH;
    auto timeOf = [&](int64_t step) { return reverse ? S - 1 - step : step; };

    // 1. The forward.
    for (int64_t row = 0; row < SB; ++row)
      for (int64_t j = 0; j < GH; ++j)
        gates[row * GH + j] = wb[j] + rb[j];
    if (SB > 0)
      gemm<T>(false, true, SB, GH, I, xv.data(), I, wd, I, T(1), gates.data(),
              GH);
    std::copy(h0.begin() + dir * BH, h0.begin() + (dir + 1) * BH, h.begin());
    std::copy(c0.begin() + dir * BH, c0.begin() + (dir + 1) * BH, c.begin());
    for (int64_t step = 0; step < S; ++step) {
      const int64_t t = timeOf(step);
      T *g = gates.data() + t * B * GH;
      std::copy(h.begin(), h.end(), hPrev.begin() + t * BH);
      std::copy(c.begin(), c.end(), cPrev.begin() + t * BH);
      gemm<T>(false, true, B, GH, H, h.data(), H, rd, H, T(1), g, GH);
      for (int64_t bi = 0; bi < B; ++bi) {
        T *gi = g + bi * GH, *go = gi + H, *gf = gi + 2 * H, *gc = gi + 3 * H;
        T *cr = c.data() + bi * H, *hr = h.data() + bi * H;
        for (int64_t j = 0; j < H; ++j) {
          gi[j] = sigmoid(gi[j]);
          go[j] = sigmoid(go[j]);
          gf[j] = sigmoid(gf[j]);
          gc[j] = std::tanh(gc[j]);
          cr[j] = gf[j] * cr[j] + gi[j] * gc[j];
          hr[j] = go[j] * std::tanh(cr[j]);
        }
      }
      std::copy(c.begin(), c.end(), cAfter.begin() + t * BH);
    }

    // 2. Backward through the steps.
    std::copy(dyHv.begin() + dir * BH, dyHv.begin() + (dir + 1) * BH,
              dh.begin());
    std::copy(dyCv.begin() + dir * BH, dyCv.begin() + (dir + 1) * BH,
              dc.begin());
    for (int64_t step = S - 1; step >= 0; --step) {
      const int64_t t = timeOf(step);
      T *g = gates.data() + t * B * GH;
      const T *dyt = dyv.data() + (t * d.dirs + dir) * BH;
      for (int64_t bi = 0; bi < B; ++bi) {
        T *gi = g + bi * GH, *go = gi + H, *gf = gi + 2 * H, *gc = gi + 3 * H;
        const T *cp = cPrev.data() + t * BH + bi * H,
                *ca = cAfter.data() + t * BH + bi * H;
        T *dhr = dh.data() + bi * H, *dcr = dc.data() + bi * H;
        for (int64_t j = 0; j < H; ++j) {
          T dhj = dhr[j] + dyt[bi * H + j];
          T tc = std::tanh(ca[j]);
          T i = gi[j], og = go[j], f = gf[j], cc = gc[j];
          T dcj = dcr[j] + dhj * og * (T(1) - tc * tc);
          gi[j] = dcj * cc * i * (T(1) - i);
          go[j] = dhj * tc * og * (T(1) - og);
          gf[j] = dcj * cp[j] * f * (T(1) - f);
          gc[j] = dcj * i * (T(1) - cc * cc);
          dcr[j] = dcj * f;
        }
      }
      // dh for the previous step: da @ R.
      gemm<T>(false, false, B, H, GH, g, GH, rd, H, T(0), dh.data(), H);
    }
    std::copy(dh.begin(), dh.end(), dh0.begin() + dir * BH);
    std::copy(dc.begin(), dc.end(), dc0.begin() + dir * BH);

    // 3. The parameter and input gradients over all steps.
    T *dwd = dwv.data() + dir * GH * I, *drd = drv.data() + dir * GH * H;
    std::fill(dwd, dwd + GH * I, T(0));
    std::fill(drd, drd + GH * H, T(0));
    T *dbd = dbv.data() + dir * 2 * GH;
    std::fill(dbd, dbd + 2 * GH, T(0));
    if (SB > 0) {
      gemm<T>(true, false, GH, I, SB, gates.data(), GH, xv.data(), I, T(0), dwd,
              I);
      gemm<T>(true, false, GH, H, SB, gates.data(), GH, hPrev.data(), H, T(0),
              drd, H);
      gemm<T>(false, false, SB, I, GH, gates.data(), GH, wd, I, T(1),
              dxv.data(), I);
      for (int64_t row = 0; row < SB; ++row)
        for (int64_t j = 0; j < GH; ++j)
          dbd[j] += gates[row * GH + j];
      std::copy(dbd, dbd + GH, dbd + GH);
    }
  }
  narrow(dxv, &dx);
  narrow(dwv, &dw);
  narrow(drv, &dr);
  narrow(dbv, db);
  narrow(dh0, dinitH);
  narrow(dc0, dinitC);
}

} // namespace

Status checkLstmBackward(const TensorView &x, const TensorView &w,
                         const TensorView &r, const TensorView *b,
                         const TensorView *initialH, const TensorView *initialC,
                         const TensorView *dy, const TensorView *dyH,
                         const TensorView *dyC, const TensorView &dx,
                         const TensorView &dw, const TensorView &dr,
                         const TensorView *db, const TensorView *dinitialH,
                         const TensorView *dinitialC,
                         const LstmBackwardOptions &options) {
  const std::vector<Named> inputs{{"x", &x},
                                  {"w", &w},
                                  {"r", &r},
                                  {"b", b},
                                  {"initial_h", initialH},
                                  {"initial_c", initialC},
                                  {"dy", dy},
                                  {"dy_h", dyH},
                                  {"dy_c", dyC}};
  const std::vector<Named> outputs{{"dx", &dx},
                                   {"dw", &dw},
                                   {"dr", &dr},
                                   {"db", db},
                                   {"dinitial_h", dinitialH},
                                   {"dinitial_c", dinitialC}};
  Dims d;
  return check(inputs, outputs, x, options, d);
}

Status lstmBackward(const TensorView &x, const TensorView &w,
                    const TensorView &r, const TensorView *b,
                    const TensorView *initialH, const TensorView *initialC,
                    const TensorView *dy, const TensorView *dyH,
                    const TensorView *dyC, const TensorView &dx,
                    const TensorView &dw, const TensorView &dr,
                    const TensorView *db, const TensorView *dinitialH,
                    const TensorView *dinitialC,
                    const LstmBackwardOptions &options) {
  if (Status s =
          checkLstmBackward(x, w, r, b, initialH, initialC, dy, dyH, dyC, dx,
                            dw, dr, db, dinitialH, dinitialC, options);
      !s)
    return s;
  Dims d;
  d.seq = x.shape[0];
  d.batch = x.shape[1];
  d.input = x.shape[2];
  d.hidden = options.hiddenSize;
  d.dirs = options.direction == RnnDirection::Bidirectional ? 2 : 1;
  if (x.dtype == DType::F64)
    run<double>(d, options, x, w, r, b, initialH, initialC, dy, dyH, dyC, dx,
                dw, dr, db, dinitialH, dinitialC);
  else
    run<float>(d, options, x, w, r, b, initialH, initialC, dy, dyH, dyC, dx, dw,
               dr, db, dinitialH, dinitialC);
  return Status::ok();
}

} // namespace mp::rt::cpu
