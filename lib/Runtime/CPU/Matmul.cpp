//===- Matmul.cpp - cuBLASLt-like matmul on the CPU -----------------------===//
//
// D = epilogue(alpha * op(A) @ op(B) + beta * C + bias), batched with numpy
// broadcasting. 16-bit A/B are widened to f32 once, the products run in
// cblas_sgemm (f32 accumulation) into an f32 result that is rounded once to
// D's type after C, bias and the epilogue; f64 runs in cblas_dgemm.
//
//===----------------------------------------------------------------------===//
#include "KernelUtil.h"

#include <cmath>
#include <optional>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "matmul";

/// Everything matmul derives from its arguments.
struct Plan {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0;
  Shape batch;                  // D's batch dimensions
  std::vector<int64_t> aOff, bOff; // element offset of each batch's matrix
  bool aBatched = false;          // A has batch entries beyond one matrix
  bool bBatched = false;
};

/// Copies src (shape srcShape, broadcastable to dst) into dst, converted.
template <typename Acc, typename S>
void broadcastCopy(const S *src, const Shape &srcShape, const Shape &dstShape,
                   Acc *dst) {
  size_t r = dstShape.size();
  if (r == 0) {
    dst[0] = static_cast<Acc>(load(src[0]));
    return;
  }
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    if (i < r - srcShape.size())
      continue;
    int64_t d = srcShape[i - (r - srcShape.size())];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  int64_t inner = dstShape[r - 1], innerStride = stride[r - 1];
  int64_t rows = inner ? numElements(dstShape) / inner : 0;
  std::vector<int64_t> idx(r, 0);
  int64_t cur = 0;
  for (int64_t row = 0; row < rows; ++row) {
    Acc *out = dst + row * inner;
    if (innerStride == 0) {
      Acc v = static_cast<Acc>(load(src[cur]));
      for (int64_t j = 0; j < inner; ++j)
        out[j] = v;
    } else {
      for (int64_t j = 0; j < inner; ++j)
        out[j] = static_cast<Acc>(load(src[cur + j]));
    }
    for (size_t i = r - 1; i-- > 0;) {
      ++idx[i];
      cur += stride[i];
      if (idx[i] < dstShape[i])
        break;
      cur -= stride[i] * idx[i];
      idx[i] = 0;
    }
  }
}

/// The products into `out` (D's element count, row-major), which holds the
/// broadcast C when `withC`.
template <typename Acc>
void multiply(const Plan &p, const Acc *a, const Acc *b, Acc *out,
              const MatmulOptions &o, bool withC, bool transA, bool transB) {
  int64_t nb = numElements(p.batch);
  Acc beta = withC ? static_cast<Acc>(o.beta) : Acc(0);
  Acc alpha = static_cast<Acc>(o.alpha);
  auto gemm = [&](int64_t m, const Acc *pa, const Acc *pb, Acc *pc) {
    if constexpr (std::is_same_v<Acc, float>)
      sgemm(transA, transB, m, p.n, p.k, alpha, pa, p.lda, pb, p.ldb, beta, pc,
            p.n);
    else
      dgemm(transA, transB, m, p.n, p.k, alpha, pa, p.lda, pb, p.ldb, beta, pc,
            p.n);
  };
  if (p.k == 0) { // no products: alpha * 0 + beta * C
    int64_t total = nb * p.m * p.n;
    for (int64_t i = 0; i < total; ++i)
      out[i] = withC ? beta * out[i] : Acc(0);
    return;
  }
  // One B for every batch entry and rows of A one after the other: a single
  // GEMM with the batch folded into M.
  if (!p.bBatched && !transA) {
    gemm(nb * p.m, a, b, out);
    return;
  }
  for (int64_t t = 0; t < nb; ++t)
    gemm(p.m, a + p.aOff[static_cast<size_t>(t)],
         b + p.bOff[static_cast<size_t>(t)], out + t * p.m * p.n);
}

/// An input operand in the compute type: the tensor itself or a widened
/// copy in scratch slot `slot`.
template <typename Acc>
const Acc *asCompute(const TensorView &v, int slot,
                     std::optional<Scratch> &copy) {
  if constexpr (std::is_same_v<Acc, double>) {
    return v.as<const double>();
  } else {
    if (v.dtype == DType::F32)
      return v.as<const float>();
    copy.emplace(slot, v.numElements());
    toF32(v.dtype, v.data, copy->get(), v.numElements());
    return copy->get();
  }
}

