//===- ONNXImporter.cpp - ONNX models to the mp dialect ------------------===//
//
// The importer works in three steps:
//  1. load: parse the protobuf or the textual syntax into an onnx::ModelProto;
//  2. validate: opsets, names, definitions before uses, cycles, recursively
//     through subgraphs, so that nothing malformed reaches ONNX shape
//     inference or the builder; every problem is one diagnostic naming the
//     node;
//  3. build: one func.func per graph, one op per node in topological order.
//
// This file is compiled with exceptions (protobuf and ONNX may throw); every
// exception is caught here and turned into a diagnostic.
//
//===----------------------------------------------------------------------===//
#include "mp/Import/ONNXImporter.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Runtime/TensorIO.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Compiler.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx-ml.pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <new>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mp;

namespace {

constexpr int64_t kMaxKnownIRVersion = 8; // ONNX 1.12
/// No tensor may claim more elements than this (2^40): such claims come
/// from corrupt or hostile files and would overflow byte counts.
constexpr int64_t kMaxElements = int64_t(1) << 40;
/// Subgraph nesting deeper than this is rejected rather than recursed into.
constexpr int kMaxGraphDepth = 64;
/// Protobuf message nesting the parser accepts: three levels per subgraph
/// (graph, node, attribute) plus room for nested types. Protobuf's default
/// of 100 would reject models of 33 nested subgraphs as "corrupt".
constexpr int kMaxMessageDepth = 3 * kMaxGraphDepth + 64;
/// Bracket nesting accepted in ONNX text; ONNX's recursive-descent parser
/// would overflow the stack on deeper input.
constexpr int kMaxTextNesting = 4 * kMaxGraphDepth + 64;

bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::string describeNode(const onnx::NodeProto &node) {
  std::string s = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    s = node.domain() + "::" + s;
  return s;
}

/// Bytes per element of a fixed-size ONNX data type, 0 for others.
size_t elementByteSize(int dataType) {
  switch (dataType) {
  case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32: return 4;
  case onnx::TensorProto::UINT8: case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL: return 1;
  case onnx::TensorProto::UINT16: case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16: return 2;
  case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64:
  case onnx::TensorProto::DOUBLE: case onnx::TensorProto::COMPLEX64: return 8;
  case onnx::TensorProto::COMPLEX128: return 16;
  default: return (dataType >= 17 && dataType <= 20) ? 1 : 0; // float8
  }
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
  size_t byteSize = static_cast<size_t>(count) * elementByteSize(dataType);
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != byteSize)
      return emitError(loc) << what << " has " << tensor.raw_data().size()
                            << " bytes of data, its shape and type need "
                            << byteSize;
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

/// Checks a (sub)graph and computes a topological order of its nodes.
class GraphValidator {
public:
  GraphValidator(MLIRContext *ctx, const llvm::StringMap<int64_t> &opsets)
      : ctx(ctx), opsets(opsets) {}

