//===- ShapeInferenceNN.cpp - convolutions, pools and norms ---------------===//
//
// The result types of the convolutions, the pools and the normalizations,
// and the explicit pads of a window (mp::explicitWindowPads).
//
//===----------------------------------------------------------------------===//
#include "ShapeInferenceInternal.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mp;
using namespace mp::shape_detail;

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
struct WindowParams {
  SmallVector<int64_t> kernel, strides, dilations, pads;
  StringRef autoPad;
  bool ceilMode = false;
};
} // namespace

/// Reads the window attributes common to Conv and the pools for `spatial`
/// spatial dims.
static LogicalResult readWindow(ShapeContext &ctx, size_t spatial,
                                ArrayRef<int64_t> kernelFromWeights,
                                WindowParams &p) {
  auto getOr = [&](StringRef name, size_t n, int64_t fill,
                   SmallVector<int64_t> &out) -> LogicalResult {
    if (auto v = ctx.getInts(name)) {
      if (v->size() != n)
        return ctx.emitError("'" + name + "' must have " + Twine(n) +
                             " values, has " + Twine(v->size()));
      out = *v;
    } else {
      out.assign(n, fill);
    }
    return success();
  };
  if (auto k = ctx.getInts("kernel_shape")) {
    if (k->size() != spatial)
      return ctx.emitError("'kernel_shape' must have " + Twine(spatial) +
                           " values, has " + Twine(k->size()));
    p.kernel = *k;
  } else {
    p.kernel.assign(kernelFromWeights.begin(), kernelFromWeights.end());
  }
  if (failed(getOr("strides", spatial, 1, p.strides)) ||
      failed(getOr("dilations", spatial, 1, p.dilations)) ||
      failed(getOr("pads", 2 * spatial, 0, p.pads)))
    return failure();
  for (int64_t s : p.strides)
    if (s <= 0)
      return ctx.emitError("strides must be positive");
  for (int64_t d : p.dilations)
    if (d <= 0)
      return ctx.emitError("dilations must be positive");
  for (int64_t pad : p.pads)
    if (pad < 0)
      return ctx.emitError("pads must not be negative");
  p.autoPad = ctx.getString("auto_pad", "NOTSET");
  if (p.autoPad != "NOTSET" && p.autoPad != "VALID" &&
      p.autoPad != "SAME_UPPER" && p.autoPad != "SAME_LOWER")
    return ctx.emitError("unknown auto_pad '" + p.autoPad + "'");
  p.ceilMode = ctx.getInt("ceil_mode", 0) != 0;
  return success();
}

/// The output size of one spatial dim of a convolution or pooling window.
static int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride,
                            int64_t dilation, int64_t padBegin, int64_t padEnd,
                            StringRef autoPad, bool ceilMode) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel))
    return kDynamic;
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
    return llvm::divideCeil(in, stride);
  int64_t effective = (kernel - 1) * dilation + 1;
  if (autoPad == "VALID")
    return in < effective ? 0 : llvm::divideCeil(in - effective + 1, stride);
  int64_t span = in + padBegin + padEnd - effective;
  if (span < 0)
    return 0;
  int64_t out = (ceilMode ? llvm::divideCeil(span, stride) : span / stride) + 1;
  // With ceil mode the last window must start inside the (left-padded) input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

