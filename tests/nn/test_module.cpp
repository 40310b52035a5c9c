// Module: registration, dotted names and order, zero_grad, train/eval, to(), state_dict
// round trips, deep clones, and the errors a user meets first.
#include <catch2/catch.hpp>

#include "nn/layers.h"
#include "nn/module.h"

using namespace rg;

namespace {

// The DESIGN.md section 10 model, clonable by deriving from Cloneable<Self>.
struct MyModel : nn::Cloneable<MyModel> {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", nn::Linear(12, 8));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", nn::Linear(8, 3));
  Variable forward(const Variable& x) override { return fc2->forward(relu(fc1->forward(x.flatten(1)))); }
};

struct Outer : nn::Cloneable<Outer> {
  Variable scale = register_parameter("scale", Tensor::ones({3}));
  std::shared_ptr<MyModel> body = register_module("body", MyModel());
  std::shared_ptr<nn::BatchNorm2d> bn = register_module("bn", nn::BatchNorm2d(2));
  Variable forward(const Variable& x) override { return body->forward(x) * scale; }
};

struct NotClonable : nn::Module {
  Variable forward(const Variable& x) override { return x; }
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Variable>>& named) {
  std::vector<std::string> out;
  for (const auto& [name, p] : named) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("nn.module_named_parameters_order", "[nn]") {
  Outer model;
  CHECK(names(model.named_parameters()) == std::vector<std::string>{"scale", "body.fc1.weight", "body.fc1.bias",
                                                                     "body.fc2.weight", "body.fc2.bias", "bn.weight",
                                                                     "bn.bias"});
  // Parameters carry their full names for messages and DDP.
  CHECK(model.body->fc1->weight.name() == "body.fc1.weight");
  CHECK(model.parameters().size() == 7);
  for (const Variable& p : model.parameters()) CHECK((p.is_leaf() && p.requires_grad()));
  auto buffers = model.named_buffers();
  REQUIRE(buffers.size() == 2);
  CHECK(buffers[0].first == "bn.running_mean");
  CHECK(buffers[1].first == "bn.running_var");
}

TEST_CASE("nn.module_bad_names", "[nn]") {
  struct Bad : NotClonable {
    void add(const std::string& name) { register_parameter(name, Tensor::zeros({1})); }
  } bad;
  bad.add("w");
  CHECK_THROWS_WITH(bad.add("w"), Catch::Contains("'w' is already registered"));
  CHECK_THROWS_WITH(bad.add("a.b"), Catch::Contains("invalid name 'a.b'"));
  CHECK_THROWS_WITH(bad.parameter("nope"), Catch::Contains("no parameter named 'nope'"));
}

TEST_CASE("nn.module_zero_grad", "[nn]") {
  MyModel model;
  Tensor x = Tensor::ones({2, 12});
  sum(model(x)).backward();
  Tensor grad = model.fc1->weight.grad();
  REQUIRE(grad.defined());
  model.zero_grad();
  CHECK(model.fc1->weight.grad().same_data(grad));  // the same buffer: DDP holds it
  CHECK(max(abs(grad)).item() == 0.0);
  model.zero_grad(true);
  CHECK_FALSE(model.fc1->weight.grad().defined());
}

TEST_CASE("nn.module_train_eval", "[nn]") {
  Outer model;
  CHECK(model.bn->is_training());
  model.eval();
  CHECK_FALSE(model.is_training());
  CHECK_FALSE(model.body->fc1->is_training());
  CHECK_FALSE(model.bn->is_training());
  model.train();
  CHECK(model.body->fc2->is_training());
}

TEST_CASE("nn.module_to_keeps_identity", "[nn]") {
  MyModel model;
  Variable w = model.fc1->weight;
  std::vector<float> before = w.data().to_vector<float>();
  model.to(DType::float64);
  CHECK(w.dtype() == DType::float64);
  CHECK(model.fc1->weight.same(w));
  std::vector<double> after = w.data().to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == static_cast<double>(before[i]));
  model.to(Device::cpu(1));  // a virtual CPU device
  CHECK(w.device() == Device::cpu(1));
  CHECK(model.fc2->bias.device() == Device::cpu(1));
}

TEST_CASE("nn.module_state_dict", "[nn]") {
  Outer a, b;
  a.bn->running_mean().fill_(0.5);
  b.load_state_dict(a.state_dict());
  for (const auto& [name, tensor] : a.state_dict()) CHECK(max_abs_diff(tensor, b.state_dict().at(name)) == 0.0);
  CHECK(b.bn->running_mean().to_vector<float>() == std::vector<float>{0.5f, 0.5f});

  nn::StateDict wrong = a.state_dict();
  wrong["body.fc1.weight"] = Tensor::zeros({8, 13});
  CHECK_THROWS_WITH(b.load_state_dict(wrong), Catch::Contains("'body.fc1.weight' has shape [8, 13] in the state but "
                                                               "[8, 12] in the model"));
  nn::StateDict missing = a.state_dict();
  missing.erase("bn.running_var");
  CHECK_THROWS_WITH(b.load_state_dict(missing), Catch::Contains("missing entry 'bn.running_var'"));
  CHECK_NOTHROW(b.load_state_dict(missing, false));
  nn::StateDict extra = a.state_dict();
  extra["head.weight"] = Tensor::zeros({1});
  CHECK_THROWS_WITH(b.load_state_dict(extra), Catch::Contains("unexpected entry 'head.weight'"));
}

TEST_CASE("nn.module_clone_is_deep", "[nn]") {
  Outer model;
  model.eval();
  model.bn->running_var().fill_(2.0);
  uint64_t offset = default_generator().offset();
  auto copy = std::dynamic_pointer_cast<Outer>(model.clone());
  REQUIRE(copy);
  CHECK(default_generator().offset() == offset);  // cloning draws no random numbers
  CHECK_FALSE(copy->is_training());
  CHECK_FALSE(copy->body->fc1->weight.same(model.body->fc1->weight));
  CHECK(copy->body->fc1->weight.name() == "body.fc1.weight");
  CHECK(max_abs_diff(copy->body->fc1->weight.data(), model.body->fc1->weight.data()) == 0.0);
  CHECK(copy->bn->running_var().to_vector<float>() == std::vector<float>{2.0f, 2.0f});
  copy->body->fc1->weight.data().fill_(7.0);
  copy->bn->running_var().fill_(3.0);
  CHECK(model.body->fc1->weight.data().to_vector<float>()[0] != 7.0f);
  CHECK(model.bn->running_var().to_vector<float>()[0] == 2.0f);
  // The clone's members point at the clone's own parameters.
  CHECK(copy->body->fc1->weight.same(copy->named_parameters()[1].second));
}

TEST_CASE("nn.sequential", "[nn]") {
  nn::Sequential seq(nn::Linear(4, 3), nn::ReLU(), std::make_shared<nn::Linear>(3, 2));
  CHECK(names(seq.named_parameters()) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  auto copy = seq.clone();
  Tensor x = Tensor::from_vector<float>({1, -2, 3, 0.5f}, {1, 4});
  CHECK(max_abs_diff(seq(x).data(), (*copy)(x).data()) == 0.0);
  auto& first = dynamic_cast<nn::Linear&>(seq[0]);
  auto& last = dynamic_cast<nn::Linear&>(seq[2]);
  CHECK(max_abs_diff(seq(x).data(), last(relu(first(x))).data()) == 0.0);
}

TEST_CASE("nn.module_not_clonable_error", "[nn]") {
  NotClonable model;
  CHECK_THROWS_WITH(model.clone(), Catch::Contains("derive it from nn::Cloneable<Self>"));
}
