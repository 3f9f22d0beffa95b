//===- ShapeInferenceDataMovement.cpp - reshapes, slices, gathers ---------===//
//
// The result types of the ops that move data or compute shapes: reshape,
// transpose, squeeze, concat, slice, gather, expand, tile, pad, resize and
// the like.
//
//===----------------------------------------------------------------------===//
#include "ShapeInferenceInternal.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mp;
using namespace mp::shape_detail;

//===----------------------------------------------------------------------===//
// Data movement and shapes
//===----------------------------------------------------------------------===//

/// The element count of a static shape; none when a dim is dynamic or the
/// count overflows (a hostile shape operand).
static std::optional<int64_t> numElements(const Dims &dims) {
  if (!dims)
    return std::nullopt;
  int64_t n = 1;
  for (int64_t d : *dims) {
    n = mulDims(n, d);
    if (ShapedType::isDynamic(n))
      return std::nullopt;
  }
  return n;
}

LogicalResult shape::inferReshape(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto shape = ctx.getConstantInts(1);
  if (!shape) {
    Dims out;
    if (auto n = vectorLength(ctx, 1))
      out = SmallVector<int64_t, 6>(*n, kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  bool allowZero = ctx.getInt("allowzero", 0) != 0;
  SmallVector<int64_t, 6> out;
  int inferIndex = -1;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    if (d == -1) {
      if (inferIndex >= 0)
        return ctx.emitError("shape has more than one -1");
      inferIndex = i;
      out.push_back(kDynamic);
    } else if (d == 0 && !allowZero) {
      if (x && i >= x->size())
        return ctx.emitError("shape copies dim " + Twine(i) +
                             " (0) beyond the input's rank");
      out.push_back(x ? (*x)[i] : kDynamic);
    } else if (d < 0) {
      return ctx.emitError("invalid dim " + Twine(d) + " in shape");
    } else {
      out.push_back(d);
    }
  }
  std::optional<int64_t> total = numElements(x);
  if (inferIndex >= 0 && total) {
    int64_t known = 1;
    bool allKnown = true;
    for (auto [i, d] : llvm::enumerate(out))
      if (static_cast<int>(i) != inferIndex) {
        known = mulDims(known, d);
        if (ShapedType::isDynamic(known))
          allKnown = false;
      }
    if (allKnown && known != 0) {
      if (*total % known != 0)
        return ctx.emitError("cannot reshape " + Twine(*total) +
                             " elements into the requested shape");
      out[inferIndex] = *total / known;
    }
  } else if (inferIndex < 0 && total) {
    if (auto n = numElements(Dims(out)); n && *n != *total)
      return ctx.emitError("cannot reshape " + Twine(*total) +
                           " elements into " + Twine(*n));
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferTranspose(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto perm = ctx.getInts("perm");
  if (!x) {
    Dims out;
    if (perm)
      out = SmallVector<int64_t, 6>(perm->size(), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size();
  SmallVector<int64_t> p;
  if (perm) {
    p = *perm;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      p.push_back(i);
  }
  if (static_cast<int64_t>(p.size()) != rank)
    return ctx.emitError("perm has " + Twine(p.size()) + " values for rank " +
                         Twine(rank));
  llvm::SmallBitVector seen(rank);
  SmallVector<int64_t, 6> out;
  for (int64_t axis : p) {
    if (axis < 0 || axis >= rank || seen.test(axis))
      return ctx.emitError("perm is not a permutation of 0.." +
                           Twine(rank - 1));
    seen.set(axis);
    out.push_back((*x)[axis]);
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferFlatten(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  if (!x) {
    results.push_back(
        ctx.makeTensor(SmallVector<int64_t, 6>{kDynamic, kDynamic}, element));
    return success();
  }
  int64_t rank = x->size();
  int64_t axis = ctx.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.emitError("axis " + Twine(axis) + " is out of range for rank " +
                         Twine(rank));
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) = mulDims(i < axis ? outer : inner, (*x)[i]);
  results.push_back(
      ctx.makeTensor(SmallVector<int64_t, 6>{outer, inner}, element));
  return success();
}

LogicalResult shape::inferSqueeze(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  std::optional<SmallVector<int64_t>> axes;
  if (!ctx.isAbsent(1)) {
    axes = ctx.getConstantInts(1);
    if (!axes) {
      Dims out;
      if (auto n = vectorLength(ctx, 1); n && x) {
        // Unsigned arithmetic: more axes than dims would wrap around.
        if (*n > static_cast<int64_t>(x->size()))
          return ctx.emitError("axes has " + Twine(*n) + " values for rank " +
                               Twine(x->size()));
        out = SmallVector<int64_t, 6>(x->size() - *n, kDynamic);
      }
      results.push_back(ctx.makeTensor(out, element));
      return success();
    }
  }
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  int64_t rank = x->size();
  llvm::SmallBitVector drop(rank);
  if (axes) {
    for (int64_t axis : *axes) {
      FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
      if (failed(a))
        return failure();
      if (!ShapedType::isDynamic((*x)[*a]) && (*x)[*a] != 1)
        return ctx.emitError("cannot squeeze dim " + Twine(*a) + " of size " +
                             Twine((*x)[*a]));
      drop.set(*a);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      if (ShapedType::isDynamic((*x)[i])) {
        results.push_back(ctx.makeTensor(std::nullopt, element));
        return success();
      }
      if ((*x)[i] == 1)
        drop.set(i);
    }
  }
  SmallVector<int64_t, 6> out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop.test(i))
      out.push_back((*x)[i]);
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferUnsqueeze(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto axes = ctx.getConstantInts(1);
  if (!x || !axes) {
    Dims out;
    if (auto n = vectorLength(ctx, 1); n && x)
      out = SmallVector<int64_t, 6>(x->size() + *n, kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  int64_t rank = x->size() + axes->size();
  llvm::SmallBitVector inserted(rank);
  for (int64_t axis : *axes) {
    FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
    if (failed(a))
      return failure();
    if (inserted.test(*a))
      return ctx.emitError("axes contain " + Twine(*a) + " twice");
    inserted.set(*a);
  }
  SmallVector<int64_t, 6> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted.test(i) ? 1 : (*x)[next++]);
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferConcat(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  if (ctx.getNumOperands() == 0)
    return ctx.emitError("needs at least one input");
  Type element;
  Dims out;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    if (!element)
      element = ctx.getElementType(i);
    else if (ctx.getElementType(i) && ctx.getElementType(i) != element)
      return ctx.emitError("inputs have different element types");
  }
  int64_t rank = -1;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i)
    if (Dims d = ctx.getDims(i)) {
      if (rank >= 0 && static_cast<int64_t>(d->size()) != rank)
        return ctx.emitError("inputs have different ranks");
      rank = d->size();
    }
  if (rank < 0) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  FailureOr<int64_t> axis = normalizeAxis(ctx, ctx.getInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> dims(rank, kDynamic);
  int64_t total = 0;
  bool totalKnown = true;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    Dims d = ctx.getDims(i);
    if (!d) {
      totalKnown = false;
      continue;
    }
    for (int64_t j = 0; j < rank; ++j) {
      if (j == *axis)
        continue;
      if (dimsConflict(dims[j], (*d)[j]))
        return ctx.emitError("inputs differ in dim " + Twine(j) +
                             " outside the concatenation axis");
      if (ShapedType::isDynamic(dims[j]))
        dims[j] = (*d)[j];
    }
    if (ShapedType::isDynamic((*d)[*axis]))
      totalKnown = false;
    else
      total += (*d)[*axis];
  }
  dims[*axis] = totalKnown ? total : kDynamic;
  results.push_back(ctx.makeTensor(dims, element));
  return success();
}

LogicalResult shape::inferSlice(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  int64_t rank = x->size();
  auto starts = ctx.getConstantInts(1), ends = ctx.getConstantInts(2);
  std::optional<SmallVector<int64_t>> axes, steps;
  bool axesKnown = ctx.isAbsent(3) || (axes = ctx.getConstantInts(3));
  bool stepsKnown = ctx.isAbsent(4) || (steps = ctx.getConstantInts(4));
  SmallVector<int64_t, 6> out = *x;
  if (!axesKnown) {
    // Any axis may be sliced.
    results.push_back(
        ctx.makeTensor(SmallVector<int64_t, 6>(rank, kDynamic), element));
    return success();
  }
  size_t count = starts ? starts->size()
                 : ends ? ends->size()
                 : axes ? axes->size()
                        : vectorLength(ctx, 1).value_or(rank);
  if ((starts && ends && starts->size() != ends->size()) ||
      (axes && axes->size() != count) || (steps && steps->size() != count))
    return ctx.emitError("starts, ends, axes and steps differ in length");
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
    FailureOr<int64_t> a = normalizeAxis(ctx, axis, rank);
    if (failed(a))
      return failure();
    int64_t dim = (*x)[*a];
    if (!starts || !ends || !stepsKnown || ShapedType::isDynamic(dim)) {
      out[*a] = kDynamic;
      continue;
    }
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0)
      return ctx.emitError("steps must not be 0");
    int64_t start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      out[*a] = end > start ? llvm::divideCeil(end - start, step) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      out[*a] = start > end ? llvm::divideCeil(start - end, -step) : 0;
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGather(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), indices = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (!x || !indices) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  if (x->empty())
    return ctx.emitError("data must have rank >= 1");
  FailureOr<int64_t> axis =
      normalizeAxis(ctx, ctx.getInt("axis", 0), x->size());
  if (failed(axis))
    return failure();
  SmallVector<int64_t, 6> out(x->begin(), x->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(x->begin() + *axis + 1, x->end());
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGatherElements(ShapeContext &ctx,
                                         SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0), indices = ctx.getDims(1);
  if (x && indices && x->size() != indices->size())
    return ctx.emitError("data and indices must have the same rank");
  if (x)
    if (failed(normalizeAxis(ctx, ctx.getInt("axis", 0), x->size())))
      return failure();
  results.push_back(ctx.makeTensor(indices, ctx.getElementType(0)));
  return success();
}

/// ONNX GatherND: indices [..., k] pick slices of data after batch_dims:
/// the result is indices.shape[:-1] + data.shape[batch_dims + k:].
LogicalResult shape::inferGatherND(ShapeContext &ctx,
                                   SmallVectorImpl<Type> &results) {
  Dims data = ctx.getDims(0), indices = ctx.getDims(1);
  int64_t batchDims = ctx.getInt("batch_dims", 0);
  if (!data || !indices || indices->empty() ||
      ShapedType::isDynamic(indices->back())) {
    results.push_back(ctx.makeTensor(std::nullopt, ctx.getElementType(0)));
    return success();
  }
  int64_t k = indices->back();
  if (batchDims < 0 || batchDims + k > static_cast<int64_t>(data->size()) ||
      batchDims >= static_cast<int64_t>(indices->size()))
    return ctx.emitError("indices' last dim plus batch_dims exceeds the rank "
                         "of data");
  SmallVector<int64_t, 6> out(indices->begin(), indices->end() - 1);
  out.append(data->begin() + batchDims + k, data->end());
  results.push_back(ctx.makeTensor(out, ctx.getElementType(0)));
  return success();
}

LogicalResult shape::inferShape(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  if (!x) {
    results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{kDynamic}, i64));
    return success();
  }
  int64_t rank = x->size();
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  results.push_back(ctx.makeTensor(
      SmallVector<int64_t, 6>{std::max<int64_t>(end - start, 0)}, i64));
  return success();
}

LogicalResult shape::inferSize(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{},
                                   IntegerType::get(ctx.getContext(), 64)));
  return success();
}

LogicalResult shape::inferExpand(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto shape = ctx.getConstantInts(1);
  if (!shape) {
    Dims out;
    if (auto n = vectorLength(ctx, 1); n && x)
      out = SmallVector<int64_t, 6>(std::max<int64_t>(*n, x->size()), kDynamic);
    results.push_back(ctx.makeTensor(out, element));
    return success();
  }
  for (int64_t d : *shape)
    if (d < 0)
      return ctx.emitError("shape must not have negative dims");
  FailureOr<Dims> out =
      broadcastDims(x, SmallVector<int64_t, 6>(shape->begin(), shape->end()));
  if (failed(out))
    return ctx.emitError("input is not broadcastable to the requested shape");
  results.push_back(ctx.makeTensor(*out, element));
  return success();
}

LogicalResult shape::inferTile(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  auto repeats = ctx.getConstantInts(1);
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  SmallVector<int64_t, 6> out(x->size(), kDynamic);
  if (repeats) {
    if (repeats->size() != x->size())
      return ctx.emitError("repeats has " + Twine(repeats->size()) +
                           " values for rank " + Twine(x->size()));
    for (size_t i = 0; i < x->size(); ++i) {
      if ((*repeats)[i] < 0)
        return ctx.emitError("repeats must not be negative");
      out[i] = mulDims((*x)[i], (*repeats)[i]);
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

/// CenterCropPad: `shape`'s sizes on `axes`, the input's elsewhere; the
/// axes' dims unknown while `shape` is not a constant.
LogicalResult shape::inferCenterCropPad(ShapeContext &ctx,
                                        SmallVectorImpl<Type> &results) {
  Dims in = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  if (!in) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  const int64_t rank = int64_t(in->size());
  SmallVector<int64_t> axes;
  if (auto given = ctx.getInts("axes")) {
    for (int64_t axis : *given) {
      if (axis < -rank || axis >= rank)
        return ctx.emitError("axis " + Twine(axis) + " is out of range");
      axes.push_back(axis < 0 ? axis + rank : axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  Dims out = *in;
  std::optional<SmallVector<int64_t>> sizes = ctx.getConstantInts(1);
  if (sizes && sizes->size() != axes.size())
    return ctx.emitError("shape has " + Twine(sizes->size()) + " sizes for " +
                         Twine(axes.size()) + " axes");
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (sizes && (*sizes)[i] < 0)
      return ctx.emitError("shape's sizes must not be negative");
    (*out)[axis] = sizes ? (*sizes)[i] : ShapedType::kDynamic;
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferPad(ShapeContext &ctx,
                              SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  StringRef mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return ctx.emitError("unknown mode '" + mode + "'");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  SmallVector<int64_t, 6> out(x->size(), kDynamic);
  if (auto pads = ctx.getConstantInts(1)) {
    size_t rank = x->size();
    if (pads->size() != 2 * rank)
      return ctx.emitError("pads has " + Twine(pads->size()) +
                           " values for rank " + Twine(rank));
    for (size_t i = 0; i < rank; ++i) {
      if (ShapedType::isDynamic((*x)[i]))
        continue;
      out[i] = (*x)[i] + (*pads)[i] + (*pads)[i + rank];
      if (out[i] < 0)
        return ctx.emitError("pads remove more than the " + Twine((*x)[i]) +
                             " elements of dim " + Twine(i));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferResize(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  StringRef mode = ctx.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.emitError("unknown mode '" + mode + "'");
  if (!x) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  size_t rank = x->size();
  SmallVector<int64_t, 6> out(rank, kDynamic);
  if (auto sizes = ctx.getConstantInts(3); sizes && !sizes->empty()) {
    if (sizes->size() != rank)
      return ctx.emitError("sizes has " + Twine(sizes->size()) +
                           " values for rank " + Twine(rank));
    for (int64_t d : *sizes)
      if (d < 0)
        return ctx.emitError("sizes must not be negative");
    out.assign(sizes->begin(), sizes->end());
  } else if (auto scales = ctx.getConstantFloats(2);
             scales && !scales->empty()) {
    if (scales->size() != rank)
      return ctx.emitError("scales has " + Twine(scales->size()) +
                           " values for rank " + Twine(rank));
    for (size_t i = 0; i < rank; ++i) {
      if ((*scales)[i] <= 0)
        return ctx.emitError("scales must be positive");
      if (!ShapedType::isDynamic((*x)[i]))
        out[i] = static_cast<int64_t>(std::floor((*x)[i] * (*scales)[i]));
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

static LogicalResult inferBlockRearrange(ShapeContext &ctx,
                                         SmallVectorImpl<Type> &results,
                                         bool toSpace) {
  Dims x = ctx.getDims(0);
  Type element = ctx.getElementType(0);
  int64_t block = ctx.getInt("blocksize", 0);
  if (block <= 0)
    return ctx.emitError("blocksize must be positive");
  if (block > (int64_t(1) << 20))
    return ctx.emitError("blocksize " + Twine(block) + " is too large");
  if (x && x->size() != 4)
    return ctx.emitError("input must have rank 4");
  SmallVector<int64_t, 6> out(4, kDynamic);
  if (x) {
    auto [n, c, h, w] = std::make_tuple((*x)[0], (*x)[1], (*x)[2], (*x)[3]);
    out[0] = n;
    if (toSpace) {
      if (!ShapedType::isDynamic(c) && c % (block * block) != 0)
        return ctx.emitError("channels must be divisible by blocksize^2");
      out[1] = ShapedType::isDynamic(c) ? kDynamic : c / (block * block);
      out[2] = mulDims(h, block);
      out[3] = mulDims(w, block);
    } else {
      if ((!ShapedType::isDynamic(h) && h % block) ||
          (!ShapedType::isDynamic(w) && w % block))
        return ctx.emitError("height and width must be divisible by blocksize");
      out[1] = mulDims(c, block * block);
      out[2] = ShapedType::isDynamic(h) ? kDynamic : h / block;
      out[3] = ShapedType::isDynamic(w) ? kDynamic : w / block;
    }
  }
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferDepthToSpace(ShapeContext &ctx,
                                       SmallVectorImpl<Type> &results) {
  return inferBlockRearrange(ctx, results, /*toSpace=*/true);
}

LogicalResult shape::inferSpaceToDepth(ShapeContext &ctx,
                                       SmallVectorImpl<Type> &results) {
  return inferBlockRearrange(ctx, results, /*toSpace=*/false);
}

LogicalResult shape::inferDropout(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  results.push_back(ctx.getOperandType(0));
  results.push_back(
      ctx.makeTensor(ctx.getDims(0), IntegerType::get(ctx.getContext(), 1)));
  return success();
}

LogicalResult shape::inferTopK(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  Type i64 = IntegerType::get(ctx.getContext(), 64);
  if (x) {
    FailureOr<int64_t> axis =
        normalizeAxis(ctx, ctx.getInt("axis", -1), x->size());
    if (failed(axis))
      return failure();
    auto k = ctx.getConstantInts(1);
    if (k && k->size() == 1) {
      if ((*k)[0] < 0)
        return ctx.emitError("K must not be negative");
      if (!ShapedType::isDynamic((*x)[*axis]) && (*k)[0] > (*x)[*axis])
        return ctx.emitError("K " + Twine((*k)[0]) + " exceeds the axis size " +
                             Twine((*x)[*axis]));
    }
    (*x)[*axis] = (k && k->size() == 1) ? (*k)[0] : kDynamic;
  }
  results.push_back(ctx.makeTensor(x, ctx.getElementType(0)));
  results.push_back(ctx.makeTensor(x, i64));
  return success();
}

LogicalResult shape::inferNonZero(ShapeContext &ctx,
                                  SmallVectorImpl<Type> &results) {
  Dims x = ctx.getDims(0);
  results.push_back(ctx.makeTensor(
      SmallVector<int64_t, 6>{x ? static_cast<int64_t>(x->size()) : kDynamic,
                              kDynamic},
      IntegerType::get(ctx.getContext(), 64)));
  return success();
}
