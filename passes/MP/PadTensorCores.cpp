//===- PadTensorCores.cpp - the mp-pad-tensor-cores pass ------------------===//
//
// Pads the dims of low-precision GEMMs (MatMul, Gemm: N and K) and
// convolutions (input and output channels) to multiples of `multiple` with
// zeros, so that cuBLAS/cuDNN run them on tensor cores. Constant operands are
// padded at compile time. The padded feature axis (a GEMM's N, a
// convolution's output channels) is carried through the following ops that
// keep zeros zero (activations, bias adds, batch norm with constant
// parameters, pooling, residual adds, the next GEMM/convolution, which reads
// the padded width as its K / input channels), so consecutive layers have no
// slice/pad pair between them; the value is sliced once, where something
// observes its original shape.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Dialect/MP/MPDialect.h"
#include "mp/Passes/MP/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mp {
#define GEN_PASS_DEF_PADTENSORCORES
#include "mp/Passes/MP/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

RankedTensorType rankedOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

int64_t bytesOf(ArrayRef<int64_t> shape, Type element) {
  int64_t n = std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
  for (int64_t d : shape)
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

/// The raw bytes of a constant's value (splats expanded), or nullopt.
std::optional<std::vector<char>> rawBytes(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  if (!type.getElementType().isIntOrFloat())
    return std::nullopt;
  size_t width = std::max<unsigned>(1, type.getElementTypeBitWidth() / 8);
  if (type.getElementType().isInteger(1))
    return std::nullopt;
  size_t n = type.getNumElements();
  std::string storage;
  std::optional<ArrayRef<char>> all = mp::elementBytes(attr, storage);
  if (!all || all->size() != n * width)
    return std::nullopt;
  return std::vector<char>(all->begin(), all->end());
}

/// The bytes of `value` in `element` (a float type).
std::vector<char> fillBytes(Type element, double value) {
  size_t width = std::max<unsigned>(1, element.getIntOrFloatBitWidth() / 8);
  std::vector<char> bytes(width, 0);
  if (auto f = dyn_cast<FloatType>(element)) {
    APFloat v(value);
    bool lost;
    v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    APInt bits = v.bitcastToAPInt();
    std::memcpy(bytes.data(), bits.getRawData(), width);
  } else if (value != 0) {
    int64_t i = static_cast<int64_t>(value);
    std::memcpy(bytes.data(), &i, width);
  }
  return bytes;
}

/// `attr` grown to `shape` (same rank, each dim at least as large), the new
/// elements `fill`.
ElementsAttr padAttr(ElementsAttr attr, ArrayRef<int64_t> shape, double fill,
                     StringRef blobName) {
  auto type = cast<RankedTensorType>(attr.getType());
  std::optional<std::vector<char>> bytes = rawBytes(attr);
  if (!bytes)
    return {};
  Type element = type.getElementType();
  size_t width = std::max<unsigned>(1, element.getIntOrFloatBitWidth() / 8);
  auto newType = RankedTensorType::get(shape, element);
  int64_t total = newType.getNumElements();
  std::vector<char> fillValue = fillBytes(element, fill);
  std::vector<char> out(total * width);
  for (int64_t i = 0; i < total; ++i)
    std::memcpy(out.data() + i * width, fillValue.data(), width);
  ArrayRef<int64_t> old = type.getShape();
  int64_t rank = old.size();
  SmallVector<int64_t> index(rank, 0);
  int64_t n = type.getNumElements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d)
      offset = offset * shape[d] + index[d];
    std::memcpy(out.data() + offset * width, bytes->data() + i * width, width);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < old[d])
        break;
      index[d] = 0;
    }
  }
  if (out.size() > 4096)
    return DenseResourceElementsAttr::get(
        newType, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(out, alignof(uint64_t)));
  return DenseElementsAttr::getFromRawBuffer(newType, out);
}

/// One padded GEMM/convolution, or one skipped, for the report.
struct PadRecord {
  std::string node, opType;
  bool padded = false;
  std::string detail; ///< dims before -> after, or why it was skipped
  int64_t extraFlops = 0, extraBytes = 0;
};

/// A value carried in padded form: `padded` has `paddedSize` instead of
/// `originalSize` along `axis`; the extra elements are zero.
struct Carried {
  Value padded;
  int64_t axis;
  int64_t originalSize;
};

