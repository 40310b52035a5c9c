// Layers: output shapes and values against naive loops or hand computation, PyTorch's
// default initialisation bounds, determinism per seed, and bad-input messages.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/init.h"
#include "nn/layers.h"
#include "nn/loss.h"

using namespace rg;

namespace {
Tensor random_input(const Shape& shape, uint64_t seed, DType dtype = DType::float64) {
  Generator gen(seed);
  return randn(shape, gen, 0.0, 1.0, dtype);
}
}  // namespace

TEST_CASE("nn.default_init_bounds_and_seed", "[nn]") {
  default_generator().set_state(42, 0);
  nn::Linear a(50, 7);
  default_generator().set_state(42, 0);
  nn::Linear b(50, 7);
  CHECK(max_abs_diff(a.weight.data(), b.weight.data()) == 0.0);
  CHECK(max_abs_diff(a.bias.data(), b.bias.data()) == 0.0);
  double bound = 1 / std::sqrt(50.0);  // kaiming_uniform(a = sqrt(5)) and the bias rule agree
  CHECK(max(abs(a.weight.data())).item() <= bound);
  CHECK(max(abs(a.weight.data())).item() > 0.9 * bound);
  CHECK(max(abs(a.bias.data())).item() <= bound);
  Generator gen(7);
  a.reset_parameters(gen);
  CHECK(max_abs_diff(a.weight.data(), b.weight.data()) > 0.0);

  nn::Conv2d conv(3, 4, 5);
  double conv_bound = 1 / std::sqrt(3.0 * 25);
  CHECK(max(abs(conv.weight.data())).item() <= conv_bound);
  CHECK(max(abs(conv.weight.data())).item() > 0.9 * conv_bound);
  CHECK(max(abs(conv.bias.data())).item() <= conv_bound);
  CHECK(nn::init::fans(conv.weight.data()) == std::pair<int64_t, int64_t>{75, 100});
}

TEST_CASE("nn.linear_values", "[nn]") {
  nn::Linear fc(3, 2);
  fc.to(DType::float64);
  fc.weight.data().copy_(Tensor::from_vector<double>({1, 2, 3, -1, 0, 1}, {2, 3}));
  fc.bias.data().copy_(Tensor::from_vector<double>({0.5, -0.5}, {2}));
  Tensor y = fc(Tensor::from_vector<double>({1, 1, 1, 2, 0, -1}, {2, 3})).data();
  CHECK(y.to_vector<double>() == std::vector<double>{6.5, -0.5, -0.5, -3.5});
  CHECK_THROWS_WITH(fc(Tensor::zeros({2, 4}, DType::float64)), Catch::Contains("[2, 4]") && Catch::Contains("[2, 3]"));
}

TEST_CASE("nn.conv2d_matches_naive", "[nn]") {
  nn::Conv2d conv({.in_channels = 2, .out_channels = 3, .kernel_size = 3, .stride = 2, .padding = 1});
  conv.to(DType::float64);
  Tensor x = random_input({2, 2, 5, 6}, 1);
  Tensor y = conv(x).data();
  REQUIRE(y.shape() == Shape{2, 3, 3, 3});  // (5 + 2 - 3) / 2 + 1, (6 + 2 - 3) / 2 + 1
  Tensor w = conv.weight.data(), b = conv.bias.data();
  auto at = [](const Tensor& t, std::vector<int64_t> i) {
    Tensor v = t;
    for (int64_t k : i) v = v.select(0, k);
    return v.item();
  };
  double worst = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t o = 0; o < 3; ++o)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 3; ++j) {
          double acc = at(b, {o});
          for (int64_t c = 0; c < 2; ++c)
            for (int64_t p = 0; p < 3; ++p)
              for (int64_t q = 0; q < 3; ++q) {
                int64_t h = i * 2 - 1 + p, v = j * 2 - 1 + q;
                if (h >= 0 && h < 5 && v >= 0 && v < 6) acc += at(w, {o, c, p, q}) * at(x, {n, c, h, v});
              }
          worst = std::max(worst, std::fabs(acc - at(y, {n, o, i, j})));
        }
  CHECK(worst < 1e-12);
}

TEST_CASE("nn.pooling_activations_flatten", "[nn]") {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  CHECK(nn::MaxPool2d(2)(x).data().to_vector<double>() == std::vector<double>{6, 8, 14, 16});
  CHECK(nn::AvgPool2d(2)(x).data().to_vector<double>() == std::vector<double>{3.5, 5.5, 11.5, 13.5});
  CHECK(nn::MaxPool2d(3, 1)(x).data().shape() == Shape{1, 1, 2, 2});
  CHECK(nn::Flatten()(x).data().shape() == Shape{1, 16});
  CHECK(nn::Flatten({.start_dim = 0, .end_dim = 1})(x).data().shape() == Shape{1, 4, 4});
  Tensor v = Tensor::from_vector<double>({-1, 0.5}, {2});
  CHECK(nn::ReLU()(v).data().to_vector<double>() == std::vector<double>{0, 0.5});
  CHECK(nn::Tanh()(v).data().to_vector<double>()[1] == Approx(std::tanh(0.5)));
  CHECK(nn::Sigmoid()(v).data().to_vector<double>()[0] == Approx(1 / (1 + std::exp(1.0))));
  CHECK_THROWS_WITH(nn::MaxPool2d(2, 2, 3), Catch::Contains("padding must be at most half the kernel"));
}

