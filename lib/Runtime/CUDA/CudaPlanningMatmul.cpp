//===- CudaPlanningMatmul.cpp - planning of cublaslt.matmul ---------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cublaslt.matmul: batch broadcasting,
// strided or pointer-array batches, the epilogue (the CPU's Matmul.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/Calls.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mp::rt::cuda {

using namespace planning;

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

namespace {

/// True when `own` broadcast to `batch` is either one matrix for every
/// entry or the whole batch in order (then one strided batched call does).
bool strideOf(const Shape &own, const Shape &batch, int64_t matrixSize,
              int64_t &stride) {
  int64_t n = numElements(own);
  if (n <= 1) {
    stride = 0;
    return true;
  }
  if (n != numElements(batch))
    return false;
  stride = matrixSize;
  return true;
}

} // namespace

Result<MatmulPlan> planMatmul(const PlanCall &call,
                              const std::vector<TensorDesc> &ops,
                              const std::vector<TensorDesc> &res) {
  MP_TRY(hasC, hasBuffer(call, "c"));
  MP_TRY(hasBias, hasBuffer(call, "bias"));
  size_t nOps = 2 + size_t(hasC) + size_t(hasBias);
  if (Status s = arity(ops, res, nOps, nOps, 1, 1); !s)
    return s;
  MP_TRY(transA, intAttr(call, "trans_a", 0));
  MP_TRY(transB, intAttr(call, "trans_b", 0));
  MP_TRY(alpha, floatAttr(call, "alpha", 1.0));
  MP_TRY(beta, floatAttr(call, "beta", 0.0));
  MP_TRY(epilogueName, stringAttr(call, "epilogue", "none"));
  MatmulPlan p;
  if (epilogueName == "none")
    p.act = kActNone;
  else if (epilogueName == "relu")
    p.act = kActRelu;
  else if (epilogueName == "gelu")
    p.act = kActGelu;
  else
    return Status::error("attribute 'epilogue' has unknown value '" +
                         epilogueName + "' (none, relu, gelu)");
  const TensorDesc &a = ops[0], &b = ops[1], &d = res[0];
  if (Status s = checkComputeType(call, a.dtype, /*required=*/true); !s)
    return s;
  size_t next = 2;
  const TensorDesc *c = hasC ? &ops[next++] : nullptr;
  const TensorDesc *bias = hasBias ? &ops[next++] : nullptr;
  constexpr std::string_view kOp = "matmul";
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"A", &a},
                         {"B", &b},
                         {"D", &d},
                         {"C", c},
                         {"bias", bias}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;
  bool f64 = a.dtype == DType::F64;
  if (!(isF32or16(a.dtype) || f64))
    return fail(kOp, "A has dtype " + dt(a.dtype) +
                         "; expected f32, f16, bf16 or f64");
  if (b.dtype != a.dtype)
    return fail(kOp, "A and B have different dtypes (" + dt(a.dtype) + " and " +
                         dt(b.dtype) + ")");
  if (f64 ? d.dtype != DType::F64 : !isF32or16(d.dtype))
    return fail(kOp, "D has dtype " + dt(d.dtype) +
                         (f64 ? "; f64 A/B need an f64 D"
                              : "; expected f32, f16 or bf16"));
  if (c && c->dtype != d.dtype)
    return fail(kOp, "C has dtype " + dt(c->dtype) + ", D " + dt(d.dtype) +
                         "; they must match");
  if (bias && bias->dtype != d.dtype && bias->dtype != DType::F32)
    return fail(kOp, "bias has dtype " + dt(bias->dtype) +
                         "; expected D's dtype (" + dt(d.dtype) + ") or f32");
  size_t ra = a.shape.size(), rb = b.shape.size();
  if (ra == 0 || rb == 0)
    return fail(kOp, "A and B need rank >= 1, got A " + shapeStr(a.shape) +
                         " and B " + shapeStr(b.shape));
  if ((transA && ra < 2) || (transB && rb < 2))
    return fail(kOp, std::string(transA && ra < 2 ? "transA" : "transB") +
                         " needs an operand of rank >= 2");
  int64_t m, n, k, kb;
  if (ra == 1) {
    m = 1;
    k = a.shape[0];
  } else {
    int64_t r0 = a.shape[ra - 2], r1 = a.shape[ra - 1];
    m = transA ? r1 : r0;
    k = transA ? r0 : r1;
  }
  if (rb == 1) {
    kb = b.shape[0];
    n = 1;
  } else {
    int64_t r0 = b.shape[rb - 2], r1 = b.shape[rb - 1];
    kb = transB ? r1 : r0;
    n = transB ? r0 : r1;
  }
  if (k != kb)
    return fail(kOp, "inner dimensions differ: op(A) of " + shapeStr(a.shape) +
                         " has K=" + std::to_string(k) + ", op(B) of " +
                         shapeStr(b.shape) + " has K=" + std::to_string(kb));
  Shape batchA(a.shape.begin(), a.shape.end() - (ra >= 2 ? 2 : 1));
  Shape batchB(b.shape.begin(), b.shape.end() - (rb >= 2 ? 2 : 1));
  Shape batch;
  if (!broadcastShapes(batchA, batchB, batch))
    return fail(kOp, "batch dimensions of A " + shapeStr(a.shape) + " and B " +
                         shapeStr(b.shape) + " do not broadcast");
  Shape expected = batch;
  if (ra >= 2)
    expected.push_back(m);
  if (rb >= 2)
    expected.push_back(n);
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
    if (overlapping(*c, d) && !(c->addr == d.addr && c->shape == d.shape))
      return fail(kOp, "C overlaps D without being D itself");
  }
  if (bias && !(bias->shape.size() == 1 && bias->shape[0] == n))
    return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                         ", expected [" + std::to_string(n) + "]");
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"A", &a},
                         {"B", &b},
                         {"bias", bias}})
    if (v && overlapping(*v, d))
      return fail(kOp, std::string(name) + " overlaps D");
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return fail(kOp, "alpha and beta must be finite");
  const int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax)
    return fail(kOp, "dimensions exceed cuBLASLt's range");
  if (d.numElements() == 0) {
    p.empty = true;
    return p;
  }
  if (k == 0)
    return fail(kOp, "K = 0 (D = beta * C) is not implemented on the GPU");

  p.abType = a.dtype;
  p.dType = d.dtype;
  p.f64 = f64;
  p.alpha = alpha;
  p.beta = beta;
  p.withC = c && beta != 0.0;
  DType acc = f64 ? DType::F64 : DType::F32;
  // cuBLASLt's GELU epilogue is the tanh approximation; the plan's is
  // exact. A bias of another dtype than D is added in the epilogue kernel
  // too, before the single rounding.
  p.staged = p.act == kActGelu || (bias && bias->dtype != d.dtype) ||
             (f64 && (bias || p.act != kActNone));
  p.fusedBias = bias && !p.staged;
  p.fusedRelu = p.act == kActRelu && !p.staged;
  p.cDirect = p.withC && !p.staged && c->shape == d.shape;
  bool stagedInScratch = p.staged && d.dtype != acc;
  if (stagedInScratch)
    p.stagedBytes = static_cast<uint64_t>(d.numElements()) * byteSize(acc);

  // The cuBLASLt mapping (see LtGemm).
  LtGemm &g = p.gemm;
  int64_t nb = numElements(batch);
  bool aBatched = numElements(batchA) > 1, bBatched = numElements(batchB) > 1;
  bool folded = !bBatched && !transA;
  // cuBLASLt's A = our B: op(B)^T [N, K].
  if (rb == 1) { // B [K]: row-major [K, 1]; column-major view [1, K]
    g.transA = false;
    g.aRows = 1;
    g.aCols = static_cast<uint64_t>(k);
    g.lda = 1;
  } else if (!transB) { // B [K, N]: column-major view [N, K] = B^T
    g.transA = false;
    g.aRows = static_cast<uint64_t>(n);
    g.aCols = static_cast<uint64_t>(k);
    g.lda = n;
  } else { // B [N, K]: column-major view [K, N]; op = T gives [N, K]
    g.transA = true;
    g.aRows = static_cast<uint64_t>(k);
    g.aCols = static_cast<uint64_t>(n);
    g.lda = k;
  }
  // cuBLASLt's B = our A: op(A)^T [K, M].
  int64_t mRows = folded ? nb * m : m;
  if (ra == 1 || !transA) { // A [M, K]: column-major view [K, M] = A^T
    g.transB = false;
    g.bRows = static_cast<uint64_t>(k);
    g.bCols = static_cast<uint64_t>(mRows);
    g.ldb = k;
  } else { // A [K, M]: column-major view [M, K]; op = T gives [K, M]
    g.transB = true;
    g.bRows = static_cast<uint64_t>(m);
    g.bCols = static_cast<uint64_t>(k);
    g.ldb = m;
  }
  if (mRows > kIntMax)
    return fail(kOp, "dimensions exceed cuBLASLt's range");
  g.m = static_cast<uint64_t>(n);
  g.n = static_cast<uint64_t>(mRows);
  g.k = static_cast<uint64_t>(k);
  g.ldd = n;
  int64_t aMat = ra >= 2 ? a.shape[ra - 2] * a.shape[ra - 1] : a.shape[0];
  int64_t bMat = rb >= 2 ? b.shape[rb - 2] * b.shape[rb - 1] : b.shape[0];
  if (!folded && nb > 1) {
    int64_t sa = 0, sb = 0;
    bool oneCall = strideOf(batchA, batch, aMat, sa) &&
                   strideOf(batchB, batch, bMat, sb) && nb <= kIntMax;
    if (oneCall) {
      g.batchCount = static_cast<int32_t>(nb);
      g.strideA = sb; // cuBLASLt's A is our B
      g.strideB = sa;
      g.strideD = m * n;
    } else {
      std::vector<int64_t> ao = batchOffsets(batchA, batch, aMat);
      std::vector<int64_t> bo = batchOffsets(batchB, batch, bMat);
      for (int64_t t = 0; t < nb; ++t)
        p.loop.push_back({bo[static_cast<size_t>(t)],
                          ao[static_cast<size_t>(t)], t * m * n});
    }
  }
  (void)aBatched;
  // Alignment of what cuBLASLt reads (batched loops offset the pointers).
  uint64_t elt = byteSize(a.dtype), dElt = byteSize(p.staged ? acc : d.dtype);
  p.alignA = addressAlignment(b.addr);
  p.alignB = addressAlignment(a.addr);
  p.alignD = stagedInScratch ? 256 : addressAlignment(d.addr);
  p.alignC = p.cDirect ? addressAlignment(c->addr) : p.alignD;
  for (const auto &o : p.loop) {
    p.alignA = std::min(p.alignA, addressAlignment(b.addr + o[0] * elt));
    p.alignB = std::min(p.alignB, addressAlignment(a.addr + o[1] * elt));
    uint32_t dAlign =
        addressAlignment((stagedInScratch ? 0 : d.addr) + o[2] * dElt);
    p.alignD = std::min(p.alignD, dAlign);
    p.alignC = std::min(p.alignC, dAlign);
  }

  p.dElements = static_cast<uint64_t>(d.numElements());
  {
    // Filled in every case: a fused epilogue without a cuBLASLt algorithm
    // falls back to the staged one.
    EpilogueParams &e = p.epilogue;
    e.act = p.act;
    e.accDtype = code(acc);
    e.outDtype = code(d.dtype);
    e.biasDtype = bias ? code(bias->dtype) : 0;
    e.bias = bias ? cptr(*bias) : nullptr;
    e.geom.c = n;
    e.geom.inner = 1;
    e.geom.outer = n ? d.numElements() / n : 0;
    e.out = mptr(d);
    // e.acc: the staged scratch (or D itself), set by the executor.
  }
  if (p.withC && !p.cDirect) {
    // C broadcast (and converted) into the GEMM's target: D or the scratch.
    TensorDesc target{p.staged ? acc : d.dtype, d.shape,
                      stagedInScratch ? 0 : d.addr};
    Result<EwParams> copy = planBroadcastConvert(*c, target);
    if (!copy)
      return fail(kOp, copy.message());
    p.cCopy = *copy;
  }
  return p;
}

} // namespace mp::rt::cuda
