//===- CollectiveCalls.cpp - comm.* calls on the GPU: NCCL
//-----------------===//
//
// comm.all_reduce (the CPU's CollectiveCalls.cpp): the bucket's buffers are
// packed into the call's workspace in the reduce type (a 16-bit mean
// divided by the rank count first), reduced in place by ncclAllReduce on
// the executor's stream across the ranks' GPUs, and unpacked into the
// results (an f32 mean divided last); with one rank the reduction is
// skipped, the roundings are the same. The kernels do the CPU's f32
// arithmetic, so a rank's results are the CPU backend's.
//
//===----------------------------------------------------------------------===//
#include "CudaCalls.h"
#include "DynamicLibs.h"
#include "Launch.h"

#include "mp/Runtime/CUDA/CudaPlanning.h"

namespace mp::rt::cuda {

namespace {

#if MP_HAVE_NCCL
Result<ncclDataType_t> ncclTypeOf(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  default:
    return Status::error("NCCL all-reduce of " + std::string(dtypeName(t)));
  }
}
#endif

struct AllReduceCall : PreparedCall {
  AllReducePlan p;
  explicit AllReduceCall(AllReducePlan plan) : p(std::move(plan)) {}
  uint64_t workspaceBytes() const override { return p.stagingBytes; }

  Status enqueue(const RunContext &ctx) override {
    char *staging = ctx.workspace;
    const size_t wireBytes = byteSize(p.options.wire);
    const float mul = cpu::allReducePreScale(p.options, ctx.ranks);
    const float div = cpu::allReducePostDivisor(p.options, ctx.ranks);
    for (size_t i = 0; i < p.pack.size(); ++i) {
      AllReduceCopyParams c = p.pack[i];
      c.dst = staging + static_cast<uint64_t>(p.offset[i]) * wireBytes;
      c.mul = mul;
      MP_CUDA_TRY(launchAllReduceCopy(c, ctx.stream), "all_reduce pack");
    }
    if (ctx.ranks > 1) {
#if MP_HAVE_NCCL
      const NcclApi &api = nccl();
      if (!ctx.ncclComm || !api.loaded)
        return Status::error("comm.all_reduce over " +
                             std::to_string(ctx.ranks) +
                             " ranks needs the executor's NCCL communicator");
      Result<ncclDataType_t> type = ncclTypeOf(p.options.wire);
      if (!type)
        return type.status();
      const ncclRedOp_t op =
          p.options.op == rt::CollectiveOp::Max ? ncclMax : ncclSum;
      if (ncclResult_t r = api.ncclAllReduce(
              staging, staging, static_cast<size_t>(p.total), *type, op,
              static_cast<ncclComm_t>(ctx.ncclComm), ctx.stream);
          r != ncclSuccess)
        return Status::error(std::string("ncclAllReduce: ") +
                             api.ncclGetErrorString(r));
#else
      return Status::error("comm.all_reduce over several ranks: this "
                           "runtime was built without NCCL");
#endif
    }
    for (size_t i = 0; i < p.unpack.size(); ++i) {
      AllReduceCopyParams c = p.unpack[i];
      c.src = staging + static_cast<uint64_t>(p.offset[i]) * wireBytes;
      c.div = div;
      MP_CUDA_TRY(launchAllReduceCopy(c, ctx.stream), "all_reduce unpack");
    }
    return Status::ok();
  }
};

Result<std::unique_ptr<PreparedCall>> prepareAllReduce(const PrepareArgs &a) {
  MP_TRY_PREPARE(p, planAllReduce(a.call, a.operands, a.results));
  return preparedCall<AllReduceCall>(std::move(p));
}

} // namespace

Status allReduceDoublesOnDevice(double *data, size_t count,
                                const RunContext &ctx) {
  if (ctx.ranks <= 1 || count == 0)
    return Status::ok();
#if MP_HAVE_NCCL
  const NcclApi &api = nccl();
  if (!ctx.ncclComm || !api.loaded)
    return Status::error("a sum over " + std::to_string(ctx.ranks) +
                         " ranks needs the executor's NCCL communicator");
  if (ncclResult_t r =
          api.ncclAllReduce(data, data, count, ncclFloat64, ncclSum,
                            static_cast<ncclComm_t>(ctx.ncclComm), ctx.stream);
      r != ncclSuccess)
    return Status::error(std::string("ncclAllReduce: ") +
                         api.ncclGetErrorString(r));
  return Status::ok();
#else
  return Status::error("a sum over several ranks: this runtime was built "
                       "without NCCL");
#endif
}

void addCollectiveCalls(std::map<std::string, PrepareFn> &t) {
  MP_ADD_PREPARE("comm.all_reduce", prepareAllReduce);
}

} // namespace mp::rt::cuda
