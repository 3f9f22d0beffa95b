// Tests of the CPU Resize kernel (mp/Runtime/CPU/DataKernels.h) and its
// plan call kernel.resize.
//
// Expected values: the examples of ONNX's Resize documentation (computed by
// its reference implementation, onnx/reference/ops/op_resize.py), ONNX's
// backend test data (every test_resize_* case of the corpus, read with
// TensorIO when it is installed), and a straightforward reference written
// here for nearest mode, which must copy exactly.
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/TensorIO.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#ifndef MP_ONNX_TESTDATA
#define MP_ONNX_TESTDATA "/usr/share/libonnx-testdata/data"
#endif

using namespace mp::rt;
using namespace mp::rt::cpu;
namespace fs = std::filesystem;

namespace {

HostTensor f32Tensor(Shape s, const std::vector<float> &v) {
  HostTensor t(DType::F32, std::move(s));
  REQUIRE(static_cast<int64_t>(v.size()) == t.numElements());
  std::memcpy(t.data(), v.data(), v.size() * sizeof(float));
  return t;
}

HostTensor iota16(Shape s) { // 1, 2, ..., n
  std::vector<float> v;
  for (int64_t i = 0; i < numElements(s); ++i)
    v.push_back(static_cast<float>(i + 1));
  return f32Tensor(std::move(s), v);
}

/// Resizes x (f32) into a fresh y of shape ys and returns y's values.
std::vector<float> run(const HostTensor &x, Shape ys, const ResizeOptions &o) {
  HostTensor y(DType::F32, std::move(ys));
  Status s = resize(x.view(), y.view(), o);
  INFO(s.message());
  REQUIRE(s.isOk());
  const float *p = y.as<float>();
  return std::vector<float>(p, p + y.numElements());
}

void checkClose(const std::vector<float> &got, const std::vector<float> &want,
                double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))) &&
        ++mismatches <= 5)
      FAIL_CHECK("element " << i << ": " << got[i] << ", expected "
                            << want[i]);
  CHECK(mismatches == 0);
}

ResizeOptions opts(ResizeMode mode, CoordinateTransform t,
                   std::vector<double> scales) {
  ResizeOptions o;
  o.mode = mode;
  o.coordinateTransform = t;
  o.scales = std::move(scales);
  return o;
}

} // namespace