  /// `outer` holds the names visible from enclosing graphs.
  LogicalResult validate(const onnx::GraphProto &graph,
                         const llvm::StringSet<> &outer, int depth,
                         llvm::DenseMap<const onnx::GraphProto *,
                                        std::vector<int>> &orders) {
    if (depth > kMaxGraphDepth)
      return emitError(UnknownLoc::get(ctx))
             << "subgraphs are nested more than " << kMaxGraphDepth
             << " levels deep";
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
                   << describeNode(node) << " node uses its own output '"
                   << name << "' (a cycle)";
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
                 << "the graph has a cycle through " << describeNode(graph.node(i))
                 << " node '" << graph.node(i).name() << "'";
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

  Location nodeLoc(const onnx::NodeProto &node) {
    return NameLoc::get(StringAttr::get(ctx, node.name()));
  }

private:
  LogicalResult checkDomain(const onnx::NodeProto &node, Location loc) {
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
  LogicalResult checkSchema(const onnx::NodeProto &node, Location loc) {
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
        return emitError(loc) << describeNode(node) << " node: attribute '"
                              << attr.name() << "' is of type "
                              << onnx::AttributeProto::AttributeType_Name(
                                     attr.type())
                              << " but has no value";
      if (attr.type() == onnx::AttributeProto::SPARSE_TENSOR ||
          attr.type() == onnx::AttributeProto::SPARSE_TENSORS)
        return emitError(loc) << describeNode(node) << " node: attribute '"
                              << attr.name()
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
        node.op_type() + " (" + shown + " opset " + std::to_string(version) +
        ")";
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
      if (node.input(i).empty() && formalInputs[i].GetOption() ==
                                       onnx::OpSchema::FormalParameterOption::Single)
        return emitError(loc) << describeNode(node) << " node: input " << i
                              << " ('" << formalInputs[i].GetName()
                              << "') is required but not given";
    const auto &formalOutputs = schema->outputs();
    for (int i = 0, e = std::min<int>(node.output_size(), formalOutputs.size());
         i < e; ++i)
      if (node.output(i).empty() && formalOutputs[i].GetOption() ==
                                        onnx::OpSchema::FormalParameterOption::Single)
        return emitError(loc) << describeNode(node) << " node: output " << i
                              << " ('" << formalOutputs[i].GetName()
                              << "') is required but has no name";
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
        return emitError(loc) << describeNode(node)
                              << " node: required attribute '" << name
                              << "' is missing";
    return success();
  }

  /// Names a subgraph uses that it does not define itself.
  void collectFreeNames(const onnx::GraphProto &graph,
                        llvm::SetVector<llvm::StringRef> &names, int depth) {
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

  MLIRContext *ctx;
  const llvm::StringMap<int64_t> &opsets;
};

//===----------------------------------------------------------------------===//
// ONNX shape inference, in a child process
//===----------------------------------------------------------------------===//

/// Copies what shape inference adds to a graph (value_info, input and output
/// types, recursively through subgraphs) from `from` to `to`. With
/// `apply` false only checks that the two have the same structure.
bool copyInferredTypes(const onnx::GraphProto &from, onnx::GraphProto &to,
                       bool apply) {
  auto sameNames = [](const auto &a, const auto &b) {
    if (a.size() != b.size())
      return false;
    for (int i = 0; i < a.size(); ++i)
      if (a.Get(i).name() != b.Get(i).name())
        return false;
    return true;
  };
  if (from.node_size() != to.node_size() ||
      !sameNames(from.input(), to.input()) ||
      !sameNames(from.output(), to.output()))
    return false;
  for (int i = 0; i < from.node_size(); ++i) {
    const onnx::NodeProto &a = from.node(i);
    onnx::NodeProto &b = *to.mutable_node(i);
    if (a.op_type() != b.op_type() || a.attribute_size() != b.attribute_size())
      return false;
    for (int j = 0; j < a.attribute_size(); ++j) {
      const onnx::AttributeProto &x = a.attribute(j);
      onnx::AttributeProto &y = *b.mutable_attribute(j);
      if (x.name() != y.name() || x.has_g() != y.has_g() ||
          x.graphs_size() != y.graphs_size())
        return false;
      if (x.has_g() && !copyInferredTypes(x.g(), *y.mutable_g(), apply))
        return false;
      for (int k = 0; k < x.graphs_size(); ++k)
        if (!copyInferredTypes(x.graphs(k), *y.mutable_graphs(k), apply))
          return false;
    }
  }
  if (apply) {
    *to.mutable_value_info() = from.value_info();
    *to.mutable_input() = from.input();
    *to.mutable_output() = from.output();
  }
  return true;
}

enum class InferenceOutcome { Done, Failed, Crashed, OutOfMemory };

/// Runs ONNX shape inference on `model` in this process.
InferenceOutcome inferShapesHere(onnx::ModelProto &model,
                                 std::string &message) {
  try {
    onnx::ShapeInferenceOptions shapeOptions(/*check_type=*/false,
                                             /*error_mode=*/0,
                                             /*data_prop=*/false);
    onnx::shape_inference::InferShapes(
        model, onnx::OpSchemaRegistry::Instance(), shapeOptions);
    return InferenceOutcome::Done;
  } catch (const std::bad_alloc &) {
    return InferenceOutcome::OutOfMemory;
  } catch (const std::exception &e) {
    message = e.what();
    return InferenceOutcome::Failed;
  }
}

/// In the shape-inference child: an address-space limit of what the process
/// maps already (the model included) plus twice the machine's memory (at
/// least 4 GiB), so that an absurd allocation throws
/// std::bad_alloc (reported as out of memory) whatever the machine's
/// overcommit policy. Without it, under vm.overcommit_memory=1 (common on
/// container hosts) a 1 TiB allocation "succeeds" and the OOM killer ends
/// the child later, after it has taken the host's memory. Not under
/// AddressSanitizer, whose shadow memory reserves terabytes of address space.
void limitChildAddressSpace() {
#if !LLVM_ADDRESS_SANITIZER_BUILD
  long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return;
  rlim_t mapped = 0;
  if (FILE *statm = std::fopen("/proc/self/statm", "r")) {
    unsigned long long sizePages = 0;
    if (std::fscanf(statm, "%llu", &sizePages) == 1)
      mapped = static_cast<rlim_t>(sizePages) * pageSize;
    std::fclose(statm);
  }
  rlim_t limit =
      mapped + std::max<rlim_t>(2 * static_cast<rlim_t>(pages) * pageSize,
                                rlim_t(4) << 30);
  struct rlimit current;
  if (::getrlimit(RLIMIT_AS, &current) != 0 ||
      (current.rlim_cur != RLIM_INFINITY && current.rlim_cur <= limit))
    return;
  struct rlimit wanted = {limit, current.rlim_max};
  if (current.rlim_max != RLIM_INFINITY && current.rlim_max < limit)
    wanted.rlim_cur = current.rlim_max;
  ::setrlimit(RLIMIT_AS, &wanted);
#endif
}

/// Runs ONNX shape inference on `model` in a child process and copies the
/// types it infers into `model`. ONNX 1.12 crashes on some malformed nodes
/// that pass the schema checks (a Transpose `perm` out of range, some RNN
/// shapes); in a child such a crash costs the types, not the import.
/// `message` says why when the outcome is not Done.
InferenceOutcome inferShapesIsolated(onnx::ModelProto &model,
                                     std::string &message) {
  int fds[2];
  if (::pipe(fds) != 0)
    return inferShapesHere(model, message);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return inferShapesHere(model, message);
  }
  if (pid == 0) {
    // The child dies quietly if ONNX crashes: no LLVM crash report, no core.
    ::close(fds[0]);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS})
      ::signal(sig, SIG_DFL);
    struct rlimit noCore = {0, 0};
    ::setrlimit(RLIMIT_CORE, &noCore);
    limitChildAddressSpace();
    std::string childMessage;
    InferenceOutcome outcome = inferShapesHere(model, childMessage);
    std::string reply(1, static_cast<char>('0' + static_cast<int>(outcome)));
    if (outcome == InferenceOutcome::Done) {
      try {
        reply += model.SerializeAsString();
      } catch (...) {
        ::_exit(2);
      }
    } else {
      reply += childMessage;
    }
    const char *p = reply.data();
    size_t left = reply.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        ::_exit(2);
      p += n;
      left -= n;
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string reply;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buffer, n);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    message = "signal " + std::to_string(WTERMSIG(status)) + ", " +
              strsignal(WTERMSIG(status));
    return InferenceOutcome::Crashed;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    message = "its process failed";
    return InferenceOutcome::Crashed;
  }
  auto outcome = static_cast<InferenceOutcome>(reply[0] - '0');
  if (outcome != InferenceOutcome::Done) {
    message = reply.substr(1);
    return outcome;
  }
  onnx::ModelProto inferred;
  google::protobuf::io::CodedInputStream coded(
      reinterpret_cast<const uint8_t *>(reply.data() + 1), reply.size() - 1);
  coded.SetRecursionLimit(kMaxMessageDepth);
  if (!inferred.ParseFromCodedStream(&coded) ||
      !copyInferredTypes(inferred.graph(), *model.mutable_graph(),
                         /*apply=*/false)) {
    message = "its result does not match the model";
    return InferenceOutcome::Failed;
  }
  copyInferredTypes(inferred.graph(), *model.mutable_graph(), /*apply=*/true);
  return InferenceOutcome::Done;
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

/// The raw data of the main graph's large initializers, left in the mapped
/// model file: protobuf would copy every byte of it into strings.
struct MappedWeights {
  std::shared_ptr<llvm::MemoryBuffer> file;
  /// Per initializer of the main graph (in order): its raw data in `file`,
  /// or empty when it was parsed normally.
  std::vector<ArrayRef<char>> spans;
};

class Importer {
public:
  Importer(MLIRContext *ctx, llvm::StringRef path,
           const ONNXImportOptions &options)
      : ctx(ctx), builder(ctx), path(path.str()), options(options),
        dialect(ctx->getOrLoadDialect<MPDialect>()) {
    ctx->getOrLoadDialect<func::FuncDialect>();
    externalDir = options.externalDataDirectory;
    if (externalDir.empty()) {
      externalDir = llvm::sys::path::parent_path(path).str();
      if (externalDir.empty())
        externalDir = ".";
    }
  }

  OwningOpRef<ModuleOp> importModel(onnx::ModelProto &model);

