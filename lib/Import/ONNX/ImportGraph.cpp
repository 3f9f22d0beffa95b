//===- ImportGraph.cpp - nodes, graphs and the module ---------------------===//
//
// Builds the module: one func.func per graph, its initializers, one op per
// node in topological order (a typed mp op where the dialect has one, else
// mp.onnx_op) with subgraphs as regions. importModel checks and validates
// the model and runs ONNX shape inference first.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/defs/schema.h>

using namespace mlir;
using namespace mp;

namespace mp::onnx_import {

const OnnxOpInfo *typedOpFor(const onnx::NodeProto &node,
                             const onnx::OpSchema &schema,
                             const llvm::StringMap<OnnxOpInfo> &table,
                             MLIRContext *ctx) {
  auto info = table.find(node.op_type());
  if (info == table.end() || schema.SinceVersion() < info->second.sinceVersion)
    return nullptr;
  const OnnxOpInfo &typed = info->second;
  ArrayRef<StringAttr> known = typed.opName.getAttributeNames();
  for (const auto &attr : node.attribute())
    if (!llvm::is_contained(known, StringAttr::get(ctx, attr.name())))
      return nullptr;
  if ((typed.numInputs >= 0 && node.input_size() > typed.numInputs) ||
      (typed.numOutputs >= 0 && node.output_size() > typed.numOutputs))
    return nullptr;
  return &typed;
}

LogicalResult Importer::importNode(onnx::NodeProto &node, Block *block,
                                   Scope &scope) {
  Location loc = nodeLoc(node);
  std::string domain =
      isDefaultDomain(node.domain()) ? std::string() : node.domain();
  int64_t version = opsets.lookup(domain);
  // Generic ops keep the form the model has.
  std::string foldedInput;
  if (options.typedOps)
    foldedInput = rewriteToTypedForm(node, version, [&](llvm::StringRef name) {
      return scope.lookup(name);
    });

  // Pick a typed op when the schema version and attributes fit it.
  const OnnxOpInfo *typed = nullptr;
  if (domain.empty()) {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
    if (!schema)
      emitWarning(loc) << "'" << node.op_type()
                       << "' is not an ONNX operator at opset " << version
                       << "; it is kept as a generic op";
    if (schema && options.typedOps)
      typed = typedOpFor(node, *schema, dialect->getOnnxOpTable(), ctx);
  }

  OperationState state(loc, typed ? typed->opName.getStringRef()
                                  : OnnxGenericOp::getOperationName());
  for (const std::string &input : node.input())
    state.operands.push_back(input.empty() ? getNone(block)
                                           : scope.lookup(input));
  if (typed)
    while (typed->numInputs >= 0 &&
           static_cast<int>(state.operands.size()) < typed->numInputs)
      state.operands.push_back(getNone(block));

  int numResults = node.output_size();
  if (typed && typed->numOutputs >= 0)
    numResults = typed->numOutputs;

  // Attributes; GRAPH attributes become regions of the generic op.
  SmallVector<NamedAttribute> onnxAttrs;
  SmallVector<onnx::GraphProto *> subgraphs;
  SmallVector<Attribute> regionNames;
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    if (attr.type() == onnx::AttributeProto::GRAPH) {
      subgraphs.push_back(attr.mutable_g());
      regionNames.push_back(builder.getStringAttr(attr.name()));
      continue;
    }
    if (attr.type() == onnx::AttributeProto::GRAPHS)
      return emitError(loc)
             << describeNode(node) << " node: attribute '" << attr.name()
             << "' is a list of graphs, which is not supported";
    auto value = importAttribute(attr, loc);
    if (failed(value))
      return failure();
    onnxAttrs.push_back(builder.getNamedAttr(attr.name(), *value));
  }
  if (typed) {
    state.addAttributes(onnxAttrs);
  } else {
    state.addAttribute("domain", builder.getStringAttr(node.domain()));
    state.addAttribute("op_type", builder.getStringAttr(node.op_type()));
    state.addAttribute("version", builder.getI64IntegerAttr(version));
    if (!onnxAttrs.empty())
      state.addAttribute("onnx_attrs", builder.getDictionaryAttr(onnxAttrs));
    if (!regionNames.empty())
      state.addAttribute("region_names", builder.getArrayAttr(regionNames));
    for (size_t i = 0; i < subgraphs.size(); ++i)
      state.addRegion();
  }

  SmallVector<Attribute> outputNames;
  for (int i = 0; i < numResults; ++i)
    outputNames.push_back(builder.getStringAttr(
        i < node.output_size() ? node.output(i) : std::string()));
  state.addAttribute(MPDialect::kOutputNamesAttr,
                     builder.getArrayAttr(outputNames));
  if (!node.doc_string().empty())
    state.addAttribute(MPDialect::kDocStringAttr,
                       builder.getStringAttr(node.doc_string()));
  if (!foldedInput.empty())
    state.addAttribute("mp.axes_input", builder.getStringAttr(foldedInput));

