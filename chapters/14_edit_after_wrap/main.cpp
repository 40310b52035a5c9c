// Chapter 14 — claim C14: editing a parameter by hand after wrapping the model in DDP makes
// the replicas inconsistent and training collapses. One rank scales one weight of its
// replica after step E; DDP averages gradients, never parameters, so the replicas stay apart
// for good, and the edited replica's gradients, averaged in, ruin rank 0's too (the
// divergence, step by step). Then the framework catching it, with the parameter and the
// rank named: DDP's consistency check every K forwards (DDPOptions::check_every), the
// debug switch RINGGRAD_DISTRIBUTED_DEBUG=DETAIL (the check at every forward), and a
// parameter *replaced* after wrapping. --no-check turns both checks off: nothing is caught.
// Usage: chapter_14_edit_after_wrap [--quick] [--workers 2] [--steps S] [--edit-step E]
//        [--check-every K] [--edit-scale F] [--no-check]      mpirun -n 2 chapter_14_edit_after_wrap
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/replicas.h"
#include "chapters/common/training.h"
#include "ringgrad.h"

using namespace rg;
using parallel::ProcessGroup;

namespace {

constexpr const char* kEdited = "3.weight";  // the MLP's middle layer (fc2), 256 -> 128
constexpr int64_t kProbeImages = 500;        // test images every replica is asked about after each step

struct Config {
  int64_t steps = 500;
  int64_t edit_step = 20;   // the edit happens after this step
  int64_t check_every = 5;
  double edit_scale = 30;   // the edited rank multiplies kEdited by this (1: no edit)
  bool check = true;        // --no-check: check_every 0 and no debug switch
  int64_t local_batch = 64;
};

// One row of the divergence table: after `step`, how far apart the replicas are.
struct StepRecord {
  int64_t step = 0;
  double spread = 0;              // max |p_rank0 - p_rank| over all parameters and ranks
  double loss_rank0 = 0, loss_edited = 0;  // on the probe images
  double disagreement = 0;        // share of probe images a replica classifies unlike rank 0's
};

// What a checked run saw: the forward at which DDP threw, and what it said.
struct Caught {
  bool caught = false;
  int64_t forward = 0;  // the forward that threw (counted from 1, like the steps)
  std::string message;
};

struct Results {
  std::vector<StepRecord> divergence;
  double baseline_loss = 0;  // the probe loss at the end of the same run without the edit
  Caught by_check, by_debug, by_replacement;
  bool replacement_run = false;
};

enum class Edit { scale, replace };

struct World {
  const data::Dataset& train;
  Tensor probe_x, probe_y;
};

// The pitfall, on one replica: a hand edit of a wrapped parameter's values, or a new
// Variable in its place (with the same values: only its identity changed).
void edit_by_hand(models::MLP& model, Edit edit, double scale) {
  Variable& weight = model.fc2->parameter("weight");
  if (edit == Edit::scale) {
    weight.data().mul_(scale);  // "在DDP包装模型后，又手动去修改了模型的参数"
  } else {
    weight = Variable(weight.data().clone(), true);
  }
}

// Trains config.steps steps from seed 0; the last rank edits its replica right after step
// config.edit_step; after_step(step, model) runs after each step. Returns what DDP threw.
template <class AfterStep>
Caught train(const std::shared_ptr<ProcessGroup>& pg, const World& world, const Config& config,
             const parallel::DDPOptions& options, Edit edit, AfterStep after_step) {
  const int rank = pg->rank(), edited = pg->size() - 1;
  auto model = std::dynamic_pointer_cast<models::MLP>(chapters::seeded_model("mlp", data::image_shape(world.train), 0));
  parallel::DistributedDataParallel ddp(model, pg, options);  // from here on DDP manages the parameters
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  nn::CrossEntropyLoss loss_fn;
  data::DistributedSampler shard(world.train.size(), {.num_replicas = pg->size(), .rank = rank});
  data::DataLoader loader(world.train, {.batch_size = config.local_batch, .sampler = &shard, .drop_last = true});
  int64_t step = 0;
  for (int64_t epoch = 0; step < config.steps; ++epoch) {
    shard.set_epoch(epoch);
    for (auto& [x, y] : loader) {
      try {
        Variable out = ddp(x);  // a due check runs here, a collective: every rank throws alike
        opt.zero_grad();
        loss_fn(out, y).backward();
      } catch (const Error& e) {
        return {true, step + 1, e.what()};
      }
      opt.step();  // the same averaged gradient on every rank
      if (++step == config.edit_step && rank == edited) edit_by_hand(*model, edit, config.edit_scale);
      after_step(step, *model);
      if (step == config.steps) break;
    }
  }
  return {};
}

// This replica's mean cross-entropy on the probe images (every rank has the same ones).
double probe_loss(nn::Module& model, const World& world) {
  NoGradGuard no_grad;
  return nn::CrossEntropyLoss()(model(world.probe_x), world.probe_y).item();
}

// Run 1, nothing checking: how far apart the replicas are after every step.
std::vector<StepRecord> divergence(const std::shared_ptr<ProcessGroup>& pg, const World& world, const Config& config) {
  std::vector<StepRecord> records;
  train(pg, world, config, {}, Edit::scale, [&](int64_t step, nn::Module& model) {
    const std::vector<double> losses = chapters::gather_numbers(*pg, probe_loss(model, world));
    records.push_back({step, chapters::replica_spread(*pg, model), losses.front(), losses.back(),
                       chapters::prediction_disagreement(*pg, model, world.probe_x)});
  });
  return records;
}

// The same run without the edit (scale 1): rank 0's probe loss after the last step.
double baseline_loss(const std::shared_ptr<ProcessGroup>& pg, const World& world, Config config) {
  config.edit_scale = 1;
  double loss = 0;
  train(pg, world, config, {}, Edit::scale, [&](int64_t step, nn::Module& model) {
    if (step == config.steps) loss = probe_loss(model, world);
  });
  return loss;
}

Caught checked_run(const std::shared_ptr<ProcessGroup>& pg, const World& world, const Config& config,
                   const parallel::DDPOptions& options, Edit edit) {
  return train(pg, world, config, options, edit, [](int64_t, nn::Module&) {});
}

void print_table(const std::vector<StepRecord>& records, const Config& config) {
  std::vector<size_t> shown = chapters::shown_steps(1, records.size());
  const auto edit = static_cast<size_t>(config.edit_step);
  shown.insert(shown.end(), {edit - 1, edit, edit + 1});  // just before, at and after the edit
  std::sort(shown.begin(), shown.end());
  shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
  report::Table table({"step", "max |p_0 - p_r|", "probe loss rank 0", "probe loss edited rank", "predictions differ"});
  for (size_t step : shown) {
    if (step < 1 || step > records.size()) continue;
    const StepRecord& r = records[step - 1];
    table.add_row({std::to_string(r.step) + (r.step == config.edit_step ? " (edit)" : ""), chapters::number(r.spread),
                   report::Table::number(r.loss_rank0, 4), report::Table::number(r.loss_edited, 4),
                   report::Table::number(100 * r.disagreement, 1) + "%"});
  }
  std::printf("\nThe replicas after each step (the last rank scales '%s' by %g right after step %lld; nothing "
              "checks):\n",
              kEdited, config.edit_scale, static_cast<long long>(config.edit_step));
  table.print(std::cout);
}

void save_charts(const std::vector<StepRecord>& records, const std::filesystem::path& out) {
  std::vector<double> steps, spread, loss0, loss_edited;
  for (const StepRecord& r : records) {
    steps.push_back(static_cast<double>(r.step));
    spread.push_back(r.spread);
    loss0.push_back(r.loss_rank0);
    loss_edited.push_back(r.loss_edited);
  }
  report::LineChart({.title = "Largest parameter difference between the replicas", .x_label = "step",
                     .y_label = "max |p_rank0 - p_rank|"})
      .add_series("max |diff|", steps, spread)
      .save(out / "replica_difference.svg");
  report::LineChart({.title = "Each replica's loss on the same 500 test images", .x_label = "step",
                     .y_label = "cross-entropy", .y_scale = report::Scale::Log})  // under 1 to thousands
      .add_series("rank 0", steps, loss0)
      .add_series("edited rank", steps, loss_edited)
      .save(out / "probe_loss.svg");
  std::printf("wrote %s/replica_difference.svg and probe_loss.svg\n", out.c_str());
}

// A message "names the parameter and the rank" when both appear in it.
bool names_it(const Caught& caught, int edited_rank, const std::string& rank_words) {
  const std::string rank = rank_words + std::to_string(edited_rank);
  return caught.caught && caught.message.find(std::string("parameter '") + kEdited + "'") != std::string::npos &&
         caught.message.find(rank) != std::string::npos;
}

std::string caught_words(const Caught& c) {
  return c.caught ? "caught at forward " + std::to_string(c.forward) : "not caught";
}

void print_caught(const std::string& run, const Caught& c) {
  std::printf("%s: %s\n", run.c_str(), caught_words(c).c_str());
  if (c.caught) std::printf("  %s\n", c.message.c_str());
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_14_edit_after_wrap", "editing a parameter after wrapping breaks the replicas", 2);
  Config config;
  int steps = 0, edit_step = 0, check_every = static_cast<int>(config.check_every);
  bool no_check = false;
  cli.add_option("--steps", steps, "training steps (0: 500, --quick 30)");
  cli.add_option("--edit-step", edit_step, "the edit happens right after this step (0: 20, --quick 5)");
  cli.add_option("--check-every", check_every, "DDPOptions::check_every of the checked run");
  cli.add_option("--edit-scale", config.edit_scale, "the edited rank multiplies '3.weight' by this");
  cli.add_flag("--no-check", no_check, "the mechanism removed: check_every 0 and no debug switch");
  const chapters::Flags flags = cli.parse(argc, argv);
  config.steps = steps > 0 ? steps : flags.quick ? 30 : 500;
  config.edit_step = edit_step > 0 ? edit_step : flags.quick ? 5 : 20;
  config.check_every = check_every;
  config.check = !no_check;
  RG_CHECK(flags.workers >= 2, "--workers: the pitfall needs 2 ranks or more");
  RG_CHECK(config.edit_step < config.steps && config.check_every >= 1, "--edit-step must be under --steps, "
           "--check-every at least 1");

  data::FashionMNIST train_set({.split = data::Split::Train}), test_set({.split = data::Split::Test});
  data::DataLoader probe_loader(test_set, {.batch_size = kProbeImages});
  const data::Batch probe_batch = *probe_loader.begin();
  const World world{train_set, probe_batch.x, probe_batch.y};
  Results results;
  int edited = 0;
  bool printing = false;  // this process holds rank 0

  ::unsetenv("RINGGRAD_DISTRIBUTED_DEBUG");  // the first runs: no debug switch
  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    const auto records = divergence(pg, world, config);
    const double baseline = baseline_loss(pg, world, config);
    const Caught by_check = checked_run(pg, world, config, {.check_every = config.check ? config.check_every : 0},
                                        Edit::scale);
    // A replaced parameter: with the check off only the replacing rank's forward would notice,
    // and the other ranks would wait for it at their next all-reduce until the timeout.
    const Caught replaced = config.check ? checked_run(pg, world, config, {.check_every = 1}, Edit::replace) : Caught{};
    if (pg->rank() != 0) return;
    printing = true;
    edited = pg->size() - 1;
    results.divergence = records;
    results.baseline_loss = baseline;
    results.by_check = by_check;
    results.by_replacement = replaced;
    results.replacement_run = config.check;
  });
  // The debug switch is read when a process group starts: a new one, as
  // `RINGGRAD_DISTRIBUTED_DEBUG=DETAIL mpirun ...` would start it.
  if (config.check) ::setenv("RINGGRAD_DISTRIBUTED_DEBUG", "DETAIL", 1);
  if (printing)
    std::printf("a second world of ranks, for the run with RINGGRAD_DISTRIBUTED_DEBUG=%s (read when a group starts):\n",
                config.check ? "DETAIL" : "unset");
  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    const Caught by_debug = checked_run(pg, world, config, {}, Edit::scale);
    if (pg->rank() == 0) results.by_debug = by_debug;
  });
  if (!printing) return 0;

  print_table(results.divergence, config);
  std::printf("without the edit, the same run ends with probe loss %.4f on every replica\n", results.baseline_loss);
  save_charts(results.divergence, flags.out);
  std::printf("\n");
  print_caught("DDPOptions::check_every = " + std::to_string(config.check ? config.check_every : 0), results.by_check);
  print_caught(std::string("RINGGRAD_DISTRIBUTED_DEBUG=") + (config.check ? "DETAIL" : "unset") + ", check_every 0",
               results.by_debug);
  if (results.replacement_run)
    print_caught("a parameter replaced after wrapping, check_every 1", results.by_replacement);
  else
    std::printf("a parameter replaced after wrapping: not run with the check off (only the replacing rank's forward "
                "would notice; the others would wait for it at their next all-reduce)\n");

  // The rule of the README: identical before the edit, apart at every step after it, and the
  // training ruined (rank 0's probe loss at the end over twice the run's without the edit);
  // the check catches it within check_every forwards, the debug switch at the next one, and
  // the replaced parameter at the next one, each naming the parameter and the rank.
  const auto& d = results.divergence;
  const auto e = static_cast<size_t>(config.edit_step);
  const bool identical_before = std::all_of(d.begin(), d.begin() + e - 1, [](auto& r) { return r.spread == 0; });
  const bool apart_after = std::all_of(d.begin() + e - 1, d.end(), [](auto& r) { return r.spread > 0; });
  const bool check_caught = names_it(results.by_check, edited, "rank ") &&
                            results.by_check.forward <= config.edit_step + config.check_every;
  const bool debug_caught = names_it(results.by_debug, edited, "rank ") && results.by_debug.forward == config.edit_step + 1;
  const bool replacement_caught =
      names_it(results.by_replacement, edited, "rank ") && results.by_replacement.forward == config.edit_step + 1 &&
      results.by_replacement.message.find("the model no longer holds the wrapped Variables") != std::string::npos;
  const StepRecord& last = d.back();
  const bool collapsed = last.loss_rank0 > 2 * results.baseline_loss;
  chapters::print_verdict(
      "C14", identical_before && apart_after && collapsed && check_caught && debug_caught && replacement_caught,
      "replicas identical through step " + std::to_string(e - 1) + ", apart from the edit at step " +
          std::to_string(e) + " to step " + std::to_string(last.step) + " (max |diff| at the end " +
          chapters::number(last.spread) + "; probe loss at the end: rank 0 " + chapters::number(last.loss_rank0) +
          ", edited rank " + chapters::number(last.loss_edited) + ", without the edit " +
          chapters::number(results.baseline_loss) + "; predictions differ on " +
          chapters::number(100 * last.disagreement) + "%); check_every " +
          std::to_string(config.check ? config.check_every : 0) + ": " + caught_words(results.by_check) +
          (check_caught ? " naming '" + std::string(kEdited) + "' and rank " + std::to_string(edited) : "") +
          "; debug switch: " + caught_words(results.by_debug) + "; replaced parameter: " +
          (results.replacement_run ? caught_words(results.by_replacement) : "not run"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
