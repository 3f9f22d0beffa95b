//===- OneDnnBatchNorm.cpp - the batch norms on oneDNN --------------------===//
//
// oneDNN's batch_normalization primitives, channels first or last, x and y
// (dx, dy) f32, bf16 (computed in f32, rounded once) or f16 (through f32
// copies); the per-channel tensors f32, as oneDNN takes them (other dtypes
// stay on the reference kernels):
// - cudnn.batch_norm_inference: forward_inference with the given statistics
//   (use_global_stats).
// - cudnn.batch_norm_training: forward_training, which writes y and the batch
//   mean and biased variance (into the call's own [C] buffers); the running
//   statistics are then updated from them as the reference does.
// - cudnn.batch_norm_bwd (x, scale, dy -> dx, dscale, dbias): the backward
//   needs the batch statistics of x, which the plan does not keep; a
//   forward_training primitive recomputes them first, with its normalised
//   output written into dx (the backward overwrites it).
// oneDNN accumulates the statistics in f32 where the reference kernels use
// f64: the results agree to f32 summation order.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/BackwardKernels.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>
#include <memory>

namespace mp::rt::cpu::onednn {

namespace {

using dnnl::normalization_flags;

/// Why oneDNN cannot run a batch norm on x with these per-channel tensors
/// (empty when it can); `type` gets x's compute type.
std::string unsupported(const TensorView &x,
                        std::initializer_list<const TensorView *> perChannel,
                        dnnl::memory::data_type &type) {
  for (const TensorView *v : perChannel)
    if (v->dtype != DType::F32)
      return "per-channel tensors of dtype " +
             std::string(dtypeName(v->dtype)) + " (oneDNN's are f32)";
  std::optional<dnnl::memory::data_type> t = computeTypeOf(x.dtype);
  if (!t)
    return "dtype " + std::string(dtypeName(x.dtype));
  if (x.shape.size() < 3 || x.shape.size() > 5)
    return std::to_string(x.shape.size()) + "-d x";
  if (x.numElements() == 0)
    return "no elements";
  type = *t;
  return "";
}

/// The channel count's descriptor: [C] f32.
dnnl::memory::desc channelDesc(const TensorView &x, Layout layout) {
  return plainDesc({x.shape[layout == Layout::NHWC ? x.shape.size() - 1 : 1]},
                   dnnl::memory::data_type::f32);
}

/// A forward_training primitive desc for x (flags: which of scale and shift
/// it applies).
dnnl::batch_normalization_forward::primitive_desc
trainingForward(const dnnl::memory::desc &xDesc, float epsilon,
                normalization_flags flags) {
  return dnnl::batch_normalization_forward::primitive_desc(
      engine(), dnnl::prop_kind::forward_training, xDesc, xDesc, epsilon, flags,
      userScratchpad());
}

/// [C] f32 buffers the call owns, as views the bindings can take.
struct ChannelBuffers {
  explicit ChannelBuffers(int64_t c)
      : mean(static_cast<size_t>(c)), variance(static_cast<size_t>(c)) {}
  TensorView meanView() { return view(mean); }
  TensorView varianceView() { return view(variance); }
  std::vector<float> mean, variance;

private:
  static TensorView view(std::vector<float> &v) {
    return TensorView{DType::F32, {static_cast<int64_t>(v.size())}, v.data()};
  }
};

/// cudnn.batch_norm_training: the primitive, then the running statistics.
class BatchNormTrainingCall final : public PreparedCall {
public:
  BatchNormTrainingCall(int64_t channels, const TensorView &inputMean,
                        const TensorView &inputVariance,
                        const TensorView &runningMean,
                        const TensorView &runningVariance, float momentum)
      : batch_(channels), inputMean_(inputMean), inputVariance_(inputVariance),
        runningMean_(runningMean), runningVariance_(runningVariance),
        momentum_(momentum) {}

  ChannelBuffers &batch() { return batch_; }
  void setForward(std::unique_ptr<PreparedCall> forward) {
    forward_ = std::move(forward);
  }

