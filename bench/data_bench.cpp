// bench_data: one full pass over Fashion-MNIST's 60k training images at batch 128, shuffled
// and normalised, with 0 and 2 loader workers. Prints the one-off decode time and batches/s,
// to set beside a training step's time: the loader must never be what a step waits for.
#include <chrono>
#include <cstdio>
#include <exception>

#include "data/data.h"

using namespace rg;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Batches per second of one epoch; the checksum keeps the work from being optimised away.
static void bench_pass(const data::Dataset& train, int num_workers) {
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
}

int main() {
  try {
    const auto start = Clock::now();
    data::FashionMNIST train({.split = data::Split::Train});
    std::printf("bench_data: Fashion-MNIST train, %lld images, decoded from .gz in %.3f s\n",
                static_cast<long long>(train.size()), seconds_since(start));
    std::printf("full pass, batch 128, shuffle + normalise:\n");
    for (int workers : {0, 2}) bench_pass(train, workers);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_data: %s\n", e.what());
    return 1;
  }
}