  /// The main graph's large initializers of `model` have their data in
  /// `weights` (the mapped model file).
  void useMappedWeights(onnx::ModelProto &model, MappedWeights weights) {
    mappedFile = std::move(weights.file);
    for (auto [i, span] : llvm::enumerate(weights.spans))
      if (!span.empty())
        mappedData[&model.graph().initializer(i)] = span;
  }

private:
  std::shared_ptr<llvm::MemoryBuffer> mappedFile;
  llvm::DenseMap<const onnx::TensorProto *, ArrayRef<char>> mappedData;

  /// Values visible in a graph, chained to the enclosing graph's scope.
  struct Scope {
    llvm::StringMap<Value> values;
    const Scope *parent = nullptr;
    Value lookup(llvm::StringRef name) const {
      for (const Scope *s = this; s; s = s->parent) {
        auto it = s->values.find(name);
        if (it != s->values.end())
          return it->second;
      }
      return {};
    }
  };

  LogicalResult readOpsets(const onnx::ModelProto &model);
  /// Applies options.inputShapes, dimParams and frozenInputs to the graph.
  LogicalResult specializeInputs(onnx::GraphProto &graph, Location fileLoc);
  LogicalResult importGraph(onnx::GraphProto &graph, Block *block,
                            Scope &scope, SmallVectorImpl<Value> &outputs);
  LogicalResult importNode(onnx::NodeProto &node, Block *block, Scope &scope);
  FailureOr<Type> importType(const onnx::TypeProto &type, Location loc,
                             llvm::StringRef what);
  /// `blobName` names the resource blob if the tensor becomes one.
  FailureOr<ElementsAttr> importTensor(onnx::TensorProto &tensor,
                                       Location loc, llvm::StringRef what,
                                       llvm::StringRef blobName);
  FailureOr<Attribute> importAttribute(onnx::AttributeProto &attr,
                                       Location loc);
  FailureOr<AsmResourceBlob> loadExternalData(const onnx::TensorProto &tensor,
                                              size_t byteSize, size_t align,
                                              Location loc,
                                              llvm::StringRef what);
  Value getNone(Block *block);
  Location nodeLoc(const onnx::NodeProto &node) {
    return NameLoc::get(builder.getStringAttr(node.name()));
  }
  ArrayAttr dimParamsAttr(const onnx::TypeProto &type);

  MLIRContext *ctx;
  OpBuilder builder;
  std::string path;
  std::string externalDir;
  const ONNXImportOptions &options;
  MPDialect *dialect;
  llvm::StringMap<int64_t> opsets;
  llvm::DenseMap<const onnx::GraphProto *, std::vector<int>> orders;
  /// Types of intermediate values from value_info and graph outputs.
  llvm::StringMap<const onnx::TypeProto *> declaredTypes;
  llvm::DenseMap<Block *, Value> noneValues;
};

LogicalResult Importer::specializeInputs(onnx::GraphProto &graph,
                                         Location fileLoc) {
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  auto findInput = [&](const std::string &name) -> onnx::ValueInfoProto * {
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      if (input.name() == name && !initializerNames.contains(name))
        return &input;
    return nullptr;
  };
  auto tensorShape = [](onnx::ValueInfoProto &value)
      -> onnx::TensorShapeProto * {
    if (!value.type().has_tensor_type() ||
        !value.type().tensor_type().has_shape())
      return nullptr;
    return value.mutable_type()->mutable_tensor_type()->mutable_shape();
  };

  for (const auto &[name, dims] : options.inputShapes) {
    onnx::ValueInfoProto *input = findInput(name);
    if (!input)
      return emitError(fileLoc) << "--input-shape: the model has no graph "
                                   "input named '"
                                << name << "'";
    if (!input->type().has_tensor_type())
      return emitError(fileLoc) << "--input-shape: graph input '" << name
                                << "' is not a tensor";
    for (int64_t d : dims)
      if (d < 0)
        return emitError(fileLoc) << "--input-shape: graph input '" << name
                                  << "': dims must be >= 0";
    onnx::TensorShapeProto *shape =
        input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 &&
        shape->dim_size() != static_cast<int>(dims.size()))
      return emitError(fileLoc)
             << "--input-shape: graph input '" << name << "' has rank "
             << shape->dim_size() << ", but the given shape has rank "
             << dims.size();
    for (size_t i = 0; i < dims.size() && shape->dim_size() != 0; ++i) {
      const auto &dim = shape->dim(i);
      if (dim.has_dim_value() && dim.dim_value() != dims[i])
        return emitError(fileLoc)
               << "--input-shape: graph input '" << name << "' has dim " << i
               << " = " << dim.dim_value() << ", not " << dims[i];
    }
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }

  if (!options.dimParams.empty()) {
    llvm::StringSet<> used;
    auto apply = [&](onnx::ValueInfoProto &value) {
      onnx::TensorShapeProto *shape = tensorShape(value);
      if (!shape)
        return;
      for (auto &dim : *shape->mutable_dim()) {
        if (!dim.has_dim_param())
          continue;
        auto it = options.dimParams.find(dim.dim_param());
        if (it == options.dimParams.end())
          continue;
        used.insert(it->first);
        dim.set_dim_value(it->second);
      }
    };
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      apply(input);
    for (onnx::ValueInfoProto &output : *graph.mutable_output())
      apply(output);
    for (const auto &[param, size] : options.dimParams) {
      if (size < 0)
        return emitError(fileLoc) << "--dim-param: '" << param
                                  << "' must be >= 0";
      if (!used.contains(param))
        return emitError(fileLoc) << "--dim-param: no graph input or output "
                                     "has a dim named '"
                                  << param << "'";
    }
  }

  for (const auto &[name, file] : options.frozenInputs) {
    onnx::ValueInfoProto *input = findInput(name);
    if (!input)
      return emitError(fileLoc) << "--freeze-input: the model has no graph "
                                   "input named '"
                                << name << "'";
    rt::Result<rt::HostTensor> value = rt::readTensorFile(file);
    if (!value)
      return emitError(fileLoc) << "--freeze-input: " << value.message();
    const rt::HostTensor &tensor = *value;
    const auto &type = input->type();
    if (!type.has_tensor_type())
      return emitError(fileLoc) << "--freeze-input: graph input '" << name
                                << "' is not a tensor";
    int32_t declared = type.tensor_type().elem_type();
    if (declared != static_cast<int32_t>(tensor.dtype()))
      return emitError(fileLoc)
             << "--freeze-input: graph input '" << name << "' has ONNX type "
             << declared << ", but '" << file << "' holds "
             << rt::dtypeName(tensor.dtype());
    if (type.tensor_type().has_shape()) {
      const auto &shape = type.tensor_type().shape();
      bool fits = shape.dim_size() == static_cast<int>(tensor.shape().size());
      for (int i = 0; fits && i < shape.dim_size(); ++i)
        if (shape.dim(i).has_dim_value() &&
            shape.dim(i).dim_value() != tensor.shape()[i])
          fits = false;
      if (!fits)
        return emitError(fileLoc) << "--freeze-input: the shape of '" << file
                                  << "' does not fit graph input '" << name
                                  << "'";
    }
    onnx::TensorProto *init = graph.add_initializer();
    init->set_name(name);
    init->set_data_type(static_cast<int32_t>(tensor.dtype()));
    for (int64_t d : tensor.shape())
      init->add_dims(d);
    init->set_raw_data(tensor.data(), tensor.byteCount());
    // An initializer that is not also an input is a constant (IR >= 4).
    for (int i = 0; i < graph.input_size(); ++i)
      if (graph.input(i).name() == name) {
        graph.mutable_input()->DeleteSubrange(i, 1);
        break;
      }
  }
  return success();
}

