// The CUDA Backend: per-device state (stream, cuBLAS handle, caching allocator), the
// memory primitives, and the plugin's exported entry points. The compute primitives
// live in one file per family (copy.cu, elementwise.cu, ...), declared in cuda_ops.h.
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "tensor/cuda/cuda_common.cuh"
#include "tensor/cuda/cuda_ops.h"
#include "tensor/cuda/plugin_api.h"

namespace rg::cuda {
namespace {

// Lazily created on first use of the device, so a process that only uses cuda:0 never
// creates a context on the other GPUs.
// The cuBLAS handle has its own flag: creating it costs tens of milliseconds, which a
// program that only copies data should not pay.
struct DeviceState {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  std::once_flag cublas_once;
  cublasHandle_t cublas = nullptr;
};

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error; the count stays 0
    return 0;
  }
  return count;
}

void* device_malloc(int device, size_t nbytes) {
  RG_CUDA_CHECK(cudaSetDevice(device));
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, nbytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // out of memory is not sticky: clear it and let the allocator retry
    return nullptr;
  }
  RG_CUDA_CHECK(status);
  return ptr;
}

void device_free(int device, void* ptr) {
  RG_CUDA_CHECK(cudaSetDevice(device));
  RG_CUDA_CHECK(cudaFree(ptr));
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() : devices_(static_cast<size_t>(visible_devices())) {
    for (auto& state : devices_) state = std::make_unique<DeviceState>();
  }

  const char* name() const override { return "cuda"; }

  // The device's state, created on first use; makes no CUDA call after that, so freeing
  // memory (which lands here) never touches the runtime.
  DeviceState& state(int device) {
    RG_CHECK(device >= 0 && device < static_cast<int>(devices_.size()), "cuda: no device cuda:", device, " (",
             devices_.size(), " visible)");
    DeviceState& s = *devices_[static_cast<size_t>(device)];
    std::call_once(s.once, [&] {
      RG_CUDA_CHECK(cudaSetDevice(device));
      // Non-blocking: our stream must not serialise with the legacy default stream,
      // which libraries loaded beside us may use.
      RG_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      s.allocator = std::make_unique<CachingAllocator>([device](size_t n) { return device_malloc(device, n); },
                                                       [device](void* p) { device_free(device, p); });
    });
    return s;
  }

  // ---- memory ----
  void* allocate(size_t nbytes, int device) override { return state(device).allocator->allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes, int device) override {
    state(device).allocator->deallocate(ptr, nbytes);
  }
  void synchronize(int device) override { RG_CUDA_CHECK(cudaStreamSynchronize(state(device).stream)); }
  AllocatorStats memory_stats(int device) override { return state(device).allocator->stats(); }
  void empty_cache(int device) override {
    // Blocks in the cache may still be read by queued kernels; cudaFree would wait for
    // them anyway, but finishing the stream first makes that explicit.
    synchronize(device);
    state(device).allocator->empty_cache();
  }

  // ---- data movement ----
  void copy(const Tensor& src, const Tensor& dst) override { copy_tensor(src, dst); }
  void fill(const Tensor& dst, double value) override { fill_tensor(dst, value); }
  void arange(const Tensor& dst, double start, double step) override { arange_tensor(dst, start, step); }
  void random(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b) override {
    random_tensor(dst, kind, seed, offset, a, b);
  }

  // ---- elementwise ----
  void unary(UnaryOp op, const Tensor& src, const Tensor& dst) override { unary_tensor(op, src, dst); }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha) override {
    binary_tensor(op, a, b, dst, alpha);
  }
  void binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) override {
    binary_scalar_tensor(op, a, scalar, dst);
  }
  void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst) override {
    where_tensor(cond, a, b, dst);
  }
  void clamp(const Tensor& src, const Tensor& dst, double low, double high) override {
    clamp_tensor(src, dst, low, high);
  }

  // ---- reductions ----
  void reduce(DimReduction op, const Tensor& src, const Tensor& dst) override { reduce_tensor(op, src, dst); }
  void softmax(const Tensor& src, const Tensor& dst, int64_t dim, bool log) override {
    softmax_tensor(src, dst, dim, log);
  }

  // ---- linear algebra ----
  void matmul(const Tensor& a, const Tensor& b, const Tensor& out) override { matmul_tensor(a, b, out); }

  // ---- convolution and pooling ----
  void im2col(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g) override { im2col_tensor(x, cols, g); }
  void col2im(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g) override { col2im_tensor(cols, x, g); }
  void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g) override {
    max_pool2d_tensor(x, out, indices, g);
  }
  void avg_pool2d(const Tensor& x, const Tensor& out, const Conv2dGeometry& g) override {
    avg_pool2d_tensor(x, out, g);
  }
  void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g) override {
    avg_pool2d_backward_tensor(grad_out, grad_in, g);
  }

  // ---- indexing ----
  void index_select(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) override {
    index_select_tensor(src, dim, index, dst);
  }
  void gather(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst) override {
    gather_tensor(src, dim, index, dst);
  }
  void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src) override {
    scatter_add_tensor(dst, dim, index, src);
  }

 private:
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

// Created on first use and deliberately never destroyed: at process exit the CUDA runtime
// may already be torn down, and freeing device memory then fails; the driver reclaims it.
CudaBackend& backend() {
  static CudaBackend* instance = new CudaBackend();
  return *instance;
}

int api_device_count(char* reason, size_t capacity) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    std::snprintf(reason, capacity, "%s", cudaGetErrorString(status));
    return 0;
  }
  std::snprintf(reason, capacity, "%s", count == 0 ? "0 devices" : "");
  return count;
}

bool api_device_name(int device, char* out, size_t capacity) {
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, device);
  std::snprintf(out, capacity, "%s", status == cudaSuccess ? prop.name : cudaGetErrorString(status));
  return status == cudaSuccess;
}

}  // namespace

cudaStream_t stream_for(int device) {
  cudaStream_t stream = backend().state(device).stream;
  RG_CUDA_CHECK(cudaSetDevice(device));
  return stream;
}

cublasHandle_t cublas_for(int device) {
  DeviceState& s = backend().state(device);
  RG_CUDA_CHECK(cudaSetDevice(device));
  std::call_once(s.cublas_once, [&] {
    RG_CUBLAS_CHECK(cublasCreate(&s.cublas));
    RG_CUBLAS_CHECK(cublasSetStream(s.cublas, s.stream));
  });
  return s.cublas;
}

DeviceBuffer::DeviceBuffer(int device, size_t nbytes)
    : device_(device), nbytes_(nbytes), data_(backend().allocate(nbytes, device)) {}

DeviceBuffer::~DeviceBuffer() { backend().deallocate(data_, nbytes_, device_); }

}  // namespace rg::cuda

extern "C" {

__attribute__((visibility("default"))) rg::Backend* ringgrad_cuda_backend() { return &rg::cuda::backend(); }

__attribute__((visibility("default"))) const rg::cuda::PluginApi* ringgrad_cuda_api() {
  static const rg::cuda::PluginApi api{rg::cuda::api_device_count, rg::cuda::api_device_name};
  return &api;
}

}  // extern "C"
