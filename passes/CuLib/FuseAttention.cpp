//===- FuseAttention.cpp - the culib-fuse-attention pass ------------------===//
//
// Exporters write scaled dot-product attention as a dozen nodes, which
// convert-mp-to-culib lowers to as many calls (torch's MultiheadAttention,
// batch 2, 8 heads):
//
//   qkv = matmul(x, W) + b                         [L, N, 3E]
//   q = slice(qkv) -> copy [L, N*H, d] -> transpose [N*H, L, d] -> div(., s)
//   k = slice(qkv) -> copy -> transpose [N*H, d, L]
//   v = slice(qkv) -> copy -> transpose [N*H, L, d]
//   p = softmax(matmul(q, k) (* c) (+ mask))       [N*H, L, L]
//   o = matmul(p, v) -> transpose [L, N*H, d] -> copy [L*N, E]
//
// This pass makes the part from the slices to the last copy one
// culib.attention call (mp/Runtime/Attention.h). The slices, copies and
// transposes become strided views of the buffers they start from and end in,
// the scalar factors one `scale`, the additive mask an operand: the scores,
// probabilities and head-split copies are never written, and everything
// inside is f32 (casts in between are dropped: the call rounds once).
//
// A view is kept per dim as a list of (size, stride) atoms, row-major, so
// that a reshape that merges dims of different strides (N and H above) stays
// a view; the batch index of the matmuls is finally split into the call's
// (batch, head) pair where every operand's atoms allow it.
//
//===----------------------------------------------------------------------===//
#include "mp/Dialect/CuLib/CuLibDialect.h"
#include "mp/Passes/CuLib/Passes.h"
#include "mp/Runtime/Attention.h"

#include "FusionUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mp {
#define GEN_PASS_DEF_FUSEATTENTION
#include "mp/Passes/CuLib/Passes.h.inc"
} // namespace mp

using namespace mlir;
using namespace mp;

namespace {

using rt::cpu::ElementwiseFn;

using culib::memrefOf;

/// One factor of a dim of a strided view: `size` indices `stride` elements
/// apart.
struct Atom {
  int64_t size, stride;
};

/// A strided view of a root buffer: an element offset and, per logical dim,
/// its atoms (outermost first; their sizes multiply to the dim's size).
struct View {
  int64_t offset = 0;
  SmallVector<SmallVector<Atom, 2>, 4> dims;

  static View rowMajor(ArrayRef<int64_t> shape) {
    View view;
    view.dims.resize(shape.size());
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      view.dims[i] = {{shape[i], stride}};
      stride *= shape[i];
    }
    return view;
  }

  View transposed(ArrayRef<int64_t> perm) const {
    View out;
    out.offset = offset;
    for (int64_t p : perm)
      out.dims.push_back(dims[p]);
    return out;
  }

  /// The same elements as a row-major reshape to `shape` would see, if
  /// atoms can be split to fit its dims.
  std::optional<View> reshaped(ArrayRef<int64_t> shape) const {
    // Empty tensors have no views worth making (and sizes 0 divide nothing).
    if (llvm::is_contained(shape, 0))
      return std::nullopt;
    SmallVector<Atom> atoms;
    for (const auto &dim : dims)
      for (Atom a : dim) {
        if (a.size < 1)
          return std::nullopt;
        if (a.size != 1)
          atoms.push_back(a);
      }
    View out;
    out.offset = offset;
    size_t next = 0;
    for (int64_t size : shape) {
      SmallVector<Atom, 2> dim;
      int64_t left = size;
      while (left > 1) {
        if (next == atoms.size())
          return std::nullopt;
        Atom &a = atoms[next];
        if (a.size <= left) {
          if (left % a.size)
            return std::nullopt;
          dim.push_back(a);
          left /= a.size;
          ++next;
        } else {
          // Split the atom: its outer `left` indices go to this dim.
          if (a.size % left)
            return std::nullopt;
          int64_t inner = a.size / left;
          dim.push_back({left, a.stride * inner});
          a = {inner, a.stride};
          left = 1;
        }
      }
      if (dim.empty())
        dim.push_back({1, 0});
      out.dims.push_back(std::move(dim));
    }
    if (next != atoms.size())
      return std::nullopt;
    return out;
  }

