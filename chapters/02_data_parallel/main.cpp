// Chapter 02 — claim C02: data parallelism. Every device holds a full replica of the model; a
// batch of 64 is split into 4 sub-batches of 16; each device runs forward and backward on its
// own 16; the gradients are averaged; every replica takes the same update. Checked against one
// device training on the whole 64, step by step: the averaged gradient is the big batch's
// gradient, and the parameters of the two runs stay equal (to ~1e-12 in float64; in float32
// they drift apart from the order of the sums alone). Summing instead of averaging needs lr/N.
// Usage: chapter_02_data_parallel [--quick] [--workers 4] [--steps K] [--sum]
//        mpirun -n 4 chapter_02_data_parallel
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "chapters/common/chapter.h"
#include "chapters/common/training.h"
#include "ringgrad.h"

using namespace rg;
using parallel::ProcessGroup;

namespace {

struct Config {
  int64_t batch = 64;     // the global batch, split over the devices
  int64_t steps = 0;      // 0: one epoch
  double lr = 0.05, momentum = 0.9;
  uint64_t seed = 3;      // the initial model and the shuffle
  int64_t test_batches = 0;  // of 1000 test images; 0: the whole test set
};

// One way of running data parallel, compared with the single device at the chapter's lr.
struct Setup {
  std::string name;
  bool sum = false;  // combine the gradients by summing, without dividing by N
  double lr = 0;
  DType dtype = DType::float32;
};

// What rank 0 measured for one setup.
struct Measured {
  Setup setup;
  double grad_diff = 0, grad_scale = 0;  // step 1: max |g_parallel - g_64|, max |g_64|
  double update_diff = 0;                // step 1: max |lr' g_parallel - lr g_64|, the first update
  std::vector<double> param_diff;        // after each step: max |p_parallel - p_single|
  models::Evaluation single, parallel;
  // The largest difference over the steps; NaN once a run has diverged to NaN.
  double worst_param_diff() const {
    double worst = 0;
    for (double d : param_diff) worst = std::isnan(d) ? d : std::max(worst, d);
    return worst;
  }
};

// The largest |a_i - b_i| over all elements of all the tensors.
double max_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max_abs_diff(a[i], b[i]));
  return worst;
}

double max_magnitude(const std::vector<Tensor>& tensors) {
  double largest = 0;
  for (const Tensor& t : tensors) largest = std::max(largest, max(abs(t)).item());
  return largest;
}

std::vector<Tensor> values_of(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const Variable& p : model.parameters()) out.push_back(p.data());
  return out;
}

std::vector<Tensor> gradients_of(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const Variable& p : model.parameters()) out.push_back(p.grad());
  return out;
}

// How the replicas combine their gradients: DDP's own average, or a plain sum (a comm hook
// that all-reduces without dividing by N).
void combine_by_sum(parallel::DistributedDataParallel& ddp) {
  ddp.register_comm_hook([](ProcessGroup& pg, const parallel::GradBucket& bucket) {
    return pg.all_reduce_async(bucket.flat, {.op = parallel::ReduceOp::sum});
  });
}

