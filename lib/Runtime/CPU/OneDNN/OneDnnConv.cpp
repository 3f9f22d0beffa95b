//===- OneDnnConv.cpp - cudnn.conv_fwd on oneDNN's convolution ------------===//
//
// y = activation(conv(x, w) + bias) as one oneDNN forward convolution, for
// 1-3 spatial dims, grouped and depthwise, channels first or last. x and y
// stay in the plan's layout (they are arena buffers other calls read); the
// filter goes into the layout the primitive wants: once for a weight,
// before every run for a filter that changes (a training step's state).
// Channels-last (culib-nhwc-layout) is what oneDNN's fastest bf16 kernels
// take; channels-first gets its gemm kernels.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

FastCallChoice prepareConv(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results,
                           const std::vector<bool> &constant,
                           const FilterSource *filter) {
  std::array<const TensorView *, 4> ins;
  std::array<const TensorView *, 1> outs;
  if (!bindCallBuffers(call, operands, kConvOperands, ins, results,
                       {{{"y", false}}}, outs))
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = *ins[0], &w = *ins[1], &y = *outs[0];
  const TensorView *bias = ins[2], *residual = ins[3];
  Result<size_t> spatial = spatialRank(x, "x");
  if (!spatial)
    return referenceKernel("the reference kernel reports the call's error");
  Result<ConvOptions> options = convOptionsOf(call, *spatial);
  if (!options || !checkComputeType(call, x.dtype, /*required=*/true) ||
      !checkConv(x, w, bias, residual, y, *options))
    return referenceKernel("the reference kernel reports the call's error");
  if (*spatial > 3)
    return referenceKernel(std::to_string(*spatial) + " spatial dims");
  // Where 16-bit kernels are slower than f32 ones (no fast 16-bit dot
  // products: f16 kernels that widen inside, bf16 ones on Intel CPUs
  // without AMX), they run ungrouped convolutions at half to two thirds of
  // the speed of f32 kernels on f32 copies (MobileNetV2's 1x1 ones), so
  // those take the copies, in blocks of rows where those apply. Depthwise
  // ones are memory-bound: f16 kernels run them faster than f32 ones, so
  // they stay f16; bf16 kernels there slower (MobileNetV2's 3x3 ones 0.36
  // against 0.20 ms; its bf16 plan 9.0-9.9 -> 7.9-8.4 ms with them on f32
  // copies), so they take the copies too.
  const bool slowProducts = is16BitFloat(x.dtype) && narrowIsNative(x.dtype) &&
                            !fastDotProducts(x.dtype);
  const bool widenGrouped = x.dtype == DType::BF16;
  {
    std::optional<ScopedWidening> widened;
    if (slowProducts && (options->groups == 1 || widenGrouped))
      widened.emplace();
    if (FastCallChoice tiled = prepareTiledWidenedConv(
            x, w, bias, residual, y, *options, constant, filter);
        tiled.call)
      return tiled;
  }
  // Otherwise (whole tensors), one with long dot products (C/g * kernel
  // size >= 128: ResNets' and the 1x1 convolutions of the wider layers) is
  // compute-bound and faster on f32 copies (ResNet-50's f16 plan: 62
  // against 78 ms); short ones are memory-bound and faster on f16 (not on
  // bf16, as above).
  constexpr int64_t kComputeBoundReduction = 128;
  const int64_t reduction = w.numElements() / std::max<int64_t>(w.shape[0], 1);
  std::optional<ScopedWidening> widened;
  if (slowProducts && (reduction >= kComputeBoundReduction || widenGrouped))
    widened.emplace();
  std::optional<dnnl::memory::data_type> in = computeTypeOf(x.dtype),
                                         out = computeTypeOf(y.dtype);
  std::optional<dnnl::memory::data_type> biasType =
      bias ? computeTypeOf(bias->dtype) : in;
  if (!in || !out || !biasType)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));

  return catchingErrors([&] {
    const ConvOptions &o = *options;
    const ConvWindow win = convWindowOf(o, *spatial);
    dnnl::memory::desc xDesc = activationDesc(x, o.layout, *in);
    dnnl::memory::desc yDesc = activationDesc(y, o.layout, *out);
    // Channels first, oneDNN's direct kernels want a blocked layout (nChw16c)
    // and it otherwise falls back to im2col + gemm, several times slower:
    // the primitive picks the activations' layout too, and the call
    // reorders x into it and y out of it (through the workspace).
    const bool nchw = o.layout == Layout::NCHW;
    // A residual is added as a binary post-op in y's layout: channels first
    // the one the primitive picks (oneDNN has only reference code for a
    // plain one), the residual reordered into it as x is.
    dnnl::memory::desc xWanted = nchw ? anyLayout(xDesc) : xDesc;
    dnnl::memory::desc yWanted = nchw ? anyLayout(yDesc) : yDesc;
    dnnl::memory::desc wUser = filterDesc(w, o.layout, o.groups, *in);
    dnnl::memory::desc wAny = anyLayout(wUser);
    dnnl::memory::desc biasDesc;
    if (bias)
      biasDesc = plainDesc({bias->shape[0]}, *biasType);

    dnnl::convolution_forward::primitive_desc pd =
        convForwardDesc(xWanted, wAny, bias ? &biasDesc : nullptr, yWanted, win,
                        o, residual != nullptr);
    auto isConstant = [&](size_t k) {
      return constant.size() > k && constant[k];
    };
    bool fromSource = false;
    std::vector<Binding> buffers = {{DNNL_ARG_SRC, xDesc, x},
                                    filterBinding(DNNL_ARG_WEIGHTS, w, wUser, o,
                                                  filter, isConstant(1),
                                                  fromSource),
                                    {DNNL_ARG_DST, yDesc, y}};
    if (bias)
      buffers.push_back({DNNL_ARG_BIAS, biasDesc, *bias, isConstant(2)});
    if (residual)
      buffers.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                         yDesc, *residual});
    FastCallChoice choice =
        PrimitiveCall::prepare(pd, dnnl::convolution_forward(pd), buffers);
    choice.filterFromSource = choice.call && fromSource;
    return choice;
  });
}

} // namespace mp::rt::cpu::onednn
