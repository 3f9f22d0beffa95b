//===- PopulatePatterns.h - shared by the conversion patterns ---*- C++ -*-===//
//
// What the op-family files of the mp-to-culib conversion share: the helpers
// their patterns use to make buffers and read attributes and constant
// operands. Private to passes/Conversion/MPToCuLib; the public entry points
// are in mp/Conversion/MPToCuLib.h.
//
//===----------------------------------------------------------------------===//
#ifndef MP_PASSES_CONVERSION_MPTOCULIB_POPULATEPATTERNS_H
#define MP_PASSES_CONVERSION_MPTOCULIB_POPULATEPATTERNS_H

#include "mp/Conversion/MPToCuLib.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace mp::mptoculib {

/// The accumulation type of `op` on data of `element` type: the type
/// mp-autocast recorded (`mp.accumulation_type`), else f32 for 16-bit and
/// f32 data (the tensor-core contract) and f64 for f64. The culib verifiers
/// reject a combination the library calls do not support.
mlir::Type computeTypeFor(mlir::Type element, mlir::Operation *op);

mlir::Type elementOf(mlir::Value v);
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);

/// A new activation buffer for `result`.
mlir::Value allocFor(mlir::ConversionPatternRewriter &rewriter,
                     const mlir::TypeConverter &tc, mlir::Location loc,
                     mlir::Value result);

/// Allocations for every result of `op`, in order.
llvm::SmallVector<mlir::Value>
allocResults(mlir::ConversionPatternRewriter &rewriter,
             const mlir::TypeConverter &tc, mlir::Operation *op);

/// A buffer with `v`'s data in `shape` (a copy: reshapes are copies).
mlir::Value reshapeBuffer(mlir::ConversionPatternRewriter &rewriter,
                          mlir::Location loc, mlir::Value v,
                          llvm::ArrayRef<int64_t> shape);

/// A missing optional operand: no value, or a none value.
bool isAbsent(mlir::Value v);

int64_t normalizeAxis(int64_t axis, int64_t rank);

/// Explicit begin/end pads of a window (mp::explicitWindowPads).
llvm::SmallVector<int64_t>
windowPads(llvm::StringRef autoPad, std::optional<llvm::ArrayRef<int64_t>> pads,
           llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
           llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
           llvm::ArrayRef<int64_t> dilations);

/// `v`, or `n` ones when it is absent (strides, dilations).
llvm::SmallVector<int64_t> orOnes(std::optional<llvm::ArrayRef<int64_t>> v,
                                  size_t n);

/// An op's attribute of that kind, or `fallback` when it is not set.
float floatAttrOr(mlir::Operation *op, llvm::StringRef name, float fallback);
int64_t intAttrOr(mlir::Operation *op, llvm::StringRef name, int64_t fallback);
std::string strAttrOr(mlir::Operation *op, llvm::StringRef name,
                      llvm::StringRef fallback);

/// ONNX's `reduction` attribute of a loss (default "mean") or a scatter
/// (default "none") as culib's enum; nullopt when it names none of its
/// values (the ops' rules report it).
std::optional<culib::LossReduction> lossReductionOf(mlir::Operation *op);
std::optional<culib::ScatterReduction> scatterReductionOf(mlir::Operation *op);
/// The rule of ops with a loss `reduction` (addRule): it is one of culib's.
void explainLossReduction(mlir::Operation *op, llvm::raw_ostream &os);

/// The integer values of a compile-time constant operand.
std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v);
/// The values of a compile-time constant floating-point operand.
std::optional<llvm::SmallVector<double>> constantFloats(mlir::Value v);

/// An op whose one result is written by one culib call: the pattern
/// allocates the result's buffer, `buildCall` creates the call writing it,
/// and the op is replaced by the buffer.
template <typename OpTy>
struct OneCallLowering : mlir::OpConversionPattern<OpTy> {
  using mlir::OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename mlir::OpConversionPattern<OpTy>::OpAdaptor;

  /// The op's result (its named accessor).
  virtual mlir::Value result(OpTy op) const = 0;
  virtual void buildCall(OpTy op, OpAdaptor adaptor, mlir::Value out,
                         mlir::ConversionPatternRewriter &rewriter) const = 0;

  mlir::LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const final {
    mlir::Value out =
        allocFor(rewriter, *this->getTypeConverter(), op.getLoc(), result(op));
    buildCall(op, adaptor, out, rewriter);
    rewriter.replaceOp(op, out);
    return mlir::success();
  }
};

/// The ops with one pattern each that needs only the type converter: adds
/// `Pattern` for `OpTy` and records `OpTy` as lowerable.
template <typename Pattern, typename OpTy, typename... Args>
void addLowering(const mlir::TypeConverter &tc,
                 mlir::RewritePatternSet &patterns, LowerableOps &lowerable,
                 Args &&...args) {
  patterns.add<Pattern>(tc, patterns.getContext(), std::forward<Args>(args)...);
  lowerable.add<OpTy>();
}

/// The rule of `OpTys` (LowerableOps): `explain(op, os)` prints why `op`
/// cannot be lowered, and nothing when it can.
template <typename... OpTys, typename Explain>
void addRule(LowerableOps &lowerable, Explain explain) {
  lowerable.add<OpTys...>([explain](mlir::Operation *op) {
    std::string why;
    llvm::raw_string_ostream os(why);
    explain(op, os);
    return why;
  });
}

} // namespace mp::mptoculib

#endif // MP_PASSES_CONVERSION_MPTOCULIB_POPULATEPATTERNS_H
