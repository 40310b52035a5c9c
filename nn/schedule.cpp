// Closed-form learning-rate schedules.
#include "nn/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tensor/error.h"

namespace rg::optim {

static void check_step(int64_t step, const char* schedule) {
  RG_CHECK(step >= 0, schedule, ": step must be >= 0, got ", step);
}

double ConstantLR::lr_at(int64_t step) const {
  check_step(step, "ConstantLR");
  return base_lr_;
}

StepLR::StepLR(double base_lr, int64_t step_size, double gamma) : base_lr_(base_lr), gamma_(gamma), step_size_(step_size) {
  RG_CHECK(step_size > 0, "StepLR: step_size must be positive, got ", step_size);
}

double StepLR::lr_at(int64_t step) const {
  check_step(step, "StepLR");
  return base_lr_ * std::pow(gamma_, static_cast<double>(step / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(double base_lr, int64_t t_max, double eta_min)
    : base_lr_(base_lr), eta_min_(eta_min), t_max_(t_max) {
  RG_CHECK(t_max > 0, "CosineAnnealingLR: t_max must be positive, got ", t_max);
}

double CosineAnnealingLR::lr_at(int64_t step) const {
  check_step(step, "CosineAnnealingLR");
  double progress = static_cast<double>(std::min(step, t_max_)) / static_cast<double>(t_max_);
  return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

LinearWarmup::LinearWarmup(std::shared_ptr<const Schedule> after, int64_t warmup_steps, double start_factor)
    : after_(std::move(after)), warmup_steps_(warmup_steps), start_factor_(start_factor) {
  RG_CHECK(after_ != nullptr, "LinearWarmup: the wrapped schedule is null");
  RG_CHECK(warmup_steps >= 0 && start_factor >= 0 && start_factor <= 1, "LinearWarmup: warmup_steps ", warmup_steps,
           " must be >= 0 and start_factor ", start_factor, " in [0, 1]");
}

double LinearWarmup::lr_at(int64_t step) const {
  check_step(step, "LinearWarmup");
  double lr = after_->lr_at(step);
  if (step >= warmup_steps_) return lr;
  double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps_);
  return lr * (start_factor_ + (1 - start_factor_) * fraction);
}

double linear_scaled_lr(double base_lr, int64_t global_batch, int64_t base_batch) {
  RG_CHECK(global_batch > 0 && base_batch > 0, "linear_scaled_lr: batch sizes must be positive, got global ",
           global_batch, " and base ", base_batch);
  return base_lr * static_cast<double>(global_batch) / static_cast<double>(base_batch);
}

}  // namespace rg::optim
