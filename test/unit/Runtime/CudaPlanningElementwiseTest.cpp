//===- CudaPlanningElementwiseTest.cpp - elementwise and copies -----------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// broadcast loops, kernel.elementwise, and the casts, copies, transposes and
// window copies.
//
//===----------------------------------------------------------------------===//
#include "CudaPlanningTestSupport.h"

#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/CUDA/CudaPlanning.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

using namespace mp::rt;
using namespace mp::rt::cuda;
using mp::rt::test::Addr;
using mp::rt::test::callOf;
using mp::rt::test::messageOf;

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
    CHECK(shr->op == kEwBitShiftRight);
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

TEST_CASE("each elementwise function takes the dtypes ElementwiseFunctions.def "
          "lists, on the CPU and on the GPU",
          "[cuda][planning][cpu]") {
  using cpu::ElementwiseDtypes;
  using cpu::ElementwiseKind;
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                          DType::I8,  DType::I32, DType::I64,  DType::U8,
                          DType::U32, DType::U64, DType::Bool};
  for (const cpu::ElementwiseFnInfo &info : cpu::kElementwiseFnInfo) {
    for (DType t : dtypes) {
      std::string name(info.name);
      INFO(name << " on " << dtypeName(t));
      bool isUnsigned = t == DType::U8 || t == DType::U32 || t == DType::U64;
      bool expected = false;
      switch (info.dtypes) {
      case ElementwiseDtypes::Floats:
        expected = isFloat(t);
        break;
      case ElementwiseDtypes::Numeric:
        // neg and relu have no unsigned form (the .def's comments say so).
        expected = t != DType::Bool &&
                   !(isUnsigned && (info.fn == cpu::ElementwiseFn::Neg ||
                                    info.fn == cpu::ElementwiseFn::Relu));
        break;
      case ElementwiseDtypes::Integers:
        expected = isUnsigned;
        break;
      case ElementwiseDtypes::Ints:
        expected = t != DType::Bool && !isFloat(t);
        break;
      case ElementwiseDtypes::Bool:
        expected = t == DType::Bool;
        break;
      case ElementwiseDtypes::Any:
        expected = true;
        break;
      }
      if (info.kind == ElementwiseKind::Compare && t == DType::Bool)
        expected = true;

      // One element per tensor; variadic functions get two inputs.
      size_t n = info.arity() ? info.arity() : 2;
      std::vector<DType> inDtypes(n, t);
      if (info.kind == ElementwiseKind::Where)
        inDtypes[0] = DType::Bool;
      DType yDtype = info.boolResult() ? DType::Bool : t;
      std::vector<uint64_t> storage(n + 1, 0);
      std::vector<TensorView> views;
      Addr at;
      std::vector<TensorDesc> descs;
      for (size_t k = 0; k < n; ++k) {
        views.push_back(TensorView{inDtypes[k], {1}, &storage[k]});
        descs.push_back(at(inDtypes[k], {1}));
      }
      TensorView y{yDtype, {1}, &storage[n]};
      Status onCpu = cpu::elementwise(info.fn, views, y);
      CHECK(static_cast<bool>(onCpu) == expected);
      Result<EwParams> onGpu =
          planElementwise(callOf("kernel.elementwise", {{"fn", name}}), descs,
                          {at(yDtype, {1})});
      CHECK(static_cast<bool>(onGpu) == expected);
      if (onGpu) {
        CHECK(onGpu->op == static_cast<int32_t>(info.fn));
      } else {
        CHECK(onCpu.message() == onGpu.message());
      }
    }
  }
}

