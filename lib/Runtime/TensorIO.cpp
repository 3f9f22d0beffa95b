//===- TensorIO.cpp - tensors from and to .npy and TensorProto files -----===//
//
// See TensorIO.h for the formats. Every error message starts with the path.
// Sizes are checked against the file before anything is allocated for the
// data, so that a header or a dims list that lies cannot ask for a huge
// allocation.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/TensorIO.h"
#include "mp/Runtime/NarrowTypes.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string_view>

#if MP_RUNTIME_HAVE_ONNX
// onnx_pb.h defines ONNX_API, then includes onnx/onnx-ml.pb.h (ONNX_ML=1).
#include <onnx/onnx_pb.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor files are little-endian: big-endian hosts are not supported"
#endif

namespace mp::rt {

namespace {

/// Ranks above this are rejected as absurd (NumPy allows 64 at most).
constexpr size_t kMaxRank = 64;
/// .npy headers are a few hundred bytes; NumPy refuses more than 10000 by
/// default. Larger ones are rejected before they are read.
constexpr uint64_t kMaxNpyHeader = 1u << 20;

Status fileError(const std::string &path, const std::string &message) {
  return Status::error(path + ": " + message);
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

/// The element count of `shape`, and its byte count for elements of
/// `elemSize` bytes, if both fit (and every dim is >= 0).
struct Extent {
  int64_t elements = 1;
  uint64_t bytes = 0;
};
std::optional<Extent> extentOf(const Shape &shape, size_t elemSize) {
  Extent e;
  for (int64_t d : shape) {
    if (d < 0 || (d && e.elements > std::numeric_limits<int64_t>::max() / d))
      return std::nullopt;
    e.elements *= d;
  }
  uint64_t n = static_cast<uint64_t>(e.elements);
  if (elemSize && n > std::numeric_limits<uint64_t>::max() / elemSize)
    return std::nullopt;
  e.bytes = n * elemSize;
  if (e.bytes > static_cast<uint64_t>(std::numeric_limits<size_t>::max()))
    return std::nullopt;
  return e;
}

/// Allocates a tensor, turning std::bad_alloc into an error.
Result<HostTensor> allocate(const std::string &path, DType dtype,
                            const Shape &shape) {
  try {
    return HostTensor(dtype, shape);
  } catch (const std::bad_alloc &) {
    return fileError(path, "cannot allocate a tensor of shape " +
                               shapeString(shape) + " and type " +
                               std::string(dtypeName(dtype)));
  }
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

/// Opens a regular file for reading, with its size.
Status openForReading(const std::string &path, File &file, uint64_t &size) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    return fileError(path, "cannot open: " +
                               (ec ? ec.message() : "no such file"));
  if (!fs::is_regular_file(st))
    return fileError(path, "cannot read: not a regular file");
  size = fs::file_size(path, ec);
  if (ec)
    return fileError(path, "cannot read its size: " + ec.message());
  errno = 0;
  file.reset(std::fopen(path.c_str(), "rb"));
  if (!file)
    return fileError(path, std::string("cannot open: ") + std::strerror(errno));
  return Status::ok();
}

Status readExactly(const std::string &path, std::FILE *f, void *dst,
                   size_t bytes) {
  if (bytes && std::fread(dst, 1, bytes, f) != bytes)
    return fileError(path, std::ferror(f) ? "read error"
                                          : "unexpected end of file");
  return Status::ok();
}

/// Writes `parts` to `path`; on failure removes the partial file.
Status writeFile(const std::string &path,
                 std::initializer_list<std::pair<const void *, size_t>> parts) {
  errno = 0;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return fileError(path, std::string("cannot open for writing: ") +
                               std::strerror(errno));
  bool ok = true;
  for (const auto &[data, size] : parts)
    if (size && std::fwrite(data, 1, size, f) != size)
      ok = false;
  int err = errno;
  if (std::fclose(f) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(path.c_str());
    return fileError(path, std::string("write failed: ") +
                               (err ? std::strerror(err) : "unknown error"));
  }
  return Status::ok();
}

/// The tensor's bytes, checked: a non-negative shape whose size fits, and
/// data present when there are bytes.
Status checkView(const std::string &path, const TensorView &t,
                 uint64_t &bytes) {
  if (!byteSize(t.dtype) || !dtypeFromOnnx(static_cast<int32_t>(t.dtype)))
    return fileError(path, "cannot write: invalid element type");
  if (t.shape.size() > kMaxRank)
    return fileError(path, "cannot write: rank " +
                               std::to_string(t.shape.size()) + " exceeds " +
                               std::to_string(kMaxRank));
  std::optional<Extent> e = extentOf(t.shape, byteSize(t.dtype));
  if (!e)
    return fileError(path, "cannot write: invalid or too large shape " +
                               shapeString(t.shape));
  if (e->bytes && !t.data)
    return fileError(path, "cannot write: the tensor has no data");
  bytes = e->bytes;
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kNpyMagicSize = 6;

std::optional<DType> dtypeFromDescr(std::string_view descr) {
  if (descr == "?")
    return DType::Bool;
  if (descr.size() != 3)
    return std::nullopt;
  char order = descr[0];
  std::string_view code = descr.substr(1);
  struct Entry {
    std::string_view code;
    DType dtype;
  };
  static constexpr Entry kTypes[] = {
      {"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64},
      {"i1", DType::I8},  {"i2", DType::I16}, {"i4", DType::I32},
      {"i8", DType::I64}, {"u1", DType::U8},  {"u2", DType::U16},
      {"u4", DType::U32}, {"u8", DType::U64}, {"b1", DType::Bool}};
  for (const Entry &e : kTypes) {
    if (e.code != code)
      continue;
    // One-byte types have no byte order ('|'); numpy writes '|', accept all.
    if (byteSize(e.dtype) == 1)
      return (order == '<' || order == '|' || order == '=' || order == '>')
                 ? std::optional<DType>(e.dtype)
                 : std::nullopt;
    // '=' is the native order, little-endian here.
    return (order == '<' || order == '=') ? std::optional<DType>(e.dtype)
                                          : std::nullopt;
  }
  return std::nullopt;
}

std::string_view npyDescr(DType t) {
  switch (t) {
  case DType::F16: return "<f2";
  case DType::F32: return "<f4";
  case DType::F64: return "<f8";
  case DType::I8: return "|i1";
  case DType::I16: return "<i2";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::U16: return "<u2";
  case DType::U32: return "<u4";
  case DType::U64: return "<u8";
  case DType::Bool: return "|b1";
  case DType::BF16: return "";
  default:
    return ""; // the narrow types: NumPy has none
  }
  return "";
}

/// A parser for the header of a .npy file: the repr of a Python dict such
/// as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class NpyHeaderParser {
public:
  explicit NpyHeaderParser(std::string_view text) : text_(text) {}

  /// Parses the dict; on failure, the message says what was wrong.
  bool parse(std::string &descr, bool &fortranOrder, Shape &shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return fail("expected '{'");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (haveDescr)
          return fail("duplicate key 'descr'");
        if (peek() == '[')
          return fail("structured dtypes (a list 'descr') are not supported");
        if (!parseString(descr))
          return fail("'descr' is not a string");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (haveOrder)
          return fail("duplicate key 'fortran_order'");
        if (consumeWord("True"))
          fortranOrder = true;
        else if (consumeWord("False"))
          fortranOrder = false;
        else
          return fail("'fortran_order' is not True or False");
        haveOrder = true;
      } else if (key == "shape") {
        if (haveShape)
          return fail("duplicate key 'shape'");
        if (!parseShape(shape))
          return false;
        haveShape = true;
      } else {
        return fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return fail("expected ',' or '}'");
    }
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the dict");
    if (!haveDescr || !haveOrder || !haveShape)
      return fail(std::string("missing key '") +
                  (!haveDescr   ? "descr"
                   : !haveOrder ? "fortran_order"
                                : "shape") +
                  "'");
    return true;
  }

  const std::string &error() const { return error_; }

private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  bool consumeWord(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w)
      return false;
    pos_ += w.size();
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r'))
      ++pos_;
  }
  bool fail(std::string message) {
    error_ = std::move(message) + " at offset " + std::to_string(pos_);
    return false;
  }
  /// A Python string literal in single or double quotes, without escapes
  /// (no key or dtype of a valid header has any).
  bool parseString(std::string &out) {
    char q = peek();
    if (q != '\'' && q != '"')
      return false;
    size_t end = text_.find(q, pos_ + 1);
    if (end == std::string_view::npos)
      return false;
    std::string_view body = text_.substr(pos_ + 1, end - pos_ - 1);
    if (body.find('\\') != std::string_view::npos ||
        body.find('\n') != std::string_view::npos)
      return false;
    out.assign(body);
    pos_ = end + 1;
    return true;
  }
  /// A tuple of non-negative integers: (), (3,), (3, 4), (3, 4,).
  bool parseShape(Shape &shape) {
    shape.clear();
    if (!consume('('))
      return fail("'shape' is not a tuple");
    skipSpace();
    if (consume(')'))
      return true;
    while (true) {
      skipSpace();
      if (peek() == '-')
        return fail("negative dimension in 'shape'");
      if (peek() < '0' || peek() > '9')
        return fail("expected a dimension in 'shape'");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        int64_t digit = peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return fail("dimension too large in 'shape'");
        v = v * 10 + digit;
        ++pos_;
      }
      consume('L'); // Python 2 longs
      shape.push_back(v);
      if (shape.size() > kMaxRank)
        return fail("more than " + std::to_string(kMaxRank) +
                    " dimensions in 'shape'");
      skipSpace();
      bool comma = consume(',');
      skipSpace();
      if (consume(')')) {
        if (shape.size() == 1 && !comma)
          return fail("'shape' is not a tuple (a 1-tuple needs a comma)");
        return true;
      }
      if (!comma)
        return fail("expected ',' or ')' in 'shape'");
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

Result<HostTensor> readNpy(const std::string &path) {
  File file;
  uint64_t fileSize = 0;
  if (Status s = openForReading(path, file, fileSize); !s)
    return s;

  // Magic, version and header length.
  unsigned char prefix[12];
  if (fileSize < 10)
    return fileError(path, "not a NumPy .npy file: truncated header (" +
                               std::to_string(fileSize) + " bytes)");
  if (Status s = readExactly(path, file.get(), prefix, 10); !s)
    return s;
  if (std::memcmp(prefix, kNpyMagic, kNpyMagicSize) != 0)
    return fileError(path, "not a NumPy .npy file (bad magic string)");
  unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fileError(path, "unsupported .npy format version " +
                               std::to_string(major) + "." +
                               std::to_string(minor));
  uint64_t headerLen = 0;
  size_t prefixLen = 10;
  if (major == 1) {
    headerLen = prefix[8] | (uint64_t(prefix[9]) << 8);
  } else {
    prefixLen = 12;
    if (fileSize < 12)
      return fileError(path, "truncated .npy header (" +
                                 std::to_string(fileSize) + " bytes)");
    if (Status s = readExactly(path, file.get(), prefix + 10, 2); !s)
      return s;
    headerLen = prefix[8] | (uint64_t(prefix[9]) << 8) |
                (uint64_t(prefix[10]) << 16) | (uint64_t(prefix[11]) << 24);
  }
  if (headerLen > kMaxNpyHeader)
    return fileError(path, "absurd .npy header length " +
                               std::to_string(headerLen));
  if (fileSize - prefixLen < headerLen)
    return fileError(path, "truncated .npy header: it has " +
                               std::to_string(headerLen) + " bytes, the file " +
                               std::to_string(fileSize - prefixLen) +
                               " after the prefix");
  std::string header(headerLen, '\0');
  if (Status s = readExactly(path, file.get(), header.data(), headerLen); !s)
    return s;

  std::string descr;
  bool fortranOrder = false;
  Shape shape;
  NpyHeaderParser parser(header);
  if (!parser.parse(descr, fortranOrder, shape))
    return fileError(path, "invalid .npy header: " + parser.error());
  std::optional<DType> dtype = dtypeFromDescr(descr);
  if (!dtype) {
    std::string why = "unsupported .npy dtype '" + descr + "'";
    if (!descr.empty() && descr[0] == '>')
      why += " (big-endian data is not supported)";
    return fileError(path, why);
  }
  if (fortranOrder)
    return fileError(path, "fortran_order arrays are not supported (only C "
                           "order)");
  std::optional<Extent> extent = extentOf(shape, byteSize(*dtype));
  if (!extent)
    return fileError(path, "shape " + shapeString(shape) +
                               " is too large (its size overflows)");
  uint64_t dataBytes = fileSize - prefixLen - headerLen;
  if (dataBytes < extent->bytes)
    return fileError(path, "data is truncated: shape " + shapeString(shape) +
                               " of " + descr + " needs " +
                               std::to_string(extent->bytes) +
                               " bytes, the file has " +
                               std::to_string(dataBytes));
  if (dataBytes > extent->bytes)
    return fileError(path, "the file has " +
                               std::to_string(dataBytes - extent->bytes) +
                               " bytes after the data of shape " +
                               shapeString(shape) + " of " + descr);

  Result<HostTensor> tensor = allocate(path, *dtype, shape);
  if (!tensor)
    return tensor;
  if (Status s = readExactly(path, file.get(), tensor->data(), extent->bytes);
      !s)
    return s;
  if (*dtype == DType::Bool) {
    uint8_t *p = tensor->as<uint8_t>();
    for (uint64_t i = 0; i < extent->bytes; ++i)
      p[i] = p[i] != 0;
  }
  return tensor;
}

Status writeNpy(const std::string &path, const TensorView &tensor) {
  uint64_t bytes = 0;
  if (Status s = checkView(path, tensor, bytes); !s)
    return s;
  if (tensor.dtype == DType::BF16)
    return fileError(path, "cannot write bf16 as .npy: NumPy has no bfloat16 "
                           "type (write its bits as ui16, or convert to f32)");
  std::string dict = "{'descr': '" + std::string(npyDescr(tensor.dtype)) +
                     "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i)
      dict += ", ";
    dict += std::to_string(tensor.shape[i]);
  }
  if (tensor.shape.size() == 1)
    dict += ",";
  dict += "), }";
  // Version 1.0 has a 2-byte header length, 2.0 a 4-byte one. The data
  // starts at a multiple of 64 bytes; the header ends with '\n'.
  size_t prefixLen = 10;
  size_t total = ((prefixLen + dict.size() + 1 + 63) / 64) * 64;
  if (total - prefixLen > 0xffff) {
    prefixLen = 12;
    total = ((prefixLen + dict.size() + 1 + 63) / 64) * 64;
  }
  size_t headerLen = total - prefixLen;
  std::string head(kNpyMagic, kNpyMagicSize);
  head += static_cast<char>(prefixLen == 10 ? 1 : 2);
  head += '\0';
  for (size_t i = 0; i < prefixLen - 8; ++i)
    head += static_cast<char>((headerLen >> (8 * i)) & 0xff);
  head += dict;
  head.append(headerLen - dict.size() - 1, ' ');
  head += '\n';
  return writeFile(path, {{head.data(), head.size()},
                          {tensor.data, static_cast<size_t>(bytes)}});
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

#if MP_RUNTIME_HAVE_ONNX

namespace {

std::string onnxTypeName(int32_t code) {
  std::string name;
  if (onnx::TensorProto_DataType_IsValid(code))
    name = onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(code));
  return std::to_string(code) + (name.empty() ? "" : " (" + name + ")");
}

/// Copies `count` typed values into `dst` as `Out`, checking each is in
/// [lo, hi].
template <typename Out, typename Field, typename In>
Status copyTyped(const std::string &path, const Field &field, Out *dst,
                 const char *fieldName, DType dtype, In lo, In hi) {
  for (int i = 0; i < field.size(); ++i) {
    In v = field.Get(i);
    if (v < lo || v > hi)
      return fileError(path, std::string(fieldName) + "[" + std::to_string(i) +
                                 "] = " + std::to_string(v) +
                                 " is out of range for " +
                                 std::string(dtypeName(dtype)));
    dst[i] = static_cast<Out>(v);
  }
  return Status::ok();
}

} // namespace

bool hasTensorProtoSupport() { return true; }

Result<NamedTensor> readTensorProto(const std::string &path) {
  File file;
  uint64_t fileSize = 0;
  if (Status s = openForReading(path, file, fileSize); !s)
    return s;
  if (fileSize > static_cast<uint64_t>(INT_MAX))
    return fileError(path, "too large for a TensorProto (" +
                               std::to_string(fileSize) +
                               " bytes; protobuf's limit is 2 GiB)");
  std::string buffer;
  try {
    buffer.resize(fileSize);
  } catch (const std::bad_alloc &) {
    return fileError(path, "cannot allocate " + std::to_string(fileSize) +
                               " bytes to read it");
  }
  if (Status s = readExactly(path, file.get(), buffer.data(), fileSize); !s)
    return s;
  file.reset();

  onnx::TensorProto proto;
  if (!proto.ParseFromString(buffer))
    return fileError(path, "not a valid onnx.TensorProto (protobuf parsing "
                           "failed)");
  buffer.clear();
  buffer.shrink_to_fit();

  if (proto.data_location() == onnx::TensorProto::EXTERNAL ||
      proto.external_data_size())
    return fileError(path, "TensorProto with external data is not supported");
  if (proto.has_segment())
    return fileError(path, "segmented TensorProto is not supported");
  std::optional<DType> dtype = dtypeFromOnnx(proto.data_type());
  if (!dtype)
    return fileError(path, "unsupported TensorProto data_type " +
                               onnxTypeName(proto.data_type()));
  if (proto.dims_size() > static_cast<int>(kMaxRank))
    return fileError(path, "rank " + std::to_string(proto.dims_size()) +
                               " exceeds " + std::to_string(kMaxRank));
  Shape shape(proto.dims().begin(), proto.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return fileError(path, "negative dimension in dims " +
                                 shapeString(shape));
  std::optional<Extent> extent = extentOf(shape, byteSize(*dtype));
  if (!extent)
    return fileError(path, "dims " + shapeString(shape) +
                               " are too large (the size overflows)");
  const int64_t n = extent->elements;
  const std::string typeName = onnxTypeName(proto.data_type());

  // Which typed field the data type uses; any other one must be empty.
  const char *wanted = nullptr;
  switch (*dtype) {
  case DType::F32: wanted = "float_data"; break;
  case DType::F64: wanted = "double_data"; break;
  case DType::I64: wanted = "int64_data"; break;
  case DType::U32: case DType::U64: wanted = "uint64_data"; break;
  default: wanted = "int32_data"; break;
  }
  const std::pair<const char *, int> typedFields[] = {
      {"float_data", proto.float_data_size()},
      {"int32_data", proto.int32_data_size()},
      {"string_data", proto.string_data_size()},
      {"int64_data", proto.int64_data_size()},
      {"double_data", proto.double_data_size()},
      {"uint64_data", proto.uint64_data_size()}};
  int typedCount = 0;
  for (const auto &[field, count] : typedFields) {
    if (!count)
      continue;
    if (std::strcmp(field, wanted) != 0)
      return fileError(path, std::string(field) + " has " +
                                 std::to_string(count) +
                                 " values, but data_type " + typeName +
                                 " keeps its data in " + wanted +
                                 " or raw_data");
    typedCount = count;
  }
  if (proto.has_raw_data() && typedCount)
    return fileError(path, std::string("both raw_data and ") + wanted +
                               " are set");

  // The 4- and 2-bit types are packed, in raw_data and in int32_data (a
  // packed byte per value) alike (NarrowTypes.h).
  const unsigned packedBits = narrow::packedBits(proto.data_type());
  const uint64_t packedBytes =
      packedBits < 8 ? (static_cast<uint64_t>(n) * packedBits + 7) / 8
                     : extent->bytes;
  const int64_t typedWanted =
      packedBits < 8 ? static_cast<int64_t>(packedBytes) : n;
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != packedBytes)
      return fileError(
          path, "raw_data has " + std::to_string(proto.raw_data().size()) +
                    " bytes, dims " + shapeString(shape) + " of " + typeName +
                    " need " + std::to_string(packedBytes));
  } else if (typedCount != typedWanted) {
    return fileError(
        path, std::string(wanted) + " has " + std::to_string(typedCount) +
                  " values, dims " + shapeString(shape) + " need " +
                  std::to_string(typedWanted) +
                  (typedCount ? "" : " (and there is no raw_data)"));
  }

  Result<HostTensor> allocated = allocate(path, *dtype, shape);
  if (!allocated)
    return allocated.status();
  HostTensor tensor = allocated.take();
  if (isNarrow(*dtype)) {
    std::vector<uint8_t> bytes;
    if (proto.has_raw_data()) {
      bytes.assign(proto.raw_data().begin(), proto.raw_data().end());
    } else {
      for (int32_t v : proto.int32_data()) {
        if (v < 0 || v > 255)
          return fileError(path, "int32_data holds " + std::to_string(v) +
                                     ", not a byte of " + typeName);
        bytes.push_back(static_cast<uint8_t>(v));
      }
    }
    if (packedBits < 8)
      narrow::unpackNarrow(bytes.data(), static_cast<size_t>(n), packedBits,
                           tensor.as<uint8_t>());
    else if (n)
      std::memcpy(tensor.data(), bytes.data(), static_cast<size_t>(n));
    return NamedTensor{proto.name(), std::move(tensor)};
  }
  if (proto.has_raw_data()) {
    if (extent->bytes)
      std::memcpy(tensor.data(), proto.raw_data().data(), extent->bytes);
    if (*dtype == DType::Bool) {
      uint8_t *p = tensor.as<uint8_t>();
      for (int64_t i = 0; i < n; ++i)
        p[i] = p[i] != 0;
    }
  } else if (n) {
    Status s = Status::ok();
    const auto &i32 = proto.int32_data();
    switch (*dtype) {
    case DType::F32:
      std::copy(proto.float_data().begin(), proto.float_data().end(),
                tensor.as<float>());
      break;
    case DType::F64:
      std::copy(proto.double_data().begin(), proto.double_data().end(),
                tensor.as<double>());
      break;
    case DType::I64:
      std::copy(proto.int64_data().begin(), proto.int64_data().end(),
                tensor.as<int64_t>());
      break;
    case DType::U64:
      std::copy(proto.uint64_data().begin(), proto.uint64_data().end(),
                tensor.as<uint64_t>());
      break;
    case DType::U32:
      s = copyTyped(path, proto.uint64_data(), tensor.as<uint32_t>(),
                    "uint64_data", *dtype, uint64_t(0), uint64_t(UINT32_MAX));
      break;
    case DType::I32:
      std::copy(i32.begin(), i32.end(), tensor.as<int32_t>());
      break;
    case DType::I16:
      s = copyTyped(path, i32, tensor.as<int16_t>(), "int32_data", *dtype,
                    int32_t(INT16_MIN), int32_t(INT16_MAX));
      break;
    case DType::I8:
      s = copyTyped(path, i32, tensor.as<int8_t>(), "int32_data", *dtype,
                    int32_t(INT8_MIN), int32_t(INT8_MAX));
      break;
    case DType::U16:
      s = copyTyped(path, i32, tensor.as<uint16_t>(), "int32_data", *dtype,
                    int32_t(0), int32_t(UINT16_MAX));
      break;
    case DType::U8:
      s = copyTyped(path, i32, tensor.as<uint8_t>(), "int32_data", *dtype,
                    int32_t(0), int32_t(UINT8_MAX));
      break;
    case DType::F16:
    case DType::BF16:
      // The bit pattern, as an unsigned (or sign-extended) 16-bit value.
      s = copyTyped(path, i32, tensor.as<uint16_t>(), "int32_data", *dtype,
                    int32_t(INT16_MIN), int32_t(UINT16_MAX));
      break;
    case DType::Bool: {
      uint8_t *p = tensor.as<uint8_t>();
      for (int64_t i = 0; i < n; ++i)
        p[i] = i32.Get(static_cast<int>(i)) != 0;
      break;
    }
    default: // the narrow types: above
      break;
    }
    if (!s)
      return s;
  }
  return NamedTensor{proto.name(), std::move(tensor)};
}

Status writeTensorProto(const std::string &path, const TensorView &tensor,
                        const std::string &name) {
  uint64_t bytes = 0;
  if (Status s = checkView(path, tensor, bytes); !s)
    return s;
  if (bytes > static_cast<uint64_t>(INT_MAX) - (1u << 20))
    return fileError(path, "cannot write: " + std::to_string(bytes) +
                               " bytes exceed protobuf's 2 GiB limit");
  onnx::TensorProto proto;
  for (int64_t d : tensor.shape)
    proto.add_dims(d);
  proto.set_data_type(static_cast<int32_t>(tensor.dtype));
  if (!name.empty())
    proto.set_name(name);
  const unsigned packedBits =
      narrow::packedBits(static_cast<int32_t>(tensor.dtype));
  if (isNarrow(tensor.dtype) && packedBits < 8) {
    size_t count = static_cast<size_t>(tensor.numElements());
    std::string packed((count * packedBits + 7) / 8, '\0');
    narrow::packNarrow(static_cast<const uint8_t *>(tensor.data), count,
                       packedBits, reinterpret_cast<uint8_t *>(packed.data()));
    proto.set_raw_data(std::move(packed));
  } else {
    proto.set_raw_data(static_cast<const char *>(tensor.data),
                       static_cast<size_t>(bytes));
  }
  std::string out;
  if (!proto.SerializeToString(&out))
    return fileError(path, "cannot serialize the TensorProto");
  return writeFile(path, {{out.data(), out.size()}});
}

#else // !MP_RUNTIME_HAVE_ONNX

bool hasTensorProtoSupport() { return false; }

Result<NamedTensor> readTensorProto(const std::string &path) {
  return fileError(path, "cannot read a TensorProto: the runtime was built "
                         "without ONNX TensorProto support "
                         "(MP_RUNTIME_WITH_ONNX)");
}

Status writeTensorProto(const std::string &path, const TensorView &,
                        const std::string &) {
  return fileError(path, "cannot write a TensorProto: the runtime was built "
                         "without ONNX TensorProto support "
                         "(MP_RUNTIME_WITH_ONNX)");
}

#endif // MP_RUNTIME_HAVE_ONNX

Result<HostTensor> readTensorFile(const std::string &path) {
  auto endsWith = [&](std::string_view suffix) {
    if (path.size() < suffix.size())
      return false;
    std::string tail = path.substr(path.size() - suffix.size());
    std::transform(tail.begin(), tail.end(), tail.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return tail == suffix;
  };
  bool npy = endsWith(".npy");
  if (!npy && !endsWith(".pb") && !endsWith(".tensorproto")) {
    // By content: the NumPy magic string, else a TensorProto.
    File file;
    uint64_t size = 0;
    if (Status s = openForReading(path, file, size); !s)
      return s;
    char magic[kNpyMagicSize] = {};
    npy = size >= kNpyMagicSize &&
          std::fread(magic, 1, kNpyMagicSize, file.get()) == kNpyMagicSize &&
          std::memcmp(magic, kNpyMagic, kNpyMagicSize) == 0;
  }
  if (npy)
    return readNpy(path);
  Result<NamedTensor> r = readTensorProto(path);
  if (!r)
    return r.status();
  return std::move(r->tensor);
}

} // namespace mp::rt
