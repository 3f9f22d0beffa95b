//===- LibraryCalls.cpp - GEMMs and convolutions to library calls ---------===//
//
// Conv and ConvTranspose become cuDNN convolutions; Gemm, MatMul and
// Einsum (as reductions, transposes and one batched matmul) cuBLASLt
// matmuls, accumulating in the type mp-autocast recorded.
//
//===----------------------------------------------------------------------===//
#include "PopulatePatterns.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mp;
using namespace mp::mptoculib;

namespace {

struct ConvLowering : OneCallLowering<ConvOp> {
  using OneCallLowering::OneCallLowering;
  Value result(ConvOp op) const override { return op.getY(); }
  void buildCall(ConvOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    auto x = cast<ShapedType>(op.getX().getType());
    auto w = cast<ShapedType>(op.getW().getType());
    auto y = cast<ShapedType>(op.getY().getType());
    size_t spatial = x.getRank() - 2;
    SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
    SmallVector<int64_t> dilations = orOnes(op.getDilations(), spatial);
    SmallVector<int64_t> pads =
        windowPads(op.getAutoPad().value_or("NOTSET"), op.getPads(),
                   x.getShape().drop_front(2), y.getShape().drop_front(2),
                   w.getShape().drop_front(2), strides, dilations);
    Value bias = isAbsent(adaptor.getB()) ? Value() : adaptor.getB();
    culib::ConvFwdOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), bias,
        /*residual=*/Value(), out, rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getI64IntegerAttr(op.getGroup().value_or(1)),
        TypeAttr::get(computeTypeFor(x.getElementType(), op)),
        culib::LayoutAttr::get(rewriter.getContext(), culib::Layout::nchw),
        culib::EpilogueAttr::get(rewriter.getContext(), culib::Epilogue::none),
        /*clip_min=*/FloatAttr(), /*clip_max=*/FloatAttr());
  }
};

struct GemmLowering : OneCallLowering<GemmOp> {
  using OneCallLowering::OneCallLowering;
  Value result(GemmOp op) const override { return op.getY(); }
  void buildCall(GemmOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    float alpha = op.getAlpha() ? op.getAlpha()->convertToFloat() : 1.0f;
    float beta = op.getBeta() ? op.getBeta()->convertToFloat() : 1.0f;
    auto y = cast<ShapedType>(op.getY().getType());
    Value c, bias;
    if (!isAbsent(adaptor.getC()) && beta != 0.0f) {
      auto cType = cast<ShapedType>(op.getC().getType());
      if (cType.getShape() == y.getShape()) {
        c = adaptor.getC();
      } else if (cType.getRank() == 1 &&
                 cType.getDimSize(0) == y.getDimSize(1) && beta == 1.0f &&
                 elementOf(op.getC()) == y.getElementType()) {
        bias = adaptor.getC();
      } else {
        // Any other C that broadcasts to [M, N] (a scalar, [M, 1], [1, N]
        // with beta != 1): expanded first, then cuBLASLt's C operand.
        c = culib::AllocOp::create(
            rewriter, op.getLoc(),
            MemRefType::get(y.getShape(), y.getElementType()), IntegerAttr());
        culib::BroadcastOp::create(rewriter, op.getLoc(), adaptor.getC(), c);
      }
    }
    culib::MatmulOp::create(
        rewriter, op.getLoc(), adaptor.getA(), adaptor.getB(), c, bias,
        /*aux=*/Value(), out, /*bias_grad=*/Value(),
        rewriter.getBoolAttr(op.getTransA().value_or(0) != 0),
        rewriter.getBoolAttr(op.getTransB().value_or(0) != 0),
        rewriter.getF32FloatAttr(alpha),
        rewriter.getF32FloatAttr(c ? beta : 0.0f),
        TypeAttr::get(computeTypeFor(y.getElementType(), op)),
        culib::EpilogueAttr::get(rewriter.getContext(), culib::Epilogue::none));
  }
};

