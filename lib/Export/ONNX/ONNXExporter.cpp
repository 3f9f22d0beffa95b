//===- ONNXExporter.cpp - mp dialect to ONNX models -----------------------===//
//
// The inverse of the importer: module attributes -> ModelProto fields, the
// function -> the main GraphProto (arguments -> inputs, mp.initializer ->
// initializers, ops -> nodes in program order, returned values -> outputs),
// generic ops' regions -> GRAPH attributes. Value names come from the IR
// (mp.outputs, mp.name, initializer names); values the passes created get
// fresh unique names, and a graph output keeps its name even when a pass put
// a cast in front of it.
//
//===----------------------------------------------------------------------===//
#include "mp/Export/ONNXExporter.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Dialect/MP/OpsetForms.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include <fstream>

using namespace mlir;

namespace mp {
namespace {

/// Protobuf's hard limit for one message.
constexpr uint64_t kProtobufLimit = (uint64_t(1) << 31) - 1;


std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// The raw little-endian bytes of a numeric tensor constant (splats
/// expanded), or nullopt for strings and bools.
std::optional<ArrayRef<char>> rawDataOf(ElementsAttr attr,
                                        std::string &storage) {
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  if (element.isInteger(1) || !element.isIntOrFloat())
    if (!isa<ComplexType>(element))
      return std::nullopt;
  return mp::elementBytes(attr, storage);
}

class Exporter {
public:
  Exporter(ModuleOp module, const ONNXExportOptions &options)
      : module(module), options(options) {}

  LogicalResult run(onnx::ModelProto &model);

  /// Main-graph initializers whose data is written by exportONNXFile:
  /// (tensor without its data, the data in the IR).
  std::vector<std::pair<onnx::TensorProto *, ArrayRef<char>>> largeTensors;
  uint64_t largeBytes = 0;

private:
  LogicalResult exportGraph(Block &block, onnx::GraphProto &graph,
                            ArrayRef<std::string> outputNames,
                            ArrayAttr inputNames, bool isMain,
                            func::FuncOp func);
  LogicalResult exportNode(Operation *op, onnx::GraphProto &graph);
  LogicalResult exportMixedBatchNorm(BatchNormalizationOp bn,
                                     onnx::NodeProto &node,
                                     onnx::GraphProto &graph);
  int64_t defaultOpset();
  /// Whether `op` is a reduction whose axes are an input at the module's
  /// opset (18 and later) rather than the attribute the typed op has.
  bool reductionAxesAsInput(Operation *op);
  /// The name of the axes input of such a reduction: the model's own
  /// initializer (`mp.axes_input`) while it holds `axes`, else a new int64
  /// initializer named after the op's output.
  std::string axesInput(Operation *op, DenseI64ArrayAttr axes,
                        onnx::GraphProto &graph);
  LogicalResult exportAttribute(StringRef name, Attribute value,
                                onnx::AttributeProto &attr, Operation *op);
  LogicalResult exportTensor(ElementsAttr value, StringRef name,
                             onnx::TensorProto &tensor, Operation *op,
                             bool mayGoExternal);
  LogicalResult exportType(Type type, ArrayAttr dimParams,
                           onnx::TypeProto &proto, Operation *op,
                           StringRef what);
  /// The name of `v` in the exported graph (assigned on first use).
  std::string nameOf(Value v);
  std::string uniqueName(StringRef preferred);

