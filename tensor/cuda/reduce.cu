// Reductions (sum, mean, max, min, argmax, argmin over any dims) and softmax on CUDA.
// Each output element (or softmax row) is owned by a group of threads of a block: they
// stride over its elements and combine through shared memory. Semantics mirror
// tensor/cpu/reduce.cpp: floating sums accumulate in double, integer sums in int64, NaN
// wins max/min/argmax/argmin, and the first of equal extremes wins.
#include <cmath>
#include <limits>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

template <class T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Threads per output: the smallest power of two covering the reduced count, at most a block.
int group_size(int64_t count) {
  int group = 1;
  while (group < kBlock && group < count) group *= 2;
  return group;
}

// Combines the `group` values of each group of consecutive threads (group a power of two
// dividing the block); every thread gets its group's result. All threads of the block must
// call it the same number of times.
template <class V, class Combine>
__device__ V group_reduce(V value, V* shared, int group, Combine combine) {
  const int tid = threadIdx.x;
  const int lane = tid & (group - 1);
  shared[tid] = value;
  __syncthreads();
  for (int s = group / 2; s > 0; s /= 2) {
    if (lane < s) shared[tid] = combine(shared[tid], shared[tid + s]);
    __syncthreads();
  }
  const V result = shared[tid - lane];
  __syncthreads();  // shared is rewritten by the next call
  return result;
}

// Where the elements of one output sit: kept dims give the output (and its first input
// element), reduced dims walk the elements, numbered in row-major order as on the CPU.
struct ReduceLayout {
  int kept = 0, reduced = 0;
  int64_t kept_shape[kMaxDims], kept_src[kMaxDims], kept_dst[kMaxDims];
  int64_t reduced_shape[kMaxDims], reduced_src[kMaxDims];
  int64_t outputs = 1, count = 1;

  __device__ void output_offsets(int64_t o, int64_t& src, int64_t& dst) const {
    src = dst = 0;
    for (int d = kept - 1; d >= 0; --d) {
      const int64_t q = o / kept_shape[d];
      src += (o - q * kept_shape[d]) * kept_src[d];
      dst += (o - q * kept_shape[d]) * kept_dst[d];
      o = q;
    }
  }
  __device__ int64_t element_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = reduced - 1; d >= 0; --d) {
      const int64_t q = r / reduced_shape[d];
      off += (r - q * reduced_shape[d]) * reduced_src[d];
      r = q;
    }
    return off;
  }
};

ReduceLayout make_layout(const Tensor& src, const Tensor& dst) {
  ReduceLayout l;
  for (size_t d = 0; d < src.shape().size(); ++d) {
    const int64_t size = src.shape()[d];
    if (size == 1) continue;
    const bool reduced = dst.shape()[d] == 1;
    RG_CHECK((reduced ? l.reduced : l.kept) < kMaxDims, "cuda reduce: more than ", kMaxDims,
             " kept or reduced dims in ", shape_str(src.shape()));
    if (reduced) {
      l.reduced_shape[l.reduced] = size;
      l.reduced_src[l.reduced++] = src.strides()[d];
      l.count *= size;
    } else {
      l.kept_shape[l.kept] = size;
      l.kept_src[l.kept] = src.strides()[d];
      l.kept_dst[l.kept++] = dst.strides()[d];
      l.outputs *= size;
    }
  }
  return l;
}

// Kernels below loop over outputs in steps of one block's worth of groups (kBlock / group
// outputs), with every thread running every iteration so group_reduce's barriers line up;
// threads past the last output are inactive but still take part in the barriers.

template <class T>
__global__ void sum_kernel(const T* src, T* dst, ReduceLayout l, int group, bool mean) {
  using Acc = Accumulator<T>;
  __shared__ Acc shared[kBlock];
  const int lane = threadIdx.x & (group - 1);
  const int64_t per_block = kBlock / group;
  for (int64_t first = blockIdx.x * per_block; first < l.outputs; first += gridDim.x * per_block) {
    const int64_t output = first + threadIdx.x / group;
    const bool active = output < l.outputs;
    int64_t src_off = 0, dst_off = 0;
    Acc total = 0;
    if (active) {
      l.output_offsets(output, src_off, dst_off);
      for (int64_t r = lane; r < l.count; r += group) total += static_cast<Acc>(src[src_off + l.element_offset(r)]);
    }
    total = group_reduce(total, shared, group, [](Acc a, Acc b) { return a + b; });
    if (active && lane == 0) {
      double value = static_cast<double>(total);
      if (mean) value = l.count ? value / static_cast<double>(l.count) : NAN;
      dst[dst_off] = static_cast<T>(value);
    }
  }
}

// A candidate extreme: its value and row-major position; position -1 is "none yet".
template <class T>
struct Extreme {
  T value;
  int64_t position;
};

