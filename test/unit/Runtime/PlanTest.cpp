// Unit tests of plan files (mp/Runtime/Plan.h): round trips, the on-disk
// layout of weights, version checks and atomic saving. Rejected files and
// the validation rules: PlanValidationTest.cpp; format 1.1 (training):
// PlanTrainingTest.cpp; the plans they share: PlanTestSupport.h.
#include "mp/Runtime/Plan.h"

#include "PlanTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
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
using namespace mp::rt::test::plans;
namespace fs = std::filesystem;

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
