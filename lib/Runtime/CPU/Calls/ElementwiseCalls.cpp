//===- ElementwiseCalls.cpp - kernel.elementwise, cast, reduce on the CPU -===//
//
// docs/plan-format.md, "Call reference":
//   kernel.elementwise  inputs... -> y   fn, alpha?, beta?
//   kernel.fused_elementwise  inputs... -> y   program
//   kernel.cast         x -> y           saturate?
//   kernel.reduce       x -> y           fn, axes, compute_type,
//                                        select_last_index?
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"

namespace mp::rt::cpu {

namespace {

/// An optional float attribute: absent gives nullopt (the kernel's default).
Result<std::optional<double>> optionalFloat(const PlanCall &call,
                                            std::string_view name) {
  if (!call.attr(name))
    return std::optional<double>();
  Result<double> v = floatAttr(call, name);
  if (!v)
    return v.status();
  return std::optional<double>(*v);
}

Status elementwiseCall(const CallArgs &args) {
  if (args.operands.empty())
    return Status::error("expects 1 or more operands, got 0");
  if (Status s =
          checkArity(args, args.operands.size(), args.operands.size(), 1, 1);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(e, elementwiseCallOf(args.call));
  return elementwise(e.fn, args.operands, args.results[0], e.params);
}

Status fusedElementwiseCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, kMaxFusedInputs, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(program, fusedProgramOf(args.call, args.operands.size()));
  return fusedElementwise(program, args.operands, args.results[0]);
}

Status castCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  Result<int64_t> saturate = intAttr(args.call, "saturate", 1);
  if (!saturate)
    return saturate.status();
  MP_RT_TRY_ASSIGN(roundMode, roundModeOf(args.call));
  return cast(args.operands[0], args.results[0], *saturate != 0, roundMode);
}

Status reduceCall(const CallArgs &args) {
  if (Status s = checkArity(args, 1, 1, 1, 1); !s)
    return s;
  Result<std::string> name = stringAttr(args.call, "fn");
  if (!name)
    return name.status();
  std::optional<ReduceFn> fn = parseReduceFn(*name);
  if (!fn)
    return Status::error("unknown reduce fn '" + *name + "'");
  Result<std::vector<int64_t>> axes = intListAttr(args.call, "axes");
  if (!axes)
    return axes.status();
  ReduceOptions options;
  // compute_type is written by the compiler; a hand-made plan may omit it
  // (the kernel then picks f32 or f64 from x's dtype).
  if (args.call.attr("compute_type")) {
    Result<DType> computeType = dtypeAttr(args.call, "compute_type");
    if (!computeType)
      return computeType.status();
    options.computeType = *computeType;
  }
  Result<int64_t> last = intAttr(args.call, "select_last_index", 0);
  if (!last)
    return last.status();
  options.selectLastIndex = *last != 0;
  return reduce(args.operands[0], args.results[0], *fn, *axes, options);
}

} // namespace

Result<ElementwiseCall> elementwiseCallOf(const PlanCall &call) {
  MP_RT_TRY_ASSIGN(name, stringAttr(call, "fn"));
  std::optional<ElementwiseFn> fn = parseElementwiseFn(name);
  if (!fn)
    return Status::error("unknown elementwise fn '" + name + "'");
  MP_RT_TRY_ASSIGN(alpha, optionalFloat(call, "alpha"));
  MP_RT_TRY_ASSIGN(beta, optionalFloat(call, "beta"));
  return ElementwiseCall{*fn, ElementwiseParams{alpha, beta}};
}

Result<FusedProgram> fusedProgramOf(const PlanCall &call, size_t numInputs) {
  MP_RT_TRY_ASSIGN(text, stringAttr(call, "program"));
  std::string why;
  std::optional<FusedProgram> program = parseFusedProgram(text, numInputs, why);
  if (!program)
    return Status::error("program '" + text + "': " + why);
  return std::move(*program);
}

void addElementwiseCalls(CallTable &table) {
  MP_ADD_CALL("kernel.elementwise", &elementwiseCall);
  MP_ADD_CALL("kernel.fused_elementwise", &fusedElementwiseCall);
  MP_ADD_CALL("kernel.cast", &castCall);
  MP_ADD_CALL("kernel.reduce", &reduceCall);
}

} // namespace mp::rt::cpu
