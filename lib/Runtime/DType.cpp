//===- DType.cpp - element types of runtime tensors ----------------------===//
#include "mp/Runtime/DType.h"

namespace mp::rt {

namespace {
constexpr DType kAll[] = {
    DType::F32,        DType::U8,       DType::I8,         DType::U16,
    DType::I16,        DType::I32,      DType::I64,        DType::Bool,
    DType::F16,        DType::F64,      DType::U32,        DType::U64,
    DType::BF16,       DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2,
    DType::F8E5M2FNUZ, DType::U4,       DType::I4,         DType::F4E2M1,
    DType::F8E8M0,     DType::U2,       DType::I2};
} // namespace

std::string_view dtypeName(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::U8: return "ui8";
  case DType::I8: return "i8";
  case DType::U16: return "ui16";
  case DType::I16: return "i16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::Bool: return "bool";
  case DType::F16: return "f16";
  case DType::F64: return "f64";
  case DType::U32: return "ui32";
  case DType::U64: return "ui64";
  case DType::BF16: return "bf16";
  // As MLIR spells them.
  case DType::F8E4M3FN:
    return "f8E4M3FN";
  case DType::F8E4M3FNUZ:
    return "f8E4M3FNUZ";
  case DType::F8E5M2:
    return "f8E5M2";
  case DType::F8E5M2FNUZ:
    return "f8E5M2FNUZ";
  case DType::U4:
    return "ui4";
  case DType::I4:
    return "i4";
  case DType::F4E2M1:
    return "f4E2M1FN";
  case DType::F8E8M0:
    return "f8E8M0FNU";
  case DType::U2:
    return "ui2";
  case DType::I2:
    return "i2";
  }
  return "?";
}

std::optional<DType> dtypeFromOnnx(int32_t code) {
  for (DType t : kAll)
    if (static_cast<int32_t>(t) == code)
      return t;
  return std::nullopt;
}

std::optional<DType> dtypeFromName(std::string_view name) {
  for (DType t : kAll)
    if (dtypeName(t) == name)
      return t;
  return std::nullopt;
}

} // namespace mp::rt