// The element a serial scan would keep: a NaN (the first one) beats everything, then the
// larger (smaller, for min) value, then the earlier position.
template <class T>
__device__ Extreme<T> better(Extreme<T> a, Extreme<T> b, bool want_max) {
  if (a.position < 0) return b;
  if (b.position < 0) return a;
  const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
  if (a_nan || b_nan) return (a_nan && (!b_nan || a.position < b.position)) ? a : b;
  if (a.value == b.value) return a.position < b.position ? a : b;
  return (want_max ? a.value > b.value : a.value < b.value) ? a : b;
}

template <class T>
__global__ void extreme_kernel(const T* src, void* dst, ReduceLayout l, int group, bool want_max, bool arg) {
  __shared__ Extreme<T> shared[kBlock];
  const int lane = threadIdx.x & (group - 1);
  const int64_t per_block = kBlock / group;
  for (int64_t first = blockIdx.x * per_block; first < l.outputs; first += gridDim.x * per_block) {
    const int64_t output = first + threadIdx.x / group;
    const bool active = output < l.outputs;
    int64_t src_off = 0, dst_off = 0;
    Extreme<T> best{T{}, -1};
    if (active) {
      l.output_offsets(output, src_off, dst_off);
      for (int64_t r = lane; r < l.count; r += group)
        best = better(best, Extreme<T>{src[src_off + l.element_offset(r)], r}, want_max);
    }
    best = group_reduce(best, shared, group, [want_max](Extreme<T> a, Extreme<T> b) { return better(a, b, want_max); });
    if (active && lane == 0) {
      if (arg) static_cast<int64_t*>(dst)[dst_off] = best.position;
      else static_cast<T*>(dst)[dst_off] = best.value;
    }
  }
}

// One group per row of a contiguous (outer, n, inner) block, reduced along n. As the CPU:
// the maximum in T, the sum of exp(x - max) in double, then x - max - log(sum) in T, or
// exp(x - max) * (1 / sum).
template <class T>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t n, int64_t inner, int group, bool log_out) {
  __shared__ double shared[kBlock];
  const int lane = threadIdx.x & (group - 1);
  const int64_t per_block = kBlock / group;
  for (int64_t first = blockIdx.x * per_block; first < rows; first += gridDim.x * per_block) {
    const int64_t row = first + threadIdx.x / group;
    const bool active = row < rows;
    const int64_t base = active ? (row / inner) * n * inner + row % inner : 0;
    double peak = -INFINITY;
    for (int64_t i = lane; active && i < n; i += group) peak = fmax(peak, static_cast<double>(x[base + i * inner]));
    peak = group_reduce(peak, shared, group, [](double a, double b) { return a > b ? a : b; });
    const T t_peak = static_cast<T>(peak);
    double total = 0;
    for (int64_t i = lane; active && i < n; i += group) total += exp(static_cast<double>(x[base + i * inner] - t_peak));
    total = group_reduce(total, shared, group, [](double a, double b) { return a + b; });
    if (log_out) {
      const T log_total = static_cast<T>(log(total));
      for (int64_t i = lane; active && i < n; i += group) y[base + i * inner] = (x[base + i * inner] - t_peak) - log_total;
    } else {
      const T scale = static_cast<T>(1.0 / total);
      for (int64_t i = lane; active && i < n; i += group) y[base + i * inner] = exp(x[base + i * inner] - t_peak) * scale;
    }
  }
}

unsigned groups_grid(int64_t outputs, int group) { return grid_for(outputs * group); }

}  // namespace

void reduce_tensor(DimReduction op, const Tensor& src, const Tensor& dst) {
  const ReduceLayout l = make_layout(src, dst);
  if (l.outputs == 0) return;
  const bool sum_like = op == DimReduction::sum || op == DimReduction::mean;
  RG_CHECK(l.count > 0 || sum_like, op_name(op), ": cannot reduce over an empty dimension (shape ",
           shape_str(src.shape()), ")");
  const int group = group_size(l.count);
  const unsigned grid = groups_grid(l.outputs, group);
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (sum_like)
      RG_CUDA_LAUNCH_GRID(sum_kernel<T>, grid, stream, in_ptr<T>(src), out_ptr<T>(dst), l, group,
                          op == DimReduction::mean);
    else
      RG_CUDA_LAUNCH_GRID(extreme_kernel<T>, grid, stream, in_ptr<T>(src), dst.raw_data(), l, group,
                          op == DimReduction::max || op == DimReduction::argmax,
                          op == DimReduction::argmax || op == DimReduction::argmin);
  });
}

void softmax_tensor(const Tensor& src, const Tensor& dst, int64_t dim, bool log) {
  if (dst.numel() == 0) return;
  const Tensor x = src.contiguous();
  const Tensor y = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  int64_t outer = 1, inner = 1;
  const int64_t n = x.shape().empty() ? 1 : x.shape()[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  const int group = group_size(n);
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH_GRID(softmax_kernel<T>, groups_grid(outer * inner, group), stream, in_ptr<T>(x), out_ptr<T>(y),
                        outer * inner, n, inner, group, log);
  });
  if (!y.same_data(dst)) copy_tensor(y, dst);
}

}  // namespace rg::cuda
