//===- Autocast.cpp - the mp-autocast pass --------------------------------===//
//
// Colours the ops of each function with the precision policy's four classes,
// propagates the colours (TensorFlow's algorithm, see Passes.td), and rewrites
// the function: low-precision ops get low-precision operands and results,
// one cast per (value, type) is inserted, constants are converted at compile
// time. The decisions and their reasons go to the report.
//
//===----------------------------------------------------------------------===//
#include "mp/Autocast/AutocastReport.h"
#include "mp/Autocast/PrecisionPolicy.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"
#include "mp/Runtime/Half.h"

#include "mp/Passes/Passes.h"
#include "mp/Passes/Pipelines.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <deque>
#include <functional>
#include <limits>
#include <random>

namespace mp {
#define GEN_PASS_DEF_AUTOCAST
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;
using namespace mp::autocast;

/// mp-opt's --mp-report: report files for every mp-autocast run whose own
/// `report` option is empty.
static llvm::cl::list<std::string> clReportFiles(
    "mp-report",
    llvm::cl::desc("Write the mp-autocast report to these files (.txt, .json, "
                   ".dot, .svg; comma-separated)"),
    llvm::cl::CommaSeparated);

namespace {

constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBFloat16 = 16;
constexpr double kF16Max = 65504.0;
/// Half the smallest f16 subnormal: smaller magnitudes round to zero.
constexpr double kF16FlushBelow = 2.98023223876953125e-8;

/// The ONNX name of a value: its producer's mp.outputs entry, or a graph
/// input's mp.name.
std::string valueNameOf(Value v) {
  if (auto result = dyn_cast<OpResult>(v)) {
    if (auto names = result.getOwner()->getAttrOfType<ArrayAttr>(
            MPDialect::kOutputNamesAttr))
      if (result.getResultNumber() < names.size())
        if (auto s = dyn_cast<StringAttr>(names[result.getResultNumber()]))
          return s.str();
    if (auto init = dyn_cast<InitializerOp>(result.getOwner()))
      return init.getName().str();
    std::string node = getNodeName(result.getOwner());
    return node.empty() ? ""
                        : node + ":" + std::to_string(result.getResultNumber());
  }
  auto arg = cast<BlockArgument>(v);
  if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
    if (arg.getOwner()->isEntryBlock())
      if (auto name = func.getArgAttrOfType<StringAttr>(
              arg.getArgNumber(), MPDialect::kArgNameAttr))
        return name.str();
  if (auto named = dyn_cast<NameLoc>(arg.getLoc()))
    return named.getName().str();
  return "arg" + std::to_string(arg.getArgNumber());
}

bool isF32Tensor(Type t) {
  auto tensor = dyn_cast<TensorType>(t);
  return tensor && tensor.getElementType().isF32();
}

Type withElement(Type t, Type element) {
  return cast<TensorType>(t).clone(element);
}

/// Bytes of a ranked tensor, a dynamic dim counted as 1 (so the figures of
/// models with a dynamic batch are per sample); -1 for unranked ones.
int64_t bytesOf(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !tensor.getElementType().isIntOrFloat())
    return -1;
  int64_t elements = 1;
  for (int64_t d : tensor.getShape())
    elements *= ShapedType::isDynamic(d) ? 1 : d;
  unsigned bits = tensor.getElementTypeBitWidth();
  return elements * std::max<unsigned>(bits / 8, 1);
}

std::string typeName(Type element) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << element;
  return s;
}

/// Ops whose result does not depend on their input's element type beyond
/// what they are told (Cast's `to`, Shape and Size): they read a
/// low-precision value as it is, so they are no boundary.
bool readsAnyType(Operation *op) { return isa<CastOp, ShapeOp, SizeOp>(op); }

/// One op with floating-point data: a node of the colouring graph.
struct Node {
  Operation *op;
  std::string opType;
  std::string name;
  PrecisionClass policyClass; ///< what the policy said
  PrecisionClass cls;         ///< the colour, as propagation changes it
  std::string rule;
  bool fixedByOverride = false;     ///< node overrides beat levels
  SmallVector<unsigned, 4> inputs;  ///< producers over convertible operands
  SmallVector<unsigned, 4> outputs; ///< consumers reading a convertible operand
  /// Some result feeds an op that is not a node and needs the original type
  /// (return, yield, generic op).
  bool feedsFixedConsumer = false;
  /// Per operand: an f32 tensor the op reads in its own precision (not one
  /// the policy keeps), as the model had it.
  SmallVector<char, 4> convertible;
  /// Convertible operands that are not compile-time constants.
  unsigned nonConstantInputs = 0;
  bool low = false;
};

