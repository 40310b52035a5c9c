// bench_ddp_scaling: samples/s of DistributedDataParallel training (forward, cross-entropy,
// backward with the bucketed all-reduce, SGD with momentum) of ringgrad-train's MLP and CNN
// on synthetic Fashion-MNIST-shaped batches (1x28x28, 10 classes), with 1 rank and with N
// ranks of one thread each at the same per-rank batch, and the speedup. The 1-rank figure
// runs the same code (DDP over a group of one), so the only difference is the other ranks.
// Each figure is the median of --reps repetitions, the 1-rank and N-rank runs interleaved so
// load from other processes hits both alike. bench/run_ddp_scaling.sh runs it next to
// PyTorch DDP (bench/torch_ddp.py) and prints the ratio.
// On a loaded machine the wall-clock speedup says more about the other processes than
// about DDP, so the table also gives the CPU-time speedup N^2 * cpu(1) / cpu(N), cpu(k)
// being the CPU seconds per step of all k ranks together (compute and communication
// threads): the speedup N idle cores would give if no rank ever waited for another. (With
// Linux's sched_autogroup, a busy machine gives one session about one core however many
// threads it runs; mpirun starts each rank in its own session, which is why the local and
// mpi backends' wall-clock speedups differ under load.)
//   build/bin/bench_ddp_scaling [--model mlp|cnn|both] [--batch 64] [--ranks 2]
//   mpirun -n 2 build/bin/bench_ddp_scaling   (backend mpi under mpirun; the 1-rank figure
//                                              is rank 0 alone in a local group of one)
// Options: --steps S (per model: mlp 300, cnn 30), --warmup W (5), --reps R (5),
// --threads T per rank (1), --backend local|mpi.
// The last lines, one per model, are machine-readable:
//   ddp_scaling model=mlp batch=64 ranks=2 rate1=<samples/s> rateN=<samples/s> speedup=<x> cpu_speedup=<x>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <time.h>

#include "ringgrad.h"

using namespace rg;

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string model = "both";
  std::string backend;  // empty: mpi under mpirun, else local
  int64_t batch = 64;
  int ranks = 2;     // local backend only; under mpi, the size of the job
  int steps = 0;     // 0: the model's default
  int warmup = 5;
  int reps = 5;
  int threads = 1;
};

int default_steps(const std::string& model) { return model == "cnn" ? 30 : 300; }

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// CPU seconds of the whole process: every rank thread and communication thread of a local
// world, or this rank's process under mpi.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The initial model, made once per measurement on the calling thread: default_generator()
// is shared, so rank threads must not draw from it at the same time. DDP broadcasts rank
// 0's values at construction anyway.
std::shared_ptr<nn::Module> make_initial(const std::string& name) {
  default_generator().set_state(0, 0);
  return models::make_model(name, {});  // MNIST-shaped: 1x28x28, 10 classes
}

struct Timing {
  double seconds = 0;      // wall clock, slowest rank
  double cpu_seconds = 0;  // all ranks together
};

// Times `steps` DDP training steps on `group`, after `warmup` steps and a barrier. Every
// rank trains on its own fixed synthetic batch.
Timing time_ddp(const std::shared_ptr<parallel::ProcessGroup>& group, const std::shared_ptr<nn::Module>& initial,
                const Config& c, int steps) {
  parallel::ProcessGroup& pg = *group;
  auto model = initial->clone();
  parallel::DistributedDataParallel ddp(model, group);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  Generator gen(1 + static_cast<uint64_t>(pg.rank()));
  const Tensor x = randn({c.batch, 1, 28, 28}, gen);
  const Tensor y = randint(0, 10, {c.batch}, gen);
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(ddp(x), y).backward();
    opt.step();
  };
  for (int i = 0; i < c.warmup; ++i) step();
  pg.barrier();
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  Tensor seconds = Tensor::full({1}, std::chrono::duration<double>(Clock::now() - start).count(), DType::float64);
  Tensor cpu = Tensor::full({1}, process_cpu_seconds() - cpu_start, DType::float64);
  pg.all_reduce(seconds, {.op = parallel::ReduceOp::max});
  // A local world is one process: every rank measured (about) the same total.
  pg.all_reduce(cpu, {.op = pg.backend() == "local" ? parallel::ReduceOp::max : parallel::ReduceOp::sum});
  return {seconds.item(), cpu.item()};
}

struct Rate {
  double samples_per_s = 0;
  double cpu_per_step = 0;  // CPU seconds per step, all ranks
};

Rate rate_of(const Timing& t, int64_t batch, int ranks, int steps) {
  return {static_cast<double>(batch) * ranks * steps / t.seconds, t.cpu_seconds / steps};
}

// One measurement on a local world of `world` ranks, each with c.threads threads.
Rate local_rate(int world, const std::string& name, const Config& c, int steps) {
  const auto initial = make_initial(name);
  Timing timing;
  parallel::run_local_world(world, [&](std::shared_ptr<parallel::ProcessGroup> pg) {
    set_num_threads(c.threads);  // run_local_world gives each rank cores/world threads
    const Timing t = time_ddp(pg, initial, c, steps);
    if (pg->rank() == 0) timing = t;
  });
  return rate_of(timing, c.batch, world, steps);
}

struct Result {
  std::string model;
  int steps = 0;
  double rate1 = 0, rate_n = 0;  // samples/s, medians
  double cpu1 = 0, cpu_n = 0;    // CPU seconds per step of all ranks, medians
};

