//===- CudaCalls.h - plan calls on the CUDA backend ---------------*- C++
//-*-===//
//
// The CUDA call table: for every call kind a prepare function that plans
// the call (CudaPlanning.h), creates its library descriptors (cuBLASLt
// layouts, cuDNN descriptors, the algorithm from the cache) and returns a
// PreparedCall, which enqueues the call on the executor's stream. Preparing
// happens once, in CudaExecutor::create; enqueueing does no allocation and
// no host synchronisation, so a whole run can be captured as a CUDA graph.
// Private to lib/Runtime/CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CUDA_CUDACALLS_H
#define MP_LIB_RUNTIME_CUDA_CUDACALLS_H

#include "mp/Runtime/CUDA/CudaPlanning.h"

#include "Launch.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mp::rt::cuda {

/// What a call runs with: the stream, the library handles, the workspace
/// arena (at least the bytes the call asked for) and its error slot.
struct RunContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  char *workspace = nullptr;
  DeviceError *error = nullptr;
  /// Data-parallel steps: the ranks (1: this process alone) and, for more
  /// than one, the NCCL communicator (an ncclComm_t) that comm.* calls use.
  int ranks = 1;
  void *ncclComm = nullptr;
};

class PreparedCall {
public:
  virtual ~PreparedCall() = default;
  /// Scratch bytes the call needs from the workspace arena.
  virtual uint64_t workspaceBytes() const { return 0; }
  /// Enqueues the call on ctx.stream.
  virtual Status enqueue(const RunContext &ctx) = 0;
};

/// A call that is one launcher on parameters planned once (most of the own
/// kernels' calls); `what` names it in launch errors.
template <typename Params, cudaError_t (*Launch)(const Params &, cudaStream_t)>
struct LaunchCall : PreparedCall {
  Params p;
  const char *what;
  LaunchCall(const Params &p, const char *what) : p(p), what(what) {}
  Status enqueue(const RunContext &ctx) override;
};

/// As LaunchCall, for kernels that record bad data in the call's error slot.
template <typename Params,
          cudaError_t (*Launch)(const Params &, DeviceError *, cudaStream_t)>
struct CheckedLaunchCall : PreparedCall {
  Params p;
  const char *what;
  CheckedLaunchCall(const Params &p, const char *what) : p(p), what(what) {}
  Status enqueue(const RunContext &ctx) override;
};

/// What preparing a call sees.
struct PrepareArgs {
  const PlanCall &call;
  std::vector<TensorDesc> operands, results;
  cudnnHandle_t dnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  int device = 0;
  uint64_t convWorkspaceLimit = 0;
  uint64_t matmulWorkspaceLimit = 0;
  BatchNormImpl batchNorm = BatchNormImpl::Auto;
};

using PrepareFn =
    Result<std::unique_ptr<PreparedCall>> (*)(const PrepareArgs &);

/// Call kind -> prepare function (every kind of cudaCallKinds()).
const std::map<std::string, PrepareFn> &cudaCallTable();
/// One line of a family's registration list, in add*Calls(std::map<...>
/// &t): `prepare` prepares the call kind `kind`.
#define MP_ADD_PREPARE(kind, prepare) t[(kind)] = (prepare)

void addKernelCalls(std::map<std::string, PrepareFn> &table);
void addLibraryCalls(std::map<std::string, PrepareFn> &table);
/// BatchNormCalls.cpp: the batch norms (cuDNN or own kernels).
void addBatchNormCalls(std::map<std::string, PrepareFn> &table);
/// NNCalls.cpp: normalizations, recurrent nets, topk, cumsum, hardmax.
void addNNCalls(std::map<std::string, PrepareFn> &table);
/// DataCalls.cpp: tile, pad, trilu, gather_elements, gather_nd,
/// scatter_elements, resize.
void addDataCalls(std::map<std::string, PrepareFn> &table);
/// CollectiveCalls.cpp: comm.all_reduce (NCCL).
void addCollectiveCalls(std::map<std::string, PrepareFn> &table);
/// Sums `count` doubles at `data` (device memory) over the ranks in place,
/// on ctx.stream (NCCL); nothing for one rank.
Status allReduceDoublesOnDevice(double *data, size_t count,
                                const RunContext &ctx);

/// A Status for a CUDA runtime / cuBLASLt / cuDNN error ("what: message").
Status cudaStatus(cudaError_t e, const char *what);
Status cublasStatus(cublasStatus_t s, const char *what);
Status cudnnStatus(cudnnStatus_t s, const char *what);
/// cuDNN's data type for a float dtype (f32 for anything else).
cudnnDataType_t cudnnTypeOf(DType t);

#define MP_CUDA_TRY(expr, what)                                                \
  do {                                                                         \
    if (Status _s = ::mp::rt::cuda::cudaStatus((expr), (what)); !_s)           \
      return _s;                                                               \
  } while (0)
#define MP_CUBLAS_TRY(expr, what)                                              \
  do {                                                                         \
    if (Status _s = ::mp::rt::cuda::cublasStatus((expr), (what)); !_s)         \
      return _s;                                                               \
  } while (0)
#define MP_CUDNN_TRY(expr, what)                                               \
  do {                                                                         \
    if (Status _s = ::mp::rt::cuda::cudnnStatus((expr), (what)); !_s)          \
      return _s;                                                               \
  } while (0)

template <typename Params, cudaError_t (*Launch)(const Params &, cudaStream_t)>
Status LaunchCall<Params, Launch>::enqueue(const RunContext &ctx) {
  return cudaStatus(Launch(p, ctx.stream), what);
}

template <typename Params,
          cudaError_t (*Launch)(const Params &, DeviceError *, cudaStream_t)>
Status CheckedLaunchCall<Params, Launch>::enqueue(const RunContext &ctx) {
  return cudaStatus(Launch(p, ctx.error, ctx.stream), what);
}

/// A prepared call of type T, as a prepare function returns it.
template <typename T, typename... A>
Result<std::unique_ptr<PreparedCall>> preparedCall(A &&...args) {
  return std::unique_ptr<PreparedCall>(new T(std::forward<A>(args)...));
}

/// In a prepare function: `auto var = *expr` for a planner's Result, or
/// return its error.
#define MP_TRY_PREPARE(var, expr)                                              \
  auto var##Result = (expr);                                                   \
  if (!var##Result)                                                            \
    return var##Result.status();                                               \
  auto var = var##Result.take()

/// Statistics of the convolution algorithm cache (process-wide).
struct ConvAlgoCacheStats {
  size_t entries = 0, hits = 0, misses = 0;
};
ConvAlgoCacheStats convAlgoCacheStats();

} // namespace mp::rt::cuda

#endif // MP_LIB_RUNTIME_CUDA_CUDACALLS_H
