// ringgrad's own single-precision GEMM, written for AVX-512 and for the small shapes of a
// training step (the CNN's conv2: 32 x 196 x 400 per sample; an MLP layer at batch 64:
// 64 x 256 x 784), which OpenBLAS runs well below its large-matrix speed, or on its AVX2
// kernels when the environment pins OPENBLAS_CORETYPE. The CPU backend's float32 GEMMs
// (cpu/gemm.h) run it where the CPU has AVX-512F; RINGGRAD_SGEMM=openblas sends them back to
// OpenBLAS. Tests compare this kernel with a naive triple loop.
#pragma once
#include <cstdint>

namespace rg::cpu {

// Whether this CPU has AVX-512F, which the kernel needs (checked once).
bool own_sgemm_supported();

// c = op(a) @ op(b) + beta * c for row-major float matrices, as cblas_sgemm(CblasRowMajor, ...)
// with alpha = 1 and beta 0 or 1: op(a) is m x k (a is k x m when trans_a), op(b) is k x n.
// Single-threaded: the convolution and the matrix product run one call per thread.
// Requires own_sgemm_supported().
void own_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace rg::cpu
