//===- ConstantData.cpp - the bytes of a constant's value -----------------===//

#include "mp/Dialect/MP/ConstantData.h"

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

} // namespace mp
