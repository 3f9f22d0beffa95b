//===- Ranks.h - mp-run --train's processes under mpirun ---------*- C++
//-*-===//
//
// `mpirun -np N mp-run --train plan ...` trains a data-parallel plan
// (mp-opt --mp-training="... data-parallel=true") in N processes: each rank
// runs its shard of every global batch, the plan's comm.all_reduce calls
// average the gradients through the MPI communicator, and rank 0 prints,
// logs, evaluates and saves. Started without a launcher, mp-run is rank 0
// of 1. docs/training.md, "Data-parallel training", describes it.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TOOLS_MP_RUN_RANKS_H
#define MP_TOOLS_MP_RUN_RANKS_H

#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace mp::tools {

class Ranks {
public:
  /// The ranks of this run: MPI's when an MPI launcher started the process
  /// (an error when this mp-run was built without MPI and the launcher
  /// asks for more than one rank), else this process alone.
  static rt::Result<Ranks> start(double collectiveTimeoutSeconds);

  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  bool isRoot() const { return rank() == 0; }
  bool distributed() const { return size() > 1; }
  const std::shared_ptr<rt::Communicator> &communicator() const {
    return comm_;
  }

  /// Sums `values` over the ranks, in place (epoch totals).
  rt::Status sum(std::vector<double> &values);
  /// Whether every rank has the same `value`; `low` and `high` receive the
  /// smallest and largest.
  rt::Result<bool> agree(uint64_t value, uint64_t &low, uint64_t &high);

  /// `path` for this rank: unchanged for one rank, else with ".rank<R>"
  /// before the extension (steps.csv -> steps.rank1.csv).
  std::string perRankPath(const std::string &path) const;

  /// A normal end: MPI_Finalize.
  void finish();
  /// After an error on this rank: end every rank (MPI_Abort) so that none
  /// waits for this one. Returns for a single process.
  void abortAll(int code);

private:
  std::shared_ptr<rt::Communicator> comm_;
  /// MPI's finalize / abort, when MPI runs this process.
  void (*finish_)(rt::Communicator &) = nullptr;
  void (*abort_)(rt::Communicator &, int) = nullptr;
};

/// The state names of the master weights: the buffers the plan's optimizer
/// calls (kernel.sgd_step, kernel.adam_step) update.
std::set<std::string> masterWeightNames(const rt::Plan &plan);

/// A checksum (FNV-1a, 64 bits) of the master weights in `state`, in state
/// order. Equal on every rank while their training agrees.
uint64_t masterWeightsChecksum(const rt::Plan &plan,
                               const std::vector<rt::NamedTensor> &state);

/// Whether the plan reduces over ranks (it has comm.* calls): made with
/// --mp-training="... data-parallel=true".
bool isDataParallel(const rt::Plan &plan);

} // namespace mp::tools

#endif // MP_TOOLS_MP_RUN_RANKS_H
