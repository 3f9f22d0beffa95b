//===- CudaPlanningNNTest.cpp - norms, rnn, topk --------------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// the normalizations, cudnn.rnn, kernel.lstm_bwd, topk, cumsum and hardmax.
//
//===----------------------------------------------------------------------===//
#include "CudaPlanningTestSupport.h"

#include "mp/Runtime/Attention.h"
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace mp::rt;
using namespace mp::rt::cuda;
using mp::rt::test::Addr;
using mp::rt::test::callOf;
using mp::rt::test::messageOf;

TEST_CASE("normalization planning: layer norm, instance norm, LRN",
          "[cuda][planning]") {
  Addr at;
  SECTION("layer_norm_grad") {
    TensorDesc dy = at(DType::BF16, {4, 6, 8}), x = at(DType::BF16, {4, 6, 8}),
               dx = at(DType::BF16, {4, 6, 8});
    TensorDesc scale = at(DType::F32, {6, 8}), dscale = at(DType::F32, {6, 8}),
               dbias = at(DType::F32, {48});
    TensorDesc mean = at(DType::F32, {4, 1, 1}),
               inv = at(DType::F32, {4, 1, 1});
    PlanCall grad = callOf("kernel.layer_norm_grad",
                           {{"has_dbias", int64_t(1)}, {"axis", int64_t(-2)}});
    Result<LayerNormGradParams> p =
        planLayerNormGrad(grad, {dy, x, scale, mean, inv}, {dx, dscale, dbias});
    REQUIRE(p);
    CHECK(p->rows == 4);
    CHECK(p->rowSize == 48);
    CHECK(p->xDtype == 16);
    CHECK(p->scaleDtype == 1);
    CHECK(p->hasBias == 1);
    CHECK(p->mean == mean.ptr<const float>());
    CHECK(p->invStd == inv.ptr<const float>());
    CHECK(p->dbias == dbias.ptr<void>());
    // The CPU's words: f16 statistics.
    PlanCall noBias = callOf("kernel.layer_norm_grad",
                             {{"has_dbias", int64_t(0)}, {"axis", int64_t(1)}});
    CHECK(messageOf(planLayerNormGrad(
              noBias, {dy, x, scale, at(DType::F16, {4, 1, 1}), inv},
              {dx, dscale})) ==
          "layer_norm_grad: mean must hold the 4 f32 statistics, got f16 "
          "[4, 1, 1]");
  }
  SECTION("layer_norm") {
    TensorDesc x = at(DType::F16, {4, 6, 8}), y = at(DType::F16, {4, 6, 8});
    PlanCall ln = callOf("kernel.layer_norm", {{"has_bias", int64_t(1)},
                                               {"has_mean", int64_t(1)},
                                               {"has_inv_std_dev", int64_t(0)},
                                               {"axis", int64_t(1)},
                                               {"epsilon", 1e-3}});
    TensorDesc mean = at(DType::F32, {4, 1, 1});
    Result<NormParams> p = planLayerNorm(
        ln, {x, at(DType::F32, {6, 1}), at(DType::F16, {6, 8})}, {y, mean});
    REQUIRE(p);
    CHECK(p->instance == 0);
    CHECK(p->rows == 4);
    CHECK(p->rowSize == 48);
    CHECK(p->rowRank == 2);
    CHECK(p->rowDims[0] == 6);
    CHECK(p->rowDims[1] == 8);
    CHECK(p->scaleDense == 0); // [6, 1] broadcast over [6, 8]
    CHECK(p->scaleStrides[0] == 1);
    CHECK(p->scaleStrides[1] == 0);
    CHECK(p->biasDense == 1);
    CHECK(p->meanDtype == 1);
    CHECK(p->invStdDtype == 0);
    CHECK(p->mean == mean.ptr<void>());
    CHECK(p->epsilon == Approx(1e-3));
    // The CPU's words: a scale that does not broadcast, a wrong y.
    PlanCall plain =
        callOf("kernel.layer_norm", {{"has_bias", int64_t(0)},
                                     {"has_mean", int64_t(0)},
                                     {"has_inv_std_dev", int64_t(0)}});
    CHECK(messageOf(planLayerNorm(plain, {x, at(DType::F16, {6})}, {y})) ==
          "layer_norm: scale [6] does not broadcast to [8]");
    CHECK(messageOf(planLayerNorm(plain, {x, at(DType::F16, {8})},
                                  {at(DType::F32, {4, 6, 8})})) ==
          "layer_norm: y is f32 [4, 6, 8], expected x's f16 [4, 6, 8]");
    CHECK(messageOf(planLayerNorm(plain, {x, at(DType::F16, {8})}, {y, y})) ==
          "expects 1 results (from its has_* attributes), got 2");
    // In place is allowed.
    CHECK(planLayerNorm(plain, {x, at(DType::F16, {8})}, {x}));
  }
  SECTION("rms_norm") {
    TensorDesc x = at(DType::BF16, {4, 6, 8}), y = at(DType::BF16, {4, 6, 8});
    PlanCall rms =
        callOf("kernel.rms_norm", {{"axis", int64_t(-1)}, {"epsilon", 1e-6}});
    Result<NormParams> p = planRmsNorm(rms, {x, at(DType::F32, {8})}, {y});
    REQUIRE(p);
    CHECK(p->rms == 1);
    CHECK(p->instance == 0);
    CHECK(p->rows == 24);
    CHECK(p->rowSize == 8);
    CHECK(p->scaleDense == 1);
    CHECK(p->biasDtype == 0);
    CHECK(p->meanDtype == 0);
    CHECK(p->invStdDtype == 0);
    CHECK(p->epsilon == Approx(1e-6));
    CHECK(messageOf(planRmsNorm(rms, {x, at(DType::F32, {6})}, {y})) ==
          "rms_norm: scale [6] does not broadcast to [8]");
    CHECK(messageOf(planRmsNorm(rms, {x}, {y})) != "");
  }
  SECTION("group_norm") {
    TensorDesc x = at(DType::F16, {2, 6, 4, 5}),
               y = at(DType::F16, {2, 6, 4, 5});
    PlanCall gn = callOf(
        "kernel.group_norm",
        {{"has_bias", int64_t(1)}, {"groups", int64_t(3)}, {"epsilon", 1e-5}});
    Result<NormParams> p = planGroupNorm(
        gn, {x, at(DType::F32, {6, 1, 1}), at(DType::F16, {6})}, {y});
    REQUIRE(p);
    CHECK(p->groupSpatial == 20);
    CHECK(p->groups == 3);
    CHECK(p->rows == 6);
    CHECK(p->rowSize == 40);
    CHECK(p->scaleDtype == 1);
    CHECK(p->biasDtype != 0); // f16, not the scale's f32
    CHECK(p->biasDtype != p->scaleDtype);
    CHECK(messageOf(planGroupNorm(
              callOf("kernel.group_norm",
                     {{"has_bias", int64_t(0)}, {"groups", int64_t(4)}}),
              {x, at(DType::F32, {6})}, {y})) ==
          "group_norm: groups must divide the 6 channels, got 4");
  }
  SECTION("layer_norm over more normalized dims than the kernel's strides") {
    // 12 normalized dims: a dense scale needs no strides (and none are
    // written past the 8 the parameters hold); a broadcast one is refused.
    Shape big(12, 2);
    TensorDesc x = at(DType::F32, big), y = at(DType::F32, big);
    PlanCall ln = callOf("kernel.layer_norm", {{"has_bias", int64_t(1)},
                                               {"has_mean", int64_t(0)},
                                               {"has_inv_std_dev", int64_t(0)},
                                               {"axis", int64_t(0)}});
    Result<NormParams> p =
        planLayerNorm(ln, {x, at(DType::F32, big), at(DType::F32, big)}, {y});
    REQUIRE(p);
    CHECK(p->scaleDense == 1);
    CHECK(p->biasDense == 1);
    CHECK(p->rowSize == 4096);
    CHECK_THAT(messageOf(planLayerNorm(
                   ln, {x, at(DType::F32, {2}), at(DType::F32, big)}, {y})),
               Catch::Contains("more than 8 normalized dims"));
  }
  SECTION("instance_norm") {
    TensorDesc x = at(DType::BF16, {2, 3, 5, 5});
    Result<NormParams> p =
        planInstanceNorm(callOf("kernel.instance_norm", {}),
                         {x, at(DType::F32, {3}), at(DType::F32, {3})},
                         {at(DType::BF16, {2, 3, 5, 5})});
    REQUIRE(p);
    CHECK(p->instance == 1);
    CHECK(p->rows == 6);
    CHECK(p->rowSize == 25);
    CHECK(p->channels == 3);
    CHECK(messageOf(planInstanceNorm(
              callOf("kernel.instance_norm", {}),
              {x, at(DType::F32, {1}), at(DType::F32, {3})}, {x})) ==
          "instance_norm: scale [1] and bias [3] must be [3]");
  }
  SECTION("lrn") {
    TensorDesc x = at(DType::F32, {2, 7, 3, 3});
    Result<LrnParams> p =
        planLrn(callOf("cudnn.lrn", {{"size", int64_t(4)}, {"alpha", 2e-4}}),
                {x}, {at(DType::F32, {2, 7, 3, 3})});
    REQUIRE(p);
    CHECK(p->c == 7);
    CHECK(p->spatial == 9);
    CHECK(p->before == 1);
    CHECK(p->after == 2);
    CHECK(p->scale == 2e-4f / 4.0f);
    CHECK(p->beta == 0.75f);
    CHECK(messageOf(planLrn(callOf("cudnn.lrn", {{"size", int64_t(3)}}), {x},
                            {x})) == "lrn: y must not be x");
    CHECK(messageOf(planLrn(callOf("cudnn.lrn", {}), {x},
                            {at(DType::F32, {2, 7, 3, 3})})) ==
          "attribute 'size' is missing");
  }
}

