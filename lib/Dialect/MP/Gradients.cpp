//===- Gradients.cpp - reverse-mode rules of the typed ops ---------------===//
//
// GradientOpInterface models for the ops real architectures use: the
// arithmetic and activations, matmul/gemm/conv, pooling, batch norm,
// softmax and the losses, the shape ops, gather (embeddings) and LSTM. Each
// rule builds its gradients with mp ops (or the training ops of
// MPTrainingOps.td where no ONNX op expresses them), in the forward op's
// element type: autocast later decides their precision as for any other op.
//
// Every rule may assume static shapes (mp-training checks them first).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/AttentionForm.h"
#include "mp/Dialect/MP/GradientOpInterface.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "mp/Dialect/MP/GradientOpInterface.cpp.inc"

using namespace mlir;
using namespace mp;

namespace {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }
Type elementOf(Value v) { return tensorType(v).getElementType(); }

/// Helpers that build the mp ops the rules are made of.
struct GradBuilder {
  ImplicitLocOpBuilder &b;

  Value none() { return NoneOp::create(b).getResult(); }

  Value constant(DenseElementsAttr value) {
    return ConstantOp::create(b, TypeRange{value.getType()}, ValueRange{},
                              {b.getNamedAttr("value", value)})
        .getResult();
  }
  /// A rank-0 constant of `element`.
  Value scalar(Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    return constant(
        DenseElementsAttr::get(type, b.getFloatAttr(element, value)));
  }
  Value zeros(RankedTensorType type) {
    return constant(DenseElementsAttr::get(
        type, b.getFloatAttr(type.getElementType(), 0.0)));
  }
  Value i64s(ArrayRef<int64_t> values) {
    auto type = RankedTensorType::get({int64_t(values.size())},
                                      b.getIntegerType(64));
    return constant(DenseElementsAttr::get(type, values));
  }

  Value add(Value x, Value y) { return AddOp::create(b, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, x, y); }
  Value neg(Value x) { return NegOp::create(b, x.getType(), x); }
  Value scale(Value x, double factor) {
    return mul(x, scalar(elementOf(x), factor));
  }

  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    auto type = RankedTensorType::get(shape, elementOf(x));
    return ReshapeOp::create(b, type, x, i64s(shape), IntegerAttr());
  }
  /// The mean over `axes` (sorted), kept as 1s.
  Value mean(Value x, ArrayRef<int64_t> axes) {
    SmallVector<int64_t> kept(shapeOf(x));
    for (int64_t a : axes)
      kept[a] = 1;
    auto type = RankedTensorType::get(kept, elementOf(x));
    return ReduceMeanOp::create(b, type, x, b.getDenseI64ArrayAttr(axes),
                                b.getI64IntegerAttr(1));
  }
  /// Sum over `axes` (sorted), keeping them as 1 or dropping them.
  Value sum(Value x, ArrayRef<int64_t> axes, bool keepDims) {
    if (axes.empty())
      return x;
    SmallVector<int64_t> shape;
    for (auto [i, d] : llvm::enumerate(shapeOf(x))) {
      if (!llvm::is_contained(axes, int64_t(i)))
        shape.push_back(d);
      else if (keepDims)
        shape.push_back(1);
    }
    auto type = RankedTensorType::get(shape, elementOf(x));
    return ReduceSumOp::create(b, type, x, i64s(axes),
                               b.getI64IntegerAttr(keepDims), IntegerAttr());
  }
  /// The gradient of a value broadcast (numpy rules) from `target`'s shape
  /// to `grad`'s: summed over the broadcast dims.
  Value unbroadcast(Value grad, Type target) {
    ArrayRef<int64_t> to = cast<RankedTensorType>(target).getShape();
    ArrayRef<int64_t> from = shapeOf(grad);
    if (from == to)
      return grad;
    size_t lead = from.size() - to.size();
    SmallVector<int64_t> axes;
    for (size_t i = 0; i < from.size(); ++i)
      if (i < lead || (to[i - lead] == 1 && from[i] != 1))
        axes.push_back(i);
    return reshape(sum(grad, axes, /*keepDims=*/true), to);
  }
  Value expand(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    auto type = RankedTensorType::get(shape, elementOf(x));
    return ExpandOp::create(b, type, x, i64s(shape));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(shapeOf(x)[p]);
    auto type = RankedTensorType::get(shape, elementOf(x));
    return TransposeOp::create(b, type, x, b.getDenseI64ArrayAttr(perm));
  }
  /// y = alpha * op(a) op(b).
  Value gemm(Value a, Value bm, bool transA, bool transB, double alpha = 1.0) {
    int64_t m = transA ? shapeOf(a)[1] : shapeOf(a)[0];
    int64_t n = transB ? shapeOf(bm)[0] : shapeOf(bm)[1];
    auto type = RankedTensorType::get({m, n}, elementOf(a));
    return GemmOp::create(b, type, a, bm, none(),
                          alpha == 1.0 ? FloatAttr() : b.getF32FloatAttr(alpha),
                          FloatAttr(),
                          transA ? b.getI64IntegerAttr(1) : IntegerAttr(),
                          transB ? b.getI64IntegerAttr(1) : IntegerAttr());
  }
  Value where(Value cond, Value x, Value y) {
    return WhereOp::create(b, x.getType(), cond, x, y);
  }
};

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

