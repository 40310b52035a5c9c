// Chapter 07 — claim C07: parameter-server style synchronisation (everyone sends to device 0,
// which averages and sends the result back) makes device 0 the bottleneck; the ring does not.
// For N = 2..8 ranks and messages of 4 KiB..64 MiB the chapter runs the star all-reduce (the
// central reduction, parallel/star.cpp) and the ring (parallel/ring.cpp), reads every rank's
// traffic counters (ProcessGroup::stats) against the formulas, times them, fits a latency-
// bandwidth cost model on half of the points, checks it on the other half, and extrapolates it
// to 8..1024 ranks and a ResNet-50-sized gradient.
// Usage: chapter_07_parameter_server_vs_ring [--quick] [--max-ranks 8] [--star-everywhere]
//        [--alpha-us 5] [--beta-gbs 12.5] [--gradient-mb 100] [--compute-ms 100]
//        mpirun -n 4 chapter_07_parameter_server_vs_ring
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/cost_model.h"
#include "chapters/common/machine.h"
#include "parallel/algorithms.h"
#include "ringgrad.h"

using namespace rg;
using chapters::load_average;
using chapters::size_name;
using chapters::CostModel;
using chapters::Pattern;
using parallel::Algorithm;
using parallel::ProcessGroup;

namespace {

constexpr int64_t kFloat = 4;  // bytes per float32 element
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kHeldOutTolerance = 0.25;  // the cost model's predictions, on points it was not fitted to
const std::vector<Pattern> kPatterns{Pattern::star, Pattern::ring};

struct Config {
  std::vector<int64_t> sizes;      // message sizes in bytes
  double seconds_per_point = 0.1;  // timing budget of one (algorithm, N, size)
  bool star_everywhere = false;    // measure the star where the ring should be
  int cores = 2;                   // how many copies this machine runs at once
};

// One (algorithm, N, size): every rank's traffic per all-reduce and the time of one.
struct Measurement {
  Pattern pattern = Pattern::ring;  // what the chapter meant to measure
  int n = 0;
  int64_t bytes = 0;
  std::vector<double> sent, received;  // per rank, bytes per all-reduce (the counters)
  double seconds = 0;                  // per all-reduce: each rank's best of three rounds, the slowest rank
  bool fitted = false;                 // used to fit the cost model (else held out)
};

std::string megabytes(double bytes) { return chapters::number(bytes / 1e6) + " MB"; }

// ---- What the formulas say each rank sends and receives per all-reduce of S bytes.

// Star: rank 0 receives every other rank's S and sends the result back to each, (N-1)·S each
// way; every other rank sends S and receives S.
double star_bytes(int rank, int n, int64_t bytes) {
  return n == 1 ? 0 : rank == 0 ? static_cast<double>(n - 1) * static_cast<double>(bytes) : static_cast<double>(bytes);
}

// Ring, exactly: the reduce-scatter sends every chunk but the rank's own (chunk r) and the
// all-gather every chunk but chunk r+1; it receives every chunk but r-1, then every chunk but
// r. That is 2(N-1)/N·S each way, up to a few elements (chunk sizes differ by at most one).
double ring_bytes(int rank, int n, int64_t bytes, bool sent) {
  const int64_t length = bytes / kFloat;
  const auto chunk = [&](int c) {
    c = (c % n + n) % n;
    return parallel::chunk_begin(length, c + 1, n) - parallel::chunk_begin(length, c, n);
  };
  const int64_t elements = sent ? 2 * length - chunk(rank) - chunk(rank + 1) : 2 * length - chunk(rank - 1) - chunk(rank);
  return static_cast<double>(elements * kFloat);
}

double expected_bytes(Pattern pattern, int rank, int n, int64_t bytes, bool sent) {
  return pattern == Pattern::star ? star_bytes(rank, n, bytes) : ring_bytes(rank, n, bytes, sent);
}

// ---- The measurement.

Algorithm algorithm_for(Pattern pattern, const Config& config) {
  return pattern == Pattern::star || config.star_everywhere ? Algorithm::star : Algorithm::ring;
}

// `reps` all-reduces of `t` after a barrier; this rank's seconds per all-reduce.
double time_all_reduces(ProcessGroup& pg, const Tensor& t, Algorithm algorithm, int reps) {
  pg.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) pg.all_reduce(t, {.op = parallel::ReduceOp::sum, .algorithm = algorithm});
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

// The largest of every rank's `value` (a collective: all ranks get it).
double slowest(ProcessGroup& pg, double value) {
  const Tensor t = Tensor::scalar(value, DType::float64);
  pg.all_reduce(t, {.op = parallel::ReduceOp::max});
  return t.item();
}

// One point, on every rank; rank 0 gets every rank's counters.
Measurement measure(ProcessGroup& pg, Pattern pattern, int64_t bytes, const Config& config) {
  const int n = pg.size();
  const Algorithm algorithm = algorithm_for(pattern, config);
  const Tensor t = Tensor::ones({bytes / kFloat});
  // The warm-up (first touch of the buffers, threads woken) also tells how many repetitions fit the budget;
  // every rank must run the same number, so the slowest rank's time decides.
  const double warm = slowest(pg, time_all_reduces(pg, t, algorithm, 3));
  const int reps = std::clamp(static_cast<int>(config.seconds_per_point / 3 / warm), 2, 200);

  pg.reset_stats();
  double best = time_all_reduces(pg, t, algorithm, reps);
  // Every rank's traffic of `reps` all-reduces and a barrier (0 bytes).
  const std::vector<parallel::CommStats> traffic = parallel::all_gather_stats(pg);
  for (int round = 1; round < 3; ++round) best = std::min(best, time_all_reduces(pg, t, algorithm, reps));

  Measurement m{pattern, n, bytes, {}, {}, slowest(pg, best), false};
  for (const parallel::CommStats& rank : traffic) {
    m.sent.push_back(static_cast<double>(rank.bytes_sent) / reps);
    m.received.push_back(static_cast<double>(rank.bytes_received) / reps);
  }
  return m;
}

// ---- The counters against the formulas.

struct TrafficCheck {
  int64_t mismatches = 0;        // (measurement, rank, direction) where counter != formula
  double ring_deviation = 0;     // max |ring counter / (2(N-1)/N·S) - 1|
  double star_growth = 0;        // rank 0's star traffic at the largest N over that at the smallest
  int smallest_n = 0, largest_n = 0;
};

TrafficCheck check_traffic(const std::vector<Measurement>& all) {
  TrafficCheck check;
  double star_smallest = 0, star_largest = 0;
  const int64_t largest_size = std::max_element(all.begin(), all.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; })->bytes;
  for (const Measurement& m : all) {
    for (int r = 0; r < m.n; ++r) {
      check.mismatches += m.sent[r] != expected_bytes(m.pattern, r, m.n, m.bytes, true);
      check.mismatches += m.received[r] != expected_bytes(m.pattern, r, m.n, m.bytes, false);
      if (m.pattern == Pattern::ring) {
        const double ideal = 2.0 * (m.n - 1) / m.n * static_cast<double>(m.bytes);
        for (double counted : {m.sent[r], m.received[r]})
          check.ring_deviation = std::max(check.ring_deviation, std::abs(counted / ideal - 1));
      }
    }
    if (m.pattern != Pattern::star || m.bytes != largest_size) continue;
    if (check.smallest_n == 0 || m.n < check.smallest_n) check.smallest_n = m.n, star_smallest = m.sent[0] + m.received[0];
    if (m.n > check.largest_n) check.largest_n = m.n, star_largest = m.sent[0] + m.received[0];
  }
  check.star_growth = star_largest / star_smallest;
  return check;
}