TEST_CASE("rnn planning: parameters, scratch, the CPU's checks",
          "[cuda][planning]") {
  Addr at;
  auto rnnCall = [](std::vector<PlanAttr> extra) {
    std::vector<PlanAttr> a{
        {"has_b", int64_t(1)},         {"has_sequence_lens", int64_t(0)},
        {"has_initial_h", int64_t(0)}, {"has_initial_c", int64_t(0)},
        {"has_p", int64_t(0)},         {"has_y", int64_t(1)},
        {"has_y_h", int64_t(1)},       {"has_y_c", int64_t(0)}};
    for (PlanAttr &e : extra)
      a.push_back(std::move(e));
    return callOf("cudnn.rnn", std::move(a));
  };
  // GRU, bidirectional, 5 steps, batch 3, input 4, hidden 6.
  PlanCall gru = rnnCall({{"mode", std::string("gru")},
                          {"direction", std::string("bidirectional")},
                          {"hidden_size", int64_t(6)},
                          {"clip", 2.5}});
  std::vector<TensorDesc> ops{
      at(DType::F16, {5, 3, 4}), at(DType::F16, {2, 18, 4}),
      at(DType::F16, {2, 18, 6}), at(DType::F16, {2, 36})};
  std::vector<TensorDesc> res{at(DType::F16, {5, 2, 3, 6}),
                              at(DType::F16, {2, 3, 6})};
  Result<RnnPlan> p = planRnn(gru, ops, res);
  REQUIRE(p);
  CHECK(p->params.mode == kRnnGru);
  CHECK(p->params.dirs == 2);
  CHECK(p->params.hidden == 6);
  CHECK(p->params.hasClip == 1);
  CHECK(p->params.clip == 2.5f);
  CHECK(p->twoPhase);
  CHECK_FALSE(p->reverse);
  CHECK(p->params.acts[0].kind == kRnnSigmoid); // defaults, per direction
  CHECK(p->params.acts[1].kind == kRnnTanh);
  CHECK(p->params.acts[2].kind == kRnnSigmoid);
  CHECK(p->params.acts[3].kind == kRnnTanh);
  CHECK(p->yH == res[1].ptr<void>());
  CHECK(p->yC == nullptr);
  // xw: 15 rows of 18 floats; hr: 3 x 18; h, c, tmp: 3 x 6.
  CHECK(p->xwOffset == 0);
  CHECK(p->hrOffset == 1280); // 1080 bytes, 256-aligned
  CHECK(p->hOffset == 1280 + 256);
  CHECK(p->workspaceBytes == 1280 + 256 * 3 + 72);
  // linear_before_reset: one gate kernel per step.
  PlanCall lbr = rnnCall({{"mode", std::string("gru")},
                          {"direction", std::string("bidirectional")},
                          {"hidden_size", int64_t(6)},
                          {"linear_before_reset", int64_t(1)}});
  Result<RnnPlan> q = planRnn(lbr, ops, res);
  REQUIRE(q);
  CHECK_FALSE(q->twoPhase);
  // LSTM activations, reverse.
  PlanCall lstm = rnnCall({{"mode", std::string("lstm")},
                           {"direction", std::string("reverse")},
                           {"hidden_size", int64_t(2)},
                           {"activations", std::string("HardSigmoid,Relu,Elu")},
                           {"activation_alpha", std::vector<double>{0.3}}});
  Result<RnnPlan> l =
      planRnn(lstm,
              {at(DType::F32, {4, 2, 3}), at(DType::F32, {1, 8, 3}),
               at(DType::F32, {1, 8, 2}), at(DType::F32, {1, 16})},
              {at(DType::F32, {4, 1, 2, 2}), at(DType::F32, {1, 2, 2})});
  REQUIRE(l);
  CHECK(l->reverse);
  CHECK(l->params.acts[0].kind == kRnnHardSigmoid);
  CHECK(l->params.acts[0].alpha == Approx(0.3));
  CHECK(l->params.acts[0].beta == Approx(0.5));
  CHECK(l->params.acts[1].kind == kRnnRelu);
  CHECK(l->params.acts[2].kind == kRnnElu);
  CHECK(l->params.acts[2].alpha == 1.0f);
  // The CPU's words.
  CHECK(messageOf(planRnn(
            gru, {ops[0], at(DType::F16, {2, 12, 4}), ops[2], ops[3]}, res)) ==
        "rnn: w has shape [2, 12, 4], expected "
        "[2, 18, 4]");
  CHECK(messageOf(planRnn(rnnCall({{"mode", std::string("gru")},
                                   {"hidden_size", int64_t(6)},
                                   {"activations", std::string("Tanh")}}),
                          ops, res)) ==
        "rnn: 1 activations given ('Tanh'), expected 2 per direction for 1 "
        "direction(s)");
  CHECK(messageOf(planRnn(rnnCall({{"mode", std::string("lstmx")},
                                   {"hidden_size", int64_t(6)}}),
                          ops, res)) ==
        "attribute 'mode' must be lstm, gru or rnn, got 'lstmx'");
  CHECK(messageOf(planRnn(gru, ops, {res[0]})) ==
        "expects 2 results (from its has_* attributes), got 1");
}

