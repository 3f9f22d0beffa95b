// Tests of mp/Runtime/TensorIO.h: .npy and ONNX TensorProto files.
//
// Round trips for every element type, files written by hand as NumPy and
// ONNX write them (the TensorProto bytes by a small protobuf encoder here, so
// that this test needs no protobuf), ONNX's backend test data, and every
// malformed-input error (each must name the file).
#include "mp/Runtime/Half.h"
#include "mp/Runtime/TensorIO.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#ifndef MP_ONNX_TESTDATA
#define MP_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

using namespace mp::rt;
using namespace mp::rt::test;
namespace fs = std::filesystem;

namespace {

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const DType kAllTypes[] = {DType::F32, DType::U8,  DType::I8,  DType::U16,
                           DType::I16, DType::I32, DType::I64, DType::Bool,
                           DType::F16, DType::F64, DType::U32, DType::U64,
                           DType::BF16};

/// A tensor of `dtype` filled with varied values, extremes included.
HostTensor makeTensor(DType dtype, const Shape &shape) {
  HostTensor t(dtype, shape);
  auto *bytes = static_cast<unsigned char *>(t.data());
  size_t n = static_cast<size_t>(t.numElements());
  size_t es = byteSize(dtype);
  for (size_t i = 0; i < n; ++i) {
    unsigned char *p = bytes + i * es;
    switch (dtype) {
    case DType::F32: {
      float v = i == 0 ? -0.0f : i == 1 ? std::numeric_limits<float>::infinity()
                                        : static_cast<float>(i) * 0.7f - 3.0f;
      std::memcpy(p, &v, 4);
      break;
    }
    case DType::F64: {
      double v = i == 0 ? std::numeric_limits<double>::max() : i * -1.25e-3;
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::F16: {
      uint16_t v = toHalf(static_cast<float>(i) * 0.3f - 1.0f).bits;
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::BF16: {
      uint16_t v = toBFloat16(static_cast<float>(i) * 1e10f).bits;
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::Bool:
      *p = (i % 3) == 0;
      break;
    default: {
      // Integers: the minimum, the maximum, then varied bytes.
      if (i == 0) {
        std::memset(p, 0, es);
        if (dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 ||
            dtype == DType::I64)
          p[es - 1] = 0x80;
      } else if (i == 1) {
        std::memset(p, 0xff, es);
        if (dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 ||
            dtype == DType::I64)
          p[es - 1] = 0x7f;
      } else {
        for (size_t b = 0; b < es; ++b)
          p[b] = static_cast<unsigned char>(i * 37 + b * 101);
      }
    }
    }
  }
  return t;
}

bool sameTensor(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         a.byteCount() == b.byteCount() &&
         (a.byteCount() == 0 ||
          std::memcmp(a.data(), b.data(), a.byteCount()) == 0);
}

/// The header dict NumPy writes.
std::string npyDict(const std::string &descr, const std::string &shape,
                    const std::string &fortranOrder = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortranOrder +
         ", 'shape': " + shape + ", }";
}

/// The prefix and header of a .npy file as NumPy writes it: padded with
/// spaces to a multiple of 64 bytes, ending with '\n'.
std::string npyHeader(const std::string &dict, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  size_t total = ((prefix + dict.size() + 1 + 63) / 64) * 64;
  size_t len = total - prefix;
  std::string s("\x93NUMPY", 6);
  s += static_cast<char>(major);
  s += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    s += static_cast<char>((len >> (8 * i)) & 0xff);
  s += dict;
  s.append(len - dict.size() - 1, ' ');
  s += '\n';
  return s;
}

template <typename T> std::string rawBytes(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(T));
}

/// A minimal protobuf wire-format encoder for TensorProto messages.
struct Proto {
  std::string bytes;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      bytes += static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    bytes += static_cast<char>(v);
  }
  void tag(int field, int wireType) {
    varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wireType));
  }
  Proto &intField(int field, int64_t v) {
    tag(field, 0);
    varint(static_cast<uint64_t>(v));
    return *this;
  }
  Proto &bytesField(int field, const std::string &s) {
    tag(field, 2);
    varint(s.size());
    bytes += s;
    return *this;
  }
  /// Packed varints (int32/int64/uint64 fields; negatives sign-extended).
  Proto &packedInts(int field, const std::vector<int64_t> &vs) {
    Proto body;
    for (int64_t v : vs)
      body.varint(static_cast<uint64_t>(v));
    return bytesField(field, body.bytes);
  }
  Proto &packedFloats(int field, const std::vector<float> &vs) {
    return bytesField(field, rawBytes(vs));
  }
  Proto &packedDoubles(int field, const std::vector<double> &vs) {
    return bytesField(field, rawBytes(vs));
  }
  Proto &dims(const std::vector<int64_t> &ds) {
    for (int64_t d : ds) // unpacked, as proto2 writes them
      intField(1, d);
    return *this;
  }
};
// onnx.TensorProto field numbers.
enum : int {
  kDims = 1, kDataType = 2, kSegment = 3, kFloatData = 4, kInt32Data = 5,
  kStringData = 6, kInt64Data = 7, kName = 8, kRawData = 9, kDoubleData = 10,
  kUint64Data = 11, kExternalData = 13, kDataLocation = 14
};

