//===- AttentionForm.cpp - ONNX Attention as plain tensor ops -------------===//
//
// See AttentionForm.h. The steps follow ONNX's reference
// (onnx/reference/ops/op_attention.py) for the forms mp.attention takes.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/AttentionForm.h"
#include "mp/Dialect/MP/TensorOpBuilder.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace mlir;
using namespace mp;

namespace {

RankedTensorType staticTensor(Value v) { return staticTensorType(v); }
Type elementOf(Value v) { return elementTypeOf(v); }
bool isAbsent(Value v) { return !v || isa<NoneType>(v.getType()); }

/// The element type the scores, bias and softmax are computed in: f32 for
/// 16-bit attention, X's otherwise.
Type workTypeOf(Type element, Builder &b) {
  return element.getIntOrFloatBitWidth() < 32 ? Type(b.getF32Type()) : element;
}

/// Per head: [B, S, H * D] -> [B, H, S, D].
Value splitHeads(TensorOpBuilder &ops, Value x, int64_t heads) {
  ArrayRef<int64_t> s = shapeOf(x);
  return ops.transpose(ops.reshape(x, {s[0], s[1], heads, s[2] / heads}),
                       {0, 2, 1, 3});
}

/// [B, Hkv, T, D] -> [B, Hkv * groups, T, D], each head repeated `groups`
/// times in a row (np.repeat along the heads).
Value repeatHeads(TensorOpBuilder &ops, Value x, int64_t groups) {
  if (groups == 1)
    return x;
  ArrayRef<int64_t> s = shapeOf(x);
  SmallVector<int64_t> shape = {s[0], s[1], 1, s[2], s[3]};
  Value grouped = ops.reshape(x, shape);
  shape[2] = groups;
  return ops.reshape(ops.expand(grouped, shape),
                     {s[0], s[1] * groups, s[2], s[3]});
}

} // namespace

