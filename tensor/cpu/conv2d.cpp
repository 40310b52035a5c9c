// 2-d convolution on the CPU: im2col + GEMM, one sample at a time. A sample's columns
// (C*kh*kw rows, one column per output position) stay in cache between im2col writing them,
// the GEMM reading them and col2im taking them back; a whole batch's columns would go out to
// memory and back (measured: 10-15% slower for ringgrad-train's CNN). The backward pass
// rebuilds the columns from x rather than keeping every sample's from the forward pass, and
// the weight gradient accumulates sample by sample in the GEMM itself (beta = 1). Most time
// is the GEMMs' (cpu/gemm.h: in float32 ringgrad's own AVX-512 kernel where the CPU has it,
// which ran the CNN's shapes 1.1-1.35x as fast as OpenBLAS's AVX-512 kernels, twice its AVX2
// ones); im2col and col2im take a shortcut for stride-1 "same" convolutions. On that kernel
// such a convolution skips im2col in the forward pass and col2im in the input gradient: the
// GEMM reads the columns where they lie in x (SameConvColumns, sgemm_avx512.h), and the input
// gradient is a convolution of the output gradient with the turned kernels (turned_kernels).
// ringgrad-train's CNN then trained 1.15-1.2x as fast (the copies and adds had been a fifth of
// its step, and the GEMM's operand now sits in L1); the weight gradient still uses im2col.
// Threads take contiguous groups of samples; each group keeps its own weight and bias
// gradient, and the groups' sums are added in a fixed order, so results do not depend on
// scheduling. The naive reference kernels that tests compare against sit at the end.
#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include "tensor/cpu/avx512.h"
#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/planes.h"
#include "tensor/cpu/reference.h"
#include "tensor/cpu/sgemm_avx512.h"

namespace rg::cpu {

namespace {

// A tap (i, j) of a stride-1 convolution whose output is as wide as its input ("same"
// padding) has a shortcut: output position p of the tap reads x[p + offset], so all its valid
// outputs map to one contiguous run of x, [first, last) in the block, and one long copy (or
// add) replaces a short one per row, each a call for a handful of floats. Inside the run,
// the entries between one row's valid columns and the next's wrap around the row edge: they
// belong to the padding.
struct SameWidthTap {
  int64_t first, last, offset;
  bool empty() const { return first >= last; }
};

SameWidthTap same_width_tap(Range rows, Range columns, int64_t i, int64_t j, const PlaneDims& d,
                            const Conv2dGeometry& g) {
  if (rows.begin >= rows.end || columns.begin >= columns.end) return {0, 0, 0};
  return {rows.begin * d.ow + columns.begin, (rows.end - 1) * d.ow + columns.end, (i - g.pad_h) * d.w + j - g.pad_w};
}

// Each row edge has the same few wrapped entries (kw - 1 for "same" padding), side by side
// from the end of one row's valid columns into the start of the next row's. With AVX-512 one
// masked store clears an edge's (up to 16); else stepping down the rows for one entry at a
// time makes plain stores, where a fill per row edge would become a memset call per handful
// of floats.
__attribute__((target("avx512f"))) void zero_row_edges_avx512(float* first_edge, int64_t edges, int64_t row_stride,
                                                              int64_t wrapped) {
  const __mmask16 mask = first_lanes(wrapped);
  for (int64_t e = 0; e < edges; ++e) _mm512_mask_storeu_ps(first_edge + e * row_stride, mask, _mm512_setzero_ps());
}

template <class T>
void zero_wrapped_entries(T* block, Range rows, Range columns, const PlaneDims& d) {
  const int64_t wrapped = d.ow + columns.begin - columns.end, edges = rows.end - 1 - rows.begin;
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f() && wrapped <= 16) {
      if (wrapped > 0 && edges > 0)
        zero_row_edges_avx512(block + rows.begin * d.ow + columns.end, edges, d.ow, wrapped);
      return;
    }
  }
  for (int64_t k = columns.end; k < d.ow + columns.begin; ++k)
    for (int64_t oh = rows.begin; oh + 1 < rows.end; ++oh) block[oh * d.ow + k] = T{0};
}

