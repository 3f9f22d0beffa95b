//===- ShapeInferenceElementwise.cpp - elementwise and matrix products ----===//
//
// The result types of the elementwise ops (broadcasting, Where, casts) and
// of the matrix products (MatMul, Gemm, Einsum).
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
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult shape::inferSameAsFirst(ShapeContext &ctx,
                                      SmallVectorImpl<Type> &results) {
  Type type = ctx.getOperandType(0);
  results.push_back(type ? type : UnknownType::get(ctx.getContext()));
  return success();
}

LogicalResult shape::inferSameShapeBool(ShapeContext &ctx,
                                        SmallVectorImpl<Type> &results) {
  results.push_back(
      ctx.makeTensor(ctx.getDims(0), IntegerType::get(ctx.getContext(), 1)));
  return success();
}

static FailureOr<Dims> broadcastOperands(ShapeContext &ctx, unsigned first) {
  Dims dims = ctx.getDims(first);
  for (unsigned i = first + 1; i < ctx.getNumOperands(); ++i) {
    FailureOr<Dims> next = broadcastDims(dims, ctx.getDims(i));
    if (failed(next)) {
      std::string message;
      llvm::raw_string_ostream os(message);
      os << "operand shapes are not broadcastable: ";
      llvm::interleave(
          llvm::seq<unsigned>(first, ctx.getNumOperands()), os,
          [&](unsigned j) { os << ctx.getOperandType(j); }, ", ");
      return ctx.emitError(message);
    }
    dims = *next;
  }
  return dims;
}

LogicalResult shape::inferBroadcast(ShapeContext &ctx,
                                    SmallVectorImpl<Type> &results) {
  if (ctx.getNumOperands() == 0)
    return ctx.emitError("needs at least one input");
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  results.push_back(ctx.makeTensor(*dims, ctx.getElementType(0)));
  return success();
}

LogicalResult shape::inferBroadcastToBool(ShapeContext &ctx,
                                          SmallVectorImpl<Type> &results) {
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  results.push_back(
      ctx.makeTensor(*dims, IntegerType::get(ctx.getContext(), 1)));
  return success();
}

LogicalResult shape::inferWhere(ShapeContext &ctx,
                                SmallVectorImpl<Type> &results) {
  FailureOr<Dims> dims = broadcastOperands(ctx, 0);
  if (failed(dims))
    return failure();
  Type element = ctx.getElementType(1);
  if (!element)
    element = ctx.getElementType(2);
  results.push_back(ctx.makeTensor(*dims, element));
  return success();
}

LogicalResult shape::inferCast(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  int64_t to = ctx.getInt("to", 0);
  Type element = getTypeForOnnxDataType(ctx.getContext(), to);
  if (!element)
    return ctx.emitError("'to' is not a known ONNX data type: " + Twine(to));
  results.push_back(ctx.makeTensor(ctx.getDims(0), element));
  return success();
}

