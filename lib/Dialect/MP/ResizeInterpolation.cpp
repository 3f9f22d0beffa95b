//===- ResizeInterpolation.cpp - ONNX Resize as one matrix per axis -------===//
//
// Follows onnx/reference/ops/op_resize.py step by step (double precision,
// as its Python floats): the output coordinate mapped back to the input
// (_interpolate_1d_with_x), the coefficients of the mode
// (_nearest_coeffs, _linear_coeffs(_antialias), _cubic_coeffs(_antialias)),
// the neighbours they weigh (_get_neighbor: the n nearest positions of the
// edge-padded axis, the lower one on ties) and exclude_outside.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/ResizeInterpolation.h"

#include <algorithm>
#include <cmath>

using namespace mp;

namespace {

std::vector<double> nearestCoefficients(double ratio, const std::string &mode,
                                        std::string &error) {
  if (ratio == std::floor(ratio))
    return {0.0, 1.0};
  if (mode == "round_prefer_floor")
    return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
  if (mode == "round_prefer_ceil")
    return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
  if (mode == "floor")
    return {1.0, 0.0};
  if (mode == "ceil")
    return {0.0, 1.0};
  error = "unknown nearest_mode '" + mode + "'";
  return {};
}

std::vector<double> cubicCoefficients(double ratio, double a) {
  const double r1 = ratio + 1, s = 1 - ratio, s1 = s + 1;
  return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
          ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
          ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a};
}

std::vector<double> normalized(std::vector<double> coefficients) {
  double sum = 0.0;
  for (double c : coefficients)
    sum += c;
  for (double &c : coefficients)
    c /= sum;
  return coefficients;
}

/// Antialiased cubic: the kernel stretched by 1 / scale when downsampling.
std::vector<double> cubicAntialiasCoefficients(double ratio, double scale,
                                               double a) {
  scale = std::min(scale, 1.0);
  auto kernel = [&](double x) {
    x = std::fabs(x);
    const double x2 = x * x, x3 = x * x2;
    if (x <= 1)
      return (a + 2) * x3 - (a + 3) * x2 + 1;
    if (x < 2)
      return a * x3 - 5 * a * x2 + 8 * a * x - 4 * a;
    return 0.0;
  };
  const int64_t start = int64_t(std::floor(-2 / scale) + 1);
  const int64_t end = 2 - start;
  std::vector<double> coefficients;
  for (int64_t i = start; i < end; ++i)
    coefficients.push_back(kernel(scale * (double(i) - ratio)));
  return normalized(std::move(coefficients));
}

/// Antialiased linear: a triangle filter of half-width 1 / scale.
std::vector<double> linearAntialiasCoefficients(double ratio, double scale) {
  scale = std::min(scale, 1.0);
  const int64_t start = int64_t(std::floor(-1 / scale) + 1);
  const int64_t footprint = 2 - 2 * start;
  std::vector<double> coefficients;
  for (int64_t i = start; i < start + footprint; ++i)
    coefficients.push_back(
        std::clamp(1 - std::fabs((double(i) - ratio) * scale), 0.0, 1.0));
  return normalized(std::move(coefficients));
}

/// The input coordinate output position `x` maps to.
bool inputCoordinate(const ResizeAxis &axis, const std::string &mode, int64_t x,
                     double &coordinate, std::string &error) {
  const double in = double(axis.in), scale = axis.scale;
  const double outWidth = scale * in;
  if (mode == "align_corners")
    coordinate = outWidth == 1 ? 0.0 : double(x) * (in - 1) / (outWidth - 1);
  else if (mode == "asymmetric")
    coordinate = double(x) / scale;
  else if (mode == "pytorch_half_pixel")
    coordinate = outWidth == 1 ? -0.5 : (double(x) + 0.5) / scale - 0.5;
  else if (mode == "half_pixel")
    coordinate = (double(x) + 0.5) / scale - 0.5;
  else if (mode == "half_pixel_symmetric") {
    const double adjustment = double(axis.out) / outWidth;
    const double offset = in / 2 * (1 - adjustment);
    coordinate = offset + (double(x) + 0.5) / scale - 0.5;
  } else {
    error = mode == "tf_crop_and_resize"
                ? "coordinate_transformation_mode tf_crop_and_resize is not "
                  "a weighted sum of the input (its extrapolation value)"
                : "unknown coordinate_transformation_mode '" + mode + "'";
    return false;
  }
  return true;
}

} // namespace

