//===- ElementwiseKernels.h - elementwise, cast and reduce on the CPU -*- C++
//-*-===//
//
// The CPU backend's project kernels behind the plan calls
// "kernel.elementwise", "kernel.cast" and "kernel.reduce"
// (docs/plan-format.md, "Call reference").
//
// As the other CPU kernels (Kernels.h): tensors are dense, row-major views;
// f16 / bf16 are stored as 16 bits and computed in f32 with one rounding at
// the store; f64 computes in f64; integers compute in their own type (with
// two's-complement wrap-around); bool is one byte holding 0 or 1. Arguments
// are checked and an error Status names the problem; outputs are written in
// full and must not overlap the inputs (an output that is exactly an input
// of the same dtype and shape, i.e. in place, is fine for elementwise).
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_ELEMENTWISEKERNELS_H
#define MP_RUNTIME_CPU_ELEMENTWISEKERNELS_H

#include "mp/Runtime/ElementwiseFunctions.h"
#include "mp/Runtime/FusedProgram.h"
#include "mp/Runtime/NarrowTypes.h"
#include "mp/Runtime/ReduceFunctions.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace mp::rt::cpu {

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

struct ElementwiseParams {
  /// ONNX's defaults for the function when absent.
  std::optional<double> alpha, beta;
};

/// The alpha and beta fn runs with: the given ones, or ONNX's defaults for
/// the absent ones (0 where fn takes none). Both backends resolve them here.
std::pair<double, double> resolveAlphaBeta(ElementwiseFn fn,
                                           const ElementwiseParams &given);

/// y = fn(inputs...), every input broadcast (numpy rules) to y's shape.
///
/// Dtypes: the inputs and y share one dtype, except: comparisons, is_nan and
/// is_inf give a bool y; where's condition is bool; pow's exponent may be
/// any numeric dtype (an integer base computes in f64 and truncates). Max
/// and Min propagate NaN (numpy.maximum / numpy.minimum). Mod on floats is
/// numpy.mod (the sign of the divisor), Fmod is std::fmod.
Status elementwise(ElementwiseFn fn, const std::vector<TensorView> &inputs,
                   const TensorView &y, const ElementwiseParams &params = {});

/// y = a fused program (mp/Runtime/FusedProgram.h) of the inputs, each
/// broadcast to y's shape: every step computes in f32 as `elementwise` does
/// (the same functions), and y is rounded once at the store. Inputs and y
/// are f16, bf16 or f32; y may be an input of its own dtype and shape (in
/// place), and must not partly overlap one. With `vectorMath` (the fast CPU
/// path), exp, sigmoid and tanh use vectorised approximations within a few
/// f32 ulps instead of libm's (the reference).
Status fusedElementwise(const FusedProgram &program,
                        const std::vector<TensorView> &inputs,
                        const TensorView &y, bool vectorMath = false);

/// fusedElementwise bound to its buffers: checked, the functions chosen and
/// the broadcast worked out once (a prepared call runs it on every run).
class FusedElementwiseKernel {
public:
  static Result<FusedElementwiseKernel>
  bind(const FusedProgram &program, const std::vector<TensorView> &inputs,
       const TensorView &y, bool vectorMath);
  /// Computes y from the inputs' current values.
  void run() const;

  struct Bound;

private:
  std::shared_ptr<const Bound> bound_;
};

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// y = x converted to y's dtype; x and y have the same number of elements
/// (shapes may differ). Any dtype to any: float -> integer truncates toward
/// zero (NaN gives 0, out-of-range values saturate), integer -> integer wraps
/// (two's complement), anything -> bool is != 0 (NaN is true), bool -> number
/// is 0 or 1; to f16 / bf16 rounds once to nearest even (f64 and integers go
/// through f64, f16 <-> bf16 through the exact f32). To and from the narrow
/// types (float8, float4, int4, int2: NarrowTypes.h) through the exact f64
/// value, rounded by encodeNarrow: `saturate` (ONNX Cast's attribute) for
/// float8 values beyond the type's range, `roundMode` (Cast-25's) for float8
/// e8m0 results.
Status cast(const TensorView &x, const TensorView &y, bool saturate = true,
            narrow::RoundMode roundMode = narrow::RoundMode::Up);
/// cast's checks without running it (shared with the CUDA backend's
/// planning).
Status checkCast(const TensorView &x, const TensorView &y);

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

/// The fn of a plan call ("sum", "log_sum_exp", "argmax", ...), if it is one
/// (ReduceFunctions.h has the enum and reduceFnName).
std::optional<ReduceFn> parseReduceFn(std::string_view name);

struct ReduceOptions {
  /// f32 (for f32, f16, bf16 data) or f64. Floating-point data never
  /// accumulates in less than that; sums and products accumulate in f64
  /// whatever it says (one rounding at the store). Integer data reduces
  /// exactly in 64-bit integers (l2, log_sum, log_sum_exp in f64) and ignores
  /// it.
  std::optional<DType> computeType;
  /// ArgMax / ArgMin: the last index of the extreme instead of the first.
  bool selectLastIndex = false;
};

/// y = fn of x over `axes` (distinct, in [-rank, rank), not empty), as ONNX
/// Reduce* / ArgMax / ArgMin. y's shape is x's with the reduced dims kept as
/// 1 (rank of x) or dropped (a smaller rank). Dtypes: y has x's dtype (i64
/// for ArgMax / ArgMin); floats and integers (8 to 64 bits). A reduction
/// over nothing (a reduced dim of size 0) gives the identity: 0 for sum,
/// l1, l2, sum_square (and an integer mean); 1 for prod; -inf (the lowest
/// integer) for max and log_sum_exp; +inf (the highest integer) for min;
/// log(0) = -inf for log_sum; a float mean is 0 / 0 = NaN (numpy.mean).
/// ArgMax / ArgMin over an empty axis is an error. NaN counts as the
/// extreme (numpy.argmax / numpy.maximum).
Status reduce(const TensorView &x, const TensorView &y, ReduceFn fn,
              const std::vector<int64_t> &axes,
              const ReduceOptions &options = {});
/// reduce's checks of axes, shapes and dtypes without running it (shared
/// with the CUDA backend's planning); `reduced` gets which dims of x the
/// axes name.
Status checkReduce(const TensorView &x, const TensorView &y, ReduceFn fn,
                   const std::vector<int64_t> &axes,
                   const ReduceOptions &options, std::vector<bool> &reduced);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_ELEMENTWISEKERNELS_H
