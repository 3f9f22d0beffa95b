// Unit tests of the ONNX importer's public API on models built here: binary
// (a serialized onnx::ModelProto) and text buffers, format detection,
// initializer storage, generic import, output names, missing optional inputs
// and diagnostics.
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

using namespace mlir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
//===----------------------------------------------------------------------===//
// Building ONNX models
//===----------------------------------------------------------------------===//

/// A model with IR version 8 and the default domain at `opset`.
onnx::ModelProto makeModel(int64_t opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("unit-test");
  onnx::OperatorSetIdProto *id = model.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  model.mutable_graph()->set_name("g");
  return model;
}

void setTensorType(onnx::ValueInfoProto *info, int elemType,
                   std::vector<int64_t> dims) {
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elemType);
  tensor->clear_shape();
  auto *shape = tensor->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param("N");
    else
      shape->add_dim()->set_dim_value(d);
  }
}

void addInput(onnx::GraphProto *graph, const std::string &name,
              std::vector<int64_t> dims,
              int elemType = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto *input = graph->add_input();
  input->set_name(name);
  setTensorType(input, elemType, std::move(dims));
}

void addOutput(onnx::GraphProto *graph, const std::string &name,
               std::vector<int64_t> dims,
               int elemType = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto *output = graph->add_output();
  output->set_name(name);
  setTensorType(output, elemType, std::move(dims));
}

onnx::NodeProto *addNode(onnx::GraphProto *graph, const std::string &opType,
                         std::vector<std::string> inputs,
                         std::vector<std::string> outputs,
                         const std::string &name = "") {
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type(opType);
  node->set_name(name);
  for (const std::string &in : inputs)
    node->add_input(in);
  for (const std::string &out : outputs)
    node->add_output(out);
  return node;
}

void addIntsAttr(onnx::NodeProto *node, const std::string &name,
                 std::vector<int64_t> values) {
  onnx::AttributeProto *attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    attr->add_ints(v);
}

/// A float initializer, as raw_data or float_data.
onnx::TensorProto *addFloatInitializer(onnx::GraphProto *graph,
                                       const std::string &name,
                                       std::vector<int64_t> dims,
                                       const std::vector<float> &values,
                                       bool raw) {
  onnx::TensorProto *tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    tensor->add_dims(d);
  if (raw)
    tensor->set_raw_data(std::string(
        reinterpret_cast<const char *>(values.data()), values.size() * 4));
  else
    for (float v : values)
      tensor->add_float_data(v);
  return tensor;
}

std::vector<float> iota(size_t n) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i)
    values[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return values;
}

/// y = MatMul(x, w) with x: [N, 4], w: [4, 3] an initializer of 48 bytes.
onnx::ModelProto makeMatMulModel(bool rawWeights = true) {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addInput(graph, "x", {-1, 4});
  addFloatInitializer(graph, "w", {4, 3}, iota(12), rawWeights);
  addNode(graph, "MatMul", {"x", "w"}, {"y"}, "matmul_node");
  addOutput(graph, "y", {-1, 3});
  return model;
}

//===----------------------------------------------------------------------===//
// Fixture
//===----------------------------------------------------------------------===//

