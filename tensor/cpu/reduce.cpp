// Reductions (sum, mean, max, min, argmax, argmin over any dims) and softmax on the CPU.
// Floating sums accumulate in double: slower by a hair, but results stay accurate and
// independent of how the work is split over threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/strided.h"

namespace rg::cpu {

namespace {

template <class T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// The reduced sub-space of one output element, as runs along its innermost dim:
// fn(offset, first_position, length, stride), positions counting in row-major order.
struct ReducedSpace {
  std::vector<int64_t> sizes, strides;  // reduced dims only, outermost first
  int64_t count = 1;

  void add_dim(int64_t size, int64_t stride) {
    count *= size;
    if (!sizes.empty() && strides.back() == stride * size) {  // contiguous with the last one: merge
      sizes.back() *= size;
      strides.back() = stride;
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
    }
  }
  template <class Fn>
  void for_each_run(Fn fn) const {
    if (sizes.empty()) return fn(int64_t{0}, int64_t{0}, int64_t{1}, int64_t{0});
    int64_t inner = sizes.back(), inner_stride = strides.back();
    size_t outer_dims = sizes.size() - 1;
    std::vector<int64_t> index(outer_dims, 0);
    int64_t offset = 0;
    for (int64_t position = 0; position < count; position += inner) {
      fn(offset, position, inner, inner_stride);
      for (size_t d = outer_dims; d-- > 0;) {  // odometer increment over the outer reduced dims
        offset += strides[d];
        if (++index[d] < sizes[d]) break;
        offset -= strides[d] * sizes[d];
        index[d] = 0;
      }
    }
  }
};

// Eight independent partial sums: one running total would make every add wait for the
// previous one (a 4-cycle dependency chain); eight keep the adder busy. The split is fixed,
// so the result does not depend on threads.
template <class T>
Accumulator<T> contiguous_sum(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  Accumulator<T> partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += x[i + lane];
  Accumulator<T> total = 0;
  for (; i < n; ++i) total += x[i];
  for (int lane = 0; lane < kLanes; ++lane) total += partial[lane];
  return total;
}

// True when every reduced dim comes before every kept one (size-1 dims aside), e.g. the
// sum over the batch of per-sample weight gradients: a contiguous src is then a
// (rows, columns) matrix reduced down its columns. (A full reduction, one column, is left
// to contiguous_sum's eight lanes.)
bool reduces_leading_dims(const Shape& src_shape, const Shape& dst_shape) {
  bool kept_seen = false;
  for (size_t d = 0; d < src_shape.size(); ++d) {
    if (src_shape[d] == 1) continue;
    bool reduced = dst_shape[d] == 1;
    if (reduced && kept_seen) return false;
    kept_seen = kept_seen || !reduced;
  }
  return true;
}

// Column sums of a contiguous (rows, columns) matrix: rows are added into a block of
// accumulators in order, so memory is walked once and the adds vectorise, where a strided
// walk per output is neither. Each output still sums in row order, in double: the same
// result as the general path, bit for bit.
template <class T>
void sum_columns(const T* x, T* out, int64_t rows, int64_t columns, bool mean) {
  constexpr int64_t kBlock = 512;  // columns per accumulator block: 4 KB of doubles, in L1
  int64_t blocks = (columns + kBlock - 1) / kBlock;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, rows * kBlock));
  parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) {
    Accumulator<T> acc[kBlock];
    for (int64_t b = begin; b < end; ++b) {
      int64_t first = b * kBlock, n = std::min(kBlock, columns - first);
      std::fill_n(acc, n, Accumulator<T>{0});
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = x + r * columns + first;
        for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
      }
      for (int64_t j = 0; j < n; ++j) {
        double value = static_cast<double>(acc[j]);
        out[first + j] = static_cast<T>(mean ? value / static_cast<double>(rows) : value);
      }
    }
  });
}