  ModuleOp module;
  const ONNXExportOptions &options;
  llvm::DenseMap<Value, std::string> names;
  llvm::DenseMap<OperationName, StringRef> onnxTypes;
  llvm::StringSet<> usedNames;
  llvm::StringSet<> usedNodeNames;
  unsigned fresh = 0;
};

std::string Exporter::uniqueName(StringRef preferred) {
  std::string base = preferred.empty() ? "mp_value" : preferred.str();
  std::string name = base;
  while (preferred.empty() || usedNames.contains(name)) {
    name = base + "_" + std::to_string(fresh++);
    preferred = name;
  }
  usedNames.insert(name);
  return name;
}

std::string Exporter::nameOf(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  std::string preferred;
  if (auto result = dyn_cast<OpResult>(v)) {
    Operation *op = result.getOwner();
    if (auto init = dyn_cast<InitializerOp>(op))
      preferred = init.getName().str();
    else if (auto outs = op->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr))
      if (result.getResultNumber() < outs.size())
        if (auto s = dyn_cast<StringAttr>(outs[result.getResultNumber()]))
          preferred = s.str();
    if (preferred.empty()) {
      // A value a pass created: a name no ONNX exporter we know of uses.
      std::string node = getNodeName(op);
      preferred = "mp_" +
                  (node.empty() ? op->getName().stripDialect().str() : node) +
                  "_output_" + std::to_string(result.getResultNumber());
    }
  }
  std::string name = uniqueName(preferred);
  names[v] = name;
  return name;
}

LogicalResult Exporter::exportType(Type type, ArrayAttr dimParams,
                                   onnx::TypeProto &proto, Operation *op,
                                   StringRef what) {
  if (isa<UnknownType>(type))
    return success(); // no type information, as in the original
  if (auto seq = dyn_cast<SequenceType>(type))
    return exportType(seq.getElementType(), {},
                      *proto.mutable_sequence_type()->mutable_elem_type(), op,
                      what);
  if (auto opt = dyn_cast<OptionalType>(type))
    return exportType(opt.getElementType(), {},
                      *proto.mutable_optional_type()->mutable_elem_type(), op,
                      what);
  auto tensor = dyn_cast<TensorType>(type);
  if (!tensor)
    return op->emitError("cannot export ") << what << " of type " << type;
  int64_t dtype = getOnnxDataTypeForType(tensor.getElementType());
  if (dtype == 0)
    return op->emitError("cannot export ")
           << what << ": element type " << tensor.getElementType()
           << " has no ONNX data type";
  auto *t = proto.mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(dtype));
  auto ranked = dyn_cast<RankedTensorType>(tensor);
  if (!ranked)
    return success();
  auto *shape = t->mutable_shape();
  for (auto [i, d] : llvm::enumerate(ranked.getShape())) {
    auto *dim = shape->add_dim();
    if (!ShapedType::isDynamic(d)) {
      dim->set_dim_value(d);
      continue;
    }
    if (dimParams && i < dimParams.size())
      if (auto param = dyn_cast<StringAttr>(dimParams[i]))
        if (!param.getValue().empty())
          dim->set_dim_param(param.str());
  }
  return success();
}

LogicalResult Exporter::exportTensor(ElementsAttr value, StringRef name,
                                     onnx::TensorProto &tensor, Operation *op,
                                     bool mayGoExternal) {
  auto type = cast<ShapedType>(value.getType());
  Type element = type.getElementType();
  tensor.set_name(name.str());
  for (int64_t d : type.getShape())
    tensor.add_dims(d);
  int64_t dtype = isa<StringType>(element)
                      ? static_cast<int64_t>(onnx::TensorProto::STRING)
                      : getOnnxDataTypeForType(element);
  if (dtype == 0)
    return op->emitError("cannot export tensor '")
           << name << "': element type " << element << " has no ONNX data type";
  tensor.set_data_type(static_cast<int32_t>(dtype));
  if (dtype == onnx::TensorProto::STRING) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense)
      return op->emitError("cannot export string tensor '") << name << "'";
    for (StringRef s : dense.getValues<StringRef>())
      tensor.add_string_data(s.str());
    return success();
  }
  if (element.isInteger(1)) {
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense)
      return op->emitError("cannot export bool tensor '") << name << "'";
    std::string bytes;
    for (bool b : dense.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
    tensor.set_raw_data(bytes);
    return success();
  }
  std::string storage;
  std::optional<ArrayRef<char>> raw = rawDataOf(value, storage);
  if (!raw)
    return op->emitError("cannot export the data of tensor '") << name << "'";
  // int4, uint4, float4e2m1, int2, uint2: stored one per byte, packed in ONNX.
  if (unsigned bits = mp::packedElementBits(element)) {
    tensor.set_raw_data(mp::packNarrowElements(*raw, bits));
    return success();
  }
  if (mayGoExternal && storage.empty() &&
      static_cast<int64_t>(raw->size()) >= options.externalDataThreshold) {
    // Large data is never copied into the proto: exportONNXFile streams it
    // from the IR into the model file, or into the external data file.
    largeTensors.push_back({&tensor, *raw});
    largeBytes += raw->size();
    return success();
  }
  tensor.set_raw_data(std::string(raw->data(), raw->size()));
  return success();
}

