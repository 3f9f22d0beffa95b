// Tests of the CPU data-movement and indexing kernels
// (mp/Runtime/CPU/DataKernels.h) and their plan calls.
//
// The kernels move bytes, so most tests fill x with a distinct bit pattern
// per element and compare y element by element (as bytes) with the element
// of x that a reference, written here with plain index arithmetic on
// coordinates, says it must come from. They run over several dtypes (f32,
// f16 as raw 16-bit patterns, i64, u8, bool). Known values come from the
// ONNX operator documentation.
#include "mp/Runtime/CPU/Calls.h"
#include "mp/Runtime/CPU/DataKernels.h"
#include "mp/Runtime/Half.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::cpu;

namespace {

using Coord = std::vector<int64_t>;

Coord unravel(int64_t i, const Shape &s) {
  Coord c(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    c[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return c;
}

int64_t ravel(const Coord &c, const Shape &s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + c[d];
  return i;
}

/// A tensor whose elements have distinct bytes (bool: 0/1 by a pattern; u8
/// repeats every 251 elements, enough for the small shapes here).
HostTensor pattern(DType t, Shape s, uint64_t seed = 1) {
  HostTensor r(t, std::move(s));
  const size_t es = byteSize(t);
  auto *bytes = static_cast<unsigned char *>(r.data());
  for (int64_t i = 0; i < r.numElements(); ++i) {
    uint64_t v = (static_cast<uint64_t>(i) + seed) * 0x9e3779b97f4a7c15ull;
    v ^= v >> 29;
    if (t == DType::Bool)
      v = ((i * 7 + seed) % 3) == 0;
    else if (es == 1)
      v = (static_cast<uint64_t>(i) + seed) % 251;
    else if (es == 2)
      v = (static_cast<uint64_t>(i) + seed) % 0x7c00u; // finite f16 patterns
    else if (t == DType::F32) {
      float f = static_cast<float>(i) + static_cast<float>(seed) * 0.5f;
      std::memcpy(&v, &f, 4);
    }
    std::memcpy(bytes + i * es, &v, es);
  }
  return r;
}

/// A tensor filled with 0xAB bytes, so that unwritten elements show.
HostTensor garbage(DType t, Shape s) {
  HostTensor r(t, std::move(s));
  if (r.byteCount())
    std::memset(r.data(), 0xAB, r.byteCount());
  return r;
}

bool sameElement(const HostTensor &a, int64_t ai, const HostTensor &b,
                 int64_t bi) {
  const size_t es = byteSize(a.dtype());
  return std::memcmp(static_cast<const char *>(a.data()) + ai * es,
                     static_cast<const char *>(b.data()) + bi * es, es) == 0;
}

/// y[c] must be x[source(c)] for every coordinate c of y.
void checkGathered(const HostTensor &x, const HostTensor &y,
                   const std::function<Coord(const Coord &)> &source) {
  int mismatches = 0;
  for (int64_t i = 0; i < y.numElements(); ++i) {
    Coord c = unravel(i, y.shape());
    int64_t xi = ravel(source(c), x.shape());
    if (!sameElement(y, i, x, xi) && ++mismatches <= 5)
      FAIL_CHECK("y element " << i << " differs from x element " << xi);
  }
  CHECK(mismatches == 0);
}

const DType kDTypes[] = {DType::F32, DType::F16, DType::I64, DType::U8,
                         DType::Bool};

std::string dtypeLabel(DType t) { return std::string(dtypeName(t)); }

template <typename T> HostTensor tensorOf(DType t, Shape s, std::vector<T> v) {
  HostTensor r(t, std::move(s));
  REQUIRE(static_cast<int64_t>(v.size()) == r.numElements());
  if (!v.empty())
    std::memcpy(r.data(), v.data(), v.size() * sizeof(T));
  return r;
}

template <typename T> std::vector<T> valuesOf(const HostTensor &t) {
  const T *p = t.as<T>();
  return std::vector<T>(p, p + t.numElements());
}

void requireError(const Status &s, const std::string &part) {
  REQUIRE_FALSE(s.isOk());
  INFO(s.message());
  CHECK(s.message().find(part) != std::string::npos);
}

} // namespace

//===----------------------------------------------------------------------===//
// Transpose, copy
//===----------------------------------------------------------------------===//

TEST_CASE("transpose matches the permuted index map", "[cpu][data]") {
  struct Case {
    Shape x;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {1, 0, 2}},
      {{2, 3, 4}, {1, 2, 0}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {2, 1, 0}},
      {{67, 45}, {1, 0}},
      {{3, 70, 33}, {0, 2, 1}},
      {{2, 3, 5, 7}, {0, 2, 3, 1}}, // NCHW -> NHWC
      {{2, 5, 7, 3}, {0, 3, 1, 2}}, // NHWC -> NCHW
      {{1, 3, 1, 5}, {3, 2, 0, 1}},
      {{2, 3, 4, 5, 2}, {4, 1, 3, 0, 2}},
      {{6}, {0}},
      {{}, {}},
      {{3, 0, 2}, {2, 0, 1}},
      // 2 to 4 columns (an image's colour planes going channels last).
      {{4, 9, 6}, {1, 2, 0}},
      {{2, 4, 11, 3}, {0, 2, 3, 1}},
      {{3, 2, 37}, {0, 2, 1}},
  };
  for (DType t : kDTypes)
    for (const Case &c : cases) {
      INFO(dtypeLabel(t) << " perm of rank " << c.perm.size());
      HostTensor x = pattern(t, c.x);
      Shape ys;
      for (int64_t p : c.perm)
        ys.push_back(c.x[p]);
      HostTensor y = garbage(t, ys);
      REQUIRE(transpose(x.view(), y.view(), c.perm).isOk());
      checkGathered(x, y, [&](const Coord &yc) {
        Coord xc(yc.size());
        for (size_t i = 0; i < yc.size(); ++i)
          xc[c.perm[i]] = yc[i];
        return xc;
      });
    }
}

TEST_CASE("transpose: empty perm reverses, errors", "[cpu][data]") {
  HostTensor x = pattern(DType::F32, {2, 3, 4});
  HostTensor y = garbage(DType::F32, {4, 3, 2});
  REQUIRE(transpose(x.view(), y.view(), {}).isOk());
  checkGathered(x, y, [](const Coord &c) { return Coord{c[2], c[1], c[0]}; });
  requireError(transpose(x.view(), y.view(), {0, 0, 1}), "not a permutation");
  requireError(transpose(x.view(), y.view(), {0, 1}), "perm has 2 entries");
  requireError(transpose(x.view(), y.view(), {0, 1, 2}), "permuted");
  HostTensor yi = garbage(DType::I64, {4, 3, 2});
  requireError(transpose(x.view(), yi.view(), {2, 1, 0}), "dtype");
}

TEST_CASE("copy reshapes and checks counts", "[cpu][data]") {
  HostTensor x = pattern(DType::I64, {2, 6});
  HostTensor y = garbage(DType::I64, {3, 4});
  REQUIRE(copy(x.view(), y.view()).isOk());
  CHECK(std::memcmp(x.data(), y.data(), x.byteCount()) == 0);
  REQUIRE(copy(x.view(), x.view()).isOk()); // in place
  HostTensor z = garbage(DType::I64, {5});
  requireError(copy(x.view(), z.view()), "numbers of elements");
}

//===----------------------------------------------------------------------===//
// Broadcast, tile, concat
//===----------------------------------------------------------------------===//

TEST_CASE("broadcast follows numpy's rules", "[cpu][data]") {
  struct Case {
    Shape x, y;
  };
  const Case cases[] = {
      {{3, 1}, {2, 3, 4}}, {{1}, {5}},       {{4}, {3, 4}},
      {{2, 1, 3}, {2, 4, 3}}, {{}, {2, 2}},  {{1, 5, 1}, {3, 5, 6}},
      {{2, 3}, {2, 3}},    {{3, 1}, {3, 0}},
  };
  for (DType t : kDTypes)
    for (const Case &c : cases) {
      INFO(dtypeLabel(t));
      HostTensor x = pattern(t, c.x);
      HostTensor y = garbage(t, c.y);
      REQUIRE(broadcast(x.view(), y.view()).isOk());
      checkGathered(x, y, [&](const Coord &yc) {
        Coord xc(c.x.size());
        const size_t off = c.y.size() - c.x.size();
        for (size_t d = 0; d < c.x.size(); ++d)
          xc[d] = c.x[d] == 1 ? 0 : yc[off + d];
        return xc;
      });
    }
  HostTensor x = pattern(DType::F32, {3, 2});
  HostTensor y = garbage(DType::F32, {3, 4});
  requireError(broadcast(x.view(), y.view()), "does not broadcast");
}

TEST_CASE("tile repeats x along every dim", "[cpu][data]") {
  struct Case {
    Shape x, y;
  };
  const Case cases[] = {{{2, 3}, {4, 9}},    {{1, 2, 1}, {3, 2, 5}},
                        {{2, 3}, {2, 3}},    {{3}, {12}},
                        {{2, 2, 3}, {2, 4, 3}}, {{2, 0}, {4, 0}}};
  for (DType t : kDTypes)
    for (const Case &c : cases) {
      INFO(dtypeLabel(t));
      HostTensor x = pattern(t, c.x);
      HostTensor y = garbage(t, c.y);
      REQUIRE(tile(x.view(), y.view()).isOk());
      checkGathered(x, y, [&](const Coord &yc) {
        Coord xc(yc.size());
        for (size_t d = 0; d < yc.size(); ++d)
          xc[d] = yc[d] % c.x[d];
        return xc;
      });
    }
  HostTensor x = pattern(DType::F32, {2, 3});
  HostTensor y = garbage(DType::F32, {4, 8});
  requireError(tile(x.view(), y.view()), "whole number");
}

TEST_CASE("concat along any axis", "[cpu][data]") {
  for (DType t : kDTypes)
    for (int64_t axis : {0, 1, 2, -1}) {
      INFO(dtypeLabel(t) << " axis " << axis);
      const int64_t a = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> sizes = {2, 0, 3, 1};
      std::vector<HostTensor> inputs;
      std::vector<TensorView> views;
      Shape ys = {2, 3, 4};
      ys[a] = 0;
      for (size_t i = 0; i < sizes.size(); ++i) {
        Shape s = {2, 3, 4};
        s[a] = sizes[i];
        ys[a] += sizes[i];
        inputs.push_back(pattern(t, s, 100 * i + 1));
      }
      for (const HostTensor &in : inputs)
        views.push_back(in.view());
      HostTensor y = garbage(t, ys);
      REQUIRE(concat(views, y.view(), axis).isOk());
      int mismatches = 0;
      for (int64_t i = 0; i < y.numElements(); ++i) {
        Coord c = unravel(i, ys);
        size_t k = 0;
        while (c[a] >= sizes[k]) // the input that holds this position
          c[a] -= sizes[k++];
        if (!sameElement(y, i, inputs[k], ravel(c, inputs[k].shape())))
          ++mismatches;
      }
      CHECK(mismatches == 0);
    }
  {
    // Large enough for the rows to be split over threads (DenseNet's
    // channels-last concatenations: many short rows per input).
    INFO("channels last, 3,136 rows");
    const std::vector<int64_t> channels = {64, 32, 0, 32, 7};
    std::vector<HostTensor> inputs;
    std::vector<TensorView> views;
    int64_t total = 0;
    for (size_t i = 0; i < channels.size(); ++i) {
      inputs.push_back(
          pattern(DType::F32, {1, 56, 56, channels[i]}, 7 * i + 3));
      views.push_back(inputs.back().view());
      total += channels[i];
    }
    HostTensor y = garbage(DType::F32, {1, 56, 56, total});
    REQUIRE(concat(views, y.view(), 3).isOk());
    int mismatches = 0;
    for (int64_t row = 0; row < 56 * 56; ++row) {
      int64_t column = 0;
      for (size_t k = 0; k < channels.size(); ++k)
        for (int64_t c = 0; c < channels[k]; ++c, ++column)
          if (!sameElement(y, row * total + column, inputs[k],
                           row * channels[k] + c))
            ++mismatches;
    }
    CHECK(mismatches == 0);
  }
  HostTensor a = pattern(DType::F32, {2, 3}), b = pattern(DType::F32, {3, 3});
  HostTensor y = garbage(DType::F32, {5, 3});
  requireError(concat({a.view(), b.view()}, y.view(), 1), "does not match");
  HostTensor y2 = garbage(DType::F32, {6, 3});
  requireError(concat({a.view(), b.view()}, y2.view(), 0), "add up to 5");
  requireError(concat({a.view()}, y.view(), 2), "axis 2 is out of range");
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

TEST_CASE("slice with positive and negative steps", "[cpu][data]") {
  struct Case {
    Shape y;
    std::vector<int64_t> starts, steps;
  };
  const Shape xs = {5, 6, 7};
  const Case cases[] = {
      {{5, 6, 7}, {0, 0, 0}, {1, 1, 1}},  // everything
      {{2, 6, 7}, {1, 0, 0}, {1, 1, 1}},  // one contiguous run
      {{3, 2, 4}, {1, 2, 3}, {1, 1, 1}},  // runs along the last dim
      {{5, 6, 7}, {4, 5, 6}, {-1, -1, -1}}, // reversed
      {{2, 3, 3}, {4, 0, 6}, {-3, 2, -2}},
      {{1, 1, 1}, {2, 3, 4}, {1, 1, 1}},
      {{3, 6, 2}, {0, 0, 1}, {2, 1, 5}},
      {{0, 6, 7}, {0, 0, 0}, {1, 1, 1}},   // empty
      // One element of a dim ignores its step, however large (a fuzzed plan:
      // the step used to be multiplied into the strides, an overflow).
      {{1, 6, 1}, {2, 0, 3}, {int64_t(1) << 61, 1, -(int64_t(1) << 62)}},
  };
  for (DType t : kDTypes)
    for (const Case &c : cases) {
      INFO(dtypeLabel(t));
      HostTensor x = pattern(t, xs);
      HostTensor y = garbage(t, c.y);
      REQUIRE(slice(x.view(), y.view(), c.starts, c.steps).isOk());
      checkGathered(x, y, [&](const Coord &yc) {
        Coord xc(3);
        for (size_t d = 0; d < 3; ++d)
          xc[d] = c.starts[d] + yc[d] * c.steps[d];
        return xc;
      });
    }
  HostTensor x = pattern(DType::F32, xs);
  HostTensor y = garbage(DType::F32, {3, 6, 7});
  requireError(slice(x.view(), y.view(), {3, 0, 0}, {1, 1, 1}), "dim 0");
  requireError(slice(x.view(), y.view(), {1, 0, 0}, {-1, 1, 1}), "dim 0");
  requireError(slice(x.view(), y.view(), {0, 0, 0}, {1, 0, 1}), "step");
  requireError(slice(x.view(), y.view(), {0, 0}, {1, 1}), "one entry per dim");
}

TEST_CASE("kernel.slice through the call table", "[cpu][data][calls]") {
  CallFn fn = cpuCallTable().find("kernel.slice");
  REQUIRE(fn);
  HostTensor x = tensorOf<float>(DType::F32, {3, 4},
                                 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  HostTensor y = garbage(DType::F32, {2, 2});
  PlanCall call;
  call.kind = "kernel.slice";
  call.operands = {0};
  call.results = {1};
  call.attributes = {{"starts", std::vector<int64_t>{2, 3}},
                     {"steps", std::vector<int64_t>{-2, -2}}};
  CallArgs args{call, {x.view()}, {y.view()}};
  REQUIRE(fn(args).isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{11, 9, 3, 1});

  PlanCall missing = call;
  missing.attributes.pop_back();
  CallArgs args2{missing, {x.view()}, {y.view()}};
  requireError(fn(args2), "attribute 'steps' is missing");
  CallArgs args3{call, {x.view(), x.view()}, {y.view()}};
  requireError(fn(args3), "operands");
}

TEST_CASE("every data call kind is in the CPU call table", "[cpu][data][calls]") {
  for (const char *kind :
       {"kernel.transpose", "kernel.copy", "kernel.broadcast", "kernel.tile",
        "kernel.concat", "kernel.slice", "kernel.pad", "kernel.gather",
        "kernel.gather_elements", "kernel.gather_nd",
        "kernel.scatter_elements", "kernel.scatter_nd", "kernel.resize"}) {
    INFO(kind);
    CHECK(cpuCallTable().find(kind) != nullptr);
  }
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

namespace {

/// numpy.pad's index map for the modes other than constant, by repeated
/// folding (reflect), clamping (edge) or shifting (wrap), on x cropped to
/// [lo, lo + n).
int64_t padSource(PadMode mode, int64_t j, int64_t n) {
  if (mode == PadMode::Edge)
    return std::min(std::max<int64_t>(j, 0), n - 1);
  if (mode == PadMode::Wrap) {
    while (j < 0)
      j += n;
    while (j >= n)
      j -= n;
    return j;
  }
  if (n == 1)
    return 0;
  while (j < 0 || j >= n)
    j = j < 0 ? -j : 2 * (n - 1) - j;
  return j;
}

} // namespace

TEST_CASE("pad in every mode, with negative pads", "[cpu][data]") {
  const Shape xs = {3, 4, 5};
  const std::vector<std::vector<int64_t>> padsList = {
      {0, 0, 0, 0, 0, 0}, {1, 2, 3, 2, 1, 0},   {0, -1, 2, 1, 3, -2},
      {-1, 0, -2, -1, -1, 4}, {0, 7, 0, 0, 9, 0}, {2, 0, 1, 0, 0, 11}};
  for (DType t : kDTypes)
    for (PadMode mode :
         {PadMode::Constant, PadMode::Reflect, PadMode::Edge, PadMode::Wrap})
      for (const auto &pads : padsList) {
        INFO(dtypeLabel(t) << " mode " << int(mode) << " pads " << pads[0]
                           << "," << pads[1] << "," << pads[2] << ","
                           << pads[3] << "," << pads[4] << "," << pads[5]);
        HostTensor x = pattern(t, xs);
        Shape ys(3);
        for (size_t d = 0; d < 3; ++d)
          ys[d] = xs[d] + pads[d] + pads[3 + d];
        HostTensor y = garbage(t, ys);
        const double value = t == DType::F16 ? 0.1 : 3.0;
        REQUIRE(pad(x.view(), y.view(), mode, pads, value).isOk());
        HostTensor constant(t, {1});
        switch (t) {
        case DType::F32: constant.as<float>()[0] = 3.0f; break;
        case DType::F16: constant.as<Half>()[0] = toHalf(0.1); break;
        case DType::I64: constant.as<int64_t>()[0] = 3; break;
        default: constant.as<uint8_t>()[0] = t == DType::Bool ? 1 : 3; break;
        }
        int mismatches = 0;
        for (int64_t i = 0; i < y.numElements(); ++i) {
          Coord c = unravel(i, ys);
          Coord xc(3);
          bool inside = true;
          for (size_t d = 0; d < 3; ++d) {
            const int64_t lo = std::max<int64_t>(-pads[d], 0);
            const int64_t n = xs[d] - lo - std::max<int64_t>(-pads[3 + d], 0);
            const int64_t j = c[d] - std::max<int64_t>(pads[d], 0);
            if (j < 0 || j >= n)
              inside = false;
            xc[d] = lo + (mode == PadMode::Constant ? j : padSource(mode, j, n));
          }
          bool ok = mode == PadMode::Constant && !inside
                        ? sameElement(y, i, constant, 0)
                        : sameElement(y, i, x, ravel(xc, xs));
          if (!ok)
            ++mismatches;
        }
        CHECK(mismatches == 0);
      }
}

TEST_CASE("pad: known values and errors", "[cpu][data]") {
  // ONNX Pad's documented reflect example.
  HostTensor x = tensorOf<float>(DType::F32, {3, 2}, {1.0f, 1.2f, 2.3f, 3.4f,
                                                      4.5f, 5.7f});
  HostTensor y = garbage(DType::F32, {3, 4});
  REQUIRE(pad(x.view(), y.view(), PadMode::Reflect, {0, 2, 0, 0}).isOk());
  CHECK(valuesOf<float>(y) ==
        std::vector<float>{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f,
                           4.5f, 5.7f, 4.5f, 5.7f});
  REQUIRE(pad(x.view(), y.view(), PadMode::Edge, {0, 2, 0, 0}).isOk());
  CHECK(valuesOf<float>(y) ==
        std::vector<float>{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f,
                           4.5f, 4.5f, 4.5f, 5.7f});
  // bf16 constants round to nearest even from the double.
  HostTensor xb = garbage(DType::BF16, {1});
  HostTensor yb = garbage(DType::BF16, {3});
  xb.as<BFloat16>()[0] = toBFloat16(1.0f);
  REQUIRE(pad(xb.view(), yb.view(), PadMode::Constant, {1, 1}, 1.00390625)
              .isOk()); // the midpoint between 1 and 1 + 2^-7 -> 1
  CHECK(yb.as<BFloat16>()[0].bits == toBFloat16(1.0f).bits);
  // Integer constants must fit; non-constant modes need data.
  HostTensor xu = pattern(DType::U8, {2});
  HostTensor yu = garbage(DType::U8, {4});
  requireError(pad(xu.view(), yu.view(), PadMode::Constant, {1, 1}, 256.0),
               "does not fit dtype ui8");
  requireError(pad(xu.view(), yu.view(), PadMode::Constant, {1, 1}, -1.0),
               "does not fit");
  HostTensor yc = garbage(DType::U8, {2});
  requireError(pad(xu.view(), yc.view(), PadMode::Reflect, {-2, 2}),
               "empty after cropping");
  requireError(pad(xu.view(), yu.view(), PadMode::Edge, {1, 2}),
               "padded by");
  PadMode m;
  CHECK_FALSE(parsePadMode("mirror", m));
}

TEST_CASE("kernel.pad through the call table", "[cpu][data][calls]") {
  CallFn fn = cpuCallTable().find("kernel.pad");
  REQUIRE(fn);
  HostTensor x = tensorOf<int64_t>(DType::I64, {2}, {5, 6});
  HostTensor y = garbage(DType::I64, {5});
  PlanCall call;
  call.kind = "kernel.pad";
  call.attributes = {{"mode", std::string("constant")},
                     {"pads", std::vector<int64_t>{2, 1}},
                     {"value", -7.0}};
  REQUIRE(fn({call, {x.view()}, {y.view()}}).isOk());
  CHECK(valuesOf<int64_t>(y) == std::vector<int64_t>{-7, -7, 5, 6, -7});
  call.attributes[0].value = std::string("symmetric");
  requireError(fn({call, {x.view()}, {y.view()}}),
               "attribute 'mode' has an unknown value 'symmetric'");
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

TEST_CASE("gather along each axis with negative indices", "[cpu][data]") {
  const Shape xs = {3, 4, 5};
  for (DType t : kDTypes)
    for (DType it : {DType::I32, DType::I64})
      for (int64_t axis : {0, 1, 2, -1}) {
        INFO(dtypeLabel(t) << " indices " << dtypeLabel(it) << " axis "
                           << axis);
        const size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
        const std::vector<int64_t> idx = {2, -1, 0, 0, -3, 1};
        HostTensor indices(it, {2, 3});
        for (size_t i = 0; i < idx.size(); ++i) {
          if (it == DType::I32)
            indices.as<int32_t>()[i] = static_cast<int32_t>(idx[i]);
          else
            indices.as<int64_t>()[i] = idx[i];
        }
        HostTensor x = pattern(t, xs);
        Shape ys(xs.begin(), xs.begin() + a);
        ys.push_back(2);
        ys.push_back(3);
        ys.insert(ys.end(), xs.begin() + a + 1, xs.end());
        HostTensor y = garbage(t, ys);
        REQUIRE(gather(x.view(), indices.view(), y.view(), axis).isOk());
        checkGathered(x, y, [&](const Coord &yc) {
          Coord xc(yc.begin(), yc.begin() + a);
          int64_t v = idx[yc[a] * 3 + yc[a + 1]];
          xc.push_back(v < 0 ? v + xs[a] : v);
          xc.insert(xc.end(), yc.begin() + a + 2, yc.end());
          return xc;
        });
      }
}

TEST_CASE("gather: scalar indices, out-of-range errors", "[cpu][data]") {
  HostTensor x = tensorOf<float>(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor scalar = tensorOf<int64_t>(DType::I64, {}, {-2});
  HostTensor y = garbage(DType::F32, {2});
  REQUIRE(gather(x.view(), scalar.view(), y.view(), 0).isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{3, 4});

  HostTensor bad = tensorOf<int32_t>(DType::I32, {2}, {0, 3});
  HostTensor y2 = garbage(DType::F32, {2, 2});
  requireError(gather(x.view(), bad.view(), y2.view(), 0),
               "index 3 (indices element 1) is out of range for dim 0 of "
               "size 3");
  HostTensor bad2 = tensorOf<int32_t>(DType::I32, {2}, {-4, 0});
  requireError(gather(x.view(), bad2.view(), y2.view(), 0), "index -4");
  HostTensor fidx = tensorOf<float>(DType::F32, {2}, {0, 1});
  requireError(gather(x.view(), fidx.view(), y2.view(), 0), "i32 or i64");
  requireError(gather(x.view(), bad.view(), y2.view(), 2), "axis 2");
  HostTensor y3 = garbage(DType::F32, {2, 3});
  requireError(gather(x.view(), bad.view(), y3.view(), 0), "should be [2, 2]");
}

TEST_CASE("gather_elements matches its definition", "[cpu][data]") {
  const Shape xs = {3, 4, 5};
  const Shape is = {2, 4, 3}; // smaller than data outside the axis
  for (DType t : kDTypes)
    for (int64_t axis : {0, 1, 2}) {
      INFO(dtypeLabel(t) << " axis " << axis);
      HostTensor x = pattern(t, xs);
      HostTensor indices(DType::I64, is);
      for (int64_t i = 0; i < indices.numElements(); ++i)
        indices.as<int64_t>()[i] = (i * 7) % (2 * xs[axis]) - xs[axis];
      HostTensor y = garbage(t, is);
      REQUIRE(gatherElements(x.view(), indices.view(), y.view(), axis).isOk());
      checkGathered(x, y, [&](const Coord &yc) {
        Coord xc = yc;
        int64_t v = indices.as<int64_t>()[ravel(yc, is)];
        xc[axis] = v < 0 ? v + xs[axis] : v;
        return xc;
      });
    }
  // The ONNX example (axis 1).
  HostTensor data = tensorOf<float>(DType::F32, {2, 2}, {1, 2, 3, 4});
  HostTensor idx = tensorOf<int64_t>(DType::I64, {2, 2}, {0, 0, 1, 0});
  HostTensor y = garbage(DType::F32, {2, 2});
  REQUIRE(gatherElements(data.view(), idx.view(), y.view(), 1).isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 1, 4, 3});
  HostTensor bad = tensorOf<int64_t>(DType::I64, {2, 2}, {0, 2, 1, 0});
  requireError(gatherElements(data.view(), bad.view(), y.view(), 1),
               "index 2 (indices element 1)");
  HostTensor big(DType::I64, {3, 2});
  HostTensor yb = garbage(DType::F32, {3, 2});
  requireError(gatherElements(data.view(), big.view(), yb.view(), 1),
               "larger than data");
}

TEST_CASE("gather_nd: the ONNX examples", "[cpu][data]") {
  auto run = [](Shape ds, std::vector<int32_t> d, Shape is,
                std::vector<int64_t> i, int64_t b, Shape ys) {
    HostTensor data = tensorOf<int32_t>(DType::I32, ds, d);
    HostTensor indices = tensorOf<int64_t>(DType::I64, is, i);
    HostTensor y = garbage(DType::I32, ys);
    Status s = gatherND(data.view(), indices.view(), y.view(), b);
    REQUIRE(s.isOk());
    return valuesOf<int32_t>(y);
  };
  CHECK(run({2, 2}, {0, 1, 2, 3}, {2, 2}, {0, 0, 1, 1}, 0, {2}) ==
        std::vector<int32_t>{0, 3});
  CHECK(run({2, 2}, {0, 1, 2, 3}, {2, 1}, {1, 0}, 0, {2, 2}) ==
        std::vector<int32_t>{2, 3, 0, 1});
  CHECK(run({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2}, {0, 1, 1, 0}, 0,
            {2, 2}) == std::vector<int32_t>{2, 3, 4, 5});
  CHECK(run({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 1, 2}, {0, 1, 1, 0}, 0,
            {2, 1, 2}) == std::vector<int32_t>{2, 3, 4, 5});
  CHECK(run({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 1}, {1, 0}, 1, {2, 2}) ==
        std::vector<int32_t>{2, 3, 4, 5});
  // Negative indices count from the end; out of range is an error.
  CHECK(run({2, 2}, {0, 1, 2, 3}, {1, 2}, {-1, -2}, 0, {1}) ==
        std::vector<int32_t>{2});
  HostTensor data = tensorOf<int32_t>(DType::I32, {2, 2}, {0, 1, 2, 3});
  HostTensor bad = tensorOf<int64_t>(DType::I64, {1, 2}, {0, 2});
  HostTensor y = garbage(DType::I32, {1});
  requireError(gatherND(data.view(), bad.view(), y.view(), 0),
               "out of range for dim 1");
  HostTensor k3 = tensorOf<int64_t>(DType::I64, {1, 3}, {0, 0, 0});
  requireError(gatherND(data.view(), k3.view(), y.view(), 0),
               "last dim of indices");
}

//===----------------------------------------------------------------------===//
// Scatter
//===----------------------------------------------------------------------===//

namespace {

/// The reference ScatterElements on doubles: y = data, then each update in
/// row-major order.
std::vector<double> scatterElementsRef(const std::vector<double> &data,
                                       const Shape &ds,
                                       const std::vector<int64_t> &idx,
                                       const Shape &is,
                                       const std::vector<double> &upd,
                                       int64_t axis, ScatterReduction r) {
  std::vector<double> y = data;
  for (size_t i = 0; i < idx.size(); ++i) {
    Coord c = unravel(static_cast<int64_t>(i), is);
    c[axis] = idx[i] < 0 ? idx[i] + ds[axis] : idx[i];
    double &dst = y[ravel(c, ds)];
    switch (r) {
    case ScatterReduction::None: dst = upd[i]; break;
    case ScatterReduction::Add: dst += upd[i]; break;
    case ScatterReduction::Mul: dst *= upd[i]; break;
    case ScatterReduction::Max: dst = std::max(dst, upd[i]); break;
    case ScatterReduction::Min: dst = std::min(dst, upd[i]); break;
    }
  }
  return y;
}

HostTensor fromDoubles(DType t, Shape s, const std::vector<double> &v) {
  HostTensor r(t, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t) {
    case DType::F32: r.as<float>()[i] = static_cast<float>(v[i]); break;
    case DType::F16: r.as<Half>()[i] = toHalf(v[i]); break;
    case DType::I64: r.as<int64_t>()[i] = static_cast<int64_t>(v[i]); break;
    case DType::F64: r.as<double>()[i] = v[i]; break;
    default: FAIL("unexpected dtype");
    }
  }
  return r;
}

std::vector<double> toDoubles(const HostTensor &t) {
  std::vector<double> r(static_cast<size_t>(t.numElements()));
  for (size_t i = 0; i < r.size(); ++i) {
    switch (t.dtype()) {
    case DType::F32: r[i] = t.as<float>()[i]; break;
    case DType::F16: r[i] = toFloat(t.as<Half>()[i]); break;
    case DType::I64: r[i] = static_cast<double>(t.as<int64_t>()[i]); break;
    case DType::F64: r[i] = t.as<double>()[i]; break;
    default: FAIL("unexpected dtype");
    }
  }
  return r;
}

} // namespace

TEST_CASE("scatter_elements with every reduction", "[cpu][data]") {
  const Shape ds = {3, 4}, is = {2, 4};
  // Small integers: exact in every dtype and reduction (duplicates included).
  std::vector<double> data, upd;
  for (int i = 0; i < 12; ++i)
    data.push_back(i % 5 - 2);
  for (int i = 0; i < 8; ++i)
    upd.push_back(i % 3 - 1 + (i == 5 ? 3 : 0));
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::F64})
    for (int64_t axis : {0, 1, -2})
      for (ScatterReduction r :
           {ScatterReduction::None, ScatterReduction::Add,
            ScatterReduction::Mul, ScatterReduction::Max,
            ScatterReduction::Min}) {
        INFO(dtypeLabel(t) << " axis " << axis << " reduction " << int(r));
        const int64_t a = axis < 0 ? axis + 2 : axis;
        std::vector<int64_t> idx;
        for (int i = 0; i < 8; ++i) // duplicates, negatives
          idx.push_back((i * 5) % ds[a] - (i % 2 ? ds[a] : 0));
        HostTensor x = fromDoubles(t, ds, data);
        HostTensor u = fromDoubles(t, is, upd);
        HostTensor indices = tensorOf<int64_t>(DType::I64, is, idx);
        HostTensor y = garbage(t, ds);
        REQUIRE(scatterElements(x.view(), indices.view(), u.view(), y.view(),
                                axis, r)
                    .isOk());
        CHECK(toDoubles(y) ==
              scatterElementsRef(data, ds, idx, is, upd, a, r));
        // In place: y is data.
        REQUIRE(scatterElements(x.view(), indices.view(), u.view(), x.view(),
                                axis, r)
                    .isOk());
        CHECK(toDoubles(x) == toDoubles(y));
      }
}

TEST_CASE("scatter_elements: ONNX examples, bool, errors", "[cpu][data]") {
  HostTensor data = tensorOf<float>(DType::F32, {1, 5}, {1, 2, 3, 4, 5});
  HostTensor idx = tensorOf<int32_t>(DType::I32, {1, 2}, {1, 3});
  HostTensor upd = tensorOf<float>(DType::F32, {1, 2}, {1.1f, 2.1f});
  HostTensor y = garbage(DType::F32, {1, 5});
  REQUIRE(scatterElements(data.view(), idx.view(), upd.view(), y.view(), 1)
              .isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 1.1f, 3, 2.1f, 5});
  HostTensor dup = tensorOf<int32_t>(DType::I32, {1, 2}, {1, 1});
  REQUIRE(scatterElements(data.view(), dup.view(), upd.view(), y.view(), 1,
                          ScatterReduction::Add)
              .isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 5.2f, 3, 4, 5});