void print_traffic(const std::vector<Measurement>& all, int64_t bytes) {
  std::printf("\ntraffic per all-reduce of S = %s, in units of S (counters; every size gives the same ratios)\n",
              size_name(bytes).c_str());
  report::Table table({"N", "star rank 0 sent", "star rank 0 received", "star others sent/received",
                       "ring rank 0 sent", "ring busiest rank sent", "ring busiest received", "2(N-1)/N"});
  std::vector<const Measurement*> star, ring;
  for (const Measurement& m : all)
    if (m.bytes == bytes) (m.pattern == Pattern::star ? star : ring).push_back(&m);
  for (size_t i = 0; i < star.size() && i < ring.size(); ++i) {
    const Measurement &s = *star[i], &g = *ring[i];
    const double S = static_cast<double>(bytes);
    const double others = s.n > 1 ? std::max(*std::max_element(s.sent.begin() + 1, s.sent.end()),
                                             *std::max_element(s.received.begin() + 1, s.received.end())) : 0;
    table.add_row({std::to_string(s.n), report::Table::number(s.sent[0] / S), report::Table::number(s.received[0] / S),
                   report::Table::number(others / S), report::Table::number(g.sent[0] / S),
                   report::Table::number(*std::max_element(g.sent.begin(), g.sent.end()) / S),
                   report::Table::number(*std::max_element(g.received.begin(), g.received.end()) / S),
                   report::Table::number(2.0 * (g.n - 1) / g.n)});
  }
  table.print(std::cout);
}

