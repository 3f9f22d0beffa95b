//===- FuseEpilogues.cpp - the culib-fuse-epilogues pass ------------------===//
//
// A ReLU right after a convolution or a matmul, or a clip with constant
// bounds (ReLU6) right after a convolution, becomes the call's own
// activation epilogue: conv_fwd(x, w) -> t; relu(t) -> y becomes
// conv_fwd(x, w) -> y {activation = relu}, when the convolution alone
// writes t and the ReLU alone reads it, and nothing touches y between the
// two calls (the convolution now writes y earlier). Bias, C and alpha come
// before the epilogue on every backend, as they did before the ReLU. A bias
// vector added to a matmul's result likewise becomes the matmul's bias, and
// a GELU after it (the erf form exporters write in five calls) its exact
// GELU epilogue; a constant scale of its result its alpha. Casts fold too: a
// float cast of a convolution's or a matmul's result becomes its output type,
// and the casts autocast puts around a pool it keeps in f32 go (the pool runs
// on the 16-bit data). In training steps, an activation's gradient of a
// matmul's result (dY W^T) becomes the matmul's activation-gradient
// epilogue, reading the activation's forward input as `aux`.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mp {
#define GEN_PASS_DEF_FUSEEPILOGUES
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// What the patterns did, for the report.
struct FusionCounts {
  int64_t calls = 0; ///< ReLUs, clips and bias adds folded into their producer
  int64_t bytes = 0; ///< intermediate bytes no longer written (and read)
};

/// The output buffer and the epilogue of the calls with one.
Value outputOf(culib::ConvFwdOp op) { return op.getY(); }
Value outputOf(culib::MatmulOp op) { return op.getD(); }
culib::Epilogue epilogueOf(culib::ConvFwdOp op) { return op.getActivation(); }
culib::Epilogue epilogueOf(culib::MatmulOp op) { return op.getEpilogue(); }
void setEpilogue(culib::ConvFwdOp op, culib::Epilogue e) {
  op.setActivation(e);
}
void setEpilogue(culib::MatmulOp op, culib::Epilogue e) { op.setEpilogue(e); }

/// The CallOp that writes `t` as its output, when `reader` alone reads it
/// (culib::soleWriter).
template <typename CallOp> CallOp soleProducer(Value t, Operation *reader) {
  auto producer = dyn_cast_or_null<CallOp>(culib::soleWriter(t, {reader}));
  return producer && outputOf(producer) == t ? producer : nullptr;
}

/// Whether `y` is used by an op between `from` and `to` (exclusive).
bool usedBetween(Value y, Operation *from, Operation *to) {
  for (Operation *user : y.getUsers()) {
    Operation *inBlock = from->getBlock()->findAncestorOpInBlock(*user);
    if (inBlock && from->isBeforeInBlock(inBlock) &&
        inBlock->isBeforeInBlock(to))
      return true;
  }
  return false;
}

/// Makes `producer` write `y` (the output of `consumer`, which reads the
/// producer's output t) instead of t, when nothing touches y in between.
LogicalResult writeInto(Operation *producer, Value t, Value y,
                        Operation *consumer, PatternRewriter &rewriter) {
  if (usedBetween(y, producer, consumer))
    return rewriter.notifyMatchFailure(consumer, "y is used in between");
  // y must exist where the producer runs.
  if (Operation *def = y.getDefiningOp()) {
    if (def->getBlock() != producer->getBlock())
      return rewriter.notifyMatchFailure(consumer, "y is made elsewhere");
    if (!def->isBeforeInBlock(producer))
      rewriter.moveOpBefore(def, producer);
  }
  rewriter.modifyOpInPlace(producer,
                           [&] { producer->replaceUsesOfWith(t, y); });
  return success();
}

/// After a fold: counts it, and erases `consumer` (now done by the call),
/// t's buffer and the one-element weights (clip bounds) nothing else reads.
void eraseFolded(Operation *consumer, Value t, FusionCounts &counts,
                 PatternRewriter &rewriter) {
  counts.calls += 1;
  counts.bytes += culib::byteSize(cast<MemRefType>(t.getType()));
  SmallVector<Value> others;
  for (Value v : consumer->getOperands())
    if (v != t)
      others.push_back(v);
  rewriter.eraseOp(consumer);
  rewriter.eraseOp(t.getDefiningOp());
  for (Value other : others)
    if (auto weight = other.getDefiningOp<culib::WeightOp>();
        weight && other.use_empty())
      rewriter.eraseOp(weight);
}