  // bool: add is or, mul is and.
  HostTensor bd = tensorOf<uint8_t>(DType::Bool, {4}, {0, 1, 0, 1});
  HostTensor bi = tensorOf<int64_t>(DType::I64, {4}, {0, 1, 2, 3});
  HostTensor bu = tensorOf<uint8_t>(DType::Bool, {4}, {0, 0, 1, 1});
  HostTensor by = garbage(DType::Bool, {4});
  REQUIRE(scatterElements(bd.view(), bi.view(), bu.view(), by.view(), 0,
                          ScatterReduction::Add)
              .isOk());
  CHECK(valuesOf<uint8_t>(by) == std::vector<uint8_t>{0, 1, 1, 1});
  REQUIRE(scatterElements(bd.view(), bi.view(), bu.view(), by.view(), 0,
                          ScatterReduction::Mul)
              .isOk());
  CHECK(valuesOf<uint8_t>(by) == std::vector<uint8_t>{0, 0, 0, 1});

  HostTensor bad = tensorOf<int32_t>(DType::I32, {1, 2}, {1, 5});
  requireError(scatterElements(data.view(), bad.view(), upd.view(), y.view(),
                               1),
               "index 5 (indices element 1) is out of range");
  HostTensor updI = tensorOf<int64_t>(DType::I64, {1, 2}, {1, 2});
  requireError(scatterElements(data.view(), idx.view(), updI.view(), y.view(),
                               1),
               "one dtype");
  ScatterReduction r;
  CHECK(parseScatterReduction("max", r));
  CHECK(r == ScatterReduction::Max);
  CHECK_FALSE(parseScatterReduction("mean", r));
}

