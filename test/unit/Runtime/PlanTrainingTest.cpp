// Unit tests of the 1.1 additions to plan files for training
// (mp/Runtime/Plan.h): State buffers and the training information,
// their round trip, their rules, and corrupt training plans.
#include "mp/Runtime/Plan.h"

#include "PlanTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::plans;
namespace fs = std::filesystem;

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
  p.weights.push_back(
      PlanWeight::copyOf("scale.init", DType::F32, {}, &initialScale, 4));
  p.weights.push_back(PlanWeight::copyOf("lr", DType::F32, {}, &lr, 4));
  std::vector<float> zeros(12, 0.0f);
  p.weights.push_back(
      PlanWeight::copyOf("w.momentum", DType::F32, {3, 4}, zeros.data(), 48));
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
      {"an integer loss", [](Plan &p) { p.training->lossOutput = "skipped"; },
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

TEST_CASE("readers reject a storage kind they do not know",
          "[plan][training]") {
  // A later minor version may add storage kinds: the error names the value.
  TempDir dir;
  Plan p = makeTrainingPlan();
  p.buffers[5].storage = static_cast<BufferStorage>(4);
  Result<Plan> r = saveUncheckedAndLoad(p, dir.file("s.mpplan"));
  REQUIRE(!r);
  CHECK(r.message().find("buffer #5 (id 5) has an unknown storage kind 4") !=
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