struct ImportFixture {
  ImportFixture() : context(makeRegistry()) {
    context.printOpOnDiagnostic(false);
  }
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    mp::registerONNXImportDialects(registry);
    return registry;
  }

  /// Imports `contents`; collects the diagnostics (and their locations) in
  /// `errors`, `warnings` and `locations`.
  OwningOpRef<ModuleOp> import(llvm::StringRef contents,
                               llvm::StringRef name,
                               const mp::ONNXImportOptions &options = {}) {
    errors.clear();
    warnings.clear();
    locations.clear();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      std::string &out =
          diag.getSeverity() == DiagnosticSeverity::Error ? errors : warnings;
      out += diag.str() + "\n";
      if (auto nameLoc = dyn_cast<NameLoc>(diag.getLocation()))
        locations.push_back(nameLoc.getName().str());
      return success();
    });
    return mp::importONNXBuffer(contents, name, &context, options);
  }
  OwningOpRef<ModuleOp> importModel(const onnx::ModelProto &model,
                                    const mp::ONNXImportOptions &options = {}) {
    return import(model.SerializeAsString(), "model.onnx", options);
  }

  static func::FuncOp getFunc(ModuleOp module) {
    auto funcs = module.getOps<func::FuncOp>();
    REQUIRE(std::distance(funcs.begin(), funcs.end()) == 1);
    return *funcs.begin();
  }
  template <typename OpTy> static std::vector<OpTy> collect(Operation *root) {
    std::vector<OpTy> ops;
    root->walk([&](OpTy op) { ops.push_back(op); });
    return ops;
  }
  static std::vector<std::string> names(ArrayAttr array) {
    std::vector<std::string> result;
    for (Attribute a : array)
      result.push_back(cast<StringAttr>(a).str());
    return result;
  }
  static std::string typeString(Type type) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << type;
    return s;
  }

  MLIRContext context;
  std::string errors, warnings;
  std::vector<std::string> locations;
};

constexpr const char *kTextModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  agraph (float[N, 4] x, float[4, 3] w) => (float[N, 3] y) {
    t = MatMul(x, w)
    y = Relu(t)
  }
)";
} // namespace

//===----------------------------------------------------------------------===//
// Formats
//===----------------------------------------------------------------------===//

TEST_CASE_METHOD(ImportFixture, "importONNXBuffer reads binary ModelProtos",
                 "[importer][binary]") {
  onnx::ModelProto model = makeMatMulModel();
  auto module = importModel(model);
  INFO(errors);
  REQUIRE(module);
  // The module keeps the model's metadata.
  CHECK((*module)->getAttrOfType<IntegerAttr>("mp.ir_version").getInt() == 8);
  CHECK((*module)->getAttrOfType<StringAttr>("mp.producer_name").str() ==
        "unit-test");
  auto opsets = (*module)->getAttrOfType<DictionaryAttr>("mp.opset_import");
  REQUIRE(opsets);
  CHECK(opsets.getAs<IntegerAttr>("ai.onnx").getInt() == 13);

  func::FuncOp func = getFunc(*module);
  CHECK(func.getName() == "g");
  // w is an initializer, not an argument.
  REQUIRE(func.getNumArguments() == 1);
  CHECK(typeString(func.getArgument(0).getType()) == "tensor<?x4xf32>");
  CHECK(func.getArgAttrOfType<StringAttr>(0, "mp.name").str() == "x");
  CHECK(names(func.getArgAttrOfType<ArrayAttr>(0, "mp.dim_params")) ==
        std::vector<std::string>{"N", ""});
  REQUIRE(func.getNumResults() == 1);
  CHECK(typeString(func.getResultTypes()[0]) == "tensor<?x3xf32>");
  CHECK(func.getResultAttrOfType<StringAttr>(0, "mp.name").str() == "y");

  auto matmuls = collect<mp::MatMulOp>(func);
  REQUIRE(matmuls.size() == 1);
  // Ops are located at their node.
  auto loc = dyn_cast<NameLoc>(matmuls[0].getLoc());
  REQUIRE(loc);
  CHECK(loc.getName().str() == "matmul_node");
  auto inits = collect<mp::InitializerOp>(func);
  REQUIRE(inits.size() == 1);
  CHECK(inits[0].getName() == "w");
  CHECK(matmuls[0].getB() == inits[0].getResult());
}

