// bench_data_parallel: training-step time of ringgrad-train's MLP at one global batch,
// through DataParallel over N virtual CPU devices and through DistributedDataParallel on
// the local backend with N ranks (the reference), and their ratio; plus the bytes device 0
// receives per DataParallel step (claim C12).
//   bench_data_parallel [--workers N (2)] [--batch B (128)] [--steps S (30)]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ringgrad.h"

using namespace rg;

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWarmup = 3;

struct Config {
  int workers = 2;
  int64_t batch = 128;
  int steps = 30;
};

struct Data {
  Tensor x, y;
};

Data make_data(int64_t batch) {
  Generator gen(1);
  return {randn({batch, 1, 28, 28}, gen), randint(0, 10, {batch}, gen)};
}

// The median seconds of one step after a warm-up: robust to other processes on a shared machine.
double time_steps(int steps, const std::function<void()>& step) {
  for (int i = 0; i < kWarmup; ++i) step();
  std::vector<double> seconds;
  for (int i = 0; i < steps; ++i) {
    const auto start = Clock::now();
    step();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + steps / 2, seconds.end());
  return seconds[steps / 2];
}

std::shared_ptr<nn::Module> make_mlp() {
  default_generator().set_state(0, 0);
  return models::make_model("mlp", {});  // MNIST-shaped: 1x28x28, 10 classes
}

double data_parallel_step(const Config& c, const Data& data, parallel::DataParallelStats& stats) {
  auto model = make_mlp();
  std::vector<Device> devices;
  for (int i = 0; i < c.workers; ++i) devices.push_back(Device::cpu(i));
  parallel::DataParallel dp(model, devices);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(dp(data.x), data.y).backward();
    opt.step();
  };
  dp.reset_stats();
  const double seconds = time_steps(c.steps, step);
  stats = dp.stats();
  return seconds;
}

// Every rank trains on its share of the batch; rank 0's median step (the all-reduce keeps
// the ranks in step).
double ddp_step(const Config& c, const Data& data) {
  auto initial = make_mlp();
  const int64_t local = c.batch / c.workers;
  double seconds = 0;
  parallel::run_local_world(c.workers, [&](std::shared_ptr<parallel::ProcessGroup> pg) {
    auto model = initial->clone();
    parallel::DistributedDataParallel ddp(model, pg);
    optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
    Tensor x = data.x.narrow(0, pg->rank() * local, local);
    Tensor y = data.y.narrow(0, pg->rank() * local, local);
    auto step = [&] {
      opt.zero_grad();
      cross_entropy(ddp(x), y).backward();
      opt.step();
    };
    const double mine = time_steps(c.steps, step);
    if (pg->rank() == 0) seconds = mine;
  });
  return seconds;
}

Config parse(int argc, char** argv) {
  Config c;
  CLI::App app{"bench_data_parallel: DataParallel against DDP on the same MLP steps"};
  app.add_option("--workers", c.workers, "devices (DataParallel) and ranks (DDP)")->check(CLI::Range(1, 64));
  app.add_option("--batch", c.batch, "the global batch, split over the workers")->check(CLI::Range(1, 1 << 20));
  app.add_option("--steps", c.steps, "timed steps")->check(CLI::Range(1, 1000000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);  // 2: a bad flag, as ringgrad-train
  }
  if (c.batch % c.workers != 0) {
    std::fprintf(stderr, "error: --batch %lld must be a multiple of --workers %d\n", static_cast<long long>(c.batch),
                 c.workers);
    std::exit(2);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Config c = parse(argc, argv);
  const Data data = make_data(c.batch);
  parallel::DataParallelStats stats;
  const double dp = data_parallel_step(c, data, stats);
  const double ddp = ddp_step(c, data);
  const double steps = static_cast<double>(stats.forwards);
  std::printf("mlp, global batch %lld, %d workers, %d steps, %d cpu threads\n", static_cast<long long>(c.batch),
              c.workers, c.steps, get_num_threads());
  std::printf("DataParallel (cpu:0..cpu:%d)   %8.3f ms/step (median)\n", c.workers - 1, dp * 1e3);
  std::printf("DDP (local, %d ranks)          %8.3f ms/step (median)\n", c.workers, ddp * 1e3);
  std::printf("ratio DataParallel / DDP       %8.2f\n", dp / ddp);
  // Phase totals include the warm-up steps; per step they are averages, the step times medians.
  std::printf("DataParallel per step, ms: scatter %.3f  replicate %.3f  apply %.3f  gather %.3f  backward %.3f\n",
              stats.scatter.seconds / steps * 1e3, stats.replicate.seconds / steps * 1e3,
              stats.apply.seconds / steps * 1e3, stats.gather.seconds / steps * 1e3,
              stats.backward_seconds / steps * 1e3);
  std::printf("device 0 per step: %.1f KiB in (outputs %.1f, gradients %.1f), %.1f KiB out\n",
              stats.devices[0].bytes_in / steps / 1024, stats.gather.bytes / steps / 1024,
              stats.reduce.bytes / steps / 1024, stats.devices[0].bytes_out / steps / 1024);
  return 0;
}
