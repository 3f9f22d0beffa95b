//===- Resize.cpp - ONNX Resize on the CPU --------------------------------===//
//
// Resize is separable: each output coordinate along a dim maps to an input
// coordinate (the coordinate transform), which gives a few input indices
// with weights (nearest: 1, linear: 2, cubic: 4 taps), clamped to the edge as
// ONNX's reference implementation (onnx/reference/ops/op_resize.py) pads its
// data in 'edge' mode. An output element is the sum over every combination
// of its dims' taps of the product of their weights times the input there.
//
// The kernel precomputes the taps of every dim (dropping zero weights, so a
// dim that is not resized costs nothing), then writes y row by row: the taps
// of the outer dims combine into a short list of (offset, weight) shared by a
// whole row, and the inner loop runs over the last dim's taps. Nearest copies
// elements (any dtype) and repeats a row that reads the same input row.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/DataKernels.h"

#include "../ResizeMath.h"
#include "KernelUtil.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace mp::rt::cpu {

using detail::checkView;
using detail::fail;
using detail::shapeStr;

bool parseResizeMode(const std::string &name, ResizeMode &mode) {
  static constexpr std::pair<std::string_view, ResizeMode> kNames[] = {
      {"nearest", ResizeMode::Nearest},
      {"linear", ResizeMode::Linear},
      {"cubic", ResizeMode::Cubic},
  };
  return detail::parseName(name, kNames, mode);
}

bool parseCoordinateTransform(const std::string &name, CoordinateTransform &t) {
  static constexpr std::pair<std::string_view, CoordinateTransform> kNames[] = {
      {"half_pixel", CoordinateTransform::HalfPixel},
      {"pytorch_half_pixel", CoordinateTransform::PytorchHalfPixel},
      {"align_corners", CoordinateTransform::AlignCorners},
      {"asymmetric", CoordinateTransform::Asymmetric},
      {"tf_crop_and_resize", CoordinateTransform::TfCropAndResize},
      {"tf_half_pixel_for_nn", CoordinateTransform::TfHalfPixelForNN},
      {"half_pixel_symmetric", CoordinateTransform::HalfPixelSymmetric},
  };
  return detail::parseName(name, kNames, t);
}

bool parseNearestMode(const std::string &name, NearestMode &mode) {
  static constexpr std::pair<std::string_view, NearestMode> kNames[] = {
      {"round_prefer_floor", NearestMode::RoundPreferFloor},
      {"round_prefer_ceil", NearestMode::RoundPreferCeil},
      {"floor", NearestMode::Floor},
      {"ceil", NearestMode::Ceil},
  };
  return detail::parseName(name, kNames, mode);
}

