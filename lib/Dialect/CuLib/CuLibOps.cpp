//===- CuLibOps.cpp - ops of the culib dialect ---------------------------===//
//
// The verifiers check what the runtime relies on: static shapes that agree
// with the call's semantics, so that a plan never reaches a library call
// with buffers of the wrong size.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Runtime/Attention.h"
#include "mp/Runtime/ElementwiseFunctions.h"
#include "mp/Runtime/FusedProgram.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace mp::culib;

#define GET_OP_CLASSES
#include "mp/Dialect/CuLib/CuLibOps.cpp.inc"

namespace {
MemRefType memrefOf(Value v) { return cast<MemRefType>(v.getType()); }

/// Buffers must be dense, static and have the identity layout: the runtime
/// addresses them as row-major arrays.
LogicalResult verifyBuffer(Operation *op, Value v, StringRef name) {
  MemRefType type = memrefOf(v);
  if (!type.hasStaticShape())
    return op->emitOpError() << name << " must have a static shape, got "
                             << type;
  if (!type.getLayout().isIdentity())
    return op->emitOpError() << name << " must have the identity layout";
  return success();
}

LogicalResult verifySameShape(Operation *op, Value a, StringRef aName, Value b,
                              StringRef bName) {
  if (memrefOf(a).getShape() != memrefOf(b).getShape())
    return op->emitOpError() << aName << " and " << bName
                             << " must have the same shape, got "
                             << memrefOf(a) << " and " << memrefOf(b);
  return success();
}

LogicalResult verifyChannelVector(Operation *op, Value v, StringRef name,
                                  int64_t channels) {
  MemRefType type = memrefOf(v);
  if (type.getRank() != 1 || type.getDimSize(0) != channels)
    return op->emitOpError() << name << " must be a vector of " << channels
                             << " elements, got " << type;
  return success();
}

LogicalResult verifyComputeType(Operation *op, Type compute, Type input) {
  if (compute.isF32() || (compute.isF64() && input.isF64()) ||
      compute == input)
    return success();
  return op->emitOpError() << "compute type " << compute
                           << " cannot accumulate " << input << " inputs";
}
} // namespace

LogicalResult AllocOp::verify() {
  if (failed(verifyBuffer(*this, getBuffer(), "buffer")))
    return failure();
  if (getOffset() && static_cast<int64_t>(*getOffset()) < 0)
    return emitOpError("offset must not be negative");
  if (!getAtLoad())
    return success();
  if (getOffset())
    return emitOpError("a buffer made at load is not in the arena: it has no "
                       "offset");
  for (Operation *user : getBuffer().getUsers()) {
    std::optional<CallBuffers> buffers = getCallBuffers(user);
    if (!buffers || user->hasAttr(kAtLoadAttr))
      continue;
    for (const NamedBuffer &out : buffers->outs)
      if (out.value == getBuffer())
        return emitOpError("a buffer made at load is written only by calls "
                           "at load ('")
               << kAtLoadAttr << "'), not by " << user->getName();
  }
  return success();
}

LogicalResult ViewOp::verify() {
  if (failed(verifyBuffer(*this, getSource(), "source")) ||
      failed(verifyBuffer(*this, getBuffer(), "buffer")))
    return failure();
  MemRefType from = getSource().getType(), to = getBuffer().getType();
  if (from.getNumElements() != to.getNumElements() ||
      from.getElementType() != to.getElementType())
    return emitOpError() << "a view of " << from << " as " << to
                         << " must keep the element type and count";
  return success();
}

LogicalResult WeightOp::verify() {
  if (failed(verifyBuffer(*this, getBuffer(), "weight")))
    return failure();
  ShapedType valueType = getValue().getShapedType();
  MemRefType bufferType = getBuffer().getType();
  if (valueType.getShape() != bufferType.getShape() ||
      valueType.getElementType() != bufferType.getElementType())
    return emitOpError() << "value of type " << valueType
                         << " does not match the buffer " << bufferType;
  return success();
}

