//===- OneDnnEltwise.cpp - kernel.elementwise on oneDNN's eltwise / binary
//-===//
//
// The elementwise functions oneDNN computes the way the reference kernel
// does, on f32 and bf16 (computed in f32, rounded once; f16 through f32
// copies for exp, tanh, sigmoid, gelu and elu only): activations as one
// eltwise primitive (relu, leaky relu, elu, clip with constant bounds, exp,
// sqrt, abs, neg, tanh, sigmoid, gelu, hard swish, pow with a constant
// exponent 2 as square), GELU's gradients as one eltwise backward primitive
// (dy * GELU'(x), erf or tanh form), and add / sub / mul /
// div as one binary primitive, the second operand broadcast where oneDNN
// has a jit kernel for it (whole, one value, per channel). oneDNN's kernels
// use the CPU's vector units and every core; the reference runs on one.
// Everything else (integers, other f16 functions, where, comparisons, a
// broadcast first operand, ...) stays on the reference kernel, and so does
// log: oneDNN 2.6's gives -1.4e-6 for log(1) (ONNX's test_log_example
// catches it).
//
// Where the results may differ from the reference, within what ONNX leaves
// open: oneDNN propagates a NaN through relu (the reference gives 0, as
// max(0, NaN) may), and its exp, tanh, sigmoid and gelu are its own
// vectorised approximations, accurate to a few f32 ulps.
//
//===----------------------------------------------------------------------===//
#include "OneDnn.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/Tensor.h"

