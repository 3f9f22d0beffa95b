// Unit tests of the shape helpers behind the typed ops' result types.
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/MLIRContext.h"
#include <catch2/catch.hpp>

using namespace mlir;
using namespace mp;

static constexpr int64_t kDyn = ShapedType::kDynamic;

TEST_CASE("broadcastDims follows numpy rules", "[shape]") {
  using V = llvm::SmallVector<int64_t, 6>;
  auto b = [](V a, V c) { return broadcastDims(Dims(a), Dims(c)); };
  REQUIRE(*b({2, 1, 4}, {3, 1}) == Dims(V{2, 3, 4}));
  REQUIRE(*b({kDyn, 4}, {1, 4}) == Dims(V{kDyn, 4}));
  REQUIRE(*b({kDyn}, {5}) == Dims(V{5}));
  REQUIRE(*b({}, {2, 3}) == Dims(V{2, 3}));
  REQUIRE(failed(b({2, 3}, {4, 3})));
  REQUIRE(!*broadcastDims(std::nullopt, Dims(V{2})));
}

TEST_CASE("ONNX data types map to MLIR types and back", "[types]") {
  MLIRContext context;
  context.loadDialect<MPDialect>();
  for (int64_t dataType = 1; dataType <= 20; ++dataType) {
    Type type = getTypeForOnnxDataType(&context, dataType);
    REQUIRE(type);
    REQUIRE(getOnnxDataTypeForType(type) == dataType);
  }
  REQUIRE(!getTypeForOnnxDataType(&context, 0));
  REQUIRE(!getTypeForOnnxDataType(&context, 99));
  REQUIRE(getTypeForOnnxDataType(&context, 10).isF16());
  REQUIRE(getTypeForOnnxDataType(&context, 16).isBF16());
}

TEST_CASE("type compatibility allows refinement only", "[types]") {
  MLIRContext context;
  context.loadDialect<MPDialect>();
  Type f32 = Float32Type::get(&context);
  auto ranked = [&](llvm::ArrayRef<int64_t> dims) {
    return RankedTensorType::get(dims, f32);
  };
  REQUIRE(isCompatibleType(ranked({kDyn, 4}), ranked({2, 4})));
  REQUIRE(isCompatibleType(UnrankedTensorType::get(f32), ranked({2, 4})));
  REQUIRE(isCompatibleType(UnknownType::get(&context), ranked({2})));
  REQUIRE_FALSE(isCompatibleType(ranked({3, 4}), ranked({2, 4})));
  REQUIRE_FALSE(isCompatibleType(ranked({4}), ranked({2, 4})));
  REQUIRE_FALSE(isCompatibleType(
      ranked({4}), RankedTensorType::get({4}, Float16Type::get(&context))));
  REQUIRE(refineType(ranked({kDyn, 4}), ranked({2, kDyn})) == ranked({2, 4}));
}
