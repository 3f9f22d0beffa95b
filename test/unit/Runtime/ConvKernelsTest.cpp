// Tests of the CPU backend's convolution (mp/Runtime/CPU/Kernels.h)
// against ONNX Conv in both layouts.
// References, tolerances and helpers: CPUKernelsTestSupport.h.
#include "mp/Runtime/CPU/Kernels.h"
#include "mp/Runtime/Half.h"

#include "CPUKernelsTestSupport.h"
#include "RuntimeTestSupport.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace mp::rt;
using namespace mp::rt::test;
using namespace mp::rt::test::cpu_kernels;

namespace {

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n = 1, c = 1, m = 1, groups = 1;
  Shape in, ker;
  std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  Layout layout = Layout::NCHW;
  bool hasBias = false, biasF32 = false, hasResidual = false;
  bool residualInPlace = false; // residual is y itself
  Activation act = Activation::None;
  DType in16 = DType::F32, out = DType::F32;
};

std::string describe(const ConvCase &c) {
  std::ostringstream s;
  auto vec = [&](const char *name, const std::vector<int64_t> &v) {
    if (!v.empty())
      s << " " << name << shapeString(v);
  };
  s << (c.layout == Layout::NCHW ? "NCHW" : "NHWC") << " N " << c.n << " C "
    << c.c << " M " << c.m << " groups " << c.groups << " in "
    << shapeString(c.in) << " kernel " << shapeString(c.ker);
  vec("strides", c.strides);
  vec("dilations", c.dilations);
  vec("padsBegin", c.padsBegin);
  vec("padsEnd", c.padsEnd);
  s << " " << dtypeName(c.in16) << "->" << dtypeName(c.out)
    << (c.hasBias ? " bias" : "") << (c.biasF32 ? "(f32)" : "")
    << (c.hasResidual ? (c.residualInPlace ? " residual=y" : " residual") : "")
    << " act " << actName(c.act);
  return s.str();
}

Shape convOutSpatial(const ConvCase &c) {
  Shape o;
  for (size_t i = 0; i < c.in.size(); ++i) {
    int64_t span = attr(c.dilations, i, 1) * (c.ker[i] - 1) + 1;
    o.push_back(
        (c.in[i] + attr(c.padsBegin, i, 0) + attr(c.padsEnd, i, 0) - span) /
            attr(c.strides, i, 1) +
        1);
  }
  return o;
}

void runConvCase(const ConvCase &cc, uint64_t seed) {
  INFO(describe(cc));
  Rng rng(seed);
  size_t k = cc.in.size();
  Shape outSp = convOutSpatial(cc);
  int64_t cg = cc.c / cc.groups, mg = cc.m / cc.groups;
  Shape wShape = cc.layout == Layout::NCHW
                     ? withChannels(Layout::NCHW, cc.m, cg, cc.ker)
                     : withChannels(Layout::NHWC, cc.m, cg, cc.ker);
  HostTensor x =
      randomTensor(cc.in16, withChannels(cc.layout, cc.n, cc.c, cc.in), rng);
  HostTensor w = randomTensor(cc.in16, wShape, rng);
  Shape yShape = withChannels(cc.layout, cc.n, cc.m, outSp);
  HostTensor bias =
      cc.hasBias ? randomTensor(cc.biasF32 ? DType::F32 : cc.out, {cc.m}, rng)
                 : HostTensor();
  HostTensor res = cc.hasResidual && !cc.residualInPlace
                       ? randomTensor(cc.out, yShape, rng)
                       : HostTensor();
  HostTensor y = cc.residualInPlace ? randomTensor(cc.out, yShape, rng)
                                    : garbage(cc.out, yShape);
  std::vector<double> xv = values(x), wv = values(w), bv = values(bias),
                      rv = cc.residualInPlace ? values(y) : values(res);

  int64_t inSize = numElements(cc.in), kerSize = numElements(cc.ker),
          outSize = numElements(outSp);
  std::vector<int64_t> inSt = stridesOf(cc.in);
  std::vector<double> ref(static_cast<size_t>(y.numElements())),
      bound(ref.size());
  double u = unitRoundoff(cc.in16);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t m = 0; m < cc.m; ++m) {
      int64_t g = m / mg;
      int64_t q = 0;
      forEachIndex(outSp, [&](const std::vector<int64_t> &o) {
        double sum = 0, mag = 0;
        for (int64_t c = 0; c < cg; ++c) {
          int64_t t = 0;
          forEachIndex(cc.ker, [&](const std::vector<int64_t> &kk) {
            int64_t p = 0;
            bool inside = true;
            for (size_t j = 0; j < k; ++j) {
              int64_t i = o[j] * attr(cc.strides, j, 1) -
                          attr(cc.padsBegin, j, 0) +
                          kk[j] * attr(cc.dilations, j, 1);
              inside = inside && i >= 0 && i < cc.in[j];
              p += i * inSt[j];
            }
            if (inside) {
              double xval =
                  xv[actIndex(cc.layout, n, g * cg + c, p, cc.c, inSize)];
              double wval = cc.layout == Layout::NCHW
                                ? wv[(m * cg + c) * kerSize + t]
                                : wv[(m * kerSize + t) * cg + c];
              sum += xval * wval;
              mag += std::fabs(xval * wval);
            }
            ++t;
          });
        }
        int64_t yi = actIndex(cc.layout, n, m, q, cc.m, outSize);
        if (cc.hasBias) {
          sum += bv[m];
          mag += std::fabs(bv[m]);
        }
        if (cc.hasResidual) {
          sum += rv[yi];
          mag += std::fabs(rv[yi]);
        }
        double r = activateRef(cc.act, sum);
        ref[yi] = r;
        bound[yi] = activatedBound(cc.act, (cg * kerSize + 8) * u * mag, r, u);
        ++q;
      });
    }

  cpu::ConvOptions o;
  o.strides = cc.strides;
  o.dilations = cc.dilations;
  o.padsBegin = cc.padsBegin;
  o.padsEnd = cc.padsEnd;
  o.groups = cc.groups;
  o.layout = cc.layout;
  o.activation = cc.act;
  o.clipMin = kTestClipMin;
  o.clipMax = kTestClipMax;
  TensorView resView = cc.residualInPlace ? y.view() : res.view();
  Status s = cpu::conv(x.view(), w.view(), cc.hasBias ? &bias.view() : nullptr,
                       cc.hasResidual ? &resView : nullptr, y.view(), o);
  INFO(s.message());
  REQUIRE(s.isOk());
  expectClose(y, ref, bound);
}