class Colouring {
public:
  Colouring(func::FuncOp func, const PrecisionPolicy &policy,
            const llvm::DenseMap<OperationName, StringRef> &onnxTypes)
      : policy(policy) {
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto it = onnxTypes.find(op->getName());
      if (it == onnxTypes.end() || readsAnyType(op) || isa<ConstantOp>(op))
        return;
      bool hasFloat = llvm::any_of(op->getOperandTypes(), isF32Tensor) ||
                      llvm::any_of(op->getResultTypes(), isF32Tensor);
      if (!hasFloat)
        return;
      Node n;
      n.op = op;
      n.opType = it->second.str();
      n.name = getNodeName(op);
      ClassDecision d = policy.classify(n.opType, n.name, op);
      n.policyClass = n.cls = d.cls;
      n.rule = d.rule;
      n.fixedByOverride = d.byNodeOverride;
      for (OpOperand &use : op->getOpOperands())
        n.convertible.push_back(
            isF32Tensor(use.get().getType()) &&
            !policy.keepsOperand(n.opType, use.getOperandNumber()));
      index[op] = nodes.size();
      nodes.push_back(std::move(n));
    });
    // Edges over operands that would be converted.
    for (unsigned i = 0; i < nodes.size(); ++i) {
      Node &n = nodes[i];
      for (OpOperand &use : n.op->getOpOperands()) {
        if (!isConvertibleOperand(n, use.getOperandNumber()))
          continue;
        Value v = use.get();
        Operation *def = v.getDefiningOp();
        if (def && isa<InitializerOp, ConstantOp>(def))
          continue;
        ++n.nonConstantInputs;
        auto it = def ? index.find(def) : index.end();
        if (it != index.end()) {
          n.inputs.push_back(it->second);
          nodes[it->second].outputs.push_back(i);
        }
      }
      for (Value result : n.op->getResults()) {
        if (!isF32Tensor(result.getType()))
          continue;
        for (OpOperand &use : result.getUses()) {
          Operation *user = use.getOwner();
          auto it = index.find(user);
          if (it == index.end()) {
            // Cast and Shape read any type; the rest keeps the original.
            if (!readsAnyType(user))
              n.feedsFixedConsumer = true;
          } else if (!isConvertibleOperand(nodes[it->second],
                                           use.getOperandNumber())) {
            n.feedsFixedConsumer = true;
          }
        }
      }
    }
  }

  static bool isConvertibleOperand(const Node &n, unsigned operand) {
    return n.convertible[operand];
  }

  void run() {
    applyLevel();
    if (policy.level != Level::UnsafeForceAll) {
      denyForward();
      denyBackward();
      if (policy.level == Level::Default) {
        allowBetweenAllow();
        allowFollowingAllow();
      }
      allowThroughClear();
    }
    for (Node &n : nodes) {
      n.low = n.cls == PrecisionClass::Allow;
      if (n.low && !policy.hasLowPrecisionKernel(n.opType)) {
        n.low = false;
        n.rule +=
            "; no " + stringify(policy.target).str() + " kernel, stays f32";
      }
      if (!n.low &&
          (n.cls == PrecisionClass::Infer || n.cls == PrecisionClass::Clear))
        n.rule += "; not next to low-precision ops, stays f32";
    }
  }

  /// Distinct (value, type) pairs where a consumer needs another precision
  /// than the producer gives, from the colours alone (the report sets it
  /// next to the casts the rewrite inserted, which must match). Constants
  /// are converted at compile time and are no boundary.
  int64_t countBoundaries(func::FuncOp func, bool keepIOTypes) const {
    int64_t boundaries = 0;
    auto count = [&](Value v, bool producedLow) {
      if (!isF32Tensor(v.getType()))
        return;
      bool needsLow = false, needsF32 = false;
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        auto it = index.find(user);
        if (it != index.end() &&
            isConvertibleOperand(nodes[it->second], use.getOperandNumber())) {
          (nodes[it->second].low ? needsLow : needsF32) = true;
        } else if (!readsAnyType(user) &&
                   !(!keepIOTypes && isa<func::ReturnOp>(user) &&
                     user->getParentOp() == func.getOperation())) {
          needsF32 = true;
        }
      }
      boundaries += producedLow ? needsF32 : needsLow;
    };
    Block &entry = func.getBody().front();
    for (BlockArgument arg : entry.getArguments()) {
      bool low = false;
      if (!keepIOTypes)
        for (OpOperand &use : arg.getUses())
          if (auto it = index.find(use.getOwner()); it != index.end())
            low |=
                nodes[it->second].low &&
                isConvertibleOperand(nodes[it->second], use.getOperandNumber());
      count(arg, low);
    }
    func.walk([&](Operation *op) {
      if (op == func.getOperation() || isa<InitializerOp, ConstantOp>(op))
        return;
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            count(arg, false);
      auto it = index.find(op);
      bool low = it != index.end() && nodes[it->second].low;
      for (Value result : op->getResults())
        count(result, low);
    });
    return boundaries;
  }

  std::vector<Node> nodes;
  llvm::DenseMap<Operation *, unsigned> index;

