// Chapter 01 — claim C01: single-device training is "take a batch, forward, loss, backward,
// update". The whole loop, written out once without helpers, on Fashion-MNIST; every later
// chapter (data parallel, DDP, ...) is compared with what this prints.
// Usage: chapter_01_single_device [--quick]   (--quick: 150 steps, seconds; the tests run it)
#include <chrono>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <string>

#include "ringgrad.h"

using namespace rg;

// 784 -> 256 -> 128 -> 10, ReLU between: the same MLP as `ringgrad-train --model mlp`.
struct Mlp : nn::Cloneable<Mlp> {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", nn::Linear(784, 256));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", nn::Linear(256, 128));
  std::shared_ptr<nn::Linear> fc3 = register_module("fc3", nn::Linear(128, 10));
  Variable forward(const Variable& x) override {
    return fc3->forward(relu(fc2->forward(relu(fc1->forward(x.flatten(1))))));  // x: (B, 1, 28, 28)
  }
};

// Share of the test set classified correctly; no graph is recorded (NoGradGuard).
double test_accuracy(Mlp& model, data::DataLoader& test) {
  NoGradGuard no_grad;
  int64_t correct = 0, seen = 0;
  for (auto& [x, y] : test) {
    correct += static_cast<int64_t>(sum(eq(argmax(model(x).data(), 1), y)).item());
    seen += y.size(0);
  }
  return static_cast<double>(correct) / static_cast<double>(seen);
}

double mean_of(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + first, v.begin() + first + count, 0.0) / static_cast<double>(count);
}

int run(bool quick) {
  constexpr int kEpochs = 3;
  constexpr size_t kQuickSteps = 150, kWindow = 20;
  default_generator().set_state(0, 0);  // the model's initial weights
  data::FashionMNIST train_set({.split = data::Split::Train}), test_set({.split = data::Split::Test});
  data::DataLoader loader(train_set, {.batch_size = 128, .shuffle = true, .seed = 0});
  data::DataLoader test_loader(test_set, {.batch_size = 1000});

  Mlp model;
  nn::CrossEntropyLoss loss_fn;
  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});

  std::vector<double> losses;
  double accuracy = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= kEpochs && !(quick && losses.size() == kQuickSteps); ++epoch) {
    for (auto& [x, y] : loader) {       // take a batch: x (128, 1, 28, 28), y (128)
      Variable output = model(x);       // forward: (128, 10) scores
      Variable loss = loss_fn(output, y);  // loss: mean cross-entropy
      opt.zero_grad();
      loss.backward();                  // backward: d loss / d every parameter
      opt.step();                       // update: p -= lr * (momentum-smoothed) gradient
      losses.push_back(loss.item());
      if (losses.size() % 100 == 0) std::printf("step %zu: loss %.4f\n", losses.size(), losses.back());
      if (quick && losses.size() == kQuickSteps) break;
    }
    accuracy = test_accuracy(model, test_loader);
    std::printf("epoch %d: test accuracy %.2f%%\n", epoch, 100 * accuracy);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const double first = mean_of(losses, 0, kWindow), last = mean_of(losses, losses.size() - kWindow, kWindow);
  const double chance = 1.0 / static_cast<double>(train_set.num_classes());
  // "Loss falls and accuracy beats chance by a wide margin": half the loss, 5x chance.
  const bool confirmed = last < 0.5 * first && accuracy > 5 * chance;
  std::printf("verdict C01: %s — loss %.3f -> %.3f (mean of the first/last %zu steps), test accuracy %.2f%% "
              "(chance %.0f%%), %zu steps in %.1f s\n",
              confirmed ? "confirmed" : "not reproduced", first, last, kWindow, 100 * accuracy, 100 * chance,
              losses.size(), seconds);
  return confirmed ? 0 : 1;
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  try {
    return run(quick);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
