//===- MpiCommunicator.h - data-parallel ranks over MPI -----------*- C++
//-*-===//
//
// The CPU runtime's collectives on MPI (OpenMPI from Debian; any MPI-3
// implementation), for processes started by `mpirun -np N`. Library
// MPRuntimeMPI, built when CMake finds MPI; linking it defines MP_HAVE_MPI.
//
//   if (launchedByMpi()) {                                 // Communicator.h
//     Result<std::shared_ptr<MpiCommunicator>> comm = MpiCommunicator::init();
//     ...
//     (*comm)->finalize();       // or abort(code) on an error
//   }
//
// Each all-reduce is MPI_Iallreduce on MPI_COMM_WORLD, polled until it
// completes or its deadline passes: a rank that died or hangs makes the
// others fail with a message naming the collective instead of waiting
// forever. 16-bit floats travel as 16 bits and are combined by an MPI_Op of
// our own (in f32, rounded once per combination).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_MPICOMMUNICATOR_H
#define MP_RUNTIME_MPICOMMUNICATOR_H

#include "mp/Runtime/Communicator.h"

#include <memory>

namespace mp::rt {

class MpiCommunicator final : public Communicator {
public:
  /// MPI_Init (once per process) and a communicator over MPI_COMM_WORLD,
  /// with errors returned instead of aborting.
  static Result<std::shared_ptr<MpiCommunicator>> init();
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override;

  /// MPI_Finalize; after an error, abort instead.
  void finalize();
  /// MPI_Abort: ends every rank of the job with `code` (after an error on
  /// this rank, so that the others do not wait for it).
  [[noreturn]] void abort(int code);

protected:
  Status reduceInPlace(void *data, size_t count, DType dtype,
                       CollectiveOp op) override;
  Status broadcastBytes(void *data, size_t bytes, int root) override;

private:
  MpiCommunicator() = default;
  int rank_ = 0, size_ = 1;
  bool finalized_ = false;
};

} // namespace mp::rt

#endif // MP_RUNTIME_MPICOMMUNICATOR_H
