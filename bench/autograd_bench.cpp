// bench_autograd: forward vs backward time of a 784-256-128-10 MLP at batch 64 (one
// thread, median of repeats). Backward does two GEMMs per layer to forward's one, so a
// ratio near 2 means the engine and the backward closures add little of their own; also
// reports the allocator traffic of a warm training step (system allocations should be 0).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "nn/layers.h"
#include "nn/loss.h"
#include "tensor/backend.h"
#include "tensor/thread_pool.h"

using namespace rg;

namespace {

double median_seconds(int repeats, const std::function<void()>& fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[repeats / 2];
}

}  // namespace

int main() {
  set_num_threads(1);
  nn::Sequential model(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, 10));
  Generator gen(0);
  Tensor x = randn({64, 784}, gen);
  Tensor y = randint(0, 10, {64}, gen);
  nn::CrossEntropyLoss loss_fn;
  const int repeats = 301;

  // Forward alone (graph recorded, then dropped), and forward + backward; backward = the difference.
  auto forward = [&] { return loss_fn(model(x), y); };
  auto step = [&] {
    model.zero_grad();
    forward().backward();
  };
  for (int i = 0; i < 20; ++i) step();  // warm the caches and the allocator
  double t_forward = median_seconds(repeats, [&] { forward(); });
  double t_step = median_seconds(repeats, step);
  double t_backward = t_step - t_forward;

  AllocatorStats before = backend_for(DeviceType::cpu).memory_stats(0);
  for (int i = 0; i < 10; ++i) step();
  AllocatorStats after = backend_for(DeviceType::cpu).memory_stats(0);

  std::printf("bench_autograd: MLP 784-256-128-10, batch 64, 1 thread, median of %d\n", repeats);
  std::printf("  forward            %8.1f us\n", t_forward * 1e6);
  std::printf("  forward + backward %8.1f us\n", t_step * 1e6);
  std::printf("  backward           %8.1f us   backward / forward = %.2f\n", t_backward * 1e6, t_backward / t_forward);
  std::printf("  per warm step: %.1f system allocations, %.1f cached allocations\n",
              static_cast<double>(after.system_allocs - before.system_allocs) / 10,
              static_cast<double>(after.cache_hits - before.cache_hits) / 10);
  return 0;
}
