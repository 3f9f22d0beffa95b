//===- ConstantData.cpp - the bytes of a constant's value -----------------===//

#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Runtime/NarrowTypes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace mp {

std::optional<StoredBytes> storedBytes(ElementsAttr attr) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    return StoredBytes{blob->getData(), /*splat=*/false, /*resource=*/true};
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return StoredBytes{dense.getRawData(), dense.isSplat(),
                       /*resource=*/false};
  return std::nullopt;
}

std::optional<ArrayRef<char>> elementBytes(ElementsAttr attr,
                                           std::string &storage) {
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  if (element.isInteger(1))
    return std::nullopt;
  std::optional<StoredBytes> stored = storedBytes(attr);
  if (!stored)
    return std::nullopt;
  size_t count = type.getNumElements();
  if (stored->splat && count != 1) {
    storage.clear();
    storage.reserve(stored->bytes.size() * count);
    for (size_t i = 0; i < count; ++i)
      storage.append(stored->bytes.data(), stored->bytes.size());
    return ArrayRef<char>(storage.data(), storage.size());
  }
  return stored->bytes;
}

unsigned packedElementBits(mlir::Type element) {
  if (llvm::isa<mlir::Float4E2M1FNType>(element))
    return 4;
  if (auto integer = llvm::dyn_cast<mlir::IntegerType>(element))
    if (integer.getWidth() == 4 || integer.getWidth() == 2)
      return integer.getWidth();
  return 0;
}

std::string packNarrowElements(llvm::ArrayRef<char> bytes, unsigned bits) {
  std::string packed((bytes.size() * bits + 7) / 8, '\0');
  rt::narrow::packNarrow(reinterpret_cast<const uint8_t *>(bytes.data()),
                         bytes.size(), bits,
                         reinterpret_cast<uint8_t *>(packed.data()));
  return packed;
}

std::string unpackNarrowElements(llvm::ArrayRef<char> packed, unsigned bits,
                                 size_t count) {
  std::string bytes(count, '\0');
  rt::narrow::unpackNarrow(reinterpret_cast<const uint8_t *>(packed.data()),
                           count, bits,
                           reinterpret_cast<uint8_t *>(bytes.data()));
  return bytes;
}

} // namespace mp
