// Unit tests of plan files (mp/Runtime/Plan.h): round trips, the on-disk
// layout of weights, version and identifier checks, truncated and corrupt
// files, every semantic validation rule, atomic saving, and the 1.1
// additions for training (State buffers, the training information).
#include "mp/Runtime/Plan.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

// Set by test/unit/CMakeLists.txt (from lib/Runtime/CMakeLists.txt): the
// header flatc generated in this build, if it was flatc 2.0.8, and the
// committed copy.
#ifndef MP_PLAN_GENERATED_HEADER
#define MP_PLAN_GENERATED_HEADER ""
#endif
#ifndef MP_PLAN_COMMITTED_HEADER
#define MP_PLAN_COMMITTED_HEADER ""
#endif

using namespace mp::rt;
using namespace mp::rt::test;
namespace fs = std::filesystem;

namespace {

constexpr DType kAllDTypes[] = {
    DType::F32, DType::U8,  DType::I8,  DType::U16, DType::I16,
    DType::I32, DType::I64, DType::Bool, DType::F16, DType::F64,
    DType::U32, DType::U64, DType::BF16};

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto &b : out)
    b = static_cast<uint8_t>(rng());
  return out;
}

PlanWeight weight(const std::string &name, DType dtype, Shape shape,
                  uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<uint8_t> bytes =
      randomBytes(static_cast<size_t>(n) * byteSize(dtype), seed);
  return PlanWeight::copyOf(name, dtype, std::move(shape), bytes.data(),
                            bytes.size());
}

PlanBuffer arenaBuffer(uint32_t id, DType dtype, Shape shape, uint64_t offset,
                       std::string name = "") {
  PlanBuffer b;
  b.id = id;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.storage = BufferStorage::Arena;
  b.offset = offset;
  b.name = std::move(name);
  return b;
}

PlanBuffer weightBuffer(uint32_t id, const Plan &plan, uint32_t weightIndex,
                        std::string name = "") {
  const PlanWeight &w = plan.weights[weightIndex];
  PlanBuffer b;
  b.id = id;
  b.dtype = w.dtype;
  b.shape = w.shape;
  b.storage = BufferStorage::Weight;
  b.weight = weightIndex;
  b.name = std::move(name);
  return b;
}

PlanBinding binding(const std::string &name, const PlanBuffer &b) {
  return PlanBinding{name, b.id, b.dtype, b.shape};
}

/// A small valid plan: y = conv(matmul(x, w), b).
///   buffers: 0 'x' f32 [1, 4] arena@0, 1 'w' f16 [4, 4] weight #0,
///            2 't' f32 [1, 4] arena@64, 3 'b' bf16 [4] weight #1,
///            4 'y' f32 [1, 4] arena@0 (shares bytes with 'x')
///   calls:   #0 cublaslt.matmul at 'matmul0' (0, 1) -> 2
///            #1 cudnn.conv_fwd at 'conv1' (2, 3) -> 4
Plan makePlan() {
  Plan p;
  p.producer = "PlanTest";
  p.modelName = "tiny";
  p.arenaSize = 128;
  p.weights.push_back(weight("w", DType::F16, {4, 4}, 1));
  p.weights.push_back(weight("b", DType::BF16, {4}, 2));
  p.buffers.push_back(arenaBuffer(0, DType::F32, {1, 4}, 0, "x"));
  p.buffers.push_back(weightBuffer(1, p, 0, "w"));
  p.buffers.push_back(arenaBuffer(2, DType::F32, {1, 4}, 64, "t"));
  p.buffers.push_back(weightBuffer(3, p, 1, "b"));
  p.buffers.push_back(arenaBuffer(4, DType::F32, {1, 4}, 0, "y"));
  p.inputs.push_back(binding("x", p.buffers[0]));
  p.outputs.push_back(binding("y", p.buffers[4]));
  PlanCall mm;
  mm.kind = "cublaslt.matmul";
  mm.operands = {0, 1};
  mm.results = {2};
  mm.workspaceSize = 4096;
  mm.attributes = {{"transB", int64_t(1)}, {"alpha", 1.0}};
  mm.location = "matmul0";
  PlanCall conv;
  conv.kind = "cudnn.conv_fwd";
  conv.operands = {2, 3};
  conv.results = {4};
  conv.attributes = {{"pads", std::vector<int64_t>{0, 0, 0, 0}},
                     {"algo", std::string("implicit_gemm")}};
  conv.location = "conv1";
  p.calls = {mm, conv};
  return p;
}

