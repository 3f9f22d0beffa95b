//===- CudaExecutor.cpp - runs a plan on the CUDA backend -----------------===//
//
// See mp/Runtime/CUDA/CudaExecutor.h and docs/runtime.md ("CUDA backend").
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CUDA/CudaExecutor.h"

#include "CudaCalls.h"
#include "DynamicLibs.h"

#include "mp/Runtime/CPU/ElementwiseKernels.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <unordered_map>

namespace mp::rt {

using namespace cuda;

namespace {

std::string quoted(const std::string &s) { return "'" + s + "'"; }

std::string names(const std::vector<std::string> &v) {
  std::string out;
  for (const std::string &n : v)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

/// Device memory freed with cudaFree.
struct DeviceBlock {
  void *p = nullptr;
  uint64_t bytes = 0;
  DeviceBlock() = default;
  DeviceBlock(const DeviceBlock &) = delete;
  DeviceBlock &operator=(const DeviceBlock &) = delete;
  ~DeviceBlock() {
    if (p)
      cudaFree(p);
  }
  Status allocate(uint64_t n, const std::string &what) {
    bytes = n;
    uint64_t rounded = std::max<uint64_t>(256, (n + 255) / 256 * 256);
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e != cudaSuccess) {
      p = nullptr;
      cudaGetLastError();
      return Status::error("out of GPU memory: cannot allocate " +
                           std::to_string(n) + " bytes for " + what + " (" +
                           cudaGetErrorString(e) + ")");
    }
    return cudaStatus(cudaMemset(p, 0, rounded), "clearing device memory");
  }
  char *bytesPtr() const { return static_cast<char *>(p); }
};

} // namespace

Status cudaLibrariesAvailable() {
  if (!cublasLt().loaded)
    return Status::error("the CUDA backend needs cuBLASLt: " +
                         cublasLt().error);
  if (!cudnn().loaded)
    return Status::error("the CUDA backend needs cuDNN: " + cudnn().error);
  return Status::ok();
}

Status ncclAvailable() {
#if MP_HAVE_NCCL
  const NcclApi &api = nccl();
  if (!api.loaded)
    return Status::error("NCCL: " + api.error);
  int version = 0;
  api.ncclGetVersion(&version);
  if (version < 21000)
    return Status::error("NCCL " + std::to_string(version) +
                         " is older than 2.10 (bf16 reductions)");
  return Status::ok();
#else
  return Status::error("this runtime was built without NCCL (no nccl.h)");
#endif
}

int cudaDeviceCount(std::string *why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why)
      *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) +
             (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice
                  ? " (no GPU driver, or none new enough for CUDA " +
                        std::to_string(CUDART_VERSION / 1000) + ")"
                  : "");
    return 0;
  }
  if (n == 0 && why)
    *why = "the driver reports no device";
  return n;
}

struct CudaExecutor::Impl {
  Plan plan;
  std::string name;
  CudaExecutorOptions options;
  int device = 0;
  std::string deviceName;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  /// `derived`: the buffers the calls at load make (BufferStorage::Derived).
  DeviceBlock arena, weights, states, derived, workspace, errors;
  std::vector<uint64_t> weightOffset; ///< per weight, in `weights`
  struct StateSlot {
    uint32_t buffer = 0;
    std::string name;
    uint64_t offset = 0, bytes = 0;
  };
  std::vector<StateSlot> state;   ///< in buffer id order
  std::vector<char *> bufferData; ///< device address per buffer id
  std::vector<std::unique_ptr<PreparedCall>> calls;
  size_t workspaceSize = 0;
  // Graphs and timing.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  bool graphFailed = false;
  size_t runs = 0;
  bool timing = false;
  CallTimes times;
  std::vector<cudaEvent_t> events; ///< 2 per call (timing)
  /// Data parallel: the ranks, and the NCCL communicator over their GPUs
  /// (an ncclComm_t) when there are several.
  int ranks = 1;
  void *ncclComm = nullptr;
  double collectiveTimeout = 0;

