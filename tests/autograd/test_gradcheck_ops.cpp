// gradcheck over every differentiable function in autograd/functions.h and every
// differentiable Variable view method: float64 central differences against the analytic
// gradient, with broadcasting and size-1 shapes, and inputs kept away from kinks and ties.
#include <catch2/catch.hpp>

#include <cmath>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"

using namespace rg;

namespace {

using Fn = std::function<Variable(const std::vector<Variable>&)>;

Variable leaf(const Tensor& t) { return Variable(t, true); }

// Uniform in [low, high), float64, requiring grad.
Variable uniform(const Shape& shape, uint64_t seed, double low = -2.0, double high = 2.0) {
  Generator gen(seed);
  return leaf(rand(shape, gen, low, high, DType::float64));
}

// |x| >= 0.25 everywhere: far from the kinks of relu/abs and the poles of division.
Variable away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor u = uniform(shape, seed).data();
  return leaf(sign(u) * (abs(u) + 0.25));
}

// All values distinct, 0.1 apart (>> eps): no ties for max, maximum or max pooling.
Variable distinct(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  std::vector<double> values;
  for (int64_t i : gen.randperm(numel_of(shape))) values.push_back(0.1 * static_cast<double>(i) - 1.0);
  return leaf(Tensor::from_vector<double>(values, shape));
}

void check(const Fn& fn, const std::vector<Variable>& inputs) {
  GradcheckResult result = gradcheck(fn, inputs);
  INFO(result.message);
  CHECK(result.ok);
}

// Shape pairs that exercise broadcasting and size-1 dims.
const std::vector<std::pair<Shape, Shape>> kBroadcastShapes = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{1}, {2, 3}}, {{}, {2, 1, 3}}, {{4, 1, 2}, {3, 1}}};

}  // namespace

TEST_CASE("autograd.gradcheck_add_sub_mul_div_broadcasting", "[autograd]") {
  for (const auto& [sa, sb] : kBroadcastShapes) {
    INFO(shape_str(sa) << " with " << shape_str(sb));
    check([](const auto& v) { return add(v[0], v[1]); }, {uniform(sa, 1), uniform(sb, 2)});
    check([](const auto& v) { return sub(v[0], v[1]); }, {uniform(sa, 3), uniform(sb, 4)});
    check([](const auto& v) { return mul(v[0], v[1]); }, {uniform(sa, 5), uniform(sb, 6)});
    check([](const auto& v) { return div(v[0], v[1]); }, {uniform(sa, 7), away_from_zero(sb, 8)});
  }
}

TEST_CASE("autograd.gradcheck_maximum_minimum", "[autograd]") {
  for (const auto& [sa, sb] : kBroadcastShapes) {
    INFO(shape_str(sa) << " with " << shape_str(sb));
    // a and b are cut from one set of distinct values, so no element of a ties one of b.
    Tensor both = distinct({numel_of(sa) + numel_of(sb)}, 9).data();
    Variable a = leaf(both.narrow(0, 0, numel_of(sa)).reshape(sa).clone());
    Variable b = leaf(both.narrow(0, numel_of(sa), numel_of(sb)).reshape(sb).clone());
    check([](const auto& v) { return maximum(v[0], v[1]); }, {a, b});
    check([](const auto& v) { return minimum(v[0], v[1]); }, {a, b});
  }
}

TEST_CASE("autograd.gradcheck_unary", "[autograd]") {
  for (Shape shape : {Shape{2, 3}, Shape{1}, Shape{}, Shape{3, 1, 2}}) {
    INFO(shape_str(shape));
    check([](const auto& v) { return neg(v[0]); }, {uniform(shape, 1)});
    check([](const auto& v) { return exp(v[0]); }, {uniform(shape, 2)});
    check([](const auto& v) { return log(v[0]); }, {uniform(shape, 3, 0.5, 3.0)});
    check([](const auto& v) { return sqrt(v[0]); }, {uniform(shape, 4, 0.5, 3.0)});
    check([](const auto& v) { return tanh(v[0]); }, {uniform(shape, 5)});
    check([](const auto& v) { return sigmoid(v[0]); }, {uniform(shape, 6)});
    check([](const auto& v) { return relu(v[0]); }, {away_from_zero(shape, 7)});
    check([](const auto& v) { return abs(v[0]); }, {away_from_zero(shape, 8)});
    check([](const auto& v) { return square(v[0]); }, {uniform(shape, 9)});
    check([](const auto& v) { return pow(v[0], 2.5); }, {uniform(shape, 10, 0.5, 2.0)});
    check([](const auto& v) { return pow(v[0], 3.0); }, {uniform(shape, 11)});
    check([](const auto& v) { return pow(v[0], -1.5); }, {uniform(shape, 11, 0.5, 2.0)});
  }
  // clamp: values ..., -0.55, -0.45, ..., 0.45, 0.55: 0.05 (>> eps) from either bound.
  Variable x = leaf(distinct({4, 5}, 12).data() + 0.05);
  check([](const auto& v) { return clamp(v[0], -0.5, 0.5); }, {x});
}

