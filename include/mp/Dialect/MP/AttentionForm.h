//===- AttentionForm.h - ONNX Attention as plain tensor ops -------*- C++
//-*-===//
//
// mp.attention (ONNX Attention-23 without past key/value, softcap or the
// qk_matmul output) in the one form the rest of the compiler works with:
// Q, K and V as [batch, heads, sequence, head size] with as many K / V heads
// as Q heads, one additive f32-or-X-typed bias for the scores and the scale.
// ONNX's 3-D inputs ([batch, sequence, heads * head size], heads from
// q_num_heads / kv_num_heads) are split into heads, grouped-query K and V
// heads repeated (np.repeat, as ONNX's reference), a boolean mask made
// additive (0 where true, -inf where false), a mask shorter than the keys
// padded with -inf, and is_causal's upper triangle of -inf added.
//
// mp-decompose-nodes lowers mp.attention through decomposeAttention
// (matmul, scale, bias, softmax in f32, matmul, which culib-fuse-attention
// then makes one call); the op's gradient rule uses the same canonical form.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_ATTENTIONFORM_H
#define MP_DIALECT_MP_ATTENTIONFORM_H

#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Builders.h"

#include <string>

namespace mp {

/// The canonical operands of an attention (see the file comment).
struct CanonicalAttention {
  mlir::Value q, k, v; ///< [B, H, S, D], [B, H, T, D], [B, H, T, Dv]
  mlir::Value bias;    ///< additive, broadcast onto [B, H, S, T]; or null
  double scale = 1.0;  ///< applied to Q K^T
  int64_t batch = 0, heads = 0, kvHeads = 0, queries = 0, keys = 0,
          headSize = 0, valueSize = 0;
  bool packedHeads = false; ///< the op's tensors are 3-D
};

/// Why `op` has no canonical form (dynamic shapes, heads that do not
/// divide, mask shapes that do not broadcast), or "" when it has one.
std::string attentionFormError(AttentionOp op);

/// Builds the canonical operands of `op` before the builder's insertion
/// point. `attentionFormError(op)` must be "".
CanonicalAttention buildCanonicalAttention(mlir::OpBuilder &b,
                                           mlir::Location loc, AttentionOp op);

/// softmax(scale * Q K^T + bias) V in X's type, [B, H, S, Dv]. When X is
/// 16-bit, Q is scaled before the product (the scores' range) and the
/// scores, bias and softmax are f32; `probabilities` receives the softmax's
/// output (in X's type) when non-null.
mlir::Value buildAttentionProduct(mlir::OpBuilder &b, mlir::Location loc,
                                  const CanonicalAttention &form,
                                  mlir::Value *probabilities = nullptr);

/// [B, H, S, Dv] back to the op's layout ([B, S, H * Dv] when packed).
mlir::Value unpackedOutput(mlir::OpBuilder &b, mlir::Location loc,
                           const CanonicalAttention &form, mlir::Value y);

/// The whole op as those ops: Y.
mlir::Value decomposeAttention(mlir::OpBuilder &b, mlir::Location loc,
                               AttentionOp op);

} // namespace mp

#endif // MP_DIALECT_MP_ATTENTIONFORM_H
