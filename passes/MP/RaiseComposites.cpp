//===- RaiseComposites.cpp - exporters' node chains as the typed ops
//-------===//
//
// mp-raise-composites (Passes.td): LayerNormalization and GELU as the chains
// of elementwise nodes that exporters write for opsets without those ops
// (torch at opset < 17 for layer norms, < 20 for GELU) become
// mp.layer_normalization and mp.gelu.
//
// Inference plans do not need this: the culib fusion stage folds the same
// chains into one call. A training step does: mp-training differentiates the
// graph before that stage, and the gradient of the chain is a chain again,
// with every intermediate kept for the backward pass, so neither direction
// could be fused afterwards. One typed op has one gradient rule.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/TensorOpBuilder.h"
#include "mp/Passes/MP/Passes.h"

#include "RewriteConfig.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mp {
#define GEN_PASS_DEF_RAISECOMPOSITES
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// The value of a constant with one element (any shape), else nullopt.
std::optional<double> scalarConstant(Value v) {
  // The element count first: weights are not read to be refused.
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() != 1)
    return std::nullopt;
  std::optional<SmallVector<double>> values = getConstantFloats(v);
  if (!values || values->size() != 1)
    return std::nullopt;
  return values->front();
}

bool isScalar(Value v, double expected) {
  std::optional<double> value = scalarConstant(v);
  return value && std::fabs(*value - expected) <= 1e-6 * std::fabs(expected);
}

/// `v`'s producer when it is an OpTy whose only reader is the chain.
template <typename OpTy> OpTy onlyUseOf(Value v) {
  return v && v.hasOneUse() ? v.getDefiningOp<OpTy>() : OpTy();
}

/// The factors of a product: `v` itself, or, where `v` is a Mul read by the
/// chain alone (or is the root), the factors of its operands. The Muls taken
/// apart go to `ops`. A Mul with an operand of another shape that is not a
/// scalar constant stays a factor: taking it apart would drop a broadcast.
void collectFactors(Value v, bool root, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> &ops) {
  auto mul = v.getDefiningOp<MulOp>();
  bool takeApart =
      mul && (root || v.hasOneUse()) &&
      llvm::all_of(mul->getOperands(), [&](Value operand) {
        return operand.getType() == v.getType() || scalarConstant(operand);
      });
  if (!takeApart) {
    factors.push_back(v);
    return;
  }
  ops.push_back(mul);
  for (Value operand : mul->getOperands())
    collectFactors(operand, /*root=*/false, factors, ops);
}

/// Removes one factor that is a scalar constant equal to `value`.
bool takeScalar(SmallVectorImpl<Value> &factors, double value) {
  for (auto *it = factors.begin(); it != factors.end(); ++it)
    if (isScalar(*it, value)) {
      factors.erase(it);
      return true;
    }
  return false;
}

/// Removes every factor equal to `x`; how many there were.
int takeAll(SmallVectorImpl<Value> &factors, Value x) {
  int before = factors.size();
  llvm::erase(factors, x);
  return before - static_cast<int>(factors.size());
}

/// `t` = 1 + f(u), read by the chain alone, for the unary op UnaryOp: u.
template <typename UnaryOp>
Value onePlus(Value t, SmallVectorImpl<Operation *> &ops) {
  auto add = onlyUseOf<AddOp>(t);
  if (!add)
    return Value();
  for (auto [f, one] : {std::pair(add.getOperand(0), add.getOperand(1)),
                        std::pair(add.getOperand(1), add.getOperand(0))}) {
    auto unary = onlyUseOf<UnaryOp>(f);
    if (!unary || !isScalar(one, 1.0))
      continue;
    ops.append({add, unary});
    return unary->getOperand(0);
  }
  return Value();
}

/// GELU as exporters write it, in any order of its products:
///
///   exact: x * 0.5 * (1 + erf(x / sqrt 2))      (or x * (1 / sqrt 2))
///   tanh:  x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
///          (x^3 as pow(x, 3) or a product of three x)
///
/// -> mp.gelu (approximate "none" or "tanh").
struct RaiseDecomposedGelu : OpRewritePattern<MulOp> {
  RaiseDecomposedGelu(MLIRContext *ctx, int64_t &raised)
      : OpRewritePattern(ctx), raised(raised) {}

