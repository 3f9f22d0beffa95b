//===- OneDnnConvBackward.cpp - the convolution gradients on oneDNN -------===//
//
// cudnn.conv_bwd_data (dy, w -> dx, as ONNX ConvTranspose without a bias)
// and cudnn.conv_bwd_filter (x, dy -> dw) as oneDNN's
// convolution_backward_data / _weights, for 1-3 spatial dims, grouped and
// depthwise, channels first or last; f32, bf16 (f32 accumulation, one
// rounding) and f16 (through f32 copies). The primitive picks the layouts
// of every operand (a channels-first call) or of the filter (channels
// last); the call reorders into and out of them through the workspace.
// Shapes that do not describe a convolution (oneDNN refuses them) and a
// transposed convolution with a bias stay on the reference kernel, which
// reports a bad call's error.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

namespace {

using dims = dnnl::memory::dims;

/// The window attributes of a backward call: pads (begins then ends; may be
/// absent), strides, dilations (oneDNN counts the gaps: d - 1), groups.
struct Window {
  dims strides, dilates, padsBegin, padsEnd;
  int64_t groups = 1;
  Layout layout = Layout::NCHW;
};

std::optional<Window> windowOf(const PlanCall &call, size_t spatial) {
  Result<std::vector<int64_t>> pads = intListAttr(call, "pads", {});
  Result<std::vector<int64_t>> strides = intListAttr(call, "strides", {});
  Result<std::vector<int64_t>> dilations = intListAttr(call, "dilations", {});
  Result<int64_t> groups = intAttr(call, "groups", 1);
  Result<bool> channelsLast = channelsLastAttr(call);
  if (!pads || !strides || !dilations || !groups || !channelsLast ||
      *groups < 1 || (!pads->empty() && pads->size() != 2 * spatial) ||
      (!strides->empty() && strides->size() != spatial) ||
      (!dilations->empty() && dilations->size() != spatial))
    return std::nullopt;
  Window w;
  w.strides.assign(spatial, 1);
  w.dilates.assign(spatial, 0);
  w.padsBegin.assign(spatial, 0);
  w.padsEnd.assign(spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    if (!strides->empty())
      w.strides[i] = (*strides)[i];
    if (!dilations->empty())
      w.dilates[i] = (*dilations)[i] - 1;
    if (!pads->empty()) {
      w.padsBegin[i] = (*pads)[i];
      w.padsEnd[i] = (*pads)[spatial + i];
    }
    if (w.strides[i] < 1 || w.dilates[i] < 0 || w.padsBegin[i] < 0 ||
        w.padsEnd[i] < 0)
      return std::nullopt;
  }
  w.groups = *groups;
  w.layout = *channelsLast ? Layout::NHWC : Layout::NCHW;
  return w;
}

/// An activation's descriptor for the primitive: channels first, `any`
/// (oneDNN's blocked layouts; the call reorders); channels last, the
/// buffer's own.
dnnl::memory::desc wantedActivation(const dnnl::memory::desc &user,
                                    const Window &w,
                                    dnnl::memory::data_type type) {
  if (w.layout == Layout::NHWC)
    return user;
  return dnnl::memory::desc(user.dims(), type, dnnl::memory::format_tag::any);
}

/// The forward convolution a backward one is the gradient of (oneDNN's
/// hint for its implementation): src and dst as the forward's input and
/// output.
dnnl::convolution_forward::primitive_desc
forwardHint(const Window &o, const dnnl::memory::desc &src,
            const dnnl::memory::desc &weights, const dnnl::memory::desc &dst) {
  return dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, src,
                                      weights, dst, o.strides, o.dilates,
                                      o.padsBegin, o.padsEnd),
      engine());
}

/// The shared checks: rank, spatial dims, dtypes oneDNN computes on.
std::optional<std::string> unsupported(const TensorView &a, const TensorView &b,
                                       const TensorView &result) {
  if (a.shape.size() < 3 || a.shape.size() > 5)
    return std::to_string(a.shape.size()) + "-d operands";
  if (b.shape.size() != a.shape.size() || result.shape.size() != a.shape.size())
    return std::string("the reference kernel reports the call's error");
  for (const TensorView *t : {&a, &b, &result})
    if (!computeTypeOf(t->dtype))
      return "dtype " + std::string(dtypeName(t->dtype));
  if (a.dtype != b.dtype)
    return std::string("mixed dtypes");
  return std::nullopt;
}

} // namespace

