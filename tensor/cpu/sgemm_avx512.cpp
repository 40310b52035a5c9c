// The GEMM of sgemm_avx512.h, after the loop structure of Goto & van de Geijn, "Anatomy of
// High-Performance Matrix Multiplication" (ACM TOMS 34(3), 2008), cut down for the
// convolution's small shapes: a micro-tile of 8 rows x 48 columns of c lives in 24 of the 32
// vector registers while it sums over a slice of the depth, each step one load of op(b) per 16
// columns, one broadcast of op(a) per row and 24 fused multiply-adds. Neither operand is
// packed unless it must be: packing costs as much as the arithmetic when one dimension is as
// small as the convolution's (32 output channels), so op(a) is read where it lies, and op(b)
// too when its rows are contiguous; a transposed b (16 KiB or so) is packed into rows. A
// "same" convolution's op(b), its columns, is read straight from the input planes
// (own_sgemm_same_conv, at the end).
#include "tensor/cpu/sgemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "tensor/cpu/avx512.h"
#include "tensor/error.h"

namespace rg::cpu {

namespace {

constexpr int64_t kRows = 8;        // of a micro-tile: rows of op(a), one broadcast each per step
constexpr int64_t kLanes = 16;      // floats in one AVX-512 register
constexpr int64_t kMaxVectors = 3;  // of a micro-tile: 48 columns, 3 registers per row
constexpr int64_t kStrip = kLanes * kMaxVectors;
constexpr int64_t kDepth = 128;     // a slice: 128 rows of a 48-column strip of op(b), 24 KiB, stay in L1

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Where a micro-tile reads op(a): row r at rows[r], the next depth step `depth_stride` further.
struct PanelOfA {
  const float* rows[kRows];
  int64_t depth_stride;
};

// Where it reads op(b): depth step p at row + p * row_stride, `columns` of them valid (the
// last register's loads are masked to them, so nothing past the matrix is touched).
struct StripOfB {
  const float* row;
  int64_t row_stride;
  int64_t columns;
};

template <int kVectors>
using TileSums = __m512[kRows][kVectors];

template <int kVectors>
__attribute__((target("avx512f"), always_inline)) inline void clear_tile(TileSums<kVectors>& sum) {
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i)
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) sum[i][v] = _mm512_setzero_ps();
}

// The first `rows` rows of a micro-tile's sums into c (added to it when `accumulate`); the
// last register of each row is masked to `last`.
template <int kVectors>
__attribute__((target("avx512f"), always_inline)) inline void store_tile(const TileSums<kVectors>& sum, float* c,
                                                                        int64_t ldc, int64_t rows, __mmask16 last,
                                                                        bool accumulate) {
  // Constant bounds and an `if`: indexing `sum` by a run-time row would keep it in memory.
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    if (i >= rows) break;
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 mask = v + 1 < kVectors ? __mmask16(0xFFFF) : last;
      float* out = c + i * ldc + v * kLanes;
      __m512 value = sum[i][v];
      if (accumulate) value = _mm512_add_ps(value, _mm512_maskz_loadu_ps(mask, out));
      _mm512_mask_storeu_ps(out, mask, value);
    }
  }
}

// c[rows, b.columns] (+)= op(a)[8 rows, depth] @ op(b)[depth, 16 * kVectors].
template <int kVectors>
__attribute__((target("avx512f"))) void micro_tile(int64_t depth, PanelOfA a, StripOfB b, float* c, int64_t ldc,
                                                   int64_t rows, bool accumulate) {
  TileSums<kVectors> sum;
  clear_tile<kVectors>(sum);
  const __mmask16 last = first_lanes(b.columns - (kVectors - 1) * kLanes);
  for (int64_t p = 0; p < depth; ++p) {
    const float* b_row = b.row + p * b.row_stride;
    __m512 b_values[kVectors];
#pragma GCC unroll 3
    for (int v = 0; v < kVectors; ++v)
      b_values[v] = v + 1 < kVectors ? _mm512_loadu_ps(b_row + v * kLanes)
                                     : _mm512_maskz_loadu_ps(last, b_row + v * kLanes);
    const int64_t offset = p * a.depth_stride;
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const __m512 a_value = _mm512_set1_ps(a.rows[i][offset]);
#pragma GCC unroll 3
      for (int v = 0; v < kVectors; ++v) sum[i][v] = _mm512_fmadd_ps(a_value, b_values[v], sum[i][v]);
    }
  }
  store_tile<kVectors>(sum, c, ldc, rows, last, accumulate);
}

