// Lab 1, a backward (autograd/functions/linalg.cpp: linear_backward;
// autograd/functions/loss_norm.cpp: cross_entropy_backward): finite-difference checks and
// a gradient derived by hand.
#include <catch2/catch.hpp>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tensor/ops.h"

namespace rg {
namespace {

Variable random_input(const Shape& shape, Generator& gen) { return {randn(shape, gen, 0.0, 1.0, DType::float64), true}; }

}  // namespace

TEST_CASE("labs.lab1.linear_backward_matches_finite_differences", "[lab1][points=3]") {
  Generator gen(1);
  for (auto [batch, in, out] : {std::tuple{1, 1, 1}, std::tuple{3, 4, 2}, std::tuple{5, 2, 6}}) {
    INFO("x (" << batch << ", " << in << "), W (" << out << ", " << in << ")");
    std::vector<Variable> inputs{random_input({batch, in}, gen), random_input({out, in}, gen),
                                 random_input({out}, gen)};
    auto with_bias = gradcheck([](const std::vector<Variable>& v) { return linear(v[0], v[1], v[2]); }, inputs);
    CHECK(with_bias.message == "");
    CHECK(with_bias.ok);
    inputs.pop_back();
    auto without_bias = gradcheck([](const std::vector<Variable>& v) { return linear(v[0], v[1], Variable()); }, inputs);
    CHECK(without_bias.message == "");
    CHECK(without_bias.ok);
  }
}

TEST_CASE("labs.lab1.cross_entropy_backward_matches_finite_differences", "[lab1][points=3]") {
  Generator gen(2);
  for (auto [batch, classes] : {std::pair{1, 2}, std::pair{4, 3}, std::pair{7, 5}})
    for (Reduction reduction : {Reduction::mean, Reduction::sum}) {
      INFO("logits (" << batch << ", " << classes << "), " << (reduction == Reduction::mean ? "mean" : "sum"));
      const Tensor targets = randint(0, classes, {batch}, gen);
      auto result = gradcheck([&](const std::vector<Variable>& v) { return cross_entropy(v[0], targets, reduction); },
                              {random_input({batch, classes}, gen)});
      CHECK(result.message == "");
      CHECK(result.ok);
    }
}

TEST_CASE("labs.lab1.linear_backward_equals_the_hand_derived_gradient", "[lab1][points=2]") {
  // L = sum(G * (x W^T + b)), so dL/dx = G W, dL/dW = G^T x, dL/db = the column sums of G.
  Variable x(Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}), true);
  Variable w(Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2}), true);
  Variable b(Tensor::from_vector<double>({0.5, -1, 2}, {3}), true);
  const Variable g(Tensor::from_vector<double>({1, 0, 2, 0, 1, -1}, {2, 3}));
  sum(linear(x, w, b) * g).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3, 2, -1, 0});
  CHECK(w.grad().to_vector<double>() == std::vector<double>{1, 2, 3, 4, -1, 0});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{1, 1, 1});
}

}  // namespace rg