// ---- The cost model.

chapters::CostTerms terms_of(const Measurement& m, int concurrent) {
  return chapters::all_reduce_terms(m.pattern, m.n, static_cast<double>(m.bytes), concurrent);
}

// Half of the (N, size) points, in a checkerboard, fit the model; the other half check it.
void choose_fitting_points(std::vector<Measurement>& all, const std::vector<int64_t>& sizes) {
  for (Measurement& m : all) {
    const auto size_index = std::find(sizes.begin(), sizes.end(), m.bytes) - sizes.begin();
    m.fitted = (m.n + size_index) % 2 == 0;
  }
}

CostModel fit(const std::vector<Measurement>& all, Pattern pattern, int concurrent) {
  std::vector<chapters::TimedTerms> samples;
  for (const Measurement& m : all)
    if (m.pattern == pattern && m.fitted) samples.push_back({terms_of(m, concurrent), m.seconds});
  return chapters::fit_cost_model(samples);
}

double relative_error(const CostModel& model, const Measurement& m, int concurrent) {
  return model.seconds(terms_of(m, concurrent)) / m.seconds - 1;
}

struct HeldOut {
  double worst = 0;  // max |error| over the held-out points
  int within = 0, count = 0;
  bool passes() const { return within == count; }
  std::string str() const {
    return std::to_string(within) + " of " + std::to_string(count) + " within 25%, worst " + chapters::number(100 * worst, 3) + "%";
  }
};

HeldOut held_out_errors(const std::vector<Measurement>& all, Pattern pattern, const CostModel& model, int concurrent) {
  HeldOut h;
  for (const Measurement& m : all) {
    if (m.fitted || m.pattern != pattern) continue;
    const double error = std::abs(relative_error(model, m, concurrent));
    h.worst = std::max(h.worst, error);
    h.within += error <= kHeldOutTolerance;
    ++h.count;
  }
  return h;
}

// Measured times (ms) by N and size, and the model's error on each point (* = held out).
void print_times(const std::vector<Measurement>& all, const std::vector<CostModel>& models,
                 const std::vector<int64_t>& sizes, int concurrent) {
  std::vector<std::string> header{"algorithm", "N"};
  for (int64_t s : sizes) header.push_back(size_name(static_cast<double>(s)));
  for (const bool errors : {false, true}) {
    std::printf(errors ? "\ncost model error, predicted/measured - 1 (* = held out of the fit)\n"
                       : "\nmeasured time per all-reduce (ms)\n");
    report::Table table(header);
    for (Pattern pattern : kPatterns) {
      std::vector<int> ns;
      for (const Measurement& m : all)
        if (m.pattern == pattern && std::find(ns.begin(), ns.end(), m.n) == ns.end()) ns.push_back(m.n);
      for (int n : ns) {
        std::vector<std::string> row{chapters::pattern_name(pattern), std::to_string(n)};
        for (int64_t s : sizes)
          for (const Measurement& m : all)
            if (m.pattern == pattern && m.n == n && m.bytes == s) {
              const CostModel& model = models[pattern == Pattern::star ? 0 : 1];
              row.push_back(errors ? report::Table::number(100 * relative_error(model, m, concurrent), 0) + "%" + (m.fitted ? " " : "*")
                                   : report::Table::number(1e3 * m.seconds, 3));
            }
        table.add_row(row);
      }
    }
    table.print(std::cout);
  }
}

// ---- At the lecture's scale: the model with the interconnect's alpha and beta, every rank on
// its own link.

struct Scale {
  double alpha_s, beta_bytes_s, gradient_bytes, compute_s;
};

struct Extrapolated {
  int n;
  double star_s, ring_s;
};

std::vector<Extrapolated> extrapolate(const Scale& scale) {
  const CostModel link{scale.alpha_s, scale.beta_bytes_s};
  std::vector<Extrapolated> rows;
  for (int n = 8; n <= 1024; n *= 2)
    rows.push_back({n, link.seconds(chapters::all_reduce_terms(Pattern::star, n, scale.gradient_bytes, n)),
                    link.seconds(chapters::all_reduce_terms(Pattern::ring, n, scale.gradient_bytes, n))});
  return rows;
}