/// The ONNX backend test directory of one node test, if installed.
fs::path nodeTest(const std::string &name) {
  return fs::path(MP_ONNX_TESTDATA) / "node" / name / "test_data_set_0";
}

HostTensor readOk(const std::string &path) {
  Result<HostTensor> r = readTensorFile(path);
  INFO(path << ": " << r.message());
  REQUIRE(r.isOk());
  return r.take();
}

/// Checks that `r` failed with a message naming `path` and containing every
/// one of `phrases`.
template <typename R>
void expectError(const R &r, const std::string &path,
                 std::initializer_list<const char *> phrases) {
  REQUIRE_FALSE(r.isOk());
  const std::string &m = r.message();
  INFO("message: " << m);
  CHECK(m.rfind(path + ": ", 0) == 0);
  for (const char *p : phrases)
    CHECK(m.find(p) != std::string::npos);
}

} // namespace

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

TEST_CASE("TensorIO: .npy round trip of every dtype and shape", "[tensorio]") {
  TempDir dir;
  const Shape shapes[] = {{2, 3}, {}, {7}, {0, 4}, {1, 2, 3, 4}, {65}};
  for (DType dtype : kAllTypes) {
    if (dtype == DType::BF16)
      continue;
    for (const Shape &shape : shapes) {
      HostTensor t = makeTensor(dtype, shape);
      std::string path = dir.file("t.npy");
      INFO(dtypeName(dtype) << " rank " << shape.size());
      Status s = writeNpy(path, t.view());
      INFO(s.message());
      REQUIRE(s.isOk());
      // The data starts at a multiple of 64 bytes, as NumPy aligns it.
      std::string bytes = readBytes(path);
      CHECK(bytes.size() == ((bytes.size() - t.byteCount()) / 64) * 64 +
                                t.byteCount());
      Result<HostTensor> back = readNpy(path);
      INFO(back.message());
      REQUIRE(back.isOk());
      CHECK(sameTensor(*back, t));
      CHECK(sameTensor(readOk(path), t));
    }
  }
}

TEST_CASE("TensorIO: .npy header is written as NumPy writes it",
          "[tensorio]") {
  TempDir dir;
  std::string path = dir.file("a.npy");
  HostTensor t = makeTensor(DType::F32, {2, 3});
  REQUIRE(writeNpy(path, t.view()).isOk());
  std::string expect =
      // What numpy.save writes for a (2, 3) float32 array (NumPy >= 1.23
      // pads the header further, by up to 21 spaces; readers ignore it).
      npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") +
      std::string(static_cast<const char *>(t.data()), t.byteCount());
  CHECK(readBytes(path) == expect);

  HostTensor v = makeTensor(DType::I8, {5});
  REQUIRE(writeNpy(path, v.view()).isOk());
  std::string h1 = npyHeader(npyDict("|i1", "(5,)"));
  CHECK(readBytes(path) ==
        h1 + std::string(static_cast<const char *>(v.data()), 5));
  HostTensor s = makeTensor(DType::Bool, {});
  REQUIRE(writeNpy(path, s.view()).isOk());
  std::string h2 = npyHeader(npyDict("|b1", "()"));
  CHECK(readBytes(path) == h2 + std::string("\x01", 1));
}