template <class T>
void im2col_same_width(const T* x, T* block, const SameWidthTap& tap, Range rows, Range columns, const PlaneDims& d) {
  std::fill(block, block + tap.first, T{0});
  std::copy(x + tap.first + tap.offset, x + tap.last + tap.offset, block + tap.first);
  std::fill(block + tap.last, block + d.oh * d.ow, T{0});
  zero_wrapped_entries(block, rows, columns, d);
}

// x[0, n) += y[0, n), 16 floats a step, where the portable build's loop below adds 4 (SSE2):
// col2im's adds took twice as long as im2col's copies.
__attribute__((target("avx512f"))) void add_run_avx512(float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(x + i, _mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  const __mmask16 tail = first_lanes(n - i);
  const __m512 sum = _mm512_add_ps(_mm512_maskz_loadu_ps(tail, x + i), _mm512_maskz_loadu_ps(tail, y + i));
  _mm512_mask_storeu_ps(x + i, tail, sum);
}

// Zeroing the wrapped entries first writes to the block, so only a caller that owns the
// columns (the convolution's scratch) may take this path.
template <class T>
void col2im_same_width(T* x, T* block, const SameWidthTap& tap, Range rows, Range columns, const PlaneDims& d) {
  zero_wrapped_entries(block, rows, columns, d);
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx512f()) return add_run_avx512(x + tap.first + tap.offset, block + tap.first, tap.last - tap.first);
  }
  for (int64_t p = tap.first; p < tap.last; ++p) x[p + tap.offset] += block[p];
}

template <bool kIm2col, class T>
void unfold_tap_same_width(T* x, T* block, Range rows, Range columns, const SameWidthTap& tap, const PlaneDims& d) {
  if (tap.empty()) {  // the whole tap looks at padding
    if constexpr (kIm2col) std::fill_n(block, d.oh * d.ow, T{0});
    return;
  }
  if constexpr (kIm2col)
    im2col_same_width(x, block, tap, rows, columns, d);
  else
    col2im_same_width(x, block, tap, rows, columns, d);
}

// The general path for tap (i, j): row by row, any stride.
template <bool kIm2col, class T>
void unfold_tap_by_rows(T* x, T* block, Range rows, Range columns, int64_t i, int64_t j, const PlaneDims& d,
                        const Conv2dGeometry& g) {
  if constexpr (kIm2col) {
    std::fill(block, block + rows.begin * d.ow, T{0});
    std::fill(block + rows.end * d.ow, block + d.oh * d.ow, T{0});
  }
  for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
    T* row = block + oh * d.ow;
    int64_t base = (oh * g.stride_h - g.pad_h + i) * d.w - g.pad_w + j;  // x index of ow = 0
    if constexpr (kIm2col) {
      std::fill(row, row + columns.begin, T{0});
      std::fill(row + columns.end, row + d.ow, T{0});
      if (g.stride_w == 1)  // the common case: one memcpy-able run
        std::copy(x + base + columns.begin, x + base + columns.end, row + columns.begin);
      else
        for (int64_t ow = columns.begin; ow < columns.end; ++ow) row[ow] = x[base + ow * g.stride_w];
    } else if (g.stride_w == 1) {  // a separate loop so the compiler vectorises it
      for (int64_t ow = columns.begin; ow < columns.end; ++ow) x[base + ow] += row[ow];
    } else {
      for (int64_t ow = columns.begin; ow < columns.end; ++ow) x[base + ow * g.stride_w] += row[ow];
    }
  }
}

// One channel plane x: (H, W) against its kh*kw rows of cols: (kh*kw, OH*OW). im2col copies
// x into cols (zeros where the window hangs over the padding); col2im adds cols back into x,
// dropping the padding terms. One walk serves both so they stay adjoint.
template <bool kIm2col, class T>
void unfold_plane(T* x, T* cols, const PlaneDims& d, const Conv2dGeometry& g, bool cols_are_scratch = false) {
  bool same_width = g.stride_h == 1 && g.stride_w == 1 && d.ow == d.w && (kIm2col || cols_are_scratch);
  for (int64_t i = 0; i < g.kernel_h; ++i) {
    Range rows = valid_outputs(d.oh, d.h, g.stride_h, g.pad_h, i);
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      Range columns = valid_outputs(d.ow, d.w, g.stride_w, g.pad_w, j);
      T* block = cols + (i * g.kernel_w + j) * d.oh * d.ow;
      if (same_width)
        unfold_tap_same_width<kIm2col>(x, block, rows, columns, same_width_tap(rows, columns, i, j, d, g), d);
      else
        unfold_tap_by_rows<kIm2col>(x, block, rows, columns, i, j, d, g);
    }
  }
}