SmallVector<int64_t> orOnes(std::optional<ArrayRef<int64_t>> v, size_t n) {
  return v ? SmallVector<int64_t>(v->begin(), v->end())
           : SmallVector<int64_t>(n, 1);
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

using Grads = SmallVectorImpl<Value>;

LogicalResult gradAdd(AddOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.unbroadcast(dR[0], op.getA().getType());
  dO[1] = g.unbroadcast(dR[0], op.getB().getType());
  return success();
}
/// Expand broadcasts its input: the gradient sums over the broadcast dims
/// (the shape operand has none).
LogicalResult gradExpand(ExpandOp op, GradBuilder &g, ArrayRef<Value> dR,
                         Grads &dO) {
  dO[0] = g.unbroadcast(dR[0], op.getInput().getType());
  return success();
}
/// Sum of any number of inputs (Gelu-20's function body has one): each
/// input gets the gradient, summed over the dims it was broadcast along.
LogicalResult gradSum(SumOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  for (auto [i, input] : llvm::enumerate(op->getOperands()))
    dO[i] = g.unbroadcast(dR[0], input.getType());
  return success();
}
LogicalResult gradSub(SubOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.unbroadcast(dR[0], op.getA().getType());
  dO[1] = g.unbroadcast(g.neg(dR[0]), op.getB().getType());
  return success();
}
LogicalResult gradMul(MulOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.unbroadcast(g.mul(dR[0], op.getB()), op.getA().getType());
  dO[1] = g.unbroadcast(g.mul(dR[0], op.getA()), op.getB().getType());
  return success();
}
LogicalResult gradDiv(DivOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.unbroadcast(g.div(dR[0], op.getB()), op.getA().getType());
  // d(a/b)/db = -(a/b)/b
  dO[1] = g.unbroadcast(g.neg(g.div(g.mul(dR[0], op.getC()), op.getB())),
                        op.getB().getType());
  return success();
}
LogicalResult gradPow(PowOp op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  Value x = op->getOperand(0), e = op->getOperand(1), y = op->getResult(0);
  Value eMinusOne = g.sub(e, g.scalar(elementOf(e), 1.0));
  Value xPow = PowOp::create(g.b, x.getType(), x, eMinusOne);
  dO[0] = g.unbroadcast(g.mul(dR[0], g.mul(e, xPow)), x.getType());
  if (isa<FloatType>(elementOf(e))) {
    Value logX = LogOp::create(g.b, x.getType(), x);
    dO[1] = g.unbroadcast(g.mul(dR[0], g.mul(y, logX)), e.getType());
  }
  return success();
}
LogicalResult gradNeg(NegOp, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.neg(dR[0]);
  return success();
}
LogicalResult gradIdentity(Operation *, GradBuilder &, ArrayRef<Value> dR,
                           Grads &dO) {
  dO[0] = dR[0];
  return success();
}
LogicalResult gradRelu(ReluOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value zero = g.scalar(elementOf(op.getX()), 0.0);
  Value positive = GreaterOp::create(g.b, op.getX(), zero);
  // A one-element zero, broadcast: no weight of dy's size to read.
  dO[0] = g.where(positive, dR[0], g.scalar(elementOf(dR[0]), 0.0));
  return success();
}
LogicalResult gradClip(ClipOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  // PyTorch's clamp: the gradient passes where min <= x <= max.
  Value x = op->getOperand(0);
  Value pass;
  auto andWith = [&](Value cond) {
    pass = pass ? Value(AndOp::create(g.b, pass, cond)) : cond;
  };
  Value lo = op->getOperand(1), hi = op->getOperand(2);
  if (lo && !isa<NoneType>(lo.getType()))
    andWith(GreaterOrEqualOp::create(g.b, x, lo));
  if (hi && !isa<NoneType>(hi.getType()))
    andWith(LessOrEqualOp::create(g.b, x, hi));
  dO[0] = pass ? g.where(pass, dR[0], g.scalar(elementOf(dR[0]), 0.0)) : dR[0];
  return success();
}
LogicalResult gradSigmoid(SigmoidOp op, GradBuilder &g, ArrayRef<Value> dR,
                          Grads &dO) {
  Value y = op.getY();
  Value oneMinus = g.sub(g.scalar(elementOf(y), 1.0), y);
  dO[0] = g.mul(dR[0], g.mul(y, oneMinus));
  return success();
}
LogicalResult gradTanh(TanhOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value y = op.getY();
  dO[0] = g.mul(dR[0], g.sub(g.scalar(elementOf(y), 1.0), g.mul(y, y)));
  return success();
}
LogicalResult gradExp(ExpOp op, GradBuilder &g, ArrayRef<Value> dR,
                      Grads &dO) {
  dO[0] = g.mul(dR[0], op.getY());
  return success();
}
LogicalResult gradLog(LogOp op, GradBuilder &g, ArrayRef<Value> dR,
                      Grads &dO) {
  dO[0] = g.div(dR[0], op.getX());
  return success();
}
LogicalResult gradSqrt(SqrtOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  dO[0] = g.div(dR[0], g.scale(op.getY(), 2.0));
  return success();
}
LogicalResult gradReciprocal(ReciprocalOp op, GradBuilder &g,
                             ArrayRef<Value> dR, Grads &dO) {
  dO[0] = g.neg(g.mul(dR[0], g.mul(op.getY(), op.getY())));
  return success();
}
LogicalResult gradErf(ErfOp op, GradBuilder &g, ArrayRef<Value> dR,
                      Grads &dO) {
  // d erf(x)/dx = 2/sqrt(pi) * exp(-x^2)
  Value x = op.getX();
  Value expNegSq = ExpOp::create(g.b, x.getType(), g.neg(g.mul(x, x)));
  dO[0] = g.mul(dR[0], g.scale(expNegSq, 2.0 / std::sqrt(M_PI)));
  return success();
}
LogicalResult gradWhere(WhereOp op, GradBuilder &g, ArrayRef<Value> dR,
                        Grads &dO) {
  Value cond = op->getOperand(0);
  Value zeros = g.scalar(elementOf(dR[0]), 0.0); // broadcast
  dO[1] = g.unbroadcast(g.where(cond, dR[0], zeros), op->getOperand(1).getType());
  dO[2] = g.unbroadcast(g.where(cond, zeros, dR[0]), op->getOperand(2).getType());
  return success();
}
/// Cast and CastLike (the second operand only gives the type: no gradient).
template <typename CastLikeOrCast>
LogicalResult gradCast(CastLikeOrCast op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value x = op->getOperand(0);
  if (!isa<FloatType>(elementOf(x)))
    return success();
  dO[0] = CastOp::create(g.b, x.getType(), dR[0],
                         g.b.getI64IntegerAttr(getOnnxDataTypeForType(
                             elementOf(x))),
                         IntegerAttr());
  return success();
}

/// Reshape-like ops: the gradient is dY in X's shape.
LogicalResult gradReshapeLike(Operation *op, GradBuilder &g, ArrayRef<Value> dR,
                              Grads &dO) {
  dO[0] = g.reshape(dR[0], shapeOf(op->getOperand(0)));
  return success();
}
LogicalResult gradTranspose(TransposeOp op, GradBuilder &g, ArrayRef<Value> dR,
                            Grads &dO) {
  int64_t rank = shapeOf(op->getOperand(0)).size();
  SmallVector<int64_t> perm;
  if (auto p = op.getPerm())
    perm.assign(p->begin(), p->end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  SmallVector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  dO[0] = g.transpose(dR[0], inverse);
  return success();
}
LogicalResult gradDropout(DropoutOp op, GradBuilder &g, ArrayRef<Value> dR,
                          Grads &dO) {
  // Only inference-mode Dropout (the identity) is lowered.
  (void)g;
  dO[0] = dR[0];
  return success();
}

LogicalResult gradMatMul(MatMulOp op, GradBuilder &g, ArrayRef<Value> dR,
                         Grads &dO) {
  Value a = op.getA(), bm = op.getB(), dy = dR[0];
  size_t rankA = shapeOf(a).size(), rankB = shapeOf(bm).size();
  if (rankA < 2 || rankB < 2)
    return op.emitError("gradient of MatMul with 1-D operands is not "
                        "supported");
  if (rankA == 2 && rankB == 2) {
    dO[0] = g.gemm(dy, bm, false, true);
    dO[1] = g.gemm(a, dy, true, false);
    return success();
  }
  auto swapLast = [](size_t rank) {
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return perm;
  };
  ArrayRef<int64_t> dyShape = shapeOf(dy);
  int64_t m = dyShape[dyShape.size() - 2], n = dyShape.back();
  // dA = dY B^T, summed over dims B was broadcast along.
  Value bT = g.transpose(bm, swapLast(rankB));
  dO[0] = g.unbroadcast(MatMulOp::create(g.b, dy, bT), a.getType());
  if (rankB == 2) {
    // A weight shared by every row of a batch: one GEMM over all rows.
    int64_t k = shapeOf(a).back();
    int64_t rows = tensorType(a).getNumElements() / k;
    Value a2 = g.reshape(a, {rows, k});
    Value dy2 = g.reshape(dy, {tensorType(dy).getNumElements() / n, n});
    (void)m;
    dO[1] = g.gemm(a2, dy2, true, false);
  } else {
    Value aT = g.transpose(a, swapLast(rankA));
    dO[1] = g.unbroadcast(MatMulOp::create(g.b, aT, dy), bm.getType());
  }
  return success();
}

LogicalResult gradGemm(GemmOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value a = op.getA(), bm = op.getB(), dy = dR[0];
  bool tA = op.getTransA().value_or(0), tB = op.getTransB().value_or(0);
  double alpha = op.getAlpha() ? op.getAlpha()->convertToDouble() : 1.0;
  double beta = op.getBeta() ? op.getBeta()->convertToDouble() : 1.0;
  // Y = alpha op(A) op(B) + beta C.
  if (!tA)
    dO[0] = tB ? g.gemm(dy, bm, false, false, alpha)
               : g.gemm(dy, bm, false, true, alpha);
  else
    dO[0] = tB ? g.gemm(bm, dy, true, true, alpha)
               : g.gemm(bm, dy, false, true, alpha);
  if (!tB)
    dO[1] = tA ? g.gemm(a, dy, false, false, alpha)
               : g.gemm(a, dy, true, false, alpha);
  else
    dO[1] = tA ? g.gemm(dy, a, true, true, alpha)
               : g.gemm(dy, a, true, false, alpha);
  Value c = op.getC();
  if (c && !isa<NoneType>(c.getType())) {
    Value dc = beta == 1.0 ? dy : g.scale(dy, beta);
    dO[2] = g.unbroadcast(dc, c.getType());
  }
  return success();
}

LogicalResult gradConv(ConvOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value x = op.getX(), w = op.getW(), dy = dR[0];
  ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w), ys = shapeOf(dy);
  size_t spatial = xs.size() - 2;
  SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
  SmallVector<int64_t> dilations = orOnes(op.getDilations(), spatial);
  SmallVector<int64_t> pads =
      explicitWindowPads(op.getAutoPad().value_or("NOTSET"), op.getPads(),
                  xs.drop_front(2), ys.drop_front(2), ws.drop_front(2),
                  strides, dilations);
  int64_t group = op.getGroup().value_or(1);
  // dX: the transposed convolution of dY, with the output padding that
  // gives back X's size when the stride dropped trailing positions.
  SmallVector<int64_t> outputPadding;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t size = (ys[2 + i] - 1) * strides[i] - pads[i] - pads[spatial + i] +
                   (ws[2 + i] - 1) * dilations[i] + 1;
    outputPadding.push_back(xs[2 + i] - size);
  }
  auto arr = [&](ArrayRef<int64_t> v) { return g.b.getDenseI64ArrayAttr(v); };
  dO[0] = ConvTransposeOp::create(
      g.b, x.getType(), dy, w, g.none(), StringAttr(), arr(dilations),
      g.b.getI64IntegerAttr(group), arr(ws.drop_front(2)), arr(outputPadding),
      DenseI64ArrayAttr(), arr(pads), arr(strides));
  dO[1] = ConvGradFilterOp::create(g.b, w.getType(), x, dy, arr(pads),
                                   arr(strides), arr(dilations),
                                   g.b.getI64IntegerAttr(group));
  Value bias = op.getB();
  if (bias && !isa<NoneType>(bias.getType())) {
    SmallVector<int64_t> axes{0};
    for (size_t i = 0; i < spatial; ++i)
      axes.push_back(2 + i);
    dO[2] = g.sum(dy, axes, /*keepDims=*/false);
  }
  return success();
}