  LogicalResult matchAndRewrite(MulOp root,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(root.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return failure();
    SmallVector<Value> factors;
    SmallVector<Operation *> ops;
    collectFactors(root, /*root=*/true, factors, ops);
    if (factors.size() != 3 || !takeScalar(factors, 0.5))
      return rewriter.notifyMatchFailure(root, "not x * 0.5 * (1 + f(x))");
    for (auto [x, t] : {std::pair(factors[0], factors[1]),
                        std::pair(factors[1], factors[0])}) {
      if (x.getType() != type)
        continue;
      SmallVector<Operation *> chain(ops);
      if (Value s = onePlus<ErfOp>(t, chain); s && isErfArgument(s, x, chain))
        return raise(root, x, "none", chain, rewriter);
      chain.assign(ops);
      if (Value u = onePlus<TanhOp>(t, chain); u && isTanhArgument(u, x, chain))
        return raise(root, x, "tanh", chain, rewriter);
    }
    return rewriter.notifyMatchFailure(root, "no erf or tanh form of GELU");
  }

  /// s = x / sqrt(2) or x * (1 / sqrt(2)).
  static bool isErfArgument(Value s, Value x,
                            SmallVectorImpl<Operation *> &chain) {
    if (auto div = onlyUseOf<DivOp>(s);
        div && div.getOperand(0) == x && isScalar(div.getOperand(1), M_SQRT2)) {
      chain.push_back(div);
      return true;
    }
    SmallVector<Value> factors;
    SmallVector<Operation *> muls;
    if (!onlyUseOf<MulOp>(s))
      return false;
    collectFactors(s, /*root=*/true, factors, muls);
    if (!takeScalar(factors, M_SQRT1_2) || factors.size() != 1 ||
        factors[0] != x)
      return false;
    chain.append(muls.begin(), muls.end());
    return true;
  }

  /// u = sqrt(2 / pi) * (x + 0.044715 * x^3).
  static bool isTanhArgument(Value u, Value x,
                             SmallVectorImpl<Operation *> &chain) {
    SmallVector<Value> factors;
    SmallVector<Operation *> muls;
    if (!onlyUseOf<MulOp>(u))
      return false;
    collectFactors(u, /*root=*/true, factors, muls);
    if (!takeScalar(factors, std::sqrt(2.0 / M_PI)) || factors.size() != 1)
      return false;
    auto sum = onlyUseOf<AddOp>(factors[0]);
    if (!sum)
      return false;
    for (auto [linear, cubic] :
         {std::pair(sum.getOperand(0), sum.getOperand(1)),
          std::pair(sum.getOperand(1), sum.getOperand(0))}) {
      if (linear != x || !onlyUseOf<MulOp>(cubic))
        continue;
      SmallVector<Value> terms;
      SmallVector<Operation *> termOps;
      collectFactors(cubic, /*root=*/true, terms, termOps);
      if (!takeScalar(terms, 0.044715))
        continue;
      int power = takeAll(terms, x);
      for (Value term : llvm::make_early_inc_range(terms))
        if (auto pow = onlyUseOf<PowOp>(term);
            pow && pow.getOperand(0) == x && isScalar(pow.getOperand(1), 3.0)) {
          power += 3;
          termOps.push_back(pow);
          llvm::erase(terms, term);
        }
      if (power != 3 || !terms.empty())
        continue;
      chain.append(muls.begin(), muls.end());
      chain.push_back(sum);
      chain.append(termOps.begin(), termOps.end());
      return true;
    }
    return false;
  }

  LogicalResult raise(MulOp root, Value x, StringRef approximate,
                      ArrayRef<Operation *> chain,
                      PatternRewriter &rewriter) const {
    auto gelu = GeluOp::create(rewriter, root.getLoc(), root.getType(), x,
                               approximate == "none"
                                   ? StringAttr()
                                   : rewriter.getStringAttr(approximate));
    if (Attribute names = root->getAttr(MPDialect::kOutputNamesAttr))
      gelu->setAttr(MPDialect::kOutputNamesAttr, names);
    rewriter.replaceOp(root, gelu.getResult());
    eraseDeadChain(chain, root, rewriter);
    ++raised;
    return success();
  }

  /// The chain's ops, root excluded, once nothing reads them.
  static void eraseDeadChain(ArrayRef<Operation *> chain, Operation *root,
                             PatternRewriter &rewriter) {
    bool erased = true;
    llvm::SmallPtrSet<Operation *, 16> done = {root};
    while (erased) {
      erased = false;
      for (Operation *op : chain)
        if (!done.contains(op) && op->use_empty()) {
          done.insert(op);
          rewriter.eraseOp(op);
          erased = true;
        }
    }
  }

  int64_t &raised;
};

/// The last dims from `axis`, as the sorted, non-negative `axes` of a
/// ReduceMean that keeps its dims; -1 when they are not.
int64_t trailingAxis(ReduceMeanOp mean, int64_t rank) {
  std::optional<ArrayRef<int64_t>> axes = mean.getAxes();
  if (!axes || axes->empty() || mean.getKeepdims().value_or(1) != 1)
    return -1;
  SmallVector<int64_t> sorted;
  for (int64_t a : *axes)
    sorted.push_back(a < 0 ? a + rank : a);
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != rank - static_cast<int64_t>(sorted.size() - i))
      return -1;
  return sorted.front();
}