private:
  static bool isInferOrClear(const Node &n) {
    return n.cls == PrecisionClass::Infer || n.cls == PrecisionClass::Clear;
  }
  std::string quoted(unsigned i) const {
    const Node &n = nodes[i];
    return n.opType + " '" + n.name + "'";
  }

  void applyLevel() {
    for (Node &n : nodes) {
      if (n.fixedByOverride)
        continue;
      switch (policy.level) {
      case Level::Default:
        break;
      case Level::TensorCoresOnly:
        if (n.cls == PrecisionClass::Allow &&
            !policy.usesTensorCores(n.opType)) {
          n.cls = PrecisionClass::Deny;
          n.rule += "; level tensor-cores-only: no tensor-core kernel, f32";
        } else if (n.cls == PrecisionClass::Infer) {
          n.cls = PrecisionClass::Deny;
          n.rule += "; level tensor-cores-only: f32";
        }
        break;
      case Level::UnsafeForceAll:
        if (n.cls != PrecisionClass::Allow) {
          n.cls = PrecisionClass::Allow;
          n.rule += "; level unsafe-force-all: forced to low precision";
        }
        break;
      }
    }
  }

  /// Deny spreads forward through infer/clear ops lying on a path from a deny
  /// op to a deny or infer op (TensorFlow's
  /// PropagateDenyFwdThroughClearAndInfer).
  void denyForward() {
    size_t n = nodes.size();
    std::vector<int> root(n, -1); // the deny op a node is reached from
    std::deque<unsigned> queue;
    for (unsigned i = 0; i < n; ++i)
      if (nodes[i].cls == PrecisionClass::Deny) {
        root[i] = i;
        queue.push_back(i);
      }
    while (!queue.empty()) {
      unsigned i = queue.front();
      queue.pop_front();
      for (unsigned s : nodes[i].outputs)
        if (root[s] < 0 && isInferOrClear(nodes[s])) {
          root[s] = root[i];
          queue.push_back(s);
        }
    }
    std::vector<char> reachesInferOrDeny(n, 0);
    for (unsigned i = 0; i < n; ++i)
      if (nodes[i].cls == PrecisionClass::Deny ||
          nodes[i].cls == PrecisionClass::Infer) {
        reachesInferOrDeny[i] = 1;
        queue.push_back(i);
      }
    while (!queue.empty()) {
      unsigned i = queue.front();
      queue.pop_front();
      for (unsigned p : nodes[i].inputs)
        if (!reachesInferOrDeny[p] && isInferOrClear(nodes[p])) {
          reachesInferOrDeny[p] = 1;
          queue.push_back(p);
        }
    }
    for (unsigned i = 0; i < n; ++i) {
      Node &node = nodes[i];
      if (isInferOrClear(node) && root[i] >= 0 && reachesInferOrDeny[i]) {
        node.cls = PrecisionClass::Deny;
        node.rule += "; f32: downstream of f32 " + quoted(root[i]);
      }
    }
  }

  /// Infer/clear ops whose data all goes to f32 consumers join them when that
  /// moves a cast rather than adding one (at most one non-constant input).
  /// Consumers come later in program order, so one reverse sweep suffices.
  void denyBackward() {
    for (unsigned i = nodes.size(); i-- > 0;) {
      Node &node = nodes[i];
      if (!isInferOrClear(node) || node.nonConstantInputs > 1)
        continue;
      // Only next to f32 ops: an op feeding just graph outputs follows its
      // producers (the cast then sits at the output).
      if (node.outputs.empty())
        continue;
      bool allDeny = llvm::all_of(node.outputs, [&](unsigned s) {
        return nodes[s].cls == PrecisionClass::Deny;
      });
      if (!allDeny)
        continue;
      node.cls = PrecisionClass::Deny;
      node.rule +=
          "; f32: only feeds f32 ops such as " + quoted(node.outputs.front());
    }
  }

  /// Infer/clear ops on a path between two allow ops go low.
  void allowBetweenAllow() {
    size_t n = nodes.size();
    std::vector<int> fromAllow(n, -1), toAllow(n, -1);
    std::deque<unsigned> queue;
    for (unsigned i = 0; i < n; ++i)
      if (nodes[i].cls == PrecisionClass::Allow) {
        fromAllow[i] = i;
        queue.push_back(i);
      }
    while (!queue.empty()) {
      unsigned i = queue.front();
      queue.pop_front();
      for (unsigned s : nodes[i].outputs)
        if (fromAllow[s] < 0 && isInferOrClear(nodes[s])) {
          fromAllow[s] = fromAllow[i];
          queue.push_back(s);
        }
    }
    for (unsigned i = 0; i < n; ++i)
      if (nodes[i].cls == PrecisionClass::Allow) {
        toAllow[i] = i;
        queue.push_back(i);
      }
    while (!queue.empty()) {
      unsigned i = queue.front();
      queue.pop_front();
      for (unsigned p : nodes[i].inputs)
        if (toAllow[p] < 0 && isInferOrClear(nodes[p])) {
          toAllow[p] = toAllow[i];
          queue.push_back(p);
        }
    }
    for (unsigned i = 0; i < n; ++i) {
      Node &node = nodes[i];
      if (isInferOrClear(node) && fromAllow[i] >= 0 && toAllow[i] >= 0) {
        node.cls = PrecisionClass::Allow;
        node.rule += "; low: between low-precision " + quoted(fromAllow[i]) +
                     " and " + quoted(toAllow[i]);
      }
    }
  }

  /// Infer ops downstream of an allow op (through infer ops) go low: the
  /// bias add, activation and pooling after a matmul or convolution.
  void allowFollowingAllow() {
    std::deque<std::pair<unsigned, unsigned>> queue; // (node, allow root)
    for (unsigned i = 0; i < nodes.size(); ++i)
      if (nodes[i].cls == PrecisionClass::Allow)
        queue.push_back({i, i});
    std::vector<char> seen(nodes.size(), 0);
    while (!queue.empty()) {
      auto [i, rootIndex] = queue.front();
      queue.pop_front();
      for (unsigned s : nodes[i].outputs) {
        Node &succ = nodes[s];
        if (seen[s] || succ.cls != PrecisionClass::Infer)
          continue;
        seen[s] = 1;
        succ.cls = PrecisionClass::Allow;
        succ.rule += "; low: follows low-precision " + quoted(rootIndex);
        queue.push_back({s, rootIndex});
      }
    }
  }

  /// Clear ops connected to allow ops through clear ops (either direction)
  /// take low precision.
  void allowThroughClear() {
    std::deque<std::pair<unsigned, unsigned>> queue;
    for (unsigned i = 0; i < nodes.size(); ++i)
      if (nodes[i].cls == PrecisionClass::Allow)
        queue.push_back({i, i});
    while (!queue.empty()) {
      auto [i, rootIndex] = queue.front();
      queue.pop_front();
      auto visit = [&](unsigned j) {
        Node &next = nodes[j];
        if (next.cls != PrecisionClass::Clear)
          return;
        next.cls = PrecisionClass::Allow;
        next.rule +=
            "; low: clear op next to low-precision " + quoted(rootIndex);
        queue.push_back({j, rootIndex});
      };
      for (unsigned s : nodes[i].outputs)
        visit(s);
      for (unsigned p : nodes[i].inputs)
        visit(p);
    }
  }

  const PrecisionPolicy &policy;
};

/// Rewrites one function after colouring: operand and result types, casts,
/// converted constants.
class Rewriter {
public:
  Rewriter(func::FuncOp func, const PrecisionPolicy &policy,
           Colouring &colouring, FunctionReport &report)
      : func(func), policy(policy), colouring(colouring), report(report),
        builder(func.getContext()) {
    lowType = policy.target == TargetType::F16
                  ? Type(Float16Type::get(func.getContext()))
                  : Type(BFloat16Type::get(func.getContext()));
  }

