// Chapter 12 — claim C12: "DataParallel (one process, many devices) gathers to the main
// device, which becomes a bottleneck; DistributedDataParallel (one process per device) does
// not. Prefer DDP." The same MLP, the same global batches, the same optimizer, step for step
// under parallel::DataParallel over N devices and under DDP over N ranks, N = 2..4: the step
// time, and the bytes and time each device handles, from DataParallel's counter
// (parallel/data_parallel_stats.h) and each rank's ProcessGroup::stats().
// Devices: virtual CPU devices cpu:0..N-1 and rank-threads (the local backend), or, under
// mpirun, N processes (mpi; with --cuda: GPUs cuda:0..N-1 and NCCL).
// Usage: chapter_12_dataparallel_vs_ddp [--quick] [--max-devices 4] [--batch 384] [--ddp-star]
//        mpirun -n N chapter_12_dataparallel_vs_ddp [--cuda]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/machine.h"
#include "chapters/common/training.h"
#include "ringgrad.h"

using namespace rg;
using chapters::as_printed;
using chapters::number;
using parallel::Algorithm;
using parallel::DataParallel;
using parallel::DistributedDataParallel;
using parallel::ProcessGroup;

namespace {

constexpr double kLr = 0.05, kMomentum = 0.9;
constexpr uint64_t kSeed = 12;
constexpr double kCentral = 0.9;       // verdict: DataParallel's device 0 handles >= 0.9 (N - 1) x another's bytes
constexpr double kBalanced = 0.10;     // verdict: every DDP rank within 10% of the ranks' mean bytes
constexpr double kCopiesGrowth = 1.3;  // verdict: device 0's copy time at the largest N / at N = 2

struct Settings {  // what --quick shortens
  int64_t warmup_steps;  // untimed steps first (first touch of the buffers, threads woken)
  int64_t timed_steps;   // per round; the figures are medians over all rounds' steps
  int rounds;            // DataParallel and DDP take turns, so that a load change hits both
};
Settings settings(bool quick) { return quick ? Settings{2, 6, 1} : Settings{5, 100, 3}; }

struct Setup {
  Settings s;
  data::ImageShape shape;
  Algorithm ddp_algorithm = Algorithm::ring;  // --ddp-star: Algorithm::star
  bool cuda = false;
};

struct Batch {
  Tensor x, y;  // x (G, 1, 28, 28), y (G)
};

// The first global batches of a seeded shuffle: both wrappers train on exactly these.
std::vector<Batch> global_batches(const data::Dataset& train, int64_t batch, int64_t count) {
  data::RandomSampler order(train.size(), kSeed);
  data::DataLoader loader(train, {.batch_size = batch, .sampler = &order, .drop_last = true});
  std::vector<Batch> batches;
  for (auto& [x, y] : loader) {
    batches.push_back({x, y});
    if (static_cast<int64_t>(batches.size()) == count) break;
  }
  return batches;
}

double median(std::vector<double> values) {
  RG_CHECK(!values.empty(), "median of no values");
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// t on `device`, copied only when it is elsewhere.
Tensor on(const Tensor& t, Device device) { return t.device() == device ? t : t.to(device); }

// The model's parameters, copied to the CPU (to compare the two wrappers' models).
std::vector<Tensor> parameters_on_cpu(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const Variable& p : model.parameters()) out.push_back(p.data().to(Device::cpu()));
  return out;
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// What one device (DataParallel) or one rank (DDP) handled per step.
struct Load {
  double bytes_in = 0, bytes_out = 0;  // copied to / from it (DataParallel); received / sent (DDP)
  double bytes() const { return bytes_in + bytes_out; }
};

// Device 0's bytes against the mean of the others': 1 when the work is balanced.
double device0_ratio(const std::vector<Load>& loads) {
  double others = 0;
  for (size_t i = 1; i < loads.size(); ++i) others += loads[i].bytes() / static_cast<double>(loads.size() - 1);
  return loads.front().bytes() / others;
}

// ---- DataParallel: one process drives all N devices ----

// Every timed step's figures, in ms, over all rounds (the report takes their medians).
struct DataParallelRun {
  std::vector<double> step_ms;
  // The phases of parallel/data_parallel_stats.h, and the optimizer's update.
  std::vector<double> scatter_ms, replicate_ms, apply_ms, gather_ms, backward_ms, update_ms;
  std::vector<double> copies_ms;  // every copy between devices, forward and backward: each has device 0 at one end
  std::vector<Load> devices;      // bytes per step, per device (the same every step)
  std::vector<Tensor> final_parameters;  // after the last round, on the CPU
};

// One training step of the lecture's loop through DataParallel. The batch arrives on device
// 0; forward scatters it, copies the parameters to every replica, runs the replicas on their
// own threads and gathers the outputs on device 0, where the loss is; backward sends each
// replica its slice of the output's gradient and adds every replica's gradients into device
// 0's parameters (one engine thread walks the replicas' graphs); device 0 alone updates.
void data_parallel_step(DataParallel& dp, optim::SGD& opt, const Batch& b, DataParallelRun* timed) {
  const Device device0 = dp.devices().front();
  dp.reset_stats();
  const auto start = std::chrono::steady_clock::now();
  Variable loss = cross_entropy(dp(on(b.x, device0)), on(b.y, device0));
  opt.zero_grad();
  loss.backward();
  const auto update_start = std::chrono::steady_clock::now();
  opt.step();
  loss.item();  // waits for the device (CUDA)
  if (!timed) return;
  timed->update_ms.push_back(milliseconds_since(update_start));
  timed->step_ms.push_back(milliseconds_since(start));
  const parallel::DataParallelStats s = dp.stats();
  timed->scatter_ms.push_back(1e3 * s.scatter.seconds);
  timed->replicate_ms.push_back(1e3 * s.replicate.seconds);
  timed->apply_ms.push_back(1e3 * s.apply.seconds);
  timed->gather_ms.push_back(1e3 * s.gather.seconds);
  timed->backward_ms.push_back(1e3 * s.backward_seconds);
  timed->copies_ms.push_back(1e3 * (s.scatter.seconds + s.replicate.seconds + s.gather.seconds +
                                    s.gather_backward.seconds + s.reduce.seconds));
  timed->devices.clear();
  for (size_t i = 0; i < dp.devices().size(); ++i)
    timed->devices.push_back({static_cast<double>(s.devices[i].bytes_in), static_cast<double>(s.devices[i].bytes_out)});
}

void run_data_parallel(const std::vector<Device>& devices, const std::vector<Batch>& batches, const Setup& setup,
                       DataParallelRun& run) {
  const Settings& s = setup.s;
  auto model = chapters::seeded_model("mlp", setup.shape, kSeed);
  model->to(devices.front());
  DataParallel dp(model, devices);
  optim::SGD opt(model->parameters(), {.lr = kLr, .momentum = kMomentum});
  for (int64_t step = 0; step < s.warmup_steps + s.timed_steps; ++step)
    data_parallel_step(dp, opt, batches[static_cast<size_t>(step)], step < s.warmup_steps ? nullptr : &run);
  run.final_parameters = parameters_on_cpu(*model);
}

// ---- DDP: one rank per device, each a whole training loop on its share ----

// One rank's medians over its timed steps.
struct RankRun {
  double step_ms = 0;
  double all_reduce_ms = 0;  // per step: this rank's time inside the all-reduces (waits included)
  Load load;                 // per step
};

// The same step on one rank: its G/N rows of the global batch, forward and backward alone;
// the all-reduce (ring by default) averages the gradients; every rank updates its replica.
double ddp_step(DistributedDataParallel& ddp, optim::SGD& opt, const Batch& b, Device device) {
  ProcessGroup& pg = ddp.process_group();
  const int64_t local = b.x.size(0) / pg.size();
  const auto start = std::chrono::steady_clock::now();
  Variable loss = cross_entropy(ddp(on(b.x.narrow(0, pg.rank() * local, local), device)),
                                on(b.y.narrow(0, pg.rank() * local, local), device));
  opt.zero_grad();
  loss.backward();
  opt.step();
  loss.item();
  return milliseconds_since(start);
}

RankRun run_ddp(std::shared_ptr<ProcessGroup> pg, Device device, const std::vector<Batch>& batches, const Setup& setup,
                std::vector<Tensor>* final_parameters) {
  const Settings& s = setup.s;
  auto model = chapters::seeded_model("mlp", setup.shape, kSeed);
  model->to(device);
  DistributedDataParallel ddp(model, pg, {.algorithm = setup.ddp_algorithm});
  optim::SGD opt(model->parameters(), {.lr = kLr, .momentum = kMomentum});
  std::vector<double> step_ms, all_reduce_ms, sent, received;
  for (int64_t step = 0; step < s.warmup_steps + s.timed_steps; ++step) {
    pg->reset_stats();
    const double ms = ddp_step(ddp, opt, batches[static_cast<size_t>(step)], device);
    if (step < s.warmup_steps) continue;
    const parallel::CommStats c = pg->stats();
    step_ms.push_back(ms);
    all_reduce_ms.push_back(1e3 * c.seconds);
    sent.push_back(static_cast<double>(c.bytes_sent));
    received.push_back(static_cast<double>(c.bytes_received));
  }
  if (final_parameters) *final_parameters = parameters_on_cpu(*model);
  return {median(step_ms), median(all_reduce_ms), {median(received), median(sent)}};
}

// Every rank's figures, on every rank (an all-gather; on NCCL the tensor lives on the GPU).
std::vector<RankRun> all_ranks(ProcessGroup& pg, const RankRun& mine, Device device) {
  constexpr int64_t kFields = 4;
  const Tensor input = Tensor::from_vector(
      std::vector<double>{mine.step_ms, mine.all_reduce_ms, mine.load.bytes_in, mine.load.bytes_out}, {kFields});
  const Tensor output = Tensor::zeros({kFields * pg.size()}, DType::float64, device);
  pg.all_gather(output, input.to(device));
  const std::vector<double> all = output.to(Device::cpu()).to_vector<double>();
  std::vector<RankRun> runs;
  for (size_t r = 0; r < static_cast<size_t>(pg.size()); ++r) {
    const double* f = &all[r * kFields];
    runs.push_back({f[0], f[1], {f[2], f[3]}});
  }
  return runs;
}

// ---- the comparison at N devices ----

struct Comparison {
  int n = 0;
  DataParallelRun dp;
  std::vector<std::vector<RankRun>> ddp_rounds;  // per round, every rank; empty: DDP not run at this N
  std::vector<Tensor> ddp_parameters;            // rank 0's after the last round
  bool has_ddp() const { return !ddp_rounds.empty(); }
};

double dp_step_ms(const Comparison& c) { return median(c.dp.step_ms); }
double ddp_step_ms(const Comparison& c) {  // the slowest rank's median (the ranks wait for each other)
  std::vector<double> per_round;
  for (const auto& ranks : c.ddp_rounds) {
    double slowest = 0;
    for (const RankRun& r : ranks) slowest = std::max(slowest, r.step_ms);
    per_round.push_back(slowest);
  }
  return median(per_round);
}
std::vector<Load> ddp_loads(const Comparison& c) {
  std::vector<Load> loads;
  for (const RankRun& r : c.ddp_rounds.back()) loads.push_back(r.load);
  return loads;
}
// The largest |a rank's bytes / the ranks' mean - 1|: 0 when DDP is balanced.
double ddp_spread(const Comparison& c) {
  const std::vector<Load> loads = ddp_loads(c);
  double mean = 0, spread = 0;
  for (const Load& l : loads) mean += l.bytes() / static_cast<double>(loads.size());
  for (const Load& l : loads) spread = std::max(spread, std::abs(l.bytes() / mean - 1));
  return spread;
}
double max_parameter_difference(const Comparison& c) {
  double worst = 0;
  for (size_t i = 0; i < c.dp.final_parameters.size(); ++i)
    worst = std::max(worst, max_abs_diff(c.dp.final_parameters[i], c.ddp_parameters[i]));
  return worst;
}

std::vector<Device> devices_for(int n, bool cuda) {
  std::vector<Device> devices;
  for (int i = 0; i < n; ++i) devices.push_back(cuda ? Device::cuda(i) : Device::cpu(i));
  return devices;
}

std::vector<Comparison> two_to(int max_devices) {
  std::vector<Comparison> all;
  for (int n = 2; n <= max_devices; ++n) {
    all.emplace_back();
    all.back().n = n;
  }
  return all;
}

// On the local backend, round after round over every N (so that a change in the machine's
// load hits every N): DataParallel on this (main) thread with all the cores, then DDP on a
// fresh world of N rank-threads.
std::vector<Comparison> measure_locally(const chapters::Flags& flags, int argc, char** argv,
                                        const std::vector<Batch>& batches, const Setup& setup, int max_devices) {
  std::vector<Comparison> all = two_to(max_devices);
  for (int round = 0; round < setup.s.rounds; ++round) {
    const bool last = round + 1 == setup.s.rounds;
    for (Comparison& c : all) {
      run_data_parallel(devices_for(c.n, false), batches, setup, c.dp);
      chapters::Flags world = flags;
      world.workers = c.n;
      chapters::run_ranks(world, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
        const RankRun mine =
            run_ddp(pg, Device::cpu(), batches, setup, last && pg->rank() == 0 ? &c.ddp_parameters : nullptr);
        const std::vector<RankRun> everyone = all_ranks(*pg, mine, Device::cpu());
        if (pg->rank() == 0) c.ddp_rounds.push_back(everyone);
      });
    }
  }
  return all;
}

// Under mpirun, round after round: DDP on the world's N processes, then, in rank 0's process
// with all the machine's cores, DataParallel over 2..N devices, while the others wait at a
// barrier (the waits sleep). Only rank 0's result is complete.
std::vector<Comparison> measure_across_processes(std::shared_ptr<ProcessGroup> pg, Device device,
                                                 const std::vector<Batch>& batches, const Setup& setup) {
  RG_CHECK(pg->size() >= 2, "chapter 12 compares N >= 2 devices: run it under mpirun -n N with N >= 2");
  std::vector<Comparison> all = two_to(pg->size());
  const int threads = get_num_threads();  // mpirun gave this process cores / N
  for (int round = 0; round < setup.s.rounds; ++round) {
    const bool last = round + 1 == setup.s.rounds;
    const RankRun mine =
        run_ddp(pg, device, batches, setup, last && pg->rank() == 0 ? &all.back().ddp_parameters : nullptr);
    all.back().ddp_rounds.push_back(all_ranks(*pg, mine, device));
    if (pg->rank() == 0) {
      set_num_threads(chapters::hardware_cores());
      for (Comparison& c : all) run_data_parallel(devices_for(c.n, setup.cuda), batches, setup, c.dp);
      set_num_threads(threads);
    }
    pg->barrier();
  }
  return all;
}

// ---- the report (rank 0) ----

std::string kib(double bytes) { return report::Table::number(bytes / 1024, 1); }

// Device 0's and the other devices' bytes; DDP's where it ran at this N, else "-".
void report_bytes(const std::vector<Comparison>& all, const char* ddp_name, const std::filesystem::path& out) {
  std::printf("\nbytes per step, KiB (in + out): device 0 against the mean of the others\n");
  report::Table table({"N", "DataParallel dev 0", "DP other (mean)", "DP dev 0/other", "DDP rank 0",
                       "DDP other (mean)", "DDP rank 0/other", "DDP max |rank/mean - 1|"});
  std::vector<report::Point> dp0, dp_others, ddp0, ddp_others;  // KiB per step against N
  for (const Comparison& c : all) {
    const std::vector<Load>& dp = c.dp.devices;
    const double dp_other = dp.front().bytes() / device0_ratio(dp);
    std::vector<std::string> row = {std::to_string(c.n), kib(dp.front().bytes()), kib(dp_other),
                                    number(device0_ratio(dp))};
    const double n = static_cast<double>(c.n);
    if (c.has_ddp()) {
      const std::vector<Load> ddp = ddp_loads(c);
      const double ddp_other = ddp.front().bytes() / device0_ratio(ddp);
      row.insert(row.end(), {kib(ddp.front().bytes()), kib(ddp_other), number(device0_ratio(ddp)),
                             number(ddp_spread(c))});
      ddp0.push_back({n, ddp.front().bytes() / 1024});
      ddp_others.push_back({n, ddp_other / 1024});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-"});
    }
    table.add_row(row);
    dp0.push_back({n, dp.front().bytes() / 1024});
    dp_others.push_back({n, dp_other / 1024});
  }
  table.print(std::cout);
  const std::string ddp_label = std::string("DDP (") + ddp_name + ")";
  report::LineChart chart({.title = "KiB per step (in + out): device 0 against the others", .x_label = "devices N",
                           .y_label = "KiB per step"});
  chart.add_series("DataParallel device 0", dp0)
      .add_series("DataParallel, another device (mean)", dp_others)
      .add_series(ddp_label + " rank 0", ddp0)
      .add_series(ddp_label + ", another rank (mean)", ddp_others);
  chart.save(out / "device0_bytes.svg");

  const Comparison& widest = all.back();  // DDP always ran at the largest N
  const std::vector<Load> ddp = ddp_loads(widest);
  std::vector<std::string> devices;
  std::vector<double> dp_in, dp_out, ddp_in, ddp_out;
  for (size_t i = 0; i < ddp.size(); ++i) {
    devices.push_back("device " + std::to_string(i));
    dp_in.push_back(widest.dp.devices[i].bytes_in / 1024);
    dp_out.push_back(widest.dp.devices[i].bytes_out / 1024);
    ddp_in.push_back(ddp[i].bytes_in / 1024);
    ddp_out.push_back(ddp[i].bytes_out / 1024);
  }
  report::BarChart bars(
      {.title = "KiB per step on each device, N = " + std::to_string(widest.n), .y_label = "KiB per step"}, devices);
  bars.add_series("DataParallel in", dp_in)
      .add_series("DataParallel out", dp_out)
      .add_series(std::string("DDP (") + ddp_name + ") received", ddp_in)
      .add_series(std::string("DDP (") + ddp_name + ") sent", ddp_out);
  bars.save(out / "bytes_per_device.svg");
}

void report_time(const std::vector<Comparison>& all, const std::filesystem::path& out) {
  std::printf("\ntime per step, ms (medians); DataParallel's phases: device 0 works alone in all but 'apply', and "
              "takes part in every copy\n");
  report::Table table({"N", "DP step", "scatter", "replicate", "apply", "gather", "backward", "update", "copies",
                       "dev 0 alone", "DDP step", "DDP all-reduce/rank", "DP/DDP"});
  std::vector<report::Point> dp_line, ddp_line;
  std::vector<std::string> labels;
  std::vector<double> alone, copies, parallel_part;
  for (const Comparison& c : all) {
    const DataParallelRun& d = c.dp;
    const double dp_ms = dp_step_ms(c), apply = median(d.apply_ms);
    std::vector<std::string> row = {std::to_string(c.n), number(dp_ms), number(median(d.scatter_ms)),
                                    number(median(d.replicate_ms)), number(apply), number(median(d.gather_ms)),
                                    number(median(d.backward_ms)), number(median(d.update_ms)),
                                    number(median(d.copies_ms)), number(dp_ms - apply)};
    if (c.has_ddp()) {
      double low = 1e300, high = 0;
      for (const RankRun& r : c.ddp_rounds.back()) {
        low = std::min(low, r.all_reduce_ms);
        high = std::max(high, r.all_reduce_ms);
      }
      row.insert(row.end(), {number(ddp_step_ms(c)), number(low) + " - " + number(high),
                             number(dp_ms / ddp_step_ms(c))});
      ddp_line.push_back({static_cast<double>(c.n), ddp_step_ms(c)});
    } else {
      row.insert(row.end(), {"-", "-", "-"});
    }
    table.add_row(row);
    dp_line.push_back({static_cast<double>(c.n), dp_ms});
    labels.push_back("N = " + std::to_string(c.n));
    alone.push_back(dp_ms - apply);
    copies.push_back(median(d.copies_ms));
    parallel_part.push_back(apply);
  }
  table.print(std::cout);
  report::LineChart chart({.title = "time per training step", .x_label = "devices N", .y_label = "ms per step"});
  chart.add_series("DataParallel", dp_line).add_series("DDP", ddp_line);
  chart.save(out / "step_time.svg");
  report::BarChart bars({.title = "DataParallel's step: what device 0 does alone", .y_label = "ms per step"}, labels);
  bars.add_series("device 0 alone (all but apply)", alone)
      .add_series("of which copies (all through device 0)", copies)
      .add_series("apply: the replicas' forwards, in parallel", parallel_part);
  bars.save(out / "dataparallel_phases.svg");
}

// The rule (README): confirmed when
//  1. DataParallel's device 0 handles N - 1 times the bytes of another device (at least
//     0.9 (N - 1) at every N; every copy has device 0 at one end), at least twice at the largest N;
//  2. DDP's ranks stay balanced: each within 10% of the ranks' mean bytes, at every N it ran;
//  3. the time DataParallel's device 0 spends copying grows with N: at the largest N at least
//     1.3x that at N = 2 (medians over all steps, the N measured in turns).
void verdict(const std::vector<Comparison>& all, const char* ddp_name, int64_t steps_per_round) {
  bool dp_central = device0_ratio(all.back().dp.devices) >= 2, ddp_balanced = true;
  std::string dp_ratios, ddp_ratios;
  for (const Comparison& c : all) {
    const double ratio = device0_ratio(c.dp.devices);
    dp_central = dp_central && ratio >= kCentral * (c.n - 1);
    dp_ratios += (dp_ratios.empty() ? "" : ", ") + number(ratio);
    if (!c.has_ddp()) continue;
    ddp_balanced = ddp_balanced && ddp_spread(c) <= kBalanced;
    ddp_ratios += (ddp_ratios.empty() ? "" : ", ") + number(device0_ratio(ddp_loads(c)));
  }
  const Comparison &first = all.front(), &widest = all.back();
  const double copies_growth = as_printed(median(widest.dp.copies_ms) / median(first.dp.copies_ms));
  const std::string ns = "N = " + std::to_string(first.n) + ".." + std::to_string(widest.n);
  chapters::print_verdict(
      "C12", dp_central && ddp_balanced && copies_growth >= kCopiesGrowth,
      "device 0's bytes / another device's at " + ns + ": DataParallel " + dp_ratios + ", DDP (" + ddp_name + ") " +
          ddp_ratios + " (max |rank/mean - 1| " + number(ddp_spread(widest)) + " at N = " +
          std::to_string(widest.n) + "); DataParallel's device 0 copying " + number(median(first.dp.copies_ms)) +
          " -> " + number(median(widest.dp.copies_ms)) + " ms per step (x" + number(copies_growth) +
          "); step at N = " + std::to_string(widest.n) + ": DataParallel " + number(dp_step_ms(widest)) +
          " ms, DDP " + number(ddp_step_ms(widest)) + " ms (DataParallel/DDP " +
          number(dp_step_ms(widest) / ddp_step_ms(widest)) + "); same training: max |theta_DP - theta_DDP| " +
          number(max_parameter_difference(widest)) + " after " + std::to_string(steps_per_round) + " steps");
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_12_dataparallel_vs_ddp", "DataParallel's device 0 against DDP's balanced ranks", 0);
  int max_devices = 4, batch = 384;
  bool ddp_star = false, cuda = false;
  cli.add_option("--max-devices", max_devices, "N = 2..this on the local backend (under mpirun: the world size)");
  cli.add_option("--batch", batch, "the global batch, split over the N devices (a multiple of every N)");
  cli.add_flag("--ddp-star", ddp_star,
               "the mechanism removed: DDP all-reduces through rank 0 (star) instead of the ring");
  cli.add_flag("--cuda", cuda, "GPUs: DataParallel over cuda:0..N-1, DDP over NCCL (under mpirun -n N)");
  const chapters::Flags flags = cli.parse(argc, argv);
  RG_CHECK(!cuda || flags.backend == "mpi", "--cuda: run under mpirun -n N, one process per GPU for DDP");
  const int widest = flags.backend == "mpi" ? flags.workers : max_devices;
  RG_CHECK(widest >= 2, "chapter 12 compares N = 2.. devices; got at most ", widest);
  for (int n = 2; n <= widest; ++n) RG_CHECK(batch % n == 0, "--batch ", batch, " must be a multiple of N = ", n);
  const data::FashionMNIST train({.split = data::Split::Train});
  const Setup setup{settings(flags.quick), data::image_shape(train), ddp_star ? Algorithm::star : Algorithm::ring,
                    cuda};
  const char* ddp_name = ddp_star ? "star" : "ring";
  const std::vector<Batch> batches = global_batches(train, batch, setup.s.warmup_steps + setup.s.timed_steps);
  const auto print_setup = [&] {
    std::printf("MLP 784-256-128-10, global batch %d, SGD lr %.2f momentum %.1f; %lld timed steps x %d rounds per "
                "wrapper and N; DDP all-reduce: %s; load average %s, %d cores\n",
                batch, kLr, kMomentum, static_cast<long long>(setup.s.timed_steps), setup.s.rounds, ddp_name,
                chapters::load_average().c_str(), chapters::hardware_cores());
  };

  std::vector<Comparison> all;
  bool main_process = true;  // rank 0 (always, in a local world)
  const auto across_processes = [&](std::shared_ptr<ProcessGroup> pg) {
    main_process = pg->rank() == 0;
    if (main_process) print_setup();
    const Device device = cuda ? Device::cuda(pg->local_rank()) : Device::cpu();
    all = measure_across_processes(pg, device, batches, setup);
  };
  if (flags.backend == "local") {
    print_setup();
    all = measure_locally(flags, argc, argv, batches, setup, max_devices);
  } else if (cuda) {
    auto pg = parallel::init_process_group({.backend = "nccl"}, argc, argv);
    if (pg->rank() == 0) std::printf("backend: nccl, %d processes, one GPU each\n", pg->size());
    across_processes(pg);
  } else {
    chapters::run_ranks(flags, argc, argv, across_processes);
  }
  if (!main_process) return 0;
  report_bytes(all, ddp_name, flags.out);
  report_time(all, flags.out);
  std::printf("pictures: %s/{device0_bytes,bytes_per_device,step_time,dataparallel_phases}.svg; load average %s\n",
              flags.out.c_str(), chapters::load_average().c_str());
  verdict(all, ddp_name, setup.s.warmup_steps + setup.s.timed_steps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
