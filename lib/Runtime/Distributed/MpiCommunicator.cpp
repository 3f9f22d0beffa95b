//===- MpiCommunicator.cpp - data-parallel ranks over MPI -----------------===//
#include "mp/Runtime/MpiCommunicator.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>

namespace mp::rt {

namespace {

/// The 16-bit float reductions MPI lacks, made once per process.
struct HalfOps {
  MPI_Op f16Sum = MPI_OP_NULL, f16Max = MPI_OP_NULL;
  MPI_Op bf16Sum = MPI_OP_NULL, bf16Max = MPI_OP_NULL;
};
HalfOps halfOps;

template <DType D, CollectiveOp Op>
void combineHalf(void *in, void *inout, int *len, MPI_Datatype *) {
  combineElements(in, inout, static_cast<size_t>(*len), D, Op);
}

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

std::string formatSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

} // namespace

Result<std::shared_ptr<MpiCommunicator>> MpiCommunicator::init() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int rc =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        rc != MPI_SUCCESS)
      return Status::error("MPI_Init failed: " + mpiErrorText(rc));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op_create(combineHalf<DType::F16, CollectiveOp::Sum>, 1,
                  &halfOps.f16Sum);
    MPI_Op_create(combineHalf<DType::F16, CollectiveOp::Max>, 1,
                  &halfOps.f16Max);
    MPI_Op_create(combineHalf<DType::BF16, CollectiveOp::Sum>, 1,
                  &halfOps.bf16Sum);
    MPI_Op_create(combineHalf<DType::BF16, CollectiveOp::Max>, 1,
                  &halfOps.bf16Max);
  }
  std::shared_ptr<MpiCommunicator> comm(new MpiCommunicator());
  MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &comm->size_);
  return comm;
}

MpiCommunicator::~MpiCommunicator() = default;

std::string MpiCommunicator::describe() const {
  return "MPI, rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

void MpiCommunicator::finalize() {
  if (finalized_)
    return;
  finalized_ = true;
  for (MPI_Op *op :
       {&halfOps.f16Sum, &halfOps.f16Max, &halfOps.bf16Sum, &halfOps.bf16Max})
    if (*op != MPI_OP_NULL)
      MPI_Op_free(op);
  MPI_Finalize();
}

void MpiCommunicator::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; in case it does
}

namespace {
/// Polls `request` until it completes or `timeoutSeconds` pass; `what` and
/// the rank count name it in the message.
Status waitFor(MPI_Request &request, const char *what, double timeoutSeconds,
               int ranks) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds));
  // Poll: progress happens inside MPI_Test. Spin briefly, then sleep
  // between tests so that ranks sharing cores do not starve each other.
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        rc != MPI_SUCCESS)
      return Status::error(std::string("MPI ") + what +
                           " failed: " + mpiErrorText(rc));
    if (done)
      return Status::ok();
    if (Clock::now() > deadline)
      return Status::error(
          std::string("the ") + what + " over " + std::to_string(ranks) +
          " ranks did not complete within " + formatSeconds(timeoutSeconds) +
          " s: another rank stopped answering (it died or hangs); "
          "--collective-timeout sets the deadline");
    if (polls > 20)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    else
      std::this_thread::yield();
  }
}
} // namespace

Status MpiCommunicator::broadcastBytes(void *data, size_t bytes, int root) {
  if (bytes > static_cast<size_t>(INT_MAX))
    return Status::error("MPI broadcast of more than 2 GiB");
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root,
                          MPI_COMM_WORLD, &request);
      rc != MPI_SUCCESS)
    return Status::error("MPI_Ibcast failed: " + mpiErrorText(rc));
  return waitFor(request, "broadcast", timeoutSeconds(), size_);
}

Status MpiCommunicator::reduceInPlace(void *data, size_t count, DType dtype,
                                      CollectiveOp op) {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op mpiOp = op == CollectiveOp::Sum   ? MPI_SUM
                 : op == CollectiveOp::Max ? MPI_MAX
                                           : MPI_MIN;
  switch (dtype) {
  case DType::F32:
    type = MPI_FLOAT;
    break;
  case DType::F64:
    type = MPI_DOUBLE;
    break;
  case DType::I64:
    type = MPI_INT64_T;
    break;
  case DType::U64:
    type = MPI_UINT64_T;
    break;
  case DType::F16:
    type = MPI_UINT16_T;
    mpiOp = op == CollectiveOp::Sum ? halfOps.f16Sum : halfOps.f16Max;
    break;
  case DType::BF16:
    type = MPI_UINT16_T;
    mpiOp = op == CollectiveOp::Sum ? halfOps.bf16Sum : halfOps.bf16Max;
    break;
  default:
    return Status::error("MPI all-reduce: unsupported element type " +
                         std::string(dtypeName(dtype)));
  }
  char *bytes = static_cast<char *>(data);
  const size_t chunk = INT_MAX / 2;
  for (size_t first = 0; first < count; first += chunk) {
    const int n = static_cast<int>(std::min(chunk, count - first));
    MPI_Request request = MPI_REQUEST_NULL;
    if (int rc = MPI_Iallreduce(MPI_IN_PLACE, bytes + first * byteSize(dtype),
                                n, type, mpiOp, MPI_COMM_WORLD, &request);
        rc != MPI_SUCCESS)
      return Status::error("MPI_Iallreduce failed: " + mpiErrorText(rc));
    if (Status s = waitFor(request, "all-reduce", timeoutSeconds(), size_); !s)
      return s;
  }
  return Status::ok();
}

} // namespace mp::rt
