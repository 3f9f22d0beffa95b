// Tests of mp/Runtime/Half.h: fp16 and bf16 conversions.
//
// The reference is independent of the code under test: it decodes every
// 16-bit pattern with std::ldexp from the format's definition, and rounds a
// value by finding the two nearest representable values in that table and
// choosing per round-to-nearest-even (with 2^16 for fp16 and 2^128 for bf16
// standing in, past the largest finite value, for the infinity that IEEE
// overflow gives). Loops count mismatches and report the first few, so that
// a failure says which input was wrong without millions of assertions.
#include "mp/Runtime/Half.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define MP_TEST_HAVE_MXCSR 1
#else
#define MP_TEST_HAVE_MXCSR 0
#endif

using namespace mp::rt;

namespace {

uint32_t bitsOfF(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint64_t bitsOfD(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// A deterministic 64-bit generator (splitmix64).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

/// Collects mismatches: the count and the first few descriptions.
struct Mismatches {
  size_t count = 0;
  std::string first;
  void add(const std::string &what) {
    if (count++ < 8)
      first += what + "\n";
  }
};

/// A 16-bit binary floating-point format, described by its field widths.
struct Format {
  int expBits, manBits;
  int bias() const { return (1 << (expBits - 1)) - 1; }
  uint16_t infBits() const {
    return static_cast<uint16_t>(((1u << expBits) - 1) << manBits);
  }
  uint16_t signBit() const { return 0x8000; }
  bool isNaN(uint16_t b) const {
    return (b & 0x7fff) > infBits();
  }
  /// The exact value of a non-NaN pattern, from the definition.
  double value(uint16_t b) const {
    unsigned e = (b & 0x7fff) >> manBits;
    unsigned m = b & ((1u << manBits) - 1);
    double v;
    if (e == (1u << expBits) - 1)
      v = std::numeric_limits<double>::infinity();
    else if (e == 0)
      v = std::ldexp(static_cast<double>(m), 1 - bias() - manBits);
    else
      v = std::ldexp(static_cast<double>((1u << manBits) + m),
                     static_cast<int>(e) - bias() - manBits);
    return (b & 0x8000) ? -v : v;
  }
};

const Format kHalf{5, 10};
const Format kBF16{8, 7};

/// The round-to-nearest-even reference for one format.
class Reference {
public:
  explicit Reference(Format f) : format_(f) {
    for (uint32_t b = 0; b < f.infBits(); ++b)
      positives_.push_back(f.value(static_cast<uint16_t>(b)));
    // Past the largest finite value: the next value the exponent range would
    // have, which IEEE rounds to infinity.
    aboveMax_ = std::ldexp(1.0, (1 << (f.expBits - 1)));
  }

  const std::vector<double> &positives() const { return positives_; }
  double aboveMax() const { return aboveMax_; }

  /// The bits of x (not NaN) rounded to the format, to nearest even.
  uint16_t round(double x) const {
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    if (std::isinf(a))
      return sign | format_.infBits();
    // lo: the largest value <= a.
    size_t lo = static_cast<size_t>(
        std::upper_bound(positives_.begin(), positives_.end(), a) -
        positives_.begin() - 1);
    double loV = positives_[lo];
    if (a == loV)
      return static_cast<uint16_t>(sign | lo);
    bool atMax = lo + 1 == positives_.size();
    double hiV = atMax ? aboveMax_ : positives_[lo + 1];
    uint16_t hiBits = atMax ? format_.infBits() : static_cast<uint16_t>(lo + 1);
    double mid = (loV + hiV) / 2; // exact: both have few significant bits
    uint16_t r;
    if (a < mid)
      r = static_cast<uint16_t>(lo);
    else if (a > mid)
      r = hiBits;
    else
      r = (lo & 1) ? hiBits : static_cast<uint16_t>(lo);
    return sign | r;
  }

private:
  Format format_;
  std::vector<double> positives_;
  double aboveMax_;
};

const Reference &halfRef() {
  static const Reference r(kHalf);
  return r;
}
const Reference &bf16Ref() {
  static const Reference r(kBF16);
  return r;
}

/// Checks a conversion result for a NaN input: NaN, same sign, quiet, and
/// the top payload bits kept.
bool nanOk(Format f, uint16_t got, bool negative, uint64_t topPayload) {
  uint16_t quiet = static_cast<uint16_t>(1u << (f.manBits - 1));
  uint16_t expect = static_cast<uint16_t>((negative ? 0x8000 : 0) |
                                          f.infBits() | quiet | topPayload);
  return got == expect;
}

/// fp32 values that test the rounding to a format: every value of the
/// format, every midpoint between neighbours (and to the value above the
/// largest), each with its fp32 neighbours; then special values; all with
/// both signs.
std::vector<float> roundingSample(const Reference &ref) {
  std::vector<float> out;
  auto addAround = [&](double v) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) != v)
      return; // not an fp32 value (cannot happen for fp16/bf16 midpoints)
    float up = std::nextafter(f, std::numeric_limits<float>::infinity());
    float down = std::nextafter(f, -std::numeric_limits<float>::infinity());
    for (float g : {f, up, down, std::nextafter(up, INFINITY),
                    std::nextafter(down, -INFINITY)})
      if (g >= 0) {
        out.push_back(g);
        out.push_back(-g);
      }
  };
  const std::vector<double> &p = ref.positives();
  for (size_t i = 0; i < p.size(); ++i) {
    addAround(p[i]);
    double hi = i + 1 < p.size() ? p[i + 1] : ref.aboveMax();
    addAround((p[i] + hi) / 2);
  }
  addAround(ref.aboveMax());
  for (float f : {0.0f, FLT_MIN, FLT_MAX, FLT_TRUE_MIN, 1.0f, 0.1f, 3.14159265f,
                  1e-8f, 1e-6f, 1e4f, 1e5f, 1e30f, 1e38f, 65504.0f, 65519.0f,
                  65519.996f, 65520.0f, 65520.004f, 65535.0f, 65536.0f,
                  0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-14f,
                  0x1.ff8p-15f, 0x1.ffcp-15f})
    addAround(f);
  out.push_back(std::numeric_limits<float>::infinity());
  out.push_back(-std::numeric_limits<float>::infinity());
  return out;
}

