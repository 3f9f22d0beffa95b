// Unit tests of what the plan loader and savePlan refuse
// (mp/Runtime/Plan.h): files that are not plans, truncated and corrupt
// files, every semantic validation rule and the weight data layout.
#include "mp/Runtime/Plan.h"

#include "PlanTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::plans;
namespace fs = std::filesystem;

TEST_CASE("files that are not plans are rejected", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("p.mpplan");
  REQUIRE(savePlan(makePlan(), path).isOk());
  std::vector<uint8_t> good = readFile(path);

  auto loadBytes = [&](const std::vector<uint8_t> &bytes) {
    const std::string other = dir.file("other.mpplan");
    writeFile(other, bytes);
    Result<Plan> r = loadPlan(other);
    REQUIRE(!r.isOk());
    CHECK(r.message().rfind(other + ": ", 0) == 0);
    return r.message();
  };

  std::vector<uint8_t> wrongId = good;
  std::memcpy(wrongId.data() + 8, "ONNX", 4);
  CHECK(loadBytes(wrongId).find("not a MixPrec plan file: bytes 8 to 11 are "
                                "'ONNX'") != std::string::npos);

  std::string text = "this is a text file, not a plan\n";
  CHECK(loadBytes(std::vector<uint8_t>(text.begin(), text.end()))
            .find("not a MixPrec plan file") != std::string::npos);
  CHECK(loadBytes({}).find("the file is empty") != std::string::npos);
  CHECK(loadBytes({1, 2, 3}).find("too small (3 bytes)") != std::string::npos);

  std::vector<uint8_t> trailing = good;
  trailing.push_back(0);
  CHECK(loadBytes(trailing).find("1 bytes of trailing garbage") !=
        std::string::npos);

  Result<Plan> missing = loadPlan(dir.file("missing.mpplan"));
  REQUIRE(!missing.isOk());
  CHECK(missing.message().find("missing.mpplan: cannot open the plan file: No "
                               "such file") != std::string::npos);
  Result<Plan> directory = loadPlan(dir.path.string());
  REQUIRE(!directory.isOk());
  CHECK(directory.message().find("is a directory") != std::string::npos);
}

TEST_CASE("truncated files are rejected at every length", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("p.mpplan");
  REQUIRE(savePlan(makeRichPlan(), path).isOk());
  const std::vector<uint8_t> good = readFile(path);
  REQUIRE(good.size() > 1000);
  for (size_t len = 0; len < good.size(); ++len) {
    Result<Plan> r = parsePlan(good.data(), len, "cut");
    INFO("length " << len);
    REQUIRE(!r.isOk());
    REQUIRE(r.message().rfind("cut: ", 0) == 0);
    if (len >= 12)
      REQUIRE(r.message().find("truncated") != std::string::npos);
  }
  // Through files too, at some lengths.
  const std::string cut = dir.file("cut.mpplan");
  for (size_t len = 0; len < good.size(); len += 97) {
    writeFile(cut, std::vector<uint8_t>(good.begin(), good.begin() + len));
    Result<Plan> r = loadPlan(cut);
    INFO("length " << len);
    REQUIRE(!r.isOk());
    REQUIRE(r.message().rfind(cut + ": ", 0) == 0);
  }
  REQUIRE(parsePlan(good.data(), good.size()).isOk());
}

