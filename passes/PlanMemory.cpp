//===- PlanMemory.cpp - liveness-based arena offsets for culib buffers ----===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MathExtras.h"

namespace mp {
#define GEN_PASS_DEF_PLANMEMORY
#include "mp/Passes/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {
struct Interval {
  culib::AllocOp alloc;
  int64_t start, end; // op indices, inclusive
  int64_t size;       // bytes, aligned
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

    std::vector<Interval> intervals;
    int64_t unplannedBytes = 0;
    for (auto alloc : body.getOps<culib::AllocOp>()) {
      MemRefType type = alloc.getType();
      int64_t bits = type.getElementTypeBitWidth();
      int64_t bytes = type.getNumElements() * std::max<int64_t>(bits / 8, 1);
      int64_t size = llvm::alignTo(std::max<int64_t>(bytes, 1), align);
      int64_t start = index[alloc], end = start;
      for (Operation *user : alloc->getUsers()) {
        Operation *inBlock = body.findAncestorOpInBlock(*user);
        int64_t at = isa<func::ReturnOp>(inBlock) ? endOfFunction
                                                  : index.lookup(inBlock);
        end = std::max(end, at);
      }
      intervals.push_back({alloc, start, end, size});
      unplannedBytes += size;
    }

    // Largest first; each at the lowest offset free over its live range.
    std::vector<Interval *> order;
    for (Interval &i : intervals)
      order.push_back(&i);
    llvm::stable_sort(order, [](Interval *a, Interval *b) {
      return a->size > b->size;
    });
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
    for (Interval &i : intervals)
      i.alloc.setOffsetAttr(builder.getI64IntegerAttr(i.offset));
    func->setAttr("culib.arena_size", builder.getI64IntegerAttr(arenaSize));
    if (report)
      func.emitRemark() << "activation arena of @" << func.getName() << ": "
                        << arenaSize << " bytes for " << intervals.size()
                        << " buffers (" << unplannedBytes
                        << " bytes without reuse)";
  }
};
} // namespace