/// Adds n pseudo-random fp32 bit patterns (every kind of value) and a sweep
/// over all 2^32 patterns with a stride (a spread over all exponents).
void addSpread(std::vector<float> &out, size_t n, uint64_t seed) {
  SplitMix rng{seed};
  for (size_t i = 0; i < n; ++i)
    out.push_back(floatFromBits(static_cast<uint32_t>(rng.next())));
  for (uint64_t b = 0; b <= 0xffffffffull; b += 65521)
    out.push_back(floatFromBits(static_cast<uint32_t>(b)));
}

const std::vector<float> &halfSample() {
  static const std::vector<float> s = [] {
    std::vector<float> v = roundingSample(halfRef());
    addSpread(v, 2000000, 1);
    // Every fp32 value in the fp16 subnormal/normal border and near the
    // overflow boundary, exhaustively in a window.
    for (uint32_t b = 0x387f0000u; b <= 0x38810000u; ++b)
      v.push_back(floatFromBits(b));
    for (uint32_t b = 0x477fe000u - 0x100; b <= 0x47800000u + 0x100; ++b)
      v.push_back(floatFromBits(b));
    return v;
  }();
  return s;
}

const std::vector<float> &bf16Sample() {
  static const std::vector<float> s = [] {
    std::vector<float> v = roundingSample(bf16Ref());
    addSpread(v, 2000000, 2);
    for (uint32_t b = 0x7f7f0000u; b <= 0x7f800000u; ++b)
      v.push_back(floatFromBits(b));
    for (uint32_t b = 0x007f0000u; b <= 0x00810000u; ++b)
      v.push_back(floatFromBits(b));
    return v;
  }();
  return s;
}

