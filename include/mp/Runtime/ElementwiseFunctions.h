//===- ElementwiseFunctions.h - kernel.elementwise's functions --*- C++ -*-===//
//
// The enum and the facts of each function of kernel.elementwise (spelling,
// inputs, dtypes, result type, ONNX's alpha / beta defaults), made from the one
// list in ElementwiseFunctions.def. Plain C++: the runtime, the culib dialect
// and the lowering include it.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_ELEMENTWISEFUNCTIONS_H
#define MP_RUNTIME_ELEMENTWISEFUNCTIONS_H

#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>

namespace mp::rt::cpu {

/// The functions of kernel.elementwise, each as the ONNX operator it comes
/// from (ElementwiseFunctions.def says which dtypes each takes).
enum class ElementwiseFn {
#define MP_ELEMENTWISE_FN(Enumerator, ...) Enumerator,
#include "mp/Runtime/ElementwiseFunctions.def"
};

/// The elementwise functions by the inputs they take and the result they
/// write (ElementwiseFunctions.def's Kind column).
enum class ElementwiseKind {
  Unary,      ///< (x)
  Binary,     ///< (a, b)
  Compare,    ///< (a, b), bool y
  BoolResult, ///< (x), bool y
  Where,      ///< (bool condition, x, y)
  Clip,       ///< (x) or (x, min, max)
  Variadic    ///< one or more
};

/// The dtypes an elementwise function computes on (the Dtypes column).
enum class ElementwiseDtypes {
  Floats,   ///< f16, bf16, f32, f64
  Numeric,  ///< floats and integers
  Integers, ///< unsigned integers (the bit shifts)
  Ints,     ///< signed and unsigned integers (the bitwise functions)
  Bool,
  Any ///< raw elements, no arithmetic
};

struct ElementwiseFnInfo {
  ElementwiseFn fn;
  std::string_view name; ///< the plan's / culib's spelling
  ElementwiseKind kind;
  ElementwiseDtypes dtypes;
  double alpha, beta; ///< ONNX's defaults (0 where the function takes none)

  /// The inputs of a culib.elementwise call (0: one or more; clip always
  /// gets 3 there).
  constexpr unsigned arity() const {
    switch (kind) {
    case ElementwiseKind::Unary:
    case ElementwiseKind::BoolResult:
      return 1;
    case ElementwiseKind::Binary:
    case ElementwiseKind::Compare:
      return 2;
    case ElementwiseKind::Where:
    case ElementwiseKind::Clip:
      return 3;
    case ElementwiseKind::Variadic:
      break;
    }
    return 0;
  }
  /// y is bool.
  constexpr bool boolResult() const {
    return kind == ElementwiseKind::Compare ||
           kind == ElementwiseKind::BoolResult ||
           dtypes == ElementwiseDtypes::Bool;
  }
};

/// Every function, in the enum's order.
inline constexpr ElementwiseFnInfo kElementwiseFnInfo[] = {
#define MP_ELEMENTWISE_FN(Enumerator, name, kind, dtypes, alpha, beta)         \
  {ElementwiseFn::Enumerator, name,  ElementwiseKind::kind,                    \
   ElementwiseDtypes::dtypes, alpha, beta},
#include "mp/Runtime/ElementwiseFunctions.def"
};

constexpr const ElementwiseFnInfo &infoOf(ElementwiseFn fn) {
  return kElementwiseFnInfo[static_cast<size_t>(fn)];
}

/// The fn of a plan call ("add", "gelu_tanh", ...), if it is one.
inline std::optional<ElementwiseFn> parseElementwiseFn(std::string_view name) {
  for (const ElementwiseFnInfo &info : kElementwiseFnInfo)
    if (info.name == name)
      return info.fn;
  return std::nullopt;
}
/// The plan spelling of fn.
constexpr std::string_view elementwiseFnName(ElementwiseFn fn) {
  return infoOf(fn).name;
}

} // namespace mp::rt::cpu

#endif // MP_RUNTIME_ELEMENTWISEFUNCTIONS_H
