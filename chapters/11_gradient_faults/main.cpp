// Chapter 11 — claim C11: after the all-reduce every replica's parameters are identical; if
// they are not, gradient synchronisation broke. One rank's gradient goes wrong at a chosen step,
// through a comm hook around DDP's all-reduce (parallel/fault.h). Corrupted after the
// all-reduce, that rank's replica drifts away, and DDP's consistency check (check_every = 1)
// stops the next forward naming the step, the parameter and the rank. Dropped (the rank sends
// zeros), every rank applies the same wrong average: the replicas stay identical, the check
// passes, and only the loss, against a clean run's, shows it.
// Usage: chapter_11_gradient_faults [--quick] [--workers 3] [--fault RANK:STEP] [--steps K] [--no-check]
//        mpirun -n 3 chapter_11_gradient_faults
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/replicas.h"
#include "chapters/common/training.h"
#include "parallel/replica_checks.h"
#include "ringgrad.h"

using namespace rg;
using parallel::GradientFault;
using parallel::ProcessGroup;

namespace {

constexpr uint64_t kSeed = 0;

struct Config {
  int64_t steps = 0;
  int64_t local_batch = 64;
  parallel::GradientFaultPlan fault;  // which rank, at which step (its kind: each run's own)
  int64_t check_every = 1;            // 0 with --no-check: the mechanism removed
};

// One training run, as every rank saw it.
struct RunRecord {
  std::string name;            // "clean", "dropped", "corrupted"
  std::vector<double> loss;    // per step: the mean of the ranks' losses
  std::vector<double> spread;  // per step, after its update: max |p_a - p_b| between replicas
  std::string check_error;     // what DDP's consistency check said when it stopped the run, or ""
  int64_t stopped_at = 0;      // the step whose forward the check refused (0: none did)
  // The parameter a corrupt fault changes: the gradient bucket 0 holds first, which is the
  // last-registered parameter's (buckets follow the reverse registration order).
  std::string spoiled;
};

double mean_over_ranks(ProcessGroup& pg, double mine) {
  Tensor value = Tensor::from_vector(std::vector<double>{mine}, {1});
  pg.all_reduce(value, {.op = parallel::ReduceOp::avg});
  return value.item();
}

// `steps` steps of DDP training; with `fault`, the faulty rank's gradient goes wrong in its step.
RunRecord train(const std::shared_ptr<ProcessGroup>& pg, const Config& config, std::optional<GradientFault> fault,
                const data::Dataset& dataset) {
  const int rank = pg->rank();
  auto model = chapters::seeded_model("mlp", data::image_shape(dataset), kSeed);
  // "All-Reduce完成后，每张卡上的模型参数是完全一致的" (after the all-reduce every card's
  // parameters are identical): with check_every = 1, before every forward the ranks compare a
  // checksum of every parameter, and "如果你发现各卡参数不一致，那一定是梯度同步出了问题".
  parallel::DistributedDataParallel ddp(model, pg, {.check_every = config.check_every});
  // The fault is a comm hook wrapped around DDP's own (the averaging all-reduce of each bucket).
  parallel::GradientFaultInjector injector;
  ddp.register_comm_hook(injector.wrap(ddp.comm_hook()));
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  nn::CrossEntropyLoss loss_fn;
  data::DistributedSampler shard(dataset.size(), {.num_replicas = pg->size(), .rank = rank, .seed = kSeed});
  data::DataLoader loader(dataset, {.batch_size = config.local_batch, .sampler = &shard, .drop_last = true});

  RunRecord record;
  record.name = !fault ? "clean" : *fault == GradientFault::drop ? "dropped" : "corrupted";
  record.spoiled = parallel::trainable_parameters(*model).back().name;
  int64_t step = 0;
  for (int64_t epoch = 0; step < config.steps; ++epoch) {
    shard.set_epoch(epoch);
    for (auto& [x, y] : loader) {
      if (++step > config.steps) break;
      // "某张卡的网络连接不稳定，丢包了" (one card's link was unstable and lost packets): this
      // rank's contribution is dropped or damaged, in this step only.
      if (fault && rank == config.fault.rank && step == config.fault.step) injector.arm(*fault);
      Variable loss;
      try {
        loss = loss_fn(ddp(x), y);  // DDP checks the replicas first: every rank throws, or none does
      } catch (const Error& e) {
        if (std::string(e.what()).find("check_consistency") == std::string::npos) throw;
        record.check_error = e.what();
        record.stopped_at = step;
        return record;
      }
      opt.zero_grad();
      loss.backward();  // the all-reduce, through the injector's hook
      opt.step();       // the same update on every rank, unless a rank's gradient was changed after it
      record.loss.push_back(mean_over_ranks(*pg, loss.item()));
      record.spread.push_back(chapters::replica_spread(*pg, *model));  // measured from outside DDP
    }
  }
  return record;
}

double largest(const std::vector<double>& values, size_t from = 0, size_t to = SIZE_MAX) {
  double worst = 0;
  for (size_t i = from; i < std::min(to, values.size()); ++i) worst = std::max(worst, values[i]);
  return worst;
}

// |a[i] - b[i]| over the steps both runs took.
std::vector<double> loss_gap(const RunRecord& run, const RunRecord& clean) {
  std::vector<double> gap;
  for (size_t i = 0; i < std::min(run.loss.size(), clean.loss.size()); ++i)
    gap.push_back(std::abs(run.loss[i] - clean.loss[i]));
  return gap;
}

void print_setup(const Config& config, int ranks) {
  std::printf("%d ranks x batch %lld, MLP, SGD lr 0.05 momentum 0.9, %lld steps per run, consistency check %s; "
              "fault: rank %d's gradient in step %lld\n",
              ranks, static_cast<long long>(config.local_batch), static_cast<long long>(config.steps),
              config.check_every ? "before every forward" : "OFF", config.fault.rank,
              static_cast<long long>(config.fault.step));
}

// What DDP's check did in a run.
std::string outcome(const RunRecord& run, const Config& config) {
  if (!run.check_error.empty())
    return "the consistency check stopped the forward of step " + std::to_string(run.stopped_at) + ": " +
           run.check_error;
  return std::to_string(run.loss.size()) + " steps, the consistency check " +
         (config.check_every ? "passed before every forward" : "never ran");
}

void print_table(const std::vector<RunRecord>& runs, const Config& config) {
  std::set<size_t> shown;
  for (size_t k : chapters::shown_steps(1, static_cast<size_t>(config.steps))) shown.insert(k);
  for (int64_t k = config.fault.step - 1; k <= config.fault.step + 2; ++k)
    if (k >= 1 && k <= config.steps) shown.insert(static_cast<size_t>(k));
  std::vector<std::string> header{"step"};
  for (const RunRecord& run : runs) header.push_back("loss " + run.name);
  for (const RunRecord& run : runs) header.push_back("max |p_a - p_b| " + run.name);
  report::Table table(header);
  auto cell = [](const std::vector<double>& values, size_t k) {
    return k <= values.size() ? chapters::number(values[k - 1], 4) : std::string("stopped");
  };
  for (size_t k : shown) {
    std::vector<std::string> row{std::to_string(k) + (static_cast<int64_t>(k) == config.fault.step ? " (fault)" : "")};
    for (const RunRecord& run : runs) row.push_back(cell(run.loss, k));
    for (const RunRecord& run : runs) row.push_back(cell(run.spread, k));
    table.add_row(row);
  }
  table.print(std::cout);
  for (const RunRecord& run : runs) std::printf("%s run: %s\n", run.name.c_str(), outcome(run, config).c_str());
}

void draw(const std::vector<RunRecord>& runs, const Config& config, const std::filesystem::path& out) {
  auto steps_of = [](const std::vector<double>& values) {
    std::vector<report::Point> points;
    for (size_t i = 0; i < values.size(); ++i) points.push_back({static_cast<double>(i + 1), values[i]});
    return points;
  };
  const std::string fault = "rank " + std::to_string(config.fault.rank) + ", step " + std::to_string(config.fault.step);
  report::LineChart loss({.title = "training loss (mean over the ranks); fault: " + fault, .x_label = "step",
                          .y_label = "cross-entropy"});
  report::LineChart gap({.title = "|loss - the clean run's loss| (0 is not drawn on the log axis)", .x_label = "step",
                         .y_label = "|loss difference|", .y_scale = report::Scale::Log});
  report::LineChart spread({.title = "largest difference between replicas, after each step; fault: " + fault,
                            .x_label = "step", .y_label = "max |p_a - p_b| over ranks a, b"});
  for (const RunRecord& run : runs) {
    loss.add_series(run.name, steps_of(run.loss));
    if (run.name != "clean") gap.add_series(run.name, steps_of(loss_gap(run, runs.front())));
    spread.add_series(run.name, steps_of(run.spread));
  }
  for (auto [chart, file] :
       {std::pair{&loss, "loss.svg"}, {&gap, "loss_difference.svg"}, {&spread, "replica_difference.svg"}}) {
    chart->save(out / file);
    std::printf("wrote %s\n", (out / file).c_str());
  }
}

// What the corrupted run showed: did the check stop it right after the faulty step, and did
// its message name that step, the spoiled parameter and the faulty rank (as the odd one out of
// the rank sums when there are 3 ranks or more)?
struct CatchReport {
  bool stopped_next_forward = false, names_step = false, names_parameter = false, names_rank = false;
  bool all() const { return stopped_next_forward && names_step && names_parameter && names_rank; }
};

CatchReport judge_catch(const RunRecord& corrupted, const Config& config, int ranks) {
  auto says = [&](const std::string& text) { return corrupted.check_error.find(text) != std::string::npos; };
  const std::string rank = "rank " + std::to_string(config.fault.rank) + " (sum ";
  return {.stopped_next_forward = corrupted.stopped_at == config.fault.step + 1,
          .names_step = says("so it happened in step " + std::to_string(config.fault.step) + " "),
          .names_parameter = says("parameter '" + corrupted.spoiled + "'"),
          .names_rank = says(rank) && (ranks < 3 || says(") vs the other "))};
}

// "caught at the forward of step 11, naming the step yes, ..." or "not caught (...)".
std::string describe_catch(const RunRecord& corrupted, const CatchReport& c, const Config& config) {
  auto yes = [](bool b) { return b ? "yes" : "no"; };
  if (corrupted.stopped_at > 0)
    return "caught at the forward of step " + std::to_string(corrupted.stopped_at) + ", naming the step " +
           yes(c.names_step) + ", parameter '" + corrupted.spoiled + "' " + yes(c.names_parameter) + ", the rank " +
           yes(c.names_rank);
  return "not caught (" + std::string(config.check_every ? "the check passed" : "no check ran") +
         "), replicas apart by " + chapters::number(largest(corrupted.spread)) + " at the end";
}

// The verdict rule (README): confirmed when all hold —
//   clean: no check error, the replicas identical (max |p_a - p_b| = 0) after every step;
//   corrupted: the check stopped the forward right after the faulty step, its message naming
//     that step, the parameter the fault spoiled and the faulty rank (as the odd one out when
//     there are 3 ranks or more), and the replicas measured apart after the faulty step;
//   dropped: no check error, the replicas identical after every step, the loss equal to the
//     clean run's through the faulty step and differing by more than 1e-4 at some step after it.
void verdict(const std::vector<RunRecord>& runs, const Config& config, int ranks) {
  const RunRecord &clean = runs[0], &dropped = runs[1], &corrupted = runs[2];
  const auto fault_step = static_cast<size_t>(config.fault.step);
  const CatchReport caught = judge_catch(corrupted, config, ranks);
  const double corrupted_spread = corrupted.spread.size() >= fault_step ? corrupted.spread[fault_step - 1] : 0;
  const std::vector<double> dropped_gap = loss_gap(dropped, clean);
  const double gap_before = largest(dropped_gap, 0, fault_step), gap_after = largest(dropped_gap, fault_step);

  const bool clean_ok = clean.check_error.empty() && largest(clean.spread) == 0;
  const bool corrupted_ok = caught.all() && corrupted_spread > 0;
  const bool dropped_ok =
      dropped.check_error.empty() && largest(dropped.spread) == 0 && gap_before == 0 && gap_after > 1e-4;

  const std::string step = std::to_string(config.fault.step);
  const std::string dropped_check = !dropped.check_error.empty() ? "caught"
                                    : config.check_every         ? "the check passed"
                                                                 : "no check ran";
  const std::string details =
      "fault on rank " + std::to_string(config.fault.rank) + " of " + std::to_string(ranks) + " in step " + step +
      " of " + std::to_string(config.steps) + "; corrupted: " + describe_catch(corrupted, caught, config) +
      ", max |p_a - p_b| " + chapters::number(corrupted_spread) + " after step " + step +
      ", loss vs clean max |diff| " + chapters::number(largest(loss_gap(corrupted, clean))) + "; dropped: " +
      dropped_check + ", max |p_a - p_b| " + chapters::number(largest(dropped.spread)) + ", loss vs clean max |diff| " +
      chapters::number(gap_before) + " through step " + step + ", " + chapters::number(gap_after) +
      " after; clean: max |p_a - p_b| " + chapters::number(largest(clean.spread));
  chapters::print_verdict("C11", clean_ok && corrupted_ok && dropped_ok, details);
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_11_gradient_faults",
                    "a damaged gradient is caught by the consistency check, a lost one only shows in the loss", 3);
  std::string fault_spec;
  int steps = 0;
  bool no_check = false;
  cli.add_option("--fault", fault_spec,
                 "RANK:STEP of the fault (default: the last rank, step 10, or 100 in full mode); both kinds are run");
  cli.add_option("--steps", steps, "steps per run (0: one epoch of the shard; --quick: 30)");
  cli.add_flag("--no-check", no_check, "turn DDP's consistency check off (check_every = 0): the mechanism removed");
  const chapters::Flags flags = cli.parse(argc, argv);

  data::FashionMNIST dataset({.split = data::Split::Train});
  Config config;
  config.steps = steps > 0 ? steps : flags.quick ? 30 : dataset.size() / (config.local_batch * flags.workers);
  const std::string default_fault = std::to_string(flags.workers - 1) + ":" + (flags.quick ? "10" : "100");
  config.fault = parallel::parse_gradient_fault(fault_spec.empty() ? default_fault : fault_spec, flags.workers);
  RG_CHECK(config.fault.step < config.steps, "--fault: step ", config.fault.step, " must come before the last step (",
           config.steps, "), so that a forward follows it");
  config.check_every = no_check ? 0 : 1;

  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    if (pg->rank() == 0) print_setup(config, pg->size());
    // The same training three times: untouched, one contribution lost, one damaged.
    std::vector<RunRecord> runs{train(pg, config, std::nullopt, dataset),
                                train(pg, config, GradientFault::drop, dataset),
                                train(pg, config, GradientFault::corrupt, dataset)};
    if (pg->rank() != 0) return;
    print_table(runs, config);
    draw(runs, config, flags.out);
    verdict(runs, config, pg->size());
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
