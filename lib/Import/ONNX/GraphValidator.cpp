//===- GraphValidator.cpp - checks of a model before it is built ----------===//
//
// What the importer checks before ONNX shape inference and the builder see a
// graph: tensors (data types, dims, sizes), opsets and domains, the nodes
// against their ONNX schemas, names (defined once, defined before use), and
// cycles, recursively through subgraphs; GraphValidator also computes the
// topological order the builder follows.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/defs/schema.h>

#include <limits>

using namespace mlir;
using namespace mp;

namespace mp::onnx_import {

bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::string describeNode(const onnx::NodeProto &node) {
  std::string s = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    s = node.domain() + "::" + s;
  return s;
}

size_t elementByteSize(int dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL:
    return 1;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::COMPLEX64:
    return 8;
  case onnx::TensorProto::COMPLEX128:
    return 16;
  default:
    // float8 (17-20), float8e8m0 (24); int4, uint4, float4e2m1, int2 and
    // uint2 (21-23, 25, 26), which the IR stores one element per byte.
    return (dataType >= 17 && dataType <= 26) ? 1 : 0;
  }
}

unsigned packedBits(int dataType) {
  switch (dataType) {
  case onnx::TensorProto::UINT4:
  case onnx::TensorProto::INT4:
  case onnx::TensorProto::FLOAT4E2M1:
    return 4;
  case onnx::TensorProto::UINT2:
  case onnx::TensorProto::INT2:
    return 2;
  default:
    return 0;
  }
}

size_t onnxDataBytes(int dataType, int64_t count) {
  if (unsigned bits = packedBits(dataType))
    return (static_cast<size_t>(count) * bits + 7) / 8;
  return static_cast<size_t>(count) * elementByteSize(dataType);
}

/// Checks what can be checked of a tensor without reading external data:
/// its data type, its dims, and that it holds as many values as they need.
/// Returns the element count. Runs before ONNX shape inference, which reads
/// small tensors (shapes, axes) and crashes on some malformed ones.
FailureOr<int64_t> checkTensor(const onnx::TensorProto &tensor, Location loc,
                               llvm::StringRef what) {
  int dataType = tensor.data_type();
  if (!getTypeForOnnxDataType(loc.getContext(), dataType))
    return emitError(loc) << what << " has unsupported data type " << dataType;
  if (tensor.has_segment())
    return emitError(loc) << what << " is segmented, which is not supported";
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError(loc) << what << " has negative dim " << d;
    if (d != 0 && count > kMaxElements / d)
      return emitError(loc) << what << " claims more than 2^40 elements";
    count *= d;
  }
  if (dataType == onnx::TensorProto::STRING) {
    if (tensor.string_data_size() != count)
      return emitError(loc) << what << " has " << tensor.string_data_size()
                            << " strings for " << count << " elements";
    return count;
  }
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return count;
  size_t byteSize = onnxDataBytes(dataType, count);
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != byteSize)
      return emitError(loc)
             << what << " has " << tensor.raw_data().size()
             << " bytes of data, its shape and type need " << byteSize;
    return count;
  }
  int64_t have, need = count;
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::COMPLEX64:
    have = tensor.float_data_size();
    need *= dataType == onnx::TensorProto::COMPLEX64 ? 2 : 1;
    break;
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::COMPLEX128:
    have = tensor.double_data_size();
    need *= dataType == onnx::TensorProto::COMPLEX128 ? 2 : 1;
    break;
  case onnx::TensorProto::INT64:
    have = tensor.int64_data_size();
    break;
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::UINT64:
    have = tensor.uint64_data_size();
    break;
  default: // int32_data holds INT32, BOOL and every narrower type
    have = tensor.int32_data_size();
    if (packedBits(dataType))
      need = static_cast<int64_t>(byteSize); // one packed byte per int32
    break;
  }
  if (have != need)
    return emitError(loc) << what << " has " << have << " values for " << need
                          << " elements of its shape";
  return count;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

