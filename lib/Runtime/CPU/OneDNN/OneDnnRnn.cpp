//===- OneDnnRnn.cpp - cudnn.rnn on oneDNN's LSTM, GRU and RNN cells ------===//
//
// An ONNX LSTM, GRU or RNN of one direction (forward or reverse) as oneDNN's
// lstm_forward, gru_forward (linear_before_reset = 0), lbr_gru_forward
// (= 1) or vanilla_rnn_forward (inference): every step's input and
// recurrent GEMMs and the gates in one primitive, f32 or bf16 (f32
// accumulation; oneDNN keeps the hidden state between steps in bf16, as
// cuDNN keeps it in 16 bits, where the reference kernel keeps it in f32),
// f16 through f32 copies.
//
// oneDNN orders an LSTM's gates i, f, c, o where ONNX has i, o, f, c (a
// GRU's u, r, o are ONNX's z, r, h), and takes one bias per gate where ONNX
// has the input's and the recurrence's: Wb + Rb, except for a
// linear-before-reset GRU, whose candidate gate keeps Rb_h apart (oneDNN's
// fourth bias). So W, R and b are repacked once into oneDNN's order
// (shared by every executor of the plan, as reordered weights are:
// sharedConstant). What oneDNN's cells do not have stays on the reference
// kernel: bidirectional (ONNX's y interleaves the directions per step),
// sequence lengths, peepholes, clip, input_forget, activations other than
// ONNX's defaults (an RNN's: Tanh, Relu or Sigmoid), weights that change
// between runs, and no y result.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Half.h"

#include <cstring>
#include <tuple>

