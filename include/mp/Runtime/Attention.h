//===- Attention.h - the geometry of a fused attention call -----*- C++ -*-===//
//
// kernel.attention (culib.attention) computes, for every batch b, head h and
// query i,
//
//   s_j = scale * sum_d Q[b,h,i,d] K[b,h,j,d]  (+ mask[b,h,i,j])
//   O[b,h,i,e] = sum_j softmax_j(s)_j V[b,h,j,e]
//
// in f32, rounding O once at the store. Q, K, V, O and the mask are strided
// views of their buffers: an element offset and a stride per index (b, h,
// row, column), so that the slices, reshapes and transposes exporters write
// around attention (heads split from the hidden dim, [seq, batch, hidden]
// layouts) need no copies. A mask stride of 0 broadcasts it (e.g. one causal
// mask for every batch and head).
//
// Header-only: the culib verifier, the pass that makes the call, the CPU and
// the CUDA backends check a geometry with the same code.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_ATTENTION_H
#define MP_RUNTIME_ATTENTION_H

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mp::rt {

/// Where the elements of one operand are: element [b, h, r, c] is at
/// `offset + b*strides[0] + h*strides[1] + r*strides[2] + c*strides[3]`
/// (elements of the buffer's dtype).
struct AttentionView {
  int64_t offset = 0;
  std::array<int64_t, 4> strides{};

  /// As the plan stores it: [offset, stride b, stride h, stride row,
  /// stride column].
  std::vector<int64_t> toList() const {
    return {offset, strides[0], strides[1], strides[2], strides[3]};
  }
  static bool fromList(const std::vector<int64_t> &list, AttentionView &view) {
    if (list.size() != 5)
      return false;
    view.offset = list[0];
    std::copy(list.begin() + 1, list.end(), view.strides.begin());
    return true;
  }
  /// The element at [b, h, r, c].
  int64_t at(int64_t b, int64_t h, int64_t r, int64_t c) const {
    return offset + b * strides[0] + h * strides[1] + r * strides[2] +
           c * strides[3];
  }
};

/// The sizes of an attention call: `batch` x `heads` problems of `queries`
/// rows attending over `keys` rows, Q and K with `headDim` columns, V and O
/// with `valueDim`.
struct AttentionShape {
  int64_t batch = 0, heads = 0, queries = 0, keys = 0, headDim = 0,
          valueDim = 0;

  /// As the plan stores it: [batch, heads, queries, keys, head dim, value
  /// dim].
  std::vector<int64_t> toList() const {
    return {batch, heads, queries, keys, headDim, valueDim};
  }
  static bool fromList(const std::vector<int64_t> &list,
                       AttentionShape &shape) {
    if (list.size() != 6)
      return false;
    shape = {list[0], list[1], list[2], list[3], list[4], list[5]};
    return true;
  }
  /// The extents of each operand's four indices.
  std::array<int64_t, 4> qExtents() const {
    return {batch, heads, queries, headDim};
  }
  std::array<int64_t, 4> kExtents() const {
    return {batch, heads, keys, headDim};
  }
  std::array<int64_t, 4> vExtents() const {
    return {batch, heads, keys, valueDim};
  }
  std::array<int64_t, 4> oExtents() const {
    return {batch, heads, queries, valueDim};
  }
  std::array<int64_t, 4> maskExtents() const {
    return {batch, heads, queries, keys};
  }
};

/// Whether `view` over `extents` stays inside a buffer of `elements`
/// elements (offset and strides >= 0); `why` says what is wrong otherwise.
inline bool viewFits(const AttentionView &view,
                     const std::array<int64_t, 4> &extents, int64_t elements,
                     const std::string &name, std::string &why) {
  if (view.offset < 0 || std::any_of(
                             view.strides.begin(), view.strides.end(),
                             [](int64_t s) { return s < 0; })) {
    why = name + " view has a negative offset or stride";
    return false;
  }
  // The last element the view reaches (sizes are positive: checked first),
  // with overflow refused: the numbers may come from any plan file.
  int64_t last = view.offset;
  for (size_t i = 0; i < 4; ++i) {
    int64_t step;
    if (__builtin_mul_overflow(extents[i] - 1, view.strides[i], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      why = name + " view overflows";
      return false;
    }
  }
  if (last >= elements) {
    why = name + " view reaches element " + std::to_string(last) +
          " of a buffer of " + std::to_string(elements);
    return false;
  }
  return true;
}

/// Whether no two indices of `view` over `extents` name the same element
/// (an output view must not): sorted by stride, each stride must step over
/// everything the smaller ones reach.
inline bool viewIsInjective(const AttentionView &view,
                            const std::array<int64_t, 4> &extents) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, extent)
  for (size_t i = 0; i < 4; ++i)
    if (extents[i] > 1)
      dims.push_back({view.strides[i], extents[i]});
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0; // the largest offset the smaller strides give
  for (auto [stride, extent] : dims) {
    int64_t step;
    if (stride <= reach || __builtin_mul_overflow(extent - 1, stride, &step) ||
        __builtin_add_overflow(reach, step, &reach))
      return false;
  }
  return true;
}

/// Checks a whole call: positive sizes, every view inside its buffer (sizes
/// in elements; `maskElements` < 0: no mask) and O's view injective.
inline bool checkAttention(const AttentionShape &shape, const AttentionView &q,
                           const AttentionView &k, const AttentionView &v,
                           const AttentionView &o, const AttentionView *mask,
                           int64_t qElements, int64_t kElements,
                           int64_t vElements, int64_t oElements,
                           int64_t maskElements, std::string &why) {
  for (int64_t d : shape.toList())
    if (d <= 0) {
      why = "sizes must be positive";
      return false;
    }
  // The kernels index (batch * heads) problems of queries x keys scores.
  int64_t problems, scores;
  if (__builtin_mul_overflow(shape.batch, shape.heads, &problems) ||
      __builtin_mul_overflow(shape.queries, shape.keys, &scores) ||
      __builtin_mul_overflow(problems, scores, &scores)) {
    why = "sizes overflow";
    return false;
  }
  if (!viewFits(q, shape.qExtents(), qElements, "q", why) ||
      !viewFits(k, shape.kExtents(), kElements, "k", why) ||
      !viewFits(v, shape.vExtents(), vElements, "v", why) ||
      !viewFits(o, shape.oExtents(), oElements, "o", why) ||
      (mask &&
       !viewFits(*mask, shape.maskExtents(), maskElements, "mask", why)))
    return false;
  if (!viewIsInjective(o, shape.oExtents())) {
    why = "o view writes some elements twice";
    return false;
  }
  return true;
}

} // namespace mp::rt

#endif // MP_RUNTIME_ATTENTION_H