template <typename PoolOpTy>
LogicalResult gradPool(PoolOpTy op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  if (dR.size() > 1 && dR[1])
    return op.emitError("MaxPool's Indices output has no gradient");
  Value x = op.getX(), dy = dR[0];
  ArrayRef<int64_t> xs = shapeOf(x), ys = shapeOf(dy);
  size_t spatial = xs.size() - 2;
  SmallVector<int64_t> kernel(op.getKernelShape());
  SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
  SmallVector<int64_t> dilations(spatial, 1);
  std::string mode = "max";
  if constexpr (std::is_same_v<PoolOpTy, MaxPoolOp>)
    dilations = orOnes(op.getDilations(), spatial);
  else
    mode = op.getCountIncludePad().value_or(0) ? "avg_include_pad" : "avg";
  SmallVector<int64_t> pads =
      explicitWindowPads(op.getAutoPad().value_or("NOTSET"), op.getPads(),
                  xs.drop_front(2), ys.drop_front(2), kernel, strides,
                  dilations);
  dO[0] = PoolGradOp::create(g.b, x.getType(), x, dy, g.b.getStringAttr(mode),
                             g.b.getDenseI64ArrayAttr(kernel),
                             g.b.getDenseI64ArrayAttr(pads),
                             g.b.getDenseI64ArrayAttr(strides),
                             g.b.getDenseI64ArrayAttr(dilations));
  return success();
}

