//===- PrecisionPolicyTest.cpp - the precision policy's C++ API ------------===//
#include "mp/Autocast/PrecisionPolicy.h"

#include <catch2/catch.hpp>

using namespace mp::autocast;

/// The message of `e`, or "" for success.
static std::string errorText(llvm::Error e) {
  if (!e)
    return "";
  return llvm::toString(std::move(e));
}

TEST_CASE("the built-in policy classifies by op type", "[policy]") {
  PrecisionPolicy p = PrecisionPolicy::defaults();
  CHECK(p.classify("MatMul", "", nullptr).cls == PrecisionClass::Allow);
  CHECK(p.classify("Softmax", "", nullptr).cls == PrecisionClass::Deny);
  CHECK(p.classify("Add", "", nullptr).cls == PrecisionClass::Infer);
  CHECK(p.classify("Reshape", "", nullptr).cls == PrecisionClass::Clear);
  // Unknown op types stay f32, and the rule says so.
  ClassDecision unknown = p.classify("FancyOp", "n", nullptr);
  CHECK(unknown.cls == PrecisionClass::Deny);
  CHECK(unknown.rule.find("not in the policy") != std::string::npos);
  CHECK(p.keepsOperand("BatchNormalization", 3));
  CHECK_FALSE(p.keepsOperand("BatchNormalization", 0));
  CHECK(p.usesTensorCores("Conv"));
  CHECK_FALSE(p.usesTensorCores("Add"));
}

TEST_CASE("node overrides: exact names beat globs, later globs win",
          "[policy]") {
  PrecisionPolicy p = PrecisionPolicy::defaults();
  REQUIRE(errorText(p.addNodeOverride("enc/*", PrecisionClass::Deny, "test")) == "");
  REQUIRE(errorText(p.addNodeOverride("enc/l1/*", PrecisionClass::Allow, "test")) == "");
  REQUIRE(errorText(p.addNodeOverride("enc/l1/mm", PrecisionClass::Deny, "test")) == "");
  CHECK(p.classify("MatMul", "enc/l0/mm", nullptr).cls == PrecisionClass::Deny);
  CHECK(p.classify("Softmax", "enc/l1/sm", nullptr).cls == PrecisionClass::Allow);
  ClassDecision exact = p.classify("MatMul", "enc/l1/mm", nullptr);
  CHECK(exact.cls == PrecisionClass::Deny);
  CHECK(exact.byNodeOverride);
  CHECK(p.classify("MatMul", "dec/mm", nullptr).cls == PrecisionClass::Allow);
  CHECK(errorText(p.addNodeOverride("a[", PrecisionClass::Deny, "test"))
            .find("invalid node-name glob 'a['") == 0);
}

TEST_CASE("JSON policy files set every field and report problems by path",
          "[policy]") {
  PrecisionPolicy p = PrecisionPolicy::defaults();
  REQUIRE(errorText(p.loadJSON(R"({"target": "bf16", "level": "tensor-cores-only",
      "keep_io_types": false, "ops": {"Erf": "infer"},
      "keep_operands": {"Clip": [1, 2]},
      "no_low_precision_kernel": ["Einsum"]})", "p.json")) == "");
  CHECK_FALSE(p.hasLowPrecisionKernel("Einsum"));
  CHECK(p.hasLowPrecisionKernel("MatMul"));
  CHECK(p.target == TargetType::BF16);
  CHECK(p.level == Level::TensorCoresOnly);
  CHECK_FALSE(p.keepIOTypes);
  CHECK(p.classify("Erf", "", nullptr).cls == PrecisionClass::Infer);
  CHECK(p.keepsOperand("Clip", 2));

  auto errorOf = [](const char *text) {
    PrecisionPolicy q = PrecisionPolicy::defaults();
    return errorText(q.loadJSON(text, "q.json"));
  };
  CHECK(errorOf(R"({"ops": {"Erf": 3}})") ==
        "q.json: 'ops.Erf': expected a precision class: \"allow\", \"infer\", "
        "\"clear\" or \"deny\"");
  CHECK(errorOf(R"({"target": "f8"})") ==
        "q.json: 'target': expected \"f16\" or \"bf16\"");
  CHECK(errorOf(R"({"keep_operands": {"Clip": [-1]}})") ==
        "q.json: 'keep_operands.Clip[0]': expected an operand index (0 to 1024)");
  CHECK(errorOf("{").find("q.json: invalid JSON") == 0);
}

TEST_CASE("the policy table lists every class", "[policy]") {
  std::string table;
  llvm::raw_string_ostream os(table);
  PrecisionPolicy::defaults().writeMarkdown(os);
  CHECK(table.find("- **allow**: Attention (tc), Conv (tc)") !=
        std::string::npos);
  CHECK(table.find("| BatchNormalization | 1, 2, 3, 4 |") != std::string::npos);
  CHECK(table.find("Resize with mode == \"cubic\" | deny") != std::string::npos);
}

TEST_CASE("a copied policy keeps its globs after the original is gone",
          "[policy]") {
  // Validation probes copy the policy; a glob must not refer to the
  // original's pattern strings.
  std::optional<PrecisionPolicy> copy;
  {
    PrecisionPolicy original = PrecisionPolicy::defaults();
    REQUIRE(errorText(original.addNodeOverride("encoder/*/mm",
                                               PrecisionClass::Deny, "test")) ==
            "");
    copy = original;
    // Overwrite the original's storage before it goes.
    REQUIRE(errorText(original.addNodeOverride("zzzzzzzzzzzz*zzzzzzzz",
                                               PrecisionClass::Allow, "t")) ==
            "");
  }
  PrecisionPolicy moved = *copy;
  copy.reset();
  CHECK(moved.classify("MatMul", "encoder/l3/mm", nullptr).cls ==
        PrecisionClass::Deny);
  CHECK(moved.classify("MatMul", "decoder/l3/mm", nullptr).cls ==
        PrecisionClass::Allow);
}