namespace {

struct Tap {
  int64_t offset; ///< in elements: the clamped input index times the stride
  double weight;
};

/// The taps of one dim: output index o uses taps[begin[o] .. begin[o+1]);
/// outside[o] says that o maps outside the input (tf_crop_and_resize), where
/// y is the extrapolation value.
struct DimTaps {
  std::vector<int64_t> begin;
  std::vector<Tap> taps;
  std::vector<char> outside;
};

Status computeTaps(const ResizeOptions &o, size_t dim, size_t rank,
                   int64_t inLen, int64_t outLen, int64_t stride,
                   DimTaps &dt) {
  const double scale = o.scales[dim];
  const double in = static_cast<double>(inLen);
  // The output length as the coordinate transforms see it (as ONNX's
  // reference: scale * input length).
  const double outScaled = scale * in;
  dt.begin.assign(static_cast<size_t>(outLen) + 1, 0);
  dt.outside.assign(static_cast<size_t>(outLen), 0);
  dt.taps.clear();
  for (int64_t i = 0; i < outLen; ++i) {
    const double xr = static_cast<double>(i);
    double xo = 0;
    switch (o.coordinateTransform) {
    case CoordinateTransform::HalfPixel:
      xo = (xr + 0.5) / scale - 0.5;
      break;
    case CoordinateTransform::PytorchHalfPixel:
      xo = outLen == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
      break;
    case CoordinateTransform::AlignCorners:
      xo = outLen == 1 ? 0.0 : xr * (in - 1) / (outScaled - 1);
      break;
    case CoordinateTransform::Asymmetric:
      xo = xr / scale;
      break;
    case CoordinateTransform::TfHalfPixelForNN:
      xo = (xr + 0.5) / scale;
      break;
    case CoordinateTransform::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(outLen) / outScaled;
      xo = in / 2 * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
      break;
    }
    case CoordinateTransform::TfCropAndResize: {
      const double start = o.roi[dim], end = o.roi[rank + dim];
      xo = outLen == 1 ? (end - start) * (in - 1) / 2
                       : xr * (end - start) * (in - 1) / (outScaled - 1);
      xo += start * (in - 1);
      if (xo < 0 || xo > in - 1) {
        dt.outside[i] = 1;
        dt.begin[i + 1] = static_cast<int64_t>(dt.taps.size());
        continue;
      }
      break;
    }
    }
    if (!std::isfinite(xo))
      return fail("resize", "dim " + std::to_string(dim) +
                                ": output index " + std::to_string(i) +
                                " maps to a non-finite input coordinate");
    // Far outside the input every tap clamps to the edge anyway; bound the
    // coordinate so that the index arithmetic cannot overflow.
    xo = std::min(std::max(xo, -8.0), in + 8.0);
    // The reference prefers the point left of the coordinate: t in (0, 1],
    // taps around `base` (an integer coordinate has t = 1 at base + 1).
    const double fl = std::floor(xo);
    int64_t base = static_cast<int64_t>(fl);
    double t = xo - fl;
    if (t == 0) {
      base -= 1;
      t = 1;
    }
    double w[4];
    int64_t first = base; // the input index of w[0]
    int n = 2;
    switch (o.mode) {
    case ResizeMode::Nearest: {
      bool right = true; // base + 1 rather than base
      if (t == 1)
        right = true;
      else
        switch (o.nearestMode) {
        case NearestMode::RoundPreferFloor: right = t > 0.5; break;
        case NearestMode::RoundPreferCeil: right = t >= 0.5; break;
        case NearestMode::Floor: right = false; break;
        case NearestMode::Ceil: right = true; break;
        }
      w[0] = right ? 0 : 1;
      w[1] = right ? 1 : 0;
      first = base;
      n = 2;
      break;
    }
    case ResizeMode::Linear:
      w[0] = 1 - t;
      w[1] = t;
      first = base;
      n = 2;
      break;
    case ResizeMode::Cubic:
      resize::cubicWeights(t, o.cubicCoeffA, w);
      first = base - 1;
      n = 4;
      break;
    }
    if (o.excludeOutside)
      resize::excludeOutside(first, n, inLen, w);
    for (int k = 0; k < n; ++k) {
      if (w[k] == 0)
        continue;
      const int64_t idx = resize::clampIndex(first + k, inLen);
      dt.taps.push_back({idx * stride, w[k]});
    }
    dt.begin[i + 1] = static_cast<int64_t>(dt.taps.size());
  }
  return Status::ok();
}

/// The (offset, weight) of every combination of the taps of y's outer dims
/// (all but the last) at the output coordinates `counter`; false when one
/// of them lies outside the input (tf_crop_and_resize).
template <typename C>
bool outerCombos(const std::vector<DimTaps> &dims,
                 const std::vector<int64_t> &counter,
                 std::vector<std::pair<int64_t, C>> &combos,
                 std::vector<std::pair<int64_t, C>> &next) {
  combos.assign(1, {0, C(1)});
  for (size_t d = 0; d < counter.size(); ++d) {
    const DimTaps &dt = dims[d];
    const int64_t o = counter[d];
    if (dt.outside[o])
      return false;
    next.clear();
    for (const auto &c : combos)
      for (int64_t k = dt.begin[o]; k < dt.begin[o + 1]; ++k)
        next.push_back({c.first + dt.taps[k].offset,
                        c.second * static_cast<C>(dt.taps[k].weight)});
    combos.swap(next);
  }
  return true;
}