LogicalResult Importer::readOpsets(const onnx::ModelProto &model) {
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                           .Map();
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    std::string domain = isDefaultDomain(opset.domain()) ? "" : opset.domain();
    int64_t version = opset.version();
    // A std::string: `cond ? "literal" : std::string` is a temporary.
    std::string shown = domain.empty() ? "ai.onnx" : domain;
    if (version < 1)
      return emitError(UnknownLoc::get(ctx))
             << "opset_import gives version " << version << " for domain '"
             << shown << "'; versions start at 1";
    auto range = ranges.find(domain);
    if (range != ranges.end() && version > range->second.second)
      return emitError(UnknownLoc::get(ctx))
             << "unsupported opset: the model uses " << shown << " opset "
             << version << ", this build supports up to "
             << range->second.second << " (ONNX 1.12)";
    if (!opsets.try_emplace(domain, version).second)
      return emitError(UnknownLoc::get(ctx))
             << "opset_import lists domain '" << shown << "' twice";
  }
  if (model.opset_import_size() == 0 && model.ir_version() < 3)
    opsets[""] = 1; // IR version < 3 models predate opset_import
  return success();
}

Value Importer::getNone(Block *block) {
  Value &none = noneValues[block];
  if (!none) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(block);
    none = NoneOp::create(builder, builder.getUnknownLoc());
  }
  return none;
}

ArrayAttr Importer::dimParamsAttr(const onnx::TypeProto &type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return {};
  bool any = false;
  SmallVector<Attribute> params;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    any |= dim.has_dim_param();
    params.push_back(builder.getStringAttr(dim.has_dim_param() ? dim.dim_param()
                                                               : ""));
  }
  return any ? builder.getArrayAttr(params) : ArrayAttr();
}

FailureOr<Type> Importer::importType(const onnx::TypeProto &type, Location loc,
                                     llvm::StringRef what) {
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType: {
    const auto &tensor = type.tensor_type();
    if (!tensor.has_elem_type() || tensor.elem_type() == 0)
      return UnknownType::get(ctx);
    Type element = getTypeForOnnxDataType(ctx, tensor.elem_type());
    if (!element)
      return emitError(loc) << what << " has unsupported element type "
                            << tensor.elem_type();
    if (!tensor.has_shape())
      return Type(UnrankedTensorType::get(element));
    SmallVector<int64_t> dims;
    int64_t count = 1; // of the static dims, saturated at 2^40 + 1
    for (const auto &dim : tensor.shape().dim()) {
      if (dim.has_dim_value()) {
        int64_t d = dim.dim_value();
        if (d < 0 || d > kMaxElements)
          return emitError(loc) << what << " has invalid dim " << d;
        count = (d != 0 && count > kMaxElements / d) ? kMaxElements + 1
                                                     : count * d;
        dims.push_back(d);
      } else {
        dims.push_back(ShapedType::kDynamic);
      }
    }
    // Nothing is allocated for a type, but element counts that overflow
    // int64 would break every size computation downstream.
    if (count > kMaxElements && !llvm::is_contained(dims, 0))
      return emitError(loc) << what << " has more than 2^40 elements";
    return Type(RankedTensorType::get(dims, element));
  }
  case onnx::TypeProto::kSequenceType: {
    if (!type.sequence_type().has_elem_type())
      return Type(SequenceType::get(ctx, UnknownType::get(ctx)));
    auto inner = importType(type.sequence_type().elem_type(), loc, what);
    if (failed(inner))
      return failure();
    return Type(SequenceType::get(ctx, *inner));
  }
  case onnx::TypeProto::kOptionalType: {
    if (!type.optional_type().has_elem_type())
      return Type(OptionalType::get(ctx, UnknownType::get(ctx)));
    auto inner = importType(type.optional_type().elem_type(), loc, what);
    if (failed(inner))
      return failure();
    return Type(OptionalType::get(ctx, *inner));
  }
  case onnx::TypeProto::VALUE_NOT_SET:
    return Type(UnknownType::get(ctx));
  default:
    return emitError(loc) << what
                          << " has an unsupported type (map or sparse tensor)";
  }
}

FailureOr<AsmResourceBlob>
Importer::loadExternalData(const onnx::TensorProto &tensor, size_t byteSize,
                           size_t align, Location loc, llvm::StringRef what) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : tensor.external_data()) {
    llvm::StringRef value = entry.value();
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      uint64_t v;
      if (value.getAsInteger(10, v))
        return emitError(loc) << what << ": external data " << entry.key()
                              << " '" << value << "' is not a number";
      if (entry.key() == "offset")
        offset = v;
      else
        length = v;
    }
  }
  if (location.empty())
    return emitError(loc) << what << ": external data has no 'location'";
  if (llvm::sys::path::is_absolute(location) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                    llvm::sys::path::end(location)),
                   [](llvm::StringRef c) { return c == ".."; }))
    return emitError(loc) << what << ": external data location '" << location
                          << "' must be a relative path inside the model's "
                             "directory";
  llvm::SmallString<256> file(externalDir);
  llvm::sys::path::append(file, location);
  uint64_t fileSize;
  if (llvm::sys::fs::file_size(file, fileSize))
    return emitError(loc) << what << ": missing external data file '" << file
                          << "'";
  if (length && *length != byteSize)
    return emitError(loc) << what << ": external data length " << *length
                          << " does not match the " << byteSize
                          << " bytes its type and shape need";
  if (offset > fileSize || byteSize > fileSize - offset)
    return emitError(loc) << what << ": external data file '" << file
                          << "' has " << fileSize << " bytes, too few for "
                          << byteSize << " bytes at offset " << offset;
  auto buffer = llvm::MemoryBuffer::getFileSlice(file, byteSize, offset);
  if (!buffer)
    return emitError(loc) << what << ": cannot read external data file '"
                          << file << "': " << buffer.getError().message();
  ArrayRef<char> data((*buffer)->getBufferStart(), byteSize);
  if (!llvm::isAddrAligned(llvm::Align(align), data.data()))
    return HeapAsmResourceBlob::allocateAndCopyWithAlign(data, align);
  // The blob keeps the (usually memory-mapped) buffer alive.
  std::shared_ptr<llvm::MemoryBuffer> owner(std::move(*buffer));
  return AsmResourceBlob(
      data, align, [owner](void *, size_t, size_t) mutable { owner.reset(); },
      /*dataIsMutable=*/false);
}

