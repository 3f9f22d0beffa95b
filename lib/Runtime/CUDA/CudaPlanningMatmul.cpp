//===- CudaPlanningMatmul.cpp - planning of cublaslt.matmul ---------------===//
//
// See mp/Runtime/CUDA/CudaPlanning.h. cublaslt.matmul: batch broadcasting,
// strided or pointer-array batches, the epilogue (the CPU's Matmul.cpp).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "PlanningUtil.h"

#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/Kernels.h"

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
  MP_TRY(hasAux, hasBuffer(call, "aux", false));
  MP_TRY(hasBiasGrad, hasBuffer(call, "bias_grad", false));
  size_t nOps = 2 + size_t(hasC) + size_t(hasBias) + size_t(hasAux);
  size_t nRes = 1 + size_t(hasBiasGrad);
  if (Status s = arity(ops, res, nOps, nOps, nRes, nRes); !s)
    return s;
  // The attributes as the CPU reads them.
  MP_TRY(options, cpu::matmulOptionsOf(call));
  const bool transA = options.transA, transB = options.transB;
  const double alpha = options.alpha, beta = options.beta;
  MatmulPlan p;
  p.act = epilogueActOf(options.epilogueGradient, options.epilogue);
  const TensorDesc &a = ops[0], &b = ops[1], &d = res[0];
  if (Status s = checkComputeType(call, a.dtype, /*required=*/true); !s)
    return s;
  size_t next = 2;
  const TensorDesc *c = hasC ? &ops[next++] : nullptr;
  const TensorDesc *bias = hasBias ? &ops[next++] : nullptr;
  const TensorDesc *aux = hasAux ? &ops[next++] : nullptr;
  constexpr std::string_view kOp = "matmul";
  for (auto [name, v] : {std::pair<const char *, const TensorDesc *>{"A", &a},
                         {"B", &b},
                         {"D", &d},
                         {"C", c},
                         {"bias", bias},
                         {"aux", aux}})
    if (v)
      if (Status s = checkDesc(kOp, name, *v); !s)
        return s;
  // The CPU kernel's checks, on views of the descriptors.
  TensorView cView, biasView, auxView;
  if (c)
    cView = viewOf(*c);
  if (bias)
    biasView = viewOf(*bias);
  if (aux)
    auxView = viewOf(*aux);
  cpu::MatmulShape shape;
  if (Status s = cpu::checkMatmul(viewOf(a), viewOf(b), c ? &cView : nullptr,
                                  bias ? &biasView : nullptr, viewOf(d),
                                  options, shape, aux ? &auxView : nullptr);
      !s)
    return s;
  const bool f64 = a.dtype == DType::F64;
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const Shape &batchA = shape.batchA, &batchB = shape.batchB,
              &batch = shape.batch;
  const int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (m > kIntMax || n > kIntMax || k > kIntMax)
    return fail(kOp, "dimensions exceed cuBLASLt's range");
  if (hasBiasGrad) {
    // The CPU's checks and reduction (cpu::biasGradientReduction).
    MP_TRY(ofA, boolAttr(call, "bias_grad_of_a", false));
    cpu::BiasGradientOperand summed = cpu::biasGradientOperand(ofA, options);
    const TensorDesc &operand = summed.ofA ? a : b, &grad = res[1];
    if (Status s = checkDesc(kOp, "bias_grad", grad); !s)
      return s;
    MP_TRY(r, cpu::biasGradientReduction(viewOf(operand), summed.kIsRows,
                                         viewOf(grad)));
    TensorDesc sums = grad;
    sums.shape = r.sumsShape;
    Result<ReduceParams> reduce =
        planReduce(cpu::ReduceFn::Sum, {r.axis}, r.options, operand, sums);
    if (!reduce)
      return fail(kOp, reduce.message());
    p.biasGrad = *reduce;
  }
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
  // cuBLASLt fuses ReLU alone: its GELU epilogue is the tanh approximation
  // (the plan's gelu is exact, its gelu_tanh rounds differently), and it
  // has none of the others; they run in the epilogue kernel, and so do the
  // activation gradients (cuBLASLt's DRELU / DGELU read its own forward
  // epilogue's aux output, a bit mask for ReLU). A bias of
  // another dtype than D is added there too, before the single rounding,
  // and so is a D that cuBLASLt does not write from these inputs (it
  // writes their dtype or, from 16-bit ones, f32: an f32 product narrowed
  // to 16 bits is rounded by the epilogue).
  bool ltWritesD = d.dtype == a.dtype || (!f64 && d.dtype == DType::F32);
  p.staged = (p.act != kActNone && p.act != kActRelu) ||
             (bias && bias->dtype != d.dtype) ||
             (f64 && (bias || p.act != kActNone)) || !ltWritesD;
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
    // The activation gradients run in this kernel (always staged).
    e.auxDtype = aux ? code(aux->dtype) : 0;
    e.aux = aux ? cptr(*aux) : nullptr;
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
