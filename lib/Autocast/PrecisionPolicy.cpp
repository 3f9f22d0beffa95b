//===- PrecisionPolicy.cpp - which ops run in low precision ---------------===//
#include "mp/Autocast/PrecisionPolicy.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace llvm;

namespace mp::autocast {

StringRef stringify(PrecisionClass c) {
  switch (c) {
  case PrecisionClass::Allow:
    return "allow";
  case PrecisionClass::Infer:
    return "infer";
  case PrecisionClass::Clear:
    return "clear";
  case PrecisionClass::Deny:
    return "deny";
  }
  llvm_unreachable("unknown class");
}

StringRef stringify(Level l) {
  switch (l) {
  case Level::Default:
    return "default";
  case Level::TensorCoresOnly:
    return "tensor-cores-only";
  case Level::UnsafeForceAll:
    return "unsafe-force-all";
  }
  llvm_unreachable("unknown level");
}

StringRef stringify(TargetType t) { return t == TargetType::F16 ? "f16" : "bf16"; }

std::optional<PrecisionClass> parsePrecisionClass(StringRef s) {
  return StringSwitch<std::optional<PrecisionClass>>(s)
      .Case("allow", PrecisionClass::Allow)
      .Case("infer", PrecisionClass::Infer)
      .Case("clear", PrecisionClass::Clear)
      .Case("deny", PrecisionClass::Deny)
      .Default(std::nullopt);
}

std::optional<Level> parseLevel(StringRef s) {
  return StringSwitch<std::optional<Level>>(s)
      .Case("default", Level::Default)
      .Case("tensor-cores-only", Level::TensorCoresOnly)
      .Case("unsafe-force-all", Level::UnsafeForceAll)
      .Default(std::nullopt);
}

std::optional<TargetType> parseTargetType(StringRef s) {
  return StringSwitch<std::optional<TargetType>>(s)
      .Cases({"f16", "fp16", "float16"}, TargetType::F16)
      .Cases({"bf16", "bfloat16"}, TargetType::BF16)
      .Default(std::nullopt);
}

//===----------------------------------------------------------------------===//
// Attribute conditions
//===----------------------------------------------------------------------===//

namespace {
StringRef stringify(AttributeCondition::Compare c) {
  switch (c) {
  case AttributeCondition::Compare::Equal:
    return "==";
  case AttributeCondition::Compare::NotEqual:
    return "!=";
  case AttributeCondition::Compare::Less:
    return "<";
  case AttributeCondition::Compare::Greater:
    return ">";
  }
  llvm_unreachable("unknown comparison");
}

/// A numeric attribute's value (ints, floats, bools).
std::optional<double> numberOf(mlir::Attribute attr) {
  if (auto i = dyn_cast<mlir::IntegerAttr>(attr))
    return static_cast<double>(i.getValue().getSExtValue());
  if (auto f = dyn_cast<mlir::FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto b = dyn_cast<mlir::BoolAttr>(attr))
    return b.getValue() ? 1.0 : 0.0;
  return std::nullopt;
}
} // namespace

bool AttributeCondition::matches(mlir::Operation *op) const {
  mlir::Attribute attr = op ? op->getAttr(attribute) : mlir::Attribute();
  if (!attr)
    return false;
  int order; // <0, 0, >0 as attr compares to the condition's value
  if (auto str = dyn_cast<mlir::StringAttr>(attr)) {
    if (numberValue)
      return false;
    order = str.getValue().compare(stringValue);
  } else if (std::optional<double> number = numberOf(attr)) {
    if (!numberValue)
      return false;
    order = *number < *numberValue ? -1 : (*number > *numberValue ? 1 : 0);
  } else {
    return false;
  }
  switch (compare) {
  case Compare::Equal:
    return order == 0;
  case Compare::NotEqual:
    return order != 0;
  case Compare::Less:
    return order < 0;
  case Compare::Greater:
    return order > 0;
  }
  return false;
}

std::string AttributeCondition::describe() const {
  std::string value;
  if (numberValue) {
    raw_string_ostream os(value);
    os << *numberValue;
  } else {
    value = "\"" + stringValue + "\"";
  }
  return (opType + " with " + attribute + " " + stringify(compare) + " " +
          value)
      .str();
}

//===----------------------------------------------------------------------===//
// The built-in policy
//===----------------------------------------------------------------------===//

PrecisionPolicy PrecisionPolicy::defaults() {
  PrecisionPolicy p;
  const char *source = "default policy";
  auto set = [&](PrecisionClass cls, std::initializer_list<const char *> ops) {
    for (const char *op : ops)
      p.setClass(op, cls, source);
  };
  // Tensor-core ops: low precision in, fp32 accumulation.
  // Attention: 16-bit Q, K and V; its scores and softmax are f32 inside
  // (mp/Dialect/MP/AttentionForm.h).
  set(PrecisionClass::Allow, {"Conv", "ConvTranspose", "MatMul", "Gemm",
                              "Einsum", "LSTM", "GRU", "RNN", "Attention"});
  for (const char *op : {"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum",
                         "LSTM", "GRU", "RNN", "Attention"})
    p.tensorCoreOps.insert(op);
  // Large reductions, range- or precision-sensitive math, losses.
  set(PrecisionClass::Deny, {"Softmax",
                             "LogSoftmax",
                             "Hardmax",
                             "LayerNormalization",
                             "GroupNormalization",
                             "RMSNormalization",
                             "InstanceNormalization",
                             "LpNormalization",
                             "MeanVarianceNormalization",
                             "LRN",
                             "ReduceSum",
                             "ReduceMean",
                             "ReduceProd",
                             "ReduceL1",
                             "ReduceL2",
                             "ReduceLogSum",
                             "ReduceLogSumExp",
                             "ReduceSumSquare",
                             "CumSum",
                             "GlobalAveragePool",
                             "GlobalLpPool",
                             "LpPool",
                             "Exp",
                             "Log",
                             "Pow",
                             "Reciprocal",
                             "Sqrt",
                             "Erf",
                             "Softplus",
                             "Mish",
                             "Sin",
                             "Cos",
                             "Tan",
                             "Asin",
                             "Acos",
                             "Atan",
                             "Sinh",
                             "Cosh",
                             "Asinh",
                             "Acosh",
                             "Atanh",
                             "NegativeLogLikelihoodLoss",
                             "SoftmaxCrossEntropyLoss",
                             "Range",
                             "TopK",
                             "NonMaxSuppression",
                             "RoiAlign",
                             "Det",
                             "Celu",
                             "Selu",
                             "Elu"});
  // Cheap elementwise math: follow the neighbours.
  set(PrecisionClass::Infer, {"Add",
                              "Sub",
                              "Mul",
                              "Div",
                              "Relu",
                              "LeakyRelu",
                              "PRelu",
                              "Sigmoid",
                              "HardSigmoid",
                              "HardSwish",
                              "Tanh",
                              "Clip",
                              "Abs",
                              "Neg",
                              "Sign",
                              "Floor",
                              "Ceil",
                              "Round",
                              "Min",
                              "Max",
                              "Mean",
                              "Sum",
                              "Where",
                              "Dropout",
                              "BatchNormalization",
                              "AveragePool",
                              "Softsign",
                              "ThresholdedRelu",
                              "Shrink",
                              "Resize",
                              "Mod",
                              "Gelu",
                              "RotaryEmbedding"});
  // No arithmetic (or exact comparisons): take the neighbours' precision.
  set(PrecisionClass::Clear, {"Reshape",        "Transpose", "Concat",
                              "Split",          "Slice",     "Gather",
                              "GatherElements", "GatherND",  "ScatterElements",
                              "ScatterND",      "Pad",       "Squeeze",
                              "Unsqueeze",      "Flatten",   "Identity",
                              "Expand",         "Tile",      "DepthToSpace",
                              "SpaceToDepth",   "MaxPool",   "GlobalMaxPool",
                              "ReduceMax",      "ReduceMin", "ArgMax",
                              "ArgMin",         "Trilu",     "ReverseSequence",
                              "Compress",       "Equal",     "Less",
                              "LessOrEqual",    "Greater",   "GreaterOrEqual",
                              "IsNaN",          "IsInf",     "Upsample",
                              "CenterCropPad"});
  // The backward ops of training (MPTrainingOps.td): the gradients of
  // tensor-core ops are tensor-core ops; batch-norm and loss gradients stay
  // f32. With `infer=BatchNormGrad` the batch-norm gradient follows its
  // neighbours as the forward does: 16-bit x, dy and dx, f32 scale and
  // scale gradients (cuDNN's backward takes them so and computes in f32),
  // without the casts of x, dy and dx around it.
  set(PrecisionClass::Allow, {"ConvGradFilter", "LSTMGrad"});
  p.tensorCoreOps.insert("ConvGradFilter");
  p.tensorCoreOps.insert("LSTMGrad");
  set(PrecisionClass::Infer, {"PoolGrad", "GeluGrad"});
  set(PrecisionClass::Deny,
      {"BatchNormGrad", "LayerNormGrad", "SoftmaxCrossEntropyGrad",
       "NegativeLogLikelihoodLossGrad"});
  // A data-parallel step's gradient buckets reach the optimizer in f32; the
  // all-reduce's reduce_type (not its tensors' type) is what travels.
  set(PrecisionClass::Deny, {"AllReduce"});
  // Operands that keep their type whatever the op's precision.
  p.keepOperand("Resize", 1, source); // roi
  p.keepOperand("Resize", 2, source); // scales
  // BatchNormalization in low precision keeps scale, bias, mean and variance
  // (and so the running statistics it outputs in training) in fp32, as cuDNN
  // and TensorFlow do.
  for (unsigned i = 1; i <= 4; ++i)
    p.keepOperand("BatchNormalization", i, source);
  p.keepOperand("BatchNormGrad", 1, source); // scale
  p.keepOperand("Dropout", 1, source); // ratio
  p.keepOperand("Attention", 3, source); // the mask, added in f32
  // Interpolation whose weights can exceed [0, 1] overshoots in f16.
  AttributeCondition cubic;
  cubic.opType = "Resize";
  cubic.attribute = "mode";
  cubic.stringValue = "cubic";
  cubic.cls = PrecisionClass::Deny;
  cubic.source = source;
  p.addCondition(cubic);
  return p;
}

void PrecisionPolicy::setClass(StringRef opType, PrecisionClass cls,
                               StringRef source) {
  classes[opType] = {cls, (source + ": " + opType + " is " + stringify(cls))
                              .str()};
}

void PrecisionPolicy::keepOperand(StringRef opType, unsigned index,
                                  StringRef) {
  auto &indices = keptOperandIndices[opType];
  if (!llvm::is_contained(indices, index))
    indices.push_back(index);
}

NodeOverride::NodeOverride(const NodeOverride &other)
    : pattern(other.pattern), isGlob(other.isGlob), cls(other.cls),
      source(other.source) {
  if (isGlob)
    cantFail(compile()); // it compiled before
}

NodeOverride &NodeOverride::operator=(const NodeOverride &other) {
  if (this != &other) {
    NodeOverride copy(other);
    pattern = std::move(copy.pattern);
    isGlob = copy.isGlob;
    cls = copy.cls;
    source = std::move(copy.source);
    if (isGlob)
      cantFail(compile());
  }
  return *this;
}

Error NodeOverride::compile() {
  Expected<GlobPattern> compiled = GlobPattern::create(pattern, /*MaxSubPatterns=*/64);
  if (!compiled)
    return createStringError(inconvertibleErrorCode(),
                             "invalid node-name glob '" + pattern +
                                 "': " + toString(compiled.takeError()));
  glob = std::move(*compiled);
  return Error::success();
}

Error PrecisionPolicy::addNodeOverride(StringRef pattern, PrecisionClass cls,
                                       StringRef source) {
  NodeOverride o;
  o.pattern = pattern.str();
  o.cls = cls;
  o.source = source.str();
  o.isGlob = pattern.find_first_of("*?[{") != StringRef::npos;
  if (!o.isGlob) {
    exactOverrides[pattern] = std::move(o);
    return Error::success();
  }
  if (Error e = o.compile())
    return e;
  globOverrides.push_back(std::move(o));
  return Error::success();
}

void PrecisionPolicy::addCondition(AttributeCondition condition) {
  attributeConditions.push_back(std::move(condition));
}

ClassDecision PrecisionPolicy::classify(StringRef opType, StringRef nodeName,
                                        mlir::Operation *op) const {
  if (!nodeName.empty()) {
    auto exact = exactOverrides.find(nodeName);
    if (exact != exactOverrides.end())
      return {exact->second.cls,
              exact->second.source + ": node '" + nodeName.str() + "' is " +
                  stringify(exact->second.cls).str(),
              /*byNodeOverride=*/true};
    for (const NodeOverride &g : llvm::reverse(globOverrides))
      if (g.matches(nodeName))
        return {g.cls,
                g.source + ": nodes '" + g.pattern + "' are " +
                    stringify(g.cls).str(),
                /*byNodeOverride=*/true};
  }
  for (const AttributeCondition &c : llvm::reverse(attributeConditions))
    if (c.opType == opType && c.matches(op))
      return {c.cls, c.source + ": " + c.describe() + " is " +
                         stringify(c.cls).str()};
  auto it = classes.find(opType);
  if (it != classes.end())
    return it->second;
  return {PrecisionClass::Deny,
          ("not in the policy: " + opType + " stays fp32").str()};
}

bool PrecisionPolicy::keepsOperand(StringRef opType, unsigned index) const {
  auto it = keptOperandIndices.find(opType);
  return it != keptOperandIndices.end() && llvm::is_contained(it->second, index);
}

SmallVector<unsigned> PrecisionPolicy::keptOperands(StringRef opType) const {
  auto it = keptOperandIndices.find(opType);
  if (it == keptOperandIndices.end())
    return {};
  SmallVector<unsigned> sorted = it->second;
  llvm::sort(sorted);
  return sorted;
}

bool PrecisionPolicy::usesTensorCores(StringRef opType) const {
  return tensorCoreOps.contains(opType);
}

bool PrecisionPolicy::hasLowPrecisionKernel(StringRef opType) const {
  return !noLowPrecisionKernel.contains(opType);
}

std::vector<std::pair<std::string, ClassDecision>>
PrecisionPolicy::classTable() const {
  std::vector<std::pair<std::string, ClassDecision>> table;
  for (const auto &entry : classes)
    table.emplace_back(entry.getKey().str(), entry.getValue());
  llvm::sort(table, [](const auto &a, const auto &b) { return a.first < b.first; });
  return table;
}

void PrecisionPolicy::writeMarkdown(raw_ostream &os) const {
  os << "<!-- Generated by `mp-opt --mp-print-policy` from "
        "lib/Autocast/PrecisionPolicy.cpp; do not edit. -->\n\n";
  os << "Target " << stringify(target) << ", level " << stringify(level)
     << ", graph inputs/outputs keep their types: "
     << (keepIOTypes ? "yes" : "no") << ". Op types not listed are deny.\n\n";
  for (PrecisionClass cls : {PrecisionClass::Allow, PrecisionClass::Infer,
                             PrecisionClass::Clear, PrecisionClass::Deny}) {
    os << "- **" << stringify(cls) << "**: ";
    bool first = true;
    for (const auto &[op, decision] : classTable()) {
      if (decision.cls != cls)
        continue;
      os << (first ? "" : ", ") << op
         << (cls == PrecisionClass::Allow && usesTensorCores(op) ? " (tc)" : "");
      first = false;
    }
    os << "\n";
  }
  os << "\n(tc): has a tensor-core kernel; the only ops the "
        "`tensor-cores-only` level converts.\n\n";
  os << "| op | operands that keep their type |\n|---|---|\n";
  std::vector<std::string> ops;
  for (const auto &entry : keptOperandIndices)
    ops.push_back(entry.getKey().str());
  llvm::sort(ops);
  for (const std::string &op : ops) {
    os << "| " << op << " | ";
    bool first = true;
    for (unsigned i : keptOperands(op)) {
      os << (first ? "" : ", ") << i;
      first = false;
    }
    os << " |\n";
  }
  os << "\n| attribute condition | class |\n|---|---|\n";
  for (const AttributeCondition &c : attributeConditions)
    os << "| " << c.describe() << " | " << stringify(c.cls) << " |\n";
}

//===----------------------------------------------------------------------===//
// Policy files
//===----------------------------------------------------------------------===//

namespace {
/// Reads a policy file's JSON, reporting the first problem with its path in
/// the document ("nodes[2].class").
class PolicyReader {
public:
  PolicyReader(PrecisionPolicy &policy, StringRef fileName)
      : policy(policy), fileName(fileName.str()) {}