template <bool isMax>
LogicalResult gradGlobalPool(Operation *op, GradBuilder &g, ArrayRef<Value> dR,
                             Grads &dO) {
  Value x = op->getOperand(0);
  ArrayRef<int64_t> xs = shapeOf(x);
  size_t spatial = xs.size() - 2;
  SmallVector<int64_t> ones(spatial, 1);
  dO[0] = PoolGradOp::create(
      g.b, x.getType(), x, dR[0], g.b.getStringAttr(isMax ? "max" : "avg"),
      g.b.getDenseI64ArrayAttr(xs.drop_front(2)),
      g.b.getDenseI64ArrayAttr(SmallVector<int64_t>(2 * spatial, 0)),
      g.b.getDenseI64ArrayAttr(ones), g.b.getDenseI64ArrayAttr(ones));
  return success();
}

LogicalResult gradBatchNorm(BatchNormalizationOp op, GradBuilder &g,
                            ArrayRef<Value> dR, Grads &dO) {
  if (!op.getTrainingMode().value_or(0))
    return op.emitError("gradient of BatchNormalization needs training mode "
                        "(mp-training sets it)");
  if (dR[1] || dR[2])
    return op.emitError("the running statistics of BatchNormalization have "
                        "no gradient");
  float epsilon = op.getEpsilon() ? op.getEpsilon()->convertToFloat() : 1e-5f;
  auto grad = BatchNormGradOp::create(
      g.b, TypeRange{op.getX().getType(), op.getScale().getType(),
                     op.getB().getType()},
      op.getX(), op.getScale(), dR[0], g.b.getF32FloatAttr(epsilon));
  dO[0] = grad.getDX();
  dO[1] = grad.getDScale();
  dO[2] = grad.getDBias();
  return success();
}

template <typename SoftmaxOpTy, bool isLog>
LogicalResult gradSoftmax(SoftmaxOpTy op, GradBuilder &g, ArrayRef<Value> dR,
                          Grads &dO) {
  Value y = op->getResult(0), dy = dR[0];
  int64_t rank = shapeOf(y).size();
  int64_t axis = normalizeAxis(op.getAxis().value_or(-1), rank);
  if constexpr (isLog) {
    // dx = dy - softmax(x) * sum(dy)
    Value softmax = ExpOp::create(g.b, y.getType(), y);
    dO[0] = g.sub(dy, g.mul(softmax, g.sum(dy, {axis}, true)));
  } else {
    // dx = y * (dy - sum(dy * y))
    dO[0] = g.mul(y, g.sub(dy, g.sum(g.mul(dy, y), {axis}, true)));
  }
  return success();
}

/// The dims a reduction keeps as 1 (from its axes, all dims when none).
SmallVector<int64_t> reducedAxes(std::optional<ArrayRef<int64_t>> axes,
                                 int64_t rank) {
  SmallVector<int64_t> result;
  if (!axes || axes->empty()) {
    for (int64_t i = 0; i < rank; ++i)
      result.push_back(i);
    return result;
  }
  for (int64_t a : *axes)
    result.push_back(normalizeAxis(a, rank));
  llvm::sort(result);
  return result;
}

/// Reductions whose gradient spreads dY evenly (Sum) or divided by the count
/// (Mean) over the reduced dims.
LogicalResult spreadReduction(Operation *op, ArrayRef<int64_t> axes,
                              bool divide, GradBuilder &g, ArrayRef<Value> dR,
                              Grads &dO) {
  Value x = op->getOperand(0);
  ArrayRef<int64_t> xs = shapeOf(x);
  SmallVector<int64_t> kept(xs);
  int64_t count = 1;
  for (int64_t a : axes) {
    kept[a] = 1;
    count *= xs[a];
  }
  Value spread = g.expand(g.reshape(dR[0], kept), xs);
  dO[0] = divide ? g.scale(spread, 1.0 / double(count)) : spread;
  return success();
}
LogicalResult gradReduceMean(ReduceMeanOp op, GradBuilder &g,
                             ArrayRef<Value> dR, Grads &dO) {
  return spreadReduction(op, reducedAxes(op.getAxes(), shapeOf(op.getData()).size()),
                         true, g, dR, dO);
}
LogicalResult gradReduceSum(ReduceSumOp op, GradBuilder &g, ArrayRef<Value> dR,
                            Grads &dO) {
  int64_t rank = shapeOf(op->getOperand(0)).size();
  SmallVector<int64_t> axes;
  Value axesValue = op->getOperand(1);
  if (axesValue && !isa<NoneType>(axesValue.getType())) {
    auto attr = dyn_cast_or_null<DenseIntElementsAttr>(getConstantValue(axesValue));
    if (!attr)
      return op.emitError("gradient of ReduceSum needs constant axes");
    for (const APInt &a : attr.getValues<APInt>())
      axes.push_back(a.getSExtValue());
  }
  if (axes.empty() && op.getNoopWithEmptyAxes().value_or(0)) {
    dO[0] = dR[0];
    return success();
  }
  return spreadReduction(op, reducedAxes(ArrayRef<int64_t>(axes), rank), false,
                         g, dR, dO);
}

