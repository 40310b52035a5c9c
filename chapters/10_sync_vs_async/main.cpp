// Chapter 10 — claim C10: synchronous updates use exact gradients and converge steadily, but
// the slowest device holds everyone back; asynchronous updates never wait, but their gradients
// are stale, and the loss may swing like a roller coaster or not converge. One worker is made a
// straggler (it sleeps before every step); the same MLP trains on Fashion-MNIST under
// synchronous DDP and under the asynchronous parameter server (unbounded, and with a staleness
// bound: SSP), and in a roller-coaster setting (one update per gradient at a high lr), beside
// its control: the same updates in one process, where no gradient is stale. Per-rank
// timelines show who waits: sync's fast ranks for the straggler at every step, async's workers
// only for their turn at the server.
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
#include "parallel/gather_trace.h"
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
constexpr int64_t kTracedSteps = 3;    // sync steps 1..3 are drawn (step 0 warms up), async over the same ms

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
  bool traced = false;               // sync: steps 1..kTracedSteps; async: the whole run
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
  std::vector<report::TraceEvent> trace = {};  // traced runs, on rank 0: every rank's events (us from the run's start)
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

// One rank's trace of a run: what the rank does (its recorder, times from the run's start)
// and what the library reports doing (the observer, writing into it). Handed out only
// while tracing; null otherwise, which every recording call takes as "do nothing".
class RankTrace {
 public:
  RankTrace(int rank, Clock::time_point start) : recorder_(rank, start), observer_(&recorder_) {}
  report::TraceRecorder* recorder(bool on) { return on ? &recorder_ : nullptr; }
  parallel::Observer* observer(bool on) { return on ? &observer_ : nullptr; }
  std::vector<report::TraceEvent> events() const { return recorder_.events(); }

 private:
  report::TraceRecorder recorder_;
  parallel::TraceObserver observer_;
};

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
  RankTrace trace(pg->rank(), start);
  for (int64_t step = 0; step < s.sync_steps; ++step) {
    const bool traced = mode.traced && step >= 1 && step <= kTracedSteps;
    pg->set_observer(trace.observer(traced));  // the all-reduce, as the group runs it
    ddp.set_observer(trace.observer(traced));  // DDP's waits: for every rank to arrive, for the all-reduce
    report::TraceRecorder* recorder = trace.recorder(traced);
    if (delay) delay->maybe_sleep(trace.observer(traced));
    const data::Batch batch = batches.next();
    opt.zero_grad();
    Variable loss = [&] {
      report::TraceRecorder::Scope scope(recorder, "forward", "forward");
      return cross_entropy(ddp(batch.x), batch.y);
    }();
    {
      report::TraceRecorder::Scope scope(recorder, "backward", "backward");
      loss.backward();  // the all-reduce inside waits for every rank: the straggler sets the pace
    }
    {
      report::TraceRecorder::Scope scope(recorder, "optimizer step", "optimizer");
      opt.step();  // exact: the average of this step's N fresh gradients
    }
    mine.push_back(record(step * pg->size() * kBatch, loss));
  }
  pg->set_observer(nullptr);
  ddp.set_observer(nullptr);
  pg->barrier();
  RunResult result{mode, pg->size(), seconds_since(start), s.sync_steps * pg->size(), s.sync_steps, {}, {}};
  result.staleness = {result.gradients};
  result.losses = gather_losses(*pg, mine);
  if (mode.traced) result.trace = parallel::gather_trace(*pg, trace.events());
  return result;
}

