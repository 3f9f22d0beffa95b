//===- Conv.cpp - cuDNN-like convolution forward on the CPU ---------------===//
//
// im2col + cblas_sgemm per image and group, f32 accumulation:
//
//  NCHW: out[Mg, P] = W_g[Mg, Cg*K] @ col[Cg*K, P], col rows (c, kernel
//        position), columns output positions; built a block of output rows
//        at a time so that the column block stays in cache.
//  NHWC: out[P, Mg] (ldc M) = col[P, K*Cg] @ W_g^T, col rows output pixels,
//        columns (kernel position, c): runs of Cg contiguous channels.
//
// A pointwise convolution (all kernel sizes 1, strides 1, no padding) needs
// no im2col: the input image is the GEMM operand. 16-bit inputs and weights
// are widened to f32 first; bias, residual and the activation are applied in
// f32 and the result is rounded once to y's type.
//
//===----------------------------------------------------------------------===//
#include "KernelUtil.h"

#include <algorithm>
#include <optional>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "conv";

/// Bytes of im2col buffer one GEMM works on: large enough for efficient
/// GEMMs, small enough to stay in the outer caches.
/// Scratch slots (see Scratch).
enum { kColSlot, kInputSlot, kOutputSlot, kWeightSlot };

constexpr int64_t kColBlockBytes = int64_t(4) << 20;

struct Geom {
  int k = 0; // spatial rank
  int64_t n = 0, c = 0, m = 0, groups = 1, cg = 0, mg = 0;
  std::vector<int64_t> in, ker, out, stride, dil, padB, padE;
  std::vector<int64_t> inStride; // element stride of each spatial dim (NCHW)
  int64_t inSize = 1, kerSize = 1, outSize = 1;
  bool pointwise = false;
  Layout layout = Layout::NCHW;
};

/// NCHW im2col of one group of one image (xg: its Cg channels, f32) for the
/// output positions whose leading spatial indices (all but the last, flattened)
/// lie in [q0, q1). col: [Cg*K, (q1-q0)*O_last].
void im2colNCHW(const Geom &g, const float *xg, int64_t q0, int64_t q1,
                float *col) {
  int k = g.k;
  int64_t ol = g.out[k - 1], dl = g.in[k - 1], sl = g.stride[k - 1];
  int64_t cols = (q1 - q0) * ol;
  std::vector<int64_t> kk(k, 0), o(k > 1 ? k - 1 : 1, 0);
  for (int64_t kidx = 0; kidx < g.kerSize; ++kidx, increment(kk, g.ker.data(), k)) {
    // Last dim: input i = o*sl + offL; valid outputs o in [lo, hi).
    int64_t offL = kk[k - 1] * g.dil[k - 1] - g.padB[k - 1];
    int64_t lo = std::clamp<int64_t>(offL >= 0 ? 0 : ceilDiv(-offL, sl), 0, ol);
    int64_t hi = std::clamp<int64_t>(ceilDiv(dl - offL, sl), lo, ol);
    for (int64_t c = 0; c < g.cg; ++c) {
      const float *xc = xg + c * g.inSize;
      float *dst = col + (c * g.kerSize + kidx) * cols;
      // Decompose q0 into the leading output indices.
      int64_t rem = q0;
      for (int j = k - 2; j >= 0; --j) {
        o[j] = rem % g.out[j];
        rem /= g.out[j];
      }
      for (int64_t q = q0; q < q1; ++q) {
        bool valid = true;
        int64_t off = 0;
        for (int j = 0; j < k - 1; ++j) {
          int64_t i = o[j] * g.stride[j] - g.padB[j] + kk[j] * g.dil[j];
          if (i < 0 || i >= g.in[j]) {
            valid = false;
            break;
          }
          off += i * g.inStride[j];
        }
        if (!valid || lo >= hi) {
          std::memset(dst, 0, sizeof(float) * ol);
        } else {
          if (lo > 0)
            std::memset(dst, 0, sizeof(float) * lo);
          const float *src = xc + off;
          if (sl == 1)
            std::memcpy(dst + lo, src + lo + offL, sizeof(float) * (hi - lo));
          else
            for (int64_t oo = lo; oo < hi; ++oo)
              dst[oo] = src[oo * sl + offL];
          if (hi < ol)
            std::memset(dst + hi, 0, sizeof(float) * (ol - hi));
        }
        dst += ol;
        if (k > 1)
          increment(o, g.out.data(), k - 1);
      }
    }
  }
}