TEST_CASE("conv matches ONNX Conv in both layouts and every dtype",
          "[runtime][cpu][conv]") {
  struct Geo {
    int64_t n, c, m, groups;
    Shape in, ker;
    std::vector<int64_t> strides, dilations, padsBegin, padsEnd;
  };
  std::vector<Geo> geos = {
      // 1-D
      {2, 3, 4, 1, {11}, {3}, {2}, {}, {1}, {2}},
      {1, 6, 3, 3, {13}, {3}, {}, {2}, {2}, {0}},
      {2, 4, 8, 2, {5}, {1}, {}, {}, {}, {}}, // pointwise, groups
      // 2-D
      {2, 8, 5, 1, {7, 9}, {1, 1}, {}, {}, {}, {}},     // pointwise
      {1, 8, 6, 2, {4, 5}, {1, 1}, {}, {}, {}, {}},     // pointwise, groups
      {1, 6, 4, 1, {7, 9}, {1, 1}, {2, 2}, {}, {}, {}}, // 1x1 stride 2
      {2, 5, 7, 1, {9, 10}, {3, 3}, {}, {}, {1, 1}, {1, 1}},
      {1, 3, 4, 1, {11, 8}, {3, 3}, {2, 2}, {}, {0, 2}, {1, 0}},
      {1, 4, 3, 1, {12, 13}, {3, 2}, {1, 2}, {2, 3}, {2, 1}, {3, 0}},
      {2, 6, 6, 6, {9, 8}, {3, 3}, {2, 2}, {}, {1, 1}, {1, 1}}, // depthwise
      {1, 4, 6, 2, {6, 6}, {5, 5}, {}, {}, {4, 4}, {4, 3}}, // windows in pads
      {1, 3, 8, 1, {23, 21}, {7, 7}, {2, 2}, {}, {3, 3}, {3, 3}}, // stem-like
      {1, 2, 3, 1, {1, 1}, {1, 1}, {}, {}, {}, {}},
      {1, 3, 2, 1, {4, 4}, {4, 4}, {}, {}, {}, {}}, // kernel = input
      // 3-D
      {1,
       4,
       6,
       2,
       {5, 6, 7},
       {2, 3, 3},
       {1, 2, 1},
       {2, 1, 1},
       {1, 0, 1},
       {0, 2, 1}},
      {2, 3, 5, 1, {3, 4, 5}, {1, 1, 1}, {}, {}, {}, {}}, // pointwise
      {1, 2, 2, 2, {4, 5, 3}, {3, 3, 3}, {2, 2, 2}, {}, {1, 1, 1}, {1, 1, 1}},
  };
  struct Types {
    DType in, out;
  };
  std::vector<Types> types = {{DType::F32, DType::F32},
                              {DType::F16, DType::F16},
                              {DType::BF16, DType::BF16},
                              {DType::F16, DType::F32},
                              {DType::F32, DType::BF16}};
  const Activation acts[] = {
      Activation::None,     Activation::Relu, Activation::Gelu,
      Activation::GeluTanh, Activation::Clip, Activation::Silu,
      Activation::Sigmoid,  Activation::Tanh, Activation::HardSwish};
  uint64_t seed = 1000;
  int count = 0;
  for (const Geo &g : geos)
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
      for (const Types &ty : types) {
        ConvCase cc;
        cc.n = g.n;
        cc.c = g.c;
        cc.m = g.m;
        cc.groups = g.groups;
        cc.in = g.in;
        cc.ker = g.ker;
        cc.strides = g.strides;
        cc.dilations = g.dilations;
        cc.padsBegin = g.padsBegin;
        cc.padsEnd = g.padsEnd;
        cc.layout = layout;
        cc.in16 = ty.in;
        cc.out = ty.out;
        int variant = static_cast<int>(seed % 4);
        cc.hasBias = variant >= 1;
        cc.biasF32 = variant == 2;
        cc.hasResidual = variant >= 2;
        cc.residualInPlace = variant == 3;
        cc.act = acts[(seed / 4) % std::size(acts)];
        runConvCase(cc, seed++);
        ++count;
      }
  CHECK(count == static_cast<int>(geos.size() * 2 * types.size()));
}

