//===- OneDnnSoftmax.cpp - cudnn.softmax on oneDNN's (log)softmax ---------===//
//
// y = softmax(x) or log_softmax(x) along one axis, as oneDNN's
// softmax_forward / logsoftmax_forward: f32 and bf16 computed in f32 and
// rounded once (f16 through f32 copies), numerically stable as the
// reference (the maximum subtracted first). The reference sums in f64,
// oneDNN in f32: the results differ by summation order only.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

FastCallChoice prepareSoftmax(const PlanCall &call,
                              const std::vector<TensorView> &operands,
                              const std::vector<TensorView> &results,
                              const std::vector<bool> &, const FilterSource *) {
  Result<int64_t> axisAttr = intAttr(call, "axis");
  Result<int64_t> logAttr = intAttr(call, "log", 0);
  if (!axisAttr || !logAttr || operands.size() != 1 || results.size() != 1 ||
      (*logAttr != 0 && *logAttr != 1))
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = operands[0], &y = results[0];
  int64_t axis = *axisAttr;
  const bool log = *logAttr == 1;
  if (!checkSoftmax(x, y, axis, log))
    return referenceKernel("the reference kernel reports the call's error");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));
  if (x.numElements() == 0)
    return referenceKernel("no elements");
  return catchingErrors([&] {
    dnnl::memory::desc desc =
        plainDesc(dnnl::memory::dims(x.shape.begin(), x.shape.end()), *type);
    dnnl::primitive_attr attr = userScratchpad();
    std::vector<Binding> buffers = {{DNNL_ARG_SRC, desc, x},
                                    {DNNL_ARG_DST, desc, y}};
    const auto kind = dnnl::prop_kind::forward_inference;
    const int dim = static_cast<int>(axis);
    dnnl::softmax_forward::primitive_desc pd(
        engine(), kind,
        log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate,
        desc, desc, dim, attr);
    return PrimitiveCall::prepare(pd, dnnl::softmax_forward(pd), buffers);
  });
}

} // namespace mp::rt::cpu::onednn
