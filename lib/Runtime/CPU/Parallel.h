//===- Parallel.h - the CPU kernels' threads --------------------*- C++ -*-===//
//
// The kernels that stream memory (elementwise functions, casts, the
// optimizer steps, the f16 copies of the fast calls) split a large tensor into
// contiguous ranges over the CPU threads, and those made of independent items
// (pooling backward's slices, a transpose's tiles) split the items, with OpenMP
// where the runtime is built with it (with oneDNN, whose threads are OpenMP's
// too: the same pool and the same count, CpuExecutorOptions::threads or
// OMP_NUM_THREADS). Every element is computed the same way whatever the split,
// so results do not depend on the number of threads. Private to
// lib/Runtime/CPU.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_CPU_PARALLEL_H
#define MP_LIB_RUNTIME_CPU_PARALLEL_H

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mp::rt::cpu::detail {

/// Below this many elements a kernel runs on the calling thread alone: a
/// parallel region costs microseconds, a core streams 64 Ki floats in about
/// as long.
constexpr int64_t kParallelMinElements = int64_t(1) << 16;

/// fn(begin, end) over [0, n) in one contiguous range per thread, the
/// boundaries on multiples of 64 elements (whole cache lines, so that no two
/// threads write one); one range on the calling thread for small n, inside
/// another parallel region, or without OpenMP.
template <typename Fn> void parallelRanges(int64_t n, Fn &&fn) {
#ifdef _OPENMP
  int threads = n >= kParallelMinElements && !omp_in_parallel()
                    ? omp_get_max_threads()
                    : 1;
  if (threads > 1) {
    const int64_t lines = (n + 63) / 64;
#pragma omp parallel num_threads(threads)
    {
      const int64_t t = omp_get_thread_num(), count = omp_get_num_threads();
      const int64_t begin = lines * t / count * 64;
      const int64_t end = std::min(n, lines * (t + 1) / count * 64);
      if (begin < end)
        fn(begin, end);
    }
    return;
  }
#endif
  fn(int64_t(0), n);
}

/// fn(item) for every item in [0, items), the items split over the CPU
/// threads when there are several and they hold at least
/// kParallelMinElements elements together (`elementsPerItem` each): for
/// kernels whose items write disjoint outputs, each computed the same way
/// whatever the split.
template <typename Fn>
void parallelItems(int64_t items, int64_t elementsPerItem, Fn &&fn) {
#ifdef _OPENMP
  if (items > 1 && items * elementsPerItem >= kParallelMinElements &&
      !omp_in_parallel() && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < items; ++i)
      fn(i);
    return;
  }
#endif
  for (int64_t i = 0; i < items; ++i)
    fn(i);
}

/// fn(item, slot) for every item in [0, items), handed out one at a time to
/// at most `slots` threads; `slot` in [0, slots) is the thread's, so that
/// fn may use per-slot state (scratch) without locks. On the calling thread
/// alone (slot 0) inside another parallel region or without OpenMP.
template <typename Fn> void parallelSlots(int64_t items, int slots, Fn &&fn) {
#ifdef _OPENMP
  const int threads =
      omp_in_parallel() ? 1 : std::min(slots, omp_get_max_threads());
  if (items > 1 && threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t i = 0; i < items; ++i)
      fn(i, omp_get_thread_num());
    return;
  }
#endif
  for (int64_t i = 0; i < items; ++i)
    fn(i, 0);
}

} // namespace mp::rt::cpu::detail

#endif // MP_LIB_RUNTIME_CPU_PARALLEL_H