TEST_CASE("corrupt files never crash the loader", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("p.mpplan");
  REQUIRE(savePlan(makeRichPlan(), path).isOk());
  const std::vector<uint8_t> good = readFile(path);
  const size_t meta = metadataSize(good);
  REQUIRE(meta < good.size());

  size_t valid = 0, invalid = 0;
  auto check = [&](const std::vector<uint8_t> &bytes) {
    Result<Plan> r = parsePlan(bytes.data(), bytes.size(), "bad");
    if (r.isOk()) {
      ++valid;
      // A plan that loads is a valid plan.
      REQUIRE(validatePlan(*r).isOk());
    } else {
      ++invalid;
      REQUIRE(r.message().rfind("bad: ", 0) == 0);
      REQUIRE(r.message().size() > 5);
    }
  };

  SECTION("every metadata byte, inverted") {
    for (size_t i = 0; i < meta; ++i) {
      std::vector<uint8_t> bytes = good;
      bytes[i] ^= 0xff;
      INFO("byte " << i);
      check(bytes);
    }
  }
  SECTION("random bytes at random positions") {
    std::mt19937 rng(20240611);
    for (int iteration = 0; iteration < 4000; ++iteration) {
      std::vector<uint8_t> bytes = good;
      int count = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < count; ++k) {
        // Mostly in the metadata, where the structure is.
        size_t limit = rng() % 4 ? meta : bytes.size();
        bytes[rng() % limit] = static_cast<uint8_t>(rng());
      }
      INFO("iteration " << iteration);
      check(bytes);
    }
  }
  // Both outcomes happen: corrupt structure fails, corrupt weight bytes or
  // names still make valid plans.
  CHECK(valid > 0);
  CHECK(invalid > 0);
}

