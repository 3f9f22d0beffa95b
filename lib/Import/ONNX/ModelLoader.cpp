//===- ModelLoader.cpp - reading ONNX models ------------------------------===//
//
// Reads a model into an onnx::ModelProto: the protobuf from a file or a
// buffer, models of 64 MB or more with their large weights left in the
// mapped file (a small protobuf wire-format reader strips them), and the
// ONNX textual syntax, with limits on nesting so that hostile input cannot
// overflow the parsers' stacks.
//
//===----------------------------------------------------------------------===//
#include "ImporterInternal.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/defs/parser.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;
using namespace mp;

namespace mp::onnx_import {

//===----------------------------------------------------------------------===//
// Large models: weights referenced in the mapped file, not parsed
//===----------------------------------------------------------------------===//

namespace {

namespace wire {
bool readVarint(const char *&p, const char *end, uint64_t &v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t byte = static_cast<uint8_t>(*p++);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

void appendVarint(std::string &out, uint64_t v) {
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v);
}

/// One field: its number, wire type, its bytes (tag included) and, for
/// length-delimited fields, the payload.
struct Field {
  uint64_t number = 0, type = 0, varint = 0;
  ArrayRef<char> whole, payload;
};

bool next(const char *&p, const char *end, Field &f) {
  const char *start = p;
  uint64_t tag;
  if (!readVarint(p, end, tag))
    return false;
  f.number = tag >> 3;
  f.type = tag & 7;
  switch (f.type) {
  case 0:
    if (!readVarint(p, end, f.varint))
      return false;
    break;
  case 1:
    if (end - p < 8)
      return false;
    p += 8;
    break;
  case 5:
    if (end - p < 4)
      return false;
    p += 4;
    break;
  case 2: {
    uint64_t len;
    if (!readVarint(p, end, len) || len > static_cast<uint64_t>(end - p))
      return false;
    f.payload = ArrayRef<char>(p, len);
    p += len;
    break;
  }
  default: // groups: not in ONNX
    return false;
  }
  f.whole = ArrayRef<char>(start, p - start);
  return true;
}

void appendField(std::string &out, uint64_t number, StringRef payload) {
  appendVarint(out, (number << 3) | 2);
  appendVarint(out, payload.size());
  out.append(payload.data(), payload.size());
}

/// A TensorProto without its raw_data when that is large and of a numeric
/// type, marked as external data so that validation and shape inference
/// leave it alone; `span` gets the data.
bool stripTensor(ArrayRef<char> in, size_t threshold, StringRef fileName,
                 std::string &out, ArrayRef<char> &span) {
  const char *p = in.data(), *end = p + in.size();
  uint64_t dataType = 0;
  ArrayRef<char> raw;
  std::string kept;
  Field f;
  while (p < end) {
    if (!next(p, end, f))
      return false;
    if (f.number == 2 && f.type == 0)
      dataType = f.varint;
    if (f.number == 9 && f.type == 2) {
      raw = f.payload;
      continue;
    }
    if (f.number == 13 || f.number == 14) // already external: keep as is
      return false;
    kept.append(f.whole.data(), f.whole.size());
  }
  bool numeric =
      dataType != 0 && dataType != 8 /*STRING*/ && dataType != 9 /*BOOL*/;
  if (!numeric || raw.size() < threshold) {
    out.assign(in.data(), in.size());
    return true;
  }
  span = raw;
  out = std::move(kept);
  // external_data {key: "location", value: <the model file>}; data_location
  // EXTERNAL. The importer reads the span instead.
  std::string entry;
  appendField(entry, 1, "location");
  appendField(entry, 2, fileName);
  appendField(out, 13, entry);
  appendVarint(out, (14 << 3) | 0);
  appendVarint(out, 1);
  return true;
}

/// The model without the large raw data of its main graph's initializers.
bool stripModel(ArrayRef<char> file, size_t threshold, StringRef fileName,
                std::string &out, std::vector<ArrayRef<char>> &spans) {
  const char *p = file.data(), *end = p + file.size();
  Field f;
  bool sawGraph = false;
  while (p < end) {
    if (!next(p, end, f))
      return false;
    if (f.number != 7 || f.type != 2 || sawGraph) {
      out.append(f.whole.data(), f.whole.size());
      continue;
    }
    sawGraph = true;
    std::string graph;
    const char *g = f.payload.data(), *gend = g + f.payload.size();
    Field gf;
    while (g < gend) {
      if (!next(g, gend, gf))
        return false;
      if (gf.number != 5 || gf.type != 2) {
        graph.append(gf.whole.data(), gf.whole.size());
        continue;
      }
      std::string tensor;
      ArrayRef<char> span;
      if (!stripTensor(gf.payload, threshold, fileName, tensor, span))
        return false;
      spans.push_back(span);
      appendField(graph, 5, tensor);
    }
    appendField(out, 7, graph);
  }
  return sawGraph;
}
} // namespace wire
} // namespace

/// Parses a model file of at least 64 MB by mapping it and leaving the
/// large weights in the mapping; false (with `model` untouched) when the
/// file does not lend itself to that, and the caller parses it normally.
bool loadMapped(llvm::StringRef path, size_t threshold, onnx::ModelProto &model,
                MappedWeights &weights) {
  uint64_t size;
  if (llvm::sys::fs::file_size(path, size) || size < (64u << 20))
    return false;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return false;
  std::shared_ptr<llvm::MemoryBuffer> file(std::move(*buffer));
  std::string stripped;
  std::vector<ArrayRef<char>> spans;
  ArrayRef<char> bytes(file->getBufferStart(), file->getBufferSize());
  if (!wire::stripModel(bytes, threshold, llvm::sys::path::filename(path),
                        stripped, spans))
    return false;
  google::protobuf::io::CodedInputStream coded(
      reinterpret_cast<const uint8_t *>(stripped.data()), stripped.size());
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  coded.SetRecursionLimit(kMaxMessageDepth);
  onnx::ModelProto parsed;
  if (!parsed.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage() ||
      parsed.graph().initializer_size() != static_cast<int>(spans.size()))
    return false;
  model.Swap(&parsed);
  weights.file = std::move(file);
  weights.spans = std::move(spans);
  return true;
}

bool loadBinary(llvm::StringRef path, llvm::StringRef contents, bool fromFile,
                onnx::ModelProto &model, MLIRContext *ctx) {
  Location loc = UnknownLoc::get(ctx);
  bool parsed = false;
  if (fromFile) {
    int fd = ::open(path.str().c_str(), O_RDONLY);
    if (fd < 0) {
      emitError(loc) << "cannot open '" << path << "': " << strerror(errno);
      return false;
    }
    llvm::scope_exit closeFd([&] { ::close(fd); });
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      emitError(loc) << "cannot read '" << path << "': it is a directory";
      return false;
    }
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
      emitError(loc) << "not an ONNX model: the file is empty";
      return false;
    }
    // Streaming parse: the file is never held in memory next to the model.
    google::protobuf::io::FileInputStream input(fd);
    {
      google::protobuf::io::CodedInputStream coded(&input);
      coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
      coded.SetRecursionLimit(kMaxMessageDepth);
      parsed =
          model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
    }
    // A read error looks like the end of the input to protobuf.
    if (input.GetErrno() != 0) {
      emitError(loc) << "cannot read '" << path
                     << "': " << strerror(input.GetErrno());
      return false;
    }
  } else {
    if (contents.empty()) {
      emitError(loc) << "not an ONNX model: the input is empty";
      return false;
    }
    google::protobuf::io::CodedInputStream coded(
        reinterpret_cast<const uint8_t *>(contents.data()), contents.size());
    coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
    coded.SetRecursionLimit(kMaxMessageDepth);
    parsed =
        model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  if (!parsed) {
    emitError(loc) << "not a valid ONNX model: the protobuf data is truncated "
                      "or corrupt";
    return false;
  }
  return true;
}