// The first N at which an all-reduce alone takes longer than a step's computation (0: none).
int first_bottleneck(const std::vector<Extrapolated>& rows, double compute_s, bool star) {
  for (const Extrapolated& e : rows)
    if ((star ? e.star_s : e.ring_s) > compute_s) return e.n;
  return 0;
}

void print_extrapolation(const std::vector<Extrapolated>& rows, const Scale& scale) {
  std::printf("\nat the lecture's scale: a %s gradient, alpha %s us, beta %s GB/s per link, every rank its own link\n",
              megabytes(scale.gradient_bytes).c_str(), chapters::number(scale.alpha_s * 1e6).c_str(),
              chapters::number(scale.beta_bytes_s / 1e9).c_str());
  report::Table table({"N", "star (s)", "ring (s)", "star / ring", "rank 0 traffic, star (GB)",
                       "per-rank traffic, ring (GB)", "star > compute?"});
  for (const Extrapolated& e : rows)
    table.add_row({std::to_string(e.n), report::Table::number(e.star_s, 4), report::Table::number(e.ring_s, 4),
                   report::Table::number(e.star_s / e.ring_s, 1),
                   report::Table::number(2.0 * (e.n - 1) * scale.gradient_bytes / 1e9, 2),
                   report::Table::number(4.0 * (e.n - 1) / e.n * scale.gradient_bytes / 1e9, 2),
                   e.star_s > scale.compute_s ? "yes" : "no"});
  table.print(std::cout);
}

// ---- Pictures.

void draw(const std::vector<Measurement>& all, const std::vector<CostModel>& models, int concurrent,
          const std::vector<Extrapolated>& rows, const Scale& scale, const std::filesystem::path& out) {
  const int64_t largest = all.back().bytes;
  int largest_n = 0;
  for (const Measurement& m : all) largest_n = std::max(largest_n, m.n);
  const int middle_n = std::min(largest_n, 4);  // the size sweep is drawn for N = 4
  const auto find = [&](Pattern p, int n, int64_t s) -> const Measurement* {
    for (const Measurement& m : all)
      if (m.pattern == p && m.n == n && m.bytes == s) return &m;
    return nullptr;
  };
  std::vector<std::string> ranks;
  for (int r = 0; r < largest_n; ++r) ranks.push_back("rank " + std::to_string(r));
  report::BarChart bars({.title = "bytes per rank for one all-reduce of " + size_name(double(largest)) + ", N = " +
                                      std::to_string(largest_n),
                         .y_label = "MiB"},
                        ranks);
  for (Pattern p : kPatterns) {
    const Measurement& m = *find(p, largest_n, largest);
    std::vector<double> sent, received;
    for (int r = 0; r < largest_n; ++r) {
      sent.push_back(m.sent[r] / kMiB);
      received.push_back(m.received[r] / kMiB);
    }
    bars.add_series(std::string(chapters::pattern_name(p)) + " sent", sent);
    bars.add_series(std::string(chapters::pattern_name(p)) + " received", received);
  }
  bars.save(out / "traffic_per_rank.svg");

  report::LineChart traffic({.title = "rank 0's traffic (sent + received) per all-reduce", .x_label = "N (ranks)",
                             .y_label = "bytes / S"});
  report::LineChart by_n({.title = "time per all-reduce of " + size_name(double(largest)), .x_label = "N (ranks)",
                          .y_label = "ms"});
  report::LineChart by_size({.title = "time per all-reduce, N = " + std::to_string(middle_n), .x_label = "message (bytes)",
                             .y_label = "ms", .x_scale = report::Scale::Log, .y_scale = report::Scale::Log});
  for (Pattern p : kPatterns) {
    const CostModel& model = models[p == Pattern::star ? 0 : 1];
    std::vector<report::Point> counted, formula, measured, predicted, measured_s, predicted_s;
    for (const Measurement& m : all) {
      if (m.pattern != p) continue;
      if (m.bytes == largest) {
        const double S = static_cast<double>(m.bytes);
        counted.push_back({double(m.n), (m.sent[0] + m.received[0]) / S});
        formula.push_back({double(m.n), p == Pattern::star ? 2.0 * (m.n - 1) : 4.0 * (m.n - 1) / m.n});
        measured.push_back({double(m.n), 1e3 * m.seconds});
        predicted.push_back({double(m.n), 1e3 * model.seconds(terms_of(m, concurrent))});
      }
      if (m.n == middle_n) {
        measured_s.push_back({double(m.bytes), 1e3 * m.seconds});
        predicted_s.push_back({double(m.bytes), 1e3 * model.seconds(terms_of(m, concurrent))});
      }
    }
    const std::string name = chapters::pattern_name(p);
    traffic.add_series(name + " (counted)", counted).add_series(name + " (formula)", formula);
    by_n.add_series(name + " measured", measured).add_series(name + " model", predicted);
    by_size.add_series(name + " measured", measured_s).add_series(name + " model", predicted_s);
  }
  traffic.save(out / "rank0_traffic.svg");
  by_n.save(out / "time_vs_ranks.svg");
  by_size.save(out / "time_vs_size.svg");

  report::LineChart scale_chart({.title = "model at scale: all-reduce of " + megabytes(scale.gradient_bytes),
                                 .x_label = "N (ranks)", .y_label = "seconds", .x_scale = report::Scale::Log,
                                 .y_scale = report::Scale::Log});
  std::vector<report::Point> star, ring, compute;
  for (const Extrapolated& e : rows) {
    star.push_back({double(e.n), e.star_s});
    ring.push_back({double(e.n), e.ring_s});
    compute.push_back({double(e.n), scale.compute_s});
  }
  scale_chart.add_series("star", star).add_series("ring", ring).add_series("one step's computation", compute);
  scale_chart.save(out / "extrapolation.svg");
  std::printf("\nwrote traffic_per_rank.svg, rank0_traffic.svg, time_vs_ranks.svg, time_vs_size.svg, "
              "extrapolation.svg to %s\n",
              out.c_str());
}

