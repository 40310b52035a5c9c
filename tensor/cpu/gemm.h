// One row-major GEMM call, c = op(a) @ op(b) + beta * c (beta 0 or 1), for float and
// double, so templated kernels need not spell a type prefix. Double is OpenBLAS's; float is
// ringgrad's own AVX-512 kernel or OpenBLAS's, as sgemm_kernel() says (tensor/blas.h).
// OpenBLAS takes 32-bit sizes (blasint): a larger size or leading dimension is an error,
// never truncated.
#pragma once
#include <cblas.h>

#include <cstdint>
#include <limits>

#include "tensor/blas.h"
#include "tensor/cpu/sgemm_avx512.h"
#include "tensor/error.h"

namespace rg::cpu {

inline blasint blas_int(int64_t value) {
  RG_CHECK(value >= 0 && value <= std::numeric_limits<blasint>::max(), "cpu matmul: size ", value,
           " exceeds BLAS's 32-bit sizes");
  return static_cast<blasint>(value);
}

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (sgemm_kernel() == Sgemm::own_avx512)
    return own_sgemm(ta == CblasTrans, tb == CblasTrans, m, n, k, a, lda, b, ldb, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), 1.0f, a, blas_int(lda), b, blas_int(ldb),
              beta, c, blas_int(ldc));
}

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, blas_int(m), blas_int(n), blas_int(k), 1.0, a, blas_int(lda), b, blas_int(ldb),
              beta, c, blas_int(ldc));
}

}  // namespace rg::cpu
