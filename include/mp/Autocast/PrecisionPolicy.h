//===- PrecisionPolicy.h - which ops run in low precision -------*- C++ -*-===//
//
// The precision policy: one object, consulted by every mixed-precision pass,
// that says for each ONNX node whether it may run in low precision (f16 or
// bf16) and which of its operands must stay as they are. Defaults follow
// docs/policy.md (the table there is generated from this file's defaults by
// `mp-opt --mp-print-policy`); every default can be changed by pass options,
// by a JSON policy file, per op type, per node name (exact or glob) and by
// attribute conditions.
//
//===----------------------------------------------------------------------===//
#ifndef MP_AUTOCAST_PRECISIONPOLICY_H
#define MP_AUTOCAST_PRECISIONPOLICY_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mp::autocast {

/// TensorFlow's four colours.
enum class PrecisionClass {
  Allow, ///< always low precision (tensor-core ops)
  Infer, ///< low precision when its neighbours are
  Clear, ///< no numerical effect: takes its neighbours' precision
  Deny,  ///< always fp32
};

enum class Level {
  Default,         ///< the four-colour algorithm
  TensorCoresOnly, ///< only allow ops (and clear ops joining them) go low
  UnsafeForceAll,  ///< every op with a low-precision form goes low
};

enum class TargetType { F16, BF16 };

llvm::StringRef stringify(PrecisionClass c);
llvm::StringRef stringify(Level l);
llvm::StringRef stringify(TargetType t);
std::optional<PrecisionClass> parsePrecisionClass(llvm::StringRef s);
std::optional<Level> parseLevel(llvm::StringRef s);
std::optional<TargetType> parseTargetType(llvm::StringRef s);

/// A class given by a rule, with the rule in words for the report.
struct ClassDecision {
  PrecisionClass cls;
  std::string rule;
  /// Decided by a node-name override (which the levels do not change).
  bool byNodeOverride = false;
};

/// "op_type's attribute compares to value" decides the class.
struct AttributeCondition {
  enum class Compare { Equal, NotEqual, Less, Greater };
  std::string opType;
  std::string attribute;
  Compare compare = Compare::Equal;
  /// Strings compare as strings; ints and floats numerically.
  std::string stringValue;
  std::optional<double> numberValue;
  PrecisionClass cls = PrecisionClass::Deny;
  std::string source; ///< where the condition was given (for the report)

  /// Whether `op` (of type opType) satisfies the condition; an attribute the
  /// op does not have never matches.
  bool matches(mlir::Operation *op) const;
  std::string describe() const;
};

/// A class for the nodes whose ONNX name matches `pattern`.
struct NodeOverride {
  std::string pattern;
  bool isGlob = false;
  PrecisionClass cls = PrecisionClass::Deny;
  std::string source;

  NodeOverride() = default;
  /// Copies compile their own glob: a GlobPattern refers to the pattern
  /// string it was made from.
  NodeOverride(const NodeOverride &other);
  NodeOverride &operator=(const NodeOverride &other);
  /// Compiles `pattern` as a glob; an error for an invalid one.
  llvm::Error compile();
  bool matches(llvm::StringRef name) const { return glob.match(name); }

private:
  llvm::GlobPattern glob;
};

class PrecisionPolicy {
public:
  /// The built-in policy (docs/policy.md).
  static PrecisionPolicy defaults();

  TargetType target = TargetType::F16;
  Level level = Level::Default;
  /// Graph inputs and outputs keep their element types.
  bool keepIOTypes = true;

  /// Sets the class of an op type (an ONNX op_type such as "MatMul").
  void setClass(llvm::StringRef opType, PrecisionClass cls,
                llvm::StringRef source);
  /// Marks operand `index` of `opType` as one that keeps its type whatever
  /// the op's precision (Resize's scales, BatchNormalization's statistics).
  void keepOperand(llvm::StringRef opType, unsigned index,
                   llvm::StringRef source);
  /// A class for the nodes named `pattern`; a pattern with glob
  /// metacharacters (* ? [) matches as a glob. Exact names win over globs;
  /// among globs the one added last wins.
  llvm::Error addNodeOverride(llvm::StringRef pattern, PrecisionClass cls,
                              llvm::StringRef source);
  void addCondition(AttributeCondition condition);

  /// Reads a JSON policy file (docs/policy.md, "Policy files") on top of
  /// this policy. Errors name the file and the JSON path of the problem.
  llvm::Error loadFile(llvm::StringRef path);
  llvm::Error loadJSON(llvm::StringRef text, llvm::StringRef fileName);

  /// The class of `op` (ONNX type `opType`, node name `nodeName`) and the rule
  /// that decided it: node override, else attribute condition, else the op
  /// type's class; op types the policy does not list are Deny.
  ClassDecision classify(llvm::StringRef opType, llvm::StringRef nodeName,
                         mlir::Operation *op) const;
  /// Whether operand `index` of an `opType` op keeps its type.
  bool keepsOperand(llvm::StringRef opType, unsigned index) const;
  /// Whether the op type has a tensor-core kernel (the ops the
  /// tensor-cores-only level converts).
  bool usesTensorCores(llvm::StringRef opType) const;
  /// Whether `opType` has a low-precision kernel for the target type on
  /// the backend the model is for; ALLOW is dropped for ops without one.
  /// Every typed op has f16/bf16 kernels on the project's runtime; a policy
  /// file lists the ops a deployment target lacks ("no_low_precision_kernel").
  bool hasLowPrecisionKernel(llvm::StringRef opType) const;
  void setNoLowPrecisionKernel(llvm::StringRef opType) {
    noLowPrecisionKernel.insert(opType);
  }

  /// Every op type with a class, sorted by name (for docs and --help).
  std::vector<std::pair<std::string, ClassDecision>> classTable() const;
  const std::vector<AttributeCondition> &conditions() const {
    return attributeConditions;
  }
  llvm::SmallVector<unsigned> keptOperands(llvm::StringRef opType) const;
  /// The policy as Markdown tables (op classes, kept operands, attribute
  /// conditions): docs/generated/PolicyTable.md, `mp-opt --mp-print-policy`.
  void writeMarkdown(llvm::raw_ostream &os) const;

private:
  llvm::StringMap<ClassDecision> classes;
  llvm::StringMap<llvm::SmallVector<unsigned>> keptOperandIndices;
  llvm::StringMap<NodeOverride> exactOverrides;
  std::vector<NodeOverride> globOverrides;
  std::vector<AttributeCondition> attributeConditions;
  llvm::StringSet<> tensorCoreOps;
  llvm::StringSet<> noLowPrecisionKernel;
};

} // namespace mp::autocast

#endif // MP_AUTOCAST_PRECISIONPOLICY_H
