//===- PlanMemory.cpp - liveness-based arena offsets for culib buffers ----===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MathExtras.h"

#include <functional>

namespace mp {
#define GEN_PASS_DEF_PLANMEMORY
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {
struct Interval {
  culib::AllocOp alloc; // null for a function argument (a graph input)
  int64_t argument;     // its number, for arguments
  int64_t start, end;   // op indices, inclusive
  int64_t size;         // bytes, aligned
  int64_t offset = -1;
};

struct PlanMemoryPass : public mp::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    int64_t align = alignment.getValue();
    if (align <= 0 || !llvm::isPowerOf2_64(align)) {
      func.emitError() << "alignment must be a power of two, got " << align;
      return signalPassFailure();
    }
    if (!func.getBody().hasOneBlock()) {
      func.emitError("memory planning needs a function with one block");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    llvm::DenseMap<Operation *, int64_t> index;
    int64_t position = 0;
    for (Operation &op : body)
      index[&op] = position++;
    int64_t endOfFunction = position;

    // Graph inputs live in the arena too (the runtime copies them in), from
    // before the first op to their last use.
    auto bytesOf = [&](MemRefType type) {
      int64_t bits = type.getElementTypeBitWidth();
      int64_t bytes = type.getNumElements() * std::max<int64_t>(bits / 8, 1);
      return static_cast<int64_t>(
          llvm::alignTo(std::max<int64_t>(bytes, 1), align));
    };
    // A buffer lives to its last use, or to the last use of a view of it
    // (culib.view: its bytes with another shape).
    std::function<int64_t(Value, int64_t)> lastUse = [&](Value value,
                                                         int64_t from) {
      int64_t end = from;
      for (Operation *user : value.getUsers()) {
        Operation *inBlock = body.findAncestorOpInBlock(*user);
        int64_t at = isa<func::ReturnOp>(inBlock) ? endOfFunction
                                                  : index.lookup(inBlock);
        if (auto view = dyn_cast<culib::ViewOp>(inBlock))
          at = lastUse(view.getBuffer(), at);
        end = std::max(end, at);
      }
      return end;
    };
    std::vector<Interval> intervals;
    int64_t unplannedBytes = 0;
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || !type.hasStaticShape())
        continue;
      int64_t size = bytesOf(type);
      intervals.push_back(
          {culib::AllocOp(), arg.getArgNumber(), -1, lastUse(arg, -1), size});
      unplannedBytes += size;
    }
    for (auto alloc : body.getOps<culib::AllocOp>()) {
      if (alloc.getAtLoad()) // memory of its own, made at load
        continue;
      int64_t size = bytesOf(alloc.getType());
      int64_t start = index[alloc];
      intervals.push_back({alloc, -1, start, lastUse(alloc, start), size});
      unplannedBytes += size;
    }

    // Largest first; each at the lowest offset free over its live range.
    std::vector<Interval *> order;
    for (Interval &i : intervals)
      order.push_back(&i);
    llvm::stable_sort(
        order, [](Interval *a, Interval *b) { return a->size > b->size; });
    int64_t arenaSize = 0;
    std::vector<Interval *> placed;
    for (Interval *buffer : order) {
      std::vector<std::pair<int64_t, int64_t>> busy; // [offset, offset+size)
      for (Interval *other : placed)
        if (other->start <= buffer->end && buffer->start <= other->end)
          busy.push_back({other->offset, other->offset + other->size});
      llvm::sort(busy);
      int64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + buffer->size <= begin)
          break;
        offset = std::max(offset, end);
      }
      buffer->offset = offset;
      arenaSize = std::max(arenaSize, offset + buffer->size);
      placed.push_back(buffer);
    }

    OpBuilder builder(&getContext());
    for (Interval &i : intervals) {
      if (i.alloc)
        i.alloc.setOffsetAttr(builder.getI64IntegerAttr(i.offset));
      else
        func.setArgAttr(i.argument, "culib.offset",
                        builder.getI64IntegerAttr(i.offset));
    }
    func->setAttr("culib.arena_size", builder.getI64IntegerAttr(arenaSize));
    if (report)
      func.emitRemark() << "activation arena of @" << func.getName() << ": "
                        << arenaSize << " bytes for " << intervals.size()
                        << " buffers (" << unplannedBytes
                        << " bytes without reuse)";
  }
};
} // namespace