LogicalResult Exporter::exportAttribute(StringRef name, Attribute value,
                                        onnx::AttributeProto &attr,
                                        Operation *op) {
  attr.set_name(name.str());
  if (auto i = dyn_cast<IntegerAttr>(value)) {
    attr.set_type(onnx::AttributeProto::INT);
    attr.set_i(i.getValue().getSExtValue());
  } else if (auto f = dyn_cast<FloatAttr>(value)) {
    attr.set_type(onnx::AttributeProto::FLOAT);
    attr.set_f(static_cast<float>(f.getValueAsDouble()));
  } else if (auto s = dyn_cast<StringAttr>(value)) {
    attr.set_type(onnx::AttributeProto::STRING);
    attr.set_s(s.str());
  } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(value)) {
    attr.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : ints.asArrayRef())
      attr.add_ints(v);
  } else if (auto floats = dyn_cast<DenseF32ArrayAttr>(value)) {
    attr.set_type(onnx::AttributeProto::FLOATS);
    for (float v : floats.asArrayRef())
      attr.add_floats(v);
  } else if (auto t = dyn_cast<ElementsAttr>(value)) {
    attr.set_type(onnx::AttributeProto::TENSOR);
    return exportTensor(t, "", *attr.mutable_t(), op, /*mayGoExternal=*/false);
  } else if (auto type = dyn_cast<TypeAttr>(value)) {
    attr.set_type(onnx::AttributeProto::TYPE_PROTO);
    return exportType(type.getValue(), {}, *attr.mutable_tp(), op,
                      "attribute '" + name.str() + "'");
  } else if (auto list = dyn_cast<ArrayAttr>(value)) {
    bool tensors = !list.empty() && isa<ElementsAttr>(list[0]);
    attr.set_type(tensors ? onnx::AttributeProto::TENSORS
                          : onnx::AttributeProto::STRINGS);
    for (Attribute item : list) {
      if (auto s = dyn_cast<StringAttr>(item); s && !tensors) {
        attr.add_strings(s.str());
      } else if (auto t = dyn_cast<ElementsAttr>(item); t && tensors) {
        if (failed(exportTensor(t, "", *attr.add_tensors(), op, false)))
          return failure();
      } else {
        return op->emitError("cannot export attribute '")
               << name << "': mixed list " << value;
      }
    }
  } else {
    return op->emitError("cannot export attribute '")
           << name << "' of kind " << value;
  }
  return success();
}