// The cost model's check (README): fitted on half of the points, it must predict every
// held-out point within 25 %, for both algorithms. Printed on its own line; the verdict does
// not depend on it.
bool print_model_check(const std::vector<HeldOut>& held_out, const std::vector<CostModel>& models) {
  const bool passes = held_out[0].passes() && held_out[1].passes();
  std::printf("cost model check: %s — star (alpha %s us, beta %s GB/s): %s; ring (alpha %s us, beta %s GB/s): %s\n",
              passes ? "passes" : "fails", chapters::number(models[0].alpha_s * 1e6).c_str(),
              chapters::number(models[0].beta_bytes_s / 1e9).c_str(), held_out[0].str().c_str(),
              chapters::number(models[1].alpha_s * 1e6).c_str(), chapters::number(models[1].beta_bytes_s / 1e9).c_str(),
              held_out[1].str().c_str());
  return passes;
}

// The verdict rule (README), about what the claim says, from the exact counters: every rank's
// counters equal the formulas for every N and size — rank 0's star traffic is (N-1)·S each way,
// growing with N, every other star rank's S, and every ring rank's 2(N-1)/N·S each way (exactly,
// chunk by chunk). The cost model's check and the extrapolation are reported with it.
void verdict(const TrafficCheck& traffic, bool model_passes, const std::vector<HeldOut>& held_out,
             const Scale& scale, const std::vector<Extrapolated>& rows) {
  const int star_limit = first_bottleneck(rows, scale.compute_s, true);
  const int ring_limit = first_bottleneck(rows, scale.compute_s, false);
  chapters::print_verdict(
      "C07", traffic.mismatches == 0,
      "counters vs formulas: " + std::to_string(traffic.mismatches) + " mismatches; star rank 0's traffic grows " +
          chapters::number(traffic.star_growth) + "x from N = " + std::to_string(traffic.smallest_n) + " to " +
          std::to_string(traffic.largest_n) + " (others: S), ring per rank within " +
          chapters::number(100 * traffic.ring_deviation, 2) + "% of 2(N-1)/N·S; cost model " +
          (model_passes ? "passes" : "fails") + " (held out: star " + held_out[0].str() + ", ring " + held_out[1].str() +
          "); at " + megabytes(scale.gradient_bytes) + " the star outlasts a " + chapters::number(scale.compute_s * 1e3) +
          " ms step from N = " + (star_limit ? std::to_string(star_limit) : "(never)") + ", the ring " +
          (ring_limit ? "from N = " + std::to_string(ring_limit) : "never up to 1024"));
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_07_parameter_server_vs_ring", "rank 0 is the star's bottleneck; the ring has none", 2);
  int max_ranks = 0, cores = 0;
  double alpha_us = 5, beta_gbs = 12.5, gradient_mb = 100, compute_ms = 100;
  Config config;
  cli.add_option("--max-ranks", max_ranks, "local backend: N = 2 .. this (0: 8, --quick: 4)");
  cli.add_flag("--star-everywhere", config.star_everywhere,
               "measure the star where the ring should be (removes the ring from the comparison)");
  cli.add_option("--cores", cores, "copies this machine runs at once (0: its hardware threads)");
  cli.add_option("--alpha-us", alpha_us, "extrapolation: the interconnect's latency per message, microseconds");
  cli.add_option("--beta-gbs", beta_gbs, "extrapolation: the interconnect's bandwidth per link, GB/s");
  cli.add_option("--gradient-mb", gradient_mb, "extrapolation: the gradient, MB (ResNet-50: ~100)");
  cli.add_option("--compute-ms", compute_ms, "extrapolation: one step's forward and backward, ms");
  const chapters::Flags flags = cli.parse(argc, argv);
  if (max_ranks == 0) max_ranks = flags.quick ? 4 : 8;
  config.cores = cores > 0 ? cores : chapters::hardware_cores();
  config.sizes = flags.quick ? std::vector<int64_t>{4 << 10, 64 << 10, 1 << 20}
                             : std::vector<int64_t>{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20,
                                                    16 << 20, 64 << 20};
  config.seconds_per_point = flags.quick ? 0.02 : 0.15;
  const Scale scale{alpha_us * 1e-6, beta_gbs * 1e9, gradient_mb * 1e6, compute_ms * 1e-3};
  std::printf("load average at start: %s (%d cores)%s\n", chapters::load_average().c_str(), config.cores,
              config.star_everywhere ? "; --star-everywhere: the star runs where the ring should" : "");

  std::vector<Measurement> all;
  bool printer = false;  // this process holds rank 0
  const auto on_world = [&](std::shared_ptr<ProcessGroup> pg) {
    for (Pattern pattern : kPatterns)
      for (int64_t bytes : config.sizes) {
        Measurement m = measure(*pg, pattern, bytes, config);
        if (pg->rank() == 0) all.push_back(std::move(m));
      }
    printer = printer || pg->rank() == 0;
  };
  if (flags.backend == "mpi") {
    chapters::run_ranks(flags, argc, argv, on_world);
  } else {
    for (int n = 2; n <= max_ranks; ++n) {
      chapters::Flags world = flags;
      world.workers = n;
      chapters::run_ranks(world, argc, argv, on_world);
    }
  }
  if (!printer) return 0;
  std::stable_sort(all.begin(), all.end(), [](const Measurement& a, const Measurement& b) {
    return std::tuple(a.pattern, a.n, a.bytes) < std::tuple(b.pattern, b.n, b.bytes);
  });
  std::printf("load average at the end: %s\n", chapters::load_average().c_str());

  const TrafficCheck traffic = check_traffic(all);
  print_traffic(all, config.sizes.back());
  choose_fitting_points(all, config.sizes);
  const std::vector<CostModel> models{fit(all, Pattern::star, config.cores), fit(all, Pattern::ring, config.cores)};
  std::printf("\ncost model, fitted on the points without * below: time = alpha * steps + bytes / beta, with\n"
              "  star: steps 2(N-1), bytes 2(N-1)·S (all through rank 0)\n"
              "  ring: steps 2(N-1)·N/c, bytes 2(N-1)/N·S·N/c, c = min(N, %d cores): the N ranks' lock-step shares "
              "the cores\n",
              config.cores);
  print_times(all, models, config.sizes, config.cores);
  const std::vector<HeldOut> held_out{held_out_errors(all, Pattern::star, models[0], config.cores),
                                      held_out_errors(all, Pattern::ring, models[1], config.cores)};
  // The textbook terms, every rank running at once, for comparison: they ignore that N ranks share the cores.
  const int everyone = 1 << 20;
  const HeldOut textbook = held_out_errors(all, Pattern::ring, fit(all, Pattern::ring, everyone), everyone);
  std::printf("\nthe ring with the textbook terms instead (every rank running at once): held out %s\n",
              textbook.str().c_str());
  const bool model_passes = print_model_check(held_out, models);
  const auto rows = extrapolate(scale);
  print_extrapolation(rows, scale);
  draw(all, models, config.cores, rows, scale, flags.out);
  verdict(traffic, model_passes, held_out, scale, rows);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
