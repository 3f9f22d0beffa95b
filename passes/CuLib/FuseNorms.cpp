//===- FuseNorms.cpp - the culib-fuse-norms pass --------------------------===//
//
// Exporters below opset 17 (torch 1.13's default) write LayerNorm as nine
// nodes, which convert-mp-to-culib lowers to nine calls:
//
//   m = reduce mean(x) over the last dims (kept as 1s)
//   d = sub(x, m);  p = pow(d, 2) (or mul(d, d));  v = reduce mean(p)
//   s = sqrt(add(v, eps));  n = div(d, s);  y = add(mul(n, scale), bias)
//
// RMSNorm (torch's x * rsqrt(mean(x^2) + eps) * weight) comes as six or
// seven calls (Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul), which
// become one culib.rms_norm; GroupNorm as a reshape, an instance norm with
// unit scale and zero bias, a reshape back, the channels' scale and bias
// (five calls), which become one culib.group_norm; a softmax over the last
// dim of a constant scale of x, of x plus a mask, or both, one
// culib.scaled_softmax.
//
// This pass makes them one culib.layer_norm call (the bias add optional),
// whose statistics the kernels keep in f32 or wider: the intermediate
// buffers go, and with them seven round trips through memory. Only when
// every intermediate is an arena buffer the chain alone uses, eps is a
// one-element constant, scale and bias have the normalised dims' shape
// (broadcast from the right) and everything has x's float type.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Runtime/FusedProgram.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mp {
#define GEN_PASS_DEF_FUSENORMS
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

using rt::cpu::ElementwiseFn;

using culib::memrefOf;

using culib::elementwiseWriting;

/// The reduce mean writing `t` for `reader` alone, over the trailing dims
/// from `axis` with the dims kept, if any.
culib::ReduceOp meanWriting(Value t, Operation *reader, int64_t &axis) {
  auto op = dyn_cast_or_null<culib::ReduceOp>(culib::soleWriter(t, {reader}));
  if (!op || op.getFn() != rt::cpu::ReduceFn::Mean || op.getY() != t)
    return nullptr;
  int64_t rank = memrefOf(op.getX()).getRank();
  if (memrefOf(t).getRank() != rank)
    return nullptr;
  SmallVector<int64_t> axes(op.getAxes()); // distinct, in [0, rank)
  llvm::sort(axes);
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i))
      return nullptr;
  axis = rank - static_cast<int64_t>(axes.size());
  return op;
}

/// The value of a one-element float weight, as f32.
std::optional<float> scalarWeight(Value v) {
  std::optional<double> value = culib::scalarWeightValue(v);
  return value ? std::optional<float>(static_cast<float>(*value))
               : std::nullopt;
}

/// The other input of a binary elementwise call than `known`.
Value otherInput(culib::ElementwiseOp op, Value known) {
  ValueRange in = op.getInputs();
  return in[0] == known ? in[1] : in[0];
}

/// Whether `v` (scale or bias) has x's element type and broadcasts from the
/// right onto x's dims from `axis` alone.
bool isAffineParameter(Value v, MemRefType x, int64_t axis) {
  MemRefType type = memrefOf(v);
  if (type.getElementType() != x.getElementType())
    return false;
  ArrayRef<int64_t> shape = type.getShape();
  int64_t normalised = x.getRank() - axis;
  if (static_cast<int64_t>(shape.size()) > normalised) {
    // Leading 1s beyond the normalised dims are fine.
    size_t extra = shape.size() - normalised;
    if (llvm::any_of(shape.take_front(extra), [](int64_t d) { return d != 1; }))
      return false;
    shape = shape.drop_front(extra);
  }
  ArrayRef<int64_t> dims = x.getShape().take_back(shape.size());
  for (auto [s, d] : llvm::zip(shape, dims))
    if (s != d && s != 1)
      return false;
  return true;
}