FailureOr<ElementsAttr> Importer::importTensor(onnx::TensorProto &tensor,
                                               Location loc,
                                               llvm::StringRef what,
                                               llvm::StringRef blobKey) {
  FailureOr<int64_t> checkedCount = checkTensor(tensor, loc, what);
  if (failed(checkedCount))
    return failure();
  int64_t count = *checkedCount;
  int dataType = tensor.data_type();
  Type element = getTypeForOnnxDataType(ctx, dataType);
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(dims, element);
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;

  if (dataType == onnx::TensorProto::STRING) {
    if (tensor.string_data_size() != count)
      return emitError(loc) << what << " has " << tensor.string_data_size()
                            << " strings for " << count << " elements";
    SmallVector<llvm::StringRef> strings(tensor.string_data().begin(),
                                         tensor.string_data().end());
    return cast<ElementsAttr>(DenseElementsAttr::get(type, strings));
  }
  size_t eltSize = elementByteSize(dataType);
  size_t byteSize = static_cast<size_t>(count) * eltSize;
  size_t align = std::min<size_t>(eltSize, 8);
  std::string blobName = blobKey.str();

  // Data left in the mapped model file: referenced, never copied. Protobuf
  // does not align fields, so the blob declares the alignment it has (its
  // readers copy unaligned data where they need alignment).
  if (auto it = mappedData.find(&tensor); it != mappedData.end()) {
    ArrayRef<char> data = it->second;
    if (data.size() != byteSize)
      return emitError(loc) << what << " has " << data.size()
                            << " bytes of data, its shape and type need "
                            << byteSize;
    if (!llvm::isAddrAligned(llvm::Align(align), data.data()))
      align = 1;
    std::shared_ptr<llvm::MemoryBuffer> owner = mappedFile;
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, blobName,
        AsmResourceBlob(
            data, align,
            [owner](void *, size_t, size_t) mutable { owner.reset(); },
            /*dataIsMutable=*/false)));
  }

  // External data is referenced, not copied.
  if (external) {
    auto blob = loadExternalData(tensor, byteSize, align, loc, what);
    if (failed(blob))
      return failure();
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, blobName, std::move(*blob)));
  }

  // Gather the little-endian bytes of the tensor.
  std::string bytes;
  auto countMismatch = [&](int64_t have, int64_t need) {
    return emitError(loc) << what << " has " << have << " values for "
                          << need << " elements of its shape";
  };
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != byteSize)
      return emitError(loc) << what << " has " << tensor.raw_data().size()
                            << " bytes of data, its shape and type need "
                            << byteSize;
    if (dataType == onnx::TensorProto::BOOL) {
      SmallVector<bool> values;
      for (char c : tensor.raw_data())
        values.push_back(c != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    if (byteSize > options.inlineTensorLimit) {
      // Take the string over from protobuf: no copy of large weights.
      std::unique_ptr<std::string> owned(tensor.release_raw_data());
      ArrayRef<char> data(owned->data(), owned->size());
      if (llvm::isAddrAligned(llvm::Align(align), data.data())) {
        std::string *raw = owned.release();
        AsmResourceBlob blob(
            data, align, [raw](void *, size_t, size_t) { delete raw; },
            /*dataIsMutable=*/false);
        return cast<ElementsAttr>(
            DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
      }
      return cast<ElementsAttr>(DenseResourceElementsAttr::get(
          type, blobName,
          HeapAsmResourceBlob::allocateAndCopyWithAlign(data, align)));
    }
    bytes = tensor.raw_data();
  } else {
    auto append = [&](const void *p, size_t n) {
      bytes.append(static_cast<const char *>(p), n);
    };
    switch (dataType) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::COMPLEX64: {
      int64_t need = count * (dataType == onnx::TensorProto::COMPLEX64 ? 2 : 1);
      if (tensor.float_data_size() != need)
        return countMismatch(tensor.float_data_size(), need);
      append(tensor.float_data().data(), need * 4);
      break;
    }
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX128: {
      int64_t need = count * (dataType == onnx::TensorProto::COMPLEX128 ? 2 : 1);
      if (tensor.double_data_size() != need)
        return countMismatch(tensor.double_data_size(), need);
      append(tensor.double_data().data(), need * 8);
      break;
    }
    case onnx::TensorProto::INT64:
      if (tensor.int64_data_size() != count)
        return countMismatch(tensor.int64_data_size(), count);
      append(tensor.int64_data().data(), count * 8);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (tensor.uint64_data_size() != count)
        return countMismatch(tensor.uint64_data_size(), count);
      for (uint64_t v : tensor.uint64_data()) {
        if (dataType == onnx::TensorProto::UINT32) {
          uint32_t narrow = static_cast<uint32_t>(v);
          append(&narrow, 4);
        } else {
          append(&v, 8);
        }
      }
      break;
    case onnx::TensorProto::BOOL: {
      if (tensor.int32_data_size() != count)
        return countMismatch(tensor.int32_data_size(), count);
      SmallVector<bool> values;
      for (int32_t v : tensor.int32_data())
        values.push_back(v != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    default: // int32_data holds INT32 and every narrower type, one per value
      if (tensor.int32_data_size() != count)
        return countMismatch(tensor.int32_data_size(), count);
      for (int32_t v : tensor.int32_data())
        append(&v, eltSize); // little-endian: the low bytes
      break;
    }
  }
  if (bytes.size() > options.inlineTensorLimit)
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(
            ArrayRef<char>(bytes.data(), bytes.size()), align)));
  bool isSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(
          type, ArrayRef<char>(bytes.data(), bytes.size()), isSplat))
    return emitError(loc) << what << " has data of the wrong size";
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(bytes.data(), bytes.size())));
}

