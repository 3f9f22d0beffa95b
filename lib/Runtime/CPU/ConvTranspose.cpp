//===- ConvTranspose.cpp - ONNX ConvTranspose (cuDNN backward data) -------===//
//
// Per image and group, a GEMM then col2im (f32):
//   col[Mg*K, P] = W_g^T[Mg*K, Cg] @ x_g[Cg, P]    (P: input positions)
//   y[m, o] += col[(m, j), i] for o = i*stride - padBegin + j*dilation
// w [C, M/groups, K...] is, per group, the row-major [Cg, Mg*K] matrix, so
// the GEMM reads it transposed in place. The input positions are blocked
// (by leading spatial index) so that the column block stays in cache. y
// starts as the bias (or 0) and is rounded once to its type at the end.
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/NNKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <optional>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "conv_transpose";
constexpr int64_t kColBlockBytes = int64_t(4) << 20;

struct Geom {
  int k = 0; // spatial rank
  int64_t n = 0, c = 0, m = 0, groups = 1, cg = 0, mg = 0;
  std::vector<int64_t> in, ker, out, stride, dil, padB, padE;
  std::vector<int64_t> outStride; // element stride of each output spatial dim
  int64_t inSize = 1, kerSize = 1, outSize = 1;
};

Status check(const TensorView &x, const TensorView &w, const TensorView *bias,
             const TensorView &y, const ConvTransposeOptions &o, Geom &g) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"w", &w}, {"y", &y}, {"bias", bias}})
    if (v)
      if (Status s = checkView(kOp, name, *v); !s)
        return s;
  if (!isF32or16(x.dtype) || w.dtype != x.dtype)
    return fail(kOp, "x and w have dtypes " + std::string(dtypeName(x.dtype)) +
                         " and " + std::string(dtypeName(w.dtype)) +
                         "; expected both f32, f16 or bf16");
  if (!isF32or16(y.dtype))
    return fail(kOp, "y has dtype " + std::string(dtypeName(y.dtype)) +
                         "; expected f32, f16 or bf16");
  if (bias && bias->dtype != y.dtype && bias->dtype != DType::F32)
    return fail(kOp, "bias has dtype " + std::string(dtypeName(bias->dtype)) +
                         "; expected y's dtype or f32");
  if (Status s = checkConvRanks(kOp, x.shape, "w", w.shape, "y", y.shape); !s)
    return s;
  size_t rank = x.shape.size();
  g.k = static_cast<int>(rank - 2);
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.groups = o.groups;
  if (o.groups < 1 || g.c % o.groups)
    return fail(kOp, "groups = " + std::to_string(o.groups) +
                         " must be >= 1 and divide the input channels (" +
                         std::to_string(g.c) + ")");
  if (w.shape[0] != g.c)
    return fail(kOp, "w " + shapeStr(w.shape) + " must have x's " +
                         std::to_string(g.c) + " channels first");
  g.cg = g.c / o.groups;
  g.mg = w.shape[1];
  g.m = g.mg * o.groups;
  if (y.shape[0] != g.n || y.shape[1] != g.m)
    return fail(kOp, "y " + shapeStr(y.shape) + " must start with [" +
                         std::to_string(g.n) + ", " + std::to_string(g.m) +
                         "] (N, groups * w's dimension 1)");
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.ker.assign(w.shape.begin() + 2, w.shape.end());
  g.out.assign(y.shape.begin() + 2, y.shape.end());
  size_t k = g.k;
  if (Status s = windowAttrs(kOp, o, g); !s)
    return s;
  for (size_t i = 0; i < k; ++i) {
    if (g.ker[i] < 1 || g.in[i] < 1)
      return fail(kOp, "x " + shapeStr(x.shape) + " and w " +
                           shapeStr(w.shape) +
                           " need non-empty spatial dimensions");
    int64_t span, dilated, full;
    if (__builtin_mul_overflow(g.stride[i], g.in[i] - 1, &span) ||
        __builtin_mul_overflow(g.dil[i], g.ker[i] - 1, &dilated) ||
        __builtin_add_overflow(span, dilated, &full) || full > (int64_t(1) << 60))
      return fail(kOp, "the output extent overflows along spatial dimension " +
                           std::to_string(i));
    // Pads are at most 2^40 (spatialAttr).
    full = full + 1 - g.padB[i] - g.padE[i];
    int64_t outPad = g.out[i] - full;
    if (outPad < 0 || outPad >= std::max(g.stride[i], g.dil[i]))
      return fail(kOp, "y " + shapeStr(y.shape) + " has " +
                           std::to_string(g.out[i]) +
                           " positions along spatial dimension " +
                           std::to_string(i) + "; expected " +
                           std::to_string(full) + " plus an output padding "
                           "below max(stride, dilation)");
  }
  if (bias && !(bias->shape.size() == 1 && bias->shape[0] == g.m))
    return fail(kOp, "bias has shape " + shapeStr(bias->shape) +
                         ", expected [" + std::to_string(g.m) + "]");
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"w", &w}, {"bias", bias}})
    if (v && overlaps(v->data, v->byteCount(), y.data, y.byteCount()))
      return fail(kOp, std::string(name) + " overlaps y");
  g.outStride.assign(k, 1);
  for (size_t i = k - 1; i-- > 0;)
    g.outStride[i] = g.outStride[i + 1] * g.out[i + 1];
  g.inSize = numElements(g.in);
  g.kerSize = numElements(g.ker);
  g.outSize = numElements(g.out);
  if (!fitsBlasInt({g.mg * g.kerSize, g.cg, g.inSize, g.outSize}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  return Status::ok();
}

/// Adds col ([Mg*K, (q1-q0)*D_last], the products for input positions whose
/// leading spatial index lies in [q0, q1)) into out ([Mg, O], one group).
void col2im(const Geom &g, const float *col, int64_t q0, int64_t q1,
            float *out) {
  int k = g.k;
  int64_t dl = g.in[k - 1], ol = g.out[k - 1], sl = g.stride[k - 1];
  int64_t cols = (q1 - q0) * dl;
  std::vector<int64_t> kk(k, 0), i(k > 1 ? k - 1 : 1, 0);
  for (int64_t kidx = 0; kidx < g.kerSize;
       ++kidx, increment(kk, g.ker.data(), k)) {
    // Last dim: o = i*sl + offL; valid inputs i in [lo, hi).
    int64_t offL = kk[k - 1] * g.dil[k - 1] - g.padB[k - 1];
    int64_t lo = std::clamp<int64_t>(offL >= 0 ? 0 : ceilDiv(-offL, sl), 0, dl);
    int64_t hi = std::clamp<int64_t>(ceilDiv(ol - offL, sl), lo, dl);
    if (lo >= hi)
      continue;
    for (int64_t m = 0; m < g.mg; ++m) {
      const float *src = col + (m * g.kerSize + kidx) * cols;
      float *om = out + m * g.outSize;
      int64_t rem = q0;
      for (int j = k - 2; j >= 0; --j) {
        i[j] = rem % g.in[j];
        rem /= g.in[j];
      }
      for (int64_t q = q0; q < q1; ++q, src += dl) {
        bool valid = true;
        int64_t off = 0;
        for (int j = 0; j < k - 1; ++j) {
          int64_t oj = i[j] * g.stride[j] - g.padB[j] + kk[j] * g.dil[j];
          if (oj < 0 || oj >= g.out[j]) {
            valid = false;
            break;
          }
          off += oj * g.outStride[j];
        }
        if (k > 1)
          increment(i, g.in.data(), k - 1);
        if (!valid)
          continue;
        float *dst = om + off + offL;
        if (sl == 1)
          for (int64_t ii = lo; ii < hi; ++ii)
            dst[ii] += src[ii];
        else
          for (int64_t ii = lo; ii < hi; ++ii)
            dst[ii * sl] += src[ii];
      }
    }
  }
}

} // namespace