/// root = mul(n, scale) + bias (either order), or root = mul(n, scale):
/// the add (null without a bias) and the mul, a norm's affine end.
bool matchScaleAndBias(culib::ElementwiseOp root, culib::ElementwiseOp &addBias,
                       culib::ElementwiseOp &mulScale) {
  if (root.getAlpha() || root.getBeta())
    return false;
  if (root.getFn() == ElementwiseFn::Add && root.getInputs().size() == 2) {
    addBias = root;
    for (Value in : root.getInputs())
      if (!mulScale)
        mulScale = elementwiseWriting(in, ElementwiseFn::Mul, {root});
  } else if (root.getFn() == ElementwiseFn::Mul) {
    mulScale = root;
  }
  return mulScale && mulScale.getInputs().size() == 2;
}

/// The squares of `x` as `t`, written for `reader` alone: pow(x, 2) or
/// mul(x, x).
culib::ElementwiseOp squareWriting(Value t, Operation *reader, Value &x) {
  auto op =
      dyn_cast_or_null<culib::ElementwiseOp>(culib::soleWriter(t, {reader}));
  if (!op || op.getY() != t || op.getInputs().size() != 2 || op.getAlpha() ||
      op.getBeta())
    return nullptr;
  ValueRange in = op.getInputs();
  if ((op.getFn() == ElementwiseFn::Pow && scalarWeight(in[1]) == 2.f) ||
      (op.getFn() == ElementwiseFn::Mul && in[0] == in[1])) {
    x = in[0];
    return op;
  }
  return nullptr;
}

/// s = sqrt(mean(v^2) + eps) written for `reader` alone (the square as
/// pow(v, 2) or v * v, the mean over the trailing dims from `axis`, eps a
/// constant one-element float on either side of the add): the
/// denominator of layer norms (v the deviation) and RMS norms (v = x).
struct RootMeanSquare {
  Value v;
  float eps = 0;
  int64_t axis = 0;
  culib::ElementwiseOp square, addEps, sqrt;
  culib::ReduceOp mean;
};

std::optional<RootMeanSquare> rootMeanSquareWriting(Value s,
                                                    Operation *reader) {
  RootMeanSquare r;
  r.sqrt = elementwiseWriting(s, ElementwiseFn::Sqrt, {reader});
  r.addEps = r.sqrt ? elementwiseWriting(r.sqrt.getInputs()[0],
                                         ElementwiseFn::Add, {r.sqrt})
                    : nullptr;
  if (!r.addEps)
    return std::nullopt;
  Value epsValue;
  for (Value in : r.addEps.getInputs())
    if (!r.mean && (r.mean = meanWriting(in, r.addEps, r.axis)))
      epsValue = otherInput(r.addEps, in);
  std::optional<float> eps = r.mean ? scalarWeight(epsValue) : std::nullopt;
  if (!eps)
    return std::nullopt;
  r.eps = *eps;
  r.square = squareWriting(r.mean.getX(), r.mean, r.v);
  if (!r.square)
    return std::nullopt;
  return r;
}

struct FoldDecomposedLayerNorm : OpRewritePattern<culib::ElementwiseOp> {
  FoldDecomposedLayerNorm(MLIRContext *ctx, int64_t &folded, int64_t &calls,
                          int64_t &bytes)
      : OpRewritePattern(ctx), folded(folded), calls(calls), bytes(bytes) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    culib::ElementwiseOp addBias, mulScale;
    if (!matchScaleAndBias(root, addBias, mulScale))
      return failure();
    // n = div(d, s), s = sqrt(add(v, eps)), v = mean(p), p = d * d.
    culib::ElementwiseOp div;
    for (Value in : mulScale.getInputs())
      if (!div)
        div = elementwiseWriting(in, ElementwiseFn::Div, {mulScale});
    if (!div)
      return rewriter.notifyMatchFailure(root, "no normalised value");
    Value d = div.getInputs()[0];
    std::optional<RootMeanSquare> rms =
        rootMeanSquareWriting(div.getInputs()[1], div);
    if (!rms || rms->v != d)
      return rewriter.notifyMatchFailure(
          root, "no sqrt(mean of the squared deviation + constant eps)");
    const int64_t axis = rms->axis;
    int64_t meanAxis = 0;
    auto sub = elementwiseWriting(d, ElementwiseFn::Sub, {rms->square, div});
    if (!sub)
      return rewriter.notifyMatchFailure(root, "no deviation");
    Value x = sub.getInputs()[0];
    auto mean = meanWriting(sub.getInputs()[1], sub, meanAxis);
    if (!mean || mean.getX() != x || meanAxis != axis)
      return rewriter.notifyMatchFailure(root, "no mean of x");

