// Convolution and pooling helpers on CUDA: im2col/col2im, max pooling, average pooling
// and its backward. One thread per written element; the backward passes (col2im, avg
// pool backward) gather over the windows covering an input element instead of
// scattering with atomics, in the CPU's order, so their sums match tensor/cpu/conv2d.cpp and pool.cpp.
#include <cmath>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

// x: (B, C, H, W) seen as `planes` = B*C planes of (h, w); outputs (oh, ow) per plane.
struct Geometry {
  int64_t planes, h, w, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw;
};

Geometry geometry_of(const Tensor& x, const Conv2dGeometry& g) {
  const int64_t h = x.size(2), w = x.size(3);
  return {x.size(0) * x.size(1), h, w, g.out_size(h, g.kernel_h, g.stride_h, g.pad_h),
          g.out_size(w, g.kernel_w, g.stride_w, g.pad_w), g.kernel_h, g.kernel_w, g.stride_h, g.stride_w,
          g.pad_h, g.pad_w};
}

// The output positions [begin, end) along one axis whose window covers input coordinate x.
struct Span {
  int64_t begin, end;
};
__device__ Span covering(int64_t x, int64_t pad, int64_t kernel, int64_t stride, int64_t out_size) {
  const int64_t low = x + pad - kernel + 1;  // the window of o covers [o*stride - pad, o*stride - pad + kernel)
  const int64_t begin = low <= 0 ? 0 : (low + stride - 1) / stride;
  const int64_t end = (x + pad) / stride + 1;
  return {begin, end < out_size ? end : out_size};
}

// cols (B, C*kh*kw, OH*OW), row c*kh*kw + i*kw + j: the pixel under tap (i, j), or 0.
template <class T>
__global__ void im2col_kernel(const T* x, T* cols, Geometry g, int64_t total) {
  RG_GRID_STRIDE_LOOP(idx, total) {
    int64_t rest = idx;
    const int64_t ow = rest % g.ow;
    const int64_t oh = (rest /= g.ow) % g.oh;
    const int64_t j = (rest /= g.oh) % g.kw;
    const int64_t i = (rest /= g.kw) % g.kh;
    const int64_t plane = rest / g.kh;
    const int64_t h = oh * g.sh - g.ph + i, w = ow * g.sw - g.pw + j;
    cols[idx] = (h >= 0 && h < g.h && w >= 0 && w < g.w) ? x[(plane * g.h + h) * g.w + w] : T(0);
  }
}

// x[plane, h, w] = sum over taps (i, j) in order of the cols entry that im2col took from it.
template <class T>
__global__ void col2im_kernel(const T* cols, T* x, Geometry g, int64_t total) {
  RG_GRID_STRIDE_LOOP(idx, total) {
    const int64_t w = idx % g.w, h = (idx / g.w) % g.h, plane = idx / (g.w * g.h);
    T sum = 0;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t oh_stride = h + g.ph - i;
      if (oh_stride < 0 || oh_stride % g.sh != 0 || oh_stride / g.sh >= g.oh) continue;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ow_stride = w + g.pw - j;
        if (ow_stride < 0 || ow_stride % g.sw != 0 || ow_stride / g.sw >= g.ow) continue;
        sum += cols[((plane * g.kh + i) * g.kw + j) * g.oh * g.ow + (oh_stride / g.sh) * g.ow + ow_stride / g.sw];
      }
    }
    x[idx] = sum;
  }
}

// The window of output (oh, ow) clipped to the plane: rows [h0, h1), columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};
__device__ Window window_at(int64_t oh, int64_t ow, const Geometry& g) {
  const int64_t h = oh * g.sh - g.ph, w = ow * g.sw - g.pw;
  return {h > 0 ? h : 0, h + g.kh < g.h ? h + g.kh : g.h, w > 0 ? w : 0, w + g.kw < g.w ? w + g.kw : g.w};
}

// As PyTorch: the first maximum wins, and a NaN wins over everything.
template <class T>
__global__ void max_pool_kernel(const T* x, T* out, int64_t* indices, Geometry g, int64_t total) {
  RG_GRID_STRIDE_LOOP(idx, total) {
    const int64_t ow = idx % g.ow, oh = (idx / g.ow) % g.oh, plane = idx / (g.ow * g.oh);
    const Window win = window_at(oh, ow, g);
    const T* in = x + plane * g.h * g.w;
    T best = -INFINITY;
    int64_t best_index = win.h0 * g.w + win.w0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const T value = in[h * g.w + w];
        if (value > best || isnan(value)) {
          best = value;
          best_index = h * g.w + w;
        }
      }
    out[idx] = best;
    indices[idx] = best_index;
  }
}