  size_t scratchBytes() const override { return forward_->scratchBytes(); }
  const std::string &implementation() const override {
    return forward_->implementation();
  }
  Status run(void *scratch) override {
    if (Status s = forward_->run(scratch); !s)
      return s;
    // As the reference: running = input * momentum + batch * (1 - momentum)
    // in f64, rounded once (in place when running is input).
    const double m = momentum_;
    const float *im = inputMean_.as<const float>(),
                *iv = inputVariance_.as<const float>();
    float *rm = runningMean_.as<float>(), *rv = runningVariance_.as<float>();
    for (size_t c = 0; c < batch_.mean.size(); ++c) {
      rm[c] = static_cast<float>(double(im[c]) * m +
                                 double(batch_.mean[c]) * (1.0 - m));
      rv[c] = static_cast<float>(double(iv[c]) * m +
                                 double(batch_.variance[c]) * (1.0 - m));
    }
    return Status::ok();
  }

private:
  ChannelBuffers batch_;
  TensorView inputMean_, inputVariance_, runningMean_, runningVariance_;
  float momentum_;
  std::unique_ptr<PreparedCall> forward_;
};

/// cudnn.batch_norm_bwd: the statistics of x, then the backward primitive.
class BatchNormBackwardCall final : public PreparedCall {
public:
  explicit BatchNormBackwardCall(int64_t channels) : batch_(channels) {}

  ChannelBuffers &batch() { return batch_; }
  void setPrimitives(std::unique_ptr<PreparedCall> statistics,
                     std::unique_ptr<PreparedCall> backward) {
    statistics_ = std::move(statistics);
    backward_ = std::move(backward);
    name_ = backward_->implementation();
  }

