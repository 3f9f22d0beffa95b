//===- CudaPlanningTest.cpp - host-side decisions of the CUDA backend -----===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. They
// check the kernel parameters (broadcast strides, merged dims, reduction
// geometry, launch sizes), the cuBLASLt row-major mapping and epilogue
// choice, the cuDNN descriptor dims, explicit padding, the algorithm-cache
// keys, and that the checks accept and refuse what the CPU backend does.
//
//===----------------------------------------------------------------------===//
#include "CudaPlanningTestSupport.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace mp::rt;
using namespace mp::rt::cuda;
using mp::rt::test::Addr;

namespace {

PlanCall callOf(std::string kind, std::vector<PlanAttr> attrs) {
  PlanCall c;
  c.kind = std::move(kind);
  c.attributes = std::move(attrs);
  return c;
}

template <typename T> std::string messageOf(const Result<T> &r) {
  return r.message();
}

} // namespace

TEST_CASE("the CUDA call table: kinds, and the CPU implements them all",
          "[cuda][planning]") {
  const std::vector<std::string> &kinds = cudaCallKinds();
  CHECK(std::is_sorted(kinds.begin(), kinds.end()));
  for (const char *k : {"cublaslt.matmul",
                        "cudnn.conv_fwd",
                        "cudnn.conv_bwd_data",
                        "cudnn.conv_bwd_filter",
                        "cudnn.pool",
                        "cudnn.pool_bwd",
                        "cudnn.batch_norm_inference",
                        "cudnn.batch_norm_training",
                        "cudnn.batch_norm_bwd",
                        "cudnn.softmax",
                        "kernel.elementwise",
                        "kernel.cast",
                        "kernel.reduce",
                        "kernel.copy",
                        "kernel.transpose",
                        "kernel.unscale_check_finite",
                        "kernel.loss_scale_update",
                        "kernel.sgd_step",
                        "kernel.adam_step",
                        "kernel.softmax_cross_entropy_grad",
                        "kernel.nll_loss",
                        "kernel.gather",
                        "kernel.scatter_nd"})
    CHECK(isCudaCallKind(k));
  CHECK(isCudaCallKind("kernel.concat"));
  CHECK(isCudaCallKind("kernel.layer_norm"));
  CHECK_FALSE(isCudaCallKind("kernel.no_such_call"));
  for (const std::string &k : kinds)
    CHECK(cpu::cpuCallTable().find(k) != nullptr);
  // And the other way round: the GPU has every kind of the CPU.
  for (const std::string &k : cpu::cpuCallTable().kinds()) {
    INFO(k);
    CHECK(isCudaCallKind(k));
  }
}

TEST_CASE("launch sizes and the workspace layout", "[cuda][planning]") {
  LaunchConfig c = launchFor(1000, 256);
  CHECK(c.threads == 256);
  CHECK(c.blocks == 4);
  CHECK(launchFor(0).blocks == 1);
  CHECK(launchFor(int64_t(1) << 40, 256, 8192).blocks == 8192);
  CHECK(launchFor(1, 128).blocks == 1);

  WorkspaceLayout ws;
  CHECK(ws.add(10) == 0);
  CHECK(ws.add(300) == 256);
  CHECK(ws.add(0) == 768);
  CHECK(ws.add(1) == 768);
  CHECK(ws.total() == 769);

  CHECK(addressAlignment(0) == 256);
  CHECK(addressAlignment(4096 + 16) == 16);
  CHECK(addressAlignment(4096 + 2) == 2);
  CHECK(addressAlignment(4096 + 512) == 256);
}

TEST_CASE("broadcast loops: size-1 dims dropped, contiguous dims merged",
          "[cuda][planning]") {
  SECTION("same shapes merge into one dim") {
    Result<BroadcastLoop> l =
        makeBroadcastLoop({{2, 3, 4}, {2, 3, 4}}, {2, 3, 4});
    REQUIRE(l);
    CHECK(l->rank == 1);
    CHECK(l->dims[0] == 24);
    CHECK(l->strides[0][0] == 1);
    CHECK(l->strides[1][0] == 1);
  }
  SECTION("a row vector") {
    Result<BroadcastLoop> l = makeBroadcastLoop({{2, 3, 4}, {4}}, {2, 3, 4});
    REQUIRE(l);
    REQUIRE(l->rank == 2);
    CHECK(l->dims[0] == 6);
    CHECK(l->dims[1] == 4);
    CHECK(l->strides[0][0] == 4);
    CHECK(l->strides[0][1] == 1);
    CHECK(l->strides[1][0] == 0);
    CHECK(l->strides[1][1] == 1);
  }
  SECTION("both sides broadcast") {
    Result<BroadcastLoop> l =
        makeBroadcastLoop({{2, 1, 4}, {1, 3, 1}}, {2, 3, 4});
    REQUIRE(l);
    REQUIRE(l->rank == 3);
    CHECK(std::vector<int64_t>(l->dims, l->dims + 3) ==
          std::vector<int64_t>{2, 3, 4});
    CHECK(std::vector<int64_t>(l->strides[0], l->strides[0] + 3) ==
          std::vector<int64_t>{4, 0, 1});
    CHECK(std::vector<int64_t>(l->strides[1], l->strides[1] + 3) ==
          std::vector<int64_t>{0, 1, 0});
  }
  SECTION("a scalar and a single element") {
    Result<BroadcastLoop> l = makeBroadcastLoop({{}, {1, 1}}, {1, 1});
    REQUIRE(l);
    CHECK(l->rank == 1);
    CHECK(l->dims[0] == 1);
    CHECK(l->strides[0][0] == 0);
  }
  SECTION("errors") {
    Result<BroadcastLoop> l = makeBroadcastLoop({{2, 3}}, {2, 4});
    REQUIRE_FALSE(l);
    CHECK(l.message() == "input 0 [2, 3] does not broadcast to y [2, 4]");
    CHECK_FALSE(makeBroadcastLoop(std::vector<Shape>(9, Shape{2}), {2}));
    // Alternating broadcast dims cannot merge: 9 dims.
    Shape out(9, 2), in;
    for (int i = 0; i < 9; ++i)
      in.push_back(i % 2 ? 2 : 1);
    Result<BroadcastLoop> deep = makeBroadcastLoop({in, out}, out);
    REQUIRE_FALSE(deep);
    CHECK_THAT(deep.message(), Catch::Contains("after merging"));
  }
}

