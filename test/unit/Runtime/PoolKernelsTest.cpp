// Tests of the CPU backend's pooling (mp/Runtime/CPU/Kernels.h) against
// ONNX MaxPool, AveragePool and the global pools.
// References, tolerances and helpers: CPUKernelsTestSupport.h.
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "CPUKernelsTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::cpu_kernels;

namespace {

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  cpu::PoolKind kind = cpu::PoolKind::Max;
  int64_t n = 1, c = 1;
  Shape in, ker;
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  bool ceil = false;
  bool countIncludePad = false;
  Layout layout = Layout::NCHW;
  DType dtype = DType::F32;
  bool indices = false;
};

std::string describe(const PoolCase &p) {
  std::ostringstream s;
  auto vec = [&](const char *name, const std::vector<int64_t> &v) {
    if (!v.empty())
      s << " " << name << shapeString(v);
  };
  s << (p.kind == cpu::PoolKind::Max ? "max" : "avg") << " "
    << (p.layout == Layout::NCHW ? "NCHW" : "NHWC") << " N " << p.n << " C "
    << p.c << " in " << shapeString(p.in) << " kernel " << shapeString(p.ker);
  vec("strides", p.strides);
  vec("dilations", p.dilations);
  vec("padsBegin", p.padsBegin);
  vec("padsEnd", p.padsEnd);
  s << (p.ceil ? " ceil" : "")
    << (p.countIncludePad ? " count_include_pad" : "") << " "
    << dtypeName(p.dtype) << (p.indices ? " indices" : "");
  return s.str();
}

void runPoolCase(const PoolCase &pc, uint64_t seed) {
  INFO(describe(pc));
  Rng rng(seed);
  size_t k = pc.in.size();
  Shape outSp;
  for (size_t i = 0; i < k; ++i) {
    int64_t span = attr(pc.dilations, i, 1) * (pc.ker[i] - 1) + 1;
    int64_t num =
        pc.in[i] + attr(pc.padsBegin, i, 0) + attr(pc.padsEnd, i, 0) - span;
    int64_t s = attr(pc.strides, i, 1);
    outSp.push_back((pc.ceil ? (num + s - 1) / s : num / s) + 1);
  }
  HostTensor x =
      randomTensor(pc.dtype, withChannels(pc.layout, pc.n, pc.c, pc.in), rng);
  HostTensor y = garbage(pc.dtype, withChannels(pc.layout, pc.n, pc.c, outSp));
  HostTensor idx = pc.indices ? garbage(DType::I64, y.shape()) : HostTensor();
  std::vector<double> xv = values(x);
  int64_t inSize = numElements(pc.in), outSize = numElements(outSp);
  std::vector<int64_t> inSt = stridesOf(pc.in);
  std::vector<double> ref(static_cast<size_t>(y.numElements())),
      bound(ref.size());
  std::vector<int64_t> refIdx(ref.size());
  for (int64_t n = 0; n < pc.n; ++n)
    for (int64_t c = 0; c < pc.c; ++c) {
      int64_t q = 0;
      forEachIndex(outSp, [&](const std::vector<int64_t> &o) {
        double best = -INFINITY, sum = 0, mag = 0;
        int64_t bestIdx = -1, inside = 0, padded = 0;
        forEachIndex(pc.ker, [&](const std::vector<int64_t> &t) {
          bool in = true, inPad = true;
          int64_t p = 0;
          for (size_t j = 0; j < k; ++j) {
            int64_t i = o[j] * attr(pc.strides, j, 1) -
                        attr(pc.padsBegin, j, 0) +
                        t[j] * attr(pc.dilations, j, 1);
            in = in && i >= 0 && i < pc.in[j];
            inPad = inPad && i >= -attr(pc.padsBegin, j, 0) &&
                    i < pc.in[j] + attr(pc.padsEnd, j, 0);
            p += i * inSt[j];
          }
          padded += inPad;
          if (!in)
            return;
          ++inside;
          int64_t xi = actIndex(pc.layout, n, c, p, pc.c, inSize);
          double v = xv[xi];
          if (bestIdx < 0 || v > best) {
            best = v;
            bestIdx = (n * pc.c + c) * inSize + p;
          }
          sum += v;
          mag += std::fabs(v);
        });
        int64_t yi = actIndex(pc.layout, n, c, q, pc.c, outSize);
        if (pc.kind == cpu::PoolKind::Max) {
          ref[yi] = best;
          refIdx[yi] = bestIdx;
        } else {
          int64_t count = pc.countIncludePad ? padded : inside;
          ref[yi] = count ? sum / count : 0.0;
          bound[yi] =
              count ? (numElements(pc.ker) + 2) * 0x1p-24 * mag / count : 0.0;
        }
        ++q;
      });
    }
  cpu::PoolOptions o;
  o.kind = pc.kind;
  o.kernel = pc.ker;
  o.strides = pc.strides;
  o.dilations = pc.dilations;
  o.padsBegin = pc.padsBegin;
  o.padsEnd = pc.padsEnd;
  o.countIncludePad = pc.countIncludePad;
  o.layout = pc.layout;
  Status s =
      cpu::pool(x.view(), y.view(), o, pc.indices ? &idx.view() : nullptr);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, ref, bound, pc.kind == cpu::PoolKind::Max);
  if (pc.indices) {
    int64_t bad = 0;
    for (int64_t i = 0; i < idx.numElements(); ++i)
      bad += idx.as<int64_t>()[i] != refIdx[i];
    CHECK(bad == 0);
  }
}

