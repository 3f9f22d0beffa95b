//===- CuLibDialect.cpp - the culib dialect ------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/CuLib/CallBuffers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mp::culib;

#include "mp/Dialect/CuLib/CuLibOpsDialect.cpp.inc"

#include "mp/Dialect/CuLib/CuLibEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "mp/Dialect/CuLib/CuLibAttrs.cpp.inc"

void CuLibDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mp/Dialect/CuLib/CuLibOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mp/Dialect/CuLib/CuLibAttrs.cpp.inc"
      >();
}

namespace {
/// Reads a keyword and finds the enum value (0 to count - 1) it spells.
template <typename Enum>
FailureOr<Enum> parseSpelling(AsmParser &parser, size_t count,
                              function_ref<std::string_view(size_t)> nameOf,
                              StringRef what) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseKeyword(&keyword)))
    return failure();
  for (size_t i = 0; i < count; ++i)
    if (nameOf(i) == std::string_view(keyword.data(), keyword.size()))
      return static_cast<Enum>(i);
  return parser.emitError(loc) << "unknown " << what << " '" << keyword << "'";
}
} // namespace

FailureOr<mp::rt::cpu::ElementwiseFn>
mp::culib::parseElementwiseFn(AsmParser &parser) {
  using namespace mp::rt::cpu;
  return parseSpelling<ElementwiseFn>(
      parser, std::size(kElementwiseFnInfo),
      [](size_t i) { return kElementwiseFnInfo[i].name; },
      "elementwise function");
}

FailureOr<mp::rt::cpu::ReduceFn> mp::culib::parseReduceFn(AsmParser &parser) {
  using namespace mp::rt::cpu;
  return parseSpelling<ReduceFn>(
      parser, std::size(kReduceFnNames),
      [](size_t i) { return kReduceFnNames[i]; }, "reduction");
}

StringRef mp::culib::spellingOf(mp::rt::cpu::ElementwiseFn fn) {
  std::string_view name = mp::rt::cpu::infoOf(fn).name;
  return StringRef(name.data(), name.size());
}

StringRef mp::culib::spellingOf(mp::rt::cpu::ReduceFn fn) {
  std::string_view name = mp::rt::cpu::reduceFnName(fn);
  return StringRef(name.data(), name.size());
}

std::optional<StringRef> mp::culib::enumSpelling(Attribute attr) {
  return llvm::TypeSwitch<Attribute, std::optional<StringRef>>(attr)
      .Case([](LayoutAttr a) { return stringifyLayout(a.getValue()); })
      .Case([](EpilogueAttr a) { return stringifyEpilogue(a.getValue()); })
      .Case([](LossReductionAttr a) {
        return stringifyLossReduction(a.getValue());
      })
      .Case([](ScatterReductionAttr a) {
        return stringifyScatterReduction(a.getValue());
      })
      .Case([](CollectiveReductionAttr a) {
        return stringifyCollectiveReduction(a.getValue());
      })
      .Case([](ElementwiseFnAttr a) { return a.getSpelling(); })
      .Case([](ReduceFnAttr a) { return a.getSpelling(); })
      .Default([](Attribute) { return std::nullopt; });
}

/// `culib.at_load` marks a call that runs once, at load: it reads weights
/// and buffers made at load, and writes buffers made at load (which only
/// such calls write: AllocOp::verify).
LogicalResult CuLibDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // The others (culib.arena_size, culib.fusion_record on functions) are
  // the passes' own bookkeeping.
  if (attr.getName() != kAtLoadAttr)
    return success();
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << kAtLoadAttr << "' is a unit attribute";
  std::optional<CallBuffers> buffers = getCallBuffers(op);
  if (!buffers)
    return op->emitError() << "'" << kAtLoadAttr << "' marks culib calls only";
  auto madeAtLoad = [](Value v) {
    auto alloc = v.getDefiningOp<AllocOp>();
    return alloc && alloc.getAtLoad();
  };
  for (const NamedBuffer &in : buffers->ins)
    if (in.value && !isWeightBuffer(in.value) && !madeAtLoad(in.value))
      return op->emitError()
             << "a call at load reads only weights and buffers made at "
                "load; its '"
             << in.name << "' is neither";
  for (const NamedBuffer &out : buffers->outs)
    if (out.value && !madeAtLoad(out.value))
      return op->emitError()
             << "a call at load writes only buffers made at load "
                "(culib.alloc at_load); its '"
             << out.name << "' is not one";
  return success();
}

bool mp::culib::isWeightBuffer(Value v) {
  if (auto view = v.getDefiningOp<ViewOp>())
    v = view.getSource();
  return static_cast<bool>(v.getDefiningOp<WeightOp>());
}
