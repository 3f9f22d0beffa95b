//===- LibraryCalls.cpp - cuBLASLt matmul and cuDNN convolutions ----------===//
//
// cublaslt.matmul: one cuBLASLt matmul descriptor, layouts and algorithm
// (heuristic, chosen once) per call; the row-major mapping, the batch, the
// epilogue choice and the alignment come from planMatmul. Bias and relu are
// cuBLASLt epilogues; gelu (cuBLASLt's is the tanh approximation) and a
// bias of another dtype than D run in the project's epilogue kernel on an
// f32 result, rounded once. f32 inputs compute in CUBLAS_COMPUTE_32F (no
// TF32), 16-bit inputs in f32 on tensor cores.
//
// cudnn.conv_fwd / conv_bwd_data / conv_bwd_filter: cuDNN's convolution
// API with descriptors from planConv; the algorithm is chosen once per
// descriptor key (convAlgoKey) by cuDNN's heuristics
// (cudnnGet*Algorithm_v7: the first that succeeds within the workspace
// limit) and cached for the process. f32 convolutions use CUDNN_FMA_MATH
// (no TF32), 16-bit ones tensor cores with f32 accumulation.
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"
#include "DynamicLibs.h"

#include "mp/Runtime/CPU/Calls.h"

#include <mutex>
#include <type_traits>

