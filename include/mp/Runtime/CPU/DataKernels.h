//===- DataKernels.h - data movement and indexing on the CPU ------*- C++ -*-===//
//
// The CPU backend's data-movement and indexing kernels: the plan calls
// kernel.transpose, copy, broadcast, tile, concat, slice, pad, gather,
// gather_elements, gather_nd, scatter_elements, scatter_nd and resize
// (docs/plan-format.md, "Call reference").
//
// They move elements as bytes, so they work on every dtype (element size 1,
// 2, 4 or 8), except where values are computed: pad's constant (converted
// to the dtype), the scatter reductions (typed arithmetic) and resize's
// linear and cubic modes (f32, f16, bf16 computed in f32; f64 in f64).
//
// Like the kernels of Kernels.h they take dense row-major views, check
// shapes, dtypes, attributes and index values, and return an error Status
// naming the problem instead of touching memory outside the views. Outputs
// must not overlap inputs, except where a kernel says otherwise. Axes may be
// negative (counted from the end).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_DATAKERNELS_H
#define MP_RUNTIME_CPU_DATAKERNELS_H

#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mp::rt::cpu {

//===----------------------------------------------------------------------===//
// Data movement (DataMovement.cpp)
//===----------------------------------------------------------------------===//

/// y = x transposed: y's dim i is x's dim perm[i] (perm is a permutation of
/// 0..rank-1; empty means reversed dims, as ONNX's default). Same dtype.
Status transpose(const TensorView &x, const TensorView &y,
                 const std::vector<int64_t> &perm);
/// transpose's checks without running it; `perm` gets the permutation
/// (permIn, or the reversed dims when it is empty).
Status checkTranspose(const TensorView &x, const TensorView &y,
                      const std::vector<int64_t> &permIn,
                      std::vector<int64_t> &perm);

/// y = x reshaped: the same dtype and number of elements, the bytes copied
/// (y may be x itself).
Status copy(const TensorView &x, const TensorView &y);
/// copy's checks without running it.
Status checkCopy(const TensorView &x, const TensorView &y);

/// y = x broadcast to y's shape (ONNX Expand, numpy rules: x's dims,
/// aligned to the right, are 1 or y's; y's rank >= x's).
Status broadcast(const TensorView &x, const TensorView &y);
/// broadcast's checks without running it.
Status checkBroadcast(const TensorView &x, const TensorView &y);

/// y = x tiled: same rank, y's dim i a whole multiple of x's (the repeats).
Status tile(const TensorView &x, const TensorView &y);
/// tile's checks without running it (shared with the CUDA backend's
/// planning, as the other check* functions below).
Status checkTile(const TensorView &x, const TensorView &y);

/// y = the inputs concatenated along `axis`: the same dtype and rank, equal
/// dims except along axis, where y's is their sum.
Status concat(const std::vector<TensorView> &inputs, const TensorView &y,
              int64_t axis);
/// concat's checks without running it; `axis` normalized.
Status checkConcat(const std::vector<TensorView> &inputs, const TensorView &y,
                   int64_t &axis);

/// y[i...] = x[starts[d] + i_d * steps[d] ...], one start and one step per
/// dim of x; y's shape gives the count along each dim. Steps are non-zero
/// and may be negative; every index read must lie in x (0 <= start < dim
/// where y's dim is > 0, and the last index too).
Status slice(const TensorView &x, const TensorView &y,
             const std::vector<int64_t> &starts,
             const std::vector<int64_t> &steps);
/// slice's checks without running it.
Status checkSlice(const TensorView &x, const TensorView &y,
                  const std::vector<int64_t> &starts,
                  const std::vector<int64_t> &steps);

enum class PadMode { Constant, Reflect, Edge, Wrap };

/// "constant", "reflect", "edge", "wrap" -> PadMode; false if unknown.
bool parsePadMode(const std::string &name, PadMode &mode);

/// ONNX Pad: pads are the begins then the ends of every dim (2 * rank);
/// y's dim = x's + begin + end. Negative pads crop x first; the remaining
/// part of x is then padded: Constant with `value` (converted to the
/// dtype: rounded to nearest even for f16/bf16, truncated for integers,
/// != 0 for bool; an integer dtype that cannot hold it is an error),
/// Reflect (mirrored without repeating the edge), Edge (the edge repeated)
/// or Wrap (periodic), as numpy.pad.
Status pad(const TensorView &x, const TensorView &y, PadMode mode,
           const std::vector<int64_t> &pads, double value = 0.0);
/// What pad does per dim: x's part kept after cropping, [lo, lo + len),
/// the positive pads before it, and the constant as one element of x's
/// dtype (constant mode). The error of pad for anything it refuses.
struct PadGeometry {
  std::vector<int64_t> lo, len, before;
  unsigned char constant[8] = {};
};
Result<PadGeometry> padGeometry(const TensorView &x, const TensorView &y,
                                PadMode mode, const std::vector<int64_t> &pads,
                                double value = 0.0);

//===----------------------------------------------------------------------===//
// Indexing (Indexing.cpp). Indices are i32 or i64; a negative index counts
// from the end of its dim; an index outside [-dim, dim) is an error.
//===----------------------------------------------------------------------===//

