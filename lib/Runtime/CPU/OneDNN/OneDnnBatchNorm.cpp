//===- OneDnnBatchNorm.cpp - cudnn.batch_norm_inference on oneDNN ---------===//
//
// y = scale * (x - mean) / sqrt(var + epsilon) + bias per channel, as
// oneDNN's batch_normalization_forward with the given statistics
// (use_global_stats), channels first or last: x and y f32, bf16 (computed in
// f32, rounded once) or f16 (through f32 copies); the per-channel tensors
// f32, as oneDNN takes them (other dtypes stay on the reference kernel).
// The training batch norm and its backward stay on the reference kernels:
// ONNX's running statistics and the recomputed statistics of the backward
// need more than one primitive.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

FastCallChoice prepareBatchNormInference(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const std::vector<TensorView> &results, const std::vector<bool> &constant) {
  Result<double> epsilon = floatAttr(call, "epsilon");
  Result<bool> channelsLast = channelsLastAttr(call);
  if (!epsilon || !channelsLast || operands.size() != 5 || results.size() != 1)
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = operands[0], &y = results[0];
  BatchNormOptions options;
  options.epsilon = static_cast<float>(*epsilon);
  options.layout = *channelsLast ? Layout::NHWC : Layout::NCHW;
  if (!checkBatchNormInference(x, operands[1], operands[2], operands[3],
                               operands[4], y, options))
    return referenceKernel("the reference kernel reports the call's error");
  for (size_t k = 1; k < 5; ++k)
    if (operands[k].dtype != DType::F32)
      return referenceKernel("per-channel tensors of dtype " +
                             std::string(dtypeName(operands[k].dtype)) +
                             " (oneDNN's are f32)");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));
  if (x.shape.size() < 3 || x.shape.size() > 5)
    return referenceKernel(std::to_string(x.shape.size()) + "-d x");
  if (x.numElements() == 0)
    return referenceKernel("no elements");
  return catchingErrors([&] {
    dnnl::memory::desc xDesc = activationDesc(x, options.layout, *type);
    dnnl::memory::desc yDesc = activationDesc(y, options.layout, *type);
    dnnl::memory::desc channel = plainDesc(
        {x.shape[options.layout == Layout::NHWC ? x.shape.size() - 1 : 1]},
        dnnl::memory::data_type::f32);
    auto flags = dnnl::normalization_flags::use_global_stats |
                 dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::batch_normalization_forward::primitive_desc pd(
        dnnl::batch_normalization_forward::desc(
            dnnl::prop_kind::forward_inference, xDesc, options.epsilon, flags),
        attr, engine());
    auto isConstant = [&](size_t k) {
      return constant.size() > k && constant[k];
    };
    // Channels first, x and y keep the layout: src and dst must agree, and
    // a reorder of both would cost more than the normalisation.
    if (!(pd.dst_desc() == yDesc))
      return referenceKernel("x and y in different layouts");
    return PrimitiveCall::prepare(
        pd, dnnl::batch_normalization_forward(pd),
        {{DNNL_ARG_SRC, xDesc, x},
         {DNNL_ARG_SCALE, channel, operands[1], isConstant(1)},
         {DNNL_ARG_SHIFT, channel, operands[2], isConstant(2)},
         {DNNL_ARG_MEAN, channel, operands[3], isConstant(3)},
         {DNNL_ARG_VARIANCE, channel, operands[4], isConstant(4)},
         {DNNL_ARG_DST, yDesc, y}});
  });
}

} // namespace mp::rt::cpu::onednn
