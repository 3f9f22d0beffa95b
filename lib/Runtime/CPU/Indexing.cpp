//===- Indexing.cpp - gather and scatter kernels --------------------------===//
//
// Index tensors (i32 or i64) are read and checked first: every index is
// normalized (a negative one counts from the end) into element offsets, and
// an index out of range is reported before anything is written. The data
// is then moved with memcpy of contiguous slices where there are any, or
// element by element with the element's unsigned integer type.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/DataKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace mp::rt::cpu {

using detail::checkView;
using detail::fail;
using detail::shapeStr;
using detail::stridesOf;
using detail::withElementType;

namespace {

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i)
    n *= s[i];
  return n;
}

Status checkIndices(std::string_view op, const TensorView &indices) {
  if (Status s = checkView(op, "indices", indices); !s)
    return s;
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return fail(op, "indices have dtype " +
                        std::string(dtypeName(indices.dtype)) +
                        "; expected i32 or i64");
  return Status::ok();
}

/// Index i of an i32 or i64 tensor.
inline int64_t indexAt(const TensorView &indices, int64_t i) {
  return indices.dtype == DType::I32 ? indices.as<const int32_t>()[i]
                                     : indices.as<const int64_t>()[i];
}

/// v normalized into [0, dim), or an error naming it.
Status normalizeIndex(std::string_view op, int64_t v, int64_t dim,
                      int64_t position, size_t dataDim, int64_t &out) {
  if (v < -dim || v >= dim)
    return fail(op, "index " + std::to_string(v) + " (indices element " +
                        std::to_string(position) +
                        ") is out of range for dim " + std::to_string(dataDim) +
                        " of size " + std::to_string(dim));
  out = v < 0 ? v + dim : v;
  return Status::ok();
}

Status normalizeAxis(std::string_view op, int64_t axis, size_t rank,
                     size_t &out) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return fail(op, "axis " + std::to_string(axis) +
                        " is out of range for data of rank " +
                        std::to_string(rank));
  out = static_cast<size_t>(axis < 0 ? axis + r : axis);
  return Status::ok();
}

std::string dtypeStr(DType t) { return std::string(dtypeName(t)); }

/// The shapes of GatherElements / ScatterElements: indices have data's
/// rank and are no larger than data but along axis.
Status checkElementShapes(std::string_view op, const TensorView &data,
                          const TensorView &indices, size_t axis) {
  const size_t r = data.shape.size();
  if (indices.shape.size() != r)
    return fail(op, "indices " + shapeStr(indices.shape) +
                        " must have the rank of data " +
                        shapeStr(data.shape));
  for (size_t d = 0; d < r; ++d)
    if (d != axis && indices.shape[d] > data.shape[d])
      return fail(op, "indices " + shapeStr(indices.shape) +
                          " are larger than data " + shapeStr(data.shape) +
                          " in dim " + std::to_string(d));
  return Status::ok();
}

