//===- RuntimeTestSupport.h - helpers shared by the runtime tests -*- C++
//-*-===//
//
// Deterministic random data, element access as double for every dtype,
// tensors made from and read as doubles, the one-rounding reference for
// 16-bit types and temporary directories: what the kernel, executor and file
// tests all need.
//
//===----------------------------------------------------------------------===//
#ifndef MP_TEST_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H
#define MP_TEST_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H

#include "mp/Runtime/CPU/FastCalls.h"
#include "mp/Runtime/Half.h"
#include "mp/Runtime/NarrowTypes.h"
#include "mp/Runtime/Tensor.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mp::rt::test {

/// splitmix64: the same numbers on every platform.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1p-53;
  }
};

/// v rounded (once, to nearest even) to float dtype t; other dtypes: v.
inline double roundTo(DType t, double v) {
  switch (t) {
  case DType::F32:
    return static_cast<double>(static_cast<float>(v));
  case DType::F16:
    return toFloat(toHalf(v));
  case DType::BF16:
    return toFloat(toBFloat16(v));
  default:
    return v;
  }
}

/// Element i of a tensor of any dtype, as double.
inline double getD(const HostTensor &t, int64_t i) {
  const void *p = t.data();
  switch (t.dtype()) {
  case DType::F32: return static_cast<const float *>(p)[i];
  case DType::F64: return static_cast<const double *>(p)[i];
  case DType::F16: return toFloat(static_cast<const Half *>(p)[i]);
  case DType::BF16: return toFloat(static_cast<const BFloat16 *>(p)[i]);
  case DType::I8: return static_cast<const int8_t *>(p)[i];
  case DType::I16: return static_cast<const int16_t *>(p)[i];
  case DType::I32: return static_cast<const int32_t *>(p)[i];
  case DType::I64: return static_cast<double>(static_cast<const int64_t *>(p)[i]);
  case DType::U8:
  case DType::Bool: return static_cast<const uint8_t *>(p)[i];
  case DType::U16: return static_cast<const uint16_t *>(p)[i];
  case DType::U32: return static_cast<const uint32_t *>(p)[i];
  case DType::U64: return static_cast<double>(static_cast<const uint64_t *>(p)[i]);
  default:
    return elementAsDouble(t, i); // the narrow types
  }
  return 0;
}

/// Sets element i to v: rounded to nearest even for 16-bit floats,
/// converted by C++ rules for the others.
inline void setD(HostTensor &t, int64_t i, double v) {
  void *p = t.data();
  switch (t.dtype()) {
  case DType::F32: static_cast<float *>(p)[i] = static_cast<float>(v); return;
  case DType::F64: static_cast<double *>(p)[i] = v; return;
  case DType::F16: static_cast<Half *>(p)[i] = toHalf(v); return;
  case DType::BF16: static_cast<BFloat16 *>(p)[i] = toBFloat16(v); return;
  case DType::I8: static_cast<int8_t *>(p)[i] = static_cast<int8_t>(v); return;
  case DType::I16: static_cast<int16_t *>(p)[i] = static_cast<int16_t>(v); return;
  case DType::I32: static_cast<int32_t *>(p)[i] = static_cast<int32_t>(v); return;
  case DType::I64: static_cast<int64_t *>(p)[i] = static_cast<int64_t>(v); return;
  case DType::U8:
  case DType::Bool: static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(v); return;
  case DType::U16: static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(v); return;
  case DType::U32: static_cast<uint32_t *>(p)[i] = static_cast<uint32_t>(v); return;
  case DType::U64: static_cast<uint64_t *>(p)[i] = static_cast<uint64_t>(v); return;
  default: // the narrow types, as kernel.cast rounds
    static_cast<uint8_t *>(p)[i] =
        narrow::encodeNarrow(static_cast<int32_t>(t.dtype()), v);
    return;
  }
}

/// A tensor of dtype t holding `v` (one value per element, row-major).
inline HostTensor tensor(DType t, Shape s, const std::vector<double> &v) {
  HostTensor r(t, std::move(s));
  REQUIRE(static_cast<size_t>(r.numElements()) == v.size());
  for (size_t i = 0; i < v.size(); ++i)
    setD(r, static_cast<int64_t>(i), v[i]);
  return r;
}

/// A tensor of dtype t with every element v.
inline HostTensor filled(DType t, Shape s, double v) {
  HostTensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numElements(); ++i)
    setD(r, i, v);
  return r;
}

