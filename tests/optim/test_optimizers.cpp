// Optimizers: one or two steps against the update formulas evaluated by hand in double,
// state round trips, skipping parameters without gradients, and no allocation per step.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/optim.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

using namespace rg;

namespace {

const std::vector<double> kP = {1.0, -2.0, 0.5};
const std::vector<double> kG = {0.5, 0.25, -4.0};

Variable parameter() { return Variable(Tensor::from_vector<double>(kP, {3}), true); }

// Runs `steps` steps of `opt` on p with the fixed gradient kG and returns p.
std::vector<double> run(optim::Optimizer& opt, const Variable& p, int steps) {
  for (int s = 0; s < steps; ++s) {
    p.impl()->grad = Tensor::from_vector<double>(kG, {3});
    opt.step();
  }
  return p.data().to_vector<double>();
}

// Expected p_i after the closed-form update `delta(p, g)` applied to every element.
template <class Fn>
void check_elements(const std::vector<double>& got, Fn&& expected) {
  for (size_t i = 0; i < kP.size(); ++i) CHECK(got[i] == Approx(expected(kP[i], kG[i])).epsilon(1e-14));
}

}  // namespace

TEST_CASE("optim.sgd_one_step_variants", "[optim]") {
  const double lr = 0.1;
  SECTION("plain: p - lr g") {
    Variable p = parameter();
    optim::SGD opt({p}, {.lr = lr});
    check_elements(run(opt, p, 1), [&](double p0, double g) { return p0 - lr * g; });
  }
  SECTION("momentum: buf_1 = g, buf_2 = 0.9 g + g") {
    Variable p = parameter();
    optim::SGD opt({p}, {.lr = lr, .momentum = 0.9});
    check_elements(run(opt, p, 2), [&](double p0, double g) { return p0 - lr * g - lr * 1.9 * g; });
  }
  SECTION("dampening: buf_2 = 0.9 g + (1 - 0.5) g") {
    Variable p = parameter();
    optim::SGD opt({p}, {.lr = lr, .momentum = 0.9, .dampening = 0.5});
    check_elements(run(opt, p, 2), [&](double p0, double g) { return p0 - lr * g - lr * 1.4 * g; });
  }
  SECTION("nesterov: d = g + momentum buf") {
    Variable p = parameter();
    optim::SGD opt({p}, {.lr = lr, .momentum = 0.9, .nesterov = true});
    // step 1: buf = g, d = 1.9 g;  step 2: buf = 1.9 g, d = g + 0.9 * 1.9 g = 2.71 g
    check_elements(run(opt, p, 2), [&](double p0, double g) { return p0 - lr * 1.9 * g - lr * 2.71 * g; });
  }
  SECTION("weight decay: d = g + wd p") {
    Variable p = parameter();
    optim::SGD opt({p}, {.lr = lr, .weight_decay = 0.01});
    check_elements(run(opt, p, 1), [&](double p0, double g) { return p0 - lr * (g + 0.01 * p0); });
  }
  SECTION("bad options") {
    Variable p = parameter();
    CHECK_THROWS_WITH(optim::SGD({p}, {.lr = lr, .nesterov = true}), Catch::Contains("Nesterov momentum needs"));
    CHECK_THROWS_WITH(optim::SGD({p}, {.lr = -1}), Catch::Contains("learning rate must be finite and >= 0"));
    CHECK_THROWS_WITH(optim::SGD({p, p}, {.lr = lr}), Catch::Contains("is given twice"));
  }
}

