//===- Train.h - mp-run --train: training with a training plan ----*- C++
//-*-===//
//
// mp-run --train runs a training plan (a plan with PlanTrainingInfo, format
// 1.1) once per batch of a data set for some epochs: the plan's State
// buffers (parameters, optimizer and loss-scale state) persist in the CPU
// executor from one step to the next. It reports the loss, the training
// accuracy, the accuracy (or MSE) of an inference plan that gets the current
// state as its weights, skipped steps and the loss scale, and can save the
// trained plan (CpuExecutor::planWithState). Under `mpirun -np N` it is one
// rank of a data-parallel run (Ranks.h). docs/runtime.md, "mp-run
// --train", and docs/training.md, "Data-parallel training", describe it.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TOOLS_MP_RUN_TRAIN_H
#define MP_TOOLS_MP_RUN_TRAIN_H

#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Plan.h"
#if MP_HAVE_CUDA_BACKEND
#include "mp/Runtime/CUDA/CudaExecutor.h"
#endif

#include <cstdint>
#include <string>

namespace mp::tools {

/// An error to report: the file it is about (may be empty) and the message.
struct Failure {
  std::string file;
  std::string message;
};

struct TrainOptions {
  std::string planPath;
  std::string dataPath, labelsPath;
  int epochs = 1;
  /// 0: the plan's batch size; else it must be the plan's.
  int batch = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  std::string evalPlanPath, evalDataPath, evalLabelsPath;
  std::string savePath;        ///< the trained plan (empty: not saved)
  std::string logPath;         ///< one CSV row per epoch
  std::string stepLogPath;     ///< one CSV row per step
  bool printPlan = false;      ///< print the plan first (mp-run's --print-plan)
  bool timing = false;         ///< print the time per call kind at the end
  size_t timingCalls = 10;     ///< and this many of the slowest calls
  std::string backend = "cpu"; ///< cpu, cpu-ref or cuda (mp-run --backend)
  int threads = 0;             ///< mp-run --threads (0: not given)
  std::string cudaBatchNorm = "auto"; ///< mp-run --cuda-batch-norm
  /// mp-run --weights / --unchecked-weights: fill the plan's external
  /// weights from this directory or plan file first.
  std::string weightsPath;
  bool uncheckedWeights = false;
  /// Rank 0 writes the plan with its state here after every epoch, with
  /// the epochs done (a checkpoint --resume continues).
  std::string checkpointPath;
  /// The plan is a checkpoint: go on from the epoch after its epochs_done,
  /// with the data order those epochs have in an uninterrupted run.
  bool resume = false;
  /// Rank 0 writes every state buffer as <stateDir>/<name>.npy at the end.
  std::string stateDir;
  /// The deadline of each collective of a data-parallel run, in seconds.
  double collectiveTimeout = 300;
  /// Testing the failure handling (--simulate-failure=R:S:MODE): rank R,
  /// before its step S (counted from 1 over the whole run), exits at once
  /// ("exit"), stops answering ("hang") or changes its master weights
  /// ("corrupt"). failRank < 0: none.
  int failRank = -1;
  int64_t failStep = 0;
  std::string failMode;
};

/// Fills the external weights of `plan` (read from `planPath`) from
/// `weightsPath` (mp-run --weights; empty: none given), printing what it did
/// on stderr. False with `failure` set on an error, and when the plan has
/// external weights and no weights were given. Defined in mp-run.cpp.
bool fillWeights(rt::Plan &plan, const std::string &planPath,
                 const std::string &weightsPath, bool unchecked,
                 Failure &failure);

#if MP_HAVE_CUDA_BACKEND
/// The CUDA executor's options for a --cuda-batch-norm value that mp-run
/// checked (auto, spatial, own). Defined in mp-run.cpp.
rt::CudaExecutorOptions cudaExecutorOptions(const std::string &batchNorm);
#endif

/// The CPU executor's options for a --backend value (cpu: the fast kernels
/// where they apply; cpu-ref: the reference kernels only) and --threads (0:
/// not given). Defined in mp-run.cpp.
rt::CpuExecutorOptions cpuExecutorOptions(const std::string &backend,
                                          int threads);

/// --timing's report of an executor: the time per call kind and the
/// `slowestCalls` slowest calls, for the CPU each with what runs it, after
/// the CPU's instruction set. Defined in mp-run.cpp.
std::string timingReport(const rt::CpuExecutor &exec, size_t slowestCalls);
/// --print-plan's list of what runs each call ("call #0 (kind at node 'n'):
/// onednn:brg:avx512_core_bf16"), after the CPU's kernels and threads.
/// Defined in mp-run.cpp.
void printImplementations(const rt::CpuExecutor &exec);
#if MP_HAVE_CUDA_BACKEND
std::string timingReport(const rt::CudaExecutor &exec, size_t slowestCalls);
#endif

/// Prints a plan's inputs, outputs, buffers, calls and training information
/// (mp-run --print-plan; defined in mp-run.cpp).
void printPlan(const rt::Plan &plan);

/// Trains, as one rank of the MPI job that started the process (Ranks.h)
/// or alone; 0 on success. An error is given to `report` (prefixed with
/// the rank when there are several), then every rank ends: the exit code.
int runTraining(const TrainOptions &options,
                int (*report)(const Failure &failure));

} // namespace mp::tools

#endif // MP_TOOLS_MP_RUN_TRAIN_H