template <typename Acc>
void run(const Plan &p, const TensorView &a, const TensorView &b,
         const TensorView *c, const TensorView *bias, const TensorView &d,
         const MatmulOptions &o, const TensorView *aux) {
  constexpr DType accType =
      std::is_same_v<Acc, float> ? DType::F32 : DType::F64;
  std::optional<Scratch> aCopy, bCopy, outCopy;
  const Acc *pa = asCompute<Acc>(a, 0, aCopy);
  const Acc *pb = asCompute<Acc>(b, 1, bCopy);
  int64_t total = d.numElements();
  bool direct = d.dtype == accType;
  Acc *out = nullptr;
  if constexpr (std::is_same_v<Acc, float>) {
    if (!direct)
      out = outCopy.emplace(2, total).get();
  }
  if (direct)
    out = d.as<Acc>();

  bool withC = c && o.beta != 0.0;
  if (withC && !(direct && c->data == d.data)) {
    if constexpr (std::is_same_v<Acc, double>)
      broadcastCopy(c->as<const double>(), c->shape, d.shape, out);
    else
      withFloat16or32(c->dtype, [&](auto tag) {
        using S = decltype(tag);
        broadcastCopy(c->as<const S>(), c->shape, d.shape, out);
      });
  }
  multiply<Acc>(p, pa, pb, out, o, withC, o.transA, o.transB);

  // Epilogue, one row of N at a time, and the single rounding to D's type.
  std::vector<Acc> biasRow;
  if (bias) {
    biasRow.resize(static_cast<size_t>(p.n));
    if (bias->dtype == accType)
      std::memcpy(biasRow.data(), bias->data, biasRow.size() * sizeof(Acc));
    else if constexpr (std::is_same_v<Acc, double>) {
      for (int64_t j = 0; j < p.n; ++j)
        biasRow[static_cast<size_t>(j)] = bias->as<const float>()[j];
    } else
      toF32(bias->dtype, bias->data, biasRow.data(), p.n);
  }
  if (!bias && o.epilogue == Activation::None && !aux && direct)
    return;
  int64_t rows = p.n ? total / p.n : 0;
  std::vector<Acc> auxRow(aux ? static_cast<size_t>(p.n) : 0);
  for (int64_t r = 0; r < rows; ++r) {
    Acc *row = out + r * p.n;
    if (bias)
      for (int64_t j = 0; j < p.n; ++j)
        row[j] += biasRow[static_cast<size_t>(j)];
    if (aux) {
      // The activation's derivative at its forward input, in the compute
      // type, before the one rounding.
      const char *auxBytes =
          static_cast<const char *>(aux->data) + r * p.n * byteSize(aux->dtype);
      if constexpr (std::is_same_v<Acc, double>)
        std::memcpy(auxRow.data(), auxBytes, auxRow.size() * sizeof(double));
      else
        toF32(aux->dtype, auxBytes, auxRow.data(), p.n);
      activationGradient(o.epilogueGradient, row, auxRow.data(), p.n);
    }
    if constexpr (std::is_same_v<Acc, float>) {
      activate(o.epilogue, row, p.n);
      if (!direct)
        fromF32(row, d.dtype,
                static_cast<char *>(d.data) + r * p.n * byteSize(d.dtype),
                p.n);
    } else {
      activate(o.epilogue, row, p.n);
    }
  }
}

} // namespace