TEST_CASE("scatter_nd: the ONNX examples and reductions", "[cpu][data]") {
  // Example 1: data [8], indices [[4], [3], [1], [7]].
  HostTensor data = tensorOf<float>(DType::F32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor idx = tensorOf<int64_t>(DType::I64, {4, 1}, {4, 3, 1, 7});
  HostTensor upd = tensorOf<float>(DType::F32, {4}, {9, 10, 11, 12});
  HostTensor y = garbage(DType::F32, {8});
  REQUIRE(scatterND(data.view(), idx.view(), upd.view(), y.view()).isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12});

  // Example 2: data [4, 4, 4], indices [[0], [2]], slices of [4, 4].
  std::vector<int64_t> d2(64), u2(32);
  for (int i = 0; i < 64; ++i)
    d2[i] = i;
  for (int i = 0; i < 32; ++i)
    u2[i] = 100 + i;
  HostTensor data2 = tensorOf<int64_t>(DType::I64, {4, 4, 4}, d2);
  HostTensor idx2 = tensorOf<int32_t>(DType::I32, {2, 1}, {0, -2});
  HostTensor upd2 = tensorOf<int64_t>(DType::I64, {2, 4, 4}, u2);
  HostTensor y2 = garbage(DType::I64, {4, 4, 4});
  REQUIRE(scatterND(data2.view(), idx2.view(), upd2.view(), y2.view()).isOk());
  std::vector<int64_t> expected = d2;
  for (int i = 0; i < 16; ++i) {
    expected[i] = 100 + i;
    expected[32 + i] = 116 + i;
  }
  CHECK(valuesOf<int64_t>(y2) == expected);

  // Duplicate indices with reductions, in order.
  HostTensor dupIdx = tensorOf<int64_t>(DType::I64, {3, 1}, {1, 1, 6});
  HostTensor dupUpd = tensorOf<float>(DType::F32, {3}, {3, 4, 0.5f});
  REQUIRE(scatterND(data.view(), dupIdx.view(), dupUpd.view(), y.view(),
                    ScatterReduction::Mul)
              .isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 24, 3, 4, 5, 6, 3.5f, 8});
  REQUIRE(scatterND(data.view(), dupIdx.view(), dupUpd.view(), y.view(),
                    ScatterReduction::Min)
              .isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 2, 3, 4, 5, 6, 0.5f, 8});
  REQUIRE(scatterND(data.view(), dupIdx.view(), dupUpd.view(), y.view(),
                    ScatterReduction::None)
              .isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 4, 3, 4, 5, 6, 0.5f, 8});

  HostTensor bad = tensorOf<int64_t>(DType::I64, {1, 1}, {8});
  HostTensor upd1 = tensorOf<float>(DType::F32, {1}, {0});
  requireError(scatterND(data.view(), bad.view(), upd1.view(), y.view()),
               "index 8");
  requireError(scatterND(data.view(), idx.view(), upd1.view(), y.view()),
               "updates [1] should be [4]");
}

