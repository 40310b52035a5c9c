// Indexing kernels on the CPU: index_select, gather and scatter_add, any dtype and strides.
// Each is one strided walk over the index's shape in which the indexed operand's stride
// along `dim` is zeroed: the walk supplies every other coordinate, the index value that one.
#include <algorithm>
#include <array>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided.h"

namespace rg::cpu {

namespace {

constexpr int64_t kGrainElements = 32768;  // per task: less costs more in fork-join than it saves

Shape with_stride(Shape strides, int64_t dim, int64_t stride) {
  strides[dim] = stride;
  return strides;
}

// Every walk has the operands (values out, values in, index).
template <class T>
std::array<int64_t, 3> element_sizes() {
  return {sizeof(T), sizeof(T), sizeof(int64_t)};
}

char* bytes(const Tensor& t) { return static_cast<char*>(t.raw_data()); }

// dst[i] = src[i with coordinate `dim` replaced by index[i]], over the walked `shape`;
// index_strides lets a 1-d index stand for a full-rank one (stride 0 off `dim`).
template <class T>
void gather_walk(const Shape& shape, const Tensor& src, int64_t dim, const Tensor& index, const Shape& index_strides,
                 const Tensor& dst) {
  Shape src_strides = with_stride(src.strides(), dim, 0);
  int64_t src_dim_stride = src.strides()[dim];
  for_each_run<3>(shape, {&dst.strides(), &src_strides, &index_strides}, {bytes(dst), bytes(src), bytes(index)},
                  element_sizes<T>(), [&](const auto& ptrs, const auto& strides, int64_t count) {
                    T* out = reinterpret_cast<T*>(ptrs[0]);
                    const T* in = reinterpret_cast<const T*>(ptrs[1]);
                    const int64_t* idx = reinterpret_cast<const int64_t*>(ptrs[2]);
                    for (int64_t k = 0; k < count; ++k)
                      out[k * strides[0]] = in[k * strides[1] + idx[k * strides[2]] * src_dim_stride];
                  });
}

// The serial scatter-add of one slab: operands (dst with dim stride 0, src, index).
template <class T>
void scatter_add_serial(const Shape& shape, const std::array<const Shape*, 3>& strides,
                        const std::array<char*, 3>& base, int64_t dst_dim_stride) {
  StridedLayout<3> layout(shape, strides);
  std::array<int64_t, 3> inner = {layout.inner_stride(0), layout.inner_stride(1), layout.inner_stride(2)};
  std::array<int64_t, 3> sizes = element_sizes<T>();
  for (int64_t row = 0; row < layout.outer_count(); ++row) {
    T* out = reinterpret_cast<T*>(base[0] + layout.outer_offset(0, row) * sizes[0]);
    const T* in = reinterpret_cast<const T*>(base[1] + layout.outer_offset(1, row) * sizes[1]);
    const int64_t* idx = reinterpret_cast<const int64_t*>(base[2] + layout.outer_offset(2, row) * sizes[2]);
    for (int64_t k = 0; k < layout.inner_size(); ++k)
      out[k * inner[0] + idx[k * inner[2]] * dst_dim_stride] += in[k * inner[1]];
  }
}

// Elements that differ along a dim other than `dim` always land on different dst elements,
// so slabs along the largest such dim go to different threads with no atomics.
template <class T>
void scatter_add_typed(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  const Shape& shape = src.shape();
  Shape dst_strides = with_stride(dst.strides(), dim, 0);
  std::array<const Shape*, 3> strides = {&dst_strides, &src.strides(), &index.strides()};
  std::array<char*, 3> base = {bytes(dst), bytes(src), bytes(index)};
  int64_t dst_dim_stride = dst.strides()[dim];
  int64_t split_dim = -1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != dim && shape[d] > 1 && (split_dim < 0 || shape[d] > shape[split_dim])) split_dim = d;
  if (split_dim < 0) {
    scatter_add_serial<T>(shape, strides, base, dst_dim_stride);
    return;
  }
  int64_t slab_size = numel_of(shape) / shape[split_dim];
  std::array<int64_t, 3> sizes = element_sizes<T>();
  parallel_for(0, shape[split_dim], std::max<int64_t>(1, kGrainElements / slab_size), [&](int64_t begin, int64_t end) {
    Shape slab = shape;
    slab[split_dim] = end - begin;
    std::array<char*, 3> slab_base;
    for (int k = 0; k < 3; ++k) slab_base[k] = base[k] + begin * (*strides[k])[split_dim] * sizes[k];
    scatter_add_serial<T>(slab, strides, slab_base, dst_dim_stride);
  });
}

}  // namespace

// src: (..., S, ...), index: (I,), dst: (..., I, ...).
void index_select(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) {
  Shape index_strides = with_stride(Shape(dst.dim(), 0), dim, index.strides()[0]);
  dispatch(src.dtype(),
           [&](auto tag) { gather_walk<decltype(tag)>(dst.shape(), src, dim, index, index_strides, dst); });
}

// index and dst have one shape, of src's rank.
void gather(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) {
  dispatch(src.dtype(),
           [&](auto tag) { gather_walk<decltype(tag)>(dst.shape(), src, dim, index, index.strides(), dst); });
}

// index and src have one shape, of dst's rank.
void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) {
  if (src.numel() == 0) return;
  dispatch(dst.dtype(), [&](auto tag) { scatter_add_typed<decltype(tag)>(dst, dim, index, src); });
}

}  // namespace rg::cpu
