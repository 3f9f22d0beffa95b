//===- CudaPlanningNN.cpp - planning of the CUDA backend's NN calls -------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. The normalizations (layer norm,
// instance norm, LRN), the recurrent calls (cudnn.rnn, kernel.lstm_bwd) and
// the small ONNX kernels (topk, cumsum, hardmax, trilu). Every planner binds
// the call's buffers and reads its attributes as the CPU call does, then
// runs the CPU kernel's own checks (the cpu::check* functions) on views of
// the descriptors, so that both backends accept and refuse the same plans
// with the same words; what is left here is the kernels' geometry.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/CPU/NNKernels.h"

#include <algorithm>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

namespace {

/// Strides of `v` broadcast (aligned to the right) over `target`, 0 where
/// it is broadcast; dense when it has target's elements. `strides` holds
/// kMaxDims entries: the dims beyond are not written (the caller refuses
/// a broadcast over more dims; a dense one needs no strides).
void broadcastStrides(const Shape &v, const Shape &target, int64_t *strides,
                      int32_t &dense) {
  dense = rt::numElements(v) == rt::numElements(target);
  const std::vector<int64_t> all = cpu::broadcastStridesOf(v, target);
  for (size_t i = 0; i < all.size() && i < static_cast<size_t>(kMaxDims); ++i)
    strides[i] = all[i];
}

} // namespace

Result<AttentionParams> planAttention(const PlanCall &call,
                                      const std::vector<TensorDesc> &ops,
                                      const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 4> in;
  std::array<const TensorDesc *, 1> out;
  if (Status s = cpu::bindCallBuffers(
          call, ops,
          {{{"q", false}, {"k", false}, {"v", false}, {"mask", true}}}, in, res,
          {{{"o", false}}}, out);
      !s)
    return s;
  MP_TRY(o, cpu::attentionOptionsOf(call, in[3] != nullptr));
  Views<4> vi(in);
  Views<1> vo(out);
  if (Status s = cpu::checkAttention(*vi[0], *vi[1], *vi[2], vi[3], *vo[0], o);
      !s)
    return s;
  if (o.shape.headDim > kMaxAttentionDim || o.shape.valueDim > kMaxAttentionDim)
    return fail("attention", "head and value dims above " +
                                 std::to_string(kMaxAttentionDim) +
                                 " are not implemented on the GPU");
  AttentionParams p;
  p.batch = o.shape.batch;
  p.heads = o.shape.heads;
  p.queries = o.shape.queries;
  p.keys = o.shape.keys;
  p.headDim = o.shape.headDim;
  p.valueDim = o.shape.valueDim;
  auto view = [](const AttentionView &v) {
    AttentionViewParams r;
    r.offset = v.offset;
    std::copy(v.strides.begin(), v.strides.end(), r.strides);
    return r;
  };
  p.q = view(o.q);
  p.k = view(o.k);
  p.v = view(o.v);
  p.o = view(o.o);
  p.mask = view(o.mask);
  p.qDtype = code(in[0]->dtype);
  p.kDtype = code(in[1]->dtype);
  p.vDtype = code(in[2]->dtype);
  p.maskDtype = in[3] ? code(in[3]->dtype) : 0;
  p.oDtype = code(out[0]->dtype);
  p.scale = o.scale;
  p.qData = cptr(*in[0]);
  p.kData = cptr(*in[1]);
  p.vData = cptr(*in[2]);
  p.maskData = in[3] ? cptr(*in[3]) : nullptr;
  p.oData = mptr(*out[0]);
  return p;
}