std::string mp::attentionFormError(AttentionOp op) {
  auto q = staticTensor(op.getQ()), k = staticTensor(op.getK()),
       v = staticTensor(op.getV());
  if (!q || !k || !v)
    return "Q, K and V need static shapes";
  const int64_t rank = q.getRank();
  if ((rank != 3 && rank != 4) || k.getRank() != rank || v.getRank() != rank)
    return "Q, K and V must all be 3-D or all 4-D";
  if (!isa<FloatType>(q.getElementType()) ||
      k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return "Q, K and V must have one float type";
  int64_t heads, kvHeads, headSize, kHeadSize, keys;
  if (rank == 3) {
    if (!op.getQNumHeads() || !op.getKvNumHeads())
      return "3-D inputs need q_num_heads and kv_num_heads";
    heads = int64_t(*op.getQNumHeads());
    kvHeads = int64_t(*op.getKvNumHeads());
    if (heads < 1 || kvHeads < 1 || q.getDimSize(2) % heads ||
        k.getDimSize(2) % kvHeads || v.getDimSize(2) % kvHeads)
      return "the heads must divide the hidden sizes";
    headSize = q.getDimSize(2) / heads;
    kHeadSize = k.getDimSize(2) / kvHeads;
    keys = k.getDimSize(1);
    if (v.getDimSize(1) != keys)
      return "K and V must have one sequence length";
  } else {
    heads = q.getDimSize(1);
    kvHeads = k.getDimSize(1);
    if (v.getDimSize(1) != kvHeads)
      return "K and V must have one number of heads";
    headSize = q.getDimSize(3);
    kHeadSize = k.getDimSize(3);
    keys = k.getDimSize(2);
    if (v.getDimSize(2) != keys)
      return "K and V must have one sequence length";
  }
  if (headSize != kHeadSize)
    return "Q and K must have one head size";
  if (kvHeads < 1 || heads % kvHeads)
    return "the K / V heads must divide the Q heads";
  if (q.getDimSize(0) != k.getDimSize(0) || q.getDimSize(0) != v.getDimSize(0))
    return "Q, K and V must have one batch size";
  // softmax_precision: the softmax is f32 (f64 for f64 data) whatever it
  // asks of the types ONNX allows.
  if (std::optional<uint64_t> precision = op.getSoftmaxPrecision();
      precision && *precision != 1 && *precision != 10 && *precision != 11 &&
      *precision != 16)
    return "softmax_precision must be FLOAT, FLOAT16, BFLOAT16 or DOUBLE";
  if (isAbsent(op.getAttnMask()))
    return "";
  auto mask = staticTensor(op.getAttnMask());
  if (!mask || mask.getRank() < 2 || mask.getRank() > 4)
    return "attn_mask must be a static 2-D to 4-D tensor";
  Type element = mask.getElementType();
  if (!element.isInteger(1) && !isa<FloatType>(element))
    return "attn_mask must be bool or float";
  const int64_t queries = rank == 3 ? q.getDimSize(1) : q.getDimSize(2);
  SmallVector<int64_t> full = {q.getDimSize(0), heads, queries, keys};
  ArrayRef<int64_t> m = mask.getShape();
  if (m.back() > keys)
    return "attn_mask has more columns than there are keys";
  for (size_t i = 0; i + 1 < m.size(); ++i) {
    int64_t target = full[4 - m.size() + i];
    if (m[i] != 1 && m[i] != target)
      return "attn_mask does not broadcast onto [batch, heads, queries, keys]";
  }
  return "";
}

CanonicalAttention mp::buildCanonicalAttention(OpBuilder &b, Location loc,
                                               AttentionOp op) {
  TensorOpBuilder ops(b, loc);
  CanonicalAttention form;
  Value q = op.getQ(), k = op.getK(), v = op.getV();
  Type element = elementOf(q);
  form.packedHeads = shapeOf(q).size() == 3;
  if (form.packedHeads) {
    q = splitHeads(ops, q, int64_t(*op.getQNumHeads()));
    k = splitHeads(ops, k, int64_t(*op.getKvNumHeads()));
    v = splitHeads(ops, v, int64_t(*op.getKvNumHeads()));
  }
  form.batch = shapeOf(q)[0];
  form.heads = shapeOf(q)[1];
  form.kvHeads = shapeOf(k)[1];
  form.queries = shapeOf(q)[2];
  form.keys = shapeOf(k)[2];
  form.headSize = shapeOf(q)[3];
  form.valueSize = shapeOf(v)[3];
  form.q = q;
  form.k = repeatHeads(ops, k, form.heads / form.kvHeads);
  form.v = repeatHeads(ops, v, form.heads / form.kvHeads);
  form.scale = op.getScale() ? op.getScale()->convertToDouble()
                             : 1.0 / std::sqrt(double(form.headSize));

  Type work = workTypeOf(element, b);
  const double infinity = std::numeric_limits<double>::infinity();
  if (!isAbsent(op.getAttnMask())) {
    Value mask = op.getAttnMask();
    if (elementOf(mask).isInteger(1))
      mask = WhereOp::create(b, loc, RankedTensorType::get(shapeOf(mask), work),
                             mask, ops.scalar(work, 0.0),
                             ops.scalar(work, -infinity));
    else
      mask = ops.cast(mask, work);
    // A mask of fewer columns than keys: the rest masked out.
    ArrayRef<int64_t> m = shapeOf(mask);
    if (m.back() < form.keys) {
      SmallVector<int64_t> pads(2 * m.size(), 0), padded(m);
      pads.back() = form.keys - m.back();
      padded.back() = form.keys;
      mask = PadOp::create(b, loc, RankedTensorType::get(padded, work), mask,
                           ops.i64s(pads), ops.scalar(work, -infinity),
                           b.getStringAttr("constant"));
    }
    form.bias = mask;
  }
  if (op.getIsCausal().value_or(0)) {
    // -inf above the diagonal of the [S, T] scores (upper-left aligned).
    auto type = RankedTensorType::get({form.queries, form.keys}, work);
    auto triangle = [&](auto zero) {
      using Element = decltype(zero);
      std::vector<Element> values(size_t(form.queries * form.keys), zero);
      for (int64_t i = 0; i < form.queries; ++i)
        for (int64_t j = i + 1; j < form.keys; ++j)
          values[size_t(i * form.keys + j)] =
              -std::numeric_limits<Element>::infinity();
      return DenseElementsAttr::get(type, ArrayRef<Element>(values));
    };
    Value causal = ops.constant(work.isF64() ? triangle(0.0) : triangle(0.0f));
    form.bias = form.bias ? ops.add(form.bias, causal) : causal;
  }
  return form;
}

/// softmax(scale * Q K^T + bias) in the work type, then X's type.
static Value buildProbabilities(TensorOpBuilder &ops,
                                const CanonicalAttention &form) {
  Type element = elementOf(form.q);
  Type work = workTypeOf(element, ops.builder());
  // 16-bit Q is scaled before the product, so that the 16-bit scores stay
  // in range (ONNX's reference scales Q and K before it too); wider types
  // scale the scores.
  const bool narrow = work != element;
  Value q = narrow ? ops.mul(form.q, ops.scalar(element, form.scale)) : form.q;
  Value scores = ops.matmul(q, ops.transpose(form.k, {0, 1, 3, 2}),
                            {form.batch, form.heads, form.queries, form.keys});
  scores = ops.cast(scores, work);
  if (!narrow)
    scores = ops.mul(scores, ops.scalar(work, form.scale));
  if (form.bias)
    scores = ops.add(scores, form.bias);
  Value probabilities =
      SoftmaxOp::create(ops.builder(), ops.location(), scores.getType(), scores,
                        ops.builder().getI64IntegerAttr(-1));
  return ops.cast(probabilities, element);
}

Value mp::buildAttentionProduct(OpBuilder &b, Location loc,
                                const CanonicalAttention &form,
                                Value *probabilities) {
  TensorOpBuilder ops(b, loc);
  Value p = buildProbabilities(ops, form);
  if (probabilities)
    *probabilities = p;
  return ops.matmul(p, form.v,
                    {form.batch, form.heads, form.queries, form.valueSize});
}

Value mp::unpackedOutput(OpBuilder &b, Location loc,
                         const CanonicalAttention &form, Value y) {
  if (!form.packedHeads)
    return y;
  TensorOpBuilder ops(b, loc);
  ArrayRef<int64_t> s = shapeOf(y);
  return ops.reshape(ops.transpose(y, {0, 2, 1, 3}), {s[0], s[2], s[1] * s[3]});
}

Value mp::decomposeAttention(OpBuilder &b, Location loc, AttentionOp op) {
  CanonicalAttention form = buildCanonicalAttention(b, loc, op);
  return unpackedOutput(b, loc, form, buildAttentionProduct(b, loc, form));
}
