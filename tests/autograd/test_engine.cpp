// The backward engine: accumulation, retain_graph, grad mode, detach, gradient-ready
// hooks (order and once-only, what DDP relies on), nodes that pass no gradient on, deep
// graphs, anomaly mode.
#include <catch2/catch.hpp>
#include <algorithm>
#include <memory>

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

// ---- nodes whose backward returns no gradient (an undefined Tensor) ----

// A stop-gradient recorded in the graph: y = x, whose backward passes nothing on (as a
// student's unfinished backward might).
static Variable stop_gradient(const Variable& x) {
  return make_result("stop_gradient", x.data().clone(), {x},
                     [](const Tensor&, const NeedsGrad&) { return Gradients{Tensor()}; });
}

// y = x, counting the calls of its backward. `saved` stands for the tensors a backward
// captures, so a test can see whether the engine released the node.
static Variable counted_identity(const Variable& x, int& calls, std::shared_ptr<int> saved = nullptr) {
  return make_result("counted_identity", x.data().clone(), {x}, [&calls, saved](const Tensor& g, const NeedsGrad&) {
    ++calls;
    return Gradients{g};
  });
}

TEST_CASE("autograd.no_gradient_node_keeps_other_paths") {
  Variable w = param({1.0, 2.0}, {2}, "w");
  SECTION("the leaf behind a node that no gradient reaches") {
    sum(stop_gradient(w * 2.0) + w * 3.0).backward();  // w * 2.0 gets no gradient
  }
  SECTION("the leaf right behind the stop") {
    sum(stop_gradient(w) * 2.0 + w * 3.0).backward();
  }
  REQUIRE(w.grad().defined());
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>{3.0, 3.0});  // the direct path only
}

TEST_CASE("autograd.no_gradient_node_releases_a_chain_behind_it") {
  Variable x = param({0.5}, {1}, "x");
  int chain_calls = 0;
  Variable h = counted_identity(exp(x * 2.0), chain_calls);  // three nodes that get no gradient
  sum(stop_gradient(h) + x).backward();
  REQUIRE(x.grad().defined());
  REQUIRE(x.grad().item() == 1.0);
  REQUIRE(chain_calls == 0);  // nothing reached the chain, so its backward never ran
}

TEST_CASE("autograd.no_gradient_node_in_a_diamond") {
  Variable x = param({2.0}, {1}, "x");
  int top_calls = 0;
  SECTION("both branches stopped: the top gets nothing, x keeps its direct gradient") {
    Variable top = counted_identity(x, top_calls);
    sum(stop_gradient(top) + stop_gradient(top) + x).backward();
    REQUIRE(top_calls == 0);
    REQUIRE(x.grad().item() == 1.0);
  }
  SECTION("one branch stopped: the top runs once, with the other branch's gradient") {
    Variable top = counted_identity(x, top_calls);
    sum(stop_gradient(top) + top * 2.0 + x).backward();
    REQUIRE(top_calls == 1);
    REQUIRE(x.grad().item() == 3.0);
  }
}

TEST_CASE("autograd.hooks_fire_only_for_leaves_that_get_a_gradient") {
  Variable stopped = param({1.0}, {1}, "stopped");  // reached only through the stop
  Variable both = param({1.0}, {1}, "both");        // through the stop and directly
  Variable direct = param({1.0}, {1}, "direct");
  std::vector<std::string> fired;
  for (Variable* p : {&stopped, &both, &direct})
    p->add_grad_ready_hook([&fired](const Variable& leaf) {
      REQUIRE(leaf.grad().defined());
      fired.push_back(leaf.name());
    });
  auto loss = [&] { return sum(stop_gradient(stopped * both) + both * 4.0 + direct * 5.0); };
  loss().backward();
  std::sort(fired.begin(), fired.end());
  REQUIRE(fired == std::vector<std::string>{"both", "direct"});
  REQUIRE_FALSE(stopped.grad().defined());
  REQUIRE(both.grad().item() == 4.0);
  REQUIRE(direct.grad().item() == 5.0);
  loss().backward();
  REQUIRE(fired.size() == 4);  // once more each per backward
  REQUIRE(both.grad().item() == 8.0);
}

TEST_CASE("autograd.retain_graph_with_a_no_gradient_node") {
  Variable x = param({3.0}, {1}, "x");
  auto saved = std::make_shared<int>(0);
  std::weak_ptr<int> watch = saved;
  int calls = 0;
  Variable y = sum(stop_gradient(counted_identity(x, calls, std::move(saved))) + x * x);
  y.backward(Tensor(), true);
  REQUIRE_FALSE(watch.expired());  // retained, also by the node that no gradient reached
  y.backward();
  REQUIRE(x.grad().item() == 12.0);  // 2x, twice
  REQUIRE(calls == 0);
  REQUIRE(watch.expired());  // released with the rest of the graph
  REQUIRE_THROWS_WITH(y.backward(), Contains("second time"));
}
