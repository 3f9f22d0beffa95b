// Unit tests of the narrow types (mp/Runtime/NarrowTypes.h): float8 (e8m0
// too), float4, int4 and int2 values as ONNX's Cast (ml_dtypes) rounds them,
// with and without saturation; every code of every float type decodes and
// encodes back to itself; kernel.cast to and from them; ONNX's packing in
// TensorProto files.
#include "mp/Runtime/NarrowTypes.h"
#include "mp/Runtime/CPU/ElementwiseKernels.h"
#include "mp/Runtime/TensorIO.h"

#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::narrow;

namespace {
int32_t codeOf(DType t) { return static_cast<int32_t>(t); }
} // namespace

TEST_CASE("float8 and float4 rounding, saturation, NaN and infinity",
          "[narrow]") {
  const int32_t e4m3 = codeOf(DType::F8E4M3FN),
                e4m3uz = codeOf(DType::F8E4M3FNUZ),
                e5m2 = codeOf(DType::F8E5M2),
                e5m2uz = codeOf(DType::F8E5M2FNUZ),
                e2m1 = codeOf(DType::F4E2M1);
  // The largest finite values, and what lies beyond them.
  CHECK(decodeNarrow(e4m3, 0x7E) == 448);
  CHECK(decodeNarrow(e4m3uz, 0x7F) == 240);
  CHECK(decodeNarrow(e5m2, 0x7B) == 57344);
  CHECK(decodeNarrow(e5m2uz, 0x7F) == 57344);
  CHECK(decodeNarrow(e2m1, 0x7) == 6);
  CHECK(encodeNarrow(e4m3, 1e6) == 0x7E);
  CHECK(encodeNarrow(e4m3, -1e6) == 0xFE);
  CHECK(encodeNarrow(e4m3, 1e6, false) == 0x7F); // NaN
  CHECK(encodeNarrow(e4m3, -INFINITY, false) == 0xFF);
  CHECK(encodeNarrow(e4m3, 464, false) == 0x7E); // a tie, to even: 448
  CHECK(encodeNarrow(e4m3, 470, false) == 0x7F); // rounds past 448: NaN
  CHECK(encodeNarrow(e5m2, INFINITY, false) == 0x7C);
  CHECK(encodeNarrow(e5m2, INFINITY) == 0x7B);
  CHECK(encodeNarrow(e5m2, 61440, false) == 0x7C); // rounds to 2^16: inf
  CHECK(encodeNarrow(e4m3uz, 1e6, false) == 0x80);
  CHECK(encodeNarrow(e2m1, 100, false) == 0x7); // no NaN: saturates
  // Ties to even, subnormals, zeros.
  CHECK(encodeNarrow(e4m3, 1.0625) == 0x38); // between 1 and 1.125
  CHECK(encodeNarrow(e4m3, 1.1875) == 0x3A); // between 1.125 and 1.25
  CHECK(encodeNarrow(e4m3, std::ldexp(1.0, -9)) == 0x01);
  CHECK(encodeNarrow(e4m3, std::ldexp(1.0, -11)) == 0x00);
  CHECK(encodeNarrow(e4m3, -0.0) == 0x80);
  CHECK(encodeNarrow(e4m3uz, -0.0) == 0x00); // fnuz: no -0
  CHECK(encodeNarrow(e4m3uz, -1e-9) == 0x00);
  CHECK(encodeNarrow(e2m1, 5) == 0x6); // between 4 and 6: 4
  CHECK(encodeNarrow(e2m1, -0.25) == 0x8);
  // NaN: the types' quiet NaN (float4 e2m1 has none: -0, as ml_dtypes).
  CHECK(encodeNarrow(e4m3, NAN) == 0x7F);
  CHECK(encodeNarrow(e5m2, NAN) == 0x7E);
  CHECK(encodeNarrow(e5m2uz, NAN) == 0x80);
  CHECK(encodeNarrow(e2m1, NAN) == 0x8);
  CHECK(std::isnan(decodeNarrow(e4m3, 0xFF)));
  CHECK(std::isnan(decodeNarrow(e4m3uz, 0x80)));
  CHECK(std::isinf(decodeNarrow(e5m2, 0xFC)));

  SECTION("every code decodes and encodes back to itself") {
    for (int32_t code : {e4m3, e4m3uz, e5m2, e5m2uz, e2m1}) {
      const int codes = code == e2m1 ? 16 : 256;
      for (int bits = 0; bits < codes; ++bits) {
        double v = decodeNarrow(code, static_cast<uint8_t>(bits));
        if (std::isnan(v))
          continue;
        INFO("code " << code << " bits " << bits << " value " << v);
        CHECK(encodeNarrow(code, v, false) == bits);
        if (!std::isinf(v))
          CHECK(encodeNarrow(code, v, true) == bits);
      }
    }
  }
}

