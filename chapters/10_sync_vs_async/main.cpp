// Chapter 10 — claim C10: synchronous updates use exact gradients and converge steadily, but
// the slowest device holds everyone back; asynchronous updates never wait, but their gradients
// are stale, and the loss may swing like a roller coaster or not converge. One worker is made a
// straggler (it sleeps before every step); the same MLP trains on Fashion-MNIST under
// synchronous DDP and under the asynchronous parameter server (unbounded, and with a staleness
// bound: SSP), and in a roller-coaster setting (one update per gradient at a high lr), beside
// its control: the same updates in one process, where no gradient is stale.
// Usage: chapter_10_sync_vs_async [--quick] [--workers 5 | under mpirun -n N] [--no-straggler]
//        [--straggler-ms 20] [--lr 0.01] [--coaster-lr 0.05]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/curves.h"
#include "chapters/common/machine.h"
#include "chapters/common/training.h"
#include "ringgrad.h"

using namespace rg;
using chapters::number;
using parallel::ProcessGroup;

namespace {

constexpr int64_t kBatch = 32;  // per worker and gradient
constexpr double kMomentum = 0.9;
constexpr uint64_t kModelSeed = 10, kShuffleSeed = 1;
constexpr double kClip = 5;            // losses above it (and NaN) count as 5 in the curves; chance is 2.3
constexpr size_t kCurvePoints = 30;    // windows of a loss curve
constexpr size_t kFinalPoints = 5;     // its last sixth: the final loss
constexpr double kFaster = 1.5;        // verdict: async's throughput at least 1.5x sync's
constexpr double kSwingFactor = 3;     // verdict: the roller coaster swings >= 3x sync and the control
constexpr double kConverged = 1.5;     // verdict: the fine async run ends at most 1.5x sync's final loss

struct Settings {  // what --quick shortens
  int64_t train_images;
  int64_t sync_steps;  // every run consumes the samples of this many synchronous steps
};
Settings settings(bool quick) { return quick ? Settings{8192, 80} : Settings{60000, 300}; }

// ---- the runs ----

enum class Update {
  synchronous,   // DDP: every step averages one fresh gradient from every rank
  asynchronous,  // the parameter server: gradients applied as they arrive, whatever their age
  one_worker,    // the control: one process, every gradient fresh, one update per gradient
};

// How one run updates the parameters.
struct Mode {
  std::string name;
  Update update = Update::asynchronous;
  int64_t gradients_per_update = 0;  // async: k (0: one from each worker on average)
  int64_t max_staleness = -1;        // async: the SSP bound s; < 0 unbounded
  double lr = 0;
};

// One gradient's loss: its minibatch's loss (clipped at kClip: NaN and 1e30 alike mean
// "diverged"), and the samples the parameters it was computed on had already been trained on
// (sync: step * N * b; async: version * k * b).
struct LossRecord {
  double samples = 0, loss = 0;
};
LossRecord record(int64_t samples, const Variable& loss) {
  const double value = loss.item();
  return {static_cast<double>(samples), std::isfinite(value) ? std::min(value, kClip) : kClip};
}

struct RunResult {
  Mode mode;
  int workers = 0;
  double seconds = 0;  // rank 0's wall time, from the common start to the last worker's end
  int64_t gradients = 0, updates = 0;
  std::vector<int64_t> staleness;  // histogram; sync: every gradient is fresh
  std::vector<LossRecord> losses;  // every worker's, gathered on rank 0
  double samples_per_s() const { return static_cast<double>(gradients * kBatch) / seconds; }
};

// A worker's shard of the training set, epoch after epoch, for as many batches as it asks.
class BatchStream {
 public:
  BatchStream(const data::Dataset& set, int64_t images, int worker, int workers)
      : sampler_(images, {.num_replicas = workers, .rank = worker, .seed = kShuffleSeed}),
        loader_(set, {.batch_size = kBatch, .sampler = &sampler_, .drop_last = true}),
        next_(loader_.begin()) {}
  data::Batch next() {
    if (next_ == loader_.end()) {
      sampler_.set_epoch(++epoch_);
      next_ = loader_.begin();
    }
    data::Batch batch = *next_;
    ++next_;
    return batch;
  }

