//===- ResizeInterpolation.h - ONNX Resize as one matrix per axis --*- C++
//-*-===//
//
// Every ONNX Resize mode (nearest, linear, cubic, with or without
// antialiasing) interpolates one axis at a time: output position x of an
// axis is a weighted sum of input positions of that axis. For static shapes
// the weights of an axis form an [out, in] matrix, computed here as ONNX's
// reference (onnx/reference/ops/op_resize.py) computes them: its coordinate
// transformations, coefficient functions, edge-clamped neighbours and
// exclude_outside. mp-decompose-nodes turns the Resize forms no runtime
// kernel takes (antialias, keep_aspect_ratio_policy) into a product with
// these matrices.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_RESIZEINTERPOLATION_H
#define MP_DIALECT_MP_RESIZEINTERPOLATION_H

#include <cstdint>
#include <string>
#include <vector>

namespace mp {

/// The node's interpolation settings (its attributes, ONNX's defaults).
struct ResizeSettings {
  std::string mode = "nearest";
  std::string coordinateTransformationMode = "half_pixel";
  std::string nearestMode = "round_prefer_floor";
  double cubicCoeffA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
};

/// One axis: `in` and `out` positions, and the scale the coordinates are
/// mapped with (the node's scale, sizes[i] / in, or keep_aspect_ratio's
/// common scale).
struct ResizeAxis {
  int64_t in = 1;
  int64_t out = 1;
  double scale = 1.0;
};

/// The row-major [out, in] weights of `axis`, or an empty vector with
/// `error` set when the settings have no such matrix (tf_crop_and_resize,
/// whose extrapolation value is not a weighted sum; antialiased nearest;
/// unknown modes).
std::vector<double> resizeInterpolationMatrix(const ResizeAxis &axis,
                                              const ResizeSettings &settings,
                                              std::string &error);

/// Whether `matrix` ([n, n]) is the identity.
bool isIdentityMatrix(const std::vector<double> &matrix, int64_t n);

} // namespace mp

#endif // MP_DIALECT_MP_RESIZEINTERPOLATION_H
