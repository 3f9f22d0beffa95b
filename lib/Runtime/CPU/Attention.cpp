//===- Attention.cpp - the exact fused attention kernel -------------------===//
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/NNKernels.h"

#include "ElementwiseConvert.h"
#include "KernelUtil.h"
#include "Parallel.h"

#include <cmath>
#include <limits>
#include <vector>

namespace mp::rt::cpu {

namespace {

bool isAttentionType(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

/// Element `i` of a float buffer as f32.
inline float load(DType t, const void *data, int64_t i) {
  switch (t) {
  case DType::F16:
    return toFloat(static_cast<const Half *>(data)[i]);
  case DType::BF16:
    return toFloat(static_cast<const BFloat16 *>(data)[i]);
  default:
    return static_cast<const float *>(data)[i];
  }
}

/// `value` rounded once into element `i` of a float buffer.
inline void store(DType t, void *data, int64_t i, float value) {
  switch (t) {
  case DType::F16:
    static_cast<Half *>(data)[i] = toHalf(value);
    break;
  case DType::BF16:
    static_cast<BFloat16 *>(data)[i] = toBFloat16(value);
    break;
  default:
    static_cast<float *>(data)[i] = value;
  }
}

} // namespace

Status checkAttention(const TensorView &q, const TensorView &k,
                      const TensorView &v, const TensorView *mask,
                      const TensorView &o, const AttentionOptions &options) {
  for (const TensorView *t : {&q, &k, &v, mask, &o})
    if (t && !isAttentionType(t->dtype))
      return Status::error("attention: buffers must be f32, f16 or bf16, got " +
                           std::string(dtypeName(t->dtype)));
  std::string why;
  if (!rt::checkAttention(options.shape, options.q, options.k, options.v,
                          options.o, mask ? &options.mask : nullptr,
                          q.numElements(), k.numElements(), v.numElements(),
                          o.numElements(), mask ? mask->numElements() : -1,
                          why))
    return Status::error("attention: " + why);
  for (const TensorView *t : {&q, &k, &v, mask})
    if (t && detail::overlaps(t->data, t->byteCount(), o.data, o.byteCount()))
      return Status::error("attention: o overlaps an input");
  return Status::ok();
}

Status attention(const TensorView &q, const TensorView &k, const TensorView &v,
                 const TensorView *mask, const TensorView &o,
                 const AttentionOptions &options) {
  if (Status s = checkAttention(q, k, v, mask, o, options); !s)
    return s;
  const AttentionShape &n = options.shape;
  const AttentionOptions &a = options;
  // One (batch, head) problem per item: its scores row and output row.
  detail::parallelItems(
      n.batch * n.heads, n.queries * n.keys * (n.headDim + n.valueDim),
      [&](int64_t item) {
        const int64_t b = item / n.heads, h = item % n.heads;
        std::vector<float> scores(n.keys), out(n.valueDim);
        for (int64_t i = 0; i < n.queries; ++i) {
          float max = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < n.keys; ++j) {
            float dot = 0;
            for (int64_t d = 0; d < n.headDim; ++d)
              dot += load(q.dtype, q.data, a.q.at(b, h, i, d)) *
                     load(k.dtype, k.data, a.k.at(b, h, j, d));
            float s = a.scale * dot;
            if (mask)
              s += load(mask->dtype, mask->data, a.mask.at(b, h, i, j));
            scores[j] = s;
            max = std::max(max, s);
          }
          // exp(s - max): a row of -inf (all masked) gives NaN, as the
          // softmax of such a row does.
          float sum = 0;
          for (int64_t j = 0; j < n.keys; ++j)
            sum += scores[j] = std::exp(scores[j] - max);
          std::fill(out.begin(), out.end(), 0.f);
          for (int64_t j = 0; j < n.keys; ++j)
            for (int64_t e = 0; e < n.valueDim; ++e)
              out[e] += scores[j] * load(v.dtype, v.data, a.v.at(b, h, j, e));
          for (int64_t e = 0; e < n.valueDim; ++e)
            store(o.dtype, o.data, a.o.at(b, h, i, e), out[e] / sum);
        }
      });
  return Status::ok();
}

Result<AttentionOptions> attentionOptionsOf(const PlanCall &call,
                                            bool hasMask) {
  AttentionOptions options;
  MP_RT_TRY_ASSIGN(shape, intListAttr(call, "shape"));
  if (!AttentionShape::fromList(shape, options.shape))
    return Status::error("attribute 'shape' must have 6 elements (batch, "
                         "heads, queries, keys, head_dim, value_dim)");
  struct Named {
    const char *name;
    AttentionView *view;
  };
  for (Named named : {Named{"q_view", &options.q}, Named{"k_view", &options.k},
                      Named{"v_view", &options.v}, Named{"o_view", &options.o},
                      Named{"mask_view", &options.mask}}) {
    if (named.view == &options.mask && !hasMask)
      continue;
    MP_RT_TRY_ASSIGN(list, intListAttr(call, named.name));
    if (!AttentionView::fromList(list, *named.view))
      return Status::error(std::string("attribute '") + named.name +
                           "' must have 5 elements (offset, then the strides "
                           "of batch, head, row and column)");
  }
  MP_RT_TRY_ASSIGN(scale, floatAttr(call, "scale"));
  options.scale = static_cast<float>(scale);
  return options;
}

} // namespace mp::rt::cpu