FailureOr<Attribute> Importer::importAttribute(onnx::AttributeProto &attr,
                                               Location loc) {
  std::string what = "attribute '" + attr.name() + "'";
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return Attribute(builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::FLOAT:
    return Attribute(builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::STRING:
    return Attribute(builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS:
    return Attribute(builder.getDenseI64ArrayAttr(
        SmallVector<int64_t>(attr.ints().begin(), attr.ints().end())));
  case onnx::AttributeProto::FLOATS:
    return Attribute(builder.getDenseF32ArrayAttr(
        SmallVector<float>(attr.floats().begin(), attr.floats().end())));
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> strings;
    for (const std::string &s : attr.strings())
      strings.push_back(builder.getStringAttr(s));
    return Attribute(builder.getArrayAttr(strings));
  }
  case onnx::AttributeProto::TENSOR: {
    auto tensor = importTensor(*attr.mutable_t(), loc, what, attr.name());
    if (failed(tensor))
      return failure();
    return Attribute(*tensor);
  }
  case onnx::AttributeProto::TENSORS: {
    SmallVector<Attribute> tensors;
    for (onnx::TensorProto &t : *attr.mutable_tensors()) {
      auto tensor = importTensor(t, loc, what, attr.name());
      if (failed(tensor))
        return failure();
      tensors.push_back(*tensor);
    }
    return Attribute(builder.getArrayAttr(tensors));
  }
  case onnx::AttributeProto::TYPE_PROTO: {
    auto type = importType(attr.tp(), loc, what);
    if (failed(type))
      return failure();
    return Attribute(TypeAttr::get(*type));
  }
  default:
    return emitError(loc) << what << " has unsupported attribute type "
                          << onnx::AttributeProto::AttributeType_Name(
                                 attr.type());
  }
}

LogicalResult Importer::importNode(onnx::NodeProto &node, Block *block,
                                   Scope &scope) {
  Location loc = nodeLoc(node);
  std::string domain = isDefaultDomain(node.domain()) ? std::string() : node.domain();
  int64_t version = opsets.lookup(domain);

  // Pick a typed op when the schema version and attributes fit it.
  const OnnxOpInfo *typed = nullptr;
  if (domain.empty()) {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), version, "");
    if (!schema)
      emitWarning(loc) << "'" << node.op_type()
                       << "' is not an ONNX operator at opset " << version
                       << "; it is kept as a generic op";
    auto info = dialect->getOnnxOpTable().find(node.op_type());
    if (schema && options.typedOps &&
        info != dialect->getOnnxOpTable().end() &&
        schema->SinceVersion() >= info->second.sinceVersion) {
      typed = &info->second;
      ArrayRef<StringAttr> known = typed->opName.getAttributeNames();
      for (const auto &attr : node.attribute())
        if (!llvm::is_contained(known, builder.getStringAttr(attr.name())))
          typed = nullptr;
      if (typed && ((typed->numInputs >= 0 &&
                     node.input_size() > typed->numInputs) ||
                    (typed->numOutputs >= 0 &&
                     node.output_size() > typed->numOutputs)))
        typed = nullptr;
    }
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
      return emitError(loc) << describeNode(node) << " node: attribute '"
                            << attr.name()
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
        return emitError(diagLoc) << "initializer '" << name << "' has type "
                              << value->getType()
                              << " but the graph input of that name is "
                              << *declared;
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
    for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer())
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
    switch ((options.isolateShapeInference
                ? inferShapesIsolated(model, message)
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
        props.push_back(builder.getNamedAttr(p.key(),
                                             builder.getStringAttr(p.value())));
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
    auto type = importType(input.type(), fileLoc,
                           "graph input '" + input.name() + "'");
    if (failed(type))
      return {};
    argTypes.push_back(*type);
    argNames.push_back(input.name());
    SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
        MPDialect::kArgNameAttr, builder.getStringAttr(input.name()))};
    if (ArrayAttr params = dimParamsAttr(input.type()))
      attrs.push_back(builder.getNamedAttr("mp.dim_params", params));
    if (!input.doc_string().empty())
      attrs.push_back(builder.getNamedAttr(
          MPDialect::kDocStringAttr, builder.getStringAttr(input.doc_string())));
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
      attrs.push_back(builder.getNamedAttr(
          MPDialect::kDocStringAttr, builder.getStringAttr(output.doc_string())));
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllResultAttrs(resultAttrs);

  if (failed(verify(m)))
    return {};
  return module;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//


//===----------------------------------------------------------------------===//
// Large models: weights referenced in the mapped file, not parsed
//===----------------------------------------------------------------------===//

namespace wire {
bool readVarint(const char *&p, const char *end, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t byte = static_cast<uint8_t>(*p++);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

void appendVarint(std::string &out, uint64_t v) {
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v);
}

/// One field: its number, wire type, its bytes (tag included) and, for
/// length-delimited fields, the payload.
struct Field {
  uint64_t number = 0, type = 0, varint = 0;
  ArrayRef<char> whole, payload;
};

bool next(const char *&p, const char *end, Field &f) {
  const char *start = p;
  uint64_t tag;
  if (!readVarint(p, end, tag))
    return false;
  f.number = tag >> 3;
  f.type = tag & 7;
  switch (f.type) {
  case 0:
    if (!readVarint(p, end, f.varint))
      return false;
    break;
  case 1:
    if (end - p < 8)
      return false;
    p += 8;
    break;
  case 5:
    if (end - p < 4)
      return false;
    p += 4;
    break;
  case 2: {
    uint64_t len;
    if (!readVarint(p, end, len) || len > static_cast<uint64_t>(end - p))
      return false;
    f.payload = ArrayRef<char>(p, len);
    p += len;
    break;
  }
  default: // groups: not in ONNX
    return false;
  }
  f.whole = ArrayRef<char>(start, p - start);
  return true;
}

void appendField(std::string &out, uint64_t number, StringRef payload) {
  appendVarint(out, (number << 3) | 2);
  appendVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}

/// A TensorProto without its raw_data when that is large and of a numeric
/// type, marked as external data so that validation and shape inference
/// leave it alone; `span` gets the data.
bool stripTensor(ArrayRef<char> in, size_t threshold, StringRef fileName,
                 std::string &out, ArrayRef<char> &span) {
  const char *p = in.data(), *end = p + in.size();
  uint64_t dataType = 0;
  ArrayRef<char> raw;
  std::string kept;
  Field f;
  while (p < end) {
    if (!next(p, end, f))
      return false;
    if (f.number == 2 && f.type == 0)
      dataType = f.varint;
    if (f.number == 9 && f.type == 2) {
      raw = f.payload;
      continue;
    }
    if (f.number == 13 || f.number == 14) // already external: keep as is
      return false;
    kept.append(f.whole.data(), f.whole.size());
  }
  bool numeric = dataType != 0 && dataType != 8 /*STRING*/ &&
                 dataType != 9 /*BOOL*/;
  if (!numeric || raw.size() < threshold) {
    out.assign(in.data(), in.size());
    return true;
  }
  span = raw;
  out = std::move(kept);
  // external_data {key: "location", value: <the model file>}; data_location
  // EXTERNAL. The importer reads the span instead.
  std::string entry;
  appendField(entry, 1, "location");
  appendField(entry, 2, fileName);
  appendField(out, 13, entry);
  appendVarint(out, (14 << 3) | 0);
  appendVarint(out, 1);
  return true;
}

/// The model without the large raw data of its main graph's initializers.
bool stripModel(ArrayRef<char> file, size_t threshold, StringRef fileName,
                std::string &out, std::vector<ArrayRef<char>> &spans) {
  const char *p = file.data(), *end = p + file.size();
  Field f;
  bool sawGraph = false;
  while (p < end) {
    if (!next(p, end, f))
      return false;
    if (f.number != 7 || f.type != 2 || sawGraph) {
      out.append(f.whole.data(), f.whole.size());
      continue;
    }
    sawGraph = true;
    std::string graph;
    const char *g = f.payload.data(), *gend = g + f.payload.size();
    Field gf;
    while (g < gend) {
      if (!next(g, gend, gf))
        return false;
      if (gf.number != 5 || gf.type != 2) {
        graph.append(gf.whole.data(), gf.whole.size());
        continue;
      }
      std::string tensor;
      ArrayRef<char> span;
      if (!stripTensor(gf.payload, threshold, fileName, tensor, span))
        return false;
      spans.push_back(span);
      appendField(graph, 5, tensor);
    }
    appendField(out, 7, graph);
  }
  return sawGraph;
}
} // namespace wire

