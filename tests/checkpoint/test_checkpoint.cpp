// Training checkpoints: a save/load round trip followed by more training is bitwise
// identical to training straight through; loading into the wrong model fails cleanly,
// naming the file and the entry, and leaves the model untouched.
#include <catch2/catch.hpp>

#include <filesystem>

#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "nn/loss.h"

using namespace rg;
namespace fs = std::filesystem;

namespace {

struct Net : nn::Cloneable<Net> {
  explicit Net(Generator* dropout_gen = nullptr, int64_t hidden = 8) : hidden_(hidden) {
    fc1 = register_module("fc1", nn::Linear(6, hidden));
    drop = register_module("drop", nn::Dropout({.p = 0.25, .generator = dropout_gen}));
    fc2 = register_module("fc2", nn::Linear(hidden, 3));
  }
  Variable forward(const Variable& x) override { return fc2->forward(drop->forward(relu(fc1->forward(x)))); }
  int64_t hidden_;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
};

// One SGD step on the batch that step `step` always sees.
void train_step(Net& net, optim::Optimizer& opt, int64_t step) {
  Generator data(1000 + static_cast<uint64_t>(step));
  Tensor x = randn({5, 6}, data);
  Tensor y = randint(0, 3, {5}, data);
  opt.zero_grad();
  nn::CrossEntropyLoss{}(net(x), y).backward();
  opt.step();
}

fs::path temp_file(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ringgrad_ckpt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void check_identical(const nn::StateDict& a, const nn::StateDict& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, tensor] : a) {
    INFO(name);
    CHECK(max_abs_diff(tensor, b.at(name)) == 0.0);
  }
}

}  // namespace

TEST_CASE("checkpoint.resume_is_bitwise_identical", "[checkpoint]") {
  const int64_t n = 3, m = 4;
  for (bool use_adam : {false, true}) {
    auto make_opt = [&](Net& net) -> std::unique_ptr<optim::Optimizer> {
      if (use_adam) return std::make_unique<optim::AdamW>(net.parameters(), optim::AdamOptions{.weight_decay = 0.01});
      return std::make_unique<optim::SGD>(net.parameters(),
                                          optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
    };
    default_generator().set_state(1, 0);
    Generator straight_gen(77);
    Net straight(&straight_gen);
    auto straight_opt = make_opt(straight);
    for (int64_t s = 0; s < n + m; ++s) train_step(straight, *straight_opt, s);

    default_generator().set_state(1, 0);
    Generator first_gen(77);
    Net first(&first_gen);
    auto first_opt = make_opt(first);
    for (int64_t s = 0; s < n; ++s) train_step(first, *first_opt, s);
    std::string path = temp_file("resume.safetensors").string();
    nn::save_checkpoint(path, first, first_opt.get(),
                        {.step = n, .epoch = 1, .sampler_position = 15, .generators = {{"dropout", &first_gen}},
                         .extra = {{"config", "mlp 6-8-3"}}});

    default_generator().set_state(99, 0);  // a differently initialised model and fresh state
    Generator resumed_gen(5);
    Net resumed(&resumed_gen);
    auto resumed_opt = make_opt(resumed);
    nn::Checkpoint info{.generators = {{"dropout", &resumed_gen}}};
    nn::load_checkpoint(path, resumed, resumed_opt.get(), info);
    CHECK(info.step == n);
    CHECK(info.epoch == 1);
    CHECK(info.sampler_position == 15);
    CHECK(info.extra.at("config") == "mlp 6-8-3");
    CHECK(resumed_gen.offset() == first_gen.offset());
    for (int64_t s = info.step; s < n + m; ++s) train_step(resumed, *resumed_opt, s);

    check_identical(resumed.state_dict(), straight.state_dict());
    check_identical(resumed_opt->state_dict(), straight_opt->state_dict());
    fs::remove_all(fs::path(path).parent_path());
  }
}

TEST_CASE("checkpoint.wrong_model_shape", "[checkpoint]") {
  Net small;
  optim::SGD opt(small.parameters(), {.lr = 0.1});
  std::string path = temp_file("small.safetensors").string();
  nn::save_checkpoint(path, small, &opt, {});

  Net wide(nullptr, 9);
  nn::StateDict before;
  for (const auto& [name, t] : wide.state_dict()) before[name] = t.clone();
  nn::Checkpoint info;
  CHECK_THROWS_WITH(nn::load_checkpoint(path, wide, nullptr, info),
                    Catch::Contains(path) && Catch::Contains("'fc1.bias' has shape [8] in the state but [9] in the model"));
  check_identical(wide.state_dict(), before);

  struct Other : nn::Cloneable<Other> {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", nn::Linear(6, 8));
    std::shared_ptr<nn::Linear> head = register_module("head", nn::Linear(8, 3));
    Variable forward(const Variable& x) override { return head->forward(fc1->forward(x)); }
  } other;
  CHECK_THROWS_WITH(nn::load_checkpoint(path, other, nullptr, info),
                    Catch::Contains("missing entry 'head.bias'"));
  fs::remove_all(fs::path(path).parent_path());
}

TEST_CASE("checkpoint.metadata_errors", "[checkpoint]") {
  Net net;
  std::string path = temp_file("meta.safetensors").string();
  nn::write_safetensors(path, {}, {{"format", "something-else"}});
  nn::Checkpoint info;
  CHECK_THROWS_WITH(nn::load_checkpoint(path, net, nullptr, info),
                    Catch::Contains("not a ringgrad checkpoint") && Catch::Contains("'something-else'"));
  nn::write_safetensors(path, {}, {{"format", nn::kCheckpointFormat}, {"step", "3x"}});
  CHECK_THROWS_WITH(nn::load_checkpoint(path, net, nullptr, info), Catch::Contains("'step' = '3x' is not an integer"));

  nn::save_checkpoint(path, net, nullptr, {});
  Generator gen;
  nn::Checkpoint wants_rng{.generators = {{"dropout", &gen}}};
  CHECK_THROWS_WITH(nn::load_checkpoint(path, net, nullptr, wants_rng), Catch::Contains("no state for generator 'dropout'"));
  CHECK_THROWS_WITH(nn::save_checkpoint(path, net, nullptr, {.extra = {{"step", "1"}}}),
                    Catch::Contains("'step' clashes with a reserved key"));
  optim::SGD opt(net.parameters(), {.lr = 0.1});
  CHECK_THROWS_WITH(nn::load_checkpoint(path, net, &opt, info), Catch::Contains("missing entry 'lr'"));
  fs::remove_all(fs::path(path).parent_path());
}