TEST_CASE("topk, cumsum, hardmax planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::U16, {3, 10, 4});
  Result<TopkParams> t = planTopk(
      callOf("kernel.topk", {{"axis", int64_t(1)}, {"largest", int64_t(0)}}),
      {x}, {at(DType::U16, {3, 2, 4}), at(DType::I32, {3, 2, 4})});
  REQUIRE(t);
  CHECK(t->outer == 3);
  CHECK(t->len == 10);
  CHECK(t->inner == 4);
  CHECK(t->k == 2);
  CHECK(t->largest == 0);
  CHECK(t->key == kKeyUnsigned);
  CHECK(t->elemSize == 2);
  CHECK(t->indexDtype == 6);
  CHECK(planTopk(callOf("kernel.topk", {}), {at(DType::BF16, {5})},
                 {at(DType::BF16, {5}), at(DType::I64, {5})})
            ->key == kKeyFloat);
  CHECK(messageOf(planTopk(
            callOf("kernel.topk", {{"axis", int64_t(1)}}), {x},
            {at(DType::U16, {3, 11, 4}), at(DType::I64, {3, 11, 4})})) ==
        "topk: values [3, 11, 4] and indices [3, 11, 4] must be x's shape "
        "[3, 10, 4] with at most 10 entries along axis 1");
  CHECK(messageOf(planTopk(callOf("kernel.topk", {}), {x},
                           {at(DType::U16, {3, 10, 1})})) ==
        "expects 2 results, got 1");

  TensorDesc f = at(DType::F16, {2, 3, 5});
  Result<ScanParams> c =
      planCumsum(callOf("kernel.cumsum", {{"axis", int64_t(-2)},
                                          {"exclusive", int64_t(1)},
                                          {"reverse", int64_t(1)}}),
                 {f}, {f});
  REQUIRE(c);
  CHECK(c->outer == 2);
  CHECK(c->len == 3);
  CHECK(c->inner == 5);
  CHECK(c->exclusive == 1);
  CHECK(c->reverse == 1);
  CHECK(c->y == f.ptr<void>()); // in place
  CHECK(messageOf(planCumsum(callOf("kernel.cumsum", {{"axis", int64_t(0)}}),
                             {at(DType::U8, {4})}, {at(DType::U8, {4})})) ==
        "cumsum: x has dtype ui8; expected f32, f64, f16, bf16, i32 or i64");
  CHECK(messageOf(planCumsum(callOf("kernel.cumsum", {}), {f}, {f})) ==
        "attribute 'axis' is missing");

  Result<ScanParams> h = planHardmax(callOf("kernel.hardmax", {}), {f},
                                     {at(DType::F16, {2, 3, 5})});
  REQUIRE(h);
  CHECK(h->outer == 6);
  CHECK(h->len == 5);
  CHECK(h->inner == 1);
  CHECK(messageOf(planHardmax(callOf("kernel.hardmax", {}),
                              {at(DType::I32, {4})}, {at(DType::I32, {4})})) ==
        "hardmax: x has dtype i32; expected f32, f16, bf16 or f64");
}