// x: (B, C, H, W), cols: (B, C*kh*kw, OH*OW); plane p = n*C + c owns rows p*kh*kw onwards.
template <bool kIm2col>
void unfold(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) {
  PlaneDims d = plane_dims(x, g);
  int64_t patch = g.kernel_h * g.kernel_w * d.oh * d.ow;
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* x_data = x.data<T>();
    T* cols_data = cols.data<T>();
    for_each_plane(x.size(0) * x.size(1), patch, [&](int64_t p) {
      T* plane = x_data + p * d.h * d.w;
      if constexpr (!kIm2col) std::fill_n(plane, d.h * d.w, T{0});
      unfold_plane<kIm2col>(plane, cols_data + p * patch, d, g);
    });
  });
}

// The sizes of one convolution; a sample's columns are (rows, positions).
struct ConvSizes {
  int64_t batch, channels, out_channels;
  PlaneDims d;
  Conv2dGeometry g;
  int64_t rows;       // C*kh*kw, the GEMM's inner dimension
  int64_t positions;  // OH*OW
  int64_t columns;    // rows * positions, a sample's scratch: x, w and y may all fit while it does not

  ConvSizes(const Tensor& x, const Tensor& w, const Conv2dGeometry& geometry)
      : batch(x.size(0)), channels(x.size(1)), out_channels(w.size(0)), d(plane_dims(x, geometry)), g(geometry),
        rows(channels * g.kernel_h * g.kernel_w), positions(d.oh * d.ow),
        columns(checked_mul(rows, positions, "conv2d: columns of a sample")) {}
  int64_t x_sample() const { return channels * d.h * d.w; }   // elements of one sample of x
  int64_t y_sample() const { return out_channels * positions; }  // and of y
};

// One sample of x (C, H, W) <-> its columns (C*kh*kw, OH*OW); col2im overwrites x.
template <bool kIm2col, class T>
void unfold_sample(T* x, T* cols, const ConvSizes& c) {
  int64_t patch = c.g.kernel_h * c.g.kernel_w * c.positions;
  for (int64_t channel = 0; channel < c.channels; ++channel) {
    T* plane = x + channel * c.d.h * c.d.w;
    if constexpr (!kIm2col) std::fill_n(plane, c.d.h * c.d.w, T{0});
    unfold_plane<kIm2col>(plane, cols + channel * patch, c.d, c.g, /*cols_are_scratch=*/true);
  }
}

// Runs fn(group, begin, end) for `groups` contiguous ranges of samples that share the batch
// as evenly as possible, one group per thread.
template <class Fn>
void for_each_sample_group(int64_t batch, int64_t groups, Fn fn) {
  parallel_for(0, groups, 1, [&](int64_t first, int64_t last) {
    for (int64_t group = first; group < last; ++group) fn(group, batch * group / groups, batch * (group + 1) / groups);
  });
}

int64_t sample_groups(int64_t batch) { return std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), batch)); }

// The sum of row[0, n) in 16 interleaved partial sums, which the compiler vectorises (one
// running sum is a dependency chain it must keep in order).
template <class T>
T sum_row(const T* row, int64_t n) {
  constexpr int64_t kLanes = 16;
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lanes[k] += row[i + k];
  T sum = 0;
  for (; i < n; ++i) sum += row[i];
  for (T lane : lanes) sum += lane;
  return sum;
}

// Scratch memory from the caching allocator: neither zero-filled nor page-faulted anew.
template <class T>
T* scratch(Tensor& holder, int64_t count) {
  holder = Tensor::empty({count}, dtype_of<T>());
  return holder.data<T>();
}