/// Parses a model file of at least 64 MB by mapping it and leaving the
/// large weights in the mapping; false (with `model` untouched) when the
/// file does not lend itself to that, and the caller parses it normally.
bool loadMapped(llvm::StringRef path, size_t threshold, onnx::ModelProto &model,
                MappedWeights &weights) {
  uint64_t size;
  if (llvm::sys::fs::file_size(path, size) || size < (64u << 20))
    return false;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return false;
  std::shared_ptr<llvm::MemoryBuffer> file(std::move(*buffer));
  std::string stripped;
  std::vector<ArrayRef<char>> spans;
  ArrayRef<char> bytes(file->getBufferStart(), file->getBufferSize());
  if (!wire::stripModel(bytes, threshold, llvm::sys::path::filename(path),
                        stripped, spans))
    return false;
  google::protobuf::io::CodedInputStream coded(
      reinterpret_cast<const uint8_t *>(stripped.data()), stripped.size());
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  coded.SetRecursionLimit(kMaxMessageDepth);
  onnx::ModelProto parsed;
  if (!parsed.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage() ||
      parsed.graph().initializer_size() != static_cast<int>(spans.size()))
    return false;
  model.Swap(&parsed);
  weights.file = std::move(file);
  weights.spans = std::move(spans);
  return true;
}

bool loadBinary(llvm::StringRef path, llvm::StringRef contents, bool fromFile,
                onnx::ModelProto &model, MLIRContext *ctx) {
  Location loc = UnknownLoc::get(ctx);
  bool parsed = false;
  if (fromFile) {
    int fd = ::open(path.str().c_str(), O_RDONLY);
    if (fd < 0) {
      emitError(loc) << "cannot open '" << path << "': " << strerror(errno);
      return false;
    }
    llvm::scope_exit closeFd([&] { ::close(fd); });
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      emitError(loc) << "cannot read '" << path << "': it is a directory";
      return false;
    }
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
      emitError(loc) << "not an ONNX model: the file is empty";
      return false;
    }
    // Streaming parse: the file is never held in memory next to the model.
    google::protobuf::io::FileInputStream input(fd);
    {
      google::protobuf::io::CodedInputStream coded(&input);
      coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
      coded.SetRecursionLimit(kMaxMessageDepth);
      parsed = model.ParseFromCodedStream(&coded) &&
               coded.ConsumedEntireMessage();
    }
    // A read error looks like the end of the input to protobuf.
    if (input.GetErrno() != 0) {
      emitError(loc) << "cannot read '" << path
                     << "': " << strerror(input.GetErrno());
      return false;
    }
  } else {
    if (contents.empty()) {
      emitError(loc) << "not an ONNX model: the input is empty";
      return false;
    }
    google::protobuf::io::CodedInputStream coded(
        reinterpret_cast<const uint8_t *>(contents.data()), contents.size());
    coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
    coded.SetRecursionLimit(kMaxMessageDepth);
    parsed = model.ParseFromCodedStream(&coded) &&
             coded.ConsumedEntireMessage();
  }
  if (!parsed) {
    emitError(loc) << "not a valid ONNX model: the protobuf data is truncated "
                      "or corrupt";
    return false;
  }
  return true;
}

/// The deepest nesting of brackets in ONNX text, outside comments and
/// string literals (`=>` is not a bracket).
int textNesting(llvm::StringRef text) {
  int depth = 0, maxDepth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      maxDepth = std::max(maxDepth, ++depth);
    } else if (c == '}' || c == ']' || c == ')' ||
               (c == '>' && (i == 0 || text[i - 1] != '='))) {
      --depth;
    }
  }
  return maxDepth;
}

bool loadText(llvm::StringRef contents, onnx::ModelProto &model,
              MLIRContext *ctx) {
  if (contents.trim().empty()) {
    emitError(UnknownLoc::get(ctx)) << "not an ONNX model: the file is empty";
    return false;
  }
  if (textNesting(contents) > kMaxTextNesting) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: brackets are nested more than "
        << kMaxTextNesting << " levels deep";
    return false;
  }
  std::string text = contents.str();
  onnx::OnnxParser parser(text.c_str());
  onnx::Common::Status status = parser.Parse(model);
  if (!status.IsOK()) {
    // The message quotes the input, which may be binary.
    std::string message = status.ErrorMessage();
    for (char &c : message)
      if (!llvm::isPrint(c) && c != '\n')
        c = '?';
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: " << llvm::StringRef(message).trim();
    return false;
  }
  if (text.size() != strlen(text.c_str())) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: the input contains a NUL byte";
    return false;
  }
  if (!parser.EndOfInput()) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: unexpected text after the main graph";
    return false;
  }
  return true;
}