    MemRefType xType = memrefOf(x);
    Value scale = otherInput(mulScale, div.getY());
    Value bias = addBias ? otherInput(addBias, mulScale.getY()) : Value();
    Value y = root.getY();
    if (!isa<FloatType>(xType.getElementType()) || memrefOf(y) != xType ||
        scale == div.getY() || (bias && bias == mulScale.getY()) ||
        !isAffineParameter(scale, xType, axis) ||
        (bias && !isAffineParameter(bias, xType, axis)))
      return rewriter.notifyMatchFailure(root, "shapes or types differ");

    SmallVector<Operation *> chain = {mean,      sub,         rms->square,
                                      rms->mean, rms->addEps, rms->sqrt,
                                      div,       mulScale};
    if (addBias)
      chain.push_back(addBias);
    // The call reads x, scale and bias where the chain ends.
    for (Value read : {x, scale, bias})
      if (read && culib::writtenBetween(read, mean, root, chain))
        return rewriter.notifyMatchFailure(root, "an input is written before");
    rewriter.setInsertionPoint(root);
    culib::LayerNormOp::create(rewriter, root.getLoc(), x, scale, bias, y,
                               /*mean=*/Value(), /*inv_std_dev=*/Value(),
                               rewriter.getI64IntegerAttr(axis),
                               rewriter.getF32FloatAttr(rms->eps));
    ++folded;
    calls += static_cast<int64_t>(chain.size()) - 1;
    // The chain, its intermediate buffers and the constants only it read.
    bytes += culib::eraseCallsAndTheirBuffers(chain, y, rewriter);
    return success();
  }

  int64_t &folded, &calls, &bytes;
};