  LogicalResult run() {
    // Existing casts, by (value, to), may serve boundaries.
    func.walk([&](CastOp cast) {
      existingCasts[{cast.getInput(), static_cast<int64_t>(cast.getTo())}]
          .push_back(cast);
    });
    Block &entry = func.getBody().front();
    if (!policy.keepIOTypes)
      for (BlockArgument arg : entry.getArguments())
        if (isF32Tensor(arg.getType()) && wantsLow(arg)) {
          originalType[arg] = arg.getType();
          arg.setType(withElement(arg.getType(), lowType));
        }
    // Pre-order: every value is rewritten before its uses are visited.
    WalkResult walk = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == func.getOperation() ||
          isa<InitializerOp, ConstantOp, NoneOp>(op))
        return WalkResult::advance();
      if (failed(rewriteOp(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    finishConstants();
    // The function type follows its arguments and returned values.
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    func.setFunctionType(FunctionType::get(
        func.getContext(), entry.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

private:
  /// Whether any consumer of graph input `arg` runs in low precision.
  bool wantsLow(Value arg) {
    for (OpOperand &use : arg.getUses()) {
      auto it = colouring.index.find(use.getOwner());
      if (it != colouring.index.end() && colouring.nodes[it->second].low &&
          colouring.isConvertibleOperand(colouring.nodes[it->second],
                                         use.getOperandNumber()))
        return true;
    }
    return false;
  }

  LogicalResult rewriteOp(Operation *op) {
    auto it = colouring.index.find(op);
    Node *node =
        it == colouring.index.end() ? nullptr : &colouring.nodes[it->second];
    if (node && node->low)
      return rewriteLowOp(*node);
    // Cast and Shape read any type; a return may change its types when I/O
    // types are free; everything else reads what it read before.
    if (readsAnyType(op))
      return success();
    if (!policy.keepIOTypes && isa<func::ReturnOp>(op) &&
        op->getParentOp() == func.getOperation())
      return success();
    for (OpOperand &use : op->getOpOperands()) {
      auto original = originalType.find(use.get());
      if (original == originalType.end())
        continue;
      use.set(castTo(use.get(),
                     cast<TensorType>(original->second).getElementType(), op));
    }
    return success();
  }

  LogicalResult rewriteLowOp(Node &node) {
    Operation *op = node.op;
    bool changed = false;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      if (colouring.isConvertibleOperand(node, use.getOperandNumber())) {
        use.set(castTo(v, lowType, op));
        changed = true;
      } else if (auto original = originalType.find(v);
                 original != originalType.end()) {
        // A kept operand whose producer went low reads the original type.
        use.set(
            castTo(v, cast<TensorType>(original->second).getElementType(), op));
      }
    }
    // Result types: the op's own inference from the new operands, keeping
    // the shapes already known.
    SmallVector<Type> inferred;
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(infer.inferReturnTypes(
              op->getContext(), op->getLoc(), op->getOperands(),
              op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
              op->getRegions(), inferred)) ||
          inferred.size() != op->getNumResults())
        return op->emitError("mp-autocast: cannot infer the result types of ")
               << node.opType << " with " << stringify(policy.target)
               << " operands";
    }
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      if (!isF32Tensor(result.getType()))
        continue;
      Type element = lowType;
      if (!inferred.empty()) {
        auto tensor = dyn_cast<TensorType>(inferred[i]);
        if (!tensor)
          continue;
        element = tensor.getElementType();
      }
      if (element == cast<TensorType>(result.getType()).getElementType())
        continue;
      originalType[result] = result.getType();
      result.setType(withElement(result.getType(), element));
      changed = true;
    }
    if (changed && policy.usesTensorCores(node.opType))
      op->setAttr("mp.accumulation_type",
                  TypeAttr::get(Float32Type::get(op->getContext())));
    if (!changed)
      node.low = false;
    return success();
  }

  /// `v` as `element`: v itself, a converted constant or a cast shared by all
  /// consumers. `consumer` is the op asking (for diagnostics).
  Value castTo(Value v, Type element, Operation *consumer) {
    auto tensor = cast<TensorType>(v.getType());
    if (tensor.getElementType() == element)
      return v;
    auto key = std::make_pair(v, element);
    if (auto it = casts.find(key); it != casts.end())
      return it->second;
    Operation *def = v.getDefiningOp();
    if (def && isa<InitializerOp, ConstantOp>(def)) {
      if (Value converted = convertConstant(def, element, consumer))
        return casts[key] = converted;
    }
    int64_t to = onnxCode(element);
    // A cast already in the model that dominates the consumer serves it.
    auto existing = existingCasts.find({v, to});
    if (existing != existingCasts.end())
      for (CastOp c : existing->second)
        if (c.getType() == tensor.clone(element) &&
            dominance.properlyDominates(c.getOperation(), consumer)) {
          ++report.castsReused;
          return casts[key] = c.getResult();
        }
    // Right after the definition, so the cast dominates every consumer.
    if (def) {
      builder.setInsertionPointAfter(def);
    } else {
      builder.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    }
    std::string name = valueNameOf(v);
    std::string suffix = typeName(element);
    auto castOp = CastOp::create(
        builder,
        NameLoc::get(builder.getStringAttr(name + "/CastTo_" + suffix)),
        tensor.clone(element), v, builder.getI64IntegerAttr(to), IntegerAttr());
    castOp->setAttr(MPDialect::kOutputNamesAttr,
                    builder.getStrArrayAttr({name + "/" + suffix}));
    report.casts.push_back({name, typeName(tensor.getElementType()), suffix,
                            bytesOf(castOp.getType())});
    return casts[key] = castOp.getResult();
  }

  static int64_t onnxCode(Type element) {
    if (element.isF16())
      return kOnnxFloat16;
    if (element.isBF16())
      return kOnnxBFloat16;
    return kOnnxFloat;
  }

  /// The f32 values of a constant: a view of its data where it is stored
  /// as an aligned array (`storage` untouched), else a copy in `storage`;
  /// nullopt if they cannot be read.
  static std::optional<ArrayRef<float>>
  readFloats(ElementsAttr attr, std::vector<float> &storage) {
    auto type = cast<ShapedType>(attr.getType());
    if (!type.getElementType().isF32())
      return std::nullopt;
    size_t n = type.getNumElements();
    std::optional<mp::StoredBytes> stored = mp::storedBytes(attr);
    if (!stored)
      return std::nullopt;
    if (stored->splat) {
      storage.assign(n, cast<DenseElementsAttr>(attr).getSplatValue<float>());
      return ArrayRef<float>(storage);
    }
    ArrayRef<char> raw = stored->bytes;
    if (raw.size() != n * 4)
      return std::nullopt;
    if (reinterpret_cast<uintptr_t>(raw.data()) % alignof(float) == 0)
      return ArrayRef<float>(reinterpret_cast<const float *>(raw.data()), n);
    storage.resize(n);
    std::memcpy(storage.data(), raw.data(), n * 4);
    return ArrayRef<float>(storage);
  }

  /// A compile-time conversion of constant `def` to `element`.
  Value convertConstant(Operation *def, Type element, Operation *consumer) {
    ElementsAttr value;
    std::string name;
    if (auto init = dyn_cast<InitializerOp>(def)) {
      // An initializer that is also a graph input may be fed at run time.
      if (init.getInputIndex())
        return {};
      value = init.getValue();
      name = init.getName().str();
    } else {
      value = cast<ConstantOp>(def).getValueAttr();
      name = valueNameOf(def->getResult(0));
    }
    if (!value)
      return {};
    std::vector<float> storage;
    std::optional<ArrayRef<float>> floats = readFloats(value, storage);
    if (!floats)
      return {};
    ClampRecord record;
    record.constant = name;
    record.consumer = getNodeName(consumer);
    record.elements = floats->size();
    size_t n = floats->size();
    // Large tensors become resources (no uniquing hash over the data) whose
    // buffer is converted into directly; small ones inline attributes.
    bool asResource = n * 2 > 4096;
    AsmResourceBlob blob;
    std::vector<uint16_t> small;
    uint16_t *bits;
    if (asResource) {
      blob = HeapAsmResourceBlob::allocate(n * 2, alignof(uint64_t),
                                           /*dataIsMutable=*/true);
      bits = reinterpret_cast<uint16_t *>(blob.getMutableData().data());
    } else {
      small.resize(n);
      bits = small.data();
    }
    if (element.isF16()) {
      // Count what f16 cannot hold (branch-free, so it vectorizes), clamp
      // only when there is something to clamp, then convert in bulk (F16C
      // where the CPU has it; the same rounding as the runtime).
      const float *values = floats->data();
      int64_t clamped = 0, flushed = 0;
      for (size_t i = 0; i < n; ++i) {
        float a = std::fabs(values[i]);
        clamped += (a > static_cast<float>(kF16Max)) &
                   (a <= std::numeric_limits<float>::max());
        flushed += (a != 0.0f) & (a < static_cast<float>(kF16FlushBelow));
      }
      record.clamped = clamped;
      record.flushedToZero = flushed;
      const float *src = values;
      if (record.clamped) {
        if (storage.empty())
          storage.assign(floats->begin(), floats->end());
        for (float &f : storage)
          if (std::isfinite(f) && std::fabs(f) > kF16Max)
            f = f > 0 ? kF16Max : -kF16Max;
        src = storage.data();
      }
      rt::convertF32ToF16(src, bits, n);
    } else {
      rt::convertF32ToBF16(floats->data(), bits, n);
    }
    auto type = cast<RankedTensorType>(value.getType()).clone(element);
    ElementsAttr converted;
    if (asResource)
      converted = DenseResourceElementsAttr::get(
          type, name + "_" + typeName(element), std::move(blob));
    else
      converted = DenseElementsAttr::getFromRawBuffer(
          type, ArrayRef<char>(reinterpret_cast<const char *>(bits), n * 2));
    if (record.clamped) {
      def->emitWarning("mp-autocast: clamped ")
          << record.clamped << " of " << record.elements << " values of '"
          << name << "' (read by node '" << record.consumer
          << "') to the f16 range [-65504, 65504]";
    }
    if (record.clamped || record.flushedToZero)
      report.clamped.push_back(record);
    builder.setInsertionPointAfter(def);
    Operation *newOp;
    if (auto init = dyn_cast<InitializerOp>(def)) {
      newOp = InitializerOp::create(
          builder, def->getLoc(), type,
          builder.getStringAttr(name + "_" + typeName(element)), converted,
          IntegerAttr(), init.getDocStringAttr());
      convertedInitializers.push_back({init, cast<InitializerOp>(newOp)});
    } else {
      newOp = ConstantOp::create(
          builder,
          NameLoc::get(builder.getStringAttr(getNodeName(def) + "_" +
                                             typeName(element))),
          type, converted, FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
          DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
      convertedConstants.push_back({def, newOp});
    }
    return newOp->getResult(0);
  }

  /// A constant no f32 op reads any more is replaced by its conversion,
  /// which takes over its name.
  void finishConstants() {
    for (auto [original, converted] : convertedInitializers) {
      if (!original->use_empty())
        continue;
      converted.setName(original.getName());
      original->erase();
    }
    for (auto [original, converted] : convertedConstants) {
      if (Attribute names = original->getAttr(MPDialect::kOutputNamesAttr))
        converted->setAttr(MPDialect::kOutputNamesAttr, names);
      if (original->use_empty())
        original->erase();
      else
        converted->removeAttr(MPDialect::kOutputNamesAttr);
    }
  }

  func::FuncOp func;
  const PrecisionPolicy &policy;
  Colouring &colouring;
  FunctionReport &report;
  OpBuilder builder;
  DominanceInfo dominance;
  Type lowType;
  llvm::DenseMap<Value, Type> originalType;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
  llvm::DenseMap<std::pair<Value, int64_t>, SmallVector<CastOp>> existingCasts;
  std::vector<std::pair<InitializerOp, InitializerOp>> convertedInitializers;
  std::vector<std::pair<Operation *, Operation *>> convertedConstants;
};

int64_t weightBytes(func::FuncOp func) {
  int64_t total = 0;
  func.walk([&](Operation *op) {
    if (isa<InitializerOp, ConstantOp>(op))
      total += std::max<int64_t>(bytesOf(op->getResult(0).getType()), 0);
  });
  return total;
}

int64_t activationBytes(func::FuncOp func) {
  int64_t total = 0;
  func.walk([&](Operation *op) {
    // The model's own activations; what casts write is reported apart.
    if (isa<InitializerOp, ConstantOp, NoneOp, CastOp>(op) ||
        op->getDialect() != op->getContext()->getLoadedDialect<MPDialect>())
      return;
    for (Type t : op->getResultTypes())
      total += std::max<int64_t>(bytesOf(t), 0);
  });
  return total;
}

/// The picture: every op but constants, inputs and outputs, and the data
/// edges between them.
void drawPicture(func::FuncOp func, const Colouring &colouring,
                 FunctionReport &report, TargetType target) {
  llvm::DenseMap<Value, unsigned> producer;
  auto addNode = [&](std::string label, PictureNode::Kind kind) {
    report.pictureNodes.push_back({std::move(label), kind});
    return static_cast<unsigned>(report.pictureNodes.size() - 1);
  };
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments())
    producer[arg] =
        addNode("input " + valueNameOf(arg) + "\n" +
                    typeName(cast<ShapedType>(arg.getType()).getElementType()),
                PictureNode::Kind::Input);
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == func.getOperation() || isa<InitializerOp, ConstantOp, NoneOp>(op))
      return;
    PictureNode::Kind kind = PictureNode::Kind::Other;
    std::string label;
    if (auto castOp = dyn_cast<CastOp>(op)) {
      kind = PictureNode::Kind::Cast;
      label = "Cast to " +
              typeName(cast<ShapedType>(castOp.getType()).getElementType());
    } else if (isa<func::ReturnOp>(op) && op->getParentOp() == func) {
      label = "outputs";
      kind = PictureNode::Kind::Output;
    } else {
      label = op->getName().getStringRef().str();
      auto it = colouring.index.find(op);
      if (it != colouring.index.end()) {
        const Node &n = colouring.nodes[it->second];
        kind = n.low ? PictureNode::Kind::Low : PictureNode::Kind::FP32;
        label = n.opType + "\n" + n.name + "\n" +
                (n.low ? stringify(target).str() : "f32");
      } else if (std::string name = getNodeName(op); !name.empty()) {
        label += "\n" + name;
      }
    }
    unsigned id = addNode(label, kind);
    for (Value operand : op->getOperands())
      if (auto it = producer.find(operand); it != producer.end())
        report.pictureEdges.push_back({it->second, id});
    for (Value result : op->getResults())
      producer[result] = id;
  });
}

