//===- Colouring.h - autocast's four-colour algorithm -----------*- C++ -*-===//
//
// The graph of a function's ops with floating-point data, coloured with the
// precision policy's four classes and propagated as TensorFlow's auto mixed
// precision does: deny spreads forward and backward through infer / clear
// ops, allow spreads between and after allow ops and through clear ops.
// mp-autocast rewrites the function from the result (passes/MP/Autocast.cpp);
// the colouring works and is tested on its own.
//
//===----------------------------------------------------------------------===//
#ifndef MP_AUTOCAST_COLOURING_H
#define MP_AUTOCAST_COLOURING_H

#include "mp/Autocast/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mp::autocast {

/// An f32 tensor type.
bool isF32Tensor(mlir::Type t);

/// Ops whose result does not depend on their input's element type beyond
/// what they are told (Cast's `to`, Shape and Size): they read a
/// low-precision value as it is, so they are no boundary.
bool readsAnyType(mlir::Operation *op);

/// The op type the policy knows each mp op by: the ONNX op type of every
/// typed op, and the policy names of the training ops (MPTrainingOps.td).
/// Ops not in the map are not coloured.
llvm::DenseMap<mlir::OperationName, llvm::StringRef>
policyOpTypes(mlir::MLIRContext *context);

/// One op with floating-point data: a node of the colouring graph.
struct Node {
  mlir::Operation *op;
  std::string opType;
  std::string name;
  PrecisionClass policyClass; ///< what the policy said
  PrecisionClass cls;         ///< the colour, as propagation changes it
  std::string rule;
  bool fixedByOverride = false; ///< node overrides beat levels
  llvm::SmallVector<unsigned, 4>
      inputs; ///< producers over convertible operands
  llvm::SmallVector<unsigned, 4>
      outputs; ///< consumers reading a convertible operand
  /// Some result feeds an op that is not a node and needs the original type
  /// (return, yield, generic op).
  bool feedsFixedConsumer = false;
  /// Per operand: an f32 tensor the op reads in its own precision (not one
  /// the policy keeps), as the model had it.
  llvm::SmallVector<char, 4> convertible;
  /// Convertible operands that are not compile-time constants.
  unsigned nonConstantInputs = 0;
  /// The result: the op runs in low precision.
  bool low = false;
};

/// The colouring of one function.
class Colouring {
public:
  /// The graph of `func`'s ops that `opTypes` names (policyOpTypes), each
  /// with the class `policy` gives it.
  Colouring(
      mlir::func::FuncOp func, const PrecisionPolicy &policy,
      const llvm::DenseMap<mlir::OperationName, llvm::StringRef> &opTypes);

  static bool isConvertibleOperand(const Node &n, unsigned operand);

  /// Applies the policy's level, propagates the colours and decides each
  /// node's `low` (allow and a low-precision kernel exists), extending each
  /// node's `rule` with the reason.
  void run();

  /// Distinct (value, type) pairs where a consumer needs another precision
  /// than the producer gives, from the colours alone (the report sets it
  /// next to the casts the rewrite inserted, which must match). Constants
  /// are converted at compile time and are no boundary.
  int64_t countBoundaries(mlir::func::FuncOp func, bool keepIOTypes) const;

  /// The nodes in program order (pre-order walk) and each op's node.
  std::vector<Node> nodes;
  llvm::DenseMap<mlir::Operation *, unsigned> index;

private:
  static bool isInferOrClear(const Node &n);
  /// For each node, the first seed (in program order of the search) it is
  /// reached from through infer / clear nodes, along consumers (`forward`)
  /// or producers; -1 where none. Seeds reach themselves.
  std::vector<int> reachedFrom(llvm::function_ref<bool(const Node &)> isSeed,
                               bool forward) const;
  std::string quoted(unsigned i) const;

  /// The policy's level: tensor-cores-only keeps all but tensor-core ops in
  /// f32, unsafe-force-all makes everything low (node overrides stay).
  void applyLevel();

  /// Deny spreads forward through infer/clear ops lying on a path from a deny
  /// op to a deny or infer op (TensorFlow's
  /// PropagateDenyFwdThroughClearAndInfer).
  void denyForward();

  /// Infer/clear ops whose data all goes to f32 consumers join them when that
  /// moves a cast rather than adding one (at most one non-constant input).
  /// Consumers come later in program order, so one reverse sweep suffices.
  void denyBackward();

  /// Infer/clear ops on a path between two allow ops go low.
  void allowBetweenAllow();

  /// Infer ops downstream of an allow op (through infer ops) go low: the
  /// bias add, activation and pooling after a matmul or convolution.
  void allowFollowingAllow();

  /// Clear ops connected to allow ops through clear ops (either direction)
  /// take low precision.
  void allowThroughClear();

  const PrecisionPolicy &policy;
};

} // namespace mp::autocast

#endif // MP_AUTOCAST_COLOURING_H
