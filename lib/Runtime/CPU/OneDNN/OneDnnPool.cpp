//===- OneDnnPool.cpp - cudnn.pool on oneDNN's pooling --------------------===//
//
// Max and average pooling (padding excluded from or included in the
// average) as one oneDNN forward pooling, channels first or last, x and y in
// the plan's layout. Max pooling that also writes ONNX's indices stays on
// the reference kernel (oneDNN's workspace is not ONNX's flattened index).
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

FastCallChoice preparePool(const PlanCall &call,
                           const std::vector<TensorView> &operands,
                           const std::vector<TensorView> &results,
                           const std::vector<bool> &, const FilterSource *) {
  Result<bool> hasIndices = hasBuffer(call, "indices");
  if (!hasIndices || operands.size() != 1 ||
      results.size() != 1 + size_t(*hasIndices))
    return referenceKernel("the reference kernel reports the call's error");
  if (*hasIndices)
    return referenceKernel("ONNX's indices");
  const TensorView &x = operands[0], &y = results[0];
  Result<size_t> spatial = spatialRank(x, "x");
  if (!spatial)
    return referenceKernel("the reference kernel reports the call's error");
  Result<PoolOptions> options = poolOptionsOf(call, *spatial, false);
  if (!options || !checkPool(x, y, *options))
    return referenceKernel("the reference kernel reports the call's error");
  if (*spatial > 3)
    return referenceKernel(std::to_string(*spatial) + " spatial dims");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type || y.dtype != x.dtype)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));

  return catchingErrors([&] {
    const PoolOptions &o = *options;
    size_t k = *spatial;
    dnnl::memory::dims strides(k, 1), kernel(o.kernel.begin(), o.kernel.end()),
        dilation(k, 0), padsBegin(k, 0), padsEnd(k, 0);
    for (size_t i = 0; i < k; ++i) {
      if (!o.strides.empty())
        strides[i] = o.strides[i];
      if (!o.dilations.empty())
        dilation[i] = o.dilations[i] - 1; // oneDNN counts the gaps
      if (!o.padsBegin.empty()) {
        padsBegin[i] = o.padsBegin[i];
        padsEnd[i] = o.padsEnd[i];
      }
    }
    auto algorithm = o.kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                     : o.countIncludePad
                         ? dnnl::algorithm::pooling_avg_include_padding
                         : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::memory::desc xDesc = activationDesc(x, o.layout, *type);
    dnnl::memory::desc yDesc = activationDesc(y, o.layout, *type);
    dnnl::primitive_attr attr = userScratchpad();
    dnnl::pooling_forward::primitive_desc pd(
        engine(), dnnl::prop_kind::forward_inference, algorithm, xDesc, yDesc,
        strides, kernel, dilation, padsBegin, padsEnd, attr);
    return PrimitiveCall::prepare(
        pd, dnnl::pooling_forward(pd),
        {{DNNL_ARG_SRC, xDesc, x}, {DNNL_ARG_DST, yDesc, y}});
  });
}

} // namespace mp::rt::cpu::onednn