/// The views of every gather (data, indices, y) and that y has data's dtype.
Status checkGatherViews(std::string_view op, const TensorView &data,
                        const TensorView &indices, const TensorView &y) {
  if (Status s = checkView(op, "data", data); !s)
    return s;
  if (Status s = checkIndices(op, indices); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (data.dtype != y.dtype)
    return fail(op, "data has dtype " + dtypeStr(data.dtype) + " but y has " +
                        dtypeStr(y.dtype));
  return Status::ok();
}

/// What GatherElements and ScatterElements check alike once their views are
/// valid: data has rank >= 1, `other` (y or updates, named `otherName`) has
/// the shape of indices, the axis is in range (normalized in place) and the
/// shapes fit (checkElementShapes).
Status checkElementsOperands(std::string_view op, const TensorView &data,
                             const TensorView &indices, const char *otherName,
                             const TensorView &other, int64_t &axisIn) {
  if (data.shape.empty())
    return fail(op, "data must have rank >= 1");
  if (other.shape != indices.shape)
    return fail(op, std::string(otherName) + " " + shapeStr(other.shape) +
                        " must have the shape of indices " +
                        shapeStr(indices.shape));
  size_t axis;
  if (Status s = normalizeAxis(op, axisIn, data.shape.size(), axis); !s)
    return s;
  axisIn = static_cast<int64_t>(axis);
  return checkElementShapes(op, data, indices, axis);
}

/// The data offsets (in elements) that GatherElements / ScatterElements
/// address: for each element i of indices (row-major), i's coordinates in
/// data with the axis coordinate replaced by indices[i].
Status elementOffsets(std::string_view op, const TensorView &data,
                      const TensorView &indices, size_t axis,
                      std::vector<int64_t> &offsets) {
  if (Status s = checkElementShapes(op, data, indices, axis); !s)
    return s;
  const size_t r = data.shape.size();
  const int64_t n = indices.numElements();
  offsets.resize(static_cast<size_t>(n));
  if (n == 0)
    return Status::ok();
  const std::vector<int64_t> stride = stridesOf(data.shape);
  const int64_t axisDim = data.shape[axis];
  std::vector<int64_t> counter(r, 0);
  int64_t base = 0; // offset of the coordinates without the axis
  for (int64_t i = 0; i < n; ++i) {
    int64_t idx;
    if (Status s = normalizeIndex(op, indexAt(indices, i), axisDim, i, axis,
                                  idx);
        !s)
      return s;
    offsets[i] = base + idx * stride[axis];
    for (size_t d = r; d-- > 0;) {
      if (++counter[d] < indices.shape[d]) {
        if (d != axis)
          base += stride[d];
        break;
      }
      if (d != axis)
        base -= stride[d] * (indices.shape[d] - 1);
      counter[d] = 0;
    }
  }
  return Status::ok();
}

/// The offsets of the data slices that the index tuples of GatherND /
/// ScatterND address: indices [b..., q..., k] over data [b..., ...] (b =
/// batchDims); one offset per tuple, batch included.
Status tupleOffsets(std::string_view op, const TensorView &data,
                    const TensorView &indices, size_t batchDims,
                    std::vector<int64_t> &offsets) {
  const size_t r = data.shape.size(), q = indices.shape.size();
  const int64_t k = indices.shape[q - 1];
  const std::vector<int64_t> stride = stridesOf(data.shape);
  const int64_t tuples = product(indices.shape, 0, q - 1);
  const int64_t perBatch = product(indices.shape, batchDims, q - 1);
  const int64_t batchStride = product(data.shape, batchDims, r);
  offsets.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = perBatch ? (t / perBatch) * batchStride : 0;
    for (int64_t j = 0; j < k; ++j) {
      const size_t dim = batchDims + static_cast<size_t>(j);
      int64_t idx;
      if (Status s = normalizeIndex(op, indexAt(indices, t * k + j),
                                    data.shape[dim], t * k + j, dim, idx);
          !s)
        return s;
      off += idx * stride[dim];
    }
    offsets[t] = off;
  }
  return Status::ok();
}

/// Copies `sliceLen` elements from data at each offset to consecutive
/// slices of y.
void gatherSlices(const TensorView &data, const std::vector<int64_t> &offsets,
                  int64_t sliceLen, const TensorView &y) {
  const size_t es = byteSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(y.data);
  if (sliceLen == 1) {
    withElementType(es, [&](auto t) {
      using T = decltype(t);
      const T *s = reinterpret_cast<const T *>(src);
      T *d = reinterpret_cast<T *>(dst);
      for (size_t i = 0; i < offsets.size(); ++i)
        d[i] = s[offsets[i]];
    });
    return;
  }
  const size_t bytes = static_cast<size_t>(sliceLen) * es;
  for (size_t i = 0; i < offsets.size(); ++i)
    std::memcpy(dst + i * bytes, src + offsets[i] * es, bytes);
}

} // namespace

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

Status checkGather(const TensorView &data, const TensorView &indices,
                   const TensorView &y, int64_t &axisIn) {
  constexpr std::string_view op = "gather";
  if (Status s = checkGatherViews(op, data, indices, y); !s)
    return s;
  if (data.shape.empty())
    return fail(op, "data must have rank >= 1");
  size_t axis;
  if (Status s = normalizeAxis(op, axisIn, data.shape.size(), axis); !s)
    return s;
  Shape expected(data.shape.begin(), data.shape.begin() + axis);
  expected.insert(expected.end(), indices.shape.begin(), indices.shape.end());
  expected.insert(expected.end(), data.shape.begin() + axis + 1,
                  data.shape.end());
  if (y.shape != expected)
    return fail(op, "y " + shapeStr(y.shape) + " should be " +
                        shapeStr(expected) + " for data " +
                        shapeStr(data.shape) + ", indices " +
                        shapeStr(indices.shape) + ", axis " +
                        std::to_string(axis));
  axisIn = static_cast<int64_t>(axis);
  return Status::ok();
}