TEST_CASE("elementwise planning", "[cuda][planning]") {
  Addr at;
  auto attrs = [](const char *fn) {
    return std::vector<PlanAttr>{{"fn", std::string(fn)}};
  };
  SECTION("f16 add with a broadcast bias computes in f32") {
    TensorDesc a = at(DType::F16, {4, 8}), b = at(DType::F16, {8}),
               y = at(DType::F16, {4, 8});
    Result<EwParams> p = planElementwise(
        callOf("kernel.elementwise", attrs("add")), {a, b}, {y});
    REQUIRE(p);
    CHECK(p->op == kEwAdd);
    CHECK(p->compute == kComputeF32);
    CHECK(p->numInputs == 2);
    CHECK(p->n == 32);
    CHECK(p->contiguous == 0);
    CHECK(p->in[0] == a.ptr<const void>());
    CHECK(p->out == y.ptr<void>());
    CHECK(p->outDtype == static_cast<int32_t>(DType::F16));
  }
  SECTION("same shapes are contiguous; in place is fine") {
    TensorDesc a = at(DType::F32, {16});
    Result<EwParams> p =
        planElementwise(callOf("kernel.elementwise", attrs("relu")), {a}, {a});
    REQUIRE(p);
    CHECK(p->contiguous == 1);
    CHECK(p->compute == kComputeF32);
  }
  SECTION("comparisons give bool, where moves raw elements") {
    TensorDesc a = at(DType::F64, {3}), b = at(DType::F64, {3}),
               c = at(DType::Bool, {3}), y = at(DType::Bool, {3}),
               w = at(DType::F64, {3});
    Result<EwParams> p = planElementwise(
        callOf("kernel.elementwise", attrs("greater")), {a, b}, {y});
    REQUIRE(p);
    CHECK(p->compute == kComputeF64);
    Result<EwParams> q = planElementwise(
        callOf("kernel.elementwise", attrs("where")), {c, a, b}, {w});
    REQUIRE(q);
    CHECK(q->compute == kComputeRaw);
    CHECK(q->elemSize == 8);
    CHECK(q->op == kEwWhere);
  }
  SECTION("parameters default as ONNX's") {
    TensorDesc a = at(DType::F32, {3}), y = at(DType::F32, {3});
    Result<EwParams> leaky = planElementwise(
        callOf("kernel.elementwise", attrs("leaky_relu")), {a}, {y});
    REQUIRE(leaky);
    CHECK(leaky->alpha == 0.01);
    Result<EwParams> clip =
        planElementwise(callOf("kernel.elementwise", attrs("clip")), {a}, {y});
    REQUIRE(clip);
    CHECK(clip->op == kEwClip1);
    CHECK(clip->alpha == -std::numeric_limits<double>::infinity());
    CHECK(clip->beta == std::numeric_limits<double>::infinity());
    auto withAlpha = attrs("elu");
    withAlpha.push_back({"alpha", 0.5});
    Result<EwParams> elu =
        planElementwise(callOf("kernel.elementwise", withAlpha), {a}, {y});
    REQUIRE(elu);
    CHECK(elu->alpha == 0.5);
  }
  SECTION("integers compute in 64 bits where the GPU has them") {
    TensorDesc a = at(DType::I32, {3}), b = at(DType::I32, {3}),
               y = at(DType::I32, {3});
    Result<EwParams> p = planElementwise(
        callOf("kernel.elementwise", attrs("mul")), {a, b}, {y});
    REQUIRE(p);
    CHECK(p->compute == kComputeInt);
    // pow (f64 inside, any numeric exponent), mod, fmod, prelu.
    Result<EwParams> pw =
        planElementwise(callOf("kernel.elementwise", attrs("pow")),
                        {a, at(DType::F32, {3})}, {y});
    REQUIRE(pw);
    CHECK(pw->op == kEwPow);
    CHECK(pw->compute == kComputeInt);
    for (const char *fn : {"mod", "fmod", "prelu"}) {
      INFO(fn);
      Result<EwParams> q =
          planElementwise(callOf("kernel.elementwise", attrs(fn)), {a, b}, {y});
      REQUIRE(q);
      CHECK(q->compute == kComputeInt);
    }
    // shrink in f64, as the CPU.
    Result<EwParams> shrink = planElementwise(
        callOf("kernel.elementwise", attrs("shrink")), {a}, {y});
    REQUIRE(shrink);
    CHECK(shrink->compute == kComputeInt);
  }
  SECTION("integer clip bounds saturate to the dtype, as the CPU converts "
          "them") {
    TensorDesc u8 = at(DType::U8, {3}), i8 = at(DType::I8, {3});
    Result<EwParams> c = planElementwise(
        callOf("kernel.elementwise",
               {{"fn", std::string("clip")}, {"alpha", 300.0}, {"beta", -1.0}}),
        {u8}, {u8});
    REQUIRE(c);
    CHECK(c->alpha == 255.0);
    CHECK(c->beta == 0.0);
    Result<EwParams> d = planElementwise(
        callOf("kernel.elementwise",
               {{"fn", std::string("clip")}, {"alpha", -1e10}, {"beta", 2.7}}),
        {i8}, {i8});
    REQUIRE(d);
    CHECK(d->alpha == -128.0);
    CHECK(d->beta == 2.0);
  }
  SECTION("u64 computes unsigned; shifts take unsigned integers only") {
    TensorDesc u = at(DType::U64, {3});
    for (const char *fn : {"max", "min", "div", "mod", "bitshift_left"}) {
      INFO(fn);
      Result<EwParams> q =
          planElementwise(callOf("kernel.elementwise", attrs(fn)), {u, u}, {u});
      REQUIRE(q);
      CHECK(q->compute == kComputeU64);
    }
    Result<EwParams> less =
        planElementwise(callOf("kernel.elementwise", attrs("less")), {u, u},
                        {at(DType::Bool, {3})});
    REQUIRE(less);
    CHECK(less->compute == kComputeU64);
    TensorDesc u8 = at(DType::U8, {3});
    Result<EwParams> shr = planElementwise(
        callOf("kernel.elementwise", attrs("bitshift_right")), {u8, u8}, {u8});
    REQUIRE(shr);
    CHECK(shr->op == kEwShr);
    CHECK(shr->compute == kComputeInt);
    CHECK(shr->elemSize == 1); // shifts by >= 8 give 0
    TensorDesc i = at(DType::I32, {3});
    CHECK(messageOf(planElementwise(
              callOf("kernel.elementwise", attrs("bitshift_left")), {i, i},
              {i})) == "elementwise bitshift_left: does not take dtype i32");
    TensorDesc f = at(DType::F32, {3});
    CHECK(messageOf(planElementwise(
              callOf("kernel.elementwise", attrs("bitshift_left")), {f, f},
              {f})) == "elementwise bitshift_left: does not take dtype f32");
  }
  SECTION("errors: the CPU's rules, and what the GPU lacks") {
    TensorDesc a = at(DType::F32, {3}), b = at(DType::F16, {3}),
               y = at(DType::F32, {3});
    CHECK(messageOf(planElementwise(callOf("kernel.elementwise", attrs("add")),
                                    {a, b}, {y})) ==
          "elementwise add: input 1 has dtype f16; expected f32");
    CHECK(messageOf(planElementwise(callOf("kernel.elementwise", attrs("nope")),
                                    {a}, {y})) ==
          "unknown elementwise fn 'nope'");
    CHECK(messageOf(planElementwise(callOf("kernel.elementwise", attrs("exp")),
                                    {at(DType::I32, {3})},
                                    {at(DType::I32, {3})})) ==
          "elementwise exp: does not take dtype i32");
    // y partly overlapping an input.
    TensorDesc big = at(DType::F32, {8});
    CHECK(messageOf(
              planElementwise(callOf("kernel.elementwise", attrs("neg")), {big},
                              {TensorDesc{DType::F32, {8}, big.addr + 4}})) ==
          "elementwise neg: y overlaps input 0");
  }
}

TEST_CASE("cast, copy, transpose and window copies", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F32, {2, 3}), y = at(DType::BF16, {6});
  Result<CastParams> c = planCast(x, y);
  REQUIRE(c);
  CHECK(c->n == 6);
  CHECK(c->inDtype == 1);
  CHECK(c->outDtype == 16);
  CHECK(messageOf(planCast(x, at(DType::F16, {5}))) ==
        "cast: x [2, 3] and y [5] have different numbers of elements");

  Result<uint64_t> copy = planCopy(x, at(DType::F32, {3, 2}));
  REQUIRE(copy);
  CHECK(*copy == 24);
  CHECK(*planCopy(x, x) == 0);

  SECTION("transpose: y's dims with x's strides, neighbours merged") {
    TensorDesc a = at(DType::F16, {2, 3, 4}), b = at(DType::F16, {2, 4, 3});
    Result<GatherCopyParams> t = planTranspose(a, b, {0, 2, 1});
    REQUIRE(t);
    REQUIRE(t->rank == 3);
    CHECK(std::vector<int64_t>(t->dims, t->dims + 3) ==
          std::vector<int64_t>{2, 4, 3});
    CHECK(std::vector<int64_t>(t->xStrides, t->xStrides + 3) ==
          std::vector<int64_t>{12, 1, 4});
    CHECK(t->elemSize == 2);
    TensorDesc c2 = at(DType::F16, {3, 4, 2});
    Result<GatherCopyParams> r = planTranspose(a, c2, {1, 2, 0});
    REQUIRE(r);
    REQUIRE(r->rank == 2);
    CHECK(r->dims[0] == 12);
    CHECK(r->xStrides[0] == 1);
    CHECK(r->dims[1] == 2);
    CHECK(r->xStrides[1] == 12);
    // The default (empty) perm reverses.
    Result<GatherCopyParams> rev =
        planTranspose(a, at(DType::F16, {4, 3, 2}), {});
    REQUIRE(rev);
    CHECK(messageOf(planTranspose(a, b, {0, 0, 1})) ==
          "transpose: perm [0, 0, 1] is not a permutation of 0..3-1");
  }
  SECTION("slice: the start as a base, steps as strides") {
    TensorDesc a = at(DType::F32, {4, 10, 6});
    PlanCall c =
        callOf("kernel.slice", {{"starts", std::vector<int64_t>{1, 9, 0}},
                                {"steps", std::vector<int64_t>{2, -3, 1}}});
    Result<GatherCopyParams> p = planSlice(c, a, at(DType::F32, {2, 3, 6}));
    REQUIRE(p);
    CHECK(p->base == 1 * 60 + 9 * 6);
    REQUIRE(p->rank == 3);
    CHECK(std::vector<int64_t>(p->xStrides, p->xStrides + 3) ==
          std::vector<int64_t>{120, -18, 1});
    CHECK(messageOf(planSlice(c, a, at(DType::F32, {2, 5, 6}))) ==
          "slice: dim 1: 5 elements from start 9 with step -3 do not lie in x "
          "[4, 10, 6]");
  }
  SECTION("concat: one scatter copy per input") {
    TensorDesc a = at(DType::F16, {2, 3, 4}), b = at(DType::F16, {2, 5, 4}),
               e = at(DType::F16, {2, 0, 4}), y = at(DType::F16, {2, 8, 4});
    PlanCall c = callOf("kernel.concat", {{"axis", int64_t(-2)}});
    Result<std::vector<GatherCopyParams>> p = planConcat(c, {a, e, b}, y);
    REQUIRE(p);
    REQUIRE(p->size() == 2); // the empty input is left out
    CHECK((*p)[0].scatter == 1);
    CHECK((*p)[0].dims[0] == 2);
    CHECK((*p)[0].dims[1] == 12);
    CHECK((*p)[0].xStrides[0] == 32);
    CHECK((*p)[0].base == 0);
    CHECK((*p)[1].dims[1] == 20);
    CHECK((*p)[1].base == 12);
    CHECK(messageOf(planConcat(c, {a, a}, y)) ==
          "concat: the inputs add up to 6 along axis 1, but y [2, 8, 4] has 8");
  }
  SECTION("broadcast: raw elements") {
    Result<EwParams> p =
        planBroadcast(at(DType::I64, {3, 1}), at(DType::I64, {2, 3, 4}));
    REQUIRE(p);
    CHECK(p->compute == kComputeRaw);
    CHECK(p->elemSize == 8);
    CHECK(messageOf(
              planBroadcast(at(DType::I64, {3, 2}), at(DType::I64, {3, 4}))) ==
          "broadcast: x [3, 2] does not broadcast to y [3, 4]");
  }
  SECTION("window copies pad and crop") {
    Result<GatherCopyParams> w =
        planWindowCopy(DType::F32, {1, 1, 3, 3}, {1, 1, 5, 4}, {0, 0, -1, -1},
                       nullptr, nullptr);
    REQUIRE(w);
    CHECK(w->window == 1);
    CHECK(w->n == 20);
    CHECK(w->start[2] == -1);
    CHECK(w->xDims[3] == 3);
    CHECK(w->xStrides[2] == 3);
  }
}