struct PadTensorCoresPass : mp::impl::PadTensorCoresBase<PadTensorCoresPass> {
  using PadTensorCoresBase::PadTensorCoresBase;

  LogicalResult initialize(MLIRContext *) override {
    for (const std::string &op : opTypes)
      enabledOps.insert(op);
    if (opTypes.empty())
      for (const char *op : {"MatMul", "Gemm", "Conv"})
        enabledOps.insert(op);
    return success();
  }

  void runOnOperation() override {
    if (multiple < 1 || maxGrowth < 1.0) {
      getOperation().emitError("mp-pad-tensor-cores: multiple must be >= 1 "
                               "and max-growth >= 1, got ")
          << llvm::formatv("{0} and {1}", static_cast<int64_t>(multiple),
                           static_cast<double>(maxGrowth));
      return signalPassFailure();
    }
    func::FuncOp func = getOperation();
    Block &body = func.getBody().front();
    builder = std::make_shared<OpBuilder>(func.getContext());
    carriedValues.clear();
    slices.clear();
    createdOps.clear();
    replacedOps.clear();
    paddedInitializers.clear();
    records.clear();
    created = 0;
    for (Operation &op :
         llvm::make_early_inc_range(body.without_terminator())) {
      if (failed(visit(&op)))
        return signalPassFailure();
    }
    // Whatever else still reads an original value (graph outputs, ops in
    // subgraphs) reads its slice; the replaced originals then go.
    llvm::DenseSet<Operation *> replaced(replacedOps.begin(),
                                         replacedOps.end());
    for (auto &[original, carried] : carriedValues) {
      bool observed = llvm::any_of(original.getUses(), [&](OpOperand &use) {
        return !replaced.contains(use.getOwner());
      });
      if (!observed)
        continue;
      Value slice = sliceOf(original);
      original.replaceUsesWithIf(slice, [&](OpOperand &use) {
        return !replaced.contains(use.getOwner());
      });
    }
    for (Operation *op : llvm::reverse(replacedOps))
      if (op->use_empty())
        op->erase();
    // Created ops nothing reads any more.
    for (Operation *op : llvm::reverse(createdOps))
      if (op->use_empty())
        op->erase();
    finishConstants();
    if (!reportFile.empty() && failed(writeReport()))
      return signalPassFailure();
  }

private:
  //===--------------------------------------------------------------------===//
  // Values: padded operands, slices, constants
  //===--------------------------------------------------------------------===//

  /// The padded form of `v` along `axis` if it is carried that way.
  const Carried *carriedAlong(Value v, int64_t axis) {
    auto it = carriedValues.find(v);
    if (it == carriedValues.end() || it->second.axis != axis)
      return nullptr;
    return &it->second;
  }