/// Checks fp32 -> 16-bit conversion results against the reference.
void checkFromFloat(Format f, const Reference &ref, const std::vector<float> &in,
                    const std::vector<uint16_t> &got, const char *what,
                    Mismatches &bad) {
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t x = bitsOfF(in[i]);
    bool ok;
    uint16_t expect = 0;
    if (std::isnan(in[i])) {
      ok = nanOk(f, got[i], x >> 31, (x & 0x7fffff) >> (23 - f.manBits) &
                                         ((1u << (f.manBits - 1)) - 1));
    } else {
      expect = ref.round(static_cast<double>(in[i]));
      ok = got[i] == expect;
    }
    if (!ok)
      bad.add(std::string(what) + "(" + hex(x) + ") = " + hex(got[i]) +
              ", expected " + (std::isnan(in[i]) ? "a quiet NaN" : hex(expect)));
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Known values
//===----------------------------------------------------------------------===//

TEST_CASE("Half: known values", "[half]") {
  CHECK(toHalf(1.0f).bits == 0x3c00);
  CHECK(toHalf(-2.0f).bits == 0xc000);
  CHECK(toHalf(0.1f).bits == 0x2e66);
  CHECK(toHalf(0.0f).bits == 0x0000);
  CHECK(toHalf(-0.0f).bits == 0x8000);
  CHECK(toHalf(65504.0f).bits == 0x7bff);
  CHECK(toHalf(65519.996f).bits == 0x7bff); // below the 65520 midpoint
  CHECK(toHalf(65520.0f).bits == 0x7c00);   // the tie goes to even: inf
  CHECK(toHalf(-1e6f).bits == 0xfc00);
  CHECK(toHalf(0x1p-24f).bits == 0x0001);   // smallest subnormal
  CHECK(toHalf(0x1p-25f).bits == 0x0000);   // tie between 0 and 2^-24: 0
  CHECK(toHalf(0x1.000002p-25f).bits == 0x0001);
  CHECK(toHalf(0x1.8p-24f).bits == 0x0002); // tie 1.5 -> 2
  CHECK(toHalf(0x1.ffcp-15f).bits == 0x0400); // rounds up to the min normal
  CHECK(toHalf(std::numeric_limits<float>::infinity()).bits == 0x7c00);
  CHECK(toHalf(floatFromBits(0x7fc00000u)).bits == 0x7e00);
  CHECK(toHalf(floatFromBits(0xff800001u)).bits == 0xfe00); // sNaN -> qNaN
  CHECK(toFloat(Half::fromBits(0x3555)) == 0x1.554p-2f);
  CHECK(toFloat(Half::fromBits(0x0001)) == 0x1p-24f);
  CHECK(toFloat(Half::fromBits(0x7bff)) == 65504.0f);
  CHECK(std::isinf(toFloat(Half::fromBits(0xfc00))));
  CHECK(bitsOfF(toFloat(Half::fromBits(0x7c01))) == 0x7fc02000u);
  CHECK(toHalf(1.0 + 0x1p-11).bits == 0x3c00); // double: tie to even
  CHECK(toHalf(65520.0).bits == 0x7c00);
  CHECK(toDouble(Half::fromBits(0x3c01)) == 1.0 + 0x1p-10);
}

TEST_CASE("BFloat16: known values", "[bf16]") {
  CHECK(toBFloat16(1.0f).bits == 0x3f80);
  CHECK(toBFloat16(3.14159265f).bits == 0x4049);
  CHECK(toBFloat16(-0.0f).bits == 0x8000);
  CHECK(toBFloat16(floatFromBits(0x3f808000u)).bits == 0x3f80); // tie: even
  CHECK(toBFloat16(floatFromBits(0x3f818000u)).bits == 0x3f82); // tie: even
  CHECK(toBFloat16(floatFromBits(0x3f808001u)).bits == 0x3f81);
  CHECK(toBFloat16(FLT_MAX).bits == 0x7f80); // rounds above the max: inf
  CHECK(toBFloat16(floatFromBits(0x7f7f7fffu)).bits == 0x7f7f);
  CHECK(toBFloat16(-FLT_MAX).bits == 0xff80);
  // NaNs whose payload would carry into the exponent stay NaN.
  CHECK(toBFloat16(floatFromBits(0x7f800001u)).bits == 0x7fc0);
  CHECK(toBFloat16(floatFromBits(0x7fffffffu)).bits == 0x7fff);
  CHECK(toBFloat16(floatFromBits(0xff80ffffu)).bits == 0xffc0);
  CHECK(toBFloat16(FLT_TRUE_MIN).bits == 0x0000);
  CHECK(toFloat(BFloat16::fromBits(0x4049)) == 3.140625f);
  CHECK(bitsOfF(toFloat(BFloat16::fromBits(0x7f81))) == 0x7fc10000u);
  CHECK(toBFloat16(1e300).bits == 0x7f80);
  CHECK(toBFloat16(-1e-300).bits == 0x8000);
}

//===----------------------------------------------------------------------===//
// Exhaustive over the 16-bit patterns
//===----------------------------------------------------------------------===//

TEST_CASE("Half: all 65536 patterns widen exactly and round-trip", "[half]") {
  Mismatches bad;
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    all[b] = static_cast<uint16_t>(b);
  std::vector<float> bulk(65536), portable(65536);
  convertF16ToF32(all.data(), bulk.data(), all.size());
  detail::convertF16ToF32Portable(all.data(), portable.data(), all.size());
  std::vector<double> bulk64(65536);
  convertF16ToF64(all.data(), bulk64.data(), all.size());

  for (uint32_t b = 0; b < 65536; ++b) {
    Half h = Half::fromBits(static_cast<uint16_t>(b));
    float f = toFloat(h);
    uint32_t fb = bitsOfF(f);
    if (bitsOfF(bulk[b]) != fb || bitsOfF(portable[b]) != fb)
      bad.add("bulk widening of " + hex(b) + " differs from scalar");
    if (bitsOfD(bulk64[b]) != bitsOfD(static_cast<double>(f)))
      bad.add("convertF16ToF64 of " + hex(b) + " differs");
    if (kHalf.isNaN(h.bits)) {
      // Quiet NaN, sign and payload kept.
      uint32_t expect = ((b & 0x8000u) << 16) | 0x7fc00000u | ((b & 0x3ffu) << 13);
      if (fb != expect)
        bad.add("NaN " + hex(b) + " -> " + hex(fb));
      if (!kHalf.isNaN(toHalf(f).bits) || (toHalf(f).bits & 0x8000) != (b & 0x8000))
        bad.add("NaN " + hex(b) + " does not stay NaN");
      continue;
    }
    double expect = kHalf.value(h.bits);
    if (static_cast<double>(f) != expect || std::signbit(f) != std::signbit(expect))
      bad.add(hex(b) + " -> " + std::to_string(f) + ", expected " +
              std::to_string(expect));
    if (toHalf(f) != h)
      bad.add(hex(b) + " does not round-trip through fp32");
    if (toHalf(toDouble(h)) != h)
      bad.add(hex(b) + " does not round-trip through fp64");
  }
  INFO(bad.first);
  CHECK(bad.count == 0);
}

TEST_CASE("BFloat16: all 65536 patterns widen exactly and round-trip",
          "[bf16]") {
  Mismatches bad;
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    all[b] = static_cast<uint16_t>(b);
  std::vector<float> bulk(65536);
  convertBF16ToF32(all.data(), bulk.data(), all.size());
  std::vector<uint16_t> back(65536);
  convertF32ToBF16(bulk.data(), back.data(), bulk.size());
  std::vector<double> bulk64(65536);
  convertBF16ToF64(all.data(), bulk64.data(), all.size());

  for (uint32_t b = 0; b < 65536; ++b) {
    BFloat16 h = BFloat16::fromBits(static_cast<uint16_t>(b));
    float f = toFloat(h);
    uint32_t fb = bitsOfF(f);
    if (bitsOfF(bulk[b]) != fb)
      bad.add("bulk widening of " + hex(b) + " differs from scalar");
    if (bitsOfD(bulk64[b]) != bitsOfD(static_cast<double>(f)))
      bad.add("convertBF16ToF64 of " + hex(b) + " differs");
    if (back[b] != toBFloat16(f).bits)
      bad.add("bulk narrowing of " + hex(fb) + " differs from scalar");
    if (kBF16.isNaN(h.bits)) {
      uint32_t expect = (b << 16) | 0x00400000u;
      if (fb != expect)
        bad.add("NaN " + hex(b) + " -> " + hex(fb));
      if (!kBF16.isNaN(toBFloat16(f).bits) ||
          (toBFloat16(f).bits & 0x8000) != (b & 0x8000))
        bad.add("NaN " + hex(b) + " does not stay NaN");
      continue;
    }
    double expect = kBF16.value(h.bits);
    if (static_cast<double>(f) != expect || std::signbit(f) != std::signbit(expect))
      bad.add(hex(b) + " -> " + std::to_string(f) + ", expected " +
              std::to_string(expect));
    if (fb != (b << 16))
      bad.add(hex(b) + " does not widen to its bits << 16");
    if (toBFloat16(f) != h)
      bad.add(hex(b) + " does not round-trip through fp32");
    if (toBFloat16(toDouble(h)) != h)
      bad.add(hex(b) + " does not round-trip through fp64");
  }
  INFO(bad.first);
  CHECK(bad.count == 0);
}

//===----------------------------------------------------------------------===//
// fp32 -> 16 bits against the exact reference
//===----------------------------------------------------------------------===//

TEST_CASE("Reference: sanity of the independent reference", "[half][bf16]") {
  // The tables are increasing (the reference relies on it) and the rounding
  // reference gives the expected results at a few known points.
  const std::vector<double> &h = halfRef().positives();
  CHECK(std::is_sorted(h.begin(), h.end()));
  CHECK(std::adjacent_find(h.begin(), h.end()) == h.end());
  CHECK(h.size() == 0x7c00);
  CHECK(h.back() == 65504.0);
  const std::vector<double> &b = bf16Ref().positives();
  CHECK(std::is_sorted(b.begin(), b.end()));
  CHECK(b.size() == 0x7f80);
  CHECK(halfRef().round(65519.99) == 0x7bff);
  CHECK(halfRef().round(65520.0) == 0x7c00);
  CHECK(halfRef().round(-0x1p-25) == 0x8000);
  CHECK(halfRef().round(0x1.0000001p-25) == 0x0001);
  CHECK(bf16Ref().round(1.0 + 0x1p-8) == 0x3f80);
  CHECK(bf16Ref().round(1.0 + 0x1.8p-7) == 0x3f82);
}

TEST_CASE("Half: fp32 -> fp16 rounds to nearest even (exact reference)",
          "[half]") {
  const std::vector<float> &in = halfSample();
  std::vector<uint16_t> scalar(in.size()), bulk(in.size()), portable(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    scalar[i] = toHalf(in[i]).bits;
  convertF32ToF16(in.data(), bulk.data(), in.size());
  detail::convertF32ToF16Portable(in.data(), portable.data(), in.size());
  Mismatches bad;
  checkFromFloat(kHalf, halfRef(), in, scalar, "toHalf", bad);
  checkFromFloat(kHalf, halfRef(), in, bulk, "convertF32ToF16", bad);
  checkFromFloat(kHalf, halfRef(), in, portable, "convertF32ToF16Portable", bad);
  INFO(in.size() << " values; first mismatches:\n" << bad.first);
  CHECK(in.size() > 2000000);
  CHECK(bad.count == 0);
}

TEST_CASE("BFloat16: fp32 -> bf16 rounds to nearest even (exact reference)",
          "[bf16]") {
  const std::vector<float> &in = bf16Sample();
  std::vector<uint16_t> scalar(in.size()), bulk(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    scalar[i] = toBFloat16(in[i]).bits;
  convertF32ToBF16(in.data(), bulk.data(), in.size());
  Mismatches bad;
  checkFromFloat(kBF16, bf16Ref(), in, scalar, "toBFloat16", bad);
  checkFromFloat(kBF16, bf16Ref(), in, bulk, "convertF32ToBF16", bad);
  INFO(in.size() << " values; first mismatches:\n" << bad.first);
  CHECK(in.size() > 2000000);
  CHECK(bad.count == 0);
}

//===----------------------------------------------------------------------===//
// fp64 -> 16 bits: rounded once
//===----------------------------------------------------------------------===//

namespace {

/// fp64 values for a format: the fp32 sample widened, every midpoint with
/// its fp64 neighbours (one fp64 ulp off a tie: rounding through fp32 would
/// turn these into ties), and random doubles in and around the range.
std::vector<double> doubleSample(const Reference &ref, const std::vector<float> &floats,
                                 int minExp, int maxExp, uint64_t seed) {
  std::vector<double> out(floats.begin(), floats.end());
  const std::vector<double> &p = ref.positives();
  for (size_t i = 0; i < p.size(); ++i) {
    double hi = i + 1 < p.size() ? p[i + 1] : ref.aboveMax();
    double mid = (p[i] + hi) / 2;
    for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY),
                     std::nextafter(p[i], 0.0), std::nextafter(p[i], INFINITY)}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
  SplitMix rng{seed};
  for (int i = 0; i < 1000000; ++i) {
    uint64_t r = rng.next();
    int e = minExp + static_cast<int>((r >> 52) % static_cast<uint64_t>(maxExp - minExp + 1));
    uint64_t bits = (r & 0x800fffffffffffffull) |
                    (static_cast<uint64_t>(e + 1023) << 52);
    double d;
    std::memcpy(&d, &bits, 8);
    out.push_back(d);
  }
  for (int i = 0; i < 100000; ++i) { // any pattern: NaNs, subnormals, huge
    uint64_t bits = rng.next();
    double d;
    std::memcpy(&d, &bits, 8);
    out.push_back(d);
  }
  for (double d : {0.0, -0.0, 1e-320, DBL_MIN, DBL_MAX, -DBL_MAX, 1e300,
                   std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN()})
    out.push_back(d);
  return out;
}

void checkFromDouble(Format f, const Reference &ref, const std::vector<double> &in,
                     const std::vector<uint16_t> &got, const char *what,
                     Mismatches &bad) {
  for (size_t i = 0; i < in.size(); ++i) {
    uint64_t x = bitsOfD(in[i]);
    bool ok;
    uint16_t expect = 0;
    if (std::isnan(in[i])) {
      ok = nanOk(f, got[i], x >> 63,
                 (x & 0x000fffffffffffffull) >> (52 - f.manBits) &
                     ((1u << (f.manBits - 1)) - 1));
    } else {
      expect = ref.round(in[i]);
      ok = got[i] == expect;
    }
    if (!ok)
      bad.add(std::string(what) + "(" + hex(x) + ") = " + hex(got[i]) +
              ", expected " + (std::isnan(in[i]) ? "a quiet NaN" : hex(expect)));
  }
}

/// Converts `in` to format f one value at a time (`scalar`, returning a Half
/// or BFloat16) and in bulk, and checks that both round once.
template <typename Scalar>
void checkDoubleConversions(Format f, const Reference &ref,
                            const std::vector<double> &in, Scalar scalar,
                            const char *scalarName,
                            void (*bulk)(const double *, uint16_t *, size_t),
                            const char *bulkName) {
  std::vector<uint16_t> scalarBits(in.size()), bulkBits(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    scalarBits[i] = scalar(in[i]).bits;
  bulk(in.data(), bulkBits.data(), in.size());
  Mismatches bad;
  checkFromDouble(f, ref, in, scalarBits, scalarName, bad);
  checkFromDouble(f, ref, in, bulkBits, bulkName, bad);
  INFO(in.size() << " values; first mismatches:\n" << bad.first);
  CHECK(bad.count == 0);
}

} // namespace

TEST_CASE("Half: fp64 -> fp16 rounds once (exact reference)", "[half]") {
  checkDoubleConversions(
      kHalf, halfRef(), doubleSample(halfRef(), halfSample(), -30, 20, 3),
      [](double v) { return toHalf(v); }, "toHalf(double)", convertF64ToF16,
      "convertF64ToF16");

  // Just above a tie: rounding once goes up; through fp32 the value would
  // first become the tie and then go to even (down).
  double x = 1.0 + 0x1p-11 + 0x1p-40;
  CHECK(toHalf(x).bits == 0x3c01);
  CHECK(toHalf(static_cast<float>(x)).bits == 0x3c00);
  CHECK(toHalf(65520.0 - 0x1p-30).bits == 0x7bff);
  CHECK(toHalf(0x1p-25 + 0x1p-70).bits == 0x0001);
}

TEST_CASE("BFloat16: fp64 -> bf16 rounds once (exact reference)", "[bf16]") {
  checkDoubleConversions(
      kBF16, bf16Ref(), doubleSample(bf16Ref(), bf16Sample(), -140, 130, 4),
      [](double v) { return toBFloat16(v); }, "toBFloat16(double)",
      convertF64ToBF16, "convertF64ToBF16");

  double x = 1.0 + 0x1p-8 + 0x1p-40;
  CHECK(toBFloat16(x).bits == 0x3f81);
  CHECK(toBFloat16(static_cast<float>(x)).bits == 0x3f80);
  // Beyond the fp32 range: bf16 rounds to inf (above the midpoint) or to
  // the max (below it) directly.
  CHECK(toBFloat16(0x1.ffp127 - 0x1p90).bits == 0x7f7f);
  CHECK(toBFloat16(0x1.ffp127).bits == 0x7f80);
  CHECK(toBFloat16(0x1p-134).bits == 0x0000);          // tie with 0: even
  CHECK(toBFloat16(0x1p-134 + 0x1p-180).bits == 0x0001);
}

//===----------------------------------------------------------------------===//
// Bulk paths, F16C, the floating-point environment, _Float16
//===----------------------------------------------------------------------===//

TEST_CASE("Half: bulk conversions handle every length (tails)", "[half]") {
  std::vector<float> src(67);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<float>(i) * 0.37f - 11.0f;
  Mismatches bad;
  for (size_t n = 0; n <= src.size(); ++n) {
    std::vector<uint16_t> h(n + 1, 0xabcd);
    convertF32ToF16(src.data(), h.data(), n);
    std::vector<uint16_t> b(n + 1, 0xabcd);
    convertF32ToBF16(src.data(), b.data(), n);
    std::vector<float> f(n + 1, -7.0f);
    convertF16ToF32(h.data(), f.data(), n);
    for (size_t i = 0; i < n; ++i) {
      if (h[i] != toHalf(src[i]).bits || b[i] != toBFloat16(src[i]).bits ||
          bitsOfF(f[i]) != bitsOfF(toFloat(Half::fromBits(h[i]))))
        bad.add("n=" + std::to_string(n) + " i=" + std::to_string(i));
    }
    if (h[n] != 0xabcd || b[n] != 0xabcd || f[n] != -7.0f)
      bad.add("n=" + std::to_string(n) + ": wrote past the end");
  }
  INFO(bad.first);
  CHECK(bad.count == 0);
}

TEST_CASE("Half: F16C and portable paths give the same bits", "[half]") {
  // On an x86 CPU with F16C the bulk functions use it; then they must agree
  // bit for bit with the portable code, NaNs included: every fp16 pattern,
  // and every 17th fp32 pattern (250 million values).
  INFO("F16C used: " << halfConversionsUseF16C());
  if (!halfConversionsUseF16C())
    WARN("this CPU has no F16C: the bulk functions use the portable code");
  std::vector<uint16_t> all(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    all[b] = static_cast<uint16_t>(b);
  std::vector<float> a(65536), p(65536);
  convertF16ToF32(all.data(), a.data(), all.size());
  detail::convertF16ToF32Portable(all.data(), p.data(), all.size());
  CHECK(std::memcmp(a.data(), p.data(), a.size() * sizeof(float)) == 0);

  const size_t chunk = 1 << 20;
  std::vector<float> in(chunk);
  std::vector<uint16_t> viaBulk(chunk), viaPortable(chunk);
  Mismatches bad;
  uint64_t next = 0;
  while (next <= 0xffffffffull) {
    size_t n = 0;
    for (; n < chunk && next <= 0xffffffffull; ++n, next += 17)
      in[n] = floatFromBits(static_cast<uint32_t>(next));
    convertF32ToF16(in.data(), viaBulk.data(), n);
    detail::convertF32ToF16Portable(in.data(), viaPortable.data(), n);
    if (std::memcmp(viaBulk.data(), viaPortable.data(), n * 2) != 0)
      for (size_t i = 0; i < n; ++i)
        if (viaBulk[i] != viaPortable[i])
          bad.add(hex(bitsOfF(in[i])) + ": bulk " + hex(viaBulk[i]) +
                  ", portable " + hex(viaPortable[i]));
  }
  INFO(bad.first);
  CHECK(bad.count == 0);
}

TEST_CASE("Half: results do not depend on the floating-point environment",
          "[half][bf16]") {
  // The rounding mode (and, on x86, FTZ/DAZ) must not change any result:
  // the conversions round to nearest even by themselves.
  std::vector<float> in = roundingSample(halfRef());
  std::vector<float> inB = roundingSample(bf16Ref());
  std::vector<double> inD(in.begin(), in.end());
  for (double m : halfRef().positives())
    inD.push_back(std::nextafter(m + std::ldexp(1.0, -30), INFINITY));
  // The results are computed under each environment, then checked under the
  // default one (the reference itself must not run with DAZ).
  struct Results {
    std::vector<uint16_t> h, hb, b, d;
    std::vector<float> w, ws;
  };
  auto compute = [&] {
    Results r;
    r.h.resize(in.size());
    r.hb.resize(in.size());
    r.b.resize(inB.size());
    r.d.resize(inD.size());
    r.w.resize(65536);
    r.ws.resize(65536);
    for (uint32_t x = 0; x < 65536; ++x)
      r.ws[x] = toFloat(Half::fromBits(static_cast<uint16_t>(x)));
    for (size_t i = 0; i < in.size(); ++i)
      r.h[i] = toHalf(in[i]).bits;
    convertF32ToF16(in.data(), r.hb.data(), in.size());
    for (size_t i = 0; i < inB.size(); ++i)
      r.b[i] = toBFloat16(inB[i]).bits;
    for (size_t i = 0; i < inD.size(); ++i)
      r.d[i] = toHalf(inD[i]).bits;
    std::vector<uint16_t> all(65536);
    for (uint32_t x = 0; x < 65536; ++x)
      all[x] = static_cast<uint16_t>(x);
    convertF16ToF32(all.data(), r.w.data(), all.size());
    return r;
  };
  auto check = [&](const std::string &mode, const Results &r, Mismatches &bad) {
    std::string prefix = mode + ": ";
    checkFromFloat(kHalf, halfRef(), in, r.h, (prefix + "toHalf").c_str(), bad);
    checkFromFloat(kHalf, halfRef(), in, r.hb,
                   (prefix + "convertF32ToF16").c_str(), bad);
    checkFromFloat(kBF16, bf16Ref(), inB, r.b, (prefix + "toBFloat16").c_str(),
                   bad);
    checkFromDouble(kHalf, halfRef(), inD, r.d,
                    (prefix + "toHalf(double)").c_str(), bad);
    for (uint32_t x = 0; x < 65536; ++x) {
      uint16_t h = static_cast<uint16_t>(x);
      if (bitsOfF(r.w[x]) != bitsOfF(toFloat(Half::fromBits(h))) ||
          bitsOfF(r.ws[x]) != bitsOfF(toFloat(Half::fromBits(h))))
        bad.add(prefix + "toFloat/convertF16ToF32(" + hex(x) + ")");
    }
  };
  Mismatches bad;
  const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
  const char *names[] = {"upward", "downward", "toward zero"};
  for (int i = 0; i < 3; ++i) {
    REQUIRE(std::fesetround(modes[i]) == 0);
    Results r = compute();
    std::fesetround(FE_TONEAREST);
    check(names[i], r, bad);
  }
#if MP_TEST_HAVE_MXCSR
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); // FTZ and DAZ
  Results r = compute();
  _mm_setcsr(saved);
  check("FTZ+DAZ", r, bad);
#endif
  INFO(bad.first);
  CHECK(bad.count == 0);
}

#if defined(__FLT16_MANT_DIG__) && (defined(__x86_64__) || defined(__aarch64__))
TEST_CASE("Half: agrees with the compiler's _Float16", "[half]") {
  // GCC >= 12 and Clang have _Float16 on x86-64 (conversions by libgcc/
  // compiler-rt or by the F16C/AVX512-FP16 instructions): an independent
  // implementation. Checked on every fp16 pattern, on the rounding sample,
  // on every 1021st fp32 pattern (4 million), and on the fp64 sample
  // (slow: GCC converts _Float16 in libgcc's soft-float code).
  Mismatches bad;
  for (uint32_t b = 0; b < 65536; ++b) {
    _Float16 h;
    uint16_t bits = static_cast<uint16_t>(b);
    std::memcpy(&h, &bits, 2);
    float theirs = static_cast<float>(h);
    float ours = toFloat(Half::fromBits(bits));
    if (kHalf.isNaN(bits) ? !std::isnan(ours)
                          : bitsOfF(theirs) != bitsOfF(ours))
      bad.add("widen " + hex(b));
  }
  auto cmp = [&](float f) {
    _Float16 h = static_cast<_Float16>(f);
    uint16_t theirs;
    std::memcpy(&theirs, &h, 2);
    uint16_t ours = toHalf(f).bits;
    if (std::isnan(f) ? !kHalf.isNaN(ours) || (ours ^ theirs) & 0x8000
                      : ours != theirs)
      bad.add("narrow " + hex(bitsOfF(f)) + ": ours " + hex(ours) +
              ", _Float16 " + hex(theirs));
  };
  for (float f : halfSample())
    cmp(f);
  for (uint64_t b = 0; b <= 0xffffffffull; b += 1021)
    cmp(floatFromBits(static_cast<uint32_t>(b)));
  for (double d : doubleSample(halfRef(), {}, -30, 20, 5)) {
    _Float16 h = static_cast<_Float16>(d);
    uint16_t theirs;
    std::memcpy(&theirs, &h, 2);
    uint16_t ours = toHalf(d).bits;
    if (std::isnan(d) ? !kHalf.isNaN(ours) : ours != theirs)
      bad.add("narrow double " + hex(bitsOfD(d)) + ": ours " + hex(ours) +
              ", _Float16 " + hex(theirs));
  }
  INFO(bad.first);
  CHECK(bad.count == 0);
}
#endif