namespace mp::rt::cpu::onednn {

namespace {

/// A cell's gates: how many, and which of ONNX's is oneDNN's gate g.
struct Gates {
  int64_t count;
  const int64_t *onnx;
};
constexpr int64_t kLstmGates[4] = {0, 2, 3, 1}; // i, f, c, o from i, o, f, c
constexpr int64_t kGruGates[3] = {0, 1, 2};     // u, r, o are z, r, h
constexpr int64_t kRnnGates[1] = {0};

Gates gatesOf(RnnMode mode) {
  switch (mode) {
  case RnnMode::Lstm:
    return {4, kLstmGates};
  case RnnMode::Gru:
    return {3, kGruGates};
  default:
    return {1, kRnnGates};
  }
}

/// A weight's values as f32.
std::vector<float> floatsOf(const TensorView &t) {
  std::vector<float> out(static_cast<size_t>(t.numElements()));
  const auto *half = static_cast<const uint16_t *>(t.data);
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(out.data(), t.data, out.size() * sizeof(float));
    break;
  case DType::BF16:
    convertBF16ToF32(half, out.data(), out.size());
    break;
  default: // F16 (prepareRnn takes no other dtype)
    convertF16ToF32(half, out.data(), out.size());
    break;
  }
  return out;
}

/// Plain memory of `desc` holding `values` (f32, or rounded once to bf16).
dnnl::memory memoryOf(const dnnl::memory::desc &desc,
                      const std::vector<float> &values) {
  dnnl::memory m(desc, engine());
  if (desc.get_data_type() == dnnl::memory::data_type::bf16)
    convertF32ToBF16(values.data(),
                     static_cast<uint16_t *>(m.get_data_handle()),
                     values.size());
  else
    std::memcpy(m.get_data_handle(), values.data(),
                values.size() * sizeof(float));
  return m;
}

/// `m` in the layout `wanted` (a reorder when it differs).
dnnl::memory inLayout(dnnl::memory m, const dnnl::memory::desc &wanted) {
  if (m.get_desc() == wanted)
    return m;
  dnnl::memory out(wanted, engine());
  dnnl::stream stream(engine());
  dnnl::reorder(m, out).execute(stream, m, out);
  stream.wait();
  return out;
}

/// ONNX's W or R ([1, G*H, K]) as oneDNN's weights [1, 1, K, G, H] (ldigo)
/// in the layout `wanted`.
dnnl::memory gateWeights(const TensorView &w, int64_t hidden, Gates gates,
                         dnnl::memory::data_type type,
                         const dnnl::memory::desc &wanted) {
  const int64_t k = w.shape[2], count = gates.count;
  std::vector<float> onnx = floatsOf(w), packed(onnx.size());
  for (int64_t g = 0; g < count; ++g)
    for (int64_t h = 0; h < hidden; ++h)
      for (int64_t i = 0; i < k; ++i)
        packed[(i * count + g) * hidden + h] =
            onnx[(gates.onnx[g] * hidden + h) * k + i];
  return inLayout(memoryOf(plainDesc({1, 1, k, count, hidden}, type), packed),
                  wanted);
}

/// ONNX's b ([1, 2*G*H]: Wb, then Rb; none: zeros) as oneDNN's bias
/// [1, 1, G, H] f32: Wb + Rb per gate. A linear-before-reset GRU has a
/// fourth: its candidate gate takes Wb_h (gate 2) and Rb_h (gate 3) apart.
dnnl::memory gateBias(const TensorView *b, int64_t hidden, Gates gates,
                      bool linearBeforeReset,
                      const dnnl::memory::desc &wanted) {
  const int64_t count = gates.count,
                biases = count + int64_t(linearBeforeReset);
  std::vector<float> packed(biases * hidden, 0.0f);
  if (b) {
    std::vector<float> onnx = floatsOf(*b);
    for (int64_t g = 0; g < count; ++g)
      for (int64_t h = 0; h < hidden; ++h) {
        float wb = onnx[gates.onnx[g] * hidden + h],
              rb = onnx[(count + gates.onnx[g]) * hidden + h];
        if (linearBeforeReset && g == 2) {
          packed[2 * hidden + h] = wb;
          packed[3 * hidden + h] = rb;
        } else {
          packed[g * hidden + h] = wb + rb;
        }
      }
  }
  return inLayout(
      memoryOf(plainDesc({1, 1, biases, hidden}, dnnl::memory::data_type::f32),
               packed),
      wanted);
}

/// The inference primitive of a recurrent `Cell` (lstm_forward,
/// gru_forward, ...) for `pd`, and its descriptor.
template <typename Cell>
std::pair<dnnl::primitive, dnnl::primitive_desc>
cellOf(const typename Cell::primitive_desc &pd) {
  return {Cell(pd), pd};
}

/// Whether `given` are the activations `wanted` (none given: ONNX's
/// defaults, which `wanted` are).
bool activationsAre(const std::vector<RnnActivation> &given,
                    std::initializer_list<RnnActivationKind> wanted) {
  if (given.empty())
    return true;
  if (given.size() != wanted.size())
    return false;
  size_t i = 0;
  for (RnnActivationKind kind : wanted)
    if (given[i++].kind != kind)
      return false;
  return true;
}

/// The activation of oneDNN's vanilla RNN cell for an ONNX RNN's, if any.
std::optional<dnnl::algorithm> rnnActivation(const RnnOptions &o) {
  using K = RnnActivationKind;
  if (o.activations.empty())
    return dnnl::algorithm::eltwise_tanh;
  if (o.activations.size() != 1)
    return std::nullopt;
  switch (o.activations[0].kind) {
  case K::Tanh:
    return dnnl::algorithm::eltwise_tanh;
  case K::Relu:
    return dnnl::algorithm::eltwise_relu;
  case K::Sigmoid:
    return dnnl::algorithm::eltwise_logistic;
  default:
    return std::nullopt;
  }
}

/// Why oneDNN's cells cannot run these options (empty: they can).
std::string unsupportedOptions(const RnnOptions &o) {
  using K = RnnActivationKind;
  if (o.direction == RnnDirection::Bidirectional)
    return "bidirectional (ONNX's y interleaves the directions per step)";
  if (o.clip)
    return "clip";
  if (o.inputForget)
    return "input_forget";
  switch (o.mode) {
  case RnnMode::Lstm:
    if (!activationsAre(o.activations, {K::Sigmoid, K::Tanh, K::Tanh}))
      return "activations other than Sigmoid, Tanh, Tanh";
    break;
  case RnnMode::Gru:
    if (!activationsAre(o.activations, {K::Sigmoid, K::Tanh}))
      return "activations other than Sigmoid, Tanh";
    break;
  default:
    if (!rnnActivation(o))
      return "an activation other than Tanh, Relu or Sigmoid";
    break;
  }
  return "";
}

} // namespace

