//===- AutocastReport.h - what mp-autocast decided and why -------*- C++ -*-===//
//
// The report of an autocast run: ops converted, casts inserted and their
// bytes, every node's precision with the rule that decided it, clamped
// constants and the bytes saved; written as text, JSON, a Graphviz DOT
// picture of the graph coloured by precision, or SVG (through Graphviz's
// `dot`).
//
//===----------------------------------------------------------------------===//
#ifndef MP_AUTOCAST_AUTOCASTREPORT_H
#define MP_AUTOCAST_AUTOCASTREPORT_H

#include "mp/Autocast/PrecisionPolicy.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mp::autocast {

struct NodeDecision {
  std::string name;   ///< the ONNX node name ("" when the model gave none)
  std::string opType; ///< the ONNX op_type
  PrecisionClass policyClass; ///< the class the policy gave
  bool lowPrecision;  ///< runs in the target type
  std::string rule;   ///< why
};

struct CastRecord {
  std::string value; ///< the ONNX name of the value cast
  std::string from, to;
  int64_t bytes; ///< bytes the cast writes (-1 when the shape is dynamic)
};

struct ClampRecord {
  std::string constant; ///< initializer or Constant node name
  std::string consumer; ///< a node that reads it in low precision
  int64_t elements = 0;
  int64_t clamped = 0;         ///< finite values beyond the target's range
  int64_t flushedToZero = 0;   ///< nonzero values below its smallest subnormal
};

/// One node of the picture: the ops of the rewritten function.
struct PictureNode {
  enum class Kind { Low, FP32, Cast, Other, Input, Output };
  std::string label;
  Kind kind;
};

struct FunctionReport {
  std::string function;
  int64_t consideredOps = 0; ///< ops with floating-point data
  int64_t convertedOps = 0;  ///< of those, now in the target type
  int64_t precisionBoundaries = 0; ///< distinct (value, type) edges that change precision
  int64_t castsReused = 0;   ///< boundaries served by a cast already in the model
  std::vector<CastRecord> casts;
  std::vector<NodeDecision> nodes;
  std::vector<ClampRecord> clamped;
  int64_t weightBytesBefore = 0, weightBytesAfter = 0;
  int64_t activationBytesBefore = 0, activationBytesAfter = 0;
  std::vector<PictureNode> pictureNodes;
  std::vector<std::pair<unsigned, unsigned>> pictureEdges;

  int64_t castBytes() const;
};

struct AutocastReport {
  TargetType target = TargetType::F16;
  Level level = Level::Default;
  std::vector<FunctionReport> functions;
  /// What --mp-validate found and did (empty without validation).
  std::vector<std::string> validationNotes;

  void writeText(llvm::raw_ostream &os) const;
  void writeJSON(llvm::raw_ostream &os) const;
  void writeDOT(llvm::raw_ostream &os) const;
  /// Writes to `path` in the format its extension names: .json, .dot, .svg
  /// (runs Graphviz's `dot`), anything else text. Atomic: no partial file.
  llvm::Error writeFile(llvm::StringRef path) const;
};

} // namespace mp::autocast

#endif // MP_AUTOCAST_AUTOCASTREPORT_H