//===----------------------------------------------------------------------===//
// Validation: fp32 against mixed precision on the CPU runtime
//===----------------------------------------------------------------------===//

llvm::cl::opt<bool> clValidate(
    "mp-validate",
    llvm::cl::desc("mp-autocast: run fp32 and mixed precision on sample inputs "
                   "on the CPU runtime and deny the nodes responsible for "
                   "errors over --mp-validate-tol"),
    llvm::cl::init(false));
llvm::cl::list<std::string> clValidateInputs(
    "mp-validate-inputs",
    llvm::cl::desc("Validation inputs (.npy/.pb), in graph input order"),
    llvm::cl::CommaSeparated);
llvm::cl::opt<double> clValidateTol(
    "mp-validate-tol",
    llvm::cl::desc("Validation: largest max |error| / max |fp32 output| "
                   "(default 1e-2)"),
    llvm::cl::init(-1.0));
llvm::cl::opt<double> clValidateTimeLimit(
    "mp-validate-time-limit",
    llvm::cl::desc("Validation: seconds after which the search stops "
                   "(default 300)"),
    llvm::cl::init(-1.0));

/// Set while validation probes run their own mp-autocast: those neither
/// validate again nor write the reports that --mp-report asks for.
thread_local int validationDepth = 0;

/// `policy` with the nodes `denied` kept in f32.
PrecisionPolicy policyDenying(const PrecisionPolicy &policy,
                              const std::vector<std::string> &denied) {
  PrecisionPolicy result = policy;
  for (const std::string &name : denied)
    llvm::consumeError(result.addNodeOverride(
        name, PrecisionClass::Deny,
        "mp-validate (low precision broke the outputs)"));
  return result;
}