  ~Impl() {
    if (device >= 0)
      cudaSetDevice(device);
#if MP_HAVE_NCCL
    if (ncclComm)
      nccl().ncclCommDestroy(static_cast<ncclComm_t>(ncclComm));
#endif
    if (stream)
      cudaStreamSynchronize(stream);
    if (graphExec)
      cudaGraphExecDestroy(graphExec);
    if (graph)
      cudaGraphDestroy(graph);
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    calls.clear(); // their descriptors before the handles
    if (dnn)
      cudnn().cudnnDestroy(dnn);
    if (lt)
      cublasLt().cublasLtDestroy(lt);
    if (stream)
      cudaStreamDestroy(stream);
  }

  Status select() const {
    return cudaStatus(cudaSetDevice(device), "selecting the CUDA device");
  }

  /// A data-parallel plan's ranks: an NCCL communicator over their GPUs,
  /// rank 0's id broadcast through the bootstrap communicator.
  Status joinRanks(const Plan &p) {
    const std::shared_ptr<Communicator> &boot = options.communicator;
    bool collectives = false;
    for (const PlanCall &c : p.calls)
      collectives |= c.kind.rfind("comm.", 0) == 0;
    if (!collectives || !boot || boot->size() <= 1)
      return Status::ok();
    ranks = boot->size();
    collectiveTimeout = boot->timeoutSeconds();
#if MP_HAVE_NCCL
    const NcclApi &api = nccl();
    if (!api.loaded)
      return Status::error("a data-parallel plan over " +
                           std::to_string(ranks) +
                           " ranks needs NCCL: " + api.error);
    ncclUniqueId id{};
    if (boot->rank() == 0)
      if (ncclResult_t r = api.ncclGetUniqueId(&id); r != ncclSuccess)
        return Status::error(std::string("ncclGetUniqueId: ") +
                             api.ncclGetErrorString(r));
    if (Status s = boot->broadcast(&id, sizeof id, 0); !s)
      return Status::error("sending the NCCL id to the ranks: " + s.message());
    ncclComm_t comm = nullptr;
    if (ncclResult_t r = api.ncclCommInitRank(&comm, ranks, id, boot->rank());
        r != ncclSuccess)
      return Status::error(std::string("ncclCommInitRank: ") +
                           api.ncclGetErrorString(r));
    ncclComm = comm;
    return Status::ok();
#else
    return Status::error("a data-parallel plan over " + std::to_string(ranks) +
                         " ranks needs NCCL, and this runtime was built "
                         "without it (no nccl.h)");
#endif
  }