/// Advances the row-major coordinates of y's outer dims.
void nextRow(const Shape &yShape, std::vector<int64_t> &counter) {
  for (size_t d = counter.size(); d-- > 0;) {
    if (++counter[d] < yShape[d])
      return;
    counter[d] = 0;
  }
}

/// Nearest: every output has exactly one tap of weight 1, so y's elements
/// are copies of x's (S is any type of the element's size). A row that reads
/// the same input row as the previous one (upsampling) is a copy of it.
template <typename S>
void resizeNearest(const TensorView &x, const TensorView &y,
                   const std::vector<DimTaps> &dims, S extrapolation) {
  const size_t r = y.shape.size();
  const S *xs = static_cast<const S *>(x.data);
  S *ys = static_cast<S *>(y.data);
  const int64_t rowLen = y.shape[r - 1];
  const int64_t rows = y.numElements() / rowLen;
  const DimTaps &last = dims[r - 1];
  std::vector<int64_t> source(static_cast<size_t>(rowLen));
  for (int64_t j = 0; j < rowLen; ++j)
    source[j] = last.outside[j] ? -1 : last.taps[last.begin[j]].offset;
  std::vector<int64_t> counter(r - 1, 0);
  std::vector<std::pair<int64_t, int64_t>> combos, next;
  int64_t previous = -1; // the input offset of the previous row
  for (int64_t row = 0; row < rows; ++row, nextRow(y.shape, counter)) {
    S *out = ys + row * rowLen;
    if (!outerCombos(dims, counter, combos, next)) {
      std::fill_n(out, rowLen, extrapolation);
      previous = -1;
      continue;
    }
    const int64_t base = combos.front().first;
    if (base == previous) {
      std::memcpy(out, out - rowLen, static_cast<size_t>(rowLen) * sizeof(S));
      continue;
    }
    previous = base;
    const S *src = xs + base;
    for (int64_t j = 0; j < rowLen; ++j)
      out[j] = source[j] < 0 ? extrapolation : src[source[j]];
  }
}

/// Linear and cubic, computing in C and storing as S: the last dim's taps
/// are laid out K per output (at most K are real: zero weights were
/// dropped).
template <typename S, typename C, int K>
void resizeInterpolate(const TensorView &x, const TensorView &y,
                       const std::vector<DimTaps> &dims, S extrapolation) {
  const size_t r = y.shape.size();
  const S *xs = static_cast<const S *>(x.data);
  S *ys = static_cast<S *>(y.data);
  const int64_t rowLen = y.shape[r - 1];
  const int64_t rows = y.numElements() / rowLen;
  const DimTaps &last = dims[r - 1];
  std::vector<int64_t> tapOffset(static_cast<size_t>(rowLen) * K, 0);
  std::vector<C> tapWeight(static_cast<size_t>(rowLen) * K, C(0));
  for (int64_t j = 0; j < rowLen; ++j)
    for (int64_t k = last.begin[j]; k < last.begin[j + 1]; ++k) {
      tapOffset[j * K + (k - last.begin[j])] = last.taps[k].offset;
      tapWeight[j * K + (k - last.begin[j])] =
          static_cast<C>(last.taps[k].weight);
    }
  std::vector<int64_t> counter(r - 1, 0);
  std::vector<std::pair<int64_t, C>> combos, next;
  for (int64_t row = 0; row < rows; ++row, nextRow(y.shape, counter)) {
    S *out = ys + row * rowLen;
    if (!outerCombos(dims, counter, combos, next)) {
      std::fill_n(out, rowLen, extrapolation);
      continue;
    }
    for (int64_t j = 0; j < rowLen; ++j) {
      if (last.outside[j]) {
        out[j] = extrapolation;
        continue;
      }
      const int64_t *off = &tapOffset[j * K];
      const C *w = &tapWeight[j * K];
      // Only the real taps: a padding tap's zero weight times an infinite
      // input would make the output NaN.
      const int taps = static_cast<int>(last.begin[j + 1] - last.begin[j]);
      C acc = 0;
      for (const auto &c : combos) {
        const S *src = xs + c.first;
        C inner = 0;
        for (int k = 0; k < taps; ++k)
          inner += w[k] * detail::load(src[off[k]]);
        acc += c.second * inner;
      }
      if constexpr (std::is_same_v<S, double>)
        out[j] = acc;
      else
        out[j] = detail::storeAs<S>(acc);
    }
  }
}