LogicalResult Exporter::exportNode(Operation *op, onnx::GraphProto &graph) {
  onnx::NodeProto &node = *graph.add_node();
  // Node names are unique in a valid model; a pass may have named a new
  // node after the one it serves.
  std::string nodeName = getNodeName(op);
  if (!nodeName.empty()) {
    std::string unique = nodeName;
    for (unsigned i = 1; !usedNodeNames.insert(unique).second; ++i)
      unique = nodeName + "_" + std::to_string(i);
    nodeName = unique;
  }
  node.set_name(nodeName);
  if (auto doc = op->getAttrOfType<StringAttr>(MPDialect::kDocStringAttr))
    node.set_doc_string(doc.str());
  auto *dialect = op->getContext()->getLoadedDialect<MPDialect>();

  if (auto generic = dyn_cast<OnnxGenericOp>(op)) {
    node.set_op_type(generic.getOpType().str());
    if (!generic.getDomain().empty())
      node.set_domain(generic.getDomain().str());
    if (auto attrs = generic.getOnnxAttrsAttr())
      for (NamedAttribute a : attrs)
        if (failed(exportAttribute(a.getName(), a.getValue(),
                                   *node.add_attribute(), op)))
          return failure();
    ArrayAttr regionNames = generic.getRegionNamesAttr();
    for (auto [i, region] : llvm::enumerate(op->getRegions())) {
      onnx::AttributeProto &attr = *node.add_attribute();
      attr.set_name(cast<StringAttr>(regionNames[i]).str());
      attr.set_type(onnx::AttributeProto::GRAPH);
      Block &body = region.front();
      auto yield = cast<YieldOp>(body.getTerminator());
      SmallVector<std::string> outNames;
      if (ArrayAttr outs = yield.getOutputNamesAttr())
        for (Attribute a : outs)
          outNames.push_back(cast<StringAttr>(a).str());
      if (StringAttr graphName = yield.getGraphNameAttr())
        attr.mutable_g()->set_name(graphName.str());
      if (failed(exportGraph(body, *attr.mutable_g(), outNames,
                             yield.getInputNamesAttr(), false, {})))
        return failure();
    }
  } else {
    // A typed op: its inherent attributes are the node's ONNX attributes.
    if (onnxTypes.empty())
      for (const auto &entry : dialect->getOnnxOpTable())
        onnxTypes[entry.getValue().opName] = entry.getKey();
    StringRef opType = onnxTypes.lookup(op->getName());
    if (opType.empty()) {
      InFlightDiagnostic diag = op->emitError("cannot export ")
                                << op->getName() << ": it is no ONNX operator";
      // Training steps (mp-training) run as plans, not as ONNX models.
      if (isa_and_nonnull<ml_program::MLProgramDialect>(op->getDialect()) ||
          isa<ConvGradFilterOp, PoolGradOp, BatchNormGradOp,
              SoftmaxCrossEntropyGradOp, NLLLossGradOp, LSTMGradOp,
              UnscaleCheckFiniteOp, LossScaleUpdateOp, SGDUpdateOp,
              AdamUpdateOp, AllReduceOp, GeluGradOp, LayerNormGradOp>(op))
        diag << " (a training step from mp-training is compiled to a plan: "
                "--emit=plan)";
      return diag;
    }
    node.set_op_type(opType.str());
    for (StringAttr name : op->getRegisteredInfo()->getAttributeNames()) {
      if (reductionAxesAsInput(op) && name.getValue() == "axes")
        continue; // an input at this opset, below
      if (std::optional<Attribute> value = op->getInherentAttr(name))
        if (*value && failed(exportAttribute(name, *value,
                                             *node.add_attribute(), op)))
          return failure();
    }
    // Split-18 without sizes says how many parts.
    if (auto split = dyn_cast<SplitOp>(op);
        split && defaultOpset() >= 18 && !split.getNumOutputs() &&
        isa<NoneType>(split.getSplit().getType())) {
      onnx::AttributeProto &parts = *node.add_attribute();
      parts.set_name("num_outputs");
      parts.set_type(onnx::AttributeProto::INT);
      parts.set_i(static_cast<int64_t>(split.getOutputs().size()));
    }
  }

  // BatchNormalization before opset 15 needs one type for X and its
  // parameters; mixed precision keeps the statistics in f32, so the node
  // runs in f32 between two Casts (what cuDNN does inside).
  if (auto bn = dyn_cast<BatchNormalizationOp>(op);
      bn && defaultOpset() < 15 &&
      cast<ShapedType>(bn.getX().getType()).getElementType() !=
          cast<ShapedType>(bn.getScale().getType()).getElementType())
    return exportMixedBatchNorm(bn, node, graph);

  // Inputs: "" for missing optional ones, trailing missing ones dropped.
  SmallVector<std::string> inputs;
  for (Value operand : op->getOperands())
    inputs.push_back(isa<NoneType>(operand.getType()) ? std::string()
                                                      : nameOf(operand));
  while (!inputs.empty() && inputs.back().empty())
    inputs.pop_back();
  // ReduceMean-18 and its kin take the typed op's axes as an input.
  if (reductionAxesAsInput(op))
    if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
      inputs.push_back(axesInput(op, axes, graph));
  for (const std::string &in : inputs)
    node.add_input(in);
  // Outputs the model did not name (optional ones) stay "".
  auto outs = op->getAttrOfType<ArrayAttr>(MPDialect::kOutputNamesAttr);
  SmallVector<std::string> outputs;
  for (OpResult result : op->getResults()) {
    bool unnamed = outs && result.getResultNumber() < outs.size() &&
                   cast<StringAttr>(outs[result.getResultNumber()]).empty();
    outputs.push_back(unnamed && result.use_empty() ? std::string()
                                                    : nameOf(result));
  }
  while (!outputs.empty() && outputs.back().empty())
    outputs.pop_back();
  for (const std::string &out : outputs)
    node.add_output(out);
  return success();
}

std::string Exporter::axesInput(Operation *op, DenseI64ArrayAttr axes,
                                onnx::GraphProto &graph) {
  // The model's own initializer (the importer noted its name) while it holds
  // these axes.
  if (auto name = op->getAttrOfType<StringAttr>("mp.axes_input"))
    for (auto init : op->getBlock()->getOps<InitializerOp>())
      if (init.getName() == name.getValue() &&
          getConstantInts(init.getResult()) ==
              SmallVector<int64_t>(axes.asArrayRef()))
        return nameOf(init.getResult());
  std::string name = uniqueName(nameOf(op->getResult(0)) + "_axes");
  onnx::TensorProto &tensor = *graph.add_initializer();
  tensor.set_name(name);
  tensor.set_data_type(onnx::TensorProto::INT64);
  tensor.add_dims(axes.size());
  for (int64_t axis : axes.asArrayRef())
    tensor.add_int64_data(axis);
  return name;
}