struct MatMulLowering : OneCallLowering<MatMulOp> {
  using OneCallLowering::OneCallLowering;
  Value result(MatMulOp op) const override { return op.getY(); }
  void buildCall(MatMulOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    culib::MatmulOp::create(
        rewriter, op.getLoc(), adaptor.getA(), adaptor.getB(), Value(), Value(),
        /*aux=*/Value(), out, /*bias_grad=*/Value(),
        rewriter.getBoolAttr(false), rewriter.getBoolAttr(false),
        rewriter.getF32FloatAttr(1.0f), rewriter.getF32FloatAttr(0.0f),
        TypeAttr::get(computeTypeFor(elementOf(op.getY()), op)),
        culib::EpilogueAttr::get(rewriter.getContext(), culib::Epilogue::none));
  }
};

struct ConvTransposeLowering : OneCallLowering<ConvTransposeOp> {
  using OneCallLowering::OneCallLowering;
  Value result(ConvTransposeOp op) const override { return op.getY(); }
  void buildCall(ConvTransposeOp op, OpAdaptor adaptor, Value out,
                 ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> x = shapeOf(op.getX()), w = shapeOf(op.getW()),
                      y = shapeOf(op.getY());
    size_t spatial = x.size() - 2;
    SmallVector<int64_t> strides = orOnes(op.getStrides(), spatial);
    SmallVector<int64_t> dilations = orOnes(op.getDilations(), spatial);
    SmallVector<int64_t> outputPadding(spatial, 0);
    if (auto given = op.getOutputPadding())
      outputPadding.assign(given->begin(), given->end());
    // The total padding follows from the sizes; auto_pad / pads say how it
    // splits (ONNX ConvTranspose).
    SmallVector<int64_t> pads(2 * spatial, 0);
    std::string autoPad = op.getAutoPad().value_or("NOTSET").str();
    for (size_t i = 0; i < spatial; ++i) {
      int64_t full = strides[i] * (x[i + 2] - 1) + outputPadding[i] +
                     (w[i + 2] - 1) * dilations[i] + 1;
      int64_t total = full - y[i + 2];
      if (op.getPads() && autoPad == "NOTSET") {
        pads[i] = (*op.getPads())[i];
        pads[i + spatial] = (*op.getPads())[i + spatial];
      } else if (autoPad == "SAME_UPPER") {
        pads[i] = total / 2;
        pads[i + spatial] = total - total / 2;
      } else if (autoPad == "SAME_LOWER") {
        pads[i] = total - total / 2;
        pads[i + spatial] = total / 2;
      } else {
        // output_shape given: ONNX splits the total padding with the larger
        // half at the start (floor division, as its reference does).
        int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pads[i] = total - half;
        pads[i + spatial] = half;
      }
      // A negative end pad means output positions no input reaches: they are
      // the kernel's output padding (y's size already includes them).
      pads[i + spatial] = std::max<int64_t>(pads[i + spatial], 0);
    }
    Value bias = isAbsent(adaptor.getB()) ? Value() : adaptor.getB();
    culib::ConvBwdDataOp::create(
        rewriter, op.getLoc(), adaptor.getX(), adaptor.getW(), bias, out,
        rewriter.getDenseI64ArrayAttr(pads),
        rewriter.getDenseI64ArrayAttr(strides),
        rewriter.getDenseI64ArrayAttr(dilations),
        rewriter.getI64IntegerAttr(op.getGroup().value_or(1)),
        TypeAttr::get(computeTypeFor(elementOf(op.getY()), op)));
  }
};