Status gather(const TensorView &data, const TensorView &indices,
              const TensorView &y, int64_t axisIn) {
  constexpr std::string_view op = "gather";
  if (Status s = checkGather(data, indices, y, axisIn); !s)
    return s;
  const size_t axis = static_cast<size_t>(axisIn);
  const int64_t n = indices.numElements();
  std::vector<int64_t> idx(static_cast<size_t>(n));
  const int64_t axisDim = data.shape[axis];
  for (int64_t i = 0; i < n; ++i)
    if (Status s =
            normalizeIndex(op, indexAt(indices, i), axisDim, i, axis, idx[i]);
        !s)
      return s;
  if (y.numElements() == 0)
    return Status::ok();
  const int64_t outer = product(data.shape, 0, axis);
  const int64_t inner = product(data.shape, axis + 1, data.shape.size());
  const size_t es = byteSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *dst = static_cast<char *>(y.data);
  if (inner == 1) {
    withElementType(es, [&](auto t) {
      using T = decltype(t);
      const T *s = reinterpret_cast<const T *>(src);
      T *d = reinterpret_cast<T *>(dst);
      for (int64_t o = 0; o < outer; ++o, s += axisDim, d += n)
        for (int64_t i = 0; i < n; ++i)
          d[i] = s[idx[i]];
    });
    return Status::ok();
  }
  const size_t row = static_cast<size_t>(inner) * es;
  for (int64_t o = 0; o < outer; ++o) {
    const char *s = src + o * axisDim * row;
    char *d = dst + o * n * row;
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(d + i * row, s + idx[i] * row, row);
  }
  return Status::ok();
}

Status checkGatherElements(const TensorView &data, const TensorView &indices,
                           const TensorView &y, int64_t &axisIn) {
  constexpr std::string_view op = "gather_elements";
  if (Status s = checkGatherViews(op, data, indices, y); !s)
    return s;
  return checkElementsOperands(op, data, indices, "y", y, axisIn);
}

Status gatherElements(const TensorView &data, const TensorView &indices,
                      const TensorView &y, int64_t axisIn) {
  constexpr std::string_view op = "gather_elements";
  if (Status s = checkGatherElements(data, indices, y, axisIn); !s)
    return s;
  const size_t axis = static_cast<size_t>(axisIn);
  std::vector<int64_t> offsets;
  if (Status s = elementOffsets(op, data, indices, axis, offsets); !s)
    return s;
  gatherSlices(data, offsets, 1, y);
  return Status::ok();
}

Status checkGatherND(const TensorView &data, const TensorView &indices,
                     const TensorView &y, int64_t batchDims) {
  constexpr std::string_view op = "gather_nd";
  if (Status s = checkGatherViews(op, data, indices, y); !s)
    return s;
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const int64_t q = static_cast<int64_t>(indices.shape.size());
  if (r < 1 || q < 1)
    return fail(op, "data " + shapeStr(data.shape) + " and indices " +
                        shapeStr(indices.shape) + " must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return fail(op, "batch_dims " + std::to_string(batchDims) +
                        " must be in [0, min(rank(data), rank(indices)))");
  const size_t b = static_cast<size_t>(batchDims);
  for (size_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      return fail(op, "the batch dims of data " + shapeStr(data.shape) +
                          " and indices " + shapeStr(indices.shape) +
                          " differ");
  const int64_t k = indices.shape[q - 1];
  if (k < 1 || k > r - batchDims)
    return fail(op, "the last dim of indices " + shapeStr(indices.shape) +
                        " must be in [1, " + std::to_string(r - batchDims) +
                        "]");
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + b + k,
                  data.shape.end());
  if (y.shape != expected)
    return fail(op, "y " + shapeStr(y.shape) + " should be " +
                        shapeStr(expected));
  return Status::ok();
}