TEST_CASE_METHOD(ImportFixture, "importONNXBuffer reads ONNX text",
                 "[importer][text]") {
  for (auto [name, format] :
       {std::pair{"m.onnxtxt", mp::ONNXFormat::Auto},
        std::pair{"no-extension", mp::ONNXFormat::Auto},
        std::pair{"m.onnx", mp::ONNXFormat::Text}}) {
    INFO("buffer name " << name);
    mp::ONNXImportOptions options;
    options.format = format;
    auto module = import(kTextModel, name, options);
    INFO(errors);
    REQUIRE(module);
    func::FuncOp func = getFunc(*module);
    CHECK(func.getName() == "agraph");
    CHECK(func.getNumArguments() == 2);
    CHECK(collect<mp::MatMulOp>(func).size() == 1);
    CHECK(collect<mp::ReluOp>(func).size() == 1);
    CHECK(typeString(func.getResultTypes()[0]) == "tensor<?x3xf32>");
  }
  // Forcing the wrong format fails cleanly.
  mp::ONNXImportOptions binary;
  binary.format = mp::ONNXFormat::Binary;
  CHECK(!import(kTextModel, "m.onnxtxt", binary));
  CHECK_THAT(errors, Contains("ONNX model"));
  mp::ONNXImportOptions text;
  text.format = mp::ONNXFormat::Text;
  CHECK(!import(makeMatMulModel().SerializeAsString(), "m.onnx", text));
  CHECK_THAT(errors, Contains("cannot parse ONNX text"));
}

TEST_CASE("detectONNXFormat and isONNXFile", "[importer][format]") {
  using mp::ONNXFormat;
  // By name first.
  CHECK(mp::detectONNXFormat("a.onnxtxt", "") == ONNXFormat::Text);
  CHECK(mp::detectONNXFormat("a.onnx.txt", "") == ONNXFormat::Text);
  CHECK(mp::detectONNXFormat("a.onnxtext", "") == ONNXFormat::Text);
  CHECK(mp::detectONNXFormat("dir/a.onnx", "<ir_version: 8>") ==
        ONNXFormat::Binary);
  CHECK(mp::detectONNXFormat("a.pb", "") == ONNXFormat::Binary);
  // Then by contents: text starts with `<` after blanks and comments.
  CHECK(mp::detectONNXFormat("model", "<ir_version: 8>") == ONNXFormat::Text);
  CHECK(mp::detectONNXFormat("model", "\n  # a comment\n\n# more\n  <") ==
        ONNXFormat::Text);
  CHECK(mp::detectONNXFormat("model", "# only a comment") ==
        ONNXFormat::Binary);
  CHECK(mp::detectONNXFormat("model", llvm::StringRef("\x08\x08\x12\x00", 4)) ==
        ONNXFormat::Binary);
  CHECK(mp::detectONNXFormat("model", "") == ONNXFormat::Binary);

  CHECK(mp::isONNXFile("model.onnx"));
  CHECK(mp::isONNXFile("dir.d/model.onnxtxt"));
  CHECK(mp::isONNXFile("model.onnx.txt"));
  CHECK(mp::isONNXFile("model.onnxtext"));
  CHECK(mp::isONNXFile("model.pb"));
  CHECK_FALSE(mp::isONNXFile("model.mlir"));
  CHECK_FALSE(mp::isONNXFile("model.mlirbc"));
  CHECK_FALSE(mp::isONNXFile("model.onnx.mlir"));
  CHECK_FALSE(mp::isONNXFile("-"));
}

