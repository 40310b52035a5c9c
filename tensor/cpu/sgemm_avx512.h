// ringgrad's own single-precision GEMM, written for AVX-512 and for the small shapes of a
// training step (the CNN's conv2: 32 x 196 x 400 per sample; an MLP layer at batch 64:
// 64 x 256 x 784), which OpenBLAS runs well below its large-matrix speed, or on its AVX2
// kernels when the environment pins OPENBLAS_CORETYPE. The CPU backend's float32 GEMMs
// (cpu/gemm.h) run it where the CPU has AVX-512F; RINGGRAD_SGEMM=openblas sends them back to
// OpenBLAS. Tests compare this kernel with a naive triple loop.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rg::cpu {

// Whether this CPU has AVX-512F, which the kernel needs (checked once).
bool own_sgemm_supported();

// c = op(a) @ op(b) + beta * c for row-major float matrices, as cblas_sgemm(CblasRowMajor, ...)
// with alpha = 1 and beta 0 or 1: op(a) is m x k (a is k x m when trans_a), op(b) is k x n.
// Single-threaded: the convolution and the matrix product run one call per thread.
// Requires own_sgemm_supported().
void own_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The columns of a stride-1 convolution with "same" padding (odd kernel, (k - 1) / 2 zeros on
// every side, so the output is h x w like the input), read where they lie instead of copied
// out by im2col: row (channel, i, j) of a sample's columns is input plane `channel` shifted by
// (i - pad_h, j - pad_w), which is x at position p + shift, or zero where the tap's window
// hangs over the padding. The GEMM loads those rows straight from x with masked loads (the
// "implicit GEMM" of cuDNN; Chetlur et al., "cuDNN: Efficient Primitives for Deep Learning",
// 2014, section 3.1). What depends on the geometry only, each tap's shift and, for each strip
// of columns the GEMM takes, which of its columns each tap may read, is worked out once here
// and serves every sample of the batch.
class SameConvColumns {
 public:
  SameConvColumns(int64_t h, int64_t w, int64_t kernel_h, int64_t kernel_w);
  int64_t positions() const { return positions_; }  // h * w: the GEMM's n
  int64_t taps() const { return static_cast<int64_t>(shifts_.size()); }

  struct Strip {
    int64_t first_column, width;
  };
  const std::vector<Strip>& strips() const { return strips_; }
  const int64_t* shifts() const { return shifts_.data(); }  // per tap, row-major (i, j)
  // Per tap, 3 masks of 16 columns each (a strip is at most 48 wide): which of the strip's
  // columns read x (the others are padding, zero).
  const uint16_t* masks(size_t strip) const { return masks_.data() + strip * shifts_.size() * 3; }

 private:
  int64_t positions_;
  std::vector<Strip> strips_;
  std::vector<int64_t> shifts_;
  std::vector<uint16_t> masks_;
};

// c (m, h*w) = a (m, channels*kh*kw; row-major, row stride lda) @ the columns of x
// (channels, h, w), + beta * c (beta 0 or 1). With a = the weights (out_channels, C*kh*kw)
// this is the convolution's forward pass for one sample. Requires own_sgemm_supported().
void own_sgemm_same_conv(int64_t m, const float* a, int64_t lda, const SameConvColumns& columns, const float* x,
                         int64_t channels, float beta, float* c, int64_t ldc);

}  // namespace rg::cpu