TEST_CASE("nn.dropout_train_and_eval", "[nn]") {
  Generator gen(3);
  nn::Dropout drop({.p = 0.25, .generator = &gen});
  Tensor x = Tensor::ones({1000}, DType::float64);
  std::vector<double> y = drop(x).data().to_vector<double>();
  int64_t kept = 0;
  for (double v : y) {
    CHECK((v == 0.0 || v == Approx(1 / 0.75)));
    kept += v != 0.0;
  }
  CHECK(kept > 700);
  CHECK(kept < 800);
  drop.eval();
  CHECK(max_abs_diff(drop(x).data(), x) == 0.0);
  CHECK_THROWS_WITH(nn::Dropout(1.0), Catch::Contains("p must be in [0, 1)"));
}

TEST_CASE("nn.batchnorm2d_normalises_and_tracks", "[nn]") {
  nn::BatchNorm2d bn(2);
  bn.to(DType::float64);
  Tensor x = random_input({4, 2, 3, 3}, 5) * 3.0 + 1.0;
  Tensor y = bn(x).data();
  Tensor channel_mean = mean(y, {0, 2, 3});
  Tensor channel_var = mean(square(y), {0, 2, 3});
  CHECK(max(abs(channel_mean)).item() < 1e-12);
  CHECK(max(abs(channel_var - 1.0)).item() < 1e-4);  // biased variance, eps = 1e-5
  // running = 0.9 * initial + 0.1 * batch statistic (unbiased variance).
  Tensor batch_mean = mean(x, {0, 2, 3});
  CHECK(max_abs_diff(bn.running_mean(), batch_mean * 0.1) < 1e-12);
  Tensor centered = x - batch_mean.view({1, 2, 1, 1});
  Tensor unbiased = sum(square(centered), {0, 2, 3}) / 35.0;
  CHECK(max_abs_diff(bn.running_var(), unbiased * 0.1 + 0.9) < 1e-12);
  bn.eval();
  Tensor z = bn(x).data();
  Tensor expected = (x - bn.running_mean().view({1, 2, 1, 1})) / sqrt(bn.running_var().view({1, 2, 1, 1}) + 1e-5);
  CHECK(max_abs_diff(z, expected) < 1e-12);
  CHECK_THROWS_WITH(bn(Tensor::zeros({4, 3, 2, 2}, DType::float64)), Catch::Contains("expects (B, 2, H, W)") &&
                                                                         Catch::Contains("[4, 3, 2, 2]"));
}

TEST_CASE("nn.losses_values_and_bad_input", "[nn]") {
  nn::CrossEntropyLoss ce;
  Tensor logits = Tensor::from_vector<double>({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor targets = Tensor::from_vector<int64_t>({2, 0}, {2});
  double expected = (-(3 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0))) + std::log(3.0)) / 2;
  CHECK(ce(logits, targets).item() == Approx(expected).epsilon(1e-12));
  nn::CrossEntropyLoss ce_sum{.reduction = Reduction::sum};
  CHECK(ce_sum(logits, targets).item() == Approx(2 * expected).epsilon(1e-12));
  CHECK_THROWS_WITH(ce(logits, Tensor::from_vector<int64_t>({3, 0}, {2})),
                    Catch::Contains("target class 3 is out of range for 3 classes"));
  CHECK_THROWS_WITH(ce(logits, Tensor::from_vector<int64_t>({0, 0, 1}, {3})),
                    Catch::Contains("targets of shape [3] do not match logits [2, 3]"));

  nn::MSELoss mse;
  Tensor a = Tensor::from_vector<double>({1, 2, 3}, {3}), b = Tensor::from_vector<double>({1, 0, 0}, {3});
  CHECK(mse(a, b).item() == Approx(13.0 / 3));
  CHECK_THROWS_WITH(mse(a, Tensor::zeros({4}, DType::float64)),
                    Catch::Contains("prediction of shape [3] and target of shape [4] differ"));
}

TEST_CASE("nn.backward_twice_error", "[nn]") {
  nn::Linear fc(3, 2);
  Variable loss = sum(relu(fc(Tensor::ones({1, 3}))));
  loss.backward();
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("backward through the graph a second time") &&
                                         Catch::Contains("retain_graph=true"));
  Variable kept = sum(fc(Tensor::ones({1, 3})));
  kept.backward(Tensor(), true);
  CHECK_NOTHROW(kept.backward());
}
