//===- DataCalls.cpp - data movement and indexing calls on the CPU --------===//
//
// kernel.transpose, copy, broadcast, tile, concat, slice, pad, gather,
// gather_elements, gather_nd, scatter_elements, scatter_nd and resize
// (docs/plan-format.md, "Call reference"): each reads the call's attributes
// and runs the kernel of mp/Runtime/CPU/DataKernels.h on the call's views.
// Attributes with an ONNX default (axis 0, batch_dims 0, reduction none,
// Resize's modes, ...) may be absent; the others are required.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/CallOptions.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"

#include <limits>

namespace mp::rt::cpu {

namespace {

Status unknownValue(std::string_view attr, const std::string &value) {
  return Status::error("attribute '" + std::string(attr) +
                       "' has an unknown value '" + value + "'");
}

} // namespace

Result<PadMode> padModeOf(const PlanCall &call) {
  MP_RT_TRY_ASSIGN(modeName, stringAttr(call, "mode", "constant"));
  PadMode mode;
  if (!parsePadMode(modeName, mode))
    return unknownValue("mode", modeName);
  return mode;
}

Result<ScatterReduction> scatterReductionOf(const PlanCall &call) {
  Result<std::string> name = stringAttr(call, "reduction", "none");
  if (!name)
    return name.status();
  ScatterReduction r;
  if (!parseScatterReduction(*name, r))
    return unknownValue("reduction", *name);
  return r;
}

Result<ResizeOptions> resizeOptionsOf(const PlanCall &call) {
  ResizeOptions o;
  MP_RT_TRY_ASSIGN(mode, stringAttr(call, "mode", "nearest"));
  if (!parseResizeMode(mode, o.mode))
    return unknownValue("mode", mode);
  MP_RT_TRY_ASSIGN(transform, stringAttr(call, "coordinate_transformation_mode",
                                         "half_pixel"));
  if (!parseCoordinateTransform(transform, o.coordinateTransform))
    return unknownValue("coordinate_transformation_mode", transform);
  MP_RT_TRY_ASSIGN(nearest,
                   stringAttr(call, "nearest_mode", "round_prefer_floor"));
  if (!parseNearestMode(nearest, o.nearestMode))
    return unknownValue("nearest_mode", nearest);
  MP_RT_TRY_ASSIGN(cubicA, floatAttr(call, "cubic_coeff_a", -0.75));
  MP_RT_TRY_ASSIGN(exclude, intAttr(call, "exclude_outside", 0));
  MP_RT_TRY_ASSIGN(extrapolation, floatAttr(call, "extrapolation_value", 0.0));
  MP_RT_TRY_ASSIGN(scales, floatListAttr(call, "scales"));
  MP_RT_TRY_ASSIGN(roi, floatListAttr(call, "roi", {}));
  o.cubicCoeffA = cubicA;
  o.excludeOutside = exclude != 0;
  o.extrapolationValue = extrapolation;
  o.scales = std::move(scales);
  o.roi = std::move(roi);
  return o;
}

namespace {

Status transposeCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(perm, intListAttr(a.call, "perm"));
  return transpose(a.operands[0], a.results[0], perm);
}

Status copyCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  return copy(a.operands[0], a.results[0]);
}

Status broadcastCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  return broadcast(a.operands[0], a.results[0]);
}

Status tileCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  return tile(a.operands[0], a.results[0]);
}

Status concatCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, std::numeric_limits<size_t>::max(), 1, 1);
      !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(a.call, "axis"));
  return concat(a.operands, a.results[0], axis);
}

Status sliceCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(starts, intListAttr(a.call, "starts"));
  MP_RT_TRY_ASSIGN(steps, intListAttr(a.call, "steps"));
  return slice(a.operands[0], a.results[0], starts, steps);
}

Status padCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(mode, padModeOf(a.call));
  MP_RT_TRY_ASSIGN(pads, intListAttr(a.call, "pads"));
  MP_RT_TRY_ASSIGN(value, floatAttr(a.call, "value", 0.0));
  return pad(a.operands[0], a.results[0], mode, pads, value);
}

Status gatherCall(const CallArgs &a) {
  if (Status s = checkArity(a, 2, 2, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(a.call, "axis", 0));
  return gather(a.operands[0], a.operands[1], a.results[0], axis);
}

Status gatherElementsCall(const CallArgs &a) {
  if (Status s = checkArity(a, 2, 2, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(a.call, "axis", 0));
  return gatherElements(a.operands[0], a.operands[1], a.results[0], axis);
}

Status gatherNDCall(const CallArgs &a) {
  if (Status s = checkArity(a, 2, 2, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(batchDims, intAttr(a.call, "batch_dims", 0));
  return gatherND(a.operands[0], a.operands[1], a.results[0], batchDims);
}

Status scatterElementsCall(const CallArgs &a) {
  if (Status s = checkArity(a, 3, 3, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(axis, intAttr(a.call, "axis", 0));
  MP_RT_TRY_ASSIGN(reduction, scatterReductionOf(a.call));
  return scatterElements(a.operands[0], a.operands[1], a.operands[2],
                         a.results[0], axis, reduction);
}

Status scatterNDCall(const CallArgs &a) {
  if (Status s = checkArity(a, 3, 3, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(reduction, scatterReductionOf(a.call));
  return scatterND(a.operands[0], a.operands[1], a.operands[2], a.results[0],
                   reduction);
}

Status resizeCall(const CallArgs &a) {
  if (Status s = checkArity(a, 1, 1, 1, 1); !s)
    return s;
  MP_RT_TRY_ASSIGN(o, resizeOptionsOf(a.call));
  return resize(a.operands[0], a.results[0], o);
}

} // namespace

void addDataCalls(CallTable &table) {
  MP_ADD_CALL("kernel.transpose", transposeCall);
  MP_ADD_CALL("kernel.copy", copyCall);
  MP_ADD_CALL("kernel.broadcast", broadcastCall);
  MP_ADD_CALL("kernel.tile", tileCall);
  MP_ADD_CALL("kernel.concat", concatCall);
  MP_ADD_CALL("kernel.slice", sliceCall);
  MP_ADD_CALL("kernel.pad", padCall);
  MP_ADD_CALL("kernel.gather", gatherCall);
  MP_ADD_CALL("kernel.gather_elements", gatherElementsCall);
  MP_ADD_CALL("kernel.gather_nd", gatherNDCall);
  MP_ADD_CALL("kernel.scatter_elements", scatterElementsCall);
  MP_ADD_CALL("kernel.scatter_nd", scatterNDCall);
  MP_ADD_CALL("kernel.resize", resizeCall);
}

} // namespace mp::rt::cpu
