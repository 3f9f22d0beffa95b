//===- ExternalWeightsTest.cpp - plans saved without their weights (1.2) --===//
//
// externalizeWeights / savePlan / loadPlan / fillExternalWeights: a plan
// saved without the weights that its source reproduces, refused until they
// are given, and running like the original once they are; the errors of
// every way the given weights can be wrong.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/Executor.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/Plan.h"
#include "mp/Runtime/TensorIO.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

PlanWeight weightOf(const std::string &name, const HostTensor &t) {
  return PlanWeight::copyOf(name, t.dtype(), t.shape(), t.data(), t.byteCount());
}

/// y[2, 4] = x[2, 3] @ W[3, 4] + bias[4], and a small weight "scale" [2]
/// that no call uses; W and bias are named like ONNX initializers
/// ("fc/weight:0" needs a file name other than its name).
Plan makeMatmulPlan(const HostTensor &w, const HostTensor &bias,
                    const HostTensor &scale) {
  Plan p;
  p.producer = "ExternalWeightsTest";
  p.modelName = "fc";
  p.arenaSize = 512;
  p.weights.push_back(weightOf("fc/weight:0", w));
  p.weights.push_back(weightOf("fc.bias", bias));
  p.weights.push_back(weightOf("scale", scale));
  p.buffers.push_back({0, DType::F32, {2, 3}, BufferStorage::Arena, 0, 0, "x"});
  p.buffers.push_back({1, DType::F32, {3, 4}, BufferStorage::Weight, 0, 0, "W"});
  p.buffers.push_back({2, DType::F32, {4}, BufferStorage::Weight, 0, 1, "bias"});
  p.buffers.push_back({3, DType::F32, {2, 4}, BufferStorage::Arena, 256, 0, "y"});
  p.buffers.push_back({4, DType::F32, {2}, BufferStorage::Weight, 0, 2, "scale"});
  p.inputs.push_back({"x", 0, DType::F32, {2, 3}});
  p.outputs.push_back({"y", 3, DType::F32, {2, 4}});
  PlanCall mm;
  mm.kind = "cublaslt.matmul";
  mm.operands = {0, 1, 2};
  mm.results = {3};
  mm.attributes = {{"has_c", int64_t(0)},
                   {"has_bias", int64_t(1)},
                   {"compute_type", int64_t(1)}};
  mm.location = "fc";
  p.calls.push_back(mm);
  return p;
}

struct Fixture {
  TempDir dir{"mp-external-weights"};
  Rng rng{7};
  HostTensor w = randomTensor(DType::F32, {3, 4}, rng);
  HostTensor bias = randomTensor(DType::F32, {4}, rng);
  HostTensor scale = randomTensor(DType::F32, {2}, rng);
  HostTensor x = randomTensor(DType::F32, {2, 3}, rng);
  Plan plan = makeMatmulPlan(w, bias, scale);
  std::string weightsDir = dir.file("weights");

  Fixture() {
    fs::create_directories(weightsDir);
    REQUIRE(writeNpy(weightsDir + "/fc_weight_0.npy", w.view()).isOk());
    REQUIRE(writeNpy(weightsDir + "/fc.bias.npy", bias.view()).isOk());
  }

  std::vector<NamedTensor> run(Plan p) {
    Result<CpuExecutor> exec = CpuExecutor::create(std::move(p), "p.mpplan");
    INFO(exec.message());
    REQUIRE(exec);
    Result<std::vector<NamedTensor>> out = exec->run({{"x", x.view()}});
    INFO(out.message());
    REQUIRE(out);
    return out.take();
  }

  /// The plan with W and bias external, saved and loaded again.
  Plan stripped() {
    Plan p = plan;
    Result<WeightSource> source = WeightSource::open(weightsDir);
    REQUIRE(source);
    Result<ExternalizeReport> r = externalizeWeights(p, *source);
    INFO(r.message());
    REQUIRE(r);
    CHECK(r->external == 2);
    CHECK(r->externalBytes == 12 * 4 + 4 * 4);
    CHECK(r->kept == 1);
    std::string path = dir.file("stripped.mpplan");
    REQUIRE(savePlan(p, path).isOk());
    Result<Plan> loaded = loadPlan(path);
    INFO(loaded.message());
    REQUIRE(loaded);
    return loaded.take();
  }