/// The terms of an Einsum equation without ellipses or repeated letters in
/// one operand ("bij,bjk->bik"); the output is spelled out (implicit output:
/// the letters used once, sorted). Nullopt for what the lowering does not
/// cover.
std::optional<SmallVector<std::string>> parseEinsum(StringRef equation,
                                                    size_t numInputs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq += c;
  if (StringRef(eq).contains("..."))
    return std::nullopt;
  StringRef lhs = eq, rhs;
  bool explicitOutput = StringRef(eq).contains("->");
  if (explicitOutput)
    std::tie(lhs, rhs) = StringRef(eq).split("->");
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  if (inputs.size() != numInputs || numInputs < 1 || numInputs > 2)
    return std::nullopt;
  SmallVector<std::string> terms;
  std::map<char, int> uses;
  for (StringRef term : inputs) {
    std::set<char> seen;
    for (char c : term) {
      if (!std::isalpha(static_cast<unsigned char>(c)) ||
          !seen.insert(c).second)
        return std::nullopt;
      ++uses[c];
    }
    terms.push_back(term.str());
  }
  std::string out;
  if (explicitOutput) {
    std::set<char> seen;
    for (char c : rhs)
      if (!uses.count(c) || !seen.insert(c).second)
        return std::nullopt;
    out = rhs.str();
  } else {
    for (auto [c, n] : uses)
      if (n == 1)
        out += c;
  }
  terms.push_back(out);
  return terms;
}

/// Einsum of one or two operands as reductions, transposes and one batched
/// matmul: [batch, left, contracted] x [batch, contracted, right].
struct EinsumLowering : OpConversionPattern<EinsumOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EinsumOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<std::string> terms =
        *parseEinsum(op.getEquation(), op.getInputs().size());
    std::string out = terms.back();
    Type element = elementOf(op.getOutput());
    std::map<char, int64_t> size;
    for (auto [term, input] : llvm::zip(terms, op.getInputs()))
      for (auto [i, c] : llvm::enumerate(term))
        size[c] = shapeOf(input)[i];

    // Letters an operand has that nothing else needs are summed first.
    SmallVector<Value> values(adaptor.getInputs().begin(),
                              adaptor.getInputs().end());
    SmallVector<std::string> names(terms.begin(), terms.end() - 1);
    for (size_t k = 0; k < values.size(); ++k) {
      std::string kept;
      SmallVector<int64_t> axes;
      for (auto [i, c] : llvm::enumerate(names[k])) {
        bool needed = out.find(c) != std::string::npos;
        for (size_t other = 0; other < names.size(); ++other)
          needed |= other != k && names[other].find(c) != std::string::npos;
        if (needed)
          kept += c;
        else
          axes.push_back(i);
      }
      if (axes.empty())
        continue;
      Value reduced = buffer(rewriter, loc, shapeFor(kept, size), element);
      culib::ReduceOp::create(rewriter, loc, values[k], reduced,
                              culib::ReduceFnAttr::get(rewriter.getContext(),
                                                       rt::cpu::ReduceFn::Sum),
                              rewriter.getDenseI64ArrayAttr(axes),
                              TypeAttr::get(computeTypeFor(element, op)),
                              rewriter.getBoolAttr(false));
      values[k] = reduced;
      names[k] = kept;
    }

    Value result;
    std::string resultNames;
    if (values.size() == 1) {
      result = values[0];
      resultNames = names[0];
    } else {
      std::string batch, left, right, contracted;
      for (char c : out) {
        bool inA = names[0].find(c) != std::string::npos;
        bool inB = names[1].find(c) != std::string::npos;
        (inA && inB ? batch : inA ? left : right) += c;
      }
      for (char c : names[0])
        if (out.find(c) == std::string::npos)
          contracted += c;
      auto extent = [&](const std::string &letters) {
        int64_t n = 1;
        for (char c : letters)
          n *= size[c];
        return n;
      };
      int64_t nb = extent(batch), nl = extent(left), nr = extent(right),
              nk = extent(contracted);
      Value a = reshapeBuffer(rewriter, loc,
                              permute(rewriter, loc, values[0], names[0],
                                      batch + left + contracted, size, element),
                              {nb, nl, nk});
      Value b =
          reshapeBuffer(rewriter, loc,
                        permute(rewriter, loc, values[1], names[1],
                                batch + contracted + right, size, element),
                        {nb, nk, nr});
      Value product = buffer(rewriter, loc, {nb, nl, nr}, element);
      culib::MatmulOp::create(
          rewriter, loc, a, b, Value(), Value(), /*aux=*/Value(), product,
          /*bias_grad=*/Value(), rewriter.getBoolAttr(false),
          rewriter.getBoolAttr(false), rewriter.getF32FloatAttr(1.0f),
          rewriter.getF32FloatAttr(0.0f),
          TypeAttr::get(computeTypeFor(element, op)),
          culib::EpilogueAttr::get(rewriter.getContext(),
                                   culib::Epilogue::none));
      resultNames = batch + left + right;
      result =
          reshapeBuffer(rewriter, loc, product, shapeFor(resultNames, size));
    }
    Value permuted =
        permute(rewriter, loc, result, resultNames, out, size, element);
    // The result must be a buffer of its own, not an input (e.g. "ij->ij").
    if (!permuted.getDefiningOp<culib::AllocOp>()) {
      Value copy = allocFor(rewriter, *getTypeConverter(), loc, op.getOutput());
      culib::CopyOp::create(rewriter, loc, permuted, copy);
      permuted = copy;
    }
    rewriter.replaceOp(op, permuted);
    return success();
  }

