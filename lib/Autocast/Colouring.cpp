//===- Colouring.cpp - autocast's four-colour algorithm -------------------===//
//
// The colouring graph, the policy's levels and the propagation rules
// (declared in mp/Autocast/Colouring.h).
//
//===----------------------------------------------------------------------===//
#include "mp/Autocast/Colouring.h"
#include "mp/Dialect/MP/MPDialect.h"

#include <deque>

using namespace mlir;
using namespace mp;
using namespace mp::autocast;

bool mp::autocast::isF32Tensor(Type t) {
  auto tensor = dyn_cast<TensorType>(t);
  return tensor && tensor.getElementType().isF32();
}

bool mp::autocast::readsAnyType(Operation *op) {
  return isa<CastOp, ShapeOp, SizeOp>(op);
}

llvm::DenseMap<OperationName, StringRef>
mp::autocast::policyOpTypes(MLIRContext *context) {
  llvm::DenseMap<OperationName, StringRef> opTypes;
  auto *mpDialect = context->getOrLoadDialect<MPDialect>();
  for (const auto &entry : mpDialect->getOnnxOpTable())
    opTypes[entry.getValue().opName] = entry.getKey();
  // The training ops the policy classifies (MPTrainingOps.td).
  auto addTrainingOp = [&](auto tag) {
    using OpTy = typename decltype(tag)::type;
    opTypes[OperationName(OpTy::getOperationName(), context)] =
        OpTy::kPolicyOpType;
  };
  addTrainingOp(llvm::type_identity<ConvGradFilterOp>{});
  addTrainingOp(llvm::type_identity<PoolGradOp>{});
  addTrainingOp(llvm::type_identity<GeluGradOp>{});
  addTrainingOp(llvm::type_identity<LayerNormGradOp>{});
  addTrainingOp(llvm::type_identity<BatchNormGradOp>{});
  addTrainingOp(llvm::type_identity<SoftmaxCrossEntropyGradOp>{});
  addTrainingOp(llvm::type_identity<NLLLossGradOp>{});
  addTrainingOp(llvm::type_identity<LSTMGradOp>{});
  return opTypes;
}

Colouring::Colouring(func::FuncOp func, const PrecisionPolicy &policy,
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

bool Colouring::isConvertibleOperand(const Node &n, unsigned operand) {
  return n.convertible[operand];
}

void Colouring::run() {
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
      n.rule += "; no " + stringify(policy.target).str() + " kernel, stays f32";
    }
    if (!n.low &&
        (n.cls == PrecisionClass::Infer || n.cls == PrecisionClass::Clear))
      n.rule += "; not next to low-precision ops, stays f32";
  }
}

int64_t Colouring::countBoundaries(func::FuncOp func, bool keepIOTypes) const {
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

bool Colouring::isInferOrClear(const Node &n) {
  return n.cls == PrecisionClass::Infer || n.cls == PrecisionClass::Clear;
}

std::string Colouring::quoted(unsigned i) const {
  const Node &n = nodes[i];
  return n.opType + " '" + n.name + "'";
}

void Colouring::applyLevel() {
  for (Node &n : nodes) {
    if (n.fixedByOverride)
      continue;
    switch (policy.level) {
    case Level::Default:
      break;
    case Level::TensorCoresOnly:
      if (n.cls == PrecisionClass::Allow && !policy.usesTensorCores(n.opType)) {
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

std::vector<int>
Colouring::reachedFrom(llvm::function_ref<bool(const Node &)> isSeed,
                       bool forward) const {
  std::vector<int> seed(nodes.size(), -1);
  std::deque<unsigned> queue;
  for (unsigned i = 0; i < nodes.size(); ++i)
    if (isSeed(nodes[i])) {
      seed[i] = i;
      queue.push_back(i);
    }
  while (!queue.empty()) {
    unsigned i = queue.front();
    queue.pop_front();
    for (unsigned next : forward ? nodes[i].outputs : nodes[i].inputs)
      if (seed[next] < 0 && isInferOrClear(nodes[next])) {
        seed[next] = seed[i];
        queue.push_back(next);
      }
  }
  return seed;
}

void Colouring::denyForward() {
  // The deny op each node is reached from, and whether it reaches a deny or
  // infer op.
  std::vector<int> root = reachedFrom(
      [](const Node &n) { return n.cls == PrecisionClass::Deny; }, true);
  std::vector<int> reachesInferOrDeny = reachedFrom(
      [](const Node &n) {
        return n.cls == PrecisionClass::Deny || n.cls == PrecisionClass::Infer;
      },
      false);
  for (unsigned i = 0; i < nodes.size(); ++i) {
    Node &node = nodes[i];
    if (isInferOrClear(node) && root[i] >= 0 && reachesInferOrDeny[i] >= 0) {
      node.cls = PrecisionClass::Deny;
      node.rule += "; f32: downstream of f32 " + quoted(root[i]);
    }
  }
}

void Colouring::denyBackward() {
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

void Colouring::allowBetweenAllow() {
  auto isAllow = [](const Node &n) { return n.cls == PrecisionClass::Allow; };
  std::vector<int> fromAllow = reachedFrom(isAllow, true);
  std::vector<int> toAllow = reachedFrom(isAllow, false);
  for (unsigned i = 0; i < nodes.size(); ++i) {
    Node &node = nodes[i];
    if (isInferOrClear(node) && fromAllow[i] >= 0 && toAllow[i] >= 0) {
      node.cls = PrecisionClass::Allow;
      node.rule += "; low: between low-precision " + quoted(fromAllow[i]) +
                   " and " + quoted(toAllow[i]);
    }
  }
}

void Colouring::allowFollowingAllow() {
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

void Colouring::allowThroughClear() {
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
      next.rule += "; low: clear op next to low-precision " + quoted(rootIndex);
      queue.push_back({j, rootIndex});
    };
    for (unsigned s : nodes[i].outputs)
      visit(s);
    for (unsigned p : nodes[i].inputs)
      visit(p);
  }
}
