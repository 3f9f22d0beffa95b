//===- FuzzTensorFile.cpp - libFuzzer target for the tensor file readers --===//
//
// mp-run binds inputs and expected outputs from NumPy .npy and ONNX
// TensorProto .pb files, which are as untrusted as models and plans. Each
// input is written to an in-memory file and read back with readTensorFile,
// which picks the format from the content (the NumPy magic string, else a
// TensorProto). Any crash, sanitizer report, leak or out-of-memory is a
// finding. scripts/fuzz.sh builds and runs it (docs/robustness.md).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/TensorIO.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace {
/// One in-memory file for the whole run, rewritten for each input.
int memoryFile() {
  static const int fd = [] {
    int f = ::memfd_create("mp-fuzz-tensor", 0);
    if (f < 0)
      std::abort();
    return f;
  }();
  return fd;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memoryFile();
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  // No extension: the reader decides by the content, so both readers run.
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  (void)mp::rt::readTensorFile(path);
  return 0;
}
