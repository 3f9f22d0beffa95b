//===- Communicator.cpp - the processes of a data-parallel run ------------===//
#include "mp/Runtime/Communicator.h"

#include "mp/Runtime/Half.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <type_traits>

namespace mp::rt {

const char *collectiveOpName(CollectiveOp op) {
  switch (op) {
  case CollectiveOp::Sum:
    return "sum";
  case CollectiveOp::Max:
    return "max";
  case CollectiveOp::Min:
    return "min";
  }
  return "?";
}

Communicator::~Communicator() = default;

Status Communicator::allReduce(void *data, size_t count, DType dtype,
                               CollectiveOp op) {
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::F16 &&
      dtype != DType::BF16 && dtype != DType::I64 && dtype != DType::U64)
    return Status::error("all-reduce of " + std::string(dtypeName(dtype)) +
                         " elements is not supported (f32, f64, f16, bf16, "
                         "i64, u64)");
  if ((dtype == DType::F16 || dtype == DType::BF16) && op == CollectiveOp::Min)
    return Status::error("a 16-bit all-reduce sums or takes the maximum");
  auto start = std::chrono::steady_clock::now();
  Status s = count ? reduceInPlace(data, count, dtype, op) : Status::ok();
  stats_.collectives += 1;
  stats_.bytes += count * byteSize(dtype);
  stats_.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return s;
}

Status Communicator::broadcast(void *data, size_t bytes, int root) {
  if (root < 0 || root >= size())
    return Status::error("broadcast from rank " + std::to_string(root) +
                         " of " + std::to_string(size()));
  return bytes ? broadcastBytes(data, bytes, root) : Status::ok();
}

void *Communicator::staging(size_t bytes) {
  size_t words = (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t);
  if (staging_.size() < words)
    staging_.resize(words);
  return staging_.data();
}

namespace {

class SingleProcessCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "one process"; }

protected:
  Status reduceInPlace(void *, size_t, DType, CollectiveOp) override {
    return Status::ok();
  }
  Status broadcastBytes(void *, size_t, int) override { return Status::ok(); }
};

template <typename T> T combine(T a, T b, CollectiveOp op) {
  switch (op) {
  case CollectiveOp::Sum:
    return a + b;
  case CollectiveOp::Max:
    // NaN wins, so that a non-finite flag or value is never lost.
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) ? a : b;
    return std::max(a, b);
  case CollectiveOp::Min:
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) ? a : b;
    return std::min(a, b);
  }
  return a;
}

template <typename T>
void combineTyped(const void *in, void *inout, size_t count, CollectiveOp op) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (size_t i = 0; i < count; ++i)
    b[i] = combine(a[i], b[i], op);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void combine16(const void *in, void *inout, size_t count, CollectiveOp op) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (size_t i = 0; i < count; ++i)
    b[i] = FromFloat(combine(ToFloat(a[i]), ToFloat(b[i]), op));
}

} // namespace

namespace {
const char *envOf(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}
} // namespace

bool launchedByMpi() {
  return envOf("OMPI_COMM_WORLD_SIZE") || envOf("PMI_SIZE") ||
         envOf("PMI_RANK") || envOf("PMIX_RANK");
}

int launcherWorldSize() {
  // OpenMPI, then MPICH / Intel MPI (PMI), then PMIx schedulers.
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *v = envOf(name))
      return std::max(1, std::atoi(v));
  return 1;
}

int launcherLocalSize() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char *v = envOf(name))
      return std::max(1, std::atoi(v));
  return launcherWorldSize();
}

int launcherLocalRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char *v = envOf(name))
      return std::max(0, std::atoi(v));
  return 0;
}

std::shared_ptr<Communicator> makeSingleProcessCommunicator() {
  return std::make_shared<SingleProcessCommunicator>();
}

bool combineElements(const void *in, void *inout, size_t count, DType dtype,
                     CollectiveOp op) {
  switch (dtype) {
  case DType::F32:
    combineTyped<float>(in, inout, count, op);
    return true;
  case DType::F64:
    combineTyped<double>(in, inout, count, op);
    return true;
  case DType::I64:
    combineTyped<int64_t>(in, inout, count, op);
    return true;
  case DType::U64:
    combineTyped<uint64_t>(in, inout, count, op);
    return true;
  case DType::F16:
    combine16<detail::halfBitsToFloat, detail::floatToHalfBits>(in, inout,
                                                                count, op);
    return true;
  case DType::BF16:
    combine16<detail::bfloat16BitsToFloat, detail::floatToBFloat16Bits>(
        in, inout, count, op);
    return true;
  default:
    return false;
  }
}

} // namespace mp::rt