/// RMSNorm as exporters write it (torch's x * rsqrt(mean(x^2) + eps) *
/// weight, rsqrt being Sqrt then Reciprocal; or x / sqrt(...)):
///
///   p = pow(x, 2) (or mul(x, x));  v = reduce mean(p) over the last dims
///   s = sqrt(add(v, eps));  n = mul(x, reciprocal(s)) or div(x, s)
///   y = mul(n, scale) (either order)
///
/// -> one culib.rms_norm, under the layer norm's conditions.
struct FoldDecomposedRmsNorm : OpRewritePattern<culib::ElementwiseOp> {
  FoldDecomposedRmsNorm(MLIRContext *ctx, int64_t &folded, int64_t &calls,
                        int64_t &bytes)
      : OpRewritePattern(ctx), folded(folded), calls(calls), bytes(bytes) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    if (root.getFn() != ElementwiseFn::Mul || root.getInputs().size() != 2 ||
        root.getAlpha() || root.getBeta())
      return failure();
    for (auto [n, scale] :
         {std::pair(root.getInputs()[0], root.getInputs()[1]),
          std::pair(root.getInputs()[1], root.getInputs()[0])})
      if (n != scale && succeeded(fold(root, n, scale, rewriter)))
        return success();
    return rewriter.notifyMatchFailure(root, "not x * rsqrt(mean(x^2) + eps)");
  }

  LogicalResult fold(culib::ElementwiseOp root, Value n, Value scale,
                     PatternRewriter &rewriter) const {
    // n = div(x, s), or mul(x, r) / mul(r, x) with r = reciprocal(s).
    SmallVector<Operation *> chain;
    Value x, s;
    if (auto div = elementwiseWriting(n, ElementwiseFn::Div, {root})) {
      x = div.getInputs()[0];
      s = div.getInputs()[1];
      chain.push_back(div);
    } else if (auto mul = elementwiseWriting(n, ElementwiseFn::Mul, {root})) {
      for (auto [a, r] : {std::pair(mul.getInputs()[0], mul.getInputs()[1]),
                          std::pair(mul.getInputs()[1], mul.getInputs()[0])}) {
        auto reciprocal =
            elementwiseWriting(r, ElementwiseFn::Reciprocal, {mul});
        if (reciprocal && !x) {
          x = a;
          s = reciprocal.getInputs()[0];
          chain.append({reciprocal.getOperation(), mul.getOperation()});
        }
      }
    }
    if (!x)
      return failure();
    std::optional<RootMeanSquare> rms = rootMeanSquareWriting(s, chain.front());
    if (!rms || rms->v != x)
      return failure();
    const int64_t axis = rms->axis;
    MemRefType xType = memrefOf(x);
    Value y = root.getY();
    if (!isa<FloatType>(xType.getElementType()) || memrefOf(y) != xType ||
        !isAffineParameter(scale, xType, axis))
      return failure();
    chain.append({rms->sqrt.getOperation(), rms->addEps.getOperation(),
                  rms->mean.getOperation(), rms->square.getOperation(),
                  root.getOperation()});
    // The call reads x and scale where the chain ends.
    for (Value read : {x, scale})
      if (culib::writtenBetween(read, rms->square, root, chain))
        return failure();
    rewriter.setInsertionPoint(root);
    culib::RMSNormOp::create(rewriter, root.getLoc(), x, scale, y,
                             rewriter.getI64IntegerAttr(axis),
                             rewriter.getF32FloatAttr(rms->eps));
    ++folded;
    calls += static_cast<int64_t>(chain.size()) - 1;
    // The chain, its intermediate buffers and the constants only it read.
    bytes += culib::eraseCallsAndTheirBuffers(chain, y, rewriter);
    return success();
  }

  int64_t &folded, &calls, &bytes;
};

/// Whether `v` is a float weight whose every element is `value`.
bool isSplatWeight(Value v, double value) {
  auto weight = v.getDefiningOp<culib::WeightOp>();
  auto dense =
      weight ? dyn_cast<DenseElementsAttr>(weight.getValue()) : nullptr;
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return false;
  return llvm::all_of(dense.getValues<APFloat>(), [&](const APFloat &f) {
    return f.convertToDouble() == value;
  });
}

/// Whether `v` holds one value per channel of `channels` ([C] or [C, 1,
/// ...], leading 1s allowed) in x's element type.
bool isPerChannel(Value v, int64_t channels, Type element) {
  MemRefType type = memrefOf(v);
  if (type.getElementType() != element)
    return false;
  ArrayRef<int64_t> shape = type.getShape();
  while (shape.size() > 1 && shape.front() == 1)
    shape = shape.drop_front();
  return !shape.empty() && shape.front() == channels &&
         llvm::all_of(shape.drop_front(), [](int64_t d) { return d == 1; });
}

/// The culib.copy (a reshape) writing `t` for `reader` alone, if any.
culib::CopyOp copyWriting(Value t, Operation *reader) {
  auto op = dyn_cast_or_null<culib::CopyOp>(culib::soleWriter(t, {reader}));
  return op && op.getY() == t ? op : nullptr;
}