Result<NormParams> planLayerNorm(const PlanCall &call,
                                 const std::vector<TensorDesc> &ops,
                                 const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 3> in, out;
  if (Status s = cpu::bindCallBuffers(
          call, ops, {{{"x", false}, {"scale", false}, {"bias", true}}}, in,
          res, {{{"y", false}, {"mean", true}, {"inv_std_dev", true}}}, out);
      !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis", -1));
  MP_TRY(epsilon, floatAttr(call, "epsilon", 1e-5));
  Views<3> vi(in), vo(out);
  if (Status s = cpu::checkLayerNorm(*vi[0], *vi[1], vi[2], *vo[0], vo[1],
                                     vo[2], axis, static_cast<float>(epsilon));
      !s)
    return s;
  const TensorDesc &x = *in[0];
  const Shape inner(x.shape.begin() + axis, x.shape.end());
  NormParams p;
  p.xDtype = code(x.dtype);
  p.scaleDtype = code(in[1]->dtype);
  p.biasDtype = in[2] ? code(in[2]->dtype) : 0;
  p.meanDtype = out[1] ? code(out[1]->dtype) : 0;
  p.invStdDtype = out[2] ? code(out[2]->dtype) : 0;
  p.epsilon = static_cast<float>(epsilon);
  p.rowSize = rt::numElements(inner);
  p.rows = product(x.shape, 0, static_cast<size_t>(axis));
  p.rowRank = static_cast<int32_t>(inner.size());
  broadcastStrides(in[1]->shape, inner, p.scaleStrides, p.scaleDense);
  if (in[2])
    broadcastStrides(in[2]->shape, inner, p.biasStrides, p.biasDense);
  if ((!p.scaleDense || !p.biasDense) && inner.size() > kMaxDims)
    return fail("layer_norm", "a broadcast scale or bias over more than " +
                                  std::to_string(kMaxDims) +
                                  " normalized dims is not implemented on "
                                  "the GPU");
  for (size_t i = 0; i < inner.size() && i < kMaxDims; ++i)
    p.rowDims[i] = inner[i];
  p.x = cptr(x);
  p.scale = cptr(in[1]);
  p.bias = cptr(in[2]);
  p.y = mptr(out[0]);
  p.mean = mptr(out[1]);
  p.invStd = mptr(out[2]);
  return p;
}

Result<LayerNormGradParams>
planLayerNormGrad(const PlanCall &call, const std::vector<TensorDesc> &ops,
                  const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 5> in;
  std::array<const TensorDesc *, 3> out;
  if (Status s = cpu::bindCallBuffers(
          call, ops,
          {{{"dy", false},
            {"x", false},
            {"scale", false},
            {"mean", false},
            {"inv_std_dev", false}}},
          in, res, {{{"dx", false}, {"dscale", false}, {"dbias", true}}}, out);
      !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis", -1));
  Views<5> vi(in);
  Views<3> vo(out);
  if (Status s = cpu::checkLayerNormGrad(*vi[0], *vi[1], *vi[2], *vi[3], *vi[4],
                                         *vo[0], *vo[1], vo[2], axis);
      !s)
    return s;
  const TensorDesc &x = *in[1];
  LayerNormGradParams p;
  p.xDtype = code(x.dtype);
  p.scaleDtype = code(in[2]->dtype);
  p.hasBias = out[2] ? 1 : 0;
  p.rows = product(x.shape, 0, static_cast<size_t>(axis));
  p.rowSize = p.rows ? rt::numElements(x.shape) / p.rows : 0;
  p.dy = cptr(*in[0]);
  p.x = cptr(x);
  p.scale = cptr(*in[2]);
  p.mean = static_cast<const float *>(cptr(*in[3]));
  p.invStd = static_cast<const float *>(cptr(*in[4]));
  p.dx = mptr(*out[0]);
  p.dscale = mptr(*out[1]);
  p.dbias = out[2] ? mptr(*out[2]) : nullptr;
  return p;
}

Result<NormParams> planRmsNorm(const PlanCall &call,
                               const std::vector<TensorDesc> &ops,
                               const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 2> in;
  std::array<const TensorDesc *, 1> out;
  if (Status s =
          cpu::bindCallBuffers(call, ops, {{{"x", false}, {"scale", false}}},
                               in, res, {{{"y", false}}}, out);
      !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis", -1));
  MP_TRY(epsilon, floatAttr(call, "epsilon", 1e-5));
  Views<2> vi(in);
  Views<1> vo(out);
  if (Status s = cpu::checkRmsNorm(*vi[0], *vi[1], *vo[0], axis,
                                   static_cast<float>(epsilon));
      !s)
    return s;
  const TensorDesc &x = *in[0];
  const Shape inner(x.shape.begin() + axis, x.shape.end());
  NormParams p;
  p.rms = 1;
  p.xDtype = code(x.dtype);
  p.scaleDtype = code(in[1]->dtype);
  p.epsilon = static_cast<float>(epsilon);
  p.rowSize = rt::numElements(inner);
  p.rows = product(x.shape, 0, static_cast<size_t>(axis));
  p.rowRank = static_cast<int32_t>(inner.size());
  broadcastStrides(in[1]->shape, inner, p.scaleStrides, p.scaleDense);
  if (!p.scaleDense && inner.size() > kMaxDims)
    return fail("rms_norm", "a broadcast scale over more than " +
                                std::to_string(kMaxDims) +
                                " normalized dims is not implemented on the "
                                "GPU");
  for (size_t i = 0; i < inner.size() && i < kMaxDims; ++i)
    p.rowDims[i] = inner[i];
  p.x = cptr(x);
  p.scale = cptr(in[1]);
  p.y = mptr(out[0]);
  return p;
}

Result<NormParams> planGroupNorm(const PlanCall &call,
                                 const std::vector<TensorDesc> &ops,
                                 const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 3> in;
  std::array<const TensorDesc *, 1> out;
  if (Status s = cpu::bindCallBuffers(
          call, ops, {{{"x", false}, {"scale", false}, {"bias", true}}}, in,
          res, {{{"y", false}}}, out);
      !s)
    return s;
  MP_TRY(groups, intAttr(call, "groups", 1));
  MP_TRY(epsilon, floatAttr(call, "epsilon", 1e-5));
  Views<3> vi(in);
  Views<1> vo(out);
  if (Status s = cpu::checkGroupNorm(*vi[0], *vi[1], vi[2], *vo[0], groups,
                                     static_cast<float>(epsilon));
      !s)
    return s;
  const TensorDesc &x = *in[0];
  NormParams p;
  p.xDtype = code(x.dtype);
  p.scaleDtype = code(in[1]->dtype);
  p.biasDtype = in[2] ? code(in[2]->dtype) : 0;
  p.epsilon = static_cast<float>(epsilon);
  p.groups = groups;
  p.groupSpatial = product(x.shape, 2, x.shape.size());
  p.rows = x.shape[0] * groups;
  p.rowSize = x.shape[1] / groups * p.groupSpatial;
  p.x = cptr(x);
  p.scale = cptr(in[1]);
  p.bias = cptr(in[2]);
  p.y = mptr(out[0]);
  return p;
}

Result<NormParams> planInstanceNorm(const PlanCall &call,
                                    const std::vector<TensorDesc> &ops,
                                    const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 3, 3, 1, 1); !s)
    return s;
  MP_TRY(epsilon, floatAttr(call, "epsilon", 1e-5));
  const TensorDesc &x = ops[0], &scale = ops[1], &bias = ops[2], &y = res[0];
  if (Status s = cpu::checkInstanceNorm(viewOf(x), viewOf(scale), viewOf(bias),
                                        viewOf(y), static_cast<float>(epsilon));
      !s)
    return s;
  NormParams p;
  p.instance = 1;
  p.xDtype = code(x.dtype);
  p.scaleDtype = code(scale.dtype);
  p.biasDtype = code(bias.dtype);
  p.epsilon = static_cast<float>(epsilon);
  p.channels = x.shape[1];
  p.rows = x.shape[0] * x.shape[1];
  p.rowSize = product(x.shape, 2, x.shape.size());
  p.x = cptr(x);
  p.scale = cptr(scale);
  p.bias = cptr(bias);
  p.y = mptr(y);
  return p;
}

Result<LrnParams> planLrn(const PlanCall &call,
                          const std::vector<TensorDesc> &ops,
                          const std::vector<TensorDesc> &res) {
  MP_TRY(o,
         checkedUnaryOptions(call, ops, res, cpu::lrnOptionsOf, cpu::checkLrn));
  const TensorDesc &x = ops[0], &y = res[0];
  LrnParams p;
  p.dtype = code(x.dtype);
  p.n = x.shape[0];
  p.c = x.shape[1];
  p.spatial = product(x.shape, 2, x.shape.size());
  p.before = (o.size - 1) / 2;
  p.after = o.size - 1 - p.before;
  // The CPU's float expression: alpha / size in f32.
  p.scale = o.alpha / static_cast<float>(o.size);
  p.beta = o.beta;
  p.bias = o.bias;
  p.x = cptr(x);
  p.y = mptr(y);
  return p;
}

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

namespace {

/// The CPU's checks of the recurrent calls on the bound views.
Status checkRnn(const Views<8> &vi, const Views<3> &vo,
                const cpu::RnnOptions &o) {
  return cpu::checkRnn(*vi[0], *vi[1], *vi[2], vi[3], vi[4], vi[5], vi[6],
                       vi[7], vo[0], vo[1], vo[2], o);
}
Status checkLstmBackward(const Views<9> &vi, const Views<6> &vo,
                         const cpu::LstmBackwardOptions &o) {
  return cpu::checkLstmBackward(*vi[0], *vi[1], *vi[2], vi[3], vi[4], vi[5],
                                vi[6], vi[7], vi[8], *vo[0], *vo[1], *vo[2],
                                vo[3], vo[4], vo[5], o);
}

} // namespace

Result<RnnPlan> planRnn(const PlanCall &call,
                        const std::vector<TensorDesc> &ops,
                        const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 8> in;
  std::array<const TensorDesc *, 3> out;
  MP_TRY(o, bindAndCheck(call, ops, cpu::kRnnOperands, in, res,
                         cpu::kRnnResults, out, cpu::rnnOptionsOf, checkRnn));
  const TensorDesc &x = *in[0];
  RnnPlan plan;
  RnnParams &p = plan.params;
  p.mode = o.mode == cpu::RnnMode::Lstm  ? kRnnLstm
           : o.mode == cpu::RnnMode::Gru ? kRnnGru
                                         : kRnnPlain;
  p.dtype = code(x.dtype);
  p.seqDtype = in[4] ? code(in[4]->dtype) : 0;
  p.hasClip = o.clip.has_value();
  p.clip = o.clip.value_or(0.0f);
  p.inputForget = o.inputForget;
  p.linearBeforeReset = o.linearBeforeReset;
  p.seq = x.shape[0];
  p.batch = x.shape[1];
  p.input = x.shape[2];
  p.hidden = o.hiddenSize;
  p.dirs = o.direction == cpu::RnnDirection::Bidirectional ? 2 : 1;
  // rnnOptionsOf parsed the activations (the defaults when none are given).
  for (size_t i = 0; i < o.activations.size() && i < 6; ++i) {
    p.acts[i].kind = static_cast<int32_t>(o.activations[i].kind);
    p.acts[i].alpha = o.activations[i].alpha;
    p.acts[i].beta = o.activations[i].beta;
  }
  p.x = cptr(x);
  p.w = cptr(in[1]);
  p.r = cptr(in[2]);
  p.b = cptr(in[3]);
  p.seqLens = cptr(in[4]);
  p.initH = cptr(in[5]);
  p.initC = cptr(in[6]);
  p.p = cptr(in[7]);
  p.y = mptr(out[0]);
  plan.yH = mptr(out[1]);
  plan.yC = mptr(out[2]);
  plan.reverse = o.direction == cpu::RnnDirection::Reverse;
  plan.twoPhase = p.mode == kRnnGru && !p.linearBeforeReset;
  const int64_t gates = p.mode == kRnnLstm ? 4 : p.mode == kRnnGru ? 3 : 1;
  const uint64_t gh = static_cast<uint64_t>(gates * p.hidden);
  const uint64_t state = static_cast<uint64_t>(p.batch * p.hidden);
  WorkspaceLayout ws;
  plan.xwOffset = ws.add(static_cast<uint64_t>(p.seq * p.batch) * gh * 4);
  plan.hrOffset = ws.add(static_cast<uint64_t>(p.batch) * gh * 4);
  plan.hOffset = ws.add(state * 4);
  plan.cOffset = ws.add(state * 4);
  plan.tmpOffset = ws.add(state * 4);
  plan.workspaceBytes = ws.total();
  return plan;
}

Result<LstmBwdPlan> planLstmBwd(const PlanCall &call,
                                const std::vector<TensorDesc> &ops,
                                const std::vector<TensorDesc> &res) {
  std::array<const TensorDesc *, 9> in;
  std::array<const TensorDesc *, 6> out;
  MP_TRY(o, bindAndCheck(call, ops, cpu::kLstmBwdOperands, in, res,
                         cpu::kLstmBwdResults, out, cpu::lstmBackwardOptionsOf,
                         checkLstmBackward));
  const TensorDesc &x = *in[0];
  LstmBwdPlan plan;
  LstmBwdParams &p = plan.params;
  p.dtype = code(x.dtype);
  p.f64 = x.dtype == DType::F64;
  p.seq = x.shape[0];
  p.batch = x.shape[1];
  p.input = x.shape[2];
  p.hidden = o.hiddenSize;
  p.dirs = o.direction == cpu::RnnDirection::Bidirectional ? 2 : 1;
  p.x = cptr(x);
  p.w = cptr(in[1]);
  p.r = cptr(in[2]);
  p.b = cptr(in[3]);
  p.initH = cptr(in[4]);
  p.initC = cptr(in[5]);
  p.dy = cptr(in[6]);
  p.dyH = cptr(in[7]);
  p.dyC = cptr(in[8]);
  plan.reverse = o.direction == cpu::RnnDirection::Reverse;
  for (size_t i = 0; i < 6; ++i)
    if (out[i]) {
      plan.out[i] = mptr(out[i]);
      plan.outElements[i] = out[i]->numElements();
    }
  const uint64_t t = p.f64 ? 8 : 4;
  const uint64_t sb = static_cast<uint64_t>(p.seq * p.batch),
                 h = static_cast<uint64_t>(p.hidden), gh = 4 * h,
                 bh = static_cast<uint64_t>(p.batch) * h,
                 dirs = static_cast<uint64_t>(p.dirs),
                 input = static_cast<uint64_t>(p.input);
  const uint64_t sizes[12] = {sb * gh,
                              sb * h,
                              sb * h,
                              sb * h,
                              bh,
                              bh,
                              dirs * bh,
                              dirs * bh,
                              sb * input,
                              dirs * gh * input,
                              dirs * gh * h,
                              dirs * 2 * gh};
  WorkspaceLayout ws;
  for (size_t i = 0; i < 12; ++i)
    plan.offsets[i] = ws.add(sizes[i] * t);
  plan.workspaceBytes = ws.total();
  return plan;
}

//===----------------------------------------------------------------------===//
// Selection and scans
//===----------------------------------------------------------------------===//

namespace {

/// [outer, len, inner] of `shape` around a normalized axis.
void splitAt(const Shape &shape, int64_t axis, int64_t &outer, int64_t &len,
             int64_t &inner) {
  const size_t a = static_cast<size_t>(axis);
  outer = product(shape, 0, a);
  len = shape[a];
  inner = product(shape, a + 1, shape.size());
}

} // namespace

Result<TopkParams> planTopk(const PlanCall &call,
                            const std::vector<TensorDesc> &ops,
                            const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 2, 2); !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis", -1));
  MP_TRY(largest, cpu::boolAttr(call, "largest", true));
  MP_TRY(sorted, cpu::boolAttr(call, "sorted", true));
  (void)sorted; // always sorted, as the CPU
  const TensorDesc &x = ops[0], &values = res[0], &indices = res[1];
  if (Status s =
          cpu::checkTopk(viewOf(x), viewOf(values), viewOf(indices), axis);
      !s)
    return s;
  TopkParams p;
  p.dtype = code(x.dtype);
  p.elemSize = static_cast<int32_t>(byteSize(x.dtype));
  p.key = isFloat(x.dtype) ? kKeyFloat
          : (x.dtype == DType::U8 || x.dtype == DType::U16 ||
             x.dtype == DType::U32 || x.dtype == DType::U64)
              ? kKeyUnsigned
              : kKeySigned;
  p.largest = largest;
  p.indexDtype = code(indices.dtype);
  splitAt(x.shape, axis, p.outer, p.len, p.inner);
  p.k = values.shape[static_cast<size_t>(axis)];
  p.x = cptr(x);
  p.values = mptr(values);
  p.indices = mptr(indices);
  return p;
}

