//===- NHWCLayout.cpp - the culib-nhwc-layout pass ------------------------===//
//
// Channels last (NHWC) for convolutions, decided at compile time.
//
// 1. Seeds: every 2-D convolution (conv_fwd, and in training steps
//    conv_bwd_data and conv_bwd_filter) in NCHW whose input element type is
//    in `dtypes`.
// 2. Propagation, in program order (the writer of a buffer comes before its
//    readers): an op that can run channels last (the convolutions, pool
//    without indices, pool_bwd, the batch norms and their backward,
//    elementwise kernels and casts on 4-D or single-element operands,
//    concat, slice and pad on 4-D buffers, with their axis, starts, steps
//    and pads permuted, copies between buffers of one 4-D shape) and reads
//    a buffer that is already NHWC goes NHWC too. An op
//    only goes NHWC when every 4-D buffer it writes is a fresh activation: a
//    culib.alloc that this op alone writes. Elementwise operands of lower
//    rank broadcast as their 4-D extension ([C, 1, 1] as [1, C, 1, 1]).
//    A graph's own permute to channels first (perm [0, 3, 1, 2], ConvNeXt's
//    and Swin's blocks, tf2onnx's input) of a buffer nothing writes again
//    makes an NHWC buffer whose bytes are the permute's input: it goes
//    NHWC, with no call, when some reader of its result can run channels
//    last.
// 3. Rewrite: each NHWC buffer becomes a culib.alloc of the permuted type
//    [N, H, W, C]. NHWC ops read other 4-D operands (graph inputs, filters:
//    [K, C, R, S] -> [K, R, S, C] is the same permutation) through one
//    transpose inserted before the first of them. An NCHW-only reader of an
//    NHWC buffer (or the function's return) reads a copy transposed back once,
//    right after the buffer is written.
//
// Buffers with a single element are the same bytes in both layouts and are
// never transposed; neither are lower-rank operands whose NHWC order is
// their own (one dim other than 1, as a per-channel scale): they are copied
// into their permuted shape (culib-alias-reshapes makes the copy a view).
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CallBuffers.h"
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Passes/CuLib/Passes.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mp {
#define GEN_PASS_DEF_NHWCLAYOUT
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

using culib::kToNCHW;
using culib::kToNHWC;

SmallVector<int64_t> permuteShape(ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(shape[p]);
  return out;
}

MemRefType permutedType(Value v, ArrayRef<int64_t> perm) {
  auto type = cast<MemRefType>(v.getType());
  return MemRefType::get(permuteShape(type.getShape(), perm),
                         type.getElementType());
}

bool isStatic4D(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == 4 && type.hasStaticShape();
}

bool isSingleElement(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

/// The 4-D shape an operand of rank at most 4 broadcasts as (leading 1s).
SmallVector<int64_t> broadcastShape4D(MemRefType type) {
  SmallVector<int64_t> shape(4 - type.getRank(), 1);
  llvm::append_range(shape, type.getShape());
  return shape;
}

/// A static operand of rank below 4 whose 4-D extension, permuted to NHWC,
/// keeps its elements in order (at most one dim other than 1 moves): its
/// NHWC form is a copy with the permuted shape.
bool isReshapedUnderNHWC(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape() || type.getRank() >= 4)
    return false;
  SmallVector<int64_t> shape = broadcastShape4D(type);
  // The order of the non-1 dims after the permutation.
  SmallVector<int64_t> order;
  for (int64_t p : kToNHWC)
    if (shape[p] != 1)
      order.push_back(p);
  return llvm::is_sorted(order);
}

/// The NHWC type of an operand: 4-D ones permuted, lower-rank ones
/// (isReshapedUnderNHWC) as their permuted 4-D extension.
MemRefType nhwcTypeOf(Value v) {
  auto type = cast<MemRefType>(v.getType());
  if (type.getRank() == 4)
    return permutedType(v, kToNHWC);
  return MemRefType::get(permuteShape(broadcastShape4D(type), kToNHWC),
                         type.getElementType());
}

/// A graph's permute of a [N, H, W, C] buffer to channels first.
bool isPermuteToNCHW(culib::TransposeOp transpose) {
  return isStatic4D(transpose.getX()) &&
         transpose.getPerm() == ArrayRef<int64_t>(kToNCHW);
}

/// The 4-D activation operands of an op that can run channels last (a
/// convolution's input filter apart: filterOperand); std::nullopt for ops
/// that cannot.
std::optional<SmallVector<OpOperand *>> channelsLastOperands(Operation *op) {
  using Result = std::optional<SmallVector<OpOperand *>>;
  auto ifNCHW = [](auto o, SmallVector<OpOperand *> operands) -> Result {
    if (!isStatic4D(o.getX()) || o.getLayout() != culib::Layout::nchw)
      return std::nullopt;
    return operands;
  };
  return TypeSwitch<Operation *, Result>(op)
      .Case([&](culib::ConvFwdOp o) {
        SmallVector<OpOperand *> operands = {&o.getXMutable(),
                                             &o.getYMutable()};
        if (o.getResidual())
          operands.push_back(&o.getResidualMutable()[0]);
        return ifNCHW(o, operands);
      })
      .Case([&](culib::ConvBwdDataOp o) {
        return ifNCHW(o, {&o.getXMutable(), &o.getYMutable()});
      })
      // dw [K, C, R, S] goes [K, R, S, C], as filters do.
      .Case([&](culib::ConvBwdFilterOp o) {
        return ifNCHW(o,
                      {&o.getXMutable(), &o.getDyMutable(), &o.getDwMutable()});
      })
      .Case([&](culib::PoolOp o) -> Result {
        // ONNX's MaxPool indices count in NCHW order.
        if (o.getIndices())
          return std::nullopt;
        return ifNCHW(o, {&o.getXMutable(), &o.getYMutable()});
      })
      .Case([&](culib::PoolBwdOp o) {
        return ifNCHW(o,
                      {&o.getXMutable(), &o.getDyMutable(), &o.getDxMutable()});
      })
      .Case([&](culib::BatchNormInferenceOp o) {
        return ifNCHW(o, {&o.getXMutable(), &o.getYMutable()});
      })
      .Case([&](culib::BatchNormTrainingOp o) {
        return ifNCHW(o, {&o.getXMutable(), &o.getYMutable()});
      })
      .Case([&](culib::BatchNormBwdOp o) {
        return ifNCHW(o,
                      {&o.getXMutable(), &o.getDyMutable(), &o.getDxMutable()});
      })
      // Data movement along dims: the axis, starts, steps and pads are
      // permuted with the data (remapAttributes). A Pad in any mode pads
      // each dim by its own rule (tf2onnx's Pad before a convolution, the
      // all-zero Pad torch writes before an average pool).
      .Case<culib::ConcatOp, culib::SliceOp, culib::PadOp>(
          [&](Operation *o) -> Result {
            if (auto pad = dyn_cast<culib::PadOp>(o);
                pad && pad.getPads().size() != 8)
              return std::nullopt;
            SmallVector<OpOperand *> operands;
            for (OpOperand &operand : o->getOpOperands()) {
              if (!isStatic4D(operand.get()))
                return std::nullopt;
              operands.push_back(&operand);
            }
            return operands;
          })
      .Case<culib::ElementwiseOp, culib::CastOp>([&](Operation *o) -> Result {
        // Pointwise on equal 4-D shapes (broadcast 4-D operands are
        // permuted alike), single elements and lower-rank operands whose
        // permuted 4-D extension is a reshape; other lower-rank operands
        // broadcast by trailing dims in an order a permutation would change.
        SmallVector<OpOperand *> operands;
        for (OpOperand &operand : o->getOpOperands()) {
          if (isStatic4D(operand.get()) || isReshapedUnderNHWC(operand.get()))
            operands.push_back(&operand);
          else if (!isSingleElement(operand.get()))
            return std::nullopt;
        }
        if (!isStatic4D(o->getOperands().back())) // y
          return std::nullopt;
        return operands;
      })
      // A copy into a buffer of the same shape (a reshape that keeps it, a
      // Pad of zeros) copies NHWC bytes as well.
      .Case([&](culib::CopyOp o) -> Result {
        if (!isStatic4D(o.getX()) || o.getX().getType() != o.getY().getType())
          return std::nullopt;
        return SmallVector<OpOperand *>{&o.getXMutable(), &o.getYMutable()};
      })
      // A permute to channels first: its result, NHWC, is its input.
      .Case([&](culib::TransposeOp o) -> Result {
        if (!isPermuteToNCHW(o))
          return std::nullopt;
        return SmallVector<OpOperand *>{&o.getYMutable()};
      })
      .Default([](Operation *) -> Result { return std::nullopt; });
}

/// The attributes of a data-movement op that now runs on NHWC buffers:
/// concat's axis, slice's starts and steps, in the NHWC order of dims.
void remapAttributes(Operation *op) {
  auto permuted = [](ArrayRef<int64_t> nchw) {
    return permuteShape(nchw, kToNHWC);
  };
  if (auto concat = dyn_cast<culib::ConcatOp>(op)) {
    int64_t axis = static_cast<int64_t>(concat.getAxis());
    if (axis < 0)
      axis += 4;
    concat.setAxis(kToNCHW[axis]);
  } else if (auto slice = dyn_cast<culib::SliceOp>(op)) {
    slice.setStarts(permuted(slice.getStarts()));
    slice.setSteps(permuted(slice.getSteps()));
  } else if (auto pad = dyn_cast<culib::PadOp>(op)) {
    // The begin pads of every dim, then the end pads.
    ArrayRef<int64_t> pads = pad.getPads();
    SmallVector<int64_t> nhwc = permuted(pads.take_front(4));
    llvm::append_range(nhwc, permuted(pads.drop_front(4)));
    pad.setPads(nhwc);
  }
}

/// The filter a convolution reads ([K, C, R, S] in NCHW, [K, R, S, C] in
/// NHWC); null for other ops.
OpOperand *filterOperand(Operation *op) {
  if (auto conv = dyn_cast<culib::ConvFwdOp>(op))
    return &conv.getWMutable();
  if (auto conv = dyn_cast<culib::ConvBwdDataOp>(op))
    return &conv.getWMutable();
  return nullptr;
}

/// The element type of the data a convolution reads (null for other ops).
Type convolutionInputType(Operation *op) {
  if (!isa<culib::ConvFwdOp, culib::ConvBwdDataOp, culib::ConvBwdFilterOp>(op))
    return Type();
  return cast<MemRefType>(op->getOperand(0).getType()).getElementType();
}

/// `value` as a splat of type `type` when all its elements are one value
/// (splats, and dense or resource data whose elements are equal).
std::optional<ElementsAttr> uniformAs(ElementsAttr value, ShapedType type) {
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (dense && dense.isSplat())
    return cast<ElementsAttr>(dense.reshape(type));
  unsigned bits = type.getElementTypeBitWidth();
  if (bits % 8 != 0)
    return std::nullopt;
  std::optional<mp::StoredBytes> stored = mp::storedBytes(value);
  if (!stored)
    return std::nullopt;
  ArrayRef<char> bytes = stored->bytes;
  size_t elementBytes = bits / 8;
  if (bytes.empty() || bytes.size() % elementBytes != 0)
    return std::nullopt;
  ArrayRef<char> first = bytes.take_front(elementBytes);
  for (size_t at = elementBytes; at < bytes.size(); at += elementBytes)
    if (bytes.slice(at, elementBytes) != first)
      return std::nullopt;
  // A raw buffer of one element is a splat.
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, first));
}

