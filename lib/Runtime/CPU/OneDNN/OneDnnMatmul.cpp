//===- OneDnnMatmul.cpp - cublaslt.matmul on oneDNN's matmul --------------===//
//
// D = epilogue(alpha * op(A) op(B) + bias) as one oneDNN matmul: batch dims
// broadcast (numpy rules, ranks aligned with leading 1s), transposes as
// strides, the bias and the epilogue fused (a bias vector, an eltwise
// post-op), alpha as the output scale, a C operand shaped like D with beta
// 1 (a transformer's residual) as a binary add post-op. A constant B (a
// weight) is reordered once into the layout the primitive wants. What it
// leaves to the reference kernel: beta other than 1 or a broadcast C,
// alpha with a bias (oneDNN scales after the bias), 1-D operands, f64, and
// whatever the library has no fast implementation of on this CPU (e.g. f16
// without avx512_core_fp16).
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "../KernelUtil.h"
#include "../Parallel.h"
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"

namespace mp::rt::cpu::onednn {

namespace {

using dims = dnnl::memory::dims;

/// The logical dims [batch..., rows, cols] of `t` with its batch padded to
/// `batchRank` leading dims, and the strides (elements) of its row-major
/// data, with the last two swapped when `transposed`.
void logicalOf(const TensorView &t, size_t batchRank, bool transposed,
               dims &logical, dims &strides) {
  const Shape &s = t.shape;
  size_t rank = s.size();
  dims physicalStrides = rowMajorStrides(s);
  logical.assign(batchRank + 2, 1);
  strides.assign(batchRank + 2, 0);
  size_t pad = batchRank + 2 - rank;
  for (size_t i = 0; i < rank; ++i) {
    logical[pad + i] = s[i];
    strides[pad + i] = physicalStrides[i];
  }
  for (size_t i = 0; i < pad; ++i)
    strides[i] = strides[pad] * logical[pad];
  if (transposed) {
    std::swap(logical[batchRank], logical[batchRank + 1]);
    std::swap(strides[batchRank], strides[batchRank + 1]);
  }
}

/// D = epilogue(alpha * op(A) op(B) + beta * C + bias) as one primitive.
FastCallChoice prepareProduct(const PlanCall &call,
                              const std::vector<TensorView> &operands,
                              const TensorView &d,
                              const std::vector<bool> &constant) {
  Result<bool> hasC = hasBuffer(call, "c");
  Result<bool> hasBias = hasBuffer(call, "bias");
  Result<bool> hasAux = hasBuffer(call, "aux", false);
  Result<MatmulOptions> options = matmulOptionsOf(call);
  if (!hasC || !hasBias || !hasAux || !options ||
      operands.size() != 2 + size_t(*hasC) + size_t(*hasBias) + size_t(*hasAux))
    return referenceKernel("the reference kernel reports the call's error");
  const TensorView &a = operands[0], &b = operands[1];
  const TensorView *c = *hasC ? &operands[2] : nullptr;
  const TensorView *bias = *hasBias ? &operands[2 + size_t(*hasC)] : nullptr;
  const TensorView *aux =
      *hasAux ? &operands[2 + size_t(*hasC) + size_t(*hasBias)] : nullptr;
  MatmulShape shape;
  if (!checkComputeType(call, a.dtype, /*required=*/true) ||
      !checkMatmul(a, b, c, bias, d, *options, shape, aux))
    return referenceKernel("the reference kernel reports the call's error");
  if (c && (options->beta != 1.0 || c->shape != d.shape))
    return referenceKernel("beta * C with beta other than 1 or C broadcast");
  if (a.shape.size() < 2 || b.shape.size() < 2)
    return referenceKernel("a 1-D operand");
  // Where 16-bit kernels are slower than f32 ones (no fast 16-bit dot
  // products), a product runs on f32 copies. f16 kernels that widen inside
  // widen a weight B to f32 on every run: on copies it is widened once, at
  // load, and only A and D are converted per run (the GPT-style decoder's
  // f16 plan 0.43 -> 0.41 ms, the BERT-style encoder's 0.46 -> 0.40); a B
  // that changes gains nothing there. bf16 kernels on Intel CPUs without
  // AMX take up to twice the f32 kernels' time, far more than widening
  // every operand on every run (a training step's B, the bf16 cast of its
  // master weight), so every bf16 product takes the copies.
  const bool constantWeights = constant.size() > 1 && constant[1];
  std::optional<ScopedWidening> widened;
  if (is16BitFloat(a.dtype) && narrowIsNative(a.dtype) &&
      !fastDotProducts(a.dtype) && (constantWeights || a.dtype == DType::BF16))
    widened.emplace();
  std::optional<dnnl::memory::data_type> in = computeTypeOf(a.dtype),
                                         out = computeTypeOf(d.dtype);
  std::optional<dnnl::memory::data_type> biasType =
      bias ? computeTypeOf(bias->dtype) : in;
  std::optional<dnnl::memory::data_type> cType =
      c ? computeTypeOf(c->dtype) : in;
  if (!in || !out || !biasType || !cType)
    return referenceKernel("dtype " + std::string(dtypeName(a.dtype)));

  return catchingErrors([&] {
    size_t batchRank = d.shape.size() - 2;
    // A batch of A rows against one B is one GEMM with the batch folded into
    // the rows (oneDNN would run one GEMM per batch element: ViT's
    // [197, 1, 768] x [768, 2304] projections were 197 matrix-vector
    // products). A and D are row-major, so their rows are contiguous.
    auto batchOf = [](const Shape &s) {
      int64_t n = 1;
      for (size_t i = 0; i + 2 < s.size(); ++i)
        n *= s[i];
      return n;
    };
    if (batchRank > 0 && !options->transA && batchOf(b.shape) == 1 &&
        a.shape.size() == d.shape.size() &&
        batchOf(a.shape) == batchOf(d.shape))
      batchRank = 0;
    dims aDims, aStrides, bDims, bStrides, dDims, dStrides;
    if (batchRank == 0 && d.shape.size() > 2) {
      int64_t rows = d.numElements() / d.shape.back();
      int64_t k = a.shape.back();
      aDims = {rows, k};
      aStrides = {k, 1};
      dDims = {rows, d.shape.back()};
      dStrides = {d.shape.back(), 1};
      TensorView b2 = b;
      b2.shape = {b.shape[b.shape.size() - 2], b.shape.back()};
      logicalOf(b2, 0, options->transB, bDims, bStrides);
    } else {
      logicalOf(a, batchRank, options->transA, aDims, aStrides);
      logicalOf(b, batchRank, options->transB, bDims, bStrides);
      logicalOf(d, batchRank, false, dDims, dStrides);
    }
    dnnl::memory::desc aDesc = dnnl::memory::desc(aDims, *in, aStrides);
    dnnl::memory::desc bUser = dnnl::memory::desc(bDims, *in, bStrides);
    dnnl::memory::desc dDesc = dnnl::memory::desc(dDims, *out, dStrides);
    // A weight may go into whatever layout the primitive likes best.
    dnnl::memory::desc bWanted = constantWeights ? anyLayout(bUser) : bUser;
    dnnl::primitive_attr attr = userScratchpad();
    // alpha scales the product before the bias: oneDNN's scale of the
    // weights (one value), given as memory when the primitive runs.
    std::shared_ptr<const dnnl::memory> alpha;
    if (options->alpha != 1.0) {
      attr.set_scales_mask(DNNL_ARG_WEIGHTS, 0);
      auto scale = std::make_shared<dnnl::memory>(
          plainDesc({1}, dnnl::memory::data_type::f32), engine());
      *static_cast<float *>(scale->get_data_handle()) =
          static_cast<float>(options->alpha);
      alpha = std::move(scale);
    }
    // C (D's shape) added after alpha * A B + bias, before the epilogue.
    dnnl::memory::desc cDesc;
    dnnl::post_ops ops;
    if (c) {
      cDesc = dnnl::memory::desc(dDims, *cType, dStrides);
      ops.append_binary(dnnl::algorithm::binary_add, cDesc);
    }
    appendActivation(ops, options->epilogue);
    attr.set_post_ops(ops);

    dnnl::memory::desc biasDesc;
    if (bias) {
      dims biasDims(dDims.size(), 1);
      biasDims.back() = dDims.back();
      biasDesc = plainDesc(biasDims, *biasType);
    }
    dnnl::matmul::primitive_desc pd =
        bias ? dnnl::matmul::primitive_desc(engine(), aDesc, bWanted, biasDesc,
                                            dDesc, attr)
             : dnnl::matmul::primitive_desc(engine(), aDesc, bWanted, dDesc,
                                            attr);
    size_t biasIndex = 2 + size_t(*hasC);
    std::vector<Binding> buffers = {
        {DNNL_ARG_SRC, aDesc, a},
        {DNNL_ARG_WEIGHTS, bUser, b, constantWeights},
        {DNNL_ARG_DST, dDesc, d}};
    if (bias)
      buffers.push_back({DNNL_ARG_BIAS, biasDesc, *bias,
                         constant.size() > biasIndex && constant[biasIndex]});
    if (c)
      buffers.push_back(
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, cDesc, *c});
    if (alpha)
      buffers.emplace_back(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, alpha);
    return PrimitiveCall::prepare(pd, dnnl::matmul(pd), buffers);
  });
}

/// The matmul's primitive, then the activation gradient's eltwise backward
/// in place (diff_dst = diff_src, src = aux) on the f32 product, rounded
/// once: an f32 D is that product itself; a 16-bit D gets it from an f32
/// buffer of the call's own, with aux widened into another.
class MatmulThenActivationGradient final : public PreparedCall {
public:
  MatmulThenActivationGradient(std::unique_ptr<PreparedCall> matmul,
                               std::unique_ptr<PreparedCall> gradient,
                               std::vector<float> product,
                               std::vector<float> auxF32, const TensorView &aux,
                               const TensorView &d)
      : matmul_(std::move(matmul)), gradient_(std::move(gradient)),
        product_(std::move(product)), auxF32_(std::move(auxF32)), aux_(aux),
        d_(d), name_(matmul_->implementation() + " + " +
                     gradient_->implementation() + " activation gradient") {}
  size_t scratchBytes() const override {
    return std::max(matmul_->scratchBytes(), gradient_->scratchBytes());
  }
  Status run(void *scratch) override {
    if (Status s = matmul_->run(scratch); !s)
      return s;
    if (!auxF32_.empty())
      detail::toF32(aux_.dtype, aux_.data, auxF32_.data(), aux_.numElements());
    if (Status s = gradient_->run(scratch); !s)
      return s;
    if (!product_.empty())
      detail::fromF32(product_.data(), d_.dtype, d_.data, d_.numElements());
    return Status::ok();
  }
  const std::string &implementation() const override { return name_; }

private:
  std::unique_ptr<PreparedCall> matmul_, gradient_;
  std::vector<float> product_, auxF32_;
  TensorView aux_, d_;
  std::string name_;
};

/// ReLU's gradient in place on f32 data: v where aux > 0, else 0, as the
/// reference (oneDNN's backward multiplies by 0, which makes inf and NaN
/// gradients NaN).
class ReluGradientInPlace final : public PreparedCall {
public:
  ReluGradientInPlace(float *v, const float *aux, int64_t n)
      : v_(v), aux_(aux), n_(n) {}
  size_t scratchBytes() const override { return 0; }
  Status run(void *) override {
    detail::parallelRanges(n_, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        v_[i] = aux_[i] > 0.f ? v_[i] : 0.f;
    });
    return Status::ok();
  }
  const std::string &implementation() const override { return name_; }

private:
  float *v_;
  const float *aux_;
  int64_t n_;
  std::string name_ = "own:relu";
};