  /// The end of a run. With NCCL, a rank that died or hangs would leave the
  /// stream waiting forever: poll it, with NCCL's own errors, until the
  /// deadline, then abort the communicator.
  Status waitForRun() {
#if MP_HAVE_NCCL
    if (ncclComm) {
      const NcclApi &api = nccl();
      auto comm = static_cast<ncclComm_t>(ncclComm);
      using Clock = std::chrono::steady_clock;
      const auto deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(collectiveTimeout));
      for (;;) {
        cudaError_t e = cudaStreamQuery(stream);
        if (e == cudaSuccess)
          return Status::ok();
        if (e != cudaErrorNotReady)
          return cudaStatus(e, "running the plan");
        ncclResult_t async = ncclSuccess;
        api.ncclCommGetAsyncError(comm, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          api.ncclCommAbort(comm);
          ncclComm = nullptr;
          return Status::error(std::string("NCCL: ") +
                               api.ncclGetErrorString(async));
        }
        if (Clock::now() > deadline) {
          api.ncclCommAbort(comm);
          ncclComm = nullptr;
          return Status::error(
              "the run's collectives over " + std::to_string(ranks) +
              " ranks did not complete within the deadline: another rank "
              "stopped answering (it died or hangs)");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
#endif
    return cudaStatus(cudaStreamSynchronize(stream), "running the plan");
  }

  const StateSlot *findState(const std::string &n) const {
    for (const StateSlot &s : state)
      if (s.name == n)
        return &s;
    return nullptr;
  }

  /// Enqueues every call of a run, or (`atLoad`) the calls at load, which
  /// run once, when the executor is made (and the clearing of the error
  /// slots).
  Status enqueueAll(bool timed, bool atLoad = false) {
    MP_CUDA_TRY(
        cudaMemsetAsync(errors.p, 0,
                        std::max<size_t>(calls.size(), 1) * sizeof(DeviceError),
                        stream),
        "clearing the error slots");
    RunContext ctx;
    ctx.stream = stream;
    ctx.lt = lt;
    ctx.dnn = dnn;
    ctx.ranks = ranks;
    ctx.ncclComm = ncclComm;
    ctx.workspace = workspace.bytesPtr();
    auto *err = static_cast<DeviceError *>(errors.p);
    for (size_t i = 0; i < calls.size(); ++i) {
      if (plan.calls[i].atLoad != atLoad)
        continue;
      ctx.error = err + i;
      if (timed)
        MP_CUDA_TRY(cudaEventRecord(events[2 * i], stream), "timing");
      if (Status s = calls[i]->enqueue(ctx); !s)
        return Status::error(plan.calls[i].describe(i) + ": " + s.message());
      if (timed)
        MP_CUDA_TRY(cudaEventRecord(events[2 * i + 1], stream), "timing");
    }
    return Status::ok();
  }

  /// Captures enqueueAll into a graph; on failure graphs stay off.
  void capture() {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) !=
        cudaSuccess) {
      cudaGetLastError();
      graphFailed = true;
      return;
    }
    Status s = enqueueAll(false);
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamEndCapture(stream, &g);
    if (!s || e != cudaSuccess || !g) {
      cudaGetLastError();
      if (g)
        cudaGraphDestroy(g);
      graphFailed = true;
      return;
    }
    cudaGraphExec_t exec = nullptr;
    if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
      cudaGetLastError();
      cudaGraphDestroy(g);
      graphFailed = true;
      return;
    }
    graph = g;
    graphExec = exec;
  }

  /// Errors that kernels recorded in this run.
  Status checkDeviceErrors() {
    if (calls.empty())
      return Status::ok();
    std::vector<DeviceError> host(calls.size());
    MP_CUDA_TRY(cudaMemcpy(host.data(), errors.p,
                           host.size() * sizeof(DeviceError),
                           cudaMemcpyDeviceToHost),
                "reading the error slots");
    for (size_t i = 0; i < host.size(); ++i) {
      if (!host[i].code)
        continue;
      std::string what =
          host[i].code == kErrIndexOutOfRange
              ? "index " + std::to_string(host[i].value) + " is out of range"
          : host[i].code == kErrTargetOutOfRange
              ? "class " + std::to_string(host[i].value) + " is outside [0, C)"
          : host[i].code == kErrSequenceLength
              ? "a sequence length of " + std::to_string(host[i].value) +
                    " is outside [0, seq_length]"
              : "error code " + std::to_string(host[i].code);
      return Status::error(plan.calls[i].describe(i) + ": " + what);
    }
    return Status::ok();
  }

  Status execute() {
    if (Status s = select(); !s)
      return s;
    bool timed = timing;
    if (!timed && options.useGraphs && !graphExec && !graphFailed && runs >= 1)
      capture();
    if (!timed && graphExec) {
      MP_CUDA_TRY(cudaGraphLaunch(graphExec, stream), "launching the graph");
    } else {
      if (timed && events.empty()) {
        events.resize(2 * calls.size(), nullptr);
        for (cudaEvent_t &e : events)
          MP_CUDA_TRY(cudaEventCreate(&e), "creating timing events");
      }
      if (Status s = enqueueAll(timed); !s) {
        cudaStreamSynchronize(stream);
        return s;
      }
    }
    if (Status s = waitForRun(); !s)
      return s;
    ++runs;
    if (timed) {
      for (size_t i = 0; i < calls.size(); ++i) {
        if (plan.calls[i].atLoad) // not part of a run
          continue;
        float ms = 0;
        MP_CUDA_TRY(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]),
                    "timing");
        times.totalMs[i] += ms;
      }
      ++times.runs;
    }
    return checkDeviceErrors();
  }
};