TEST_CASE("reduce planning: kept and reduced dims, the loop",
          "[cuda][planning]") {
  Addr at;
  auto call = [](const char *fn, std::vector<int64_t> axes) {
    return callOf("kernel.reduce", {{"fn", std::string(fn)},
                                    {"axes", std::move(axes)},
                                    {"compute_type", int64_t(1)}});
  };
  SECTION("the last axis of a wide row: a block per output") {
    TensorDesc x = at(DType::F16, {8, 1024}), y = at(DType::F16, {8, 1});
    Result<ReduceParams> p = planReduce(call("mean", {1}), x, y);
    REQUIRE(p);
    CHECK(p->op == kRedMean);
    CHECK(p->ySize == 8);
    CHECK(p->count == 1024);
    CHECK(p->blockPerOutput == 1);
    CHECK(p->keptRank == 1);
    CHECK(p->keptStrides[0] == 1024);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedStrides[0] == 1);
  }
  SECTION("a middle axis: a thread per output") {
    TensorDesc x = at(DType::F32, {2, 3, 4}), y = at(DType::F32, {2, 4});
    Result<ReduceParams> p = planReduce(call("sum", {-2}), x, y);
    REQUIRE(p);
    CHECK(p->blockPerOutput == 0);
    CHECK(p->keptRank == 2);
    CHECK(p->keptDims[0] == 2);
    CHECK(p->keptStrides[0] == 12);
    CHECK(p->keptDims[1] == 4);
    CHECK(p->keptStrides[1] == 1);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedDims[0] == 3);
    CHECK(p->reducedStrides[0] == 4);
  }
  SECTION("neighbouring reduced dims merge") {
    TensorDesc x = at(DType::F32, {2, 3, 4, 5}),
               y = at(DType::F32, {2, 1, 1, 5});
    Result<ReduceParams> p = planReduce(call("max", {1, 2}), x, y);
    REQUIRE(p);
    CHECK(p->reducedRank == 1);
    CHECK(p->reducedDims[0] == 12);
    CHECK(p->reducedStrides[0] == 5);
    CHECK(p->count == 12);
  }
  SECTION("argmax gives i64; errors as the CPU") {
    TensorDesc x = at(DType::F32, {2, 3});
    Result<ReduceParams> p =
        planReduce(call("argmax", {1}), x, at(DType::I64, {2}));
    REQUIRE(p);
    CHECK(p->outDtype == 7);
    CHECK(messageOf(planReduce(call("sum", {}), x, at(DType::F32, {2}))) ==
          "reduce sum: axes is empty");
    CHECK(messageOf(planReduce(call("sum", {1, -1}), x, at(DType::F32, {2}))) ==
          "reduce sum: axis -1 appears twice");
    CHECK(messageOf(planReduce(call("sum", {1}), x, at(DType::F32, {3}))) ==
          "reduce sum: y [3] is not x [2, 3] reduced over the axes ([2, 1] or "
          "[2])");
    Result<ReduceParams> lse =
        planReduce(call("log_sum_exp", {1}), x, at(DType::F32, {2}));
    REQUIRE(lse);
    CHECK(lse->op == kRedLogSumExp);
  }
}

TEST_CASE("softmax planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::BF16, {2, 5, 3}), y = at(DType::BF16, {2, 5, 3});
  Result<SoftmaxParams> p = planSoftmax(
      callOf("cudnn.softmax", {{"axis", int64_t(1)}, {"log", int64_t(1)}}), x,
      y);
  REQUIRE(p);
  CHECK(p->outer == 2);
  CHECK(p->len == 5);
  CHECK(p->inner == 3);
  CHECK(p->log == 1);
  CHECK(messageOf(planSoftmax(callOf("cudnn.softmax", {{"axis", int64_t(3)}}),
                              x, y)) ==
        "softmax: axis 3 is out of range for x [2, 5, 3]");
}

namespace {

PlanCall matmulCall(std::vector<PlanAttr> extra = {}, bool hasC = false,
                    bool hasBias = false) {
  std::vector<PlanAttr> a{{"has_c", int64_t(hasC)},
                          {"has_bias", int64_t(hasBias)},
                          {"compute_type", int64_t(1)}};
  for (PlanAttr &e : extra)
    a.push_back(std::move(e));
  return callOf("cublaslt.matmul", std::move(a));
}

} // namespace

TEST_CASE("matmul planning: the row-major mapping to cuBLASLt",
          "[cuda][planning]") {
  Addr at;
  SECTION("A [M, K] B [K, N]") {
    TensorDesc a = at(DType::F16, {5, 7}), b = at(DType::F16, {7, 3}),
               d = at(DType::F16, {5, 3});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a, b}, {d});
    REQUIRE(p);
    const LtGemm &g = p->gemm;
    CHECK(g.m == 3);
    CHECK(g.n == 5);
    CHECK(g.k == 7);
    CHECK_FALSE(g.transA);
    CHECK_FALSE(g.transB);
    CHECK(g.aRows == 3);
    CHECK(g.aCols == 7);
    CHECK(g.lda == 3);
    CHECK(g.bRows == 7);
    CHECK(g.bCols == 5);
    CHECK(g.ldb == 7);
    CHECK(g.ldd == 3);
    CHECK(g.batchCount == 1);
    CHECK_FALSE(p->staged);
    CHECK_FALSE(p->withC);
    CHECK(p->loop.empty());
  }
  SECTION("transposes") {
    TensorDesc a = at(DType::F32, {7, 5}), b = at(DType::F32, {3, 7}),
               d = at(DType::F32, {5, 3});
    Result<MatmulPlan> p = planMatmul(
        matmulCall({{"trans_a", int64_t(1)}, {"trans_b", int64_t(1)}}), {a, b},
        {d});
    REQUIRE(p);
    const LtGemm &g = p->gemm;
    CHECK(g.transA);
    CHECK(g.aRows == 7);
    CHECK(g.aCols == 3);
    CHECK(g.lda == 7);
    CHECK(g.transB);
    CHECK(g.bRows == 5);
    CHECK(g.bCols == 7);
    CHECK(g.ldb == 5);
  }
  SECTION("a batched A with one B folds the batch into M") {
    TensorDesc a = at(DType::BF16, {2, 3, 4, 8}), b = at(DType::BF16, {8, 6}),
               d = at(DType::BF16, {2, 3, 4, 6});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a, b}, {d});
    REQUIRE(p);
    CHECK(p->gemm.n == 24);
    CHECK(p->gemm.bCols == 24);
    CHECK(p->gemm.batchCount == 1);
    CHECK(p->loop.empty());
  }
  SECTION("equal batches: one strided batched call") {
    TensorDesc a = at(DType::F16, {6, 4, 8}), b = at(DType::F16, {6, 8, 2}),
               d = at(DType::F16, {6, 4, 2});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a, b}, {d});
    REQUIRE(p);
    CHECK(p->gemm.batchCount == 6);
    CHECK(p->gemm.strideA == 16); // cuBLASLt's A is our B: 8 * 2
    CHECK(p->gemm.strideB == 32); // our A: 4 * 8
    CHECK(p->gemm.strideD == 8);
  }
  SECTION("a transposed A with one B: stride 0 for B") {
    TensorDesc a = at(DType::F32, {3, 8, 4}), b = at(DType::F32, {8, 2}),
               d = at(DType::F32, {3, 4, 2});
    Result<MatmulPlan> p =
        planMatmul(matmulCall({{"trans_a", int64_t(1)}}), {a, b}, {d});
    REQUIRE(p);
    CHECK(p->gemm.batchCount == 3);
    CHECK(p->gemm.strideA == 0);
    CHECK(p->gemm.strideB == 32);
  }
  SECTION("batches broadcast both ways: one GEMM per entry") {
    TensorDesc a = at(DType::F32, {2, 1, 4, 8}),
               b = at(DType::F32, {1, 3, 8, 2}),
               d = at(DType::F32, {2, 3, 4, 2});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a, b}, {d});
    REQUIRE(p);
    REQUIRE(p->loop.size() == 6);
    // Entry (i, j): B's matrix j, A's matrix i, D's entry 3i + j.
    CHECK(p->loop[4] == std::array<int64_t, 3>{16, 32, 32});
    CHECK(p->loop[5] == std::array<int64_t, 3>{32, 32, 40});
    CHECK(p->gemm.batchCount == 1);
  }
  SECTION("vectors") {
    TensorDesc a = at(DType::F32, {8}), b = at(DType::F32, {8, 3}),
               d = at(DType::F32, {3});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a, b}, {d});
    REQUIRE(p);
    CHECK(p->gemm.n == 1);
    TensorDesc v = at(DType::F32, {8}), m = at(DType::F32, {4, 8}),
               r = at(DType::F32, {4});
    Result<MatmulPlan> q = planMatmul(matmulCall(), {m, v}, {r});
    REQUIRE(q);
    CHECK(q->gemm.m == 1);
    CHECK(q->gemm.aRows == 1);
    CHECK(q->gemm.lda == 1);
  }
}

