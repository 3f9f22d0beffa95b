// Unit tests of the ONNX importer's C++ API.
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Import/ONNXImporter.h"
#include "mp/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include <catch2/catch.hpp>

using namespace mlir;

namespace {
struct Fixture {
  Fixture() : context(makeRegistry()) { context.printOpOnDiagnostic(false); }
  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    mp::registerAllDialects(registry);
    return registry;
  }
  /// Imports ONNX text; collects diagnostics in `errors`.
  OwningOpRef<ModuleOp> importText(llvm::StringRef text) {
    errors.clear();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      errors += d.str() + "\n";
      return success();
    });
    mp::ONNXImportOptions options;
    options.format = mp::ONNXFormat::Text;
    return mp::importONNXBuffer(text, "test.onnxtxt", &context, options);
  }
  MLIRContext context;
  std::string errors;
};
} // namespace

TEST_CASE_METHOD(Fixture, "imports ONNX text into typed ops", "[import]") {
  auto module = importText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N, 4] x, float[4, 3] w) => (float[N, 3] y) {
      t = MatMul(x, w)
      y = Relu(t)
    })");
  REQUIRE(module);
  auto func = cast<func::FuncOp>(module->getBody()->front());
  REQUIRE(func.getName() == "g");
  int matmuls = 0, relus = 0;
  func.walk([&](mp::MatMulOp op) {
    ++matmuls;
    auto type = cast<RankedTensorType>(op.getType());
    REQUIRE(type.getShape()[1] == 3);
    REQUIRE(ShapedType::isDynamic(type.getShape()[0]));
  });
  func.walk([&](mp::ReluOp) { ++relus; });
  REQUIRE(matmuls == 1);
  REQUIRE(relus == 1);
}

TEST_CASE_METHOD(Fixture, "unknown domains need an opset import", "[import]") {
  auto module = importText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = com.example.Foo(x)
    })");
  REQUIRE(!module);
  REQUIRE(errors.find("does not import") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "undefined inputs are reported", "[import]") {
  auto module = importText(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = Add(x, missing)
    })");
  REQUIRE(!module);
  REQUIRE(errors.find("'missing', which is not defined") != std::string::npos);
}

TEST_CASE_METHOD(Fixture, "the bundled example model imports", "[import]") {
  auto module = mp::importONNXFile(MP_TEST_EXAMPLE_MODEL, &context);
  REQUIRE(module);
  int convs = 0;
  module->walk([&](mp::ConvOp) { ++convs; });
  REQUIRE(convs == 2);
  int generic = 0;
  module->walk([&](mp::OnnxGenericOp) { ++generic; });
  REQUIRE(generic == 0);
}