  /// y[i] = x[start + i * step] per dim; only on dims of one atom, or taken
  /// whole.
  std::optional<View> sliced(ArrayRef<int64_t> starts, ArrayRef<int64_t> steps,
                             ArrayRef<int64_t> sizes) const {
    View out = *this;
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t size = 1;
      for (Atom a : dims[i])
        size *= a.size;
      if (starts[i] == 0 && steps[i] == 1 && sizes[i] == size)
        continue;
      if (dims[i].size() != 1 || steps[i] <= 0)
        return std::nullopt;
      out.offset += starts[i] * dims[i][0].stride;
      out.dims[i] = {{sizes[i], dims[i][0].stride * steps[i]}};
    }
    return out;
  }
};

/// The atoms of `dims` merged where the outer one steps exactly over the
/// inner one (and size-1 atoms dropped).
SmallVector<Atom> merged(ArrayRef<SmallVector<Atom, 2>> dims) {
  SmallVector<Atom> out;
  for (const auto &dim : dims)
    for (Atom a : dim) {
      if (a.size == 1)
        continue;
      if (!out.empty() && out.back().stride == a.size * a.stride) {
        out.back() = {out.back().size * a.size, a.stride};
        continue;
      }
      out.push_back(a);
    }
  return out;
}

/// The strides (outer, inner) of a flat batch index split as outer * inner
/// + i with i < inner, if the atoms allow it.
std::optional<std::pair<int64_t, int64_t>> splitBatch(ArrayRef<Atom> atoms,
                                                      int64_t inner) {
  // Walk from the innermost atom; `reach` is the product of sizes so far.
  SmallVector<Atom> in, out;
  int64_t reach = 1;
  if (inner < 1 || llvm::any_of(atoms, [](Atom a) { return a.size < 1; }))
    return std::nullopt;
  for (Atom a : llvm::reverse(atoms)) {
    if (reach >= inner) {
      out.push_back(a);
    } else if (reach * a.size <= inner) {
      in.push_back(a);
      reach *= a.size;
    } else {
      int64_t part = inner / reach;
      if (inner % reach || a.size % part)
        return std::nullopt;
      in.push_back({part, a.stride});
      out.push_back({a.size / part, a.stride * part});
      reach = inner;
    }
  }
  if (reach != inner)
    return std::nullopt;
  auto single = [](SmallVector<Atom> list) -> std::optional<int64_t> {
    std::reverse(list.begin(), list.end());
    SmallVector<SmallVector<Atom, 2>> dims = {{list.begin(), list.end()}};
    SmallVector<Atom> m = merged(dims);
    if (m.size() > 1)
      return std::nullopt;
    return m.empty() ? int64_t(0) : m[0].stride;
  };
  std::optional<int64_t> outer = single(out), innerStride = single(in);
  if (!outer || !innerStride)
    return std::nullopt;
  return std::make_pair(*outer, *innerStride);
}

/// An operand traced back to the buffer it is a view of: the calls that
/// made it (to erase) and the factor they multiplied it by.
struct Traced {
  Value root;
  View view;
  SmallVector<Operation *> chain; ///< first call first
  double factor = 1;
};

