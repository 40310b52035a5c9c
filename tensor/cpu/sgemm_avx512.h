// ringgrad's own single-precision GEMM for the CPU convolution, written for AVX-512: the
// convolution's GEMM shapes are small (the CNN's conv2: 32 x 196 x 400 per sample), and
// OpenBLAS runs them well below its large-matrix speed, or on its AVX2 kernels when the
// environment pins OPENBLAS_CORETYPE. OpenBLAS stays the default everywhere else, and the
// convolution can be sent back to it (RINGGRAD_CONV_GEMM=openblas); tests compare this
// kernel with a naive triple loop.
#pragma once
#include <cstdint>

namespace rg::cpu {

// Whether this CPU has AVX-512F, which the kernel needs (checked once).
bool own_sgemm_supported();

// c = op(a) @ op(b) + beta * c for row-major float matrices, as cblas_sgemm(CblasRowMajor, ...)
// with alpha = 1 and beta 0 or 1: op(a) is m x k (a is k x m when trans_a), op(b) is k x n.
// Single-threaded: the convolution runs one call per thread. Requires own_sgemm_supported().
void own_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace rg::cpu
