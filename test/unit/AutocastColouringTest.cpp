//===- AutocastColouringTest.cpp - the four-colour algorithm alone --------===//
//
// mp::autocast::Colouring on small functions, without the rewrite: which
// nodes go low, why (the rule text), and how many precision boundaries the
// colours imply. test/Passes/MP/Autocast covers the whole pass.
//
//===----------------------------------------------------------------------===//
#include "mp/Autocast/Colouring.h"
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <catch2/catch.hpp>

using namespace mp::autocast;

namespace {

/// Parses one function, colours it with `policy` and keeps both alive.
struct Coloured {
  explicit Coloured(const char *source,
                    PrecisionPolicy policy = PrecisionPolicy::defaults())
      : policy(std::move(policy)) {
    context.loadDialect<mp::MPDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
    REQUIRE(module);
    func = *module->getOps<mlir::func::FuncOp>().begin();
    opTypes = policyOpTypes(&context);
    colouring.emplace(func, this->policy, opTypes);
    colouring->run();
  }

  /// The node of the op at location `name`.
  const Node &node(llvm::StringRef name) const {
    for (const Node &n : colouring->nodes)
      if (n.name == name)
        return n;
    FAIL("no node named " << name.str());
    return colouring->nodes.front();
  }

  mlir::MLIRContext context;
  PrecisionPolicy policy;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  llvm::DenseMap<mlir::OperationName, llvm::StringRef> opTypes;
  std::optional<Colouring> colouring;
};

// matmul -> relu -> matmul -> softmax: the relu between two allow ops goes
// low, the softmax (deny) stays f32.
const char *kMlp = R"mlir(
func.func @mlp(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %m1 = mp.matmul %a, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm1")
  %r = mp.relu %m1 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  %m2 = mp.matmul %r, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm2")
  %s = mp.softmax %m2 : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax")
  return %s : tensor<4x8xf32>
}
)mlir";

} // namespace

TEST_CASE("colouring: allow ops go low, infer ops between them follow, deny "
          "ops stay f32",
          "[autocast][colouring]") {
  Coloured c(kMlp);
  REQUIRE(c.colouring->nodes.size() == 4);
  CHECK(c.node("mm1").low);
  CHECK(c.node("mm2").low);
  CHECK(c.node("relu").low);
  CHECK(c.node("relu").policyClass == PrecisionClass::Infer);
  CHECK(llvm::StringRef(c.node("relu").rule).contains("between low-precision"));
  CHECK_FALSE(c.node("softmax").low);
  CHECK(c.node("softmax").cls == PrecisionClass::Deny);
  // The graph: relu reads mm1 and feeds mm2.
  const Node &relu = c.node("relu");
  REQUIRE(relu.inputs.size() == 1);
  CHECK(c.colouring->nodes[relu.inputs[0]].name == "mm1");
  // Boundaries: a and w into f16 (w once, read by both matmuls), mm2's
  // result back to f32 for the softmax.
  CHECK(c.colouring->countBoundaries(c.func, /*keepIOTypes=*/true) == 3);
}

TEST_CASE("colouring: the tensor-cores-only level keeps infer ops in f32",
          "[autocast][colouring]") {
  PrecisionPolicy policy = PrecisionPolicy::defaults();
  policy.level = Level::TensorCoresOnly;
  Coloured c(kMlp, policy);
  CHECK(c.node("mm1").low);
  CHECK(c.node("mm2").low);
  CHECK_FALSE(c.node("relu").low);
  CHECK(llvm::StringRef(c.node("relu").rule).contains("tensor-cores-only"));
}

TEST_CASE("colouring: a node override beats the op's class",
          "[autocast][colouring]") {
  PrecisionPolicy policy = PrecisionPolicy::defaults();
  llvm::Error error =
      policy.addNodeOverride("mm2", PrecisionClass::Deny, "test override");
  REQUIRE_FALSE(static_cast<bool>(error));
  Coloured c(kMlp, policy);
  CHECK(c.node("mm1").low);
  CHECK_FALSE(c.node("mm2").low);
  CHECK(c.node("mm2").fixedByOverride);
  // Between a low and an f32 matmul the relu has nothing to join.
  CHECK_FALSE(c.node("relu").low);
}

TEST_CASE("colouring: ops without floating-point data are no nodes",
          "[autocast][colouring]") {
  Coloured c(R"mlir(
func.func @ints(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %s = mp.add %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("add")
  return %s : tensor<4xi64>
}
)mlir");
  CHECK(c.colouring->nodes.empty());
  CHECK(c.colouring->countBoundaries(c.func, true) == 0);
}
