//===- OneDnnConvBackward.cpp - the convolution gradients on oneDNN -------===//
//
// cudnn.conv_bwd_data (dy, w -> dx, as ONNX ConvTranspose without a bias)
// and cudnn.conv_bwd_filter (x, dy -> dw) as oneDNN's
// convolution_backward_data / _weights, for 1-3 spatial dims, grouped and
// depthwise, channels first or last; f32, bf16 (f32 accumulation, one
// rounding) and f16 (through f32 copies). The primitive picks the layouts
// of every operand (a channels-first call) or of the filter (channels
// last); the call reorders into and out of them through the workspace.
// Given the channels-first buffer behind a channels-last filter (a training
// step's master weight or f32 gradient: FilterSource), the filter's reorder
// reads or writes that instead.
// Shapes that do not describe a convolution (oneDNN refuses them) and a
// transposed convolution with a bias stay on the reference kernel, which
// reports a bad call's error.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

namespace {

using desc = dnnl::memory::desc;

/// What both gradients share: the forward convolution's input (x or dx),
/// filter (w or dw) and output (dy), their descriptors as the buffers hold
/// them and as the primitive is asked for them, and the window.
struct Gradient {
  ConvOptions options;
  ConvWindow window;
  desc inUser, filterUser, outUser;       ///< the buffers' layouts
  desc inWanted, filterWanted, outWanted; ///< what the primitive may pick
};

/// Where the CPU's bf16 products are slower than its f32 ones (Intel's
/// AVX512-BF16 CPUs without AMX: fastDotProducts), bf16 gradients are
/// computed on f32 copies, as the forward convolutions are
/// (OneDnnConv.cpp); f16 ones go through copies wherever oneDNN has no f16
/// gradient kernel (prepareFastCall's second try).
bool widenGradients(DType t) {
  return t == DType::BF16 && narrowIsNative(t) && !fastDotProducts(t);
}

/// The gradient of the convolution in -> out with `filter`, or the reason
/// the reference kernel runs it.
std::variant<Gradient, std::string> gradientOf(const PlanCall &call,
                                               const TensorView &in,
                                               const TensorView &filter,
                                               const TensorView &out) {
  const std::string byReference =
      "the reference kernel reports the call's error";
  if (in.shape.size() < 3 || in.shape.size() > 5)
    return std::to_string(in.shape.size()) + "-d operands";
  if (filter.shape.size() != in.shape.size() ||
      out.shape.size() != in.shape.size())
    return byReference;
  for (const TensorView *t : {&in, &filter, &out})
    if (!computeTypeOf(t->dtype))
      return "dtype " + std::string(dtypeName(t->dtype));
  if (in.dtype != out.dtype)
    return std::string("mixed dtypes");
  size_t spatial = in.shape.size() - 2;
  Result<ConvOptions> options = convBackwardOptionsOf(call, spatial);
  if (!options || !checkComputeType(call, out.dtype, /*required=*/false))
    return byReference;
  Gradient g;
  g.options = *options;
  g.window = convWindowOf(g.options, spatial);
  const Layout layout = g.options.layout;
  g.inUser = activationDesc(in, layout, *computeTypeOf(in.dtype));
  g.outUser = activationDesc(out, layout, *computeTypeOf(out.dtype));
  g.filterUser = filterDesc(filter, layout, g.options.groups,
                            *computeTypeOf(filter.dtype));
  // Channels last, the activations stay as they are; channels first,
  // oneDNN's blocked layouts (the call reorders). The filter always goes
  // into the primitive's layout.
  g.inWanted = layout == Layout::NHWC ? g.inUser : anyLayout(g.inUser);
  g.outWanted = layout == Layout::NHWC ? g.outUser : anyLayout(g.outUser);
  g.filterWanted = anyLayout(g.filterUser);
  return g;
}

/// The forward convolution the gradient is of (oneDNN's hint for its
/// implementation); its filter in the activations' dtype.
dnnl::convolution_forward::primitive_desc forwardHint(const Gradient &g) {
  const ConvWindow &w = g.window;
  desc filter(g.filterWanted.get_dims(), g.inWanted.get_data_type(),
              dnnl::memory::format_tag::any);
  return dnnl::convolution_forward::primitive_desc(
      engine(), dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, g.inWanted, filter, g.outWanted,
      w.strides, w.dilates, w.padsBegin, w.padsEnd);
}

} // namespace