/// A plan with every dtype (as weights and arena buffers), every attribute
/// kind with edge values, a scalar and an empty weight, and buffers listed in
/// an order other than their ids.
Plan makeRichPlan() {
  Plan p;
  p.producer = "mp-compile 0.1.0 (PlanTest)";
  p.modelName = "every \"kind\" of thing \xce\xbb";
  uint32_t seed = 100;
  for (DType t : kAllDTypes)
    p.weights.push_back(weight("w_" + std::string(dtypeName(t)), t, {3, 5},
                               seed++));
  p.weights.push_back(weight("scalar", DType::F64, {}, seed++));
  p.weights.push_back(weight("empty", DType::F16, {0, 7}, seed++));
  p.weights.push_back(weight("odd_size", DType::U8, {67}, seed++));

  std::vector<PlanBuffer> buffers;
  uint32_t id = 0;
  uint64_t offset = 0;
  for (DType t : kAllDTypes) {
    buffers.push_back(arenaBuffer(id++, t, {2, 3, 7}, offset,
                                  "act_" + std::string(dtypeName(t))));
    offset += 512;
  }
  for (uint32_t w = 0; w < p.weights.size(); ++w)
    buffers.push_back(weightBuffer(id++, p, w));
  p.arenaSize = offset;
  // Ids are not the positions: loadPlan sorts them.
  std::mt19937 rng(7);
  std::shuffle(buffers.begin(), buffers.end(), rng);
  p.buffers = buffers;

  auto byId = [&](uint32_t i) -> const PlanBuffer & { return *p.buffer(i); };
  p.inputs = {binding("in_f32", byId(0)), binding("in_f16", byId(8))};
  p.outputs = {binding("out_bf16", byId(12)), binding("out_weight", byId(14))};

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  PlanCall c;
  c.kind = "kernel.everything";
  c.operands = {0, 1, 13, 14, 14};
  c.results = {2, 3};
  c.workspaceSize = uint64_t(1) << 40;
  c.location = "node/with 'quotes'";
  c.attributes = {
      {"i", int64_t(-7)},
      {"i_min", std::numeric_limits<int64_t>::min()},
      {"i_max", std::numeric_limits<int64_t>::max()},
      {"f", 0.1},
      {"f32", double(0.1f)},
      {"neg_zero", -0.0},
      {"nan", nan},
      {"denormal", std::numeric_limits<double>::denorm_min()},
      {"s", std::string("hello")},
      {"s_empty", std::string()},
      {"s_nul", std::string("a\0b", 3)},
      {"ints", std::vector<int64_t>{1, -2, 3, std::numeric_limits<int64_t>::min()}},
      {"ints_empty", std::vector<int64_t>{}},
      {"floats", std::vector<double>{1.5, -inf, inf, nan, -0.0}},
      {"floats_empty", std::vector<double>{}},
  };
  PlanCall plain;
  plain.kind = "kernel.add"; // no attributes, location or workspace
  plain.operands = {2, 3};
  plain.results = {4};
  p.calls = {c, plain};
  return p;
}

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void requireSameValue(const PlanAttrValue &a, const PlanAttrValue &b) {
  REQUIRE(a.index() == b.index());
  if (auto *x = std::get_if<double>(&a)) {
    REQUIRE(sameBits(*x, std::get<double>(b)));
  } else if (auto *xs = std::get_if<std::vector<double>>(&a)) {
    const auto &ys = std::get<std::vector<double>>(b);
    REQUIRE(xs->size() == ys.size());
    for (size_t i = 0; i < xs->size(); ++i)
      REQUIRE(sameBits((*xs)[i], ys[i]));
  } else {
    REQUIRE(a == b);
  }
}

/// `got` (loaded) equals `want`, whose buffers may be in any order.
void requireSamePlan(const Plan &want, const Plan &got) {
  REQUIRE(got.formatMajor == want.formatMajor);
  REQUIRE(got.formatMinor == want.formatMinor);
  REQUIRE(got.producer == want.producer);
  REQUIRE(got.modelName == want.modelName);
  REQUIRE(got.arenaSize == want.arenaSize);

  REQUIRE(got.buffers.size() == want.buffers.size());
  for (size_t i = 0; i < got.buffers.size(); ++i) {
    const PlanBuffer &g = got.buffers[i];
    REQUIRE(g.id == i); // sorted by id
    const PlanBuffer *w = want.buffer(g.id);
    REQUIRE(w);
    CHECK(g.dtype == w->dtype);
    CHECK(g.shape == w->shape);
    CHECK(g.storage == w->storage);
    CHECK(g.offset == w->offset);
    CHECK(g.weight == w->weight);
    CHECK(g.name == w->name);
  }

  REQUIRE(got.weights.size() == want.weights.size());
  for (size_t i = 0; i < got.weights.size(); ++i) {
    const PlanWeight &g = got.weights[i], &w = want.weights[i];
    INFO("weight " << w.name);
    CHECK(g.name == w.name);
    CHECK(g.dtype == w.dtype);
    CHECK(g.shape == w.shape);
    REQUIRE(g.size == w.size);
    REQUIRE(g.data != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(g.data) % kPlanWeightAlignment == 0);
    REQUIRE(std::memcmp(g.data, w.data, w.size) == 0);
  }

  auto sameBindings = [](const std::vector<PlanBinding> &a,
                         const std::vector<PlanBinding> &b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].name == b[i].name);
      CHECK(a[i].buffer == b[i].buffer);
      CHECK(a[i].dtype == b[i].dtype);
      CHECK(a[i].shape == b[i].shape);
    }
  };
  sameBindings(got.inputs, want.inputs);
  sameBindings(got.outputs, want.outputs);

  REQUIRE(got.training.has_value() == want.training.has_value());
  if (want.training) {
    const PlanTrainingInfo &g = *got.training, &w = *want.training;
    CHECK(g.dataInput == w.dataInput);
    CHECK(g.labelInput == w.labelInput);
    CHECK(g.lossOutput == w.lossOutput);
    CHECK(g.predictionOutput == w.predictionOutput);
    CHECK(g.skippedOutput == w.skippedOutput);
    CHECK(g.scaleOutput == w.scaleOutput);
    CHECK(g.task == w.task);
  }

  REQUIRE(got.calls.size() == want.calls.size());
  for (size_t i = 0; i < got.calls.size(); ++i) {
    const PlanCall &g = got.calls[i], &w = want.calls[i];
    CHECK(g.kind == w.kind);
    CHECK(g.operands == w.operands);
    CHECK(g.results == w.results);
    CHECK(g.workspaceSize == w.workspaceSize);
    CHECK(g.location == w.location);
    REQUIRE(g.attributes.size() == w.attributes.size());
    for (size_t k = 0; k < g.attributes.size(); ++k) {
      INFO("attribute " << w.attributes[k].name);
      CHECK(g.attributes[k].name == w.attributes[k].name);
      requireSameValue(g.attributes[k].value, w.attributes[k].value);
    }
  }
}

