//===- ExportPlan.cpp - culib module -> runtime plan file -----------------===//
//
// The serializer of docs/plan-format.md ("Call reference"): every culib op
// becomes one call whose operands and results are its input and output
// buffers in definition order (absent optional ones skipped, with a
// `has_<name>` attribute), and whose attributes are the op's, converted by
// one generic rule. Function arguments are the graph inputs (arena buffers
// at the offsets the memory planner chose), returned buffers the outputs.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/ShapeInference.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Runtime/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mp {
#define GEN_PASS_DEF_EXPORTPLAN
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;
using culib::CallBuffers;
using culib::NamedBuffer;

namespace {

/// The ONNX dtype code of a buffer's element type.
std::optional<rt::DType> dtypeOf(Type element) {
  return rt::dtypeFromOnnx(
      static_cast<int32_t>(getOnnxDataTypeForType(element)));
}

/// An op attribute as a plan attribute, by the rule of the call reference.
std::optional<rt::PlanAttrValue> convertAttr(Attribute attr) {
  if (auto b = dyn_cast<BoolAttr>(attr))
    return rt::PlanAttrValue(int64_t(b.getValue()));
  if (isa<UnitAttr>(attr))
    return rt::PlanAttrValue(int64_t(1));
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return rt::PlanAttrValue(i.getValue().getSExtValue());
  if (auto f = dyn_cast<FloatAttr>(attr))
    return rt::PlanAttrValue(f.getValueAsDouble());
  if (auto s = dyn_cast<StringAttr>(attr))
    return rt::PlanAttrValue(s.str());
  // Enum attributes go into the plan as the words the IR prints.
  if (std::optional<StringRef> spelling = culib::enumSpelling(attr))
    return rt::PlanAttrValue(spelling->str());
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr))
    return rt::PlanAttrValue(
        std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end()));
  if (auto t = dyn_cast<TypeAttr>(attr)) {
    if (std::optional<rt::DType> d = dtypeOf(t.getValue()))
      return rt::PlanAttrValue(int64_t(*d));
    return std::nullopt;
  }
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    std::vector<double> values;
    for (Attribute element : a) {
      auto f = dyn_cast<FloatAttr>(element);
      if (!f)
        return std::nullopt;
      values.push_back(f.getValueAsDouble());
    }
    return rt::PlanAttrValue(std::move(values));
  }
  return std::nullopt;
}

/// The bytes of a weight's value, little-endian, as the runtime stores them.
/// Resource blobs are viewed in place (the module outlives the plan).
LogicalResult weightBytes(ElementsAttr value, Location loc,
                          std::vector<char> &owned, const char *&data,
                          size_t &size) {
  ShapedType type = value.getShapedType();
  Type element = type.getElementType();
  int64_t count = type.getNumElements();
  std::optional<mp::StoredBytes> stored = mp::storedBytes(value);
  if (!stored) {
    if (isa<DenseResourceElementsAttr>(value))
      return emitError(loc) << "weight data is missing (an unloaded resource)";
    return emitError(loc) << "unsupported weight attribute " << value;
  }
  if (stored->resource) {
    data = stored->bytes.data();
    size = stored->bytes.size();
    return success();
  }
  auto dense = cast<DenseElementsAttr>(value);
  if (element.isInteger(1)) {
    // MLIR packs bools as bits; the runtime stores a byte per element.
    for (bool b : dense.getValues<bool>())
      owned.push_back(b ? 1 : 0);
  } else {
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      for (int64_t i = 0; i < count; ++i)
        owned.insert(owned.end(), raw.begin(), raw.end());
    } else {
      owned.assign(raw.begin(), raw.end());
    }
    // 4- and 2-bit integers: the runtime keeps an element's bits in the low
    // bits of its byte, the rest zero (MLIR may keep them sign-extended).
    if (auto integer = dyn_cast<IntegerType>(element);
        integer && integer.getWidth() < 8)
      for (char &byte : owned)
        byte = static_cast<char>(static_cast<unsigned char>(byte) &
                                 ((1u << integer.getWidth()) - 1));
  }
  data = owned.data();
  size = owned.size();
  return success();
}

