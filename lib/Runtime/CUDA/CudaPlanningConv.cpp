//===- CudaPlanningConv.cpp - planning of the convolutions ----------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cudnn.conv_fwd, conv_bwd_data and
// conv_bwd_filter (the CPU's Conv.cpp, ConvBackward.cpp, ConvTranspose.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

namespace {

/// The attributes shared by the three convolutions.
struct ConvAttrs {
  std::vector<int64_t> padsBegin, padsEnd, strides, dilations;
  int64_t groups = 1;
  bool nhwc = false;
  EpilogueAct act = kActNone;
  float clipMin = 0, clipMax = 0; ///< kActClip's bounds
};

} // namespace

Result<ConvPlan> planConv(ConvKind kind, const PlanCall &call,
                          const std::vector<TensorDesc> &ops,
                          const std::vector<TensorDesc> &res) {
  const char *kOp = kind == ConvKind::Forward        ? "conv"
                    : kind == ConvKind::BackwardData ? "conv_transpose"
                                                     : "conv_bwd_filter";
  // Buffers.
  const TensorDesc *x = nullptr, *w = nullptr, *bias = nullptr,
                   *residual = nullptr,
                   *y = nullptr; // for BackwardFilter: w = dy, y = dw
  if (kind == ConvKind::BackwardFilter) {
    if (Status s = arity(ops, res, 2, 2, 1, 1); !s)
      return s;
    x = &ops[0];
    w = &ops[1];
    y = &res[0];
  } else if (kind == ConvKind::Forward) {
    std::array<const TensorDesc *, 4> in{};
    if (Status s = bindDescs<4>(call, ops, "operands", cpu::kConvOperands, in);
        !s)
      return s;
    if (Status s = arity(ops, res, 0, SIZE_MAX, 1, 1); !s)
      return s;
    x = in[0];
    w = in[1];
    bias = in[2];
    residual = in[3];
    y = &res[0];
  } else {
    std::array<const TensorDesc *, 3> in{};
    if (Status s =
            bindDescs<3>(call, ops, "operands",
                         {{{"x", false}, {"w", false}, {"bias", true}}}, in);
        !s)
      return s;
    if (Status s = arity(ops, res, 0, SIZE_MAX, 1, 1); !s)
      return s;
    x = in[0];
    w = in[1];
    bias = in[2];
    y = &res[0];
  }
  MP_TRY(spatial, cpu::spatialRank(viewOf(*x), "x"));
  // Attributes.
  ConvAttrs at;
  if (kind == ConvKind::Forward) {
    // The attributes as the CPU reads them.
    MP_TRY(options, cpu::convOptionsOf(call, spatial));
    at.act = epilogueActOf(options.activation);
    at.clipMin = options.clipMin;
    at.clipMax = options.clipMax;
    at.padsBegin = options.padsBegin;
    at.padsEnd = options.padsEnd;
    at.nhwc = options.layout == cpu::Layout::NHWC;
    at.strides = options.strides;
    at.dilations = options.dilations;
    at.groups = options.groups;
    if (Status s = checkComputeType(call, x->dtype, /*required=*/true); !s)
      return s;
  } else {
    MP_TRY(pads, intListAttr(call, "pads", {}));
    if (kind == ConvKind::BackwardData) {
      if (pads.size() % 2)
        return Status::error("attribute 'pads' must have an even number of "
                             "entries (begins then ends), got " +
                             std::to_string(pads.size()));
      at.padsBegin.assign(pads.begin(), pads.begin() + pads.size() / 2);
      at.padsEnd.assign(pads.begin() + pads.size() / 2, pads.end());
    } else if (!pads.empty()) {
      if (pads.size() != 2 * spatial)
        return Status::error(
            "attribute 'pads' must have " + std::to_string(2 * spatial) +
            " values (begins, then ends, for " + std::to_string(spatial) +
            " spatial dims), got " + std::to_string(pads.size()));
      at.padsBegin.assign(pads.begin(), pads.begin() + spatial);
      at.padsEnd.assign(pads.begin() + spatial, pads.end());
    }
    MP_TRY(strides, intListAttr(call, "strides", {}));
    MP_TRY(dilations, intListAttr(call, "dilations", {}));
    MP_TRY(groups, intAttr(call, "groups", 1));
    MP_TRY(channelsLast, channelsLastAttr(call));
    at.strides = strides;
    at.dilations = dilations;
    at.groups = groups;
    at.nhwc = channelsLast;
    if (call.attr("compute_type")) {
      MP_TRY(ct, dtypeAttr(call, "compute_type"));
      if (kind == ConvKind::BackwardFilter)
        if (Status s = checkComputeType(call, x->dtype, false); !s)
          return s;
      (void)ct;
    }
  }

  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", x},
                         {kind == ConvKind::BackwardFilter ? "dy" : "w", w},
                         {kind == ConvKind::BackwardFilter ? "dw" : "y", y},
                         {"bias", bias}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;

  if (kind == ConvKind::Forward) {
    // The CPU kernel's checks, on views of the descriptors.
    cpu::ConvOptions options;
    options.strides = at.strides;
    options.dilations = at.dilations;
    options.padsBegin = at.padsBegin;
    options.padsEnd = at.padsEnd;
    options.groups = at.groups;
    options.layout = at.nhwc ? cpu::Layout::NHWC : cpu::Layout::NCHW;
    TensorView biasView, residualView;
    if (bias)
      biasView = viewOf(*bias);
    if (residual)
      residualView = viewOf(*residual);
    if (Status s = cpu::checkConv(
            viewOf(*x), viewOf(*w), bias ? &biasView : nullptr,
            residual ? &residualView : nullptr, viewOf(*y), options);
        !s)
      return s;
  }

  // Dtypes (the backward convolutions; the forward's are checked above).
  if (kind == ConvKind::BackwardFilter) {
    bool f64 = x->dtype == DType::F64;
    if (!(isF32or16(x->dtype) || f64) || w->dtype != x->dtype)
      return fail(kOp, "x and dy have dtypes " + dt(x->dtype) + " and " +
                           dt(w->dtype) +
                           "; expected both f32, f16, bf16 or f64");
    if (f64 ? y->dtype != DType::F64 : !isF32or16(y->dtype))
      return fail(kOp, "dw has dtype " + dt(y->dtype) +
                           (f64 ? "; f64 x needs an f64 dw"
                                : "; expected f32, f16 or bf16"));
  } else if (kind == ConvKind::BackwardData) {
    if (!isF32or16(x->dtype))
      return fail(kOp, "x has dtype " + dt(x->dtype) +
                           "; expected f32, f16 or bf16");
    if (w->dtype != x->dtype)
      return fail(kOp, "w has dtype " + dt(w->dtype) + ", x " + dt(x->dtype) +
                           "; they must match");
    if (!isF32or16(y->dtype))
      return fail(kOp, "y has dtype " + dt(y->dtype) +
                           "; expected f32, f16 or bf16");
    if (bias && bias->dtype != y->dtype && bias->dtype != DType::F32)
      return fail(kOp, "bias has dtype " + dt(bias->dtype) +
                           "; expected y's dtype or f32");
  }
  size_t rank = x->shape.size();
  if (w->shape.size() != rank || y->shape.size() != rank)
    return fail(kOp, "x " + shapeStr(x->shape) + ", " +
                         (kind == ConvKind::BackwardFilter ? "dy " : "w ") +
                         shapeStr(w->shape) + " and " +
                         (kind == ConvKind::BackwardFilter ? "dw " : "y ") +
                         shapeStr(y->shape) + " must have the same rank");
  std::vector<int64_t> stride, dil, padB, padE;
  if (Status s = spatialAttr(kOp, "strides", at.strides, spatial, 1, 1, stride);
      !s)
    return s;
  if (Status s =
          spatialAttr(kOp, "dilations", at.dilations, spatial, 1, 1, dil);
      !s)
    return s;
  if (Status s =
          spatialAttr(kOp, "padsBegin", at.padsBegin, spatial, 0, 0, padB);
      !s)
    return s;
  if (Status s = spatialAttr(kOp, "padsEnd", at.padsEnd, spatial, 0, 0, padE);
      !s)
    return s;

  // Geometry: in (conv input side, plan layout), ker, out, channels.
  bool nhwc = at.nhwc;
  int64_t n = x->shape[0], c = 0, m = 0, cg = 0;
  Shape inSp, kerSp, outSp;
  // Dim 1 in NCHW, the last dim in NHWC (filters: [K, C, k...] or
  // [K, k..., C]); the spatial dims of a shape in the plan's layout.
  auto channelsOf = [&](const Shape &shape) {
    return nhwc ? shape[rank - 1] : shape[1];
  };
  auto spatialOf = [&](const Shape &shape) {
    return Shape(shape.begin() + (nhwc ? 1 : 2), shape.end() - (nhwc ? 1 : 0));
  };
  // [N, C, spatial...] or [N, spatial..., C].
  auto inLayout = [&](int64_t lead, int64_t channels, const Shape &sp) {
    Shape shape{lead};
    if (!nhwc)
      shape.push_back(channels);
    shape.insert(shape.end(), sp.begin(), sp.end());
    if (nhwc)
      shape.push_back(channels);
    return shape;
  };
  int64_t groups = at.groups;
  if (kind == ConvKind::Forward) {
    // Checked by cpu::checkConv above: the geometry is the shapes'.
    c = channelsOf(x->shape);
    m = w->shape[0];
    cg = c / groups;
    inSp = spatialOf(x->shape);
    kerSp = spatialOf(w->shape);
    outSp = spatialOf(y->shape);
  } else if (kind == ConvKind::BackwardData) {
    // ConvTranspose: x [N, C, in], w [C, M/g, k], y [N, M, out] (NHWC:
    // x [N, in, C], w [C, k, M/g], y [N, out, M]).
    c = channelsOf(x->shape);
    if (groups < 1 || c % groups)
      return fail(kOp, "groups = " + std::to_string(groups) +
                           " must be >= 1 and divide the input channels (" +
                           std::to_string(c) + ")");
    if (w->shape[0] != c)
      return fail(kOp, "w " + shapeStr(w->shape) + " must have x's " +
                           std::to_string(c) + " channels first");
    cg = c / groups;
    int64_t mg = channelsOf(w->shape);
    m = mg * groups;
    if (y->shape[0] != n || channelsOf(y->shape) != m)
      return fail(kOp, "y " + shapeStr(y->shape) + " must have batch " +
                           std::to_string(n) + " and " + std::to_string(m) +
                           " channels (groups * w's " +
                           (nhwc ? "last dimension)" : "dimension 1)"));
    inSp = spatialOf(x->shape);
    kerSp = spatialOf(w->shape);
    outSp = spatialOf(y->shape);
    for (size_t i = 0; i < spatial; ++i) {
      if (kerSp[i] < 1 || inSp[i] < 1)
        return fail(kOp, "x " + shapeStr(x->shape) + " and w " +
                             shapeStr(w->shape) +
                             " need non-empty spatial dimensions");
      int64_t span, dilated, full;
      if (__builtin_mul_overflow(stride[i], inSp[i] - 1, &span) ||
          __builtin_mul_overflow(dil[i], kerSp[i] - 1, &dilated) ||
          __builtin_add_overflow(span, dilated, &full) ||
          full > (int64_t(1) << 60))
        return fail(kOp, "the output extent overflows along spatial "
                         "dimension " +
                             std::to_string(i));
      full = full + 1 - padB[i] - padE[i];
      int64_t outPad = outSp[i] - full;
      if (outPad < 0 || outPad >= std::max(stride[i], dil[i]))
        return fail(kOp, "y " + shapeStr(y->shape) + " has " +
                             std::to_string(outSp[i]) +
                             " positions along spatial dimension " +
                             std::to_string(i) + "; expected " +
                             std::to_string(full) +
                             " plus an output padding below max(stride, "
                             "dilation)");
      if (outPad >= stride[i])
        return fail(kOp, "an output padding of " + std::to_string(outPad) +
                             " >= the stride " + std::to_string(stride[i]) +
                             " (possible with dilation " +
                             std::to_string(dil[i]) +
                             ") is not implemented on the GPU");
    }
    if (bias && !(bias->shape.size() == 1 && bias->shape[0] == m))
      return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                           ", expected [" + std::to_string(m) + "]");
    for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"x", x},
                           {"w", w},
                           {"bias", bias}})
      if (v && overlapping(*v, *y))
        return fail(kOp, std::string(name) + " overlaps y");
  } else {
    // Backward filter: x [N, C, in], dy [N, M, out], dw [M, C/g, k] (NHWC:
    // x [N, in, C], dy [N, out, M], dw [M, k, C/g]).
    c = channelsOf(x->shape);
    m = y->shape[0];
    if (groups < 1 || c % groups || m % groups)
      return fail(kOp, "groups = " + std::to_string(groups) +
                           " must be >= 1 and divide the input channels (" +
                           std::to_string(c) + ") and the output channels (" +
                           std::to_string(m) + ")");
    cg = c / groups;
    if (channelsOf(y->shape) != cg)
      return fail(kOp, "dw " + shapeStr(y->shape) + " must have C/groups = " +
                           std::to_string(cg) + " as its " +
                           (nhwc ? "last dimension" : "dimension 1"));
    inSp = spatialOf(x->shape);
    kerSp = spatialOf(y->shape);
    for (size_t i = 0; i < spatial; ++i) {
      if (kerSp[i] < 1)
        return fail(kOp, "dw " + shapeStr(y->shape) +
                             " has an empty kernel dimension");
      int64_t padded = inSp[i] + padB[i] + padE[i], span;
      if (Status s = dilatedExtent(kOp, "kernel", i, x->shape, kerSp[i], dil[i],
                                   padded, span);
          !s)
        return s;
      outSp.push_back((padded - span) / stride[i] + 1);
    }
    Shape expected = inLayout(n, m, outSp);
    if (w->shape != expected)
      return fail(kOp, "dy has shape " + shapeStr(w->shape) + ", expected " +
                           shapeStr(expected));
    for (auto [name, v] :
         {std::pair<const char *, const TensorDesc *>{"x", x}, {"dy", w}})
      if (overlapping(*v, *y))
        return fail(kOp, std::string(name) + " overlaps dw");
  }
  if (spatial > 3)
    return fail(kOp, std::to_string(spatial) +
                         " spatial dimensions are not implemented on the GPU "
                         "(cuDNN: 1 to 3)");
  const int64_t kIntMax = std::numeric_limits<int32_t>::max();
  for (const TensorDesc *v : {x, w, y})
    if (v->numElements() > kIntMax)
      return fail(kOp, "tensors of more than 2^31 elements are not "
                       "implemented on the GPU");

  ConvPlan p;
  if (y->numElements() == 0) {
    p.kind = kind;
    p.empty = true;
    return p;
  }
  if (x->numElements() == 0 || w->numElements() == 0)
    return fail(kOp, "empty inputs with a non-empty result are not "
                     "implemented on the GPU");
  p.kind = kind;
  p.nhwc = nhwc;
  p.spatial = static_cast<int32_t>(spatial);
  p.groups = static_cast<int>(groups);
  // The dtype cuDNN computes in: the data's, or f32 when the output's
  // dtype differs from the inputs' (inputs widened, the result rounded once
  // to the output's dtype by the epilogue). A forward convolution of 16-bit
  // data into f32 (an output cast folded into it) stays on the 16-bit
  // tensor-core path, its result widened by the epilogue: what the cast
  // after the convolution computed.
  DType in = x->dtype, out = y->dtype;
  const bool widenedForward = kind == ConvKind::Forward && out == DType::F32 &&
                              (in == DType::F16 || in == DType::BF16);
  p.dataType = in == out || widenedForward
                   ? in
                   : (in == DType::F64 ? DType::F64 : DType::F32);
  p.convertIn0 = in != p.dataType;
  p.convertIn1 = w->dtype != p.dataType;
  // A residual in y's own bytes (in place) must outlive cuDNN's write: the
  // convolution then goes to the scratch.
  p.outputToScratch =
      out != p.dataType || (residual && cptr(*residual) == cptr(*y));
  bool hasEpilogue = bias || residual || at.act != kActNone;
  p.epilogue = hasEpilogue || p.outputToScratch;
  for (size_t i = 0; i < spatial; ++i)
    if (padB[i] != padE[i])
      p.explicitPad = true;
  // cuDNN dims (NCHW order). Conv input side / output side.
  auto nchwDims = [&](int64_t ch, const Shape &sp) {
    std::vector<int> d{static_cast<int>(n), static_cast<int>(ch)};
    for (int64_t s : sp)
      d.push_back(static_cast<int>(s));
    if (spatial == 1)
      d.push_back(1);
    return d;
  };
  Shape padSp = inSp;
  std::vector<int64_t> cudnnPad(spatial);
  for (size_t i = 0; i < spatial; ++i)
    cudnnPad[i] = padB[i];
  Shape convInSp = kind == ConvKind::BackwardData ? outSp : inSp;
  if (p.explicitPad) {
    for (size_t i = 0; i < spatial; ++i) {
      convInSp[i] += padB[i] + padE[i];
      cudnnPad[i] = 0;
    }
    // The padded tensor in the plan's layout.
    int64_t ch = kind == ConvKind::BackwardData ? m : c;
    p.paddedShape = {n};
    if (!nhwc)
      p.paddedShape.push_back(ch);
    p.paddedShape.insert(p.paddedShape.end(), convInSp.begin(), convInSp.end());
    if (nhwc)
      p.paddedShape.push_back(ch);
    p.padBegin = padB;
    p.padBytes = static_cast<uint64_t>(numElements(p.paddedShape)) *
                 byteSize(p.dataType);
  }
  if (kind == ConvKind::BackwardData) {
    p.xDims = nchwDims(m, convInSp); // the data gradient (plan's y)
    p.yDims = nchwDims(c, inSp);     // the incoming gradient (plan's x)
    p.wDims = {static_cast<int>(c), static_cast<int>(m / groups)};
  } else {
    p.xDims = nchwDims(c, convInSp);
    p.yDims = nchwDims(m, outSp);
    p.wDims = {static_cast<int>(m), static_cast<int>(cg)};
  }
  for (int64_t kd : kerSp)
    p.wDims.push_back(static_cast<int>(kd));
  if (spatial == 1)
    p.wDims.push_back(1);
  for (size_t i = 0; i < spatial; ++i) {
    p.pads.push_back(static_cast<int>(cudnnPad[i]));
    p.strides.push_back(static_cast<int>(stride[i]));
    p.dilations.push_back(static_cast<int>(dil[i]));
  }
  if (spatial == 1) {
    p.pads.push_back(0);
    p.strides.push_back(1);
    p.dilations.push_back(1);
  }
  for (int v : p.pads)
    if (v > kIntMax)
      return fail(kOp, "pads exceed cuDNN's range");
  // Scratch.
  uint64_t de = byteSize(p.dataType);
  if (p.convertIn0)
    p.in0Bytes = static_cast<uint64_t>(x->numElements()) * de;
  if (p.convertIn1)
    p.in1Bytes = static_cast<uint64_t>(w->numElements()) * de;
  if (p.outputToScratch)
    p.outBytes = static_cast<uint64_t>(y->numElements()) * de;
  // The epilogue: channel of each output element.
  if (p.epilogue) {
    EpilogueParams &e = p.epi;
    e.act = at.act;
    e.clipMin = at.clipMin;
    e.clipMax = at.clipMax;
    e.accDtype = code(p.dataType);
    e.outDtype = code(out);
    e.biasDtype = bias ? code(bias->dtype) : 0;
    e.bias = bias ? cptr(*bias) : nullptr;
    e.residualDtype = residual ? code(residual->dtype) : 0;
    e.residual = residual ? cptr(*residual) : nullptr;
    e.out = mptr(*y);
    if (kind == ConvKind::BackwardFilter) {
      e.geom = {1, 1, y->numElements()};
    } else if (nhwc) {
      e.geom = {y->numElements() / std::max<int64_t>(m, 1), m, 1};
    } else {
      e.geom = {n, m, numElements(outSp)};
      if (kind == ConvKind::BackwardData)
        e.geom = {n, m,
                  numElements(Shape(y->shape.begin() + 2, y->shape.end()))};
    }
  }
  return p;
}

std::string convAlgoKey(const ConvPlan &p, int device) {
  auto list = [](const std::vector<int> &v) {
    std::string r;
    for (size_t i = 0; i < v.size(); ++i)
      r += (i ? "," : "") + std::to_string(v[i]);
    return r;
  };
  std::string kind = p.kind == ConvKind::Forward        ? "fwd"
                     : p.kind == ConvKind::BackwardData ? "bwd_data"
                                                        : "bwd_filter";
  return kind + " dev" + std::to_string(device) + " " + dt(p.dataType) +
         (p.nhwc ? " nhwc" : " nchw") + " x" + list(p.xDims) + " w" +
         list(p.wDims) + " y" + list(p.yDims) + " p" + list(p.pads) + " s" +
         list(p.strides) + " d" + list(p.dilations) + " g" +
         std::to_string(p.groups);
}

} // namespace mp::rt::cuda