LogicalResult gradGather(GatherOp op, GradBuilder &g, ArrayRef<Value> dR,
                         Grads &dO) {
  Value data = op->getOperand(0), indices = op->getOperand(1);
  int64_t axis = normalizeAxis(op.getAxis().value_or(0), shapeOf(data).size());
  if (axis != 0)
    return op.emitError("gradient of Gather is supported along axis 0 "
                        "(embeddings), got axis ")
           << axis;
  // Rows gathered several times get the sum of their gradients.
  SmallVector<int64_t> indexShape(shapeOf(indices));
  indexShape.push_back(1);
  Value rows = g.reshape(indices, indexShape);
  dO[0] = ScatterNDOp::create(g.b, data.getType(),
                              g.zeros(tensorType(data)), rows, dR[0],
                              g.b.getStringAttr("add"));
  return success();
}

LogicalResult gradSoftmaxCrossEntropy(SoftmaxCrossEntropyLossOp op,
                                      GradBuilder &g, ArrayRef<Value> dR,
                                      Grads &dO) {
  if (dR[1])
    return op.emitError("the log_prob output of SoftmaxCrossEntropyLoss has "
                        "no gradient rule; use LogSoftmax");
  Value weights = op->getOperand(2);
  if (!weights || isa<NoneType>(weights.getType()))
    weights = g.none();
  dO[0] = SoftmaxCrossEntropyGradOp::create(
      g.b, op->getOperand(0).getType(), op->getOperand(0), op->getOperand(1),
      dR[0], weights, g.b.getStringAttr(op.getReduction().value_or("mean")),
      op.getIgnoreIndexAttr());
  return success();
}

LogicalResult gradNLLLoss(NegativeLogLikelihoodLossOp op, GradBuilder &g,
                          ArrayRef<Value> dR, Grads &dO) {
  Value weight = op->getOperand(2);
  if (!weight || isa<NoneType>(weight.getType()))
    weight = g.none();
  dO[0] = NLLLossGradOp::create(
      g.b, op->getOperand(0).getType(), op->getOperand(0), op->getOperand(1),
      dR[0], weight, g.b.getStringAttr(op.getReduction().value_or("mean")),
      op.getIgnoreIndexAttr());
  return success();
}

LogicalResult gradLSTM(LSTMOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  auto isAbsent = [](Value v) { return !v || isa<NoneType>(v.getType()); };
  if (!isAbsent(op->getOperand(4)) || !isAbsent(op->getOperand(7)))
    return op.emitError("gradient of LSTM with sequence_lens or peepholes "
                        "is not supported");
  if (op->hasAttr("clip") || op->hasAttr("activations") ||
      op->getAttrOfType<IntegerAttr>("input_forget") ||
      (op->getAttrOfType<IntegerAttr>("layout") &&
       op->getAttrOfType<IntegerAttr>("layout").getInt() != 0))
    return op.emitError("gradient of LSTM supports layout 0 with the default "
                        "activations, no clip and no input_forget");
  auto orNone = [&](Value v) { return v ? v : g.none(); };
  Value b = op->getOperand(3), h0 = op->getOperand(5), c0 = op->getOperand(6);
  auto typeOrNone = [&](Value v) -> Type {
    return isAbsent(v) ? Type(g.b.getNoneType()) : v.getType();
  };
  auto dirAttr = op->getAttrOfType<StringAttr>("direction");
  auto hidden = op->getAttrOfType<IntegerAttr>("hidden_size");
  if (!hidden)
    return op.emitError("gradient of LSTM needs hidden_size");
  auto grad = LSTMGradOp::create(
      g.b,
      TypeRange{op->getOperand(0).getType(), op->getOperand(1).getType(),
                op->getOperand(2).getType(), typeOrNone(b), typeOrNone(h0),
                typeOrNone(c0)},
      op->getOperand(0), op->getOperand(1), op->getOperand(2),
      isAbsent(b) ? g.none() : b, isAbsent(h0) ? g.none() : h0,
      isAbsent(c0) ? g.none() : c0, orNone(dR[0]), orNone(dR[1]),
      orNone(dR[2]),
      dirAttr ? dirAttr : g.b.getStringAttr("forward"), hidden);
  dO[0] = grad.getDX();
  dO[1] = grad.getDW();
  dO[2] = grad.getDR();
  if (!isAbsent(b))
    dO[3] = grad.getDB();
  if (!isAbsent(h0))
    dO[5] = grad.getDInitialH();
  if (!isAbsent(c0))
    dO[6] = grad.getDInitialC();
  return success();
}

/// Constant integers of an optional operand, or nullopt.
LogicalResult gradConcat(ConcatOp op, GradBuilder &g, ArrayRef<Value> dR,
                         Grads &dO) {
  Value dy = dR[0];
  int64_t rank = shapeOf(dy).size();
  int64_t axis = normalizeAxis(int64_t(op.getAxis()), rank);
  int64_t offset = 0;
  for (auto [i, input] : llvm::enumerate(op->getOperands())) {
    int64_t size = shapeOf(input)[axis];
    if (isa<FloatType>(elementOf(input)))
      dO[i] = SliceOp::create(g.b, input.getType(), dy, g.i64s({offset}),
                              g.i64s({offset + size}), g.i64s({axis}),
                              g.none());
    offset += size;
  }
  return success();
}

LogicalResult gradSplit(SplitOp op, GradBuilder &g, ArrayRef<Value> dR,
                        Grads &dO) {
  Value x = op->getOperand(0);
  int64_t axis = normalizeAxis(int64_t(op.getAxis().value_or(0)),
                               shapeOf(x).size());
  SmallVector<Value> pieces;
  for (auto [result, grad] : llvm::zip(op->getResults(), dR))
    pieces.push_back(grad ? grad : g.zeros(tensorType(result)));
  dO[0] = ConcatOp::create(g.b, x.getType(), pieces,
                           g.b.getI64IntegerAttr(axis));
  return success();
}