  Result<FillWeightsReport> fill(Plan &p, const std::string &from,
                                 bool verify = true) {
    Result<WeightSource> source = WeightSource::open(from);
    if (!source)
      return Status::error(source.message());
    FillWeightsOptions options;
    options.verifyChecksums = verify;
    return fillExternalWeights(p, *source, options);
  }
};

} // namespace

TEST_CASE("weightChecksum is FNV-1a 64", "[plan][external]") {
  CHECK(weightChecksum("", 0) == 0xcbf29ce484222325ull);
  CHECK(weightChecksum("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(weightChecksum("foobar", 6) == 0x85944171f73967e8ull);
}

TEST_CASE("a plan saved without its weights runs once they are given",
          "[plan][external]") {
  Fixture f;
  std::vector<NamedTensor> expected = f.run(f.plan);
  Plan p = f.stripped();

  SECTION("the file holds neither weight; it is a 1.2 plan") {
    CHECK(p.formatMinor == 2);
    CHECK(p.requiredFormatMinor() == 2);
    REQUIRE(p.weights.size() == 3);
    CHECK(p.weights[0].external);
    CHECK(p.weights[0].data == nullptr);
    CHECK(p.weights[0].size == 48);
    CHECK(p.weights[0].checksum == weightChecksum(f.w.data(), 48));
    CHECK(p.weights[1].external);
    CHECK_FALSE(p.weights[2].external); // no file for "scale"
    REQUIRE(p.weights[2].data);
    CHECK(std::memcmp(p.weights[2].data, f.scale.data(), 8) == 0);
    // The offset of an external weight lies outside every weight data
    // section, so that a 1.1 reader refuses it rather than read other bytes.
    std::ifstream in(f.dir.file("stripped.mpplan"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    uint64_t sentinel = kPlanExternalWeightOffset;
    CHECK(contains(bytes, std::string(reinterpret_cast<const char *>(&sentinel),
                                      8)));
    REQUIRE(savePlan(f.plan, f.dir.file("full.mpplan")).isOk());
    CHECK(bytes.size() < fs::file_size(f.dir.file("full.mpplan")));
  }
  SECTION("it is refused until the weights are given") {
    Status s = validatePlan(p, "p.mpplan");
    REQUIRE_FALSE(s.isOk());
    CHECK(s.message() ==
          "p.mpplan: weight #0 'fc/weight:0' (f32 [3, 4]) is external: the "
          "plan was saved without its bytes (nor those of 1 more weight, 64 "
          "bytes in all); give the model's weights (mp-run "
          "--weights=DIR|FILE, fillExternalWeights) to run it");
    Result<CpuExecutor> exec = CpuExecutor::create(p, "p.mpplan");
    REQUIRE_FALSE(exec);
    CHECK(contains(exec.message(), "is external"));
    CHECK(validatePlan(p, "p.mpplan", /*allowUnfilledExternal=*/true).isOk());
  }
  SECTION("filled from the directory it runs as the original") {
    Result<FillWeightsReport> r = f.fill(p, f.weightsDir);
    INFO(r.message());
    REQUIRE(r);
    CHECK(r->filled == 2);
    CHECK(r->bytes == 64);
    CHECK(r->unused == 0);
    CHECK(r->checksumDiffers == 0);
    CHECK_FALSE(p.weights[0].external);
    CHECK(validatePlan(p).isOk());
    std::vector<NamedTensor> out = f.run(p);
    REQUIRE(out.size() == 1);
    CHECK(std::memcmp(out[0].tensor.data(), expected[0].tensor.data(), 32) == 0);
    // Saved again, it holds its weights.
    REQUIRE(savePlan(p, f.dir.file("full.mpplan")).isOk());
    Result<Plan> again = loadPlan(f.dir.file("full.mpplan"));
    REQUIRE(again);
    CHECK_FALSE(again->weights[0].external);
    CHECK(validatePlan(*again).isOk());
  }
  SECTION("filled from a plan that has them") {
    REQUIRE(savePlan(f.plan, f.dir.file("original.mpplan")).isOk());
    Result<FillWeightsReport> r = f.fill(p, f.dir.file("original.mpplan"));
    INFO(r.message());
    REQUIRE(r);
    CHECK(r->filled == 2);
    CHECK(r->unused == 1); // "scale": the stripped plan holds it
    std::vector<NamedTensor> out = f.run(p);
    CHECK(std::memcmp(out[0].tensor.data(), expected[0].tensor.data(), 32) == 0);
  }
}

TEST_CASE("filling external weights: errors", "[plan][external]") {
  Fixture f;
  Plan p = f.stripped();
  const Plan before = p;
  auto unchanged = [&] {
    for (size_t i = 0; i < p.weights.size(); ++i) {
      CHECK(p.weights[i].external == before.weights[i].external);
      CHECK(p.weights[i].data == before.weights[i].data);
    }
  };
  const std::string dir = f.weightsDir;

  SECTION("a missing weight") {
    fs::remove(dir + "/fc.bias.npy");
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(r.message() == dir + ": weight 'fc.bias' (f32 [4]) is missing: the "
                               "plan holds it as external");
    unchanged();
  }
  SECTION("a missing weight whose file name is not its name") {
    fs::remove(dir + "/fc_weight_0.npy");
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(contains(r.message(), "weight 'fc/weight:0' (f32 [3, 4]) is missing: "
                                "the plan holds it as external (its file "
                                "would be fc_weight_0.npy)"));
    unchanged();
  }
  SECTION("an unknown name") {
    REQUIRE(writeNpy(dir + "/fc.bais.npy", f.bias.view()).isOk());
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(r.message() == dir + ": unknown weight 'fc.bais': the plan has no "
                               "weight of that name (its external weights: "
                               "fc/weight:0, fc.bias)");
    unchanged();
  }
  SECTION("another shape") {
    HostTensor t(DType::F32, {4, 3});
    std::memcpy(t.data(), f.w.data(), 48);
    REQUIRE(writeNpy(dir + "/fc_weight_0.npy", t.view()).isOk());
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(r.message() == dir + ": weight 'fc/weight:0': expected f32 [3, 4], "
                               "got f32 [4, 3]");
    unchanged();
  }
  SECTION("a dtype that is not converted") {
    HostTensor t(DType::I32, {4});
    std::memset(t.data(), 0, 16);
    REQUIRE(writeNpy(dir + "/fc.bias.npy", t.view()).isOk());
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(contains(r.message(), "weight 'fc.bias': expected f32 [4], got i32 "
                                "[4] (only float to float and integer to "
                                "integer are converted)"));
    unchanged();
  }
  SECTION("other values: refused unless unchecked") {
    HostTensor t(DType::F32, {4});
    std::memcpy(t.data(), f.bias.data(), 16);
    t.as<float>()[2] += 1.0f;
    REQUIRE(writeNpy(dir + "/fc.bias.npy", t.view()).isOk());
    Result<FillWeightsReport> r = f.fill(p, dir);
    REQUIRE_FALSE(r);
    CHECK(contains(r.message(), dir + ": weight 'fc.bias': the values differ "
                                      "from those the plan was saved with "
                                      "(checksum 0x"));
    CHECK(contains(r.message(), "not the weights the plan was compiled from"));
    unchanged();
    Result<FillWeightsReport> anyway = f.fill(p, dir, /*verify=*/false);
    REQUIRE(anyway);
    CHECK(anyway->filled == 2);
    CHECK(anyway->checksumDiffers == 1);
    CHECK(p.weights[1].as<float>()[2] == t.as<float>()[2]);
  }
  SECTION("a source that is neither a directory nor a plan") {
    Result<WeightSource> s = WeightSource::open(dir + "/fc.bias.npy");
    REQUIRE_FALSE(s);
    CHECK(contains(s.message(), "not a MixPrec plan file"));
    CHECK(contains(s.message(), "(the weights: a directory of .npy files or "
                                "a plan file)"));
    Result<WeightSource> none = WeightSource::open(dir + "/nothing");
    REQUIRE_FALSE(none);
    CHECK(none.message() == dir + "/nothing: no such file or directory (the "
                                  "weights: a directory of .npy files or a "
                                  "plan file)");
  }
}

TEST_CASE("externalizing keeps what the source does not reproduce",
          "[plan][external]") {
  TempDir dir("mp-external-weights");
  Rng rng(3);
  // f16 weights in the plan, f32 values in the files: converted (rounded to
  // nearest even) they are the plan's bytes.
  HostTensor w32 = randomTensor(DType::F32, {8, 8}, rng);
  HostTensor w16(DType::F16, {8, 8});
  for (int64_t i = 0; i < 64; ++i)
    w16.as<uint16_t>()[i] = toHalf(w32.as<float>()[i]).bits;
  // A padded weight: [8, 9] in the plan, [8, 8] in the file.
  HostTensor padded = randomTensor(DType::F16, {8, 9}, rng);
  // A folded weight: its values are not the file's.
  HostTensor folded = randomTensor(DType::F32, {16}, rng);
  HostTensor zeros(DType::F32, {32});
  std::memset(zeros.data(), 0, zeros.byteCount());

  Plan p;
  p.producer = "ExternalWeightsTest";
  p.weights.push_back(weightOf("w", w16));
  p.weights.push_back(weightOf("padded", padded));
  p.weights.push_back(weightOf("folded", folded));
  p.weights.push_back(weightOf("zeros", zeros));
  for (uint32_t i = 0; i < 4; ++i)
    p.buffers.push_back({i, p.weights[i].dtype, p.weights[i].shape,
                         BufferStorage::Weight, 0, i, ""});
  std::string src = dir.file("src");
  fs::create_directories(src);
  REQUIRE(writeNpy(src + "/w.npy", w32.view()).isOk());
  REQUIRE(writeNpy(src + "/padded.npy", w32.view()).isOk());
  HostTensor other = randomTensor(DType::F32, {16}, rng);
  REQUIRE(writeNpy(src + "/folded.npy", other.view()).isOk());
  REQUIRE(writeNpy(src + "/zeros.npy", zeros.view()).isOk());
  Result<WeightSource> source = WeightSource::open(src);
  REQUIRE(source);

  SECTION("min bytes") {
    Plan q = p;
    Result<ExternalizeReport> r = externalizeWeights(q, *source, 129);
    REQUIRE(r);
    CHECK(r->external == 0);
    CHECK(r->kept == 4);
    CHECK(r->notReproduced.size() == 1); // padded, 144 bytes
  }
  Result<ExternalizeReport> r = externalizeWeights(p, *source);
  REQUIRE(r);
  CHECK(r->external == 1);
  CHECK(r->externalBytes == 128);
  CHECK(r->kept == 3);
  REQUIRE(r->notReproduced.size() == 2);
  CHECK(r->notReproduced[0] == "'padded': expected f16 [8, 9], got f32 [8, 8]");
  CHECK(r->notReproduced[1] == "'folded': other bytes once converted to f32");
  CHECK(p.weights[0].external);
  CHECK(p.weights[0].checksum == weightChecksum(w16.data(), 128));
  CHECK_FALSE(p.weights[3].external); // a splat: one element in the file

  std::string path = dir.file("p.mpplan");
  REQUIRE(savePlan(p, path).isOk());
  Result<Plan> loaded = loadPlan(path);
  REQUIRE(loaded);
  CHECK(loaded->weights[0].external);
  // Filling converts the f32 file to the plan's f16 bytes.
  fs::remove(src + "/padded.npy");
  fs::remove(src + "/folded.npy");
  fs::remove(src + "/zeros.npy");
  Result<WeightSource> again = WeightSource::open(src);
  REQUIRE(again);
  Result<FillWeightsReport> filled = fillExternalWeights(*loaded, *again);
  INFO(filled.message());
  REQUIRE(filled);
  CHECK(filled->filled == 1);
  REQUIRE(loaded->weights[0].data);
  CHECK(std::memcmp(loaded->weights[0].data, w16.data(), 128) == 0);
}

TEST_CASE("external weights in the loader", "[plan][external]") {
  Fixture f;
  Plan p = f.stripped();
  SECTION("savePlan without validation still writes an unfilled plan") {
    SavePlanOptions options;
    options.validate = false;
    REQUIRE(savePlan(p, f.dir.file("again.mpplan"), options).isOk());
    Result<Plan> r = loadPlan(f.dir.file("again.mpplan"));
    REQUIRE(r);
    CHECK(r->weights[0].external);
    CHECK(r->weights[0].checksum == p.weights[0].checksum);
  }
  SECTION("a plan without external weights is still a 1.1 file") {
    REQUIRE(savePlan(f.plan, f.dir.file("full.mpplan")).isOk());
    Result<Plan> r = loadPlan(f.dir.file("full.mpplan"));
    REQUIRE(r);
    CHECK(r->formatMinor == 1);
  }
}