/// GroupNorm as torch exports it:
///
///   r = reshape(x [N, C, D...], [N, G, -1])
///   n = instance_norm(r, ones(G), zeros(G))
///   y = reshape(n, x's shape) * scale + bias   (scale, bias [C, 1, ...])
///
/// -> one culib.group_norm (the bias add optional): the statistics per
/// image and group, as the instance norm computed them, then each channel's
/// scale and bias; two copies and an elementwise call fewer.
struct FoldDecomposedGroupNorm : OpRewritePattern<culib::ElementwiseOp> {
  FoldDecomposedGroupNorm(MLIRContext *ctx, int64_t &folded, int64_t &calls,
                          int64_t &bytes)
      : OpRewritePattern(ctx), folded(folded), calls(calls), bytes(bytes) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    culib::ElementwiseOp addBias, mulScale;
    if (!matchScaleAndBias(root, addBias, mulScale))
      return failure();
    culib::CopyOp back;
    Value normalised;
    for (Value in : mulScale.getInputs())
      if (!back && (back = copyWriting(in, mulScale)))
        normalised = in;
    auto instance = back ? dyn_cast_or_null<culib::InstanceNormOp>(
                               culib::soleWriter(back.getX(), {back}))
                         : nullptr;
    if (!instance || instance.getY() != back.getX())
      return rewriter.notifyMatchFailure(root, "no reshaped instance norm");
    culib::CopyOp reshape = copyWriting(instance.getX(), instance);
    if (!reshape || !isSplatWeight(instance.getScale(), 1.0) ||
        !isSplatWeight(instance.getBias(), 0.0))
      return rewriter.notifyMatchFailure(root, "not a plain grouped norm");
    Value x = reshape.getX(), y = root.getY();
    MemRefType xType = memrefOf(x), grouped = memrefOf(instance.getX());
    Type element = xType.getElementType();
    if (!isa<FloatType>(element) || memrefOf(y) != xType ||
        memrefOf(normalised) != xType || xType.getRank() < 2 ||
        grouped.getRank() != 3 || grouped.getElementType() != element ||
        !xType.hasStaticShape() || !grouped.hasStaticShape() ||
        grouped.getDimSize(0) != xType.getDimSize(0))
      return rewriter.notifyMatchFailure(root, "shapes or types differ");
    const int64_t channels = xType.getDimSize(1),
                  groups = grouped.getDimSize(1);
    if (groups < 1 || channels % groups)
      return rewriter.notifyMatchFailure(root, "groups do not split C");
    Value scale = otherInput(mulScale, normalised);
    Value bias = addBias ? otherInput(addBias, mulScale.getY()) : Value();
    if (scale == normalised || !isPerChannel(scale, channels, element) ||
        (bias &&
         (bias == mulScale.getY() || !isPerChannel(bias, channels, element))))
      return rewriter.notifyMatchFailure(root, "no per-channel scale, bias");

    SmallVector<Operation *> chain = {reshape, instance, back, mulScale};
    if (addBias)
      chain.push_back(addBias);
    for (Value read : {x, scale, bias})
      if (read && culib::writtenBetween(read, reshape, root, chain))
        return rewriter.notifyMatchFailure(root, "an input is written before");
    rewriter.setInsertionPoint(root);
    culib::GroupNormOp::create(rewriter, root.getLoc(), x, scale, bias, y,
                               rewriter.getI64IntegerAttr(groups),
                               instance.getEpsilonAttr());
    ++folded;
    calls += static_cast<int64_t>(chain.size()) - 1;
    // The chain, its intermediate buffers and the constants only it read.
    bytes += culib::eraseCallsAndTheirBuffers(chain, y, rewriter);
    return success();
  }

  int64_t &folded, &calls, &bytes;
};

/// softmax over the last dim of t, where t = x * s or x / s (s a constant
/// one-element float; either order for *), t = u + mask, or t = (x * s) +
/// mask (the mask broadcast onto x, x's type) -> one culib.scaled_softmax:
/// x scaled and masked in f32 inside the call, rounded once at its store
/// (the calls rounded t first).
struct FoldScaledSoftmax : OpRewritePattern<culib::SoftmaxOp> {
  FoldScaledSoftmax(MLIRContext *ctx, int64_t &folded, int64_t &calls,
                    int64_t &bytes)
      : OpRewritePattern(ctx), folded(folded), calls(calls), bytes(bytes) {}