/// An mp-autocast pass with a ready policy (a validation probe).
std::unique_ptr<Pass> createProbeAutocast(PrecisionPolicy policy);

/// Runs mixed-precision variants of a module against its fp32 form on the
/// CPU runtime, and finds nodes whose low precision breaks the outputs.
class Validator {
public:
  Validator(ModuleOp original, PrecisionPolicy policy, double tol,
            double timeLimit, std::vector<std::string> inputFiles,
            unsigned seed)
      : original(original), policy(std::move(policy)), tol(tol),
        timeLimit(timeLimit), inputFiles(std::move(inputFiles)), seed(seed),
        start(std::chrono::steady_clock::now()) {}

  /// Nodes to deny (empty when the mixed-precision model passes as it is);
  /// failure when validation itself cannot run. `notes` explains.
  FailureOr<std::vector<std::string>>
  run(const std::function<
          std::vector<std::string>(const std::vector<std::string> &)> &lowNodes,
      std::vector<std::string> &notes) {
    FailureOr<std::vector<rt::NamedTensor>> reference = runVariant(nullptr);
    if (failed(reference))
      return failure();
    referenceOutputs = std::move(*reference);
    std::vector<std::string> denied;
    FailureOr<double> error = probe(denied, "the mixed-precision model");
    if (failed(error))
      return failure();
    notes.push_back(llvm::formatv("mixed precision as coloured: error {0:e2} "
                                  "(limit {1:e2})",
                                  *error, tol));
    while (*error > tol) {
      if (elapsed() > timeLimit) {
        notes.push_back(llvm::formatv(
            "stopped after {0:F1} s (validate-time-limit): the error is still "
            "{1:e2}",
            elapsed(), *error));
        break;
      }
      std::vector<std::string> candidates = lowNodes(denied);
      if (candidates.empty()) {
        notes.push_back("no named low-precision node is left to deny");
        break;
      }
      // The shortest prefix of the low nodes (program order) that, alone in
      // low precision, breaks the outputs: its last node is responsible.
      int64_t lo = -1, hi = static_cast<int64_t>(candidates.size()) - 1;
      std::optional<double> errorAtHi = *error;
      while (hi - lo > 1 && elapsed() <= timeLimit) {
        int64_t mid = (lo + hi) / 2;
        std::vector<std::string> withSuffixDenied = denied;
        withSuffixDenied.insert(withSuffixDenied.end(),
                                candidates.begin() + mid + 1, candidates.end());
        FailureOr<double> e =
            probe(withSuffixDenied, llvm::formatv("the first {0} of {1} "
                                                  "low-precision nodes",
                                                  mid + 1, candidates.size()));
        if (failed(e))
          return failure();
        if (*e > tol) {
          hi = mid;
          errorAtHi = *e;
        } else {
          lo = mid;
        }
      }
      const std::string &culprit = candidates[hi];
      denied.push_back(culprit);
      FailureOr<double> after =
          probe(denied, "after denying '" + culprit + "'");
      if (failed(after))
        return failure();
      notes.push_back(llvm::formatv(
          "denied '{0}': in low precision (with the low nodes before it) the "
          "error is {1:e2}; without it {2:e2}",
          culprit, errorAtHi.value_or(*error), *after));
      error = after;
    }
    notes.push_back(llvm::formatv("{0} probes in {1:F1} s", probes, elapsed()));
    return denied;
  }

private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  }

  /// The largest output error of the mixed-precision variant with `denied`.
  FailureOr<double> probe(const std::vector<std::string> &denied,
                          const std::string &what) {
    ++probes;
    FailureOr<std::vector<rt::NamedTensor>> outputs = runVariant(&denied);
    if (failed(outputs))
      return failure();
    double worst = 0;
    for (auto [ref, got] : llvm::zip(referenceOutputs, *outputs)) {
      double scale = 0, err = 0;
      int64_t n = std::min(ref.tensor.numElements(), got.tensor.numElements());
      for (int64_t i = 0; i < n; ++i) {
        double a = rt::elementAsDouble(ref.tensor, i);
        double b = rt::elementAsDouble(got.tensor, i);
        if (!std::isfinite(b) && std::isfinite(a)) {
          err = INFINITY;
          break;
        }
        if (std::isfinite(a)) {
          scale = std::max(scale, std::fabs(a));
          err = std::max(err, std::fabs(a - b));
        }
      }
      worst = std::max(worst, scale > 0 ? err / scale : err);
    }
    llvm::errs() << llvm::formatv(
        "mp-validate: probe {0} ({1:F1} s): {2}: error {3:e2} {4}\n", probes,
        elapsed(), what, worst, worst > tol ? "> limit" : "ok");
    return worst;
  }

  /// Compiles a clone of the module (fp32 when `denied` is null, else mixed
  /// precision with those nodes denied) to a plan and runs it.
  FailureOr<std::vector<rt::NamedTensor>>
  runVariant(const std::vector<std::string> *denied) {
    OwningOpRef<ModuleOp> clone = original.clone();
    MLIRContext *ctx = original.getContext();
    // Plans need static shapes: dynamic input dims become 1.
    for (auto func : clone->getOps<func::FuncOp>()) {
      SmallVector<Type> inputs;
      for (BlockArgument arg : func.getArguments()) {
        if (auto t = dyn_cast<RankedTensorType>(arg.getType())) {
          SmallVector<int64_t> shape(t.getShape());
          for (int64_t &d : shape)
            if (ShapedType::isDynamic(d))
              d = 1;
          arg.setType(t.clone(shape));
        }
        inputs.push_back(arg.getType());
      }
      func.setFunctionType(
          FunctionType::get(ctx, inputs, func.getResultTypes()));
    }
    PassManager pm(ctx, ModuleOp::getOperationName());
    ++validationDepth;
    llvm::scope_exit restoreDepth([] { --validationDepth; });
    if (denied) {
      pm.addPass(createProbeAutocast(policyDenying(policy, *denied)));
      pm.addNestedPass<func::FuncOp>(createCastCleanup());
    }
    buildCompilePipeline(pm);
    SmallString<128> planPath;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "mp-validate", "mpplan", planPath))
      return original.emitError("mp-validate: cannot create a temporary "
                                "file: ")
             << ec.message();
    llvm::FileRemover removePlan(planPath);
    ExportPlanOptions exportOptions;
    exportOptions.outputPath = planPath.str().str();
    pm.addPass(createExportPlan(exportOptions));
    // Only the errors of the variant matter (the warnings repeat the ones of
    // the real run).
    if (failed(pm.run(*clone)))
      return original.emitError("mp-validate: cannot compile the ")
             << (denied ? "mixed-precision" : "fp32")
             << " model for the CPU runtime (see above)";
    rt::Result<rt::Plan> plan = rt::loadPlan(planPath.str().str());
    if (!plan)
      return original.emitError("mp-validate: ") << plan.status().message();
    rt::Result<rt::CpuExecutor> exec = rt::CpuExecutor::create(plan.take());
    if (!exec)
      return original.emitError("mp-validate: ") << exec.status().message();
    if (inputs.empty() && failed(makeInputs(exec->plan())))
      return failure();
    std::vector<rt::NamedView> views;
    for (auto [binding, tensor] : llvm::zip(exec->plan().inputs, inputs))
      views.push_back({binding.name, tensor.view()});
    rt::Result<std::vector<rt::NamedTensor>> outputs = exec->run(views);
    if (!outputs)
      return original.emitError("mp-validate: running the plan: ")
             << outputs.status().message();
    return outputs.take();
  }

  /// The inputs: the given files, else random values (normal floats, small
  /// non-negative integers) from the seed.
  LogicalResult makeInputs(const rt::Plan &plan) {
    if (!inputFiles.empty() && inputFiles.size() != plan.inputs.size())
      return original.emitError("mp-validate: ")
             << inputFiles.size() << " input files for " << plan.inputs.size()
             << " graph inputs";
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal;
    for (auto [i, binding] : llvm::enumerate(plan.inputs)) {
      if (!inputFiles.empty()) {
        rt::Result<rt::HostTensor> t = rt::readTensorFile(inputFiles[i]);
        if (!t)
          return original.emitError("mp-validate: ") << t.status().message();
        if (t->dtype() != binding.dtype || t->shape() != binding.shape)
          return original.emitError("mp-validate: '")
                 << inputFiles[i] << "' is "
                 << rt::describeTensorType(t->dtype(), t->shape())
                 << ", graph input '" << binding.name << "' needs "
                 << rt::describeTensorType(binding.dtype, binding.shape);
        inputs.push_back(t.take());
        continue;
      }
      rt::HostTensor t(binding.dtype, binding.shape);
      for (int64_t j = 0; j < t.numElements(); ++j) {
        switch (binding.dtype) {
        case rt::DType::F32:
          t.as<float>()[j] = normal(rng);
          break;
        case rt::DType::F16:
          t.as<uint16_t>()[j] = rt::toHalf(normal(rng)).bits;
          break;
        case rt::DType::I64:
          t.as<int64_t>()[j] = static_cast<int64_t>(rng() % 4);
          break;
        case rt::DType::I32:
          t.as<int32_t>()[j] = static_cast<int32_t>(rng() % 4);
          break;
        default:
          static_cast<uint8_t *>(t.data())[j] = 0;
          break;
        }
      }
      inputs.push_back(std::move(t));
    }
    return success();
  }

  ModuleOp original;
  PrecisionPolicy policy;
  double tol, timeLimit;
  std::vector<std::string> inputFiles;
  unsigned seed;
  std::chrono::steady_clock::time_point start;
  std::vector<rt::HostTensor> inputs;
  std::vector<rt::NamedTensor> referenceOutputs;
  unsigned probes = 0;
};