// Files whose name says nothing are recognized by their contents.
TEST_CASE("isONNXFile looks at the contents of files with other names",
          "[importer][format]") {
  llvm::SmallString<128> path;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("mp-unit", "model", path));
  llvm::scope_exit remove([&] { llvm::sys::fs::remove(path); });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << kTextModel;
  }
  CHECK(mp::isONNXFile(path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << "module {\n  func.func @f() {\n    return\n  }\n}\n";
  }
  CHECK_FALSE(mp::isONNXFile(path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << llvm::StringRef("\x08\x07\x12\x07pytorch", 11); // ir_version, producer
  }
  CHECK(mp::isONNXFile(path));
}

TEST_CASE_METHOD(ImportFixture, "importONNXFile reads files",
                 "[importer][file]") {
  llvm::SmallString<128> dir;
  REQUIRE(!llvm::sys::fs::createUniqueDirectory("mp-unit", dir));
  llvm::scope_exit remove(
      [&] { llvm::sys::fs::remove_directories(dir); });
  auto write = [&](llvm::StringRef name, llvm::StringRef contents) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    REQUIRE(!ec);
    os << contents;
    return std::string(path);
  };

  std::string binary = write("m.onnx", makeMatMulModel().SerializeAsString());
  std::string text = write("m.onnxtxt", kTextModel);
  std::string sniffed = write("model.data", kTextModel);
  for (const std::string &path : {binary, text, sniffed}) {
    INFO(path);
    errors.clear();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      errors += diag.str() + "\n";
      return success();
    });
    auto module = mp::importONNXFile(path, &context);
    INFO(errors);
    REQUIRE(module);
    CHECK(collect<mp::MatMulOp>(module->getOperation()).size() == 1);
  }

  // Weights in an external data file next to the model.
  onnx::ModelProto model = makeMatMulModel();
  onnx::TensorProto *w = model.mutable_graph()->mutable_initializer(0);
  std::string raw = w->raw_data();
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto setExternal = [&](const std::string &location) {
    w->clear_external_data();
    auto *entry = w->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    entry = w->add_external_data();
    entry->set_key("offset");
    entry->set_value("4");
  };
  write("weights.bin", "pad:" + raw);
  setExternal("weights.bin");
  std::string external = write("external.onnx", model.SerializeAsString());
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      errors += diag.str() + "\n";
      return success();
    });
    errors.clear();
    auto module = mp::importONNXFile(external, &context);
    INFO(errors);
    REQUIRE(module);
    auto inits = collect<mp::InitializerOp>(module->getOperation());
    REQUIRE(inits.size() == 1);
    auto resource = dyn_cast<DenseResourceElementsAttr>(inits[0].getValue());
    REQUIRE(resource);
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    REQUIRE(blob);
    CHECK(std::string(blob->getData().data(), blob->getData().size()) == raw);

    // Locations outside the model's directory are rejected.
    setExternal("../weights.bin");
    std::string escaping = write("escaping.onnx", model.SerializeAsString());
    errors.clear();
    CHECK(!mp::importONNXFile(escaping, &context));
    CHECK_THAT(errors, Contains("must be a relative path inside the model's "
                                "directory"));

    errors.clear();
    llvm::SmallString<128> missing(dir);
    llvm::sys::path::append(missing, "missing.onnx");
    CHECK(!mp::importONNXFile(missing, &context));
    CHECK_THAT(errors, Contains("cannot open"));
  }
}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

TEST_CASE_METHOD(ImportFixture,
                 "initializers are inline or dense_resource by size",
                 "[importer][initializers]") {
  std::vector<float> expected = iota(12); // 48 bytes
  for (bool raw : {true, false}) {
    INFO((raw ? "raw_data" : "float_data"));
    onnx::ModelProto model = makeMatMulModel(raw);
    for (size_t limit : {size_t(1024), size_t(48), size_t(47), size_t(0)}) {
      INFO("inlineTensorLimit " << limit);
      mp::ONNXImportOptions options;
      options.inlineTensorLimit = limit;
      auto module = importModel(model, options);
      INFO(errors);
      REQUIRE(module);
      auto inits = collect<mp::InitializerOp>(module->getOperation());
      REQUIRE(inits.size() == 1);
      ElementsAttr value = inits[0].getValue();
      CHECK(typeString(value.getType()) == "tensor<4x3xf32>");
      std::vector<float> actual;
      if (limit >= 48) {
        auto dense = dyn_cast<DenseElementsAttr>(value);
        REQUIRE(dense);
        for (float v : dense.getValues<float>())
          actual.push_back(v);
      } else {
        auto resource = dyn_cast<DenseResourceElementsAttr>(value);
        REQUIRE(resource);
        CHECK(resource.getRawHandle().getKey().starts_with("w"));
        AsmResourceBlob *blob = resource.getRawHandle().getBlob();
        REQUIRE(blob);
        ArrayRef<char> data = blob->getData();
        REQUIRE(data.size() == 48);
        actual.resize(12);
        std::memcpy(actual.data(), data.data(), 48);
      }
      CHECK(actual == expected);
    }
  }
}