private:
  static SmallVector<int64_t> shapeFor(StringRef letters,
                                       std::map<char, int64_t> &size) {
    SmallVector<int64_t> shape;
    for (char c : letters)
      shape.push_back(size[c]);
    return shape;
  }
  static Value buffer(ConversionPatternRewriter &rewriter, Location loc,
                      ArrayRef<int64_t> shape, Type element) {
    return culib::AllocOp::create(
        rewriter, loc, MemRefType::get(shape, element), IntegerAttr());
  }
  /// `v` (dims named by `from`) with its dims in the order of `to`.
  static Value permute(ConversionPatternRewriter &rewriter, Location loc,
                       Value v, StringRef from, StringRef to,
                       std::map<char, int64_t> &size, Type element) {
    if (from == to)
      return v;
    SmallVector<int64_t> perm;
    for (char c : to)
      perm.push_back(from.find(c));
    Value out = buffer(rewriter, loc, shapeFor(to, size), element);
    culib::TransposeOp::create(rewriter, loc, v, out,
                               rewriter.getDenseI64ArrayAttr(perm));
    return out;
  }
};

} // namespace

void mp::populateLibraryCallPatterns(const TypeConverter &tc,
                                     RewritePatternSet &patterns,
                                     LowerableOps &lowerable) {
  addLowering<ConvLowering, ConvOp>(tc, patterns, lowerable);
  addLowering<ConvTransposeLowering, ConvTransposeOp>(tc, patterns, lowerable);
  addLowering<GemmLowering, GemmOp>(tc, patterns, lowerable);
  addRule<GemmOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto gemm = cast<GemmOp>(op);
    float beta = gemm.getBeta() ? gemm.getBeta()->convertToFloat() : 1.0f;
    if (!isAbsent(gemm.getC()) && beta != 0.0f) {
      auto c = cast<ShapedType>(gemm.getC().getType());
      auto y = cast<ShapedType>(gemm.getY().getType());
      if (c.getElementType() != y.getElementType())
        os << "C of type '" << c << "' does not have the type of Y";
    }
  });
  addLowering<MatMulLowering, MatMulOp>(tc, patterns, lowerable);
  addRule<MatMulOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto matmul = cast<MatMulOp>(op);
    if (cast<ShapedType>(matmul.getA().getType()).getRank() < 2 ||
        cast<ShapedType>(matmul.getB().getType()).getRank() < 2)
      os << "1-D operands are not supported yet";
  });
  addLowering<EinsumLowering, EinsumOp>(tc, patterns, lowerable);
  addRule<EinsumOp>(lowerable, [](Operation *op, raw_ostream &os) {
    auto einsum = cast<EinsumOp>(op);
    if (!parseEinsum(einsum.getEquation(), einsum.getInputs().size()))
      os << "only equations of one or two operands without ellipses or "
            "repeated letters in one operand (diagonals) are supported";
    else if (!isa<FloatType>(elementOf(einsum.getOutput())))
      os << "only floating-point Einsum is supported (cuBLASLt)";
  });
}