  Error read(const json::Value &root) {
    const json::Object *object = root.getAsObject();
    if (!object)
      return fail("", "a policy file must hold a JSON object");
    static const char *known[] = {"target",        "level",
                                  "keep_io_types", "ops",
                                  "nodes",         "conditions",
                                  "keep_operands", "no_low_precision_kernel",
                                  "comment"};
    for (const auto &kv : *object)
      if (!llvm::is_contained(known, kv.first.str()))
        return fail(kv.first.str(),
                    "unknown key (expected one of target, level, "
                    "keep_io_types, ops, nodes, conditions, keep_operands, "
                    "no_low_precision_kernel, comment)");
    if (const json::Value *v = object->get("target")) {
      std::optional<StringRef> s = v->getAsString();
      std::optional<TargetType> t = s ? parseTargetType(*s) : std::nullopt;
      if (!t)
        return fail("target", "expected \"f16\" or \"bf16\"");
      policy.target = *t;
    }
    if (const json::Value *v = object->get("level")) {
      std::optional<StringRef> s = v->getAsString();
      std::optional<Level> l = s ? parseLevel(*s) : std::nullopt;
      if (!l)
        return fail("level", "expected \"default\", \"tensor-cores-only\" or "
                             "\"unsafe-force-all\"");
      policy.level = *l;
    }
    if (const json::Value *v = object->get("keep_io_types")) {
      std::optional<bool> b = v->getAsBoolean();
      if (!b)
        return fail("keep_io_types", "expected true or false");
      policy.keepIOTypes = *b;
    }
    if (const json::Value *v = object->get("ops"))
      if (Error e = readOps(*v))
        return e;
    if (const json::Value *v = object->get("nodes"))
      if (Error e = readNodes(*v))
        return e;
    if (const json::Value *v = object->get("conditions"))
      if (Error e = readConditions(*v))
        return e;
    if (const json::Value *v = object->get("keep_operands"))
      if (Error e = readKeptOperands(*v))
        return e;
    if (const json::Value *v = object->get("no_low_precision_kernel")) {
      const json::Array *ops = v->getAsArray();
      if (!ops)
        return fail("no_low_precision_kernel", "expected a list of op types");
      for (auto [i, op] : llvm::enumerate(*ops)) {
        std::optional<StringRef> name = op.getAsString();
        if (!name || name->empty())
          return fail("no_low_precision_kernel[" + std::to_string(i) + "]",
                      "expected an op type");
        policy.setNoLowPrecisionKernel(*name);
      }
    }
    return Error::success();
  }

private:
  Error fail(const std::string &path, const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             fileName + ": " +
                                 (path.empty() ? "" : "'" + path + "': ") +
                                 message.str());
  }