TEST_CASE("lstm_bwd planning: scratch, results, the CPU's checks",
          "[cuda][planning]") {
  Addr at;
  auto call = [](std::vector<PlanAttr> extra) {
    std::vector<PlanAttr> a{
        {"has_b", int64_t(1)},          {"has_initial_h", int64_t(0)},
        {"has_initial_c", int64_t(0)},  {"has_dy", int64_t(1)},
        {"has_dy_h", int64_t(0)},       {"has_dy_c", int64_t(0)},
        {"has_db", int64_t(1)},         {"has_dinitial_h", int64_t(1)},
        {"has_dinitial_c", int64_t(0)}, {"hidden_size", int64_t(3)}};
    for (PlanAttr &e : extra)
      a.push_back(std::move(e));
    return callOf("kernel.lstm_bwd", std::move(a));
  };
  // seq 4, batch 2, input 5, hidden 3, bidirectional, f64.
  const DType t = DType::F64;
  std::vector<TensorDesc> ops{at(t, {4, 2, 5}), at(t, {2, 12, 5}),
                              at(t, {2, 12, 3}), at(t, {2, 24}),
                              at(t, {4, 2, 2, 3})};
  std::vector<TensorDesc> res{at(t, {4, 2, 5}), at(t, {2, 12, 5}),
                              at(t, {2, 12, 3}), at(t, {2, 24}),
                              at(t, {2, 2, 3})};
  PlanCall bi = call({{"direction", std::string("bidirectional")}});
  Result<LstmBwdPlan> p = planLstmBwd(bi, ops, res);
  REQUIRE(p);
  CHECK(p->params.f64 == 1);
  CHECK(p->params.dirs == 2);
  CHECK(p->params.dy == ops[4].ptr<const void>());
  CHECK(p->params.dyH == nullptr);
  CHECK_FALSE(p->reverse);
  CHECK(p->out[3] == res[3].ptr<void>());
  CHECK(p->outElements[3] == 48);
  CHECK(p->out[5] == nullptr);
  // gates: 8 rows of 12 doubles (768 bytes), then hPrev (8 x 3 doubles).
  CHECK(p->offsets[0] == 0);
  CHECK(p->offsets[1] == 768);
  CHECK(p->offsets[2] == 1024);
  // dx [8, 5] doubles at offsets[8], dw [2, 12, 5] after it.
  CHECK(p->offsets[9] - p->offsets[8] == 512);
  CHECK(p->workspaceBytes == p->offsets[11] + 2 * 24 * 8);
  Result<LstmBwdPlan> f =
      planLstmBwd(call({{"direction", std::string("reverse")}}),
                  {at(DType::F16, {4, 2, 5}), at(DType::F16, {1, 12, 5}),
                   at(DType::F16, {1, 12, 3}), at(DType::F16, {1, 24}),
                   at(DType::F16, {4, 1, 2, 3})},
                  {at(DType::F16, {4, 2, 5}), at(DType::F16, {1, 12, 5}),
                   at(DType::F16, {1, 12, 3}), at(DType::F16, {1, 24}),
                   at(DType::F16, {1, 2, 3})});
  REQUIRE(f);
  CHECK(f->params.f64 == 0);
  CHECK(f->reverse);
  CHECK(f->offsets[1] == 512); // 8 x 12 floats
  // The CPU's words.
  CHECK(messageOf(planLstmBwd(
            call({{"activations", std::string("Sigmoid,Tanh,Relu")}}), ops,
            res)) ==
        "attribute 'activations' ('Sigmoid,Tanh,Relu'): only the default "
        "Sigmoid, Tanh, Tanh are supported by the LSTM backward");
  CHECK(messageOf(planLstmBwd(call({{"clip", 1.0}}), ops, res)) ==
        "attribute 'clip' is not supported by the LSTM backward");
  CHECK(messageOf(planLstmBwd(
            bi, ops, {res[0], res[1], at(t, {2, 12, 4}), res[3], res[4]})) ==
        "lstm_bwd: dr has shape [2, 12, 4], expected [2, 12, 3]");
  CHECK(messageOf(planLstmBwd(bi, ops, {res[0], res[1], res[2], res[3]})) ==
        "expects 5 results (from its has_* attributes), got 4");
}