struct AutocastPass : mp::impl::AutocastBase<AutocastPass> {
  using AutocastBase::AutocastBase;
  /// A pass with this policy instead of the one its options describe.
  explicit AutocastPass(PrecisionPolicy preset)
      : presetPolicy(std::move(preset)) {}

  LogicalResult initialize(MLIRContext *context) override {
    auto *mpDialect = context->getOrLoadDialect<MPDialect>();
    for (const auto &entry : mpDialect->getOnnxOpTable())
      onnxTypes[entry.getValue().opName] = entry.getKey();
    // The training ops the policy classifies (MPTrainingOps.td).
    auto addTrainingOp = [&](auto tag) {
      using OpTy = typename decltype(tag)::type;
      onnxTypes[OperationName(OpTy::getOperationName(), context)] =
          OpTy::kPolicyOpType;
    };
    addTrainingOp(llvm::type_identity<ConvGradFilterOp>{});
    addTrainingOp(llvm::type_identity<PoolGradOp>{});
    addTrainingOp(llvm::type_identity<BatchNormGradOp>{});
    addTrainingOp(llvm::type_identity<SoftmaxCrossEntropyGradOp>{});
    addTrainingOp(llvm::type_identity<NLLLossGradOp>{});
    addTrainingOp(llvm::type_identity<LSTMGradOp>{});
    if (presetPolicy) {
      policy = *presetPolicy;
      return success();
    }
    policy = PrecisionPolicy::defaults();
    auto fail = [&](const Twine &message) -> LogicalResult {
      emitError(UnknownLoc::get(context)) << "mp-autocast: " << message;
      return failure();
    };
    if (!policyFile.empty())
      if (llvm::Error e = policy.loadFile(policyFile))
        return fail(llvm::toString(std::move(e)));
    if (!target.empty()) {
      std::optional<TargetType> t = parseTargetType(target);
      if (!t)
        return fail("unknown target '" + target + "' (expected f16 or bf16)");
      policy.target = *t;
    }
    if (!level.empty()) {
      std::optional<Level> l = parseLevel(level);
      if (!l)
        return fail("unknown level '" + level +
                    "' (expected default, tensor-cores-only or "
                    "unsafe-force-all)");
      policy.level = *l;
    }
    if (!keepIOTypes.empty()) {
      if (keepIOTypes != "true" && keepIOTypes != "false")
        return fail("keep-io-types must be true or false, got '" + keepIOTypes +
                    "'");
      policy.keepIOTypes = keepIOTypes == "true";
    }
    for (auto [list, cls] : {std::pair{&allowOps, PrecisionClass::Allow},
                             std::pair{&inferOps, PrecisionClass::Infer},
                             std::pair{&clearOps, PrecisionClass::Clear},
                             std::pair{&denyOps, PrecisionClass::Deny}})
      for (const std::string &op : *list)
        policy.setClass(op, cls, "option " + stringify(cls).str());
    for (auto [list, cls] : {std::pair{&allowNodes, PrecisionClass::Allow},
                             std::pair{&denyNodes, PrecisionClass::Deny}})
      for (const std::string &node : *list)
        if (llvm::Error e = policy.addNodeOverride(
                node, cls, "option " + stringify(cls).str() + "-nodes"))
          return fail(llvm::toString(std::move(e)));
    return success();
  }

