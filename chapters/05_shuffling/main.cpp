// Chapter 05 — claim C05: "data must be shuffled so that each device sees a random mix; if
// device 0 only gets cats and device 1 only dogs, training breaks". Three ways to get the data
// wrong, each trained next to the shuffled baseline on Fashion-MNIST under DDP:
//   (a) class-sorted sharding: worker 0 holds only some classes, worker 1 the others;
//   (b) class-sorted order over time, no shuffle: everyone sees the 0s, then the 1s, ...;
//   (c) forgetting set_epoch: a shuffled order, but the same one every epoch.
// Each runs with the small CNN without BatchNorm and, where per-device statistics change the
// story (a), with BatchNorm.
// Usage: chapter_05_shuffling [--quick] [--workers N | under mpirun -n N]
//        [--interleave-classes]  (the mechanism removed: the "sorted" list mixes the classes)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <set>

#include "chapters/common/batchnorm_cnn.h"
#include "chapters/common/chapter.h"
#include "chapters/common/curves.h"
#include "ringgrad.h"

using namespace rg;
using chapters::number;
using parallel::DistributedDataParallel;
using parallel::ProcessGroup;

namespace {

constexpr double kLr = 0.05, kMomentum = 0.9;
constexpr int64_t kLocalBatch = 32;
constexpr double kBreaksPoints = 5;  // verdict: losing this much test accuracy "breaks" training

struct Settings {  // what --quick shortens
  int64_t train_images;  // the first ones of the training set
  int64_t epochs;
  int64_t test_images;
};
Settings settings(bool quick) { return quick ? Settings{6144, 2, 1000} : Settings{30720, 3, 10000}; }

// ---- the orders: samplers on the public data::Sampler interface ----

// The first n training images, sorted by class: all the 0s, then all the 1s, ... (stable).
// With `interleave`, the classes take turns instead (a 0, a 1, ..., a 9, a 0, ...): as
// deterministic and unshuffled, but every stretch of the list holds every class.
std::vector<int64_t> class_list(const data::InMemoryDataset& train, int64_t n, bool interleave) {
  const std::vector<int64_t> labels = train.labels().narrow(0, 0, n).to_vector<int64_t>();
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(train.num_classes()));
  for (int64_t i = 0; i < n; ++i) by_class[static_cast<size_t>(labels[static_cast<size_t>(i)])].push_back(i);
  std::vector<int64_t> list;
  if (!interleave) {
    for (const auto& members : by_class) list.insert(list.end(), members.begin(), members.end());
    return list;
  }
  for (size_t turn = 0; list.size() < static_cast<size_t>(n); ++turn)
    for (const auto& members : by_class)
      if (turn < members.size()) list.push_back(members[turn]);
  return list;
}

// (a) Worker r of N holds the r-th contiguous share of the class list (with 2 workers and a
// sorted list: classes 0-4 and 5-9), in a fresh random order each epoch.
class ClassShardSampler : public data::Sampler {
 public:
  ClassShardSampler(const std::vector<int64_t>& list, int rank, int world, uint64_t seed) : seed_(seed) {
    const size_t share = list.size() / static_cast<size_t>(world);
    mine_.assign(list.begin() + static_cast<std::ptrdiff_t>(share * static_cast<size_t>(rank)),
                 list.begin() + static_cast<std::ptrdiff_t>(share * static_cast<size_t>(rank + 1)));
  }
  int64_t size() const override { return static_cast<int64_t>(mine_.size()); }
  std::vector<int64_t> indices() override {
    Generator gen(seed_ + static_cast<uint64_t>(epoch_));
    std::vector<int64_t> order;
    for (int64_t position : gen.randperm(size())) order.push_back(mine_[static_cast<size_t>(position)]);
    return order;
  }

 private:
  std::vector<int64_t> mine_;
  uint64_t seed_;
};