 private:
  data::DistributedSampler sampler_;
  data::DataLoader loader_;
  data::DataLoader::Iterator next_;
  int64_t epoch_ = 0;
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The straggler sleeps before each of its steps; everyone else gets none.
std::optional<parallel::StragglerDelay> delay_for(int rank, const std::optional<parallel::StragglerPlan>& plan) {
  if (!plan || plan->rank != rank) return std::nullopt;
  return parallel::StragglerDelay(*plan, kShuffleSeed);
}

// Every worker's loss records, on rank 0 (a collective).
std::vector<LossRecord> gather_losses(ProcessGroup& pg, const std::vector<LossRecord>& mine) {
  std::ostringstream text;
  text.precision(17);
  for (const LossRecord& r : mine) text << r.samples << ' ' << r.loss << '\n';
  std::vector<LossRecord> all;
  for (const std::string& rank_text : parallel::all_gather_strings(pg, text.str())) {
    std::istringstream in(rank_text);
    for (LossRecord r; in >> r.samples >> r.loss;) all.push_back(r);
  }
  std::sort(all.begin(), all.end(), [](const LossRecord& a, const LossRecord& b) { return a.samples < b.samples; });
  return all;
}

// Synchronous DDP on every rank: each step waits in the all-reduce for the slowest rank.
RunResult run_sync(const std::shared_ptr<ProcessGroup>& pg, const data::Dataset& set, const Settings& s,
                   const Mode& mode, const std::optional<parallel::StragglerPlan>& straggler) {
  auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
  parallel::DistributedDataParallel ddp(model, pg);
  optim::SGD opt(model->parameters(), {.lr = mode.lr, .momentum = kMomentum});
  BatchStream batches(set, s.train_images, pg->rank(), pg->size());
  std::optional<parallel::StragglerDelay> delay = delay_for(pg->rank(), straggler);
  std::vector<LossRecord> mine;
  pg->barrier();
  const auto start = Clock::now();
  for (int64_t step = 0; step < s.sync_steps; ++step) {
    if (delay) delay->maybe_sleep();
    const data::Batch batch = batches.next();
    opt.zero_grad();
    Variable loss = cross_entropy(ddp(batch.x), batch.y);
    loss.backward();  // the all-reduce inside waits for every rank: the straggler sets the pace
    opt.step();       // exact: the average of this step's N fresh gradients
    mine.push_back(record(step * pg->size() * kBatch, loss));
  }
  pg->barrier();
  RunResult result{mode, pg->size(), seconds_since(start), s.sync_steps * pg->size(), s.sync_steps, {}, {}};
  result.staleness = {result.gradients};
  result.losses = gather_losses(*pg, mine);
  return result;
}

// A worker of the parameter server: computes a gradient on the parameters it holds, pushes it
// and gets the server's newest parameters back, at its own pace, until the server's version
// reaches `last_version`.
std::vector<LossRecord> work(const std::shared_ptr<ProcessGroup>& pg, const data::Dataset& set, const Settings& s,
                             int64_t k, int64_t last_version, std::optional<parallel::StragglerDelay> delay) {
  auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
  parallel::AsyncWorker worker(model, pg);  // pulls the server's parameters
  BatchStream batches(set, s.train_images, pg->rank() - 1, pg->size() - 1);
  std::vector<LossRecord> mine;
  while (worker.version() < last_version) {
    if (delay) delay->maybe_sleep();
    const data::Batch batch = batches.next();
    Variable loss = cross_entropy((*model)(batch.x), batch.y);
    mine.push_back(record(worker.version() * k * kBatch, loss));
    loss.backward();
    worker.push();  // no waiting for the others (unless the staleness bound says so)
  }
  worker.finish();
  return mine;
}

// The asynchronous parameter server: rank 0 serves, ranks 1..N-1 work. Every run consumes
// about the samples of the synchronous run.
RunResult run_async(const std::shared_ptr<ProcessGroup>& pg, const data::Dataset& set, const Settings& s,
                    const Mode& mode, const std::optional<parallel::StragglerPlan>& straggler) {
  const int workers = pg->size() - 1;
  const int64_t k = mode.gradients_per_update > 0 ? mode.gradients_per_update : workers;
  const int64_t last_version = s.sync_steps * pg->size() / k;
  RunResult result{mode, workers, 0, 0, 0, {}, {}};
  std::vector<LossRecord> mine;
  pg->barrier();
  const auto start = Clock::now();
  if (pg->rank() == 0) {
    auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
    optim::SGD opt(model->parameters(), {.lr = mode.lr, .momentum = kMomentum});
    const parallel::AsyncPSOptions options{.max_staleness = mode.max_staleness, .gradients_per_update = k};
    const parallel::AsyncPSStats stats = parallel::run_parameter_server(model, opt, pg, options);
    result.seconds = seconds_since(start);
    result.gradients = stats.gradients;
    result.updates = stats.updates;
    result.staleness = stats.staleness_histogram;
  } else {
    mine = work(pg, set, s, k, last_version, delay_for(pg->rank(), straggler));
  }
  result.losses = gather_losses(*pg, mine);
  return result;
}

// The control for the roller coaster: its updates (one per gradient of b samples, at its lr)
// in one process on rank 0, where no gradient is ever stale. No straggler: nobody to wait for.
RunResult run_one_worker(const std::shared_ptr<ProcessGroup>& pg, const data::Dataset& set, const Settings& s,
                         const Mode& mode) {
  const int64_t gradients = s.sync_steps * pg->size();
  RunResult result{mode, 1, 0, gradients, gradients, {gradients}, {}};
  if (pg->rank() == 0) {
    auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
    optim::SGD opt(model->parameters(), {.lr = mode.lr, .momentum = kMomentum});
    BatchStream batches(set, s.train_images, 0, 1);
    const auto start = Clock::now();
    for (int64_t step = 0; step < gradients; ++step) {
      const data::Batch batch = batches.next();
      opt.zero_grad();
      Variable loss = cross_entropy((*model)(batch.x), batch.y);
      result.losses.push_back(record(step * kBatch, loss));
      loss.backward();
      opt.step();
    }
    result.seconds = seconds_since(start);
  }
  pg->barrier();
  return result;
}

// ---- what the runs show ----

// The loss curve: window means of the losses in the order of the samples trained on.
std::vector<report::Point> loss_curve(const RunResult& run) {
  std::vector<double> losses;
  for (const LossRecord& r : run.losses) losses.push_back(r.loss);
  return chapters::smoothed_curve(losses, static_cast<double>(kBatch) / 1000, kCurvePoints);
}

// The roller coaster, measured: the largest rise of the loss curve above its lowest point so
// far (a steadily falling curve scores only its noise).
double swing(const RunResult& run) {
  double lowest = std::numeric_limits<double>::infinity(), rise = 0;
  for (const report::Point& p : loss_curve(run)) {
    lowest = std::min(lowest, p.y);
    rise = std::max(rise, p.y - lowest);
  }
  return rise;
}

// The mean of the curve's last kFinalPoints points: where the run ended, less noisy than one window.
double final_loss(const RunResult& run) {
  const std::vector<report::Point> curve = loss_curve(run);
  const size_t first = curve.size() - std::min(curve.size(), kFinalPoints);
  double sum = 0;
  for (size_t i = first; i < curve.size(); ++i) sum += curve[i].y;
  return sum / static_cast<double>(curve.size() - first);
}

double mean_staleness(const RunResult& run) {
  double sum = 0, count = 0;
  for (size_t t = 0; t < run.staleness.size(); ++t) {
    sum += static_cast<double>(t * run.staleness[t]);
    count += static_cast<double>(run.staleness[t]);
  }
  return count > 0 ? sum / count : 0;
}

int64_t max_staleness(const RunResult& run) {
  for (size_t t = run.staleness.size(); t-- > 0;)
    if (run.staleness[t] > 0) return static_cast<int64_t>(t);
  return 0;
}

std::string bound_name(const Mode& mode) {
  if (mode.update != Update::asynchronous) return "-";
  return mode.max_staleness < 0 ? "none" : std::to_string(mode.max_staleness);
}

void print_table(const std::vector<RunResult>& runs) {
  report::Table table({"run", "workers", "k", "bound s", "lr", "time (s)", "samples/s", "updates", "staleness mean",
                       "max", "final loss", "swing"});
  for (const RunResult& r : runs) {
    const int64_t k = r.gradients / std::max<int64_t>(r.updates, 1);
    table.add_row({r.mode.name, std::to_string(r.workers), std::to_string(k), bound_name(r.mode), number(r.mode.lr),
                   number(r.seconds), number(r.samples_per_s()), std::to_string(r.updates), number(mean_staleness(r)),
                   std::to_string(max_staleness(r)), number(final_loss(r)), number(swing(r))});
  }
  table.print(std::cout);
}

// Staleness in power-of-two bins: 0, 1, 2-3, 4-7, ... (a straggler's gradients can be
// hundreds of versions late).
std::vector<std::string> staleness_bins(int64_t largest) {
  std::vector<std::string> bins{"0", "1"};
  for (int64_t low = 2; low <= largest; low *= 2)
    bins.push_back(std::to_string(low) + "-" + std::to_string(2 * low - 1));
  return bins;
}

std::vector<double> binned_shares(const RunResult& run, size_t bins) {
  std::vector<double> shares(bins, 0);
  for (size_t t = 0; t < run.staleness.size(); ++t) {
    const size_t bin = t < 2 ? t : static_cast<size_t>(std::floor(std::log2(static_cast<double>(t)))) + 1;
    shares[bin] += 100.0 * static_cast<double>(run.staleness[t]) / static_cast<double>(run.gradients);
  }
  return shares;
}

void save_pictures(const std::vector<RunResult>& runs, const std::filesystem::path& out) {
  std::vector<std::string> names;
  std::vector<double> throughput;
  int64_t largest = 1;
  report::LineChart loss({.title = "training loss (window means, clipped at 5)",
                          .x_label = "thousand samples trained on",
                          .y_label = "minibatch loss"});
  for (const RunResult& r : runs) {
    names.push_back(r.mode.name);
    throughput.push_back(r.samples_per_s());
    largest = std::max(largest, max_staleness(r));
    loss.add_series(r.mode.name, loss_curve(r));
  }
  loss.save(out / "loss.svg");
  report::BarChart speed({.title = "throughput with one straggler", .y_label = "samples / s"}, names);
  speed.add_series("samples/s", throughput).save(out / "throughput.svg");
  const std::vector<std::string> bins = staleness_bins(largest);
  report::BarChart staleness({.title = "gradient staleness (versions late)", .x_label = "staleness",
                              .y_label = "% of gradients", .y_scale = report::Scale::Log}, bins);
  for (const RunResult& r : runs)
    if (r.mode.update == Update::asynchronous) staleness.add_series(r.mode.name, binned_shares(r, bins.size()));
  staleness.save(out / "staleness.svg");
}

std::vector<Mode> modes(double lr, double coaster_lr) {
  const std::string coaster = "k=1, lr " + number(coaster_lr);
  return {{"sync DDP", Update::synchronous, 0, -1, lr},
          {"async", Update::asynchronous, 0, -1, lr},
          {"SSP s=1", Update::asynchronous, 0, 1, lr},
          {"async, " + coaster, Update::asynchronous, 1, -1, coaster_lr},
          {"one worker, " + coaster, Update::one_worker, 1, -1, coaster_lr}};
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_10_sync_vs_async", "synchronous DDP vs the asynchronous parameter server, one straggler",
                    5);
  bool no_straggler = false;
  double straggler_ms = 20, lr = 0.01, coaster_lr = 0.05;
  cli.add_flag("--no-straggler", no_straggler, "the mechanism removed: every worker runs at full speed");
  cli.add_option("--straggler-ms", straggler_ms, "the straggler's sleep before each of its steps");
  cli.add_option("--lr", lr, "the lr of the other runs (SGD, momentum 0.9)");
  cli.add_option("--coaster-lr", coaster_lr, "the lr of the roller-coaster run (one update per gradient)");
  const chapters::Flags flags = cli.parse(argc, argv);
  const Settings s = settings(flags.quick);
  const data::FashionMNIST train_set({.split = data::Split::Train});
  std::vector<RunResult> runs;
  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    RG_CHECK(pg->size() >= 3, "chapter 10 needs a server and two workers: --workers 3 or more (or mpirun -n 3+)");
    set_num_threads(1);  // one core per rank
    std::optional<parallel::StragglerPlan> straggler;  // the last rank: a worker in every run
    if (!no_straggler) straggler = parallel::StragglerPlan{pg->size() - 1, straggler_ms, 1};
    if (pg->rank() == 0)
      std::printf("%s; sync: %d ranks train; async: rank 0 serves, %d workers; batch %lld per gradient\n",
                  straggler ? ("rank " + std::to_string(pg->size() - 1) + " sleeps " + number(straggler_ms) +
                               " ms before each step").c_str()
                            : "--no-straggler: every rank at full speed",
                  pg->size(), pg->size() - 1, static_cast<long long>(kBatch));
    for (const Mode& mode : modes(lr, coaster_lr)) {
      RunResult r = mode.update == Update::synchronous    ? run_sync(pg, train_set, s, mode, straggler)
                    : mode.update == Update::asynchronous ? run_async(pg, train_set, s, mode, straggler)
                                                          : run_one_worker(pg, train_set, s, mode);
      if (pg->rank() == 0) runs.push_back(std::move(r));
    }
  });
  if (runs.empty()) return 0;  // an mpirun rank other than 0

  std::printf("\nload average %s, %d cores\n", chapters::load_average().c_str(), chapters::hardware_cores());
  print_table(runs);
  save_pictures(runs, flags.out);
  std::printf("pictures: %s/{loss,throughput,staleness}.svg\n", flags.out.c_str());

  // The rule (README): confirmed when (1) the straggler costs sync its throughput: async
  // (unbounded) trains at least 1.5x as many samples per second; (2) the roller coaster: the
  // k=1, high-lr async run's loss swings at least 3x as much as sync's and as the one-worker
  // control's at the same lr (so the staleness, not the lr, makes it swing); (3) async can be
  // fine: the unbounded async run at the base lr ends at a final loss at most 1.5x sync's.
  const RunResult &sync = runs[0], &async = runs[1], &ssp = runs[2], &coaster = runs[3], &alone = runs[4];
  const double speedup = async.samples_per_s() / sync.samples_per_s();
  const bool faster = speedup >= kFaster;
  const bool swings = swing(coaster) >= kSwingFactor * std::max(swing(sync), swing(alone));
  const bool fine = final_loss(async) <= kConverged * final_loss(sync);
  const std::string details =
      "async/sync throughput " + number(speedup) + "x (need >= " + number(kFaster) + ") with " +
      (no_straggler ? std::string("no straggler") : "a " + number(straggler_ms) + " ms straggler") +
      "; swing: roller coaster " + number(swing(coaster)) + " vs sync " + number(swing(sync)) + ", one worker " +
      number(swing(alone)) + " (need >= " + number(kSwingFactor) + "x both); final loss: async " +
      number(final_loss(async)) + " vs sync " + number(final_loss(sync)) + " (need <= " + number(kConverged) +
      "x); max staleness: async " + std::to_string(max_staleness(async)) + ", SSP s=1 " +
      std::to_string(max_staleness(ssp)) + ", roller coaster " + std::to_string(max_staleness(coaster));
  chapters::print_verdict("C10", faster && swings && fine, details);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