Result<ScanParams> planCumsum(const PlanCall &call,
                              const std::vector<TensorDesc> &ops,
                              const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis"));
  MP_TRY(exclusive, cpu::boolAttr(call, "exclusive", false));
  MP_TRY(reverse, cpu::boolAttr(call, "reverse", false));
  if (Status s = cpu::checkCumsum(viewOf(ops[0]), viewOf(res[0]), axis); !s)
    return s;
  ScanParams p;
  p.dtype = code(ops[0].dtype);
  p.exclusive = exclusive;
  p.reverse = reverse;
  splitAt(ops[0].shape, axis, p.outer, p.len, p.inner);
  p.x = cptr(ops[0]);
  p.y = mptr(res[0]);
  return p;
}

Result<ScanParams> planHardmax(const PlanCall &call,
                               const std::vector<TensorDesc> &ops,
                               const std::vector<TensorDesc> &res) {
  if (Status s = arity(ops, res, 1, 1, 1, 1); !s)
    return s;
  MP_TRY(axis, intAttr(call, "axis", -1));
  if (Status s = cpu::checkHardmax(viewOf(ops[0]), viewOf(res[0]), axis); !s)
    return s;
  ScanParams p;
  p.dtype = code(ops[0].dtype);
  splitAt(ops[0].shape, axis, p.outer, p.len, p.inner);
  p.x = cptr(ops[0]);
  p.y = mptr(res[0]);
  return p;
}

} // namespace mp::rt::cuda