template <class T>
void reduce_typed(DimReduction op, const Tensor& src, const Tensor& dst) {
  if ((op == DimReduction::sum || op == DimReduction::mean) && src.is_contiguous() && dst.is_contiguous() &&
      reduces_leading_dims(src.shape(), dst.shape())) {
    int64_t columns = dst.numel();
    if (columns > 1) {
      sum_columns(src.data<T>(), dst.data<T>(), src.numel() / columns, columns, op == DimReduction::mean);
      return;
    }
  }
  const Shape& shape = src.shape();
  ReducedSpace reduced;
  std::vector<int64_t> kept_sizes, kept_src_strides, kept_dst_strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (dst.shape()[d] == 1 && shape[d] != 1) {
      reduced.add_dim(shape[d], src.strides()[d]);
    } else {
      kept_sizes.push_back(shape[d]);
      kept_src_strides.push_back(src.strides()[d]);
      kept_dst_strides.push_back(dst.strides()[d]);
    }
  }
  const T* in = static_cast<const T*>(src.raw_data());
  int64_t outputs = dst.numel();
  bool arg = op == DimReduction::argmax || op == DimReduction::argmin;
  RG_CHECK(reduced.count > 0 || op == DimReduction::sum || op == DimReduction::mean, op_name(op),
           ": cannot reduce over an empty dimension (shape ", shape_str(shape), ")");
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, reduced.count));
  parallel_for(0, outputs, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      int64_t src_offset = 0, dst_offset = 0, rest = o;
      for (size_t d = kept_sizes.size(); d-- > 0;) {
        int64_t i = rest % kept_sizes[d];
        rest /= kept_sizes[d];
        src_offset += i * kept_src_strides[d];
        dst_offset += i * kept_dst_strides[d];
      }
      const T* base = in + src_offset;
      if (arg) {
        T best = base[0];
        int64_t best_position = 0;
        bool want_max = op == DimReduction::argmax;
        reduced.for_each_run([&](int64_t off, int64_t first, int64_t length, int64_t stride) {
          for (int64_t i = 0; i < length; ++i) {
            T v = base[off + i * stride];
            bool better = want_max ? v > best : v < best;
            if (better || (v != v && best == best)) best = v, best_position = first + i;  // NaN wins, as PyTorch
          }
        });
        static_cast<int64_t*>(dst.raw_data())[dst_offset] = best_position;
      } else if (op == DimReduction::max || op == DimReduction::min) {
        T best = base[0];
        bool want_max = op == DimReduction::max;
        reduced.for_each_run([&](int64_t off, int64_t, int64_t length, int64_t stride) {
          for (int64_t i = 0; i < length; ++i) {
            T v = base[off + i * stride];
            if ((want_max ? v > best : v < best) || v != v) best = v;
          }
        });
        static_cast<T*>(dst.raw_data())[dst_offset] = best;
      } else {
        Accumulator<T> total = 0;
        reduced.for_each_run([&](int64_t off, int64_t, int64_t length, int64_t stride) {
          const T* run = base + off;
          if (stride == 1) {
            total += contiguous_sum<T>(run, length);
          } else {
            for (int64_t i = 0; i < length; ++i) total += run[i * stride];
          }
        });
        double value = static_cast<double>(total);
        if (op == DimReduction::mean) value = reduced.count ? value / static_cast<double>(reduced.count) : NAN;
        static_cast<T*>(dst.raw_data())[dst_offset] = static_cast<T>(value);
      }
    }
  });
}

// softmax over the middle dim of a contiguous (outer, n, inner) block.
template <class T>
void softmax_typed(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n));
  parallel_for(0, outer * inner, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = (row / inner) * n * inner + row % inner;
      const T* in = x + base;
      T* out = y + base;
      T peak = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < n; ++i) peak = std::max(peak, in[i * inner]);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(in[i * inner] - peak));
      if (log) {
        // (x - max) - log(sum), in this order: x - max is exact-ish for large x, whereas
        // folding max + log(sum) into one float first loses digits at |x| ~ 1000.
        T log_total = static_cast<T>(std::log(total));
        for (int64_t i = 0; i < n; ++i) out[i * inner] = (in[i * inner] - peak) - log_total;
      } else {
        T scale = static_cast<T>(1.0 / total);
        for (int64_t i = 0; i < n; ++i) out[i * inner] = std::exp(in[i * inner] - peak) * scale;
      }
    }
  });
}

}  // namespace

void reduce(DimReduction op, const Tensor& src, const Tensor& dst) {
  dispatch(src.dtype(), [&](auto tag) { reduce_typed<decltype(tag)>(op, src, dst); });
}

void softmax(const Tensor& src, const Tensor& dst, int64_t dim, bool log) {
  Tensor x = src.contiguous();
  Tensor y = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  int64_t outer = 1, inner = 1, n = x.shape().empty() ? 1 : x.shape()[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape()[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.shape()[d];
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    softmax_typed<T>(x.data<T>(), y.data<T>(), outer, n, inner, log);
  });
  if (!y.same_data(dst)) copy(y, dst);
}

}  // namespace rg::cpu