TEST_CASE_METHOD(ImportFixture, "an initializer that is also a graph input",
                 "[importer][initializers]") {
  onnx::ModelProto model = makeMatMulModel();
  // IR < 4 style: w is listed as an input with a default value.
  addInput(model.mutable_graph(), "w", {4, 3});
  auto module = importModel(model);
  INFO(errors);
  REQUIRE(module);
  func::FuncOp func = getFunc(*module);
  CHECK(func.getNumArguments() == 1);
  auto inits = collect<mp::InitializerOp>(func);
  REQUIRE(inits.size() == 1);
  REQUIRE(inits[0].getInputIndex());
  CHECK(*inits[0].getInputIndex() == 1);

  // Its declared type must match the initializer.
  setTensorType(model.mutable_graph()->mutable_input(1),
                onnx::TensorProto::FLOAT, {3, 4});
  CHECK(!importModel(model));
  CHECK_THAT(errors, Contains("initializer 'w' has type 'tensor<4x3xf32>' "
                              "but the graph input of that name is "
                              "'tensor<3x4xf32>'"));
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

TEST_CASE_METHOD(ImportFixture, "typedOps=false imports every node generically",
                 "[importer][generic]") {
  mp::ONNXImportOptions options;
  options.typedOps = false;
  options.format = mp::ONNXFormat::Text;
  auto module = import(kTextModel, "m", options);
  INFO(errors);
  REQUIRE(module);
  func::FuncOp func = getFunc(*module);
  CHECK(collect<mp::MatMulOp>(func).empty());
  CHECK(collect<mp::ReluOp>(func).empty());
  auto generic = collect<mp::OnnxGenericOp>(func);
  REQUIRE(generic.size() == 2);
  CHECK(generic[0].getOpType() == "MatMul");
  CHECK(generic[1].getOpType() == "Relu");
  for (mp::OnnxGenericOp op : generic) {
    CHECK(op.getDomain().empty());
    CHECK(op.getVersion() == 13);
  }
  CHECK(generic[1].getInputs()[0] == generic[0].getOutputs()[0]);
  // Types still come from ONNX shape inference.
  CHECK(typeString(generic[0].getOutputs()[0].getType()) == "tensor<?x3xf32>");
  CHECK(names(generic[1]->getAttrOfType<ArrayAttr>("mp.outputs")) ==
        std::vector<std::string>{"y"});

  // With typed ops (the default) the same model has no generic op.
  options.typedOps = true;
  module = import(kTextModel, "m", options);
  REQUIRE(module);
  CHECK(collect<mp::OnnxGenericOp>(module->getOperation()).empty());
}

TEST_CASE_METHOD(ImportFixture, "mp.outputs keeps the ONNX output names",
                 "[importer][outputs]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addInput(graph, "x", {1, 3, 8, 8});
  // MaxPool with only its first output: the typed op has two results.
  onnx::NodeProto *pool = addNode(graph, "MaxPool", {"x"}, {"pooled"}, "pool");
  addIntsAttr(pool, "kernel_shape", {2, 2});
  addIntsAttr(pool, "strides", {2, 2});
  // LSTM with only its second output (every LSTM output is optional).
  addInput(graph, "seq", {7, 4, 10});
  addInput(graph, "W", {1, 80, 10});
  addInput(graph, "R", {1, 80, 20});
  onnx::NodeProto *lstm =
      addNode(graph, "LSTM", {"seq", "W", "R"}, {"", "y_h"}, "lstm");
  onnx::AttributeProto *hidden = lstm->add_attribute();
  hidden->set_name("hidden_size");
  hidden->set_type(onnx::AttributeProto::INT);
  hidden->set_i(20);
  addOutput(graph, "pooled", {1, 3, 4, 4});
  addOutput(graph, "y_h", {1, 4, 20});

  auto module = importModel(model);
  INFO(errors);
  REQUIRE(module);
  auto pools = collect<mp::MaxPoolOp>(module->getOperation());
  REQUIRE(pools.size() == 1);
  CHECK(names(pools[0]->getAttrOfType<ArrayAttr>("mp.outputs")) ==
        std::vector<std::string>{"pooled", ""});
  CHECK(typeString(pools[0].getY().getType()) == "tensor<1x3x4x4xf32>");
  CHECK(typeString(pools[0].getIndices().getType()) == "tensor<1x3x4x4xi64>");
  auto lstms = collect<mp::LSTMOp>(module->getOperation());
  REQUIRE(lstms.size() == 1);
  CHECK(names(lstms[0]->getAttrOfType<ArrayAttr>("mp.outputs")) ==
        std::vector<std::string>{"", "y_h", ""});
  // Missing optional inputs are padded with mp.none up to the op's 8.
  CHECK(lstms[0]->getNumOperands() == 8);
  CHECK(typeString(lstms[0].getY().getType()) == "tensor<7x1x4x20xf32>");
  CHECK(typeString(lstms[0].getYH().getType()) == "tensor<1x4x20xf32>");
  // The graph outputs are the named results.
  func::FuncOp func = getFunc(*module);
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  CHECK(ret.getOperand(0) == pools[0].getY());
  CHECK(ret.getOperand(1) == lstms[0].getYH());
}

TEST_CASE_METHOD(ImportFixture, "missing optional inputs are mp.none operands",
                 "[importer][none]") {
  onnx::ModelProto model = makeModel();
  onnx::GraphProto *graph = model.mutable_graph();
  addInput(graph, "x", {1, 2, 5, 5});
  addInput(graph, "w", {4, 2, 3, 3});
  addInput(graph, "hi", {});
  // Conv without its bias: a trailing input that is left out.
  addNode(graph, "Conv", {"x", "w"}, {"c"}, "conv");
  // Clip with min given as "": an explicitly missing input.
  addNode(graph, "Clip", {"c", "", "hi"}, {"y"}, "clip");
  addOutput(graph, "y", {1, 4, 3, 3});

  auto module = importModel(model);
  INFO(errors);
  REQUIRE(module);
  auto convs = collect<mp::ConvOp>(module->getOperation());
  auto clips = collect<mp::ClipOp>(module->getOperation());
  REQUIRE(convs.size() == 1);
  REQUIRE(clips.size() == 1);
  Value bias = convs[0].getB();
  CHECK(isa<NoneType>(bias.getType()));
  CHECK(bias.getDefiningOp<mp::NoneOp>());
  CHECK(clips[0].getMin().getDefiningOp<mp::NoneOp>());
  CHECK(isa<BlockArgument>(clips[0].getMax()));
  // One mp.none per block serves every missing input.
  CHECK(collect<mp::NoneOp>(module->getOperation()).size() == 1);
  CHECK(clips[0].getMin() == bias);
  CHECK(typeString(convs[0].getY().getType()) == "tensor<1x4x3x3xf32>");
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST_CASE_METHOD(ImportFixture, "malformed inputs are diagnosed",
                 "[importer][errors]") {
  CHECK(!import("", "empty.onnx"));
  CHECK_THAT(errors, Contains("not an ONNX model: the input is empty"));

  CHECK(!import(llvm::StringRef("\x0a\xff\xff\xff", 4), "corrupt.onnx"));
  CHECK_THAT(errors, Contains("the protobuf data is truncated or corrupt"));

  CHECK(!import("<ir_version: 8, opset_import: [\"\" : 13]>\ng (float x) => (",
                "broken.onnxtxt"));
  CHECK_THAT(errors, Contains("cannot parse ONNX text"));

  onnx::ModelProto noGraph = makeModel();
  noGraph.clear_graph();
  CHECK(!importModel(noGraph));
  CHECK_THAT(errors, Contains("it has no graph"));

  CHECK(!importModel(makeModel(/*opset=*/99)));
  CHECK_THAT(errors, Contains("unsupported opset: the model uses ai.onnx "
                              "opset 99"));
}

TEST_CASE_METHOD(ImportFixture, "graph errors are located at the node",
                 "[importer][errors]") {
  SECTION("undefined input") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Add", {"x", "nowhere"}, {"y"}, "adder");
    addOutput(model.mutable_graph(), "y", {2});
    CHECK(!importModel(model));
    CHECK_THAT(errors, Contains("Add node uses 'nowhere', which is not "
                                "defined"));
    CHECK(locations == std::vector<std::string>{"adder"});
  }
  SECTION("duplicate definition") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Relu", {"x"}, {"y"}, "first");
    addNode(model.mutable_graph(), "Neg", {"x"}, {"y"}, "second");
    addOutput(model.mutable_graph(), "y", {2});
    CHECK(!importModel(model));
    CHECK_THAT(errors, Contains("duplicate definition of value 'y'"));
    CHECK(locations == std::vector<std::string>{"second"});
  }
  SECTION("cycle") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Add", {"x", "b"}, {"a"}, "n1");
    addNode(model.mutable_graph(), "Relu", {"a"}, {"b"}, "n2");
    addOutput(model.mutable_graph(), "b", {2});
    CHECK(!importModel(model));
    CHECK_THAT(errors, Contains("the graph has a cycle"));
    REQUIRE(locations.size() == 1);
    CHECK((locations[0] == "n1" || locations[0] == "n2"));
  }
  SECTION("unknown domain") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Foo", {"x"}, {"y"}, "custom")
        ->set_domain("com.example");
    addOutput(model.mutable_graph(), "y", {2});
    CHECK(!importModel(model));
    CHECK_THAT(errors, Contains("uses domain 'com.example', which the model "
                                "does not import"));
    CHECK(locations == std::vector<std::string>{"custom"});
  }
  SECTION("output not produced") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addOutput(model.mutable_graph(), "ghost", {2});
    CHECK(!importModel(model));
    CHECK_THAT(errors, Contains("graph output 'ghost' is not produced"));
  }
  SECTION("shape error of a typed op") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "a", {2, 3});
    addInput(model.mutable_graph(), "b", {4, 5});
    addNode(model.mutable_graph(), "MatMul", {"a", "b"}, {"y"}, "mm");
    addOutput(model.mutable_graph(), "y", {});
    mp::ONNXImportOptions options;
    options.shapeInference = false;
    CHECK(!importModel(model, options));
    CHECK_THAT(errors, Contains("ONNX MatMul: contraction dims differ: 3 vs 4"));
    CHECK(locations == std::vector<std::string>{"mm"});
  }
}