TEST_CASE("attention planning: views, dtypes, the CPU's checks, the GPU's "
          "head dim limit",
          "[cuda][planning]") {
  Addr at;
  // torch's layout: qkv [L=5, N=2, 3E=18], H=2 heads of 3; O [10, 6].
  const AttentionShape shape{2, 2, 5, 5, 3, 3};
  auto call = [&](AttentionShape s, std::vector<int64_t> vView, bool mask) {
    std::vector<PlanAttr> attrs = {
        {"shape", s.toList()},
        {"q_view", std::vector<int64_t>{0, 18, 3, 36, 1}},
        {"k_view", std::vector<int64_t>{6, 18, 3, 36, 1}},
        {"v_view", std::move(vView)},
        {"o_view", std::vector<int64_t>{0, 6, 3, 12, 1}},
        {"scale", 0.5},
        {"has_mask", int64_t(mask)}};
    if (mask)
      attrs.push_back({"mask_view", std::vector<int64_t>{0, 0, 0, 5, 1}});
    return callOf("kernel.attention", attrs);
  };
  TensorDesc qkv = at(DType::BF16, {5, 2, 18});
  TensorDesc mask = at(DType::F32, {1, 5, 5});
  TensorDesc o = at(DType::BF16, {10, 6});
  Result<AttentionParams> p = planAttention(
      call(shape, {12, 18, 3, 36, 1}, true), {qkv, qkv, qkv, mask}, {o});
  REQUIRE(p);
  CHECK(p->heads == 2);
  CHECK(p->queries == 5);
  CHECK(p->v.offset == 12);
  CHECK(p->o.strides[2] == 12);
  CHECK(p->mask.strides[0] == 0);
  CHECK(p->maskDtype == 1);
  CHECK(p->qDtype == 16); // bf16's ONNX code
  CHECK(p->scale == 0.5f);
  CHECK(p->oData == o.ptr<void>());
  CHECK(p->maskData == mask.ptr<void>());
  // The CPU's words for a view outside its buffer.
  CHECK(messageOf(planAttention(call(shape, {13, 18, 3, 36, 1}, false),
                                {qkv, qkv, qkv}, {o})) ==
        "attention: v view reaches element 180 of a buffer of 180");
  // Head dims beyond what a warp's registers hold.
  AttentionShape wide{1, 1, 2, 2, 300, 1};
  TensorDesc q = at(DType::F32, {2, 300}), v = at(DType::F32, {2, 1}),
             small = at(DType::F32, {2, 1});
  PlanCall wideCall = callOf("kernel.attention",
                             {{"shape", wide.toList()},
                              {"q_view", std::vector<int64_t>{0, 0, 0, 300, 1}},
                              {"k_view", std::vector<int64_t>{0, 0, 0, 300, 1}},
                              {"v_view", std::vector<int64_t>{0, 0, 0, 1, 1}},
                              {"o_view", std::vector<int64_t>{0, 0, 0, 1, 1}},
                              {"scale", 1.0},
                              {"has_mask", int64_t(0)}});
  CHECK(messageOf(planAttention(wideCall, {q, q, v}, {small})) ==
        "attention: head and value dims above 256 are not implemented on the "
        "GPU");
}