template <typename S, typename C>
void resizeFloat(ResizeMode mode, const TensorView &x, const TensorView &y,
                 const std::vector<DimTaps> &dims, S extrapolation) {
  if (mode == ResizeMode::Nearest)
    resizeNearest<S>(x, y, dims, extrapolation);
  else if (mode == ResizeMode::Linear)
    resizeInterpolate<S, C, 2>(x, y, dims, extrapolation);
  else
    resizeInterpolate<S, C, 4>(x, y, dims, extrapolation);
}

/// The extrapolation value as an element of integer or bool dtype t (bits
/// in an unsigned integer type U of its size).
template <typename U>
Status integerElement(DType t, double value, U &out) {
  double v = std::trunc(value);
  bool isSigned = t == DType::I8 || t == DType::I16 || t == DType::I32 ||
                  t == DType::I64;
  if (t == DType::Bool) {
    out = value != 0 ? 1 : 0;
    return Status::ok();
  }
  const double limit = std::ldexp(1.0, 8 * static_cast<int>(sizeof(U)) -
                                           (isSigned ? 1 : 0));
  if (!(v >= (isSigned ? -limit : 0.0) && v < limit))
    return fail("resize", "extrapolation_value " + std::to_string(value) +
                              " does not fit dtype " +
                              std::string(dtypeName(t)));
  out = isSigned ? static_cast<U>(static_cast<int64_t>(v))
                 : static_cast<U>(static_cast<uint64_t>(v));
  return Status::ok();
}

} // namespace

namespace {

/// The taps of every dim of y (x's strides), or the error of the first
/// output index that maps to a non-finite coordinate.
Status computeAllTaps(const TensorView &x, const TensorView &y,
                      const ResizeOptions &options,
                      std::vector<DimTaps> &dims) {
  const size_t r = x.shape.size();
  dims.resize(r);
  int64_t stride = 1;
  for (size_t d = r; d-- > 0;) {
    if (Status s =
            computeTaps(options, d, r, x.shape[d], y.shape[d], stride, dims[d]);
        !s)
      return s;
    stride *= x.shape[d];
  }
  return Status::ok();
}

/// The extrapolation value as an element of x's integer or bool dtype.
Status integerExtrapolation(DType t, double value, uint64_t &bits) {
  switch (byteSize(t)) {
  case 1: {
    uint8_t v = 0;
    Status s = integerElement(t, value, v);
    bits = v;
    return s;
  }
  case 2: {
    uint16_t v = 0;
    Status s = integerElement(t, value, v);
    bits = v;
    return s;
  }
  case 4: {
    uint32_t v = 0;
    Status s = integerElement(t, value, v);
    bits = v;
    return s;
  }
  default:
    return integerElement(t, value, bits);
  }
}

} // namespace

