//===- MPToCuLib.h - lowering the mp dialect to culib calls -----*- C++ -*-===//
//
// The pieces of convert-mp-to-culib for whoever builds their own conversion
// on them: the tensor-to-buffer type converter, the patterns of every op
// family, and the table of what can be lowered with the reason why a
// particular op cannot. The pass itself is declared in
// mp/Conversion/Passes.h.
//
//===----------------------------------------------------------------------===//
#ifndef MP_CONVERSION_MPTOCULIB_H
#define MP_CONVERSION_MPTOCULIB_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <functional>
#include <string>

namespace mp {

/// Element types the runtime has buffers of: ONNX's numeric types, bool and
/// the narrow types.
bool isPlanElementType(mlir::Type type);
/// The narrow types (mp/Runtime/NarrowTypes.h): float8 e4m3fn, e4m3fnuz,
/// e5m2, e5m2fnuz, float4 e2m1, 4- and 2-bit integers. Buffers of them are
/// stored, cast and reshaped; no other call reads them.
bool isNarrowElementType(mlir::Type type);

/// tensor<...> of static shape and a plan element type -> memref<...>; none
/// stays none; memrefs stay as they are.
class BufferTypeConverter : public mlir::TypeConverter {
public:
  BufferTypeConverter();
};

/// The culib.state buffer of each ml_program global a function uses, made
/// before the conversion (prepareStateBuffers).
using StateBuffers = llvm::DenseMap<mlir::StringAttr, mlir::Value>;

/// A culib.state at the start of each function for every global it uses;
/// an error for a global that does not exist or has no tensor value.
mlir::LogicalResult prepareStateBuffers(mlir::ModuleOp module,
                                        StateBuffers &states);

/// The ops the patterns lower, each with the rule that says why one
/// particular op still cannot be lowered: its operands or attributes are
/// outside what the culib call supports. The pass checks every op against
/// it before converting anything, so the patterns rely on these rules.
class LowerableOps {
public:
  /// Returns "" when the op can be lowered, else the reason.
  using Rule = std::function<std::string(mlir::Operation *)>;

  /// `OpTys` have a pattern; `rule` (if any) applies to each of them.
  template <typename... OpTys> void add(const Rule &rule = nullptr) {
    (add(OpTys::getOperationName(), rule), ...);
  }
  void add(llvm::StringRef opName, const Rule &rule = nullptr);

  bool contains(llvm::StringRef opName) const { return rules.count(opName); }
  /// Why `op` cannot be lowered, or "" if it can (or has no rule).
  std::string whyNotLowerable(mlir::Operation *op) const;

private:
  llvm::StringMap<Rule> rules;
};

/// The patterns of every op family (below) into `patterns`, their ops into
/// `lowerable`. `states` must outlive the patterns: fill it with
/// prepareStateBuffers before applying them.
void populateMPToCuLibConversionPatterns(const mlir::TypeConverter &converter,
                                         mlir::RewritePatternSet &patterns,
                                         LowerableOps &lowerable,
                                         const StateBuffers &states);

/// GEMMs and convolutions: cuBLASLt and cuDNN calls (Conv, ConvTranspose,
/// Gemm, MatMul, Einsum).
void populateLibraryCallPatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns,
                                 LowerableOps &lowerable);
/// Elementwise functions, casts and reductions.
void populateElementwisePatterns(const mlir::TypeConverter &converter,
                                 mlir::RewritePatternSet &patterns,
                                 LowerableOps &lowerable);
/// Weights and constants, reshapes, transposes, slicing, gathers and
/// scatters, padding and resizing.
void populateDataMovementPatterns(const mlir::TypeConverter &converter,
                                  mlir::RewritePatternSet &patterns,
                                  LowerableOps &lowerable);
/// Pooling, normalisations, softmax, LRN, recurrent layers, losses, dropout.
void populateNNPatterns(const mlir::TypeConverter &converter,
                        mlir::RewritePatternSet &patterns,
                        LowerableOps &lowerable);
/// Training steps: globals as state buffers, backward calls, the finite
/// check and the optimizer and loss-scale updates.
void populateTrainingPatterns(const mlir::TypeConverter &converter,
                              mlir::RewritePatternSet &patterns,
                              LowerableOps &lowerable,
                              const StateBuffers &states);

} // namespace mp

#endif // MP_CONVERSION_MPTOCULIB_H
