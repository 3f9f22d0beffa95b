//===- CudaExecutor.h - runs a plan on the CUDA backend -----------*- C++
//-*-===//
//
// A CudaExecutor is one execution context for a loaded plan on one GPU, with
// the API of CpuExecutor (mp/Runtime/Executor.h):
//
//   Result<CudaExecutor> exec = CudaExecutor::create(loadPlan(path).take());
//   Result<std::vector<NamedTensor>> outputs = exec->run({{"x", x.view()}});
//
// create() checks everything it can before anything runs: the plan
// (validatePlan), that every call kind has a CUDA implementation (all
// missing ones are listed, each with its call's description), and each
// call's attributes, shapes and dtypes (CudaPlanning.h). It then allocates
// the device memory once: one activation arena (the plan's memory plan),
// one block with every weight (uploaded once), one block per state buffer
// (initialised from its weight, kept across runs), and one workspace arena
// as large as the largest call needs (cuBLASLt / cuDNN algorithm workspace
// and scratch) or the plan's workspace size, whichever is larger. It
// creates one stream, a cuBLASLt and a cuDNN handle, and chooses every
// library algorithm (convolution algorithms are cached per shape for the
// process).
//
// execute() enqueues every call on the stream and waits for it; with
// useGraphs (the default) the second and later runs replay a CUDA graph
// captured from the first enqueue (shapes are static, so one graph serves
// every run; capture failures fall back to plain launches). Kernels that
// find bad data (an index out of range) record it, and execute() reports it
// with the call's description.
//
// Header without CUDA types: it can be included where the CUDA toolkit is
// not on the include path. Built only when the CUDA backend is
// (MP_HAVE_CUDA_BACKEND); docs/runtime.md, "CUDA backend".
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CUDA_CUDAEXECUTOR_H
#define MP_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "mp/Runtime/CUDA/CudaPlanning.h"
#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp::rt {

struct CudaExecutorOptions {
  /// The CUDA device ordinal.
  int device = 0;
  /// Capture execute() as a CUDA graph after the first run and replay it.
  bool useGraphs = true;
  /// Workspace limits for the library algorithms (bytes).
  uint64_t convWorkspaceLimit = uint64_t(256) << 20;
  uint64_t matmulWorkspaceLimit = uint64_t(32) << 20;
  /// Who runs the batch norms: cuDNN for f32 and inference and the own
  /// kernels for 16-bit training (Auto), cuDNN wherever it can
  /// (CudnnSpatial), or the own kernels (Own); CudaPlanning.h.
  cuda::BatchNormImpl batchNorm = cuda::BatchNormImpl::Auto;
  /// The ranks of a data-parallel run (mp/Runtime/Communicator.h): a plan
  /// with comm.* calls then gets an NCCL communicator over the ranks' GPUs,
  /// bootstrapped through this one (rank 0's NCCL id broadcast), and its
  /// runs end with an error when a collective misses the deadline (the
  /// communicator's timeoutSeconds). Null or one rank: this process alone.
  std::shared_ptr<Communicator> communicator;
};

/// The number of CUDA devices; 0 (with the reason in *why) when there is no
/// driver or no device.
int cudaDeviceCount(std::string *why = nullptr);

/// Whether cuBLASLt and cuDNN load, with every function the backend calls
/// (they are opened with dlopen; no GPU is needed to check): the error names
/// the library and what is missing.
Status cudaLibrariesAvailable();
/// Whether NCCL (data-parallel plans over several GPUs) loads with every
/// function the backend calls (dlopen; no GPU needed), and is new enough
/// for bf16 (2.10); the error says what is missing.
Status ncclAvailable();

class CudaExecutor {
public:
  /// See the file comment. Errors: "no CUDA device (...)", "out of GPU
  /// memory", "<name>: the CUDA backend does not implement 2 calls:
  /// call #3 (kernel.topk at node 'x'), ...", a call's planning error
  /// prefixed with its description.
  static Result<CudaExecutor> create(Plan plan,
                                     const std::string &name = "<plan>",
                                     const CudaExecutorOptions &options = {});

  CudaExecutor(CudaExecutor &&) noexcept;
  CudaExecutor &operator=(CudaExecutor &&) noexcept;
  ~CudaExecutor();

  const Plan &plan() const;
  const CudaExecutorOptions &options() const;

  /// bindInputs + execute + readOutputs, as CpuExecutor::run.
  Result<std::vector<NamedTensor>> run(const std::vector<NamedView> &inputs);
  /// Copies every graph input (by name, the binding's dtype and shape) to
  /// the device.
  Status bindInputs(const std::vector<NamedView> &inputs);
  /// Runs the calls (or replays the graph) and waits for the GPU.
  Status execute();
  /// Copies the outputs to the host.
  Result<std::vector<NamedTensor>> readOutputs() const;
  /// As CpuExecutor::benchmark (wall time of bind + execute per run).
  Result<BenchmarkStats> benchmark(const std::vector<NamedView> &inputs,
                                   int warmup, int iterations);

  /// Per-call GPU time (CUDA events); runs are then not replayed as a
  /// graph.
  void setTiming(bool enabled);
  const CallTimes &callTimes() const;
  void resetCallTimes();

  size_t arenaSize() const;
  /// The workspace arena's size (what the calls need, or the plan's).
  size_t workspaceSize() const;
  /// Whether execute() replays a captured CUDA graph now.
  bool usesGraph() const;
  /// "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string deviceName() const;

  // State buffers, as CpuExecutor.
  size_t stateSize() const;
  Status resetState();
  Result<std::vector<NamedTensor>> readState() const;
  Status writeState(const std::string &name, const TensorView &value);
  Result<Plan> planWithState() const;
  Status copyStateIntoWeights(Plan &target, size_t *copied = nullptr) const;

  struct Impl;

private:
  explicit CudaExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace mp::rt

#endif // MP_RUNTIME_CUDA_CUDAEXECUTOR_H
