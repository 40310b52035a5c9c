// The models: every one maps (B, C, H, W) to (B, K) for MNIST- and CIFAR-shaped data; the MLP
// has exactly the 784-256-128-10 parameters; the MLP and CNN keep PyTorch's
// nn.Sequential parameter names, draw their weights in their documented order and compute
// what the same layers in an nn::Sequential compute; clones are deep and keep their class;
// evaluate() sums over a whole data set whatever its batch size.
#include <catch2/catch.hpp>

#include <algorithm>
#include <typeinfo>

#include "data/synthetic.h"
#include "models/models.h"
#include "tensor/generator.h"
#include "tensor/ops.h"

using namespace rg;
using namespace rg::models;

namespace {

std::vector<std::string> parameter_names(const nn::Module& model) {
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  return names;
}

// Every parameter of `model` equals the same-position parameter of `layers`, bit for bit.
void check_same_parameters(const nn::Module& model, const std::vector<const nn::Module*>& layers) {
  std::vector<Variable> expected;
  for (const nn::Module* layer : layers)
    for (const Variable& p : layer->parameters()) expected.push_back(p);
  const std::vector<Variable> got = model.parameters();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i);
    CHECK(max_abs_diff(got[i].data(), expected[i].data()) == 0.0);
  }
}

}  // namespace

TEST_CASE("models.output_shapes", "[models]") {
  for (const data::ImageShape shape : {data::ImageShape{1, 28, 28, 10}, data::ImageShape{3, 32, 32, 10}}) {
    for (const auto& name : model_names()) {
      INFO(name << " on " << shape.channels << "x" << shape.height << "x" << shape.width);
      auto model = make_model(name, shape);
      Generator gen(1);
      const Tensor x = randn({2, shape.channels, shape.height, shape.width}, gen);
      CHECK(model->forward(x).shape() == Shape{2, shape.num_classes});
    }
  }
}

