//===- ElementwiseFunctions.h - kernel.elementwise's functions --*- C++ -*-===//
//
// The enum and the facts of each function of kernel.elementwise (spelling,
// arity, result type, ONNX's alpha / beta defaults), made from the one list
// in ElementwiseFunctions.def. Plain C++: the runtime, the culib dialect and
// the lowering include it.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_ELEMENTWISEFUNCTIONS_H
#define MP_RUNTIME_ELEMENTWISEFUNCTIONS_H

#include <cstddef>
#include <limits>
#include <string_view>

namespace mp::rt::cpu {

/// The functions of kernel.elementwise, each as the ONNX operator it comes
/// from (ElementwiseFunctions.def says which dtypes each takes).
enum class ElementwiseFn {
#define MP_ELEMENTWISE_FN(Enumerator, ...) Enumerator,
#include "mp/Runtime/ElementwiseFunctions.def"
};

struct ElementwiseFnInfo {
  ElementwiseFn fn;
  std::string_view name; ///< the plan's / culib's spelling
  unsigned arity;        ///< inputs; 0: one or more
  bool boolResult;       ///< y is bool
  double alpha, beta;    ///< ONNX's defaults (0 where the function takes none)
};

/// Every function, in the enum's order.
inline constexpr ElementwiseFnInfo kElementwiseFnInfo[] = {
#define MP_ELEMENTWISE_FN(Enumerator, name, arity, boolResult, alpha, beta)    \
  {ElementwiseFn::Enumerator, name, arity, boolResult, alpha, beta},
#include "mp/Runtime/ElementwiseFunctions.def"
};

constexpr const ElementwiseFnInfo &infoOf(ElementwiseFn fn) {
  return kElementwiseFnInfo[static_cast<size_t>(fn)];
}

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_ELEMENTWISEFUNCTIONS_H