LogicalResult gradSlice(SliceOp op, GradBuilder &g, ArrayRef<Value> dR,
                        Grads &dO) {
  Value x = op->getOperand(0);
  ArrayRef<int64_t> xs = shapeOf(x), ys = shapeOf(dR[0]);
  int64_t rank = xs.size();
  auto starts = getConstantInts(op->getOperand(1));
  auto axes = getConstantInts(op->getOperand(3));
  auto steps = getConstantInts(op->getOperand(4));
  if (!starts || (!isa<NoneType>(op->getOperand(3).getType()) && !axes) ||
      (!isa<NoneType>(op->getOperand(4).getType()) && !steps))
    return op.emitError("gradient of Slice needs constant starts, axes and "
                        "steps");
  SmallVector<int64_t> begin(rank, 0), end(rank, 0);
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = axes ? normalizeAxis((*axes)[i], rank) : int64_t(i);
    if (steps && (*steps)[i] != 1)
      return op.emitError("gradient of Slice supports step 1 only, got ")
             << (*steps)[i];
    int64_t start = (*starts)[i];
    if (start < 0)
      start += xs[axis];
    start = std::clamp<int64_t>(start, 0, xs[axis]);
    begin[axis] = start;
    end[axis] = xs[axis] - start - ys[axis];
  }
  SmallVector<int64_t> pads(begin);
  pads.append(end.begin(), end.end());
  dO[0] = PadOp::create(g.b, x.getType(), dR[0], g.i64s(pads),
                        g.scalar(elementOf(x), 0.0), g.b.getStringAttr("constant"));
  return success();
}

LogicalResult gradLayerNorm(LayerNormalizationOp op, GradBuilder &g,
                            ArrayRef<Value> dR, Grads &dO) {
  if (dR[1] || dR[2])
    return op.emitError("the Mean and InvStdDev outputs of "
                        "LayerNormalization have no gradient rule");
  Value x = op.getX(), scale = op.getScale(), dy = dR[0];
  int64_t rank = shapeOf(x).size();
  int64_t axis = normalizeAxis(int64_t(op.getAxis().value_or(-1)), rank);
  SmallVector<int64_t> normalized, leading;
  for (int64_t i = 0; i < rank; ++i)
    (i >= axis ? normalized : leading).push_back(i);
  // The forward op's statistics, in X's type.
  auto inXType = [&](Value v) -> Value {
    if (elementOf(v) == elementOf(x))
      return v;
    auto type = tensorType(v).clone(elementOf(x));
    return CastOp::create(g.b, type, v,
                          g.b.getI64IntegerAttr(
                              getOnnxDataTypeForType(elementOf(x))),
                          IntegerAttr());
  };
  // One call (mp.layer_norm_grad) where its operands allow: f32 statistics,
  // dY of X's type, one scale (and bias) value per normalized element.
  Value bias = op.getB();
  const bool hasBias = bias && !isa<NoneType>(bias.getType());
  int64_t normalizedCount = 1;
  for (int64_t i : normalized)
    normalizedCount *= shapeOf(x)[i];
  auto holdsNormalized = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.hasStaticShape() && t.getNumElements() == normalizedCount;
  };
  Type xElement = elementOf(x);
  if ((xElement.isF32() || xElement.isF16() || xElement.isBF16()) &&
      elementOf(op->getResult(1)).isF32() &&
      elementOf(op->getResult(2)).isF32() && dy.getType() == x.getType() &&
      holdsNormalized(scale) &&
      (!hasBias || bias.getType() == scale.getType())) {
    auto grad = LayerNormGradOp::create(
        g.b, TypeRange{x.getType(), scale.getType(), scale.getType()}, dy, x,
        scale, op->getResult(1), op->getResult(2), g.b.getI64IntegerAttr(axis));
    dO[0] = grad.getDX();
    dO[1] = grad.getDScale();
    if (hasBias)
      dO[2] = grad.getDBias();
    return success();
  }
  Value mean = inXType(op->getResult(1));
  Value invStd = inXType(op->getResult(2));
  Value xhat = g.mul(g.sub(x, mean), invStd);
  auto meanOver = [&](Value v) { return g.mean(v, normalized); };
  // dX = invstd * (g - mean(g) - xhat * mean(g * xhat)), g = dY * scale.
  Value gy = g.mul(dy, scale);
  Value centred = g.sub(gy, meanOver(gy));
  dO[0] = g.mul(invStd, g.sub(centred, g.mul(xhat, meanOver(g.mul(gy, xhat)))));
  dO[1] = g.unbroadcast(g.mul(dy, xhat), scale.getType());
  if (hasBias)
    dO[2] = g.unbroadcast(dy, bias.getType());
  return success();
}

/// A norm's `epsilon`, ONNX's default 1e-5 when absent.
template <typename NormOp> double epsilonOf(NormOp op) {
  std::optional<APFloat> epsilon = op.getEpsilon();
  return epsilon ? epsilon->convertToDouble() : 1e-5;
}

/// RMSNormalization: y = x * r * scale, r = 1 / sqrt(mean(x^2) + eps) over
/// the dims from `axis`. dX = r * (g - x * r^2 * mean(g * x)), g = dY * scale;
/// r is recomputed from x.
LogicalResult gradRMSNorm(RMSNormalizationOp op, GradBuilder &g,
                          ArrayRef<Value> dR, Grads &dO) {
  Value x = op.getX(), scale = op.getScale(), dy = dR[0];
  if (elementOf(dy) != elementOf(x))
    return op.emitError("the gradient of RMSNormalization needs Y of X's type");
  int64_t rank = shapeOf(x).size();
  int64_t axis = normalizeAxis(int64_t(op.getAxis().value_or(-1)), rank);
  SmallVector<int64_t> normalized;
  for (int64_t i = axis; i < rank; ++i)
    normalized.push_back(i);
  auto meanOver = [&](Value v) { return g.mean(v, normalized); };
  Type element = elementOf(x);
  Value meanSquare =
      g.add(meanOver(g.mul(x, x)), g.scalar(element, epsilonOf(op)));
  Value root = SqrtOp::create(g.b, meanSquare.getType(), meanSquare);
  Value r = ReciprocalOp::create(g.b, root.getType(), root);
  Value gy = g.mul(dy, scale);
  Value correction = g.mul(g.mul(x, g.mul(r, r)), meanOver(g.mul(gy, x)));
  dO[0] = g.mul(r, g.sub(gy, correction));
  dO[1] = g.unbroadcast(g.mul(dy, g.mul(x, r)), scale.getType());
  return success();
}

