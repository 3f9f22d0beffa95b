//===- DType.h - element types of runtime tensors -----------------*- C++ -*-===//
//
// Element types, numbered as ONNX's TensorProto::DataType so that plan files,
// ONNX TensorProto files and the compiler agree without a mapping table.
//
//===----------------------------------------------------------------------===//
#ifndef MP_RUNTIME_DTYPE_H
#define MP_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mp::rt {

enum class DType : int32_t {
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  BF16 = 16,
  // The narrow types (NarrowTypes.h): one element per byte, in its low
  // bits. Buffers of them are stored, moved, cast (kernel.cast) and
  // quantized; no other arithmetic reads them.
  F8E4M3FN = 17,
  F8E4M3FNUZ = 18,
  F8E5M2 = 19,
  F8E5M2FNUZ = 20,
  U4 = 21,
  I4 = 22,
  F4E2M1 = 23,
  F8E8M0 = 24,
  U2 = 25,
  I2 = 26,
};

/// Bytes per element (Bool is one byte per element).
constexpr size_t byteSize(DType t) {
  switch (t) {
  case DType::F64: case DType::I64: case DType::U64: return 8;
  case DType::F32: case DType::I32: case DType::U32: return 4;
  case DType::F16: case DType::BF16: case DType::I16: case DType::U16: return 2;
  case DType::I8: case DType::U8: case DType::Bool: return 1;
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::U4:
  case DType::I4:
  case DType::F4E2M1:
  case DType::F8E8M0:
  case DType::U2:
  case DType::I2:
    return 1;
  }
  return 0;
}

/// The narrow types: float8, float4 and 4- and 2-bit integers.
constexpr bool isNarrow(DType t) {
  return t >= DType::F8E4M3FN && t <= DType::I2;
}

constexpr bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 ||
         t == DType::F64;
}

/// "f32", "f16", "bf16", "i64", "bool", ... (the MLIR spelling).
std::string_view dtypeName(DType t);
/// The DType of an ONNX TensorProto::DataType code, if the runtime has one.
std::optional<DType> dtypeFromOnnx(int32_t code);
/// The DType spelled like dtypeName, if any.
std::optional<DType> dtypeFromName(std::string_view name);

} // namespace mp::rt

#endif // MP_RUNTIME_DTYPE_H