TEST_CASE("TensorIO: reading .npy files as NumPy and others write them",
          "[tensorio]") {
  TempDir dir;
  std::vector<int64_t> i64 = {1, -2, 3};
  std::vector<double> f64 = {0.5, -1e300, 2.0, 4.0};
  std::vector<uint16_t> f16 = {0x3c00, 0xc000};
  struct Case {
    std::string name, bytes;
    DType dtype;
    Shape shape;
    std::string data;
  } cases[] = {
      {"v1", npyHeader(npyDict("<i8", "(3,)")) +
                 rawBytes(i64),
       DType::I64, {3}, rawBytes(i64)},
      {"v2", npyHeader(npyDict("<f8", "(2, 2)"), 2) +
                 rawBytes(f64),
       DType::F64, {2, 2}, rawBytes(f64)},
      {"v3", npyHeader(npyDict("<f2", "(2,)"), 3) +
                 rawBytes(f16),
       DType::F16, {2}, rawBytes(f16)},
      // Python 2 longs, other key order, double quotes, no trailing comma,
      // 16-byte alignment (old NumPy), native order '='.
      {"py2", npyHeader("{'shape': (1L, 3L), 'fortran_order': False, 'descr': '<i8'}") +
                  rawBytes(i64),
       DType::I64, {1, 3}, rawBytes(i64)},
      {"dq", npyHeader("{\"descr\": \"=f2\", \"fortran_order\": False, \"shape\": (2 ,)}") +
                 rawBytes(f16),
       DType::F16, {2}, rawBytes(f16)},
      // NumPy >= 1.23 leaves room for the first axis to grow.
      {"np2", npyHeader(npyDict("<i8", "(3,)") + std::string(20, ' ')) +
                  rawBytes(i64),
       DType::I64, {3}, rawBytes(i64)},
      {"u1", npyHeader(npyDict("|u1", "(0,)")),
       DType::U8, {0}, ""},
      {"b1", npyHeader(npyDict("|b1", "(3,)")) +
                 std::string("\x01\x00\x01", 3),
       DType::Bool, {3}, std::string("\x01\x00\x01", 3)},
      // Bool bytes other than 0 and 1 read as 1.
      {"b1x", npyHeader(npyDict("?", "(2,)")) +
                  std::string("\x00\x07", 2),
       DType::Bool, {2}, std::string("\x00\x01", 2)},
  };
  for (const Case &c : cases) {
    INFO(c.name);
    std::string path = dir.file(c.name + ".npy");
    writeBytes(path, c.bytes);
    Result<HostTensor> r = readNpy(path);
    INFO(r.message());
    REQUIRE(r.isOk());
    CHECK(r->dtype() == c.dtype);
    CHECK(r->shape() == c.shape);
    REQUIRE(r->byteCount() == c.data.size());
    CHECK(std::memcmp(r->data(), c.data.data(), c.data.size()) == 0);
  }
  // An old-style header padded to 16 bytes only.
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  std::string s("\x93NUMPY\x01\x00", 8);
  size_t len = ((10 + dict.size() + 1 + 15) / 16) * 16 - 10;
  s += static_cast<char>(len & 0xff);
  s += static_cast<char>(len >> 8);
  s += dict + std::string(len - dict.size() - 1, ' ') + "\n" + rawBytes(i64);
  writeBytes(dir.file("old.npy"), s);
  HostTensor t = readOk(dir.file("old.npy"));
  CHECK(t.shape() == Shape{3});
  CHECK(t.as<int64_t>()[1] == -2);
}

TEST_CASE("TensorIO: bf16 cannot be written as .npy", "[tensorio]") {
  TempDir dir;
  HostTensor t = makeTensor(DType::BF16, {4});
  std::string path = dir.file("b.npy");
  Status s = writeNpy(path, t.view());
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message().rfind(path + ": ", 0) == 0);
  CHECK(s.message().find("bfloat16") != std::string::npos);
  CHECK_FALSE(fs::exists(path));
  // Its bits can be written as ui16 and read back.
  TensorView bits = t.view();
  bits.dtype = DType::U16;
  REQUIRE(writeNpy(path, bits).isOk());
  Result<HostTensor> back = readNpy(path);
  REQUIRE(back.isOk());
  CHECK(back->dtype() == DType::U16);
  CHECK(std::memcmp(back->data(), t.data(), t.byteCount()) == 0);
}