/// GroupNormalization-21: the statistics of each image's group of channels
/// (x as [N, G, C/G * spatial]); dX as for a layer norm over each group, with
/// g = dY * scale[c]; dScale and dBias summed over N and the spatial dims.
LogicalResult gradGroupNorm(GroupNormalizationOp op, GradBuilder &g,
                            ArrayRef<Value> dR, Grads &dO) {
  Value x = op.getX(), dy = dR[0];
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = shape.size(), groups = op.getNumGroups();
  if (rank < 2 || groups < 1 || shape[1] % groups)
    return op.emitError("GroupNormalization: num_groups must divide C");
  int64_t n = shape[0], c = shape[1];
  int64_t perGroup = 1;
  for (int64_t i = 1; i < rank; ++i)
    perGroup *= shape[i];
  perGroup /= groups;
  SmallVector<int64_t> grouped = {n, groups, perGroup};
  auto meanOverGroup = [&](Value v) { return g.mean(v, {2}); };
  // One value per channel, broadcast over [N, C, spatial...].
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = c;
  Type element = elementOf(x);
  Value xg = g.reshape(x, grouped);
  Value centred = g.sub(xg, meanOverGroup(xg));
  Value variance = g.add(meanOverGroup(g.mul(centred, centred)),
                         g.scalar(element, epsilonOf(op)));
  Value root = SqrtOp::create(g.b, variance.getType(), variance);
  Value invStd = ReciprocalOp::create(g.b, root.getType(), root);
  Value xhatGrouped = g.mul(centred, invStd);
  Value gy =
      g.reshape(g.mul(dy, g.reshape(op.getScale(), perChannel)), grouped);
  Value dxGrouped = g.mul(
      invStd, g.sub(g.sub(gy, meanOverGroup(gy)),
                    g.mul(xhatGrouped, meanOverGroup(g.mul(gy, xhatGrouped)))));
  dO[0] = g.reshape(dxGrouped, shape);
  SmallVector<int64_t> allButChannels = {0};
  for (int64_t i = 2; i < rank; ++i)
    allButChannels.push_back(i);
  Value xhat = g.reshape(xhatGrouped, shape);
  dO[1] = g.sum(g.mul(dy, xhat), allButChannels, /*keepDims=*/false);
  dO[2] = g.sum(dy, allButChannels, /*keepDims=*/false);
  return success();
}

/// Gelu: dX = dY * Gelu'(X), one elementwise function for either form
/// (exact: Phi(x) + x phi(x); tanh: the derivative of x/2 (1 + tanh(u))).
LogicalResult gradGelu(GeluOp op, GradBuilder &g, ArrayRef<Value> dR,
                       Grads &dO) {
  Value x = op.getX();
  dO[0] =
      GeluGradOp::create(g.b, x.getType(), dR[0], x, op.getApproximateAttr());
  return success();
}

/// Attention in its canonical form (AttentionForm.h), the probabilities P
/// recomputed: dV = P^T dY, dS = P * (dP - rowsum(dP * P)) with dP = dY V^T,
/// dQ = scale * dS K, dK = scale * dS^T Q; then summed over the repeated
/// K / V heads and packed back into 3-D where the op's inputs are. A float
/// mask of the keys' width gets dS summed onto its shape.
LogicalResult gradAttention(AttentionOp op, GradBuilder &g, ArrayRef<Value> dR,
                            Grads &dO) {
  if (std::string error = attentionFormError(op); !error.empty())
    return op.emitError("the gradient of Attention: ") << error;
  Location loc = g.b.getLoc();
  CanonicalAttention f = buildCanonicalAttention(g.b, loc, op);
  Value p;
  (void)buildAttentionProduct(g.b, loc, f, &p);
  Type element = elementOf(op.getQ());
  auto shape4 = [&](int64_t rows, int64_t columns) {
    return RankedTensorType::get({f.batch, f.heads, rows, columns}, element);
  };
  auto matmul = [&](Value a, Value b, int64_t rows, int64_t columns) {
    return Value(MatMulOp::create(g.b, shape4(rows, columns), a, b));
  };
  const SmallVector<int64_t> swapLast = {0, 1, 3, 2};
  Value dy = dR[0];
  if (f.packedHeads)
    dy = g.transpose(g.reshape(dy, {f.batch, f.queries, f.heads, f.valueSize}),
                     {0, 2, 1, 3});
  Value dv = matmul(g.transpose(p, swapLast), dy, f.keys, f.valueSize);
  Value dp = matmul(dy, g.transpose(f.v, swapLast), f.queries, f.keys);
  Value rowSums = g.sum(g.mul(dp, p), {3}, /*keepDims=*/true);
  Value ds = g.mul(p, g.sub(dp, rowSums));
  Value dq = g.scale(matmul(ds, f.k, f.queries, f.headSize), f.scale);
  Value dk = g.scale(matmul(g.transpose(ds, swapLast), f.q, f.keys, f.headSize),
                     f.scale);
  // The repeated heads' gradients summed onto the K / V heads.
  auto ungroup = [&](Value grad) {
    const int64_t groups = f.heads / f.kvHeads;
    if (groups == 1)
      return grad;
    ArrayRef<int64_t> s = shapeOf(grad);
    return g.sum(g.reshape(grad, {f.batch, f.kvHeads, groups, s[2], s[3]}), {2},
                 /*keepDims=*/false);
  };
  auto pack = [&](Value grad, Value like) {
    if (!f.packedHeads)
      return grad;
    return g.reshape(g.transpose(grad, {0, 2, 1, 3}), shapeOf(like));
  };
  dO[0] = pack(dq, op.getQ());
  dO[1] = pack(ungroup(dk), op.getK());
  dO[2] = pack(ungroup(dv), op.getV());
  Value mask = op.getAttnMask();
  if (mask && !isa<NoneType>(mask.getType()) &&
      isa<FloatType>(elementOf(mask)) && shapeOf(mask).back() == f.keys) {
    Value dsInMaskType = ds;
    if (elementOf(mask) != elementOf(ds))
      dsInMaskType = CastOp::create(
          g.b, tensorType(ds).clone(elementOf(mask)), ds,
          g.b.getI64IntegerAttr(getOnnxDataTypeForType(elementOf(mask))),
          IntegerAttr());
    dO[3] = g.unbroadcast(dsInMaskType, mask.getType());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpTy, auto Rule>
struct GradientModel
    : GradientOpInterface::ExternalModel<GradientModel<OpTy, Rule>, OpTy> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               ArrayRef<Value> resultGradients,
                               SmallVectorImpl<Value> &operandGradients) const {
    // Gradient ops carry the forward node's name with a "/grad" suffix.
    std::string node = getNodeName(op);
    Location loc = op->getLoc();
    if (!node.empty())
      loc = NameLoc::get(builder.getStringAttr(node + "/grad"), loc);
    ImplicitLocOpBuilder b(loc, builder);
    GradBuilder g{b};
    operandGradients.assign(op->getNumOperands(), Value());
    return Rule(cast<OpTy>(op), g, resultGradients, operandGradients);
  }
};