TEST_CASE("float8 e8m0: powers of two, Cast-25's round modes, saturation",
          "[narrow]") {
  const int32_t e8m0 = codeOf(DType::F8E8M0);
  CHECK(decodeNarrow(e8m0, 127) == 1.0);
  CHECK(decodeNarrow(e8m0, 0) == std::ldexp(1.0, -127));
  CHECK(decodeNarrow(e8m0, 254) == std::ldexp(1.0, 127));
  CHECK(std::isnan(decodeNarrow(e8m0, 255)));
  // up (the default): any fraction rounds up to the next power of two.
  CHECK(encodeNarrow(e8m0, 1.0) == 127);
  CHECK(encodeNarrow(e8m0, 1.1) == 128);
  CHECK(encodeNarrow(e8m0, 1.25) == 128);
  CHECK(encodeNarrow(e8m0, 0.124) == 124); // to 0.125
  CHECK(encodeNarrow(e8m0, -3.0) == 129);  // no sign: 4
  CHECK(encodeNarrow(e8m0, 0.0) == 0);     // no zero: the smallest
  // down: the f32 exponent as it is.
  CHECK(encodeNarrow(e8m0, 1.9, true, RoundMode::Down) == 127);
  CHECK(encodeNarrow(e8m0, 0.124, true, RoundMode::Down) == 123);
  // nearest: up from half way (ties up), except from the f32 exponent 0.
  CHECK(encodeNarrow(e8m0, 1.4, true, RoundMode::Nearest) == 127);
  CHECK(encodeNarrow(e8m0, 1.5, true, RoundMode::Nearest) == 128);
  CHECK(encodeNarrow(e8m0, 1.75, true, RoundMode::Nearest) == 128);
  // 2^-127 is an f32 subnormal (exponent field 0, mantissa bit 22): a tie
  // that stays for nearest, and a fraction for up, as ONNX's to_float8e8m0
  // reads the f32 fields.
  CHECK(encodeNarrow(e8m0, std::ldexp(1.0, -127), true, RoundMode::Nearest) ==
        0);
  CHECK(encodeNarrow(e8m0, std::ldexp(1.0, -127)) == 1);
  // Saturation: the largest exponent does not round up into NaN.
  const double beyond = std::ldexp(1.5, 127);
  CHECK(encodeNarrow(e8m0, beyond) == 254);
  CHECK(encodeNarrow(e8m0, beyond, false) == 255);
  CHECK(encodeNarrow(e8m0, beyond, false, RoundMode::Down) == 254);
  CHECK(encodeNarrow(e8m0, NAN) == 255);
  CHECK(encodeNarrow(e8m0, -INFINITY) == 255);
  for (int bits = 0; bits < 255; ++bits)
    for (RoundMode mode :
         {RoundMode::Up, RoundMode::Down, RoundMode::Nearest}) {
      if (bits == 0 && mode == RoundMode::Up)
        continue; // 2^-127 rounds up (above)
      INFO("bits " << bits << " mode " << int(mode));
      CHECK(encodeNarrow(e8m0, decodeNarrow(e8m0, uint8_t(bits)), false,
                         mode) == bits);
    }

  SECTION("kernel.cast to e8m0 takes the round mode") {
    std::vector<float> x = {1.1f, 1.5f, 3.0f, 0.3f};
    std::vector<uint8_t> up(4), nearest(4), down(4);
    TensorView in{DType::F32, {4}, x.data()};
    REQUIRE(mp::rt::cpu::cast(in, TensorView{DType::F8E8M0, {4}, up.data()}));
    REQUIRE(mp::rt::cpu::cast(in,
                              TensorView{DType::F8E8M0, {4}, nearest.data()},
                              true, RoundMode::Nearest));
    REQUIRE(mp::rt::cpu::cast(in, TensorView{DType::F8E8M0, {4}, down.data()},
                              true, RoundMode::Down));
    CHECK(up == std::vector<uint8_t>{128, 128, 129, 126});
    CHECK(nearest == std::vector<uint8_t>{127, 128, 129, 125});
    CHECK(down == std::vector<uint8_t>{127, 127, 128, 125});
    std::vector<float> back(4);
    REQUIRE(mp::rt::cpu::cast(TensorView{DType::F8E8M0, {4}, up.data()},
                              TensorView{DType::F32, {4}, back.data()}));
    CHECK(back == std::vector<float>{2.0f, 2.0f, 4.0f, 0.5f});
  }
}