  Expected<PrecisionClass> readClass(const json::Value &v,
                                     const std::string &path) {
    std::optional<StringRef> s = v.getAsString();
    std::optional<PrecisionClass> cls = s ? parsePrecisionClass(*s) : std::nullopt;
    if (!cls)
      return fail(path, "expected a precision class: \"allow\", \"infer\", "
                        "\"clear\" or \"deny\"");
    return *cls;
  }

  /// "ops": {"Erf": "allow", ...}
  Error readOps(const json::Value &v) {
    const json::Object *ops = v.getAsObject();
    if (!ops)
      return fail("ops", "expected an object mapping op types to classes");
    for (const auto &kv : *ops) {
      std::string path = "ops." + kv.first.str();
      if (kv.first.str().empty() || !isUpper(kv.first.str()[0]))
        return fail(path, "op types are ONNX op_type names such as \"MatMul\"");
      Expected<PrecisionClass> cls = readClass(kv.second, path);
      if (!cls)
        return cls.takeError();
      policy.setClass(kv.first, *cls, source());
    }
    return Error::success();
  }

  /// "nodes": {"encoder/*/Softmax": "deny", "fc1": "allow"}
  Error readNodes(const json::Value &v) {
    const json::Object *nodes = v.getAsObject();
    if (!nodes)
      return fail("nodes", "expected an object mapping node names or globs to "
                           "classes");
    for (const auto &kv : *nodes) {
      std::string path = "nodes." + kv.first.str();
      if (kv.first.str().empty())
        return fail(path, "a node name must not be empty");
      Expected<PrecisionClass> cls = readClass(kv.second, path);
      if (!cls)
        return cls.takeError();
      if (Error e = policy.addNodeOverride(kv.first, *cls, source()))
        return fail(path, toString(std::move(e)));
    }
    return Error::success();
  }

