//===- CallTable.cpp - the CPU call table and attribute readers ----------===//
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"

#include <type_traits>

namespace mp::rt::cpu {

std::vector<std::string> CallTable::kinds() const {
  std::vector<std::string> result;
  for (const auto &entry : fns_)
    result.push_back(entry.first);
  return result;
}

const CallTable &cpuCallTable() {
  static const CallTable table = [] {
    CallTable t;
    addLibraryCalls(t);
    addElementwiseCalls(t);
    addDataCalls(t);
    addNNCalls(t);
    addTrainingCalls(t);
    addCollectiveCalls(t);
    return t;
  }();
  return table;
}

namespace {

template <typename T> const char *typeName() {
  if constexpr (std::is_same_v<T, int64_t>)
    return "an int";
  else if constexpr (std::is_same_v<T, double>)
    return "a float";
  else if constexpr (std::is_same_v<T, std::string>)
    return "a string";
  else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
    return "an int list";
  else
    return "a float list";
}

/// The attribute as T; a missing attribute gives `fallback` if there is one.
template <typename T>
Result<T> readAttr(const PlanCall &call, std::string_view name,
                   std::optional<T> fallback) {
  const PlanAttrValue *value = call.attr(name);
  if (!value) {
    if (fallback)
      return std::move(*fallback);
    return Status::error("attribute '" + std::string(name) + "' is missing");
  }
  if (const T *typed = std::get_if<T>(value))
    return *typed;
  // An int where a float is expected is fine (e.g. alpha = 1).
  if constexpr (std::is_same_v<T, double>)
    if (const int64_t *i = std::get_if<int64_t>(value))
      return static_cast<double>(*i);
  return Status::error("attribute '" + std::string(name) + "' must be " +
                       typeName<T>());
}

} // namespace

Result<int64_t> intAttr(const PlanCall &call, std::string_view name) {
  return readAttr<int64_t>(call, name, std::nullopt);
}
Result<int64_t> intAttr(const PlanCall &call, std::string_view name,
                        int64_t defaultValue) {
  return readAttr<int64_t>(call, name, defaultValue);
}
Result<double> floatAttr(const PlanCall &call, std::string_view name) {
  return readAttr<double>(call, name, std::nullopt);
}
Result<double> floatAttr(const PlanCall &call, std::string_view name,
                         double defaultValue) {
  return readAttr<double>(call, name, defaultValue);
}
Result<std::string> stringAttr(const PlanCall &call, std::string_view name) {
  return readAttr<std::string>(call, name, std::nullopt);
}
Result<std::string> stringAttr(const PlanCall &call, std::string_view name,
                               std::string defaultValue) {
  return readAttr<std::string>(call, name, std::move(defaultValue));
}
Result<narrow::RoundMode> roundModeOf(const PlanCall &call) {
  Result<std::string> mode = stringAttr(call, "round_mode", "up");
  if (!mode)
    return mode.status();
  if (*mode == "up")
    return narrow::RoundMode::Up;
  if (*mode == "down")
    return narrow::RoundMode::Down;
  if (*mode == "nearest")
    return narrow::RoundMode::Nearest;
  return Status::error(call.kind +
                       ": round_mode must be \"up\", \"down\" "
                       "or \"nearest\", not \"" +
                       *mode + "\"");
}
namespace {
/// [N, C, spatial...] <-> [N, spatial..., C] permutations of a rank.
std::vector<int64_t> channelsFirstPerm(size_t rank) {
  std::vector<int64_t> perm = {0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i)
    perm.push_back(static_cast<int64_t>(i));
  return perm;
}
std::vector<int64_t> channelsLastPerm(size_t rank) {
  std::vector<int64_t> perm = {0};
  for (size_t i = 2; i < rank; ++i)
    perm.push_back(static_cast<int64_t>(i));
  perm.push_back(1);
  return perm;
}
} // namespace

HostTensor channelsFirstCopy(const TensorView &channelsLast) {
  std::vector<int64_t> perm = channelsFirstPerm(channelsLast.shape.size());
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(channelsLast.shape[p]);
  HostTensor copy(channelsLast.dtype, shape);
  // Cannot fail: the shapes are a permutation of each other.
  (void)transpose(channelsLast, copy.view(), perm);
  return copy;
}

Status writeChannelsLast(const TensorView &channelsFirst,
                         const TensorView &channelsLast) {
  return transpose(channelsFirst, channelsLast,
                   channelsLastPerm(channelsFirst.shape.size()));
}

Result<bool> channelsLastAttr(const PlanCall &call) {
  Result<std::string> layout = stringAttr(call, "layout", "nchw");
  if (!layout)
    return layout.status();
  if (*layout != "nchw" && *layout != "nhwc")
    return Status::error("attribute 'layout' has unknown value '" + *layout +
                         "' (nchw, nhwc)");
  return *layout == "nhwc";
}
Result<std::vector<int64_t>> intListAttr(const PlanCall &call,
                                         std::string_view name) {
  return readAttr<std::vector<int64_t>>(call, name, std::nullopt);
}
Result<std::vector<int64_t>> intListAttr(const PlanCall &call,
                                         std::string_view name,
                                         std::vector<int64_t> defaultValue) {
  return readAttr<std::vector<int64_t>>(call, name, std::move(defaultValue));
}
Result<std::vector<double>> floatListAttr(const PlanCall &call,
                                          std::string_view name) {
  return readAttr<std::vector<double>>(call, name, std::nullopt);
}
Result<std::vector<double>> floatListAttr(const PlanCall &call,
                                          std::string_view name,
                                          std::vector<double> defaultValue) {
  return readAttr<std::vector<double>>(call, name, std::move(defaultValue));
}

Result<DType> dtypeAttr(const PlanCall &call, std::string_view name) {
  Result<int64_t> code = intAttr(call, name);
  if (!code)
    return code.status();
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(*code));
  if (!dtype)
    return Status::error("attribute '" + std::string(name) +
                         "' is not a known dtype code: " +
                         std::to_string(*code));
  return *dtype;
}