TEST_CASE("models.mlp_matches_the_issue", "[models]") {
  auto model = make_model("mlp", {1, 28, 28, 10});
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  CHECK(count == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
}

TEST_CASE("models.unknown_model_and_small_images_throw", "[models]") {
  CHECK_THROWS_WITH(make_model("transformer", {}), Catch::Contains("unknown model 'transformer'"));
  CHECK_THROWS_WITH(make_model("cnn", {1, 3, 8, 10}), Catch::Contains("cnn: images must be at least 4x4, got 3x8"));
}

TEST_CASE("models.mlp_and_cnn_keep_pytorch_sequential_names", "[models]") {
  CHECK(parameter_names(MLP({1, 28, 28, 10})) ==
        std::vector<std::string>{"1.weight", "1.bias", "3.weight", "3.bias", "5.weight", "5.bias"});
  CHECK(parameter_names(CNN({1, 28, 28, 10})) ==
        std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias", "7.weight", "7.bias"});
}

TEST_CASE("models.mlp_draws_its_weights_output_layer_first", "[models]") {
  const data::ImageShape shape{1, 6, 5, 4};
  default_generator().set_state(7, 0);
  MLP model(shape);
  default_generator().set_state(7, 0);
  nn::Linear fc3(128, 4), fc2(256, 128), fc1(30, 256);
  check_same_parameters(model, {&fc1, &fc2, &fc3});
}

TEST_CASE("models.cnn_draws_its_weights_output_layer_first", "[models]") {
  const data::ImageShape shape{3, 9, 8, 5};
  default_generator().set_state(7, 0);
  CNN model(shape);
  default_generator().set_state(7, 0);
  nn::Linear fc(32 * 2 * 2, 5);
  nn::Conv2d conv2(16, 32, 5, 1, 2), conv1(3, 16, 5, 1, 2);
  check_same_parameters(model, {&conv1, &conv2, &fc});
}

TEST_CASE("models.mlp_and_cnn_compute_their_sequential_twins", "[models]") {
  Generator gen(3);
  const Tensor x = randn({4, 1, 12, 12}, gen);
  MLP mlp({1, 12, 12, 10});
  nn::Sequential mlp_twin(nn::Flatten(), mlp.fc1, nn::ReLU(), mlp.fc2, nn::ReLU(), mlp.fc3);
  CHECK(max_abs_diff(mlp(x).data(), mlp_twin(x).data()) == 0.0);
  CNN cnn({1, 12, 12, 10});
  nn::Sequential cnn_twin(cnn.conv1, nn::ReLU(), nn::MaxPool2d(2), cnn.conv2, nn::ReLU(), nn::MaxPool2d(2),
                          nn::Flatten(), cnn.fc);
  CHECK(max_abs_diff(cnn(x).data(), cnn_twin(x).data()) == 0.0);
}

// The CNN pools before its ReLUs (cnn.cpp): the same gradients as PyTorch's order, bit for
// bit, ties included: an all-zero image makes every window a tie of bias-only outputs.
TEST_CASE("models.cnn_pools_before_its_relu_with_the_same_gradients", "[models]") {
  Generator gen(5);
  Tensor x = randn({3, 1, 12, 12}, gen);
  x.narrow(0, 2, 1).fill_(0.0);
  const Tensor upstream = randn({3, 10}, gen);
  CNN cnn({1, 12, 12, 10});
  nn::Sequential twin(cnn.conv1, nn::ReLU(), nn::MaxPool2d(2), cnn.conv2, nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                      cnn.fc);
  auto gradients = [&](nn::Module& model) {
    cnn.zero_grad();
    sum(model(x) * Variable(upstream)).backward();
    std::vector<Tensor> grads;
    for (const Variable& p : cnn.parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  const auto ours = gradients(cnn), pytorch_order = gradients(twin);
  for (size_t i = 0; i < ours.size(); ++i) {
    INFO("parameter " << i);
    CHECK(max_abs_diff(ours[i], pytorch_order[i]) == 0.0);
  }
}

TEST_CASE("models.clones_are_deep_copies_of_the_same_class", "[models]") {
  for (const auto& name : model_names()) {
    INFO(name);
    auto model = make_model(name, {3, 8, 8, 10});
    auto copy = model->clone();
    CHECK(typeid(*copy) == typeid(*model));
    CHECK(parameter_names(*copy) == parameter_names(*model));
    const nn::StateDict original = model->state_dict(), copied = copy->state_dict();
    for (const auto& [key, tensor] : original) {
      INFO(key);
      CHECK(max_abs_diff(copied.at(key), tensor) == 0.0);
      CHECK_FALSE(copied.at(key).same_data(tensor));
    }
  }
  // The clone's named layers are the clone's own.
  MLP mlp({1, 28, 28, 10});
  auto copy = std::dynamic_pointer_cast<MLP>(mlp.clone());
  REQUIRE(copy);
  CHECK(copy->fc1->weight.same(copy->named_parameters()[0].second));
  CHECK_FALSE(copy->fc1->weight.same(mlp.fc1->weight));
}

TEST_CASE("models.resnet_small_layout", "[models]") {
  ResNetSmall model({3, 32, 32, 10});
  const std::vector<std::string> names = parameter_names(model);
  CHECK(names.front() == "stem.0.weight");
  CHECK(names.back() == "fc.bias");
  // Blocks 2 and 4 (the first of the 32- and 64-channel stages) change the shape: only they
  // have a shortcut conv.
  int shortcuts = 0;
  for (const auto& name : names) shortcuts += name.ends_with("shortcut.0.weight");
  CHECK(shortcuts == 2);
  CHECK(std::find(names.begin(), names.end(), "stages.2.shortcut.0.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "stages.4.shortcut.0.weight") != names.end());
}

TEST_CASE("models.evaluate_sums_over_the_whole_set_whatever_the_batch", "[models]") {
  const data::SynthDataset test({.size = 250, .seed = 3});
  default_generator().set_state(5, 0);
  auto model = make_model("mlp", {.channels = 1, .height = 8, .width = 8, .num_classes = 10});
  data::DataLoader loader(test, data::DataLoaderOptions{.batch_size = 64});
  const Evaluation by_loader = evaluate(*model, loader);
  for (const int64_t batch : {1000, 64, 7}) {
    INFO("batch " << batch);
    const Evaluation whole = evaluate(*model, test, Device::cpu(), batch);
    CHECK(whole.samples == 250);
    CHECK(whole.correct == by_loader.correct);
    CHECK(whole.loss_sum == Approx(by_loader.loss_sum).epsilon(1e-5));
  }
}