namespace mp::rt::cuda {

Status cublasStatus(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(std::string(what) + ": " +
                       cublasLt().cublasLtGetStatusString(s));
}

Status cudnnStatus(cudnnStatus_t s, const char *what) {
  if (s == CUDNN_STATUS_SUCCESS)
    return Status::ok();
  return Status::error(std::string(what) + ": " +
                       cudnn().cudnnGetErrorString(s));
}

/// A library's code (cuDNN's, CUDA's) of the float dtype t: f16, bf16, f64,
/// and f32 for any other.
template <typename Code>
static Code floatTypeCode(DType t, Code f16, Code bf16, Code f64, Code f32) {
  switch (t) {
  case DType::F16:
    return f16;
  case DType::BF16:
    return bf16;
  case DType::F64:
    return f64;
  default:
    return f32;
  }
}

cudnnDataType_t cudnnTypeOf(DType t) {
  return floatTypeCode(t, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16,
                       CUDNN_DATA_DOUBLE, CUDNN_DATA_FLOAT);
}

namespace {

#define MP_TRY_PLAN(var, expr)                                                 \
  auto var##Result = (expr);                                                   \
  if (!var##Result)                                                            \
    return var##Result.status();                                               \
  auto var = var##Result.take()

cudaDataType_t cudaTypeOf(DType t) {
  return floatTypeCode(t, CUDA_R_16F, CUDA_R_16BF, CUDA_R_64F, CUDA_R_32F);
}

//===----------------------------------------------------------------------===//
// cublaslt.matmul
//===----------------------------------------------------------------------===//

class MatmulCall : public PreparedCall {
public:
  MatmulPlan plan;
  const void *ourA = nullptr, *ourB = nullptr, *c = nullptr;
  void *d = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t aL = nullptr, bL = nullptr, cL = nullptr, dL = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t algoWorkspace = 0;
  uint64_t stagedOffset = 0, ltOffset = 0, total = 0;

  ~MatmulCall() override { destroy(); }

  void destroy() {
    for (cublasLtMatrixLayout_t *l : {&aL, &bL, &cL, &dL})
      if (*l) {
        cublasLt().cublasLtMatrixLayoutDestroy(*l);
        *l = nullptr;
      }
    if (op) {
      cublasLt().cublasLtMatmulDescDestroy(op);
      op = nullptr;
    }
  }

  Status init(const PrepareArgs &a) {
    if (plan.empty)
      return Status::ok();
    bool found = false;
    if (Status s = build(a, found); !s)
      return s;
    if (!found && (plan.fusedBias || plan.fusedRelu) && !plan.withC) {
      // No algorithm with the fused epilogue: stage the result and run the
      // epilogue kernel instead.
      destroy();
      plan.staged = true;
      plan.fusedBias = plan.fusedRelu = false;
      DType acc = plan.f64 ? DType::F64 : DType::F32;
      plan.stagedBytes = plan.dType == acc ? 0 : plan.dElements * byteSize(acc);
      if (plan.stagedBytes)
        plan.alignD = plan.alignC = 256;
      if (Status s = build(a, found); !s)
        return s;
    }
    if (!found)
      return Status::error("cuBLASLt has no algorithm for this matmul (" +
                           std::string(dtypeName(plan.abType)) +
                           " m=" + std::to_string(plan.gemm.m) +
                           " n=" + std::to_string(plan.gemm.n) +
                           " k=" + std::to_string(plan.gemm.k) + ")");
    WorkspaceLayout ws;
    stagedOffset = ws.add(plan.stagedBytes);
    ltOffset = ws.add(algoWorkspace);
    total = ws.total();
    return Status::ok();
  }

  /// The descriptors and the heuristic's algorithm for the current plan.
  Status build(const PrepareArgs &a, bool &foundAlgo) {
    const LtGemm &g = plan.gemm;
    DType acc = plan.f64 ? DType::F64 : DType::F32;
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulDescCreate(
                      &op, plan.f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                      cudaTypeOf(acc)),
                  "cublasLtMatmulDescCreate");
    cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulDescSetAttribute(
                      op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
                  "cuBLASLt TRANSA");
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulDescSetAttribute(
                      op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
                  "cuBLASLt TRANSB");
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (plan.fusedBias && plan.fusedRelu)
      epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    else if (plan.fusedBias)
      epi = CUBLASLT_EPILOGUE_BIAS;
    else if (plan.fusedRelu)
      epi = CUBLASLT_EPILOGUE_RELU;
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulDescSetAttribute(
                      op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi),
                  "cuBLASLt EPILOGUE");
    if (plan.fusedBias) {
      const TensorDesc &bias = a.operands.back();
      const void *ptr = bias.ptr<const void>();
      MP_CUBLAS_TRY(
          cublasLt().cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptr, sizeof ptr),
          "cuBLASLt BIAS_POINTER");
      int32_t biasType = cudaTypeOf(bias.dtype);
      MP_CUBLAS_TRY(cublasLt().cublasLtMatmulDescSetAttribute(
                        op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                        sizeof biasType),
                    "cuBLASLt BIAS_DATA_TYPE");
    }
    cudaDataType_t ab = cudaTypeOf(plan.abType);
    cudaDataType_t cd = cudaTypeOf(plan.staged ? acc : plan.dType);
    MP_CUBLAS_TRY(
        cublasLt().cublasLtMatrixLayoutCreate(&aL, ab, g.aRows, g.aCols, g.lda),
        "cuBLASLt layout A");
    MP_CUBLAS_TRY(
        cublasLt().cublasLtMatrixLayoutCreate(&bL, ab, g.bRows, g.bCols, g.ldb),
        "cuBLASLt layout B");
    MP_CUBLAS_TRY(
        cublasLt().cublasLtMatrixLayoutCreate(&cL, cd, g.m, g.n, g.ldd),
        "cuBLASLt layout C");
    MP_CUBLAS_TRY(
        cublasLt().cublasLtMatrixLayoutCreate(&dL, cd, g.m, g.n, g.ldd),
        "cuBLASLt layout D");
    if (g.batchCount > 1) {
      struct {
        cublasLtMatrixLayout_t l;
        int64_t stride;
      } batched[] = {
          {aL, g.strideA}, {bL, g.strideB}, {cL, g.strideD}, {dL, g.strideD}};
      for (auto &bl : batched) {
        MP_CUBLAS_TRY(cublasLt().cublasLtMatrixLayoutSetAttribute(
                          bl.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                          &g.batchCount, sizeof g.batchCount),
                      "cuBLASLt BATCH_COUNT");
        MP_CUBLAS_TRY(cublasLt().cublasLtMatrixLayoutSetAttribute(
                          bl.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                          &bl.stride, sizeof bl.stride),
                      "cuBLASLt STRIDED_BATCH_OFFSET");
      }
    }
    // The algorithm: cuBLASLt's first heuristic choice for these layouts,
    // alignments and workspace limit.
    cublasLtMatmulPreference_t pref = nullptr;
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulPreferenceCreate(&pref),
                  "cublasLtMatmulPreferenceCreate");
    struct PrefGuard {
      cublasLtMatmulPreference_t p;
      ~PrefGuard() { cublasLt().cublasLtMatmulPreferenceDestroy(p); }
    } prefGuard{pref};
    uint64_t limit = a.matmulWorkspaceLimit;
    MP_CUBLAS_TRY(cublasLt().cublasLtMatmulPreferenceSetAttribute(
                      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
                      sizeof limit),
                  "cuBLASLt MAX_WORKSPACE_BYTES");
    struct {
      cublasLtMatmulPreferenceAttributes_t attr;
      uint32_t value;
    } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, plan.alignA},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, plan.alignB},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, plan.alignC},
                  {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, plan.alignD}};
    for (auto &al : aligns)
      MP_CUBLAS_TRY(cublasLt().cublasLtMatmulPreferenceSetAttribute(
                        pref, al.attr, &al.value, sizeof al.value),
                    "cuBLASLt MIN_ALIGNMENT");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t hs = cublasLt().cublasLtMatmulAlgoGetHeuristic(
        a.lt, op, aL, bL, cL, dL, pref, 1, &result, &found);
    // NOT_SUPPORTED: no algorithm for this configuration (found = 0).
    if (hs != CUBLAS_STATUS_NOT_SUPPORTED)
      MP_CUBLAS_TRY(hs, "cublasLtMatmulAlgoGetHeuristic");
    foundAlgo = hs == CUBLAS_STATUS_SUCCESS && found >= 1;
    if (foundAlgo) {
      algo = result.algo;
      algoWorkspace = result.workspaceSize;
    }
    return Status::ok();
  }

  uint64_t workspaceBytes() const override { return total; }

  Status enqueue(const RunContext &ctx) override {
    if (Status s = enqueueProduct(ctx); !s || !plan.biasGrad)
      return s;
    MP_CUDA_TRY(launchReduce(*plan.biasGrad, ctx.stream), "matmul bias_grad");
    return Status::ok();
  }

  /// D, as the GEMM (and the staged epilogue) make it.
  Status enqueueProduct(const RunContext &ctx) {
    if (plan.empty)
      return Status::ok();
    void *target = plan.stagedBytes ? ctx.workspace + stagedOffset : d;
    if (plan.withC && !plan.cDirect) {
      EwParams copy = plan.cCopy;
      copy.out = target;
      MP_CUDA_TRY(launchElementwise(copy, ctx.stream), "matmul: C");
    }
    const void *cPtr = plan.cDirect ? c : target;
    float alpha32 = static_cast<float>(plan.alpha),
          beta32 = plan.withC ? static_cast<float>(plan.beta) : 0.0f;
    double alpha64 = plan.alpha, beta64 = plan.withC ? plan.beta : 0.0;
    const void *alpha = plan.f64 ? static_cast<const void *>(&alpha64)
                                 : static_cast<const void *>(&alpha32);
    const void *beta = plan.f64 ? static_cast<const void *>(&beta64)
                                : static_cast<const void *>(&beta32);
    void *ltWs = algoWorkspace ? ctx.workspace + ltOffset : nullptr;
    size_t abElt = byteSize(plan.abType);
    size_t dElt = byteSize(plan.staged ? (plan.f64 ? DType::F64 : DType::F32)
                                       : plan.dType);
    if (plan.loop.empty()) {
      MP_CUBLAS_TRY(cublasLt().cublasLtMatmul(
                        ctx.lt, op, alpha, ourB, aL, ourA, bL, beta, cPtr, cL,
                        target, dL, &algo, ltWs, algoWorkspace, ctx.stream),
                    "cublasLtMatmul");
    } else {
      for (const auto &o : plan.loop) {
        const char *bp = static_cast<const char *>(ourB) + o[0] * abElt;
        const char *ap = static_cast<const char *>(ourA) + o[1] * abElt;
        char *dp = static_cast<char *>(target) + o[2] * dElt;
        const char *cp = static_cast<const char *>(cPtr) + o[2] * dElt;
        MP_CUBLAS_TRY(cublasLt().cublasLtMatmul(
                          ctx.lt, op, alpha, bp, aL, ap, bL, beta, cp, cL, dp,
                          dL, &algo, ltWs, algoWorkspace, ctx.stream),
                      "cublasLtMatmul");
      }
    }
    if (plan.staged) {
      EpilogueParams e = plan.epilogue;
      e.acc = target;
      MP_CUDA_TRY(launchEpilogue(e, ctx.stream), "matmul epilogue");
    }
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> prepareMatmul(const PrepareArgs &a) {
  MP_TRY_PLAN(plan, planMatmul(a.call, a.operands, a.results));
  auto call = std::make_unique<MatmulCall>();
  call->plan = std::move(plan);
  call->ourA = a.operands[0].ptr<const void>();
  call->ourB = a.operands[1].ptr<const void>();
  call->d = a.results[0].ptr<void>();
  Result<bool> hasC = cpu::hasBuffer(a.call, "c");
  if (hasC && *hasC)
    call->c = a.operands[2].ptr<const void>();
  if (Status s = call->init(a); !s)
    return s;
  return std::unique_ptr<PreparedCall>(std::move(call));
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

/// A cached algorithm choice.
struct ConvAlgo {
  int algo = 0;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct ConvAlgoCache {
  std::mutex mutex;
  std::map<std::string, ConvAlgo> entries;
  size_t hits = 0, misses = 0;
};

ConvAlgoCache &algoCache() {
  static ConvAlgoCache cache;
  return cache;
}

class ConvCall : public PreparedCall {
public:
  ConvPlan plan;
  const void *in0 = nullptr, *in1 = nullptr;
  void *out = nullptr;
  DType in0Type = DType::F32, in1Type = DType::F32, outType = DType::F32;
  Shape in0Shape; ///< plan layout (for explicit padding of x)
  Shape outShape;
  cudnnTensorDescriptor_t xD = nullptr, yD = nullptr;
  cudnnFilterDescriptor_t wD = nullptr;
  cudnnConvolutionDescriptor_t cD = nullptr;
  ConvAlgo algo;
  uint64_t in0Off = 0, in1Off = 0, padOff = 0, outOff = 0, algoOff = 0,
           total = 0;

  ~ConvCall() override {
    if (xD)
      cudnn().cudnnDestroyTensorDescriptor(xD);
    if (yD)
      cudnn().cudnnDestroyTensorDescriptor(yD);
    if (wD)
      cudnn().cudnnDestroyFilterDescriptor(wD);
    if (cD)
      cudnn().cudnnDestroyConvolutionDescriptor(cD);
  }

  Status init(const PrepareArgs &a) {
    if (plan.empty)
      return Status::ok();
    cudnnDataType_t dt = cudnnTypeOf(plan.dataType);
    cudnnTensorFormat_t fmt = plan.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    int nb = static_cast<int>(plan.xDims.size());
    MP_CUDNN_TRY(cudnn().cudnnCreateTensorDescriptor(&xD),
                 "cudnnCreateTensorDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnCreateTensorDescriptor(&yD),
                 "cudnnCreateTensorDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnCreateFilterDescriptor(&wD),
                 "cudnnCreateFilterDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnCreateConvolutionDescriptor(&cD),
                 "cudnnCreateConvolutionDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnSetTensorNdDescriptorEx(xD, fmt, dt, nb,
                                                      plan.xDims.data()),
                 "cudnnSetTensorNdDescriptorEx (x)");
    MP_CUDNN_TRY(cudnn().cudnnSetTensorNdDescriptorEx(yD, fmt, dt, nb,
                                                      plan.yDims.data()),
                 "cudnnSetTensorNdDescriptorEx (y)");
    MP_CUDNN_TRY(
        cudnn().cudnnSetFilterNdDescriptor(wD, dt, fmt, nb, plan.wDims.data()),
        "cudnnSetFilterNdDescriptor");
    cudnnDataType_t compute =
        plan.dataType == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    MP_CUDNN_TRY(cudnn().cudnnSetConvolutionNdDescriptor(
                     cD, static_cast<int>(plan.pads.size()), plan.pads.data(),
                     plan.strides.data(), plan.dilations.data(),
                     CUDNN_CROSS_CORRELATION, compute),
                 "cudnnSetConvolutionNdDescriptor");
    MP_CUDNN_TRY(cudnn().cudnnSetConvolutionGroupCount(cD, plan.groups),
                 "cudnnSetConvolutionGroupCount");
    bool tensorOps =
        plan.dataType == DType::F16 || plan.dataType == DType::BF16;
    cudnnMathType_t math = tensorOps                     ? CUDNN_TENSOR_OP_MATH
                           : plan.dataType == DType::F32 ? CUDNN_FMA_MATH
                                                         : CUDNN_DEFAULT_MATH;
    MP_CUDNN_TRY(cudnn().cudnnSetConvolutionMathType(cD, math),
                 "cudnnSetConvolutionMathType");
    if (Status s = chooseAlgo(a, math); !s)
      return s;
    if (tensorOps)
      MP_CUDNN_TRY(cudnn().cudnnSetConvolutionMathType(cD, algo.math),
                   "cudnnSetConvolutionMathType");
    WorkspaceLayout ws;
    in0Off = ws.add(plan.in0Bytes);
    in1Off = ws.add(plan.in1Bytes);
    padOff = ws.add(plan.padBytes);
    outOff = ws.add(plan.outBytes);
    algoOff = ws.add(algo.workspace);
    total = ws.total();
    return Status::ok();
  }

  template <typename Perf>
  static bool pick(const Perf *perf, int n, uint64_t limit, ConvAlgo &out) {
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) {
        out.algo = static_cast<int>(perf[i].algo);
        out.workspace = perf[i].memory;
        out.math = perf[i].mathType;
        return true;
      }
    return false;
  }

  /// Runs one of cuDNN's _v7 algorithm queries (fn: forward, backward data
  /// or backward filter, with its Perf struct and algorithm count) on the
  /// descriptors in its order (the convolution descriptor third) and picks
  /// into `algo` the first algorithm that fits `limit`; `ok`: whether one
  /// did.
  template <typename Perf, int Count, typename Fn, typename D0, typename D1,
            typename D2>
  Status query(Fn fn, const char *what, cudnnHandle_t dnn, D0 d0, D1 d1, D2 d2,
               uint64_t limit, bool &ok) {
    Perf perf[Count];
    int n = 0;
    MP_CUDNN_TRY(fn(dnn, d0, d1, cD, d2, Count, &n, perf), what);
    ok = pick(perf, n, limit, algo);
    return Status::ok();
  }

  Status chooseAlgo(const PrepareArgs &a, cudnnMathType_t math) {
    std::string key = convAlgoKey(plan, a.device) + " limit" +
                      std::to_string(a.convWorkspaceLimit);
    ConvAlgoCache &cache = algoCache();
    {
      std::lock_guard<std::mutex> lock(cache.mutex);
      auto it = cache.entries.find(key);
      if (it != cache.entries.end()) {
        ++cache.hits;
        algo = it->second;
        return Status::ok();
      }
      ++cache.misses;
    }
    (void)math;
    bool ok = false;
    uint64_t limit = a.convWorkspaceLimit;
    // One _v7 algorithm query, by the names' parts, with its descriptors in
    // cuDNN's order. Backward data: w, the incoming gradient (yD), the data
    // gradient (xD).
#define MP_CONV_ALGO_QUERY(Perf, Fn, COUNT, d0, d1, d2)                        \
  query<cudnnConvolution##Perf##AlgoPerf_t,                                    \
        CUDNN_CONVOLUTION_##COUNT##_ALGO_COUNT>(                               \
      cudnn().cudnnGetConvolution##Fn##Algorithm_v7,                           \
      "cudnnGetConvolution" #Fn "Algorithm_v7", a.dnn, d0, d1, d2, limit, ok)
    Status queried = Status::ok();
    switch (plan.kind) {
    case ConvKind::Forward:
      queried = MP_CONV_ALGO_QUERY(Fwd, Forward, FWD, xD, wD, yD);
      break;
    case ConvKind::BackwardData:
      queried = MP_CONV_ALGO_QUERY(BwdData, BackwardData, BWD_DATA, wD, yD, xD);
      break;
    case ConvKind::BackwardFilter:
      queried =
          MP_CONV_ALGO_QUERY(BwdFilter, BackwardFilter, BWD_FILTER, xD, yD, wD);
      break;
    }
#undef MP_CONV_ALGO_QUERY
    if (!queried)
      return queried;
    if (!ok)
      return Status::error("cuDNN has no algorithm for this convolution "
                           "within the workspace limit of " +
                           std::to_string(limit) + " bytes (" + key + ")");
    std::lock_guard<std::mutex> lock(algoCache().mutex);
    algoCache().entries.emplace(key, algo);
    return Status::ok();
  }

  uint64_t workspaceBytes() const override { return total; }

  Status enqueue(const RunContext &ctx) override {
    if (plan.empty)
      return Status::ok();
    char *ws = ctx.workspace;
    const void *a0 = in0, *a1 = in1;
    if (plan.convertIn0) {
      CastParams c = castOf(in0Type, in0, plan.dataType, ws + in0Off,
                            numElements(in0Shape));
      MP_CUDA_TRY(launchCast(c, ctx.stream), "convolution: converting x");
      a0 = ws + in0Off;
    }
    if (plan.convertIn1) {
      CastParams c =
          castOf(in1Type, in1, plan.dataType, ws + in1Off, in1Elements);
      MP_CUDA_TRY(launchCast(c, ctx.stream),
                  "convolution: converting the second operand");
      a1 = ws + in1Off;
    }
    void *result = plan.outputToScratch ? ws + outOff : out;
    float one32 = 1.0f, zero32 = 0.0f;
    double one64 = 1.0, zero64 = 0.0;
    bool f64 = plan.dataType == DType::F64;
    const void *one = f64 ? static_cast<const void *>(&one64)
                          : static_cast<const void *>(&one32);
    const void *zero = f64 ? static_cast<const void *>(&zero64)
                           : static_cast<const void *>(&zero32);
    void *algoWs = algo.workspace ? ws + algoOff : nullptr;
    switch (plan.kind) {
    case ConvKind::Forward:
    case ConvKind::BackwardFilter: {
      const void *xin = a0;
      if (plan.explicitPad) {
        if (Status s = padX(a0, ws + padOff, ctx.stream); !s)
          return s;
        xin = ws + padOff;
      }
      if (plan.kind == ConvKind::Forward)
        MP_CUDNN_TRY(cudnn().cudnnConvolutionForward(
                         ctx.dnn, one, xD, xin, wD, a1, cD,
                         static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                         algoWs, algo.workspace, zero, yD, result),
                     "cudnnConvolutionForward");
      else
        MP_CUDNN_TRY(
            cudnn().cudnnConvolutionBackwardFilter(
                ctx.dnn, one, xD, xin, yD, a1, cD,
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), algoWs,
                algo.workspace, zero, wD, result),
            "cudnnConvolutionBackwardFilter");
      break;
    }
    case ConvKind::BackwardData: {
      void *dx = plan.explicitPad ? ws + padOff : result;
      MP_CUDNN_TRY(cudnn().cudnnConvolutionBackwardData(
                       ctx.dnn, one, wD, a1, yD, a0, cD,
                       static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                       algoWs, algo.workspace, zero, xD, dx),
                   "cudnnConvolutionBackwardData");
      if (plan.explicitPad) {
        // Crop the padded gradient to y.
        std::vector<int64_t> start(outShape.size(), 0);
        size_t first = plan.nhwc ? 1 : 2; // the first spatial dim
        for (size_t i = 0; i < plan.padBegin.size(); ++i)
          start[first + i] = plan.padBegin[i];
        Result<GatherCopyParams> crop = planWindowCopy(
            plan.dataType, plan.paddedShape, outShape, start, dx, result);
        if (!crop)
          return crop.status();
        MP_CUDA_TRY(launchGatherCopy(*crop, ctx.stream),
                    "convolution: cropping");
      }
      break;
    }
    }
    if (plan.epilogue) {
      EpilogueParams e = plan.epi;
      e.acc = result;
      MP_CUDA_TRY(launchEpilogue(e, ctx.stream), "convolution epilogue");
    }
    return Status::ok();
  }

  /// x (plan layout) padded with zeros into `dst` (paddedShape).
  Status padX(const void *x, void *dst, cudaStream_t stream) {
    std::vector<int64_t> start(in0Shape.size(), 0);
    size_t first = plan.nhwc ? 1 : 2;
    for (size_t i = 0; i < plan.padBegin.size(); ++i)
      start[first + i] = -plan.padBegin[i];
    Result<GatherCopyParams> pad = planWindowCopy(
        plan.dataType, in0Shape, plan.paddedShape, start, x, dst);
    if (!pad)
      return pad.status();
    return cudaStatus(launchGatherCopy(*pad, stream), "convolution: padding");
  }

  int64_t in1Elements = 0;
};