namespace mp::rt::cpu::onednn {

namespace {

using dims = dnnl::memory::dims;
using F = ElementwiseFn;

struct EltwiseOf {
  dnnl::algorithm algorithm;
  float alpha = 0, beta = 0;
};

/// The eltwise primitive computing fn(x) with alpha / beta, if one does.
std::optional<EltwiseOf> eltwiseOf(ElementwiseFn fn, double alpha,
                                   double beta) {
  using A = dnnl::algorithm;
  auto a = static_cast<float>(alpha), b = static_cast<float>(beta);
  switch (fn) {
  case F::Relu:
    return EltwiseOf{A::eltwise_relu};
  case F::LeakyRelu:
    return EltwiseOf{A::eltwise_relu, a};
  case F::Elu:
    return EltwiseOf{A::eltwise_elu, a};
  case F::Exp:
    return EltwiseOf{A::eltwise_exp};
  case F::Sqrt:
    return EltwiseOf{A::eltwise_sqrt};
  case F::Abs:
    return EltwiseOf{A::eltwise_abs};
  case F::Neg:
    return EltwiseOf{A::eltwise_linear, -1.f, 0.f};
  case F::Tanh:
    return EltwiseOf{A::eltwise_tanh};
  case F::Sigmoid:
    return EltwiseOf{A::eltwise_logistic};
  case F::Gelu:
    return EltwiseOf{A::eltwise_gelu_erf};
  case F::GeluTanh:
    return EltwiseOf{A::eltwise_gelu_tanh};
  case F::HardSwish:
    // x * clamp(alpha x + beta, 0, 1): ONNX's HardSwish with 1/6 and 1/2.
    return EltwiseOf{A::eltwise_hardswish, 1.f / 6.f, 0.5f};
  case F::Clip: // lo <= hi (checked by the caller)
    return EltwiseOf{A::eltwise_clip_v2, a, b};
  default:
    return std::nullopt;
  }
}

std::optional<dnnl::algorithm> binaryOf(ElementwiseFn fn) {
  switch (fn) {
  case F::Add:
  case F::Sum: // of two values (the callers check the count)
    return dnnl::algorithm::binary_add;
  case F::Sub:
    return dnnl::algorithm::binary_sub;
  case F::Mul:
    return dnnl::algorithm::binary_mul;
  case F::Div:
    return dnnl::algorithm::binary_div;
  default:
    return std::nullopt;
  }
}

/// Whether binaryOf(fn) gives the same for swapped operands.
bool commutes(ElementwiseFn fn) {
  return fn == F::Add || fn == F::Sum || fn == F::Mul;
}

/// The value of a constant one-element bound of clip, as f64.
std::optional<double> constantScalar(const TensorView &t, bool constant) {
  if (!constant || t.numElements() != 1)
    return std::nullopt;
  HostTensor f64(DType::F64, {});
  if (!cast(t, f64.view()))
    return std::nullopt;
  return *f64.as<double>();
}

/// `t`'s dims padded with leading 1s to `rank`, and its row-major strides.
dnnl::memory::desc broadcastDesc(const TensorView &t, size_t rank,
                                 dnnl::memory::data_type type) {
  dims d(rank, 1);
  std::copy(t.shape.begin(), t.shape.end(), d.end() - t.shape.size());
  return plainDesc(d, type);
}

} // namespace

FastCallChoice prepareActivationGradient(ActivationGradient gradient,
                                         const TensorView &dy,
                                         const TensorView &x,
                                         const TensorView &y) {
  if (dy.shape != y.shape || x.shape != y.shape)
    return referenceKernel("a broadcast input");
  if (dy.dtype != y.dtype || x.dtype != y.dtype ||
      (y.dtype != DType::F32 && y.dtype != DType::BF16))
    return referenceKernel("dtypes other than one of f32, bf16");
  if (y.numElements() == 0)
    return referenceKernel("no elements");
  // (ReLU's backward would multiply dy by 0, making an inf dy NaN where
  // the reference gives 0: it stays on the own loops.)
  dnnl::algorithm algorithm;
  if (gradient == ActivationGradient::Gelu)
    algorithm = dnnl::algorithm::eltwise_gelu_erf;
  else if (gradient == ActivationGradient::GeluTanh)
    algorithm = dnnl::algorithm::eltwise_gelu_tanh;
  else
    return referenceKernel("no oneDNN primitive for this gradient");
  dnnl::memory::desc desc =
      plainDesc(dims(y.shape.begin(), y.shape.end()), *computeTypeOf(y.dtype));
  return catchingErrors([&] {
    dnnl::eltwise_forward::primitive_desc hint(
        engine(), dnnl::prop_kind::forward_training, algorithm, desc, desc);
    dnnl::primitive_attr attr = userScratchpad();
    dnnl::eltwise_backward::primitive_desc pd(engine(), algorithm, desc, desc,
                                              desc, 0.f, 0.f, hint, attr);
    return PrimitiveCall::prepare(pd, dnnl::eltwise_backward(pd),
                                  {{DNNL_ARG_DIFF_DST, desc, dy},
                                   {DNNL_ARG_SRC, desc, x},
                                   {DNNL_ARG_DIFF_SRC, desc, y}});
  });
}

FastCallChoice prepareElementwise(const PlanCall &call,
                                  const std::vector<TensorView> &operands,
                                  const std::vector<TensorView> &results,
                                  const std::vector<bool> &constant,
                                  const FilterSource *) {
  Result<ElementwiseCall> parsed = elementwiseCallOf(call);
  if (!parsed || results.size() != 1 || operands.empty())
    return referenceKernel("the reference kernel reports the call's error");
  const ElementwiseFn fn = parsed->fn;
  const std::string name(elementwiseFnName(fn));
  const TensorView &y = results[0];
  // f16 through f32 copies pays two extra passes: worth it for the
  // functions the reference computes with scalar libm calls.
  const bool transcendental = fn == F::Exp || fn == F::Tanh ||
                              fn == F::Sigmoid || fn == F::Gelu ||
                              fn == F::GeluTanh || fn == F::Elu;
  if (widenedOnThisThread(y.dtype) && !(transcendental && operands.size() == 1))
    return referenceKernel(
        std::string(dtypeName(y.dtype)) + " " + name +
        " (the reference converts it with F16C in one pass)");
  if (y.dtype != DType::F32 && y.dtype != DType::BF16 && y.dtype != DType::F16)
    return referenceKernel(std::string(dtypeName(y.dtype)) +
                           " (oneDNN's elementwise: f32, bf16)");
  auto isConstant = [&](size_t k) {
    return constant.size() > k && constant[k];
  };
  // pow(x, 2) with a constant exponent (the variance of a decomposed layer
  // norm): oneDNN's square, x * x rounded once as the reference's pow.
  const bool square = fn == F::Pow && operands.size() == 2 &&
                      constantScalar(operands[1], isConstant(1)) == 2.0;
  if (fn == F::Pow && !square)
    return referenceKernel("pow with an exponent other than a constant 2");
  for (size_t k = 0; k < operands.size(); ++k)
    if (operands[k].dtype != y.dtype && !(square && k == 1))
      return referenceKernel("mixed dtypes");
  if (y.numElements() == 0)
    return referenceKernel("no elements");
  auto [alpha, beta] = resolveAlphaBeta(fn, parsed->params);
  dnnl::memory::data_type type = *computeTypeOf(y.dtype);
  dnnl::memory::desc yDesc =
      plainDesc(dims(y.shape.begin(), y.shape.end()), type);

  // clip(x, lo, hi) with constant one-element bounds: an eltwise clip.
  if (fn == F::Clip && operands.size() == 3) {
    std::optional<double> lo = constantScalar(operands[1], isConstant(1)),
                          hi = constantScalar(operands[2], isConstant(2));
    if (!lo || !hi)
      return referenceKernel("clip bounds that are not constant scalars");
    alpha = *lo;
    beta = *hi;
  }
  if (operands.size() == 1 || fn == F::Clip || square) {
    std::optional<EltwiseOf> e =
        square ? EltwiseOf{dnnl::algorithm::eltwise_square}
               : eltwiseOf(fn, alpha, beta);
    if (!e)
      return referenceKernel("no oneDNN eltwise for " + name);
    if (fn == F::Clip && !(alpha <= beta))
      return referenceKernel("clip with min > max");
    const TensorView &x = operands[0];
    if (x.shape != y.shape)
      return referenceKernel("a broadcast input");
    return catchingErrors([&] {
      dnnl::primitive_attr attr = userScratchpad();
      dnnl::eltwise_forward::primitive_desc pd(
          engine(), dnnl::prop_kind::forward_inference, e->algorithm, yDesc,
          yDesc, e->alpha, e->beta, attr);
      return PrimitiveCall::prepare(
          pd, dnnl::eltwise_forward(pd),
          {{DNNL_ARG_SRC, yDesc, x}, {DNNL_ARG_DST, yDesc, y}});
    });
  }

  // GELU's gradients: oneDNN's eltwise backward.
  if (fn == F::GeluGrad || fn == F::GeluTanhGrad)
    return prepareActivationGradient(fn == F::GeluGrad
                                         ? ActivationGradient::Gelu
                                         : ActivationGradient::GeluTanh,
                                     operands[0], operands[1], y);

  std::optional<dnnl::algorithm> algorithm = binaryOf(fn);
  if (!algorithm || operands.size() != 2)
    return referenceKernel("no oneDNN binary for " + name);
  // oneDNN broadcasts the second operand only: a broadcast first operand of
  // a commutative function swaps.
  const TensorView *a = &operands[0], *b = &operands[1];
  if (a->shape != y.shape && b->shape == y.shape && commutes(fn))
    std::swap(a, b);
  if (a->shape != y.shape)
    return referenceKernel("a broadcast first operand");
  if (b->data == y.data && a->data != y.data)
    return referenceKernel("y in place of the second operand");
  return catchingErrors([&] {
    dnnl::memory::desc bDesc = broadcastDesc(*b, y.shape.size(), type);
    dnnl::primitive_attr attr = userScratchpad();
    dnnl::binary::primitive_desc pd(engine(), *algorithm, yDesc, bDesc, yDesc,
                                    attr);
    return PrimitiveCall::prepare(pd, dnnl::binary(pd),
                                  {{DNNL_ARG_SRC_0, yDesc, *a},
                                   {DNNL_ARG_SRC_1, bDesc, *b},
                                   {DNNL_ARG_DST, yDesc, y}});
  });
}

FastCallChoice prepareFusedChain(const FusedProgram &program,
                                 const std::vector<TensorView> &operands,
                                 const TensorView &y) {
  auto isChainType = [](DType t) {
    return t == DType::F32 || (is16BitFloat(t) && narrowIsNative(t));
  };
  if (!isChainType(y.dtype))
    return referenceKernel(std::string(dtypeName(y.dtype)) +
                           " (oneDNN's binary: f32, bf16)");
  for (const TensorView &t : operands)
    if (!isChainType(t.dtype))
      return referenceKernel("an input of " + std::string(dtypeName(t.dtype)));
  if (y.numElements() == 0)
    return referenceKernel("no elements");
  const size_t rank = y.shape.size();
  auto typeOf = [](DType t) { return *computeTypeOf(t); };
  // Where every broadcast input is a scalar or one row of y's last dim (a
  // per-channel scale or shift of a channels-last activation: [C] against
  // [N, H, W, C]), the call sees y as [rows, C]: oneDNN has jit code for a
  // broadcast along dim 1 but only its reference code along the last dim of
  // a 4-D tensor (DenseNet-121's 62 batch norms before ReLUs).
  const int64_t lastDim = y.shape.empty() ? 0 : y.shape.back();
  auto isRow = [&](const TensorView &t) {
    return t.shape != y.shape && !t.shape.empty() &&
           t.shape.back() == lastDim && t.numElements() == lastDim;
  };
  const bool asRows =
      rank > 2 && lastDim > 1 &&
      std::any_of(operands.begin(), operands.end(), isRow) &&
      std::all_of(operands.begin(), operands.end(), [&](const TensorView &t) {
        return t.shape == y.shape || t.numElements() == 1 || isRow(t);
      });
  auto descOf = [&](const TensorView &t) {
    if (!asRows)
      return broadcastDesc(t, rank, typeOf(t.dtype));
    const int64_t rows = t.shape == y.shape ? y.numElements() / lastDim : 1;
    const int64_t columns = t.numElements() == 1 ? 1 : lastDim;
    return plainDesc({rows, columns}, typeOf(t.dtype));
  };
  return catchingErrors([&]() -> FastCallChoice {
    dnnl::post_ops ops;
    std::vector<Binding> bindings;
    auto eltwise = [&](const FusedStep &step) {
      if (step.fn == F::Identity)
        return true;
      auto [alpha, beta] =
          resolveAlphaBeta(step.fn, ElementwiseParams{step.alpha, step.beta});
      std::optional<EltwiseOf> e = eltwiseOf(step.fn, alpha, beta);
      if (!e || (step.fn == F::Clip && !(alpha <= beta)))
        return false;
      ops.append_eltwise(e->algorithm, e->alpha, e->beta);
      return true;
    };
    // The base: a binary of two inputs, or max(x, x) = x before a unary
    // first step.
    const FusedStep &first = program.steps[0];
    const TensorView *src0 = &operands[first.args[0].index], *src1 = src0;
    dnnl::algorithm base = dnnl::algorithm::binary_max;
    if (first.args.size() == 2) {
      std::optional<dnnl::algorithm> algorithm = binaryOf(first.fn);
      if (!algorithm)
        return referenceKernel("no oneDNN binary for " +
                               std::string(elementwiseFnName(first.fn)));
      base = *algorithm;
      src1 = &operands[first.args[1].index];
      if (src0->shape != y.shape && src1->shape == y.shape &&
          commutes(first.fn))
        std::swap(src0, src1);
    } else if (first.args.size() != 1 || !eltwise(first)) {
      return referenceKernel("no oneDNN eltwise for " +
                             std::string(elementwiseFnName(first.fn)));
    }
    if (src0->shape != y.shape)
      return referenceKernel("a broadcast first operand");
    // Each later step reads the one before (and at most one input): a
    // post-op on the running value.
    for (size_t s = 1; s < program.steps.size(); ++s) {
      const FusedStep &step = program.steps[s];
      const std::string name(elementwiseFnName(step.fn));
      const FusedOperand previous{true, static_cast<uint32_t>(s - 1)};
      if (step.args.size() == 1 && step.args[0] == previous) {
        if (!eltwise(step))
          return referenceKernel("no oneDNN eltwise for " + name);
        continue;
      }
      // fn(t, x), or fn(x, t) where that is fn(t, x) or -fn(t, x).
      std::optional<dnnl::algorithm> algorithm = binaryOf(step.fn);
      const bool afterPrevious = step.args.size() == 2 &&
                                 step.args[0] == previous &&
                                 !step.args[1].isStep;
      const bool beforePrevious = step.args.size() == 2 &&
                                  step.args[1] == previous &&
                                  !step.args[0].isStep;
      if (!algorithm || !(afterPrevious || beforePrevious))
        return referenceKernel("not a chain of oneDNN functions at step " +
                               std::to_string(s) + " (" + name + ")");
      if (beforePrevious && !commutes(step.fn) && step.fn != F::Sub)
        return referenceKernel("an input divided by the step before");
      const TensorView &input =
          operands[step.args[afterPrevious ? 1 : 0].index];
      dnnl::memory::desc desc = descOf(input);
      bindings.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) |
                                DNNL_ARG_SRC_1,
                            desc, input);
      ops.append_binary(*algorithm, desc);
      // x - t = -(t - x), exactly.
      if (beforePrevious && step.fn == F::Sub)
        ops.append_eltwise(dnnl::algorithm::eltwise_linear, -1.f, 0.f);
    }
    dnnl::primitive_attr attr = userScratchpad();
    attr.set_post_ops(ops);
    dnnl::memory::desc src0Desc = descOf(*src0), src1Desc = descOf(*src1),
                       yDesc = descOf(y);
    dnnl::binary::primitive_desc pd(engine(), base, src0Desc, src1Desc, yDesc,
                                    attr);
    bindings.emplace_back(DNNL_ARG_SRC_0, src0Desc, *src0);
    bindings.emplace_back(DNNL_ARG_SRC_1, src1Desc, *src1);
    bindings.emplace_back(DNNL_ARG_DST, yDesc, y);
    return PrimitiveCall::prepare(pd, dnnl::binary(pd), bindings);
  });
}

} // namespace mp::rt::cpu::onednn
