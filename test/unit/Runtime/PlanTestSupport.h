//===- PlanTestSupport.h - plans and files for the plan tests -*- C++ -*-===//
//
// Shared by PlanTest.cpp (round trips, weights on disk, versions, atomic
// saving), PlanValidationTest.cpp (foreign, truncated and corrupt files,
// every semantic rule) and PlanTrainingTest.cpp (format 1.1: State buffers
// and the training information): small plans and their parts, file bytes,
// and the check that a plan breaking one rule is refused everywhere.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_PLANTESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_PLANTESTSUPPORT_H

#include "mp/Runtime/Plan.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

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

namespace mp::rt::test::plans {

inline constexpr DType kAllDTypes[] = {
    DType::F32, DType::U8,  DType::I8,   DType::U16, DType::I16,
    DType::I32, DType::I64, DType::Bool, DType::F16, DType::F64,
    DType::U32, DType::U64, DType::BF16};

inline std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void writeFile(const std::string &path,
                      const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE(out);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out);
}

inline std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto &b : out)
    b = static_cast<uint8_t>(rng());
  return out;
}

inline PlanWeight weight(const std::string &name, DType dtype, Shape shape,
                         uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<uint8_t> bytes =
      randomBytes(static_cast<size_t>(n) * byteSize(dtype), seed);
  return PlanWeight::copyOf(name, dtype, std::move(shape), bytes.data(),
                            bytes.size());
}

inline PlanBuffer arenaBuffer(uint32_t id, DType dtype, Shape shape,
                              uint64_t offset, std::string name = "") {
  PlanBuffer b;
  b.id = id;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.storage = BufferStorage::Arena;
  b.offset = offset;
  b.name = std::move(name);
  return b;
}

inline PlanBuffer weightBuffer(uint32_t id, const Plan &plan,
                               uint32_t weightIndex, std::string name = "") {
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

inline PlanBinding binding(const std::string &name, const PlanBuffer &b) {
  return PlanBinding{name, b.id, b.dtype, b.shape};
}

/// A small valid plan: y = conv(matmul(x, w), b).
///   buffers: 0 'x' f32 [1, 4] arena@0, 1 'w' f16 [4, 4] weight #0,
///            2 't' f32 [1, 4] arena@64, 3 'b' bf16 [4] weight #1,
///            4 'y' f32 [1, 4] arena@0 (shares bytes with 'x')
///   calls:   #0 cublaslt.matmul at 'matmul0' (0, 1) -> 2
///            #1 cudnn.conv_fwd at 'conv1' (2, 3) -> 4
inline Plan makePlan() {
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

/// makePlan with its weight `w` transposed at load: buffer 5 'wT' f16
/// [4, 4] made at load by call #0 (kernel.transpose at 'w_t', at load), which
/// the matmul (now call #1) reads instead of `w`.
inline Plan makeAtLoadPlan() {
  Plan p = makePlan();
  PlanBuffer wT;
  wT.id = 5;
  wT.dtype = DType::F16;
  wT.shape = {4, 4};
  wT.storage = BufferStorage::Derived;
  wT.name = "wT";
  p.buffers.push_back(wT);
  PlanCall t;
  t.kind = "kernel.transpose";
  t.operands = {1};
  t.results = {5};
  t.attributes = {{"perm", std::vector<int64_t>{1, 0}}};
  t.location = "w_t";
  t.atLoad = true;
  p.calls[0].operands = {0, 5};
  p.calls.insert(p.calls.begin(), t);
  return p;
}

/// A plan with every dtype (as weights and arena buffers), every attribute
/// kind with edge values, a scalar and an empty weight, and buffers listed in
/// an order other than their ids.
inline Plan makeRichPlan() {
  Plan p;
  p.producer = "mp-compile 0.1.0 (PlanTest)";
  p.modelName = "every \"kind\" of thing \xce\xbb";
  uint32_t seed = 100;
  for (DType t : kAllDTypes)
    p.weights.push_back(
        weight("w_" + std::string(dtypeName(t)), t, {3, 5}, seed++));
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
      {"ints",
       std::vector<int64_t>{1, -2, 3, std::numeric_limits<int64_t>::min()}},
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

inline bool sameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

inline void requireSameValue(const PlanAttrValue &a, const PlanAttrValue &b) {
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
inline void requireSamePlan(const Plan &want, const Plan &got) {
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
    CHECK(g.atLoad == w.atLoad);
    REQUIRE(g.attributes.size() == w.attributes.size());
    for (size_t k = 0; k < g.attributes.size(); ++k) {
      INFO("attribute " << w.attributes[k].name);
      CHECK(g.attributes[k].name == w.attributes[k].name);
      requireSameValue(g.attributes[k].value, w.attributes[k].value);
    }
  }
}

/// Saves `plan` without validation to `path` and loads it back.
inline Result<Plan> saveUncheckedAndLoad(const Plan &plan,
                                         const std::string &path) {
  SavePlanOptions unchecked;
  unchecked.validate = false;
  Status s = savePlan(plan, path, unchecked);
  REQUIRE(s.isOk());
  return loadPlan(path);
}

/// Finds the only occurrence of the little-endian uint64 `value` in the first
/// `limit` bytes of `bytes`.
inline size_t findOnlyU64(const std::vector<uint8_t> &bytes, size_t limit,
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

inline uint32_t metadataSize(const std::vector<uint8_t> &bytes) {
  uint32_t n;
  std::memcpy(&n, bytes.data(), 4);
  return n + 4;
}

/// A plan that breaks one rule, and the message it gets.
struct RuleCase {
  const char *what;
  std::function<void(Plan &)> mutate;
  std::string message; // expected after "<path>: "
};

/// Each case's plan fails validatePlan, savePlan (writing nothing) and, saved
/// without validation, loadPlan, with the case's message.
inline void checkRules(const Plan &base, const std::vector<RuleCase> &cases) {
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
    std::filesystem::remove(path);
  }
}

} // namespace mp::rt::test::plans

#endif // MP_TEST_UNIT_RUNTIME_PLANTESTSUPPORT_H
