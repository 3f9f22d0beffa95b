//===- CallBuffers.cpp - the input and output buffers of culib calls ------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using mp::culib::CallBuffers;
using mp::culib::NamedBuffer;
namespace culib = mp::culib;

/// Library prefix and buffers of each culib call op.
std::optional<CallBuffers> mp::culib::getCallBuffers(Operation *op) {
  auto opt = [](StringRef name, Value v) { return NamedBuffer{name, v, true}; };
  auto req = [](StringRef name, Value v) { return NamedBuffer{name, v, false}; };
  // Calls with any number of `inputs` and one `y`: "kernel." and the op name.
  auto variadic = [&](auto o) {
    CallBuffers b{"kernel." + o->getName().stripDialect().str(),
                  {},
                  {req("y", o.getY())}};
    for (Value v : o.getInputs())
      b.ins.push_back(req("inputs", v));
    return b;
  };
  return TypeSwitch<Operation *, std::optional<CallBuffers>>(op)
      .Case([&](culib::MatmulOp o) {
        return CallBuffers{
            "cublaslt.matmul",
            {req("a", o.getA()), req("b", o.getB()), opt("c", o.getC()),
             opt("bias", o.getBias()), opt("aux", o.getAux())},
            {req("d", o.getD()), opt("bias_grad", o.getBiasGrad())}};
      })
      .Case([&](culib::ConvFwdOp o) {
        return CallBuffers{"cudnn.conv_fwd",
                           {req("x", o.getX()), req("w", o.getW()),
                            opt("bias", o.getBias()),
                            opt("residual", o.getResidual())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::ConvBwdDataOp o) {
        return CallBuffers{"cudnn.conv_bwd_data",
                           {req("x", o.getX()), req("w", o.getW()),
                            opt("bias", o.getBias())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::PoolOp o) {
        return CallBuffers{"cudnn.pool",
                           {req("x", o.getX())},
                           {req("y", o.getY()), opt("indices", o.getIndices())}};
      })
      .Case([&](culib::BatchNormInferenceOp o) {
        return CallBuffers{"cudnn.batch_norm_inference",
                           {req("x", o.getX()), req("scale", o.getScale()),
                            req("bias", o.getBias()), req("mean", o.getMean()),
                            req("variance", o.getVariance())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::BatchNormTrainingOp o) {
        return CallBuffers{
            "cudnn.batch_norm_training",
            {req("x", o.getX()), req("scale", o.getScale()),
             req("bias", o.getBias()), req("mean", o.getMean()),
             req("variance", o.getVariance())},
            {req("y", o.getY()), req("running_mean", o.getRunningMean()),
             req("running_variance", o.getRunningVariance())}};
      })
      .Case([&](culib::SoftmaxOp o) {
        return CallBuffers{"cudnn.softmax", {req("x", o.getX())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::LRNOp o) {
        return CallBuffers{"cudnn.lrn", {req("x", o.getX())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::RNNOp o) {
        return CallBuffers{
            "cudnn.rnn",
            {req("x", o.getX()), req("w", o.getW()), req("r", o.getR()),
             opt("b", o.getB()), opt("sequence_lens", o.getSequenceLens()),
             opt("initial_h", o.getInitialH()),
             opt("initial_c", o.getInitialC()), opt("p", o.getP())},
            {opt("y", o.getY()), opt("y_h", o.getYH()),
             opt("y_c", o.getYC())}};
      })
      .Case<culib::ElementwiseOp, culib::FusedElementwiseOp, culib::ConcatOp>(
          [&](auto o) { return variadic(o); })
      .Case<culib::CastOp, culib::ReduceOp, culib::TransposeOp, culib::CopyOp,
            culib::BroadcastOp, culib::TileOp, culib::SliceOp, culib::PadOp,
            culib::ResizeOp, culib::CumSumOp, culib::TriluOp, culib::HardmaxOp>(
          [&](Operation *o) -> std::optional<CallBuffers> {
            return CallBuffers{"kernel." + o->getName().stripDialect().str(),
                               {req("x", o->getOperand(0))},
                               {req("y", o->getOperand(1))}};
          })
      .Case<culib::GatherOp, culib::GatherElementsOp, culib::GatherNDOp>(
          [&](Operation *o) -> std::optional<CallBuffers> {
            return CallBuffers{"kernel." + o->getName().stripDialect().str(),
                               {req("data", o->getOperand(0)),
                                req("indices", o->getOperand(1))},
                               {req("y", o->getOperand(2))}};
          })
      .Case<culib::ScatterElementsOp, culib::ScatterNDOp>(
          [&](Operation *o) -> std::optional<CallBuffers> {
            return CallBuffers{"kernel." + o->getName().stripDialect().str(),
                               {req("data", o->getOperand(0)),
                                req("indices", o->getOperand(1)),
                                req("updates", o->getOperand(2))},
                               {req("y", o->getOperand(3))}};
          })
      .Case([&](culib::LayerNormOp o) {
        return CallBuffers{"kernel.layer_norm",
                           {req("x", o.getX()), req("scale", o.getScale()),
                            opt("bias", o.getBias())},
                           {req("y", o.getY()), opt("mean", o.getMean()),
                            opt("inv_std_dev", o.getInvStdDev())}};
      })
      .Case([&](culib::ScaledSoftmaxOp o) {
        return CallBuffers{"kernel.scaled_softmax",
                           {req("x", o.getX()), opt("mask", o.getMask())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::GroupNormOp o) {
        return CallBuffers{"kernel.group_norm",
                           {req("x", o.getX()), req("scale", o.getScale()),
                            opt("bias", o.getBias())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::RMSNormOp o) {
        return CallBuffers{"kernel.rms_norm",
                           {req("x", o.getX()), req("scale", o.getScale())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::AttentionOp o) {
        return CallBuffers{"kernel.attention",
                           {req("q", o.getQ()), req("k", o.getK()),
                            req("v", o.getV()), opt("mask", o.getMask())},
                           {req("o", o.getO())}};
      })
      .Case([&](culib::InstanceNormOp o) {
        return CallBuffers{"kernel.instance_norm",
                           {req("x", o.getX()), req("scale", o.getScale()),
                            req("bias", o.getBias())},
                           {req("y", o.getY())}};
      })
      .Case([&](culib::NLLLossOp o) {
        return CallBuffers{"kernel.nll_loss",
                           {req("input", o.getInput()),
                            req("target", o.getTarget()),
                            opt("weight", o.getWeight())},
                           {req("loss", o.getLoss())}};
      })
      .Case([&](culib::TopKOp o) {
        return CallBuffers{"kernel.topk",
                           {req("x", o.getX())},
                           {req("values", o.getValues()),
                            req("indices", o.getIndices())}};
      })
      .Case([&](culib::ConvBwdFilterOp o) {
        return CallBuffers{"cudnn.conv_bwd_filter",
                           {req("x", o.getX()), req("dy", o.getDy())},
                           {req("dw", o.getDw())}};
      })
      .Case([&](culib::PoolBwdOp o) {
        return CallBuffers{"cudnn.pool_bwd",
                           {req("x", o.getX()), req("dy", o.getDy())},
                           {req("dx", o.getDx())}};
      })
      .Case([&](culib::LayerNormGradOp o) {
        return CallBuffers{"kernel.layer_norm_grad",
                           {req("dy", o.getDy()), req("x", o.getX()),
                            req("scale", o.getScale()),
                            req("mean", o.getMean()),
                            req("inv_std_dev", o.getInvStdDev())},
                           {req("dx", o.getDx()), req("dscale", o.getDscale()),
                            opt("dbias", o.getDbias())}};
      })
      .Case([&](culib::BatchNormBwdOp o) {
        return CallBuffers{"cudnn.batch_norm_bwd",
                           {req("x", o.getX()), req("scale", o.getScale()),
                            req("dy", o.getDy())},
                           {req("dx", o.getDx()), req("dscale", o.getDscale()),
                            req("dbias", o.getDbias())}};
      })
      .Case([&](culib::SoftmaxCrossEntropyGradOp o) {
        return CallBuffers{"kernel.softmax_cross_entropy_grad",
                           {req("scores", o.getScores()),
                            req("labels", o.getLabels()),
                            req("dloss", o.getDloss()),
                            opt("weights", o.getWeights())},
                           {req("dscores", o.getDscores())}};
      })
      .Case([&](culib::NLLLossGradOp o) {
        return CallBuffers{"kernel.nll_loss_grad",
                           {req("input", o.getInput()),
                            req("target", o.getTarget()),
                            req("dloss", o.getDloss()),
                            opt("weight", o.getWeight())},
                           {req("dinput", o.getDinput())}};
      })
      .Case([&](culib::LSTMBwdOp o) {
        return CallBuffers{
            "kernel.lstm_bwd",
            {req("x", o.getX()), req("w", o.getW()), req("r", o.getR()),
             opt("b", o.getB()), opt("initial_h", o.getInitialH()),
             opt("initial_c", o.getInitialC()), opt("dy", o.getDy()),
             opt("dy_h", o.getDyH()), opt("dy_c", o.getDyC())},
            {req("dx", o.getDx()), req("dw", o.getDw()), req("dr", o.getDr()),
             opt("db", o.getDb()), opt("dinitial_h", o.getDinitialH()),
             opt("dinitial_c", o.getDinitialC())}};
      })
      .Case([&](culib::UnscaleCheckFiniteOp o) {
        CallBuffers b{"kernel.unscale_check_finite",
                      {req("scale", o.getScale())},
                      {req("found_inf", o.getFoundInf())}};
        for (Value v : o.getGrads())
          b.ins.push_back(req("grads", v));
        for (Value v : o.getUnscaled())
          b.outs.push_back(req("unscaled", v));
        return b;
      })
      .Case([&](culib::AllReduceOp o) {
        CallBuffers b{"comm.all_reduce", {}, {}};
        for (Value v : o.getInputs())
          b.ins.push_back(req("inputs", v));
        for (Value v : o.getOutputs())
          b.outs.push_back(req("outputs", v));
        return b;
      })
      .Case([&](culib::LossScaleUpdateOp o) {
        return CallBuffers{"kernel.loss_scale_update",
                           {req("found_inf", o.getFoundInf())},
                           {req("scale", o.getScale()),
                            req("growth_tracker", o.getGrowthTracker())}};
      })
      .Case([&](culib::SGDStepOp o) {
        return CallBuffers{"kernel.sgd_step",
                           {req("grad", o.getGrad()),
                            opt("found_inf", o.getFoundInf())},
                           {req("param", o.getParam()),
                            opt("momentum_buffer", o.getMomentumBuffer()),
                            req("step", o.getStep())}};
      })
      .Case([&](culib::AdamStepOp o) {
        return CallBuffers{"kernel.adam_step",
                           {req("grad", o.getGrad()),
                            opt("found_inf", o.getFoundInf())},
                           {req("param", o.getParam()),
                            req("exp_avg", o.getExpAvg()),
                            req("exp_avg_sq", o.getExpAvgSq()),
                            req("step", o.getStep())}};
      })
      .Default([](Operation *) { return std::nullopt; });
}