/// Follows `value` (read by `reader`) back through transposes, reshape
/// copies, slices and multiplications or divisions by a constant, as long as
/// each buffer on the way is an arena buffer its one writer makes for the
/// next call alone. (Casts stay: a bf16 operand cast from f32 keeps the
/// scores on bf16 dot products.)
Traced traceBack(Value value, Operation *reader) {
  Traced t;
  SmallVector<Operation *> backwards;
  Operation *consumer = reader;
  Value current = value;
  while (true) {
    Operation *writer = culib::soleWriter(current, {consumer});
    Value input;
    if (auto op = dyn_cast_or_null<culib::TransposeOp>(writer)) {
      input = op.getX();
    } else if (auto op = dyn_cast_or_null<culib::CopyOp>(writer)) {
      input = op.getX();
    } else if (auto op = dyn_cast_or_null<culib::SliceOp>(writer)) {
      input = op.getX();
    } else if (auto op = dyn_cast_or_null<culib::ElementwiseOp>(writer)) {
      ValueRange in = op.getInputs();
      bool scaling = (op.getFn() == ElementwiseFn::Mul ||
                      op.getFn() == ElementwiseFn::Div) &&
                     in.size() == 2 && !op->hasAttr("alpha") &&
                     !op->hasAttr("beta") &&
                     memrefOf(in[0]).getShape() == memrefOf(current).getShape();
      std::optional<double> c =
          scaling ? culib::scalarWeightValue(in[1]) : std::nullopt;
      if (c && *c != 0) {
        t.factor *= op.getFn() == ElementwiseFn::Mul ? *c : 1 / *c;
        input = in[0];
      }
    }
    if (!input)
      break;
    backwards.push_back(writer);
    consumer = writer;
    current = input;
  }
  t.root = current;
  t.chain.assign(backwards.rbegin(), backwards.rend());
  // Replay the chain from the root's row-major layout.
  std::optional<View> view = View::rowMajor(memrefOf(current).getShape());
  for (Operation *op : t.chain) {
    if (!view)
      break;
    if (auto tr = dyn_cast<culib::TransposeOp>(op))
      view = view->transposed(tr.getPerm());
    else if (auto copy = dyn_cast<culib::CopyOp>(op))
      view = view->reshaped(memrefOf(copy.getY()).getShape());
    else if (auto slice = dyn_cast<culib::SliceOp>(op))
      view = view->sliced(slice.getStarts(), slice.getSteps(),
                          memrefOf(slice.getY()).getShape());
  }
  if (!view) {
    t.root = value;
    t.chain.clear();
    t.factor = 1;
    view = View::rowMajor(memrefOf(value).getShape());
  }
  t.view = *view;
  return t;
}

/// The buffer an output written as `value` ends in when only transposes and
/// reshape copies read it on, each buffer by the next call alone, and the
/// view of `value` in it.
Traced traceForward(Value value, Operation *writer) {
  SmallVector<Operation *> forwards;
  Value current = value;
  Operation *producer = writer;
  while (true) {
    Operation *next = nullptr;
    bool several = false;
    for (Operation *user : current.getUsers())
      if (user != producer) {
        several |= next != nullptr;
        next = user;
      }
    if (several || !next || !isa<culib::TransposeOp, culib::CopyOp>(next) ||
        next->getOperand(0) != current ||
        culib::soleWriter(current, {next}) != producer)
      break;
    forwards.push_back(next);
    producer = next;
    current = next->getOperand(1);
  }
  // The view of `value` in the last buffer: undo the chain from its end.
  std::optional<View> view = View::rowMajor(memrefOf(current).getShape());
  for (Operation *op : llvm::reverse(forwards)) {
    if (!view)
      break;
    Value in = op->getOperand(0);
    if (auto tr = dyn_cast<culib::TransposeOp>(op)) {
      SmallVector<int64_t> inverse(tr.getPerm().size());
      for (auto [i, p] : llvm::enumerate(tr.getPerm()))
        inverse[p] = i;
      view = view->transposed(inverse);
    } else {
      view = view->reshaped(memrefOf(in).getShape());
    }
  }
  Traced t;
  if (!view)
    return {value, View::rowMajor(memrefOf(value).getShape()), {}, 1};
  t.root = current;
  t.view = *view;
  t.chain = std::move(forwards);
  return t;
}

/// A matmul with nothing but op(A) op(B) (alpha folded into the factor).
bool isPlainProduct(culib::MatmulOp op) {
  return !op.getC() && !op.getBias() && !op.getTransA() &&
         op.getEpilogue() == culib::Epilogue::none;
}

/// The batch dims, rows and columns of an operand traced as `t`: its view's
/// batch atoms, and one stride each for rows and columns (swapped when
/// `transposed`).
struct OperandView {
  SmallVector<Atom> batch;
  int64_t offset = 0, rowStride = 0, columnStride = 0;
};
std::optional<OperandView> operandView(const View &view, bool transposed) {
  size_t rank = view.dims.size();
  if (rank < 2)
    return std::nullopt;
  OperandView out;
  out.offset = view.offset;
  out.batch = merged(ArrayRef(view.dims).drop_back(2));
  auto single = [](ArrayRef<Atom> atoms) -> std::optional<int64_t> {
    SmallVector<SmallVector<Atom, 2>> dims = {{atoms.begin(), atoms.end()}};
    SmallVector<Atom> m = merged(dims);
    if (m.size() > 1)
      return std::nullopt;
    return m.empty() ? int64_t(0) : m[0].stride;
  };
  std::optional<int64_t> rows = single(view.dims[rank - 2]),
                         columns = single(view.dims[rank - 1]);
  if (!rows || !columns)
    return std::nullopt;
  out.rowStride = transposed ? *columns : *rows;
  out.columnStride = transposed ? *rows : *columns;
  return out;
}