FastCallChoice prepareConvBackwardData(const PlanCall &call,
                                       const std::vector<TensorView> &operands,
                                       const std::vector<TensorView> &results,
                                       const std::vector<bool> &constant,
                                       const FilterSource *filter) {
  Result<bool> hasBias = hasBuffer(call, "bias");
  if (!hasBias || operands.size() != 2 + size_t(*hasBias) ||
      results.size() != 1)
    return referenceKernel("the reference kernel reports the call's error");
  if (*hasBias)
    return referenceKernel("a bias (a transposed convolution's)");
  const TensorView &dy = operands[0], &w = operands[1], &dx = results[0];
  std::optional<ScopedWidening> widened;
  if (widenGradients(dy.dtype))
    widened.emplace();
  return catchingErrors([&] {
    std::variant<Gradient, std::string> found = gradientOf(call, dx, w, dy);
    if (auto *why = std::get_if<std::string>(&found))
      return referenceKernel(*why);
    const Gradient &g = std::get<Gradient>(found);
    const ConvWindow &win = g.window;
    dnnl::convolution_backward_data::primitive_desc pd(
        engine(), dnnl::algorithm::convolution_direct, g.inWanted,
        g.filterWanted, g.outWanted, win.strides, win.dilates, win.padsBegin,
        win.padsEnd, forwardHint(g), userScratchpad());
    bool constantW = constant.size() > 1 && constant[1];
    bool fromSource = false;
    FastCallChoice choice = PrimitiveCall::prepare(
        pd, dnnl::convolution_backward_data(pd),
        {{DNNL_ARG_DIFF_DST, g.outUser, dy},
         filterBinding(DNNL_ARG_WEIGHTS, w, g.filterUser, g.options, filter,
                       constantW, fromSource),
         {DNNL_ARG_DIFF_SRC, g.inUser, dx}});
    choice.filterFromSource = choice.call && fromSource;
    return choice;
  });
}

FastCallChoice prepareConvBackwardFilter(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const std::vector<TensorView> &results, const std::vector<bool> &,
    const FilterSource *filter) {
  if (operands.size() != 2 || results.size() != 1)
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = operands[0], &dy = operands[1], &dw = results[0];
  std::optional<ScopedWidening> widened;
  if (widenGradients(dy.dtype))
    widened.emplace();
  return catchingErrors([&] {
    std::variant<Gradient, std::string> found = gradientOf(call, x, dw, dy);
    if (auto *why = std::get_if<std::string>(&found))
      return referenceKernel(*why);
    const Gradient &g = std::get<Gradient>(found);
    const ConvWindow &win = g.window;
    dnnl::convolution_backward_weights::primitive_desc pd(
        engine(), dnnl::algorithm::convolution_direct, g.inWanted,
        g.filterWanted, g.outWanted, win.strides, win.dilates, win.padsBegin,
        win.padsEnd, forwardHint(g), userScratchpad());
    bool fromSource = false;
    FastCallChoice choice = PrimitiveCall::prepare(
        pd, dnnl::convolution_backward_weights(pd),
        {{DNNL_ARG_SRC, g.inUser, x},
         {DNNL_ARG_DIFF_DST, g.outUser, dy},
         filterBinding(DNNL_ARG_DIFF_WEIGHTS, dw, g.filterUser, g.options,
                       filter, false, fromSource)});
    choice.filterFromSource = choice.call && fromSource;
    return choice;
  });
}

} // namespace mp::rt::cpu::onednn