TEST_CASE("optim.adam_and_adamw_steps", "[optim]") {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  // Adam by hand for one element with a constant gradient; wd: L2 (Adam) or decoupled (AdamW).
  auto adam = [&](double p, double g, int steps, double wd, bool decoupled) {
    double m = 0, v = 0;
    for (int t = 1; t <= steps; ++t) {
      double grad = decoupled ? g : g + wd * p;
      if (decoupled) p *= 1 - lr * wd;
      m = b1 * m + (1 - b1) * grad;
      v = b2 * v + (1 - b2) * grad * grad;
      double m_hat = m / (1 - std::pow(b1, t)), v_hat = v / (1 - std::pow(b2, t));
      p -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
    return p;
  };
  SECTION("Adam, first step moves every element by about lr") {
    Variable p = parameter();
    optim::Adam opt({p}, {.lr = lr});
    check_elements(run(opt, p, 1), [&](double p0, double g) { return p0 - lr * g / (std::fabs(g) + eps); });
  }
  SECTION("Adam with L2 weight decay, two steps") {
    Variable p = parameter();
    optim::Adam opt({p}, {.lr = lr, .weight_decay = 0.1});
    check_elements(run(opt, p, 2), [&](double p0, double g) { return adam(p0, g, 2, 0.1, false); });
  }
  SECTION("AdamW decays the weights directly, two steps") {
    Variable p = parameter();
    optim::AdamW opt({p}, {.lr = lr, .weight_decay = 0.1});
    check_elements(run(opt, p, 2), [&](double p0, double g) { return adam(p0, g, 2, 0.1, true); });
  }
}

TEST_CASE("optim.skips_params_without_grad", "[optim]") {
  Variable a = parameter(), b = parameter();
  optim::Adam opt({a, b}, {.lr = 0.1});
  a.impl()->grad = Tensor::from_vector<double>(kG, {3});
  opt.step();
  CHECK(b.data().to_vector<double>() == kP);
  CHECK(a.data().to_vector<double>() != kP);
  CHECK(opt.state_dict().count("1.step") == 0);
}

TEST_CASE("optim.state_dict_round_trip", "[optim]") {
  Variable a = parameter(), b = parameter();
  optim::SGD first({a}, {.lr = 0.1, .momentum = 0.9});
  optim::SGD second({b}, {.lr = 0.5, .momentum = 0.9});
  run(first, a, 2);
  b.data().copy_(a.data());
  second.load_state_dict(first.state_dict());
  CHECK(second.lr() == 0.1);
  CHECK(max_abs_diff(Tensor::from_vector<double>(run(first, a, 3), {3}),
                     Tensor::from_vector<double>(run(second, b, 3), {3})) == 0.0);
  optim::OptimizerState bad = first.state_dict();
  bad["0.momentum_buffer"] = Tensor::zeros({4}, DType::float64);
  CHECK_THROWS_WITH(second.load_state_dict(bad), Catch::Contains("'0.momentum_buffer' has shape [4]") &&
                                                     Catch::Contains("has shape [3]"));
  bad = first.state_dict();
  bad["7.momentum_buffer"] = Tensor::zeros({3}, DType::float64);
  CHECK_THROWS_WITH(second.load_state_dict(bad), Catch::Contains("unexpected entry '7.momentum_buffer'"));
}

TEST_CASE("optim.no_allocation_after_first_step", "[optim]") {
  Generator gen(0);
  std::vector<Variable> params;
  for (Shape shape : {Shape{256, 784}, Shape{256}, Shape{10, 256}})
    params.emplace_back(randn(shape, gen), true);
  for (Variable& p : params) p.set_grad(randn(p.shape(), gen));
  optim::SGD sgd(params, {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true});
  optim::Adam adam(params, {.lr = 1e-3, .weight_decay = 1e-4});
  optim::AdamW adamw(params, {.lr = 1e-3, .weight_decay = 1e-2});
  for (optim::Optimizer* opt : std::initializer_list<optim::Optimizer*>{&sgd, &adam, &adamw}) {
    opt->step();  // creates the state buffers
    AllocatorStats before = backend_for(DeviceType::cpu).memory_stats(0);
    for (int step = 2; step <= 5; ++step) {
      opt->step();
      opt->zero_grad();
    }
    AllocatorStats after = backend_for(DeviceType::cpu).memory_stats(0);
    CHECK(after.system_allocs == before.system_allocs);
    CHECK(after.cache_hits == before.cache_hits);  // not even a cached block
  }
}
