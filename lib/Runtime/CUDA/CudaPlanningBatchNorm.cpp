//===- CudaPlanningBatchNorm.cpp - planning of the batch norms ------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.batch_norm_inference, _training
// and _bwd, and the choice of cuDNN's batch norm (the CPU's BatchNorm.cpp and
// BatchNormBackward.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>
#include <cmath>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

namespace {

/// Whether cuDNN runs a batch norm that planBatchNorm accepted, and how.
CudnnBatchNorm chooseCudnnBatchNorm(const BatchNormPlan &plan, bool nhwc,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res,
                                    BatchNormImpl impl) {
  CudnnBatchNorm c;
  auto no = [&](std::string why) {
    c.whyNot = std::move(why);
    return c;
  };
  if (impl == BatchNormImpl::Own)
    return no("the own kernels were asked for");
  const TensorDesc &x = ops[0];
  // bf16: cuDNN's batch norm takes it on sm_80 and later (the backend's
  // architectures), with f32 per-channel tensors as for f16.
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    return no("x is " + dt(x.dtype) +
              " (cuDNN's batch norm: f16, bf16 or f32)");
  // Measured on an H100 (docs/benchmarks.md, GPU results): cuDNN 9's
  // channels-last training batch norm took 3-16 ms a call on ResNet-50's
  // batch-64 shapes, f32 and f16 alike, its channels-first one a tenth of it.
  if (impl == BatchNormImpl::Auto && plan.kind != BatchNormKind::Inference &&
      (x.dtype != DType::F32 || nhwc))
    return no("16-bit and channels-last training batch norms run on the own "
              "kernels (faster than cuDNN's: BatchNormImpl::Auto)");
  // cuDNN's per-channel tensors are f32 for 16-bit and f32 data.
  std::vector<std::pair<const char *, const TensorDesc *>> perChannel;
  if (plan.kind == BatchNormKind::Backward) {
    perChannel = {{"scale", &ops[1]}, {"dscale", &res[1]}, {"dbias", &res[2]}};
  } else {
    perChannel = {{"scale", &ops[1]},
                  {"bias", &ops[2]},
                  {"mean", &ops[3]},
                  {"var", &ops[4]}};
    if (plan.kind == BatchNormKind::Training) {
      perChannel.push_back({"runningMean", &res[1]});
      perChannel.push_back({"runningVar", &res[2]});
    }
    if (res[0].addr == x.addr)
      return no("y is x (in place)");
  }
  for (auto [name, v] : perChannel)
    if (v->dtype != DType::F32)
      return no(std::string(name) + " is " + dt(v->dtype) +
                " (cuDNN's per-channel tensors are f32)");
  const Shape &s = x.shape;
  int64_t n = s[0], channels = nhwc ? s.back() : s[1];
  int64_t spatial =
      nhwc ? product(s, 1, s.size() - 1) : product(s, 2, s.size());
  constexpr int64_t kIntMax = 2147483647;
  if (n * channels * spatial > kIntMax)
    return no("x has more than 2^31 - 1 elements (cuDNN's sizes are int)");
  const int64_t count = n * spatial; // elements per channel
  // cuDNN has refused large batches (N > 65535 in inference, > 880801 in
  // training; PyTorch guards so): channels last, the batch folds into the
  // spatial dim (the same rows, the same statistics); channels first runs
  // on the own kernels.
  const int64_t maxBatch =
      plan.kind == BatchNormKind::Inference ? 65535 : 880801;
  if (n > maxBatch) {
    if (!nhwc)
      return no("a batch of " + std::to_string(n) + " (cuDNN's batch norm " +
                "takes up to " + std::to_string(maxBatch) + ")");
    spatial *= n;
    n = 1;
  }
  if (count == 0)
    return no("x has no elements per channel");
  if (plan.kind == BatchNormKind::Training && count < 2)
    return no("one element per channel (no unbiased variance)");
  c.use = true;
  c.nhwc = nhwc;
  c.dtype = x.dtype;
  c.dims = {static_cast<int32_t>(n), static_cast<int32_t>(channels),
            static_cast<int32_t>(spatial), 1};
  return c;
}

/// The own kernels' scratch: 3 floats per channel for the normalisation
/// (inference, training), 4 doubles per channel for the statistics
/// (backward; training channels last), and channels last the partial sums
/// of the row slices (rowSlices x C x 2 doubles). The slices give about 512
/// blocks of 32 channels x 8 rows, at least 8 rows each.
void planOwnScratch(BatchNormPlan &plan) {
  BatchNormParams &p = plan.params;
  const uint64_t c = static_cast<uint64_t>(p.geom.c);
  // Synchronised: chanD and the passes' sums, channel by channel (no row
  // slices).
  const bool rows =
      p.geom.inner == 1 && plan.kind != BatchNormKind::Inference && !plan.sync;
  uint64_t floats = plan.kind == BatchNormKind::Backward ? 0 : 3 * c;
  plan.doublesOffset = (floats * sizeof(float) + 7) / 8 * 8;
  uint64_t doubles = plan.sync                                      ? 6 * c
                     : plan.kind == BatchNormKind::Backward || rows ? 4 * c
                                                                    : 0;
  if (rows) {
    int64_t channelBlocks = (p.geom.c + 31) / 32;
    int64_t rowGroups = (p.geom.outer + 7) / 8;
    int64_t slices =
        std::max<int64_t>(1, 512 / std::max<int64_t>(1, channelBlocks));
    p.rowSlices = static_cast<int32_t>(
        std::max<int64_t>(1, std::min<int64_t>(slices, rowGroups)));
    doubles += static_cast<uint64_t>(p.rowSlices) * c * 2;
  }
  plan.scratchBytes = doubles ? plan.doublesOffset + doubles * sizeof(double)
                              : floats * sizeof(float);
}

} // namespace