  /// `v` (of type `type`) grown with zeros (or `fill`) to `shape`: a
  /// constant padded at compile time, else an mp.pad.
  Value padTo(Value v, ArrayRef<int64_t> shape, Location loc,
              double fill = 0.0) {
    auto type = rankedOf(v);
    if (type.getShape() == shape)
      return v;
    Operation *def = v.getDefiningOp();
    if (def && isa<InitializerOp, ConstantOp>(def)) {
      ElementsAttr value = isa<InitializerOp>(def)
                               ? cast<InitializerOp>(def).getValue()
                               : cast<ConstantOp>(def).getValueAttr();
      std::string blobName =
          (isa<InitializerOp>(def) ? cast<InitializerOp>(def).getName().str()
                                   : std::string("constant")) +
          "_padded";
      if (value)
        if (ElementsAttr grown = padAttr(value, shape, fill, blobName)) {
          builder->setInsertionPointAfter(def);
          Operation *c;
          if (auto init = dyn_cast<InitializerOp>(def)) {
            c = InitializerOp::create(
                *builder, def->getLoc(), grown.getType(),
                builder->getStringAttr(init.getName() + "_padded"), grown,
                IntegerAttr(), init.getDocStringAttr());
            paddedInitializers.push_back({init, cast<InitializerOp>(c)});
          } else {
            c = ConstantOp::create(*builder, def->getLoc(), grown.getType(),
                                   grown, FloatAttr(), DenseF32ArrayAttr(),
                                   IntegerAttr(), DenseI64ArrayAttr(),
                                   StringAttr(), ArrayAttr());
          }
          return c->getResult(0);
        }
    }
    // Run-time pad (activations): ONNX Pad with zeros at the end of each dim.
    builder->setInsertionPointAfterValue(v);
    std::string base =
        getNodeName(loc) + "/TensorCorePad_" + std::to_string(created++);
    auto named = [&](StringRef suffix) {
      return NameLoc::get(builder->getStringAttr(base + suffix));
    };
    int64_t rank = type.getRank();
    SmallVector<int64_t> pads(2 * rank, 0);
    for (int64_t d = 0; d < rank; ++d)
      pads[rank + d] = shape[d] - type.getDimSize(d);
    auto padsType = RankedTensorType::get({2 * rank}, builder->getI64Type());
    Value padsValue =
        ConstantOp::create(*builder, named("/pads"), padsType,
                           DenseIntElementsAttr::get(padsType, pads),
                           FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
                           DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
    Value fillValue;
    auto scalarType = RankedTensorType::get({}, type.getElementType());
    if (fill != 0.0)
      fillValue = ConstantOp::create(
          *builder, named("/value"), scalarType,
          DenseElementsAttr::getFromRawBuffer(
              scalarType, fillBytes(type.getElementType(), fill)),
          FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(), DenseI64ArrayAttr(),
          StringAttr(), ArrayAttr());
    else
      fillValue = NoneOp::create(*builder, loc);
    return PadOp::create(*builder, named(""),
                         RankedTensorType::get(shape, type.getElementType()), v,
                         padsValue, fillValue, StringAttr());
  }

  /// `v` cut back to `shape` along the dims where it is larger.
  Value sliceTo(Value v, ArrayRef<int64_t> shape, Location loc) {
    auto type = rankedOf(v);
    SmallVector<int64_t> axes, ends;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!ShapedType::isDynamic(shape[d]) && type.getDimSize(d) != shape[d]) {
        axes.push_back(d);
        ends.push_back(shape[d]);
      }
    if (axes.empty())
      return v;
    builder->setInsertionPointAfterValue(v);
    std::string base =
        getNodeName(loc) + "/TensorCoreSlice_" + std::to_string(created++);
    auto named = [&](StringRef suffix) {
      return NameLoc::get(builder->getStringAttr(base + suffix));
    };
    auto listType = RankedTensorType::get({static_cast<int64_t>(axes.size())},
                                          builder->getI64Type());
    auto constant = [&](ArrayRef<int64_t> values, StringRef what) -> Value {
      return ConstantOp::create(*builder, named(what), listType,
                                DenseIntElementsAttr::get(listType, values),
                                FloatAttr(), DenseF32ArrayAttr(), IntegerAttr(),
                                DenseI64ArrayAttr(), StringAttr(), ArrayAttr());
    };
    SmallVector<int64_t> starts(axes.size(), 0);
    Value startsValue = constant(starts, "/starts");
    Value endsValue = constant(ends, "/ends");
    Value axesValue = constant(axes, "/axes");
    Value none = NoneOp::create(*builder, loc);
    auto slice =
        SliceOp::create(*builder, named(""),
                        RankedTensorType::get(shape, type.getElementType()), v,
                        startsValue, endsValue, axesValue, none);
    for (Value created : {startsValue, endsValue, axesValue, none})
      createdOps.push_back(created.getDefiningOp());
    createdOps.push_back(slice);
    return slice;
  }

  /// The original-shape view of a carried value: one slice, shared.
  Value sliceOf(Value original) {
    auto it = slices.find(original);
    if (it != slices.end())
      return it->second;
    const Carried &c = carriedValues.find(original)->second;
    Value s = sliceTo(c.padded, rankedOf(original).getShape(),
                      c.padded.getDefiningOp()->getLoc());
    return slices[original] = s;
  }

  /// Replaces the carried operands of an op that cannot keep them by their
  /// slices.
  void useSlices(Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (carriedValues.count(use.get()))
        use.set(sliceOf(use.get()));
  }

  /// A clone of `op` on `operands` whose result `result` has `type`.
  Operation *cloneWith(Operation *op, ArrayRef<Value> operands,
                       ArrayRef<Type> resultTypes) {
    builder->setInsertionPoint(op);
    IRMapping mapping;
    for (auto [from, to] : llvm::zip(op->getOperands(), operands))
      mapping.map(from, to);
    Operation *clone = builder->clone(*op, mapping);
    for (auto [result, type] : llvm::zip(clone->getResults(), resultTypes))
      result.setType(type);
    replacedOps.push_back(op);
    return clone;
  }