/// The product and the activation gradient of a matmul with an
/// activation-gradient epilogue (see MatmulThenActivationGradient).
FastCallChoice prepareProductWithGradient(
    const PlanCall &call, const std::vector<TensorView> &operands,
    const TensorView &d, const std::vector<bool> &constant,
    ActivationGradient gradient) {
  const TensorView &aux = operands.back();
  if (aux.dtype != d.dtype)
    return referenceKernel("aux of another dtype than D");
  std::vector<float> product, auxF32;
  TensorView productView = d, auxView = aux;
  if (d.dtype == DType::F16 || d.dtype == DType::BF16) {
    // C would have to be f32 as well: left to the reference.
    Result<bool> hasC = hasBuffer(call, "c");
    if (!hasC || *hasC)
      return referenceKernel("a 16-bit C with an activation gradient");
    product.resize(static_cast<size_t>(d.numElements()));
    auxF32.resize(static_cast<size_t>(aux.numElements()));
    productView.dtype = auxView.dtype = DType::F32;
    productView.data = product.data();
    auxView.data = auxF32.data();
  } else if (d.dtype != DType::F32) {
    return referenceKernel("D of dtype " + std::string(dtypeName(d.dtype)));
  }
  std::vector<TensorView> productOperands(operands);
  productOperands.back() = auxView;
  FastCallChoice matmul =
      prepareProduct(call, productOperands, productView, constant);
  if (!matmul.call)
    return matmul;
  FastCallChoice grad =
      gradient == ActivationGradient::Relu
          ? FastCallChoice{std::make_unique<ReluGradientInPlace>(
                               productView.as<float>(),
                               auxView.as<const float>(), d.numElements()),
                           ""}
          : prepareActivationGradient(gradient, productView, auxView,
                                      productView);
  if (!grad.call)
    return grad;
  return {std::make_unique<MatmulThenActivationGradient>(
              std::move(matmul.call), std::move(grad.call), std::move(product),
              std::move(auxF32), aux, d),
          ""};
}