  // Declared types (value_info / shape inference), refined below.
  for (int i = 0; i < numResults; ++i) {
    Type type = UnknownType::get(ctx);
    if (i < node.output_size() && !node.output(i).empty())
      if (const onnx::TypeProto *declared =
              declaredTypes.lookup(node.output(i))) {
        auto imported =
            importType(*declared, loc, "output '" + node.output(i) + "'");
        if (failed(imported))
          return failure();
        type = *imported;
      }
    state.types.push_back(type);
  }

  Operation *op = builder.create(state);
  // A typed op drops an inherent attribute of the wrong kind (a FLOAT where
  // the schema says INT): catch it here instead of losing the attribute.
  if (typed) {
    for (const NamedAttribute &attr : onnxAttrs) {
      std::optional<Attribute> stored = op->getInherentAttr(attr.getName());
      if (!stored || *stored != attr.getValue()) {
        op->erase();
        return emitError(loc)
               << describeNode(node) << " node: attribute '"
               << attr.getName().getValue() << "' has the wrong type for "
               << node.op_type() << " (" << attr.getValue() << ")";
      }
    }
  }

  // Subgraphs.
  for (auto [region, graph] : llvm::zip(op->getRegions(), subgraphs)) {
    Block *body = new Block();
    region.push_back(body);
    Scope inner;
    inner.parent = &scope;
    SmallVector<Value> outputs;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(body);
    if (failed(importGraph(*graph, body, inner, outputs)))
      return failure();
    SmallVector<Attribute> inputNames, outNames;
    for (const auto &in : graph->input())
      inputNames.push_back(builder.getStringAttr(in.name()));
    for (const auto &out : graph->output())
      outNames.push_back(builder.getStringAttr(out.name()));
    builder.setInsertionPointToEnd(body);
    YieldOp::create(builder, loc, outputs, builder.getStringAttr(graph->name()),
                    builder.getArrayAttr(inputNames),
                    builder.getArrayAttr(outNames));
  }

  // Refine result types with the op's own inference.
  if (auto inferrable = dyn_cast<InferTypeOpInterface>(op)) {
    SmallVector<Type> inferred;
    if (failed(inferrable.inferReturnTypes(
            ctx, loc, op->getOperands(), op->getRawDictionaryAttrs(),
            op->getPropertiesStorage(), op->getRegions(), inferred)))
      return failure();
    for (auto [result, type] : llvm::zip(op->getResults(), inferred)) {
      Type declared = result.getType();
      if (!isCompatibleType(type, declared)) {
        emitWarning(loc) << describeNode(node) << " node: ONNX shape inference "
                         << "gives " << declared << " but the operator's "
                         << "semantics give " << type << "; using the latter";
        result.setType(type);
      } else {
        result.setType(refineType(declared, type));
      }
    }
  }
  if (failed(verify(op, /*verifyRecursively=*/false)))
    return failure();

  for (auto [i, name] : llvm::enumerate(node.output()))
    if (!name.empty())
      scope.values[name] = op->getResult(i);
  return success();
}