// Trains `setup` for config.steps steps on every rank; rank 0 also trains the single-device
// model on the whole batch, in lockstep, and returns the comparison (other ranks: empty).
Measured run_setup(const std::shared_ptr<ProcessGroup>& pg, const Setup& setup, const Config& config,
                   const data::Dataset& train, const data::Dataset& test) {
  const int rank = pg->rank(), n = pg->size();
  const int64_t local = config.batch / n;  // 64 over 4 devices: 16 each
  const data::ImageShape shape = data::image_shape(train);

  // Every device holds a full replica (DDP also broadcasts rank 0's at construction).
  auto replica = chapters::seeded_model("mlp", shape, config.seed);
  replica->to(setup.dtype);
  parallel::DistributedDataParallel ddp(replica, pg);
  if (setup.sum) combine_by_sum(ddp);
  optim::SGD opt(replica->parameters(), {.lr = setup.lr, .momentum = config.momentum});

  // The single device, at the chapter's lr, from the same initial model (rank 0 only).
  std::shared_ptr<nn::Module> single;
  std::unique_ptr<optim::SGD> single_opt;
  if (rank == 0) {
    single = chapters::seeded_model("mlp", shape, config.seed);
    single->to(setup.dtype);
    single_opt = std::make_unique<optim::SGD>(single->parameters(), optim::SGDOptions{.lr = config.lr, .momentum = config.momentum});
  }

  nn::CrossEntropyLoss loss_fn;
  data::DataLoader loader(train, {.batch_size = config.batch, .shuffle = true, .drop_last = true, .seed = config.seed});
  Measured m;
  m.setup = setup;
  for (int64_t step = 0; step < config.steps;) {
    for (auto& [x64, y64] : loader) {  // every device sees the same batch of 64 ...
      const Tensor x = x64.to(setup.dtype);
      // ... and takes its own 16 of it: device r the rows [16r, 16r + 16).
      const Tensor my_x = x.narrow(0, rank * local, local), my_y = y64.narrow(0, rank * local, local);
      opt.zero_grad();
      loss_fn(ddp(my_x), my_y).backward();  // forward and backward alone; the all-reduce combines the gradients
      if (rank == 0) {
        single_opt->zero_grad();
        loss_fn((*single)(x), y64).backward();  // the one device: forward and backward on all 64
        if (step == 0) {  // same parameters, so the gradients must agree
          m.grad_diff = max_difference(gradients_of(*replica), gradients_of(*single));
          m.grad_scale = max_magnitude(gradients_of(*single));
          std::vector<Tensor> update, single_update;
          for (const Tensor& g : gradients_of(*replica)) update.push_back(g * setup.lr);
          for (const Tensor& g : gradients_of(*single)) single_update.push_back(g * config.lr);
          m.update_diff = max_difference(update, single_update);
        }
        single_opt->step();
      }
      opt.step();  // the same update on every replica
      if (rank == 0) m.param_diff.push_back(max_difference(values_of(*replica), values_of(*single)));
      if (++step == config.steps) break;
    }
  }
  if (rank == 0) {
    data::DataLoader test_loader(test, {.batch_size = 1000});
    m.single = models::evaluate(*single, test_loader, Device::cpu(), config.test_batches);
    m.parallel = models::evaluate(*replica, test_loader, Device::cpu(), config.test_batches);
  }
  return m;
}

void print_results(const std::vector<Measured>& all, int n, const Config& config) {
  std::printf("\nstep 1: the combined gradient against the single device's gradient of the whole batch\n");
  report::Table first({"setup", "dtype", "max |g_dp - g_64|", "relative to max |g_64|", "first update max |diff|"});
  for (const Measured& m : all)
    first.add_row({m.setup.name, dtype_name(m.setup.dtype), chapters::number(m.grad_diff),
                   chapters::number(m.grad_diff / m.grad_scale), chapters::number(m.update_diff)});
  first.print(std::cout);

  std::printf("\nmax |p_dp - p_single| over all parameters, after step k (%d devices x %lld samples)\n", n,
              static_cast<long long>(config.batch / n));
  std::vector<std::string> header{"step"};
  for (const Measured& m : all) header.push_back(m.setup.name + " " + dtype_name(m.setup.dtype));
  report::Table steps(header);
  for (size_t k : chapters::shown_steps(1, all.front().param_diff.size())) {
    std::vector<std::string> row{std::to_string(k)};
    for (const Measured& m : all) row.push_back(chapters::number(m.param_diff[k - 1]));
    steps.add_row(row);
  }
  steps.print(std::cout);

  std::printf("\ntest set after %zu steps: single device vs data parallel\n", all.front().param_diff.size());
  report::Table test({"setup", "dtype", "single loss", "parallel loss", "single acc %", "parallel acc %"});
  for (const Measured& m : all)
    test.add_row({m.setup.name, dtype_name(m.setup.dtype), report::Table::number(m.single.loss(), 4),
                  report::Table::number(m.parallel.loss(), 4), report::Table::number(100 * m.single.accuracy(), 2),
                  report::Table::number(100 * m.parallel.accuracy(), 2)});
  test.print(std::cout);
}

void draw_curves(const std::vector<Measured>& all, const std::filesystem::path& out) {
  report::LineChart chart({.title = "data parallel vs one device: parameter difference per step",
                           .x_label = "step", .y_label = "max |p_dp - p_single|", .y_scale = report::Scale::Log});
  constexpr double kCeiling = 1e3;  // a run that diverges leaves the chart here
  for (const Measured& m : all) {
    std::vector<report::Point> points;
    for (size_t k = 0; k < m.param_diff.size() && m.param_diff[k] <= kCeiling; ++k)
      points.push_back({double(k + 1), m.param_diff[k]});
    const bool diverged = points.size() < m.param_diff.size();
    chart.add_series(m.setup.name + " " + dtype_name(m.setup.dtype) + (diverged ? " (diverges)" : ""), points);
  }
  chart.save(out / "param_diff.svg");
  std::printf("\nwrote %s\n", (out / "param_diff.svg").c_str());
}

