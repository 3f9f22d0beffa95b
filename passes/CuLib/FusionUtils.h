//===- FusionUtils.h - buffer questions the culib fusion passes ask -*- C++
//-*-===//
//
// culib calls read and write buffers (destination-passing style). A fusion
// pass may drop an intermediate buffer t only when t is an arena buffer
// (culib.alloc) that one call writes and only the calls being fused read.
// Private to passes/CuLib.
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_CULIB_FUSIONUTILS_H
#define MP_PASSES_CULIB_FUSIONUTILS_H

#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>

namespace mp::culib {

/// The permutations from channels first (NCHW) to channels last (NHWC), and
/// back.
inline constexpr int64_t kToNHWC[] = {0, 2, 3, 1};
inline constexpr int64_t kToNCHW[] = {0, 3, 1, 2};

/// Whether call `op` writes `buffer` (one of its outs).
inline bool writes(mlir::Operation *op, mlir::Value buffer) {
  std::optional<CallBuffers> call = getCallBuffers(op);
  return call && llvm::any_of(call->outs, [&](const NamedBuffer &b) {
           return b.value == buffer;
         });
}

/// The buffer whose bytes `v` are: through culib.views to an alloc, a
/// weight, a state or a function argument.
inline mlir::Value viewRoot(mlir::Value v) {
  while (auto view = v.getDefiningOp<ViewOp>())
    v = view.getSource();
  return v;
}

/// The calls of `body` that write each buffer (a call updating a buffer in
/// place lists it among its outputs), in program order, each counted under
/// key(buffer): the buffer itself, or the one whose bytes it is.
inline llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Operation *>>
callWriters(
    mlir::Block &body, llvm::function_ref<mlir::Value(mlir::Value)> key =
                           [](mlir::Value v) { return v; }) {
  llvm::DenseMap<mlir::Value, llvm::SmallVector<mlir::Operation *>> writers;
  for (mlir::Operation &op : body)
    if (std::optional<CallBuffers> buffers = getCallBuffers(&op))
      for (const NamedBuffer &out : buffers->outs)
        if (out.value)
          writers[key(out.value)].push_back(&op);
  return writers;
}

/// The one call that writes the arena buffer `t` when every other user of t
/// is one of `readers` and comes after that call in its block; null
/// otherwise (t is a weight, an argument or state, has other users, or
/// several writers).
inline mlir::Operation *soleWriter(mlir::Value t,
                                   llvm::ArrayRef<mlir::Operation *> readers) {
  if (!t.getDefiningOp<AllocOp>())
    return nullptr;
  mlir::Operation *writer = nullptr;
  llvm::SmallVector<mlir::Operation *, 4> reading;
  for (mlir::Operation *user : t.getUsers()) {
    if (llvm::is_contained(readers, user)) {
      reading.push_back(user);
      continue;
    }
    if (writer || !writes(user, t))
      return nullptr;
    writer = user;
  }
  if (!writer)
    return nullptr;
  for (mlir::Operation *reader : reading)
    if (reader->getBlock() != writer->getBlock() ||
        !writer->isBeforeInBlock(reader))
      return nullptr;
  return writer;
}

/// Whether a call strictly between `from` and `to` (same block), other than
/// those in `except`, writes `buffer`: work moved from `from` to `to` would
/// then read another value.
inline bool writtenBetween(mlir::Value buffer, mlir::Operation *from,
                           mlir::Operation *to,
                           llvm::ArrayRef<mlir::Operation *> except = {}) {
  for (mlir::Operation *op = from->getNextNode(); op && op != to;
       op = op->getNextNode())
    if (!llvm::is_contained(except, op) && writes(op, buffer))
      return true;
  return false;
}

/// Whether one of `writers` (calls of the block of `from` and `to`, in any
/// order) comes strictly between `from` and `to`, whichever is first.
inline bool anyBetween(llvm::ArrayRef<mlir::Operation *> writers,
                       mlir::Operation *from, mlir::Operation *to) {
  if (to->isBeforeInBlock(from))
    std::swap(from, to);
  return llvm::any_of(writers, [&](mlir::Operation *w) {
    return from->isBeforeInBlock(w) && w->isBeforeInBlock(to);
  });
}

/// The value of a one-element float weight (a constant operand), if `v` is
/// one.
inline std::optional<llvm::APFloat> scalarFloatWeight(mlir::Value v) {
  auto weight = v.getDefiningOp<WeightOp>();
  auto dense = weight
                   ? llvm::dyn_cast<mlir::DenseElementsAttr>(weight.getValue())
                   : nullptr;
  if (!dense || dense.getNumElements() != 1 ||
      !llvm::isa<mlir::FloatType>(dense.getElementType()))
    return std::nullopt;
  return *dense.value_begin<llvm::APFloat>();
}

/// The value of a one-element float weight, as double, if `v` is one.
inline std::optional<double> scalarWeightValue(mlir::Value v) {
  std::optional<llvm::APFloat> value = scalarFloatWeight(v);
  return value ? std::optional<double>(value->convertToDouble()) : std::nullopt;
}

/// What a multiplication by `value` (or, with `divide`, a division by it)
/// multiplies by, when a fused call can apply it exactly as a factor: the
/// value itself, or its inverse when that is exact (a power of two).
inline std::optional<double> exactFactor(double value, bool divide) {
  if (!divide)
    return value;
  int exponent = 0;
  if (value == 0 || std::frexp(value, &exponent) != 0.5)
    return std::nullopt; // 1 / value would be rounded
  return 1.0 / value;
}

/// The elementwise call `fn` (without alpha or beta) that alone writes `t`
/// for `readers`, if any.
inline ElementwiseOp
elementwiseWriting(mlir::Value t, rt::cpu::ElementwiseFn fn,
                   llvm::ArrayRef<mlir::Operation *> readers) {
  auto op = llvm::dyn_cast_or_null<ElementwiseOp>(soleWriter(t, readers));
  return op && op.getFn() == fn && op.getY() == t && !op.getAlpha() &&
                 !op.getBeta()
             ? op
             : nullptr;
}

/// ReLU's gradient as the training steps write it, where(greater(x, 0), dy,
/// 0) (mp-training's rule for Relu): the comparison, whose mask only the
/// select reads, dy and x.
struct ReluGradientForm {
  ElementwiseOp compare;
  mlir::Value dy, x;
};
inline std::optional<ReluGradientForm> matchReluGradient(ElementwiseOp select) {
  using rt::cpu::ElementwiseFn;
  if (select.getFn() != ElementwiseFn::Where || select.getInputs().size() != 3)
    return std::nullopt;
  mlir::Value mask = select.getInputs()[0], dy = select.getInputs()[1],
              otherwise = select.getInputs()[2];
  auto compare = llvm::dyn_cast_or_null<ElementwiseOp>(
      soleWriter(mask, {select.getOperation()}));
  if (!compare || compare.getFn() != ElementwiseFn::Greater ||
      compare.getInputs().size() != 2 || scalarWeightValue(otherwise) != 0.0 ||
      scalarWeightValue(compare.getInputs()[1]) != 0.0)
    return std::nullopt;
  return ReluGradientForm{compare, dy, compare.getInputs()[0]};
}

/// A call operand's buffer type.
inline mlir::MemRefType memrefOf(mlir::Value v) {
  return llvm::cast<mlir::MemRefType>(v.getType());
}

/// The bytes of a buffer type.
inline int64_t byteSize(mlir::MemRefType type) {
  return type.getNumElements() *
         std::max<int64_t>(type.getElementTypeBitWidth() / 8, 1);
}

/// Erases `calls` (each before it in its block first erased last, so any
/// order will do), then the buffers and constants that only they used,
/// `keep` apart. Returns the bytes of the arena buffers so dropped.
inline int64_t
eraseCallsAndTheirBuffers(llvm::ArrayRef<mlir::Operation *> calls,
                          mlir::Value keep, mlir::RewriterBase &rewriter) {
  llvm::SmallVector<mlir::Operation *> ordered(calls.begin(), calls.end());
  llvm::sort(ordered, [](mlir::Operation *a, mlir::Operation *b) {
    return b->isBeforeInBlock(a);
  });
  // Each buffer once: a value erased with its alloc must not be asked
  // about again.
  llvm::SetVector<mlir::Value> freed;
  for (mlir::Operation *op : ordered) {
    for (mlir::Value v : op->getOperands())
      if (v != keep)
        freed.insert(v);
    rewriter.eraseOp(op);
  }
  int64_t bytes = 0;
  for (mlir::Value v : freed)
    if (v.use_empty() && v.getDefiningOp()) {
      if (v.getDefiningOp<AllocOp>())
        bytes += byteSize(llvm::cast<mlir::MemRefType>(v.getType()));
      rewriter.eraseOp(v.getDefiningOp());
    }
  return bytes;
}

/// Runs a fusion pass's patterns on `func`: only the ops the patterns look
/// at change (no folding, no dead-code removal of the other buffers).
inline llvm::LogicalResult
applyFusionPatterns(mlir::func::FuncOp func,
                    mlir::RewritePatternSet &&patterns) {
  mlir::GreedyRewriteConfig config;
  config.enableFolding(false);
  config.setRegionSimplificationLevel(
      mlir::GreedySimplifyRegionLevel::Disabled);
  return mlir::applyPatternsGreedily(func, std::move(patterns), config);
}

/// The function attribute in which fusion passes run with `record` leave
/// their figures for culib-fusion-report: an array of dictionaries.
inline constexpr llvm::StringLiteral kFusionRecordAttr = "culib.fusion_record";

/// Appends one pattern's figures to `func`'s record: `fused` calls made,
/// `callsRemoved` calls fewer in all, `bytes` of intermediate buffers no
/// longer written.
inline void recordFusion(mlir::func::FuncOp func, llvm::StringRef pass,
                         llvm::StringRef pattern, int64_t fused,
                         int64_t callsRemoved, int64_t bytes) {
  mlir::Builder b(func.getContext());
  llvm::SmallVector<mlir::Attribute> entries;
  if (auto old = func->getAttrOfType<mlir::ArrayAttr>(kFusionRecordAttr))
    entries.assign(old.begin(), old.end());
  entries.push_back(b.getDictionaryAttr({
      b.getNamedAttr("pass", b.getStringAttr(pass)),
      b.getNamedAttr("pattern", b.getStringAttr(pattern)),
      b.getNamedAttr("fused", b.getI64IntegerAttr(fused)),
      b.getNamedAttr("calls_removed", b.getI64IntegerAttr(callsRemoved)),
      b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
  }));
  func->setAttr(kFusionRecordAttr, b.getArrayAttr(entries));
}

} // namespace mp::culib

#endif // MP_PASSES_CULIB_FUSIONUTILS_H