/// NHWC im2col of group `grp` of one image (ximg: [spatial..., C], f32) for
/// output pixels [p0, p1). col: [p1-p0, K*Cg]. A kernel row (the last spatial
/// dimension) is one run: its taps inside the input form a contiguous range,
/// copied with one memcpy when the group has every channel and the last
/// dilation is 1 (the taps' channels are then adjacent in x).
void im2colNHWC(const Geom &g, const float *ximg, int64_t grp, int64_t p0,
                int64_t p1, float *col) {
  int k = g.k;
  int lead = k - 1; // kernel dimensions before the last
  std::vector<int64_t> o(k, 0), kk(k > 1 ? k - 1 : 1, 0);
  int64_t rem = p0;
  for (int j = k - 1; j >= 0; --j) {
    o[j] = rem % g.out[j];
    rem /= g.out[j];
  }
  const float *xgrp = ximg + grp * g.cg;
  int64_t kl = g.ker[k - 1], dl = g.dil[k - 1], inl = g.in[k - 1];
  int64_t runLen = kl * g.cg, leadTaps = g.kerSize / kl;
  bool contiguous = g.cg == g.c && dl == 1;
  float *dst = col;
  for (int64_t p = p0; p < p1; ++p, increment(o, g.out.data(), k)) {
    // Last dimension: taps t in [lo, hi) are inside the input.
    int64_t baseL = o[k - 1] * g.stride[k - 1] - g.padB[k - 1];
    int64_t lo = std::clamp<int64_t>(baseL >= 0 ? 0 : ceilDiv(-baseL, dl), 0, kl);
    int64_t hi = std::clamp<int64_t>(ceilDiv(inl - baseL, dl), lo, kl);
    std::fill(kk.begin(), kk.end(), 0);
    for (int64_t t = 0; t < leadTaps;
         ++t, increment(kk, g.ker.data(), lead), dst += runLen) {
      int64_t off = 0; // pixel index of the row's (lead dims, 0) position
      bool valid = true;
      for (int j = 0; j < lead; ++j) {
        int64_t i = o[j] * g.stride[j] - g.padB[j] + kk[j] * g.dil[j];
        if (i < 0 || i >= g.in[j]) {
          valid = false;
          break;
        }
        off = off * g.in[j] + i;
      }
      if (!valid || lo >= hi) {
        std::memset(dst, 0, sizeof(float) * runLen);
        continue;
      }
      off *= inl;
      if (lo > 0)
        std::memset(dst, 0, sizeof(float) * lo * g.cg);
      if (contiguous) {
        std::memcpy(dst + lo * g.cg, xgrp + (off + baseL + lo) * g.c,
                    sizeof(float) * (hi - lo) * g.cg);
      } else {
        for (int64_t tl = lo; tl < hi; ++tl) {
          const float *src = xgrp + (off + baseL + tl * dl) * g.c;
          float *d = dst + tl * g.cg;
          for (int64_t c = 0; c < g.cg; ++c)
            d[c] = src[c];
        }
      }
      if (hi < kl)
        std::memset(dst + hi * g.cg, 0, sizeof(float) * (kl - hi) * g.cg);
    }
  }
}

