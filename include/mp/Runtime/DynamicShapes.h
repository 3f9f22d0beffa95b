//===- DynamicShapes.h - plans that take a range of input shapes -*- C++
//-*-===//
//
// A dynamic-shape plan (format 1.9) is compiled for a range of each of its
// symbols (a batch of 1 to 8, a sequence of 16 to 128: a profile, as
// TensorRT's) and runs any size within the ranges from one file:
//
//  * Plan::symbols names the symbols and their ranges. Every symbol is a dim
//    of some input: the runtime takes its value from the inputs' shapes
//    (bindSymbols).
//  * The plan's shapes and integer attributes are those at every symbol's
//    maximum; the ones that change with the symbols also carry a polynomial
//    in them (PlanBuffer::symbolicShape, PlanCall::symbolicAttributes).
//  * The arena is planned for the maxima: at smaller sizes every buffer
//    keeps its offset and uses the start of its slot.
//  * A weight that changes with the symbols (a constant the compiler
//    computed from them, as a causal mask or position ids) is the leading
//    corner of its largest form, which the plan holds.
//
// specializePlan makes the static plan for given symbol values, which the
// executors run (CpuExecutor does so by itself, per input shapes).
//
// The compiler makes a dynamic-shape plan from static plans compiled at
// sample points of the ranges (planSampling, generalizePlans): every value
// that changes between them must be a polynomial in the symbols with
// integer coefficients, of degree < 3 in each symbol (a batch's sizes are
// linear in it, an attention's scores quadratic in the sequence length). The
// fit is exact on a grid of each symbol's minimum, middle and maximum and
// checked at further points (each symbol's value next to its minimum and
// maximum, of the other parity); a value that is not such a polynomial (a
// strided convolution's output size over a dynamic image size, which
// halves) is refused with its name. docs/plan-format.md has the details.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_DYNAMICSHAPES_H
#define MP_RUNTIME_DYNAMICSHAPES_H

#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mp::rt {

/// At most this many symbols per plan (the fit compiles 3^symbols points).
constexpr size_t kMaxPlanSymbols = 3;

/// Where a dynamic-shape plan is compiled: one value per symbol per point.
struct PlanSampling {
  /// Per symbol, ascending: the values the fit uses (minimum, middle,
  /// maximum; fewer for a range of fewer values).
  std::vector<std::vector<int64_t>> fitValues;
  /// The grid of fitValues (row-major, the last symbol fastest: the last
  /// grid point has every symbol at its maximum), then the check points.
  std::vector<std::vector<int64_t>> points;
  size_t gridSize = 0;
};

/// The sample points for `symbols`; an error for a bad range or too many
/// symbols.
Result<PlanSampling> planSampling(const std::vector<PlanSymbol> &symbols);

/// The dynamic-shape plan of `plans`, compiled at sampling.points (in that
/// order) from one model. Errors name what differs between the plans in a
/// way a dynamic-shape plan cannot express (structure, a value that is not a
/// polynomial in the symbols, a weight that is not a corner of its largest
/// form, state), with the sample points.
Result<Plan> generalizePlans(const std::vector<PlanSymbol> &symbols,
                             const PlanSampling &sampling,
                             const std::vector<Plan> &plans);

/// The symbols' values for the given input shapes (by input name): each
/// symbol from an input dim that is the symbol itself. Errors: an input of
/// the wrong rank, a dim that disagrees with another, a value outside the
/// symbol's range.
Result<std::vector<int64_t>>
bindSymbols(const Plan &plan,
            const std::vector<std::pair<std::string, Shape>> &inputShapes);

/// The static plan for the symbols' values (in range): shapes and
/// attributes evaluated, arena offsets kept, weight corners copied out.
Result<Plan> specializePlan(const Plan &plan,
                            const std::vector<int64_t> &values);

/// "name=value, ..." for messages.
std::string describeSymbolValues(const std::vector<PlanSymbol> &symbols,
                                 const std::vector<int64_t> &values);

/// A buffer's shape with its symbolic dims spelled out, e.g.
/// "[batch, 32, 4*seq]" (a static buffer's as describeTensorType).
std::string symbolicShapeString(const Plan &plan, const PlanBuffer &buffer);

/// The symbols and their ranges, e.g. "batch 1..8, seq 16..128".
std::string describeSymbols(const std::vector<PlanSymbol> &symbols);

/// Why a plan's symbols and symbolic values are inconsistent, or "" (a part
/// of validatePlan).
std::string checkPlanSymbols(const Plan &plan);

} // namespace mp::rt

#endif // MP_RUNTIME_DYNAMICSHAPES_H