Status gatherND(const TensorView &data, const TensorView &indices,
                const TensorView &y, int64_t batchDims) {
  constexpr std::string_view op = "gather_nd";
  if (Status s = checkGatherND(data, indices, y, batchDims); !s)
    return s;
  const int64_t r = static_cast<int64_t>(data.shape.size());
  const size_t b = static_cast<size_t>(batchDims);
  const int64_t k = indices.shape.back();
  std::vector<int64_t> offsets;
  if (Status s = tupleOffsets(op, data, indices, b, offsets); !s)
    return s;
  if (y.numElements() == 0)
    return Status::ok();
  gatherSlices(data, offsets, product(data.shape, b + k, r), y);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Scatter
//===----------------------------------------------------------------------===//

bool parseScatterReduction(const std::string &name, ScatterReduction &r) {
  static constexpr std::pair<std::string_view, ScatterReduction> kNames[] = {
      {"none", ScatterReduction::None},
      {"add", ScatterReduction::Add},
      {"mul", ScatterReduction::Mul},
      {"max", ScatterReduction::Max},
      {"min", ScatterReduction::Min},
  };
  return detail::parseName(name, kNames, r);
}

namespace {

/// A bool element (one byte, 0 or 1).
struct Bool8 {
  uint8_t v;
};

/// dst = dst (reduction) src for one element type.
template <ScatterReduction R, typename T> inline T combine(T a, T b) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    float r = combine<R>(detail::load(a), detail::load(b));
    return detail::storeAs<T>(r);
  } else if constexpr (std::is_same_v<T, Bool8>) {
    // add and max are or, mul and min are and.
    bool r = (R == ScatterReduction::Add || R == ScatterReduction::Max)
                 ? (a.v || b.v)
                 : (a.v && b.v);
    return Bool8{static_cast<uint8_t>(r)};
  } else if constexpr (std::is_integral_v<T>) {
    // Modular arithmetic in uint64 (no signed overflow).
    if constexpr (R == ScatterReduction::Add)
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else if constexpr (R == ScatterReduction::Mul)
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else if constexpr (R == ScatterReduction::Max)
      return std::max(a, b);
    else
      return std::min(a, b);
  } else { // float, double: NaN propagates through max and min
    if constexpr (R == ScatterReduction::Add)
      return a + b;
    else if constexpr (R == ScatterReduction::Mul)
      return a * b;
    else if (a != a || b != b)
      return a != a ? a : b;
    else if constexpr (R == ScatterReduction::Max)
      return b > a ? b : a;
    else
      return b < a ? b : a;
  }
}

template <ScatterReduction R, typename T>
void combineSlices(T *y, const T *updates, const std::vector<int64_t> &offsets,
                   int64_t sliceLen) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    T *dst = y + offsets[i];
    const T *src = updates + static_cast<int64_t>(i) * sliceLen;
    for (int64_t j = 0; j < sliceLen; ++j)
      dst[j] = combine<R>(dst[j], src[j]);
  }
}

template <typename T>
void combineSlices(ScatterReduction r, void *y, const void *updates,
                   const std::vector<int64_t> &offsets, int64_t sliceLen) {
  T *yt = static_cast<T *>(y);
  const T *ut = static_cast<const T *>(updates);
  switch (r) {
  case ScatterReduction::Add:
    combineSlices<ScatterReduction::Add>(yt, ut, offsets, sliceLen);
    break;
  case ScatterReduction::Mul:
    combineSlices<ScatterReduction::Mul>(yt, ut, offsets, sliceLen);
    break;
  case ScatterReduction::Max:
    combineSlices<ScatterReduction::Max>(yt, ut, offsets, sliceLen);
    break;
  case ScatterReduction::Min:
    combineSlices<ScatterReduction::Min>(yt, ut, offsets, sliceLen);
    break;
  case ScatterReduction::None: break;
  }
}

/// Checks data, updates and y of a scatter and copies data to y (unless y
/// is data).
Status prepareScatter(std::string_view op, const TensorView &data,
                      const TensorView &updates, const TensorView &y) {
  if (Status s = checkView(op, "data", data); !s)
    return s;
  if (Status s = checkView(op, "updates", updates); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (data.dtype != y.dtype || updates.dtype != y.dtype)
    return fail(op, "data (" + dtypeStr(data.dtype) + "), updates (" +
                        dtypeStr(updates.dtype) + ") and y (" +
                        dtypeStr(y.dtype) + ") must have one dtype");
  if (y.shape != data.shape)
    return fail(op, "y " + shapeStr(y.shape) + " must have the shape of data " +
                        shapeStr(data.shape));
  if (y.data != data.data &&
      detail::overlaps(y.data, y.byteCount(), data.data, data.byteCount()))
    return fail(op, "y partly overlaps data");
  return Status::ok();
}

/// y = data; then the update slices (sliceLen elements each, consecutive in
/// updates) written to, or combined with, y at the offsets, in order.
void applyScatter(const TensorView &data, const TensorView &updates,
                  const TensorView &y, const std::vector<int64_t> &offsets,
                  int64_t sliceLen, ScatterReduction reduction) {
  if (y.data != data.data && y.numElements() > 0)
    std::memcpy(y.data, data.data, y.byteCount());
  if (offsets.empty() || sliceLen == 0)
    return;
  if (reduction == ScatterReduction::None) {
    const size_t es = byteSize(y.dtype);
    char *dst = static_cast<char *>(y.data);
    const char *src = static_cast<const char *>(updates.data);
    if (sliceLen == 1) {
      withElementType(es, [&](auto t) {
        using T = decltype(t);
        T *d = reinterpret_cast<T *>(dst);
        const T *s = reinterpret_cast<const T *>(src);
        for (size_t i = 0; i < offsets.size(); ++i)
          d[offsets[i]] = s[i];
      });
      return;
    }
    const size_t bytes = static_cast<size_t>(sliceLen) * es;
    for (size_t i = 0; i < offsets.size(); ++i)
      std::memcpy(dst + offsets[i] * es, src + i * bytes, bytes);
    return;
  }
  void *yd = y.data;
  const void *ud = updates.data;
  switch (y.dtype) {
  case DType::F32: combineSlices<float>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::F64: combineSlices<double>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::F16: combineSlices<Half>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::BF16: combineSlices<BFloat16>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::I8: combineSlices<int8_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::U8: combineSlices<uint8_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::I16: combineSlices<int16_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::U16: combineSlices<uint16_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::I32: combineSlices<int32_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::U32: combineSlices<uint32_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::I64: combineSlices<int64_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::U64: combineSlices<uint64_t>(reduction, yd, ud, offsets, sliceLen); break;
  case DType::Bool: combineSlices<Bool8>(reduction, yd, ud, offsets, sliceLen); break;
  default:
    break; // the narrow types: refused by checkReductionDType
  }
}

/// A scatter that combines (add, mul, max, min) computes in the elements'
/// type: not in the narrow types, which only store and convert.
Status checkReductionDType(std::string_view op, const TensorView &y,
                           ScatterReduction reduction) {
  if (reduction != ScatterReduction::None && isNarrow(y.dtype))
    return fail(op, "a reduction on " + std::string(dtypeName(y.dtype)) +
                        " elements (the narrow types are only stored and "
                        "converted)");
  return Status::ok();
}

} // namespace

