// Max and average pooling on the CPU. Work is split over (n, c) planes, which never write to
// the same memory; the naive reference kernel that tests compare against sits at the end.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tensor/cpu/avx512.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/planes.h"
#include "tensor/cpu/reference.h"
#include "tensor/thread_pool.h"

namespace rg::cpu {

namespace {

// The window of output position (oh, ow), clipped to the input plane.
struct Window {
  Range rows, columns;
};

Window window_at(int64_t oh, int64_t ow, const PlaneDims& d, const Conv2dGeometry& g) {
  int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  return {{std::max<int64_t>(h0, 0), std::min(h0 + g.kernel_h, d.h)},
          {std::max<int64_t>(w0, 0), std::min(w0 + g.kernel_w, d.w)}};
}

// x: (H, W) -> out, indices: (OH, OW). As PyTorch: the first maximum wins, and a NaN wins
// over everything, so NaNs propagate.
template <class T>
void max_pool_plane(const T* x, T* out, int64_t* indices, const PlaneDims& d, const Conv2dGeometry& g) {
  for (int64_t oh = 0; oh < d.oh; ++oh)
    for (int64_t ow = 0; ow < d.ow; ++ow) {
      Window win = window_at(oh, ow, d, g);
      T best = -std::numeric_limits<T>::infinity();
      int64_t best_index = win.rows.begin * d.w + win.columns.begin;
      for (int64_t h = win.rows.begin; h < win.rows.end; ++h)
        for (int64_t w = win.columns.begin; w < win.columns.end; ++w) {
          T value = x[h * d.w + w];
          if (value > best || std::isnan(value)) {
            best = value;
            best_index = h * d.w + w;
          }
        }
      out[oh * d.ow + ow] = best;
      indices[oh * d.ow + ow] = best_index;
    }
}

// a if pick, else b, by masking their bits. GCC turns `pick ? a : b` on floats into a branch
// in scalar code, and the scalar remainder of a vectorised loop is most of the work when rows
// are 7 or 14 outputs long (the CNN's pools): with the masks, 0.59 -> 0.34 ms for its second
// pool, and the vectorised part is unchanged.
template <class T>
T select(bool pick, T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  const Bits mask = Bits{0} - static_cast<Bits>(pick);
  return std::bit_cast<T>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask));
}

// The common 2x2, stride 2, unpadded case of max_pool_plane: every window lies inside the
// plane, so the four taps are read directly, in the general path's order (first maximum
// wins, a NaN replaces anything) so values and indices match it exactly. Written so that
// GCC vectorises it: selects and a non-short-circuit `|` rather than branches (the winning
// tap of an activation is random, so branches also mispredict), and the winner's offset
// kept in int32, as wide as a float lane (an int64 offset stops the vectoriser).
template <class T>
void max_pool_row_2x2(const T* upper, const T* lower, T* out, int64_t* indices, int64_t out_width, int32_t w,
                      int64_t upper_index) {
  for (int64_t ow = 0; ow < out_width; ++ow) {
    T best = upper[2 * ow];
    int32_t offset = 0;  // of the winner from upper[2 * ow]
    auto consider = [&](T value, int32_t value_offset) {
      bool wins = (value > best) | (value != value);  // value != value: NaN
      best = select(wins, value, best);
      offset = wins ? value_offset : offset;
    };
    consider(upper[2 * ow + 1], 1);
    consider(lower[2 * ow], w);
    consider(lower[2 * ow + 1], w + 1);
    out[ow] = best;
    indices[ow] = upper_index + 2 * ow + offset;
  }
}

// The same row in float32 with AVX-512, 16 outputs a step: the 32 inputs of a row pair split
// into even and odd columns by two permutes, the four taps compared in the same order with
// the same NaN rule, the winners' offsets widened to int64 for the indices. The plain loop
// above runs the CNN's rows (14 and 7 outputs) mostly in its scalar remainder.
#define RG_AVX512 __attribute__((target("avx512f")))