LogicalResult Importer::importGraph(onnx::GraphProto &graph, Block *block,
                                    Scope &scope,
                                    SmallVectorImpl<Value> &outputs) {
  for (const auto &info : graph.value_info())
    if (info.has_type())
      declaredTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    if (info.has_type() && !declaredTypes.count(info.name()))
      declaredTypes[info.name()] = &info.type();

  llvm::StringMap<int> inputIndex;
  for (auto [i, input] : llvm::enumerate(graph.input()))
    inputIndex[input.name()] = i;

  // Block arguments for inputs that are not initializers.
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  for (const auto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    Location loc = NameLoc::get(builder.getStringAttr(input.name()));
    // Diagnostics name the value themselves; a NameLoc would read as a node.
    auto type = importType(input.type(), UnknownLoc::get(ctx),
                           "graph input '" + input.name() + "'");
    if (failed(type))
      return failure();
    // The main graph's arguments are created with the function.
    if (!isa<func::FuncOp>(block->getParentOp()))
      block->addArgument(*type, loc);
  }
  unsigned argIndex = 0;
  for (const auto &input : graph.input())
    if (!initializerNames.count(input.name()))
      scope.values[input.name()] = block->getArgument(argIndex++);

  for (onnx::TensorProto &init : *graph.mutable_initializer()) {
    Location loc = NameLoc::get(builder.getStringAttr(init.name()));
    // Diagnostics name the initializer themselves; a NameLoc would read as a
    // node.
    Location diagLoc = UnknownLoc::get(ctx);
    std::string name = init.name();
    std::string doc = init.doc_string();
    auto value =
        importTensor(init, diagLoc, "initializer '" + name + "'", name);
    if (failed(value))
      return failure();
    IntegerAttr index;
    auto it = inputIndex.find(name);
    if (it != inputIndex.end()) {
      index = builder.getI64IntegerAttr(it->second);
      // A declared input type must agree with the initializer's.
      const auto &input = graph.input(it->second);
      auto declared =
          importType(input.type(), diagLoc, "graph input '" + name + "'");
      if (failed(declared))
        return failure();
      if (!isCompatibleType(*declared, value->getType()))
        return emitError(diagLoc)
               << "initializer '" << name << "' has type " << value->getType()
               << " but the graph input of that name is " << *declared;
    }
    auto op = InitializerOp::create(
        builder, loc, builder.getStringAttr(name), *value, index,
        doc.empty() ? StringAttr() : builder.getStringAttr(doc));
    scope.values[name] = op.getResult();
  }

  auto order = orders.find(&graph);
  if (order == orders.end() ||
      static_cast<int>(order->second.size()) != graph.node_size())
    return emitError(UnknownLoc::get(ctx))
           << "internal error: graph '" << graph.name()
           << "' was not validated";
  for (int nodeIndex : order->second)
    if (failed(importNode(*graph.mutable_node(nodeIndex), block, scope)))
      return failure();

  for (const auto &output : graph.output()) {
    Value value = scope.lookup(output.name());
    if (!value)
      return emitError(UnknownLoc::get(ctx))
             << "graph output '" << output.name() << "' has no value";
    outputs.push_back(value);
  }
  return success();
}

