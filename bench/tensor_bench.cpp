// bench_tensor: rg::matmul against a direct cblas_sgemm call (same thread count for
// both), and a large contiguous add against memcpy of the same bytes. Prints ratios,
// which stay meaningful on a noisy machine where absolute times do not.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ringgrad.h"

using namespace rg;
using Clock = std::chrono::steady_clock;

// Median seconds of `repeats` runs of fn (after one warm-up run).
static double median_seconds(int repeats, const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = Clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

static void bench_matmul(int threads) {
  set_num_threads(threads);
  std::printf("\nmatmul, %d thread(s)          rg::matmul   cblas_sgemm   ratio\n", threads);
  Generator gen(1);
  for (int64_t n : {256, 512, 1024, 2048}) {
    Tensor a = rand({n, n}, gen), b = rand({n, n}, gen), c = Tensor::empty({n, n});
    int repeats = n >= 2048 ? 3 : 7;
    double flops = 2.0 * n * n * n;
    double ours = median_seconds(repeats, [&] { c = matmul(a, b); });
    // The reference: OpenBLAS with its own threads, the same count.
    openblas_set_num_threads(threads);
    double ref = median_seconds(repeats, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n,
                  0.0f, c.data<float>(), n);
    });
    openblas_set_num_threads(1);
    std::printf("  n = %-5ld GFLOP/s        %9.1f   %11.1f   %5.2f\n", static_cast<long>(n), flops / ours / 1e9,
                flops / ref / 1e9, ref / ours);
  }
}

static void bench_add() {
  const int64_t n = 16 << 20;  // 64 MiB per float32 operand
  Generator gen(2);
  Tensor a = rand({n}, gen), b = rand({n}, gen), c = Tensor::empty({n});
  std::vector<char> src(n * 4), dst(n * 4);
  std::printf("\ncontiguous add of %ld floats (%d thread(s))\n", static_cast<long>(n), get_num_threads());
  double t_add = median_seconds(7, [&] { binary_into(BinaryOp::add, a, b, c); });
  double t_copy = median_seconds(7, [&] { std::memcpy(dst.data(), src.data(), src.size()); });
  // add moves 3 arrays (2 reads, 1 write); memcpy moves 2 (1 read, 1 write).
  double add_gbs = 3.0 * n * 4 / t_add / 1e9, copy_gbs = 2.0 * n * 4 / t_copy / 1e9;
  std::printf("  add: %.1f GB/s   memcpy: %.1f GB/s   ratio %.2f\n", add_gbs, copy_gbs, add_gbs / copy_gbs);
}

// The sgemm roofline the training benchmarks quote: OpenBLAS's best GFLOP/s on square
// float32 products at `threads` threads (bench/run_vs_libtorch.sh reads this line).
static void print_sgemm_roofline(int threads) {
  openblas_set_num_threads(threads);
  Generator gen(1);
  double best = 0;
  for (int64_t n : {512, 1024, 2048}) {
    Tensor a = rand({n, n}, gen), b = rand({n, n}, gen), c = Tensor::empty({n, n});
    const double seconds = median_seconds(n >= 2048 ? 3 : 7, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n,
                  0.0f, c.data<float>(), n);
    });
    best = std::max(best, 2.0 * n * n * n / seconds / 1e9);
  }
  openblas_set_num_threads(1);
  std::printf("sgemm_roofline threads=%d gflops=%.1f\n", threads, best);
}

// bench_tensor [--sgemm-roofline]
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--sgemm-roofline") {
    for (int threads : {1, 2}) print_sgemm_roofline(threads);
    return 0;
  }
  std::printf("bench_tensor: rg::matmul vs OpenBLAS, add vs memcpy (median of repeats)\n");
  for (int threads : {1, 2}) bench_matmul(threads);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    bench_add();
  }
  return 0;
}
