//===- BuiltinBLAS.cpp - GEMM/GEMV for runtimes built without OpenBLAS ----===//
//
// cblas.h beside this file. Row-major (column-major calls are the transposed
// row-major product), beta == 0 never reads C / y (CBLAS semantics: NaNs
// there do not propagate). op(B) is packed into a contiguous [k, n] block so
// that the inner loop runs over unit-stride rows the compiler vectorizes.
//
//===----------------------------------------------------------------------===//
#include "cblas.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

template <typename T>
void gemmRowMajor(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                  T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
                  T beta, T *c, int64_t ldc) {
  if (m <= 0 || n <= 0)
    return;
  for (int64_t i = 0; i < m; ++i) {
    T *row = c + i * ldc;
    if (beta == T(0))
      std::fill(row, row + n, T(0));
    else if (beta != T(1))
      for (int64_t j = 0; j < n; ++j)
        row[j] *= beta;
  }
  if (k <= 0 || alpha == T(0))
    return;
  // op(B) as a contiguous [k, n] block, in panels of k to bound the memory.
  constexpr int64_t kPanel = 256;
  std::vector<T> packed(static_cast<size_t>(std::min(k, kPanel) * n));
  for (int64_t p0 = 0; p0 < k; p0 += kPanel) {
    const int64_t pk = std::min(kPanel, k - p0);
    for (int64_t p = 0; p < pk; ++p)
      for (int64_t j = 0; j < n; ++j)
        packed[p * n + j] = transB ? b[j * ldb + (p0 + p)] : b[(p0 + p) * ldb + j];
    for (int64_t i = 0; i < m; ++i) {
      T *row = c + i * ldc;
      for (int64_t p = 0; p < pk; ++p) {
        const T av =
            alpha * (transA ? a[(p0 + p) * lda + i] : a[i * lda + (p0 + p)]);
        const T *bp = packed.data() + p * n;
        for (int64_t j = 0; j < n; ++j)
          row[j] += av * bp[j];
      }
    }
  }
}

template <typename T>
void gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE transA, CBLAS_TRANSPOSE transB,
          blasint m, blasint n, blasint k, T alpha, const T *a, blasint lda,
          const T *b, blasint ldb, T beta, T *c, blasint ldc) {
  const bool ta = transA != CblasNoTrans, tb = transB != CblasNoTrans;
  if (order == CblasRowMajor)
    gemmRowMajor<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else // column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T
    gemmRowMajor<T>(tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
}

template <typename T>
void gemv(CBLAS_ORDER order, CBLAS_TRANSPOSE trans, blasint m, blasint n,
          T alpha, const T *a, blasint lda, const T *x, blasint incx, T beta,
          T *y, blasint incy) {
  // Row-major A [m, n]; a column-major A is the row-major A^T.
  bool t = trans != CblasNoTrans;
  if (order == CblasColMajor) {
    t = !t;
    std::swap(m, n);
  }
  const int64_t rows = t ? n : m, cols = t ? m : n; // y has `rows` elements
  auto yAt = [&](int64_t i) -> T & {
    return y[incy > 0 ? i * incy : (rows - 1 - i) * -int64_t(incy)];
  };
  auto xAt = [&](int64_t i) -> T {
    return x[incx > 0 ? i * incx : (cols - 1 - i) * -int64_t(incx)];
  };
  for (int64_t i = 0; i < rows; ++i)
    yAt(i) = beta == T(0) ? T(0) : yAt(i) * beta;
  if (alpha == T(0))
    return;
  if (!t) {
    for (int64_t i = 0; i < rows; ++i) {
      T sum = 0;
      for (int64_t j = 0; j < cols; ++j)
        sum += a[i * lda + j] * xAt(j);
      yAt(i) += alpha * sum;
    }
  } else {
    for (int64_t j = 0; j < cols; ++j) {
      const T xv = alpha * xAt(j);
      for (int64_t i = 0; i < rows; ++i)
        yAt(i) += a[j * lda + i] * xv;
    }
  }
}

} // namespace

extern "C" {

void cblas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE transA,
                 CBLAS_TRANSPOSE transB, blasint m, blasint n, blasint k,
                 float alpha, const float *a, blasint lda, const float *b,
                 blasint ldb, float beta, float *c, blasint ldc) {
  gemm<float>(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

void cblas_dgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE transA,
                 CBLAS_TRANSPOSE transB, blasint m, blasint n, blasint k,
                 double alpha, const double *a, blasint lda, const double *b,
                 blasint ldb, double beta, double *c, blasint ldc) {
  gemm<double>(order, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c,
               ldc);
}

void cblas_sgemv(CBLAS_ORDER order, CBLAS_TRANSPOSE trans, blasint m,
                 blasint n, float alpha, const float *a, blasint lda,
                 const float *x, blasint incx, float beta, float *y,
                 blasint incy) {
  gemv<float>(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

void cblas_dgemv(CBLAS_ORDER order, CBLAS_TRANSPOSE trans, blasint m,
                 blasint n, double alpha, const double *a, blasint lda,
                 const double *x, blasint incx, double beta, double *y,
                 blasint incy) {
  gemv<double>(order, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

} // extern "C"