OwningOpRef<ModuleOp> importUnchecked(llvm::StringRef path,
                                      llvm::StringRef contents, bool fromFile,
                                      MLIRContext *ctx,
                                      const ONNXImportOptions &options) {
  // LLVM's new-handler aborts on a failed allocation; while ONNX and
  // protobuf work on the model, a failed allocation (absurd sizes in a
  // corrupt file) throws std::bad_alloc instead and becomes a diagnostic.
  std::new_handler llvmNewHandler = std::set_new_handler(nullptr);
  llvm::scope_exit restoreNewHandler(
      [&] { std::set_new_handler(llvmNewHandler); });
  try {
    ONNXFormat format = options.format;
    std::unique_ptr<llvm::MemoryBuffer> textBuffer;
    if (format == ONNXFormat::Auto) {
      llvm::StringRef head = contents;
      std::unique_ptr<llvm::MemoryBuffer> headBuffer;
      if (fromFile) {
        auto buffer = llvm::MemoryBuffer::getFileSlice(path, 512, 0);
        if (buffer)
          headBuffer = std::move(*buffer);
        else if (auto whole = llvm::MemoryBuffer::getFile(path))
          headBuffer = std::move(*whole);
        if (headBuffer)
          head = headBuffer->getBuffer();
      }
      format = detectONNXFormat(path, head);
    }
    onnx::ModelProto model;
    if (format == ONNXFormat::Text) {
      if (fromFile) {
        auto buffer = llvm::MemoryBuffer::getFile(path);
        if (!buffer) {
          emitError(UnknownLoc::get(ctx)) << "cannot read '" << path
                                          << "': " << buffer.getError().message();
          return {};
        }
        textBuffer = std::move(*buffer);
        contents = textBuffer->getBuffer();
      }
      if (!loadText(contents, model, ctx))
        return {};
    }
    MappedWeights mapped;
    if (format != ONNXFormat::Text) {
      bool done = fromFile &&
                  loadMapped(path,
                             std::max<size_t>(4096,
                                              options.inlineTensorLimit + 1),
                             model, mapped);
      if (!done && !loadBinary(path, contents, fromFile, model, ctx))
        return {};
    }
    Importer importer(ctx, path, options);
    if (mapped.file)
      importer.useMappedWeights(model, std::move(mapped));
    return importer.importModel(model);
  } catch (const std::bad_alloc &) {
    emitError(UnknownLoc::get(ctx))
        << "cannot import ONNX model: out of memory";
  } catch (const std::exception &e) {
    emitError(UnknownLoc::get(ctx)) << "cannot import ONNX model: " << e.what();
  } catch (...) {
    emitError(UnknownLoc::get(ctx)) << "cannot import ONNX model";
  }
  return {};
}

/// Imports, and makes sure that a failure is never silent: every failing
/// path should report its own error, this catches the ones that do not.
OwningOpRef<ModuleOp> importImpl(llvm::StringRef path, llvm::StringRef contents,
                                 bool fromFile, MLIRContext *ctx,
                                 const ONNXImportOptions &options) {
  bool reported = false;
  OwningOpRef<ModuleOp> module;
  {
    // Watches, and passes every diagnostic on to the caller's handler.
    ScopedDiagnosticHandler watch(ctx, [&](Diagnostic &diag) {
      reported |= diag.getSeverity() == DiagnosticSeverity::Error;
      return failure();
    });
    module = importUnchecked(path, contents, fromFile, ctx, options);
  }
  if (!module && !reported)
    emitError(UnknownLoc::get(ctx))
        << "cannot import ONNX model (internal error: the failure was not "
           "reported)";
  return module;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

void mp::registerONNXImportDialects(DialectRegistry &registry) {
  registry.insert<MPDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> mp::importONNXFile(llvm::StringRef path,
                                         MLIRContext *context,
                                         const ONNXImportOptions &options) {
  return importImpl(path, {}, /*fromFile=*/true, context, options);
}

OwningOpRef<ModuleOp> mp::importONNXBuffer(llvm::StringRef contents,
                                           llvm::StringRef bufferName,
                                           MLIRContext *context,
                                           const ONNXImportOptions &options) {
  return importImpl(bufferName, contents, /*fromFile=*/false, context, options);
}

ONNXFormat mp::detectONNXFormat(llvm::StringRef path, llvm::StringRef head) {
  if (path.ends_with(".onnxtxt") || path.ends_with(".onnx.txt") ||
      path.ends_with(".onnxtext"))
    return ONNXFormat::Text;
  if (path.ends_with(".onnx") || path.ends_with(".pb"))
    return ONNXFormat::Binary;
  // ONNX text starts with `<` (the model header) after optional whitespace
  // and comments.
  llvm::StringRef rest = head;
  while (true) {
    rest = rest.ltrim();
    if (rest.starts_with("#")) {
      rest = rest.drop_until([](char c) { return c == '\n'; });
      continue;
    }
    break;
  }
  return rest.starts_with("<") ? ONNXFormat::Text : ONNXFormat::Binary;
}

bool mp::isONNXFile(llvm::StringRef path) {
  if (path.ends_with(".mlir") || path.ends_with(".mlirbc"))
    return false;
  if (path.ends_with(".onnx") || path.ends_with(".onnxtxt") ||
      path.ends_with(".onnx.txt") || path.ends_with(".onnxtext") ||
      path.ends_with(".pb"))
    return true;
  // Other names: look at the contents. MLIR bytecode starts with "ML\xefR";
  // MLIR text is printable; ONNX text starts with `<`; anything else that is
  // binary is taken as an ONNX protobuf.
  if (path == "-" || path.empty())
    return false;
  std::ifstream file(path.str(), std::ios::binary);
  if (!file)
    return false;
  char buffer[512];
  file.read(buffer, sizeof(buffer));
  llvm::StringRef bytes(buffer, static_cast<size_t>(file.gcount()));
  if (bytes.starts_with("ML\xefR"))
    return false;
  if (llvm::any_of(bytes, [](char c) {
        unsigned char u = static_cast<unsigned char>(c);
        return u < 0x09 || (u > 0x0d && u < 0x20);
      }))
    return true;
  return detectONNXFormat(path, bytes) == ONNXFormat::Text;
}

ONNXDiagnosticHandler::ONNXDiagnosticHandler(MLIRContext *context,
                                             llvm::StringRef fileName,
                                             llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(context), fileName(fileName.str()) {
  setHandler([this, &os](Diagnostic &diag) {
    auto print = [&](Diagnostic &d, llvm::StringRef severity) {
      os << this->fileName << ": ";
      std::optional<std::string> node;
      d.getLocation()->walk([&](Location loc) {
        if (auto name = dyn_cast<NameLoc>(loc)) {
          node = name.getName().str();
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
      if (node)
        os << (node->empty() ? std::string("unnamed node")
                             : "node '" + *node + "'")
           << ": ";
      os << severity << ": " << d.str() << "\n";
    };
    auto severityName = [](DiagnosticSeverity s) -> llvm::StringRef {
      switch (s) {
      case DiagnosticSeverity::Error: return "error";
      case DiagnosticSeverity::Warning: return "warning";
      case DiagnosticSeverity::Note: return "note";
      case DiagnosticSeverity::Remark: return "remark";
      }
      return "error";
    };
    print(diag, severityName(diag.getSeverity()));
    for (Diagnostic &note : diag.getNotes())
      print(note, "note");
    return success();
  });
}