Status check(const TensorView &x, const TensorView &w, const TensorView *bias,
             const TensorView *residual, const TensorView &y,
             const ConvOptions &o, Geom &g) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"w", &w}, {"y", &y}, {"bias", bias},
                         {"residual", residual}})
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;
  if (!isF32or16(x.dtype))
    return fail(kOp, "x has dtype " + std::string(dtypeName(x.dtype)) +
                         "; expected f32, f16 or bf16");
  if (w.dtype != x.dtype)
    return fail(kOp, "w has dtype " + std::string(dtypeName(w.dtype)) +
                         ", x " + std::string(dtypeName(x.dtype)) +
                         "; they must match");
  if (!isF32or16(y.dtype))
    return fail(kOp, "y has dtype " + std::string(dtypeName(y.dtype)) +
                         "; expected f32, f16 or bf16");
  // The bias is added in f32: any float dtype of 16 or 32 bits (a 16-bit
  // convolution widened to f32 keeps its 16-bit bias).
  if (bias && !isF32or16(bias->dtype))
    return fail(kOp, "bias has dtype " + std::string(dtypeName(bias->dtype)) +
                         "; expected f32, f16 or bf16");
  if (residual && residual->dtype != y.dtype)
    return fail(kOp, "residual has dtype " +
                         std::string(dtypeName(residual->dtype)) +
                         "; expected y's dtype " +
                         std::string(dtypeName(y.dtype)));
  if (Status s = checkConvRanks(kOp, x.shape, "w", w.shape, "y", y.shape); !s)
    return s;
  size_t rank = x.shape.size();
  g.k = static_cast<int>(rank - 2);
  g.layout = o.layout;
  bool nhwc = o.layout == Layout::NHWC;
  g.n = x.shape[0];
  g.c = nhwc ? x.shape[rank - 1] : x.shape[1];
  g.m = w.shape[0];
  g.groups = o.groups;
  int64_t wc = nhwc ? w.shape[rank - 1] : w.shape[1];
  g.in.assign(x.shape.begin() + (nhwc ? 1 : 2), x.shape.end() - (nhwc ? 1 : 0));
  g.ker.assign(w.shape.begin() + (nhwc ? 1 : 2), w.shape.end() - (nhwc ? 1 : 0));
  if (Status s = checkConvGroups(kOp, o.groups, g.c, g.m); !s)
    return s;
  g.cg = g.c / o.groups;
  g.mg = g.m / o.groups;
  if (Status s = checkConvWeights(kOp, "w", w.shape, wc, g.cg, g.ker); !s)
    return s;
  size_t k = g.k;
  if (Status s = windowAttrs(kOp, o, g); !s)
    return s;
  if (Status s = convOutExtents(kOp, x.shape, g); !s)
    return s;
  Shape expected{g.n};
  if (!nhwc)
    expected.push_back(g.m);
  expected.insert(expected.end(), g.out.begin(), g.out.end());
  if (nhwc)
    expected.push_back(g.m);
  if (y.shape != expected)
    return fail(kOp, "y has shape " + shapeStr(y.shape) + ", expected " +
                         shapeStr(expected));
  if (bias && !(bias->shape.size() == 1 && bias->shape[0] == g.m))
    return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                         ", expected [" + std::to_string(g.m) + "]");
  if (residual && residual->shape != y.shape)
    return fail(kOp, "residual has shape " + shapeStr(residual->shape) +
                         ", expected y's " + shapeStr(y.shape));
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"w", &w}, {"bias", bias}})
    if (v && overlaps(v->data, v->byteCount(), y.data, y.byteCount()))
      return fail(kOp, std::string(name) + " overlaps y");
  if (residual &&
      overlaps(residual->data, residual->byteCount(), y.data, y.byteCount()) &&
      residual->data != y.data)
    return fail(kOp, "residual overlaps y without being y itself");

  g.inStride.assign(k, 1);
  for (size_t i = k - 1; i-- > 0;)
    g.inStride[i] = g.inStride[i + 1] * g.in[i + 1];
  g.inSize = numElements(g.in);
  g.kerSize = numElements(g.ker);
  g.outSize = numElements(g.out);
  g.pointwise = true;
  for (size_t i = 0; i < k; ++i)
    g.pointwise = g.pointwise && g.ker[i] == 1 && g.stride[i] == 1 &&
                  g.padB[i] == 0 && g.padE[i] == 0;
  return Status::ok();
}

} // namespace

