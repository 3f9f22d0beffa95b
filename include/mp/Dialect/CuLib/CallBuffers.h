//===- CallBuffers.h - the input and output buffers of culib calls -*- C++ -*-===//
//
// culib ops are in destination-passing style: some buffer operands are read,
// others written. getCallBuffers names them, in definition order, together
// with the runtime call kind of the op. The plan serializer (culib-export-
// plan) writes calls from it; passes that rewrite buffers (culib-nhwc-
// layout) use it to tell readers from writers.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_CULIB_CALLBUFFERS_H
#define MP_DIALECT_CULIB_CALLBUFFERS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mp::culib {

/// A buffer of a call with its operand name in the op's definition; a null
/// value is an absent optional buffer.
struct NamedBuffer {
  llvm::StringRef name;
  mlir::Value value;
  bool optional = false;
};

/// The runtime call kind ("cudnn.conv_fwd", "kernel.cast", ...) and the
/// buffers the call reads (ins) and writes (outs).
struct CallBuffers {
  std::string kind;
  llvm::SmallVector<NamedBuffer> ins, outs;
};

/// The call of a culib call op; std::nullopt for other ops (culib.alloc,
/// culib.weight, culib.state, ops of other dialects).
std::optional<CallBuffers> getCallBuffers(mlir::Operation *op);

} // namespace mp::culib

#endif // MP_DIALECT_CULIB_CALLBUFFERS_H