// A worker of the parameter server: computes a gradient on the parameters it holds, pushes it
// and gets the server's newest parameters back, at its own pace, until the server's version
// reaches `last_version`. Its steps are traced into `recorder` and `observer` when they are set.
std::vector<LossRecord> work(const std::shared_ptr<ProcessGroup>& pg, const data::Dataset& set, const Settings& s,
                             int64_t k, int64_t last_version, std::optional<parallel::StragglerDelay> delay,
                             report::TraceRecorder* recorder, parallel::Observer* observer) {
  auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
  parallel::AsyncWorker worker(model, pg, observer);  // pulls the server's parameters
  BatchStream batches(set, s.train_images, pg->rank() - 1, pg->size() - 1);
  std::vector<LossRecord> mine;
  while (worker.version() < last_version) {
    if (delay) delay->maybe_sleep(observer);
    const data::Batch batch = batches.next();
    Variable loss = [&] {
      report::TraceRecorder::Scope scope(recorder, "forward", "forward");
      return cross_entropy((*model)(batch.x), batch.y);
    }();
    mine.push_back(record(worker.version() * k * kBatch, loss));
    {
      report::TraceRecorder::Scope scope(recorder, "backward", "backward");
      loss.backward();
    }
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
  RankTrace trace(pg->rank(), start);
  if (pg->rank() == 0) {
    auto model = chapters::seeded_model("mlp", data::image_shape(set), kModelSeed);
    optim::SGD opt(model->parameters(), {.lr = mode.lr, .momentum = kMomentum});
    const parallel::AsyncPSOptions options{
        .max_staleness = mode.max_staleness, .gradients_per_update = k, .observer = trace.observer(mode.traced)};
    const parallel::AsyncPSStats stats = parallel::run_parameter_server(model, opt, pg, options);
    result.seconds = seconds_since(start);
    result.gradients = stats.gradients;
    result.updates = stats.updates;
    result.staleness = stats.staleness_histogram;
  } else {
    mine = work(pg, set, s, k, last_version, delay_for(pg->rank(), straggler), trace.recorder(mode.traced),
                trace.observer(mode.traced));
  }
  result.losses = gather_losses(*pg, mine);
  if (mode.traced) result.trace = parallel::gather_trace(*pg, trace.events());
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

// ---- the timelines ----

// A stretch of a run, in us from its start.
struct Window {
  int64_t start_us = 0, end_us = 0;
  double ms() const { return static_cast<double>(end_us - start_us) / 1000; }
};

// The stretch sync's traced steps took.
Window traced_window(const std::vector<report::TraceEvent>& events) {
  Window w{std::numeric_limits<int64_t>::max(), 0};
  for (const report::TraceEvent& e : events) {
    w.start_us = std::min(w.start_us, e.start_us);
    w.end_us = std::max(w.end_us, e.start_us + e.duration_us);
  }
  return events.empty() ? Window{} : w;
}

// The events that start inside `window`: async's events over the ms that sync's traced steps took.
std::vector<report::TraceEvent> inside(const std::vector<report::TraceEvent>& events, Window window) {
  std::vector<report::TraceEvent> kept;
  for (const report::TraceEvent& e : events)
    if (e.start_us >= window.start_us && e.start_us < window.end_us) kept.push_back(e);
  return kept;
}

// The share of `window` that ranks [first, last] spent, on average, in events of `categories`
// (waits, one after the other on a rank's main thread: they do not overlap).
double time_share(const std::vector<report::TraceEvent>& events, const std::vector<std::string>& categories,
                  int first, int last, Window window) {
  int64_t us = 0;
  for (const report::TraceEvent& e : events)
    if (std::count(categories.begin(), categories.end(), e.category) && e.rank >= first && e.rank <= last)
      us += e.duration_us;
  return static_cast<double>(us) / (static_cast<double>(window.end_us - window.start_us) * (last - first + 1));
}

int64_t count_events(const std::vector<report::TraceEvent>& events, const std::string& category, int rank) {
  return std::count_if(events.begin(), events.end(),
                       [&](const report::TraceEvent& e) { return e.category == category && e.rank == rank; });
}

// Both timelines colour a category alike: the straggler's sleep, compute, then sync's waits
// (parallel/ddp.h), the parameter server's pushes and pulls (parallel/async.h), sync's all-reduces.
const std::vector<std::string> kCategories{"straggler", "forward", "backward", "optimizer", "agree",
                                           "wait",      "push",    "pull",     "comm",      "launch"};

// Draws both timelines and prints what they show: how much of the traced steps sync's ranks
// spent waiting for one another in DDP's backward (for every rank to arrive: "agree"; for the
// all-reduce to end: "wait"), and what async's workers did in as many milliseconds.
void save_timelines(const RunResult& sync, const RunResult& async, bool straggler, const std::filesystem::path& out) {
  const int last = sync.workers - 1;  // the straggler's rank (when there is one)
  const std::string last_name = "rank " + std::to_string(last) + (straggler ? " (straggler)" : "");
  const Window window = traced_window(sync.trace);
  const std::vector<report::TraceEvent> async_events = inside(async.trace, window);
  const std::string steps = "steps 1-" + std::to_string(kTracedSteps);
  report::to_timeline(sync.trace, {.title = "sync DDP, " + steps + ": one lane per rank"})
      .set_category_order(kCategories)
      .set_lane_name(last, last_name)
      .save(out / "timeline_sync.svg");
  report::to_timeline(async_events, {.title = "async parameter server, the same " + number(window.ms()) +
                                              " ms of its run (" + number(window.start_us / 1000.0) + "-" +
                                              number(window.end_us / 1000.0) + " ms)"})
      .set_category_order(kCategories)
      .set_lane_name(0, "rank 0 (server)")
      .set_lane_name(last, last_name)
      .save(out / "timeline_async.svg");

  const auto percent = [&](const std::vector<report::TraceEvent>& events, const std::vector<std::string>& categories,
                           int first, int final) {
    return number(100 * time_share(events, categories, first, final, window));
  };
  const std::vector<std::string> waits{"agree", "wait"};
  std::printf("timeline sync: %s took %s ms; ranks 0-%d waited for the other ranks %s%% of it, %s %s%%\n",
              steps.c_str(), number(window.ms()).c_str(), last - 1, percent(sync.trace, waits, 0, last - 1).c_str(),
              last_name.c_str(), percent(sync.trace, waits, last, last).c_str());
  std::string pushes;
  for (int rank = 1; rank <= last; ++rank)
    pushes += (rank > 1 ? ", " : "") + std::to_string(count_events(async_events, "push", rank));
  std::printf("timeline async (the same ms): gradients pushed by ranks 1-%d: %s; ranks 1-%d spent %s%% of it pushing "
              "and pulling (in turn at the server, busy %s%%)\n",
              last, pushes.c_str(), last - 1, percent(async_events, {"push", "pull"}, 1, last - 1).c_str(),
              percent(async_events, {"push", "pull", "optimizer"}, 0, 0).c_str());
}

std::vector<Mode> modes(double lr, double coaster_lr) {
  const std::string coaster = "k=1, lr " + number(coaster_lr);
  return {{"sync DDP", Update::synchronous, 0, -1, lr, true},
          {"async", Update::asynchronous, 0, -1, lr, true},
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
  save_timelines(runs[0], runs[1], !no_straggler, flags.out);
  std::printf("pictures: %s/{loss,throughput,staleness,timeline_sync,timeline_async}.svg\n", flags.out.c_str());

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
