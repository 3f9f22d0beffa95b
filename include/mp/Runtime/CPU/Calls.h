//===- Calls.h - plan calls on the CPU backend --------------------*- C++ -*-===//
//
// The CPU backend runs a plan call by call. Each call kind ("cublaslt.matmul",
// "kernel.elementwise", ...; docs/plan-format.md, "Call reference") has an
// implementation, a CallFn, that reads the call's attributes, checks what it
// needs and runs the kernel on views of the call's buffers.
//
// The implementations are grouped by family in lib/Runtime/CPU/Calls/*.cpp;
// each file has an add*Calls(CallTable &) function, and cpuCallTable() holds
// them all. No static registration: the runtime is a static library, and
// the linker would drop unreferenced registrars.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_CPU_CALLS_H
#define MP_RUNTIME_CPU_CALLS_H

#include "mp/Runtime/Communicator.h"
#include "mp/Runtime/NarrowTypes.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/Status.h"
#include "mp/Runtime/Tensor.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mp::rt::cpu {

/// What one call works on: views of its operand and result buffers (in the
/// arena or, for operands, the weights), in the order of the call's
/// `operands` and `results`, and the scratch memory of the plan.
struct CallArgs {
  const PlanCall &call;
  std::vector<TensorView> operands;
  std::vector<TensorView> results;
  void *workspace = nullptr;
  size_t workspaceSize = 0;
  /// The ranks of a data-parallel run (comm.* calls); null: one process.
  Communicator *communicator = nullptr;
};

/// Runs one call. Returns an error (without the "call #i (...)" prefix, which
/// the executor adds) for attributes, operand counts, shapes or dtypes it
/// does not accept; it must never touch memory outside the views.
using CallFn = Status (*)(const CallArgs &args);

/// Call kind -> implementation.
class CallTable {
public:
  void add(std::string kind, CallFn fn) { fns_[std::move(kind)] = fn; }
  /// The implementation of `kind`, or null.
  CallFn find(std::string_view kind) const {
    auto it = fns_.find(std::string(kind));
    return it == fns_.end() ? nullptr : it->second;
  }
  /// Every kind, sorted.
  std::vector<std::string> kinds() const;

private:
  std::map<std::string, CallFn> fns_;
};

/// One line of a family's registration list, in add*Calls(CallTable
/// &table): `fn` implements the call kind `kind`.
#define MP_ADD_CALL(kind, fn) table.add((kind), (fn))

/// All CPU call implementations.
const CallTable &cpuCallTable();

// The families (lib/Runtime/CPU/Calls/*.cpp).
void addLibraryCalls(CallTable &table);     ///< cublaslt.*, cudnn.*
void addElementwiseCalls(CallTable &table); ///< elementwise, cast, reduce
void addDataCalls(CallTable &table);        ///< data movement and indexing
void addNNCalls(CallTable &table);          ///< norms, rnn, losses, topk, ...
void addTrainingCalls(CallTable &table);    ///< backward, loss scale, optimizers
void addCollectiveCalls(CallTable &table);  ///< comm.* (data-parallel ranks)

//===----------------------------------------------------------------------===//
// Reading attributes and checking counts, for the implementations
//===----------------------------------------------------------------------===//

/// Each returns an error naming the attribute ("attribute 'axis' is
/// missing", "attribute 'axis' must be an int") when it is absent (and no
/// default is given) or of another type. Bool attributes are ints (0/1).
Result<int64_t> intAttr(const PlanCall &call, std::string_view name);
Result<int64_t> intAttr(const PlanCall &call, std::string_view name,
                        int64_t defaultValue);
Result<double> floatAttr(const PlanCall &call, std::string_view name);
Result<double> floatAttr(const PlanCall &call, std::string_view name,
                         double defaultValue);
Result<std::string> stringAttr(const PlanCall &call, std::string_view name);
Result<std::string> stringAttr(const PlanCall &call, std::string_view name,
                               std::string defaultValue);
/// kernel.cast's `round_mode` ("up", the default, "down" or "nearest":
/// Cast-25's, for float8 e8m0 results).
Result<narrow::RoundMode> roundModeOf(const PlanCall &call);
Result<std::vector<int64_t>> intListAttr(const PlanCall &call,
                                         std::string_view name);
Result<std::vector<int64_t>>
intListAttr(const PlanCall &call, std::string_view name,
            std::vector<int64_t> defaultValue);
Result<std::vector<double>> floatListAttr(const PlanCall &call,
                                          std::string_view name);
Result<std::vector<double>>
floatListAttr(const PlanCall &call, std::string_view name,
              std::vector<double> defaultValue);
/// A dtype attribute (an ONNX TensorProto::DataType code).
Result<DType> dtypeAttr(const PlanCall &call, std::string_view name);
/// A bool attribute: an int that must be 0 or 1.
Result<bool> boolAttr(const PlanCall &call, std::string_view name);
Result<bool> boolAttr(const PlanCall &call, std::string_view name,
                      bool defaultValue);
