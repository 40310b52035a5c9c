// bench_cuda: on a GPU, rg::matmul against a direct cublasSgemm call (n = 1024 ... 8192;
// target >= 0.8x), and an elementwise add against a device-to-device memcpy (bandwidth
// counting the bytes each moves). Prints ratios; exits 77 without a GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "ringgrad.h"

using namespace rg;

// Median seconds per call over `repeats` timed batches of `calls` calls (after a warm-up).
static double seconds_per_call(int repeats, int calls, const std::function<void()>& fn,
                               const std::function<void()>& sync) {
  fn();
  sync();
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    sync();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

static void bench_gemm(cublasHandle_t handle) {
  std::printf("\nGEMM float32 (row-major n x n)   rg::matmul TFLOP/s   cublasSgemm TFLOP/s   ratio\n");
  Generator gen(1);
  auto sync_rg = [] { cuda::synchronize(0); };
  auto sync_raw = [] { cudaDeviceSynchronize(); };
  for (int64_t n : {1024, 2048, 4096, 8192}) {
    Tensor a = rand({n, n}, gen, 0, 1, DType::float32, Device::cuda(0));
    Tensor b = rand({n, n}, gen, 0, 1, DType::float32, Device::cuda(0));
    Tensor c = Tensor::empty({n, n}, DType::float32, Device::cuda(0));
    int calls = n >= 4096 ? 3 : 10;
    double ours = seconds_per_call(5, calls, [&] { c = matmul(a, b); }, sync_rg);
    const float one = 1.0f, zero = 0.0f;
    const int ni = static_cast<int>(n);
    // Row-major C = A B is column-major C^T = B^T A^T: swap the operands, no transposes.
    double ref = seconds_per_call(5, calls, [&] {
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b.data<float>(), ni, a.data<float>(), ni, &zero,
                  c.data<float>(), ni);
    }, sync_raw);
    double flops = 2.0 * n * n * n;
    std::printf("  n = %-5ld                      %10.1f          %10.1f        %5.2f\n", static_cast<long>(n),
                flops / ours / 1e12, flops / ref / 1e12, ref / ours);
  }
}

static void bench_add() {
  const int64_t n = 64 << 20;  // 256 MiB per float32 operand
  Generator gen(2);
  Tensor a = rand({n}, gen, 0, 1, DType::float32, Device::cuda(0));
  Tensor b = rand({n}, gen, 0, 1, DType::float32, Device::cuda(0));
  Tensor c = Tensor::empty({n}, DType::float32, Device::cuda(0));
  double t_add = seconds_per_call(5, 10, [&] { binary_into(BinaryOp::add, a, b, c); }, [] { cuda::synchronize(0); });
  double t_copy = seconds_per_call(5, 10, [&] {
    cudaMemcpyAsync(c.raw_data(), a.raw_data(), n * 4, cudaMemcpyDeviceToDevice);
  }, [] { cudaDeviceSynchronize(); });
  double add_gbs = 3.0 * n * 4 / t_add / 1e9, copy_gbs = 2.0 * n * 4 / t_copy / 1e9;  // bytes moved
  std::printf("\nadd of %ld floats: %.0f GB/s   device memcpy: %.0f GB/s   ratio %.2f\n", static_cast<long>(n), add_gbs,
              copy_gbs, add_gbs / copy_gbs);
}

int main() {
  if (!cuda::is_available()) {
    std::printf("bench_cuda: skipped, %s\n", cuda::unavailable_reason().c_str());
    return 77;
  }
  std::printf("bench_cuda on %s\n", cuda::device_name(0).c_str());
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("bench_cuda: cublasCreate failed\n");
    return 1;
  }
  bench_gemm(handle);
  bench_add();
  auto stats = cuda::memory_stats(0);
  std::printf("\ncaching allocator: %lu system allocations, %lu cache hits, peak %.1f MiB\n",
              static_cast<unsigned long>(stats.system_allocs), static_cast<unsigned long>(stats.cache_hits),
              stats.peak_allocated / 1048576.0);
  cublasDestroy(handle);
  return 0;
}