TEST_CASE_METHOD(ImportFixture, "custom-domain nodes import as mp.onnx_op",
                 "[importer][generic]") {
  onnx::ModelProto model = makeModel();
  onnx::OperatorSetIdProto *custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(3);
  addInput(model.mutable_graph(), "x", {2});
  onnx::NodeProto *node =
      addNode(model.mutable_graph(), "Foo", {"x"}, {"y"}, "custom");
  node->set_domain("com.example");
  addIntsAttr(node, "sizes", {1, 2});
  addOutput(model.mutable_graph(), "y", {2});
  auto module = importModel(model);
  INFO(errors);
  REQUIRE(module);
  auto generic = collect<mp::OnnxGenericOp>(module->getOperation());
  REQUIRE(generic.size() == 1);
  CHECK(generic[0].getDomain() == "com.example");
  CHECK(generic[0].getOpType() == "Foo");
  CHECK(generic[0].getVersion() == 3);
  REQUIRE(generic[0].getOnnxAttrs());
  auto sizes = generic[0].getOnnxAttrs()->getAs<DenseI64ArrayAttr>("sizes");
  REQUIRE(sizes);
  CHECK(sizes.asArrayRef() == ArrayRef<int64_t>{1, 2});
  // The declared output type is kept.
  CHECK(typeString(generic[0].getOutputs()[0].getType()) == "tensor<2xf32>");

  // An op type that the default domain does not have is an error.
  node->set_domain("");
  node->set_op_type("NotAnOp");
  CHECK(!importModel(model));
  CHECK_THAT(errors, Contains("'NotAnOp' is not an operator of domain "
                              "'ai.onnx' at opset 13"));
  CHECK(locations == std::vector<std::string>{"custom"});
}