/// A layer norm as exporters write it (torch below opset 17):
///
///   m = mean(x) over the last dims;  d = x - m
///   v = mean(pow(d, 2)) (or d * d);  s = sqrt(v + eps)
///   y = d / s * scale + bias          (the scale and bias optional)
///
/// -> mp.layer_normalization over the same dims (its statistics in f32,
/// stash_type 1), where scale and bias hold the normalised dims' shape.
struct RaiseDecomposedLayerNorm : OpRewritePattern<DivOp> {
  RaiseDecomposedLayerNorm(MLIRContext *ctx, int64_t &raised)
      : OpRewritePattern(ctx), raised(raised) {}

  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    // The float types the runtimes normalize (f64 layer norms stay chains).
    auto type = dyn_cast<RankedTensorType>(div.getType());
    if (!type || !type.hasStaticShape() ||
        !(type.getElementType().isF32() || type.getElementType().isF16() ||
          type.getElementType().isBF16()))
      return failure();
    const int64_t rank = type.getRank();
    Value d = div.getOperand(0);
    auto sub = d.getDefiningOp<SubOp>();
    if (!sub || sub.getType() != type || sub.getOperand(0).getType() != type)
      return rewriter.notifyMatchFailure(div, "no deviation x - mean");
    Value x = sub.getOperand(0);
    auto mean = onlyUseOf<ReduceMeanOp>(sub.getOperand(1));
    if (!mean || mean.getOperand() != x)
      return rewriter.notifyMatchFailure(div, "no mean of x");
    const int64_t axis = trailingAxis(mean, rank);
    if (axis < 0)
      return rewriter.notifyMatchFailure(div, "not a mean over the last dims");

    // s = sqrt(mean(d^2) + eps).
    auto sqrt = onlyUseOf<SqrtOp>(div.getOperand(1));
    auto addEps = sqrt ? onlyUseOf<AddOp>(sqrt.getOperand()) : AddOp();
    if (!addEps)
      return rewriter.notifyMatchFailure(div, "no sqrt(variance + eps)");
    ReduceMeanOp variance;
    std::optional<double> eps;
    for (auto [v, e] : {std::pair(addEps.getOperand(0), addEps.getOperand(1)),
                        std::pair(addEps.getOperand(1), addEps.getOperand(0))})
      if (!variance && (variance = onlyUseOf<ReduceMeanOp>(v)))
        eps = scalarConstant(e);
    if (!variance || !eps || !(*eps >= 0) ||
        trailingAxis(variance, rank) != axis)
      return rewriter.notifyMatchFailure(div, "no mean of the squares + eps");
    Operation *square = variance.getOperand().getDefiningOp();
    bool squaresD = square && variance.getOperand().hasOneUse() &&
                    ((isa<PowOp>(square) && square->getOperand(0) == d &&
                      isScalar(square->getOperand(1), 2.0)) ||
                     (isa<MulOp>(square) && square->getOperand(0) == d &&
                      square->getOperand(1) == d));
    // d is read by the square and the division alone.
    if (!squaresD || llvm::any_of(d.getUsers(), [&](Operation *user) {
          return user != square && user != div.getOperation();
        }))
      return rewriter.notifyMatchFailure(div, "no square of the deviation");