/// One channel of a 2-D depthwise convolution (NCHW, one input and one
/// output channel per group), directly: im2col + a GEMM with one row would
/// spend its time copying. For each filter tap the output columns that read
/// inside the input form one range, so the inner loop has no bounds checks
/// (and is contiguous for stride 1).
void depthwise2d(const Geom &g, const float *x, const float *w, float *y) {
  const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t sh = g.stride[0], sw = g.stride[1];
  const int64_t dh = g.dil[0], dw = g.dil[1];
  const int64_t ph = g.padB[0], pw = g.padB[1];
  std::fill(y, y + oh * ow, 0.0f);
  for (int64_t kh = 0; kh < g.ker[0]; ++kh)
    for (int64_t kw = 0; kw < g.ker[1]; ++kw) {
      const float tap = w[kh * g.ker[1] + kw];
      // Output columns c with 0 <= c * sw - pw + kw * dw < iw.
      const int64_t shift = kw * dw - pw;
      const int64_t c0 = std::max<int64_t>(0, ceilDiv(-shift, sw));
      const int64_t c1 = std::min<int64_t>(ow, ceilDiv(iw - shift, sw));
      if (c0 >= c1)
        continue;
      for (int64_t r = 0; r < oh; ++r) {
        const int64_t in_r = r * sh - ph + kh * dh;
        if (in_r < 0 || in_r >= ih)
          continue;
        const float *xr = x + in_r * iw + shift;
        float *yr = y + r * ow;
        if (sw == 1) {
          for (int64_t c = c0; c < c1; ++c)
            yr[c] += tap * xr[c];
        } else {
          for (int64_t c = c0; c < c1; ++c)
            yr[c] += tap * xr[c * sw];
        }
      }
    }
}

Status checkConv(const TensorView &x, const TensorView &w,
                 const TensorView *bias, const TensorView *residual,
                 const TensorView &y, const ConvOptions &o) {
  Geom g;
  return check(x, w, bias, residual, y, o, g);
}

