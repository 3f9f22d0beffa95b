//===- mp-convert-opset.cpp - ONNX's version converter, for the tests -----===//
//
//   mp-convert-opset in.onnx OPSET out.onnx
//
// Converts a model to another ai.onnx opset with ONNX's own version converter
// (the C++ library this build links, scripts/build-onnx.sh), so that the lit
// tests can compare a model's outputs at opset 13 with the same model at
// opsets 18, 21 and the newest (test/Import/ONNX/version-converter.test).
// Built with the tests only.
//
// Exit status 0, or 2 with one line "mp-convert-opset: <file>: error: ...".
//
//===----------------------------------------------------------------------===//
#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

namespace {

[[noreturn]] void fail(const std::string &file, const std::string &message) {
  std::fprintf(stderr, "mp-convert-opset: %s: error: %s\n", file.c_str(),
               message.c_str());
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: mp-convert-opset in.onnx OPSET out.onnx\n");
    return 2;
  }
  std::string in = argv[1], out = argv[3];
  char *end = nullptr;
  long opset = std::strtol(argv[2], &end, 10);
  if (!end || *end || opset < 1)
    fail(in, std::string("bad opset '") + argv[2] + "'");

  std::ifstream file(in, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  if (!file || !model.ParseFromString(bytes.str()))
    fail(in, "cannot read an ONNX model");

  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(
        model, static_cast<int>(opset));
  } catch (const std::exception &e) {
    fail(in, std::string("the version converter failed: ") + e.what());
  }
  std::ofstream result(out, std::ios::binary);
  if (!result || !converted.SerializeToOstream(&result))
    fail(out, "cannot write the converted model");
  return 0;
}