  void carry(Value original, Value padded, int64_t axis) {
    carriedValues[original] = {padded, axis,
                               rankedOf(original).getDimSize(axis)};
  }

  bool eligibleElement(Type element) {
    return allTypes ? isa<FloatType>(element)
                    : (element.isF16() || element.isBF16());
  }

  //===--------------------------------------------------------------------===//
  // Ops
  //===--------------------------------------------------------------------===//

  LogicalResult visit(Operation *op) {
    if (auto matmul = dyn_cast<MatMulOp>(op))
      return enabledOps.contains("MatMul") ? padMatMul(matmul)
                                           : (useSlices(op), success());
    if (auto gemm = dyn_cast<GemmOp>(op))
      return enabledOps.contains("Gemm") ? padGemm(gemm)
                                         : (useSlices(op), success());
    if (auto conv = dyn_cast<ConvOp>(op))
      return enabledOps.contains("Conv") ? padConv(conv)
                                         : (useSlices(op), success());
    if (!carryThrough(op))
      useSlices(op);
    return success();
  }

  void skip(Operation *op, StringRef opType, const Twine &why) {
    records.push_back({getNodeName(op), opType.str(), false, why.str(), 0, 0});
    useSlices(op);
  }

  static std::string dimString(int64_t d) {
    return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
  }
  /// A padded GEMM's dims (M, its rows, stays: cuBLAS's tensor-core
  /// kernels take any M; padding it cost a pad and a slice of the
  /// activations per GEMM, ViT's 197 tokens to 200).
  static std::string describeGemm(int64_t m, int64_t n, int64_t k, int64_t np,
                                  int64_t kp) {
    return llvm::formatv("M,N,K {0},{1},{2} -> {0},{3},{4}", dimString(m), n, k,
                         np, kp);
  }
  /// The extra FLOPs of one padded GEMM (a dynamic M counted as 1).
  static int64_t gemmFlops(int64_t m, int64_t np, int64_t kp, int64_t n,
                           int64_t k) {
    int64_t rows = ShapedType::isDynamic(m) ? 1 : m;
    return 2 * rows * (np * kp - n * k);
  }

  struct Growth {
    ArrayRef<int64_t> before;
    ArrayRef<int64_t> after;
    const char *what;
  };
  /// Why padding to these shapes passes max-growth, or "".
  std::string growthProblem(std::initializer_list<Growth> tensors, Type e) {
    for (const Growth &g : tensors) {
      int64_t o = bytesOf(g.before, e), p = bytesOf(g.after, e);
      if (!growthOk(o, p))
        return llvm::formatv("{0} would grow {1:F2}x (max-growth {2})", g.what,
                             double(p) / double(o),
                             static_cast<double>(maxGrowth))
            .str();
    }
    return "";
  }

  bool growthOk(int64_t before, int64_t after) {
    return static_cast<double>(after) <=
           maxGrowth * static_cast<double>(before) + 0.5;
  }