// count_include_pad: every window divides by kh*kw.
template <class T>
__global__ void avg_pool_kernel(const T* x, T* out, Geometry g, int64_t total) {
  RG_GRID_STRIDE_LOOP(idx, total) {
    const int64_t ow = idx % g.ow, oh = (idx / g.ow) % g.oh, plane = idx / (g.ow * g.oh);
    const Window win = window_at(oh, ow, g);
    const T* in = x + plane * g.h * g.w;
    T sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) sum += in[h * g.w + w];
    out[idx] = sum * (T(1) / static_cast<T>(g.kh * g.kw));
  }
}

// grad_in[plane, h, w] = sum, over the windows covering (h, w) in (oh, ow) order, of
// grad_out * 1/(kh*kw).
template <class T>
__global__ void avg_pool_backward_kernel(const T* grad_out, T* grad_in, Geometry g, int64_t total) {
  RG_GRID_STRIDE_LOOP(idx, total) {
    const int64_t w = idx % g.w, h = (idx / g.w) % g.h, plane = idx / (g.w * g.h);
    const T scale = T(1) / static_cast<T>(g.kh * g.kw);
    const Span rows = covering(h, g.ph, g.kh, g.sh, g.oh), columns = covering(w, g.pw, g.kw, g.sw, g.ow);
    const T* grad = grad_out + plane * g.oh * g.ow;
    T sum = 0;
    for (int64_t oh = rows.begin; oh < rows.end; ++oh)
      for (int64_t ow = columns.begin; ow < columns.end; ++ow) sum += mul_rn(grad[oh * g.ow + ow], scale);
    grad_in[idx] = sum;
  }
}

}  // namespace

// Inputs go through contiguous() (free when they already are); outputs are the dense
// tensors ops_conv_pool.cpp allocates, as on the CPU.
void im2col_tensor(const Tensor& x_in, const Tensor& cols, const Conv2dGeometry& geometry) {
  const Tensor x = x_in.contiguous();
  const Geometry g = geometry_of(x, geometry);
  const int64_t total = cols.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(im2col_kernel<T>, total, stream_for(x.device().index), in_ptr<T>(x), out_ptr<T>(cols), g, total);
  });
}

void col2im_tensor(const Tensor& cols_in, const Tensor& x, const Conv2dGeometry& geometry) {
  const Tensor cols = cols_in.contiguous();
  const Geometry g = geometry_of(x, geometry);
  const int64_t total = x.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(col2im_kernel<T>, total, stream_for(x.device().index), in_ptr<T>(cols), out_ptr<T>(x), g, total);
  });
}

void max_pool2d_tensor(const Tensor& x_in, const Tensor& out, const Tensor& indices, const Conv2dGeometry& geometry) {
  const Tensor x = x_in.contiguous();
  const Geometry g = geometry_of(x, geometry);
  const int64_t total = out.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(max_pool_kernel<T>, total, stream_for(x.device().index), in_ptr<T>(x), out_ptr<T>(out),
                   out_ptr<int64_t>(indices), g, total);
  });
}

void avg_pool2d_tensor(const Tensor& x_in, const Tensor& out, const Conv2dGeometry& geometry) {
  const Tensor x = x_in.contiguous();
  const Geometry g = geometry_of(x, geometry);
  const int64_t total = out.numel();
  if (total == 0) return;
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(avg_pool_kernel<T>, total, stream_for(x.device().index), in_ptr<T>(x), out_ptr<T>(out), g, total);
  });
}

void avg_pool2d_backward_tensor(const Tensor& grad_out_in, const Tensor& grad_in, const Conv2dGeometry& geometry) {
  const Tensor grad_out = grad_out_in.contiguous();
  const Geometry g = geometry_of(grad_in, geometry);
  const int64_t total = grad_in.numel();
  if (total == 0) return;
  dispatch_floating(grad_in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(avg_pool_backward_kernel<T>, total, stream_for(grad_in.device().index), in_ptr<T>(grad_out),
                   out_ptr<T>(grad_in), g, total);
  });
}

}  // namespace rg::cuda