bool Exporter::reductionAxesAsInput(Operation *op) {
  // onnxTypes is filled before a typed op's attributes are written.
  return op->hasAttr("axes") &&
         takesAxesAsInput(onnxTypes.lookup(op->getName()), defaultOpset());
}

int64_t Exporter::defaultOpset() {
  if (auto opsets = module->getAttrOfType<DictionaryAttr>("mp.opset_import"))
    if (auto v = opsets.getAs<IntegerAttr>("ai.onnx"))
      return v.getInt();
  return 13;
}

LogicalResult Exporter::exportMixedBatchNorm(BatchNormalizationOp bn,
                                             onnx::NodeProto &node,
                                             onnx::GraphProto &graph) {
  if (!bn.getRunningMean().use_empty() || !bn.getRunningVar().use_empty())
    return bn.emitError("cannot export BatchNormalization with ")
           << bn.getX().getType() << " data and "
           << bn.getScale().getType()
           << " statistics in training mode at opset " << defaultOpset()
           << " (needs opset 15)";
  Type statistics = cast<ShapedType>(bn.getScale().getType()).getElementType();
  int64_t statisticsType = getOnnxDataTypeForType(statistics);
  int64_t dataType = getOnnxDataTypeForType(
      cast<ShapedType>(bn.getX().getType()).getElementType());
  std::string name = node.name();
  std::string y = nameOf(bn.getY());
  std::string xWide = uniqueName(y + "/input_" + typeName(statistics));
  std::string yWide = uniqueName(y + "_" + typeName(statistics));
  // Cast in, then the node itself, then Cast out (node order: the cast in
  // must come first).
  onnx::NodeProto castIn;
  castIn.set_op_type("Cast");
  castIn.set_name(name + "/CastIn");
  castIn.add_input(nameOf(bn.getX()));
  castIn.add_output(xWide);
  auto *to = castIn.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(statisticsType);
  onnx::NodeProto bnNode = node;
  graph.mutable_node()->RemoveLast();
  *graph.add_node() = castIn;
  bnNode.add_input(xWide);
  for (Value v : {bn.getScale(), bn.getB(), bn.getInputMean(), bn.getInputVar()})
    bnNode.add_input(nameOf(v));
  bnNode.add_output(yWide); // attributes: already on `node`
  *graph.add_node() = bnNode;
  onnx::NodeProto &castOut = *graph.add_node();
  castOut.set_op_type("Cast");
  castOut.set_name(name + "/CastOut");
  castOut.add_input(yWide);
  castOut.add_output(y);
  auto *back = castOut.add_attribute();
  back->set_name("to");
  back->set_type(onnx::AttributeProto::INT);
  back->set_i(dataType);
  return success();
}