// Whether the GEMMs read a sample's columns where they lie in x (SameConvColumns,
// sgemm_avx512.h) instead of an im2col copy: in float32 on ringgrad's own GEMM, for a stride-1
// convolution with "same" padding (odd kernel, (k - 1) / 2 zeros each side).
template <class T>
std::optional<SameConvColumns> columns_in_place(const ConvSizes& c) {
  const Conv2dGeometry& g = c.g;
  const bool same = g.stride_h == 1 && g.stride_w == 1 && g.kernel_h % 2 == 1 && g.kernel_w % 2 == 1 &&
                    g.pad_h == g.kernel_h / 2 && g.pad_w == g.kernel_w / 2;
  if (!std::is_same_v<T, float> || sgemm_kernel() != Sgemm::own_avx512 || !same) return std::nullopt;
  return SameConvColumns(c.d.h, c.d.w, g.kernel_h, g.kernel_w);
}

// One sample's output (O, OH*OW) = W (O, C*kh*kw) @ the sample's columns: read in place when
// `in_place` is set, else copied out by im2col into `cols` first.
template <class T>
void forward_sample(const T* w, T* x, T* out, T* cols, const ConvSizes& c,
                    const std::optional<SameConvColumns>& in_place) {
  if constexpr (std::is_same_v<T, float>) {
    if (in_place)
      return own_sgemm_same_conv(c.out_channels, w, c.rows, *in_place, x, c.channels, 0.0f, out, c.positions);
  }
  unfold_sample<true>(x, cols, c);
  gemm(CblasNoTrans, CblasNoTrans, c.out_channels, c.positions, c.rows, w, c.rows, cols, c.positions, T{0}, out,
       c.positions);
}

template <class T>
void conv2d_typed(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const ConvSizes& c) {
  T* x_data = x.data<T>();
  const T* w_data = w.data<T>();
  const T* bias_data = bias.defined() ? bias.data<T>() : nullptr;
  T* y_data = y.data<T>();
  const std::optional<SameConvColumns> in_place = columns_in_place<T>(c);
  for_each_sample_group(c.batch, sample_groups(c.batch), [&](int64_t, int64_t begin, int64_t end) {
    Tensor cols_holder;
    T* cols = in_place ? nullptr : scratch<T>(cols_holder, c.columns);
    for (int64_t n = begin; n < end; ++n) {
      T* out = y_data + n * c.y_sample();
      forward_sample(w_data, x_data + n * c.x_sample(), out, cols, c, in_place);
      if (bias_data)
        for (int64_t o = 0; o < c.out_channels; ++o)
          std::for_each(out + o * c.positions, out + (o + 1) * c.positions, [&](T& v) { v += bias_data[o]; });
    }
  });
}

// The input gradient of a "same" convolution is the same convolution of the output gradient,
// with the kernels turned half a turn and their channel axes swapped: w'[c][o][i][j] =
// w[o][c][kh-1-i][kw-1-j], a (C, O*kh*kw) matrix. (The forward pass reads x[p + shift(i, j)];
// shift(kh-1-i, kw-1-j) = -shift(i, j), so this sends each product back where it came from.)
std::vector<float> turned_kernels(const float* w, const ConvSizes& c) {
  const int64_t taps = c.g.kernel_h * c.g.kernel_w;
  std::vector<float> turned(static_cast<size_t>(c.channels * c.out_channels * taps));
  for (int64_t o = 0; o < c.out_channels; ++o)
    for (int64_t ch = 0; ch < c.channels; ++ch)
      for (int64_t t = 0; t < taps; ++t)
        turned[(ch * c.out_channels + o) * taps + taps - 1 - t] = w[(o * c.channels + ch) * taps + t];
  return turned;
}

// One sample's input gradient (C, H, W) from its output gradient g (O, OH*OW): through the
// turned kernels with the columns read in place when `in_place` is set, else col2im(W^T @ g)
// through `cols`.
template <class T>
void input_gradient_sample(const T* w, const std::vector<float>& turned, const T* g, T* grad_x, T* cols,
                           const ConvSizes& c, const std::optional<SameConvColumns>& in_place) {
  if constexpr (std::is_same_v<T, float>) {
    if (in_place)
      return own_sgemm_same_conv(c.channels, turned.data(), c.out_channels * c.g.kernel_h * c.g.kernel_w, *in_place,
                                 g, c.out_channels, 0.0f, grad_x, c.positions);
  }
  gemm(CblasTrans, CblasNoTrans, c.rows, c.positions, c.out_channels, w, c.rows, g, c.positions, T{0}, cols,
       c.positions);
  unfold_sample<false>(grad_x, cols, c);
}