/// The elements of t as doubles; none for a default (empty) HostTensor.
inline std::vector<double> values(const HostTensor &t) {
  if (!t.data())
    return {};
  std::vector<double> r(static_cast<size_t>(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    r[i] = getD(t, i);
  return r;
}

/// Checks got against ref: exact for integers, else within tol * (|ref| + 1)
/// (for 16-bit: between the roundings of ref -/+ that bound); NaN matches
/// NaN and infinities must be equal.
inline void expectClose(const HostTensor &got, const std::vector<double> &ref,
                        double tol) {
  REQUIRE(static_cast<size_t>(got.numElements()) == ref.size());
  DType t = got.dtype();
  int64_t bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = getD(got, static_cast<int64_t>(i)), r = ref[i];
    double b = tol * (std::fabs(r) + 1.0);
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r) || !isFloat(t))
      ok = g == r;
    else if (t == DType::F16 || t == DType::BF16)
      ok = roundTo(t, r - b) <= g && g <= roundTo(t, r + b);
    else
      ok = std::fabs(g - r) <= b;
    if (!ok && bad++ < 5)
      msg << "  [" << i << "] got " << g << ", expected " << r << "\n";
  }
  INFO("dtype " << dtypeName(t) << ", " << bad << " mismatches:\n"
                << msg.str());
  CHECK(bad == 0);
}

/// |got - ref| <= absTol + relTol * |ref| elementwise.
inline void expectClose(const std::vector<double> &got,
                        const std::vector<double> &ref, double absTol,
                        double relTol, const std::string &what) {
  INFO(what);
  REQUIRE(got.size() == ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= absTol + relTol * std::fabs(ref[i]))) {
      if (bad < 5)
        UNSCOPED_INFO("element " << i << ": got " << got[i] << ", expected "
                                 << ref[i]);
      ++bad;
    }
  CHECK(bad == 0);
}

/// A tensor of uniform values in [lo, hi) (whole numbers for integer types).
inline HostTensor randomTensor(DType t, Shape s, Rng &rng, double lo = -1.0,
                               double hi = 1.0) {
  HostTensor r(t, std::move(s));
  for (int64_t i = 0; i < r.numElements(); ++i)
    setD(r, i,
         isFloat(t) ? rng.uniform(lo, hi) : std::floor(rng.uniform(lo, hi)));
  return r;
}

/// A fresh directory, removed with everything in it at the end of the scope.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string &prefix = "mp-runtime-test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           (prefix + "-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  std::string file(const std::string &name) const {
    return (path / name).string();
  }
  /// Names of the entries of the directory, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(path))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

/// While alive, calls prepared on this process choose the 16-bit
/// convolutions' and matmuls' path as MP_CPU_16BIT_PRODUCTS says (native
/// 16-bit kernels or f32 copies; unset: by the CPU), whatever the CPU.
class ScopedSixteenBitProducts {
public:
  explicit ScopedSixteenBitProducts(const char *mode) {
    if (mode)
      ::setenv("MP_CPU_16BIT_PRODUCTS", mode, 1);
    else
      ::unsetenv("MP_CPU_16BIT_PRODUCTS");
  }
  ~ScopedSixteenBitProducts() { ::unsetenv("MP_CPU_16BIT_PRODUCTS"); }
  ScopedSixteenBitProducts(const ScopedSixteenBitProducts &) = delete;
  ScopedSixteenBitProducts &
  operator=(const ScopedSixteenBitProducts &) = delete;
};

/// The CPU kernels' thread count while alive (cpu::configureCpuThreads),
/// so that a test runs the one- and the several-thread paths of a call on
/// any machine; the count before is restored.
class ScopedCpuThreads {
public:
  explicit ScopedCpuThreads(int threads) : before_(cpu::cpuThreads()) {
    cpu::configureCpuThreads(cpu::CpuKernels::Fast, threads);
  }
  ~ScopedCpuThreads() {
    cpu::configureCpuThreads(cpu::CpuKernels::Fast, before_);
  }
  ScopedCpuThreads(const ScopedCpuThreads &) = delete;
  ScopedCpuThreads &operator=(const ScopedCpuThreads &) = delete;

private:
  int before_;
};

} // namespace mp::rt::test

#endif // MP_TEST_UNIT_RUNTIME_RUNTIMETESTSUPPORT_H
