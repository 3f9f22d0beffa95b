//===- ImportTensors.cpp - inputs, types, tensors, attributes -------------===//
//
// The Importer's conversions of ONNX values to MLIR: the graph inputs as the
// options specialize them, opsets, types, tensors (inline, external data or
// the mapped model file; large ones as resource blobs) and attributes.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "mp/Dialect/MP/ConstantData.h"
#include "mp/Runtime/TensorIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/common/version.h>
#include <onnx/defs/schema.h>

#include <cstring>
#include <limits>

using namespace mlir;
using namespace mp;

namespace mp::onnx_import {

LogicalResult Importer::specializeInputs(onnx::GraphProto &graph,
                                         Location fileLoc) {
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());
  auto findInput = [&](const std::string &name) -> onnx::ValueInfoProto * {
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      if (input.name() == name && !initializerNames.contains(name))
        return &input;
    return nullptr;
  };
  auto tensorShape =
      [](onnx::ValueInfoProto &value) -> onnx::TensorShapeProto * {
    if (!value.type().has_tensor_type() ||
        !value.type().tensor_type().has_shape())
      return nullptr;
    return value.mutable_type()->mutable_tensor_type()->mutable_shape();
  };

  for (const auto &[name, dims] : options.inputShapes) {
    onnx::ValueInfoProto *input = findInput(name);
    if (!input)
      return emitError(fileLoc) << "--input-shape: the model has no graph "
                                   "input named '"
                                << name << "'";
    if (!input->type().has_tensor_type())
      return emitError(fileLoc)
             << "--input-shape: graph input '" << name << "' is not a tensor";
    for (int64_t d : dims)
      if (d < 0)
        return emitError(fileLoc) << "--input-shape: graph input '" << name
                                  << "': dims must be >= 0";
    onnx::TensorShapeProto *shape =
        input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 &&
        shape->dim_size() != static_cast<int>(dims.size()))
      return emitError(fileLoc)
             << "--input-shape: graph input '" << name << "' has rank "
             << shape->dim_size() << ", but the given shape has rank "
             << dims.size();
    for (size_t i = 0; i < dims.size() && shape->dim_size() != 0; ++i) {
      const auto &dim = shape->dim(i);
      if (dim.has_dim_value() && dim.dim_value() != dims[i])
        return emitError(fileLoc)
               << "--input-shape: graph input '" << name << "' has dim " << i
               << " = " << dim.dim_value() << ", not " << dims[i];
    }
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }

  if (!options.dimParams.empty()) {
    llvm::StringSet<> used;
    auto apply = [&](onnx::ValueInfoProto &value) {
      onnx::TensorShapeProto *shape = tensorShape(value);
      if (!shape)
        return;
      for (auto &dim : *shape->mutable_dim()) {
        if (!dim.has_dim_param())
          continue;
        auto it = options.dimParams.find(dim.dim_param());
        if (it == options.dimParams.end())
          continue;
        used.insert(it->first);
        dim.set_dim_value(it->second);
      }
    };
    for (onnx::ValueInfoProto &input : *graph.mutable_input())
      apply(input);
    for (onnx::ValueInfoProto &output : *graph.mutable_output())
      apply(output);
    for (const auto &[param, size] : options.dimParams) {
      if (size < 0)
        return emitError(fileLoc)
               << "--dim-param: '" << param << "' must be >= 0";
      if (!used.contains(param))
        return emitError(fileLoc) << "--dim-param: no graph input or output "
                                     "has a dim named '"
                                  << param << "'";
    }
  }

  for (const auto &[name, file] : options.frozenInputs) {
    onnx::ValueInfoProto *input = findInput(name);
    if (!input)
      return emitError(fileLoc) << "--freeze-input: the model has no graph "
                                   "input named '"
                                << name << "'";
    rt::Result<rt::HostTensor> value = rt::readTensorFile(file);
    if (!value)
      return emitError(fileLoc) << "--freeze-input: " << value.message();
    const rt::HostTensor &tensor = *value;
    const auto &type = input->type();
    if (!type.has_tensor_type())
      return emitError(fileLoc)
             << "--freeze-input: graph input '" << name << "' is not a tensor";
    int32_t declared = type.tensor_type().elem_type();
    if (declared != static_cast<int32_t>(tensor.dtype()))
      return emitError(fileLoc)
             << "--freeze-input: graph input '" << name << "' has ONNX type "
             << declared << ", but '" << file << "' holds "
             << rt::dtypeName(tensor.dtype());
    if (type.tensor_type().has_shape()) {
      const auto &shape = type.tensor_type().shape();
      bool fits = shape.dim_size() == static_cast<int>(tensor.shape().size());
      for (int i = 0; fits && i < shape.dim_size(); ++i)
        if (shape.dim(i).has_dim_value() &&
            shape.dim(i).dim_value() != tensor.shape()[i])
          fits = false;
      if (!fits)
        return emitError(fileLoc)
               << "--freeze-input: the shape of '" << file
               << "' does not fit graph input '" << name << "'";
    }
    onnx::TensorProto *init = graph.add_initializer();
    init->set_name(name);
    init->set_data_type(static_cast<int32_t>(tensor.dtype()));
    for (int64_t d : tensor.shape())
      init->add_dims(d);
    init->set_raw_data(tensor.data(), tensor.byteCount());
    // An initializer that is not also an input is a constant (IR >= 4).
    for (int i = 0; i < graph.input_size(); ++i)
      if (graph.input(i).name() == name) {
        graph.mutable_input()->DeleteSubrange(i, 1);
        break;
      }
  }
  return success();
}