/// The plan of a memory-planned culib function; errors are emitted on it.
std::optional<rt::Plan> translateFunc(func::FuncOp func, StringRef modelName,
                                      StringRef fileName) {
  rt::Plan plan;
  plan.producer = "mp-opt (MixPrec)";
  plan.modelName = modelName.empty() ? func.getName().str() : modelName.str();
  auto arena = func->getAttrOfType<IntegerAttr>("culib.arena_size");
  if (!arena) {
    func.emitError("the function has no memory plan: run "
                   "culib-plan-memory before culib-export-plan");
    return std::nullopt;
  }
  plan.arenaSize = arena.getInt();
  if (!func.getBody().hasOneBlock()) {
    func.emitError("a plan needs a function with one block");
    return std::nullopt;
  }

  DenseMap<Value, uint32_t> bufferIds;
  std::vector<std::vector<char>> ownedWeights;
  bool failed = false;
  auto addBuffer = [&](Value value, Location loc,
                       const std::string &name) -> rt::PlanBuffer * {
    auto type = dyn_cast<MemRefType>(value.getType());
    std::optional<rt::DType> dtype =
        type ? dtypeOf(type.getElementType()) : std::nullopt;
    if (!type || !type.hasStaticShape() || !dtype) {
      emitError(loc) << "cannot put " << value.getType()
                     << " in a plan: static buffers of the runtime's "
                        "element types only";
      failed = true;
      return nullptr;
    }
    rt::PlanBuffer buffer;
    buffer.id = plan.buffers.size();
    buffer.dtype = *dtype;
    buffer.shape.assign(type.getShape().begin(), type.getShape().end());
    buffer.name = name;
    bufferIds[value] = buffer.id;
    plan.buffers.push_back(std::move(buffer));
    return &plan.buffers.back();
  };

  // Graph inputs.
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto nameAttr =
        func.getArgAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
    auto offset = func.getArgAttrOfType<IntegerAttr>(i, "culib.offset");
    std::string name = nameAttr ? nameAttr.str() : "input" + std::to_string(i);
    if (!offset) {
      func.emitError() << "argument #" << i
                       << " has no arena offset: run culib-plan-memory";
      return std::nullopt;
    }
    rt::PlanBuffer *buffer = addBuffer(arg, func.getLoc(), name);
    if (!buffer)
      return std::nullopt;
    buffer->offset = offset.getInt();
    plan.inputs.push_back({name, buffer->id, buffer->dtype, buffer->shape});
  }

  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<culib::AllocOp>(op)) {
      if (alloc.getAtLoad()) {
        if (!addBuffer(alloc.getBuffer(), alloc.getLoc(),
                       getNodeName(alloc.getLoc())))
          return std::nullopt;
        plan.buffers.back().storage = rt::BufferStorage::Derived;
        continue;
      }
      if (!alloc.getOffset()) {
        alloc.emitError("buffer has no arena offset: run culib-plan-memory");
        return std::nullopt;
      }
      rt::PlanBuffer *buffer = addBuffer(alloc.getBuffer(), alloc.getLoc(),
                                         getNodeName(alloc.getLoc()));
      if (!buffer)
        return std::nullopt;
      buffer->offset = *alloc.getOffset();
      continue;
    }
    // A view is its source's bytes with another shape: a buffer of its
    // own in the plan, at the same place (arena offset or weight).
    if (auto view = dyn_cast<culib::ViewOp>(op)) {
      auto source = bufferIds.find(view.getSource());
      if (source == bufferIds.end()) {
        view.emitError("the source of a view is not a buffer of the "
                       "function");
        return std::nullopt;
      }
      rt::PlanBuffer from = plan.buffers[source->second];
      if (from.storage == rt::BufferStorage::State ||
          from.storage == rt::BufferStorage::Derived) {
        view.emitError("a view of a state or of a buffer made at load "
                       "cannot be put in a plan");
        return std::nullopt;
      }
      rt::PlanBuffer *buffer = addBuffer(view.getBuffer(), view.getLoc(),
                                         getNodeName(view.getLoc()));
      if (!buffer)
        return std::nullopt;
      buffer->storage = from.storage;
      buffer->offset = from.offset;
      buffer->weight = from.weight;
      continue;
    }
    // Weights and state buffers both carry a value: the bytes of a
    // weight, the initial contents of a state buffer.
    auto state = dyn_cast<culib::StateOp>(op);
    auto weight = dyn_cast<culib::WeightOp>(op);
    if (state || weight) {
      Value bufferValue = state ? state.getBuffer() : weight.getBuffer();
      StringRef bufferName = state ? state.getName() : weight.getName();
      ElementsAttr value = state ? state.getValue() : weight.getValue();
      rt::PlanBuffer *buffer =
          addBuffer(bufferValue, op.getLoc(), bufferName.str());
      if (!buffer)
        return std::nullopt;
      rt::PlanWeight w;
      w.name = bufferName.str();
      // Weight names are unique in a plan: constants of one node share
      // the node's name.
      if (llvm::any_of(plan.weights, [&](const rt::PlanWeight &other) {
            return other.name == w.name;
          }))
        w.name += "#" + std::to_string(plan.weights.size());
      w.dtype = buffer->dtype;
      w.shape = buffer->shape;
      ownedWeights.emplace_back();
      const char *data = nullptr;
      size_t size = 0;
      if (mlir::failed(
              weightBytes(value, op.getLoc(), ownedWeights.back(), data, size)))
        return std::nullopt;
      if (size != buffer->byteCount()) {
        op.emitError() << "weight '" << w.name << "' has " << size
                       << " bytes, its type needs " << buffer->byteCount();
        return std::nullopt;
      }
      w.data = data;
      w.size = size;
      buffer->storage =
          state ? rt::BufferStorage::State : rt::BufferStorage::Weight;
      buffer->weight = plan.weights.size();
      plan.weights.push_back(std::move(w));
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        auto nameAttr =
            func.getResultAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
        std::string name =
            nameAttr ? nameAttr.str() : "output" + std::to_string(i);
        auto it = bufferIds.find(value);
        if (it == bufferIds.end()) {
          ret.emitError() << "output '" << name << "' is not a buffer";
          return std::nullopt;
        }
        const rt::PlanBuffer &buffer = plan.buffers[it->second];
        plan.outputs.push_back({name, buffer.id, buffer.dtype, buffer.shape});
      }
      continue;
    }
    std::optional<CallBuffers> buffers = culib::getCallBuffers(&op);
    if (!buffers) {
      op.emitError() << "cannot put '" << op.getName()
                     << "' in a plan: it is not a culib call";
      return std::nullopt;
    }
    rt::PlanCall call;
    call.kind = buffers->kind;
    call.atLoad = op.hasAttr(culib::kAtLoadAttr);
    call.location = getNodeName(op.getLoc());
    auto collect = [&](ArrayRef<NamedBuffer> list, std::vector<uint32_t> &ids) {
      for (const NamedBuffer &b : list) {
        if (b.optional)
          call.attributes.push_back(
              {"has_" + b.name.str(), int64_t(b.value ? 1 : 0)});
        if (!b.value)
          continue;
        auto it = bufferIds.find(b.value);
        if (it == bufferIds.end()) {
          op.emitError() << "operand '" << b.name
                         << "' is not a buffer of the function";
          failed = true;
          continue;
        }
        ids.push_back(it->second);
      }
    };
    collect(buffers->ins, call.operands);
    collect(buffers->outs, call.results);
    // Attributes left at their default are not stored on the op: the
    // plan spells them out, so that the runtime needs no culib defaults.
    NamedAttrList attrs(op.getAttrs());
    op.getName().populateDefaultAttrs(attrs);
    for (NamedAttribute attr : attrs) {
      if (attr.getName() == "operandSegmentSizes" ||
          attr.getName() == culib::kAtLoadAttr)
        continue;
      std::optional<rt::PlanAttrValue> value = convertAttr(attr.getValue());
      if (!value) {
        op.emitError() << "cannot put attribute '" << attr.getName().str()
                       << "' in a plan";
        failed = true;
        continue;
      }
      call.attributes.push_back({attr.getName().str(), std::move(*value)});
    }
    plan.calls.push_back(std::move(call));
  }
  if (auto info = func->getAttrOfType<DictionaryAttr>("mp.training")) {
    auto get = [&](StringRef key) {
      auto v = info.getAs<StringAttr>(key);
      return v ? v.str() : std::string();
    };
    rt::PlanTrainingInfo training;
    training.dataInput = get("data_input");
    training.labelInput = get("label_input");
    training.lossOutput = get("loss_output");
    training.predictionOutput = get("prediction_output");
    training.skippedOutput = get("skipped_output");
    training.scaleOutput = get("scale_output");
    training.task = get("task");
    plan.training = std::move(training);
  }
  if (failed)
    return std::nullopt;
  // The bytes of owned weights must live until the plan is saved: keep
  // them with the plan.
  auto keep =
      std::make_shared<std::vector<std::vector<char>>>(std::move(ownedWeights));
  for (rt::PlanWeight &w : plan.weights)
    w.owner = std::shared_ptr<const void>(keep, nullptr);
  if (rt::Status s = rt::validatePlan(plan, fileName.str()); !s) {
    func.emitError() << s.message();
    return std::nullopt;
  }
  return plan;
}

struct ExportPlanPass : public mp::impl::ExportPlanBase<ExportPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (outputPath.empty()) {
      module.emitError("culib-export-plan needs an output file (output=...)");
      return signalPassFailure();
    }
    std::optional<rt::Plan> plan =
        translateToPlan(module, modelName, outputPath);
    if (!plan)
      return signalPassFailure();
    if (rt::Status s = rt::savePlan(*plan, outputPath); !s) {
      module.emitError() << s.message();
      return signalPassFailure();
    }
  }
};
} // namespace

std::optional<rt::Plan>
mp::translateToPlan(ModuleOp module, StringRef modelName, StringRef fileName) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      funcs.push_back(func);
  if (funcs.size() != 1) {
    module.emitError() << "a plan is made from exactly one function, the "
                          "module has "
                       << funcs.size();
    return std::nullopt;
  }
  return translateFunc(funcs.front(), modelName, fileName);
}