/// Saves `plan` without validation to `path` and loads it back.
Result<Plan> saveUncheckedAndLoad(const Plan &plan, const std::string &path) {
  SavePlanOptions unchecked;
  unchecked.validate = false;
  Status s = savePlan(plan, path, unchecked);
  REQUIRE(s.isOk());
  return loadPlan(path);
}

/// Finds the only occurrence of the little-endian uint64 `value` in the first
/// `limit` bytes of `bytes`.
size_t findOnlyU64(const std::vector<uint8_t> &bytes, size_t limit,
                   uint64_t value) {
  uint8_t pattern[8];
  std::memcpy(pattern, &value, 8);
  size_t found = 0, at = 0;
  for (size_t i = 0; i + 8 <= limit; ++i)
    if (std::memcmp(bytes.data() + i, pattern, 8) == 0) {
      ++found;
      at = i;
    }
  REQUIRE(found == 1);
  return at;
}

uint32_t metadataSize(const std::vector<uint8_t> &bytes) {
  uint32_t n;
  std::memcpy(&n, bytes.data(), 4);
  return n + 4;
}

} // namespace

TEST_CASE("plans round-trip bit-exactly through files", "[plan]") {
  TempDir dir;
  const Plan rich = makeRichPlan();
  REQUIRE(validatePlan(rich).isOk());
  const std::string path = dir.file("rich.mpplan");
  Status saved = savePlan(rich, path);
  INFO(saved.message());
  REQUIRE(saved.isOk());
  CHECK(dir.entries() == std::vector<std::string>{"rich.mpplan"});

  Result<Plan> loaded = loadPlan(path);
  INFO(loaded.message());
  REQUIRE(loaded.isOk());
  requireSamePlan(rich, *loaded);
  CHECK(loaded->formatMajor == kPlanFormatMajor);
  CHECK(loaded->formatMinor == kPlanFormatMinorDefault);

  // The same from memory.
  std::vector<uint8_t> bytes = readFile(path);
  CHECK(std::memcmp(bytes.data() + 8, "MPPL", 4) == 0);
  Result<Plan> parsed = parsePlan(bytes.data(), bytes.size(), "rich");
  REQUIRE(parsed.isOk());
  requireSamePlan(rich, *parsed);

  // Saving what was loaded gives the bytes of the original with its buffers
  // sorted by id (the writer is deterministic).
  Plan sorted = rich;
  std::sort(sorted.buffers.begin(), sorted.buffers.end(),
            [](const PlanBuffer &a, const PlanBuffer &b) { return a.id < b.id; });
  const std::string again = dir.file("again.mpplan");
  const std::string sortedPath = dir.file("sorted.mpplan");
  REQUIRE(savePlan(*loaded, again).isOk());
  REQUIRE(savePlan(sorted, sortedPath).isOk());
  CHECK(readFile(again) == readFile(sortedPath));
  CHECK(readFile(again) != bytes);
  CHECK(readFile(again).size() == bytes.size());

  // Every weight starts at a multiple of 64 in the file, and the file ends
  // with the last one ("odd_size", 67 bytes).
  const PlanWeight &last = parsed->weights.back();
  REQUIRE(last.name == "odd_size");
  const auto *end = static_cast<const uint8_t *>(last.data) + last.size;
  for (const PlanWeight &w : parsed->weights) {
    INFO("weight " << w.name);
    const size_t fromEnd = end - static_cast<const uint8_t *>(w.data);
    REQUIRE(fromEnd <= bytes.size());
    const size_t fileOffset = bytes.size() - fromEnd;
    CHECK(fileOffset % 64 == 0);
    CHECK(fileOffset >= metadataSize(bytes));
    CHECK(std::memcmp(bytes.data() + fileOffset, w.data, w.size) == 0);
  }
}