TEST_CASE("matmul planning: epilogues, C and bias", "[cuda][planning]") {
  Addr at;
  TensorDesc a = at(DType::F16, {4, 8}), b = at(DType::F16, {8, 6});
  SECTION("bias of D's dtype and relu are cuBLASLt epilogues") {
    TensorDesc bias = at(DType::F16, {6}), d = at(DType::F16, {4, 6});
    Result<MatmulPlan> p =
        planMatmul(matmulCall({{"epilogue", std::string("relu")}}, false, true),
                   {a, b, bias}, {d});
    REQUIRE(p);
    CHECK(p->fusedBias);
    CHECK(p->fusedRelu);
    CHECK_FALSE(p->staged);
    CHECK(p->stagedBytes == 0);
  }
  SECTION("gelu is exact: staged in f32, then the epilogue kernel") {
    TensorDesc bias = at(DType::F16, {6}), d = at(DType::F16, {4, 6});
    Result<MatmulPlan> p =
        planMatmul(matmulCall({{"epilogue", std::string("gelu")}}, false, true),
                   {a, b, bias}, {d});
    REQUIRE(p);
    CHECK(p->staged);
    CHECK_FALSE(p->fusedBias);
    CHECK(p->stagedBytes == 4 * 6 * 4);
    CHECK(p->epilogue.act == kActGelu);
    CHECK(p->epilogue.biasDtype == 10);
    CHECK(p->epilogue.geom.c == 6);
    CHECK(p->epilogue.geom.inner == 1);
    CHECK(p->epilogue.geom.outer == 4);
  }
  SECTION("an f32 bias for an f16 D is added before the single rounding") {
    TensorDesc bias = at(DType::F32, {6}), d = at(DType::F16, {4, 6});
    Result<MatmulPlan> p =
        planMatmul(matmulCall({}, false, true), {a, b, bias}, {d});
    REQUIRE(p);
    CHECK(p->staged);
    CHECK(p->epilogue.act == kActNone);
  }
  SECTION("an f32 D is its own staging area") {
    TensorDesc d = at(DType::F32, {4, 6});
    Result<MatmulPlan> p = planMatmul(
        matmulCall({{"epilogue", std::string("gelu")}}), {a, b}, {d});
    REQUIRE(p);
    CHECK(p->staged);
    CHECK(p->stagedBytes == 0);
  }
  SECTION("C of D's shape goes to cuBLASLt; a broadcast C is copied first") {
    TensorDesc d = at(DType::F16, {4, 6}), c = at(DType::F16, {4, 6}),
               row = at(DType::F16, {6});
    Result<MatmulPlan> p =
        planMatmul(matmulCall({{"beta", 0.5}}, true), {a, b, c}, {d});
    REQUIRE(p);
    CHECK(p->withC);
    CHECK(p->cDirect);
    Result<MatmulPlan> q =
        planMatmul(matmulCall({{"beta", 0.5}}, true), {a, b, row}, {d});
    REQUIRE(q);
    CHECK(q->withC);
    CHECK_FALSE(q->cDirect);
    CHECK(q->cCopy.loop.rank == 2);
    CHECK(q->cCopy.loop.strides[0][0] == 0);
    // beta 0: C is not read at all.
    Result<MatmulPlan> r = planMatmul(matmulCall({}, true), {a, b, c}, {d});
    REQUIRE(r);
    CHECK_FALSE(r->withC);
  }
  SECTION("errors as the CPU's") {
    TensorDesc d = at(DType::F16, {4, 6});
    CHECK(
        messageOf(planMatmul(matmulCall(), {a, at(DType::F16, {7, 6})}, {d})) ==
        "matmul: inner dimensions differ: op(A) of [4, 8] has K=8, op(B) "
        "of [7, 6] has K=7");
    CHECK(
        messageOf(planMatmul(matmulCall(), {a, b}, {at(DType::F16, {4, 5})})) ==
        "matmul: D has shape [4, 5], expected [4, 6] for A [4, 8] and B "
        "[8, 6]");
    PlanCall bad = matmulCall();
    bad.attributes[2].value = int64_t(10);
    CHECK(messageOf(planMatmul(bad,
                               {at(DType::F32, {4, 8}), at(DType::F32, {8, 6})},
                               {at(DType::F32, {4, 6})})) ==
          "compute type f16 cannot accumulate f32 inputs");
    CHECK(messageOf(planMatmul(matmulCall({}, true), {a, b}, {d})) ==
          "expects 3 operands, got 2");
  }
  SECTION("alignment follows the addresses") {
    TensorDesc a2{DType::F16, {4, 8}, (uint64_t(1) << 40) + 16};
    Result<MatmulPlan> p =
        planMatmul(matmulCall(), {a2, b}, {at(DType::F16, {4, 6})});
    REQUIRE(p);
    CHECK(p->alignB == 16);
    CHECK(p->alignA == 256);
  }
}

namespace {

PlanCall convCall(std::vector<int64_t> pads, std::vector<PlanAttr> extra = {},
                  bool hasBias = false) {
  size_t k = pads.size() / 2;
  std::vector<PlanAttr> a{{"has_bias", int64_t(hasBias)},
                          {"pads", std::move(pads)},
                          {"strides", std::vector<int64_t>(k, 1)},
                          {"dilations", std::vector<int64_t>(k, 1)},
                          {"compute_type", int64_t(1)}};
  for (PlanAttr &e : extra) {
    auto it = std::find_if(a.begin(), a.end(),
                           [&](const PlanAttr &x) { return x.name == e.name; });
    if (it != a.end())
      *it = e;
    else
      a.push_back(e);
  }
  return callOf("cudnn.conv_fwd", std::move(a));
}

} // namespace