TEST_CASE("4- and 2-bit integers truncate and wrap", "[narrow]") {
  const int32_t i4 = codeOf(DType::I4), u4 = codeOf(DType::U4),
                i2 = codeOf(DType::I2), u2 = codeOf(DType::U2);
  CHECK(encodeNarrow(i4, -9) == 0x7);
  CHECK(encodeNarrow(i4, 8) == 0x8);
  CHECK(decodeNarrow(i4, 0x8) == -8);
  CHECK(encodeNarrow(i4, 2.7) == 2);
  CHECK(encodeNarrow(i4, -2.7) == 0xE);
  CHECK(decodeNarrow(i4, 0xE) == -2);
  CHECK(encodeNarrow(u4, -1) == 15);
  CHECK(decodeNarrow(u4, 15) == 15);
  CHECK(encodeNarrow(i2, 3) == 3);
  CHECK(decodeNarrow(i2, 3) == -1);
  CHECK(encodeNarrow(u2, 5) == 1);
  CHECK(encodeNarrow(i4, NAN) == 0);
}

TEST_CASE("kernel.cast to and from the narrow types", "[narrow][cast]") {
  std::vector<float> x = {0.3f, -1.7f, 500.f, 1e-4f, -3.f, 12.f};
  TensorView xv{DType::F32, {6}, x.data()};
  std::vector<uint8_t> f8(6);
  TensorView f8v{DType::F8E4M3FN, {2, 3}, f8.data()};
  REQUIRE(cpu::cast(xv, f8v));
  CHECK(f8[2] == 0x7E); // 500 saturates to 448
  REQUIRE(cpu::cast(xv, f8v, /*saturate=*/false));
  CHECK(f8[2] == 0x7F);
  std::vector<float> back(6);
  TensorView backv{DType::F32, {6}, back.data()};
  REQUIRE(cpu::cast(f8v, backv));
  CHECK(std::isnan(back[2]));
  CHECK(back[0] == Approx(0.3).epsilon(0.07));
  CHECK(back[4] == -3.f);
  CHECK(back[5] == 12.f);

  std::vector<uint8_t> i4(6);
  TensorView i4v{DType::I4, {6}, i4.data()};
  REQUIRE(cpu::cast(xv, i4v));
  CHECK(i4 == std::vector<uint8_t>{0, 0xF, 0x4, 0, 0xD, 0xC});
  std::vector<int64_t> wide(6);
  TensorView widev{DType::I64, {6}, wide.data()};
  REQUIRE(cpu::cast(i4v, widev));
  CHECK(wide == std::vector<int64_t>{0, -1, 4, 0, -3, -4});
  // f16 through f64, and float8 to float8 (e5m2 holds 448 exactly).
  std::vector<uint8_t> e5(6);
  TensorView e5v{DType::F8E5M2, {6}, e5.data()};
  REQUIRE(cpu::cast(f8v, e5v));
  CHECK(e5[5] == encodeNarrow(codeOf(DType::F8E5M2), 12.0));
}

TEST_CASE("narrow tensors in ONNX TensorProto files are packed",
          "[narrow][tensorio]") {
  if (!hasTensorProtoSupport()) {
    WARN("skipped: the runtime was built without ONNX TensorProto support");
    return;
  }
  std::string path = (std::filesystem::temp_directory_path() /
                      ("mp-narrow-" + std::to_string(getpid()) + ".pb"))
                         .string();
  // Five int4 elements: three packed bytes, the first element low.
  std::vector<uint8_t> elements = {0x1, 0xF, 0x8, 0x7, 0x2};
  TensorView v{DType::I4, {5}, elements.data()};
  REQUIRE(writeTensorProto(path, v, "q"));
  Result<NamedTensor> read = readTensorProto(path);
  std::filesystem::remove(path);
  REQUIRE(read);
  CHECK(read->tensor.dtype() == DType::I4);
  REQUIRE(read->tensor.shape() == Shape{5});
  CHECK(std::vector<uint8_t>(read->tensor.as<uint8_t>(),
                             read->tensor.as<uint8_t>() + 5) == elements);
  CHECK(elementAsDouble(read->tensor, 1) == -1);

  std::vector<uint8_t> packed(3);
  packNarrow(elements.data(), 5, 4, packed.data());
  CHECK(packed == std::vector<uint8_t>{0xF1, 0x78, 0x02});
  std::vector<uint8_t> twoBit = {1, 2, 3, 0, 3};
  std::vector<uint8_t> packed2(2), unpacked2(5);
  packNarrow(twoBit.data(), 5, 2, packed2.data());
  CHECK(packed2 == std::vector<uint8_t>{0x39, 0x03});
  unpackNarrow(packed2.data(), 5, 2, unpacked2.data());
  CHECK(unpacked2 == twoBit);
}