TEST_CASE("each semantic rule is checked on load and on save", "[plan]") {
  const std::vector<RuleCase> cases = {
      {"duplicate buffer ids", [](Plan &p) { p.buffers[3].id = 1; },
       "buffers #1 and #3 both have id 1"},
      {"buffer id out of range", [](Plan &p) { p.buffers[2].id = 9; },
       "buffer #2 has id 9, but the plan has 5 buffers (ids 0 to 4)"},
      {"arena overflow", [](Plan &p) { p.buffers[2].offset = 120; },
       "buffer 2 ('t') (f32 [1, 4], 16 bytes at arena offset 120) does not "
       "fit in the arena of 128 bytes"},
      {"arena offset wraps around",
       [](Plan &p) {
         p.buffers[2].offset = std::numeric_limits<uint64_t>::max() - 3;
       },
       "does not fit in the arena of 128 bytes"},
      {"misaligned arena offset", [](Plan &p) { p.buffers[2].offset = 66; },
       "buffer 2 ('t'): arena offset 66 is not a multiple of the element "
       "size 4 of f32"},
      {"unknown buffer dtype",
       [](Plan &p) { p.buffers[2].dtype = static_cast<DType>(99); },
       "buffer 2 ('t'): dtype code 99 is not an element type this runtime "
       "knows"},
      {"undefined dtype 0",
       [](Plan &p) { p.buffers[2].dtype = static_cast<DType>(0); },
       "buffer 2 ('t'): dtype code 0 is not an element type"},
      {"negative dimension", [](Plan &p) { p.buffers[2].shape = {1, -1}; },
       "buffer 2 ('t'): shape [1, -1] has dimension 1 = -1 (plans have "
       "static shapes"},
      {"element count overflow",
       [](Plan &p) {
         p.buffers[2].shape = {int64_t(1) << 32, int64_t(1) << 32};
       },
       "buffer 2 ('t'): shape [4294967296, 4294967296] has more elements "
       "than fit in 64 bits"},
      {"element count overflow behind a zero dim",
       [](Plan &p) {
         // Empty, but its strides would overflow (a fuzzed plan: the
         // gather_elements kernel computed them).
         p.buffers[2].shape = {0, int64_t(1) << 62, 101};
       },
       "buffer 2 ('t'): shape [0, 4611686018427387904, 101] has more "
       "elements than fit in 64 bits"},
      {"byte count overflow",
       [](Plan &p) { p.buffers[2].shape = {int64_t(1) << 62}; },
       "buffer 2 ('t'): f32 [4611686018427387904] has more bytes than fit"},
      {"weight size mismatch",
       [](Plan &p) {
         p.weights[0] =
             PlanWeight::copyOf("w", DType::F16, {4, 4}, p.weights[0].data, 30);
       },
       "weight #0 'w' has 30 bytes, but f16 [4, 4] needs 32"},
      {"weight stored as f32 but declared f16",
       [](Plan &p) {
         std::vector<float> f(16, 1.0f);
         p.weights[0] = PlanWeight::copyOf("w", DType::F16, {4, 4}, f.data(),
                                           f.size() * sizeof(float));
       },
       "weight #0 'w' has 64 bytes, but f16 [4, 4] needs 32"},
      {"unknown weight dtype",
       [](Plan &p) { p.weights[1].dtype = static_cast<DType>(8); },
       "weight #1 'b': dtype code 8 is not an element type"},
      {"negative weight dimension", [](Plan &p) { p.weights[1].shape = {-4}; },
       "weight #1 'b': shape [-4] has dimension 0 = -4"},
      {"duplicate weight names", [](Plan &p) { p.weights[1].name = "w"; },
       "weights #0 and #1 are both named 'w'"},
      {"unnamed weight", [](Plan &p) { p.weights[1].name.clear(); },
       "weight #1 has no name"},
      {"buffer of a missing weight", [](Plan &p) { p.buffers[3].weight = 5; },
       "buffer 3 ('b') refers to weight #5, but the plan has 2 weights"},
      {"buffer unlike its weight",
       [](Plan &p) { p.buffers[3].dtype = DType::F16; },
       "buffer 3 ('b') (f16 [4]) does not match its weight #1 'b' (bf16 [4])"},
      {"unknown storage kind",
       [](Plan &p) { p.buffers[2].storage = static_cast<BufferStorage>(7); },
       "has an unknown storage kind 7"},
      {"call uses a missing buffer",
       [](Plan &p) { p.calls[1].operands[0] = 17; },
       "call #1 (cudnn.conv_fwd at node 'conv1') uses buffer 17, which does "
       "not exist"},
      {"call writes a missing buffer",
       [](Plan &p) { p.calls[0].results = {5}; },
       "call #0 (cublaslt.matmul at node 'matmul0') writes buffer 5, which "
       "does not exist"},
      {"call writes a weight", [](Plan &p) { p.calls[1].results = {3}; },
       "call #1 (cudnn.conv_fwd at node 'conv1') writes buffer 3 ('b'), "
       "which holds weight 'b' (weights are read-only)"},
      {"call without kind",
       [](Plan &p) {
         p.calls[1].kind.clear();
         p.calls[1].location.clear();
       },
       "call #1 (no kind) has no kind"},
      {"duplicate attribute names",
       [](Plan &p) { p.calls[0].attributes[1].name = "transB"; },
       "call #0 (cublaslt.matmul at node 'matmul0') has two attributes named "
       "'transB'"},
      {"unnamed attribute",
       [](Plan &p) { p.calls[0].attributes[1].name.clear(); },
       "call #0 (cublaslt.matmul at node 'matmul0'): attribute #1 has no "
       "name"},
      {"input of a missing buffer", [](Plan &p) { p.inputs[0].buffer = 17; },
       "input 'x' uses buffer 17, which does not exist"},
      {"output of a missing buffer", [](Plan &p) { p.outputs[0].buffer = 5; },
       "output 'y' uses buffer 5, which does not exist"},
      {"input of another type", [](Plan &p) { p.inputs[0].dtype = DType::F16; },
       "input 'x' is declared f16 [1, 4], but its buffer 0 ('x') is f32 "
       "[1, 4]"},
      {"output of another shape", [](Plan &p) { p.outputs[0].shape = {4}; },
       "output 'y' is declared f32 [4], but its buffer 4 ('y') is f32 [1, 4]"},
      {"input of a weight buffer",
       [](Plan &p) { p.inputs[0] = binding("x", p.buffers[1]); },
       "input 'x' uses buffer 1 ('w'), which holds weight 'w' (inputs are "
       "written: they must be arena or state buffers)"},
      {"two inputs on one buffer",
       [](Plan &p) { p.inputs.push_back(binding("x2", p.buffers[0])); },
       "input 'x2' uses buffer 0 ('x'), like input 'x'"},
      {"duplicate output names",
       [](Plan &p) { p.outputs.push_back(binding("y", p.buffers[2])); },
       "outputs #0 and #1 are both named 'y'"},
      {"unnamed input", [](Plan &p) { p.inputs[0].name.clear(); },
       "input #0 has no name"},
  };
  checkRules(makePlan(), cases);
}