TEST_CASE("conv: im2col blocks and larger channels", "[runtime][cpu][conv]") {
  // Several column blocks per image (NCHW: 28 rows of 64 per block; NHWC:
  // 1820 pixels per block) and a ResNet-like bottleneck 1x1.
  for (Layout layout : {Layout::NCHW, Layout::NHWC})
    for (DType t : {DType::F32, DType::F16}) {
      ConvCase cc;
      cc.n = 2;
      cc.c = 32;
      cc.m = 8;
      cc.in = {64, 64};
      cc.ker = {3, 3};
      cc.padsBegin = {1, 1};
      cc.padsEnd = {1, 1};
      cc.layout = layout;
      cc.in16 = cc.out = t;
      cc.hasBias = true;
      cc.act = Activation::Relu;
      runConvCase(cc, 4242);

      ConvCase pw;
      pw.n = 1;
      pw.c = 64;
      pw.m = 48;
      pw.in = {14, 14};
      pw.ker = {1, 1};
      pw.layout = layout;
      pw.in16 = pw.out = t;
      pw.hasBias = pw.hasResidual = true;
      pw.act = Activation::Relu;
      runConvCase(pw, 4343);
    }
}

TEST_CASE("conv rejects bad arguments", "[runtime][cpu][conv]") {
  auto f32 = [](Shape s) { return HostTensor(DType::F32, std::move(s)); };
  HostTensor x = f32({1, 4, 8, 8}), w = f32({6, 2, 3, 3}),
             y = f32({1, 6, 6, 6});
  cpu::ConvOptions o;
  o.groups = 2;
  auto err = [](const Status &s, const std::string &what) {
    INFO(s.message());
    CHECK_FALSE(s.isOk());
    CHECK(s.message().find(what) != std::string::npos);
  };
  REQUIRE(cpu::conv(x.view(), w.view(), y.view(), o).isOk());
  cpu::ConvOptions g3 = o;
  g3.groups = 3;
  err(cpu::conv(x.view(), w.view(), y.view(), g3), "groups");
  err(cpu::conv(x.view(), f32({6, 3, 3, 3}).view(), y.view(), o),
      "input channels per group");
  err(cpu::conv(x.view(), w.view(), f32({1, 6, 8, 8}).view(), o),
      "y has shape");
  err(cpu::conv(x.view(), HostTensor(DType::F16, {6, 2, 3, 3}).view(), y.view(),
                o),
      "must match");
  err(cpu::conv(HostTensor(DType::I8, {1, 4, 8, 8}).view(), w.view(), y.view(),
                o),
      "x has dtype");
  cpu::ConvOptions bad = o;
  bad.strides = {1};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "strides has 1 entries");
  bad = o;
  bad.strides = {0, 1};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "strides must be >= 1");
  bad = o;
  bad.padsBegin = {-1, 0};
  err(cpu::conv(x.view(), w.view(), y.view(), bad), "padsBegin must be >= 0");
  HostTensor biasBad = f32({4}), res = f32({1, 6, 6, 5});
  err(cpu::conv(x.view(), w.view(), &biasBad.view(), nullptr, y.view(), o),
      "bias has shape");
  err(cpu::conv(x.view(), w.view(), nullptr, &res.view(), y.view(), o),
      "residual has shape");
  err(cpu::conv(f32({1, 4, 2, 2}).view(), w.view(), f32({1, 6, 0, 0}).view(),
                o),
      "smaller than the dilated kernel");
  err(cpu::conv(f32({4, 8}).view(), f32({6, 4}).view(), f32({4, 6}).view(), {}),
      "rank >= 3");
  err(cpu::conv(x.view(), w.view(), x.view(), o), "y has shape");
  cpu::ConvOptions nhwc = o;
  nhwc.layout = Layout::NHWC; // NCHW-shaped tensors read as NHWC
  err(cpu::conv(x.view(), w.view(), y.view(), nhwc),
      "input channels per group");
}

} // namespace
