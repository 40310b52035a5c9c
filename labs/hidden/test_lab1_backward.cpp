// Lab 1's hidden tests: cross-entropy's gradient by hand (softmax minus one-hot, over the
// batch size) and a whole MLP's gradient against finite differences.
#include <catch2/catch.hpp>

#include "autograd/functions.h"
#include "autograd/gradcheck.h"
#include "tensor/ops.h"

namespace rg {

TEST_CASE("labs.lab1.cross_entropy_backward_is_softmax_minus_one_hot", "[lab1][points=2][hidden]") {
  // Equal logits: softmax is 1/3 everywhere; the mean over 2 rows halves it.
  Variable z(Tensor::zeros({2, 3}, DType::float64), true);
  cross_entropy(z, Tensor::from_vector<int64_t>({0, 2}, {2})).backward();
  const std::vector<double> expected{-1.0 / 3, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, -1.0 / 3};
  const std::vector<double> got = z.grad().to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(expected[i]).margin(1e-15));
  // The sum is B times the mean, and the incoming gradient scales it.
  Variable zs(Tensor::zeros({2, 3}, DType::float64), true);
  (cross_entropy(zs, Tensor::from_vector<int64_t>({0, 2}, {2}), Reduction::sum) * 3.0).backward();
  const std::vector<double> scaled = zs.grad().to_vector<double>();
  for (size_t i = 0; i < scaled.size(); ++i) CHECK(scaled[i] == Approx(6 * expected[i]).margin(1e-15));
}

TEST_CASE("labs.lab1.an_mlp_s_gradient_matches_finite_differences", "[lab1][points=2][hidden]") {
  Generator gen(3);
  const Tensor x = randn({5, 4}, gen, 0.0, 1.0, DType::float64);
  const Tensor targets = randint(0, 3, {5}, gen);
  std::vector<Variable> weights{{randn({6, 4}, gen, 0.0, 1.0, DType::float64), true},
                                {randn({6}, gen, 0.0, 1.0, DType::float64), true},
                                {randn({3, 6}, gen, 0.0, 1.0, DType::float64), true},
                                {randn({3}, gen, 0.0, 1.0, DType::float64), true}};
  auto result = gradcheck(
      [&](const std::vector<Variable>& w) { return cross_entropy(linear(tanh(linear(x, w[0], w[1])), w[2], w[3]), targets); },
      weights);
  CHECK(result.message == "");
  CHECK(result.ok);
}

}  // namespace rg