Status checkMatmul(const TensorView &a, const TensorView &b,
                   const TensorView *c, const TensorView *bias,
                   const TensorView &d, const MatmulOptions &o,
                   MatmulShape &shape, const TensorView *aux) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"A", &a},
                         {"B", &b},
                         {"D", &d},
                         {"C", c},
                         {"bias", bias},
                         {"aux", aux}})
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;

  // Dtypes.
  bool f64 = a.dtype == DType::F64;
  if (!(isF32or16(a.dtype) || f64))
    return fail(kOp, "A has dtype " + std::string(dtypeName(a.dtype)) +
                         "; expected f32, f16, bf16 or f64");
  if (b.dtype != a.dtype)
    return fail(kOp, "A and B have different dtypes (" +
                         std::string(dtypeName(a.dtype)) + " and " +
                         std::string(dtypeName(b.dtype)) + ")");
  if (f64 ? d.dtype != DType::F64 : !isF32or16(d.dtype))
    return fail(kOp, "D has dtype " + std::string(dtypeName(d.dtype)) +
                         (f64 ? "; f64 A/B need an f64 D"
                              : "; expected f32, f16 or bf16"));
  if (c && c->dtype != d.dtype)
    return fail(kOp, "C has dtype " + std::string(dtypeName(c->dtype)) +
                         ", D " + std::string(dtypeName(d.dtype)) +
                         "; they must match");
  // The bias is added in f32: any float dtype of 16 or 32 bits (a 16-bit
  // product widened to f32 keeps its 16-bit bias).
  if (bias && bias->dtype != d.dtype &&
      !(isF32or16(bias->dtype) && isF32or16(d.dtype)))
    return fail(kOp, "bias has dtype " + std::string(dtypeName(bias->dtype)) +
                         "; expected D's dtype (" +
                         std::string(dtypeName(d.dtype)) +
                         "), f32, f16 or bf16");

  // Shapes.
  size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra == 0 || rb == 0)
    return fail(kOp, "A and B need rank >= 1, got A " + shapeStr(a.shape) +
                         " and B " + shapeStr(b.shape));
  if ((o.transA && ra < 2) || (o.transB && rb < 2))
    return fail(kOp, std::string(o.transA && ra < 2 ? "transA" : "transB") +
                         " needs an operand of rank >= 2");
  MatmulShape &p = shape;
  int64_t kb;
  if (ra == 1) {
    p.m = 1;
    p.k = a.shape[0];
  } else {
    int64_t r0 = a.shape[ra - 2], r1 = a.shape[ra - 1];
    p.m = o.transA ? r1 : r0;
    p.k = o.transA ? r0 : r1;
  }
  if (rb == 1) {
    kb = b.shape[0];
    p.n = 1;
  } else {
    int64_t r0 = b.shape[rb - 2], r1 = b.shape[rb - 1];
    kb = o.transB ? r1 : r0;
    p.n = o.transB ? r0 : r1;
  }
  if (p.k != kb)
    return fail(kOp, "inner dimensions differ: op(A) of " + shapeStr(a.shape) +
                         " has K=" + std::to_string(p.k) + ", op(B) of " +
                         shapeStr(b.shape) + " has K=" + std::to_string(kb));
  p.batchA.assign(a.shape.begin(), a.shape.end() - (ra >= 2 ? 2 : 1));
  p.batchB.assign(b.shape.begin(), b.shape.end() - (rb >= 2 ? 2 : 1));
  if (!broadcastShapes(p.batchA, p.batchB, p.batch))
    return fail(kOp, "batch dimensions of A " + shapeStr(a.shape) + " and B " +
                         shapeStr(b.shape) + " do not broadcast");
  Shape expected = p.batch;
  if (ra >= 2)
    expected.push_back(p.m);
  if (rb >= 2)
    expected.push_back(p.n);
  if (d.shape != expected)
    return fail(kOp, "D has shape " + shapeStr(d.shape) + ", expected " +
                         shapeStr(expected) + " for A " + shapeStr(a.shape) +
                         " and B " + shapeStr(b.shape));
  if (c) {
    bool ok = c->shape.size() <= d.shape.size();
    for (size_t i = 0; ok && i < c->shape.size(); ++i) {
      int64_t cd = c->shape[i];
      int64_t dd = d.shape[i + d.shape.size() - c->shape.size()];
      ok = cd == 1 || cd == dd;
    }
    if (!ok)
      return fail(kOp, "C of shape " + shapeStr(c->shape) +
                           " does not broadcast to D's shape " +
                           shapeStr(d.shape));
    if (overlaps(c->data, c->byteCount(), d.data, d.byteCount()) &&
        !(c->data == d.data && c->shape == d.shape))
      return fail(kOp, "C overlaps D without being D itself");
  }
  if (bias && !(bias->shape.size() == 1 && bias->shape[0] == p.n))
    return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                         ", expected [" + std::to_string(p.n) + "]");
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"A", &a},
                         {"B", &b}, {"bias", bias}})
    if (v && overlaps(v->data, v->byteCount(), d.data, d.byteCount()))
      return fail(kOp, std::string(name) + " overlaps D");
  if (!std::isfinite(o.alpha) || !std::isfinite(o.beta))
    return fail(kOp, "alpha and beta must be finite");
  // An activation gradient's forward input.
  const bool gradient = o.epilogueGradient != ActivationGradient::None;
  if (gradient != (aux != nullptr))
    return fail(kOp, gradient
                         ? "an activation-gradient epilogue needs aux"
                         : "aux goes with an activation-gradient epilogue");
  if (aux) {
    if (bias || o.epilogue != Activation::None)
      return fail(kOp, "an activation-gradient epilogue takes no bias and no "
                       "other epilogue");
    if (aux->shape != d.shape)
      return fail(kOp, "aux has shape " + shapeStr(aux->shape) +
                           ", expected D's " + shapeStr(d.shape));
    if (f64 ? aux->dtype != DType::F64 : !isF32or16(aux->dtype))
      return fail(kOp, "aux has dtype " + std::string(dtypeName(aux->dtype)) +
                           (f64 ? "; f64 D needs an f64 aux"
                                : "; expected f32, f16 or bf16"));
    if (overlaps(aux->data, aux->byteCount(), d.data, d.byteCount()))
      return fail(kOp, "aux overlaps D");
  }
  return Status::ok();
}