LogicalResult Exporter::exportGraph(Block &block, onnx::GraphProto &graph,
                                    ArrayRef<std::string> outputNames,
                                    ArrayAttr inputNames, bool isMain,
                                    func::FuncOp func) {
  Operation *terminator = block.getTerminator();
  // Inputs: the block's arguments (named by mp.name / the yield's
  // input_names), with initializers that are also inputs at their index.
  SmallVector<std::pair<int64_t, onnx::ValueInfoProto>> initializerInputs;
  for (BlockArgument arg : block.getArguments()) {
    std::string name;
    ArrayAttr dimParams;
    StringAttr doc;
    if (isMain) {
      if (auto n = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    MPDialect::kArgNameAttr))
        name = n.str();
      dimParams = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                   "mp.dim_params");
      doc = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                              MPDialect::kDocStringAttr);
    } else if (inputNames && arg.getArgNumber() < inputNames.size()) {
      name = cast<StringAttr>(inputNames[arg.getArgNumber()]).str();
    }
    if (name.empty())
      name = "input_" + std::to_string(arg.getArgNumber());
    name = uniqueName(name);
    names[arg] = name;
    onnx::ValueInfoProto &info = *graph.add_input();
    info.set_name(name);
    if (doc)
      info.set_doc_string(doc.str());
    if (failed(exportType(arg.getType(), dimParams, *info.mutable_type(),
                          terminator, "graph input '" + name + "'")))
      return failure();
  }

  // Graph outputs keep their names: a returned value takes the output's name
  // unless it already has one (a graph input, an initializer, a value
  // returned twice), in which case an Identity node gives it the name.
  SmallVector<std::string> finalOutputNames;
  SmallVector<std::pair<Value, std::string>> identities;
  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    std::string wanted =
        i < outputNames.size() && !outputNames[i].empty() ? outputNames[i] : "";
    if (wanted.empty()) {
      finalOutputNames.push_back("");
      continue;
    }
    bool hasName = names.count(v) ||
                   (v.getDefiningOp() && isa<InitializerOp>(v.getDefiningOp()));
    if (!hasName && !usedNames.contains(wanted)) {
      usedNames.insert(wanted);
      names[v] = wanted;
    } else {
      identities.push_back({v, wanted});
    }
    finalOutputNames.push_back(wanted);
  }
  // Reserve the names the IR gives so that fresh names avoid them.
  block.walk([&](Operation *op) {
    if (auto init = dyn_cast<InitializerOp>(op))
      usedNames.insert(init.getName());
  });

  for (Operation &op : block.without_terminator()) {
    if (isa<NoneOp>(op))
      continue;
    if (auto init = dyn_cast<InitializerOp>(op)) {
      std::string name = init.getName().str();
      names[init.getResult()] = name;
      onnx::TensorProto &tensor = *graph.add_initializer();
      if (failed(exportTensor(init.getValue(), name, tensor, &op, isMain)))
        return failure();
      if (auto doc = init.getDocString())
        tensor.set_doc_string(doc->str());
      if (std::optional<int64_t> index = init.getInputIndex()) {
        onnx::ValueInfoProto info;
        info.set_name(name);
        if (failed(exportType(init.getType(), {}, *info.mutable_type(), &op,
                              "graph input '" + name + "'")))
          return failure();
        initializerInputs.push_back({*index, std::move(info)});
      }
      continue;
    }
    if (failed(exportNode(&op, graph)))
      return failure();
  }
  for (auto &[v, wanted] : identities) {
    onnx::NodeProto &node = *graph.add_node();
    node.set_op_type("Identity");
    node.set_name(wanted + "/Identity");
    node.add_input(nameOf(v));
    node.add_output(wanted);
  }

  // Initializers that are also inputs go back to their places in the list.
  llvm::sort(initializerInputs,
             [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto &[index, info] : initializerInputs) {
    auto *inputs = graph.mutable_input();
    int64_t at = std::min<int64_t>(index, inputs->size());
    *inputs->Add() = std::move(info);
    for (int64_t j = inputs->size() - 1; j > at; --j)
      inputs->SwapElements(j, j - 1);
  }

  for (auto [i, v] : llvm::enumerate(terminator->getOperands())) {
    onnx::ValueInfoProto &info = *graph.add_output();
    info.set_name(finalOutputNames[i].empty() ? nameOf(v) : finalOutputNames[i]);
    ArrayAttr dimParams;
    if (isMain) {
      dimParams = func.getResultAttrOfType<ArrayAttr>(i, "mp.dim_params");
      if (auto doc = func.getResultAttrOfType<StringAttr>(
              i, MPDialect::kDocStringAttr))
        info.set_doc_string(doc.str());
    }
    if (failed(exportType(v.getType(), dimParams, *info.mutable_type(),
                          terminator, "graph output '" + info.name() + "'")))
      return failure();
  }
  return success();
}