  /// MatMul: A [..., M, K] x B [..., K, N].
  LogicalResult padMatMul(MatMulOp op) {
    auto a = rankedOf(op.getA()), b = rankedOf(op.getB()),
         y = rankedOf(op.getY());
    if (!a || !b || !y || a.getRank() < 2 || b.getRank() < 2)
      return skip(op, "MatMul", "not a matrix product of ranked operands"),
             success();
    if (!eligibleElement(a.getElementType()))
      return skip(op, "MatMul", "not low precision"), success();
    int64_t ra = a.getRank(), rb = b.getRank();
    int64_t m = a.getDimSize(ra - 2), k = a.getDimSize(ra - 1),
            n = b.getDimSize(rb - 1);
    if (ShapedType::isDynamic(k) || ShapedType::isDynamic(n) ||
        !b.hasStaticShape())
      return skip(op, "MatMul", "dynamic K or N"), success();
    const Carried *inA = carriedAlong(op.getA(), ra - 1);
    int64_t kp =
        inA ? rankedOf(inA->padded).getDimSize(ra - 1) : roundUp(k, multiple);
    int64_t np = roundUp(n, multiple);
    if (!inA && kp == k && np == n)
      return skip(op, "MatMul", "already aligned"), success();
    Type e = a.getElementType();
    SmallVector<int64_t> aShape, bShape, yShape;
    auto shapesFor = [&](int64_t rows) {
      aShape.assign(a.getShape().begin(), a.getShape().end());
      bShape.assign(b.getShape().begin(), b.getShape().end());
      yShape.assign(y.getShape().begin(), y.getShape().end());
      aShape[ra - 2] = rows;
      aShape[ra - 1] = kp;
      bShape[rb - 2] = kp;
      bShape[rb - 1] = np;
      yShape[yShape.size() - 2] = rows;
      yShape.back() = np;
      return growthProblem({{a.getShape(), aShape, "A"},
                            {b.getShape(), bShape, "B"},
                            {y.getShape(), yShape, "result"}},
                           e);
    };
    if (std::string problem = shapesFor(m); !problem.empty())
      return skip(op, "MatMul", problem), success();
    int64_t before = bytesOf(a.getShape(), e) + bytesOf(b.getShape(), e) +
                     bytesOf(y.getShape(), e);
    int64_t after =
        bytesOf(aShape, e) + bytesOf(bShape, e) + bytesOf(yShape, e);
    Location loc = op.getLoc();
    Value aIn = inA ? inA->padded : op.getA();
    Value aPadded = padTo(aIn, aShape, loc);
    Value bPadded = padTo(op.getB(), bShape, loc);
    Operation *clone =
        cloneWith(op, {aPadded, bPadded}, {RankedTensorType::get(yShape, e)});
    Value result = clone->getResult(0);
    int64_t batch = 1;
    for (int64_t d : y.getShape().drop_back(2))
      batch *= ShapedType::isDynamic(d) ? 1 : d;
    record(op, "MatMul", describeGemm(m, n, k, np, kp),
           batch * gemmFlops(m, np, kp, n, k), after - before);
    finishResult(op.getY(), result, y.getRank() - 1, np != n);
    return success();
  }

  /// Gemm: A (M,K) or (K,M) with transA, B (K,N) or (N,K) with transB, C
  /// broadcast to (M,N).
  LogicalResult padGemm(GemmOp op) {
    auto a = rankedOf(op.getA()), b = rankedOf(op.getB()),
         y = rankedOf(op.getY());
    if (!a || !b || !y || a.getRank() != 2 || b.getRank() != 2)
      return skip(op, "Gemm", "operands are not ranked matrices"), success();
    if (!eligibleElement(a.getElementType()))
      return skip(op, "Gemm", "not low precision"), success();
    bool transA = op.getTransA().value_or(0),
         transB = op.getTransB().value_or(0);
    int64_t kAxisA = transA ? 0 : 1, mAxisA = 1 - kAxisA;
    int64_t kAxisB = transB ? 1 : 0, nAxisB = 1 - kAxisB;
    int64_t m = a.getDimSize(mAxisA), k = a.getDimSize(kAxisA),
            n = b.getDimSize(nAxisB);
    if (ShapedType::isDynamic(k) || ShapedType::isDynamic(n))
      return skip(op, "Gemm", "dynamic K or N"), success();
    const Carried *inA = carriedAlong(op.getA(), kAxisA);
    int64_t kp =
        inA ? rankedOf(inA->padded).getDimSize(kAxisA) : roundUp(k, multiple);
    int64_t np = roundUp(n, multiple);
    if (!inA && kp == k && np == n)
      return skip(op, "Gemm", "already aligned"), success();
    Type e = a.getElementType();
    SmallVector<int64_t> aShape(2), bShape(2), yShape(2);
    auto shapesFor = [&](int64_t rows) {
      aShape[mAxisA] = rows;
      aShape[kAxisA] = kp;
      bShape[kAxisB] = kp;
      bShape[nAxisB] = np;
      yShape = {rows, np};
      return growthProblem({{a.getShape(), aShape, "A"},
                            {b.getShape(), bShape, "B"},
                            {y.getShape(), yShape, "result"}},
                           e);
    };
    if (std::string problem = shapesFor(m); !problem.empty())
      return skip(op, "Gemm", problem), success();
    Location loc = op.getLoc();
    Value aPadded = padTo(inA ? inA->padded : op.getA(), aShape, loc);
    Value bPadded = padTo(op.getB(), bShape, loc);
    SmallVector<Value> operands{aPadded, bPadded, op.getC()};
    if (auto c = rankedOf(op.getC())) {
      // C broadcasts from the right to (M, N): grow N where it spans it.
      SmallVector<int64_t> cShape(c.getShape());
      int64_t rank = c.getRank();
      if (rank >= 1 && cShape[rank - 1] == n)
        cShape[rank - 1] = np;
      operands[2] = padTo(op.getC(), cShape, loc);
    }
    int64_t before = bytesOf(a.getShape(), e) + bytesOf(b.getShape(), e) +
                     bytesOf(y.getShape(), e);
    int64_t after =
        bytesOf(aShape, e) + bytesOf(bShape, e) + bytesOf(yShape, e);
    Operation *clone =
        cloneWith(op, operands, {RankedTensorType::get(yShape, e)});
    Value result = clone->getResult(0);
    record(op, "Gemm", describeGemm(m, n, k, np, kp),
           gemmFlops(m, np, kp, n, k), after - before);
    finishResult(op.getY(), result, 1, np != n);
    return success();
  }

