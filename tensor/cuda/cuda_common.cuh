// Shared by the CUDA backend's files: the checking macros, the per-device stream and
// cuBLAS handle, checked kernel launches, and Indexer, which turns a linear element
// index into the offsets of up to four strided operands inside a kernel.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <type_traits>

#include "tensor/backend.h"
#include "tensor/error.h"

// Every CUDA runtime and cuBLAS call goes through one of these: a failure throws rg::Error
// with the call's text, CUDA's message and the file:line of the call.
#define RG_CUDA_CHECK(call)                                                 \
  do {                                                                      \
    const cudaError_t rg_status_ = (call);                                  \
    if (rg_status_ != cudaSuccess)                                          \
      RG_THROW("cuda: ", #call, " failed: ", cudaGetErrorString(rg_status_)); \
  } while (0)

#define RG_CUBLAS_CHECK(call)                                                     \
  do {                                                                            \
    const cublasStatus_t rg_status_ = (call);                                     \
    if (rg_status_ != CUBLAS_STATUS_SUCCESS)                                      \
      RG_THROW("cublas: ", #call, " failed: ", cublasGetStatusString(rg_status_)); \
  } while (0)

// A checked kernel launch of `grid` blocks of kBlock threads:
//   RG_CUDA_LAUNCH_GRID((pool_kernel<T>), grid, stream, args...);
// Template kernels with several arguments go in parentheses so their commas do not split
// the macro arguments. RG_CUDA_LAUNCH covers `n` elements with a grid-stride loop.
#define RG_CUDA_LAUNCH_GRID(kernel, grid, stream, ...) \
  ::rg::cuda::launch({#kernel, __FILE__, __LINE__}, kernel, grid, ::rg::cuda::kBlock, stream, __VA_ARGS__)
#define RG_CUDA_LAUNCH(kernel, n, stream, ...) RG_CUDA_LAUNCH_GRID(kernel, ::rg::cuda::grid_for(n), stream, __VA_ARGS__)

// The loop every elementwise kernel runs: element i for i = thread, thread + grid size, ...
#define RG_GRID_STRIDE_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)

namespace rg::cuda {

inline constexpr int kBlock = 256;
inline constexpr int kMaxDims = 8;

// Enough blocks to cover n elements, capped: kernels loop with a grid stride, and more
// than ~64k resident blocks buys nothing.
inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

struct LaunchSite {
  const char* kernel;
  const char* file;
  int line;
};

template <class... Params, class... Args>
void launch(LaunchSite site, void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
  kernel<<<grid, block, 0, stream>>>(args...);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    detail::throw_error(site.file, site.line,
                        detail::concat("cuda: launch of ", site.kernel, " failed: ", cudaGetErrorString(status)));
}

// ---- per-device state, owned by the backend (cuda_backend.cu) ----
// The synchronisation rule: every op on cuda:i is enqueued on device i's one stream, so
// ops on a device run in program order and the caching allocator can hand a freed block
// to the next op at once. The host waits only when data comes back to it (copies to the
// host, rg::cuda::synchronize). Cross-device copies order the two streams with events.
// Both calls also make `device` current for the calling thread.
cudaStream_t stream_for(int device);
cublasHandle_t cublas_for(int device);

// Device scratch memory from the device's caching allocator, returned to it (not to the
// driver) on destruction; later work on the same stream may then reuse it safely.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t nbytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }

 private:
  int device_;
  size_t nbytes_;
  void* data_;
};

// Shape and the strides of N operands (operand 0 is the output by convention), with dims
// merged where every operand is contiguous across them, so the common dense case costs
// one division per dim left. Passed to kernels by value.
template <int N>
struct Indexer {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  __host__ __device__ void offsets(int64_t i, int64_t (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t q = i / shape[d];
      const int64_t coord = i - q * shape[d];
      for (int k = 0; k < N; ++k) out[k] += coord * strides[k][d];
      i = q;
    }
  }
};

// Builds an Indexer for `shape` and the operands' strides (all of rank shape.size()).
template <int N>
Indexer<N> make_indexer(const Shape& shape, const std::array<const Shape*, N>& strides) {
  Indexer<N> ix;
  // Walk from the innermost dim out, merging a dim into the group inside it when every
  // operand steps over that group exactly; size-1 dims are dropped.
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    bool merge = ix.ndim > 0;
    for (int k = 0; k < N && merge; ++k)
      merge = (*strides[k])[d] == ix.strides[k][ix.ndim - 1] * ix.shape[ix.ndim - 1];
    if (merge) {
      ix.shape[ix.ndim - 1] *= shape[d];
      continue;
    }
    RG_CHECK(ix.ndim < kMaxDims, "cuda: tensors of shape ", shape_str(shape), " have more than ", kMaxDims,
             " dims that cannot be merged; make them contiguous first");
    ix.shape[ix.ndim] = shape[d];
    for (int k = 0; k < N; ++k) ix.strides[k][ix.ndim] = (*strides[k])[d];
    ++ix.ndim;
  }
  // Collected innermost first; kernels expect outermost first.
  for (int a = 0, b = ix.ndim - 1; a < b; ++a, --b) {
    std::swap(ix.shape[a], ix.shape[b]);
    for (int k = 0; k < N; ++k) std::swap(ix.strides[k][a], ix.strides[k][b]);
  }
  return ix;
}

// The same for tensors of one shape: indexer_of(out, in0, in1).
template <class... Tensors>
Indexer<1 + sizeof...(Tensors)> indexer_of(const Tensor& first, const Tensors&... rest) {
  return make_indexer<1 + sizeof...(rest)>(first.shape(), {&first.strides(), &rest.strides()...});
}

// Typed pointers to a tensor's first element (offset applied).
template <class T>
const T* in_ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <class T>
T* out_ptr(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// What the CPU's std:: math computes in for T: float for float, double otherwise
// (std::exp(int) promotes to double).
template <class T>
using MathType = std::conditional_t<std::is_same_v<T, float>, float, double>;

// NaN-propagating max/min, as PyTorch's maximum/minimum and the CPU kernels.
template <class T>
__host__ __device__ T nan_max(T a, T b) {
  return (a != a || a > b) ? a : b;
}
template <class T>
__host__ __device__ T nan_min(T a, T b) {
  return (a != a || a < b) ? a : b;
}

// k * y without letting nvcc fuse it into a following add: the CPU rounds the product and
// the sum separately, and an FMA would change the last bit.
template <class T>
__device__ T mul_rn(T k, T y) {
  if constexpr (std::is_same_v<T, float>) return __fmul_rn(k, y);
  else if constexpr (std::is_same_v<T, double>) return __dmul_rn(k, y);
  else return static_cast<T>(k * y);
}

}  // namespace rg::cuda