  /// `t` as x * s (or x / s, s a power of two) written for `reader` alone:
  /// the call, x and the factor.
  static culib::ElementwiseOp scaleWriting(Value t, Operation *reader, Value &x,
                                           float &s) {
    for (ElementwiseFn fn : {ElementwiseFn::Mul, ElementwiseFn::Div}) {
      auto op = elementwiseWriting(t, fn, {reader});
      if (!op || op.getInputs().size() != 2)
        continue;
      SmallVector<std::pair<Value, Value>, 2> orders = {
          {op.getInputs()[0], op.getInputs()[1]}};
      if (fn == ElementwiseFn::Mul)
        orders.push_back({op.getInputs()[1], op.getInputs()[0]});
      for (auto [in, scale] : orders) {
        std::optional<double> value = culib::scalarWeightValue(scale);
        std::optional<double> factor =
            value ? culib::exactFactor(*value, fn == ElementwiseFn::Div)
                  : std::nullopt;
        if (!factor || memrefOf(in) != memrefOf(t))
          continue;
        x = in;
        s = static_cast<float>(*factor);
        return op;
      }
    }
    return nullptr;
  }

  LogicalResult matchAndRewrite(culib::SoftmaxOp softmax,
                                PatternRewriter &rewriter) const override {
    Value t = softmax.getX(), y = softmax.getY();
    MemRefType type = memrefOf(t);
    const int64_t rank = type.getRank(),
                  axis = static_cast<int64_t>(softmax.getAxis());
    if (softmax.getLog() || rank < 1 || (axis != -1 && axis != rank - 1) ||
        memrefOf(y) != type)
      return rewriter.notifyMatchFailure(softmax, "not over the last dim");
    SmallVector<Operation *> chain;
    Value x = t, mask;
    float scale = 1.0f;
    // t = u + mask (either order), u perhaps x * s.
    if (auto add = elementwiseWriting(t, ElementwiseFn::Add, {softmax});
        add && add.getInputs().size() == 2) {
      for (auto [u, m] : {std::pair(add.getInputs()[0], add.getInputs()[1]),
                          std::pair(add.getInputs()[1], add.getInputs()[0])}) {
        if (mask || memrefOf(u) != type || u == m ||
            memrefOf(m).getElementType() != type.getElementType() ||
            !culib::broadcastsTo(memrefOf(m).getShape(), type.getShape()))
          continue;
        mask = m;
        x = u;
        chain.push_back(add);
      }
      if (mask) {
        Value scaled;
        if (auto mul = scaleWriting(x, chain.back(), scaled, scale)) {
          chain.push_back(mul);
          x = scaled;
        }
      }
    } else if (auto mul = scaleWriting(t, softmax, x, scale)) {
      chain.push_back(mul);
    }
    if (chain.empty())
      return rewriter.notifyMatchFailure(softmax, "no scale or mask before");
    // The chain's first call (pushed last); the new call reads x and the
    // mask where the softmax ran.
    Operation *first = chain.back();
    chain.push_back(softmax);
    for (Value read : {x, mask})
      if (read && culib::writtenBetween(read, first, softmax, chain))
        return rewriter.notifyMatchFailure(softmax, "an input is written");
    rewriter.setInsertionPoint(softmax);
    culib::ScaledSoftmaxOp::create(rewriter, softmax.getLoc(), x, mask, y,
                                   rewriter.getF32FloatAttr(scale));
    ++folded;
    calls += static_cast<int64_t>(chain.size()) - 1;
    // The chain, its intermediate buffers and the constants only it read.
    bytes += culib::eraseCallsAndTheirBuffers(chain, y, rewriter);
    return success();
  }