TEST_CASE("pool matches ONNX MaxPool / AveragePool", "[runtime][cpu][pool]") {
  struct Geo {
    Shape in, ker;
    std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
    bool ceil;
  };
  std::vector<Geo> geos = {
      {{13, 13}, {3, 3}, {2, 2}, {}, {1, 1}, {1, 1}, false}, // ResNet max pool
      {{7, 7}, {7, 7}, {}, {}, {}, {}, false},
      {{6, 7}, {3, 3}, {2, 2}, {}, {}, {}, true}, // ceil: windows past the end
      {{9, 8}, {2, 3}, {2, 1}, {}, {1, 0}, {0, 2}, true},
      {{10, 11}, {3, 2}, {1, 2}, {2, 3}, {2, 1}, {1, 2}, false}, // dilations
      {{1, 3}, {2, 2}, {}, {}, {2, 1}, {2, 1}, false}, // windows only in pads
      {{17}, {4}, {3}, {}, {2}, {1}, true},            // 1-D
      {{12}, {3}, {1}, {3}, {0}, {4}, false},
      {{5, 6, 7},
       {2, 3, 2},
       {2, 1, 2},
       {1, 1, 2},
       {1, 0, 1},
       {0, 1, 1},
       true}, // 3-D
      {{4, 3, 5, 4},
       {2, 2, 3, 2},
       {1, 2, 2, 1},
       {},
       {1, 0, 1, 0},
       {0, 1, 1, 1},
       false}, // 4-D
  };
  uint64_t seed = 5000;
  int count = 0;
  for (const Geo &g : geos)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (int kind = 0; kind < 3; ++kind) {
          PoolCase pc;
          pc.n = 2;
          pc.c = 3;
          pc.in = g.in;
          pc.ker = g.ker;
          pc.strides = g.strides;
          pc.dilations = g.dilations;
          pc.padsBegin = g.padsBegin;
          pc.padsEnd = g.padsEnd;
          pc.ceil = g.ceil;
          pc.layout = layout;
          pc.dtype = t;
          pc.kind = kind == 0 ? cpu::PoolKind::Max : cpu::PoolKind::Average;
          pc.countIncludePad = kind == 2;
          pc.indices = kind == 0 && layout == Layout::NCHW;
          runPoolCase(pc, seed++);
          ++count;
        }
  CHECK(count == static_cast<int>(geos.size() * 2 * 3 * 3));
}

TEST_CASE(
    "pool: max ties keep the first index and windows may lie in the padding",
    "[runtime][cpu][pool]") {
  // x = [[1, 5, 5], [5, 2, 0]]: 2x2 windows, stride 1, pads 1 at the end.
  HostTensor x(DType::F32, {1, 1, 2, 3}), y(DType::F32, {1, 1, 2, 3}),
      idx(DType::I64, {1, 1, 2, 3});
  const float xv[] = {1, 5, 5, 5, 2, 0};
  std::memcpy(x.data(), xv, sizeof xv);
  cpu::PoolOptions o;
  o.kernel = {2, 2};
  o.padsEnd = {1, 1};
  REQUIRE(cpu::pool(x.view(), y.view(), o, &idx.view()).isOk());
  const float ye[] = {5, 5, 5, 5, 2, 0};
  const int64_t ie[] = {1, 1, 2, 3, 4, 5};
  for (int i = 0; i < 6; ++i) {
    CHECK(y.as<float>()[i] == ye[i]);
    CHECK(idx.as<int64_t>()[i] == ie[i]);
  }
  // A window entirely in the padding: -inf and index -1 for max, 0 for
  // average.
  HostTensor x1(DType::F16, {1, 1, 1}), y1(DType::F16, {1, 1, 4}),
      i1(DType::I64, {1, 1, 4});
  x1.as<Half>()[0] = toHalf(3.0f);
  cpu::PoolOptions p;
  p.kernel = {2};
  p.padsBegin = {2};
  p.padsEnd = {2};
  REQUIRE(cpu::pool(x1.view(), y1.view(), p, &i1.view()).isOk());
  CHECK(std::isinf(toFloat(y1.as<Half>()[0])));
  CHECK(i1.as<int64_t>()[0] == -1);
  CHECK(toFloat(y1.as<Half>()[1]) == 3.0f);
  CHECK(i1.as<int64_t>()[1] == 0);
  p.kind = cpu::PoolKind::Average;
  REQUIRE(cpu::pool(x1.view(), y1.view(), p).isOk());
  CHECK(toFloat(y1.as<Half>()[0]) == 0.0f);
  CHECK(toFloat(y1.as<Half>()[1]) == 3.0f);
  p.countIncludePad = true;
  REQUIRE(cpu::pool(x1.view(), y1.view(), p).isOk());
  CHECK(toFloat(y1.as<Half>()[1]) == 1.5f);
}

