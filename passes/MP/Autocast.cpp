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
#include "mp/Autocast/Colouring.h"
#include "mp/Autocast/PrecisionPolicy.h"
#include "mp/Autocast/Validation.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/Passes.h"
#include "mp/Passes/Pipelines.h"
#include "mp/Runtime/Half.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"

#include <cmath>
#include <limits>

namespace mp {
#define GEN_PASS_DEF_AUTOCAST
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;
using namespace mp::autocast;

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

/// Where the tool's defaults come from (mp::setAutocastToolDefaults).
std::function<AutocastToolDefaults()> &toolDefaultsSource() {
  static std::function<AutocastToolDefaults()> source;
  return source;
}

AutocastToolDefaults toolDefaults() {
  return toolDefaultsSource() ? toolDefaultsSource()() : AutocastToolDefaults();
}

/// Set while validation probes run their own mp-autocast: those neither
/// validate again nor write the reports that --mp-report asks for.
thread_local int validationDepth = 0;

/// An mp-autocast pass with a ready policy (a validation probe).
std::unique_ptr<Pass> createProbeAutocast(PrecisionPolicy policy);

struct AutocastPass : mp::impl::AutocastBase<AutocastPass> {
  using AutocastBase::AutocastBase;
  /// A pass with this policy instead of the one its options describe.
  explicit AutocastPass(PrecisionPolicy preset)
      : presetPolicy(std::move(preset)) {}

  LogicalResult initialize(MLIRContext *context) override {
    onnxTypes = policyOpTypes(context);
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
  /// notes for the report; the tool's defaults fill the options not given.
  /// Failure when validation cannot run.
  LogicalResult runValidation(const AutocastToolDefaults &tool,
                              std::vector<std::string> &notes) {
    double tol = tool.validateTol >= 0 ? tool.validateTol : validateTol;
    double limit = tool.validateTimeLimit >= 0 ? tool.validateTimeLimit
                                               : validateTimeLimit;
    std::vector<std::string> files(validateInputs.begin(),
                                   validateInputs.end());
    if (files.empty())
      files = tool.validateInputs;
    ValidationOptions options;
    options.tol = tol;
    options.timeLimit = limit;
    options.inputFiles = std::move(files);
    options.seed = validateSeed;
    // A variant: mp-autocast with the probe's policy (none: fp32) and the
    // compile pipeline, ending in the plan file.
    auto compile = [](ModuleOp module, const PrecisionPolicy *probePolicy,
                      StringRef planPath) -> LogicalResult {
      PassManager pm(module.getContext(), ModuleOp::getOperationName());
      ++validationDepth;
      llvm::scope_exit restoreDepth([] { --validationDepth; });
      if (probePolicy) {
        pm.addPass(createProbeAutocast(*probePolicy));
        pm.addNestedPass<func::FuncOp>(createCastCleanup());
      }
      // Unfused: each node rounds as autocast typed it, so the probes judge
      // the precision decisions themselves (fusion only drops roundings).
      buildCompilePipeline(pm, NHWCLayoutOptions{}, /*fuse=*/false);
      ExportPlanOptions exportOptions;
      exportOptions.outputPath = planPath.str();
      pm.addPass(createExportPlan(exportOptions));
      // Only the errors of the variant matter (the warnings repeat the ones
      // of the real run).
      return pm.run(module);
    };
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
    FailureOr<std::vector<std::string>> denied = findNodesToDeny(
        getOperation(), policy, options, compile, lowNodes, notes);
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
    AutocastToolDefaults tool = toolDefaults();
    if ((validate || tool.validate) && validationDepth == 0 &&
        failed(runValidation(tool, validationNotes)))
      return signalPassFailure();
    std::vector<std::string> files(reportFiles.begin(), reportFiles.end());
    if (files.empty() && validationDepth == 0)
      files = tool.reportFiles;
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

void mp::setAutocastToolDefaults(std::function<AutocastToolDefaults()> source) {
  toolDefaultsSource() = std::move(source);
}
