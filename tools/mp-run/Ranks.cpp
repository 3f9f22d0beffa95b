//===- Ranks.cpp - mp-run --train's processes under mpirun ----------------===//
#include "Ranks.h"

#if MP_HAVE_MPI
#include "mp/Runtime/MpiCommunicator.h"
#endif

#include <cstdlib>
#include <filesystem>
#include <set>

namespace mp::tools {

using namespace mp::rt;

Result<Ranks> Ranks::start(double collectiveTimeoutSeconds) {
  Ranks ranks;
#if MP_HAVE_MPI
  if (launchedByMpi()) {
    Result<std::shared_ptr<MpiCommunicator>> mpi = MpiCommunicator::init();
    if (!mpi)
      return mpi.status();
    ranks.comm_ = mpi.take();
    ranks.finish_ = [](Communicator &c) {
      static_cast<MpiCommunicator &>(c).finalize();
    };
    ranks.abort_ = [](Communicator &c, int code) {
      static_cast<MpiCommunicator &>(c).abort(code);
    };
  }
#else
  if (int n = launcherWorldSize(); n > 1)
    return Status::error(
        "started as one of " + std::to_string(n) +
        " ranks, but this mp-run was built without MPI (install "
        "libopenmpi-dev and rebuild; docs/training.md, \"Data-parallel "
        "training\")");
#endif
  if (!ranks.comm_)
    ranks.comm_ = makeSingleProcessCommunicator();
  ranks.comm_->setTimeoutSeconds(collectiveTimeoutSeconds);
  return ranks;
}

Status Ranks::sum(std::vector<double> &values) {
  return comm_->allReduce(values.data(), values.size(), DType::F64,
                          CollectiveOp::Sum);
}

Result<bool> Ranks::agree(uint64_t value, uint64_t &low, uint64_t &high) {
  // One collective: max(v) and max(~v) = ~min(v).
  uint64_t both[2] = {value, ~value};
  if (Status s = comm_->allReduce(both, 2, DType::U64, CollectiveOp::Max); !s)
    return s;
  high = both[0];
  low = ~both[1];
  return low == high;
}

std::string Ranks::perRankPath(const std::string &path) const {
  if (!distributed())
    return path;
  std::filesystem::path p(path);
  std::string name = p.stem().string() + ".rank" + std::to_string(rank()) +
                     p.extension().string();
  return (p.parent_path() / name).string();
}

void Ranks::finish() {
  if (finish_)
    finish_(*comm_);
}

void Ranks::abortAll(int code) {
  if (abort_ && distributed())
    abort_(*comm_, code);
  else
    finish();
}

std::set<std::string> masterWeightNames(const Plan &plan) {
  std::set<std::string> masters;
  for (const PlanCall &c : plan.calls)
    if ((c.kind == "kernel.sgd_step" || c.kind == "kernel.adam_step") &&
        !c.results.empty())
      if (const PlanBuffer *b = plan.buffer(c.results[0]))
        masters.insert(stateName(plan, *b));
  return masters;
}

uint64_t masterWeightsChecksum(const Plan &plan,
                               const std::vector<NamedTensor> &state) {
  const std::set<std::string> masters = masterWeightNames(plan);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const NamedTensor &t : state) {
    if (!masters.count(t.name))
      continue;
    const auto *bytes = static_cast<const unsigned char *>(t.tensor.data());
    for (size_t i = 0; i < t.tensor.byteCount(); ++i) {
      hash ^= bytes[i];
      hash *= 0x100000001b3ull;
    }
  }
  return hash;
}

bool isDataParallel(const Plan &plan) {
  for (const PlanCall &c : plan.calls)
    if (c.kind.rfind("comm.", 0) == 0)
      return true;
  return false;
}

} // namespace mp::tools
