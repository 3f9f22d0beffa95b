//===- MPDialect.cpp - the mp dialect ------------------------------------===//
#include "mp/Dialect/MP/MPDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mp;

#include "mp/Dialect/MP/MPOpsDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "mp/Dialect/MP/MPOpsTypes.cpp.inc"

namespace {
/// Detects the typed ONNX ops (those generated from MP_OnnxOp).
template <typename OpTy, typename = void>
struct IsTypedOnnxOp : std::false_type {};
template <typename OpTy>
struct IsTypedOnnxOp<OpTy, std::void_t<decltype(OpTy::kOnnxOpType)>>
    : std::true_type {};
} // namespace

template <typename... OpTys> void MPDialect::registerOnnxOps() {
  auto add = [&](auto tag) {
    using OpTy = typename decltype(tag)::type;
    if constexpr (IsTypedOnnxOp<OpTy>::value) {
      auto name = RegisteredOperationName::lookup(OpTy::getOperationName(),
                                                  getContext());
      assert(name && "typed op registered before its ONNX mapping");
      onnxOps.try_emplace(OpTy::kOnnxOpType,
                          OnnxOpInfo{*name, OpTy::kOnnxSinceVersion,
                                     OpTy::kOnnxNumInputs,
                                     OpTy::kOnnxNumOutputs});
    }
  };
  (add(llvm::type_identity<OpTys>{}), ...);
}

void MPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mp/Dialect/MP/MPOps.cpp.inc"
      >();
  registerTypes();
  registerOnnxOps<
#define GET_OP_LIST
#include "mp/Dialect/MP/MPOps.cpp.inc"
      >();
}

void MPDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "mp/Dialect/MP/MPOpsTypes.cpp.inc"
      >();
}

std::optional<RegisteredOperationName>
MPDialect::lookupTypedOp(StringRef opType, int64_t sinceVersion) const {
  auto it = onnxOps.find(opType);
  if (it == onnxOps.end() || sinceVersion < it->second.sinceVersion)
    return std::nullopt;
  return it->second.opName;
}

std::string mp::getNodeName(Location loc) {
  std::string name;
  loc->walk([&](Location l) {
    if (auto named = dyn_cast<NameLoc>(l)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}