TEST_CASE("convolution planning: cuDNN descriptors", "[cuda][planning]") {
  Addr at;
  SECTION("2-D NCHW, symmetric pads: cuDNN pads") {
    TensorDesc x = at(DType::F16, {2, 4, 9, 9}),
               w = at(DType::F16, {8, 2, 3, 3}),
               y = at(DType::F16, {2, 8, 5, 5});
    Result<ConvPlan> p = planConv(
        ConvKind::Forward,
        convCall({1, 1, 1, 1}, {{"strides", std::vector<int64_t>{2, 2}},
                                {"groups", int64_t(2)}}),
        {x, w}, {y});
    REQUIRE(p);
    CHECK(p->dataType == DType::F16);
    CHECK(p->xDims == std::vector<int>{2, 4, 9, 9});
    CHECK(p->wDims == std::vector<int>{8, 2, 3, 3});
    CHECK(p->yDims == std::vector<int>{2, 8, 5, 5});
    CHECK(p->pads == std::vector<int>{1, 1});
    CHECK(p->strides == std::vector<int>{2, 2});
    CHECK(p->groups == 2);
    CHECK_FALSE(p->explicitPad);
    CHECK_FALSE(p->epilogue);
    CHECK_FALSE(p->convertIn0);
  }
  SECTION("1-D gets a trailing dim of 1") {
    TensorDesc x = at(DType::F32, {1, 3, 10}), w = at(DType::F32, {4, 3, 3}),
               y = at(DType::F32, {1, 4, 8});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->xDims == std::vector<int>{1, 3, 10, 1});
    CHECK(p->wDims == std::vector<int>{4, 3, 3, 1});
    CHECK(p->yDims == std::vector<int>{1, 4, 8, 1});
    CHECK(p->pads == std::vector<int>{0, 0});
    CHECK(p->strides == std::vector<int>{1, 1});
  }
  SECTION("asymmetric pads pad x explicitly") {
    TensorDesc x = at(DType::F16, {1, 2, 5, 5}),
               w = at(DType::F16, {3, 2, 2, 2}),
               y = at(DType::F16, {1, 3, 5, 5});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0, 1, 1}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->explicitPad);
    CHECK(p->pads == std::vector<int>{0, 0});
    CHECK(p->xDims == std::vector<int>{1, 2, 6, 6});
    CHECK(p->paddedShape == Shape{1, 2, 6, 6});
    CHECK(p->padBytes == 2 * 36 * 2);
    CHECK(p->padBegin == std::vector<int64_t>{0, 0});
  }
  SECTION("bias and relu: the epilogue over channels") {
    TensorDesc x = at(DType::F16, {2, 4, 6, 6}),
               w = at(DType::F16, {8, 4, 3, 3}), b = at(DType::F32, {8}),
               y = at(DType::F16, {2, 8, 4, 4});
    Result<ConvPlan> p = planConv(
        ConvKind::Forward,
        convCall({0, 0, 0, 0}, {{"activation", std::string("relu")}}, true),
        {x, w, b}, {y});
    REQUIRE(p);
    CHECK(p->epilogue);
    CHECK(p->epi.act == kActRelu);
    CHECK(p->epi.biasDtype == 1);
    CHECK(p->epi.geom.outer == 2);
    CHECK(p->epi.geom.c == 8);
    CHECK(p->epi.geom.inner == 16);
    CHECK_FALSE(p->outputToScratch);
  }
  SECTION("NHWC: dims in NCHW order; channels last for the epilogue") {
    TensorDesc x = at(DType::F16, {2, 6, 6, 4}),
               w = at(DType::F16, {8, 3, 3, 4}), b = at(DType::F16, {8}),
               y = at(DType::F16, {2, 4, 4, 8});
    Result<ConvPlan> p = planConv(
        ConvKind::Forward,
        convCall({0, 0, 0, 0}, {{"layout", std::string("nhwc")}}, true),
        {x, w, b}, {y});
    REQUIRE(p);
    CHECK(p->nhwc);
    CHECK(p->xDims == std::vector<int>{2, 4, 6, 6});
    CHECK(p->wDims == std::vector<int>{8, 4, 3, 3});
    CHECK(p->yDims == std::vector<int>{2, 8, 4, 4});
    CHECK(p->epi.geom.c == 8);
    CHECK(p->epi.geom.inner == 1);
    CHECK(p->epi.geom.outer == 32);
  }
  SECTION("an f32 result of f16 inputs computes in f32") {
    TensorDesc x = at(DType::F16, {1, 2, 4, 4}),
               w = at(DType::F16, {3, 2, 3, 3}),
               y = at(DType::F32, {1, 3, 2, 2});
    Result<ConvPlan> p =
        planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w}, {y});
    REQUIRE(p);
    CHECK(p->dataType == DType::F32);
    CHECK(p->convertIn0);
    CHECK(p->convertIn1);
    CHECK(p->in0Bytes == 32 * 4);
    CHECK(p->in1Bytes == 54 * 4);
    CHECK_FALSE(p->outputToScratch);
  }
  SECTION("backward data (ConvTranspose)") {
    // x [N, C, in], w [C, M/g, k]: y = [N, M, (in - 1) * s + k - pads].
    TensorDesc x = at(DType::F16, {1, 4, 3, 3}),
               w = at(DType::F16, {4, 2, 3, 3}),
               y = at(DType::F16, {1, 2, 7, 7});
    PlanCall c = callOf("cudnn.conv_bwd_data",
                        {{"has_bias", int64_t(0)},
                         {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                         {"strides", std::vector<int64_t>{2, 2}}});
    Result<ConvPlan> p = planConv(ConvKind::BackwardData, c, {x, w}, {y});
    REQUIRE(p);
    CHECK(p->xDims == std::vector<int>{1, 2, 7, 7}); // the data gradient
    CHECK(p->yDims == std::vector<int>{1, 4, 3, 3}); // the incoming gradient
    CHECK(p->wDims == std::vector<int>{4, 2, 3, 3});
    CHECK(p->strides == std::vector<int>{2, 2});
    // Output padding of 1 (< stride) is fine.
    TensorDesc y8 = at(DType::F16, {1, 2, 8, 8});
    CHECK(planConv(ConvKind::BackwardData, c, {x, w}, {y8}));
    // Asymmetric pads: the padded gradient, cropped.
    PlanCall asym = c;
    asym.attributes[1].value = std::vector<int64_t>{1, 1, 0, 0};
    TensorDesc y6 = at(DType::F16, {1, 2, 6, 6});
    Result<ConvPlan> q = planConv(ConvKind::BackwardData, asym, {x, w}, {y6});
    REQUIRE(q);
    CHECK(q->explicitPad);
    CHECK(q->paddedShape == Shape{1, 2, 7, 7});
  }
  SECTION("backward filter") {
    TensorDesc x = at(DType::BF16, {2, 4, 6, 6}),
               dy = at(DType::BF16, {2, 8, 4, 4}),
               dw = at(DType::F32, {8, 4, 3, 3});
    PlanCall c =
        callOf("cudnn.conv_bwd_filter", {{"compute_type", int64_t(1)}});
    Result<ConvPlan> p = planConv(ConvKind::BackwardFilter, c, {x, dy}, {dw});
    REQUIRE(p);
    CHECK(p->dataType == DType::F32);
    CHECK(p->convertIn0);
    CHECK(p->convertIn1);
    CHECK(p->xDims == std::vector<int>{2, 4, 6, 6});
    CHECK(p->yDims == std::vector<int>{2, 8, 4, 4});
    CHECK(p->wDims == std::vector<int>{8, 4, 3, 3});
    CHECK(messageOf(planConv(ConvKind::BackwardFilter, c,
                             {x, at(DType::BF16, {2, 8, 5, 5})}, {dw})) ==
          "conv_bwd_filter: dy has shape [2, 8, 5, 5], expected [2, 8, 4, 4]");
  }
  SECTION("errors as the CPU's") {
    TensorDesc x = at(DType::F16, {2, 4, 9, 9}),
               w = at(DType::F16, {8, 4, 3, 3});
    CHECK(messageOf(planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w},
                             {at(DType::F16, {2, 8, 6, 6})})) ==
          "conv: y has shape [2, 8, 6, 6], expected [2, 8, 7, 7]");
    CHECK(messageOf(planConv(ConvKind::Forward, convCall({0, 0}), {x, w},
                             {at(DType::F16, {2, 8, 7, 7})})) ==
          "attribute 'pads' must have 4 values (begins, then ends, for 2 "
          "spatial dims), got 2");
    TensorDesc x4 = at(DType::F16, {1, 1, 3, 3, 3, 3}),
               w4 = at(DType::F16, {1, 1, 1, 1, 1, 1});
    CHECK(messageOf(planConv(ConvKind::Forward,
                             convCall({0, 0, 0, 0, 0, 0, 0, 0}), {x4, w4},
                             {at(DType::F16, {1, 1, 3, 3, 3, 3})})) ==
          "conv: 4 spatial dimensions are not implemented on the GPU (cuDNN: "
          "1 to 3)");
  }
}

TEST_CASE("convolution algorithm cache keys", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F16, {2, 4, 9, 9}), w = at(DType::F16, {8, 4, 3, 3}),
             y = at(DType::F16, {2, 8, 7, 7});
  Result<ConvPlan> p =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}), {x, w}, {y});
  REQUIRE(p);
  // The same shapes elsewhere in memory: the same key.
  Result<ConvPlan> q =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}),
               {at(DType::F16, {2, 4, 9, 9}), at(DType::F16, {8, 4, 3, 3})},
               {at(DType::F16, {2, 8, 7, 7})});
  REQUIRE(q);
  CHECK(convAlgoKey(*p, 0) == convAlgoKey(*q, 0));
  CHECK(convAlgoKey(*p, 0) ==
        "fwd dev0 f16 nchw x2,4,9,9 w8,4,3,3 y2,8,7,7 p0,0 s1,1 d1,1 g1");
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*p, 1));
  Result<ConvPlan> f32 =
      planConv(ConvKind::Forward, convCall({0, 0, 0, 0}),
               {at(DType::F32, {2, 4, 9, 9}), at(DType::F32, {8, 4, 3, 3})},
               {at(DType::F32, {2, 8, 7, 7})});
  REQUIRE(f32);
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*f32, 0));
  Result<ConvPlan> dil = planConv(
      ConvKind::Forward,
      convCall({0, 0, 0, 0}, {{"dilations", std::vector<int64_t>{2, 2}}}),
      {x, w}, {at(DType::F16, {2, 8, 5, 5})});
  REQUIRE(dil);
  CHECK(convAlgoKey(*p, 0) != convAlgoKey(*dil, 0));
}

TEST_CASE("pooling planning", "[cuda][planning]") {
  Addr at;
  auto call = [](const char *mode, bool indices) {
    return callOf("cudnn.pool", {{"has_indices", int64_t(indices)},
                                 {"mode", std::string(mode)},
                                 {"window", std::vector<int64_t>{2, 2}},
                                 {"pads", std::vector<int64_t>{0, 0, 1, 1}},
                                 {"strides", std::vector<int64_t>{2, 2}}});
  };
  TensorDesc x = at(DType::F16, {2, 3, 8, 8});
  SECTION("floor and ceil output sizes, asymmetric pads, indices") {
    Result<PoolPlan> floor =
        planPool(false, call("max", true), {x},
                 {at(DType::F16, {2, 3, 4, 4}), at(DType::I64, {2, 3, 4, 4})});
    REQUIRE(floor);
    CHECK(floor->params.k == 2);
    CHECK(floor->params.padB[0] == 0);
    CHECK(floor->params.padE[0] == 1);
    CHECK(floor->params.outSize == 16);
    CHECK(floor->params.inSize == 64);
    CHECK(floor->params.indices != nullptr);
    Result<PoolPlan> ceil = planPool(false, call("avg_include_pad", false), {x},
                                     {at(DType::F16, {2, 3, 5, 5})});
    REQUIRE(ceil);
    CHECK(ceil->params.countIncludePad == 1);
    CHECK(ceil->params.isMax == 0);
    CHECK(messageOf(planPool(false, call("max", false), {x},
                             {at(DType::F16, {2, 3, 6, 6})})) ==
          "pool: y [2, 3, 6, 6] has 6 outputs along spatial dimension 0, "
          "expected 4 (floor) or 5 (ceil)");
    CHECK(messageOf(planPool(
              false, call("avg", true), {x},
              {at(DType::F16, {2, 3, 4, 4}), at(DType::I64, {2, 3, 4, 4})})) ==
          "indices are only produced by mode 'max', not 'avg'");
  }
  SECTION("the backward's accumulator") {
    PlanCall c = call("max", false);
    c.kind = "cudnn.pool_bwd";
    c.attributes.erase(c.attributes.begin()); // no has_indices
    Result<PoolPlan> p = planPool(true, c, {x, at(DType::F16, {2, 3, 4, 4})},
                                  {at(DType::F16, {2, 3, 8, 8})});
    REQUIRE(p);
    CHECK(p->backward);
    CHECK(p->accType == DType::F32);
    CHECK(p->accBytes == 2 * 3 * 64 * 4);
    TensorDesc x32 = at(DType::F32, {2, 3, 8, 8});
    Result<PoolPlan> q = planPool(true, c, {x32, at(DType::F32, {2, 3, 4, 4})},
                                  {at(DType::F32, {2, 3, 8, 8})});
    REQUIRE(q);
    CHECK(q->accBytes == 0);
  }
}