TEST_CASE("cast, copy, transpose and window copies", "[cuda][planning]") {
  Addr at;
  TensorDesc x = at(DType::F32, {2, 3}), y = at(DType::BF16, {6});
  PlanCall call;
  call.kind = "kernel.cast";
  Result<CastParams> c = planCast(call, x, y);
  REQUIRE(c);
  CHECK(c->n == 6);
  CHECK(c->inDtype == 1);
  CHECK(c->outDtype == 16);
  CHECK(c->saturate);
  CHECK(messageOf(planCast(call, x, at(DType::F16, {5}))) ==
        "cast: x [2, 3] and y [5] have different numbers of elements");
  // To float8, without saturation (ONNX Cast's saturate = 0).
  call.attributes.push_back({"saturate", int64_t(0)});
  Result<CastParams> f8 = planCast(call, x, at(DType::F8E4M3FN, {6}));
  REQUIRE(f8);
  CHECK(f8->outDtype == 17);
  CHECK_FALSE(f8->saturate);

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

TEST_CASE("fused elementwise planning", "[cuda][planning][fused]") {
  Addr at;
  auto program = [](const char *text) {
    return callOf("kernel.fused_elementwise", {{"program", std::string(text)}});
  };
  SECTION("steps, their arguments and parameters") {
    TensorDesc x = at(DType::BF16, {4, 8}), bias = at(DType::F32, {8}),
               y = at(DType::F16, {4, 8});
    Result<FusedEwParams> p = planFusedElementwise(
        program("add(x0, x1); sigmoid(t0); mul(x0, t1); clip(t2) alpha=-1 "
                "beta=6; sum(t3, x1, t0)"),
        {x, bias}, {y});
    INFO(messageOf(p));
    REQUIRE(p);
    CHECK(p->numSteps == 5);
    CHECK(p->io.numInputs == 2);
    CHECK(p->io.n == 32);
    CHECK(p->io.contiguous == 0);
    CHECK(p->io.inDtype[0] == static_cast<int32_t>(DType::BF16));
    CHECK(p->io.inDtype[1] == static_cast<int32_t>(DType::F32));
    CHECK(p->io.outDtype == static_cast<int32_t>(DType::F16));
    CHECK(p->io.out == y.ptr<void>());
    CHECK(p->steps[0].op == kEwAdd);
    CHECK(p->steps[0].args[0] == 0);
    CHECK(p->steps[0].args[1] == 1);
    CHECK(p->steps[1].op == kEwSigmoid);
    CHECK(p->steps[1].args[0] == kMaxEwInputs + 0);
    CHECK(p->steps[3].op == kEwClip1);
    CHECK(p->steps[3].alpha == -1.f);
    CHECK(p->steps[3].beta == 6.f);
    CHECK(p->steps[4].op == kEwSum);
    CHECK(p->steps[4].numArgs == 3);
    CHECK(p->steps[4].args[2] == kMaxEwInputs + 0);
  }
  SECTION("defaults of alpha and beta; a clip of one value spans all floats") {
    TensorDesc x = at(DType::F32, {16});
    Result<FusedEwParams> p = planFusedElementwise(
        program("leaky_relu(x0); clip(t0)"), {x}, {at(DType::F32, {16})});
    REQUIRE(p);
    CHECK(p->io.contiguous == 1);
    CHECK(p->steps[0].alpha == 0.01f);
    CHECK(p->steps[1].alpha == -std::numeric_limits<float>::infinity());
  }
  SECTION("errors") {
    TensorDesc x = at(DType::F32, {4}), y = at(DType::F32, {4});
    CHECK(messageOf(planFusedElementwise(program("neg(x0)"),
                                         {at(DType::I32, {4})}, {y})) ==
          "fused_elementwise: input 0 is i32 (f16, bf16 or f32)");
    CHECK(messageOf(planFusedElementwise(program("neg(x0)"), {x},
                                         {at(DType::F64, {4})})) ==
          "fused_elementwise: y is f64 (f16, bf16 or f32)");
    CHECK(messageOf(planFusedElementwise(program("neg(x1)"), {x}, {y})) ==
          "program 'neg(x1)': step 0: 'x1' is not an input of the call");
    CHECK(messageOf(planFusedElementwise(program("neg(x0)"),
                                         {at(DType::F32, {5})}, {y}))
              .find("does not broadcast") != std::string::npos);
  }
}