    // y = n * scale + bias, either order, each optional.
    ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
    Value y = div, scale, bias;
    SmallVector<Operation *> chain = {mean,   sub,  square, variance,
                                      addEps, sqrt, div};
    auto affine = [&](auto op) -> Value {
      using OpTy = decltype(op);
      // The one reader of the chain's value so far.
      auto next =
          y.hasOneUse() ? dyn_cast<OpTy>(*y.getUsers().begin()) : OpTy();
      if (!next || next.getType() != type)
        return Value();
      Value other = next.getOperand(next.getOperand(0) == y ? 1 : 0);
      if (!holdsNormalizedShape(other, normalized, type.getElementType()))
        return Value();
      chain.push_back(next);
      y = next.getResult();
      return other;
    };
    scale = affine(MulOp());
    bias = affine(AddOp());

    rewriter.setInsertionPoint(y.getDefiningOp());
    Location loc = y.getLoc();
    TensorOpBuilder build(rewriter, loc);
    // The op's scale and bias have the normalised dims' shape.
    auto asParameter = [&](Value v, double fill) -> Value {
      if (!v)
        return build.constant(DenseElementsAttr::get(
            RankedTensorType::get(normalized, type.getElementType()),
            rewriter.getFloatAttr(type.getElementType(), fill)));
      return build.reshape(v, normalized);
    };
    Value scaleIn = asParameter(scale, 1.0);
    Value biasIn =
        bias ? asParameter(bias, 0.0) : NoneOp::create(rewriter, loc);
    SmallVector<int64_t> statisticsShape(type.getShape().take_front(axis));
    statisticsShape.append(rank - axis, 1);
    auto statistics =
        RankedTensorType::get(statisticsShape, rewriter.getF32Type());
    auto norm = LayerNormalizationOp::create(
        rewriter, loc, TypeRange{type, statistics, statistics},
        ValueRange{x, scaleIn, biasIn},
        {rewriter.getNamedAttr("axis", rewriter.getI64IntegerAttr(axis)),
         rewriter.getNamedAttr(
             "epsilon", rewriter.getF32FloatAttr(static_cast<float>(*eps)))});
    Operation *last = y.getDefiningOp();
    if (auto names =
            last->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr);
        names && names.size() == 1)
      norm->setAttr(MPDialect::kOutputNamesAttr,
                    rewriter.getArrayAttr({names[0], rewriter.getStringAttr(""),
                                           rewriter.getStringAttr("")}));
    rewriter.replaceOp(last, norm.getY());
    RaiseDecomposedGelu::eraseDeadChain(chain, last, rewriter);
    ++raised;
    return success();
  }

  /// `v` has the normalised dims' values (leading 1s allowed) and X's type.
  static bool holdsNormalizedShape(Value v, ArrayRef<int64_t> normalized,
                                   Type element) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape() || t.getElementType() != element ||
        t.getRank() < static_cast<int64_t>(normalized.size()))
      return false;
    ArrayRef<int64_t> shape = t.getShape();
    size_t extra = shape.size() - normalized.size();
    return llvm::all_of(shape.take_front(extra),
                        [](int64_t d) { return d == 1; }) &&
           shape.drop_front(extra) == normalized;
  }

  int64_t &raised;
};

struct RaiseCompositesPass
    : public mp::impl::RaiseCompositesBase<RaiseCompositesPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t gelus = 0, layerNorms = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseDecomposedGelu>(&getContext(), gelus);
    patterns.add<RaiseDecomposedLayerNorm>(&getContext(), layerNorms);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     onlyThesePatterns())))
      return signalPassFailure();
    raisedGelus += gelus;
    raisedLayerNorms += layerNorms;
  }
};

} // namespace