TEST_CASE("kernel.scatter_elements and gather through the call table",
          "[cpu][data][calls]") {
  HostTensor data = tensorOf<float>(DType::F32, {1, 5}, {1, 2, 3, 4, 5});
  HostTensor idx = tensorOf<int32_t>(DType::I32, {1, 2}, {1, 1});
  HostTensor upd = tensorOf<float>(DType::F32, {1, 2}, {2, 3});
  HostTensor y = garbage(DType::F32, {1, 5});
  PlanCall call;
  call.kind = "kernel.scatter_elements";
  call.attributes = {{"axis", int64_t(1)}, {"reduction", std::string("max")}};
  CallFn fn = cpuCallTable().find(call.kind);
  REQUIRE(fn);
  REQUIRE(fn({call, {data.view(), idx.view(), upd.view()}, {y.view()}}).isOk());
  CHECK(valuesOf<float>(y) == std::vector<float>{1, 3, 3, 4, 5});
  call.attributes[1].value = std::string("avg");
  requireError(fn({call, {data.view(), idx.view(), upd.view()}, {y.view()}}),
               "'reduction' has an unknown value 'avg'");

  PlanCall g;
  g.kind = "kernel.gather";
  g.attributes = {{"axis", int64_t(-1)}};
  HostTensor gy = garbage(DType::F32, {1, 1, 2});
  REQUIRE(cpuCallTable().find(g.kind)(
              {g, {data.view(), idx.view()}, {gy.view()}})
              .isOk());
  CHECK(valuesOf<float>(gy) == std::vector<float>{2, 2});
}