FastCallChoice prepareConvBackwardData(const PlanCall &call,
                                       const std::vector<TensorView> &operands,
                                       const std::vector<TensorView> &results,
                                       const std::vector<bool> &constant) {
  Result<bool> hasBias = hasBuffer(call, "bias");
  if (!hasBias || operands.size() != 2 + size_t(*hasBias) ||
      results.size() != 1)
    return referenceKernel("the reference kernel reports the call's error");
  if (*hasBias)
    return referenceKernel("a bias (a transposed convolution's)");
  const TensorView &dy = operands[0], &w = operands[1], &dx = results[0];
  if (std::optional<std::string> why = unsupported(dy, w, dx))
    return referenceKernel(*why);
  std::optional<Window> window = windowOf(call, dy.shape.size() - 2);
  if (!window)
    return referenceKernel("the reference kernel reports the call's error");
  dnnl::memory::data_type type = *computeTypeOf(dy.dtype),
                          outType = *computeTypeOf(dx.dtype);
  return catchingErrors([&] {
    const Window &o = *window;
    dnnl::memory::desc dyUser = activationDesc(dy, o.layout, type);
    dnnl::memory::desc dxUser = activationDesc(dx, o.layout, outType);
    dnnl::memory::desc wUser = filterDesc(w, o.layout, o.groups, type);
    dnnl::memory::desc dyWanted = wantedActivation(dyUser, o, type),
                       dxWanted = wantedActivation(dxUser, o, outType);
    dnnl::memory::desc wAny(wUser.dims(), type, dnnl::memory::format_tag::any);
    auto algorithm = dnnl::algorithm::convolution_direct;
    auto hint = forwardHint(o, dxWanted, wAny, dyWanted);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(algorithm, dxWanted, wAny,
                                              dyWanted, o.strides, o.dilates,
                                              o.padsBegin, o.padsEnd),
        attr, engine(), hint);
    bool constantW = constant.size() > 1 && constant[1];
    return PrimitiveCall::prepare(pd, dnnl::convolution_backward_data(pd),
                                  {{DNNL_ARG_DIFF_DST, dyUser, dy},
                                   {DNNL_ARG_WEIGHTS, wUser, w, constantW},
                                   {DNNL_ARG_DIFF_SRC, dxUser, dx}});
  });
}

FastCallChoice
prepareConvBackwardFilter(const PlanCall &call,
                          const std::vector<TensorView> &operands,
                          const std::vector<TensorView> &results) {
  if (operands.size() != 2 || results.size() != 1)
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = operands[0], &dy = operands[1], &dw = results[0];
  if (std::optional<std::string> why = unsupported(x, dy, dw))
    return referenceKernel(*why);
  if (!checkComputeType(call, x.dtype, /*required=*/false))
    return referenceKernel("the reference kernel reports the call's error");
  std::optional<Window> window = windowOf(call, x.shape.size() - 2);
  if (!window)
    return referenceKernel("the reference kernel reports the call's error");
  dnnl::memory::data_type type = *computeTypeOf(x.dtype),
                          outType = *computeTypeOf(dw.dtype);
  return catchingErrors([&] {
    const Window &o = *window;
    dnnl::memory::desc xUser = activationDesc(x, o.layout, type);
    dnnl::memory::desc dyUser = activationDesc(dy, o.layout, type);
    dnnl::memory::desc dwUser = filterDesc(dw, o.layout, o.groups, outType);
    dnnl::memory::desc xWanted = wantedActivation(xUser, o, type),
                       dyWanted = wantedActivation(dyUser, o, type);
    dnnl::memory::desc dwAny(dwUser.dims(), outType,
                             dnnl::memory::format_tag::any);
    auto algorithm = dnnl::algorithm::convolution_direct;
    auto hint = forwardHint(
        o, xWanted,
        dnnl::memory::desc(dwUser.dims(), type, dnnl::memory::format_tag::any),
        dyWanted);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(algorithm, xWanted, dwAny,
                                                 dyWanted, o.strides, o.dilates,
                                                 o.padsBegin, o.padsEnd),
        attr, engine(), hint);
    return PrimitiveCall::prepare(pd, dnnl::convolution_backward_weights(pd),
                                  {{DNNL_ARG_SRC, xUser, x},
                                   {DNNL_ARG_DIFF_DST, dyUser, dy},
                                   {DNNL_ARG_DIFF_WEIGHTS, dwUser, dw}});
  });
}

} // namespace mp::rt::cpu::onednn