// Per sample, with g its output gradient (O, OH*OW): the bias gradient += row sums of g;
// the weight gradient += g @ cols^T; the input gradient = col2im(W^T @ g). The weight
// gradient accumulates transposed, as cols @ g^T (C*kh*kw, O): the same products, but a GEMM
// shape OpenBLAS runs 1.2-1.4x faster here (120 against 164 GFLOP/s for the CNN's conv2).
template <class T>
void conv2d_backward_typed(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                           const Tensor& grad_w, const Tensor& grad_bias, const ConvSizes& c) {
  T* x_data = x.data<T>();
  const T* w_data = w.data<T>();
  const T* gy_data = grad_y.data<T>();
  T* gx_data = grad_x.defined() ? grad_x.data<T>() : nullptr;
  int64_t groups = sample_groups(c.batch), weight_size = c.out_channels * c.rows;
  // Each group's partial sums: transposed weight gradient (C*kh*kw, O), then bias gradient (O).
  int64_t partial_size = weight_size + c.out_channels;
  Tensor partial = Tensor::zeros({groups, partial_size}, dtype_of<T>());
  T* partial_data = partial.data<T>();
  const std::optional<SameConvColumns> in_place = gx_data ? columns_in_place<T>(c) : std::nullopt;
  std::vector<float> turned;
  if constexpr (std::is_same_v<T, float>) {
    if (in_place) turned = turned_kernels(w_data, c);
  }
  for_each_sample_group(c.batch, groups, [&](int64_t group, int64_t begin, int64_t end) {
    T* group_w_t = partial_data + group * partial_size;
    T* group_bias = group_w_t + weight_size;
    Tensor cols_holder;
    T* cols = scratch<T>(cols_holder, c.columns);
    for (int64_t n = begin; n < end; ++n) {
      const T* g = gy_data + n * c.y_sample();
      if (grad_bias.defined())
        for (int64_t o = 0; o < c.out_channels; ++o) group_bias[o] += sum_row(g + o * c.positions, c.positions);
      if (grad_w.defined()) {
        unfold_sample<true>(x_data + n * c.x_sample(), cols, c);
        gemm(CblasNoTrans, CblasTrans, c.rows, c.out_channels, c.positions, cols, c.positions, g, c.positions, T{1},
             group_w_t, c.out_channels);
      }
      if (gx_data) input_gradient_sample(w_data, turned, g, gx_data + n * c.x_sample(), cols, c, in_place);
    }
  });
  // The groups' sums, added in group order: element i of the result is element at(i) of each.
  auto add_groups = [&](const Tensor& out, int64_t offset, int64_t size, auto at) {
    T* out_data = out.data<T>();
    std::fill_n(out_data, size, T{0});
    for (int64_t group = 0; group < groups; ++group)
      for (int64_t i = 0; i < size; ++i) out_data[i] += partial_data[group * partial_size + offset + at(i)];
  };
  if (grad_w.defined())  // grad_w[o][r] = the transposed sum's [r][o]
    add_groups(grad_w, 0, weight_size, [&](int64_t i) { return i % c.rows * c.out_channels + i / c.rows; });
  if (grad_bias.defined()) add_groups(grad_bias, weight_size, c.out_channels, [](int64_t i) { return i; });
}

}  // namespace

// Inputs go through contiguous(), free when they already are: a gradient arriving from
// autograd may be an expanded view.
void im2col(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) { unfold<true>(x.contiguous(), cols, g); }

void col2im(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g) { unfold<false>(x, cols.contiguous(), g); }

void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) {
  ConvSizes sizes(x, w, g);
  dispatch_floating(x.dtype(), [&](auto tag) { conv2d_typed<decltype(tag)>(x, w, bias, y, sizes); });
}

void conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                     const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g) {
  ConvSizes sizes(x, w, g);
  dispatch_floating(x.dtype(), [&](auto tag) {
    conv2d_backward_typed<decltype(tag)>(x, w, grad_y, grad_x, grad_w, grad_bias, sizes);
  });
}

// ---- naive references: one bounds check per element, no clipping arithmetic ----

void im2col_reference(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) {
  PlaneDims d = plane_dims(x, g);
  int64_t channels = x.size(1);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x_data = x.data<T>();
    T* out = cols.data<T>();
    for (int64_t n = 0; n < x.size(0); ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t i = 0; i < g.kernel_h; ++i)
          for (int64_t j = 0; j < g.kernel_w; ++j)
            for (int64_t oh = 0; oh < d.oh; ++oh)
              for (int64_t ow = 0; ow < d.ow; ++ow) {
                int64_t h = oh * g.stride_h - g.pad_h + i, w = ow * g.stride_w - g.pad_w + j;
                bool inside = h >= 0 && h < d.h && w >= 0 && w < d.w;
                *out++ = inside ? x_data[((n * channels + c) * d.h + h) * d.w + w] : T{0};
              }
  });
}

namespace {

// Calls visit(x_index, w_index, y_index) for every product term x * w of the convolution
// y = conv(x, w), by the definition: output (n, o, oh, ow) sums over channel c and tap (i, j).
template <class Visit>
void for_each_conv_term(const Tensor& x, const Tensor& w, const Conv2dGeometry& g, Visit visit) {
  PlaneDims d = plane_dims(x, g);
  int64_t channels = x.size(1), out_channels = w.size(0);
  for (int64_t n = 0; n < x.size(0); ++n)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t oh = 0; oh < d.oh; ++oh)
        for (int64_t ow = 0; ow < d.ow; ++ow)
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t i = 0; i < g.kernel_h; ++i)
              for (int64_t j = 0; j < g.kernel_w; ++j) {
                int64_t h = oh * g.stride_h - g.pad_h + i, col = ow * g.stride_w - g.pad_w + j;
                if (h < 0 || h >= d.h || col < 0 || col >= d.w) continue;
                visit(((n * channels + c) * d.h + h) * d.w + col, ((o * channels + c) * g.kernel_h + i) * g.kernel_w + j,
                      ((n * out_channels + o) * d.oh + oh) * d.ow + ow);
              }
}

// Contiguous tensors of float32/float64 as double sums, written back at the end.
std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> out(t.numel());
  dispatch_floating(t.dtype(), [&](auto tag) { std::copy_n(t.data<decltype(tag)>(), t.numel(), out.begin()); });
  return out;
}

void store(const std::vector<double>& values, const Tensor& t) {
  dispatch_floating(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::transform(values.begin(), values.end(), t.data<T>(), [](double v) { return static_cast<T>(v); });
  });
}

}  // namespace

void conv2d_reference(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) {
  std::vector<double> xs = as_doubles(x), ws = as_doubles(w), ys(y.numel(), 0.0);
  for_each_conv_term(x, w, g, [&](int64_t xi, int64_t wi, int64_t yi) { ys[yi] += xs[xi] * ws[wi]; });
  if (bias.defined()) {
    std::vector<double> bs = as_doubles(bias);
    int64_t plane = y.size(2) * y.size(3);
    for (size_t i = 0; i < ys.size(); ++i) ys[i] += bs[i / plane % y.size(1)];
  }
  store(ys, y);
}

void conv2d_backward_reference(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                               const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g) {
  std::vector<double> xs = as_doubles(x), ws = as_doubles(w), gys = as_doubles(grad_y);
  std::vector<double> gxs(x.numel(), 0.0), gws(w.numel(), 0.0), gbs(w.size(0), 0.0);
  for_each_conv_term(x, w, g, [&](int64_t xi, int64_t wi, int64_t yi) {
    gxs[xi] += gys[yi] * ws[wi];
    gws[wi] += gys[yi] * xs[xi];
  });
  int64_t plane = grad_y.size(2) * grad_y.size(3);
  for (size_t i = 0; i < gys.size(); ++i) gbs[i / plane % grad_y.size(1)] += gys[i];
  store(gxs, grad_x);
  store(gws, grad_w);
  store(gbs, grad_bias);
}

}  // namespace rg::cpu