/// The matmul's primitive, then the sums of op(B) (op(A)) over K into
/// bias_grad (a training step's bias gradient, culib-fuse-bias-gradients):
/// the project's reduction kernel, over the operand the product just read.
class MatmulWithBiasGradient final : public PreparedCall {
public:
  MatmulWithBiasGradient(std::unique_ptr<PreparedCall> matmul,
                         const TensorView &summed, bool kIsRows,
                         const TensorView &grad)
      : matmul_(std::move(matmul)), summed_(summed), grad_(grad),
        kIsRows_(kIsRows),
        name_(matmul_->implementation() + " + bias gradient") {}
  size_t scratchBytes() const override { return matmul_->scratchBytes(); }
  Status run(void *scratch) override {
    if (Status s = matmul_->run(scratch); !s)
      return s;
    return matmulBiasGradient(summed_, kIsRows_, grad_);
  }
  const std::string &implementation() const override { return name_; }

private:
  std::unique_ptr<PreparedCall> matmul_;
  TensorView summed_, grad_;
  bool kIsRows_;
  std::string name_;
};

} // namespace

FastCallChoice prepareMatmul(const PlanCall &call,
                             const std::vector<TensorView> &operands,
                             const std::vector<TensorView> &results,
                             const std::vector<bool> &constant,
                             const FilterSource *) {
  Result<bool> hasBiasGrad = hasBuffer(call, "bias_grad", false);
  Result<bool> ofA = boolAttr(call, "bias_grad_of_a", false);
  Result<MatmulOptions> options = matmulOptionsOf(call);
  if (!hasBiasGrad || !ofA || !options || operands.size() < 2 ||
      results.size() != 1 + size_t(*hasBiasGrad))
    return referenceKernel("the reference kernel reports the call's error");
  // With an activation gradient, aux is the last operand.
  FastCallChoice product =
      options->epilogueGradient == ActivationGradient::None
          ? prepareProduct(call, operands, results[0], constant)
          : prepareProductWithGradient(call, operands, results[0], constant,
                                       options->epilogueGradient);
  if (!*hasBiasGrad || !product.call)
    return product;
  BiasGradientOperand summed = biasGradientOperand(*ofA, *options);
  product.call = std::make_unique<MatmulWithBiasGradient>(
      std::move(product.call), operands[summed.ofA ? 0 : 1], summed.kIsRows,
      results[1]);
  return product;
}

} // namespace mp::rt::cpu::onednn