LogicalResult Importer::readOpsets(const onnx::ModelProto &model) {
  const auto &ranges =
      onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto &opset : model.opset_import()) {
    std::string domain = isDefaultDomain(opset.domain()) ? "" : opset.domain();
    int64_t version = opset.version();
    // A std::string: `cond ? "literal" : std::string` is a temporary.
    std::string shown = domain.empty() ? "ai.onnx" : domain;
    if (version < 1)
      return emitError(UnknownLoc::get(ctx))
             << "opset_import gives version " << version << " for domain '"
             << shown << "'; versions start at 1";
    auto range = ranges.find(domain);
    if (range != ranges.end() && version > range->second.second)
      return emitError(UnknownLoc::get(ctx))
             << "unsupported opset: the model uses " << shown << " opset "
             << version << ", this build supports up to "
             << range->second.second << " (ONNX " << onnx::LAST_RELEASE_VERSION
             << ")";
    if (!opsets.try_emplace(domain, version).second)
      return emitError(UnknownLoc::get(ctx))
             << "opset_import lists domain '" << shown << "' twice";
  }
  if (model.opset_import_size() == 0 && model.ir_version() < 3)
    opsets[""] = 1; // IR version < 3 models predate opset_import
  return success();
}

Value Importer::getNone(Block *block) {
  Value &none = noneValues[block];
  if (!none) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(block);
    none = NoneOp::create(builder, builder.getUnknownLoc());
  }
  return none;
}

ArrayAttr Importer::dimParamsAttr(const onnx::TypeProto &type) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape())
    return {};
  bool any = false;
  SmallVector<Attribute> params;
  for (const auto &dim : type.tensor_type().shape().dim()) {
    any |= dim.has_dim_param();
    params.push_back(
        builder.getStringAttr(dim.has_dim_param() ? dim.dim_param() : ""));
  }
  return any ? builder.getArrayAttr(params) : ArrayAttr();
}

FailureOr<Type> Importer::importType(const onnx::TypeProto &type, Location loc,
                                     llvm::StringRef what) {
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType: {
    const auto &tensor = type.tensor_type();
    if (!tensor.has_elem_type() || tensor.elem_type() == 0)
      return UnknownType::get(ctx);
    Type element = getTypeForOnnxDataType(ctx, tensor.elem_type());
    if (!element)
      return emitError(loc)
             << what << " has unsupported element type " << tensor.elem_type();
    if (!tensor.has_shape())
      return Type(UnrankedTensorType::get(element));
    SmallVector<int64_t> dims;
    int64_t count = 1; // of the static dims, saturated at 2^40 + 1
    for (const auto &dim : tensor.shape().dim()) {
      if (dim.has_dim_value()) {
        int64_t d = dim.dim_value();
        if (d < 0 || d > kMaxElements)
          return emitError(loc) << what << " has invalid dim " << d;
        count =
            (d != 0 && count > kMaxElements / d) ? kMaxElements + 1 : count * d;
        dims.push_back(d);
      } else {
        dims.push_back(ShapedType::kDynamic);
      }
    }
    // Nothing is allocated for a type, but element counts that overflow
    // int64 would break every size computation downstream.
    if (count > kMaxElements && !llvm::is_contained(dims, 0))
      return emitError(loc) << what << " has more than 2^40 elements";
    return Type(RankedTensorType::get(dims, element));
  }
  case onnx::TypeProto::kSequenceType: {
    if (!type.sequence_type().has_elem_type())
      return Type(SequenceType::get(ctx, UnknownType::get(ctx)));
    auto inner = importType(type.sequence_type().elem_type(), loc, what);
    if (failed(inner))
      return failure();
    return Type(SequenceType::get(ctx, *inner));
  }
  case onnx::TypeProto::kOptionalType: {
    if (!type.optional_type().has_elem_type())
      return Type(OptionalType::get(ctx, UnknownType::get(ctx)));
    auto inner = importType(type.optional_type().elem_type(), loc, what);
    if (failed(inner))
      return failure();
    return Type(OptionalType::get(ctx, *inner));
  }
  case onnx::TypeProto::VALUE_NOT_SET:
    return Type(UnknownType::get(ctx));
  default:
    return emitError(loc) << what
                          << " has an unsupported type (map or sparse tensor)";
  }
}