TEST_CASE("batch norm planning", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F16, {2, 3, 4, 5});
  auto param = [&](DType t) { return at(t, {3}); };
  SECTION("inference: per-channel geometry, any parameter dtype") {
    Result<BatchNormPlan> p =
        planBatchNorm(BatchNormKind::Inference,
                      callOf("cudnn.batch_norm_inference", {{"epsilon", 1e-5}}),
                      {x, param(DType::F32), param(DType::F16),
                       param(DType::BF16), param(DType::F32)},
                      {at(DType::F16, {2, 3, 4, 5})});
    REQUIRE(p);
    CHECK(p->params.geom.outer == 2);
    CHECK(p->params.geom.c == 3);
    CHECK(p->params.geom.inner == 20);
    CHECK(p->scratchBytes == 3 * 3 * sizeof(float));
  }
  SECTION("training: running statistics in place are fine, other overlaps "
          "are not") {
    TensorDesc mean = param(DType::F32), var = param(DType::F32);
    PlanCall c = callOf("cudnn.batch_norm_training",
                        {{"epsilon", 1e-5}, {"momentum", 0.9}});
    Result<BatchNormPlan> p =
        planBatchNorm(BatchNormKind::Training, c,
                      {x, param(DType::F32), param(DType::F32), mean, var},
                      {at(DType::F16, {2, 3, 4, 5}), mean, var});
    REQUIRE(p);
    CHECK(p->params.momentum == Approx(0.9f));
    CHECK(messageOf(planBatchNorm(
              BatchNormKind::Training, c,
              {x, param(DType::F32), param(DType::F32), mean, var},
              {at(DType::F16, {2, 3, 4, 5}), var, mean})) ==
          "batchNormTraining: runningMean overlaps inputVar");
  }
  SECTION("backward: f64 statistics per channel (own kernels)") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Backward, callOf("cudnn.batch_norm_bwd", {}),
        {x, param(DType::F32), at(DType::F16, {2, 3, 4, 5})},
        {at(DType::F16, {2, 3, 4, 5}), param(DType::F32), param(DType::F32)},
        BatchNormImpl::Own);
    REQUIRE(p);
    CHECK_FALSE(p->cudnn.use);
    CHECK(p->scratchBytes == 3 * 4 * sizeof(double));
    CHECK(p->params.epsilon == Approx(1e-5));
  }
}

TEST_CASE("batch norm: cuDNN or the own kernels", "[cuda][planning]") {
  Addr at;
  auto f32 = [&](int64_t c) { return at(DType::F32, {c}); };
  PlanCall inference =
      callOf("cudnn.batch_norm_inference", {{"epsilon", 1e-5}});
  PlanCall training = callOf("cudnn.batch_norm_training",
                             {{"epsilon", 1e-5}, {"momentum", 0.9}});
  PlanCall backward = callOf("cudnn.batch_norm_bwd", {{"epsilon", 1e-5}});
  auto forward = [&](const PlanCall &call, BatchNormKind kind, DType t, Shape s,
                     DType paramType = DType::F32,
                     BatchNormImpl impl = BatchNormImpl::Auto) {
    int64_t c = s[1];
    std::vector<TensorDesc> ops{at(t, s), at(paramType, {c}), f32(c), f32(c),
                                f32(c)};
    std::vector<TensorDesc> res{at(t, s)};
    if (kind == BatchNormKind::Training) {
      res.push_back(ops[3]); // running statistics in place
      res.push_back(ops[4]);
    }
    Result<BatchNormPlan> p = planBatchNorm(kind, call, ops, res, impl);
    REQUIRE(p);
    return *p;
  };

  SECTION("f32 and f16 NCHW: cuDNN, spatial dims folded into [N, C, S, 1]") {
    for (DType t : {DType::F32, DType::F16}) {
      BatchNormPlan p =
          forward(inference, BatchNormKind::Inference, t, {2, 3, 4, 5, 6});
      CHECK(p.cudnn.use);
      CHECK_FALSE(p.cudnn.nhwc);
      CHECK_FALSE(p.cudnn.persistent);
      CHECK(p.cudnn.dtype == t);
      CHECK(p.cudnn.dims == std::array<int32_t, 4>{2, 3, 120, 1});
      CHECK(p.scratchBytes == 0);
    }
    BatchNormPlan rank2 =
        forward(inference, BatchNormKind::Inference, DType::F32, {8, 6});
    CHECK(rank2.cudnn.dims == std::array<int32_t, 4>{8, 6, 1, 1});
  }
  SECTION("training: scratch for the batch mean and unbiased variance") {
    BatchNormPlan p =
        forward(training, BatchNormKind::Training, DType::F16, {4, 3, 5, 5});
    REQUIRE(p.cudnn.use);
    CHECK(p.scratchBytes == 2 * 3 * sizeof(float));
    // NCHW never uses the persistent mode.
    CHECK_FALSE(p.cudnn.persistent);
  }
  SECTION("bf16 on cuDNN too, never persistent") {
    BatchNormPlan bf16 =
        forward(training, BatchNormKind::Training, DType::BF16, {2, 3, 4});
    CHECK(bf16.cudnn.use);
    CHECK(bf16.cudnn.dtype == DType::BF16);
    CHECK_FALSE(bf16.cudnn.persistent);
  }
  SECTION("the own kernels where cuDNN cannot run it") {

    BatchNormPlan halfScale = forward(inference, BatchNormKind::Inference,
                                      DType::F16, {2, 3, 4}, DType::F16);
    CHECK_FALSE(halfScale.cudnn.use);
    CHECK(halfScale.cudnn.whyNot ==
          "scale is f16 (cuDNN's per-channel tensors are f32)");

    BatchNormPlan one =
        forward(training, BatchNormKind::Training, DType::F32, {1, 3, 1});
    CHECK_FALSE(one.cudnn.use);
    CHECK(one.cudnn.whyNot == "one element per channel (no unbiased variance)");
    CHECK(one.scratchBytes == 3 * 3 * sizeof(float));
    // Inference and backward have no running variance: cuDNN runs them.
    CHECK(forward(inference, BatchNormKind::Inference, DType::F32, {1, 3, 1})
              .cudnn.use);

    BatchNormPlan own = forward(inference, BatchNormKind::Inference, DType::F32,
                                {2, 3, 4}, DType::F32, BatchNormImpl::Own);
    CHECK_FALSE(own.cudnn.use);
    CHECK(own.cudnn.whyNot == "the own kernels were asked for");

    TensorDesc x = at(DType::F32, {2, 3, 4});
    Result<BatchNormPlan> inPlace =
        planBatchNorm(BatchNormKind::Inference, inference,
                      {x, f32(3), f32(3), f32(3), f32(3)}, {x});
    REQUIRE(inPlace);
    CHECK_FALSE(inPlace->cudnn.use);
    CHECK(inPlace->cudnn.whyNot == "y is x (in place)");

    Result<BatchNormPlan> backwardF64 = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F64, {2, 3, 4}), f32(3), at(DType::F64, {2, 3, 4})},
        {at(DType::F64, {2, 3, 4}), f32(3), f32(3)});
    REQUIRE(backwardF64);
    CHECK_FALSE(backwardF64->cudnn.use);
    CHECK(backwardF64->cudnn.whyNot ==
          "x is f64 (cuDNN's batch norm: f16, bf16 or f32)");
    CHECK(backwardF64->scratchBytes == 3 * 4 * sizeof(double));

    Result<BatchNormPlan> halfGrad = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {2, 3, 4})},
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {3})});
    REQUIRE(halfGrad);
    CHECK_FALSE(halfGrad->cudnn.use);
    CHECK(halfGrad->cudnn.whyNot ==
          "dbias is f16 (cuDNN's per-channel tensors are f32)");
  }
  SECTION("channels first, a batch beyond cuDNN's limit runs on the own "
          "kernels") {
    BatchNormPlan big =
        forward(inference, BatchNormKind::Inference, DType::F32, {70000, 3});
    CHECK_FALSE(big.cudnn.use);
    CHECK(big.cudnn.whyNot ==
          "a batch of 70000 (cuDNN's batch norm takes up to 65535)");
    CHECK(forward(training, BatchNormKind::Training, DType::F32, {70000, 3})
              .cudnn.use);
  }
  SECTION("backward on cuDNN needs no scratch") {
    Result<BatchNormPlan> p = planBatchNorm(
        BatchNormKind::Backward, backward,
        {at(DType::F16, {2, 3, 4}), f32(3), at(DType::F16, {2, 3, 4})},
        {at(DType::F16, {2, 3, 4}), f32(3), f32(3)});
    REQUIRE(p);
    CHECK(p->cudnn.use);
    CHECK(p->cudnn.dims == std::array<int32_t, 4>{2, 3, 4, 1});
    CHECK(p->scratchBytes == 0);
  }
}

