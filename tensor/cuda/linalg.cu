// Batched matrix multiply on CUDA: cuBLAS strided-batched GEMM for float32/float64, and
// a plain kernel accumulating in int64 for the integer dtypes (cuBLAS has none).
#include <climits>
#include <optional>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"

namespace rg::cuda {
namespace {

// How cuBLAS can read a row-major (rows, cols) matrix with the given strides: stored
// row by row (`transposed` false, leading dimension = row stride) or column by column
// (a transposed view: `transposed` true, leading dimension = column stride). A size-1
// dim's stride never matters; any other layout needs a dense copy first.
struct GemmOperand {
  bool transposed;
  int64_t ld;
};

std::optional<GemmOperand> gemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  const int64_t r = rows > 1 ? rows : 1, c = cols > 1 ? cols : 1;
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= c)) return GemmOperand{false, rows == 1 ? c : row_stride};
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= r)) return GemmOperand{true, cols == 1 ? r : col_stride};
  return std::nullopt;
}

// t (B, rows, cols) itself when cuBLAS can read it, else a dense copy that keeps a
// broadcast batch (stride 0) broadcast instead of materialising B copies.
Tensor gemm_operand(const Tensor& t) {
  if (gemm_layout(t.size(1), t.size(2), t.strides()[1], t.strides()[2])) return t;
  if (t.strides()[0] == 0) return t.narrow(0, 0, 1).contiguous().expand(t.shape());
  return t.contiguous();
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a,
                    int lda, long long sa, const float* b, int ldb, long long sb, float* c, int ldc, long long sc,
                    int batch) {
  const float one = 1.0f, zero = 0.0f;
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb, &zero, c, ldc, sc, batch);
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* a,
                    int lda, long long sa, const double* b, int ldb, long long sb, double* c, int ldc, long long sc,
                    int batch) {
  const double one = 1.0, zero = 0.0;
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb, &zero, c, ldc, sc, batch);
}

int blas_int(int64_t value, const char* what) {
  RG_CHECK(value <= INT_MAX, "cuda matmul: ", what, " = ", value, " exceeds cuBLAS's 32-bit sizes");
  return static_cast<int>(value);
}

// The row-major trick: cuBLAS is column-major, and a row-major matrix read as
// column-major is its transpose. So instead of out = a @ b (row-major) we ask cuBLAS for
// out^T = b^T @ a^T (column-major): b's memory read column-major is already b^T, a's is
// a^T, and the column-major result out^T lands in memory exactly as row-major out.
// Nothing is copied; an operand that is a transposed view simply flips its op flag.
template <class T>
void matmul_cublas(const Tensor& a_in, const Tensor& b_in, const Tensor& out) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a_in.size(2);
  const Tensor a = gemm_operand(a_in), b = gemm_operand(b_in);
  const GemmOperand la = *gemm_layout(m, k, a.strides()[1], a.strides()[2]);
  const GemmOperand lb = *gemm_layout(k, n, b.strides()[1], b.strides()[2]);
  auto op = [](const GemmOperand& l) { return l.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; };
  cublasHandle_t handle = cublas_for(out.device().index);
  RG_CUBLAS_CHECK(gemm(handle, op(lb), op(la), blas_int(n, "N"), blas_int(m, "M"), blas_int(k, "K"), in_ptr<T>(b),
                       blas_int(lb.ld, "ldb"), b.strides()[0], in_ptr<T>(a), blas_int(la.ld, "lda"), a.strides()[0],
                       out_ptr<T>(out), blas_int(n, "N"), m * n, blas_int(batch, "batch")));
}

// out (B, M, N) contiguous; one thread per output element, products summed in int64 in
// k order, as the CPU's loop. a_ix and b_ix map a's and b's row-major element numbers to
// their strided offsets.
template <class T>
__global__ void matmul_int_kernel(const T* a, const T* b, T* out, int64_t m, int64_t n, int64_t k, Indexer<1> a_ix,
                                  Indexer<1> b_ix, int64_t total) {
  RG_GRID_STRIDE_LOOP(i, total) {
    const int64_t col = i % n, row = (i / n) % m, batch = i / (m * n);
    int64_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      int64_t a_off[1], b_off[1];
      a_ix.offsets((batch * m + row) * k + p, a_off);
      b_ix.offsets((batch * k + p) * n + col, b_off);
      sum += static_cast<int64_t>(a[a_off[0]]) * static_cast<int64_t>(b[b_off[0]]);
    }
    out[i] = static_cast<T>(sum);
  }
}

template <class T>
void matmul_loops(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t m = out.size(1), n = out.size(2), k = a.size(2), total = out.numel();
  RG_CUDA_LAUNCH(matmul_int_kernel<T>, total, stream_for(out.device().index), in_ptr<T>(a), in_ptr<T>(b),
                 out_ptr<T>(out), m, n, k, indexer_of(a), indexer_of(b), total);
}

}  // namespace

void matmul_tensor(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (out.numel() == 0) return;
  if (a.size(2) == 0) return fill_tensor(out, 0.0);  // an empty sum; cuBLAS rejects k = 0
  dispatch(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>)
      matmul_cublas<T>(a, b, out);
    else
      matmul_loops<T>(a, b, out);
  });
}

}  // namespace rg::cuda