// row[2 * lane + column] for the 16 lanes from row[0], `inputs` of row's floats readable.
RG_AVX512 __m512 pick_columns(const float* row, int64_t inputs, __m512i column_of_lane) {
  const __m512 low = _mm512_maskz_loadu_ps(first_lanes(inputs), row);
  const __m512 high = _mm512_maskz_loadu_ps(first_lanes(inputs - 16), row + 16);
  return _mm512_permutex2var_ps(low, column_of_lane, high);
}

RG_AVX512 void max_pool_row_2x2_avx512(const float* upper, const float* lower, float* out, int64_t* indices,
                                       int64_t out_width, int64_t w, int64_t upper_index) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t ow = 0; ow < out_width; ow += 16) {
    const int64_t outputs = std::min<int64_t>(16, out_width - ow);
    const __m512 taps[4] = {pick_columns(upper + 2 * ow, 2 * outputs, even),
                            pick_columns(upper + 2 * ow, 2 * outputs, odd),
                            pick_columns(lower + 2 * ow, 2 * outputs, even),
                            pick_columns(lower + 2 * ow, 2 * outputs, odd)};
    const int64_t tap_offsets[4] = {0, 1, w, w + 1};
    // The winner's offset from upper[2 * (ow + lane)], in int64 as the indices are: lanes 0-7, 8-15.
    __m512 best = taps[0];
    __m512i offset_low = _mm512_setzero_si512(), offset_high = _mm512_setzero_si512();
    for (int t = 1; t < 4; ++t) {
      const __mmask16 wins =
          _mm512_cmp_ps_mask(taps[t], best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(taps[t], taps[t], _CMP_UNORD_Q);
      best = _mm512_mask_mov_ps(best, wins, taps[t]);
      const __m512i tap_offset = _mm512_set1_epi64(tap_offsets[t]);
      offset_low = _mm512_mask_mov_epi64(offset_low, static_cast<__mmask8>(wins), tap_offset);
      offset_high = _mm512_mask_mov_epi64(offset_high, static_cast<__mmask8>(wins >> 8), tap_offset);
    }
    const __mmask16 valid = first_lanes(outputs);
    _mm512_mask_storeu_ps(out + ow, valid, best);
    const int64_t first = upper_index + 2 * ow;  // upper[2 * ow]'s index in the plane
    const __m512i low_columns = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i high_columns = _mm512_add_epi64(low_columns, _mm512_set1_epi64(16));
    _mm512_mask_storeu_epi64(indices + ow, static_cast<__mmask8>(valid),
                             _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_add_epi64(low_columns, offset_low)));
    _mm512_mask_storeu_epi64(indices + ow + 8, static_cast<__mmask8>(valid >> 8),
                             _mm512_add_epi64(_mm512_set1_epi64(first), _mm512_add_epi64(high_columns, offset_high)));
  }
}

#undef RG_AVX512

template <class T>
void max_pool_plane_2x2(const T* x, T* out, int64_t* indices, const PlaneDims& d) {
  for (int64_t oh = 0; oh < d.oh; ++oh) {
    const T* upper = x + 2 * oh * d.w;
    if constexpr (std::is_same_v<T, float>) {
      if (cpu_has_avx512f()) {
        max_pool_row_2x2_avx512(upper, upper + d.w, out + oh * d.ow, indices + oh * d.ow, d.ow, d.w, 2 * oh * d.w);
        continue;
      }
    }
    max_pool_row_2x2(upper, upper + d.w, out + oh * d.ow, indices + oh * d.ow, d.ow, static_cast<int32_t>(d.w),
                     2 * oh * d.w);
  }
}

bool use_2x2_fast_path(const PlaneDims& d, const Conv2dGeometry& g) {
  return g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 &&
         d.w < std::numeric_limits<int32_t>::max();
}

