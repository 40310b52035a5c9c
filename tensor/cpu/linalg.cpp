// Batched matrix multiply on the CPU: one single-threaded GEMM call (cpu/gemm.h: ringgrad's
// own AVX-512 kernel or OpenBLAS in float32, OpenBLAS in float64) per block, the blocks
// spread over our own pool; a plain loop for integer types; and the naive reference kernel
// that tests compare both against.
#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cpu/gemm.h"
#include "tensor/cpu/reference.h"
#include "tensor/thread_pool.h"

namespace rg::cpu {

namespace {

// Below this many multiply-adds a GEMM is not worth splitting over threads (nor a batch
// worth spreading thinner): the fork-join costs more than the work.
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Column/row blocks of a split GEMM start at multiples of this, so every block keeps the
// full width of a GEMM micro-kernel (OpenBLAS's, and a register of ringgrad's).
constexpr int64_t kBlockAlign = 16;

// How BLAS sees a row-major (rows, cols) matrix stored with the given strides.
struct BlasMatrix {
  CBLAS_TRANSPOSE trans;
  int64_t ld;
};

// A size-1 dim's stride never matters, so it is ignored; any other layout needs a copy.
std::optional<BlasMatrix> blas_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= std::max<int64_t>(cols, 1)))
    return BlasMatrix{CblasNoTrans, rows == 1 ? std::max<int64_t>(cols, 1) : row_stride};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= std::max<int64_t>(rows, 1)))
    return BlasMatrix{CblasTrans, cols == 1 ? std::max<int64_t>(rows, 1) : col_stride};
  return std::nullopt;
}

// A BLAS-compatible version of the (B, rows, cols) operand t: t itself, or a dense copy
// that keeps a broadcast batch broadcast rather than materialising B copies.
Tensor blas_operand(const Tensor& t) {
  if (blas_layout(t.size(1), t.size(2), t.strides()[1], t.strides()[2])) return t;
  if (t.strides()[0] == 0) return t.narrow(0, 0, 1).contiguous().expand(t.shape());
  return t.contiguous();
}

// a: (B, M, K), b: (B, K, N), out: (B, M, N). Each task is one GEMM of the batch, or one
// of `splits` blocks of it: column blocks when N > M, else row blocks. Measured on 2 cores
// (OpenBLAS 0.3.21), row blocks of a square GEMM match OpenBLAS's own 2 threads (0.97-1.0x)
// while column blocks sometimes drop to 0.6x; column blocks win when M is much smaller.
template <class T>
void matmul_blas(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
  if (k == 0) {
    std::fill_n(out.data<T>(), out.numel(), T{0});
    return;
  }
  Tensor a = blas_operand(a_in), b = blas_operand(b_in);
  BlasMatrix la = *blas_layout(m, k, a.strides()[1], a.strides()[2]);
  BlasMatrix lb = *blas_layout(k, n, b.strides()[1], b.strides()[2]);
  const T* a_data = a.data<T>();
  const T* b_data = b.data<T>();
  T* out_data = out.data<T>();

  int threads = get_num_threads();
  int64_t work = m * n * k;
  // When the batch cannot keep every thread busy, every GEMM is cut into `threads` blocks,
  // so each thread gets one block of each GEMM: balanced whatever the batch size.
  int64_t splits = batch < threads && work >= kMinParallelWork ? threads : 1;
  bool split_n = n > m;
  int64_t split_size = split_n ? n : m;
  int64_t block = (split_size + splits - 1) / splits;
  block = (block + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  int64_t grain = splits > 1 ? 1 : std::max<int64_t>(1, kMinParallelWork / std::max<int64_t>(work, 1));

  parallel_for(0, batch * splits, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      int64_t i = task / splits, lo = task % splits * block, hi = std::min(split_size, lo + block);
      if (lo >= hi) continue;
      const T* a_ptr = a_data + i * a.strides()[0];
      const T* b_ptr = b_data + i * b.strides()[0];
      T* c_ptr = out_data + i * m * n;
      if (split_n)
        gemm(la.trans, lb.trans, m, hi - lo, k, a_ptr, la.ld, b_ptr + lo * b.strides()[2], lb.ld, T{0}, c_ptr + lo, n);
      else
        gemm(la.trans, lb.trans, hi - lo, n, k, a_ptr + lo * a.strides()[1], la.ld, b_ptr, lb.ld, T{0}, c_ptr + lo * n,
             n);
    }
  });
}

// Integer matmul: no BLAS for these, so rows of out are spread over the pool and each row
// accumulates in int64 in (i, k, j) order, streaming rows of b.
template <class T>
void matmul_loops(const Tensor& a, const Tensor& b, const Tensor& out) {
  int64_t m = out.size(1), n = out.size(2), k = a.size(2);
  const Shape& sa = a.strides();
  const Shape& sb = b.strides();
  const T* a_data = a.data<T>();
  const T* b_data = b.data<T>();
  T* out_data = out.data<T>();
  int64_t grain = std::max<int64_t>(1, kMinParallelWork / std::max<int64_t>(n * k, 1));
  parallel_for(0, out.size(0) * m, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> acc(n);
    for (int64_t row = begin; row < end; ++row) {
      const T* a_row = a_data + row / m * sa[0] + row % m * sa[1];
      const T* b_mat = b_data + row / m * sb[0];
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t p = 0; p < k; ++p) {
        int64_t a_value = a_row[p * sa[2]];
        for (int64_t j = 0; j < n; ++j) acc[j] += a_value * static_cast<int64_t>(b_mat[p * sb[1] + j * sb[2]]);
      }
      for (int64_t j = 0; j < n; ++j) out_data[row * n + j] = static_cast<T>(acc[j]);
    }
  });
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>)
      matmul_blas<T>(a, b, out);
    else
      matmul_loops<T>(a, b, out);
  });
}

void matmul_reference(const Tensor& a, const Tensor& b, const Tensor& out) {
  const Shape &sa = a.strides(), &sb = b.strides(), &so = out.strides();
  int64_t k = a.size(2);
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
    const T* a_data = a.data<T>();
    const T* b_data = b.data<T>();
    T* out_data = out.data<T>();
    for (int64_t i = 0; i < out.size(0); ++i)
      for (int64_t r = 0; r < out.size(1); ++r)
        for (int64_t c = 0; c < out.size(2); ++c) {
          Acc sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += static_cast<Acc>(a_data[i * sa[0] + r * sa[1] + p * sa[2]]) *
                   static_cast<Acc>(b_data[i * sb[0] + p * sb[1] + c * sb[2]]);
          out_data[i * so[0] + r * so[1] + c * so[2]] = static_cast<T>(sum);
        }
  });
}

}  // namespace rg::cpu