Status convTranspose(const TensorView &x, const TensorView &w,
                     const TensorView *bias, const TensorView &y,
                     const ConvTransposeOptions &o) {
  Geom g;
  if (Status s = check(x, w, bias, y, o, g); !s)
    return s;
  if (y.numElements() == 0)
    return Status::ok();

  std::vector<float> wCopy;
  const float *wf = w.as<const float>();
  if (w.dtype != DType::F32) {
    wCopy.resize(static_cast<size_t>(w.numElements()));
    toF32(w.dtype, w.data, wCopy.data(), w.numElements());
    wf = wCopy.data();
  }
  std::vector<float> biasF(static_cast<size_t>(g.m), 0.0f);
  if (bias)
    toF32(bias->dtype, bias->data, biasF.data(), g.m);

  int64_t imgIn = g.c * g.inSize, imgOut = g.m * g.outSize;
  int64_t rowsK = g.mg * g.kerSize;
  int64_t dl = g.in[g.k - 1], lead = g.inSize / dl;
  int64_t blockUnits = std::clamp<int64_t>(
      kColBlockBytes / std::max<int64_t>(rowsK * dl * int64_t(sizeof(float)), 1),
      1, lead);
  std::vector<float> col(static_cast<size_t>(rowsK * blockUnits * dl));
  std::vector<float> xCopy(x.dtype != DType::F32 ? static_cast<size_t>(imgIn) : 0);
  bool direct = y.dtype == DType::F32;
  std::vector<float> outCopy(direct ? 0 : static_cast<size_t>(imgOut));
  size_t xElt = byteSize(x.dtype), yElt = byteSize(y.dtype);

  for (int64_t img = 0; img < g.n; ++img) {
    const float *ximg;
    if (x.dtype == DType::F32) {
      ximg = x.as<const float>() + img * imgIn;
    } else {
      toF32(x.dtype, static_cast<const char *>(x.data) + img * imgIn * xElt,
            xCopy.data(), imgIn);
      ximg = xCopy.data();
    }
    float *out = direct ? y.as<float>() + img * imgOut : outCopy.data();
    for (int64_t m = 0; m < g.m; ++m)
      std::fill(out + m * g.outSize, out + (m + 1) * g.outSize, biasF[m]);
    if (g.cg == 0)
      continue;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const float *wg = wf + grp * g.cg * rowsK;
      const float *xg = ximg + grp * g.cg * g.inSize;
      float *og = out + grp * g.mg * g.outSize;
      for (int64_t q0 = 0; q0 < lead; q0 += blockUnits) {
        int64_t q1 = std::min(lead, q0 + blockUnits);
        int64_t cols = (q1 - q0) * dl;
        sgemm(true, false, rowsK, cols, g.cg, 1.0f, wg, rowsK, xg + q0 * dl,
              g.inSize, 0.0f, col.data(), cols);
        col2im(g, col.data(), q0, q1, og);
      }
    }
    if (!direct)
      fromF32(out, y.dtype, static_cast<char *>(y.data) + img * imgOut * yElt,
              imgOut);
  }
  return Status::ok();
}

} // namespace mp::rt::cpu
