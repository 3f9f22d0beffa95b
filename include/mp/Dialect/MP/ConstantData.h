//===- ConstantData.h - the bytes of a constant's value ----------*- C++ -*-===//
//
// Constants reach the passes, the exporters and the plan writer either as a
// DenseElementsAttr (small values; a splat stores one element) or as a
// DenseResourceElementsAttr (imported weights: a blob, never copied). These
// helpers read the bytes of either kind in one place.
//
//===----------------------------------------------------------------------===//
#ifndef MP_DIALECT_MP_CONSTANTDATA_H
#define MP_DIALECT_MP_CONSTANTDATA_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/ADT/ArrayRef.h"
#include <optional>
#include <string>

namespace mp {

/// The bytes of a constant as they are stored, little-endian.
struct StoredBytes {
  /// A resource's whole blob, or a dense attribute's raw data: one element
  /// when `splat`; bools packed as MLIR packs them (dense i1 data).
  llvm::ArrayRef<char> bytes;
  /// A DenseElementsAttr splat: `bytes` holds the one element.
  bool splat = false;
  /// A DenseResourceElementsAttr blob (its size is not checked against the
  /// type: a truncated blob is the caller's error to report).
  bool resource = false;
};

/// The stored bytes of a dense or resource elements attribute; nullopt for
/// other attributes and for a resource whose blob is not loaded.
std::optional<StoredBytes> storedBytes(mlir::ElementsAttr attr);

/// Every element's bytes, a splat repeated into `storage` (which the result
/// may point into); nullopt for i1 (packed as bits) and where storedBytes
/// has none. The size is not checked against the type.
std::optional<llvm::ArrayRef<char>> elementBytes(mlir::ElementsAttr attr,
                                                 std::string &storage);

/// The bits of one element of ONNX's packed types: 4 for int4, uint4 and
/// float4e2m1 (two per byte), 2 for int2 and uint2 (four per byte); 0 for
/// every other type. In the IR such a tensor stores one element per byte
/// (MLIR's storage for narrow types), in the element's low bits.
unsigned packedElementBits(mlir::Type element);

/// ONNX's packed bytes of `count` narrow elements stored one per byte
/// (`bits` from packedElementBits): the first element in the lowest bits.
std::string packNarrowElements(llvm::ArrayRef<char> bytes, unsigned bits);

/// The inverse of packNarrowElements: `count` elements, one per byte, each in
/// the byte's low `bits` bits (the rest zero). `packed` must hold
/// ceil(count * bits / 8) bytes.
std::string unpackNarrowElements(llvm::ArrayRef<char> packed, unsigned bits,
                                 size_t count);

} // namespace mp

#endif // MP_DIALECT_MP_CONSTANTDATA_H