  /// "conditions": [{"op": "Resize", "attribute": "mode", "equals": "cubic",
  ///                 "class": "deny"}]
  Error readConditions(const json::Value &v) {
    const json::Array *list = v.getAsArray();
    if (!list)
      return fail("conditions", "expected a list of conditions");
    for (auto [index, item] : llvm::enumerate(*list)) {
      std::string path = "conditions[" + std::to_string(index) + "]";
      const json::Object *object = item.getAsObject();
      if (!object)
        return fail(path, "expected an object with op, attribute, one of "
                          "equals/not_equals/less/greater, and class");
      AttributeCondition c;
      c.source = source();
      std::optional<StringRef> op = object->getString("op");
      std::optional<StringRef> attribute = object->getString("attribute");
      if (!op || op->empty())
        return fail(path + ".op", "expected the op type as a string");
      if (!attribute || attribute->empty())
        return fail(path + ".attribute", "expected the attribute name");
      c.opType = op->str();
      c.attribute = attribute->str();
      int comparisons = 0;
      for (auto [key, compare] :
           {std::pair{"equals", AttributeCondition::Compare::Equal},
            std::pair{"not_equals", AttributeCondition::Compare::NotEqual},
            std::pair{"less", AttributeCondition::Compare::Less},
            std::pair{"greater", AttributeCondition::Compare::Greater}}) {
        const json::Value *value = object->get(key);
        if (!value)
          continue;
        ++comparisons;
        c.compare = compare;
        if (std::optional<StringRef> s = value->getAsString())
          c.stringValue = s->str();
        else if (std::optional<double> d = value->getAsNumber())
          c.numberValue = *d;
        else
          return fail(path + "." + key, "expected a string or a number");
        if (!c.numberValue && (compare == AttributeCondition::Compare::Less ||
                               compare == AttributeCondition::Compare::Greater))
          return fail(path + "." + key, "less/greater compare numbers");
      }
      if (comparisons != 1)
        return fail(path, "expected exactly one of equals, not_equals, less, "
                          "greater");
      const json::Value *cls = object->get("class");
      if (!cls)
        return fail(path + ".class", "missing");
      Expected<PrecisionClass> parsed = readClass(*cls, path + ".class");
      if (!parsed)
        return parsed.takeError();
      c.cls = *parsed;
      for (const auto &kv : *object)
        if (!llvm::is_contained({"op", "attribute", "equals", "not_equals",
                                 "less", "greater", "class", "comment"},
                                kv.first.str()))
          return fail(path + "." + kv.first.str(), "unknown key");
      policy.addCondition(std::move(c));
    }
    return Error::success();
  }