LogicalResult GraphValidator::validate(
    const onnx::GraphProto &graph, const llvm::StringSet<> &outer, int depth,
    llvm::DenseMap<const onnx::GraphProto *, std::vector<int>> &orders) {
  if (depth > kMaxGraphDepth)
    return emitError(UnknownLoc::get(ctx)) << "subgraphs are nested more than "
                                           << kMaxGraphDepth << " levels deep";
  llvm::StringSet<> defined = outer; // names usable in this graph
  llvm::StringSet<> local;           // names defined in this graph
  auto define = [&](const std::string &name, Location loc,
                    llvm::StringRef what) -> LogicalResult {
    if (name.empty())
      return success();
    if (!local.insert(name).second)
      return emitError(loc) << "duplicate definition of value '" << name
                            << "' (" << what << ")";
    defined.insert(name);
    return success();
  };
  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (init.name().empty())
      return emitError(UnknownLoc::get(ctx))
             << "graph '" << graph.name() << "' has an unnamed initializer";
    if (!initializerNames.insert(init.name()).second)
      return emitError(UnknownLoc::get(ctx))
             << "duplicate initializer '" << init.name() << "'";
    if (failed(checkTensor(init, UnknownLoc::get(ctx),
                           "initializer '" + init.name() + "'")))
      return failure();
    if (failed(define(init.name(), UnknownLoc::get(ctx), "initializer")))
      return failure();
  }
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (input.name().empty())
      return emitError(UnknownLoc::get(ctx))
             << "graph '" << graph.name() << "' has an unnamed input";
    if (!inputNames.insert(input.name()).second)
      return emitError(UnknownLoc::get(ctx))
             << "duplicate graph input '" << input.name() << "'";
    // An input may share its name with an initializer (its default value).
    if (!initializerNames.count(input.name()) &&
        failed(define(input.name(), UnknownLoc::get(ctx), "graph input")))
      return failure();
  }
  // Which node produces each name.
  llvm::StringMap<int> producer;
  int numNodes = graph.node_size();
  for (int i = 0; i < numNodes; ++i) {
    const onnx::NodeProto &node = graph.node(i);
    Location loc = nodeLoc(node);
    if (node.op_type().empty())
      return emitError(loc) << "node has no op_type";
    if (failed(checkDomain(node, loc)) || failed(checkSchema(node, loc)))
      return failure();
    for (const std::string &out : node.output()) {
      if (failed(define(out, loc, "output of node '" + node.name() + "'")))
        return failure();
      if (!out.empty())
        producer[out] = i;
    }
  }
  // Dependencies: direct inputs and names used inside subgraphs.
  std::vector<llvm::SmallVector<int, 4>> users(numNodes);
  std::vector<int> pending(numNodes, 0);
  for (int i = 0; i < numNodes; ++i) {
    const onnx::NodeProto &node = graph.node(i);
    llvm::SetVector<llvm::StringRef> needed;
    for (const std::string &in : node.input())
      if (!in.empty())
        needed.insert(in);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.type() == onnx::AttributeProto::GRAPH)
        collectFreeNames(attr.g(), needed, 0);
      else if (attr.type() == onnx::AttributeProto::GRAPHS)
        for (const onnx::GraphProto &g : attr.graphs())
          collectFreeNames(g, needed, 0);
    }
    for (llvm::StringRef name : needed) {
      if (!defined.count(name))
        return emitError(nodeLoc(node))
               << describeNode(node) << " node uses '" << name
               << "', which is not defined: no graph input, initializer or "
                  "node output has this name";
      auto it = producer.find(name);
      if (it != producer.end()) {
        if (it->second == i)
          return emitError(nodeLoc(node))
                 << describeNode(node) << " node uses its own output '" << name
                 << "' (a cycle)";
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
  }
  // Kahn's algorithm; keeps the file's order among ready nodes.
  std::vector<int> order;
  order.reserve(numNodes);
  std::vector<int> ready;
  for (int i = numNodes - 1; i >= 0; --i)
    if (pending[i] == 0)
      ready.push_back(i);
  while (!ready.empty()) {
    int i = ready.back();
    ready.pop_back();
    order.push_back(i);
    llvm::SmallVector<int, 4> newlyReady;
    for (int user : users[i])
      if (--pending[user] == 0)
        newlyReady.push_back(user);
    llvm::sort(newlyReady, std::greater<int>());
    ready.insert(ready.end(), newlyReady.begin(), newlyReady.end());
    llvm::sort(ready, std::greater<int>());
  }
  if (static_cast<int>(order.size()) != numNodes) {
    for (int i = 0; i < numNodes; ++i)
      if (pending[i] != 0)
        return emitError(nodeLoc(graph.node(i)))
               << "the graph has a cycle through "
               << describeNode(graph.node(i)) << " node '"
               << graph.node(i).name() << "'";
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!defined.count(output.name()))
      return emitError(UnknownLoc::get(ctx))
             << "graph output '" << output.name()
             << "' is not produced by any node, input or initializer";
  // Subgraphs.
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.type() == onnx::AttributeProto::GRAPH) {
        if (failed(validate(attr.g(), defined, depth + 1, orders)))
          return failure();
      } else if (attr.type() == onnx::AttributeProto::GRAPHS) {
        for (const onnx::GraphProto &g : attr.graphs())
          if (failed(validate(g, defined, depth + 1, orders)))
            return failure();
      }
    }
  orders[&graph] = std::move(order);
  return success();
}

