//===- OneDnnRnn.cpp - cudnn.rnn's LSTM on oneDNN's lstm_forward ----------===//
//
// An ONNX LSTM of one direction (forward or reverse) as oneDNN's vanilla
// lstm_forward (inference): every step's input and recurrent GEMMs and the
// gates in one primitive, f32 or bf16 (f32 accumulation; oneDNN keeps the
// hidden state between steps in bf16, as cuDNN keeps it in 16 bits, where
// the reference kernel keeps it in f32), f16 through f32 copies.
//
// oneDNN orders the gates i, f, c, o and ONNX i, o, f, c, and takes one bias
// (ONNX has the input's and the recurrence's), so W, R and b are repacked
// once into oneDNN's order (shared by every executor of the plan, as
// reordered weights are: sharedConstant). What oneDNN's vanilla LSTM does
// not have stays on the reference kernel: GRU and plain RNN cells,
// bidirectional (ONNX's y interleaves the directions per step), sequence
// lengths, peepholes, clip, input_forget, other activations, weights that
// change between runs, and no y result.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"
#include "mp/Runtime/Half.h"

#include <cstring>

namespace mp::rt::cpu::onednn {

namespace {

/// oneDNN's gate g is ONNX's gate kOnnxGate[g] (i, f, c, o from i, o, f, c).
constexpr int64_t kOnnxGate[4] = {0, 2, 3, 1};

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
  if (desc.data_type() == dnnl::memory::data_type::bf16)
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

/// ONNX's W or R ([1, 4H, K]) as oneDNN's weights [1, 1, K, 4, H] (ldigo)
/// in the layout `wanted`.
dnnl::memory gateWeights(const TensorView &w, int64_t hidden,
                         dnnl::memory::data_type type,
                         const dnnl::memory::desc &wanted) {
  const int64_t k = w.shape[2];
  std::vector<float> onnx = floatsOf(w), packed(onnx.size());
  for (int64_t g = 0; g < 4; ++g)
    for (int64_t h = 0; h < hidden; ++h)
      for (int64_t i = 0; i < k; ++i)
        packed[(i * 4 + g) * hidden + h] =
            onnx[(kOnnxGate[g] * hidden + h) * k + i];
  return inLayout(memoryOf(plainDesc({1, 1, k, 4, hidden}, type), packed),
                  wanted);
}

/// ONNX's b ([1, 8H]: Wb, then Rb; none: zeros) as oneDNN's one bias
/// [1, 1, 4, H] f32.
dnnl::memory gateBias(const TensorView *b, int64_t hidden,
                      const dnnl::memory::desc &wanted) {
  std::vector<float> packed(4 * hidden, 0.0f);
  if (b) {
    std::vector<float> onnx = floatsOf(*b);
    for (int64_t g = 0; g < 4; ++g)
      for (int64_t h = 0; h < hidden; ++h)
        packed[g * hidden + h] = onnx[kOnnxGate[g] * hidden + h] +
                                 onnx[(4 + kOnnxGate[g]) * hidden + h];
  }
  return inLayout(
      memoryOf(plainDesc({1, 1, 4, hidden}, dnnl::memory::data_type::f32),
               packed),
      wanted);
}

/// Why oneDNN's vanilla LSTM cannot run these options (empty: it can).
std::string unsupportedOptions(const RnnOptions &o) {
  if (o.mode != RnnMode::Lstm)
    return o.mode == RnnMode::Gru ? "a GRU (oneDNN's LSTM only here)"
                                  : "a plain RNN (oneDNN's LSTM only here)";
  if (o.direction == RnnDirection::Bidirectional)
    return "bidirectional (ONNX's y interleaves the directions per step)";
  if (o.clip)
    return "clip";
  if (o.inputForget)
    return "input_forget";
  const RnnActivationKind standard[3] = {RnnActivationKind::Sigmoid,
                                         RnnActivationKind::Tanh,
                                         RnnActivationKind::Tanh};
  if (!o.activations.empty()) {
    if (o.activations.size() != 3)
      return "activations other than Sigmoid, Tanh, Tanh";
    for (size_t i = 0; i < 3; ++i)
      if (o.activations[i].kind != standard[i])
        return "activations other than Sigmoid, Tanh, Tanh";
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
    dnnl::memory::desc weightsLayer({1, 1, input, 4, hidden}, *type, tag::any);
    dnnl::memory::desc weightsIter({1, 1, hidden, 4, hidden}, *type, tag::any);
    dnnl::memory::desc bias =
        plainDesc({1, 1, 4, hidden}, dnnl::memory::data_type::f32);
    dnnl::primitive_attr attr = userScratchpad();
    const auto direction = options->direction == RnnDirection::Reverse
                               ? dnnl::rnn_direction::unidirectional_right2left
                               : dnnl::rnn_direction::unidirectional_left2right;
    // oneDNN's bf16 LSTM wants the final states wherever the initial ones
    // are given: those no result asks for go into memory of the call's.
    const bool hOut = yH || h0, cOut = yC || c0;
    dnnl::lstm_forward::primitive_desc pd(
        dnnl::lstm_forward::desc(dnnl::prop_kind::forward_inference, direction,
                                 layer, h0 ? state : none, c0 ? state : none,
                                 weightsLayer, weightsIter, bias, output,
                                 hOut ? state : none, cOut ? state : none),
        attr, engine());
    const dnnl::memory::desc wantedLayer = pd.weights_layer_desc(),
                             wantedIter = pd.weights_iter_desc();
    std::vector<Binding> buffers = {
        {DNNL_ARG_SRC_LAYER, layer, x},
        {DNNL_ARG_WEIGHTS_LAYER,
         sharedConstant(
             w.data, "lstm-gates", wantedLayer,
             [&] { return gateWeights(w, hidden, *type, wantedLayer); })},
        {DNNL_ARG_WEIGHTS_ITER,
         sharedConstant(r.data, "lstm-gates", wantedIter, [&] {
           return gateWeights(r, hidden, *type, wantedIter);
         })}};
    // Without b, zeros (made once per W, whose bytes then key them).
    const dnnl::memory::desc wantedBias = pd.bias_desc();
    buffers.push_back(
        {DNNL_ARG_BIAS,
         sharedConstant(b ? b->data : w.data,
                        b ? "lstm-bias" : "lstm-zero-bias", wantedBias,
                        [&] { return gateBias(b, hidden, wantedBias); })});
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
    return PrimitiveCall::prepare(pd, dnnl::lstm_forward(pd), buffers);
  });
}

} // namespace mp::rt::cpu::onednn