Status matmul(const TensorView &a, const TensorView &b, const TensorView *c,
              const TensorView *bias, const TensorView &d,
              const MatmulOptions &o, const TensorView *aux) {
  MatmulShape shape;
  if (Status s = checkMatmul(a, b, c, bias, d, o, shape, aux); !s)
    return s;
  bool f64 = a.dtype == DType::F64;
  size_t ra = a.shape.size(), rb = b.shape.size();
  const Shape &batchA = shape.batchA, &batchB = shape.batchB;
  Plan p;
  p.m = shape.m;
  p.n = shape.n;
  p.k = shape.k;
  p.lda = ra == 1 ? p.k : a.shape[ra - 1];
  p.ldb = rb == 1 ? 1 : b.shape[rb - 1];
  p.batch = shape.batch;

  int64_t nb = numElements(p.batch);
  if (d.numElements() == 0)
    return Status::ok();
  p.aBatched = numElements(batchA) > 1;
  p.bBatched = numElements(batchB) > 1;
  bool folded = !p.bBatched && !o.transA;
  if (!fitsBlasInt({folded ? nb * p.m : p.m, p.n, p.k, p.lda, p.ldb}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  if (!folded) {
    p.aOff = batchOffsets(batchA, p.batch, a.shape.size() >= 2
                                               ? a.shape[ra - 2] * a.shape[ra - 1]
                                               : a.shape[0]);
    p.bOff = batchOffsets(batchB, p.batch, rb >= 2
                                               ? b.shape[rb - 2] * b.shape[rb - 1]
                                               : b.shape[0]);
  }
  if (f64)
    run<double>(p, a, b, c, bias, d, o, aux);
  else
    run<float>(p, a, b, c, bias, d, o, aux);
  return Status::ok();
}

Result<BiasGradientReduction> biasGradientReduction(const TensorView &operand,
                                                    bool kIsRows,
                                                    const TensorView &grad) {
  constexpr std::string_view kOp = "matmul bias_grad";
  if (operand.shape.size() != 2)
    return fail(kOp, "the summed operand must have rank 2, got " +
                         shapeStr(operand.shape));
  const int64_t n = operand.shape[kIsRows ? 1 : 0];
  if (grad.numElements() != n || grad.shape.empty() || grad.shape.back() != n)
    return fail(kOp, "bias_grad " + shapeStr(grad.shape) + " must hold the " +
                         std::to_string(n) + " sums over K");
  // The sums in the operand's layout, its K dim reduced.
  BiasGradientReduction r;
  r.sumsShape = kIsRows ? Shape{1, n} : Shape{n, 1};
  r.axis = kIsRows ? 0 : 1;
  r.options.computeType = operand.dtype == DType::F64 ? DType::F64 : DType::F32;
  return r;
}

Status matmulBiasGradient(const TensorView &operand, bool kIsRows,
                          const TensorView &grad) {
  Result<BiasGradientReduction> r =
      biasGradientReduction(operand, kIsRows, grad);
  if (!r)
    return r.status();
  TensorView sums = grad;
  sums.shape = r->sumsShape;
  return reduce(operand, sums, ReduceFn::Sum, {r->axis}, r->options);
}

} // namespace mp::rt::cpu