TEST_CASE("indexing, loss and training planning", "[cuda][planning]") {
  Addr at;
  SECTION("gather") {
    Result<GatherParams> p =
        planGather(callOf("kernel.gather", {{"axis", int64_t(-2)}}),
                   {at(DType::F16, {5, 7, 3}), at(DType::I64, {2, 4})},
                   {at(DType::F16, {5, 2, 4, 3})});
    REQUIRE(p);
    CHECK(p->outer == 5);
    CHECK(p->axisDim == 7);
    CHECK(p->n == 8);
    CHECK(p->inner == 3);
    CHECK(p->elemSize == 2);
  }
  SECTION("scatter_nd") {
    TensorDesc data = at(DType::F32, {4, 5, 6});
    PlanCall add =
        callOf("kernel.scatter_nd", {{"reduction", std::string("add")}});
    Result<ScatterNDPlan> p = planScatterND(
        add, {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})}, {data});
    REQUIRE(p);
    CHECK(p->copyBytes == 0); // in place
    CHECK(p->params.k == 2);
    CHECK(p->params.tuples == 3);
    CHECK(p->params.sliceLen == 6);
    CHECK(p->params.strides[0] == 30);
    CHECK(p->params.strides[1] == 6);
    Result<ScatterNDPlan> q = planScatterND(
        add, {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})},
        {at(DType::F32, {4, 5, 6})});
    REQUIRE(q);
    CHECK(q->copyBytes == 480);
    CHECK_FALSE(p->params.ordered); // atomics
    // mul, max, min and add without atomics (8 / 16-bit integers, bool):
    // the updates in tuple order.
    for (const char *r : {"mul", "max", "min"}) {
      INFO(r);
      Result<ScatterNDPlan> o = planScatterND(
          callOf("kernel.scatter_nd", {{"reduction", std::string(r)}}),
          {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})}, {data});
      REQUIRE(o);
      CHECK(o->params.ordered);
    }
    TensorDesc bytes = at(DType::I8, {4, 5, 6});
    Result<ScatterNDPlan> addI8 = planScatterND(
        add, {bytes, at(DType::I64, {3, 2}), at(DType::I8, {3, 6})}, {bytes});
    REQUIRE(addI8);
    CHECK(addI8->params.ordered);
    Result<ScatterNDPlan> none = planScatterND(
        callOf("kernel.scatter_nd", {}),
        {bytes, at(DType::I64, {3, 2}), at(DType::I8, {3, 6})}, {bytes});
    REQUIRE(none);
    CHECK_FALSE(none->params.ordered);
    CHECK(messageOf(planScatterND(
              callOf("kernel.scatter_nd", {{"reduction", std::string("avg")}}),
              {data, at(DType::I32, {3, 2}), at(DType::F32, {3, 6})},
              {data})) == "attribute 'reduction' has an unknown value 'avg'");
  }
  SECTION("losses") {
    PlanCall nll =
        callOf("kernel.nll_loss", {{"has_weight", int64_t(0)},
                                   {"reduction", std::string("mean")},
                                   {"ignore_index", int64_t(-1)}});
    Result<LossParams> p =
        planLoss(LossKind::NllLoss, nll,
                 {at(DType::F32, {4, 10, 3}), at(DType::I64, {4, 3})},
                 {at(DType::F32, {})});
    REQUIRE(p);
    CHECK(p->n == 4);
    CHECK(p->c == 10);
    CHECK(p->inner == 3);
    CHECK(p->reduction == 2);
    CHECK(p->hasIgnore == 1);
    CHECK(p->ignoreIndex == -1);
    PlanCall sce = callOf(
        "kernel.softmax_cross_entropy_grad",
        {{"has_weights", int64_t(0)}, {"reduction", std::string("none")}});
    CHECK(messageOf(planLoss(LossKind::SoftmaxCrossEntropyGrad, sce,
                             {at(DType::F16, {4, 10}), at(DType::I32, {4}),
                              at(DType::F32, {1})},
                             {at(DType::F16, {4, 10})})) ==
          "softmax_cross_entropy_grad: dloss has shape [1], expected [4] "
          "(reduction none)");
  }
  SECTION("unscale, loss scale, optimizers") {
    TensorDesc scale = at(DType::F32, {1}), found = at(DType::F32, {1});
    TensorDesc g1 = at(DType::F16, {10}), u1 = at(DType::F32, {10}),
               g2 = at(DType::F32, {3});
    Result<std::vector<UnscaleParams>> u =
        planUnscale(callOf("kernel.unscale_check_finite", {}), {scale, g1, g2},
                    {found, u1, g2});
    REQUIRE(u);
    REQUIRE(u->size() == 2);
    CHECK((*u)[0].gDtype == 10);
    CHECK((*u)[1].u == g2.ptr<float>()); // in place
    CHECK(messageOf(planUnscale(callOf("kernel.unscale_check_finite", {}),
                                {scale, g1}, {found, at(DType::F16, {10})})) ==
          "u_1 must be f32 with g_1's shape [10], got f16 [10]");
    Result<LossScaleParams> ls = planLossScaleUpdate(
        callOf("kernel.loss_scale_update", {{"growth_interval", int64_t(3)}}),
        {found}, {scale, at(DType::I64, {1})});
    REQUIRE(ls);
    CHECK(ls->growthInterval == 3);
    CHECK(ls->growthFactor == 2.0);
    TensorDesc param = at(DType::F32, {10}), grad = at(DType::F32, {10}),
               step = at(DType::I64, {1});
    PlanCall sgd =
        callOf("kernel.sgd_step", {{"has_found_inf", int64_t(1)},
                                   {"has_momentum_buffer", int64_t(0)},
                                   {"lr", 0.1},
                                   {"momentum", 0.9}});
    CHECK(
        messageOf(planOptimizer(false, sgd, {grad, found}, {param, step})) ==
        "momentum 0.900000 needs a momentum_buffer (has_momentum_buffer = 1)");
    PlanCall adam = callOf("kernel.adam_step", {{"has_found_inf", int64_t(0)}});
    TensorDesc m = at(DType::F32, {10}), v = at(DType::F32, {10});
    Result<OptimizerParams> a =
        planOptimizer(true, adam, {grad}, {param, m, v, step});
    REQUIRE(a);
    CHECK(a->kind == 1);
    CHECK(a->lr == 1e-3);
    CHECK(a->foundInf == nullptr);
    CHECK(a->n == 10);
  }
}

TEST_CASE("checkPlanForCuda lists the calls the GPU does not implement",
          "[cuda][planning]") {
  Plan plan;
  plan.arenaSize = 4096;
  plan.buffers.push_back({0, DType::F32, {4}, BufferStorage::Arena, 0, 0, "x"});
  plan.buffers.push_back(
      {1, DType::F32, {4}, BufferStorage::Arena, 256, 0, "y"});
  plan.buffers.push_back(
      {2, DType::F32, {2}, BufferStorage::Arena, 512, 0, "v"});
  plan.buffers.push_back(
      {3, DType::I64, {2}, BufferStorage::Arena, 768, 0, "i"});
  plan.inputs.push_back({"x", 0, DType::F32, {4}});
  plan.outputs.push_back({"y", 1, DType::F32, {4}});
  PlanCall relu;
  relu.kind = "kernel.elementwise";
  relu.operands = {0};
  relu.results = {1};
  relu.attributes = {{"fn", std::string("relu")}};
  relu.location = "Relu_0";
  plan.calls.push_back(relu);
  REQUIRE(checkPlanForCuda(plan, "p.mpplan"));

  // Every CPU kind has a GPU implementation: kinds of a newer plan format.
  PlanCall future;
  future.kind = "kernel.future_call";
  future.operands = {1};
  future.results = {2, 3};
  future.location = "Future_1";
  plan.calls.push_back(future);
  PlanCall other;
  other.kind = "cudnn.future_call";
  other.operands = {0};
  other.results = {1};
  plan.calls.push_back(other);
  Status s = checkPlanForCuda(plan, "p.mpplan");
  REQUIRE_FALSE(s);
  CHECK(s.message() ==
        "p.mpplan: the CUDA backend does not implement 2 calls: call #1 "
        "(kernel.future_call at node 'Future_1'), call #2 "
        "(cudnn.future_call)");

  plan.calls.resize(1);
  plan.calls[0].attributes = {{"fn", std::string("sqrt")}};
  plan.buffers[1].dtype = DType::F16;
  plan.outputs[0].dtype = DType::F16;
  Status t = checkPlanForCuda(plan, "p.mpplan");
  REQUIRE_FALSE(t);
  CHECK(t.message() == "p.mpplan: call #0 (kernel.elementwise at node "
                       "'Relu_0'): elementwise sqrt: y has dtype f16; "
                       "expected f32");
}