Status conv(const TensorView &x, const TensorView &w, const TensorView *bias,
            const TensorView *residual, const TensorView &y,
            const ConvOptions &o) {
  Geom g;
  if (Status s = check(x, w, bias, residual, y, o, g); !s)
    return s;
  int64_t kdim = g.cg * g.kerSize;
  if (!fitsBlasInt({g.m, g.c, kdim, g.outSize, g.inSize}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  if (y.numElements() == 0)
    return Status::ok();

  bool nhwc = g.layout == Layout::NHWC;
  int64_t imgIn = g.c * g.inSize, imgOut = g.m * g.outSize;

  // Weights and bias in f32.
  const float *wf = w.as<const float>();
  std::optional<Scratch> wCopy;
  if (w.dtype != DType::F32) {
    wCopy.emplace(kWeightSlot, w.numElements());
    toF32(w.dtype, w.data, wCopy->get(), w.numElements());
    wf = wCopy->get();
  }
  std::vector<float> biasF;
  if (bias) {
    biasF.resize(static_cast<size_t>(g.m));
    toF32(bias->dtype, bias->data, biasF.data(), g.m);
  }

  // The GEMM writes straight into an f32 y unless the residual is y itself.
  bool direct = y.dtype == DType::F32 && !(residual && residual->data == y.data);
  bool epilogue = !direct || bias || residual ||
                  o.activation != Activation::None;

  // Column blocks: NCHW blocks leading output positions (all spatial dims
  // but the last), NHWC blocks output pixels.
  int64_t ol = g.out[g.k - 1];
  int64_t lead = g.outSize / ol;
  int64_t blockUnits = 0, units = 0, colSize = 0;
  if (!g.pointwise) {
    if (!nhwc) {
      int64_t perUnit = kdim * ol * int64_t(sizeof(float));
      units = lead;
      blockUnits = std::clamp<int64_t>(kColBlockBytes / std::max<int64_t>(perUnit, 1), 1, lead);
      colSize = kdim * blockUnits * ol;
    } else {
      int64_t perUnit = kdim * int64_t(sizeof(float));
      units = g.outSize;
      blockUnits = std::clamp<int64_t>(kColBlockBytes / std::max<int64_t>(perUnit, 1), 1, g.outSize);
      colSize = kdim * blockUnits;
    }
  }
  Scratch col(kColSlot, colSize);
  Scratch xImgCopy(kInputSlot, x.dtype != DType::F32 ? imgIn : 0);
  Scratch outCopy(kOutputSlot, direct ? 0 : imgOut);

  size_t yElt = byteSize(y.dtype);
  for (int64_t img = 0; img < g.n; ++img) {
    const float *ximg;
    if (x.dtype == DType::F32) {
      ximg = x.as<const float>() + img * imgIn;
    } else {
      toF32(x.dtype, static_cast<const char *>(x.data) + img * imgIn * byteSize(x.dtype),
            xImgCopy.get(), imgIn);
      ximg = xImgCopy.get();
    }
    float *out = direct ? y.as<float>() + img * imgOut : outCopy.get();

    for (int64_t grp = 0; grp < g.groups; ++grp) {
      if (kdim == 0) { // no input channels: the products are 0
        for (int64_t r = 0; r < g.mg; ++r)
          for (int64_t p = 0; p < g.outSize; ++p) {
            int64_t i = nhwc ? p * g.m + grp * g.mg + r
                             : (grp * g.mg + r) * g.outSize + p;
            out[i] = 0.0f;
          }
        continue;
      }
      const float *wg = wf + grp * g.mg * kdim;
      if (!nhwc) {
        float *og = out + grp * g.mg * g.outSize;
        const float *xg = ximg + grp * g.cg * g.inSize;
        if (g.pointwise) {
          sgemm(false, false, g.mg, g.outSize, kdim, 1.0f, wg, kdim, xg,
                g.inSize, 0.0f, og, g.outSize);
          continue;
        }
        if (g.k == 2 && g.cg == 1 && g.mg == 1) {
          depthwise2d(g, xg, wg, og);
          continue;
        }
        for (int64_t q0 = 0; q0 < units; q0 += blockUnits) {
          int64_t q1 = std::min(units, q0 + blockUnits);
          int64_t cols = (q1 - q0) * ol;
          im2colNCHW(g, xg, q0, q1, col.get());
          sgemm(false, false, g.mg, cols, kdim, 1.0f, wg, kdim, col.get(), cols,
                0.0f, og + q0 * ol, g.outSize);
        }
      } else {
        float *og = out + grp * g.mg;
        if (g.pointwise) {
          sgemm(false, true, g.outSize, g.mg, kdim, 1.0f, ximg + grp * g.cg,
                g.c, wg, kdim, 0.0f, og, g.m);
          continue;
        }
        for (int64_t p0 = 0; p0 < units; p0 += blockUnits) {
          int64_t p1 = std::min(units, p0 + blockUnits);
          im2colNHWC(g, ximg, grp, p0, p1, col.get());
          sgemm(false, true, p1 - p0, g.mg, kdim, 1.0f, col.get(), kdim, wg,
                kdim, 0.0f, og + p0 * g.m, g.m);
        }
      }
    }

    if (!epilogue)
      continue;
    // Rows of the image's result: NCHW one channel (bias[m]), NHWC one pixel
    // (bias over the row).
    int64_t rows = nhwc ? g.outSize : g.m, rowLen = nhwc ? g.m : g.outSize;
    char *yimg = static_cast<char *>(y.data) + img * imgOut * yElt;
    const char *rimg =
        residual ? static_cast<const char *>(residual->data) + img * imgOut * yElt
                 : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
      float *row = out + r * rowLen;
      if (bias) {
        if (nhwc)
          for (int64_t j = 0; j < rowLen; ++j)
            row[j] += biasF[static_cast<size_t>(j)];
        else {
          float bv = biasF[static_cast<size_t>(r)];
          for (int64_t j = 0; j < rowLen; ++j)
            row[j] += bv;
        }
      }
      if (rimg)
        addScaled(row, residual->dtype, rimg + r * rowLen * yElt, rowLen, 1.0f);
      activate(o.activation, row, rowLen, o.clipMin, o.clipMax);
      if (!direct)
        fromF32(row, y.dtype, yimg + r * rowLen * yElt, rowLen);
    }
  }
  return Status::ok();
}

} // namespace mp::rt::cpu