struct NHWCLayoutPass : public mp::impl::NHWCLayoutBase<NHWCLayoutPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    FailureOr<SmallVector<Type>> seedTypes = parseDtypes(func);
    if (failed(seedTypes))
      return signalPassFailure();
    if (!func.getBody().hasOneBlock()) {
      func.emitError("culib-nhwc-layout needs a function with one block");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();

    // Who writes what.
    DenseMap<Value, unsigned> writeCount;
    DenseMap<Value, Operation *> writer;
    for (Operation &op : body)
      if (std::optional<culib::CallBuffers> call = culib::getCallBuffers(&op))
        for (const culib::NamedBuffer &out : call->outs)
          if (out.value) {
            ++writeCount[out.value];
            writer[out.value] = &op;
          }
    // A fresh activation: one culib.alloc, one writer, read by calls and
    // the return only.
    auto isFreshActivation = [&](Value v) {
      if (!v.getDefiningOp<culib::AllocOp>() || !isStatic4D(v) ||
          writeCount.lookup(v) != 1)
        return false;
      return llvm::all_of(v.getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user) ||
               culib::getCallBuffers(user).has_value();
      });
    };

    // Whether an op that can run channels last reads `v`.
    auto readChannelsLast = [&](Value v, Operation *besides) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        std::optional<SmallVector<OpOperand *>> operands =
            user == besides ? std::nullopt : channelsLastOperands(user);
        return operands && llvm::any_of(*operands, [&](OpOperand *operand) {
                 return operand->get() == v;
               });
      });
    };
    // A permute to channels first whose NHWC result can simply be its
    // input: the input is not written again (a fresh activation, or a graph
    // input nothing writes) and a reader of the result can run channels
    // last (else the permute would come back as a transpose after it).
    llvm::DenseSet<Value> nhwcBuffers;
    auto isNHWCPermute = [&](Operation *op) {
      auto permute = dyn_cast<culib::TransposeOp>(op);
      if (!permute || !isPermuteToNCHW(permute))
        return false;
      Value x = permute.getX(), y = permute.getY();
      Type elementType = cast<MemRefType>(x.getType()).getElementType();
      bool inputStays = isFreshActivation(x) ||
                        (isa<BlockArgument>(x) && writeCount.lookup(x) == 0);
      return llvm::is_contained(*seedTypes, elementType) && inputStays &&
             !nhwcBuffers.contains(x) && !isSingleElement(y) &&
             readChannelsLast(y, op);
    };

    // 2. Which ops run channels last, and so which buffers are NHWC.
    llvm::SetVector<Operation *> nhwcOps;
    for (Operation &op : body) {
      std::optional<SmallVector<OpOperand *>> operands =
          channelsLastOperands(&op);
      if (!operands)
        continue;
      std::optional<culib::CallBuffers> call = culib::getCallBuffers(&op);
      auto writes = [&](Value v) {
        return llvm::any_of(call->outs, [&](const culib::NamedBuffer &b) {
          return b.value == v;
        });
      };
      Type convInput = convolutionInputType(&op);
      bool seed = (convInput && llvm::is_contained(*seedTypes, convInput)) ||
                  isNHWCPermute(&op);
      bool readsNHWC = llvm::any_of(*operands, [&](OpOperand *operand) {
        return !writes(operand->get()) && nhwcBuffers.contains(operand->get());
      });
      if (!seed && !readsNHWC)
        continue;
      bool outputsFresh = llvm::all_of(*operands, [&](OpOperand *operand) {
        return !writes(operand->get()) || isFreshActivation(operand->get()) ||
               isSingleElement(operand->get());
      });
      if (!outputsFresh)
        continue;
      nhwcOps.insert(&op);
      for (OpOperand *operand : *operands)
        if (writes(operand->get()) && !isSingleElement(operand->get()))
          nhwcBuffers.insert(operand->get());
    }
    if (nhwcOps.empty())
      return;

    // 3. Rewrite. The NHWC twin of every NHWC buffer.
    OpBuilder builder(&getContext());
    DenseMap<Value, Value> nhwcTwin;
    SmallVector<Operation *> permutes;
    for (Value v : nhwcBuffers) {
      // A permute's NHWC result is its input, and the permute goes.
      auto permute = dyn_cast<culib::TransposeOp>(writer.lookup(v));
      if (permute && nhwcOps.contains(permute)) {
        nhwcTwin[v] = permute.getX();
        permutes.push_back(permute);
        continue;
      }
      auto alloc = v.getDefiningOp<culib::AllocOp>();
      builder.setInsertionPoint(alloc);
      nhwcTwin[v] = culib::AllocOp::create(
          builder, alloc.getLoc(), permutedType(v, kToNHWC), IntegerAttr());
    }
    auto transpose = [&](Location loc, Value from, MemRefType to,
                         ArrayRef<int64_t> perm) -> Value {
      Value out = culib::AllocOp::create(builder, loc, to, IntegerAttr());
      culib::TransposeOp::create(builder, loc, from, out,
                                 builder.getDenseI64ArrayAttr(perm));
      return out;
    };
    // NCHW copies of NHWC buffers, made once, right after the writer.
    DenseMap<Value, Value> nchwCopy;
    auto readAsNCHW = [&](Value v) -> Value {
      auto [it, inserted] = nchwCopy.try_emplace(v);
      if (inserted) {
        builder.setInsertionPointAfter(writer.lookup(v));
        it->second = transpose(v.getLoc(), nhwcTwin.lookup(v),
                               cast<MemRefType>(v.getType()), kToNCHW);
      }
      return it->second;
    };
    // NHWC copies of NCHW values that NHWC ops read (graph inputs, filters,
    // weights), transposed before the first reader (values written more than
    // once: before each reader). Weights are transposed at run time, not
    // here: a plan's weights keep their ONNX layout so that they can be
    // exchanged by name (an evaluation plan taking a training plan's state,
    // weights loaded from files).
    DenseMap<Value, Value> nhwcCopy;
    auto readAsNHWC = [&](Value v, Operation *reader) -> Value {
      if (auto it = nhwcCopy.find(v); it != nhwcCopy.end())
        return it->second;
      Value copy;
      auto weight = v.getDefiningOp<culib::WeightOp>();
      MemRefType type = nhwcTypeOf(v);
      std::optional<ElementsAttr> uniform =
          weight ? uniformAs(weight.getValue(),
                             RankedTensorType::get(type.getShape(),
                                                   type.getElementType()))
                 : std::nullopt;
      if (uniform) {
        // One value everywhere (the constants of gradients): the same
        // constant with the permuted shape.
        builder.setInsertionPointAfter(weight);
        copy = culib::WeightOp::create(builder, weight.getLoc(), type,
                                       weight.getNameAttr(), *uniform);
      } else if (type.getRank() != cast<MemRefType>(v.getType()).getRank()) {
        // A lower-rank operand whose NHWC order is its own: a copy.
        builder.setInsertionPoint(reader);
        copy = culib::AllocOp::create(builder, reader->getLoc(), type,
                                      IntegerAttr());
        culib::CopyOp::create(builder, reader->getLoc(), v, copy);
      } else {
        builder.setInsertionPoint(reader);
        copy = transpose(reader->getLoc(), v, type, kToNHWC);
      }
      if (writeCount.lookup(v) <= 1)
        nhwcCopy[v] = copy;
      return copy;
    };

    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (llvm::is_contained(permutes, op))
        continue;
      if (nhwcOps.contains(op)) {
        SmallVector<OpOperand *> operands = *channelsLastOperands(op);
        for (OpOperand *operand : operands) {
          Value v = operand->get();
          if (Value twin = nhwcTwin.lookup(v))
            operand->set(twin);
          else if (!isSingleElement(v))
            operand->set(readAsNHWC(v, op));
        }
        if (OpOperand *filter = filterOperand(op))
          filter->set(readAsNHWC(filter->get(), op));
        if (isa<culib::ConcatOp, culib::SliceOp, culib::PadOp>(op))
          remapAttributes(op);
        else if (!isa<culib::ElementwiseOp, culib::CastOp, culib::CopyOp>(op))
          op->setAttr("layout", culib::LayoutAttr::get(op->getContext(),
                                                       culib::Layout::nhwc));
        continue;
      }
      for (OpOperand &operand : op->getOpOperands())
        if (nhwcTwin.count(operand.get()))
          operand.set(readAsNCHW(operand.get()));
    }
    for (Operation *permute : permutes)
      permute->erase();
    for (Value v : nhwcBuffers) {
      assert(v.use_empty() && "every use of an NHWC buffer was rewritten");
      v.getDefiningOp()->erase();
    }
    // Splat weights whose readers all read their re-shaped copies.
    for (auto [original, copy] : nhwcCopy)
      if (auto weight = original.getDefiningOp<culib::WeightOp>())
        if (weight.getBuffer().use_empty())
          weight.erase();
  }

private:
  /// The element types of `dtypes` (default f16, bf16, f32; `none`: no
  /// convolution goes channels last).
  FailureOr<SmallVector<Type>> parseDtypes(func::FuncOp func) {
    MLIRContext *ctx = &getContext();
    SmallVector<Type> types;
    if (dtypes.empty())
      return SmallVector<Type>{Float16Type::get(ctx), BFloat16Type::get(ctx),
                               Float32Type::get(ctx)};
    if (dtypes.size() == 1 && dtypes[0] == "none")
      return types;
    for (const std::string &name : dtypes) {
      Type t = llvm::StringSwitch<Type>(name)
                   .Case("f16", Float16Type::get(ctx))
                   .Case("bf16", BFloat16Type::get(ctx))
                   .Case("f32", Float32Type::get(ctx))
                   .Case("f64", Float64Type::get(ctx))
                   .Default(Type());
      if (!t) {
        func.emitError()
            << "culib-nhwc-layout: unknown dtype '" << name
            << "' in 'dtypes' (f16, bf16, f32, f64, or none alone)";
        return failure();
      }
      types.push_back(t);
    }
    return types;
  }
};

} // namespace
