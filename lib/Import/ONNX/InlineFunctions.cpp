//===- InlineFunctions.cpp - function ops as their ONNX function bodies ---===//
//
// Many newer ONNX operators are defined as functions of older ones in their
// schema: RMSNormalization, Gelu, GroupNormalization, Attention (a function
// that depends on the node's attributes and input types), CenterCropPad,
// Mish, ... A node of such an operator that has no typed mp op, or whose
// form the typed op does not take, is replaced by its body before import
// (ONNX's inliner, onnx/inliner/inliner.h), so that it lowers through the
// ops it is made of. So are calls of the model's own local functions, which
// exporters write for modules (torch.onnx's export_modules_as_functions).
// ONNXImportOptions::inlineFunctions (mp-opt --onnx-inline-functions=false)
// keeps them as generic ops instead, for an export that must return the
// nodes as they were.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include <onnx/defs/schema.h>
#include <onnx/inliner/inliner.h>

#include "llvm/ADT/StringSet.h"

#include <exception>
#include <set>

using namespace mlir;

namespace mp::onnx_import {

FailureOr<bool> Importer::inlineFunctionOps(onnx::ModelProto &model,
                                            Location fileLoc) {
  const auto &table = dialect->getOnnxOpTable();
  int64_t version = opsets.lookup("");
  onnx::inliner::FunctionIdVector selected;
  std::set<std::string> seen;
  for (const onnx::NodeProto &node : model.graph().node()) {
    if (!isDefaultDomain(node.domain()) || !seen.insert(node.op_type()).second)
      continue;
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
    if (!schema ||
        (!schema->HasFunction() && !schema->HasContextDependentFunction()))
      continue;
    // All nodes of an op type are inlined or none: inline the type when one
    // of its nodes would stay generic.
    bool anyGeneric = false;
    for (const onnx::NodeProto &other : model.graph().node())
      if (other.op_type() == node.op_type() &&
          isDefaultDomain(other.domain()) &&
          !typedOpFor(other, *schema, table, ctx))
        anyGeneric = true;
    if (anyGeneric)
      selected.emplace_back(node.domain(), node.op_type());
  }
  if (selected.empty() && model.functions_size() == 0)
    return false;
  // The bodies read the node's attributes (Cast <to = @output_datatype>),
  // and the inliner leaves one the node does not set unresolved: the
  // schema's defaults are written into the nodes first.
  for (onnx::NodeProto &node : *model.mutable_graph()->mutable_node()) {
    if (!isDefaultDomain(node.domain()) ||
        !llvm::any_of(selected, [&](const auto &id) {
          return id.second == node.op_type();
        }))
      continue;
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
    for (const auto &[name, attr] : schema->attributes()) {
      if (attr.default_value.type() == onnx::AttributeProto::UNDEFINED ||
          llvm::any_of(node.attribute(),
                       [&](const auto &set) { return set.name() == name; }))
        continue;
      onnx::AttributeProto &value = *node.add_attribute();
      value = attr.default_value;
      value.set_name(name);
    }
  }
  // Context-dependent bodies (Attention, CenterCropPad) are built from the
  // inputs' types, which the inliner reads from the graph's inputs and
  // value_info: initializers (frozen inputs among them) get theirs.
  onnx::GraphProto &graph = *model.mutable_graph();
  llvm::StringSet<> typed;
  for (const auto &info : graph.input())
    typed.insert(info.name());
  for (const auto &info : graph.value_info())
    typed.insert(info.name());
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (typed.contains(init.name()))
      continue;
    onnx::ValueInfoProto &info = *graph.add_value_info();
    info.set_name(init.name());
    auto *tensor = info.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(init.data_type());
    auto *shape = tensor->mutable_shape();
    for (int64_t d : init.dims())
      shape->add_dim()->set_dim_value(d);
  }
  // ONNX's inliner converts a body of another opset version as a model
  // whose inputs are the node's inputs, and asks each its type: an omitted
  // optional input (name "") has none, which it asserts on. A placeholder
  // type for "" answers it; the converted body never reads the omitted input,
  // and the placeholder is removed again.
  const bool placeholder = !typed.contains("");
  if (placeholder) {
    onnx::ValueInfoProto &info = *graph.add_value_info();
    info.mutable_type()->mutable_tensor_type()->set_elem_type(
        onnx::TensorProto::FLOAT);
  }
  auto removePlaceholder = [&] {
    if (!placeholder)
      return;
    auto *infos = graph.mutable_value_info();
    for (int i = infos->size() - 1; i >= 0; --i)
      if (infos->Get(i).name().empty()) {
        infos->DeleteSubrange(i, 1);
        break;
      }
  };
  try {
    if (model.functions_size() > 0)
      onnx::inliner::InlineLocalFunctions(model, /*convert_version=*/true);
    if (!selected.empty()) {
      auto ids = onnx::inliner::FunctionIdSet::Create(std::move(selected));
      onnx::inliner::InlineSelectedFunctions(
          model, *ids, onnx::OpSchemaRegistry::Instance());
    }
  } catch (const std::exception &e) {
    removePlaceholder();
    return emitError(fileLoc)
           << "cannot inline the model's function ops: " << e.what();
  }
  removePlaceholder();
  return true;
}

} // namespace mp::onnx_import