LogicalResult MatmulOp::verify() {
  for (auto [v, name] : {std::pair<Value, StringRef>{getA(), "A"},
                         {getB(), "B"}, {getD(), "D"}})
    if (failed(verifyBuffer(*this, v, name)))
      return failure();
  MemRefType a = memrefOf(getA()), b = memrefOf(getB()), d = memrefOf(getD());
  if (a.getRank() < 2 || b.getRank() < 2 || d.getRank() < 2)
    return emitOpError("A, B and D must have rank >= 2");
  if (a.getElementType() != b.getElementType())
    return emitOpError("A and B must have the same element type");
  if (failed(verifyComputeType(*this, getComputeType(), a.getElementType())))
    return failure();
  // Every activation but clip (whose bounds only conv_fwd carries).
  if (getEpilogue() == Epilogue::clip)
    return emitOpError("epilogue clip is conv_fwd's only (a matmul has no "
                       "clip_min / clip_max)");
  int64_t m = a.getDimSize(a.getRank() - (getTransA() ? 1 : 2));
  int64_t ka = a.getDimSize(a.getRank() - (getTransA() ? 2 : 1));
  int64_t kb = b.getDimSize(b.getRank() - (getTransB() ? 1 : 2));
  int64_t n = b.getDimSize(b.getRank() - (getTransB() ? 2 : 1));
  if (ka != kb)
    return emitOpError() << "contraction dims differ: " << ka << " vs " << kb;
  if (d.getDimSize(d.getRank() - 2) != m || d.getDimSize(d.getRank() - 1) != n)
    return emitOpError() << "D must be " << m << "x" << n
                         << " in its last two dims, got " << d;
  // Batch dims of A and B broadcast to D's.
  int64_t batchRank = d.getRank() - 2;
  for (MemRefType operand : {a, b}) {
    int64_t rank = operand.getRank() - 2;
    if (rank > batchRank)
      return emitOpError("A and B may not have more batch dims than D");
    for (int64_t i = 0; i < rank; ++i) {
      int64_t dim = operand.getDimSize(i);
      int64_t out = d.getDimSize(batchRank - rank + i);
      if (dim != 1 && dim != out)
        return emitOpError() << "batch dim " << i << " of " << operand
                             << " does not broadcast to " << d;
    }
  }
  if (getC() && failed(verifySameShape(*this, getC(), "C", getD(), "D")))
    return failure();
  if (getBias() && failed(verifyChannelVector(*this, getBias(), "bias", n)))
    return failure();
  // The activation gradients read the activation's input, D's shape.
  const Epilogue e = getEpilogue();
  const bool gradient = e == Epilogue::relu_grad || e == Epilogue::gelu_grad ||
                        e == Epilogue::gelu_tanh_grad;
  if (gradient != bool(getAux()))
    return emitOpError() << (gradient ? "epilogue " : "aux goes with an ")
                         << (gradient
                                 ? stringifyEpilogue(e).str() +
                                       " needs aux (the activation's input)"
                                 : std::string("activation-gradient "
                                               "epilogue"));
  if (gradient && getBias())
    return emitOpError() << "epilogue " << stringifyEpilogue(e)
                         << " takes no bias";
  if (getAux() && failed(verifySameShape(*this, getAux(), "aux", getD(), "D")))
    return failure();
  if (Value grad = getBiasGrad()) {
    // The sums of op(B) (op(A)) over the contraction dim: N (M) values of
    // its type, in any shape of ones but its last dim.
    const bool ofA = getBiasGradOfA();
    MemRefType summed = ofA ? a : b, g = memrefOf(grad);
    StringRef name = ofA ? "A" : "B";
    int64_t count = ofA ? m : n;
    if (summed.getRank() != 2)
      return emitOpError() << "bias_grad needs " << name << " of rank 2, got "
                           << summed;
    if (g.getElementType() != summed.getElementType())
      return emitOpError() << "bias_grad must have " << name
                           << "'s element type, got " << g;
    if (g.getRank() < 1 || g.getDimSize(g.getRank() - 1) != count ||
        g.getNumElements() != count)
      return emitOpError() << "bias_grad must hold the " << count
                           << " sums of op(" << name
                           << ") over K in its last dim, got " << g;
  } else if (getBiasGradOfA()) {
    return emitOpError("bias_grad_of_a without a bias_grad");
  }
  return success();
}

