//===- HoistWeightCalls.cpp - weight-only calls run once, at load ---------===//
//
// culib-hoist-weight-calls (Passes.td): a call that derives buffers from
// weights alone computes the same bytes on every run; it is marked to run
// once, when the plan is loaded, and its outputs become buffers made at
// load (kept next to the weights, out of the arena).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mp {
#define GEN_PASS_DEF_HOISTWEIGHTCALLS
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

/// Buffers made at load may take at most this many times the bytes of what
/// they are made from: a transpose or a cast is hoisted, a broadcast of a
/// bias to a whole activation is not (it would hold that memory for good).
constexpr int64_t kMaxGrowth = 2;

struct HoistWeightCallsPass
    : public mp::impl::HoistWeightCallsBase<HoistWeightCallsPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    Block &body = func.getBody().front();

    llvm::DenseMap<Value, llvm::SmallVector<Operation *>> writers =
        culib::callWriters(body);
    llvm::DenseSet<Value> returned;
    for (auto ret : body.getOps<func::ReturnOp>())
      returned.insert(ret.getOperands().begin(), ret.getOperands().end());

    // Weights, then what hoisted calls make from them, in program order.
    llvm::DenseSet<Value> constant;
    // (A view of a weight is a weight with another shape; a view of a
    // buffer made at load would need a writer at load of its own.)
    auto isConstant = [&](Value v) {
      return culib::isWeightBuffer(v) || constant.contains(v);
    };
    int64_t hoisted = 0, bytes = 0;
    for (Operation &op : body) {
      std::optional<culib::CallBuffers> buffers = culib::getCallBuffers(&op);
      if (!buffers || op.hasAttr(culib::kAtLoadAttr))
        continue;
      int64_t inBytes = 0, outBytes = 0;
      bool hoistable = !buffers->outs.empty();
      for (const culib::NamedBuffer &in : buffers->ins) {
        if (!in.value)
          continue;
        hoistable &= isConstant(in.value);
        inBytes += culib::byteSize(cast<MemRefType>(in.value.getType()));
      }
      hoistable &= inBytes > 0;
      for (const culib::NamedBuffer &out : buffers->outs) {
        if (!out.value)
          continue;
        auto alloc = out.value.getDefiningOp<culib::AllocOp>();
        // (A view of a buffer made at load has no place in a plan.)
        hoistable &= alloc && writers.lookup(out.value).size() == 1 &&
                     !returned.contains(out.value) &&
                     llvm::none_of(out.value.getUsers(), [](Operation *u) {
                       return isa<culib::ViewOp>(u);
                     });
        outBytes += culib::byteSize(cast<MemRefType>(out.value.getType()));
      }
      if (!hoistable || outBytes > kMaxGrowth * inBytes)
        continue;
      op.setAttr(culib::kAtLoadAttr, UnitAttr::get(&getContext()));
      for (const culib::NamedBuffer &out : buffers->outs)
        if (out.value) {
          out.value.getDefiningOp<culib::AllocOp>().setAtLoad(true);
          constant.insert(out.value);
        }
      ++hoisted;
      bytes += outBytes;
    }
    if (record)
      culib::recordFusion(func, getArgument(), "weight-only calls at load",
                          hoisted, hoisted, bytes);
    if (report)
      func.emitRemark() << "culib-hoist-weight-calls: " << hoisted
                        << " call(s) run once at load instead of on every "
                           "run; "
                        << bytes << " bytes they write kept from load";
  }
};

} // namespace
