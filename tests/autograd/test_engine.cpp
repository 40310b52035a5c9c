// The backward engine: accumulation, retain_graph, grad mode, detach, gradient-ready
// hooks (order and once-only, what DDP relies on), deep graphs, anomaly mode.
#include <catch2/catch.hpp>

#include "autograd/functions.h"
#include "autograd/node.h"

using namespace rg;
using Catch::Contains;

static Variable param(std::vector<double> values, Shape shape, const char* name) {
  return Variable(Tensor::from_vector(values, shape), true).set_name(name);
}

TEST_CASE("autograd.chain_rule_by_hand") {
  Variable x = param({1.0, 2.0, 3.0}, {3}, "x");
  Variable y = sum(square(x * 2.0 + 1.0));  // dy/dx = 2 (2x + 1) * 2
  y.backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{12.0, 20.0, 28.0});
  REQUIRE(y.item() == 9.0 + 25.0 + 49.0);
}

TEST_CASE("autograd.gradients_accumulate_across_backwards") {
  Variable x = param({1.0, -2.0}, {2}, "x");
  sum(x * 3.0).backward();
  sum(x * 3.0).backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{6.0, 6.0});
}

TEST_CASE("autograd.retain_graph") {
  Variable x = param({2.0}, {1}, "x");
  Variable y = sum(exp(x));
  y.backward(Tensor(), true);
  y.backward();  // allowed: the graph was retained
  REQUIRE(x.grad().item() == Approx(2 * std::exp(2.0)));
  REQUIRE_THROWS_WITH(y.backward(), Contains("second time") && Contains("retain_graph"));
}

TEST_CASE("autograd.no_grad_guard_and_detach") {
  Variable x = param({1.0, 2.0}, {2}, "x");
  {
    NoGradGuard guard;
    REQUIRE_FALSE(is_grad_enabled());
    Variable y = x * 2.0;
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.is_leaf());
  }
  REQUIRE(is_grad_enabled());
  Variable d = (x * 2.0).detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.data().to_vector<double>() == std::vector<double>{2.0, 4.0});
}

TEST_CASE("autograd.tensor_converts_to_variable") {
  Tensor batch = Tensor::ones({4, 3}, DType::float64);
  Variable w = param({1, 2, 3, 4, 5, 6}, {2, 3}, "w");
  Variable out = linear(batch, w, Variable());  // a plain Tensor goes straight in
  sum(out).backward();
  REQUIRE(out.shape() == Shape{4, 2});
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>(6, 4.0));
}

TEST_CASE("autograd.bad_backward_calls") {
  Variable constant(Tensor::ones({2}, DType::float64));
  REQUIRE_THROWS_WITH(sum(constant).backward(), Contains("does not require grad"));
  Variable x = param({1.0, 2.0}, {2}, "x");
  REQUIRE_THROWS_WITH((x * 2.0).backward(), Contains("non-scalar") && Contains("[2]"));
}

// A 3-layer MLP whose gradient-ready hooks record their order.
TEST_CASE("autograd.grad_ready_hooks_fire_once_in_ready_order") {
  Generator gen(0);
  auto make = [&](Shape shape, const char* name) {
    return Variable(randn(shape, gen, 0, 1, DType::float64), true).set_name(name);
  };
  std::vector<Variable> params = {make({8, 4}, "fc1.weight"), make({8}, "fc1.bias"), make({6, 8}, "fc2.weight"),
                                  make({6}, "fc2.bias"),      make({3, 6}, "fc3.weight"), make({3}, "fc3.bias")};
  std::vector<std::string> fired;
  for (Variable& p : params)
    p.add_grad_ready_hook([&fired](const Variable& leaf) {
      REQUIRE(leaf.grad().defined());  // the gradient is already in place when the hook runs
      fired.push_back(leaf.name());
    });
  auto loss_of = [&](const Tensor& x) {
    Variable h = relu(linear(x, params[0], params[1]));
    h = relu(linear(h, params[2], params[3]));
    return sum(linear(h, params[4], params[5]));
  };
  Tensor x = randn({5, 4}, gen, 0, 1, DType::float64);
  loss_of(x).backward();
  // Once each, and the last layer's gradients are ready first (reverse of the forward).
  REQUIRE(fired.size() == 6);
  std::vector<std::string> layer_order;
  for (auto& name : fired) layer_order.push_back(name.substr(0, 3));
  REQUIRE(layer_order == std::vector<std::string>{"fc3", "fc3", "fc2", "fc2", "fc1", "fc1"});
  loss_of(x).backward();
  REQUIRE(fired.size() == 12);  // once more per backward, not more
}

TEST_CASE("autograd.hook_fires_once_for_a_leaf_used_twice") {
  Variable w = param({1.0, 2.0}, {2}, "w");
  int calls = 0;
  int id = w.add_grad_ready_hook([&](const Variable&) { ++calls; });
  sum(w * w + w * 3.0).backward();
  REQUIRE(calls == 1);
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>{5.0, 7.0});  // 2w + 3
  w.remove_grad_ready_hook(id);
  sum(w).backward();
  REQUIRE(calls == 1);
}

// 100k nodes: building, backward and destruction must all be iterative (a recursive walk
// or a chain of shared_ptr destructors would overflow the stack; CI also runs this at -O0
// under AddressSanitizer, where frames are large).
TEST_CASE("autograd.deep_graph_100k_nodes") {
  Variable x = param({1.0}, {1}, "x");
  {
    Variable y = x;
    for (int i = 0; i < 100000; ++i) y = y * 1.0;
    sum(y).backward();
    REQUIRE(x.grad().item() == 1.0);
    Variable z = x;
    for (int i = 0; i < 100000; ++i) z = z + 0.0;
  }  // both chains are destroyed here; z's never ran backward
  SUCCEED();
}

TEST_CASE("autograd.anomaly_mode_names_the_op") {
  set_anomaly_mode(true);
  Variable zero = param({0.0, 1.0}, {2}, "x");
  REQUIRE_THROWS_WITH(log(zero), Contains("'log'") && Contains("Inf") && Contains("forward"));
  Variable y = sum(sqrt(zero));  // forward is finite; backward is 1 / (2 sqrt(0)) = Inf
  REQUIRE_THROWS_WITH(y.backward(), Contains("'sqrt'") && Contains("backward"));
  set_anomaly_mode(false);
  Variable fine = sum(sqrt(zero));
  REQUIRE_NOTHROW(fine.backward());
}