  /// Conv: X (N, C, ...), W (K, C, k...), B (K): input and output channels.
  LogicalResult padConv(ConvOp op) {
    auto x = rankedOf(op.getX()), w = rankedOf(op.getW()),
         y = rankedOf(op.getY());
    if (!x || !w || !y || !w.hasStaticShape())
      return skip(op, "Conv", "unranked operands or a dynamic filter"),
             success();
    if (!eligibleElement(x.getElementType()))
      return skip(op, "Conv", "not low precision"), success();
    if (op.getGroup().value_or(1) != 1)
      return skip(op, "Conv",
                  "grouped convolution (channels per group "
                  "cannot be padded without changing the groups)"),
             success();
    int64_t c = w.getDimSize(1), k = w.getDimSize(0);
    const Carried *inX = carriedAlong(op.getX(), 1);
    int64_t kp = roundUp(k, multiple);
    int64_t cp =
        inX ? rankedOf(inX->padded).getDimSize(1)
            : (c == 3 && (kp == 32 || kp == 64) ? 4 : roundUp(c, multiple));
    if (!inX && cp == c && kp == k)
      return skip(op, "Conv", "already aligned"), success();
    SmallVector<int64_t> xShape(x.getShape()), wShape(w.getShape()),
        yShape(y.getShape());
    xShape[1] = cp;
    wShape[0] = kp;
    wShape[1] = cp;
    yShape[1] = kp;
    Type e = x.getElementType();
    for (auto [o, p, what] :
         {std::tuple{bytesOf(x.getShape(), e), bytesOf(xShape, e), "input"},
          std::tuple{bytesOf(w.getShape(), e), bytesOf(wShape, e), "filter"},
          std::tuple{bytesOf(y.getShape(), e), bytesOf(yShape, e), "result"}})
      if (!growthOk(o, p))
        return skip(op, "Conv",
                    llvm::formatv("{0} would grow {1:F2}x (max-growth {2})",
                                  what, double(p) / double(o),
                                  maxGrowth.getValue())),
               success();
    Location loc = op.getLoc();
    SmallVector<Value> operands{
        padTo(inX ? inX->padded : op.getX(), xShape, loc),
        padTo(op.getW(), wShape, loc), op.getB()};
    if (rankedOf(op.getB()))
      operands[2] = padTo(op.getB(), {kp}, loc);
    int64_t before = bytesOf(x.getShape(), e) + bytesOf(w.getShape(), e) +
                     bytesOf(y.getShape(), e);
    int64_t after =
        bytesOf(xShape, e) + bytesOf(wShape, e) + bytesOf(yShape, e);
    Operation *clone =
        cloneWith(op, operands, {RankedTensorType::get(yShape, e)});
    int64_t outputs = 1, window = 1;
    for (int64_t d : y.getShape().drop_front(2))
      outputs *= ShapedType::isDynamic(d) ? 1 : d;
    for (int64_t d : w.getShape().drop_front(2))
      window *= d;
    int64_t batch =
        ShapedType::isDynamic(y.getDimSize(0)) ? 1 : y.getDimSize(0);
    record(op, "Conv", llvm::formatv("C,K {0},{1} -> {2},{3}", c, k, cp, kp),
           2 * batch * outputs * window * (kp * cp - k * c), after - before);
    finishResult(op.getY(), clone->getResult(0), 1, kp != k);
    return success();
  }