/// Attribute 'layout' of conv_fwd, pool and the batch norms: "nchw" (the
/// default, ONNX's) or "nhwc" (channels last); true for "nhwc".
Result<bool> channelsLastAttr(const PlanCall &call);
/// For calls whose CPU kernel is channels-first only (the backward
/// convolutions): a channels-last tensor [N, spatial..., C] copied to
/// [N, C, spatial...], and such a result written back channels last. (The
/// CPU backend is the reference; cuDNN runs these calls channels last
/// natively.)
HostTensor channelsFirstCopy(const TensorView &channelsLast);
Status writeChannelsLast(const TensorView &channelsFirst,
                         const TensorView &channelsLast);
/// Whether the optional buffer `name` is there: the attribute has_<name>,
/// which the serializer writes for every optional buffer (required, 0 or 1).
Result<bool> hasBuffer(const PlanCall &call, std::string_view name);
/// The same for a buffer newer than the call itself (a matmul's bias_grad,
/// format 1.8): plans written before it lack the attribute, meaning
/// `absent`.
Result<bool> hasBuffer(const PlanCall &call, std::string_view name,
                       bool absent);

/// One buffer of a call's operand or result list, by its name in the call
/// reference; optional ones are placed by their has_<name> attribute.
struct BufferSpec {
  const char *name;
  bool optional;
  /// An optional buffer newer than the call: plans written before it have
  /// no has_<name> attribute, which then means absent.
  bool newerThanCall = false;
};

/// The views of a call's buffers (operands or results, `what`) in the order
/// of `specs`, null for absent optional ones; an error unless the number of
/// buffers the call has is what its has_* attributes say.
/// (Generic over the buffer type: views here, device descriptors in the CUDA
/// backend's planning.)
template <size_t N, typename Buffer>
Status bindBuffers(const PlanCall &call, const std::vector<Buffer> &given,
                   const char *what, const std::array<BufferSpec, N> &specs,
                   std::array<const Buffer *, N> &out) {
  std::array<bool, N> present{};
  size_t expected = 0;
  for (size_t i = 0; i < N; ++i) {
    present[i] = true;
    if (specs[i].optional) {
      Result<bool> has = specs[i].newerThanCall &&
                                 !call.attr("has_" + std::string(specs[i].name))
                             ? Result<bool>(false)
                             : hasBuffer(call, specs[i].name);
      if (!has)
        return has.status();
      present[i] = *has;
    }
    expected += present[i];
  }
  if (given.size() != expected)
    return Status::error("expects " + std::to_string(expected) + " " + what +
                         " (from its has_* attributes), got " +
                         std::to_string(given.size()));
  for (size_t i = 0, next = 0; i < N; ++i)
    out[i] = present[i] ? &given[next++] : nullptr;
  return Status::ok();
}

/// bindBuffers of a call's operands (into `in`) and results (into `out`).
template <size_t N, size_t M, typename Buffer>
Status bindCallBuffers(const PlanCall &call,
                       const std::vector<Buffer> &operands,
                       const std::array<BufferSpec, N> &operandSpecs,
                       std::array<const Buffer *, N> &in,
                       const std::vector<Buffer> &results,
                       const std::array<BufferSpec, M> &resultSpecs,
                       std::array<const Buffer *, M> &out) {
  if (Status s = bindBuffers<N>(call, operands, "operands", operandSpecs, in);
      !s)
    return s;
  return bindBuffers<M>(call, results, "results", resultSpecs, out);
}

/// In a function returning Status: `auto var = *expr` for a Result `expr`,
/// or return its error.
#define MP_RT_TRY_ASSIGN(var, expr)                                            \
  auto var##Result = (expr);                                                   \
  if (!var##Result)                                                            \
    return var##Result.status();                                               \
  auto var = var##Result.take()

/// An error naming the first two of the (non-null) views that overlap
/// ("param overlaps step").
Status checkDisjoint(
    std::initializer_list<std::pair<const char *, const TensorView *>> views);

/// Attribute 'compute_type' as the culib verifier checks it: f32 accumulates
/// any float input, and a type accumulates itself (the CPU kernels
/// accumulate 16-bit inputs in f32, at least as precise as the GPU). When
/// not `required`, a left-out compute_type passes.
Status checkComputeType(const PlanCall &call, DType input, bool required);

/// The number of spatial dims of an [N, C, spatial...] tensor `name`, or an
/// error (convolutions, pooling).
Result<size_t> spatialRank(const TensorView &x, std::string_view name);

/// An error unless the call has between minOperands and maxOperands operands
/// and between minResults and maxResults results.
Status checkArity(const CallArgs &args, size_t minOperands, size_t maxOperands,
                  size_t minResults, size_t maxResults);

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_CPU_CALLS_H