Result<bool> boolAttr(const PlanCall &call, std::string_view name) {
  Result<int64_t> v = intAttr(call, name);
  if (!v)
    return v.status();
  if (*v != 0 && *v != 1)
    return Status::error("attribute '" + std::string(name) +
                         "' must be 0 or 1, got " + std::to_string(*v));
  return *v == 1;
}

Result<bool> boolAttr(const PlanCall &call, std::string_view name,
                      bool defaultValue) {
  if (!call.attr(name))
    return defaultValue;
  return boolAttr(call, name);
}

Result<bool> hasBuffer(const PlanCall &call, std::string_view name) {
  return boolAttr(call, "has_" + std::string(name));
}

Result<bool> hasBuffer(const PlanCall &call, std::string_view name,
                       bool absent) {
  return boolAttr(call, "has_" + std::string(name), absent);
}

Status checkComputeType(const PlanCall &call, DType input, bool required) {
  if (!required && !call.attr("compute_type"))
    return Status::ok();
  MP_RT_TRY_ASSIGN(compute, dtypeAttr(call, "compute_type"));
  if (!isFloat(compute))
    return Status::error("attribute 'compute_type' must be a float type, got " +
                         std::string(dtypeName(compute)));
  if (compute == DType::F32 || compute == input)
    return Status::ok();
  return Status::error("compute type " + std::string(dtypeName(compute)) +
                       " cannot accumulate " + std::string(dtypeName(input)) +
                       " inputs");
}

Result<size_t> spatialRank(const TensorView &x, std::string_view name) {
  if (x.shape.size() < 3)
    return Status::error(
        std::string(name) +
        " must have rank >= 3 ([N, C, spatial...]), got rank " +
        std::to_string(x.shape.size()));
  return x.shape.size() - 2;
}

Status checkArity(const CallArgs &args, size_t minOperands, size_t maxOperands,
                  size_t minResults, size_t maxResults) {
  auto range = [](size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo)
                    : std::to_string(lo) + " to " + std::to_string(hi);
  };
  if (args.operands.size() < minOperands || args.operands.size() > maxOperands)
    return Status::error("expects " + range(minOperands, maxOperands) +
                         " operands, got " +
                         std::to_string(args.operands.size()));
  if (args.results.size() < minResults || args.results.size() > maxResults)
    return Status::error("expects " + range(minResults, maxResults) +
                         " results, got " +
                         std::to_string(args.results.size()));
  return Status::ok();
}

} // namespace mp::rt::cpu