Result summarise(const std::string& name, int steps, const std::vector<Rate>& one, const std::vector<Rate>& many) {
  auto med = [](const std::vector<Rate>& rates, double Rate::*field) {
    std::vector<double> v;
    for (const Rate& r : rates) v.push_back(r.*field);
    return v.empty() ? 0.0 : median(v);
  };
  return {name,
          steps,
          med(one, &Rate::samples_per_s),
          med(many, &Rate::samples_per_s),
          med(one, &Rate::cpu_per_step),
          med(many, &Rate::cpu_per_step)};
}

// Local backend: every repetition runs a world of 1 then a world of c.ranks.
Result measure_local(const std::string& name, const Config& c) {
  const int steps = c.steps > 0 ? c.steps : default_steps(name);
  std::vector<Rate> one, many;
  for (int rep = 0; rep < c.reps; ++rep) {
    one.push_back(local_rate(1, name, c, steps));
    many.push_back(local_rate(c.ranks, name, c, steps));
  }
  return summarise(name, steps, one, many);
}

// mpi backend: the 1-rank figure is rank 0 alone in a local group of one (the other ranks
// wait at a barrier, which sleeps between polls), then all ranks of the job together.
Result measure_mpi(const std::shared_ptr<parallel::ProcessGroup>& world,
                   const std::shared_ptr<parallel::ProcessGroup>& alone, const std::string& name, const Config& c) {
  const int steps = c.steps > 0 ? c.steps : default_steps(name);
  std::vector<Rate> one, many;
  for (int rep = 0; rep < c.reps; ++rep) {
    const auto initial = make_initial(name);
    if (world->rank() == 0) one.push_back(rate_of(time_ddp(alone, initial, c, steps), c.batch, 1, steps));
    world->barrier();
    many.push_back(rate_of(time_ddp(world, initial, c, steps), c.batch, world->size(), steps));
  }
  return summarise(name, steps, one, many);
}

Config parse(int argc, char** argv) {
  Config c;
  c.backend = std::getenv("OMPI_COMM_WORLD_SIZE") ? "mpi" : "local";
  CLI::App app{"bench_ddp_scaling: DDP samples/s with 1 and N ranks, and the speedup"};
  app.add_option("--model", c.model, "mlp, cnn or both")->check(CLI::IsMember({"mlp", "cnn", "both"}));
  app.add_option("--backend", c.backend, "local (ranks as threads) or mpi (under mpirun)")
      ->check(CLI::IsMember({"local", "mpi"}));
  app.add_option("--batch", c.batch, "samples per rank per step")->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks", c.ranks, "ranks of the local backend")->check(CLI::Range(1, 64));
  app.add_option("--steps", c.steps, "timed steps per measurement (0: mlp 300, cnn 30)")->check(CLI::Range(0, 1000000));
  app.add_option("--warmup", c.warmup, "untimed steps before each measurement")->check(CLI::Range(0, 1000000));
  app.add_option("--reps", c.reps, "repetitions; each figure is their median")->check(CLI::Range(1, 1000));
  app.add_option("--threads", c.threads, "CPU threads per rank")->check(CLI::Range(1, 256));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);  // 2: a bad flag, as ringgrad-train
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const Config c = parse(argc, argv);
  std::vector<std::string> models;
  if (c.model == "both") models = {"mlp", "cnn"};
  else models = {c.model};

  std::shared_ptr<parallel::ProcessGroup> world, alone;
  int n = c.ranks;
  if (c.backend == "mpi") {
    world = parallel::init_process_group({.backend = "mpi"}, argc, argv);
    set_num_threads(c.threads);
    if (world->rank() == 0) alone = parallel::init_process_group({.backend = "local"});
    n = world->size();
  }
  const bool printer = !world || world->rank() == 0;
  if (printer)
    std::printf("DDP training throughput, %s backend, 1 vs %d ranks, %d thread(s) per rank, batch %lld per rank, "
                "median of %d interleaved repetitions; load average before: %s\n",
                c.backend.c_str(), n, c.threads, static_cast<long long>(c.batch), c.reps, load_average().c_str());

  std::vector<Result> results;
  for (const auto& name : models)
    results.push_back(world ? measure_mpi(world, alone, name, c) : measure_local(name, c));
  if (!printer) return 0;

  const std::string many = std::to_string(n) + " ranks (samples/s)";
  auto cpu_speedup = [n](const Result& r) { return static_cast<double>(n) * n * r.cpu1 / r.cpu_n; };
  report::Table table({"model", "batch/rank", "steps", "1 rank (samples/s)", many, "speedup", "cpu ms/step 1",
                       "cpu ms/step " + std::to_string(n), "cpu-time speedup"});
  for (const auto& r : results)
    table.add_row({r.model, std::to_string(c.batch), std::to_string(r.steps), report::Table::number(r.rate1, 0),
                   report::Table::number(r.rate_n, 0), report::Table::number(r.rate_n / r.rate1, 2),
                   report::Table::number(r.cpu1 * 1e3, 2), report::Table::number(r.cpu_n * 1e3, 2),
                   report::Table::number(cpu_speedup(r), 2)});
  table.print(std::cout);
  std::printf("cpu ms/step: CPU time of all ranks per step; cpu-time speedup = %d^2 * cpu(1) / cpu(%d), the "
              "speedup on %d idle cores if no rank waited for another\n", n, n, n);
  std::printf("load average after: %s\n", load_average().c_str());
  for (const auto& r : results)
    std::printf("ddp_scaling model=%s batch=%lld ranks=%d rate1=%.0f rateN=%.0f speedup=%.3f cpu_speedup=%.3f\n",
                r.model.c_str(), static_cast<long long>(c.batch), n, r.rate1, r.rate_n, r.rate_n / r.rate1,
                cpu_speedup(r));
  return 0;
}