void run_micro_tile(int64_t depth, const PanelOfA& a, const StripOfB& b, float* c, int64_t ldc, int64_t rows,
                    bool accumulate) {
  switch (ceil_div(b.columns, kLanes)) {
    case 1: return micro_tile<1>(depth, a, b, c, ldc, rows, accumulate);
    case 2: return micro_tile<2>(depth, a, b, c, ldc, rows, accumulate);
    default: return micro_tile<3>(depth, a, b, c, ldc, rows, accumulate);
  }
}

// Rows first_row.. of op(a) from depth first_depth on. A panel hanging over the last row
// reads that row again for the rest (valid memory; those sums are never stored).
PanelOfA panel_of_a(bool trans, const float* a, int64_t lda, int64_t m, int64_t first_row, int64_t first_depth) {
  PanelOfA panel{{}, trans ? lda : 1};
  for (int64_t r = 0; r < kRows; ++r) {
    const int64_t i = std::min(first_row + r, m - 1);
    panel.rows[r] = trans ? a + first_depth * lda + i : a + i * lda + first_depth;
  }
  return panel;
}

// The columns of the next strip, with `left` columns to go: 3 registers' worth, but 2 + 2
// for the last 4, since a 1-register tile loads a broadcast per multiply-add (196 columns:
// 48, 48, 48, 32, 20).
int64_t strip_width(int64_t left) {
  const int64_t vectors = ceil_div(left, kLanes) == 4 ? 2 : kMaxVectors;
  return std::min(left, vectors * kLanes);
}

