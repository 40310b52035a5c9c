// bench_train_step: samples/s of one training step (forward, cross-entropy, backward, SGD
// with momentum) of ringgrad-train's MLP and CNN on random 1x28x28 inputs, on a chosen
// device. scripts/gpu-check.sh runs it next to bench/torch_train_step.py (the same models
// and steps in PyTorch) and prints the ratio.
//   bench_train_step --device cuda|cpu [--steps N]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "ringgrad.h"

using namespace rg;

static double samples_per_second(const std::string& model_name, int64_t batch, int steps, Device device) {
  default_generator().set_state(0, 0);
  auto model = models::make_model(model_name, {});  // MNIST-shaped: 1x28x28, 10 classes
  model->to(device);
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  Generator gen(1);
  Tensor x = randn({batch, 1, 28, 28}, gen).to(device);
  Tensor y = randint(0, 10, {batch}, gen).to(device);
  auto step = [&] {
    Variable loss = cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  };
  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.index);
  };
  for (int i = 0; i < 5; ++i) step();  // warm-up: caches, allocator, cuBLAS handles
  sync();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  sync();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(batch) * steps / seconds;
}

int main(int argc, char** argv) {
  std::string device_name = "cpu";
  int steps = 200;
  CLI::App app{"bench_train_step: samples/s of one training step of the MLP and the CNN"};
  app.add_option("--device", device_name, "cpu, cuda or cuda:N");
  app.add_option("--steps", steps, "timed steps per model")->check(CLI::Range(1, 1000000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // 2: a bad flag, as ringgrad-train
  }
  Device device = Device::cpu();
  try {
    device = Device::parse(device_name);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: --device: %s\n", e.message().c_str());
    return 2;
  }
  if (device.is_cuda() && !cuda::is_available()) {
    std::printf("bench_train_step: skipped, %s\n", cuda::unavailable_reason().c_str());
    return 77;
  }
  // One line per configuration: "<model> <batch> <samples/s>", read by scripts/gpu-check.sh.
  for (auto [name, batch] : {std::pair{"mlp", 128}, std::pair{"cnn", 64}})
    std::printf("%s %d %.0f\n", name, batch, samples_per_second(name, batch, steps, device));
  return 0;
}
