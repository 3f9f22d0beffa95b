//===- ReduceFunctions.h - kernel.reduce's functions ------------*- C++ -*-===//
//
// The enum of kernel.reduce's functions and their plan spellings, made from
// the one list in ReduceFunctions.def. Plain C++: the runtime and the culib
// dialect include it.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_REDUCEFUNCTIONS_H
#define MP_RUNTIME_REDUCEFUNCTIONS_H

#include <cstddef>
#include <string_view>

namespace mp::rt::cpu {

/// The functions of kernel.reduce (ReduceFunctions.def).
enum class ReduceFn {
#define MP_REDUCE_FN(Enumerator, spelling) Enumerator,
#include "mp/Runtime/ReduceFunctions.def"
};

/// The plan's / culib's spelling of each function, in the enum's order.
inline constexpr std::string_view kReduceFnNames[] = {
#define MP_REDUCE_FN(Enumerator, spelling) spelling,
#include "mp/Runtime/ReduceFunctions.def"
};

constexpr std::string_view reduceFnName(ReduceFn fn) {
  return kReduceFnNames[static_cast<size_t>(fn)];
}

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_REDUCEFUNCTIONS_H