LogicalResult Exporter::run(onnx::ModelProto &model) {
  auto funcs = llvm::to_vector(module.getOps<func::FuncOp>());
  if (funcs.size() != 1)
    return module.emitError("cannot export: an ONNX model has one main "
                            "graph, the module has ")
           << funcs.size() << " functions";
  func::FuncOp func = funcs.front();
  if (!func.getBody().hasOneBlock())
    return func.emitError("cannot export: the function has no single body");

  if (auto v = module->getAttrOfType<IntegerAttr>("mp.ir_version"))
    model.set_ir_version(v.getInt());
  else
    model.set_ir_version(8);
  if (auto opsets = module->getAttrOfType<DictionaryAttr>("mp.opset_import")) {
    for (NamedAttribute entry : opsets) {
      auto *opset = model.add_opset_import();
      StringRef domain = entry.getName().getValue();
      opset->set_domain(domain == "ai.onnx" ? "" : domain.str());
      opset->set_version(cast<IntegerAttr>(entry.getValue()).getInt());
    }
  } else {
    auto *opset = model.add_opset_import();
    opset->set_version(13);
  }
  auto str = [&](StringRef name) -> std::string {
    if (auto s = module->getAttrOfType<StringAttr>(name))
      return s.str();
    return "";
  };
  model.set_producer_name(str("mp.producer_name"));
  model.set_producer_version(str("mp.producer_version"));
  model.set_domain(str("mp.domain"));
  model.set_doc_string(str("mp.doc_string"));
  if (auto v = module->getAttrOfType<IntegerAttr>("mp.model_version"))
    model.set_model_version(v.getInt());
  if (auto props = module->getAttrOfType<DictionaryAttr>("mp.metadata_props"))
    for (NamedAttribute p : props) {
      auto *entry = model.add_metadata_props();
      entry->set_key(p.getName().str());
      entry->set_value(cast<StringAttr>(p.getValue()).str());
    }
  if (auto extra = module->getAttrOfType<StringAttr>("mp.onnx_extra")) {
    onnx::ModelProto parsed;
    if (!parsed.ParseFromString(extra.str()))
      return module.emitError("cannot export: mp.onnx_extra is corrupt");
    *model.mutable_functions() = parsed.functions();
    *model.mutable_training_info() = parsed.training_info();
  }

  onnx::GraphProto &graph = *model.mutable_graph();
  if (!func->hasAttr("mp.unnamed_graph"))
    graph.set_name(func.getSymName().str());
  if (auto doc = func->getAttrOfType<StringAttr>(MPDialect::kDocStringAttr))
    graph.set_doc_string(doc.str());
  SmallVector<std::string> outputNames;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto n = func.getResultAttrOfType<StringAttr>(i, MPDialect::kArgNameAttr);
    outputNames.push_back(n ? n.str() : "output_" + std::to_string(i));
  }
  return exportGraph(func.getBody().front(), graph, outputNames, {},
                     /*isMain=*/true, func);
}

/// Writes `bytes` to a temporary file next to `path` and renames it over
/// `path`.
LogicalResult writeAtomically(Operation *anchor, StringRef path,
                              function_ref<bool(std::ostream &)> write) {
  SmallString<256> temp(path);
  temp += ".tmp-%%%%%%";
  int fd;
  SmallString<256> tempPath;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(temp, fd, tempPath))
    return anchor->emitError("cannot write '") << path << "': " << ec.message();
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  bool ok;
  {
    std::ofstream out(tempPath.c_str(), std::ios::binary | std::ios::trunc);
    ok = out.good() && write(out);
    out.flush();
    ok = ok && out.good();
  }
  if (!ok) {
    llvm::sys::fs::remove(tempPath);
    return anchor->emitError("cannot write '") << path << "'";
  }
  if (std::error_code ec = llvm::sys::fs::rename(tempPath, path)) {
    llvm::sys::fs::remove(tempPath);
    return anchor->emitError("cannot write '") << path << "': " << ec.message();
  }
  return success();
}

/// Protobuf's base-128 varint.
void writeVarint(std::ostream &out, uint64_t v) {
  char buf[10];
  int n = 0;
  do {
    buf[n++] = static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    v >>= 7;
  } while (v);
  out.write(buf, n);
}

size_t varintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Writes `model` with the data of `large` (tensors of its main graph whose
/// raw_data was left empty) streamed from the IR, never copied into the
/// proto. Protobuf's wire format allows it: fields may come in any order and
/// a repeated field's entries anywhere, so the model's fields are written
/// first, then the graph (field 7) as its small part followed by each large
/// initializer (field 5) as its header fields plus raw_data (field 9).
bool writeStreaming(
    onnx::ModelProto &model,
    const std::vector<std::pair<onnx::TensorProto *, ArrayRef<char>>> &large,
    std::ostream &out) {
  constexpr char kModelGraph = (7 << 3) | 2, kGraphInitializer = (5 << 3) | 2,
                 kTensorRawData = (9 << 3) | 2;
  onnx::GraphProto graph;
  graph.Swap(model.mutable_graph());
  model.clear_graph();
  // Take the large initializers out of the graph, keeping them alive.
  llvm::DenseSet<const onnx::TensorProto *> isLarge;
  for (const auto &entry : large)
    isLarge.insert(entry.first);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> all;
  all.Swap(graph.mutable_initializer());
  for (onnx::TensorProto &t : all)
    if (!isLarge.contains(&t))
      *graph.add_initializer() = t;
  std::string head = model.SerializeAsString();
  std::string graphHead = graph.SerializeAsString();
  std::vector<std::string> headers;
  uint64_t graphLength = graphHead.size();
  for (const auto &[tensor, bytes] : large) {
    headers.push_back(tensor->SerializeAsString());
    uint64_t tensorLength = headers.back().size() + 1 +
                            varintSize(bytes.size()) + bytes.size();
    graphLength += 1 + varintSize(tensorLength) + tensorLength;
  }
  out.write(head.data(), head.size());
  out.put(kModelGraph);
  writeVarint(out, graphLength);
  out.write(graphHead.data(), graphHead.size());
  for (auto [i, entry] : llvm::enumerate(large)) {
    ArrayRef<char> bytes = entry.second;
    uint64_t tensorLength = headers[i].size() + 1 + varintSize(bytes.size()) +
                            bytes.size();
    out.put(kGraphInitializer);
    writeVarint(out, tensorLength);
    out.write(headers[i].data(), headers[i].size());
    out.put(kTensorRawData);
    writeVarint(out, bytes.size());
    out.write(bytes.data(), bytes.size());
  }
  return out.good();
}

} // namespace