  /// With validation on: the nodes to deny, added to the policy, and the
  /// notes for the report. Failure when validation cannot run.
  LogicalResult runValidation(std::vector<std::string> &notes) {
    double tol = clValidateTol >= 0 ? clValidateTol : validateTol;
    double limit =
        clValidateTimeLimit >= 0 ? clValidateTimeLimit : validateTimeLimit;
    std::vector<std::string> files(validateInputs.begin(),
                                   validateInputs.end());
    if (files.empty())
      files.assign(clValidateInputs.begin(), clValidateInputs.end());
    Validator validator(getOperation(), policy, tol, limit, files,
                        validateSeed);
    // The named low-precision nodes of the current colouring, in program
    // order, with `denied` added to the policy.
    auto lowNodes = [&](const std::vector<std::string> &denied) {
      PrecisionPolicy probePolicy = policyDenying(policy, denied);
      std::vector<std::string> names;
      for (auto func : getOperation().getOps<func::FuncOp>()) {
        Colouring colouring(func, probePolicy, onnxTypes);
        colouring.run();
        for (const Node &n : colouring.nodes)
          if (n.low && !n.name.empty())
            names.push_back(n.name);
      }
      return names;
    };
    FailureOr<std::vector<std::string>> denied = validator.run(lowNodes, notes);
    if (failed(denied))
      return failure();
    policy = policyDenying(policy, *denied);
    for (const std::string &name : *denied) {
      llvm::errs() << "mp-validate: node '" << name
                   << "' stays f32: in low precision it made the outputs "
                      "exceed the tolerance\n";
    }
    for (const std::string &note : notes)
      llvm::errs() << "mp-validate: " << note << "\n";
    return success();
  }

  void runOnOperation() override {
    std::vector<std::string> validationNotes;
    if ((validate || clValidate) && validationDepth == 0 &&
        failed(runValidation(validationNotes)))
      return signalPassFailure();
    std::vector<std::string> files(reportFiles.begin(), reportFiles.end());
    if (files.empty() && validationDepth == 0)
      files.assign(clReportFiles.begin(), clReportFiles.end());
    // The picture costs a label per op: only drawn when a file shows it.
    bool wantsPicture = llvm::any_of(files, [](const std::string &f) {
      return StringRef(f).ends_with(".dot") || StringRef(f).ends_with(".gv") ||
             StringRef(f).ends_with(".svg");
    });
    AutocastReport report;
    report.target = policy.target;
    report.level = policy.level;
    report.validationNotes = validationNotes;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      FunctionReport &fr = report.functions.emplace_back();
      fr.function = func.getSymName().str();
      fr.weightBytesBefore = weightBytes(func);
      fr.activationBytesBefore = activationBytes(func);
      Colouring colouring(func, policy, onnxTypes);
      colouring.run();
      fr.precisionBoundaries =
          colouring.countBoundaries(func, policy.keepIOTypes);
      if (failed(Rewriter(func, policy, colouring, fr).run()))
        return signalPassFailure();
      fr.weightBytesAfter = weightBytes(func);
      fr.activationBytesAfter = activationBytes(func);
      fr.consideredOps = colouring.nodes.size();
      for (const Node &n : colouring.nodes) {
        fr.convertedOps += n.low;
        fr.nodes.push_back({n.name, n.opType, n.policyClass, n.low, n.rule});
      }
      if (wantsPicture)
        drawPicture(func, colouring, fr, policy.target);
    }
    for (const std::string &file : files)
      if (llvm::Error e = report.writeFile(file)) {
        emitError(getOperation().getLoc())
            << "mp-autocast: " << llvm::toString(std::move(e));
        return signalPassFailure();
      }
  }

  PrecisionPolicy policy;
  std::optional<PrecisionPolicy> presetPolicy;
  llvm::DenseMap<OperationName, StringRef> onnxTypes;
};

std::unique_ptr<Pass> createProbeAutocast(PrecisionPolicy policy) {
  return std::make_unique<AutocastPass>(std::move(policy));
}

} // namespace
