//===- FastCalls.h - plan calls prepared on a CPU library -------*- C++ -*-===//
//
// The CPU backend has two kinds of kernels. The reference kernels (Calls.h,
// Kernels.h) are exact and portable: they run every call. The fast ones are
// library primitives (oneDNN) prepared once when a plan is loaded, for the
// calls, shapes and dtypes the library covers on this CPU: matmul,
// convolution (forward and both gradients), pooling, batch norm (inference,
// training and backward), layer norm, LRN, LSTM, GRU and RNN cells, softmax
// and the common elementwise functions, in f32, in bf16 where the CPU has
// bf16 dot products (avx512_core_bf16, AMX; f32 accumulation, one rounding)
// and, for f16 storage, in f32 on f32 copies. A call the library does not cover
// keeps its reference kernel, and says why (docs/runtime.md, "Fast CPU
// kernels").
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_FASTCALLS_H
#define MP_RUNTIME_CPU_FASTCALLS_H

#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mp::rt::cpu {

/// Which kernels a CPU executor runs.
enum class CpuKernels {
  Fast,     ///< library primitives where they apply, else the reference
  Reference ///< the exact reference kernels only (mp-run --backend=cpu-ref)
};

/// A call bound to its buffers with a library primitive made for them.
class PreparedCall {
public:
  virtual ~PreparedCall() = default;
  /// Scratch memory run() needs (the executor's workspace).
  virtual size_t scratchBytes() const = 0;
  /// Runs the call on the buffers it was prepared with.
  virtual Status run(void *scratch) = 0;
  /// The library's name of the implementation, e.g.
  /// "onednn:brg:avx512_core_bf16".
  virtual const std::string &implementation() const = 0;
};

/// What prepareFastCall found for a call.
struct FastCallChoice {
  std::unique_ptr<PreparedCall> call; ///< null: the reference kernel runs it
  std::string why; ///< with no call: the reason (for --timing / --print-plan)
  /// The call reads (writes) FilterSource::buffer instead of its own filter
  /// operand (dw result).
  bool filterFromSource = false;
};

/// The channels-first buffer behind a channels-last convolution's filter:
/// a training step makes the filter operand from its f32 master weight by a
/// cast and a transpose on every run, and the backward-filter call's dw goes
/// back to a channels-first f32 gradient the same way. `buffer` is that
/// weight or gradient, [M, C/g, k...] in its own dtype; a call that binds it
/// lets its reorder into (out of) the library's layout do the cast and the
/// transpose, and the plan's calls between are not needed.
struct FilterSource {
  TensorView buffer;
  bool constant = false; ///< a weight: reordered once
};

/// A fast implementation of `call` on these views, made once. `constant[k]`
/// says that operand k never changes while the plan is loaded (a weight):
/// the library may then keep it reordered into its own layout. The views
/// must stay valid (the executor's buffers) for the prepared call's life.
/// `filter` (convolutions only) offers the filter's channels-first buffer.
/// Never fails: a call it cannot prepare gets a reason instead.
FastCallChoice prepareFastCall(const PlanCall &call,
                               const std::vector<TensorView> &operands,
                               const std::vector<TensorView> &results,
                               const std::vector<bool> &constant,
                               const FilterSource *filter = nullptr);

/// Bytes of weights that the process's fast calls hold in a primitive's
/// layout or as f32 copies of f16 weights: made once per weight and layout,
/// and shared by every executor whose plan has those weight bytes (copies of
/// one loaded plan); freed with the last call that reads them. 0 without
/// oneDNN.
size_t preparedConstantBytes();

/// Whether this build has the fast kernels (oneDNN), and the instruction
/// set they use on this CPU (e.g. "avx512_core_bf16"; "none" without).
bool haveFastKernels();
std::string fastKernelIsa();
/// Whether the fast kernels compute f16 data as f16 on this CPU (oneDNN's
/// f16 kernels: AVX512-FP16, AVX2-VNNI-2; f32 accumulation, one rounding)
/// rather than through f32 copies of it.
bool fastKernelsComputeF16();

/// The threads the CPU kernels use on the calling thread (OpenMP's
/// omp_get_max_threads; 1 in a build without OpenMP).
int cpuThreads();

/// Before an executor's run, on the thread that runs it: OpenMP's threads
/// (`threads` >= 1; 0 keeps OpenMP's default), and OpenBLAS's (the
/// reference kernels' GEMMs): with Fast kernels one, since OpenBLAS's own
/// threads spin after each GEMM and starve oneDNN's OpenMP threads (a bf16
/// LSTM plan, whose recurrence runs on OpenBLAS, ran 35x slower with both
/// on 2 cores); with Reference kernels `threads`, or OpenBLAS's default.
void configureCpuThreads(CpuKernels kernels, int threads);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_FASTCALLS_H