Status checkScatterElements(const TensorView &data, const TensorView &indices,
                            const TensorView &updates, const TensorView &y,
                            int64_t &axisIn) {
  constexpr std::string_view op = "scatter_elements";
  if (Status s = prepareScatter(op, data, updates, y); !s)
    return s;
  if (Status s = checkIndices(op, indices); !s)
    return s;
  return checkElementsOperands(op, data, indices, "updates", updates, axisIn);
}

Status scatterElements(const TensorView &data, const TensorView &indices,
                       const TensorView &updates, const TensorView &y,
                       int64_t axisIn, ScatterReduction reduction) {
  constexpr std::string_view op = "scatter_elements";
  if (Status s = checkScatterElements(data, indices, updates, y, axisIn); !s)
    return s;
  if (Status s = checkReductionDType(op, y, reduction); !s)
    return s;
  const size_t axis = static_cast<size_t>(axisIn);
  std::vector<int64_t> offsets;
  if (Status s = elementOffsets(op, data, indices, axis, offsets); !s)
    return s;
  applyScatter(data, updates, y, offsets, 1, reduction);
  return Status::ok();
}

Status checkScatterND(const TensorView &data, const TensorView &indices,
                      const TensorView &updates, const TensorView &y) {
  constexpr std::string_view op = "scatter_nd";
  if (Status s = prepareScatter(op, data, updates, y); !s)
    return s;
  if (Status s = checkIndices(op, indices); !s)
    return s;
  const size_t r = data.shape.size(), q = indices.shape.size();
  if (r < 1 || q < 1)
    return fail(op, "data " + shapeStr(data.shape) + " and indices " +
                        shapeStr(indices.shape) + " must have rank >= 1");
  const int64_t k = indices.shape[q - 1];
  if (k < 1 || k > static_cast<int64_t>(r))
    return fail(op, "the last dim of indices " + shapeStr(indices.shape) +
                        " must be in [1, " + std::to_string(r) + "]");
  Shape expected(indices.shape.begin(), indices.shape.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
  if (updates.shape != expected)
    return fail(op, "updates " + shapeStr(updates.shape) + " should be " +
                        shapeStr(expected) + " for data " +
                        shapeStr(data.shape) + " and indices " +
                        shapeStr(indices.shape));
  return Status::ok();
}

Status scatterND(const TensorView &data, const TensorView &indices,
                 const TensorView &updates, const TensorView &y,
                 ScatterReduction reduction) {
  constexpr std::string_view op = "scatter_nd";
  if (Status s = checkScatterND(data, indices, updates, y); !s)
    return s;
  if (Status s = checkReductionDType(op, y, reduction); !s)
    return s;
  const size_t r = data.shape.size(), q = indices.shape.size();
  const int64_t k = indices.shape[q - 1];
  std::vector<int64_t> offsets;
  if (Status s = tupleOffsets(op, data, indices, 0, offsets); !s)
    return s;
  applyScatter(data, updates, y, offsets, product(data.shape, k, r),
               reduction);
  return Status::ok();
}

} // namespace mp::rt::cpu