Result<std::unique_ptr<PreparedCall>> prepareConv(const PrepareArgs &a,
                                                  ConvKind kind) {
  MP_TRY_PLAN(plan, planConv(kind, a.call, a.operands, a.results));
  auto call = std::make_unique<ConvCall>();
  call->plan = std::move(plan);
  call->in0 = a.operands[0].ptr<const void>();
  call->in1 = a.operands[1].ptr<const void>();
  call->out = a.results[0].ptr<void>();
  call->in0Type = a.operands[0].dtype;
  call->in1Type = a.operands[1].dtype;
  call->outType = a.results[0].dtype;
  call->in0Shape = a.operands[0].shape;
  call->outShape = a.results[0].shape;
  call->in1Elements = a.operands[1].numElements();
  if (Status s = call->init(a); !s)
    return s;
  return std::unique_ptr<PreparedCall>(std::move(call));
}

Result<std::unique_ptr<PreparedCall>> prepareConvFwd(const PrepareArgs &a) {
  return prepareConv(a, ConvKind::Forward);
}
Result<std::unique_ptr<PreparedCall>> prepareConvBwdData(const PrepareArgs &a) {
  return prepareConv(a, ConvKind::BackwardData);
}
Result<std::unique_ptr<PreparedCall>>
prepareConvBwdFilter(const PrepareArgs &a) {
  return prepareConv(a, ConvKind::BackwardFilter);
}

} // namespace

ConvAlgoCacheStats convAlgoCacheStats() {
  ConvAlgoCache &cache = algoCache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  return {cache.entries.size(), cache.hits, cache.misses};
}

void addLibraryCalls(std::map<std::string, PrepareFn> &t) {
  MP_ADD_PREPARE("cublaslt.matmul", prepareMatmul);
  MP_ADD_PREPARE("cudnn.conv_fwd", prepareConvFwd);
  MP_ADD_PREPARE("cudnn.conv_bwd_data", prepareConvBwdData);
  MP_ADD_PREPARE("cudnn.conv_bwd_filter", prepareConvBwdFilter);
}

} // namespace mp::rt::cuda