TEST_CASE("normalization planning: layer norm, instance norm, LRN",
          "[cuda][planning]") {
  Addr at;
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

TEST_CASE("data movement and indexing planning: trilu, tile, pad, "
          "gather_elements, gather_nd, scatter_elements, resize",
          "[cuda][planning]") {
  Addr at;
  SECTION("trilu") {
    TensorDesc x = at(DType::I8, {2, 3, 4});
    Result<TriluParams> p = planTrilu(
        callOf("kernel.trilu", {{"upper", int64_t(0)}, {"k", int64_t(-100)}}),
        {x}, {x});
    REQUIRE(p);
    CHECK(p->rows == 3);
    CHECK(p->cols == 4);
    CHECK(p->k == -8); // clamped to -(rows + cols + 1)
    CHECK(p->upper == 0);
    CHECK(p->elemSize == 1);
    CHECK(p->n == 24);
    CHECK(messageOf(planTrilu(callOf("kernel.trilu", {}), {at(DType::F32, {4})},
                              {at(DType::F32, {4})})) ==
          "trilu: x needs rank >= 2, got [4]");
  }
  SECTION("tile") {
    Result<TileParams> p =
        planTile(callOf("kernel.tile", {}), {at(DType::F64, {2, 3})},
                 {at(DType::F64, {4, 9})});
    REQUIRE(p);
    CHECK(p->rank == 2);
    CHECK(p->n == 36);
    CHECK(p->xDims[1] == 3);
    CHECK(p->yDims[1] == 9);
    CHECK(p->xStrides[0] == 3);
    CHECK(
        messageOf(planTile(callOf("kernel.tile", {}), {at(DType::F64, {2, 3})},
                           {at(DType::F64, {4, 8})})) ==
        "tile: y [4, 8] is not x [2, 3] repeated a whole number of times "
        "along dim 1");
  }
  SECTION("pad") {
    TensorDesc x = at(DType::F16, {3, 5});
    Result<PadParams> p = planPad(
        callOf("kernel.pad", {{"mode", std::string("reflect")},
                              {"pads", std::vector<int64_t>{1, -1, 2, 3}}}),
        {x}, {at(DType::F16, {6, 7})});
    REQUIRE(p);
    CHECK(p->mode == kPadReflect);
    CHECK(p->lo[0] == 0);
    CHECK(p->len[0] == 3);
    CHECK(p->before[0] == 1);
    CHECK(p->lo[1] == 1); // cropped by 1 at the start
    CHECK(p->len[1] == 4);
    CHECK(p->before[1] == 0);
    CHECK(p->xStrides[0] == 5);
    Result<PadParams> c = planPad(
        callOf("kernel.pad",
               {{"pads", std::vector<int64_t>{0, 1, 0, 1}}, {"value", 1.5}}),
        {x}, {at(DType::F16, {3, 7})});
    REQUIRE(c);
    CHECK(c->mode == kPadConstant);
    CHECK(c->constant == 0x3E00); // 1.5 in f16
    CHECK(messageOf(planPad(
              callOf("kernel.pad", {{"pads", std::vector<int64_t>{0, 0, 0, 0}},
                                    {"value", 300.0}}),
              {at(DType::U8, {2, 2})}, {at(DType::U8, {2, 2})})) ==
          "pad: the constant 300.000000 does not fit dtype ui8");
    CHECK(
        messageOf(planPad(
            callOf("kernel.pad", {{"mode", std::string("edge")},
                                  {"pads", std::vector<int64_t>{0, -5, 0, 1}}}),
            {x}, {at(DType::F16, {3, 1})})) ==
        "pad: dim 1 of x [3, 5] is empty after cropping; only constant mode "
        "can pad it");
    CHECK(messageOf(planPad(
              callOf("kernel.pad", {{"mode", std::string("mirror")},
                                    {"pads", std::vector<int64_t>{0, 0}}}),
              {x}, {x})) == "attribute 'mode' has an unknown value 'mirror'");
  }
  SECTION("gather_elements, gather_nd") {
    TensorDesc data = at(DType::F32, {4, 5, 6});
    Result<ElementsParams> g = planGatherElements(
        callOf("kernel.gather_elements", {{"axis", int64_t(-2)}}),
        {data, at(DType::I32, {2, 7, 3})}, {at(DType::F32, {2, 7, 3})});
    REQUIRE(g);
    CHECK(g->axis == 1);
    CHECK(g->axisDim == 5);
    CHECK(g->n == 42);
    CHECK(g->dims[1] == 7);
    CHECK(g->dataStrides[0] == 30);
    CHECK(messageOf(planGatherElements(callOf("kernel.gather_elements", {}),
                                       {data, at(DType::I32, {2, 7, 3})},
                                       {at(DType::F32, {2, 7, 3})})) ==
          "gather_elements: indices [2, 7, 3] are larger than data [4, 5, 6] "
          "in dim 1");
    Result<GatherNDParams> n = planGatherND(
        callOf("kernel.gather_nd", {{"batch_dims", int64_t(1)}}),
        {data, at(DType::I64, {4, 3, 1})}, {at(DType::F32, {4, 3, 6})});
    REQUIRE(n);
    CHECK(n->k == 1);
    CHECK(n->sliceLen == 6);
    CHECK(n->perBatch == 3);
    CHECK(n->batchStride == 30);
    CHECK(n->dims[0] == 5);
    CHECK(n->strides[0] == 6);
    CHECK(n->n == 72);
    CHECK(messageOf(planGatherND(callOf("kernel.gather_nd", {}),
                                 {data, at(DType::I64, {3, 2})},
                                 {at(DType::F32, {3, 5})})) ==
          "gather_nd: y [3, 5] should be [3, 6]");
  }
  SECTION("scatter_elements") {
    TensorDesc data = at(DType::I32, {3, 4});
    PlanCall mul =
        callOf("kernel.scatter_elements",
               {{"axis", int64_t(1)}, {"reduction", std::string("mul")}});
    Result<ScatterElementsPlan> p = planScatterElements(
        mul, {data, at(DType::I64, {2, 5}), at(DType::I32, {2, 5})}, {data});
    REQUIRE(p);
    CHECK(p->copyBytes == 0); // in place
    CHECK(p->params.n == 2);  // lines along axis 1
    CHECK(p->params.reduction == kSeMul);
    CHECK(p->params.dims[1] == 5);
    Result<ScatterElementsPlan> q = planScatterElements(
        mul, {data, at(DType::I64, {2, 5}), at(DType::I32, {2, 5})},
        {at(DType::I32, {3, 4})});
    REQUIRE(q);
    CHECK(q->copyBytes == 48);
    CHECK(messageOf(planScatterElements(
              mul, {data, at(DType::I64, {2, 5}), at(DType::I32, {2, 4})},
              {data})) ==
          "scatter_elements: updates [2, 4] must have the shape of indices "
          "[2, 5]");
    CHECK(messageOf(planScatterElements(
              callOf("kernel.scatter_elements",
                     {{"reduction", std::string("avg")}}),
              {data, at(DType::I64, {2, 4}), at(DType::I32, {2, 4})},
              {data})) == "attribute 'reduction' has an unknown value 'avg'");
  }
  SECTION("resize") {
    PlanCall lin = callOf(
        "kernel.resize",
        {{"mode", std::string("linear")},
         {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
         {"scales", std::vector<double>{1, 1, 2, 1.5}},
         {"roi", std::vector<double>{0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8}},
         {"extrapolation_value", -2.0}});
    Result<ResizeParams> p = planResize(lin, {at(DType::BF16, {1, 2, 4, 4})},
                                        {at(DType::BF16, {1, 2, 8, 6})});
    REQUIRE(p);
    CHECK(p->rank == 4);
    CHECK(p->mode == 1);
    CHECK(p->transform == 4);
    CHECK(p->scales[3] == 1.5);
    CHECK(p->roiStart[2] == 0.1);
    CHECK(p->roiEnd[3] == 0.8);
    CHECK(p->extrapolation == -2.0);
    CHECK(p->xStrides[1] == 16);
    CHECK(p->n == 96);
    CHECK(messageOf(planResize(lin, {at(DType::I32, {1, 2, 4, 4})},
                               {at(DType::I32, {1, 2, 8, 6})})) ==
          "resize: linear and cubic modes need f32, f16, bf16 or f64 data, "
          "not i32");
    PlanCall nearest = callOf(
        "kernel.resize",
        {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
         {"scales", std::vector<double>{2}},
         {"roi", std::vector<double>{0.2, 0.8}},
         {"extrapolation_value", -3.0}});
    Result<ResizeParams> q =
        planResize(nearest, {at(DType::I16, {5})}, {at(DType::I16, {10})});
    REQUIRE(q);
    CHECK(q->extrapolationBits == uint64_t(int64_t(-3)));
    CHECK(messageOf(planResize(nearest, {at(DType::U8, {5})},
                               {at(DType::U8, {10})})) ==
          "resize: extrapolation_value -3.000000 does not fit dtype ui8");
    CHECK(messageOf(planResize(callOf("kernel.resize", {}),
                               {at(DType::U8, {5})}, {at(DType::U8, {10})})) ==
          "attribute 'scales' is missing");
  }
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
