//===- CudaPlanningDataTest.cpp - trilu, pad, resize ----------------------===//
//
// The CUDA backend's planning (mp/Runtime/CUDA/CudaPlanning.h) runs without
// a GPU and without the CUDA toolkit: these tests run in every build. Here:
// trilu, tile, pad, gather_elements / _nd, scatter_elements and resize.
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