FailureOr<std::string> exportONNXToString(ModuleOp module) {
  try {
    ONNXExportOptions options;
    Exporter exporter(module, options);
    onnx::ModelProto model;
    if (failed(exporter.run(model)))
      return failure();
    if (model.ByteSizeLong() + exporter.largeBytes > kProtobufLimit)
      return module.emitError("cannot export: the model is over 2 GB; write "
                              "it to a file (external data)"),
             failure();
    for (auto &[tensor, bytes] : exporter.largeTensors)
      tensor->set_raw_data(std::string(bytes.data(), bytes.size()));
    return model.SerializeAsString();
  } catch (const std::exception &e) {
    return module.emitError("cannot export: ") << e.what(), failure();
  }
}

LogicalResult exportONNXFile(ModuleOp module, StringRef path,
                             const ONNXExportOptions &options) {
  try {
    Exporter exporter(module, options);
    onnx::ModelProto model;
    if (failed(exporter.run(model)))
      return failure();
    // Large weights go to the external data file when the model would not
    // fit in one protobuf message, or when asked to.
    uint64_t total = model.ByteSizeLong() + exporter.largeBytes +
                     16 * exporter.largeTensors.size();
    bool external = options.forceExternalData || total > kProtobufLimit;
    std::string dataFile = options.externalDataFile.empty()
                               ? llvm::sys::path::filename(path).str() + ".data"
                               : options.externalDataFile;
    if (external && !exporter.largeTensors.empty()) {
      SmallString<256> dataPath(llvm::sys::path::parent_path(path));
      llvm::sys::path::append(dataPath, dataFile);
      uint64_t offset = 0;
      std::vector<std::pair<ArrayRef<char>, uint64_t>> chunks;
      for (auto &[tensor, bytes] : exporter.largeTensors) {
        // 4 KiB alignment lets readers mmap each tensor.
        offset = (offset + 4095) / 4096 * 4096;
        tensor->set_data_location(onnx::TensorProto::EXTERNAL);
        auto add = [&](StringRef key, const std::string &value) {
          auto *entry = tensor->add_external_data();
          entry->set_key(key.str());
          entry->set_value(value);
        };
        add("location", dataFile);
        add("offset", std::to_string(offset));
        add("length", std::to_string(bytes.size()));
        chunks.push_back({bytes, offset});
        offset += bytes.size();
      }
      if (failed(writeAtomically(module, dataPath, [&](std::ostream &out) {
            uint64_t at = 0;
            for (auto &[bytes, start] : chunks) {
              std::string zeros(start - at, '\0');
              out.write(zeros.data(), zeros.size());
              out.write(bytes.data(), bytes.size());
              at = start + bytes.size();
            }
            return out.good();
          })))
        return failure();
      if (model.ByteSizeLong() > kProtobufLimit)
        return module.emitError("cannot export: the model is over 2 GB even "
                                "with its weights in external data"),
               failure();
      return writeAtomically(module, path, [&](std::ostream &out) {
        return model.SerializeToOstream(&out);
      });
    }
    return writeAtomically(module, path, [&](std::ostream &out) {
      return writeStreaming(model, exporter.largeTensors, out);
    });
  } catch (const std::exception &e) {
    return module.emitError("cannot export: ") << e.what(), failure();
  }
}

} // namespace mp
