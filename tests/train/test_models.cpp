// The model zoo: every model maps (B, C, H, W) to (B, K) for MNIST- and CIFAR-shaped data,
// and the MLP has exactly the 784-256-128-10 parameters.
#include <catch2/catch.hpp>

#include "tensor/generator.h"
#include "tensor/ops.h"
#include "tools/train/models.h"

using namespace rg;
using namespace rg::train;

TEST_CASE("train.models_output_shapes", "[train]") {
  for (const ImageShape shape : {ImageShape{1, 28, 28, 10}, ImageShape{3, 32, 32, 10}}) {
    for (const auto& name : model_names()) {
      INFO(name << " on " << shape.channels << "x" << shape.height << "x" << shape.width);
      auto model = make_model(name, shape);
      Generator gen(1);
      const Tensor x = randn({2, shape.channels, shape.height, shape.width}, gen);
      CHECK(model->forward(x).shape() == Shape{2, shape.num_classes});
    }
  }
}

TEST_CASE("train.mlp_matches_the_issue", "[train]") {
  auto model = make_model("mlp", {1, 28, 28, 10});
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  CHECK(count == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
}

TEST_CASE("train.unknown_model_throws", "[train]") {
  CHECK_THROWS_AS(make_model("transformer", {}), Error);
}