CudaExecutor::CudaExecutor(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
CudaExecutor::CudaExecutor(CudaExecutor &&) noexcept = default;
CudaExecutor &CudaExecutor::operator=(CudaExecutor &&) noexcept = default;
CudaExecutor::~CudaExecutor() = default;

Result<CudaExecutor> CudaExecutor::create(Plan plan, const std::string &name,
                                          const CudaExecutorOptions &options) {
  // Host-side checks first: nothing below runs for a plan the GPU cannot
  // run (and they need no device).
  if (Status s = validatePlan(plan, name); !s)
    return s;
  if (Status s = checkDynamicPlanForCuda(plan, name); !s)
    return s;
  {
    // The call table and the planner's list of kinds must agree (the list
    // is what checkPlanForCuda and the tests see).
    static const bool consistent = [] {
      std::vector<std::string> keys;
      for (const auto &entry : cudaCallTable())
        keys.push_back(entry.first);
      return keys == cudaCallKinds();
    }();
    if (!consistent)
      return Status::error("internal error: the CUDA call table differs from "
                           "cuda::cudaCallKinds()");
    std::vector<std::string> missing;
    const auto &table = cudaCallTable();
    for (size_t i = 0; i < plan.calls.size(); ++i)
      if (!table.count(plan.calls[i].kind))
        missing.push_back(plan.calls[i].describe(i));
    if (!missing.empty())
      return Status::error(name + ": the CUDA backend does not implement " +
                           std::to_string(missing.size()) + " call" +
                           (missing.size() == 1 ? "" : "s") + ": " +
                           names(missing));
  }
  std::string why;
  int count = cudaDeviceCount(&why);
  if (count == 0)
    return Status::error("no CUDA device (" + why + ")");
  if (options.device < 0 || options.device >= count)
    return Status::error("no CUDA device " + std::to_string(options.device) +
                         " (there are " + std::to_string(count) + ")");

  auto impl = std::make_unique<Impl>();
  Impl &x = *impl;
  x.options = options;
  x.device = options.device;
  x.name = name;
  if (Status s = x.select(); !s)
    return s;
  cudaDeviceProp prop{};
  MP_CUDA_TRY(cudaGetDeviceProperties(&prop, x.device),
              "reading the device properties");
  x.deviceName = std::string(prop.name) + " (sm_" +
                 std::to_string(prop.major * 10 + prop.minor) + ")";

  // Memory: arena, weights, states. The workspace follows once the calls
  // say what they need.
  uint64_t weightBytes = 0;
  x.weightOffset.resize(plan.weights.size());
  for (size_t i = 0; i < plan.weights.size(); ++i) {
    x.weightOffset[i] = weightBytes;
    weightBytes += (plan.weights[i].size + 255) / 256 * 256;
  }
  uint64_t stateBytes = 0;
  for (const PlanBuffer &b : plan.buffers)
    if (b.storage == BufferStorage::State) {
      Impl::StateSlot slot;
      slot.buffer = b.id;
      slot.name = stateName(plan, b);
      slot.offset = stateBytes;
      slot.bytes = b.byteCount();
      stateBytes += (slot.bytes + 255) / 256 * 256;
      x.state.push_back(slot);
    }
  std::sort(x.state.begin(), x.state.end(),
            [](const Impl::StateSlot &a, const Impl::StateSlot &b) {
              return a.buffer < b.buffer;
            });
  std::map<uint32_t, uint64_t> derivedOffset; // buffer id -> in `derived`
  uint64_t derivedBytes = 0;
  for (const PlanBuffer &b : plan.buffers)
    if (b.storage == BufferStorage::Derived) {
      derivedOffset[b.id] = derivedBytes;
      derivedBytes += (b.byteCount() + 255) / 256 * 256;
    }
  size_t freeBytes = 0, totalBytes = 0;
  MP_CUDA_TRY(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  uint64_t needed = plan.arenaSize + weightBytes + stateBytes + derivedBytes;
  if (needed > freeBytes)
    return Status::error(
        name + ": out of GPU memory: the plan needs " +
        std::to_string(plan.arenaSize) + " bytes of activation arena, " +
        std::to_string(weightBytes) + " bytes of weights, " +
        std::to_string(derivedBytes) + " bytes made from them at load and " +
        std::to_string(stateBytes) + " bytes of state; " + x.deviceName +
        " has " + std::to_string(freeBytes) + " bytes free");
  if (Status s = x.arena.allocate(plan.arenaSize, "the activation arena"); !s)
    return Status::error(name + ": " + s.message());
  if (Status s = x.weights.allocate(weightBytes, "the weights"); !s)
    return Status::error(name + ": " + s.message());
  if (Status s = x.states.allocate(stateBytes, "the state buffers"); !s)
    return Status::error(name + ": " + s.message());
  if (Status s = x.derived.allocate(derivedBytes, "the buffers made at load");
      !s)
    return Status::error(name + ": " + s.message());
  for (size_t i = 0; i < plan.weights.size(); ++i)
    if (plan.weights[i].size)
      MP_CUDA_TRY(cudaMemcpy(x.weights.bytesPtr() + x.weightOffset[i],
                             plan.weights[i].data, plan.weights[i].size,
                             cudaMemcpyHostToDevice),
                  "uploading the weights");
  x.bufferData.assign(plan.buffers.size(), nullptr);
  for (const PlanBuffer &b : plan.buffers) {
    switch (b.storage) {
    case BufferStorage::Arena:
      x.bufferData[b.id] = x.arena.bytesPtr() + b.offset;
      break;
    case BufferStorage::Weight:
      x.bufferData[b.id] = x.weights.bytesPtr() + x.weightOffset[b.weight];
      break;
    case BufferStorage::State:
      break;
    case BufferStorage::Derived:
      x.bufferData[b.id] = x.derived.bytesPtr() + derivedOffset[b.id];
      break;
    }
  }
  for (const Impl::StateSlot &s : x.state) {
    const PlanBuffer &b = *plan.buffer(s.buffer);
    x.bufferData[b.id] = x.states.bytesPtr() + s.offset;
    if (s.bytes)
      MP_CUDA_TRY(cudaMemcpy(x.bufferData[b.id], plan.weights[b.weight].data,
                             s.bytes, cudaMemcpyHostToDevice),
                  "initialising the state buffers");
  }

  // Stream and library handles (cuBLASLt and cuDNN are loaded now).
  if (Status s = cudaLibrariesAvailable(); !s)
    return s;
  MP_CUDA_TRY(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking),
              "creating the stream");
  MP_CUBLAS_TRY(cublasLt().cublasLtCreate(&x.lt), "cublasLtCreate");
  MP_CUDNN_TRY(cudnn().cudnnCreate(&x.dnn), "cudnnCreate");
  MP_CUDNN_TRY(cudnn().cudnnSetStream(x.dnn, x.stream), "cudnnSetStream");
  if (Status s = x.joinRanks(plan); !s)
    return s;

  // Prepare every call: plans, descriptors, algorithms.
  auto descOf = [&](uint32_t id) {
    const PlanBuffer &b = *plan.buffer(id);
    return TensorDesc{b.dtype, b.shape,
                      reinterpret_cast<uint64_t>(x.bufferData[id])};
  };
  const auto &table = cudaCallTable();
  uint64_t workspace = plan.maxWorkspaceSize();
  for (size_t i = 0; i < plan.calls.size(); ++i) {
    const PlanCall &call = plan.calls[i];
    PrepareArgs args{call,
                     {},
                     {},
                     x.dnn,
                     x.lt,
                     x.device,
                     options.convWorkspaceLimit,
                     options.matmulWorkspaceLimit,
                     options.batchNorm};
    for (uint32_t id : call.operands)
      args.operands.push_back(descOf(id));
    for (uint32_t id : call.results)
      args.results.push_back(descOf(id));
    Result<std::unique_ptr<PreparedCall>> prepared = table.at(call.kind)(args);
    if (!prepared)
      return Status::error(name + ": " + call.describe(i) + ": " +
                           prepared.message());
    workspace = std::max(workspace, (*prepared)->workspaceBytes());
    x.calls.push_back(prepared.take());
  }
  MP_CUDA_TRY(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  if (workspace > freeBytes)
    return Status::error(name +
                         ": out of GPU memory: the calls need a "
                         "workspace of " +
                         std::to_string(workspace) + " bytes; " + x.deviceName +
                         " has " + std::to_string(freeBytes) + " bytes free");
  if (Status s = x.workspace.allocate(workspace, "the workspace"); !s)
    return Status::error(name + ": " + s.message());
  x.workspaceSize = static_cast<size_t>(workspace);
  if (Status s = x.errors.allocate(std::max<size_t>(x.calls.size(), 1) *
                                       sizeof(DeviceError),
                                   "the error slots");
      !s)
    return Status::error(name + ": " + s.message());
  x.times.totalMs.assign(plan.calls.size(), 0.0);
  x.plan = std::move(plan);
  // The calls at load run now, once: their buffers are ready (and
  // read-only) before the first run.
  if (std::any_of(x.plan.calls.begin(), x.plan.calls.end(),
                  [](const PlanCall &c) { return c.atLoad; })) {
    if (Status s = x.enqueueAll(false, /*atLoad=*/true); !s) {
      cudaStreamSynchronize(x.stream);
      return Status::error(name + ": at load: " + s.message());
    }
    MP_CUDA_TRY(cudaStreamSynchronize(x.stream), "making the buffers at load");
    if (Status s = x.checkDeviceErrors(); !s)
      return Status::error(name + ": at load: " + s.message());
  }
  return CudaExecutor(std::move(impl));
}

const Plan &CudaExecutor::plan() const { return impl_->plan; }
const CudaExecutorOptions &CudaExecutor::options() const {
  return impl_->options;
}
size_t CudaExecutor::arenaSize() const { return impl_->plan.arenaSize; }
size_t CudaExecutor::workspaceSize() const { return impl_->workspaceSize; }
bool CudaExecutor::usesGraph() const { return impl_->graphExec != nullptr; }
std::string CudaExecutor::deviceName() const { return impl_->deviceName; }

void CudaExecutor::setTiming(bool enabled) { impl_->timing = enabled; }
const CallTimes &CudaExecutor::callTimes() const { return impl_->times; }
void CudaExecutor::resetCallTimes() {
  impl_->times.runs = 0;
  impl_->times.totalMs.assign(impl_->plan.calls.size(), 0.0);
}

Status CudaExecutor::bindInputs(const std::vector<NamedView> &inputs) {
  Impl &x = *impl_;
  if (Status s = x.select(); !s)
    return s;
  const Plan &plan = x.plan;
  std::vector<bool> bound(plan.inputs.size(), false);
  for (const NamedView &input : inputs) {
    auto it = std::find_if(
        plan.inputs.begin(), plan.inputs.end(),
        [&](const PlanBinding &b) { return b.name == input.name; });
    if (it == plan.inputs.end()) {
      std::vector<std::string> n;
      for (const PlanBinding &b : plan.inputs)
        n.push_back(b.name);
      return Status::error("unknown input " + quoted(input.name) +
                           " (the plan's inputs: " + names(n) + ")");
    }
    size_t index = static_cast<size_t>(it - plan.inputs.begin());
    if (bound[index])
      return Status::error("input " + quoted(input.name) + " is given twice");
    bound[index] = true;
    if (input.view.dtype != it->dtype || input.view.shape != it->shape)
      return Status::error(
          "input " + quoted(input.name) + ": expected " +
          describeTensorType(it->dtype, it->shape) + ", got " +
          describeTensorType(input.view.dtype, input.view.shape));
    size_t bytes = input.view.byteCount();
    if (bytes > 0 && !input.view.data)
      return Status::error("input " + quoted(input.name) + " has no data");
    if (bytes > 0)
      MP_CUDA_TRY(cudaMemcpyAsync(x.bufferData[it->buffer], input.view.data,
                                  bytes, cudaMemcpyHostToDevice, x.stream),
                  "copying an input to the device");
  }
  for (size_t i = 0; i < bound.size(); ++i)
    if (!bound[i])
      return Status::error(
          "input " + quoted(plan.inputs[i].name) + " is missing (expected " +
          describeTensorType(plan.inputs[i].dtype, plan.inputs[i].shape) + ")");
  return cudaStatus(cudaStreamSynchronize(x.stream),
                    "copying the inputs to the device");
}

Status CudaExecutor::execute() { return impl_->execute(); }

Result<std::vector<NamedTensor>> CudaExecutor::readOutputs() const {
  const Impl &x = *impl_;
  if (Status s = x.select(); !s)
    return s;
  std::vector<NamedTensor> outputs;
  for (const PlanBinding &binding : x.plan.outputs) {
    NamedTensor out{binding.name, HostTensor(binding.dtype, binding.shape)};
    size_t bytes = out.tensor.byteCount();
    if (bytes > 0 && !out.tensor.data())
      return Status::error("output " + quoted(binding.name) +
                           ": cannot allocate " + std::to_string(bytes) +
                           " bytes");
    const PlanBuffer &b = *x.plan.buffer(binding.buffer);
    if (bytes > 0) {
      if (b.storage == BufferStorage::Weight)
        std::memcpy(out.tensor.data(), x.plan.weights[b.weight].data, bytes);
      else
        MP_CUDA_TRY(cudaMemcpy(out.tensor.data(), x.bufferData[b.id], bytes,
                               cudaMemcpyDeviceToHost),
                    "copying an output to the host");
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

Result<std::vector<NamedTensor>>
CudaExecutor::run(const std::vector<NamedView> &inputs) {
  return runOnce(*this, inputs);
}

Result<BenchmarkStats>
CudaExecutor::benchmark(const std::vector<NamedView> &inputs, int warmup,
                        int iterations) {
  return benchmarkRuns(warmup, iterations, impl_->timing, [&]() -> Status {
    if (Status s = bindInputs(inputs); !s)
      return s;
    return execute();
  });
}

//===----------------------------------------------------------------------===//
// State buffers
//===----------------------------------------------------------------------===//

size_t CudaExecutor::stateSize() const {
  size_t total = 0;
  for (const Impl::StateSlot &s : impl_->state)
    total += s.bytes;
  return total;
}

Status CudaExecutor::resetState() {
  Impl &x = *impl_;
  if (Status s = x.select(); !s)
    return s;
  for (const Impl::StateSlot &s : x.state) {
    const PlanBuffer &b = *x.plan.buffer(s.buffer);
    if (s.bytes)
      MP_CUDA_TRY(cudaMemcpy(x.bufferData[b.id], x.plan.weights[b.weight].data,
                             s.bytes, cudaMemcpyHostToDevice),
                  "resetting the state");
  }
  return Status::ok();
}

Result<std::vector<NamedTensor>> CudaExecutor::readState() const {
  const Impl &x = *impl_;
  if (Status s = x.select(); !s)
    return s;
  std::vector<NamedTensor> out;
  for (const Impl::StateSlot &s : x.state) {
    const PlanBuffer &b = *x.plan.buffer(s.buffer);
    NamedTensor t{s.name, HostTensor(b.dtype, b.shape)};
    if (s.bytes && !t.tensor.data())
      return Status::error("state " + quoted(s.name) + ": cannot allocate " +
                           std::to_string(s.bytes) + " bytes");
    if (s.bytes)
      MP_CUDA_TRY(cudaMemcpy(t.tensor.data(), x.bufferData[b.id], s.bytes,
                             cudaMemcpyDeviceToHost),
                  "reading the state");
    out.push_back(std::move(t));
  }
  return out;
}

Status CudaExecutor::writeState(const std::string &name,
                                const TensorView &value) {
  Impl &x = *impl_;
  const Impl::StateSlot *slot = x.findState(name);
  if (!slot) {
    std::vector<std::string> n;
    for (const Impl::StateSlot &s : x.state)
      n.push_back(s.name);
    return Status::error("no state named " + quoted(name) +
                         " (the plan's states: " + names(n) + ")");
  }
  const PlanBuffer &b = *x.plan.buffer(slot->buffer);
  if (value.dtype != b.dtype || value.shape != b.shape)
    return Status::error("state " + quoted(name) + ": expected " +
                         describeTensorType(b.dtype, b.shape) + ", got " +
                         describeTensorType(value.dtype, value.shape));
  if (slot->bytes && !value.data)
    return Status::error("state " + quoted(name) + ": the value has no data");
  if (Status s = x.select(); !s)
    return s;
  if (slot->bytes)
    MP_CUDA_TRY(cudaMemcpy(x.bufferData[b.id], value.data, slot->bytes,
                           cudaMemcpyHostToDevice),
                "writing the state");
  return Status::ok();
}

Result<Plan> CudaExecutor::planWithState() const {
  Result<std::vector<NamedTensor>> values = readState();
  if (!values)
    return values.status();
  const Impl &x = *impl_;
  try {
    Plan out = x.plan;
    for (size_t i = 0; i < x.state.size(); ++i) {
      const PlanBuffer &b = *x.plan.buffer(x.state[i].buffer);
      PlanWeight &w = out.weights[b.weight];
      const HostTensor &t = (*values)[i].tensor;
      w = PlanWeight::copyOf(w.name, w.dtype, w.shape, t.data(), t.byteCount());
    }
    return out;
  } catch (const std::bad_alloc &) {
    return Status::error(x.name + ": out of memory copying the state (" +
                         std::to_string(stateSize()) + " bytes)");
  }
}

Status CudaExecutor::copyStateIntoWeights(Plan &target, size_t *copied) const {
  if (copied)
    *copied = 0;
  Result<std::vector<NamedTensor>> values = readState();
  if (!values)
    return values.status();
  const Impl &x = *impl_;
  // Names: a state's own name first, then its initial weight's (as
  // CpuExecutor::copyStateIntoWeights).
  std::unordered_map<std::string, size_t> byName;
  for (size_t i = 0; i < x.state.size(); ++i)
    byName.emplace(x.state[i].name, i);
  for (size_t i = 0; i < x.state.size(); ++i)
    byName.emplace(
        x.plan.weights[x.plan.buffer(x.state[i].buffer)->weight].name, i);
  std::vector<std::pair<size_t, PlanWeight>> replacements;
  try {
    for (size_t wi = 0; wi < target.weights.size(); ++wi) {
      const PlanWeight &w = target.weights[wi];
      auto it = byName.find(w.name);
      if (it == byName.end())
        continue;
      const Impl::StateSlot &slot = x.state[it->second];
      const PlanBuffer &b = *x.plan.buffer(slot.buffer);
      const PlanWeight &initial = x.plan.weights[b.weight];
      const HostTensor &value = (*values)[it->second].tensor;
      std::string what = "weight " + quoted(w.name) + " (" +
                         describeTensorType(w.dtype, w.shape) +
                         ") cannot take the value of state " +
                         quoted(slot.name) + " (" +
                         describeTensorType(b.dtype, b.shape) + ")";
      if (w.shape != b.shape && w.shape != initial.shape)
        return Status::error(what + ": the shapes differ");
      if (w.dtype == b.dtype) {
        replacements.emplace_back(wi, PlanWeight::copyOf(w.name, w.dtype,
                                                         w.shape, value.data(),
                                                         value.byteCount()));
        continue;
      }
      if (!isFloat(w.dtype) || !isFloat(b.dtype))
        return Status::error(what + ": only float states are cast to another "
                                    "dtype");
      HostTensor converted(w.dtype, w.shape);
      if (converted.byteCount() && !converted.data())
        return Status::error(what + ": out of memory");
      TensorView from{b.dtype, w.shape, const_cast<void *>(value.data())};
      if (Status s = cpu::cast(from, converted.view()); !s)
        return Status::error(what + ": " + s.message());
      replacements.emplace_back(wi, PlanWeight::copyOf(w.name, w.dtype, w.shape,
                                                       converted.data(),
                                                       converted.byteCount()));
    }
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory copying the state into weights");
  }
  for (auto &[index, weight] : replacements)
    target.weights[index] = std::move(weight);
  if (copied)
    *copied = replacements.size();
  return Status::ok();
}

} // namespace mp::rt