TEST_CASE("globalPool matches GlobalAveragePool / GlobalMaxPool",
          "[runtime][cpu][pool]") {
  uint64_t seed = 6000;
  for (Shape spatial : {Shape{7, 7}, Shape{1, 1}, Shape{13}, Shape{3, 4, 5}})
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (cpu::PoolKind kind :
             {cpu::PoolKind::Max, cpu::PoolKind::Average}) {
          INFO("spatial " << shapeString(spatial) << " "
                          << (layout == Layout::NCHW ? "NCHW" : "NHWC") << " "
                          << dtypeName(t)
                          << (kind == cpu::PoolKind::Max ? " max" : " avg"));
          Rng rng(seed++);
          int64_t n = 2, c = 5, sz = numElements(spatial);
          HostTensor x =
              randomTensor(t, withChannels(layout, n, c, spatial), rng);
          HostTensor y =
              garbage(t, withChannels(layout, n, c, Shape(spatial.size(), 1)));
          std::vector<double> ref(n * c), bound(n * c);
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ch = 0; ch < c; ++ch) {
              double best = -INFINITY, sum = 0, mag = 0;
              for (int64_t p = 0; p < sz; ++p) {
                double v = getD(x, actIndex(layout, b, ch, p, c, sz));
                best = std::max(best, v);
                sum += v;
                mag += std::fabs(v);
              }
              ref[b * c + ch] = kind == cpu::PoolKind::Max ? best : sum / sz;
              bound[b * c + ch] = 4 * 0x1p-24 * mag / sz;
            }
          Status s = cpu::globalPool(kind, x.view(), y.view(), layout);
          INFO(s.message());
          REQUIRE(s.isOk());
          expectClose(y, ref, bound, kind == cpu::PoolKind::Max);
        }
}

TEST_CASE("pool rejects bad arguments", "[runtime][cpu][pool]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor x = f32({1, 2, 6, 7}), y = f32({1, 2, 3, 3});
  cpu::PoolOptions o;
  o.kernel = {3, 3};
  o.strides = {2, 2};
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::pool(x.view(), f32({1, 2, 2, 3}).view(), o).isOk()); // floor
  REQUIRE(cpu::pool(x.view(), y.view(), o).isOk());                 // ceil
  err(cpu::pool(x.view(), f32({1, 2, 4, 3}).view(), o), "floor");
  err(cpu::pool(x.view(), f32({1, 3, 3, 3}).view(), o), "batch or channels");
  err(cpu::pool(x.view(), HostTensor(DType::F16, {1, 2, 3, 3}).view(), o),
      "must match");
  cpu::PoolOptions bad = o;
  bad.kernel = {3};
  err(cpu::pool(x.view(), y.view(), bad), "kernel has 1 entries");
  bad = o;
  bad.kernel = {0, 3};
  err(cpu::pool(x.view(), y.view(), bad), "kernel must be >= 1");
  HostTensor idx32(DType::I32, {1, 2, 3, 3}),
      idx = HostTensor(DType::I64, {1, 2, 3, 3});
  err(cpu::pool(x.view(), y.view(), o, &idx32.view()), "i64");
  cpu::PoolOptions avg = o;
  avg.kind = cpu::PoolKind::Average;
  err(cpu::pool(x.view(), y.view(), avg, &idx.view()), "max pooling");
  cpu::PoolOptions big = o;
  big.kernel = {9, 3};
  err(cpu::pool(x.view(), y.view(), big), "smaller than the dilated window");
  err(cpu::globalPool(cpu::PoolKind::Max, x.view(), f32({1, 2, 1, 2}).view()),
      "must be 1");
  err(cpu::pool(f32({2, 6}).view(), f32({2, 3}).view(), o), "rank >= 3");
  err(cpu::pool(x.view(), x.view(), o), "y overlaps x");
}

} // namespace