// (b) Every worker walks the class list: worker r takes positions r, r + N, r + 2N, ...
// (DistributedSampler's striding, without its shuffle), the same every epoch.
class ClassOrderSampler : public data::Sampler {
 public:
  ClassOrderSampler(const std::vector<int64_t>& list, int rank, int world) {
    RG_CHECK(list.size() % static_cast<size_t>(world) == 0, "ClassOrderSampler: ", list.size(),
             " indices do not split evenly over ", world, " workers");
    for (size_t i = static_cast<size_t>(rank); i < list.size(); i += static_cast<size_t>(world)) mine_.push_back(list[i]);
  }
  int64_t size() const override { return static_cast<int64_t>(mine_.size()); }
  std::vector<int64_t> indices() override { return mine_; }

 private:
  std::vector<int64_t> mine_;
};

// ---- the settings ----

enum class Order { shuffled, class_shards, class_sorted, same_every_epoch };

const char* order_name(Order order) {
  switch (order) {
    case Order::shuffled: return "shuffled, set_epoch every epoch";
    case Order::class_shards: return "(a) class-sorted shards";
    case Order::class_sorted: return "(b) class-sorted order";
    case Order::same_every_epoch: return "(c) no set_epoch";
  }
  return "?";
}

const char* short_name(Order order) {
  switch (order) {
    case Order::shuffled: return "shuffled";
    case Order::class_shards: return "(a) shards";
    case Order::class_sorted: return "(b) order";
    case Order::same_every_epoch: return "(c) no set_epoch";
  }
  return "?";
}

struct Setting {
  Order order;
  bool batch_norm;
  std::string name() const { return std::string(order_name(order)) + (batch_norm ? ", BatchNorm" : ""); }
};

// Shuffled, then (a), (b), (c) without BatchNorm; then shuffled and (a) with BatchNorm.
const std::vector<Setting>& all_settings() {
  static const std::vector<Setting> settings = {
      {Order::shuffled, false},     {Order::class_shards, false}, {Order::class_sorted, false},
      {Order::same_every_epoch, false}, {Order::shuffled, true},  {Order::class_shards, true}};
  return settings;
}

std::unique_ptr<data::Sampler> sampler_for(Order order, const std::vector<int64_t>& list, const ProcessGroup& pg) {
  const int64_t n = static_cast<int64_t>(list.size());
  switch (order) {
    case Order::shuffled:
    case Order::same_every_epoch:  // the same sampler; the training loop forgets its set_epoch
      return std::make_unique<data::DistributedSampler>(
          n, data::DistributedSamplerOptions{.num_replicas = pg.size(), .rank = pg.rank(), .shuffle = true, .seed = 1});
    case Order::class_shards: return std::make_unique<ClassShardSampler>(list, pg.rank(), pg.size(), 1);
    case Order::class_sorted: return std::make_unique<ClassOrderSampler>(list, pg.rank(), pg.size());
  }
  RG_THROW("unknown order");
}

// ---- one run ----

struct Run {
  Setting setting;
  std::vector<double> loss;            // per step, the mean over the workers: the global batch's
  std::vector<double> test_accuracy;   // after each epoch, rank 0's replica
  std::vector<double> class_accuracy;  // after the last epoch, per class
  int64_t repeated_epochs = 0;         // epochs that began with the last epoch's shuffled order
};

struct TestScore {
  double accuracy;
  std::vector<double> per_class;
};

