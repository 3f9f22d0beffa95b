//===- CudaPlanningMatmulTest.cpp - cublaslt.matmul -----------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// the cuBLASLt row-major mapping and the epilogue choice.
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
using mp::rt::test::callOf;
using mp::rt::test::messageOf;

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
  SECTION("activations other than relu run in the epilogue kernel") {
    TensorDesc d = at(DType::F16, {4, 6});
    const std::pair<const char *, EpilogueAct> acts[] = {
        {"gelu", kActGelu}, {"gelu_tanh", kActGeluTanh},
        {"silu", kActSilu}, {"sigmoid", kActSigmoid},
        {"tanh", kActTanh}, {"hard_swish", kActHardSwish}};
    for (auto [name, act] : acts) {
      INFO(name);
      Result<MatmulPlan> p = planMatmul(
          matmulCall({{"epilogue", std::string(name)}}), {a, b}, {d});
      REQUIRE(p);
      CHECK(p->staged);
      CHECK_FALSE(p->fusedRelu);
      CHECK(p->act == act);
    }
    Result<MatmulPlan> clip = planMatmul(
        matmulCall({{"epilogue", std::string("clip")}}), {a, b}, {d});
    REQUIRE_FALSE(clip);
    CHECK_THAT(clip.status().message(), Catch::Contains("unknown value"));
  }
  SECTION("activation gradients run in the epilogue kernel, reading aux") {
    const std::pair<const char *, EpilogueAct> grads[] = {
        {"relu_grad", kActReluGrad},
        {"gelu_grad", kActGeluGrad},
        {"gelu_tanh_grad", kActGeluTanhGrad}};
    for (auto [name, act] : grads) {
      INFO(name);
      TensorDesc d = at(DType::F16, {4, 6}), aux = at(DType::F16, {4, 6});
      PlanCall call = matmulCall(
          {{"epilogue", std::string(name)}, {"has_aux", int64_t(1)}});
      Result<MatmulPlan> p = planMatmul(call, {a, b, aux}, {d});
      REQUIRE(p);
      CHECK(p->staged);
      CHECK(p->act == act);
      CHECK(p->epilogue.act == act);
      CHECK(p->epilogue.aux == aux.ptr<const void>());
      CHECK(p->epilogue.auxDtype == 10);
      // Without aux, or with aux of another shape: refused.
      Result<MatmulPlan> missing = planMatmul(
          matmulCall({{"epilogue", std::string(name)}}), {a, b}, {d});
      REQUIRE_FALSE(missing);
      CHECK_THAT(missing.status().message(), Catch::Contains("needs aux"));
      TensorDesc wrong = at(DType::F16, {6, 4});
      REQUIRE_FALSE(planMatmul(call, {a, b, wrong}, {d}));
    }
  }
  SECTION("an f32 product narrowed to f16 is rounded by the epilogue") {
    TensorDesc a32 = at(DType::F32, {4, 8}), b32 = at(DType::F32, {8, 6}),
               d = at(DType::F16, {4, 6});
    Result<MatmulPlan> p = planMatmul(matmulCall(), {a32, b32}, {d});
    REQUIRE(p);
    CHECK(p->staged);
    CHECK(p->stagedBytes == 4 * 6 * 4);
    Result<MatmulPlan> wide =
        planMatmul(matmulCall(), {a, b}, {at(DType::F32, {4, 6})});
    REQUIRE(wide);
    CHECK_FALSE(wide->staged);
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

TEST_CASE("matmul planning: bias_grad sums op(B)'s rows after the GEMM",
          "[cuda][planning]") {
  Addr at;
  // dW = X^T dY with X [64, 24], dY [64, 12]: the sums of dY's 64 rows.
  TensorDesc x = at(DType::BF16, {64, 24}), dy = at(DType::BF16, {64, 12}),
             dw = at(DType::BF16, {24, 12}), grad = at(DType::BF16, {1, 1, 12});
  PlanCall call =
      matmulCall({{"trans_a", int64_t(1)}, {"has_bias_grad", int64_t(1)}});
  Result<MatmulPlan> p = planMatmul(call, {x, dy}, {dw, grad});
  REQUIRE(p);
  REQUIRE(p->biasGrad);
  const ReduceParams &r = *p->biasGrad;
  CHECK(r.op == kRedSum);
  CHECK(r.ySize == 12);
  CHECK(r.count == 64);
  CHECK(r.in == dy.ptr<const void>());
  CHECK(r.out == grad.ptr<void>());
  // dW = dY^T X: the sums of op(A) = dY^T over K, dY's 64 rows.
  Result<MatmulPlan> ofA =
      planMatmul(matmulCall({{"trans_a", int64_t(1)},
                             {"has_bias_grad", int64_t(1)},
                             {"bias_grad_of_a", int64_t(1)}}),
                 {dy, x}, {at(DType::BF16, {12, 24}), grad});
  REQUIRE(ofA);
  REQUIRE(ofA->biasGrad);
  CHECK(ofA->biasGrad->ySize == 12);
  CHECK(ofA->biasGrad->count == 64);
  CHECK(ofA->biasGrad->in == dy.ptr<const void>());
  // No bias_grad: none planned (and plans before format 1.8 lack the
  // attribute).
  Result<MatmulPlan> plain =
      planMatmul(matmulCall({{"trans_a", int64_t(1)}}), {x, dy}, {dw});
  REQUIRE(plain);
  CHECK_FALSE(plain->biasGrad);
  // The CPU's rules: N sums, B of rank 2, one more result.
  CHECK(messageOf(planMatmul(call, {x, dy}, {dw, at(DType::BF16, {24})}))
            .find("bias_grad [24] must hold the 12 sums over K") !=
        std::string::npos);
  CHECK(messageOf(planMatmul(call, {x, dy}, {dw})).find("result") !=
        std::string::npos);
  TensorDesc x3 = at(DType::BF16, {2, 32, 24}),
             dy3 = at(DType::BF16, {2, 32, 12}),
             dw3 = at(DType::BF16, {2, 24, 12});
  CHECK(messageOf(planMatmul(call, {x3, dy3}, {dw3, grad}))
            .find("must have rank 2") != std::string::npos);
}