TEST_CASE("a loaded plan's accessors", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("p.mpplan");
  REQUIRE(savePlan(makePlan(), path).isOk());
  Result<Plan> r = loadPlan(path);
  REQUIRE(r.isOk());
  const Plan &p = *r;
  REQUIRE(p.buffer(3));
  CHECK(p.buffer(3)->name == "b");
  CHECK(p.buffer(5) == nullptr);
  CHECK(p.buffers[2].byteCount() == 16);
  CHECK(p.maxWorkspaceSize() == 4096);
  const PlanCall &mm = p.calls[0];
  REQUIRE(mm.attrAs<int64_t>("transB"));
  CHECK(*mm.attrAs<int64_t>("transB") == 1);
  CHECK(mm.attrAs<double>("transB") == nullptr);
  REQUIRE(mm.attrAs<double>("alpha"));
  CHECK(*mm.attrAs<double>("alpha") == 1.0);
  CHECK(mm.attr("missing") == nullptr);
  CHECK(*p.calls[1].attrAs<std::string>("algo") == "implicit_gemm");
  CHECK(p.calls[1].describe(1) == "call #1 (cudnn.conv_fwd at node 'conv1')");
  CHECK(p.weights[0].as<uint16_t>() != nullptr);
}

TEST_CASE("16-bit weights take 16 bits per element on disk", "[plan]") {
  TempDir dir;
  constexpr int64_t n = 1000;
  auto planWith = [&](DType t) {
    Plan p;
    p.arenaSize = 0;
    p.weights.push_back(weight("w", t, {n}, 42));
    p.buffers.push_back(weightBuffer(0, p, 0));
    return p;
  };
  for (DType t : {DType::F16, DType::BF16, DType::I16, DType::U16}) {
    INFO(dtypeName(t));
    Plan p16 = planWith(t);
    Plan p32 = planWith(DType::F32);
    REQUIRE(savePlan(p16, dir.file("16.mpplan")).isOk());
    REQUIRE(savePlan(p32, dir.file("32.mpplan")).isOk());
    std::vector<uint8_t> b16 = readFile(dir.file("16.mpplan"));
    std::vector<uint8_t> b32 = readFile(dir.file("32.mpplan"));
    // The same metadata; the weight is 2n bytes instead of 4n.
    CHECK(b32.size() - b16.size() == 2 * n);
    // The file ends with exactly the weight's 2n bytes, after the 64-byte
    // aligned metadata.
    REQUIRE(b16.size() >= 2 * n);
    CHECK(std::memcmp(b16.data() + b16.size() - 2 * n, p16.weights[0].data,
                      2 * n) == 0);
    CHECK((b16.size() - 2 * n) % 64 == 0);
    CHECK(b16.size() - 2 * n < metadataSize(b16) + 64);
    Result<Plan> r = loadPlan(dir.file("16.mpplan"));
    REQUIRE(r.isOk());
    CHECK(r->weights[0].size == 2 * n);
    CHECK(r->weights[0].dtype == t);
  }
}

TEST_CASE("weights of equal elements are stored as one (splat)", "[plan]") {
  TempDir dir;
  constexpr int64_t n = 100000;
  std::vector<float> zeros(n, 0.0f), halves(n, 0.5f), mixed(n, 0.5f);
  mixed[n - 1] = 0.25f;
  Plan p;
  p.weights.push_back(PlanWeight::copyOf("zeros", DType::F32, {n},
                                         zeros.data(), 4 * n));
  p.weights.push_back(PlanWeight::copyOf("halves", DType::F32, {n},
                                         halves.data(), 4 * n));
  p.weights.push_back(PlanWeight::copyOf("mixed", DType::F32, {n},
                                         mixed.data(), 4 * n));
  for (uint32_t i = 0; i < 3; ++i)
    p.buffers.push_back(weightBuffer(i, p, i));
  REQUIRE(savePlan(p, dir.file("splat.mpplan")).isOk());
  // Only `mixed` takes its 4n bytes; the splats take an element each.
  std::vector<uint8_t> bytes = readFile(dir.file("splat.mpplan"));
  CHECK(bytes.size() < 4 * n + 4096);
  Result<Plan> r = loadPlan(dir.file("splat.mpplan"));
  REQUIRE(r.isOk());
  for (size_t i = 0; i < 3; ++i) {
    INFO(p.weights[i].name);
    REQUIRE(r->weights[i].size == 4 * n);
    CHECK(std::memcmp(r->weights[i].data, p.weights[i].data, 4 * n) == 0);
    CHECK(reinterpret_cast<uintptr_t>(r->weights[i].data) % 64 == 0);
  }
  // The expanded copies outlive the plan's copies as the mapped ones do.
  Plan copy = *r;
  r = Status::error("gone");
  CHECK(copy.weights[0].as<float>()[n - 1] == 0.0f);
  CHECK(copy.weights[1].as<float>()[n - 1] == 0.5f);
  // Saved again, the file is the same.
  REQUIRE(savePlan(copy, dir.file("again.mpplan")).isOk());
  CHECK(readFile(dir.file("again.mpplan")) == bytes);
}