TEST_CASE("ONNXDiagnosticHandler prints file, node and severity",
          "[importer][diagnostics]") {
  DialectRegistry registry;
  mp::registerONNXImportDialects(registry);
  MLIRContext context(registry);
  std::string out;
  llvm::raw_string_ostream os(out);
  mp::ONNXDiagnosticHandler handler(&context, "dir/model.onnx", os);

  SECTION("an error at a named node") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Add", {"x", "missing"}, {"y"}, "n1");
    addOutput(model.mutable_graph(), "y", {2});
    CHECK(!mp::importONNXBuffer(model.SerializeAsString(), "model.onnx",
                                &context));
    CHECK(out == "dir/model.onnx: node 'n1': error: Add node uses 'missing', "
                 "which is not defined: no graph input, initializer or node "
                 "output has this name\n");
  }
  SECTION("an error at an unnamed node") {
    onnx::ModelProto model = makeModel();
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Add", {"x", "missing"}, {"y"});
    addOutput(model.mutable_graph(), "y", {2});
    CHECK(!mp::importONNXBuffer(model.SerializeAsString(), "model.onnx",
                                &context));
    CHECK_THAT(out, StartsWith("dir/model.onnx: unnamed node: error: Add node "
                               "uses 'missing'"));
  }
  SECTION("an error about the whole file") {
    CHECK(!mp::importONNXBuffer("", "model.onnx", &context));
    CHECK(out ==
          "dir/model.onnx: error: not an ONNX model: the input is empty\n");
  }
  SECTION("warnings at a node and about the whole file") {
    // The declared type of y contradicts Relu's semantics.
    onnx::ModelProto model = makeModel();
    model.set_ir_version(onnx::Version::IR_VERSION + 1);
    addInput(model.mutable_graph(), "x", {2});
    addNode(model.mutable_graph(), "Relu", {"x"}, {"y"}, "act");
    addOutput(model.mutable_graph(), "y", {3});
    mp::ONNXImportOptions options;
    options.shapeInference = false;
    CHECK(mp::importONNXBuffer(model.SerializeAsString(), "model.onnx",
                               &context, options));
    CHECK(out ==
          "dir/model.onnx: warning: the model has IR version " +
              std::to_string(onnx::Version::IR_VERSION + 1) +
              "; this build knows up to " +
              std::to_string(onnx::Version::IR_VERSION) +
              "\n"
              "dir/model.onnx: node 'act': warning: Relu node: ONNX shape "
              "inference gives 'tensor<3xf32>' but the operator's "
              "semantics give 'tensor<2xf32>'; using the latter\n");
  }
  SECTION("a diagnostic with a note") {
    Location loc = FusedLoc::get(
        &context, {FileLineColLoc::get(&context, "x.cpp", 1, 2),
                   NameLoc::get(StringAttr::get(&context, "inner"))});
    InFlightDiagnostic diag = emitError(loc) << "outer problem";
    diag.attachNote(NameLoc::get(StringAttr::get(&context, "other")))
        << "see here";
    diag.report();
    CHECK(out == "dir/model.onnx: node 'inner': error: outer problem\n"
                 "dir/model.onnx: node 'other': note: see here\n");
  }
}