  // The two run one after the other: each may use all of the scratch.
  size_t scratchBytes() const override {
    return std::max(statistics_->scratchBytes(), backward_->scratchBytes());
  }
  const std::string &implementation() const override { return name_; }
  Status run(void *scratch) override {
    if (Status s = statistics_->run(scratch); !s)
      return s;
    return backward_->run(scratch);
  }

private:
  ChannelBuffers batch_;
  std::unique_ptr<PreparedCall> statistics_, backward_;
  std::string name_;
};

} // namespace

FastCallChoice prepareBatchNormInference(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const std::vector<TensorView> &results, const std::vector<bool> &constant,
    const FilterSource *) {
  Result<BatchNormOptions> parsed = batchNormOptionsOf(call);
  if (!parsed || operands.size() != 5 || results.size() != 1 ||
      !checkBatchNormInference(operands[0], operands[1], operands[2],
                               operands[3], operands[4], results[0], *parsed))
    return referenceKernel("the reference kernel reports the call's error");
  const BatchNormOptions &options = *parsed;
  const TensorView &x = operands[0], &y = results[0];
  dnnl::memory::data_type type;
  std::string why = unsupported(
      x, {&operands[1], &operands[2], &operands[3], &operands[4]}, type);
  if (!why.empty())
    return referenceKernel(why);
  return catchingErrors([&] {
    dnnl::memory::desc xDesc = activationDesc(x, options.layout, type);
    dnnl::memory::desc yDesc = activationDesc(y, options.layout, type);
    dnnl::memory::desc channel = channelDesc(x, options.layout);
    auto flags = normalization_flags::use_global_stats |
                 normalization_flags::use_scale |
                 normalization_flags::use_shift;
    dnnl::batch_normalization_forward::primitive_desc pd(
        engine(), dnnl::prop_kind::forward_inference, xDesc, xDesc,
        options.epsilon, flags, userScratchpad());
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

FastCallChoice prepareBatchNormTraining(const PlanCall &call,
                                        const std::vector<TensorView> &operands,
                                        const std::vector<TensorView> &results,
                                        const std::vector<bool> &,
                                        const FilterSource *) {
  Result<BatchNormOptions> parsed = batchNormOptionsOf(call);
  if (!parsed || operands.size() != 5 || results.size() != 3 ||
      !checkBatchNormTraining(operands[0], operands[1], operands[2],
                              operands[3], operands[4], results[0], results[1],
                              results[2], *parsed))
    return referenceKernel("the reference kernel reports the call's error");
  const BatchNormOptions &options = *parsed;
  const TensorView &x = operands[0], &y = results[0];
  dnnl::memory::data_type type;
  std::string why = unsupported(x,
                                {&operands[1], &operands[2], &operands[3],
                                 &operands[4], &results[1], &results[2]},
                                type);
  if (!why.empty())
    return referenceKernel(why);
  return catchingErrors([&]() -> FastCallChoice {
    dnnl::memory::desc xDesc = activationDesc(x, options.layout, type);
    dnnl::memory::desc yDesc = activationDesc(y, options.layout, type);
    dnnl::memory::desc channel = channelDesc(x, options.layout);
    auto pd = trainingForward(xDesc, options.epsilon,
                              normalization_flags::use_scale |
                                  normalization_flags::use_shift);
    if (!(pd.dst_desc() == yDesc))
      return referenceKernel("x and y in different layouts");
    auto call = std::make_unique<BatchNormTrainingCall>(
        channel.get_dims()[0], operands[3], operands[4], results[1], results[2],
        options.momentum);
    Binding mean(DNNL_ARG_MEAN, channel, call->batch().meanView());
    Binding variance(DNNL_ARG_VARIANCE, channel, call->batch().varianceView());
    mean.output = variance.output = true;
    FastCallChoice forward =
        PrimitiveCall::prepare(pd, dnnl::batch_normalization_forward(pd),
                               {{DNNL_ARG_SRC, xDesc, x},
                                {DNNL_ARG_SCALE, channel, operands[1]},
                                {DNNL_ARG_SHIFT, channel, operands[2]},
                                mean,
                                variance,
                                {DNNL_ARG_DST, yDesc, y}});
    if (!forward.call)
      return forward;
    call->setForward(std::move(forward.call));
    return FastCallChoice{std::move(call), ""};
  });
}

FastCallChoice prepareBatchNormBackward(const PlanCall &call,
                                        const std::vector<TensorView> &operands,
                                        const std::vector<TensorView> &results,
                                        const std::vector<bool> &constant,
                                        const FilterSource *) {
  Result<BatchNormOptions> parsed = batchNormOptionsOf(call);
  if (!parsed || operands.size() != 3 || results.size() != 3 ||
      !checkBatchNormBackward(operands[0], operands[1], operands[2], results[0],
                              results[1], results[2], *parsed))
    return referenceKernel("the reference kernel reports the call's error");
  const BatchNormOptions &options = *parsed;
  const TensorView &x = operands[0], &scale = operands[1], &dy = operands[2];
  const TensorView &dx = results[0];
  dnnl::memory::data_type type;
  std::string why = unsupported(x, {&scale, &results[1], &results[2]}, type);
  if (!why.empty())
    return referenceKernel(why);
  return catchingErrors([&]() -> FastCallChoice {
    dnnl::memory::desc xDesc = activationDesc(x, options.layout, type);
    dnnl::memory::desc dyDesc = activationDesc(dy, options.layout, type);
    dnnl::memory::desc dxDesc = activationDesc(dx, options.layout, type);
    dnnl::memory::desc channel = channelDesc(x, options.layout);
    // The statistics: a plain normalisation (no scale or shift) into dx.
    auto statisticsPd =
        trainingForward(xDesc, options.epsilon, normalization_flags::none);
    auto flags =
        normalization_flags::use_scale | normalization_flags::use_shift;
    auto hint = trainingForward(xDesc, options.epsilon, flags);
    dnnl::batch_normalization_backward::primitive_desc pd(
        engine(), dnnl::prop_kind::backward, dyDesc, dyDesc, xDesc,
        options.epsilon, flags, hint, userScratchpad());
    if (!(statisticsPd.dst_desc() == dxDesc) || !(pd.diff_src_desc() == dxDesc))
      return referenceKernel("x, dy and dx in different layouts");
    auto call = std::make_unique<BatchNormBackwardCall>(channel.get_dims()[0]);
    TensorView mean = call->batch().meanView(),
               variance = call->batch().varianceView();
    Binding meanOut(DNNL_ARG_MEAN, channel, mean),
        varianceOut(DNNL_ARG_VARIANCE, channel, variance);
    meanOut.output = varianceOut.output = true;
    FastCallChoice statistics = PrimitiveCall::prepare(
        statisticsPd, dnnl::batch_normalization_forward(statisticsPd),
        {{DNNL_ARG_SRC, xDesc, x},
         meanOut,
         varianceOut,
         {DNNL_ARG_DST, dxDesc, dx}});
    if (!statistics.call)
      return statistics;
    FastCallChoice backward = PrimitiveCall::prepare(
        pd, dnnl::batch_normalization_backward(pd),
        {{DNNL_ARG_SRC, xDesc, x},
         {DNNL_ARG_MEAN, channel, mean},
         {DNNL_ARG_VARIANCE, channel, variance},
         {DNNL_ARG_DIFF_DST, dyDesc, dy},
         {DNNL_ARG_SCALE, channel, scale, constant.size() > 1 && constant[1]},
         {DNNL_ARG_DIFF_SRC, dxDesc, dx},
         {DNNL_ARG_DIFF_SCALE, channel, results[1]},
         {DNNL_ARG_DIFF_SHIFT, channel, results[2]}});
    if (!backward.call)
      return backward;
    call->setPrimitives(std::move(statistics.call), std::move(backward.call));
    return FastCallChoice{std::move(call), ""};
  });
}

} // namespace mp::rt::cpu::onednn