OwningOpRef<ModuleOp> Importer::importModel(onnx::ModelProto &model) {
  Location fileLoc = UnknownLoc::get(ctx);
  if (!model.has_graph()) {
    emitError(fileLoc) << "not an ONNX model: it has no graph";
    return {};
  }
  if (model.ir_version() < 1) {
    emitError(fileLoc) << "not an ONNX model: it has no IR version";
    return {};
  }
  if (model.ir_version() > kMaxKnownIRVersion)
    emitWarning(fileLoc) << "the model has IR version " << model.ir_version()
                         << "; this build knows up to " << kMaxKnownIRVersion;
  if (failed(readOpsets(model)))
    return {};
  if (model.graph().sparse_initializer_size() > 0) {
    emitError(fileLoc) << "sparse initializers are not supported";
    return {};
  }

  GraphValidator validator(ctx, opsets);
  if (failed(validator.validate(model.graph(), {}, 0, orders)))
    return {};
  if (failed(specializeInputs(*model.mutable_graph(), fileLoc)))
    return {};
  // The outputs' symbolic dims as the model declares them: ONNX shape
  // inference invents names ("unk__0") for the dims it fills in.
  std::vector<onnx::TypeProto> declaredOutputTypes;
  for (const auto &output : model.graph().output())
    declaredOutputTypes.push_back(output.type());

  if (options.shapeInference) {
    // Shape inference only reads small initializers (shapes, axes): large
    // weights are moved aside while it runs, which keeps it fast.
    std::vector<std::pair<onnx::TensorProto *, std::string>> parked;
    for (onnx::TensorProto &init :
         *model.mutable_graph()->mutable_initializer())
      if (init.raw_data().size() > 4096 &&
          init.data_location() != onnx::TensorProto::EXTERNAL) {
        parked.emplace_back(&init, std::string());
        parked.back().second.swap(*init.mutable_raw_data());
        init.clear_raw_data();
        // Keep the initializer well-formed for the shape inferencer.
        init.set_data_location(onnx::TensorProto::EXTERNAL);
      }
    llvm::scope_exit restore([&] {
      for (auto &[init, data] : parked) {
        init->set_data_location(onnx::TensorProto::DEFAULT);
        init->mutable_raw_data()->swap(data);
      }
    });
    // Where it fails, types come from the model and the ops' own inference.
    std::string message;
    switch ((options.isolateShapeInference ? inferShapesIsolated(model, message)
                                           : inferShapesHere(model, message))) {
    case InferenceOutcome::Done:
      break;
    case InferenceOutcome::Failed:
      emitWarning(fileLoc) << "ONNX shape inference failed: " << message;
      break;
    case InferenceOutcome::Crashed:
      emitWarning(fileLoc) << "ONNX shape inference crashed (" << message
                           << ") and was skipped";
      break;
    case InferenceOutcome::OutOfMemory:
      // Absurd attributes (e.g. Scan's num_scan_inputs = 2^40) make ONNX
      // allocate absurd amounts.
      emitError(fileLoc) << "ONNX shape inference ran out of memory; the "
                            "model has absurd sizes in its attributes or "
                            "shapes";
      return {};
    }
  }
  // Function ops are inlined into the validated graph, after shape inference
  // (Attention's body depends on its inputs' types), and the result is
  // validated again (the bodies bring nodes and names of their own).
  if (options.inlineFunctions) {
    FailureOr<bool> inlined = inlineFunctionOps(model, fileLoc);
    if (failed(inlined))
      return {};
    if (*inlined) {
      orders.clear();
      if (failed(validator.validate(model.graph(), {}, 0, orders)))
        return {};
    }
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  ModuleOp m = *module;
  auto setString = [&](llvm::StringRef name, const std::string &value) {
    if (!value.empty())
      m->setAttr(name, builder.getStringAttr(value));
  };
  m->setAttr("mp.ir_version", builder.getI64IntegerAttr(model.ir_version()));
  SmallVector<NamedAttribute> opsetAttrs;
  for (const auto &opset : model.opset_import())
    opsetAttrs.push_back(builder.getNamedAttr(
        opset.domain().empty() ? "ai.onnx" : opset.domain(),
        builder.getI64IntegerAttr(opset.version())));
  m->setAttr("mp.opset_import", builder.getDictionaryAttr(opsetAttrs));
  setString("mp.producer_name", model.producer_name());
  setString("mp.producer_version", model.producer_version());
  setString("mp.domain", model.domain());
  if (model.model_version() != 0)
    m->setAttr("mp.model_version",
               builder.getI64IntegerAttr(model.model_version()));
  setString("mp.doc_string", model.doc_string());
  if (model.metadata_props_size() > 0) {
    SmallVector<NamedAttribute> props;
    for (const auto &p : model.metadata_props())
      if (!p.key().empty())
        props.push_back(
            builder.getNamedAttr(p.key(), builder.getStringAttr(p.value())));
    m->setAttr("mp.metadata_props", builder.getDictionaryAttr(props));
  }
  // Parts of the model the IR does not represent are kept verbatim.
  if (model.functions_size() > 0 || model.training_info_size() > 0) {
    onnx::ModelProto extra;
    *extra.mutable_functions() = model.functions();
    *extra.mutable_training_info() = model.training_info();
    m->setAttr("mp.onnx_extra",
               builder.getStringAttr(extra.SerializeAsString()));
  }

  onnx::GraphProto &graph = *model.mutable_graph();
  builder.setInsertionPointToEnd(m.getBody());

  // The function's signature: non-initializer inputs, then outputs.
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const auto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    auto type =
        importType(input.type(), fileLoc, "graph input '" + input.name() + "'");
    if (failed(type))
      return {};
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
        MPDialect::kArgNameAttr, builder.getStringAttr(input.name()))};
    if (ArrayAttr params = dimParamsAttr(input.type()))
      attrs.push_back(builder.getNamedAttr("mp.dim_params", params));
    if (!input.doc_string().empty())
      attrs.push_back(
          builder.getNamedAttr(MPDialect::kDocStringAttr,
                               builder.getStringAttr(input.doc_string())));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  std::string funcName = graph.name().empty() ? "main_graph" : graph.name();
  auto func = func::FuncOp::create(builder, fileLoc, funcName,
                                   builder.getFunctionType(argTypes, {}));
  if (graph.name().empty())
    func->setAttr("mp.unnamed_graph", builder.getUnitAttr());
  if (!graph.doc_string().empty())
    func->setAttr(MPDialect::kDocStringAttr,
                  builder.getStringAttr(graph.doc_string()));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  for (auto [arg, name] : llvm::zip(entry->getArguments(), argNames))
    arg.setLoc(NameLoc::get(builder.getStringAttr(name)));
  builder.setInsertionPointToStart(entry);

  Scope scope;
  SmallVector<Value> outputs;
  if (failed(importGraph(graph, entry, scope, outputs)))
    return {};
  builder.setInsertionPointToEnd(entry);
  func::ReturnOp::create(builder, fileLoc, outputs);

  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [value, output, declaredType] :
       llvm::zip(outputs, graph.output(), declaredOutputTypes)) {
    resultTypes.push_back(value.getType());
    SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
        MPDialect::kArgNameAttr, builder.getStringAttr(output.name()))};
    if (ArrayAttr params = dimParamsAttr(declaredType))
      attrs.push_back(builder.getNamedAttr("mp.dim_params", params));
    if (!output.doc_string().empty())
      attrs.push_back(
          builder.getNamedAttr(MPDialect::kDocStringAttr,
                               builder.getStringAttr(output.doc_string())));
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllResultAttrs(resultAttrs);

  if (failed(verify(m)))
    return {};
  return module;
}

} // namespace mp::onnx_import
