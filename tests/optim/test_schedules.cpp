// LR schedules at chosen steps, against their closed forms evaluated by hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>

#include "nn/schedule.h"

using namespace rg;

TEST_CASE("optim.constant_lr", "[optim]") {
  optim::ConstantLR schedule(0.05);
  for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1} << 40}) CHECK(schedule.lr_at(step) == 0.05);
  CHECK_THROWS_WITH(schedule.lr_at(-1), Catch::Contains("ConstantLR: step must be >= 0"));
  // Warming up to a fixed lr, as ringgrad-train's --warmup-epochs does.
  optim::LinearWarmup warmup(std::make_shared<optim::ConstantLR>(0.2), 4, 0.1);
  CHECK(warmup.lr_at(0) == Approx(0.02));
  CHECK(warmup.lr_at(2) == Approx(0.2 * (0.1 + 0.9 * 0.5)));
  CHECK(warmup.lr_at(4) == 0.2);
  CHECK(warmup.lr_at(100) == 0.2);
}

TEST_CASE("optim.step_lr", "[optim]") {
  optim::StepLR schedule(0.1, 3, 0.5);
  CHECK(schedule.lr_at(0) == 0.1);
  CHECK(schedule.lr_at(2) == 0.1);
  CHECK(schedule.lr_at(3) == 0.05);
  CHECK(schedule.lr_at(7) == 0.025);
}

TEST_CASE("optim.cosine_annealing_lr", "[optim]") {
  optim::CosineAnnealingLR schedule(1.0, 10, 0.1);
  CHECK(schedule.lr_at(0) == Approx(1.0));
  CHECK(schedule.lr_at(5) == Approx(0.55));  // 0.1 + 0.9 * (1 + cos(pi/2)) / 2
  CHECK(schedule.lr_at(10) == Approx(0.1));
  CHECK(schedule.lr_at(15) == Approx(0.1));
  CHECK(schedule.lr_at(2) == Approx(0.1 + 0.9 * (1 + std::cos(M_PI * 0.2)) / 2));
}

TEST_CASE("optim.linear_warmup", "[optim]") {
  auto after = std::make_shared<optim::StepLR>(0.4, 10, 0.1);
  optim::LinearWarmup schedule(after, 4, 0.25);
  CHECK(schedule.lr_at(0) == Approx(0.1));                      // 0.4 * 0.25
  CHECK(schedule.lr_at(2) == Approx(0.4 * (0.25 + 0.75 * 0.5)));
  CHECK(schedule.lr_at(4) == Approx(0.4));
  CHECK(schedule.lr_at(12) == Approx(0.04));
}

TEST_CASE("optim.linear_scaling_and_bad_arguments", "[optim]") {
  CHECK(optim::linear_scaled_lr(0.1, 1024, 256) == Approx(0.4));
  CHECK_THROWS_WITH(optim::linear_scaled_lr(0.1, 0, 256), Catch::Contains("batch sizes must be positive"));
  CHECK_THROWS_WITH(optim::StepLR(0.1, 0), Catch::Contains("step_size must be positive"));
  CHECK_THROWS_WITH(optim::CosineAnnealingLR(0.1, 10).lr_at(-1), Catch::Contains("step must be >= 0"));
}