LogicalResult ConvFwdOp::verify() {
  for (auto [v, name] : {std::pair<Value, StringRef>{getX(), "X"},
                         {getW(), "W"}, {getY(), "Y"}})
    if (failed(verifyBuffer(*this, v, name)))
      return failure();
  MemRefType x = memrefOf(getX()), w = memrefOf(getW()), y = memrefOf(getY());
  int64_t rank = x.getRank();
  if (rank < 3 || w.getRank() != rank || y.getRank() != rank)
    return emitOpError("X, W and Y must have the same rank, at least 3");
  if (x.getElementType() != w.getElementType())
    return emitOpError("X and W must have the same element type");
  if (failed(verifyComputeType(*this, getComputeType(), x.getElementType())))
    return failure();
  size_t spatial = rank - 2;
  if (getPads().size() != 2 * spatial || getStrides().size() != spatial ||
      getDilations().size() != spatial)
    return emitOpError() << "needs " << 2 * spatial << " pads and "
                         << spatial << " strides and dilations";
  bool nhwc = getLayout() == Layout::nhwc;
  // The activation gradients are a matmul's (with its aux operand).
  if (getActivation() == Epilogue::relu_grad ||
      getActivation() == Epilogue::gelu_grad ||
      getActivation() == Epilogue::gelu_tanh_grad)
    return emitOpError() << "activation " << stringifyEpilogue(getActivation())
                         << " is a matmul's epilogue (with aux)";
  // Clip has its bounds, and only clip.
  const bool clip = getActivation() == Epilogue::clip;
  if (clip != (getClipMin().has_value() && getClipMax().has_value()) ||
      (!clip && (getClipMin() || getClipMax())))
    return emitOpError("clip_min and clip_max go with activation clip, and "
                       "only with it");
  if (clip &&
      !(getClipMin()->convertToFloat() <= getClipMax()->convertToFloat()))
    return emitOpError("clip_min must not exceed clip_max");
  int64_t groups = static_cast<int64_t>(getGroups());
  auto channelDim = [&](MemRefType t) { return nhwc ? t.getRank() - 1 : 1; };
  auto spatialDim = [&](int64_t i) { return nhwc ? 1 + i : 2 + i; };
  int64_t c = x.getDimSize(channelDim(x));
  int64_t k = w.getDimSize(0);
  int64_t cPerGroup = w.getDimSize(channelDim(w));
  if (groups < 1 || c != cPerGroup * groups || k % groups != 0)
    return emitOpError() << "X has " << c << " channels; W expects "
                         << cPerGroup << " per group in " << groups
                         << " groups";
  if (y.getDimSize(0) != x.getDimSize(0) || y.getDimSize(channelDim(y)) != k)
    return emitOpError() << "Y must have batch " << x.getDimSize(0) << " and "
                         << k << " channels, got " << y;
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = x.getDimSize(spatialDim(i));
    int64_t kernel = w.getDimSize(spatialDim(i));
    int64_t stride = getStrides()[i], dilation = getDilations()[i];
    if (stride < 1 || dilation < 1 || getPads()[i] < 0 ||
        getPads()[i + spatial] < 0)
      return emitOpError("strides and dilations must be positive, pads not "
                         "negative");
    int64_t span = in + getPads()[i] + getPads()[i + spatial] -
                   ((kernel - 1) * dilation + 1);
    int64_t expected = span < 0 ? 0 : span / stride + 1;
    if (y.getDimSize(spatialDim(i)) != expected)
      return emitOpError() << "spatial dim " << i << " of Y must be "
                           << expected << ", got " << y;
  }
  if (getBias() && failed(verifyChannelVector(*this, getBias(), "bias", k)))
    return failure();
  if (Value residual = getResidual()) {
    if (failed(verifyBuffer(*this, residual, "residual")))
      return failure();
    if (memrefOf(residual) != y)
      return emitOpError() << "residual must have Y's type " << y << ", got "
                           << residual.getType();
  }
  return success();
}

LogicalResult PoolOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "X")) ||
      failed(verifyBuffer(*this, getY(), "Y")))
    return failure();
  MemRefType x = memrefOf(getX()), y = memrefOf(getY());
  if (x.getRank() < 3 || y.getRank() != x.getRank())
    return emitOpError("X and Y must have the same rank, at least 3");
  size_t spatial = x.getRank() - 2;
  StringRef mode = getMode();
  if (mode != "max" && mode != "avg" && mode != "avg_include_pad")
    return emitOpError() << "unknown mode '" << mode
                         << "' (max, avg, avg_include_pad)";
  if (getWindow().size() != spatial || getStrides().size() != spatial ||
      getPads().size() != 2 * spatial ||
      (getDilations() && getDilations()->size() != spatial))
    return emitOpError() << "needs " << spatial << " window sizes, strides "
                         << "and dilations and " << 2 * spatial << " pads";
  if (getDilations() && mode != "max")
    return emitOpError("only max pooling takes dilations");
  bool nhwc = getLayout() == Layout::nhwc;
  int64_t channelDim = nhwc ? x.getRank() - 1 : 1;
  if (x.getDimSize(0) != y.getDimSize(0) ||
      x.getDimSize(channelDim) != y.getDimSize(channelDim))
    return emitOpError("X and Y must agree in batch and channels");
  if (getIndices()) {
    if (mode != "max")
      return emitOpError("only max pooling has indices");
    if (nhwc)
      return emitOpError("indices are ONNX's NCHW indices: layout must be "
                         "nchw");
    if (failed(verifySameShape(*this, getIndices(), "indices", getY(), "Y")))
      return failure();
  }
  return success();
}