TestScore test_score(nn::Module& model, const data::Dataset& test, int64_t images) {
  NoGradGuard no_grad;
  data::SequentialSampler first(images);
  data::DataLoader loader(test, {.batch_size = 500, .sampler = &first});
  std::vector<double> correct(static_cast<size_t>(test.num_classes())), seen(correct.size());
  model.eval();  // BatchNorm: the running statistics, which DDP keeps as rank 0's
  for (auto& [x, y] : loader) {
    const std::vector<int64_t> predicted = argmax(model(x).data(), 1).to_vector<int64_t>();
    const std::vector<int64_t> labels = y.to_vector<int64_t>();
    for (size_t i = 0; i < labels.size(); ++i) {
      seen[static_cast<size_t>(labels[i])] += 1;
      correct[static_cast<size_t>(labels[i])] += predicted[i] == labels[i];
    }
  }
  model.train();
  TestScore score{0, {}};
  for (size_t k = 0; k < seen.size(); ++k) score.per_class.push_back(seen[k] > 0 ? correct[k] / seen[k] : std::nan(""));
  score.accuracy = std::accumulate(correct.begin(), correct.end(), 0.0) / std::accumulate(seen.begin(), seen.end(), 0.0);
  return score;
}

Run train(std::shared_ptr<ProcessGroup> pg, const data::InMemoryDataset& train_set, const data::Dataset& test_set,
          const std::vector<int64_t>& list, const Settings& s, const Setting& setting) {
  auto model = std::make_shared<chapters::BatchNormCNN>(chapters::BatchNormCNNOptions{
      .shape = data::image_shape(train_set), .batch_norm = setting.batch_norm, .seed = 2});
  DistributedDataParallel ddp(model, pg);
  optim::SGD opt(model->parameters(), {.lr = kLr, .momentum = kMomentum});
  std::unique_ptr<data::Sampler> sampler = sampler_for(setting.order, list, *pg);
  data::DataLoader loader(train_set, {.batch_size = kLocalBatch, .sampler = sampler.get(), .drop_last = true});
  // The lr falls to 0 by the end (cosine), so the final accuracy is a settled model's.
  const optim::CosineAnnealingLR annealed(kLr, s.epochs * loader.size());
  Run run{setting, {}, {}, {}, 0};
  for (int64_t epoch = 0; epoch < s.epochs; ++epoch) {
    if (setting.order != Order::same_every_epoch) sampler->set_epoch(epoch);  // (c) forgets this line
    for (auto& [x, y] : loader) {
      opt.set_lr(annealed.lr_at(static_cast<int64_t>(run.loss.size())));
      Variable loss = cross_entropy(ddp(x), y);
      opt.zero_grad();
      loss.backward();
      opt.step();
      run.loss.push_back(parallel::sum_over_ranks(*pg, {loss.item() / pg->size()})[0]);
    }
    if (pg->rank() != 0) continue;
    const TestScore score = test_score(*model, test_set, s.test_images);
    run.test_accuracy.push_back(score.accuracy);
    run.class_accuracy = score.per_class;
  }
  if (auto* d = dynamic_cast<data::DistributedSampler*>(sampler.get())) run.repeated_epochs = d->repeated_epochs();
  return run;
}

// ---- the report (rank 0) ----

const Run& run_of(const std::vector<Run>& runs, Order order, bool batch_norm) {
  for (const auto& r : runs)
    if (r.setting.order == order && r.setting.batch_norm == batch_norm) return r;
  RG_THROW("no run for ", order_name(order));
}

// Test-accuracy points lost against the shuffled run of the same model.
double points_lost(const std::vector<Run>& runs, const Run& run) {
  const Run& shuffled = run_of(runs, Order::shuffled, run.setting.batch_norm);
  return 100 * (shuffled.test_accuracy.back() - run.test_accuracy.back());
}