/// relu(t) with t written by a CallOp (conv_fwd, matmul) -> the call
/// writes relu's output with a ReLU epilogue.
template <typename CallOp>
struct FoldReluInto : OpRewritePattern<culib::ElementwiseOp> {
  FoldReluInto(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp relu,
                                PatternRewriter &rewriter) const override {
    if (relu.getFn() != rt::cpu::ElementwiseFn::Relu ||
        relu.getInputs().size() != 1)
      return failure();
    Value t = relu.getInputs()[0], y = relu.getY();
    if (t.getType() != y.getType())
      return rewriter.notifyMatchFailure(relu, "not the same buffer type");
    CallOp producer = soleProducer<CallOp>(t, relu);
    if (!producer || epilogueOf(producer) != culib::Epilogue::none)
      return rewriter.notifyMatchFailure(relu, "no producer to fold into");
    if (failed(writeInto(producer, t, y, relu, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(
        producer, [&] { setEpilogue(producer, culib::Epilogue::relu); });
    eraseFolded(relu, t, counts, rewriter);
    return success();
  }

  FusionCounts &counts;
};

/// add(t, bias) with t written by a matmul without bias or epilogue and
/// bias a vector over its last dim (D's type or f32) -> the matmul adds the
/// bias (in f32, before rounding its result once).
struct FoldBiasIntoMatmul : OpRewritePattern<culib::ElementwiseOp> {
  FoldBiasIntoMatmul(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getFn() != rt::cpu::ElementwiseFn::Add ||
        add.getInputs().size() != 2)
      return failure();
    Value y = add.getY();
    for (auto [t, bias] : {std::pair(add.getInputs()[0], add.getInputs()[1]),
                           std::pair(add.getInputs()[1], add.getInputs()[0])}) {
      auto matmul = soleProducer<culib::MatmulOp>(t, add);
      if (!matmul || matmul.getBias() ||
          matmul.getEpilogue() != culib::Epilogue::none ||
          t.getType() != y.getType() || t == bias)
        continue;
      auto d = cast<MemRefType>(y.getType());
      auto b = cast<MemRefType>(bias.getType());
      if (b.getRank() != 1 || d.getRank() == 0 ||
          b.getDimSize(0) != d.getShape().back() ||
          (b.getElementType() != d.getElementType() &&
           !b.getElementType().isF32()) ||
          culib::writtenBetween(bias, matmul, add))
        continue;
      if (failed(writeInto(matmul, t, y, add, rewriter)))
        return failure();
      rewriter.modifyOpInPlace(matmul,
                               [&] { matmul.getBiasMutable().assign(bias); });
      eraseFolded(add, t, counts, rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no matmul and bias vector");
  }

  FusionCounts &counts;
};

/// Whether `v` is a one-element weight within f32 rounding of `expected`.
bool isScalar(Value v, double expected) {
  std::optional<double> value = culib::scalarWeightValue(v);
  return value && std::abs(*value - expected) <= 1e-6 * std::abs(expected);
}

using culib::elementwiseWriting;
using culib::memrefOf;

/// GELU after a matmul without epilogue -> the matmul's exact (erf) GELU
/// epilogue: an elementwise gelu, or the five calls exporters write for it,
/// x * (1 + erf(x / sqrt 2)) * 0.5 (the 0.5 on either product, divided by
/// sqrt 2 or multiplied by 1 / sqrt 2). The epilogue computes it in f32 on
/// the unrounded sum, which the calls computed on the rounded one: never
/// less accurate.
struct FoldGeluIntoMatmul : OpRewritePattern<culib::ElementwiseOp> {
  // Before FoldDecomposedGelu: into the matmul where there is one.
  FoldGeluIntoMatmul(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx, /*benefit=*/2), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    using rt::cpu::ElementwiseFn;
    Value y = root.getY(), x;
    SmallVector<Operation *> calls = {root};
    if (root.getFn() == ElementwiseFn::Gelu && root.getInputs().size() == 1 &&
        !root.getAlpha()) {
      x = root.getInputs()[0];
    } else if (root.getFn() == ElementwiseFn::Mul &&
               root.getInputs().size() == 2) {
      if (failed(matchDecomposed(root, x, calls)))
        return rewriter.notifyMatchFailure(root, "not x * Phi(x)");
    } else {
      return failure();
    }
    if (x.getType() != y.getType())
      return rewriter.notifyMatchFailure(root, "not the same buffer type");
    // x is read by the calls of the GELU alone.
    auto matmul =
        dyn_cast_or_null<culib::MatmulOp>(culib::soleWriter(x, calls));
    if (!matmul || matmul.getD() != x ||
        matmul.getEpilogue() != culib::Epilogue::none)
      return rewriter.notifyMatchFailure(root, "no matmul to fold into");
    if (failed(writeInto(matmul, x, y, root, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(
        matmul, [&] { matmul.setEpilogue(culib::Epilogue::gelu); });
    counts.bytes += culib::eraseCallsAndTheirBuffers(calls, y, rewriter);
    counts.calls += static_cast<int64_t>(calls.size());
    return success();
  }

  /// root = mul(a, b) with {a, b} = {x * (1 + erf(x / sqrt 2)), 0.5} or
  /// {x * 0.5, 1 + erf(x / sqrt 2)}; x and the calls on the way.
  static LogicalResult matchDecomposed(culib::ElementwiseOp root, Value &x,
                                       SmallVector<Operation *> &calls) {
    using rt::cpu::ElementwiseFn;
    // 1 + erf(x / sqrt 2) written as `t` for `reader`: its x.
    auto onePlusErf = [&](Value t, Operation *reader,
                          SmallVector<Operation *> &found) -> Value {
      auto add = elementwiseWriting(t, ElementwiseFn::Add, {reader});
      if (!add)
        return Value();
      for (auto [e, one] :
           {std::pair(add.getInputs()[0], add.getInputs()[1]),
            std::pair(add.getInputs()[1], add.getInputs()[0])}) {
        if (!isScalar(one, 1.0))
          continue;
        auto erf = elementwiseWriting(e, ElementwiseFn::Erf, {add});
        if (!erf)
          continue;
        Value scaled = erf.getInputs()[0];
        auto div = elementwiseWriting(scaled, ElementwiseFn::Div, {erf});
        auto mul = elementwiseWriting(scaled, ElementwiseFn::Mul, {erf});
        Value input;
        Operation *scale = nullptr;
        if (div && isScalar(div.getInputs()[1], std::sqrt(2.0))) {
          input = div.getInputs()[0];
          scale = div;
        } else if (mul && isScalar(mul.getInputs()[1], std::sqrt(0.5))) {
          input = mul.getInputs()[0];
          scale = mul;
        }
        if (!input)
          continue;
        found.append({scale, erf, add});
        return input;
      }
      return Value();
    };
    ValueRange in = root.getInputs();
    for (auto [a, b] : {std::pair(in[0], in[1]), std::pair(in[1], in[0])}) {
      SmallVector<Operation *> found;
      if (isScalar(b, 0.5)) {
        // a = mul(x, 1 + erf(...)).
        auto product = elementwiseWriting(a, ElementwiseFn::Mul, {root});
        if (!product)
          continue;
        ValueRange p = product.getInputs();
        for (auto [v, rest] : {std::pair(p[0], p[1]), std::pair(p[1], p[0])}) {
          found.clear();
          Value input = onePlusErf(rest, product, found);
          if (input && input == v) {
            x = v;
            calls.append(found.rbegin(), found.rend());
            calls.push_back(product);
            return success();
          }
        }
      } else if (auto half = elementwiseWriting(a, ElementwiseFn::Mul, {root});
                 half && isScalar(half.getInputs()[1], 0.5)) {
        // a = mul(x, 0.5), b = 1 + erf(x / sqrt 2).
        Value input = onePlusErf(b, root, found);
        if (input && input == half.getInputs()[0]) {
          x = input;
          calls.append(found.rbegin(), found.rend());
          calls.push_back(half);
          return success();
        }
      }
    }
    return failure();
  }

  FusionCounts &counts;
};

/// An activation after a convolution or matmul without one -> the call's
/// activation epilogue, computed in f32 before the one rounding: an
/// elementwise sigmoid, tanh, hard_swish, gelu or gelu_tanh, or SiLU as
/// exporters write it, mul(t, sigmoid(t)) (EfficientNet's and MobileNetV3's
/// after convolutions, LLaMA's gated MLPs' after a matmul).
template <typename CallOp>
struct FoldActivationInto : OpRewritePattern<culib::ElementwiseOp> {
  FoldActivationInto(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    using rt::cpu::ElementwiseFn;
    if (root.getAlpha() || root.getBeta())
      return failure();
    ValueRange in = root.getInputs();
    Value t;
    culib::Epilogue activation;
    SmallVector<Operation *> calls = {root};
    switch (root.getFn()) {
    case ElementwiseFn::Sigmoid:
      activation = culib::Epilogue::sigmoid;
      t = in[0];
      break;
    case ElementwiseFn::Tanh:
      activation = culib::Epilogue::tanh;
      t = in[0];
      break;
    case ElementwiseFn::HardSwish:
      activation = culib::Epilogue::hard_swish;
      t = in[0];
      break;
    case ElementwiseFn::Gelu:
      activation = culib::Epilogue::gelu;
      t = in[0];
      break;
    case ElementwiseFn::GeluTanh:
      activation = culib::Epilogue::gelu_tanh;
      t = in[0];
      break;
    case ElementwiseFn::Mul:
      activation = culib::Epilogue::silu;
      if (in.size() != 2)
        return failure();
      for (auto [x, s] : {std::pair(in[0], in[1]), std::pair(in[1], in[0])}) {
        if (t)
          break;
        auto sigmoid = elementwiseWriting(s, ElementwiseFn::Sigmoid, {root});
        if (sigmoid && sigmoid.getInputs()[0] == x && x != s) {
          t = x;
          calls.insert(calls.begin(), sigmoid);
        }
      }
      if (!t)
        return rewriter.notifyMatchFailure(root, "not x * sigmoid(x)");
      break;
    default:
      return failure();
    }
    Value y = root.getY();
    if (t.getType() != y.getType())
      return rewriter.notifyMatchFailure(root, "not the same buffer type");
    auto call = dyn_cast_or_null<CallOp>(culib::soleWriter(t, calls));
    if (!call || outputOf(call) != t ||
        epilogueOf(call) != culib::Epilogue::none)
      return rewriter.notifyMatchFailure(root, "no call to fold into");
    if (failed(writeInto(call, t, y, root, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(call, [&] { setEpilogue(call, activation); });
    // t and the sigmoid's buffer (SiLU) go with the calls.
    counts.bytes += culib::eraseCallsAndTheirBuffers(calls, y, rewriter);
    counts.calls += static_cast<int64_t>(calls.size());
    return success();
  }

  FusionCounts &counts;
};

/// The five calls of a decomposed GELU with no matmul to fold into (after
/// a bias add of another type, in autocast's f32 region) -> one
/// elementwise gelu (exact, erf), which the elementwise fusion then puts
/// into its program: one oneDNN post-op instead of a scalar erf per element.
struct FoldDecomposedGelu : OpRewritePattern<culib::ElementwiseOp> {
  FoldDecomposedGelu(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx, /*benefit=*/1), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    if (root.getFn() != rt::cpu::ElementwiseFn::Mul ||
        root.getInputs().size() != 2)
      return failure();
    Value x, y = root.getY();
    SmallVector<Operation *> calls = {root};
    if (failed(FoldGeluIntoMatmul::matchDecomposed(root, x, calls)))
      return rewriter.notifyMatchFailure(root, "not x * Phi(x)");
    // The gelu reads x where the last call was: nothing may write it since
    // the first.
    Operation *first = root;
    for (Operation *op : calls)
      if (op->isBeforeInBlock(first))
        first = op;
    if (x.getType() != y.getType() ||
        culib::writtenBetween(x, first, root, calls))
      return rewriter.notifyMatchFailure(root, "types differ or x changes");
    rewriter.setInsertionPoint(root);
    culib::ElementwiseOp::create(rewriter, root.getLoc(), ValueRange{x}, y,
                                 rt::cpu::ElementwiseFn::Gelu,
                                 /*alpha=*/FloatAttr(), /*beta=*/FloatAttr());
    counts.bytes += culib::eraseCallsAndTheirBuffers(calls, y, rewriter);
    counts.calls += static_cast<int64_t>(calls.size()) - 1;
    return success();
  }

  FusionCounts &counts;
};

/// The residual a convolution adds (its `residual`) and a matmul's (its C,
/// with beta 1: cuBLASLt's D = A B + C + bias).
Value residualOf(culib::ConvFwdOp op) { return op.getResidual(); }
Value residualOf(culib::MatmulOp op) { return op.getC(); }
void setResidual(culib::ConvFwdOp op, Value r, Builder &) {
  op.getResidualMutable().assign(r);
}
void setResidual(culib::MatmulOp op, Value r, Builder &b) {
  op.getCMutable().assign(r);
  op.setBetaAttr(b.getF32FloatAttr(1.0f));
}

/// add(t, r) with t written by a CallOp (conv_fwd, matmul) without residual
/// or epilogue and r of its type -> the call adds r itself, in f32 before
/// the activation and the one rounding: a ResNet block's shortcut (a ReLU
/// after it then folds as the convolution's activation), a transformer's
/// residual after its output projection or second MLP matmul.
template <typename CallOp>
struct FoldResidualInto : OpRewritePattern<culib::ElementwiseOp> {
  FoldResidualInto(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp add,
                                PatternRewriter &rewriter) const override {
    if (add.getFn() != rt::cpu::ElementwiseFn::Add ||
        add.getInputs().size() != 2 || add.getAlpha() || add.getBeta())
      return failure();
    Value y = add.getY();
    for (auto [t, r] : {std::pair(add.getInputs()[0], add.getInputs()[1]),
                        std::pair(add.getInputs()[1], add.getInputs()[0])}) {
      CallOp call = soleProducer<CallOp>(t, add);
      if (!call || residualOf(call) ||
          epilogueOf(call) != culib::Epilogue::none || t == r ||
          t.getType() != y.getType() || r.getType() != y.getType() ||
          culib::writtenBetween(r, call, add))
        continue;
      // r must hold its value where the call runs.
      if (Operation *def = r.getDefiningOp();
          def && def->getBlock() == call->getBlock() &&
          call->isBeforeInBlock(def))
        continue;
      if (failed(writeInto(call, t, y, add, rewriter)))
        return failure();
      rewriter.modifyOpInPlace(call, [&] { setResidual(call, r, rewriter); });
      eraseFolded(add, t, counts, rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no call and residual");
  }

  FusionCounts &counts;
};

/// Whether the calls write `t` from their f32 result (rounded once).
bool isWrittenFromF32(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

/// cast(t) -> y with t written by a CallOp (conv_fwd, matmul) -> the call
/// writes y, rounding its f32 result once to y's type: autocast's
/// precision boundaries after a 16-bit call (widened into an f32 region,
/// whose bias, GELU, residual add and output cast then fold in too) and
/// before one (an f32 call's result narrowed for the next 16-bit call).
/// Never less accurate: the two calls rounded to t's type first.
template <typename CallOp>
struct FoldCastInto : OpRewritePattern<culib::CastOp> {
  FoldCastInto(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::CastOp castOp,
                                PatternRewriter &rewriter) const override {
    Value t = castOp.getX(), y = castOp.getY();
    auto from = cast<MemRefType>(t.getType());
    auto to = cast<MemRefType>(y.getType());
    Type element = to.getElementType();
    if (!isWrittenFromF32(from.getElementType()) ||
        !isWrittenFromF32(element) || from.getElementType() == element ||
        MemRefType::get(from.getShape(), element, from.getLayout(),
                        from.getMemorySpace()) != to)
      return rewriter.notifyMatchFailure(castOp, "not a float cast");
    CallOp call = soleProducer<CallOp>(t, castOp);
    if (!call)
      return rewriter.notifyMatchFailure(castOp, "no call to fold into");
    // A residual (C) has the output's type on every backend (a bias may
    // be of any 16- or 32-bit float type: it is added in f32).
    if (residualOf(call))
      return rewriter.notifyMatchFailure(castOp, "a residual of t's type");
    if (failed(writeInto(call, t, y, castOp, rewriter)))
      return failure();
    eraseFolded(castOp, t, counts, rewriter);
    return success();
  }

  FusionCounts &counts;
};

/// mul(t, s) or mul(s, t), or div(t, s) where 1 / s is exact (a power of
/// two), with s a constant one-element float and t written by a matmul
/// without bias, C or epilogue -> the matmul's alpha times s: its output
/// scaling, applied to the f32 product before its one rounding (the two
/// calls rounded the product first).
struct FoldScaleIntoMatmul : OpRewritePattern<culib::ElementwiseOp> {
  FoldScaleIntoMatmul(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    using rt::cpu::ElementwiseFn;
    const bool isMul = root.getFn() == ElementwiseFn::Mul;
    if ((!isMul && root.getFn() != ElementwiseFn::Div) ||
        root.getInputs().size() != 2 || root.getAlpha() || root.getBeta())
      return failure();
    Value y = root.getY();
    SmallVector<std::pair<Value, Value>, 2> orders = {
        {root.getInputs()[0], root.getInputs()[1]}};
    if (isMul)
      orders.push_back({root.getInputs()[1], root.getInputs()[0]});
    for (auto [t, scale] : orders) {
      std::optional<double> value = culib::scalarWeightValue(scale);
      if (!value || t.getType() != y.getType() || t == scale)
        continue;
      std::optional<double> factor = culib::exactFactor(*value, !isMul);
      if (!factor)
        continue;
      auto matmul = soleProducer<culib::MatmulOp>(t, root);
      if (!matmul || matmul.getBias() || matmul.getC() ||
          matmul.getEpilogue() != culib::Epilogue::none)
        continue;
      const float alpha =
          static_cast<float>(matmul.getAlpha().convertToDouble() * *factor);
      if (!std::isfinite(alpha))
        continue;
      if (failed(writeInto(matmul, t, y, root, rewriter)))
        return failure();
      rewriter.modifyOpInPlace(matmul, [&] {
        matmul.setAlphaAttr(rewriter.getF32FloatAttr(alpha));
      });
      eraseFolded(root, t, counts, rewriter);
      return success();
    }
    return rewriter.notifyMatchFailure(root, "no matmul to scale");
  }

  FusionCounts &counts;
};

/// cast(x: 16-bit -> f32) -> pool -> cast(-> x's type) -> y: the pool on
/// x, writing y. Every backend's pool reads 16-bit data as f32, sums
/// (averages) in f32 and rounds once, as the f32 pool and the cast did: the
/// same values without the two f32 copies (autocast keeps average pools in
/// f32; EfficientNet's squeeze-and-excitation blocks had two casts of their
/// whole activations each).
struct PoolIn16Bits : OpRewritePattern<culib::CastOp> {
  PoolIn16Bits(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::CastOp narrow,
                                PatternRewriter &rewriter) const override {
    Value pooled = narrow.getX(), y = narrow.getY();
    auto pooledType = cast<MemRefType>(pooled.getType());
    Type element = cast<MemRefType>(y.getType()).getElementType();
    if (!pooledType.getElementType().isF32() ||
        !(element.isF16() || element.isBF16()))
      return rewriter.notifyMatchFailure(narrow, "not f32 -> 16 bits");
    auto pool =
        dyn_cast_or_null<culib::PoolOp>(culib::soleWriter(pooled, {narrow}));
    if (!pool || pool.getY() != pooled || pool.getIndices())
      return rewriter.notifyMatchFailure(narrow, "no pool to run in 16 bits");
    Value wide = pool.getX();
    auto widen =
        dyn_cast_or_null<culib::CastOp>(culib::soleWriter(wide, {pool}));
    if (!widen || widen.getY() != wide)
      return rewriter.notifyMatchFailure(narrow, "the pool's x is no cast");
    Value x = widen.getX();
    auto xType = cast<MemRefType>(x.getType());
    if (xType.getElementType() != element ||
        xType != MemRefType::get(cast<MemRefType>(wide.getType()).getShape(),
                                 element))
      return rewriter.notifyMatchFailure(narrow, "x is not of y's type");
    if (culib::writtenBetween(x, widen, pool))
      return rewriter.notifyMatchFailure(narrow, "x is written in between");
    if (failed(writeInto(pool, pooled, y, narrow, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(pool, [&] { pool.getXMutable().assign(x); });
    counts.calls += 2;
    counts.bytes += culib::byteSize(cast<MemRefType>(wide.getType())) +
                    culib::byteSize(pooledType);
    rewriter.eraseOp(narrow);
    rewriter.eraseOp(pooled.getDefiningOp());
    rewriter.eraseOp(widen);
    rewriter.eraseOp(wide.getDefiningOp());
    return success();
  }

  FusionCounts &counts;
};

/// `value` as f32, if that and its rounding to `element` lose nothing.
std::optional<float> exactIn(APFloat value, Type element) {
  auto floatType = dyn_cast<FloatType>(element);
  if (!floatType)
    return std::nullopt;
  bool lost = false;
  APFloat asF32 = value, inElement = value;
  asF32.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
  if (lost)
    return std::nullopt;
  inElement.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
  if (lost)
    return std::nullopt;
  return asF32.convertToFloat();
}

/// A clip bound: a one-element float weight's value, as f32, if it is
/// exact both as f32 and in `element` (the type of the clipped data).
std::optional<float> exactBound(Value bound, Type element) {
  std::optional<APFloat> value = culib::scalarFloatWeight(bound);
  return value ? exactIn(*value, element) : std::nullopt;
}

/// clip(t, lo, hi) (or clip(t) with alpha = lo, beta = hi) with t written
/// by a convolution -> the convolution clips (ReLU6). Exact: rounding is
/// monotone and keeps bounds that the output type represents.
struct FoldClipIntoConv : OpRewritePattern<culib::ElementwiseOp> {
  FoldClipIntoConv(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp clip,
                                PatternRewriter &rewriter) const override {
    if (clip.getFn() != rt::cpu::ElementwiseFn::Clip)
      return failure();
    ValueRange inputs = clip.getInputs();
    Value t = inputs[0], y = clip.getY();
    if (t.getType() != y.getType())
      return rewriter.notifyMatchFailure(clip, "not the same buffer type");
    Type element = cast<MemRefType>(y.getType()).getElementType();
    std::optional<float> lo, hi;
    if (inputs.size() == 3) {
      lo = exactBound(inputs[1], element);
      hi = exactBound(inputs[2], element);
    } else if (inputs.size() == 1 && clip.getAlpha() && clip.getBeta()) {
      lo = exactIn(APFloat(*clip.getAlpha()), element);
      hi = exactIn(APFloat(*clip.getBeta()), element);
    }
    if (!lo || !hi || !(*lo <= *hi))
      return rewriter.notifyMatchFailure(clip, "no constant, exact bounds");
    auto conv = soleProducer<culib::ConvFwdOp>(t, clip);
    if (!conv || conv.getActivation() != culib::Epilogue::none)
      return rewriter.notifyMatchFailure(clip, "no convolution to fold into");
    if (failed(writeInto(conv, t, y, clip, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(conv, [&] {
      conv.setActivation(culib::Epilogue::clip);
      conv.setClipMinAttr(rewriter.getF32FloatAttr(*lo));
      conv.setClipMaxAttr(rewriter.getF32FloatAttr(*hi));
    });
    eraseFolded(clip, t, counts, rewriter);
    return success();
  }

  FusionCounts &counts;
};

/// An activation's gradient of a matmul's result, relu_grad(t, x) (or
/// where(greater(x, 0), t, 0)), gelu_grad(t, x) or gelu_tanh_grad(t, x),
/// with t written by a matmul without bias or epilogue and read by the
/// gradient alone -> the matmul's activation-gradient epilogue with aux x,
/// writing the gradient's output (in a training step: dY W^T times the
/// activation's derivative at its forward input, in f32 before the one
/// rounding). x must hold its value from the matmul to the gradient.
struct FoldActivationGradientIntoMatmul
    : OpRewritePattern<culib::ElementwiseOp> {
  FoldActivationGradientIntoMatmul(MLIRContext *ctx, FusionCounts &counts)
      : OpRewritePattern(ctx), counts(counts) {}

  LogicalResult matchAndRewrite(culib::ElementwiseOp root,
                                PatternRewriter &rewriter) const override {
    using rt::cpu::ElementwiseFn;
    SmallVector<Operation *> calls = {root};
    Value t, x;
    culib::Epilogue epilogue;
    // The ReLU's comparison may come before the matmul: x must keep its
    // value from there too.
    Operation *firstReadOfX = root;
    if (std::optional<culib::ReluGradientForm> relu =
            culib::matchReluGradient(root)) {
      firstReadOfX = relu->compare;
      t = relu->dy;
      x = relu->x;
      epilogue = culib::Epilogue::relu_grad;
      calls.push_back(relu->compare);
    } else if (root.getInputs().size() == 2 && !root.getAlpha() &&
               !root.getBeta() &&
               (root.getFn() == ElementwiseFn::ReluGrad ||
                root.getFn() == ElementwiseFn::GeluGrad ||
                root.getFn() == ElementwiseFn::GeluTanhGrad)) {
      t = root.getInputs()[0];
      x = root.getInputs()[1];
      epilogue = root.getFn() == ElementwiseFn::ReluGrad
                     ? culib::Epilogue::relu_grad
                 : root.getFn() == ElementwiseFn::GeluGrad
                     ? culib::Epilogue::gelu_grad
                     : culib::Epilogue::gelu_tanh_grad;
    } else {
      return failure();
    }
    Value y = root.getY();
    if (t.getType() != y.getType() ||
        memrefOf(x).getShape() != memrefOf(y).getShape() || x == y || x == t)
      return rewriter.notifyMatchFailure(root, "not one shape, or in place");
    auto matmul =
        dyn_cast_or_null<culib::MatmulOp>(culib::soleWriter(t, calls));
    if (!matmul || matmul.getD() != t ||
        matmul.getEpilogue() != culib::Epilogue::none || matmul.getBias() ||
        matmul.getAux())
      return rewriter.notifyMatchFailure(root, "no matmul to fold into");
    // aux as the runtimes take it: f64 with f64 operands, else 16 or 32 bits.
    Type auxElement = memrefOf(x).getElementType();
    const bool f64 = memrefOf(matmul.getA()).getElementType().isF64();
    if (f64 ? !auxElement.isF64()
            : !(auxElement.isF32() || auxElement.isF16() ||
                auxElement.isBF16()))
      return rewriter.notifyMatchFailure(root, "aux of another float type");
    // The matmul reads x now: x is made before it and keeps its value.
    if (Operation *def = x.getDefiningOp();
        (def && (def->getBlock() != matmul->getBlock() ||
                 !def->isBeforeInBlock(matmul))) ||
        culib::writtenBetween(x, matmul, root) ||
        (firstReadOfX->isBeforeInBlock(matmul) &&
         culib::writtenBetween(x, firstReadOfX, matmul)))
      return rewriter.notifyMatchFailure(root, "x is not ready at the matmul");
    if (failed(writeInto(matmul, t, y, root, rewriter)))
      return failure();
    rewriter.modifyOpInPlace(matmul, [&] {
      matmul.getAuxMutable().assign(x);
      matmul.setEpilogue(epilogue);
    });
    counts.bytes += culib::eraseCallsAndTheirBuffers(calls, y, rewriter);
    counts.calls += static_cast<int64_t>(calls.size());
    return success();
  }

  FusionCounts &counts;
};

struct FuseEpiloguesPass
    : public mp::impl::FuseEpiloguesBase<FuseEpiloguesPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    FusionCounts counts;
    RewritePatternSet patterns(ctx);
    patterns.add<
        FoldReluInto<culib::ConvFwdOp>, FoldReluInto<culib::MatmulOp>,
        FoldClipIntoConv, FoldBiasIntoMatmul, FoldGeluIntoMatmul,
        FoldActivationInto<culib::ConvFwdOp>,
        FoldActivationInto<culib::MatmulOp>, FoldResidualInto<culib::ConvFwdOp>,
        FoldResidualInto<culib::MatmulOp>, FoldDecomposedGelu,
        FoldCastInto<culib::ConvFwdOp>, FoldCastInto<culib::MatmulOp>,
        FoldScaleIntoMatmul, PoolIn16Bits, FoldActivationGradientIntoMatmul>(
        ctx, counts);
    if (failed(culib::applyFusionPatterns(func, std::move(patterns))))
      return signalPassFailure();
    if (record)
      culib::recordFusion(
          func, getArgument(),
          "activations, biases, residuals and casts into convolution or matmul",
          counts.calls, counts.calls, counts.bytes);
    if (report)
      func.emitRemark() << "culib-fuse-epilogues: " << counts.calls
                        << " activation / bias / residual / cast call(s) "
                           "folded into their "
                           "convolution or matmul; "
                        << counts.bytes
                        << " intermediate bytes no longer written";
  }
};

} // namespace