  void record(Operation *op, StringRef opType, const Twine &detail,
              int64_t extraFlops, int64_t extraBytes) {
    records.push_back({getNodeName(op), opType.str(), true, detail.str(),
                       extraFlops, extraBytes});
  }

  /// The padded op's result: carried when its feature axis grew, else the
  /// original's replacement.
  void finishResult(Value original, Value padded, int64_t axis, bool grew) {
    if (grew)
      carry(original, padded, axis);
    else
      original.replaceAllUsesWith(padded);
  }

  /// Ops that keep the zeros of a carried axis zero run on the padded value.
  bool carryThrough(Operation *op) {
    if (op->getNumResults() == 0 || op->getNumRegions() != 0)
      return false;
    // The carried operand (the first one that is carried).
    const Carried *in = nullptr;
    for (Value operand : op->getOperands())
      if (auto it = carriedValues.find(operand); it != carriedValues.end()) {
        in = &it->second;
        break;
      }
    if (!in)
      return false;
    int64_t axis = in->axis;
    Value result = op->getResult(0);
    auto resultType = rankedOf(result);
    if (!resultType)
      return false;
    int64_t paddedSize = rankedOf(in->padded).getDimSize(axis);
    auto padOperand = [&](Value v) -> Value {
      if (const Carried *c = carriedAlong(v, axis))
        return rankedOf(c->padded).getDimSize(axis) == paddedSize ? c->padded
                                                                  : Value();
      return {};
    };
    SmallVector<Value> operands(op->getOperands());
    bool zeroPreserving = false;
    if (isa<ReluOp, LeakyReluOp, TanhOp, NegOp, AbsOp, IdentityOp, ErfOp,
            SignOp, SinOp, HardSwishOp, CastOp>(op)) {
      zeroPreserving = true;
      operands[0] = padOperand(op->getOperand(0));
    } else if (isa<AddOp, SubOp, MulOp>(op)) {
      zeroPreserving = true;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (Value p = padOperand(v)) {
          operands[i] = p;
          continue;
        }
        auto t = rankedOf(v);
        Operation *def = v.getDefiningOp();
        bool constant = def && isa<InitializerOp, ConstantOp>(def);
        int64_t dim = t ? axis - (resultType.getRank() - t.getRank()) : -1;
        if (!t || !constant) {
          operands[i] = Value();
        } else if (dim >= 0 && t.getDimSize(dim) == in->originalSize) {
          // A constant spanning the axis (a bias): zeros in the new lanes.
          SmallVector<int64_t> shape(t.getShape());
          shape[dim] = paddedSize;
          operands[i] = padTo(v, shape, op->getLoc());
        } else if (isa<MulOp>(op)) {
          operands[i] = v; // broadcast along the axis: 0 * c stays 0
        } else {
          operands[i] = Value();
        }
      }
    } else if (auto clip = dyn_cast<ClipOp>(op)) {
      auto bound = [&](Value v, bool isMin) {
        if (isa<NoneType>(v.getType()))
          return true;
        auto attr = dyn_cast_or_null<DenseFPElementsAttr>(getConstantValue(v));
        if (!attr || attr.getNumElements() != 1)
          return false;
        double b = attr.getValues<APFloat>()[0].convertToDouble();
        return isMin ? b <= 0.0 : b >= 0.0;
      };
      zeroPreserving =
          bound(clip.getMin(), true) && bound(clip.getMax(), false);
      operands[0] = padOperand(clip.getInput());
    } else if (isa<MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp,
                   GlobalMaxPoolOp>(op) &&
               axis == 1) {
      // Pooling works per channel; MaxPool's indices would change.
      zeroPreserving = op->getNumResults() == 1 || op->getResult(1).use_empty();
      operands[0] = padOperand(op->getOperand(0));
    } else if (auto bn = dyn_cast<BatchNormalizationOp>(op); bn && axis == 1) {
      // (0 - 0) / sqrt(1 + eps) * 0 + 0 = 0 with the new channels' scale,
      // bias and mean 0 and variance 1.
      zeroPreserving =
          bn.getRunningMean().use_empty() && bn.getRunningVar().use_empty();
      operands[0] = padOperand(bn.getX());
      for (unsigned i = 1; i <= 4; ++i) {
        Value v = op->getOperand(i);
        Operation *def = v.getDefiningOp();
        if (!def || !isa<InitializerOp, ConstantOp>(def) || !rankedOf(v) ||
            rankedOf(v).getRank() != 1) {
          zeroPreserving = false;
          break;
        }
        operands[i] = padTo(v, {paddedSize}, op->getLoc(), i == 4 ? 1.0 : 0.0);
      }
    }
    if (!zeroPreserving || llvm::any_of(operands, [](Value v) { return !v; }))
      return false;
    SmallVector<Type> types;
    for (Value r : op->getResults()) {
      auto t = rankedOf(r);
      if (!t)
        return false;
      SmallVector<int64_t> shape(t.getShape());
      if (t.getRank() == resultType.getRank())
        shape[axis] = paddedSize;
      else if (t.getRank() == 1 && t.getDimSize(0) == in->originalSize)
        shape[0] = paddedSize; // batch norm's running statistics
      types.push_back(RankedTensorType::get(shape, t.getElementType()));
    }
    // Other carried operands must be replaced by padded ones (done above);
    // any carried operand along another axis was rejected by padOperand.
    Operation *clone = cloneWith(op, operands, types);
    carry(result, clone->getResult(0), axis);
    return true;
  }

  //===--------------------------------------------------------------------===//
  // Constants and the report
  //===--------------------------------------------------------------------===//

  /// A padded initializer whose original nobody reads takes its name.
  void finishConstants() {
    for (auto [original, padded] : paddedInitializers) {
      if (!original || !original->use_empty())
        continue;
      padded.setName(original.getName());
      original->erase();
    }
  }

  LogicalResult writeReport() {
    std::string text;
    llvm::raw_string_ostream os(text);
    int64_t padded = 0, flops = 0, bytes = 0;
    for (const PadRecord &r : records) {
      padded += r.padded;
      flops += r.extraFlops;
      bytes += r.extraBytes;
    }
    if (StringRef(reportFile).ends_with(".json")) {
      llvm::json::Array list;
      for (const PadRecord &r : records)
        list.push_back(llvm::json::Object{{"node", r.node},
                                          {"op_type", r.opType},
                                          {"padded", r.padded},
                                          {"detail", r.detail},
                                          {"extra_flops", r.extraFlops},
                                          {"extra_bytes", r.extraBytes}});
      llvm::json::Value root = llvm::json::Object{
          {"function", getOperation().getSymName()},
          {"multiple", static_cast<int64_t>(multiple)},
          {"max_growth", maxGrowth.getValue()},
          {"padded", padded},
          {"skipped", static_cast<int64_t>(records.size()) - padded},
          {"extra_flops", flops},
          {"extra_bytes", bytes},
          {"ops", std::move(list)}};
      os << llvm::formatv("{0:2}", root) << "\n";
    } else {
      os << "mp-pad-tensor-cores report: @" << getOperation().getSymName()
         << llvm::formatv(", multiple {0}, max-growth {1}\n",
                          static_cast<int64_t>(multiple),
                          static_cast<double>(maxGrowth));
      os << "  padded " << padded << " ops, skipped " << records.size() - padded
         << "; extra FLOPs " << flops << ", extra bytes " << bytes << "\n";
      for (const PadRecord &r : records)
        os << "  " << (r.padded ? "padded " : "skipped") << " " << r.opType
           << " '" << r.node << "': " << r.detail
           << (r.padded ? llvm::formatv(" (+{0} FLOPs, +{1} bytes)",
                                        r.extraFlops, r.extraBytes)
                              .str()
                        : "")
           << "\n";
    }
    std::error_code ec;
    llvm::raw_fd_ostream file(reportFile, ec);
    if (!ec) {
      file << text;
      file.close();
      ec = file.error();
    }
    if (ec) {
      getOperation().emitError("mp-pad-tensor-cores: cannot write report '")
          << reportFile << "': " << ec.message();
      return failure();
    }
    return success();
  }

  std::shared_ptr<OpBuilder> builder;
  llvm::StringSet<> enabledOps;
  llvm::MapVector<Value, Carried> carriedValues;
  llvm::DenseMap<Value, Value> slices;
  std::vector<Operation *> createdOps; ///< pads, slices and their constants
  std::vector<Operation *> replacedOps;
  std::vector<std::pair<InitializerOp, InitializerOp>> paddedInitializers;
  std::vector<PadRecord> records;
  unsigned created = 0; ///< numbers the names of the pads and slices made
};

} // namespace