FailureOr<AsmResourceBlob>
Importer::loadExternalData(const onnx::TensorProto &tensor, size_t byteSize,
                           size_t align, Location loc, llvm::StringRef what) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : tensor.external_data()) {
    llvm::StringRef value = entry.value();
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      uint64_t v;
      if (value.getAsInteger(10, v))
        return emitError(loc) << what << ": external data " << entry.key()
                              << " '" << value << "' is not a number";
      if (entry.key() == "offset")
        offset = v;
      else
        length = v;
    }
  }
  if (location.empty())
    return emitError(loc) << what << ": external data has no 'location'";
  if (llvm::sys::path::is_absolute(location) ||
      llvm::any_of(llvm::make_range(llvm::sys::path::begin(location),
                                    llvm::sys::path::end(location)),
                   [](llvm::StringRef c) { return c == ".."; }))
    return emitError(loc) << what << ": external data location '" << location
                          << "' must be a relative path inside the model's "
                             "directory";
  llvm::SmallString<256> file(externalDir);
  llvm::sys::path::append(file, location);
  uint64_t fileSize;
  if (llvm::sys::fs::file_size(file, fileSize))
    return emitError(loc) << what << ": missing external data file '" << file
                          << "'";
  if (length && *length != byteSize)
    return emitError(loc) << what << ": external data length " << *length
                          << " does not match the " << byteSize
                          << " bytes its type and shape need";
  if (offset > fileSize || byteSize > fileSize - offset)
    return emitError(loc) << what << ": external data file '" << file
                          << "' has " << fileSize << " bytes, too few for "
                          << byteSize << " bytes at offset " << offset;
  auto buffer = llvm::MemoryBuffer::getFileSlice(file, byteSize, offset);
  if (!buffer)
    return emitError(loc) << what << ": cannot read external data file '"
                          << file << "': " << buffer.getError().message();
  ArrayRef<char> data((*buffer)->getBufferStart(), byteSize);
  if (!llvm::isAddrAligned(llvm::Align(align), data.data()))
    return HeapAsmResourceBlob::allocateAndCopyWithAlign(data, align);
  // The blob keeps the (usually memory-mapped) buffer alive.
  std::shared_ptr<llvm::MemoryBuffer> owner(std::move(*buffer));
  return AsmResourceBlob(
      data, align, [owner](void *, size_t, size_t) mutable { owner.reset(); },
      /*dataIsMutable=*/false);
}