// Average pooling with count_include_pad: padding counts as zeros, so every window divides
// by kh*kw. forward: x (H, W) -> y (OH, OW); backward: grad y -> grad x (zeroed first).
template <bool kForward, class T>
void avg_pool_plane(T* x, T* y, const PlaneDims& d, const Conv2dGeometry& g) {
  T scale = T{1} / static_cast<T>(g.kernel_h * g.kernel_w);
  if constexpr (!kForward) std::fill_n(x, d.h * d.w, T{0});
  for (int64_t oh = 0; oh < d.oh; ++oh)
    for (int64_t ow = 0; ow < d.ow; ++ow) {
      Window win = window_at(oh, ow, d, g);
      T sum = 0, grad = kForward ? T{0} : y[oh * d.ow + ow] * scale;
      for (int64_t h = win.rows.begin; h < win.rows.end; ++h)
        for (int64_t w = win.columns.begin; w < win.columns.end; ++w) {
          if constexpr (kForward)
            sum += x[h * d.w + w];
          else
            x[h * d.w + w] += grad;
        }
      if constexpr (kForward) y[oh * d.ow + ow] = sum * scale;
    }
}

// x: (B, C, H, W), y: (B, C, OH, OW).
template <bool kForward>
void avg_pool(const Tensor& x, const Tensor& y, const Conv2dGeometry& g) {
  PlaneDims d = plane_dims(x, g);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* x_data = x.data<T>();
    T* y_data = y.data<T>();
    for_each_plane(x.size(0) * x.size(1), d.oh * d.ow * g.kernel_h * g.kernel_w, [&](int64_t p) {
      avg_pool_plane<kForward>(x_data + p * d.h * d.w, y_data + p * d.oh * d.ow, d, g);
    });
  });
}

}  // namespace

void max_pool2d(const Tensor& x_in, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g) {
  Tensor x = x_in.contiguous();
  PlaneDims d = plane_dims(x, g);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x_data = x.data<T>();
    T* out_data = out.data<T>();
    int64_t* index_data = indices.data<int64_t>();
    bool fast = use_2x2_fast_path(d, g);
    for_each_plane(x.size(0) * x.size(1), d.oh * d.ow * g.kernel_h * g.kernel_w, [&](int64_t p) {
      const T* plane = x_data + p * d.h * d.w;
      T* plane_out = out_data + p * d.oh * d.ow;
      int64_t* plane_indices = index_data + p * d.oh * d.ow;
      if (fast)
        max_pool_plane_2x2(plane, plane_out, plane_indices, d);
      else
        max_pool_plane(plane, plane_out, plane_indices, d, g);
    });
  });
}

void avg_pool2d(const Tensor& x, const Tensor& out, const Conv2dGeometry& g) { avg_pool<true>(x.contiguous(), out, g); }

void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g) {
  avg_pool<false>(grad_in, grad_out.contiguous(), g);
}

// ---- naive references: one bounds check per element, no clipping arithmetic ----

void max_pool2d_reference(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g) {
  PlaneDims d = plane_dims(x, g);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x_data = x.data<T>();
    T* out_data = out.data<T>();
    int64_t* index_data = indices.data<int64_t>();
    for (int64_t p = 0; p < x.size(0) * x.size(1); ++p)
      for (int64_t oh = 0; oh < d.oh; ++oh)
        for (int64_t ow = 0; ow < d.ow; ++ow) {
          T best = 0;
          int64_t best_index = -1;
          for (int64_t i = 0; i < g.kernel_h; ++i)
            for (int64_t j = 0; j < g.kernel_w; ++j) {
              int64_t h = oh * g.stride_h - g.pad_h + i, w = ow * g.stride_w - g.pad_w + j;
              if (h < 0 || h >= d.h || w < 0 || w >= d.w) continue;
              T value = x_data[(p * d.h + h) * d.w + w];
              if (best_index < 0 || value > best || std::isnan(value)) {
                best = value;
                best_index = h * d.w + w;
              }
            }
          *out_data++ = best;
          *index_data++ = best_index;
        }
  });
}

}  // namespace rg::cpu
