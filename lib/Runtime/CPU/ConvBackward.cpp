//===- ConvBackward.cpp - convolution backward filter on the CPU ---------===//
//
// Per image and group (NCHW):
//
//   dw_g[Mg, Cg*K] += dy_g[Mg, P] @ col[Cg*K, P]^T
//
// with col the im2col of the group's input channels (rows (c, kernel
// position), columns output positions, zeros for padding), built a block of
// output positions at a time so that it stays in cache; a pointwise
// convolution uses the input image itself. T, the compute type, is float for
// f32 / f16 / bf16 data (16-bit images widened first, sgemm, dw rounded once
// at the end) and double for f64 (dgemm).
//
//===----------------------------------------------------------------------===//
#include "mp/Runtime/CPU/BackwardKernels.h"

#include "KernelUtil.h"

#include <algorithm>
#include <type_traits>

namespace mp::rt::cpu {
using namespace detail;

namespace {

constexpr std::string_view kOp = "conv_bwd_filter";

/// Bytes of im2col buffer one GEMM works on (as the forward).
constexpr int64_t kColBlockBytes = int64_t(4) << 20;

struct Geom {
  int k = 0; // spatial rank
  int64_t n = 0, c = 0, m = 0, groups = 1, cg = 0, mg = 0;
  std::vector<int64_t> in, ker, out, stride, dil, padB, padE;
  int64_t inSize = 1, kerSize = 1, outSize = 1;
  bool pointwise = false;
};

std::string dt(DType t) { return std::string(dtypeName(t)); }

Status check(const TensorView &x, const TensorView &dy, const TensorView &dw,
             const ConvOptions &o, Geom &g) {
  for (auto [name, v] : {std::pair<const char *, const TensorView *>{"x", &x},
                         {"dy", &dy},
                         {"dw", &dw}})
    if (Status s = checkView(kOp, name, *v); !s)
      return s;
  if (o.layout != Layout::NCHW)
    return fail(kOp, "only the NCHW layout is supported");
  if (o.activation != Activation::None)
    return fail(kOp, "the filter gradient of a fused activation is not "
                     "supported (activation must be none)");
  if (!isFloat(x.dtype))
    return fail(kOp, "x has dtype " + dt(x.dtype) +
                         "; expected f32, f16, bf16 or f64");
  if (dy.dtype != x.dtype)
    return fail(kOp, "dy has dtype " + dt(dy.dtype) + ", x " + dt(x.dtype) +
                         "; they must match");
  if (x.dtype == DType::F64 ? dw.dtype != DType::F64 : !isF32or16(dw.dtype))
    return fail(kOp, "dw has dtype " + dt(dw.dtype) + "; expected " +
                         (x.dtype == DType::F64 ? "f64 for f64 x"
                                                : "f32, f16 or bf16"));
  if (Status s = checkConvRanks(kOp, x.shape, "dy", dy.shape, "dw", dw.shape);
      !s)
    return s;
  size_t rank = x.shape.size();
  g.k = static_cast<int>(rank - 2);
  g.n = x.shape[0];
  g.c = x.shape[1];
  g.m = dw.shape[0];
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.ker.assign(dw.shape.begin() + 2, dw.shape.end());
  if (Status s = checkConvGroups(kOp, o.groups, g.c, g.m); !s)
    return s;
  g.groups = o.groups;
  g.cg = g.c / o.groups;
  g.mg = g.m / o.groups;
  if (Status s =
          checkConvWeights(kOp, "dw", dw.shape, dw.shape[1], g.cg, g.ker);
      !s)
    return s;
  size_t k = g.k;
  if (Status s = windowAttrs(kOp, o, g); !s)
    return s;
  if (Status s = convOutExtents(kOp, x.shape, g); !s)
    return s;
  Shape expected{g.n, g.m};
  expected.insert(expected.end(), g.out.begin(), g.out.end());
  if (dy.shape != expected)
    return fail(kOp, "dy has shape " + shapeStr(dy.shape) + ", expected " +
                         shapeStr(expected) + " (conv's output for x " +
                         shapeStr(x.shape) + " and dw " + shapeStr(dw.shape) +
                         ")");
  for (auto [name, v] :
       {std::pair<const char *, const TensorView *>{"x", &x}, {"dy", &dy}})
    if (overlaps(v->data, v->byteCount(), dw.data, dw.byteCount()))
      return fail(kOp, std::string(name) + " overlaps dw");
  g.inSize = numElements(g.in);
  g.kerSize = numElements(g.ker);
  g.outSize = numElements(g.out);
  g.pointwise = true;
  for (size_t i = 0; i < k; ++i)
    g.pointwise = g.pointwise && g.ker[i] == 1 && g.stride[i] == 1 &&
                  g.padB[i] == 0 && g.padE[i] == 0;
  if (!fitsBlasInt({g.m, g.c, g.cg * g.kerSize, g.outSize, g.inSize}))
    return fail(kOp, "dimensions exceed the BLAS integer range");
  return Status::ok();
}

/// im2col of one group of one image (xg: its Cg channels) for the output
/// positions [p0, p1). col: [Cg*K, p1-p0]. `src` (p1-p0 entries) is scratch
/// for the input offsets of one kernel position (-1: padding).
template <typename T>
void im2col(const Geom &g, const T *xg, int64_t p0, int64_t p1, T *col,
            std::vector<int64_t> &src) {
  const int k = g.k;
  const int64_t cols = p1 - p0;
  std::vector<int64_t> kk(k, 0), o(k, 0);
  for (int64_t kidx = 0; kidx < g.kerSize;
       ++kidx, increment(kk, g.ker.data(), k)) {
    int64_t rem = p0;
    for (int j = k - 1; j >= 0; --j) {
      o[j] = rem % g.out[j];
      rem /= g.out[j];
    }
    for (int64_t q = 0; q < cols; ++q, increment(o, g.out.data(), k)) {
      int64_t off = 0;
      bool valid = true;
      for (int j = 0; j < k; ++j) {
        int64_t i = o[j] * g.stride[j] - g.padB[j] + kk[j] * g.dil[j];
        if (i < 0 || i >= g.in[j]) {
          valid = false;
          break;
        }
        off = off * g.in[j] + i;
      }
      src[q] = valid ? off : -1;
    }
    for (int64_t c = 0; c < g.cg; ++c) {
      const T *xc = xg + c * g.inSize;
      T *dst = col + (c * g.kerSize + kidx) * cols;
      for (int64_t q = 0; q < cols; ++q)
        dst[q] = src[q] >= 0 ? xc[src[q]] : T(0);
    }
  }
}

template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const T *a,
          int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc) {
  if constexpr (std::is_same_v<T, double>)
    dgemm(transA, transB, m, n, k, 1.0, a, lda, b, ldb, 1.0, c, ldc);
  else
    sgemm(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
}

/// Image `img` of t ([N, ...], imgSize elements each) in T: a pointer into t
/// when its dtype is T's (f32, f64), else widened into buf.
template <typename T>
const T *image(const TensorView &t, int64_t img, int64_t imgSize,
               std::vector<T> &buf) {
  if constexpr (std::is_same_v<T, double>) {
    return t.as<const double>() + img * imgSize;
  } else {
    if (t.dtype == DType::F32)
      return t.as<const float>() + img * imgSize;
    toF32(t.dtype,
          static_cast<const char *>(t.data) + img * imgSize * byteSize(t.dtype),
          buf.data(), imgSize);
    return buf.data();
  }
}

template <typename T>
void run(const Geom &g, const TensorView &x, const TensorView &dy,
         const TensorView &dw) {
  const int64_t kdim = g.cg * g.kerSize;
  const int64_t imgIn = g.c * g.inSize, imgOut = g.m * g.outSize;
  std::vector<T> acc(static_cast<size_t>(g.m * kdim), T(0));
  const bool widen = x.dtype != DType::F32 && x.dtype != DType::F64;
  std::vector<T> xBuf(widen ? imgIn : 0), dyBuf(widen ? imgOut : 0);
  int64_t block = 0;
  if (!g.pointwise)
    block = std::clamp<int64_t>(
        kColBlockBytes / std::max<int64_t>(kdim * int64_t(sizeof(T)), 1), 1,
        std::max<int64_t>(g.outSize, 1));
  std::vector<T> col(static_cast<size_t>(kdim * block));
  std::vector<int64_t> src(static_cast<size_t>(block));
  if (kdim > 0 && g.outSize > 0)
    for (int64_t img = 0; img < g.n; ++img) {
      const T *ximg = image(x, img, imgIn, xBuf);
      const T *dyimg = image(dy, img, imgOut, dyBuf);
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        const T *xg = ximg + grp * g.cg * g.inSize;
        const T *dyg = dyimg + grp * g.mg * g.outSize;
        T *accg = acc.data() + grp * g.mg * kdim;
        if (g.pointwise) {
          gemm<T>(false, true, g.mg, g.cg, g.outSize, dyg, g.outSize, xg,
                  g.inSize, accg, kdim);
          continue;
        }
        for (int64_t p0 = 0; p0 < g.outSize; p0 += block) {
          int64_t p1 = std::min(g.outSize, p0 + block);
          im2col(g, xg, p0, p1, col.data(), src);
          gemm<T>(false, true, g.mg, kdim, p1 - p0, dyg + p0, g.outSize,
                  col.data(), p1 - p0, accg, kdim);
        }
      }
    }
  narrowInto(acc, dw);
}

} // namespace

Status convBackwardFilter(const TensorView &x, const TensorView &dy,
                          const TensorView &dw, const ConvOptions &options) {
  Geom g;
  if (Status s = check(x, dy, dw, options, g); !s)
    return s;
  if (dw.numElements() == 0)
    return Status::ok();
  if (x.dtype == DType::F64)
    run<double>(g, x, dy, dw);
  else
    run<float>(g, x, dy, dw);
  return Status::ok();
}

} // namespace mp::rt::cpu