FailureOr<ElementsAttr> Importer::importTensor(onnx::TensorProto &tensor,
                                               Location loc,
                                               llvm::StringRef what,
                                               llvm::StringRef blobKey) {
  FailureOr<int64_t> checkedCount = checkTensor(tensor, loc, what);
  if (failed(checkedCount))
    return failure();
  int64_t count = *checkedCount;
  int dataType = tensor.data_type();
  Type element = getTypeForOnnxDataType(ctx, dataType);
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  auto type = RankedTensorType::get(dims, element);
  bool external = tensor.data_location() == onnx::TensorProto::EXTERNAL;

  if (dataType == onnx::TensorProto::STRING) {
    if (tensor.string_data_size() != count)
      return emitError(loc) << what << " has " << tensor.string_data_size()
                            << " strings for " << count << " elements";
    SmallVector<llvm::StringRef> strings(tensor.string_data().begin(),
                                         tensor.string_data().end());
    return cast<ElementsAttr>(DenseElementsAttr::get(type, strings));
  }
  size_t eltSize = elementByteSize(dataType);
  size_t byteSize = static_cast<size_t>(count) * eltSize;
  size_t align = std::min<size_t>(eltSize, 8);
  std::string blobName = blobKey.str();
  if (unsigned bits = packedBits(dataType))
    return importPackedTensor(tensor, type, count, bits, loc, what, blobName);

  // Data left in the mapped model file: referenced, never copied. Protobuf
  // does not align fields, so the blob declares the alignment it has (its
  // readers copy unaligned data where they need alignment).
  if (auto it = mappedData.find(&tensor); it != mappedData.end()) {
    ArrayRef<char> data = it->second;
    if (data.size() != byteSize)
      return emitError(loc)
             << what << " has " << data.size()
             << " bytes of data, its shape and type need " << byteSize;
    if (!llvm::isAddrAligned(llvm::Align(align), data.data()))
      align = 1;
    std::shared_ptr<llvm::MemoryBuffer> owner = mappedFile;
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, blobName,
        AsmResourceBlob(
            data, align,
            [owner](void *, size_t, size_t) mutable { owner.reset(); },
            /*dataIsMutable=*/false)));
  }

  // External data is referenced, not copied.
  if (external) {
    auto blob = loadExternalData(tensor, byteSize, align, loc, what);
    if (failed(blob))
      return failure();
    return cast<ElementsAttr>(
        DenseResourceElementsAttr::get(type, blobName, std::move(*blob)));
  }

  // Gather the little-endian bytes of the tensor.
  std::string bytes;
  auto countMismatch = [&](int64_t have, int64_t need) {
    return emitError(loc) << what << " has " << have << " values for " << need
                          << " elements of its shape";
  };
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != byteSize)
      return emitError(loc)
             << what << " has " << tensor.raw_data().size()
             << " bytes of data, its shape and type need " << byteSize;
    if (dataType == onnx::TensorProto::BOOL) {
      SmallVector<bool> values;
      for (char c : tensor.raw_data())
        values.push_back(c != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    if (byteSize > options.inlineTensorLimit) {
      // Take the string over from protobuf: no copy of large weights.
      std::unique_ptr<std::string> owned(tensor.release_raw_data());
      ArrayRef<char> data(owned->data(), owned->size());
      if (llvm::isAddrAligned(llvm::Align(align), data.data())) {
        std::string *raw = owned.release();
        AsmResourceBlob blob(
            data, align, [raw](void *, size_t, size_t) { delete raw; },
            /*dataIsMutable=*/false);
        return cast<ElementsAttr>(
            DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
      }
      return cast<ElementsAttr>(DenseResourceElementsAttr::get(
          type, blobName,
          HeapAsmResourceBlob::allocateAndCopyWithAlign(data, align)));
    }
    bytes = tensor.raw_data();
  } else {
    auto append = [&](const void *p, size_t n) {
      bytes.append(static_cast<const char *>(p), n);
    };
    switch (dataType) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::COMPLEX64: {
      int64_t need = count * (dataType == onnx::TensorProto::COMPLEX64 ? 2 : 1);
      if (tensor.float_data_size() != need)
        return countMismatch(tensor.float_data_size(), need);
      append(tensor.float_data().data(), need * 4);
      break;
    }
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::COMPLEX128: {
      int64_t need =
          count * (dataType == onnx::TensorProto::COMPLEX128 ? 2 : 1);
      if (tensor.double_data_size() != need)
        return countMismatch(tensor.double_data_size(), need);
      append(tensor.double_data().data(), need * 8);
      break;
    }
    case onnx::TensorProto::INT64:
      if (tensor.int64_data_size() != count)
        return countMismatch(tensor.int64_data_size(), count);
      append(tensor.int64_data().data(), count * 8);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      if (tensor.uint64_data_size() != count)
        return countMismatch(tensor.uint64_data_size(), count);
      for (uint64_t v : tensor.uint64_data()) {
        if (dataType == onnx::TensorProto::UINT32) {
          uint32_t narrow = static_cast<uint32_t>(v);
          append(&narrow, 4);
        } else {
          append(&v, 8);
        }
      }
      break;
    case onnx::TensorProto::BOOL: {
      if (tensor.int32_data_size() != count)
        return countMismatch(tensor.int32_data_size(), count);
      SmallVector<bool> values;
      for (int32_t v : tensor.int32_data())
        values.push_back(v != 0);
      return cast<ElementsAttr>(DenseElementsAttr::get(type, values));
    }
    default: // int32_data holds INT32 and every narrower type, one per value
      if (tensor.int32_data_size() != count)
        return countMismatch(tensor.int32_data_size(), count);
      for (int32_t v : tensor.int32_data())
        append(&v, eltSize); // little-endian: the low bytes
      break;
    }
  }
  if (bytes.size() > options.inlineTensorLimit)
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(
            ArrayRef<char>(bytes.data(), bytes.size()), align)));
  bool isSplat = false;
  if (!DenseElementsAttr::isValidRawBuffer(
          type, ArrayRef<char>(bytes.data(), bytes.size()), isSplat))
    return emitError(loc) << what << " has data of the wrong size";
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(bytes.data(), bytes.size())));
}