LogicalResult GraphValidator::checkDomain(const onnx::NodeProto &node,
                                          Location loc) {
  llvm::StringRef domain = node.domain();
  auto it = opsets.find(isDefaultDomain(domain) ? llvm::StringRef() : domain);
  if (it == opsets.end())
    return emitError(loc)
           << describeNode(node) << " node uses domain '"
           << (domain.empty() ? "ai.onnx" : domain)
           << "', which the model does not import (add it to opset_import)";
  return success();
}

/// Checks a node against its ONNX operator schema where ONNX knows the
/// domain: what ONNX's checker verifies and shape inference relies on
/// (it crashes on e.g. a Scan without `body`). Custom domains only get the
/// checks that need no schema.
LogicalResult GraphValidator::checkSchema(const onnx::NodeProto &node,
                                          Location loc) {
  llvm::StringSet<> attrNames;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.name().empty())
      return emitError(loc)
             << describeNode(node) << " node has an attribute without a name";
    if (!attrNames.insert(attr.name()).second)
      return emitError(loc) << describeNode(node) << " node has attribute '"
                            << attr.name() << "' more than once";
    if ((attr.type() == onnx::AttributeProto::TENSOR && !attr.has_t()) ||
        (attr.type() == onnx::AttributeProto::GRAPH && !attr.has_g()))
      return emitError(loc)
             << describeNode(node) << " node: attribute '" << attr.name()
             << "' is of type "
             << onnx::AttributeProto::AttributeType_Name(attr.type())
             << " but has no value";
    if (attr.type() == onnx::AttributeProto::SPARSE_TENSOR ||
        attr.type() == onnx::AttributeProto::SPARSE_TENSORS)
      return emitError(loc)
             << describeNode(node) << " node: attribute '" << attr.name()
             << "' is a sparse tensor, which is not supported";
    std::string what = "attribute '" + attr.name() + "'";
    if (attr.type() == onnx::AttributeProto::TENSOR &&
        failed(checkTensor(attr.t(), loc, what)))
      return failure();
    for (const onnx::TensorProto &t : attr.tensors())
      if (failed(checkTensor(t, loc, what)))
        return failure();
  }
  std::string domain =
      isDefaultDomain(node.domain()) ? std::string() : node.domain();
  const auto &ranges =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  if (!ranges.count(domain))
    return success();
  int64_t version = opsets.lookup(domain);
  std::string shown = domain.empty() ? "ai.onnx" : domain;
  const onnx::OpSchema *schema =
      onnx::OpSchemaRegistry::Schema(node.op_type(), version, domain);
  if (!schema)
    return emitError(loc) << "'" << node.op_type()
                          << "' is not an operator of domain '" << shown
                          << "' at opset " << version;
  std::string opName =
      node.op_type() + " (" + shown + " opset " + std::to_string(version) + ")";
  auto countError = [&](llvm::StringRef what, int have, int min, int max) {
    InFlightDiagnostic diag = emitError(loc);
    diag << describeNode(node) << " node has " << have << " " << what
         << (have == 1 ? "" : "s") << ", but " << opName << " takes ";
    if (min == max)
      diag << min;
    else if (max == std::numeric_limits<int>::max())
      diag << "at least " << min;
    else
      diag << min << " to " << max;
    return diag;
  };
  if (node.input_size() < schema->min_input() ||
      node.input_size() > schema->max_input())
    return countError("input", node.input_size(), schema->min_input(),
                      schema->max_input());
  if (node.output_size() < schema->min_output() ||
      node.output_size() > schema->max_output())
    return countError("output", node.output_size(), schema->min_output(),
                      schema->max_output());
  const auto &formalInputs = schema->inputs();
  for (int i = 0, e = std::min<int>(node.input_size(), formalInputs.size());
       i < e; ++i)
    if (node.input(i).empty() &&
        formalInputs[i].GetOption() ==
            onnx::OpSchema::FormalParameterOption::Single)
      return emitError(loc)
             << describeNode(node) << " node: input " << i << " ('"
             << formalInputs[i].GetName() << "') is required but not given";
  const auto &formalOutputs = schema->outputs();
  for (int i = 0, e = std::min<int>(node.output_size(), formalOutputs.size());
       i < e; ++i)
    if (node.output(i).empty() &&
        formalOutputs[i].GetOption() ==
            onnx::OpSchema::FormalParameterOption::Single)
      return emitError(loc)
             << describeNode(node) << " node: output " << i << " ('"
             << formalOutputs[i].GetName() << "') is required but has no name";
  for (const onnx::AttributeProto &attr : node.attribute()) {
    auto it = schema->attributes().find(attr.name());
    if (it == schema->attributes().end() || !attr.ref_attr_name().empty())
      continue;
    if (attr.type() != it->second.type)
      return emitError(loc)
             << describeNode(node) << " node: attribute '" << attr.name()
             << "' must be of type "
             << onnx::AttributeProto::AttributeType_Name(it->second.type)
             << ", not "
             << onnx::AttributeProto::AttributeType_Name(attr.type());
  }
  for (const auto &[name, attr] : schema->attributes())
    if (attr.required && !attrNames.count(name))
      return emitError(loc)
             << describeNode(node) << " node: required attribute '" << name
             << "' is missing";
  return success();
}

/// Names a subgraph uses that it does not define itself.
void GraphValidator::collectFreeNames(const onnx::GraphProto &graph,
                                      llvm::SetVector<llvm::StringRef> &names,
                                      int depth) {
  if (depth > kMaxGraphDepth)
    return;
  llvm::StringSet<> local;
  for (const auto &init : graph.initializer())
    local.insert(init.name());
  for (const auto &input : graph.input())
    local.insert(input.name());
  for (const auto &node : graph.node())
    for (const auto &out : node.output())
      local.insert(out);
  auto use = [&](llvm::StringRef name) {
    if (!name.empty() && !local.count(name))
      names.insert(name);
  };
  for (const auto &node : graph.node()) {
    for (const auto &in : node.input())
      use(in);
    for (const auto &attr : node.attribute()) {
      llvm::SetVector<llvm::StringRef> inner;
      if (attr.type() == onnx::AttributeProto::GRAPH)
        collectFreeNames(attr.g(), inner, depth + 1);
      for (const auto &g : attr.graphs())
        collectFreeNames(g, inner, depth + 1);
      for (llvm::StringRef name : inner)
        use(name);
    }
  }
  for (const auto &output : graph.output())
    use(output.name());
}

} // namespace mp::onnx_import
