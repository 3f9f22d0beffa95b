//===- ShapeInferenceInternal.h - helpers of the shape rules ----*- C++ -*-===//
//
// What the shape rules of ShapeInference*.cpp share. Not installed: the
// rules themselves are declared in mp/Dialect/MP/ShapeInference.h.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_DIALECT_MP_SHAPEINFERENCEINTERNAL_H
#define MP_LIB_DIALECT_MP_SHAPEINFERENCEINTERNAL_H

#include "mp/Dialect/MP/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>

namespace mp::shape_detail {

inline constexpr int64_t kDynamic = mlir::ShapedType::kDynamic;

/// Normalizes a possibly negative axis; failure when out of [-rank, rank).
mlir::FailureOr<int64_t> normalizeAxis(ShapeContext &ctx, int64_t axis,
                                       int64_t rank,
                                       llvm::StringRef what = "axis");

/// a * b for dims; dynamic when either is, or when the product overflows
/// (hostile attributes must not produce negative dims).
int64_t mulDims(int64_t a, int64_t b);

/// Fails with "<what> must have rank >= <minRank>" when `dims` is ranked and
/// of lower rank.
mlir::LogicalResult requireRank(ShapeContext &ctx, unsigned operand,
                                const Dims &dims, int64_t minRank,
                                llvm::StringRef what);

/// Whether two dims are both static and differ.
bool dimsConflict(int64_t a, int64_t b);

/// The length of a 1-D operand (a shape, axes or pads vector), if known.
std::optional<int64_t> vectorLength(ShapeContext &ctx, unsigned i);

} // namespace mp::shape_detail

#endif // MP_LIB_DIALECT_MP_SHAPEINFERENCEINTERNAL_H