TEST_CASE("autograd.gradcheck_operators_and_scalars", "[autograd]") {
  Variable a = uniform({2, 3}, 1), b = away_from_zero({3}, 2);
  check([](const auto& v) { return v[0] + v[1] - v[0] * v[1] / v[1]; }, {a, b});
  check([](const auto& v) { return -v[0]; }, {a});
  check([](const auto& v) { return (v[0] + 1.5) * 2.0 - 0.5; }, {a});
  check([](const auto& v) { return v[0] / 4.0; }, {a});
  check([](const auto& v) { return 1.5 + v[0]; }, {a});
  check([](const auto& v) { return 1.5 - v[0]; }, {a});
  check([](const auto& v) { return 3.0 * v[0]; }, {a});
}

TEST_CASE("autograd.gradcheck_sum_mean_max", "[autograd]") {
  Variable x = uniform({2, 3, 4}, 1);
  using Dims = std::vector<int64_t>;
  for (Dims dims : {Dims{}, Dims{0}, Dims{1, 2}, Dims{-1}}) {
    for (bool keepdim : {false, true}) {
      check([=](const auto& v) { return sum(v[0], dims, keepdim); }, {x});
      check([=](const auto& v) { return mean(v[0], dims, keepdim); }, {x});
    }
  }
  Variable d = distinct({2, 3, 4}, 2);
  for (int64_t dim : {0, 1, -1})
    for (bool keepdim : {false, true}) check([=](const auto& v) { return max(v[0], dim, keepdim); }, {d});
  check([](const auto& v) { return sum(v[0]); }, {uniform({1, 1}, 3)});
}

TEST_CASE("autograd.gradcheck_matmul_linear", "[autograd]") {
  check([](const auto& v) { return matmul(v[0], v[1]); }, {uniform({3, 4}, 1), uniform({4, 2}, 2)});
  check([](const auto& v) { return matmul(v[0], v[1]); }, {uniform({2, 3, 4}, 3), uniform({4, 5}, 4)});
  check([](const auto& v) { return matmul(v[0], v[1]); }, {uniform({1, 3, 4}, 5), uniform({2, 4, 1}, 6)});
  check([](const auto& v) { return linear(v[0], v[1], v[2]); },
        {uniform({5, 3}, 7), uniform({4, 3}, 8), uniform({4}, 9)});
  check([](const auto& v) { return linear(v[0], v[1], Variable()); }, {uniform({1, 3}, 10), uniform({2, 3}, 11)});
}

TEST_CASE("autograd.gradcheck_conv2d", "[autograd]") {
  Variable x = uniform({2, 2, 5, 4}, 1), w = uniform({3, 2, 3, 3}, 2), b = uniform({3}, 3);
  check([](const auto& v) { return conv2d(v[0], v[1], v[2]); }, {x, w, b});
  check([](const auto& v) { return conv2d(v[0], v[1], v[2], {.stride = 2, .padding = 1}); }, {x, w, b});
  check([](const auto& v) { return conv2d(v[0], v[1], Variable(), {.stride = 1, .padding = 2}); },
        {uniform({1, 1, 3, 3}, 4), uniform({2, 1, 2, 2}, 5)});
}

TEST_CASE("autograd.gradcheck_pooling", "[autograd]") {
  Variable d = distinct({2, 2, 5, 6}, 1);
  check([](const auto& v) { return max_pool2d(v[0], {.kernel_h = 2, .kernel_w = 2}); }, {d});
  check([](const auto& v) { return max_pool2d(v[0], {3, 3, 2, 2, 1, 1}); }, {d});
  Variable x = uniform({2, 2, 5, 6}, 2);
  check([](const auto& v) { return avg_pool2d(v[0], {.kernel_h = 2, .kernel_w = 3}); }, {x});
  check([](const auto& v) { return avg_pool2d(v[0], {3, 3, 1, 2, 1, 1}); }, {x});
}

TEST_CASE("autograd.gradcheck_cat", "[autograd]") {
  Variable a = uniform({2, 3}, 1), b = uniform({1, 3}, 2), c = uniform({2, 1}, 3);
  check([](const auto& v) { return cat({v[0], v[1]}, 0); }, {a, b});
  check([](const auto& v) { return cat({v[0], v[1], v[0]}, -1); }, {a, c});
}