  int64_t &folded, &calls, &bytes;
};

/// A batch norm in inference whose one reader is an elementwise function
/// (a ReLU) becomes its per-channel scale and shift, y = x * s + t with
/// s = scale / sqrt(var + eps) and t = bias - mean * s: two programs over
/// the weights (which culib-hoist-weight-calls runs once, at load) and a
/// mul and an add, which culib-fuse-elementwise fuses with the function
/// after them: one pass over the activations instead of two. The scale and
/// shift are f32, as the statistics are; a 16-bit x is cast to f32 first
/// and the sum cast back to y's type, casts that the fused program takes
/// in (f32 inside, one rounding at its store: DenseNet-121's bf16 batch
/// norms and ReLUs, 61 pairs of calls, become 61 programs).
struct BatchNormAsScaleAndShift
    : OpRewritePattern<culib::BatchNormInferenceOp> {
  BatchNormAsScaleAndShift(MLIRContext *context, int64_t &folded,
                           int64_t &calls)
      : OpRewritePattern(context), folded(folded), calls(calls) {}

  LogicalResult matchAndRewrite(culib::BatchNormInferenceOp bn,
                                PatternRewriter &rewriter) const override {
    Value x = bn.getX(), y = bn.getY();
    auto type = cast<MemRefType>(x.getType());
    Type element = type.getElementType();
    if (!(element.isF32() || element.isBF16() || element.isF16()) ||
        type.getRank() < 2 || y.getType() != x.getType() ||
        !y.getDefiningOp<culib::AllocOp>())
      return failure();
    // y's one reader: an elementwise function from floats to floats, after
    // the batch norm (it will take the mul and the add into its program).
    Operation *reader = nullptr;
    for (Operation *user : y.getUsers()) {
      if (user == bn.getOperation())
        continue;
      if (reader)
        return failure();
      reader = user;
    }
    auto next = dyn_cast_or_null<culib::ElementwiseOp>(reader);
    if (!next || !rt::isFusableFn(next.getFn()) ||
        next->getBlock() != bn->getBlock() || next->isBeforeInBlock(bn) ||
        culib::writes(next, y))
      return failure();
    // The per-channel parameters, seen as [C, 1, ...] channels first.
    const bool channelsLast = bn.getLayout() == culib::Layout::nhwc;
    int64_t channels = type.getDimSize(channelsLast ? type.getRank() - 1 : 1);
    SmallVector<int64_t> paramShape{channels};
    if (!channelsLast)
      paramShape.append(type.getRank() - 2, 1);
    auto paramType = MemRefType::get(paramShape, rewriter.getF32Type());
    Location loc = bn.getLoc();
    rewriter.setInsertionPoint(bn);
    auto param = [&](Value v) -> Value {
      if (v.getType() == paramType)
        return v;
      return culib::ViewOp::create(rewriter, loc, paramType, v);
    };
    for (Value p :
         {bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()})
      if (cast<MemRefType>(p.getType()).getNumElements() != channels)
        return failure();
    auto scalarType = MemRefType::get({}, rewriter.getF32Type());
    auto epsilon = culib::WeightOp::create(
        rewriter, loc, scalarType,
        rewriter.getStringAttr(mp::getNodeName(loc) + ".epsilon"),
        DenseElementsAttr::get(RankedTensorType::get({}, rewriter.getF32Type()),
                               bn.getEpsilon()));
    Value s = culib::AllocOp::create(rewriter, loc, paramType, IntegerAttr(),
                                     UnitAttr());
    culib::FusedElementwiseOp::create(
        rewriter, loc,
        ValueRange{param(bn.getVariance()), epsilon, param(bn.getScale())}, s,
        "add(x0, x1); sqrt(t0); div(x2, t1)");
    Value t = culib::AllocOp::create(rewriter, loc, paramType, IntegerAttr(),
                                     UnitAttr());
    culib::FusedElementwiseOp::create(
        rewriter, loc, ValueRange{param(bn.getMean()), s, param(bn.getBias())},
        t, "mul(x0, x1); sub(x2, t0)");
    auto f32Type = MemRefType::get(type.getShape(), rewriter.getF32Type());
    auto f32Buffer = [&] {
      return culib::AllocOp::create(rewriter, loc, f32Type, IntegerAttr(),
                                    UnitAttr())
          .getBuffer();
    };
    Value input = x;
    if (!element.isF32()) {
      input = f32Buffer();
      culib::CastOp::create(rewriter, loc, x, input);
    }
    Value scaled = f32Buffer();
    culib::ElementwiseOp::create(rewriter, loc, ValueRange{input, s}, scaled,
                                 rt::cpu::ElementwiseFn::Mul, FloatAttr(),
                                 FloatAttr());
    Value sum = element.isF32() ? y : f32Buffer();
    culib::ElementwiseOp::create(rewriter, loc, ValueRange{scaled, t}, sum,
                                 rt::cpu::ElementwiseFn::Add, FloatAttr(),
                                 FloatAttr());
    if (!element.isF32())
      culib::CastOp::create(rewriter, loc, sum, y);
    rewriter.eraseOp(bn);
    ++folded;
    // One call became four (two of them run at load), or six with the casts.
    calls -= element.isF32() ? 3 : 5;
    return success();
  }

  int64_t &folded, &calls;
};