namespace {

/// The deepest nesting of brackets in ONNX text, outside comments and
/// string literals (`=>` is not a bracket).
int textNesting(llvm::StringRef text) {
  int depth = 0, maxDepth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      maxDepth = std::max(maxDepth, ++depth);
    } else if (c == '}' || c == ']' || c == ')' ||
               (c == '>' && (i == 0 || text[i - 1] != '='))) {
      --depth;
    }
  }
  return maxDepth;
}

} // namespace

bool loadText(llvm::StringRef contents, onnx::ModelProto &model,
              MLIRContext *ctx) {
  if (contents.trim().empty()) {
    emitError(UnknownLoc::get(ctx)) << "not an ONNX model: the file is empty";
    return false;
  }
  if (textNesting(contents) > kMaxTextNesting) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: brackets are nested more than "
        << kMaxTextNesting << " levels deep";
    return false;
  }
  std::string text = contents.str();
  onnx::OnnxParser parser(text.c_str());
  onnx::Common::Status status = parser.Parse(model);
  if (!status.IsOK()) {
    // The message quotes the input, which may be binary.
    std::string message = status.ErrorMessage();
    for (char &c : message)
      if (!llvm::isPrint(c) && c != '\n')
        c = '?';
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: " << llvm::StringRef(message).trim();
    return false;
  }
  if (text.size() != strlen(text.c_str())) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: the input contains a NUL byte";
    return false;
  }
  if (!parser.EndOfInput()) {
    emitError(UnknownLoc::get(ctx))
        << "cannot parse ONNX text: unexpected text after the main graph";
    return false;
  }
  return true;
}

} // namespace mp::onnx_import