static LogicalResult verifyBatchNorm(Operation *op, Value x, Value y,
                                     Layout layout, ValueRange statistics) {
  if (failed(verifyBuffer(op, x, "X")) || failed(verifyBuffer(op, y, "Y")))
    return failure();
  MemRefType xType = memrefOf(x);
  if (xType.getRank() < 2)
    return op->emitOpError("X must have rank >= 2");
  if (failed(verifySameShape(op, x, "X", y, "Y")))
    return failure();
  bool nhwc = layout == Layout::nhwc;
  int64_t channels = xType.getDimSize(nhwc ? xType.getRank() - 1 : 1);
  for (Value v : statistics)
    if (failed(verifyChannelVector(op, v, "scale, bias and statistics",
                                   channels)))
      return failure();
  return success();
}

LogicalResult BatchNormInferenceOp::verify() {
  return verifyBatchNorm(*this, getX(), getY(), getLayout(),
                         {getScale(), getBias(), getMean(), getVariance()});
}

LogicalResult BatchNormTrainingOp::verify() {
  return verifyBatchNorm(*this, getX(), getY(), getLayout(),
                         {getScale(), getBias(), getMean(), getVariance(),
                          getRunningMean(), getRunningVariance()});
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "X")) ||
      failed(verifyBuffer(*this, getY(), "Y")) ||
      failed(verifySameShape(*this, getX(), "X", getY(), "Y")))
    return failure();
  int64_t rank = memrefOf(getX()).getRank();
  // I64Attr getters return uint64_t: read the value as signed.
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < -rank || axis >= rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

bool mp::culib::broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[offset + i])
      return false;
  return true;
}

LogicalResult ScaledSoftmaxOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "X")) ||
      failed(verifyBuffer(*this, getY(), "Y")) ||
      failed(verifySameShape(*this, getX(), "X", getY(), "Y")))
    return failure();
  MemRefType x = memrefOf(getX());
  if (x.getRank() < 1)
    return emitOpError("X needs at least one dim");
  if (Value mask = getMask()) {
    MemRefType m = memrefOf(mask);
    if (m.getElementType() != x.getElementType() && !m.getElementType().isF32())
      return emitOpError("mask must have X's element type or f32");
    if (!broadcastsTo(m.getShape(), x.getShape()))
      return emitOpError("mask does not broadcast to X's shape");
  }
  return success();
}