TEST_CASE("TensorIO: malformed .npy files give errors naming the file",
          "[tensorio]") {
  TempDir dir;
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  const std::string data12(12, '\0');
  struct Case {
    const char *name;
    std::string bytes;
    std::initializer_list<const char *> phrases;
  };
  auto withLen = [](std::string prefix, uint32_t len, int lenBytes) {
    for (int i = 0; i < lenBytes; ++i)
      prefix += static_cast<char>((len >> (8 * i)) & 0xff);
    return prefix;
  };
  const Case cases[] = {
      {"empty", "", {"truncated header", "0 bytes"}},
      {"short", std::string("\x93NUMP", 5), {"truncated header"}},
      {"magic", std::string("\x93NUMPX\x01\x00\x02\x00{}", 12), {"bad magic"}},
      {"text", "hello, this is not a tensor at all", {"bad magic"}},
      {"version", npyHeader(good).replace(6, 1, "\x04") + data12,
       {"unsupported .npy format version 4.0"}},
      {"minor", npyHeader(good).replace(7, 1, "\x01") + data12,
       {"unsupported .npy format version 1.1"}},
      {"v2prefix", std::string("\x93NUMPY\x02\x00\x10\x00", 10),
       {"truncated .npy header"}},
      {"headerlen", withLen(std::string("\x93NUMPY\x01\x00", 8), 0x1000, 2) + good,
       {"truncated .npy header", "4096"}},
      {"absurdheader", withLen(std::string("\x93NUMPY\x02\x00", 8), 0xffffffffu, 4) + good,
       {"absurd .npy header length 4294967295"}},
      {"nobrace", npyHeader("'descr': '<f4', 'fortran_order': False, 'shape': (3,)") + data12,
       {"invalid .npy header", "expected '{'"}},
      {"unclosed", npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)") + data12,
       {"invalid .npy header", "expected ',' or '}'"}},
      {"missingkey", npyHeader("{'descr': '<f4', 'shape': (3,), }") + data12,
       {"invalid .npy header", "missing key 'fortran_order'"}},
      {"unknownkey", npyHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}") + data12,
       {"invalid .npy header", "unexpected key 'x'"}},
      {"duplicate", npyHeader("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}") + data12,
       {"invalid .npy header", "duplicate key 'descr'"}},
      {"order", npyHeader(npyDict("<f4", "(3,)", "0")) + data12,
       {"invalid .npy header", "'fortran_order' is not True or False"}},
      {"shapelist", npyHeader(npyDict("<f4", "[3]")) + data12,
       {"invalid .npy header", "'shape' is not a tuple"}},
      {"shapenocomma", npyHeader(npyDict("<f4", "(3)")) + data12,
       {"invalid .npy header", "1-tuple"}},
      {"negative", npyHeader(npyDict("<f4", "(-3,)")) + data12,
       {"invalid .npy header", "negative dimension"}},
      {"bigdim", npyHeader(npyDict("<f4", "(99999999999999999999,)")),
       {"invalid .npy header", "dimension too large"}},
      {"trailingtext", npyHeader(good + " x") + data12,
       {"invalid .npy header", "unexpected text after the dict"}},
      {"unterminated", npyHeader("{'descr: '<f4'}") + data12,
       {"invalid .npy header"}},
      {"structured", npyHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }") + data12,
       {"invalid .npy header", "structured dtypes"}},
      {"fortran", npyHeader(npyDict("<f4", "(3,)", "True")) + data12,
       {"fortran_order", "C order"}},
      {"bigendian", npyHeader(npyDict(">f4", "(3,)")) + data12,
       {"unsupported .npy dtype '>f4'", "big-endian"}},
      {"complex", npyHeader(npyDict("<c8", "(3,)")) + data12,
       {"unsupported .npy dtype '<c8'"}},
      {"unicode", npyHeader(npyDict("<U3", "(1,)")) + data12,
       {"unsupported .npy dtype '<U3'"}},
      {"object", npyHeader(npyDict("|O", "(3,)")) + data12,
       {"unsupported .npy dtype '|O'"}},
      {"overflow", npyHeader(npyDict("<f4", "(4294967296, 4294967296, 16)")) + data12,
       {"too large"}},
      {"overflowbytes", npyHeader(npyDict("<f8", "(4611686018427387904,)")) + data12,
       {"too large"}},
      {"absurdsize", npyHeader(npyDict("<f4", "(1000000000000,)")) + data12,
       {"data is truncated", "4000000000000 bytes", "has 12"}},
      {"truncated", npyHeader(good) + std::string(8, '\0'),
       {"data is truncated", "needs 12 bytes", "has 8"}},
      {"trailing", npyHeader(good) + std::string(13, '\0'),
       {"1 bytes after the data"}},
  };
  for (const Case &c : cases) {
    INFO("case " << c.name);
    std::string path = dir.file(std::string(c.name) + ".npy");
    writeBytes(path, c.bytes);
    expectError(readNpy(path), path, c.phrases);
    expectError(readTensorFile(path), path, c.phrases);
  }

  std::string missing = dir.file("missing.npy");
  expectError(readNpy(missing), missing, {"cannot open"});
  expectError(readTensorFile(missing), missing, {"cannot open"});
  expectError(readNpy(dir.path.string()), dir.path.string(),
              {"not a regular file"});
}

