//===- Communicator.h - the processes of a data-parallel run ------*- C++
//-*-===//
//
// A data-parallel training step (mp-training's `data-parallel=true`) runs in
// N processes, the ranks, one per device or CPU socket, each on its own
// shard of the batch. Its `comm.all_reduce` calls reduce buffers over all
// ranks through a Communicator, which the executor gets in its options:
//
//   std::shared_ptr<Communicator> comm = ...;   // MPI (MpiCommunicator.h)
//   CpuExecutorOptions options;
//   options.communicator = comm;
//   CpuExecutor::create(plan, name, options);
//
// Without one, an executor runs such calls as one rank of one: the identity
// (up to the rounding of a 16-bit reduce type), so a data-parallel plan also
// runs alone.
//
// A backend (MPI, NCCL) implements reduceInPlace; allReduce records what
// went over the wire for mp-run --timing. Every collective has a deadline:
// a rank that died or hangs makes the others fail with a message after
// `timeoutSeconds`, never wait forever. docs/training.md, "Data-parallel
// training", describes the design.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_COMMUNICATOR_H
#define MP_RUNTIME_COMMUNICATOR_H

#include "mp/Runtime/DType.h"
#include "mp/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mp::rt {

/// How an all-reduce combines the ranks' elements.
enum class CollectiveOp { Sum, Max, Min };

/// "sum", "max", "min".
const char *collectiveOpName(CollectiveOp op);

/// What a communicator's collectives moved, since it was made or reset.
struct CommunicationStats {
  uint64_t collectives = 0; ///< all-reduces issued
  uint64_t bytes = 0;       ///< bytes of their buffers (each rank's share)
  double seconds = 0;       ///< wall time spent in them
};

class Communicator {
public:
  virtual ~Communicator();

  /// This process's rank, 0 <= rank() < size().
  virtual int rank() const = 0;
  /// The number of ranks.
  virtual int size() const = 0;
  /// "MPI, 4 ranks" style, for messages.
  virtual std::string describe() const = 0;

  /// Combines `count` elements of `dtype` at `data` over all ranks with
  /// `op`; every rank gets the result in place. Every rank must call it with
  /// the same count, dtype and op, in the same order. dtype: F32, F64, F16,
  /// BF16 (Sum and Max: each pairwise combination in f32, rounded once),
  /// I64, U64. An error (a rank stopped answering within the deadline, the
  /// backend failed) leaves `data` undefined; the run cannot go on.
  Status allReduce(void *data, size_t count, DType dtype, CollectiveOp op);

  /// Copies `bytes` bytes at `data` from rank `root` to every rank (NCCL's
  /// bootstrap: rank 0's unique id). Not counted in stats().
  Status broadcast(void *data, size_t bytes, int root);

  const CommunicationStats &stats() const { return stats_; }
  void resetStats() { stats_ = {}; }

  /// Scratch memory of at least `bytes` bytes that lives until the next call
  /// (the all-reduce calls pack a bucket's buffers into it).
  void *staging(size_t bytes);

  /// The deadline of each collective, in seconds.
  double timeoutSeconds() const { return timeoutSeconds_; }
  void setTimeoutSeconds(double seconds) { timeoutSeconds_ = seconds; }

protected:
  virtual Status reduceInPlace(void *data, size_t count, DType dtype,
                               CollectiveOp op) = 0;
  virtual Status broadcastBytes(void *data, size_t bytes, int root) = 0;

private:
  CommunicationStats stats_;
  std::vector<uint64_t> staging_; ///< 8-byte aligned
  double timeoutSeconds_ = 300;
};

/// Whether an MPI launcher (mpirun / mpiexec of OpenMPI, MPICH, or a
/// PMI-based scheduler) started this process: its environment says so.
bool launchedByMpi();
/// The number of ranks that launcher announces (1 when none).
int launcherWorldSize();
/// How many of them run on this machine (OpenMPI's and MPICH's local
/// size; else the world size).
int launcherLocalSize();
/// This process's rank among those on its machine (0 when not launched):
/// which GPU it takes.
int launcherLocalRank();

/// One rank alone: every all-reduce leaves the data as they are.
std::shared_ptr<Communicator> makeSingleProcessCommunicator();

/// Elementwise `inout[i] = op(in[i], inout[i])` for `count` elements of
/// `dtype`, as a backend's reduction needs for types it lacks (16-bit
/// floats: in f32, rounded once to nearest even). False for an unsupported
/// dtype.
bool combineElements(const void *in, void *inout, size_t count, DType dtype,
                     CollectiveOp op);

} // namespace mp::rt

#endif // MP_RUNTIME_COMMUNICATOR_H
