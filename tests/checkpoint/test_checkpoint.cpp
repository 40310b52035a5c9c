// Training checkpoints: a save/load round trip followed by more training is bitwise
// identical to training straight through; loading into the wrong model, or loading contents
// that would train into nonsense (other dtypes, NaN/Inf, absurd counters, another
// optimizer's state), fails cleanly, naming the file and the entry, and leaves the model untouched.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <limits>

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

namespace {

// Saves `net` (with `opt`'s state after two steps), lets `edit` change the file's tensors and
// metadata, writes it back and returns the error of loading it into `target`, "no error"
// when it loads. `target` must come out of a refused load untouched.
template <class Edit>
std::string load_edited(Net& net, optim::Optimizer& opt, Net& target, optim::Optimizer* target_opt, Edit edit) {
  for (int64_t s = 0; s < 2; ++s) train_step(net, opt, s);
  const std::string path = temp_file("edited.safetensors").string();
  nn::save_checkpoint(path, net, &opt, {.step = 2, .epoch = 1, .sampler_epoch = 1, .sampler_position = 3});
  nn::SafetensorsFile file = nn::read_safetensors(path);
  edit(file);
  nn::write_safetensors(path, file.tensors, file.metadata);
  nn::StateDict before;
  for (const auto& [name, t] : target.state_dict()) before[name] = t.clone();
  nn::Checkpoint info;
  try {
    nn::load_checkpoint(path, target, target_opt, info);
  } catch (const Error& e) {
    check_identical(target.state_dict(), before);
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("checkpoint.refuses_contents_that_train_into_nonsense", "[checkpoint]") {
  using Catch::Contains;
  using File = nn::SafetensorsFile;
  auto with_value = [](File& f, const std::string& name, int64_t index, double value) {
    f.tensors[name] = f.tensors.at(name).clone();
    f.tensors[name].view({-1}).select(0, index).fill_(value);
  };
  auto set_meta = [](const std::string& key, const std::string& value) {
    return [=](File& f) { f.metadata[key] = value; };
  };
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    const char* what;
    std::function<void(File&)> edit;
    std::string expected;
  };
  const std::vector<Case> sgd_cases = {
      {"I32 into an F32 weight",
       [](File& f) { f.tensors["model.fc1.weight"] = f.tensors["model.fc1.weight"].to(DType::int32); },
       "'fc1.weight' is int32 in the state but float32 in the model"},
      {"F64 into an F32 bias",
       [](File& f) { f.tensors["model.fc2.bias"] = f.tensors["model.fc2.bias"].to(DType::float64); },
       "'fc2.bias' is float64 in the state but float32"},
      {"NaN weight", [&](File& f) { with_value(f, "model.fc2.bias", 1, nan); },
       "tensor 'model.fc2.bias' holds nan at index 1 (of 3"},
      {"+inf weight", [&](File& f) { with_value(f, "model.fc1.weight", 17, inf); },
       "'model.fc1.weight' holds inf at index 17"},
      {"-inf weight", [&](File& f) { with_value(f, "model.fc1.bias", 0, -inf); }, "holds -inf at index 0"},
      {"NaN momentum", [&](File& f) { with_value(f, "optim.0.momentum_buffer", 5, nan); },
       "tensor 'optim.0.momentum_buffer' holds nan at index 5"},
      {"inf lr", [&](File& f) { with_value(f, "optim.lr", 0, inf); }, "tensor 'optim.lr' holds inf"},
      {"I32 momentum",
       [](File& f) { f.tensors["optim.1.momentum_buffer"] = f.tensors["optim.1.momentum_buffer"].to(DType::int32); },
       "'1.momentum_buffer' is int32 but parameter 1"},
      {"negative step", set_meta("step", "-3"), "metadata 'step' = -3 is out of range"},
      {"step past int64", set_meta("step", "99999999999999999999"),
       "'step' = '99999999999999999999' is not an integer"},
      {"step above 2^53", set_meta("step", "9007199254740993"), "'step' = 9007199254740993 is out of range (0..2^53)"},
      {"negative epoch", set_meta("epoch", "-1"), "metadata 'epoch' = -1 is out of range"},
      {"float epoch", set_meta("epoch", "1e3"), "'epoch' = '1e3' is not an integer"},
      {"negative sampler_epoch", set_meta("sampler_epoch", "-7"), "'sampler_epoch' = -7 is out of range"},
      {"negative sampler_position", set_meta("sampler_position", "-1"), "'sampler_position' = -1 is out of range"},
      {"absurd sampler_position", set_meta("sampler_position", "4611686018427387904"),
       "'sampler_position' = 4611686018427387904 is out"},
      {"spaces", set_meta("sampler_position", " 3"), "is not an integer"},
      {"a parameter's step 0", [](File& f) { f.tensors["optim.0.step"] = Tensor::from_vector<int64_t>({0}, {}); },
       "'0.step' = 0 is not a step count"},
      {"a negative step", [](File& f) { f.tensors["optim.1.step"] = Tensor::from_vector<int64_t>({-5}, {}); },
       "'1.step' = -5 is not a step count"},
      {"an absurd step",
       [](File& f) { f.tensors["optim.1.step"] = Tensor::from_vector<int64_t>({int64_t{1} << 60}, {}); },
       "is not a step count"},
      {"a float step", [](File& f) { f.tensors["optim.0.step"] = Tensor::scalar(2.0, DType::float64); },
       "'0.step' must be one int64, got float64"},
      {"a buffer without a step", [](File& f) { f.tensors.erase("optim.0.step"); },
       "'0.momentum_buffer' is not state SGD keeps (and there is no step count)"},
      {"a step without its buffer", [](File& f) { f.tensors.erase("optim.1.momentum_buffer"); },
       "parameter 1 ('fc1.bias') has a step count but no 'momentum_buffer'"},
      {"a stray tensor", [](File& f) { f.tensors["junk"] = Tensor::zeros({2}); },
       "tensor 'junk' is neither model state"},
      {"another optimizer's name", set_meta("optimizer", "Adam"),
       "its optimizer state is 'Adam''s, this optimizer is SGD"},
  };
  int cases = 0;
  for (const Case& c : sgd_cases) {
    INFO(c.what);
    Net net, target;
    optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
    optim::SGD target_opt(target.parameters(), {.lr = 0.1, .momentum = 0.9});
    CHECK_THAT(load_edited(net, opt, target, &target_opt, c.edit), Contains(c.expected));
    ++cases;
  }
  // State of one optimizer loaded into another, with and without the name that says so.
  auto unnamed = [](File& f) { f.metadata.erase("optimizer"); };
  {
    Net net, target;
    optim::Adam opt(net.parameters(), {});
    optim::SGD target_opt(target.parameters(), {.lr = 0.1, .momentum = 0.9});
    CHECK_THAT(load_edited(net, opt, target, &target_opt, [](File&) {}),
               Contains("its optimizer state is 'Adam''s, this optimizer is SGD"));
    CHECK_THAT(load_edited(net, opt, target, &target_opt, unnamed), Contains("'0.exp_avg' is not state SGD keeps"));
    optim::AdamW adamw(target.parameters(), {});
    CHECK_THAT(load_edited(net, opt, target, &adamw, [](File&) {}), Contains("this optimizer is AdamW"));
    CHECK(load_edited(net, opt, target, nullptr, [](File&) {}) == "no error");  // the model alone
    cases += 4;
  }
  {
    Net net, target;
    optim::SGD opt(net.parameters(), {.lr = 0.1, .momentum = 0.9});
    optim::Adam target_opt(target.parameters(), {});
    CHECK_THAT(load_edited(net, opt, target, &target_opt, unnamed),
               Contains("'0.momentum_buffer' is not state Adam keeps"));
    optim::SGD plain(target.parameters(), {.lr = 0.1});
    CHECK_THAT(load_edited(net, opt, target, &plain, unnamed), Contains("'0.momentum_buffer' is not state SGD keeps"));
    cases += 2;
  }
  {  // Adam's own step, NaN in its second moment
    Net net, target;
    optim::Adam opt(net.parameters(), {});
    optim::Adam target_opt(target.parameters(), {});
    CHECK_THAT(load_edited(net, opt, target, &target_opt,
                           [](File& f) { f.tensors["optim.2.step"] = Tensor::from_vector<int64_t>({-1}, {}); }),
               Contains("'2.step' = -1 is not a step count"));
    CHECK_THAT(
        load_edited(net, opt, target, &target_opt, [&](File& f) { with_value(f, "optim.3.exp_avg_sq", 2, nan); }),
        Contains("'optim.3.exp_avg_sq' holds nan at index 2"));
    CHECK(load_edited(net, opt, target, &target_opt, [](File&) {}) == "no error");
    cases += 3;
  }
  CHECK(cases == 34);
  fs::remove_all(temp_file("x").parent_path());
}
