/*===- cblas.h - the runtime's built-in GEMM/GEMV (no OpenBLAS) ----------===*
 *
 * The CBLAS subset the CPU kernels call (lib/Runtime/CPU/KernelUtil.cpp):
 * cblas_sgemm, cblas_dgemm, cblas_sgemv, cblas_dgemv. Used instead of
 * OpenBLAS's cblas.h when the runtime is configured with
 * -DMP_RUNTIME_BLAS=builtin (machines without OpenBLAS, such as a GPU
 * machine that only needs the CPU backend as a reference): correct for every
 * argument the CPU kernels pass, single-threaded and much slower than
 * OpenBLAS on large products.
 *
 *===---------------------------------------------------------------------===*/
#ifndef MP_RUNTIME_BUILTIN_CBLAS_H
#define MP_RUNTIME_BUILTIN_CBLAS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int blasint;

typedef enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_ORDER;
typedef enum CBLAS_TRANSPOSE {
  CblasNoTrans = 111,
  CblasTrans = 112,
  CblasConjTrans = 113
} CBLAS_TRANSPOSE;

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transA,
                 enum CBLAS_TRANSPOSE transB, blasint m, blasint n, blasint k,
                 float alpha, const float *a, blasint lda, const float *b,
                 blasint ldb, float beta, float *c, blasint ldc);
void cblas_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE transA,
                 enum CBLAS_TRANSPOSE transB, blasint m, blasint n, blasint k,
                 double alpha, const double *a, blasint lda, const double *b,
                 blasint ldb, double beta, double *c, blasint ldc);
void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, blasint m,
                 blasint n, float alpha, const float *a, blasint lda,
                 const float *x, blasint incx, float beta, float *y,
                 blasint incy);
void cblas_dgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, blasint m,
                 blasint n, double alpha, const double *a, blasint lda,
                 const double *x, blasint incx, double beta, double *y,
                 blasint incy);

#ifdef __cplusplus
}
#endif

#endif /* MP_RUNTIME_BUILTIN_CBLAS_H */