void report(const std::vector<Run>& runs, const Settings& s, int workers, const std::filesystem::path& out) {
  std::printf("\n%d workers x local batch %lld (global %lld), %lld epochs over %lld training images, test on %lld\n",
              workers, static_cast<long long>(kLocalBatch), static_cast<long long>(kLocalBatch * workers),
              static_cast<long long>(s.epochs), static_cast<long long>(s.train_images),
              static_cast<long long>(s.test_images));
  report::Table table({"setting", "train loss (last 20 steps)", "test acc by epoch (%)", "final (%)",
                       "vs shuffled (points)"});
  // Clipped: at each class boundary of (b) the loss jumps to millions (the model is sure of the last class).
  constexpr double kClip = 4;
  report::LineChart plain({.title = "training loss: the CNN without BatchNorm (clipped at 4)", .x_label = "epoch",
                           .y_label = "loss (window mean)"});
  report::LineChart normed({.title = "training loss: the CNN with BatchNorm (per-device statistics)",
                            .x_label = "epoch", .y_label = "loss (window mean)"});
  for (const auto& run : runs) {
    const size_t tail = std::min<size_t>(20, run.loss.size());
    double last = 0;
    for (size_t i = run.loss.size() - tail; i < run.loss.size(); ++i) last += run.loss[i] / static_cast<double>(tail);
    std::string by_epoch;
    for (double a : run.test_accuracy) {
      if (!by_epoch.empty()) by_epoch += ' ';
      by_epoch += report::Table::number(100 * a, 1);
    }
    table.add_row({run.setting.name(), report::Table::number(last, 3), by_epoch,
                   report::Table::number(100 * run.test_accuracy.back(), 2),
                   run.setting.order == Order::shuffled ? "baseline" : report::Table::number(-points_lost(runs, run), 2)});
    const double epochs_per_step = static_cast<double>(s.epochs) / static_cast<double>(run.loss.size());
    (run.setting.batch_norm ? normed : plain)
        .add_series(order_name(run.setting.order), chapters::smoothed_curve(run.loss, epochs_per_step, 90, kClip));
  }
  table.print(std::cout);
  plain.save(out / "loss.svg");
  normed.save(out / "loss_batchnorm.svg");
  // One group per order, one bar per model; BatchNorm runs only for shuffled and (a).
  const std::vector<Order> orders = {Order::shuffled, Order::class_shards, Order::class_sorted, Order::same_every_epoch};
  std::vector<std::string> groups;
  std::vector<double> plain_final, normed_final;
  for (Order order : orders) {
    groups.push_back(short_name(order));
    for (bool batch_norm : {false, true}) {
      double final = std::nan("");  // a gap in the chart
      for (const auto& run : runs)
        if (run.setting.order == order && run.setting.batch_norm == batch_norm) final = 100 * run.test_accuracy.back();
      (batch_norm ? normed_final : plain_final).push_back(final);
    }
  }
  report::BarChart bars({.title = "final test accuracy", .y_label = "test accuracy (%)"}, groups);
  bars.add_series("CNN without BatchNorm", plain_final).add_series("CNN with BatchNorm (per device)", normed_final);
  bars.save(out / "accuracy.svg");
}

// Where (a) with BatchNorm loses its points: per class, against the classes worker 0 holds.
void report_classes(const std::vector<Run>& runs, const std::vector<int64_t>& list,
                    const data::InMemoryDataset& train_set, int workers) {
  const std::vector<int64_t> labels = train_set.labels().to_vector<int64_t>();
  std::set<int64_t> worker0;
  for (size_t i = 0; i < list.size() / static_cast<size_t>(workers); ++i)
    worker0.insert(labels[static_cast<size_t>(list[i])]);
  std::string held;
  for (int64_t k : worker0) {
    held += ' ';
    held += std::to_string(k);
  }
  std::printf("\nper-class test accuracy (%%) with BatchNorm; in (a) worker 0 holds classes%s\n", held.c_str());
  std::vector<std::string> header = {"setting"};
  for (size_t k = 0; k < runs.front().class_accuracy.size(); ++k)
    header.push_back(std::to_string(k) + (worker0.count(static_cast<int64_t>(k)) ? "*" : ""));
  report::Table table(header);
  for (const Run* run : {&run_of(runs, Order::shuffled, true), &run_of(runs, Order::class_shards, true)}) {
    std::vector<std::string> row = {run->setting.name()};
    for (double a : run->class_accuracy) row.push_back(report::Table::number(100 * a, 0));
    table.add_row(row);
  }
  table.print(std::cout);
  std::printf("(* worker 0's classes: the running statistics every evaluation uses are worker 0's)\n");
}

