// Chapter 06 — claim C06: "when the global batch grows, the learning rate usually grows with
// it (double the batch, double the lr), but not always: a too-large batch may not converge and
// needs a smaller lr". The linear-scaling rule with warm-up (Goyal et al. 2017, "Accurate,
// Large Minibatch SGD") against no scaling, for global batches from 32 up to where the rule
// breaks on Fashion-MNIST, for a fixed number of epochs (a larger batch takes fewer steps).
// One process takes the whole global batch: with synchronous averaging N workers x G/N make
// the same update (chapters 02 and 04 show it step for step), and on 2 cores one process
// wastes no time on communication.
// Usage: chapter_06_learning_rate_scaling [--quick] [--no-scaling]  (the mechanism removed:
//        the "scaled" runs keep the base lr)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "chapters/common/chapter.h"
#include "chapters/common/curves.h"
#include "chapters/common/training.h"
#include "ringgrad.h"

using namespace rg;
using chapters::number;

namespace {

constexpr int64_t kBaseBatch = 32;
constexpr double kBaseLr = 0.02, kMomentum = 0.9;
constexpr double kWarmupEpochs = 0.25;  // Goyal et al. warm up for 5 of 90 epochs; these runs are short
constexpr double kHoldsPoints = 1.0;    // verdict: within this many points of the base batch's accuracy

struct Settings {  // what --quick shortens
  int64_t train_images;  // the first ones of the training set
  int64_t epochs;
  int64_t test_images;
  std::vector<int64_t> batches;  // global batches, from kBaseBatch up
};
Settings settings(bool quick) {
  if (quick) return {16384, 2, 2000, {32, 128, 512, 2048}};
  return {60000, 3, 10000, {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}};
}

// How the lr of a run is chosen.
enum class Rule { none, linear, linear_no_warmup };

const char* rule_name(Rule rule) {
  switch (rule) {
    case Rule::none: return "no scaling";
    case Rule::linear: return "linear + warm-up";
    case Rule::linear_no_warmup: return "linear, no warm-up";
  }
  return "?";
}

// The peak lr: the base lr, or the linear-scaling rule lr = base_lr * G / base_batch.
double peak_lr(Rule rule, int64_t global_batch, bool scaling_removed) {
  if (rule == Rule::none || scaling_removed) return kBaseLr;
  return optim::linear_scaled_lr(kBaseLr, global_batch, kBaseBatch);
}

// Every run has the same shape: [a linear warm-up from 0 over the first quarter epoch], then
// cosine decay to 0 at the last step, so that the final accuracy is a settled model's.
std::shared_ptr<const optim::Schedule> schedule_for(Rule rule, double peak, int64_t steps, int64_t steps_per_epoch) {
  auto decay = std::make_shared<optim::CosineAnnealingLR>(peak, steps);
  if (rule == Rule::linear_no_warmup) return decay;
  const auto warmup = std::max<int64_t>(1, std::llround(kWarmupEpochs * static_cast<double>(steps_per_epoch)));
  return std::make_shared<optim::LinearWarmup>(decay, warmup);
}

struct Run {
  Rule rule;
  int64_t batch;
  double lr;
  int64_t steps = 0;         // taken (a diverged run stops early)
  double accuracy = 0;       // final test accuracy (0.1: chance, also what a diverged run scores)
  bool diverged = false;     // the loss became NaN or Inf
  std::vector<double> loss;  // per step
};

Run train(const data::Dataset& train_set, const data::Dataset& test_set, const Settings& s, Rule rule,
          int64_t batch, bool scaling_removed) {
  auto model = chapters::seeded_model("mlp", data::image_shape(train_set), 1);  // the same start for every run
  data::RandomSampler order(s.train_images, 1);
  data::DataLoader loader(train_set, {.batch_size = batch, .sampler = &order, .drop_last = true});
  Run run{rule, batch, peak_lr(rule, batch, scaling_removed), 0, 0, false, {}};
  const int64_t steps_per_epoch = loader.size();
  const auto schedule = schedule_for(rule, run.lr, s.epochs * steps_per_epoch, steps_per_epoch);
  optim::SGD opt(model->parameters(), {.lr = run.lr, .momentum = kMomentum});
  for (int64_t epoch = 0; epoch < s.epochs && !run.diverged; ++epoch) {
    for (auto& [x, y] : loader) {
      opt.set_lr(schedule->lr_at(run.steps++));
      Variable loss = cross_entropy((*model)(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      run.loss.push_back(loss.item());
      if (!std::isfinite(run.loss.back())) {
        run.diverged = true;
        break;
      }
    }
  }
  data::SequentialSampler first(s.test_images);
  data::DataLoader test(test_set, {.batch_size = 1000, .sampler = &first});
  run.accuracy = run.diverged ? 0.1 : models::evaluate(*model, test).accuracy();
  return run;
}

// ---- the report ----

struct Sweep {
  std::vector<Run> runs;
  const Run& at(Rule rule, int64_t batch) const {
    for (const auto& r : runs)
      if (r.rule == rule && r.batch == batch) return r;
    RG_THROW("no run for ", rule_name(rule), " at batch ", batch);
  }
  double base_accuracy() const { return at(Rule::none, kBaseBatch).accuracy; }
  // The rule holds at a batch when its run stays within kHoldsPoints of the base batch's.
  bool holds(int64_t batch) const { return 100 * (base_accuracy() - at(Rule::linear, batch).accuracy) <= kHoldsPoints; }
  // It breaks where the scaled lr does worse than the base lr at the same batch: that batch
  // "needs a smaller lr".
  bool breaks(int64_t batch) const { return at(Rule::linear, batch).accuracy < at(Rule::none, batch).accuracy; }
};

std::string accuracy_cell(const Run& run) {
  return run.diverged ? "diverged" : report::Table::number(100 * run.accuracy, 2);
}

std::string percent(const Run& run) { return run.diverged ? "diverged" : accuracy_cell(run) + "%"; }

void report(const Sweep& sweep, const Settings& s, const std::filesystem::path& out) {
  std::printf("\nMLP, SGD momentum %.1f, %lld epochs over %lld training images, test on %lld; base: batch %lld at "
              "lr %.3g; warm-up: the first %.2f epoch; then cosine decay to 0\n",
              kMomentum, static_cast<long long>(s.epochs), static_cast<long long>(s.train_images),
              static_cast<long long>(s.test_images), static_cast<long long>(kBaseBatch), kBaseLr, kWarmupEpochs);
  report::Table table({"global batch", "steps", "lr (scaled)", "no scaling", "linear + warm-up",
                       "linear, no warm-up", "holds", "breaks"});
  report::LineChart chart({.title = "final test accuracy vs global batch (fixed epochs)", .x_label = "global batch",
                           .y_label = "test accuracy (%)", .x_scale = report::Scale::Log});
  std::vector<std::vector<report::Point>> lines(3);
  for (int64_t batch : s.batches) {
    const Run& scaled = sweep.at(Rule::linear, batch);
    const int64_t steps = s.epochs * (s.train_images / batch);
    table.add_row({std::to_string(batch), std::to_string(steps), number(scaled.lr),
                   accuracy_cell(sweep.at(Rule::none, batch)), accuracy_cell(scaled),
                   accuracy_cell(sweep.at(Rule::linear_no_warmup, batch)), sweep.holds(batch) ? "yes" : "no",
                   sweep.breaks(batch) ? "yes" : "no"});
    for (Rule rule : {Rule::none, Rule::linear, Rule::linear_no_warmup})
      lines[static_cast<size_t>(rule)].push_back({static_cast<double>(batch), 100 * sweep.at(rule, batch).accuracy});
  }
  table.print(std::cout);
  for (Rule rule : {Rule::none, Rule::linear, Rule::linear_no_warmup})
    chart.add_series(rule_name(rule), lines[static_cast<size_t>(rule)]);
  chart.save(out / "accuracy.svg");

  // Loss against epochs (not steps: a batch of 8192 takes 256x fewer steps than one of 32),
  // clipped at kClip so that a diverging run (losses of 1e20 before the NaN) leaves the others visible.
  constexpr double kClip = 3;
  report::LineChart loss({.title = "training loss, linear scaling + warm-up (clipped at 3)", .x_label = "epoch",
                          .y_label = "loss (window mean)"});
  for (int64_t batch : s.batches) {
    const Run& run = sweep.at(Rule::linear, batch);
    const double epochs_per_step = 1.0 / static_cast<double>(s.train_images / batch);
    loss.add_series("batch " + std::to_string(batch), chapters::smoothed_curve(run.loss, epochs_per_step, 60, kClip));
  }
  loss.save(out / "loss.svg");
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_06_learning_rate_scaling", "the linear-scaling rule with warm-up vs no scaling", 1);
  bool scaling_removed = false;
  cli.add_flag("--no-scaling", scaling_removed, "the mechanism removed: the scaled runs keep the base lr");
  const chapters::Flags flags = cli.parse(argc, argv);
  RG_CHECK(flags.backend == "local" && flags.workers == 1,
           "chapter 06 runs in one process (one device taking each global batch whole): no --workers, no mpirun");
  const Settings s = settings(flags.quick);
  const data::FashionMNIST train_set({.split = data::Split::Train}), test_set({.split = data::Split::Test});
  std::printf("one process takes each global batch whole (the same update as N workers x G/N)%s\n",
              scaling_removed ? "; --no-scaling: every run at the base lr" : "");
  const auto start = std::chrono::steady_clock::now();
  Sweep sweep;
  for (int64_t batch : s.batches) {
    for (Rule rule : {Rule::none, Rule::linear, Rule::linear_no_warmup}) {
      sweep.runs.push_back(train(train_set, test_set, s, rule, batch, scaling_removed));
      const Run& r = sweep.runs.back();
      std::printf("  batch %5lld, %-19s lr %-7s %5lld steps: test accuracy %s\n", static_cast<long long>(batch),
                  rule_name(rule), number(r.lr).c_str(), static_cast<long long>(r.steps), accuracy_cell(r).c_str());
      std::fflush(stdout);
    }
  }
  report(sweep, s, flags.out);

  // The rule (README): confirmed when scaling is what keeps the accuracy at some larger batch
  // (the scaled run holds within 1 point of the base batch's accuracy where the unscaled one
  // falls at least 1 point behind it), and the rule breaks further up: some larger batch at
  // which the scaled lr does worse than the base lr. It breaks at the smallest such batch;
  // the verdict names the batch where scaling helps most.
  int64_t first_help = 0, helps_at = 0, breaks_at = 0;
  double helps_by = 0;
  for (int64_t batch : s.batches) {
    if (batch == kBaseBatch) continue;
    const double gain = 100 * (sweep.at(Rule::linear, batch).accuracy - sweep.at(Rule::none, batch).accuracy);
    if (sweep.holds(batch) && gain >= kHoldsPoints) {
      if (first_help == 0) first_help = batch;
      if (gain > helps_by) {
        helps_at = batch;
        helps_by = gain;
      }
    }
    if (sweep.breaks(batch) && breaks_at == 0) breaks_at = batch;
  }
  std::printf("pictures: %s/{accuracy,loss}.svg; %.0f s\n", flags.out.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::string details = "base batch " + std::to_string(kBaseBatch) + ": " + number(100 * sweep.base_accuracy(), 4) + "%; ";
  details += helps_at > 0 ? "scaling helps most at batch " + std::to_string(helps_at) + ": +" + number(helps_by, 3) +
                                " points over no scaling; "
                          : "scaling helps at no batch; ";
  if (breaks_at == 0) details += "the rule does not break up to batch " + std::to_string(s.batches.back());
  if (breaks_at > 0) {
    const Run& scaled = sweep.at(Rule::linear, breaks_at);
    details += "the rule breaks at batch " + std::to_string(breaks_at) + " (lr " + number(scaled.lr) + ": " +
               percent(scaled) + ", the base lr there: " + percent(sweep.at(Rule::none, breaks_at)) + ")";
  }
  chapters::print_verdict("C06", first_help > 0 && breaks_at > first_help, details);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