Result<BatchNormPlan> planBatchNorm(BatchNormKind kind, const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res,
                                    BatchNormImpl impl) {
  BatchNormPlan plan;
  plan.kind = kind;
  BatchNormParams &p = plan.params;
  const char *op = kind == BatchNormKind::Inference  ? "batchNormInference"
                   : kind == BatchNormKind::Training ? "batchNormTraining"
                                                     : "batch_norm_bwd";
  // A data-parallel step's batch norm over the ranks' global batch: its
  // per-channel sums are added up across the GPUs between the passes, on
  // the own kernels.
  plan.sync =
      kind != BatchNormKind::Inference && call.attr("sync_ranks") != nullptr;
  if (kind == BatchNormKind::Backward) {
    if (Status s = arity(ops, res, 3, 3, 3, 3); !s)
      return s;
  } else {
    if (Status s =
            arity(ops, res, 5, 5, kind == BatchNormKind::Inference ? 1 : 3,
                  kind == BatchNormKind::Inference ? 1 : 3);
        !s)
      return s;
  }
  MP_TRY(options, cpu::batchNormOptionsOf(call));
  p.epsilon = options.epsilon;
  p.momentum = options.momentum;
  const TensorDesc &x = ops[0];
  if (Status s = checkDesc(op, "x", x); !s)
    return s;
  if (x.shape.size() < 2)
    return fail(op, "x needs rank >= 2 (N, C, ...), got " + shapeStr(x.shape));
  const bool nhwc = options.layout == cpu::Layout::NHWC;
  int64_t c = nhwc ? x.shape.back() : x.shape[1];
  ChannelGeom g =
      nhwc ? ChannelGeom{product(x.shape, 0, x.shape.size() - 1), c, 1}
           : ChannelGeom{x.shape[0], c, product(x.shape, 2, x.shape.size())};
  p.geom = g;
  auto checkParam = [&](const char *name, const TensorDesc &v,
                        bool anyFloat) -> Status {
    if (Status s = checkDesc(op, name, v); !s)
      return s;
    if (anyFloat ? !isFloat(v.dtype) : !isF32or16(v.dtype))
      return fail(op, std::string(name) + " has dtype " + dt(v.dtype) +
                          (anyFloat ? "; expected a float dtype"
                                    : "; expected f32, f16 or bf16"));
    if (!(v.shape.size() == 1 && v.shape[0] == c))
      return fail(op, std::string(name) + " has shape " + shapeStr(v.shape) +
                          ", expected [" + std::to_string(c) + "]");
    return Status::ok();
  };
  if (!std::isfinite(p.epsilon) || p.epsilon < 0)
    return fail(op, "epsilon must be finite and >= 0");
  p.xDtype = code(x.dtype);
  p.x = cptr(x);
  if (kind == BatchNormKind::Backward) {
    const TensorDesc &scale = ops[1], &dy = ops[2];
    const TensorDesc &dx = res[0], &dscale = res[1], &dbias = res[2];
    if (!isFloat(x.dtype))
      return fail(op, "x has dtype " + dt(x.dtype) +
                          "; expected f32, f16, bf16 or f64");
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"dy", &dy}, {"dx", &dx}})
      if (v->dtype != x.dtype || v->shape != x.shape)
        return fail(op, std::string(name) + " (" + dt(v->dtype) + " " +
                            shapeStr(v->shape) +
                            ") must have x's dtype and shape (" + dt(x.dtype) +
                            " " + shapeStr(x.shape) + ")");
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"scale", &scale},
          {"dscale", &dscale},
          {"dbias", &dbias}})
      if (Status s = checkParam(name, *v, true); !s)
        return s;
    const std::pair<const char *, const TensorDesc *> outs[] = {
        {"dx", &dx}, {"dscale", &dscale}, {"dbias", &dbias}};
    for (auto [oname, o] : outs) {
      for (auto [iname, in] :
           {std::pair<const char *, const TensorDesc *>{"x", &x},
            {"scale", &scale},
            {"dy", &dy}})
        if (overlapping(*o, *in))
          return fail(op, std::string(iname) + " overlaps " + oname);
    }
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = i + 1; j < 3; ++j)
        if (overlapping(*outs[i].second, *outs[j].second))
          return fail(op, std::string(outs[i].first) + " overlaps " +
                              outs[j].first);
    p.scaleDtype = code(scale.dtype);
    p.dyDtype = code(dy.dtype);
    p.dxDtype = code(dx.dtype);
    p.dscaleDtype = code(dscale.dtype);
    p.dbiasDtype = code(dbias.dtype);
    p.scale = cptr(scale);
    p.dy = cptr(dy);
    p.dx = mptr(dx);
    p.dscale = mptr(dscale);
    p.dbias = mptr(dbias);
    if (!plan.sync)
      plan.cudnn = chooseCudnnBatchNorm(plan, nhwc, ops, res, impl);
    if (!plan.cudnn.use)
      planOwnScratch(plan);
    return plan;
  }
  const TensorDesc &y = res[0];
  const char *names[] = {"scale", "bias", "mean", "var"};
  if (kind == BatchNormKind::Training) {
    names[2] = "inputMean";
    names[3] = "inputVar";
  }
  if (Status s = checkDesc(op, "y", y); !s)
    return s;
  for (int i = 1; i < 5; ++i)
    if (Status s = checkDesc(op, names[i - 1], ops[i]); !s)
      return s;
  if (kind == BatchNormKind::Training)
    for (int i = 1; i < 3; ++i)
      if (Status s =
              checkDesc(op, i == 1 ? "runningMean" : "runningVar", res[i]);
          !s)
        return s;
  // The CPU kernel's checks, on views of the descriptors.
  Status checked = kind == BatchNormKind::Inference
                       ? cpu::checkBatchNormInference(
                             viewOf(x), viewOf(ops[1]), viewOf(ops[2]),
                             viewOf(ops[3]), viewOf(ops[4]), viewOf(y), options)
                       : cpu::checkBatchNormTraining(
                             viewOf(x), viewOf(ops[1]), viewOf(ops[2]),
                             viewOf(ops[3]), viewOf(ops[4]), viewOf(y),
                             viewOf(res[1]), viewOf(res[2]), options);
  if (!checked)
    return checked;
  p.scaleDtype = code(ops[1].dtype);
  p.biasDtype = code(ops[2].dtype);
  p.meanDtype = code(ops[3].dtype);
  p.varDtype = code(ops[4].dtype);
  p.scale = cptr(ops[1]);
  p.bias = cptr(ops[2]);
  p.mean = cptr(ops[3]);
  p.var = cptr(ops[4]);
  p.y = mptr(y);
  if (kind == BatchNormKind::Training) {
    const TensorDesc &rm = res[1], &rv = res[2];
    p.runMeanDtype = code(rm.dtype);
    p.runVarDtype = code(rv.dtype);
    p.runMean = mptr(rm);
    p.runVar = mptr(rv);
  }
  if (!plan.sync)
    plan.cudnn = chooseCudnnBatchNorm(plan, nhwc, ops, res, impl);
  if (!plan.cudnn.use)
    planOwnScratch(plan);
  else if (kind == BatchNormKind::Training)
    plan.scratchBytes = static_cast<uint64_t>(c) * 2 * sizeof(float);
  return plan;
}

} // namespace mp::rt::cuda