TEST_CASE("TensorIO: invalid tensors and paths are write errors",
          "[tensorio]") {
  TempDir dir;
  HostTensor t = makeTensor(DType::F32, {3});
  std::string noDir = dir.file("no/such/dir/x.npy");
  expectError(writeNpy(noDir, t.view()), noDir, {"cannot open for writing"});
  TensorView bad = t.view();
  bad.shape = {-1, 3};
  std::string path = dir.file("x.npy");
  expectError(writeNpy(path, bad), path, {"invalid or too large shape"});
  TensorView null = t.view();
  null.data = nullptr;
  expectError(writeNpy(path, null), path, {"no data"});
  if (hasTensorProtoSupport()) {
    std::string pb = dir.file("x.pb");
    expectError(writeTensorProto(pb, bad), pb, {"invalid or too large shape"});
    expectError(writeTensorProto(noDir, t.view()), noDir,
                {"cannot open for writing"});
  }
  // An empty tensor needs no data.
  TensorView empty;
  empty.dtype = DType::I32;
  empty.shape = {0, 5};
  REQUIRE(writeNpy(path, empty).isOk());
  CHECK(readOk(path).shape() == Shape{0, 5});
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

TEST_CASE("TensorIO: TensorProto round trip of every dtype and shape",
          "[tensorio][onnx]") {
  TempDir dir;
  if (!hasTensorProtoSupport()) {
    std::string path = dir.file("t.pb");
    HostTensor t = makeTensor(DType::F32, {2});
    expectError(writeTensorProto(path, t.view(), "t"), path,
                {"without ONNX TensorProto support"});
    writeBytes(path, std::string("\x08\x02\x10\x01", 4));
    expectError(readTensorProto(path), path,
                {"without ONNX TensorProto support"});
    return;
  }
  const Shape shapes[] = {{2, 3}, {}, {7}, {0, 4}, {1, 2, 3, 4}};
  for (DType dtype : kAllTypes) {
    for (const Shape &shape : shapes) {
      HostTensor t = makeTensor(dtype, shape);
      std::string path = dir.file("t.pb");
      INFO(dtypeName(dtype) << " rank " << shape.size());
      Status s = writeTensorProto(path, t.view(), "tensor_name");
      INFO(s.message());
      REQUIRE(s.isOk());
      Result<NamedTensor> back = readTensorProto(path);
      INFO(back.message());
      REQUIRE(back.isOk());
      CHECK(back->name == "tensor_name");
      CHECK(sameTensor(back->tensor, t));
      CHECK(sameTensor(readOk(path), t));
    }
  }
  // What the writer writes: dims, data_type, name, raw_data.
  HostTensor t = makeTensor(DType::I16, {2, 1});
  REQUIRE(writeTensorProto(dir.file("w.pb"), t.view(), "w").isOk());
  Proto expect;
  expect.intField(kDims, 2).intField(kDims, 1).intField(kDataType, 5);
  expect.bytesField(kName, "w").bytesField(
      kRawData, std::string(static_cast<const char *>(t.data()), 4));
  CHECK(readBytes(dir.file("w.pb")) == expect.bytes);
}

TEST_CASE("TensorIO: TensorProto typed data fields", "[tensorio][onnx]") {
  if (!hasTensorProtoSupport()) {
    WARN("built without ONNX TensorProto support");
    return;
  }
  TempDir dir;
  std::string path = dir.file("typed.pb");
  auto read = [&](const Proto &p) {
    writeBytes(path, p.bytes);
    Result<NamedTensor> r = readTensorProto(path);
    INFO(r.message());
    REQUIRE(r.isOk());
    return r.take();
  };
  {
    NamedTensor t = read(Proto().dims({2, 2}).intField(kDataType, 1)
                             .packedFloats(kFloatData, {1.5f, -2, 0, 8})
                             .bytesField(kName, "f"));
    CHECK(t.name == "f");
    CHECK(t.tensor.dtype() == DType::F32);
    CHECK(t.tensor.shape() == Shape{2, 2});
    CHECK(std::vector<float>(t.tensor.as<float>(), t.tensor.as<float>() + 4) ==
          std::vector<float>{1.5f, -2, 0, 8});
  }
  {
    NamedTensor t = read(Proto().dims({3}).intField(kDataType, 11)
                             .packedDoubles(kDoubleData, {1e300, -0.25, 3}));
    CHECK(t.name.empty());
    CHECK(t.tensor.as<double>()[0] == 1e300);
    CHECK(t.tensor.as<double>()[1] == -0.25);
  }
  {
    NamedTensor t = read(Proto().dims({2}).intField(kDataType, 7)
                             .packedInts(kInt64Data, {INT64_MIN, 42}));
    CHECK(t.tensor.as<int64_t>()[0] == INT64_MIN);
    CHECK(t.tensor.as<int64_t>()[1] == 42);
  }
  {
    NamedTensor t = read(Proto().dims({2}).intField(kDataType, 13)
                             .packedInts(kUint64Data, {-1, 7}));
    CHECK(t.tensor.dtype() == DType::U64);
    CHECK(t.tensor.as<uint64_t>()[0] == UINT64_MAX);
    NamedTensor u = read(Proto().dims({2}).intField(kDataType, 12)
                             .packedInts(kUint64Data, {4294967295ll, 7}));
    CHECK(u.tensor.dtype() == DType::U32);
    CHECK(u.tensor.as<uint32_t>()[0] == 4294967295u);
  }
  {
    NamedTensor t = read(Proto().dims({2}).intField(kDataType, 6)
                             .packedInts(kInt32Data, {INT32_MIN, INT32_MAX}));
    CHECK(t.tensor.as<int32_t>()[0] == INT32_MIN);
    CHECK(t.tensor.as<int32_t>()[1] == INT32_MAX);
  }
  // int32_data also holds the narrower types.
  struct Narrow {
    int32_t code;
    DType dtype;
    std::vector<int64_t> values;
    std::vector<uint8_t> bytes; // expected little-endian storage
  } narrow[] = {
      {3, DType::I8, {-128, 127}, {0x80, 0x7f}},
      {2, DType::U8, {0, 255}, {0x00, 0xff}},
      {5, DType::I16, {-32768, 32767}, {0x00, 0x80, 0xff, 0x7f}},
      {4, DType::U16, {65535, 1}, {0xff, 0xff, 0x01, 0x00}},
      {9, DType::Bool, {1, 0}, {1, 0}},
      {10, DType::F16, {0x3c00, 0xfc00}, {0x00, 0x3c, 0x00, 0xfc}},
      {10, DType::F16, {-1024 /* 0xfc00 sign-extended */, 0}, {0x00, 0xfc, 0, 0}},
      {16, DType::BF16, {0x3f80, 0x7fc0}, {0x80, 0x3f, 0xc0, 0x7f}},
  };
  for (const Narrow &c : narrow) {
    INFO("data_type " << c.code);
    NamedTensor t = read(Proto().dims({2}).intField(kDataType, c.code)
                             .packedInts(kInt32Data, c.values));
    CHECK(t.tensor.dtype() == c.dtype);
    REQUIRE(t.tensor.byteCount() == c.bytes.size());
    CHECK(std::memcmp(t.tensor.data(), c.bytes.data(), c.bytes.size()) == 0);
  }
  CHECK(toFloat(Half::fromBits(read(Proto().dims({1}).intField(kDataType, 10)
                                        .packedInts(kInt32Data, {0x3c00}))
                                   .tensor.as<uint16_t>()[0])) == 1.0f);
  // An empty tensor has no data at all; a scalar has no dims.
  CHECK(read(Proto().dims({0, 3}).intField(kDataType, 1)).tensor.numElements() == 0);
  NamedTensor scalar = read(Proto().intField(kDataType, 7).packedInts(kInt64Data, {-5}));
  CHECK(scalar.tensor.shape().empty());
  CHECK(scalar.tensor.as<int64_t>()[0] == -5);
  // Bool raw bytes other than 0 and 1 read as 1.
  NamedTensor b = read(Proto().dims({2}).intField(kDataType, 9)
                           .bytesField(kRawData, std::string("\x00\x05", 2)));
  CHECK(b.tensor.as<uint8_t>()[1] == 1);
}

TEST_CASE("TensorIO: malformed TensorProto files give errors naming the file",
          "[tensorio][onnx]") {
  TempDir dir;
  if (!hasTensorProtoSupport()) {
    std::string path = dir.file("x.pb");
    writeBytes(path, "garbage");
    expectError(readTensorProto(path), path, {"without ONNX"});
    expectError(readTensorFile(path), path, {"without ONNX"});
    return;
  }
  const std::string f12(12, '\0');
  struct Case {
    const char *name;
    std::string bytes;
    std::initializer_list<const char *> phrases;
  };
  const Case cases[] = {
      {"garbage", std::string("\xff\xff\xff\xff\xff", 5), {"protobuf parsing failed"}},
      {"truncated", Proto().dims({3}).intField(kDataType, 1)
                        .bytesField(kRawData, f12).bytes.substr(0, 8),
       {"protobuf parsing failed"}},
      {"empty", "", {"unsupported TensorProto data_type 0 (UNDEFINED)"}},
      {"string", Proto().dims({1}).intField(kDataType, 8)
                     .bytesField(kStringData, "abc").bytes,
       {"unsupported TensorProto data_type 8 (STRING)"}},
      {"complex", Proto().dims({1}).intField(kDataType, 14)
                      .bytesField(kRawData, std::string(8, '\0')).bytes,
       {"data_type 14 (COMPLEX64)"}},
      {"unknowntype", Proto().dims({1}).intField(kDataType, 999).bytes,
       {"data_type 999"}},
      {"negative", Proto().dims({2, -3}).intField(kDataType, 1).bytes,
       {"negative dimension", "[2, -3]"}},
      {"overflow", Proto().dims({4294967296, 4294967296, 16}).intField(kDataType, 1).bytes,
       {"too large"}},
      {"absurd", Proto().dims({1000000, 1000000}).intField(kDataType, 1)
                     .bytesField(kRawData, f12).bytes,
       {"raw_data has 12 bytes", "need 4000000000000"}},
      {"rawshort", Proto().dims({4}).intField(kDataType, 1)
                       .bytesField(kRawData, f12).bytes,
       {"raw_data has 12 bytes", "need 16"}},
      {"rawlong", Proto().dims({2}).intField(kDataType, 1)
                      .bytesField(kRawData, f12).bytes,
       {"raw_data has 12 bytes", "need 8"}},
      {"nodata", Proto().dims({3}).intField(kDataType, 1).bytes,
       {"float_data has 0 values", "need 3", "no raw_data"}},
      {"countshort", Proto().dims({4}).intField(kDataType, 1)
                         .packedFloats(kFloatData, {1, 2, 3}).bytes,
       {"float_data has 3 values", "need 4"}},
      {"countlong", Proto().dims({2}).intField(kDataType, 7)
                        .packedInts(kInt64Data, {1, 2, 3}).bytes,
       {"int64_data has 3 values", "need 2"}},
      {"wrongfield", Proto().dims({2}).intField(kDataType, 1)
                         .packedInts(kInt64Data, {1, 2}).bytes,
       {"int64_data has 2 values", "data_type 1 (FLOAT)", "float_data"}},
      {"both", Proto().dims({3}).intField(kDataType, 1)
                   .packedFloats(kFloatData, {1, 2, 3})
                   .bytesField(kRawData, f12).bytes,
       {"both raw_data and float_data"}},
      {"range8", Proto().dims({2}).intField(kDataType, 3)
                     .packedInts(kInt32Data, {1, 200}).bytes,
       {"int32_data[1] = 200 is out of range for i8"}},
      {"rangeu16", Proto().dims({1}).intField(kDataType, 4)
                       .packedInts(kInt32Data, {-1}).bytes,
       {"int32_data[0] = -1 is out of range for ui16"}},
      {"rangeu32", Proto().dims({1}).intField(kDataType, 12)
                       .packedInts(kUint64Data, {4294967296ll}).bytes,
       {"uint64_data[0] = 4294967296 is out of range for ui32"}},
      {"external", Proto().dims({3}).intField(kDataType, 1)
                       .intField(kDataLocation, 1).bytes,
       {"external data"}},
      {"segment", Proto().dims({3}).intField(kDataType, 1)
                      .bytesField(kSegment, Proto().intField(1, 0).intField(2, 3).bytes)
                      .bytesField(kRawData, f12).bytes,
       {"segment"}},
  };
  for (const Case &c : cases) {
    INFO("case " << c.name);
    std::string path = dir.file(std::string(c.name) + ".pb");
    writeBytes(path, c.bytes);
    expectError(readTensorProto(path), path, c.phrases);
    expectError(readTensorFile(path), path, c.phrases);
  }
  std::string missing = dir.file("missing.pb");
  expectError(readTensorProto(missing), missing, {"cannot open"});
  // Content that is neither: read as a TensorProto, which fails.
  std::string other = dir.file("other.bin");
  writeBytes(other, std::string("\xff\xfe\xfd", 3));
  expectError(readTensorFile(other), other, {"protobuf parsing failed"});
}

TEST_CASE("TensorIO: readTensorFile chooses the format by extension and content",
          "[tensorio]") {
  TempDir dir;
  HostTensor t = makeTensor(DType::I32, {2, 2});
  REQUIRE(writeNpy(dir.file("a.npy"), t.view()).isOk());
  fs::copy_file(dir.file("a.npy"), dir.file("a.bin"));
  fs::copy_file(dir.file("a.npy"), dir.file("a.NPY"));
  CHECK(sameTensor(readOk(dir.file("a.bin")), t));
  CHECK(sameTensor(readOk(dir.file("a.NPY")), t));
  if (hasTensorProtoSupport()) {
    REQUIRE(writeTensorProto(dir.file("b.pb"), t.view(), "b").isOk());
    fs::copy_file(dir.file("b.pb"), dir.file("b.data"));
    CHECK(sameTensor(readOk(dir.file("b.data")), t));
    // The extension decides: an .npy file named .pb is read as a TensorProto.
    fs::copy_file(dir.file("a.npy"), dir.file("c.pb"));
    CHECK_FALSE(readTensorFile(dir.file("c.pb")).isOk());
  }
}

//===----------------------------------------------------------------------===//
// ONNX's backend test data
//===----------------------------------------------------------------------===//

namespace {

bool haveTestData() {
  if (fs::exists(nodeTest("test_abs")))
    return true;
  WARN("ONNX backend test data not found in " MP_ONNX_TESTDATA
       " (Debian: libonnx-testdata)");
  return false;
}

NamedTensor readPb(const fs::path &path) {
  Result<NamedTensor> r = readTensorProto(path.string());
  INFO(path.string() << ": " << r.message());
  REQUIRE(r.isOk());
  return r.take();
}

/// Checks out == op(a, b) element-wise over a node test with two inputs
/// and one output of the same shape and dtype `dtype`.
template <typename T>
void checkBinary(const std::string &test, DType dtype,
                 const std::function<T(T, T)> &op) {
  INFO(test);
  fs::path d = nodeTest(test);
  NamedTensor a = readPb(d / "input_0.pb"), b = readPb(d / "input_1.pb"),
              out = readPb(d / "output_0.pb");
  REQUIRE(a.tensor.dtype() == dtype);
  REQUIRE(b.tensor.dtype() == dtype);
  REQUIRE(out.tensor.dtype() == dtype);
  REQUIRE(a.tensor.shape() == out.tensor.shape());
  REQUIRE(b.tensor.shape() == out.tensor.shape());
  REQUIRE(out.tensor.numElements() > 0);
  size_t bad = 0;
  for (int64_t i = 0; i < out.tensor.numElements(); ++i)
    if (!(out.tensor.as<T>()[i] == op(a.tensor.as<T>()[i], b.tensor.as<T>()[i])))
      ++bad;
  CHECK(bad == 0);
}

/// Checks agree(x, y) for every element x of a cast node test's input (of
/// dtype `from`, read as In) and y of its output (dtype `to`, read as Out).
template <typename In, typename Out, typename Agree>
void checkCast(const std::string &test, DType from, DType to, Agree agree) {
  INFO(test);
  fs::path d = nodeTest(test);
  NamedTensor in = readPb(d / "input_0.pb"), out = readPb(d / "output_0.pb");
  REQUIRE(in.tensor.dtype() == from);
  REQUIRE(out.tensor.dtype() == to);
  REQUIRE(in.tensor.numElements() == out.tensor.numElements());
  size_t bad = 0;
  for (int64_t i = 0; i < in.tensor.numElements(); ++i)
    bad += !agree(in.tensor.as<In>()[i], out.tensor.as<Out>()[i]);
  CHECK(bad == 0);
}

template <typename T> void checkMinMax(const std::string &suffix, DType dtype) {
  checkBinary<T>("test_min_" + suffix, dtype,
                 [](T x, T y) { return std::min(x, y); });
  checkBinary<T>("test_max_" + suffix, dtype,
                 [](T x, T y) { return std::max(x, y); });
}

} // namespace

TEST_CASE("TensorIO: ONNX test data test_abs: output == abs(input)",
          "[tensorio][onnx]") {
  if (!hasTensorProtoSupport() || !haveTestData())
    return;
  fs::path d = nodeTest("test_abs");
  NamedTensor in = readPb(d / "input_0.pb");
  NamedTensor out = readPb(d / "output_0.pb");
  CHECK(in.name == "x");
  CHECK(out.name == "y");
  REQUIRE(in.tensor.dtype() == DType::F32);
  REQUIRE(in.tensor.shape() == Shape{3, 4, 5});
  REQUIRE(out.tensor.shape() == Shape{3, 4, 5});
  const float *x = in.tensor.as<float>(), *y = out.tensor.as<float>();
  size_t bad = 0, negatives = 0;
  for (int i = 0; i < 60; ++i) {
    bad += y[i] != std::fabs(x[i]);
    negatives += x[i] < 0;
  }
  CHECK(bad == 0);
  CHECK(negatives > 0); // the check means something
  // The first value, as the file's bytes say: 0x3fe1cc78.
  CHECK(x[0] == 0x1.c398fp+0f);
  // readTensorFile gives the same tensor.
  CHECK(sameTensor(readOk((d / "input_0.pb").string()), in.tensor));
}

TEST_CASE("TensorIO: ONNX test data of every integer and float type",
          "[tensorio][onnx]") {
  if (!hasTensorProtoSupport() || !haveTestData())
    return;
  checkMinMax<float>("float32", DType::F32);
  checkMinMax<double>("float64", DType::F64);
  checkMinMax<int8_t>("int8", DType::I8);
  checkMinMax<int16_t>("int16", DType::I16);
  checkMinMax<int32_t>("int32", DType::I32);
  checkMinMax<int64_t>("int64", DType::I64);
  checkMinMax<uint8_t>("uint8", DType::U8);
  checkMinMax<uint16_t>("uint16", DType::U16);
  checkMinMax<uint32_t>("uint32", DType::U32);
  checkMinMax<uint64_t>("uint64", DType::U64);
  auto halfMin = [](uint16_t x, uint16_t y) {
    return toFloat(Half::fromBits(x)) <= toFloat(Half::fromBits(y)) ? x : y;
  };
  auto halfMax = [](uint16_t x, uint16_t y) {
    return toFloat(Half::fromBits(x)) >= toFloat(Half::fromBits(y)) ? x : y;
  };
  checkBinary<uint16_t>("test_min_float16", DType::F16, halfMin);
  checkBinary<uint16_t>("test_max_float16", DType::F16, halfMax);
  checkBinary<uint8_t>("test_and2d", DType::Bool,
                       [](uint8_t x, uint8_t y) -> uint8_t { return x && y; });
  checkBinary<uint8_t>("test_and4d", DType::Bool,
                       [](uint8_t x, uint8_t y) -> uint8_t { return x && y; });
}

TEST_CASE("TensorIO: ONNX test data casts agree with Half.h",
          "[tensorio][onnx][half]") {
  if (!hasTensorProtoSupport() || !haveTestData())
    return;
  // To fp16: the bits toHalf gives (any NaN for a NaN).
  auto roundsToHalf = [](auto x, uint16_t y) {
    return std::isnan(x) ? std::isnan(toFloat(Half::fromBits(y)))
                         : toHalf(x).bits == y;
  };
  checkCast<float, uint16_t>("test_cast_FLOAT_to_FLOAT16", DType::F32,
                             DType::F16, roundsToHalf);
  checkCast<double, uint16_t>("test_cast_DOUBLE_to_FLOAT16", DType::F64,
                              DType::F16, roundsToHalf);
  // From 16 bits: the float the bits stand for.
  auto sameFloat = [](float got, float want) {
    return std::isnan(want) ? std::isnan(got) : got == want;
  };
  checkCast<uint16_t, float>("test_cast_FLOAT16_to_FLOAT", DType::F16,
                             DType::F32, [&](uint16_t x, float y) {
                               return sameFloat(toFloat(Half::fromBits(x)), y);
                             });
  // ONNX 1.20's data stores bf16 as BFLOAT16 (1.12's as UINT16 bits).
  checkCast<uint16_t, float>("test_cast_BFLOAT16_to_FLOAT", DType::BF16,
                             DType::F32, [&](uint16_t x, float y) {
                               return sameFloat(toFloat(BFloat16::fromBits(x)),
                                                y);
                             });
}

TEST_CASE("TensorIO: non-tensor protos in the ONNX test data are errors",
          "[tensorio][onnx]") {
  if (!hasTensorProtoSupport() || !haveTestData())
    return;
  // An onnx.OptionalProto holding a sequence: not a tensor; must not crash.
  fs::path p = nodeTest("test_identity_opt") / "input_0.pb";
  if (!fs::exists(p))
    return;
  Result<NamedTensor> r = readTensorProto(p.string());
  CHECK_FALSE(r.isOk());
  CHECK(r.message().rfind(p.string() + ": ", 0) == 0);
}