template <typename OpTy, auto Rule>
void attach(MLIRContext *ctx) {
  OpTy::template attachInterface<GradientModel<OpTy, Rule>>(*ctx);
}

/// Adapts rules written for Operation * to a typed op.
template <typename OpTy,
          LogicalResult (*Rule)(Operation *, GradBuilder &, ArrayRef<Value>,
                                Grads &)>
LogicalResult generic(OpTy op, GradBuilder &g, ArrayRef<Value> dR, Grads &dO) {
  return Rule(op.getOperation(), g, dR, dO);
}

} // namespace

void mp::registerGradientModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MPDialect *) {
    attach<AddOp, gradAdd>(ctx);
    attach<SumOp, gradSum>(ctx);
    attach<ExpandOp, gradExpand>(ctx);
    attach<SubOp, gradSub>(ctx);
    attach<MulOp, gradMul>(ctx);
    attach<DivOp, gradDiv>(ctx);
    attach<PowOp, gradPow>(ctx);
    attach<NegOp, gradNeg>(ctx);
    attach<ReluOp, gradRelu>(ctx);
    attach<ClipOp, gradClip>(ctx);
    attach<SigmoidOp, gradSigmoid>(ctx);
    attach<TanhOp, gradTanh>(ctx);
    attach<ExpOp, gradExp>(ctx);
    attach<LogOp, gradLog>(ctx);
    attach<SqrtOp, gradSqrt>(ctx);
    attach<ReciprocalOp, gradReciprocal>(ctx);
    attach<ErfOp, gradErf>(ctx);
    attach<WhereOp, gradWhere>(ctx);
    attach<CastOp, gradCast<CastOp>>(ctx);
    attach<CastLikeOp, gradCast<CastLikeOp>>(ctx);
    attach<IdentityOp, generic<IdentityOp, gradIdentity>>(ctx);
    attach<DropoutOp, gradDropout>(ctx);
    attach<ReshapeOp, generic<ReshapeOp, gradReshapeLike>>(ctx);
    attach<FlattenOp, generic<FlattenOp, gradReshapeLike>>(ctx);
    attach<SqueezeOp, generic<SqueezeOp, gradReshapeLike>>(ctx);
    attach<UnsqueezeOp, generic<UnsqueezeOp, gradReshapeLike>>(ctx);
    attach<TransposeOp, gradTranspose>(ctx);
    attach<MatMulOp, gradMatMul>(ctx);
    attach<GemmOp, gradGemm>(ctx);
    attach<ConvOp, gradConv>(ctx);
    attach<MaxPoolOp, gradPool<MaxPoolOp>>(ctx);
    attach<AveragePoolOp, gradPool<AveragePoolOp>>(ctx);
    attach<GlobalAveragePoolOp,
           generic<GlobalAveragePoolOp, gradGlobalPool<false>>>(ctx);
    attach<GlobalMaxPoolOp, generic<GlobalMaxPoolOp, gradGlobalPool<true>>>(
        ctx);
    attach<BatchNormalizationOp, gradBatchNorm>(ctx);
    attach<SoftmaxOp, gradSoftmax<SoftmaxOp, false>>(ctx);
    attach<LogSoftmaxOp, gradSoftmax<LogSoftmaxOp, true>>(ctx);
    attach<ReduceMeanOp, gradReduceMean>(ctx);
    attach<ReduceSumOp, gradReduceSum>(ctx);
    attach<GatherOp, gradGather>(ctx);
    attach<ConcatOp, gradConcat>(ctx);
    attach<LayerNormalizationOp, gradLayerNorm>(ctx);
    attach<RMSNormalizationOp, gradRMSNorm>(ctx);
    attach<GroupNormalizationOp, gradGroupNorm>(ctx);
    attach<GeluOp, gradGelu>(ctx);
    attach<AttentionOp, gradAttention>(ctx);
    attach<SplitOp, gradSplit>(ctx);
    attach<SliceOp, gradSlice>(ctx);
    attach<SoftmaxCrossEntropyLossOp, gradSoftmaxCrossEntropy>(ctx);
    attach<NegativeLogLikelihoodLossOp, gradNLLLoss>(ctx);
    attach<LSTMOp, gradLSTM>(ctx);
  });
}