TEST_CASE("autograd.gradcheck_softmax_and_losses", "[autograd]") {
  Variable x = uniform({3, 4}, 1);
  for (int64_t dim : {0, 1, -1}) {
    check([=](const auto& v) { return softmax(v[0], dim); }, {x});
    check([=](const auto& v) { return log_softmax(v[0], dim); }, {x});
  }
  Tensor targets = Tensor::from_vector<int64_t>({3, 0, 2}, {3});
  for (Reduction r : {Reduction::mean, Reduction::sum}) {
    check([=](const auto& v) { return cross_entropy(v[0], targets, r); }, {x});
    check([=](const auto& v) { return mse_loss(v[0], v[1], r); }, {x, uniform({3, 4}, 2)});
  }
  check([=](const auto& v) { return cross_entropy(v[0], Tensor::from_vector<int64_t>({0}, {1})); },
        {uniform({1, 1}, 3)});
}

TEST_CASE("autograd.gradcheck_dropout", "[autograd]") {
  check([](const auto& v) {
    Generator gen(5);  // a fresh generator per call: the same mask in every evaluation
    return dropout(v[0], 0.3, true, gen);
  }, {uniform({4, 5}, 1)});
  Generator unused(0);
  check([&](const auto& v) { return dropout(v[0], 0.3, false, unused); }, {uniform({4, 5}, 2)});
}

TEST_CASE("autograd.gradcheck_batch_norm", "[autograd]") {
  for (Shape shape : {Shape{4, 3}, Shape{2, 3, 2, 3}}) {
    INFO(shape_str(shape));
    Variable x = uniform(shape, 1), w = uniform({3}, 2, 0.5, 2.0), b = uniform({3}, 3);
    Tensor running_mean = Tensor::zeros({3}, DType::float64), running_var = Tensor::ones({3}, DType::float64);
    check([&](const auto& v) { return batch_norm(v[0], v[1], v[2], running_mean, running_var, {.training = true}); },
          {x, w, b});
    check([&](const auto& v) { return batch_norm(v[0], Variable(), Variable(), running_mean, running_var, {}); },
          {x});
    Tensor fixed_mean = Tensor::from_vector<double>({0.1, -0.2, 0.3}, {3});
    Tensor fixed_var = Tensor::from_vector<double>({0.5, 1.5, 2.0}, {3});
    check([&](const auto& v) { return batch_norm(v[0], v[1], v[2], fixed_mean, fixed_var, {.training = false}); },
          {x, w, b});
  }
}

TEST_CASE("autograd.gradcheck_view_methods", "[autograd]") {
  Variable x = uniform({2, 3, 4}, 1);
  check([](const auto& v) { return v[0].view({6, 4}); }, {x});
  check([](const auto& v) { return v[0].reshape({4, -1}); }, {x});
  check([](const auto& v) { return v[0].transpose(0, 2).reshape({24}); }, {x});  // a copy, not a view
  check([](const auto& v) { return v[0].flatten(1); }, {x});
  check([](const auto& v) { return v[0].permute({2, 0, 1}); }, {x});
  check([](const auto& v) { return v[0].transpose(0, -1); }, {x});
  check([](const auto& v) { return v[0].select(1, 2).t(); }, {x});
  check([](const auto& v) { return v[0].narrow(2, 1, 2); }, {x});
  check([](const auto& v) { return v[0].select(-1, -1); }, {x});
  Variable y = uniform({3, 1}, 2);
  check([](const auto& v) { return v[0].expand({2, 3, 4}); }, {y});
  check([](const auto& v) { return v[0].squeeze(1); }, {y});
  check([](const auto& v) { return v[0].unsqueeze(0).unsqueeze(-1); }, {y});
}

TEST_CASE("autograd.view_never_copies", "[autograd]") {
  Variable x = uniform({2, 3, 4}, 1);
  REQUIRE(x.view({6, 4}).data().same_data(x.data()));
  Variable transposed = x.transpose(0, 2);
  REQUIRE_THROWS_WITH(transposed.view({24}), Catch::Contains("view") && Catch::Contains("[4, 3, 2]"));
  REQUIRE_FALSE(transposed.reshape({24}).data().same_data(x.data()));  // reshape copies instead
}

TEST_CASE("autograd.gradcheck_to_dtype_and_device", "[autograd]") {
  Variable x = uniform({2, 3}, 1);
  // float64 -> float32 -> float64 loses precision; a looser tolerance absorbs the rounding.
  GradcheckResult round_trip = gradcheck([](const auto& v) { return v[0].to(DType::float32).to(DType::float64) * 2.0; },
                                         {x}, {.eps = 1e-3, .atol = 1e-4, .rtol = 1e-3});
  INFO(round_trip.message);
  CHECK(round_trip.ok);
  check([](const auto& v) { return v[0].to(DType::float64); }, {x});
  check([](const auto& v) { return square(v[0].to(Device::cpu(1))); }, {x});  // a virtual device and back
}