TEST_CASE("resize: ONNX documentation examples", "[cpu][resize]") {
  using M = ResizeMode;
  using C = CoordinateTransform;
  HostTensor x22 = f32Tensor({1, 1, 2, 2}, {1, 2, 3, 4});
  HostTensor x24 = f32Tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor x44 = iota16({1, 1, 4, 4});

  SECTION("upsample nearest") {
    checkClose(run(x22, {1, 1, 4, 6},
                   opts(M::Nearest, C::HalfPixel, {1, 1, 2, 3})),
               {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  }
  SECTION("downsample nearest") {
    checkClose(run(x24, {1, 1, 1, 2},
                   opts(M::Nearest, C::HalfPixel, {1, 1, 0.6, 0.6})),
               {1, 3});
  }
  SECTION("upsample linear") {
    checkClose(run(x22, {1, 1, 4, 4},
                   opts(M::Linear, C::HalfPixel, {1, 1, 2, 2})),
               {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5,
                3, 3.25, 3.75, 4});
  }
  SECTION("downsample linear") {
    checkClose(run(x24, {1, 1, 1, 2},
                   opts(M::Linear, C::HalfPixel, {1, 1, 0.6, 0.6})),
               {2.6666667f, 4.3333333f});
  }
  SECTION("downsample linear align_corners") {
    checkClose(run(x24, {1, 1, 1, 2},
                   opts(M::Linear, C::AlignCorners, {1, 1, 0.6, 0.6})),
               {1, 3.142857f});
  }
  SECTION("downsample cubic align_corners") {
    checkClose(run(x44, {1, 1, 3, 3},
                   opts(M::Cubic, C::AlignCorners, {1, 1, 0.8, 0.8})),
               {1, 2.39519159f, 3.79038317f, 6.58076634f, 7.97595793f,
                9.37114951f, 12.16153268f, 13.55672427f, 14.95191585f});
  }
  SECTION("downsample cubic, A = -0.5, exclude_outside") {
    ResizeOptions o = opts(M::Cubic, C::HalfPixel, {1, 1, 0.8, 0.8});
    o.cubicCoeffA = -0.5;
    o.excludeOutside = true;
    checkClose(run(x44, {1, 1, 3, 3}, o),
               {1.36812675f, 2.6695014f, 4.0133367f, 6.57362535f, 7.875f,
                9.2188353f, 11.94896657f, 13.25034122f, 14.59417652f});
  }
  SECTION("tf_crop_and_resize with extrapolation") {
    ResizeOptions o = opts(M::Linear, C::TfCropAndResize,
                           {1, 1, 3.0 / 4, 3.0 / 4});
    o.roi = {0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8};
    checkClose(run(x44, {1, 1, 3, 3}, o),
               {7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10, 10.3f, 10.6f});
    // A box that reaches outside the input: those points get the value.
    o.roi = {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7};
    o.extrapolationValue = 10;
    std::vector<float> y = run(x44, {1, 1, 3, 3}, o);
    CHECK(y[8] == 10.0f); // bottom right: row 4.2 > 3
    CHECK(y[2] == 10.0f); // column 5.1 > 3
    CHECK(y[0] == Approx(7.6f));
  }
}

TEST_CASE("resize nearest copies exactly, for every dtype",
          "[cpu][resize]") {
  // Reference: the ONNX rule written directly (half_pixel,
  // round_prefer_floor): x = (o + 0.5) / scale - 0.5, rounded to the nearest
  // index, halves down, clamped.
  const Shape xs = {2, 3, 5}, ys = {2, 7, 3};
  const std::vector<double> scales = {1.0, 7.0 / 3, 0.6};
  auto source = [&](int64_t o, size_t d) {
    double x = (o + 0.5) / scales[d] - 0.5;
    double f = std::floor(x);
    int64_t i = static_cast<int64_t>(x - f > 0.5 ? f + 1 : f);
    return std::min<int64_t>(std::max<int64_t>(i, 0), xs[d] - 1);
  };
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::U8, DType::Bool,
                  DType::F64}) {
    INFO(dtypeName(t));
    HostTensor x(t, xs);
    const size_t es = byteSize(t);
    auto *xb = static_cast<unsigned char *>(x.data());
    for (int64_t i = 0; i < x.numElements(); ++i) {
      uint64_t v = t == DType::Bool ? i % 2 : (t == DType::F32 ? 0 : i + 1);
      if (t == DType::F32) {
        float f = static_cast<float>(i + 1);
        std::memcpy(&v, &f, 4);
      } else if (t == DType::F16) {
        v = toHalf(static_cast<float>(i + 1)).bits;
      } else if (t == DType::F64) {
        double dv = i + 1;
        std::memcpy(&v, &dv, 8);
      }
      std::memcpy(xb + i * es, &v, es);
    }
    HostTensor y(t, ys);
    ResizeOptions o;
    o.scales = scales;
    REQUIRE(resize(x.view(), y.view(), o).isOk());
    const auto *yb = static_cast<const unsigned char *>(y.data());
    int mismatches = 0;
    for (int64_t a = 0; a < ys[0]; ++a)
      for (int64_t b = 0; b < ys[1]; ++b)
        for (int64_t c = 0; c < ys[2]; ++c) {
          int64_t yi = (a * ys[1] + b) * ys[2] + c;
          int64_t xi = (source(a, 0) * xs[1] + source(b, 1)) * xs[2] +
                       source(c, 2);
          if (std::memcmp(yb + yi * es, xb + xi * es, es) != 0)
            ++mismatches;
        }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("resize: f16, bf16 and f64 agree with f32", "[cpu][resize]") {
  HostTensor x = iota16({1, 2, 3, 4});
  ResizeOptions o = opts(ResizeMode::Cubic, CoordinateTransform::HalfPixel,
                         {1, 1, 5.0 / 3, 1.5});
  std::vector<float> ref = run(x, {1, 2, 5, 6}, o);
  for (DType t : {DType::F16, DType::BF16, DType::F64}) {
    INFO(dtypeName(t));
    HostTensor xt(t, x.shape()), yt(t, {1, 2, 5, 6});
    for (int64_t i = 0; i < x.numElements(); ++i) {
      float v = x.as<float>()[i];
      if (t == DType::F16)
        xt.as<Half>()[i] = toHalf(v);
      else if (t == DType::BF16)
        xt.as<BFloat16>()[i] = toBFloat16(v);
      else
        xt.as<double>()[i] = v;
    }
    REQUIRE(resize(xt.view(), yt.view(), o).isOk());
    for (size_t i = 0; i < ref.size(); ++i) {
      if (t == DType::F16)
        CHECK(yt.as<Half>()[i].bits == toHalf(ref[i]).bits);
      else if (t == DType::BF16)
        CHECK(yt.as<BFloat16>()[i].bits == toBFloat16(ref[i]).bits);
      else
        CHECK(yt.as<double>()[i] == Approx(ref[i]).epsilon(1e-6));
    }
  }
}

TEST_CASE("resize: 3-D linear is the product of 1-D interpolations",
          "[cpu][resize]") {
  // Linear is separable: on x = f(i) + g(j) + h(k) with each term linear,
  // the result is the sum of the 1-D results, which are exact here
  // (asymmetric coordinates inside the input interpolate linear data
  // exactly; outside they clamp).
  const Shape xs = {3, 4, 5}, ys = {5, 7, 9};
  std::vector<float> xv;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        xv.push_back(100.0f * i + 10.0f * j + k);
  HostTensor x = f32Tensor(xs, xv);
  const std::vector<double> scales = {5.0 / 3, 7.0 / 4, 9.0 / 5};
  std::vector<float> y =
      run(x, ys, opts(ResizeMode::Linear, CoordinateTransform::Asymmetric,
                      scales));
  std::vector<float> want;
  auto coord = [&](int64_t o, size_t d) {
    return std::min<double>(o / scales[d], xs[d] - 1);
  };
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 7; ++b)
      for (int c = 0; c < 9; ++c)
        want.push_back(static_cast<float>(100 * coord(a, 0) +
                                          10 * coord(b, 1) + coord(c, 2)));
  checkClose(y, want, 1e-6);
}

TEST_CASE("resize: an infinite input reaches only the outputs it weighs in",
          "[cpu][resize]") {
  // align_corners 4 -> 7: outputs 0, 2, 4, 6 sit exactly on inputs 0..3
  // (one tap), the others halfway (two taps). x[0] = inf makes y[0] and
  // y[1] infinite; y[2] = x[1] exactly, not NaN from a zero-weight tap.
  HostTensor x = f32Tensor({4}, {INFINITY, 2, 3, 4});
  for (ResizeMode mode : {ResizeMode::Linear, ResizeMode::Cubic}) {
    INFO("mode " << static_cast<int>(mode));
    ResizeOptions o = opts(mode, CoordinateTransform::AlignCorners, {7.0 / 4});
    std::vector<float> y = run(x, {7}, o);
    CHECK(std::isinf(y[0]));
    for (size_t j = 2; j < y.size(); ++j)
      CHECK_FALSE(std::isnan(y[j]));
    CHECK(y[2] == 2.0f);
    CHECK(y[4] == 3.0f);
    CHECK(y[6] == 4.0f);
    if (mode == ResizeMode::Linear)
      CHECK(y[5] == 3.5f);
  }
}

TEST_CASE("resize: argument errors", "[cpu][resize]") {
  HostTensor x = iota16({1, 1, 2, 2});
  HostTensor y(DType::F32, {1, 1, 4, 4});
  ResizeOptions o;
  o.scales = {1, 1, 2};
  CHECK(resize(x.view(), y.view(), o).message().find("scales has 3") !=
        std::string::npos);
  o.scales = {1, 1, 2, 0};
  CHECK(resize(x.view(), y.view(), o).message().find("positive") !=
        std::string::npos);
  o.scales = {1, 1, 2, 2};
  o.coordinateTransform = CoordinateTransform::TfCropAndResize;
  CHECK(resize(x.view(), y.view(), o).message().find("roi of 8") !=
        std::string::npos);
  HostTensor xi(DType::I64, {1, 1, 2, 2}), yi(DType::I64, {1, 1, 4, 4});
  o.coordinateTransform = CoordinateTransform::HalfPixel;
  o.mode = ResizeMode::Linear;
  CHECK(resize(xi.view(), yi.view(), o).message().find("need f32") !=
        std::string::npos);
  HostTensor y3(DType::F32, {1, 4, 4});
  CHECK(resize(x.view(), y3.view(), o).message().find("ranks") !=
        std::string::npos);
}

TEST_CASE("kernel.resize through the call table", "[cpu][resize][calls]") {
  CallFn fn = cpuCallTable().find("kernel.resize");
  REQUIRE(fn);
  HostTensor x = f32Tensor({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor y(DType::F32, {1, 1, 1, 2});
  PlanCall call;
  call.kind = "kernel.resize";
  call.attributes = {
      {"mode", std::string("linear")},
      {"coordinate_transformation_mode", std::string("align_corners")},
      {"nearest_mode", std::string("round_prefer_floor")},
      {"cubic_coeff_a", -0.75},
      {"exclude_outside", int64_t(0)},
      {"extrapolation_value", 0.0},
      {"scales", std::vector<double>{1, 1, 0.6, 0.6}}};
  REQUIRE(fn({call, {x.view()}, {y.view()}}).isOk());
  CHECK(y.as<float>()[0] == Approx(1.0f));
  CHECK(y.as<float>()[1] == Approx(3.142857f));
  // Resize-19's half_pixel_symmetric: rows at 0.5, columns at 2/3 and 7/3
  // (offset 4 / 2 * (1 - 2 / 2.4) = 1/3 for 2 outputs of 2.4).
  call.attributes[1].value = std::string("half_pixel_symmetric");
  REQUIRE(fn({call, {x.view()}, {y.view()}}).isOk());
  CHECK(y.as<float>()[0] == Approx(11.0f / 3));
  CHECK(y.as<float>()[1] == Approx(16.0f / 3));
  call.attributes[1].value = std::string("half_pixel_sym");
  Status s = fn({call, {x.view()}, {y.view()}});
  REQUIRE_FALSE(s.isOk());
  CHECK(s.message() == "attribute 'coordinate_transformation_mode' has an "
                       "unknown value 'half_pixel_sym'");
  call.attributes.pop_back();
  call.attributes[1].value = std::string("half_pixel");
  s = fn({call, {x.view()}, {y.view()}});
  CHECK(s.message() == "attribute 'scales' is missing");
}

//===----------------------------------------------------------------------===//
// ONNX backend test data
//===----------------------------------------------------------------------===//

TEST_CASE("resize reproduces ONNX's backend test cases", "[cpu][resize]") {
  const fs::path root = fs::path(MP_ONNX_TESTDATA) / "node";
  if (!hasTensorProtoSupport() || !fs::exists(root)) {
    WARN("ONNX backend test data not found in " MP_ONNX_TESTDATA
         " (or no TensorProto support); skipped");
    return;
  }
  using M = ResizeMode;
  using C = CoordinateTransform;
  using N = NearestMode;
  struct Case {
    const char *name;
    M mode;
    C transform;
    N nearest;
    double a;
    bool exclude;
    bool sizes; // input 1 holds sizes (i64) rather than scales (f32)
  };
  const N floor_ = N::RoundPreferFloor;
  const Case cases[] = {
      {"downsample_scales_cubic", M::Cubic, C::HalfPixel, floor_, -0.75, false, false},
      {"downsample_scales_cubic_A_n0p5_exclude_outside", M::Cubic, C::HalfPixel, floor_, -0.5, true, false},
      {"downsample_scales_cubic_align_corners", M::Cubic, C::AlignCorners, floor_, -0.75, false, false},
      {"downsample_scales_linear", M::Linear, C::HalfPixel, floor_, -0.75, false, false},
      {"downsample_scales_linear_align_corners", M::Linear, C::AlignCorners, floor_, -0.75, false, false},
      {"downsample_scales_nearest", M::Nearest, C::HalfPixel, floor_, -0.75, false, false},
      {"downsample_sizes_cubic", M::Cubic, C::HalfPixel, floor_, -0.75, false, true},
      {"downsample_sizes_linear_pytorch_half_pixel", M::Linear, C::PytorchHalfPixel, floor_, -0.75, false, true},
      {"downsample_sizes_nearest", M::Nearest, C::HalfPixel, floor_, -0.75, false, true},
      {"upsample_scales_cubic", M::Cubic, C::HalfPixel, floor_, -0.75, false, false},
      {"upsample_scales_cubic_A_n0p5_exclude_outside", M::Cubic, C::HalfPixel, floor_, -0.5, true, false},
      {"upsample_scales_cubic_align_corners", M::Cubic, C::AlignCorners, floor_, -0.75, false, false},
      {"upsample_scales_cubic_asymmetric", M::Cubic, C::Asymmetric, floor_, -0.75, false, false},
      {"upsample_scales_linear", M::Linear, C::HalfPixel, floor_, -0.75, false, false},
      {"upsample_scales_linear_align_corners", M::Linear, C::AlignCorners, floor_, -0.75, false, false},
      {"upsample_scales_nearest", M::Nearest, C::HalfPixel, floor_, -0.75, false, false},
      {"upsample_sizes_cubic", M::Cubic, C::HalfPixel, floor_, -0.75, false, true},
      {"upsample_sizes_nearest", M::Nearest, C::HalfPixel, floor_, -0.75, false, true},
      {"upsample_sizes_nearest_ceil_half_pixel", M::Nearest, C::HalfPixel, N::Ceil, -0.75, false, true},
      {"upsample_sizes_nearest_floor_align_corners", M::Nearest, C::AlignCorners, N::Floor, -0.75, false, true},
      {"upsample_sizes_nearest_round_prefer_ceil_asymmetric", M::Nearest, C::Asymmetric, N::RoundPreferCeil, -0.75, false, true},
  };
  int ran = 0;
  for (const Case &c : cases) {
    const fs::path dir =
        root / ("test_resize_" + std::string(c.name)) / "test_data_set_0";
    if (!fs::exists(dir))
      continue;
    INFO(c.name);
    Result<HostTensor> x = readTensorFile((dir / "input_0.pb").string());
    Result<HostTensor> arg = readTensorFile((dir / "input_1.pb").string());
    Result<HostTensor> want = readTensorFile((dir / "output_0.pb").string());
    REQUIRE(x.isOk());
    REQUIRE(arg.isOk());
    REQUIRE(want.isOk());
    ResizeOptions o;
    o.mode = c.mode;
    o.coordinateTransform = c.transform;
    o.nearestMode = c.nearest;
    o.cubicCoeffA = c.a;
    o.excludeOutside = c.exclude;
    for (int64_t d = 0; d < arg->numElements(); ++d)
      o.scales.push_back(c.sizes ? static_cast<double>(arg->as<int64_t>()[d]) /
                                       static_cast<double>(x->shape()[d])
                                 : static_cast<double>(arg->as<float>()[d]));
    HostTensor y(DType::F32, want->shape());
    REQUIRE(resize(x->view(), y.view(), o).isOk());
    const float *w = want->as<float>();
    checkClose(std::vector<float>(y.as<float>(), y.as<float>() + y.numElements()),
               std::vector<float>(w, w + want->numElements()), 1e-5);
    ++ran;
  }
  // tf_crop_and_resize: inputs X, roi, sizes.
  const fs::path crop = root / "test_resize_tf_crop_and_resize" / "test_data_set_0";
  if (fs::exists(crop)) {
    Result<HostTensor> x = readTensorFile((crop / "input_0.pb").string());
    Result<HostTensor> roi = readTensorFile((crop / "input_1.pb").string());
    Result<HostTensor> sizes = readTensorFile((crop / "input_2.pb").string());
    Result<HostTensor> want = readTensorFile((crop / "output_0.pb").string());
    REQUIRE((x.isOk() && roi.isOk() && sizes.isOk() && want.isOk()));
    ResizeOptions o;
    o.mode = M::Linear;
    o.coordinateTransform = C::TfCropAndResize;
    o.extrapolationValue = 10.0;
    for (int64_t d = 0; d < roi->numElements(); ++d)
      o.roi.push_back(roi->as<float>()[d]);
    for (int64_t d = 0; d < sizes->numElements(); ++d)
      o.scales.push_back(static_cast<double>(sizes->as<int64_t>()[d]) /
                         static_cast<double>(x->shape()[d]));
    HostTensor y(DType::F32, want->shape());
    REQUIRE(resize(x->view(), y.view(), o).isOk());
    const float *w = want->as<float>();
    checkClose(std::vector<float>(y.as<float>(), y.as<float>() + y.numElements()),
               std::vector<float>(w, w + want->numElements()), 1e-5);
    ++ran;
  }
  CHECK(ran >= 6);
}