Status checkResize(const TensorView &x, const TensorView &y,
                   const ResizeOptions &options) {
  constexpr std::string_view op = "resize";
  if (Status s = checkView(op, "x", x); !s)
    return s;
  if (Status s = checkView(op, "y", y); !s)
    return s;
  if (x.dtype != y.dtype)
    return fail(op, "x has dtype " + std::string(dtypeName(x.dtype)) +
                        " but y has " + std::string(dtypeName(y.dtype)));
  const size_t r = x.shape.size();
  if (y.shape.size() != r)
    return fail(op, "x " + shapeStr(x.shape) + " and y " + shapeStr(y.shape) +
                        " have different ranks");
  if (options.mode != ResizeMode::Nearest && !isFloat(x.dtype))
    return fail(op, "linear and cubic modes need f32, f16, bf16 or f64 data, "
                    "not " +
                        std::string(dtypeName(x.dtype)));
  if (options.scales.size() != r)
    return fail(op, "scales has " + std::to_string(options.scales.size()) +
                        " entries for x of rank " + std::to_string(r));
  for (size_t d = 0; d < r; ++d)
    if (!(options.scales[d] > 0) || !std::isfinite(options.scales[d]))
      return fail(op, "scale " + std::to_string(options.scales[d]) +
                          " of dim " + std::to_string(d) +
                          " is not a positive finite number");
  const bool crop =
      options.coordinateTransform == CoordinateTransform::TfCropAndResize;
  if (crop && options.roi.size() != 2 * r)
    return fail(op, "tf_crop_and_resize needs a roi of " +
                        std::to_string(2 * r) + " values (starts, ends), got " +
                        std::to_string(options.roi.size()));
  for (size_t d = 0; d < r; ++d)
    if (x.shape[d] == 0 && y.shape[d] != 0)
      return fail(op, "x " + shapeStr(x.shape) +
                          " is empty but y " + shapeStr(y.shape) + " is not");
  if (y.numElements() == 0 || r == 0)
    return Status::ok();
  std::vector<DimTaps> dims;
  if (Status s = computeAllTaps(x, y, options, dims); !s)
    return s;
  uint64_t bits = 0;
  if (crop && !isFloat(x.dtype))
    return integerExtrapolation(x.dtype, options.extrapolationValue, bits);
  return Status::ok();
}

Status resize(const TensorView &x, const TensorView &y,
              const ResizeOptions &options) {
  if (Status s = checkResize(x, y, options); !s)
    return s;
  const size_t r = x.shape.size();
  const bool crop =
      options.coordinateTransform == CoordinateTransform::TfCropAndResize;
  if (y.numElements() == 0)
    return Status::ok();
  const size_t es = byteSize(x.dtype);
  if (r == 0) {
    std::memcpy(y.data, x.data, es);
    return Status::ok();
  }
  std::vector<DimTaps> dims;
  if (Status s = computeAllTaps(x, y, options, dims); !s)
    return s;
  const double ev = options.extrapolationValue;
  switch (x.dtype) {
  case DType::F32:
    resizeFloat<float, float>(options.mode, x, y, dims,
                              static_cast<float>(ev));
    return Status::ok();
  case DType::F16:
    resizeFloat<Half, float>(options.mode, x, y, dims, toHalf(ev));
    return Status::ok();
  case DType::BF16:
    resizeFloat<BFloat16, float>(options.mode, x, y, dims, toBFloat16(ev));
    return Status::ok();
  case DType::F64:
    resizeFloat<double, double>(options.mode, x, y, dims, ev);
    return Status::ok();
  default:
    break;
  }
  // Nearest on integers and bool: element copies.
  auto copyAs = [&](auto type) -> Status {
    using U = decltype(type);
    U extrapolation = 0;
    if (crop)
      if (Status s = integerElement(x.dtype, ev, extrapolation); !s)
        return s;
    resizeNearest<U>(x, y, dims, extrapolation);
    return Status::ok();
  };
  switch (es) {
  case 1: return copyAs(uint8_t{});
  case 2: return copyAs(uint16_t{});
  case 4: return copyAs(uint32_t{});
  default: return copyAs(uint64_t{});
  }
}

} // namespace mp::rt::cpu