FastCallChoice prepareRnn(const PlanCall &call,
                          const std::vector<TensorView> &operands,
                          const std::vector<TensorView> &results,
                          const std::vector<bool> &constant,
                          const FilterSource *) {
  std::array<const TensorView *, 8> in;
  std::array<const TensorView *, 3> out;
  Result<RnnOptions> options = rnnOptionsOf(call);
  if (!options || !bindCallBuffers(call, operands, kRnnOperands, in, results,
                                   kRnnResults, out))
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = *in[0], &w = *in[1], &r = *in[2];
  const TensorView *b = in[3], *h0 = in[5], *c0 = in[6];
  const TensorView *y = out[0], *yH = out[1], *yC = out[2];
  if (!checkRnn(x, w, r, b, in[4], h0, c0, in[7], y, yH, yC, *options))
    return referenceKernel("the reference kernel reports the call's error");
  std::string why = unsupportedOptions(*options);
  if (!why.empty())
    return referenceKernel(why);
  if (in[4])
    return referenceKernel("sequence lengths");
  if (in[7])
    return referenceKernel("peepholes");
  if (!y)
    return referenceKernel("no y result");
  const RnnMode mode = options->mode;
  const Gates gates = gatesOf(mode);
  const bool lbr = mode == RnnMode::Gru && options->linearBeforeReset;
  auto isConstant = [&](const TensorView *v) {
    size_t k = static_cast<size_t>(v - operands.data());
    return k < constant.size() && constant[k];
  };
  if (!isConstant(&w) || !isConstant(&r) || (b && !isConstant(b)))
    return referenceKernel("weights that change between runs");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));
  const int64_t steps = x.shape[0], batch = x.shape[1], input = x.shape[2];
  const int64_t hidden = options->hiddenSize;
  if (x.numElements() == 0 || hidden == 0)
    return referenceKernel("no elements");
  return catchingErrors([&]() -> FastCallChoice {
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc layer = plainDesc({steps, batch, input}, *type);
    dnnl::memory::desc state = plainDesc({1, 1, batch, hidden}, *type);
    dnnl::memory::desc output = plainDesc({steps, batch, hidden}, *type);
    dnnl::memory::desc none;
    dnnl::memory::desc weightsLayer({1, 1, input, gates.count, hidden}, *type,
                                    tag::any);
    dnnl::memory::desc weightsIter({1, 1, hidden, gates.count, hidden}, *type,
                                   tag::any);
    dnnl::memory::desc bias =
        plainDesc({1, 1, gates.count + int64_t(lbr), hidden},
                  dnnl::memory::data_type::f32);
    dnnl::primitive_attr attr = userScratchpad();
    const auto direction = options->direction == RnnDirection::Reverse
                               ? dnnl::rnn_direction::unidirectional_right2left
                               : dnnl::rnn_direction::unidirectional_left2right;
    // oneDNN's bf16 cells want the final states wherever the initial ones
    // are given: those no result asks for go into memory of the call's.
    const bool hOut = yH || h0, cOut = yC || c0;
    const auto kind = dnnl::prop_kind::forward_inference;
    const dnnl::memory::desc &hIn = h0 ? state : none,
                             &hLast = hOut ? state : none;
    // The primitive (one of four classes) and its descriptors.
    dnnl::primitive primitive;
    dnnl::primitive_desc pd;
    std::string gateKind;
    switch (mode) {
    case RnnMode::Lstm:
      std::tie(primitive, pd) =
          cellOf<dnnl::lstm_forward>(dnnl::lstm_forward::primitive_desc(
              engine(), kind, direction, layer, hIn, c0 ? state : none,
              weightsLayer, weightsIter, bias, output, hLast,
              cOut ? state : none, attr));
      gateKind = "lstm";
      break;
    case RnnMode::Gru:
      if (lbr)
        std::tie(primitive, pd) =
            cellOf<dnnl::lbr_gru_forward>(dnnl::lbr_gru_forward::primitive_desc(
                engine(), kind, direction, layer, hIn, weightsLayer,
                weightsIter, bias, output, hLast, attr));
      else
        std::tie(primitive, pd) =
            cellOf<dnnl::gru_forward>(dnnl::gru_forward::primitive_desc(
                engine(), kind, direction, layer, hIn, weightsLayer,
                weightsIter, bias, output, hLast, attr));
      gateKind = lbr ? "lbr-gru" : "gru";
      break;
    default:
      std::tie(primitive, pd) = cellOf<dnnl::vanilla_rnn_forward>(
          dnnl::vanilla_rnn_forward::primitive_desc(
              engine(), kind, *rnnActivation(*options), direction, layer, hIn,
              weightsLayer, weightsIter, bias, output, hLast, attr));
      gateKind = "rnn";
      break;
    }
    auto wantedOf = [&](int arg) {
      return pd.query_md(dnnl::query::exec_arg_md, arg);
    };
    const dnnl::memory::desc wantedLayer = wantedOf(DNNL_ARG_WEIGHTS_LAYER),
                             wantedIter = wantedOf(DNNL_ARG_WEIGHTS_ITER);
    std::vector<Binding> buffers = {
        {DNNL_ARG_SRC_LAYER, layer, x},
        {DNNL_ARG_WEIGHTS_LAYER,
         sharedConstant(w.data, gateKind + "-gates", wantedLayer,
                        [&] {
                          return gateWeights(w, hidden, gates, *type,
                                             wantedLayer);
                        })},
        {DNNL_ARG_WEIGHTS_ITER,
         sharedConstant(r.data, gateKind + "-gates", wantedIter, [&] {
           return gateWeights(r, hidden, gates, *type, wantedIter);
         })}};
    // Without b, zeros (made once per W, whose bytes then key them).
    const dnnl::memory::desc wantedBias = wantedOf(DNNL_ARG_BIAS);
    buffers.push_back(
        {DNNL_ARG_BIAS, sharedConstant(b ? b->data : w.data,
                                       gateKind + (b ? "-bias" : "-zero-bias"),
                                       wantedBias, [&] {
                                         return gateBias(b, hidden, gates, lbr,
                                                         wantedBias);
                                       })});
    if (h0)
      buffers.push_back({DNNL_ARG_SRC_ITER, state, *h0});
    if (c0)
      buffers.push_back({DNNL_ARG_SRC_ITER_C, state, *c0});
    auto result = [&](int arg, const dnnl::memory::desc &desc,
                      const TensorView &v) {
      Binding binding(arg, desc, v);
      binding.output = true;
      buffers.push_back(binding);
    };
    auto unused = [&](int arg) {
      buffers.push_back(
          {arg, std::make_shared<const dnnl::memory>(state, engine())});
    };
    result(DNNL_ARG_DST_LAYER, output, *y);
    if (yH)
      result(DNNL_ARG_DST_ITER, state, *yH);
    else if (hOut)
      unused(DNNL_ARG_DST_ITER);
    if (yC)
      result(DNNL_ARG_DST_ITER_C, state, *yC);
    else if (cOut)
      unused(DNNL_ARG_DST_ITER_C);
    // oneDNN has brgemm kernels for LSTMs on avx512_core; its other
    // cells (and LSTMs below avx512_core) are "ref" code that still runs
    // jit GEMMs and gates, several times faster than the project's kernel.
    return PrimitiveCall::prepare(pd, primitive, buffers,
                                  "jit GEMMs and cells");
  });
}

} // namespace mp::rt::cpu::onednn