LogicalResult shape::inferConv(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")) ||
      failed(requireRank(ctx, 1, w, 3, "W")))
    return failure();
  if (x && w && x->size() != w->size())
    return ctx.emitError("X has rank " + Twine(x->size()) + " but W has rank " +
                         Twine(w->size()));
  Dims rankSource = x ? x : w;
  if (!rankSource) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t spatial = rankSource->size() - 2;
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0)
    return ctx.emitError("group must be positive");
  if (x && w && !ShapedType::isDynamic((*x)[1]) &&
      !ShapedType::isDynamic((*w)[1]) && (*x)[1] != (*w)[1] * group)
    return ctx.emitError("X has " + Twine((*x)[1]) +
                         " channels but W expects " + Twine((*w)[1]) +
                         " x group " + Twine(group));
  if (w && !ShapedType::isDynamic((*w)[0]) && (*w)[0] % group != 0)
    return ctx.emitError("output channels " + Twine((*w)[0]) +
                         " are not divisible by group " + Twine(group));
  if (!ctx.isAbsent(2)) {
    Dims b = ctx.getDims(2);
    if (b && (b->size() != 1 || (w && dimsConflict((*b)[0], (*w)[0]))))
      return ctx.emitError("B must be a vector of the output channel count");
  }
  SmallVector<int64_t> kernelFromWeights(spatial, kDynamic);
  if (w)
    kernelFromWeights.assign(w->begin() + 2, w->end());
  WindowParams p;
  if (failed(readWindow(ctx, spatial, kernelFromWeights, p)))
    return failure();
  if (w)
    for (size_t i = 0; i < spatial; ++i)
      if (dimsConflict(p.kernel[i], (*w)[i + 2]))
        return ctx.emitError("kernel_shape does not match W");
  SmallVector<int64_t, 6> out;
  out.push_back(x ? (*x)[0] : kDynamic);
  out.push_back(w ? (*w)[0] : kDynamic);
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(windowOutput(x ? (*x)[i + 2] : kDynamic, p.kernel[i],
                               p.strides[i], p.dilations[i], p.pads[i],
                               p.pads[i + spatial], p.autoPad, false));
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferConvTranspose(ShapeContext &ctx,
                                        SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), w = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")) ||
      failed(requireRank(ctx, 1, w, 3, "W")))
    return failure();
  if (x && w && x->size() != w->size())
    return ctx.emitError("X and W ranks differ");
  Dims rankSource = x ? x : w;
  if (!rankSource) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t spatial = rankSource->size() - 2;
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0)
    return ctx.emitError("group must be positive");
  SmallVector<int64_t> kernelFromWeights(spatial, kDynamic);
  if (w)
    kernelFromWeights.assign(w->begin() + 2, w->end());
  WindowParams p;
  if (failed(readWindow(ctx, spatial, kernelFromWeights, p)))
    return failure();
  SmallVector<int64_t> outputPadding(spatial, 0);
  if (auto v = ctx.getInts("output_padding"))
    if (v->size() == spatial)
      outputPadding = *v;
  SmallVector<int64_t, 6> out;
  out.push_back(x ? (*x)[0] : kDynamic);
  out.push_back(w ? mulDims((*w)[1], group) : kDynamic);
  auto outputShape = ctx.getInts("output_shape");
  for (size_t i = 0; i < spatial; ++i) {
    if (outputShape && outputShape->size() >= spatial) {
      out.push_back((*outputShape)[outputShape->size() - spatial + i]);
      if (out.back() < 0)
        return ctx.emitError("output_shape must not be negative");
      continue;
    }
    int64_t in = x ? (*x)[i + 2] : kDynamic;
    if (ShapedType::isDynamic(in) || ShapedType::isDynamic(p.kernel[i])) {
      out.push_back(kDynamic);
    } else if (p.autoPad == "SAME_UPPER" || p.autoPad == "SAME_LOWER") {
      out.push_back(in * p.strides[i]);
    } else {
      out.push_back(p.strides[i] * (in - 1) + outputPadding[i] +
                    (p.kernel[i] - 1) * p.dilations[i] + 1 - p.pads[i] -
                    p.pads[i + spatial]);
      if (out.back() < 0)
        return ctx.emitError(
            "pads remove more than the " +
            Twine(out.back() + p.pads[i] + p.pads[i + spatial]) +
            " elements of output dim " + Twine(i + 2));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferPool(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  bool hasIndices = ctx.getOpType() == "MaxPool";
  if (failed(requireRank(ctx, 0, x, 3, "X")))
    return failure();
  auto kernel = ctx.getInts("kernel_shape");
  if (!kernel)
    return ctx.emitError("'kernel_shape' is required");
  if (x && kernel->size() != x->size() - 2)
    return ctx.emitError("'kernel_shape' has " + Twine(kernel->size()) +
                         " values for " + Twine(x->size() - 2) +
                         " spatial dims");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    if (hasIndices)
      results.push_back(ctx.makeTensor(std::nullopt, i64));
    return success();
  }
  size_t spatial = x->size() - 2;
  WindowParams p;
  if (failed(readWindow(ctx, spatial, *kernel, p)))
    return failure();
  SmallVector<int64_t, 6> out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(windowOutput((*x)[i + 2], p.kernel[i], p.strides[i],
                               p.dilations[i], p.pads[i], p.pads[i + spatial],
                               p.autoPad, p.ceilMode));
  results.push_back(ctx.makeTensor(out, element));
  if (hasIndices)
    results.push_back(ctx.makeTensor(out, i64));
  return success();
}

LogicalResult shape::inferGlobalPool(ShapeContext &ctx,
                                     SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  if (failed(requireRank(ctx, 0, x, 3, "X")))
    return failure();
  if (x)
    for (size_t i = 2; i < x->size(); ++i)
      (*x)[i] = 1;
  results.push_back(ctx.makeTensor(x, ctx.getElementType(0)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult shape::inferBatchNorm(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  if (failed(requireRank(ctx, 0, x, 2, "X")))
    return failure();
  int64_t channels = x ? (*x)[1] : kDynamic;
  static const char *names[] = {"scale", "B", "input_mean", "input_var"};
  for (unsigned i = 1; i < 5; ++i) {
    Dims d = ctx.getDims(i);
    if (d && (d->size() != 1 || dimsConflict((*d)[0], channels)))
      return ctx.emitError(
          Twine(names[i - 1]) + " must be a vector of the channel count " +
          (ShapedType::isDynamic(channels) ? Twine("C") : Twine(channels)));
  }
  results.push_back(ctx.getOperandType(0));
  results.push_back(ctx.getOperandType(3));
  results.push_back(ctx.getOperandType(4));
  return success();
}

LogicalResult shape::inferLayerNorm(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type stash =
      getTypeForOnnxDataType(ctx.getContext(), ctx.getInt("stash_type", 1));
  if (!stash)
    return ctx.emitError("unknown stash_type");
  results.push_back(ctx.getOperandType(0));
  Dims statistics;
  if (x) {
    FailureOr<int64_t> axis =
        normalizeAxis(ctx, ctx.getInt("axis", -1), x->size());
    if (failed(axis))
      return failure();
    statistics = *x;
    for (size_t i = *axis; i < x->size(); ++i)
      (*statistics)[i] = 1;
  }
  results.push_back(ctx.makeTensor(statistics, stash));
  results.push_back(ctx.makeTensor(statistics, stash));
  return success();
}

/// Attention: [B, Hq, S, Dv] for 4-D inputs, [B, S, Hq * Dv] for 3-D
/// ones (Dv = V's hidden size / kv_num_heads), in Q's element type.
LogicalResult shape::inferAttention(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims q = ctx.getDims(0), v = ctx.getDims(2);
  Type element = ctx.getElementType(0);
  if (!q || !v) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  if (q->size() != v->size() || (q->size() != 3 && q->size() != 4))
    return ctx.emitError("Q and V must both be 3-D or 4-D");
  if (q->size() == 4) {
    results.push_back(ctx.makeTensor(
        SmallVector<int64_t, 6>{(*q)[0], (*q)[1], (*q)[2], (*v)[3]}, element));
    return success();
  }
  int64_t heads = ctx.getInt("q_num_heads", 0),
          kvHeads = ctx.getInt("kv_num_heads", 0);
  if (heads < 1 || kvHeads < 1)
    return ctx.emitError("3-D inputs need q_num_heads and kv_num_heads");
  int64_t hidden = ShapedType::kDynamic;
  if ((*v)[2] != ShapedType::kDynamic) {
    if ((*v)[2] % kvHeads)
      return ctx.emitError("kv_num_heads does not divide V's hidden size");
    hidden = (*v)[2] / kvHeads * heads;
  }
  results.push_back(ctx.makeTensor(
      SmallVector<int64_t, 6>{(*q)[0], (*q)[1], hidden}, element));
  return success();
}

/// RMSNormalization: X's shape; Y has scale's element type (ONNX's V).
LogicalResult shape::inferRmsNorm(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  if (x && failed(normalizeAxis(ctx, ctx.getInt("axis", -1), x->size())))
    return failure();
  if (!getTypeForOnnxDataType(ctx.getContext(), ctx.getInt("stash_type", 1)))
    return ctx.emitError("unknown stash_type");
  Type element = ctx.getElementType(1);
  results.push_back(
      ctx.makeTensor(x, element ? element : ctx.getElementType(0)));
  return success();
}

SmallVector<int64_t>
mp::explicitWindowPads(StringRef autoPad, std::optional<ArrayRef<int64_t>> pads,
                       ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                       ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> dilations) {
  size_t n = in.size();
  SmallVector<int64_t> result(2 * n, 0);
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t needed = (out[i] - 1) * strides[i] +
                       (kernel[i] - 1) * dilations[i] + 1 - in[i];
      int64_t total = std::max<int64_t>(needed, 0);
      int64_t small = total / 2, large = total - small;
      result[i] = autoPad == "SAME_UPPER" ? small : large;
      result[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "VALID" && pads) {
    result.assign(pads->begin(), pads->end());
  }
  return result;
}