// GCC 12 warns that the undefined source register its own unpack and shuffle intrinsics pass
// may be used uninitialised (GCC bug 105593, fixed in GCC 13); it is never read.
#pragma GCC diagnostic push
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// rows[0..16) <- their transpose: rows[i][j] becomes rows[j][i]. Four rounds of shuffles, each
// pairing registers at a distance: 32-bit lanes of neighbours, 64-bit pairs of registers 2
// apart (each 128-bit quarter now holds a 4 x 4 transpose), then whole quarters of registers
// 4 apart and 8 apart, which put each column's four quarters in one register.
__attribute__((target("avx512f"))) void transpose_16x16(__m512 rows[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // 32-bit lanes of rows i, i + 1
    t[i] = _mm512_unpacklo_ps(rows[i], rows[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(rows[i], rows[i + 1]);
  }
  for (int i = 0; i < 16; i += 4)  // 64-bit pairs of t[i], t[i + 2] (columns 0, 1), t[i + 1], t[i + 3] (2, 3)
    for (int k = 0; k < 2; ++k) {
      const __m512d a = _mm512_castps_pd(t[i + k]), b = _mm512_castps_pd(t[i + k + 2]);
      rows[i + 2 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      rows[i + 2 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  for (int i = 0; i < 16; i += 8)  // 128-bit quarters of rows i.. and i + 4..
    for (int k = 0; k < 4; ++k) {
      t[i + k] = _mm512_shuffle_f32x4(rows[i + k], rows[i + k + 4], 0x88);      // quarters 0, 2 of each
      t[i + k + 4] = _mm512_shuffle_f32x4(rows[i + k], rows[i + k + 4], 0xDD);  // quarters 1, 3 of each
    }
  for (int k = 0; k < 8; ++k) {  // 128-bit quarters again, rows k and k + 8
    rows[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    rows[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
  }
}

#pragma GCC diagnostic pop

// op(b) = b^T: its rows [first_depth, +depth) x columns [first_column, +width), copied into rows
// 16 x 16 at a time: 16 rows of b (16 columns of op(b)) loaded, transposed in registers, stored
// as 16 rows of the strip. (An element at a time, this copy took as long as the arithmetic for
// the first convolution's weight gradient, 25 x 16 x 784.)
__attribute__((target("avx512f"))) void pack_transposed_b(const float* b, int64_t ldb, int64_t first_depth,
                                                          int64_t depth, int64_t first_column, int64_t width,
                                                          float* out) {
  for (int64_t j0 = 0; j0 < width; j0 += kLanes) {
    const int64_t columns = std::min(kLanes, width - j0);
    for (int64_t p0 = 0; p0 < depth; p0 += kLanes) {
      const int64_t steps = std::min(kLanes, depth - p0);
      __m512 block[16];
      for (int64_t j = 0; j < kLanes; ++j)
        block[j] = j < columns
                       ? _mm512_maskz_loadu_ps(first_lanes(steps), b + (first_column + j0 + j) * ldb + first_depth + p0)
                       : _mm512_setzero_ps();
      transpose_16x16(block);
      for (int64_t p = 0; p < steps; ++p)
        _mm512_mask_storeu_ps(out + (p0 + p) * kStrip + j0, first_lanes(columns), block[p]);
    }
  }
}

// Where a micro-tile of the convolution's GEMM reads op(b): channel c's tap t is row
// c * taps + t, at x + c * plane + shifts[t], its 16-column groups masked by masks[3t..3t+3).
struct ShiftedPlanes {
  const float* x;  // the slice's first channel, at the strip's first column
  int64_t plane, channels, taps;
  const int64_t* shifts;
  const uint16_t* masks;
  int64_t columns;
};

// c[rows, b.columns] (+)= a[8 rows, channels * taps] @ the columns: micro_tile's arithmetic,
// its loads of op(b) masked to what each tap may read (masked-off lanes are neither read nor
// faulted on), so the padding's zeros need no memory.
template <int kVectors>
__attribute__((target("avx512f"))) void shifted_micro_tile(PanelOfA a, ShiftedPlanes b, float* c, int64_t ldc,
                                                           int64_t rows, bool accumulate) {
  TileSums<kVectors> sum;
  clear_tile<kVectors>(sum);
  for (int64_t channel = 0, depth = 0; channel < b.channels; ++channel) {
    const float* plane = b.x + channel * b.plane;
    for (int64_t t = 0; t < b.taps; ++t, ++depth) {
      const float* b_row = plane + b.shifts[t];
      const uint16_t* masks = b.masks + t * kMaxVectors;
      __m512 b_values[kVectors];
#pragma GCC unroll 3
      for (int v = 0; v < kVectors; ++v) b_values[v] = _mm512_maskz_loadu_ps(masks[v], b_row + v * kLanes);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const __m512 a_value = _mm512_set1_ps(a.rows[i][depth]);
#pragma GCC unroll 3
        for (int v = 0; v < kVectors; ++v) sum[i][v] = _mm512_fmadd_ps(a_value, b_values[v], sum[i][v]);
      }
    }
  }
  store_tile<kVectors>(sum, c, ldc, rows, first_lanes(b.columns - (kVectors - 1) * kLanes), accumulate);
}

void run_shifted_micro_tile(const PanelOfA& a, const ShiftedPlanes& b, float* c, int64_t ldc, int64_t rows,
                            bool accumulate) {
  switch (ceil_div(b.columns, kLanes)) {
    case 1: return shifted_micro_tile<1>(a, b, c, ldc, rows, accumulate);
    case 2: return shifted_micro_tile<2>(a, b, c, ldc, rows, accumulate);
    default: return shifted_micro_tile<3>(a, b, c, ldc, rows, accumulate);
  }
}

// c = 0 (m rows of n): the product of an empty depth, with beta 0.
void clear_rows(int64_t m, int64_t n, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
}

}  // namespace

bool own_sgemm_supported() { return cpu_has_avx512f(); }

void own_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  RG_CHECK(beta == 0.0f || beta == 1.0f, "own_sgemm: beta must be 0 or 1, got ", beta);
  RG_CHECK(own_sgemm_supported(), "own_sgemm: this CPU has no AVX-512F");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0.0f) clear_rows(m, n, c, ldc);
    return;
  }
  thread_local std::vector<float> packed_b(kDepth * kStrip);  // per thread: no allocation per call
  const int64_t depth_step = ceil_div(k, ceil_div(k, kDepth));  // equal slices: no thin last one
  for (int64_t p0 = 0; p0 < k; p0 += depth_step) {
    const int64_t depth = std::min(depth_step, k - p0);
    const bool accumulate = beta != 0.0f || p0 > 0;  // later slices add to the earlier ones
    for (int64_t j0 = 0, width = 0; j0 < n; j0 += width) {
      width = strip_width(n - j0);
      if (trans_b) pack_transposed_b(b, ldb, p0, depth, j0, width, packed_b.data());
      const StripOfB strip =
          trans_b ? StripOfB{packed_b.data(), kStrip, width} : StripOfB{b + p0 * ldb + j0, ldb, width};
      for (int64_t i0 = 0; i0 < m; i0 += kRows)
        run_micro_tile(depth, panel_of_a(trans_a, a, lda, m, i0, p0), strip, c + i0 * ldc + j0, ldc,
                       std::min(kRows, m - i0), accumulate);
    }
  }
}

// Tap (i, j) reads column p of the output from x[p + shift], shift = (i - pad_h) * w + j - pad_w,
// where output row p / w shifted by i - pad_h and column p % w shifted by j - pad_w both stay
// inside the plane.
SameConvColumns::SameConvColumns(int64_t h, int64_t w, int64_t kernel_h, int64_t kernel_w) : positions_(h * w) {
  RG_CHECK(kernel_h % 2 == 1 && kernel_w % 2 == 1, "same-padding convolution: kernel ", kernel_h, "x", kernel_w,
           " must have odd sides");
  const int64_t pad_h = kernel_h / 2, pad_w = kernel_w / 2;
  for (int64_t j0 = 0, width = 0; j0 < positions_; j0 += width) {
    width = strip_width(positions_ - j0);
    strips_.push_back({j0, width});
  }
  for (int64_t i = 0; i < kernel_h; ++i)
    for (int64_t j = 0; j < kernel_w; ++j) shifts_.push_back((i - pad_h) * w + j - pad_w);
  for (const Strip& strip : strips_) {
    int64_t row[kStrip], col[kStrip];  // of the strip's columns in the output plane
    for (int64_t k = 0; k < strip.width; ++k) {
      row[k] = (strip.first_column + k) / w;
      col[k] = (strip.first_column + k) % w;
    }
    for (int64_t i = 0; i < kernel_h; ++i)
      for (int64_t j = 0; j < kernel_w; ++j)
        for (int64_t v = 0; v < kMaxVectors; ++v) {
          uint16_t mask = 0;
          for (int64_t lane = 0, k = v * kLanes; lane < kLanes && k < strip.width; ++lane, ++k) {
            const int64_t in_row = row[k] + i - pad_h, in_col = col[k] + j - pad_w;
            if (in_row >= 0 && in_row < h && in_col >= 0 && in_col < w) mask |= uint16_t(1u << lane);
          }
          masks_.push_back(mask);
        }
  }
}

// own_sgemm's loops with the columns read from x: depth slices of whole channels (so a tap's
// row is found without a division), then strips of 48 columns, then panels of 8 rows of a.
void own_sgemm_same_conv(int64_t m, const float* a, int64_t lda, const SameConvColumns& columns, const float* x,
                         int64_t channels, float beta, float* c, int64_t ldc) {
  RG_CHECK(beta == 0.0f || beta == 1.0f, "own_sgemm_same_conv: beta must be 0 or 1, got ", beta);
  RG_CHECK(own_sgemm_supported(), "own_sgemm_same_conv: this CPU has no AVX-512F");
  const int64_t taps = columns.taps(), plane = columns.positions();
  if (m <= 0 || plane <= 0) return;
  if (channels <= 0) {
    if (beta == 0.0f) clear_rows(m, plane, c, ldc);
    return;
  }
  const int64_t slice_channels = std::max<int64_t>(1, kDepth / taps);
  for (int64_t c0 = 0; c0 < channels; c0 += slice_channels) {
    const bool accumulate = beta != 0.0f || c0 > 0;
    for (size_t s = 0; s < columns.strips().size(); ++s) {
      const SameConvColumns::Strip strip = columns.strips()[s];
      const ShiftedPlanes b{x + c0 * plane + strip.first_column,
                            plane,
                            std::min(slice_channels, channels - c0),
                            taps,
                            columns.shifts(),
                            columns.masks(s),
                            strip.width};
      for (int64_t i0 = 0; i0 < m; i0 += kRows)
        run_shifted_micro_tile(panel_of_a(false, a, lda, m, i0, c0 * taps), b, c + i0 * ldc + strip.first_column, ldc,
                               std::min(kRows, m - i0), accumulate);
    }
  }
}

}  // namespace rg::cpu
