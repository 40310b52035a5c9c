// Chapter 03 — claim C03: the replicas start identical and must stay identical after every
// update, or they "drift" and the model is ruined. After every step each rank fingerprints
// its parameters (a 64-bit hash of each tensor's bytes) and the ranks compare them; the
// largest difference between any two replicas is measured too. One rank starts from another
// seed, as a process nobody told the seed would: DDP's initial broadcast of rank 0's model
// repairs that; the same run without the broadcast shows what the replicas do then.
// Usage: chapter_03_replica_consistency [--quick] [--workers 4] [--steps K] [--no-broadcast]
//        mpirun -n 4 chapter_03_replica_consistency
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/replicas.h"
#include "chapters/common/training.h"
#include "parallel/flat_parameters.h"
#include "ringgrad.h"

using namespace rg;
using parallel::ProcessGroup;

namespace {

constexpr int64_t kProbeImages = 500;  // test images every replica classifies after each step

struct Config {
  int64_t local_batch = 32;
  int64_t steps = 0;  // 0: one epoch of this rank's shard
  uint64_t seed = 0;  // every rank's but the last, which uses seed + 1
  int64_t test_batches = 0;
};

// What every rank holds after one step, as rank 0 sees it.
struct StepRecord {
  std::vector<std::vector<uint64_t>> fingerprints;  // [rank][tensor]
  int differing_tensors = 0;                         // tensors whose fingerprint is not the same on all ranks
  double max_difference = 0;                         // max |p_a - p_b| over parameters and pairs of ranks
  double disagreement = 0;  // largest share of the probe images a replica classifies unlike rank 0's
};

struct RunResult {
  bool broadcast = true;
  std::vector<std::string> names;      // the parameters, in order
  std::vector<StepRecord> steps;       // [0]: after construction, [k]: after step k
  std::vector<double> test_accuracy;  // per rank, at the end
  std::string library_check;           // what DDP's own check_consistency() said
};

// Every rank's `mine`, rank by rank (a collective).
template <class T>
std::vector<std::vector<T>> gather(ProcessGroup& pg, const std::vector<T>& mine) {
  const auto n = static_cast<int64_t>(mine.size());
  const Tensor input = Tensor::from_vector(mine, {n});
  const Tensor all = Tensor::zeros({pg.size() * n}, input.dtype());
  pg.all_gather(all, input);
  const std::vector<T> values = all.to_vector<T>();
  std::vector<std::vector<T>> rows;
  for (int r = 0; r < pg.size(); ++r) rows.emplace_back(values.begin() + r * n, values.begin() + (r + 1) * n);
  return rows;
}

// The fingerprints and the spread of the replicas, and what they predict for the same images.
StepRecord compare_replicas(ProcessGroup& pg, nn::Module& model, const Tensor& probe) {
  std::vector<int64_t> mine;
  for (const Variable& p : model.parameters())
    mine.push_back(static_cast<int64_t>(parallel::hash_tensor(p.data())));  // a fingerprint per tensor
  StepRecord record;
  for (const auto& row : gather(pg, mine)) record.fingerprints.emplace_back(row.begin(), row.end());
  for (size_t i = 0; i < mine.size(); ++i)
    for (const auto& rank_row : record.fingerprints)
      if (rank_row[i] != record.fingerprints[0][i]) {
        ++record.differing_tensors;
        break;
      }
  record.max_difference = chapters::replica_spread(pg, model);
  record.disagreement = chapters::prediction_disagreement(pg, model, probe);
  return record;
}

// DDP's own check (the collective that check_every runs): "" when it passes.
std::string library_check(parallel::DistributedDataParallel& ddp) {
  try {
    ddp.check_consistency();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

RunResult train_and_compare(const std::shared_ptr<ProcessGroup>& pg, bool broadcast, const Config& config,
                            const data::Dataset& train, const data::Dataset& test) {
  const int rank = pg->rank(), n = pg->size();
  // One rank starts from another seed: its replica is a different model.
  const uint64_t my_seed = rank == n - 1 && n > 1 ? config.seed + 1 : config.seed;
  auto model = chapters::seeded_model("mlp", data::image_shape(train), my_seed);
  // Replicas start identical: DDP broadcasts rank 0's parameters (unless init_sync is off).
  parallel::DistributedDataParallel ddp(model, pg, {.init_sync = broadcast});
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  nn::CrossEntropyLoss loss_fn;
  data::DistributedSampler shard(train.size(), {.num_replicas = n, .rank = rank, .shuffle = true, .seed = config.seed});
  data::DataLoader loader(train, {.batch_size = config.local_batch, .sampler = &shard, .drop_last = true});

  data::DataLoader test_loader(test, {.batch_size = kProbeImages});
  const Tensor probe = (*test_loader.begin()).x;  // the same test images on every rank

  RunResult result;
  result.broadcast = broadcast;
  for (const auto& [name, p] : model->named_parameters()) result.names.push_back(name);
  result.steps.push_back(compare_replicas(*pg, *model, probe));  // step 0: as they start
  for (int epoch = 0; static_cast<int64_t>(result.steps.size()) <= config.steps; ++epoch) {
    shard.set_epoch(epoch);
    for (auto& [x, y] : loader) {
      opt.zero_grad();
      loss_fn(ddp(x), y).backward();  // every replica gets the same averaged gradient ...
      opt.step();                     // ... and takes the same update
      result.steps.push_back(compare_replicas(*pg, *model, probe));  // must stay identical, step after step
      if (static_cast<int64_t>(result.steps.size()) > config.steps) break;
    }
  }
  result.library_check = library_check(ddp);
  const double accuracy = models::evaluate(*model, test_loader, Device::cpu(), config.test_batches).accuracy();
  result.test_accuracy = chapters::gather_numbers(*pg, accuracy);
  return result;
}

std::string short_hex(uint64_t fingerprint) {
  char text[20];
  std::snprintf(text, sizeof text, "%08llx", static_cast<unsigned long long>(fingerprint >> 32));
  return text;
}

void print_run(const RunResult& run) {
  const size_t ranks = run.test_accuracy.size(), tensors = run.names.size();
  std::printf("\n%s: fingerprint of %s (first 32 of 64 bits) per rank, tensors equal on all ranks, "
              "max |p_a - p_b| between replicas\n",
              run.broadcast ? "with the initial broadcast" : "WITHOUT the initial broadcast", run.names[0].c_str());
  std::vector<std::string> header{"step"};
  for (size_t r = 0; r < ranks; ++r) header.push_back("rank " + std::to_string(r));
  header.insert(header.end(), {"equal tensors", "max |p_a - p_b|", "predictions unlike rank 0's"});
  report::Table table(header);
  for (size_t k : chapters::shown_steps(0, run.steps.size() - 1)) {
    const StepRecord& s = run.steps[k];
    std::vector<std::string> row{std::to_string(k)};
    for (size_t r = 0; r < ranks; ++r) row.push_back(short_hex(s.fingerprints[r][0]));
    row.push_back(std::to_string(tensors - s.differing_tensors) + "/" + std::to_string(tensors));
    row.push_back(chapters::number(s.max_difference));
    row.push_back(report::Table::number(100 * s.disagreement, 1) + "%");
    table.add_row(row);
  }
  table.print(std::cout);
  std::printf("test accuracy per replica:");
  for (size_t r = 0; r < ranks; ++r) std::printf(" rank %zu %.2f%%", r, 100 * run.test_accuracy[r]);
  std::printf("\nDDP's check_consistency() after the last step: %s\n",
              run.library_check.empty() ? "passes" : run.library_check.c_str());
}

// One line per run of `value` (a StepRecord field) against the step, written to out/file.
void draw(const std::vector<RunResult>& runs, double StepRecord::*value, report::ChartOptions options,
          const std::filesystem::path& path) {
  report::LineChart chart(std::move(options));
  for (const RunResult& run : runs) {
    std::vector<report::Point> points;
    for (size_t k = 0; k < run.steps.size(); ++k) points.push_back({double(k), run.steps[k].*value});
    chart.add_series(run.broadcast ? "with the initial broadcast" : "without it (one rank's own seed)", points);
  }
  chart.save(path);
  std::printf("wrote %s\n", path.c_str());
}

// The verdict rule (README): confirmed when, in the chapter's main run, every tensor's
// fingerprint is the same on all ranks from construction (step 0) through the last step, and
// the replicas' largest difference is exactly 0 throughout.
void verdict(const std::vector<RunResult>& runs) {
  const RunResult& main = runs.front();
  int worst_tensors = 0;
  double worst_difference = 0;
  for (const StepRecord& s : main.steps) {
    worst_tensors = std::max(worst_tensors, s.differing_tensors);
    worst_difference = std::max(worst_difference, s.max_difference);
  }
  const size_t ranks = main.test_accuracy.size();
  std::string details = "fingerprints of " + std::to_string(main.names.size()) + " tensors on " +
                        std::to_string(ranks) + " ranks after each of " + std::to_string(main.steps.size() - 1) +
                        " steps (" + (main.broadcast ? "with" : "without") + " the initial broadcast): differing in " +
                        std::to_string(worst_tensors) + " at worst, max |p_a - p_b| " + chapters::number(worst_difference);
  if (runs.size() > 1) {
    const RunResult& drift = runs.back();
    details += "; without the broadcast: " + std::to_string(drift.steps.back().differing_tensors) + " differ, max |p_a - p_b| " +
               chapters::number(drift.steps.front().max_difference) + " at step 0, " +
               chapters::number(drift.steps.back().max_difference) + " at the last, predictions unlike rank 0's on " +
               report::Table::number(100 * drift.steps.back().disagreement, 1) + "% of " + std::to_string(kProbeImages) +
               " test images";
  }
  chapters::print_verdict("C03", worst_tensors == 0 && worst_difference == 0, details);
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_03_replica_consistency", "replicas stay bit-identical, step after step", 4);
  Config config;
  bool no_broadcast = false;
  int steps = 0;
  cli.add_option("--steps", steps, "training steps (0: one epoch; --quick: 30)");
  cli.add_flag("--no-broadcast", no_broadcast,
               "skip DDP's initial broadcast (init_sync off) in the main run: the odd rank keeps its own model");
  const chapters::Flags flags = cli.parse(argc, argv);

  data::FashionMNIST train({.split = data::Split::Train}), test({.split = data::Split::Test});
  config.steps = steps > 0 ? steps : flags.quick ? 30 : train.size() / (config.local_batch * flags.workers);
  config.test_batches = flags.quick ? 2 : 0;
  std::printf("%d ranks x batch %lld, MLP, SGD lr 0.05 momentum 0.9; rank %d starts from seed %llu, the others "
              "from seed %llu\n",
              flags.workers, static_cast<long long>(config.local_batch), flags.workers - 1,
              static_cast<unsigned long long>(config.seed + 1), static_cast<unsigned long long>(config.seed));

  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    // The main run, then (unless it already is) the same run without the broadcast, for contrast.
    std::vector<RunResult> runs{train_and_compare(pg, !no_broadcast, config, train, test)};
    if (!no_broadcast) runs.push_back(train_and_compare(pg, false, config, train, test));
    if (pg->rank() != 0) return;
    for (const RunResult& run : runs) print_run(run);
    std::printf("\n");
    draw(runs, &StepRecord::max_difference,
         {.title = "largest difference between replicas, after each step", .x_label = "step",
          .y_label = "max |p_a - p_b| over ranks a, b"},
         flags.out / "replica_difference.svg");
    draw(runs, &StepRecord::disagreement,
         {.title = "test images a replica classifies unlike rank 0", .x_label = "step",
          .y_label = "share of 500 test images"},
         flags.out / "prediction_disagreement.svg");
    verdict(runs);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