// The verdict rule (README): in float64 the two runs agree to rounding (gradient within
// 1e-12 of its scale, parameters within 1e-9 at every step) for the chapter's combination at
// lr and for the sum at lr/N; in float32 the step-1 gradient agrees within 1e-5 of its scale;
// and, where it is run, the sum at the plain lr does not match (the parameters differ by > 1e-3).
void verdict(const std::vector<Measured>& all, const std::string& combination, int n) {
  const Measured& f64 = all[0];
  const Measured& f32 = all[1];
  const Measured& sum_scaled = all[2];
  const bool f64_equal = f64.grad_diff <= 1e-12 * f64.grad_scale && f64.worst_param_diff() <= 1e-9;
  const bool f32_gradient = f32.grad_diff <= 1e-5 * f32.grad_scale;
  const bool sum_scaled_equal = sum_scaled.update_diff <= 1e-12 && sum_scaled.worst_param_diff() <= 1e-9;
  bool sum_plain_differs = true;
  std::string plain;
  if (all.size() > 3) {
    sum_plain_differs = !(all[3].worst_param_diff() <= 1e-3);  // NaN or Inf: diverged, so it differs
    plain = ", sum at lr: " + chapters::number(all[3].worst_param_diff());
  }
  chapters::print_verdict(
      "C02", f64_equal && f32_gradient && sum_scaled_equal && sum_plain_differs,
      "the " + combination + " of " + std::to_string(n) + " gradients vs the gradient of the whole batch: max |diff| " +
          chapters::number(f64.grad_diff) + " (float64), " + chapters::number(f32.grad_diff) + " = " +
          chapters::number(f32.grad_diff / f32.grad_scale) + " of max |g| (float32); parameters over " +
          std::to_string(f64.param_diff.size()) + " steps: max |diff| " + chapters::number(f64.worst_param_diff()) +
          " (float64), " + chapters::number(f32.worst_param_diff()) + " (float32); sum at lr/" + std::to_string(n) +
          ": " + chapters::number(sum_scaled.worst_param_diff()) + plain);
}

int run(int argc, char** argv) {
  chapters::Cli cli("chapter_02_data_parallel", "the average of the devices' gradients is the big batch's gradient", 4);
  Config config;
  bool sum = false;
  int steps = 0;
  cli.add_option("--steps", steps, "training steps (0: one epoch; --quick: 50)");
  cli.add_option("--lr", config.lr, "learning rate of the single device");
  cli.add_flag("--sum", sum, "sum the gradients without dividing by N, at the same lr (removes the averaging)");
  const chapters::Flags flags = cli.parse(argc, argv);
  RG_CHECK(config.batch % flags.workers == 0, "the batch of ", config.batch, " does not split over ", flags.workers,
           " devices");

  data::FashionMNIST train({.split = data::Split::Train}), test({.split = data::Split::Test});
  config.steps = steps > 0 ? steps : flags.quick ? 50 : train.size() / config.batch;
  config.test_batches = flags.quick ? 2 : 0;
  const int n = flags.workers;
  const std::string combination = sum ? "sum" : "average";
  // The chapter's combination at the same lr, in both dtypes; the sum at lr/N; and, to show
  // that the sum needs it, the sum at the plain lr.
  std::vector<Setup> setups{{combination + ", lr", sum, config.lr, DType::float64},
                            {combination + ", lr", sum, config.lr, DType::float32},
                            {"sum, lr/" + std::to_string(n), true, config.lr / n, DType::float64}};
  if (!sum) setups.push_back({"sum, lr", true, config.lr, DType::float64});
  std::printf("%d devices x %lld samples = batch %lld, MLP, SGD lr %g momentum %g, seed %llu, %lld steps\n", n,
              static_cast<long long>(config.batch / n), static_cast<long long>(config.batch), config.lr,
              config.momentum, static_cast<unsigned long long>(config.seed), static_cast<long long>(config.steps));

  chapters::run_ranks(flags, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    std::vector<Measured> all;
    for (const Setup& setup : setups) {
      all.push_back(run_setup(pg, setup, config, train, test));
      if (pg->rank() == 0)
        std::printf("%s, %s: max |p_dp - p_single| %s after %lld steps\n", setup.name.c_str(),
                    dtype_name(setup.dtype), chapters::number(all.back().param_diff.back()).c_str(),
                    static_cast<long long>(config.steps));
    }
    if (pg->rank() != 0) return;
    print_results(all, n, config);
    draw_curves(all, flags.out);
    verdict(all, combination, n);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chapters::guarded([&] { return run(argc, argv); });
}