LogicalResult ElementwiseOp::verify() {
  // The functions, their inputs and result type: ElementwiseFunctions.def
  // (docs/plan-format.md lists their semantics).
  const mp::rt::cpu::ElementwiseFnInfo &fn = mp::rt::cpu::infoOf(getFn());
  StringRef name = spellingOf(getFn());
  unsigned arity = fn.arity();
  if (arity ? getInputs().size() != arity : getInputs().empty())
    return emitOpError() << "'" << name << "' takes "
                         << (arity ? std::to_string(arity)
                                   : std::string("one or more"))
                         << " inputs, got " << getInputs().size();
  if (failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType y = memrefOf(getY());
  for (Value input : getInputs()) {
    if (failed(verifyBuffer(*this, input, "input")))
      return failure();
    if (!broadcastsTo(memrefOf(input).getShape(), y.getShape()))
      return emitOpError() << "input " << memrefOf(input)
                           << " does not broadcast to " << y;
  }
  if (fn.boolResult() && !y.getElementType().isInteger(1))
    return emitOpError() << "'" << name << "' writes a bool (i1) buffer";
  // The data inputs (all but where's condition and pow's exponent) have
  // y's element type.
  using mp::rt::cpu::ElementwiseFn;
  if (!fn.boolResult())
    for (auto [i, input] : llvm::enumerate(getInputs())) {
      if ((getFn() == ElementwiseFn::Where && i == 0) ||
          (getFn() == ElementwiseFn::Pow && i == 1))
        continue;
      if (memrefOf(input).getElementType() != y.getElementType())
        return emitOpError() << "input #" << i << " has element type "
                             << memrefOf(input).getElementType() << ", y has "
                             << y.getElementType();
    }
  return success();
}

LogicalResult FusedElementwiseOp::verify() {
  if (failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType y = memrefOf(getY());
  auto isFused = [](Type t) { return t.isF16() || t.isBF16() || t.isF32(); };
  if (!isFused(y.getElementType()))
    return emitOpError() << "y must be an f16, bf16 or f32 buffer, got " << y;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    if (failed(verifyBuffer(*this, input, "input")))
      return failure();
    MemRefType type = memrefOf(input);
    if (!isFused(type.getElementType()))
      return emitOpError() << "input #" << i
                           << " must be an f16, bf16 or f32 buffer, got "
                           << type;
    if (!broadcastsTo(type.getShape(), y.getShape()))
      return emitOpError() << "input #" << i << " " << type
                           << " does not broadcast to " << y;
  }
  std::string why;
  if (!mp::rt::parseFusedProgram(getProgram(), getInputs().size(), why))
    return emitOpError() << "program: " << why;
  return success();
}

LogicalResult AttentionOp::verify() {
  for (auto [name, buffer] : {std::pair<StringRef, Value>{"q", getQ()},
                              {"k", getK()},
                              {"v", getV()},
                              {"mask", getMask()},
                              {"o", getO()}}) {
    if (!buffer)
      continue;
    if (failed(verifyBuffer(*this, buffer, name)))
      return failure();
    Type element = memrefOf(buffer).getElementType();
    if (!element.isF16() && !element.isBF16() && !element.isF32())
      return emitOpError() << name
                           << " must be an f16, bf16 or f32 buffer, got "
                           << buffer.getType();
  }
  mp::rt::AttentionShape shape;
  if (!mp::rt::AttentionShape::fromList(std::vector<int64_t>(getShape()),
                                        shape))
    return emitOpError() << "shape must have 6 elements (batch, heads, "
                            "queries, keys, head_dim, value_dim)";
  mp::rt::AttentionView views[5];
  std::optional<ArrayRef<int64_t>> maskView = getMaskView();
  if (maskView.has_value() != static_cast<bool>(getMask()))
    return emitOpError() << "mask_view must be given exactly with a mask";
  ArrayRef<int64_t> lists[5] = {getQView(), getKView(), getVView(), getOView(),
                                maskView.value_or(ArrayRef<int64_t>{})};
  for (int i = 0; i < (getMask() ? 5 : 4); ++i)
    if (!mp::rt::AttentionView::fromList(std::vector<int64_t>(lists[i]),
                                         views[i]))
      return emitOpError() << "views must have 5 elements (offset and the "
                              "strides of batch, head, row and column)";
  auto elements = [](Value v) {
    return v ? memrefOf(v).getNumElements() : int64_t(-1);
  };
  std::string why;
  if (!mp::rt::checkAttention(shape, views[0], views[1], views[2], views[3],
                              getMask() ? &views[4] : nullptr, elements(getQ()),
                              elements(getK()), elements(getV()),
                              elements(getO()), elements(getMask()), why))
    return emitOpError() << why;
  return success();
}

LogicalResult CastOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "x")) ||
      failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  if (getRoundMode() != "up" && getRoundMode() != "down" &&
      getRoundMode() != "nearest")
    return emitOpError() << "round_mode must be \"up\", \"down\" or "
                            "\"nearest\", not \""
                         << getRoundMode() << "\"";
  return verifySameShape(*this, getX(), "x", getY(), "y");
}