struct FuseNormsPass : public mp::impl::FuseNormsBase<FuseNormsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t folded = 0, calls = 0, bytes = 0;
    int64_t rmsFolded = 0, rmsCalls = 0, rmsBytes = 0;
    int64_t groupFolded = 0, groupCalls = 0, groupBytes = 0;
    int64_t softmaxFolded = 0, softmaxCalls = 0, softmaxBytes = 0;
    int64_t batchNorms = 0, batchNormCalls = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<BatchNormAsScaleAndShift>(&getContext(), batchNorms,
                                           batchNormCalls);
    patterns.add<FoldDecomposedLayerNorm>(&getContext(), folded, calls, bytes);
    patterns.add<FoldDecomposedRmsNorm>(&getContext(), rmsFolded, rmsCalls,
                                        rmsBytes);
    patterns.add<FoldDecomposedGroupNorm>(&getContext(), groupFolded,
                                          groupCalls, groupBytes);
    patterns.add<FoldScaledSoftmax>(&getContext(), softmaxFolded, softmaxCalls,
                                    softmaxBytes);
    if (failed(culib::applyFusionPatterns(func, std::move(patterns))))
      return signalPassFailure();
    if (record) {
      culib::recordFusion(func, getArgument(), "decomposed layer norm", folded,
                          calls, bytes);
      culib::recordFusion(func, getArgument(), "decomposed RMS norm", rmsFolded,
                          rmsCalls, rmsBytes);
      culib::recordFusion(func, getArgument(), "reshaped group norm",
                          groupFolded, groupCalls, groupBytes);
      culib::recordFusion(func, getArgument(), "scaled or masked softmax",
                          softmaxFolded, softmaxCalls, softmaxBytes);
      culib::recordFusion(func, getArgument(), "batch norm as scale and shift",
                          batchNorms, batchNormCalls, 0);
    }
    if (report)
      func.emitRemark() << "culib-fuse-norms: " << folded
                        << " decomposed layer norm(s), " << rmsFolded
                        << " RMS norm(s), " << groupFolded
                        << " group norm(s) and " << softmaxFolded
                        << " scaled or masked softmax(es) made one call each, "
                        << batchNorms
                        << " batch norm(s) before an elementwise function "
                           "made a scale and shift; "
                        << bytes + rmsBytes + groupBytes + softmaxBytes
                        << " intermediate bytes no longer written";
  }
};

} // namespace