TEST_CASE("weights view the mapping, which outlives the plan", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("p.mpplan");
  const Plan original = makePlan();
  REQUIRE(savePlan(original, path).isOk());
  std::vector<uint8_t> wBytes(
      static_cast<const uint8_t *>(original.weights[0].data),
      static_cast<const uint8_t *>(original.weights[0].data) +
          original.weights[0].size);
  PlanWeight kept;
  {
    Result<Plan> r = loadPlan(path);
    REQUIRE(r.isOk());
    kept = r->weights[0];
    // Replacing the file (savePlan renames) leaves the mapping as it was.
    Plan other = makePlan();
    other.weights[0] = weight("w", DType::F16, {4, 4}, 999);
    REQUIRE(savePlan(other, path).isOk());
    REQUIRE(loadPlan(path)->weights[0].size == kept.size);
    CHECK(std::memcmp(loadPlan(path)->weights[0].data, kept.data,
                      kept.size) != 0);
  }
  REQUIRE(kept.owner);
  REQUIRE(kept.size == wBytes.size());
  CHECK(std::memcmp(kept.data, wBytes.data(), wBytes.size()) == 0);
}

TEST_CASE("the format version is checked", "[plan]") {
  TempDir dir;
  const std::string path = dir.file("v.mpplan");
  SECTION("another major version is rejected, with both versions named") {
    Plan p = makePlan();
    p.formatMajor = 2;
    p.formatMinor = 3;
    Result<Plan> r = saveUncheckedAndLoad(p, path);
    REQUIRE(!r.isOk());
    CHECK(r.message().rfind(path + ": plan format version 2.3, this runtime "
                                   "reads 1.x",
                            0) == 0);
    p.formatMajor = 0;
    r = saveUncheckedAndLoad(p, path);
    REQUIRE(!r.isOk());
    CHECK(r.message().find("plan format version 0.3, this runtime reads 1.x") !=
          std::string::npos);
  }
  SECTION("savePlan refuses to write another major version") {
    Plan p = makePlan();
    p.formatMajor = 2;
    Status s = savePlan(p, path);
    REQUIRE(!s.isOk());
    CHECK(s.message().find("plan format version 2." +
                           std::to_string(p.formatMinor)) !=
          std::string::npos);
    CHECK(!fs::exists(path));
  }
  SECTION("a later minor version of the same major version loads") {
    Plan p = makePlan();
    p.formatMinor = kPlanFormatMinor + 7;
    Result<Plan> r = saveUncheckedAndLoad(p, path);
    INFO(r.message());
    REQUIRE(r.isOk());
    CHECK(r->formatMinor == kPlanFormatMinor + 7);
  }
}

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