// "Which is worse and by how much": the settings from the most to the least damaging.
void report_ranking(const std::vector<Run>& runs) {
  std::vector<const Run*> wrong;
  for (const auto& run : runs)
    if (run.setting.order != Order::shuffled) wrong.push_back(&run);
  std::sort(wrong.begin(), wrong.end(), [&](const Run* a, const Run* b) { return points_lost(runs, *a) > points_lost(runs, *b); });
  std::printf("\nworst first:\n");
  for (const Run* run : wrong)
    std::printf("  %-40s loses %6.2f points against shuffled\n", run->setting.name().c_str(), points_lost(runs, *run));
  const Run& forgot = run_of(runs, Order::same_every_epoch, false);
  std::printf("(c): the sampler counted %lld epochs that repeated the previous order (it also warned on stderr)\n",
              static_cast<long long>(forgot.repeated_epochs));
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_05_shuffling", "class-sorted shards, class-sorted order, a forgotten set_epoch", 2);
  bool interleave = false;
  cli.add_flag("--interleave-classes", interleave,
               "the mechanism removed: (a) and (b) use a list whose classes take turns instead of a sorted one");
  const chapters::Flags flags = cli.parse(argc, argv);
  const Settings s = settings(flags.quick);
  const data::FashionMNIST train_set({.split = data::Split::Train}), test_set({.split = data::Split::Test});
  const int64_t whole_batches = s.train_images - s.train_images % (kLocalBatch * flags.workers);
  const std::vector<int64_t> list = class_list(train_set, whole_batches, interleave);
  std::printf("class list: %s\n", interleave ? "the classes take turns (--interleave-classes)" : "sorted by class");

  std::vector<Run> runs;
  bool main_process = false;  // this process holds rank 0 (always, in a local world)
  const auto start = std::chrono::steady_clock::now();
  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    std::vector<Run> mine;
    for (const Setting& setting : all_settings()) {
      mine.push_back(train(pg, train_set, test_set, list, s, setting));
      if (pg->rank() == 0)
        std::printf("  trained: %-40s test accuracy %.2f%%\n", setting.name().c_str(),
                    100 * mine.back().test_accuracy.back());
    }
    if (pg->rank() != 0) return;
    runs = std::move(mine);
    main_process = true;
  });
  if (!main_process) return 0;
  report(runs, s, flags.workers, flags.out);
  report_classes(runs, list, train_set, flags.workers);
  report_ranking(runs);
  std::printf("pictures: %s/{loss,loss_batchnorm,accuracy}.svg; %.0f s\n", flags.out.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());

  // The rule (README): data that are not a random mix break training when they lose >= 5
  // test-accuracy points against the shuffled run of the same model; the claim stands when
  // both class-correlated settings break: (b) the sorted order, and (a) the sorted shards
  // where a device computes statistics of its own batch (BatchNorm).
  const double sorted = points_lost(runs, run_of(runs, Order::class_sorted, false));
  const double shards_bn = points_lost(runs, run_of(runs, Order::class_shards, true));
  const double shards = points_lost(runs, run_of(runs, Order::class_shards, false));
  const double same_order = points_lost(runs, run_of(runs, Order::same_every_epoch, false));
  chapters::print_verdict("C05", sorted >= kBreaksPoints && shards_bn >= kBreaksPoints,
                          "points lost against shuffled: (b) sorted order " + number(sorted, 3) +
                              ", (a) sorted shards with BatchNorm " + number(shards_bn, 3) + ", without " +
                              number(shards, 3) + ", (c) no set_epoch " + number(same_order, 3) +
                              " (shuffled: " + number(100 * runs.front().test_accuracy.back(), 3) + "%)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
