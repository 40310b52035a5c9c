// Learning-rate schedules as pure functions of the step (or epoch) counter, so resuming
// from a checkpoint needs only the counter: `opt.set_lr(schedule.lr_at(step))`.
#pragma once
#include <cstdint>
#include <memory>

namespace rg::optim {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double lr_at(int64_t step) const = 0;
};

// lr = base_lr at every step: a run without a schedule, or the schedule LinearWarmup wraps
// to warm up to a fixed lr. (PyTorch's ConstantLR is another thing: base_lr * factor for
// the first total_iters steps, then base_lr.)
class ConstantLR : public Schedule {
 public:
  explicit ConstantLR(double base_lr) : base_lr_(base_lr) {}
  double lr_at(int64_t step) const override;

 private:
  double base_lr_;
};

// lr = base_lr * gamma^floor(step / step_size)   (PyTorch's StepLR)
class StepLR : public Schedule {
 public:
  StepLR(double base_lr, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step) const override;

 private:
  double base_lr_, gamma_;
  int64_t step_size_;
};

// lr = eta_min + (base_lr - eta_min) (1 + cos(pi step / t_max)) / 2, held at eta_min after
// t_max (Loshchilov & Hutter 2017, SGDR, without restarts; PyTorch's closed form).
class CosineAnnealingLR : public Schedule {
 public:
  CosineAnnealingLR(double base_lr, int64_t t_max, double eta_min = 0.0);
  double lr_at(int64_t step) const override;

 private:
  double base_lr_, eta_min_;
  int64_t t_max_;
};

// Goyal et al. 2017 ("Accurate, Large Minibatch SGD"): for step < warmup_steps the
// wrapped schedule's lr is scaled by start_factor + (1 - start_factor) step / warmup_steps;
// afterwards it is the wrapped schedule's, on the same step counter.
class LinearWarmup : public Schedule {
 public:
  LinearWarmup(std::shared_ptr<const Schedule> after, int64_t warmup_steps, double start_factor = 0.0);
  double lr_at(int64_t step) const override;

 private:
  std::shared_ptr<const Schedule> after_;
  int64_t warmup_steps_;
  double start_factor_;
};

// The linear scaling rule (Goyal et al. 2017): lr = base_lr * global_batch / base_batch.
double linear_scaled_lr(double base_lr, int64_t global_batch, int64_t base_batch);

}  // namespace rg::optim