  /// "keep_operands": {"Resize": [1, 2]}
  Error readKeptOperands(const json::Value &v) {
    const json::Object *ops = v.getAsObject();
    if (!ops)
      return fail("keep_operands", "expected an object mapping op types to "
                                   "lists of operand indices");
    for (const auto &kv : *ops) {
      std::string path = "keep_operands." + kv.first.str();
      const json::Array *indices = kv.second.getAsArray();
      if (!indices)
        return fail(path, "expected a list of operand indices");
      for (auto [i, index] : llvm::enumerate(*indices)) {
        std::optional<int64_t> n = index.getAsInteger();
        if (!n || *n < 0 || *n > 1024)
          return fail(path + "[" + std::to_string(i) + "]",
                      "expected an operand index (0 to 1024)");
        policy.keepOperand(kv.first, static_cast<unsigned>(*n), source());
      }
    }
    return Error::success();
  }

  static bool isUpper(char c) { return c >= 'A' && c <= 'Z'; }
  std::string source() const { return "policy file " + fileName; }

  PrecisionPolicy &policy;
  std::string fileName;
};
} // namespace

Error PrecisionPolicy::loadJSON(StringRef text, StringRef fileName) {
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return createStringError(inconvertibleErrorCode(),
                             fileName + ": invalid JSON: " +
                                 toString(root.takeError()));
  return PolicyReader(*this, fileName).read(*root);
}

Error PrecisionPolicy::loadFile(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return createStringError(file.getError(), "cannot read policy file '" +
                                                  path + "': " +
                                                  file.getError().message());
  return loadJSON((*file)->getBuffer(), path);
}

} // namespace mp::autocast
