//===- OneDnnNorm.cpp - kernel.layer_norm and cudnn.lrn on oneDNN ---------===//
//
// Layer normalization over x's dims [axis, rank) as oneDNN's
// layer_normalization_forward on x seen as [rows, row size], with f32 scale
// and bias of one value per row element (oneDNN's use_scale / use_shift);
// and LRN across channels as lrn_forward (lrn_across_channels) on 4-D
// channels-first data, reordered into oneDNN's channel blocks. f32 and bf16
// computed in f32, rounded once (f16 through f32 copies). What they do not
// cover stays on the reference kernels: the mean and inverse standard deviation
// results (oneDNN gives the variance), a scale or bias broadcast along the row
// or in another dtype, an even LRN size (oneDNN's window is then one channel
// narrower than ONNX's), other ranks, and y in place of x.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/NNKernels.h"

namespace mp::rt::cpu::onednn {

FastCallChoice prepareRmsNorm(const PlanCall &, const std::vector<TensorView> &,
                              const std::vector<TensorView> &,
                              const std::vector<bool> &, const FilterSource *) {
  return referenceKernel(
      "oneDNN 3.2's layer normalization has no RMS mode (own kernel, rows "
      "over the threads)");
}

FastCallChoice prepareGroupNorm(const PlanCall &,
                                const std::vector<TensorView> &,
                                const std::vector<TensorView> &,
                                const std::vector<bool> &,
                                const FilterSource *) {
  return referenceKernel("oneDNN 3.2 has no group normalization (own kernel, "
                         "groups over the threads)");
}

FastCallChoice prepareLayerNorm(const PlanCall &call,
                                const std::vector<TensorView> &operands,
                                const std::vector<TensorView> &results,
                                const std::vector<bool> &constant,
                                const FilterSource *) {
  const std::string byReference =
      "the reference kernel reports the call's error";
  std::array<const TensorView *, 3> in;
  std::array<const TensorView *, 3> out;
  if (!bindCallBuffers(
          call, operands, {{{"x", false}, {"scale", false}, {"bias", true}}},
          in, results, {{{"y", false}, {"mean", true}, {"inv_std_dev", true}}},
          out))
    return referenceKernel(byReference);
  Result<int64_t> axisAttr = intAttr(call, "axis", -1);
  Result<double> epsilonAttr = floatAttr(call, "epsilon", 1e-5);
  if (!axisAttr || !epsilonAttr)
    return referenceKernel(byReference);
  const TensorView &x = *in[0], &scale = *in[1], &y = *out[0];
  const TensorView *bias = in[2];
  int64_t axis = *axisAttr;
  const auto epsilon = static_cast<float>(*epsilonAttr);
  if (!checkLayerNorm(x, scale, bias, y, out[1], out[2], axis, epsilon))
    return referenceKernel(byReference);
  if (out[1] || out[2])
    return referenceKernel("the mean and inverse standard deviation results");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));
  const int64_t rowSize =
      numElements(Shape(x.shape.begin() + axis, x.shape.end()));
  const int64_t rows = rowSize ? x.numElements() / rowSize : 0;
  if (rows == 0 || rowSize == 0)
    return referenceKernel("no elements");
  for (const TensorView *t : {&scale, bias})
    if (t && (t->dtype != DType::F32 || t->numElements() != rowSize))
      return referenceKernel("a scale or bias that is not f32 with one value "
                             "per element of the row");
  if (x.data == y.data)
    return referenceKernel("y in place of x");
  auto isConstant = [&](size_t k) {
    return constant.size() > k && constant[k];
  };
  return catchingErrors([&] {
    dnnl::memory::desc data = plainDesc({rows, rowSize}, *type);
    dnnl::memory::desc row = plainDesc({rowSize}, dnnl::memory::data_type::f32);
    auto flags = dnnl::normalization_flags::use_scale;
    if (bias)
      flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        engine(), dnnl::prop_kind::forward_inference, data, data, epsilon,
        flags, userScratchpad());
    std::vector<Binding> buffers = {{DNNL_ARG_SRC, data, x},
                                    {DNNL_ARG_SCALE, row, scale, isConstant(1)},
                                    {DNNL_ARG_DST, data, y}};
    if (bias)
      buffers.push_back({DNNL_ARG_SHIFT, row, *bias, isConstant(2)});
    return PrimitiveCall::prepare(pd, dnnl::layer_normalization_forward(pd),
                                  buffers);
  });
}

FastCallChoice prepareLrn(const PlanCall &call,
                          const std::vector<TensorView> &operands,
                          const std::vector<TensorView> &results,
                          const std::vector<bool> &, const FilterSource *) {
  Result<LrnOptions> options = lrnOptionsOf(call);
  if (!options || operands.size() != 1 || results.size() != 1 ||
      !checkLrn(operands[0], results[0], *options))
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &x = operands[0], &y = results[0];
  const LrnOptions &o = *options;
  if (o.size % 2 == 0)
    return referenceKernel("an even size (oneDNN's window is narrower)");
  if (x.shape.size() != 4)
    return referenceKernel(std::to_string(x.shape.size()) + "-d x");
  std::optional<dnnl::memory::data_type> type = computeTypeOf(x.dtype);
  if (!type)
    return referenceKernel("dtype " + std::string(dtypeName(x.dtype)));
  if (x.numElements() == 0)
    return referenceKernel("no elements");
  if (x.data == y.data)
    return referenceKernel("y in place of x");
  return catchingErrors([&] {
    const dnnl::memory::dims dims(x.shape.begin(), x.shape.end());
    dnnl::memory::desc data = plainDesc(dims, *type);
    // oneDNN's jit LRN works on channels in blocks of 16 (AVX-512) or 8
    // (AVX2); its plain channels-first one is reference code. The call
    // reorders x into that layout and y out of it.
    const bool avx512 =
        dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
    dnnl::memory::desc blocked(dims, *type,
                               avx512 ? dnnl::memory::format_tag::nChw16c
                                      : dnnl::memory::format_tag::nChw8c);
    dnnl::lrn_forward::primitive_desc pd(
        engine(), dnnl::prop_kind::forward_inference,
        dnnl::algorithm::lrn_across_channels, blocked, blocked, o.size, o.alpha,
        o.beta, o.bias, userScratchpad());
    return PrimitiveCall::prepare(
        pd, dnnl::lrn_forward(pd),
        {{DNNL_ARG_SRC, data, x}, {DNNL_ARG_DST, data, y}});
  });
}

} // namespace mp::rt::cpu::onednn