TEST_CASE("the weight data layout is checked", "[plan]") {
  // Weights of 4120 and 64 bytes: the second one's offset in the weight data
  // section, 4160 (4120 rounded up to 64), is a value the metadata hold once.
  TempDir dir;
  Plan p;
  p.weights.push_back(weight("a", DType::F32, {1030}, 1));
  p.weights.push_back(weight("b", DType::U8, {64}, 2));
  p.buffers.push_back(weightBuffer(0, p, 0));
  p.buffers.push_back(weightBuffer(1, p, 1));
  const std::string path = dir.file("w.mpplan");
  REQUIRE(savePlan(p, path).isOk());
  const std::vector<uint8_t> good = readFile(path);
  const size_t meta = metadataSize(good);
  const size_t at = findOnlyU64(good, meta, 4160);

  auto patched = [&](uint64_t value) {
    std::vector<uint8_t> bytes = good;
    std::memcpy(bytes.data() + at, &value, 8);
    Result<Plan> r = parsePlan(bytes.data(), bytes.size(), "w");
    REQUIRE(!r.isOk());
    return r.message();
  };
  CHECK(patched(4161).find("w: weight #1 'b' starts at byte 4161 of the "
                           "weight data section, not a multiple of 64") !=
        std::string::npos);
  CHECK(patched(4224).find("w: weight #1 'b' (64 bytes at byte 4224) does "
                           "not fit in the weight data section of 4224 "
                           "bytes") != std::string::npos);
  CHECK(patched(~uint64_t(63))
            .find("does not fit in the weight data "
                  "section") != std::string::npos);
  // Sharing bytes with another weight is allowed.
  std::vector<uint8_t> shared = good;
  uint64_t zero = 0;
  std::memcpy(shared.data() + at, &zero, 8);
  // (a zero offset is the field's default: FlatBuffers reads it the same)
  Result<Plan> r = parsePlan(shared.data(), shared.size());
  REQUIRE(r.isOk());
  CHECK(r->weights[1].data == r->weights[0].data);

  // The section's own offset: the metadata size rounded up to 64.
  const uint64_t dataOffset = (meta + 63) / 64 * 64;
  REQUIRE(good.size() == dataOffset + 4160 + 64);
  const size_t sectionAt = findOnlyU64(good, meta, dataOffset);
  auto patchedSection = [&](uint64_t value) {
    std::vector<uint8_t> bytes = good;
    std::memcpy(bytes.data() + sectionAt, &value, 8);
    Result<Plan> r = parsePlan(bytes.data(), bytes.size(), "w");
    REQUIRE(!r.isOk());
    return r.message();
  };
  CHECK(patchedSection(dataOffset + 8).find("not a multiple of 64") !=
        std::string::npos);
  CHECK(patchedSection(dataOffset - 64).find("inside the metadata") !=
        std::string::npos);
  CHECK(patchedSection(dataOffset + 64).find("truncated") != std::string::npos);
}

