// Indexing kernels on CUDA: index_select, gather and scatter_add, any dtype and strides.
// As on the CPU, each is one strided walk over the index's shape in which the indexed
// operand's stride along `dim` is zeroed: the walk supplies every other coordinate, the
// index value that one. scatter_add accumulates with atomicAdd, so float sums are exact
// only up to the order of additions.
#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

Shape with_stride(Shape strides, int64_t dim, int64_t stride) {
  strides[dim] = stride;
  return strides;
}

// Operands: 0 dst, 1 src (stride 0 along dim), 2 index.
template <class T>
__global__ void gather_kernel(const T* src, const int64_t* index, T* dst, Indexer<3> ix, int64_t src_dim_stride,
                              int64_t n) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    dst[off[0]] = src[off[1] + index[off[2]] * src_dim_stride];
  }
}

// atomicAdd for every dtype: CUDA has it for float, double (sm_60+), int and unsigned
// long long (which adds int64 correctly in two's complement); uint8 goes through a
// compare-and-swap on the aligned 32-bit word holding it.
__device__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ void atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ void atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ void atomic_add(uint8_t* p, uint8_t v) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  unsigned* word = reinterpret_cast<unsigned*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>(address & 3) * 8;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    const unsigned byte = ((assumed >> shift) + v) & 0xFFu;
    old = atomicCAS(word, assumed, (assumed & ~(0xFFu << shift)) | (byte << shift));
  } while (old != assumed);
}

// Operands: 0 src, 1 index, 2 dst (stride 0 along dim).
template <class T>
__global__ void scatter_add_kernel(const T* src, const int64_t* index, T* dst, Indexer<3> ix, int64_t dst_dim_stride,
                                   int64_t n) {
  RG_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    ix.offsets(i, off);
    atomic_add(dst + off[2] + index[off[1]] * dst_dim_stride, src[off[0]]);
  }
}

// dst[i] = src[i with coordinate `dim` replaced by index[i]], walking dst's shape;
// index_strides lets a 1-d index stand for a full-rank one (stride 0 off `dim`).
void launch_gather(const Tensor& src, int64_t dim, const Tensor& index, const Shape& index_strides, const Tensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const Shape src_strides = with_stride(src.strides(), dim, 0);
  const Indexer<3> ix = make_indexer<3>(dst.shape(), {&dst.strides(), &src_strides, &index_strides});
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(src.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(gather_kernel<T>, n, stream, in_ptr<T>(src), in_ptr<int64_t>(index), out_ptr<T>(dst), ix,
                   src.strides()[dim], n);
  });
}

}  // namespace

// src: (..., S, ...), index: (I,), dst: (..., I, ...).
void index_select_tensor(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) {
  launch_gather(src, dim, index, with_stride(Shape(dst.dim(), 0), dim, index.strides()[0]), dst);
}

// index and dst have one shape, of src's rank.
void gather_tensor(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) {
  launch_gather(src, dim, index, index.strides(), dst);
}

// index and src have one shape, of dst's rank.
void scatter_add_tensor(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const Shape dst_strides = with_stride(dst.strides(), dim, 0);
  const Indexer<3> ix = make_indexer<3>(src.shape(), {&src.strides(), &index.strides(), &dst_strides});
  cudaStream_t stream = stream_for(dst.device().index);
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    RG_CUDA_LAUNCH(scatter_add_kernel<T>, n, stream, in_ptr<T>(src), in_ptr<int64_t>(index), out_ptr<T>(dst), ix,
                   dst.strides()[dim], n);
  });
}

}  // namespace rg::cuda
