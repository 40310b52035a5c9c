// Iteration over strided n-d tensors for CPU kernels. Dims that are contiguous for every
// operand are merged first, so a contiguous (or sliced-row) tensor becomes one long run
// and the inner loop sees plain stride-1 (or stride-0 for broadcast) pointers.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"
#include "tensor/thread_pool.h"

namespace rg::cpu {

// Shape and per-operand strides (in elements) after merging dims.
template <int N>
struct StridedLayout {
  std::vector<int64_t> sizes;                   // outermost first; at least one dim
  std::array<std::vector<int64_t>, N> strides;  // strides[k][d] for operand k

  StridedLayout(const Shape& shape, const std::array<const Shape*, N>& operand_strides) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;  // size-1 dims never move a pointer
      bool merge = !sizes.empty();
      for (int k = 0; k < N && merge; ++k) merge = strides[k].back() == (*operand_strides[k])[d] * shape[d];
      if (merge) {
        sizes.back() *= shape[d];
        for (int k = 0; k < N; ++k) strides[k].back() = (*operand_strides[k])[d];
      } else {
        sizes.push_back(shape[d]);
        for (int k = 0; k < N; ++k) strides[k].push_back((*operand_strides[k])[d]);
      }
    }
    if (sizes.empty()) {
      sizes.push_back(1);
      for (int k = 0; k < N; ++k) strides[k].push_back(0);
    }
  }
  int64_t inner_size() const { return sizes.back(); }
  int64_t inner_stride(int k) const { return strides[k].back(); }
  int64_t outer_count() const {
    int64_t n = 1;
    for (size_t d = 0; d + 1 < sizes.size(); ++d) n *= sizes[d];
    return n;
  }
  // Element offset of operand k at row `row` of the outer dims (row-major over them).
  int64_t outer_offset(int k, int64_t row) const {
    int64_t offset = 0;
    for (size_t d = sizes.size() - 1; d-- > 0;) {
      offset += (row % sizes[d]) * strides[k][d];
      row /= sizes[d];
    }
    return offset;
  }
};

// Calls run(ptrs, strides, count) over contiguous-ish runs of the inner dim, splitting
// the work over the thread pool. ptrs are the N operands' byte pointers at the start of
// the run (the caller casts them to its element types); strides count elements.
// Big rows are cut into pieces so a single long run still uses every thread.
template <int N, class Run>
void for_each_run(const Shape& shape, const std::array<const Shape*, N>& operand_strides,
                  const std::array<char*, N>& base, const std::array<int64_t, N>& elem_size, Run run) {
  StridedLayout<N> layout(shape, operand_strides);
  int64_t inner = layout.inner_size(), rows = layout.outer_count();
  if (numel_of(shape) == 0) return;
  constexpr int64_t kGrain = 32768;  // elements per task: below this, threads cost more than they save
  int64_t pieces_per_row = std::max<int64_t>(1, std::min<int64_t>(inner / kGrain, get_num_threads()));
  int64_t piece = (inner + pieces_per_row - 1) / pieces_per_row;
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, piece));
  parallel_for(0, rows * pieces_per_row, grain, [&](int64_t begin, int64_t end) {
    std::array<char*, N> ptrs;
    std::array<int64_t, N> strides;
    for (int k = 0; k < N; ++k) strides[k] = layout.inner_stride(k);
    for (int64_t task = begin; task < end; ++task) {
      int64_t row = task / pieces_per_row, start = (task % pieces_per_row) * piece;
      int64_t count = std::min(piece, inner - start);
      for (int k = 0; k < N; ++k)
        ptrs[k] = base[k] + (layout.outer_offset(k, row) + start * strides[k]) * elem_size[k];
      run(ptrs, strides, count);
    }
  });
}

}  // namespace rg::cpu