/// ONNX Gather: y = data.shape[:axis] + indices.shape + data.shape[axis+1:].
Status gather(const TensorView &data, const TensorView &indices,
              const TensorView &y, int64_t axis);
/// gather's checks of dtypes and shapes (not of the index values);
/// `axis` normalized.
Status checkGather(const TensorView &data, const TensorView &indices,
                   const TensorView &y, int64_t &axis);

/// ONNX GatherElements: y has indices' shape (same rank as data, each dim
/// at most data's except along axis); y[i] = data[i with i_axis =
/// indices[i]].
Status gatherElements(const TensorView &data, const TensorView &indices,
                      const TensorView &y, int64_t axis);
/// gatherElements' checks of shapes and dtypes (the index values are
/// checked when it runs); `axis` normalized on success.
Status checkGatherElements(const TensorView &data, const TensorView &indices,
                           const TensorView &y, int64_t &axis);

/// ONNX GatherND: data [b..., r...], indices [b..., q..., k] with b =
/// batchDims and 1 <= k <= rank(data) - b; y = [b..., q..., data dims from
/// b + k on].
Status gatherND(const TensorView &data, const TensorView &indices,
                const TensorView &y, int64_t batchDims = 0);
/// gatherND's checks of shapes and dtypes.
Status checkGatherND(const TensorView &data, const TensorView &indices,
                     const TensorView &y, int64_t batchDims);

enum class ScatterReduction { None, Add, Mul, Max, Min };

/// "none", "add", "mul", "max", "min" -> ScatterReduction; false if unknown.
bool parseScatterReduction(const std::string &name, ScatterReduction &r);

/// ONNX ScatterElements: y = data, then for every element of updates, in
/// row-major order, y[i with i_axis = indices[i]] = (or combined with, by
/// `reduction`) updates[i]. indices and updates have the same shape, the
/// rank of data. y has data's shape and dtype and may be data itself.
/// Reductions: f16/bf16 computed in f32 (each update rounded); bool: add is
/// or, mul is and.
Status scatterElements(const TensorView &data, const TensorView &indices,
                       const TensorView &updates, const TensorView &y,
                       int64_t axis,
                       ScatterReduction reduction = ScatterReduction::None);
/// scatterElements' checks of shapes and dtypes; `axis` normalized.
Status checkScatterElements(const TensorView &data, const TensorView &indices,
                            const TensorView &updates, const TensorView &y,
                            int64_t &axis);

/// ONNX ScatterND: indices [q..., k] (k <= rank(data)), updates [q...,
/// data dims from k on]; each index tuple selects a slice of y that
/// receives (or is combined with) the matching update slice, in order.
/// y may be data itself.
Status scatterND(const TensorView &data, const TensorView &indices,
                 const TensorView &updates, const TensorView &y,
                 ScatterReduction reduction = ScatterReduction::None);
/// scatterND's checks of shapes and dtypes.
Status checkScatterND(const TensorView &data, const TensorView &indices,
                      const TensorView &updates, const TensorView &y);

//===----------------------------------------------------------------------===//
// Resize (Resize.cpp)
//===----------------------------------------------------------------------===//

enum class ResizeMode { Nearest, Linear, Cubic };
enum class CoordinateTransform {
  HalfPixel,
  PytorchHalfPixel,
  AlignCorners,
  Asymmetric,
  TfCropAndResize,
  /// Resize-11 only: (x + 0.5) / scale, for nearest sampling.
  TfHalfPixelForNN,
  /// Resize-19: half_pixel about the input's centre, shifted by how much the
  /// integer output length differs from scale * input length.
  HalfPixelSymmetric,
};
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

bool parseResizeMode(const std::string &name, ResizeMode &mode);
bool parseCoordinateTransform(const std::string &name, CoordinateTransform &t);
bool parseNearestMode(const std::string &name, NearestMode &mode);

struct ResizeOptions {
  ResizeMode mode = ResizeMode::Nearest;
  CoordinateTransform coordinateTransform = CoordinateTransform::HalfPixel;
  NearestMode nearestMode = NearestMode::RoundPreferFloor;
  double cubicCoeffA = -0.75;
  bool excludeOutside = false;
  /// tf_crop_and_resize: the value of output points outside the input.
  double extrapolationValue = 0.0;
  /// One per dim (> 0): the model's scales, or output / input size when it
  /// gave sizes. The coordinate transforms use them (as ONNX does).
  std::vector<double> scales;
  /// tf_crop_and_resize only: the starts then the ends of every dim
  /// (2 * rank), normalized coordinates.
  std::vector<double> roi;
};

/// ONNX Resize-13 (the reference implementation's semantics) over every dim:
/// nearest, N-linear or N-cubic interpolation, neighbours clamped to the
/// edge. Where the coordinate transform needs the output length it uses
/// scale * input length, except that a length-1 output dim counts as 1.
/// x and y have the same rank and dtype; linear and cubic need f32, f16,
/// bf16 or f64; nearest works on every dtype.
Status resize(const TensorView &x, const TensorView &y,
              const ResizeOptions &options);
/// resize's checks: shapes, dtypes, options, the coordinate of every output
/// index and the extrapolation value for integer data.
Status checkResize(const TensorView &x, const TensorView &y,
                   const ResizeOptions &options);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_DATAKERNELS_H