FailureOr<ElementsAttr>
Importer::importPackedTensor(onnx::TensorProto &tensor, RankedTensorType type,
                             int64_t count, unsigned bits, Location loc,
                             llvm::StringRef what,
                             const std::string &blobName) {
  size_t packedSize = onnxDataBytes(tensor.data_type(), count);
  std::string packed;
  if (auto it = mappedData.find(&tensor); it != mappedData.end()) {
    packed.assign(it->second.data(), it->second.size());
  } else if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    auto blob = loadExternalData(tensor, packedSize, 1, loc, what);
    if (failed(blob))
      return failure();
    packed.assign(blob->getData().data(), blob->getData().size());
  } else if (tensor.has_raw_data()) {
    packed = tensor.raw_data();
  } else {
    for (int32_t byte : tensor.int32_data()) // one packed byte each
      packed.push_back(static_cast<char>(byte));
  }
  if (packed.size() != packedSize)
    return emitError(loc) << what << " has " << packed.size()
                          << " bytes of data, its shape and type need "
                          << packedSize;
  std::string bytes = unpackNarrowElements(
      ArrayRef<char>(packed.data(), packed.size()), bits, count);
  ArrayRef<char> data(bytes.data(), bytes.size());
  if (bytes.size() > options.inlineTensorLimit)
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        type, blobName,
        HeapAsmResourceBlob::allocateAndCopyWithAlign(data, 1)));
  return cast<ElementsAttr>(DenseElementsAttr::getFromRawBuffer(type, data));
}

FailureOr<Attribute> Importer::importAttribute(onnx::AttributeProto &attr,
                                               Location loc) {
  std::string what = "attribute '" + attr.name() + "'";
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return Attribute(builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::FLOAT:
    return Attribute(builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::STRING:
    return Attribute(builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS:
    return Attribute(builder.getDenseI64ArrayAttr(
        SmallVector<int64_t>(attr.ints().begin(), attr.ints().end())));
  case onnx::AttributeProto::FLOATS:
    return Attribute(builder.getDenseF32ArrayAttr(
        SmallVector<float>(attr.floats().begin(), attr.floats().end())));
  case onnx::AttributeProto::STRINGS: {
    SmallVector<Attribute> strings;
    for (const std::string &s : attr.strings())
      strings.push_back(builder.getStringAttr(s));
    return Attribute(builder.getArrayAttr(strings));
  }
  case onnx::AttributeProto::TENSOR: {
    auto tensor = importTensor(*attr.mutable_t(), loc, what, attr.name());
    if (failed(tensor))
      return failure();
    return Attribute(*tensor);
  }
  case onnx::AttributeProto::TENSORS: {
    SmallVector<Attribute> tensors;
    for (onnx::TensorProto &t : *attr.mutable_tensors()) {
      auto tensor = importTensor(t, loc, what, attr.name());
      if (failed(tensor))
        return failure();
      tensors.push_back(*tensor);
    }
    return Attribute(builder.getArrayAttr(tensors));
  }
  case onnx::AttributeProto::TYPE_PROTO: {
    auto type = importType(attr.tp(), loc, what);
    if (failed(type))
      return failure();
    return Attribute(TypeAttr::get(*type));
  }
  default:
    return emitError(loc) << what << " has unsupported attribute type "
                          << onnx::AttributeProto::AttributeType_Name(
                                 attr.type());
  }
}

} // namespace mp::onnx_import