LogicalResult ReduceOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "x")) ||
      failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType x = memrefOf(getX()), y = memrefOf(getY());
  int64_t rank = x.getRank();
  llvm::SmallBitVector reduced(rank);
  for (int64_t axis : getAxes()) {
    if (axis < 0 || axis >= rank || reduced.test(axis))
      return emitOpError() << "axes must be distinct dims in [0, " << rank
                           << ")";
    reduced.set(axis);
  }
  SmallVector<int64_t> kept, dropped;
  for (int64_t i = 0; i < rank; ++i) {
    kept.push_back(reduced.test(i) ? 1 : x.getDimSize(i));
    if (!reduced.test(i))
      dropped.push_back(x.getDimSize(i));
  }
  if (y.getShape() != ArrayRef<int64_t>(kept) &&
      y.getShape() != ArrayRef<int64_t>(dropped))
    return emitOpError() << "y " << y << " is not x reduced over the axes";
  bool arg = getFn() == mp::rt::cpu::ReduceFn::ArgMax ||
             getFn() == mp::rt::cpu::ReduceFn::ArgMin;
  if (arg && (getAxes().size() != 1 || !y.getElementType().isInteger(64)))
    return emitOpError("argmax/argmin reduce one axis into an i64 buffer");
  if (!arg && y.getElementType() != x.getElementType())
    return emitOpError("x and y must have the same element type");
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "x")) ||
      failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType x = memrefOf(getX()), y = memrefOf(getY());
  int64_t rank = x.getRank();
  if (static_cast<int64_t>(getPerm().size()) != rank || y.getRank() != rank)
    return emitOpError("perm, x and y must have the same rank");
  llvm::SmallBitVector seen(rank);
  for (auto [i, p] : llvm::enumerate(getPerm())) {
    if (p < 0 || p >= rank || seen.test(p))
      return emitOpError("perm is not a permutation");
    seen.set(p);
    if (y.getDimSize(i) != x.getDimSize(p))
      return emitOpError() << "y " << y << " is not x permuted by perm";
  }
  return success();
}

LogicalResult CopyOp::verify() {
  if (failed(verifyBuffer(*this, getX(), "x")) ||
      failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType x = memrefOf(getX()), y = memrefOf(getY());
  if (x.getNumElements() != y.getNumElements() ||
      x.getElementType() != y.getElementType())
    return emitOpError() << "x " << x << " and y " << y
                         << " must have the same element type and count";
  return success();
}

LogicalResult GatherOp::verify() {
  for (auto [v, name] : {std::pair<Value, StringRef>{getData(), "data"},
                         {getIndices(), "indices"}, {getY(), "y"}})
    if (failed(verifyBuffer(*this, v, name)))
      return failure();
  MemRefType data = memrefOf(getData()), indices = memrefOf(getIndices()),
             y = memrefOf(getY());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= data.getRank())
    return emitOpError() << "axis " << axis << " is out of range";
  SmallVector<int64_t> expected(data.getShape().take_front(axis));
  llvm::append_range(expected, indices.getShape());
  llvm::append_range(expected, data.getShape().drop_front(axis + 1));
  if (y.getShape() != ArrayRef<int64_t>(expected) ||
      y.getElementType() != data.getElementType())
    return emitOpError() << "y must be " << data.getElementType()
                         << " with the gathered shape";
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  if (failed(verifyBuffer(*this, getY(), "y")))
    return failure();
  MemRefType y = memrefOf(getY());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= y.getRank())
    return emitOpError() << "axis " << axis << " is out of range";
  int64_t total = 0;
  for (Value input : getInputs()) {
    if (failed(verifyBuffer(*this, input, "input")))
      return failure();
    MemRefType t = memrefOf(input);
    if (t.getRank() != y.getRank() || t.getElementType() != y.getElementType())
      return emitOpError("inputs must have y's rank and element type");
    for (int64_t d = 0; d < y.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != y.getDimSize(d))
        return emitOpError() << "input " << t << " differs from y outside "
                             << "the axis";
    total += t.getDimSize(axis);
  }
  if (total != y.getDimSize(axis))
    return emitOpError() << "inputs add up to " << total
                         << " along the axis, y has " << y.getDimSize(axis);
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty() || getInputs().size() != getOutputs().size())
    return emitOpError("needs as many outputs as inputs (and at least one), "
                       "got ")
           << getInputs().size() << " and " << getOutputs().size();
  for (auto [in, out] : llvm::zip(getInputs(), getOutputs()))
    if (in.getType() != out.getType())
      return emitOpError("output ")
             << out.getType() << " does not have the type of its input "
             << in.getType();
  Type wire = getReduceType();
  if (!wire.isF32() && !wire.isBF16() && !wire.isF16())
    return emitOpError("reduce_type must be f32, bf16 or f16, got ") << wire;
  return success();
}

LogicalResult UnscaleCheckFiniteOp::verify() {
  if (getGrads().empty() || getGrads().size() != getUnscaled().size())
    return emitOpError("needs as many unscaled outputs as gradients (and at "
                       "least one), got ")
           << getGrads().size() << " and " << getUnscaled().size();
  for (auto [g, u] : llvm::zip(getGrads(), getUnscaled()))
    if (cast<MemRefType>(g.getType()).getShape() !=
        cast<MemRefType>(u.getType()).getShape())
      return emitOpError("unscaled buffer ")
             << u.getType() << " does not have the shape of " << g.getType();
  return success();
}