std::vector<double>
mp::resizeInterpolationMatrix(const ResizeAxis &axis,
                              const ResizeSettings &settings,
                              std::string &error) {
  if (axis.in < 1 || axis.out < 0 || !(axis.scale > 0)) {
    error = "a resized axis needs positive sizes and scale";
    return {};
  }
  if (settings.antialias && settings.mode == "nearest") {
    error = "antialias is not defined for mode nearest";
    return {};
  }
  if (settings.mode != "nearest" && settings.mode != "linear" &&
      settings.mode != "cubic") {
    error = "unknown mode '" + settings.mode + "'";
    return {};
  }
  std::vector<double> matrix(size_t(axis.out * axis.in), 0.0);
  for (int64_t x = 0; x < axis.out; ++x) {
    double coordinate;
    if (!inputCoordinate(axis, settings.coordinateTransformationMode, x,
                         coordinate, error))
      return {};
    const double floorCoordinate = std::floor(coordinate);
    const double ratio =
        coordinate == floorCoordinate ? 1.0 : coordinate - floorCoordinate;
    std::vector<double> coefficients;
    if (settings.mode == "nearest")
      coefficients = nearestCoefficients(ratio, settings.nearestMode, error);
    else if (settings.mode == "linear")
      coefficients = settings.antialias
                         ? linearAntialiasCoefficients(ratio, axis.scale)
                         : std::vector<double>{1 - ratio, ratio};
    else
      coefficients = settings.antialias
                         ? cubicAntialiasCoefficients(ratio, axis.scale,
                                                      settings.cubicCoeffA)
                         : cubicCoefficients(ratio, settings.cubicCoeffA);
    if (coefficients.empty())
      return {};
    // The n positions nearest the coordinate on the axis padded by
    // ceil(n / 2) edge copies each side, the lower one on ties.
    const int64_t n = int64_t(coefficients.size());
    const int64_t pad = (n + 1) / 2;
    // They lie within n + 1 of the coordinate, clamped to the padded axis.
    const int64_t lowest = -pad, highest = axis.in - 1 + pad;
    const int64_t around =
        int64_t(std::clamp(floorCoordinate, double(lowest), double(highest)));
    const int64_t hi = std::min(highest, around + n + 1);
    const int64_t lo =
        std::max(lowest, std::min(around - n - 1, hi - 2 * n - 2));
    std::vector<int64_t> candidates;
    for (int64_t i = lo; i <= hi; ++i)
      candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](int64_t a, int64_t b) {
                       double da = std::fabs(coordinate - double(a));
                       double db = std::fabs(coordinate - double(b));
                       return da < db || (da == db && a < b);
                     });
    if (int64_t(candidates.size()) < n) {
      error = "the axis is too short for the interpolation's neighbours";
      return {};
    }
    candidates.resize(size_t(n));
    std::sort(candidates.begin(), candidates.end());
    if (settings.excludeOutside) {
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        if (candidates[j] < 0 || candidates[j] >= axis.in)
          coefficients[j] = 0.0;
        sum += coefficients[j];
      }
      for (double &c : coefficients)
        c /= sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t source = std::clamp<int64_t>(candidates[j], 0, axis.in - 1);
      matrix[size_t(x * axis.in + source)] += coefficients[j];
    }
  }
  return matrix;
}

bool mp::isIdentityMatrix(const std::vector<double> &matrix, int64_t n) {
  if (int64_t(matrix.size()) != n * n)
    return false;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (matrix[size_t(i * n + j)] != (i == j ? 1.0 : 0.0))
        return false;
  return true;
}