struct FoldAttention : OpRewritePattern<culib::SoftmaxOp> {
  FoldAttention(MLIRContext *ctx, int64_t &folded, int64_t &calls,
                int64_t &bytes)
      : OpRewritePattern(ctx), folded(folded), calls(calls), bytes(bytes) {}

  LogicalResult matchAndRewrite(culib::SoftmaxOp softmax,
                                PatternRewriter &rewriter) const override {
    MemRefType scoresType = memrefOf(softmax.getX());
    int64_t rank = scoresType.getRank();
    if (softmax.getLog() || rank < 3 ||
        (static_cast<int64_t>(softmax.getAxis()) != rank - 1 &&
         static_cast<int64_t>(softmax.getAxis()) != -1))
      return rewriter.notifyMatchFailure(softmax, "not over the last axis");

    // Scores: matmul (-> casts, constant factors) (-> + mask) -> softmax.
    SmallVector<Operation *> erased = {softmax};
    double factor = 1;
    bool scaledAfterMask = false;
    Value mask;
    culib::ElementwiseOp maskAdd;
    Value scores = softmax.getX();
    Operation *consumer = softmax;
    culib::MatmulOp scoresMatmul;
    while (!scoresMatmul) {
      Operation *writer = culib::soleWriter(scores, {consumer});
      if (auto mm = dyn_cast_or_null<culib::MatmulOp>(writer)) {
        if (!isPlainProduct(mm))
          return rewriter.notifyMatchFailure(softmax, "scores: not Q K^T");
        scoresMatmul = mm;
        break;
      }
      Value input;
      if (auto cast = dyn_cast_or_null<culib::CastOp>(writer)) {
        if (isa<FloatType>(memrefOf(cast.getX()).getElementType()))
          input = cast.getX();
      } else if (auto ew = dyn_cast_or_null<culib::ElementwiseOp>(writer)) {
        ValueRange in = ew.getInputs();
        if (in.size() != 2 || ew->hasAttr("alpha") || ew->hasAttr("beta"))
          return rewriter.notifyMatchFailure(softmax, "scores: other call");
        std::optional<double> c = culib::scalarWeightValue(in[1]);
        // Walking back, a factor met before the mask's add scales the mask
        // too: not this call's semantics.
        if ((ew.getFn() == ElementwiseFn::Mul ||
             ew.getFn() == ElementwiseFn::Div) &&
            c && *c != 0) {
          factor *= ew.getFn() == ElementwiseFn::Mul ? *c : 1 / *c;
          scaledAfterMask |= !mask;
          input = in[0];
        } else if (ew.getFn() == ElementwiseFn::Add && !mask &&
                   !scaledAfterMask) {
          // The mask is the other input, broadcast onto the scores.
          for (int i = 0; i < 2 && !input; ++i) {
            Value other = in[1 - i];
            if (memrefOf(in[i]).getShape() == scoresType.getShape() &&
                isa<FloatType>(memrefOf(other).getElementType()) &&
                other != in[i] && culib::soleWriter(in[i], {ew})) {
              input = in[i];
              mask = other;
              maskAdd = ew;
            }
          }
        }
      }
      if (!input)
        return rewriter.notifyMatchFailure(softmax, "scores: other call");
      erased.push_back(writer);
      consumer = writer;
      scores = input;
    }
    erased.push_back(scoresMatmul);
    factor *= scoresMatmul.getAlpha().convertToDouble();

    // Probabilities: softmax (-> cast) -> matmul(p, V).
    Value probabilities = softmax.getY();
    Operation *producer = softmax;
    culib::MatmulOp valuesMatmul;
    while (!valuesMatmul) {
      Operation *reader = nullptr;
      for (Operation *user : probabilities.getUsers())
        if (user != producer) {
          if (reader)
            return rewriter.notifyMatchFailure(softmax, "p read twice");
          reader = user;
        }
      if (!reader || culib::soleWriter(probabilities, {reader}) != producer)
        return rewriter.notifyMatchFailure(softmax, "p: other writers");
      if (auto mm = dyn_cast<culib::MatmulOp>(reader)) {
        if (!isPlainProduct(mm) || mm.getA() != probabilities ||
            mm.getB() == probabilities ||
            mm.getAlpha().convertToDouble() != 1.0)
          return rewriter.notifyMatchFailure(softmax, "not P V");
        valuesMatmul = mm;
      } else if (auto cast = dyn_cast<culib::CastOp>(reader);
                 cast && cast.getX() == probabilities &&
                 isa<FloatType>(memrefOf(cast.getY()).getElementType())) {
        erased.push_back(cast);
        producer = cast;
        probabilities = cast.getY();
      } else {
        return rewriter.notifyMatchFailure(softmax, "p: read by another call");
      }
    }
    erased.push_back(valuesMatmul);

    // Q, K and V back to their buffers; O on to the buffer it ends in.
    Traced q = traceBack(scoresMatmul.getA(), scoresMatmul);
    Traced k = traceBack(scoresMatmul.getB(), scoresMatmul);
    Traced v = traceBack(valuesMatmul.getB(), valuesMatmul);
    if (v.factor != 1)
      return rewriter.notifyMatchFailure(softmax, "V is scaled");
    factor *= q.factor * k.factor;
    Traced o = traceForward(valuesMatmul.getD(), valuesMatmul);

    std::optional<OperandView> qv = operandView(q.view, false);
    std::optional<OperandView> kv =
        operandView(k.view, !scoresMatmul.getTransB());
    std::optional<OperandView> vv =
        operandView(v.view, valuesMatmul.getTransB());
    std::optional<OperandView> ov = operandView(o.view, false);
    if (!qv || !kv || !vv || !ov)
      return rewriter.notifyMatchFailure(softmax, "no strided views");

    // Shapes: scores [batch..., Lq, Lk], O [batch..., Lq, Dv].
    ArrayRef<int64_t> s = scoresType.getShape();
    MemRefType oType = memrefOf(valuesMatmul.getD());
    MemRefType aType = memrefOf(scoresMatmul.getA());
    if (oType.getRank() != rank || aType.getRank() != rank ||
        memrefOf(scoresMatmul.getB()).getRank() != rank ||
        memrefOf(valuesMatmul.getB()).getRank() != rank ||
        memrefOf(scoresMatmul.getD()).getShape() != s ||
        oType.getShape().drop_back() != s.drop_back() ||
        aType.getShape().drop_back(2) != s.drop_back(2) ||
        memrefOf(scoresMatmul.getB()).getShape().drop_back(2) !=
            s.drop_back(2) ||
        memrefOf(valuesMatmul.getB()).getShape().drop_back(2) != s.drop_back(2))
      return rewriter.notifyMatchFailure(softmax, "batch dims differ");
    rt::AttentionShape shape;
    shape.queries = s[rank - 2];
    shape.keys = s[rank - 1];
    shape.headDim = aType.getShape().back();
    shape.valueDim = oType.getShape().back();
    int64_t batch = 1;
    for (int64_t d : s.drop_back(2))
      batch *= d;

    // The mask broadcast onto the scores: size-1 dims step by 0.
    std::optional<OperandView> mv;
    if (mask) {
      ArrayRef<int64_t> m = memrefOf(mask).getShape();
      if (static_cast<int64_t>(m.size()) > rank)
        return rewriter.notifyMatchFailure(softmax, "mask rank");
      View maskView = View::rowMajor(m);
      View broadcast;
      for (int64_t i = 0; i < rank; ++i) {
        int64_t j = i - (rank - static_cast<int64_t>(m.size()));
        if (j < 0 || (m[j] == 1 && s[i] != 1)) {
          broadcast.dims.push_back({{s[i], 0}});
        } else if (m[j] == s[i]) {
          broadcast.dims.push_back(maskView.dims[j]);
        } else {
          return rewriter.notifyMatchFailure(softmax, "mask shape");
        }
      }
      mv = operandView(broadcast, false);
    }

    // Split the batch index into (batch, head) where every view allows it.
    SmallVector<OperandView *> operands = {&*qv, &*kv, &*vv, &*ov};
    if (mv)
      operands.push_back(&*mv);
    // The matmuls' innermost batch dim first: the heads of [N, H, L, D].
    SmallVector<int64_t> candidates = {s[rank - 3], 1, batch};
    for (OperandView *op : operands) {
      int64_t reach = 1;
      for (Atom a : llvm::reverse(op->batch))
        candidates.push_back(reach *= a.size);
    }
    SmallVector<std::pair<int64_t, int64_t>> strides;
    std::optional<int64_t> heads;
    for (int64_t h : candidates) {
      if (h <= 0 || batch % h)
        continue;
      strides.clear();
      for (OperandView *op : operands) {
        std::optional<std::pair<int64_t, int64_t>> split =
            splitBatch(op->batch, h);
        if (!split)
          break;
        strides.push_back(*split);
      }
      if (strides.size() == operands.size()) {
        heads = h;
        break;
      }
    }
    if (!heads)
      return rewriter.notifyMatchFailure(softmax, "batch not (batch, head)");
    shape.batch = batch / *heads;
    shape.heads = *heads;
    SmallVector<rt::AttentionView> views;
    for (auto [op, bh] : llvm::zip(operands, strides))
      views.push_back(
          {op->offset, {bh.first, bh.second, op->rowStride, op->columnStride}});
    auto elements = [](Value v) { return memrefOf(v).getNumElements(); };
    std::string why;
    if (!rt::checkAttention(shape, views[0], views[1], views[2], views[3],
                            mask ? &views[4] : nullptr, elements(q.root),
                            elements(k.root), elements(v.root),
                            elements(o.root), mask ? elements(mask) : -1, why))
      return rewriter.notifyMatchFailure(softmax, why);
    auto list = [&](size_t i) {
      return rewriter.getDenseI64ArrayAttr(views[i].toList());
    };

    // Where the call goes: at the end of O's chain; nothing before may
    // write what it reads then.
    Operation *at =
        o.chain.empty() ? valuesMatmul.getOperation() : o.chain.back();
    SmallVector<Operation *> all = erased;
    for (Traced *t : {&q, &k, &v, &o})
      all.append(t->chain.begin(), t->chain.end());
    if (llvm::SmallPtrSet<Operation *, 32>(all.begin(), all.end()).size() !=
        all.size())
      return rewriter.notifyMatchFailure(softmax, "operands share calls");
    for (auto [t, first] :
         {std::pair<Traced *, Operation *>{&q, q.chain.empty()
                                                   ? scoresMatmul.getOperation()
                                                   : q.chain.front()},
          {&k, k.chain.empty() ? scoresMatmul.getOperation() : k.chain.front()},
          {&v,
           v.chain.empty() ? valuesMatmul.getOperation() : v.chain.front()}})
      if (culib::writtenBetween(t->root, first, at, all))
        return rewriter.notifyMatchFailure(softmax, "input written before");
    if (mask && culib::writtenBetween(mask, maskAdd, at, all))
      return rewriter.notifyMatchFailure(softmax, "mask written before");
    for (Value read : {q.root, k.root, v.root, mask})
      if (read && read == o.root)
        return rewriter.notifyMatchFailure(softmax, "O overwrites an input");

    rewriter.setInsertionPoint(at);
    culib::AttentionOp::create(
        rewriter, valuesMatmul.getLoc(), q.root, k.root, v.root, mask, o.root,
        rewriter.getDenseI64ArrayAttr(shape.toList()), list(0), list(1),
        list(2), list(3), mask ? list(4) : DenseI64ArrayAttr(),
        rewriter.getF32FloatAttr(static_cast<float>(factor)));
    ++folded;
    calls += static_cast<int64_t>(all.size()) - 1;
    bytes += culib::eraseCallsAndTheirBuffers(all, Value(), rewriter);
    return success();
  }

  int64_t &folded, &calls, &bytes;
};

struct FuseAttentionPass
    : public mp::impl::FuseAttentionBase<FuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t folded = 0, calls = 0, bytes = 0;
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldAttention>(&getContext(), folded, calls, bytes);
    if (failed(culib::applyFusionPatterns(func, std::move(patterns))))
      return signalPassFailure();
    if (record)
      culib::recordFusion(func, getArgument(), "attention", folded, calls,
                          bytes);
    if (report)
      func.emitRemark() << "culib-fuse-attention: " << folded
                        << " attention(s) made one call each, " << calls
                        << " calls fewer; " << bytes
                        << " intermediate bytes no longer written";
  }
};

} // namespace