LogicalResult shape::inferCastLike(ShapeContext &ctx,
                                   SmallVectorImpl<Type> &results) {
  results.push_back(ctx.makeTensor(ctx.getDims(0), ctx.getElementType(1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

LogicalResult shape::inferMatMul(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  Dims a = ctx.getDims(0), b = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if (!a || !b) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  if (a->empty() || b->empty())
    return ctx.emitError("operands must not be scalars");
  // 1-D operands are promoted to matrices and the added dim removed after.
  bool aVector = a->size() == 1, bVector = b->size() == 1;
  SmallVector<int64_t, 6> am = *a, bm = *b;
  if (aVector)
    am.insert(am.begin(), 1);
  if (bVector)
    bm.push_back(1);
  int64_t k1 = am.back(), k2 = bm[bm.size() - 2];
  if (dimsConflict(k1, k2))
    return ctx.emitError("contraction dims differ: " + Twine(k1) + " vs " +
                         Twine(k2));
  Dims aBatch = SmallVector<int64_t, 6>(am.begin(), am.end() - 2);
  Dims bBatch = SmallVector<int64_t, 6>(bm.begin(), bm.end() - 2);
  FailureOr<Dims> batch = broadcastDims(aBatch, bBatch);
  if (failed(batch))
    return ctx.emitError("batch dims are not broadcastable");
  SmallVector<int64_t, 6> out = **batch;
  if (!aVector)
    out.push_back(am[am.size() - 2]);
  if (!bVector)
    out.push_back(bm.back());
  results.push_back(ctx.makeTensor(out, element));
  return success();
}

LogicalResult shape::inferGemm(ShapeContext &ctx,
                               SmallVectorImpl<Type> &results) {
  Dims a = ctx.getDims(0), b = ctx.getDims(1);
  Type element = ctx.getElementType(0);
  if ((a && a->size() != 2) || (b && b->size() != 2))
    return ctx.emitError("A and B must be matrices");
  bool transA = ctx.getInt("transA", 0), transB = ctx.getInt("transB", 0);
  int64_t m = a ? (*a)[transA ? 1 : 0] : kDynamic;
  int64_t ka = a ? (*a)[transA ? 0 : 1] : kDynamic;
  int64_t kb = b ? (*b)[transB ? 1 : 0] : kDynamic;
  int64_t n = b ? (*b)[transB ? 0 : 1] : kDynamic;
  if (dimsConflict(ka, kb))
    return ctx.emitError("contraction dims differ: " + Twine(ka) + " vs " +
                         Twine(kb));
  if (!ctx.isAbsent(2)) {
    Dims c = ctx.getDims(2);
    Dims mn = SmallVector<int64_t, 6>{m, n};
    FailureOr<Dims> bc = broadcastDims(mn, c);
    // Unidirectional: C may not grow [M, N] (a dim of 1 in [M, N] included).
    if (failed(bc) || (c && c->size() > 2) ||
        (*bc && (dimsConflict((**bc)[0], m) || dimsConflict((**bc)[1], n))))
      return ctx.emitError("C is not unidirectionally broadcastable to [M, N]");
  }
  results.push_back(ctx.makeTensor(SmallVector<int64_t, 6>{m, n}, element));
  return success();
}

LogicalResult shape::inferEinsum(ShapeContext &ctx,
                                 SmallVectorImpl<Type> &results) {
  StringRef equation = ctx.getString("equation", "");
  Type element = ctx.getElementType(0);
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  size_t arrow = eq.find("->");
  StringRef lhs = StringRef(eq).substr(0, arrow);
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ctx.getNumOperands())
    return ctx.emitError("equation has " + Twine(terms.size()) +
                         " inputs but the op has " +
                         Twine(ctx.getNumOperands()));
  if (eq.find("...") != std::string::npos) {
    results.push_back(ctx.makeTensor(std::nullopt, element));
    return success();
  }
  llvm::DenseMap<char, int64_t> sizes;
  llvm::DenseMap<char, int> counts;
  std::string order;
  for (auto [i, term] : llvm::enumerate(terms)) {
    Dims dims = ctx.getDims(i);
    if (dims && dims->size() != term.size())
      return ctx.emitError("term '" + term + "' does not match operand rank " +
                           Twine(dims->size()));
    for (auto [j, c] : llvm::enumerate(term)) {
      if (!counts.count(c))
        order.push_back(c);
      counts[c]++;
      int64_t d = dims ? (*dims)[j] : kDynamic;
      auto it = sizes.find(c);
      // A label's sizes must agree (1 broadcasts, as in numpy.einsum).
      if (it != sizes.end() && !ShapedType::isDynamic(it->second) &&
          !ShapedType::isDynamic(d) && it->second != 1 && d != 1 &&
          it->second != d)
        return ctx.emitError("label '" + Twine(c) + "' has size " +
                             Twine(it->second) + " and " + Twine(d));
      if (it == sizes.end() || ShapedType::isDynamic(it->second) ||
          it->second == 1)
        sizes[c] = (it != sizes.end() && d == 1) ? it->second : d;
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    // Implicit mode: letters seen once, in alphabetical order.
    for (char c : order)
      if (counts[c] == 1)
        out.push_back(c);
    llvm::sort(out);
  }
  SmallVector<int64_t, 6> dims;
  for (char c : out) {
    if (!sizes.count(c))
      return ctx.emitError("output label '" + Twine(c) +
                           "' does not appear in the inputs");
    dims.push_back(sizes[c]);
  }
  results.push_back(ctx.makeTensor(dims, element));
  return success();
}