TEST_CASE("calls at load and the buffers they make: rules and round trip",
          "[plan]") {
  const Plan base = makeAtLoadPlan();
  CHECK(base.requiredFormatMinor() == 7);
  TempDir dir;
  const std::string path = dir.file("at-load.mpplan");
  REQUIRE(savePlan(base, path).isOk());
  Result<Plan> loaded = loadPlan(path);
  INFO(loaded.message());
  REQUIRE(loaded);
  CHECK(loaded->formatMinor == 7); // written as the contents need
  Plan expected = base;
  expected.formatMinor = 7;
  requireSamePlan(expected, *loaded);
  CHECK(loaded->buffers[5].storage == BufferStorage::Derived);

  const std::vector<RuleCase> cases = {
      {"a call at load reads an arena buffer",
       [](Plan &p) { p.calls[0].operands = {0}; },
       "call #0 (kernel.transpose at node 'w_t') runs at load but reads "
       "buffer 0 ('x'), which is neither a weight nor made at load"},
      {"a call at load writes an arena buffer",
       [](Plan &p) { p.calls[0].results = {2}; },
       "call #0 (kernel.transpose at node 'w_t') runs at load and writes "
       "buffer 2 ('t'), which is not made at load"},
      {"a call of every run writes a buffer made at load",
       [](Plan &p) { p.calls[0].atLoad = false; },
       "call #0 (kernel.transpose at node 'w_t') writes buffer 5 ('wT'), "
       "which is made at load (only calls at load write it)"},
      {"a buffer made at load written twice",
       [](Plan &p) { p.calls.insert(p.calls.begin(), p.calls[0]); },
       "call #1 (kernel.transpose at node 'w_t') writes buffer 5 ('wT'), "
       "which an earlier call at load wrote"},
      {"a buffer made at load that nothing makes",
       [](Plan &p) { p.calls.erase(p.calls.begin()); },
       "call #0 (cublaslt.matmul at node 'matmul0') reads buffer 5 ('wT'), "
       "which is made at load, but no call at load writes it"},
      {"a call at load reading a buffer made later",
       [](Plan &p) {
         PlanCall copy = p.calls[0];
         copy.kind = "kernel.copy";
         copy.operands = {5};
         copy.results = {5};
         p.calls.insert(p.calls.begin(), copy);
       },
       "call #0 (kernel.copy at node 'w_t') runs at load but reads buffer 5 "
       "('wT'), which no earlier call at load writes"},
      {"an input bound to a buffer made at load",
       [](Plan &p) {
         p.inputs[0].buffer = 5;
         p.inputs[0].dtype = DType::F16;
         p.inputs[0].shape = {4, 4};
       },
       "input 'x' uses buffer 5 ('wT'), which is made at load"},
  };
  checkRules(base, cases);
}

TEST_CASE("plans with ReLU gradients are format 1.7", "[plan]") {
  Plan plan;
  PlanCall add;
  add.kind = "kernel.elementwise";
  add.attributes = {{"fn", std::string("add")}};
  plan.calls.push_back(add);
  CHECK(plan.requiredFormatMinor() == 0);
  PlanCall grad = add;
  grad.attributes = {{"fn", std::string("relu_grad")}};
  plan.calls.push_back(grad);
  CHECK(plan.requiredFormatMinor() == 7);
  plan.calls.back().kind = "kernel.fused_elementwise";
  plan.calls.back().attributes = {
      {"program", std::string("add(x0, x1); relu_grad(t0, x2)")}};
  CHECK(plan.requiredFormatMinor() == 7);
  plan.calls.back().attributes = {{"program", std::string("add(x0, x1)")}};
  CHECK(plan.requiredFormatMinor() == 3);
}

TEST_CASE("plans with a matmul's bias gradient are format 1.8", "[plan]") {
  Plan plan;
  PlanCall matmul;
  matmul.kind = "cublaslt.matmul";
  matmul.attributes = {{"has_bias_grad", int64_t(0)}};
  plan.calls.push_back(matmul);
  CHECK(plan.requiredFormatMinor() == 0);
  plan.calls.back().attributes = {{"has_bias_grad", int64_t(1)}};
  CHECK(plan.requiredFormatMinor() == 8);
}