namespace {

/// A plan that breaks one rule, and the message it gets.
struct RuleCase {
  const char *what;
  std::function<void(Plan &)> mutate;
  std::string message; // expected after "<path>: "
};

/// Each case's plan fails validatePlan, savePlan (writing nothing) and, saved
/// without validation, loadPlan, with the case's message.
void checkRules(const Plan &base, const std::vector<RuleCase> &cases) {
  TempDir dir;
  REQUIRE(validatePlan(base).isOk());
  for (const RuleCase &c : cases) {
    INFO(c.what);
    Plan p = base;
    c.mutate(p);
    // validatePlan.
    Status v = validatePlan(p, "mem");
    REQUIRE(!v.isOk());
    INFO(v.message());
    CHECK(v.message().rfind("mem: ", 0) == 0);
    CHECK(v.message().find(c.message) != std::string::npos);
    // savePlan validates and writes nothing.
    const std::string path = dir.file("invalid.mpplan");
    Status s = savePlan(p, path);
    REQUIRE(!s.isOk());
    CHECK(s.message().find(c.message) != std::string::npos);
    CHECK(dir.entries().empty());
    // loadPlan rejects a file written without validation.
    Result<Plan> r = saveUncheckedAndLoad(p, path);
    REQUIRE(!r.isOk());
    INFO(r.message());
    CHECK(r.message().rfind(path + ": ", 0) == 0);
    CHECK(r.message().find(c.message) != std::string::npos);
    fs::remove(path);
  }
}

} // namespace

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
       [](Plan &p) { p.buffers[2].shape = {int64_t(1) << 32, int64_t(1) << 32}; },
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
         p.weights[0] = PlanWeight::copyOf("w", DType::F16, {4, 4},
                                           p.weights[0].data, 30);
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
      {"negative weight dimension",
       [](Plan &p) { p.weights[1].shape = {-4}; },
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
      {"input of another type",
       [](Plan &p) { p.inputs[0].dtype = DType::F16; },
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
  CHECK(patched(~uint64_t(63)).find("does not fit in the weight data "
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

TEST_CASE("savePlan never leaves a partial file", "[plan]") {
  TempDir dir;
  const Plan plan = makePlan();

  SECTION("the directory does not exist") {
    const std::string path = dir.file("no/such/dir/p.mpplan");
    Status s = savePlan(plan, path);
    REQUIRE(!s.isOk());
    CHECK(s.message().rfind(path + ": cannot create the temporary file", 0) ==
          0);
    CHECK(s.message().find("No such file or directory") != std::string::npos);
    CHECK(dir.entries().empty());
  }
  SECTION("a parent is a file") {
    writeFile(dir.file("file"), {1, 2, 3});
    const std::string path = dir.file("file/p.mpplan");
    Status s = savePlan(plan, path);
    REQUIRE(!s.isOk());
    CHECK(s.message().find("Not a directory") != std::string::npos);
    CHECK(dir.entries() == std::vector<std::string>{"file"});
  }
  SECTION("the path is a directory") {
    fs::create_directory(dir.file("d"));
    fs::create_directory(dir.file("d/inside"));
    Status s = savePlan(plan, dir.file("d"));
    REQUIRE(!s.isOk());
    CHECK(s.message().rfind(dir.file("d") + ": cannot rename", 0) == 0);
    // The temporary file is gone, the directory untouched.
    CHECK(dir.entries() == std::vector<std::string>{"d"});
    CHECK(fs::is_directory(dir.file("d/inside")));
  }
  SECTION("an invalid plan leaves the old file as it was") {
    const std::string path = dir.file("p.mpplan");
    REQUIRE(savePlan(plan, path).isOk());
    const std::vector<uint8_t> before = readFile(path);
    Plan bad = plan;
    bad.calls[0].operands[0] = 42;
    REQUIRE(!savePlan(bad, path).isOk());
    CHECK(readFile(path) == before);
    CHECK(dir.entries() == std::vector<std::string>{"p.mpplan"});
  }
  SECTION("an empty path") {
    Status s = savePlan(plan, "");
    REQUIRE(!s.isOk());
    CHECK(s.message().find("the path is empty") != std::string::npos);
  }
}

TEST_CASE("the committed Plan_generated.h is what flatc makes of Plan.fbs",
          "[plan]") {
  const std::string generated = MP_PLAN_GENERATED_HEADER;
  if (generated.empty()) {
    WARN("not checked: this build did not run flatc "
         "of the version that made the committed copy");
    return;
  }
  std::vector<uint8_t> fresh = readFile(generated);
  std::vector<uint8_t> committed = readFile(MP_PLAN_COMMITTED_HEADER);
  INFO("after changing lib/Runtime/Plan.fbs, copy " << generated << " to "
                                                    << MP_PLAN_COMMITTED_HEADER);
  CHECK(fresh == committed);
}

//===----------------------------------------------------------------------===//
// Format 1.1: State buffers and the training information
//===----------------------------------------------------------------------===//

namespace {

PlanBuffer stateBuffer(uint32_t id, const Plan &plan, uint32_t weightIndex,
                       std::string name = "") {
  PlanBuffer b = weightBuffer(id, plan, weightIndex, std::move(name));
  b.storage = BufferStorage::State;
  return b;
}

/// A training step in the shape mp-opt writes (the call kinds are only
/// names here):
///   buffers: 0 'x' f32 [2, 3] arena@0, 1 'y' i64 [2] arena@64,
///            2 'w' f32 [3, 4] state of weight #0 'w',
///            3 'loss' f32 [] arena@128, 4 'p' f32 [2, 4] arena@160,
///            5 'scale' f32 [] state of weight #1 'scale.init',
///            6 'found_inf' bool [1] arena@192, 7 'lr' f32 [] weight #2,
///            8 unnamed f32 [3, 4] state of weight #3 'w.momentum'
///   inputs x, y; outputs loss, p, skipped (6), scale (5, a state)
///   calls: #0 kernel.forward (0, 2) -> 4; #1 kernel.loss (4, 1) -> 3;
///          #2 kernel.sgd_step (2, 7, 8) -> (2, 8) (in place);
///          #3 kernel.loss_scale_update (6) -> 5 (reads the current 5)
Plan makeTrainingPlan() {
  Plan p;
  p.producer = "PlanTest";
  p.modelName = "train";
  p.arenaSize = 256;
  p.weights.push_back(weight("w", DType::F32, {3, 4}, 11));
  const float initialScale = 65536.0f, lr = 0.125f;
  p.weights.push_back(PlanWeight::copyOf("scale.init", DType::F32, {},
                                         &initialScale, 4));
  p.weights.push_back(PlanWeight::copyOf("lr", DType::F32, {}, &lr, 4));
  std::vector<float> zeros(12, 0.0f);
  p.weights.push_back(PlanWeight::copyOf("w.momentum", DType::F32, {3, 4},
                                         zeros.data(), 48));
  p.buffers.push_back(arenaBuffer(0, DType::F32, {2, 3}, 0, "x"));
  p.buffers.push_back(arenaBuffer(1, DType::I64, {2}, 64, "y"));
  p.buffers.push_back(stateBuffer(2, p, 0, "w"));
  p.buffers.push_back(arenaBuffer(3, DType::F32, {}, 128, "loss"));
  p.buffers.push_back(arenaBuffer(4, DType::F32, {2, 4}, 160, "p"));
  p.buffers.push_back(stateBuffer(5, p, 1, "scale"));
  p.buffers.push_back(arenaBuffer(6, DType::Bool, {1}, 192, "found_inf"));
  p.buffers.push_back(weightBuffer(7, p, 2, "lr"));
  p.buffers.push_back(stateBuffer(8, p, 3));
  p.inputs = {binding("x", p.buffers[0]), binding("y", p.buffers[1])};
  p.outputs = {binding("loss", p.buffers[3]), binding("p", p.buffers[4]),
               binding("skipped", p.buffers[6]),
               binding("scale", p.buffers[5])};
  auto call = [&](const char *kind, std::vector<uint32_t> operands,
                  std::vector<uint32_t> results) {
    PlanCall c;
    c.kind = kind;
    c.operands = std::move(operands);
    c.results = std::move(results);
    p.calls.push_back(c);
  };
  call("kernel.forward", {0, 2}, {4});
  call("kernel.loss", {4, 1}, {3});
  call("kernel.sgd_step", {2, 7, 8}, {2, 8});
  call("kernel.loss_scale_update", {6}, {5});
  PlanTrainingInfo t;
  t.dataInput = "x";
  t.labelInput = "y";
  t.lossOutput = "loss";
  t.predictionOutput = "p";
  t.skippedOutput = "skipped";
  t.scaleOutput = "scale";
  t.task = "classification";
  p.training = t;
  return p;
}

} // namespace

TEST_CASE("state buffers and the training information round-trip",
          "[plan][training]") {
  TempDir dir;
  const Plan plan = makeTrainingPlan();
  REQUIRE(validatePlan(plan).isOk());
  CHECK(plan.requiredFormatMinor() == 1);
  CHECK(stateName(plan, plan.buffers[2]) == "w");
  CHECK(stateName(plan, plan.buffers[8]) == "w.momentum"); // its weight's
  REQUIRE(plan.input("y"));
  CHECK(plan.input("y")->buffer == 1);
  CHECK(plan.input("loss") == nullptr);
  REQUIRE(plan.output("scale"));
  CHECK(plan.output("scale")->buffer == 5);

  const std::string path = dir.file("train.mpplan");
  REQUIRE(savePlan(plan, path).isOk());
  Result<Plan> loaded = loadPlan(path);
  INFO(loaded.message());
  REQUIRE(loaded);
  requireSamePlan(plan, *loaded);
  CHECK(loaded->formatMinor == 1);
  CHECK(loaded->buffers[2].storage == BufferStorage::State);
  CHECK(loaded->training->isClassification());

  SECTION("optional names stay empty") {
    Plan minimal = plan;
    minimal.training->predictionOutput.clear();
    minimal.training->skippedOutput.clear();
    minimal.training->scaleOutput.clear();
    minimal.training->task = "regression";
    REQUIRE(savePlan(minimal, path).isOk());
    Result<Plan> r = loadPlan(path);
    REQUIRE(r);
    requireSamePlan(minimal, *r);
    CHECK(!r->training->isClassification());
  }
  SECTION("1.1 contents are written as 1.1 whatever formatMinor says") {
    Plan old = plan;
    old.formatMinor = 0;
    REQUIRE(savePlan(old, path).isOk());
    CHECK(loadPlan(path)->formatMinor == 1);
  }
  SECTION("an inference plan read as 1.0 is written as 1.0") {
    Plan inference = makePlan();
    inference.formatMinor = 0;
    CHECK(inference.requiredFormatMinor() == 0);
    REQUIRE(savePlan(inference, path).isOk());
    Result<Plan> r = loadPlan(path);
    REQUIRE(r);
    CHECK(r->formatMinor == 0);
    CHECK(!r->training);
  }
  SECTION("a state may be an input") {
    Plan p = plan;
    p.inputs.push_back(binding("set_scale", p.buffers[5]));
    Status s = validatePlan(p);
    INFO(s.message());
    CHECK(s.isOk());
  }
}

TEST_CASE("each rule for state buffers and training information is checked",
          "[plan][training]") {
  const std::vector<RuleCase> cases = {
      {"state of a missing weight", [](Plan &p) { p.buffers[2].weight = 9; },
       "buffer 2 ('w') (a state) refers to weight #9, but the plan has 4 "
       "weights"},
      {"state unlike its weight",
       [](Plan &p) { p.buffers[2].dtype = DType::F16; },
       "buffer 2 ('w') (f16 [3, 4]) does not match its weight #0 'w' (f32 "
       "[3, 4]): a state buffer has its initial weight's dtype and number of "
       "elements"},
      {"state weight also a weight buffer",
       [](Plan &p) { p.buffers.push_back(weightBuffer(9, p, 0, "w.const")); },
       "buffer 2 ('w') is a state initialised from weight #0 'w', which "
       "buffer 9 ('w.const') uses too (a state buffer's initial weight is "
       "used by no other buffer)"},
      {"weight buffer before the state of its weight",
       [](Plan &p) {
         p.buffers[8].weight = 2; // buffer 7 uses weight #2 first
         p.buffers[8].shape = {};
       },
       "buffer 8 is a state initialised from weight #2 'lr', which buffer 7 "
       "('lr') uses too"},
      {"two states of one weight",
       [](Plan &p) { p.buffers.push_back(stateBuffer(9, p, 0, "w2")); },
       "buffer 9 ('w2') is a state initialised from weight #0 'w', which "
       "buffer 2 ('w') uses too"},
      {"two states of one name", [](Plan &p) { p.buffers[5].name = "w"; },
       "buffer 2 ('w') and buffer 5 ('w') are both states named 'w'"},
      {"a state named like another state's weight",
       [](Plan &p) { p.buffers[5].name = "w.momentum"; },
       "buffer 5 ('w.momentum') and buffer 8 are both states named "
       "'w.momentum'"},
      {"call writes a weight next to a state",
       [](Plan &p) { p.calls[2].results = {2, 7}; },
       "call #2 (kernel.sgd_step) writes buffer 7 ('lr'), which holds weight "
       "'lr' (weights are read-only)"},
      {"no data input", [](Plan &p) { p.training->dataInput.clear(); },
       "training information: the data_input is missing"},
      {"no loss output", [](Plan &p) { p.training->lossOutput.clear(); },
       "training information: the loss_output is missing"},
      {"label input that does not exist",
       [](Plan &p) { p.training->labelInput = "labels"; },
       "training information: label_input 'labels' is not an input of the "
       "plan (its inputs: x, y)"},
      {"data input that is an output",
       [](Plan &p) { p.training->dataInput = "loss"; },
       "training information: data_input 'loss' is not an input of the plan"},
      {"loss output that does not exist",
       [](Plan &p) { p.training->lossOutput = "x"; },
       "training information: loss_output 'x' is not an output of the plan "
       "(its outputs: loss, p, skipped, scale)"},
      {"prediction output that does not exist",
       [](Plan &p) { p.training->predictionOutput = "probs"; },
       "training information: prediction_output 'probs' is not an output"},
      {"skipped output that does not exist",
       [](Plan &p) { p.training->skippedOutput = "found_inf"; },
       "training information: skipped_output 'found_inf' is not an output"},
      {"scale output that does not exist",
       [](Plan &p) { p.training->scaleOutput = "loss_scale"; },
       "training information: scale_output 'loss_scale' is not an output"},
      {"unknown task", [](Plan &p) { p.training->task = "ranking"; },
       "training information: task 'ranking' is neither 'classification' nor "
       "'regression'"},
      {"no task", [](Plan &p) { p.training->task.clear(); },
       "training information: task '' is neither"},
      {"data and labels the same input",
       [](Plan &p) { p.training->labelInput = "x"; },
       "training information: data_input and label_input are both 'x'"},
      {"data without a batch dimension",
       [](Plan &p) {
         p.buffers[0].shape = {};
         p.inputs[0].shape = {};
       },
       "training information: data_input 'x' is f32 []: it needs a batch "
       "dimension of at least 1 first"},
      {"labels of another batch size",
       [](Plan &p) {
         p.buffers[1].shape = {3};
         p.inputs[1].shape = {3};
       },
       "training information: label_input 'y' is i64 [3], but data_input 'x' "
       "is f32 [2, 3]: the labels need the same batch dimension first"},
      {"a loss of several elements",
       [](Plan &p) { p.training->lossOutput = "p"; },
       "training information: loss_output 'p' is f32 [2, 4], but it must be "
       "one float element"},
      {"an integer loss",
       [](Plan &p) { p.training->lossOutput = "skipped"; },
       "training information: loss_output 'skipped' is bool [1], but it must "
       "be one float element"},
      {"a skipped output of several elements",
       [](Plan &p) { p.training->skippedOutput = "p"; },
       "training information: skipped_output 'p' is f32 [2, 4], but it must "
       "be one element"},
      {"a scale output of several elements",
       [](Plan &p) { p.training->scaleOutput = "p"; },
       "training information: scale_output 'p' is f32 [2, 4], but it must be "
       "one element"},
  };
  checkRules(makeTrainingPlan(), cases);
}

TEST_CASE("readers reject a storage kind they do not know", "[plan][training]") {
  // A later minor version may add storage kinds: the error names the value.
  TempDir dir;
  Plan p = makeTrainingPlan();
  p.buffers[5].storage = static_cast<BufferStorage>(3);
  Result<Plan> r = saveUncheckedAndLoad(p, dir.file("s.mpplan"));
  REQUIRE(!r);
  CHECK(r.message().find("buffer #5 (id 5) has an unknown storage kind 3") !=
        std::string::npos);
}

TEST_CASE("corrupt training plans never crash the loader", "[plan][training]") {
  TempDir dir;
  const std::string path = dir.file("t.mpplan");
  REQUIRE(savePlan(makeTrainingPlan(), path).isOk());
  const std::vector<uint8_t> good = readFile(path);
  const size_t meta = metadataSize(good);
  size_t valid = 0;
  for (size_t i = 0; i < meta; ++i) {
    std::vector<uint8_t> bytes = good;
    bytes[i] ^= 0xff;
    INFO("byte " << i);
    Result<Plan> r = parsePlan(bytes.data(), bytes.size(), "bad");
    if (r.isOk()) {
      ++valid;
      REQUIRE(validatePlan(*r).isOk());
    } else {
      REQUIRE(r.message().rfind("bad: ", 0) == 0);
    }
  }
  CHECK(valid < meta);
}
