// bench_data: one full pass over Fashion-MNIST's 60k training images at batch 128, shuffled
// and normalised, with 0 and 2 loader workers. Prints the one-off decode time and batches/s
// beside the time of the smallest training step a demo takes (an MLP 784-256-10's five
// matmuls at batch 128): the loader must never be what a step waits for.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <vector>

#include "data/data.h"
#include "tensor/ops.h"

using namespace rg;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Seconds for the five matmuls of an MLP 784-256-10's forward and backward at batch 128,
// the lower bound of the cheapest training step in the demos (median of 20).
static double mlp_step_seconds() {
  Generator gen(0);
  const Tensor x = rand({128, 784}, gen), w1 = rand({784, 256}, gen), w2 = rand({256, 10}, gen);
  std::vector<double> times;
  for (int i = 0; i < 21; ++i) {
    const auto start = Clock::now();
    const Tensor h = relu(matmul(x, w1)), out = matmul(h, w2);        // forward
    const Tensor dw2 = matmul(h.t(), out), dh = matmul(out, w2.t());  // backward, loss gradient ~ out
    const Tensor dw1 = matmul(x.t(), dh);
    if (i > 0) times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Seconds per batch of one epoch; the checksum keeps the work from being optimised away.
static double bench_pass(const data::Dataset& train, int num_workers) {
  data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .num_workers = num_workers, .seed = 1});
  double checksum = 0;
  int64_t batches = 0;
  const auto start = Clock::now();
  for (auto& [x, y] : loader) {
    checksum += x.data<float>()[0] + static_cast<double>(y.data<int64_t>()[0]);
    ++batches;
  }
  const double s = seconds_since(start);
  std::printf("  num_workers %d: %5lld batches in %6.3f s = %8.0f batches/s (%6.1f us/batch)  [checksum %.1f]\n",
              num_workers, static_cast<long long>(batches), s, batches / s, 1e6 * s / batches, checksum);
  return s / batches;
}

int main() {
  try {
    const auto start = Clock::now();
    data::FashionMNIST train({.split = data::Split::Train});
    std::printf("bench_data: Fashion-MNIST train, %lld images, decoded from .gz in %.3f s\n",
                static_cast<long long>(train.size()), seconds_since(start));
    std::printf("full pass, batch 128, shuffle + normalise:\n");
    const double step = mlp_step_seconds();
    for (int workers : {0, 2}) {
      const double batch = bench_pass(train, workers);
      std::printf("    = %.1f%% of an MLP 784-256-10 step's matmuls (%.1f us)\n", 100.0 * batch / step, 1e6 * step);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_data: %s\n", e.what());
    return 1;
  }
}
