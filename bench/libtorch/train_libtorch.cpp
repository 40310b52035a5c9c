// The LibTorch reference for bench/run_vs_libtorch.sh: trains the same MLP / CNN as
// ringgrad-train (same layers, init family, SGD with momentum, batch size, thread count and
// Fashion-MNIST data, read by ringgrad's reader) and prints its training samples/s.
// Usage: bench_train_libtorch --model mlp|cnn --batch-size N --threads T --steps S
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "data/idx.h"

namespace {

struct Args {
  std::string model = "mlp";
  int64_t batch_size = 64;
  int threads = 1;
  int64_t steps = 300;
};

Args parse(int argc, char** argv) {
  Args a;
  CLI::App app{"bench_train_libtorch: LibTorch's training samples/s on Fashion-MNIST"};
  app.add_option("--model", a.model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--batch-size", a.batch_size, "samples per step")->check(CLI::Range(int64_t{1}, int64_t{60000}));
  app.add_option("--threads", a.threads, "LibTorch's threads")->check(CLI::Range(1, 256));
  app.add_option("--steps", a.steps, "timed steps")->check(CLI::Range(1, 1000000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);  // 2: a bad flag, as ringgrad-train
  }
  return a;
}

torch::nn::Sequential make_model(const std::string& name) {
  namespace tnn = torch::nn;
  if (name == "mlp") {
    return tnn::Sequential(tnn::Flatten(), tnn::Linear(784, 256), tnn::ReLU(), tnn::Linear(256, 128), tnn::ReLU(),
                           tnn::Linear(128, 10));
  }
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Conv2d(tnn::Conv2dOptions(16, 32, 5).padding(2)), tnn::ReLU(), tnn::MaxPool2d(2),
                         tnn::Flatten(), tnn::Linear(32 * 7 * 7, 10));
}

// Fashion-MNIST train set as float (N, 1, 28, 28) normalised with (0.2860, 0.3530), and labels.
std::pair<torch::Tensor, torch::Tensor> load_train() {
  rg::data::FashionMNIST train({.split = rg::data::Split::Train});
  const int64_t n = train.size();
  auto images = torch::empty({n, 1, 28, 28}, torch::kUInt8);
  std::memcpy(images.data_ptr(), train.images().data<uint8_t>(), static_cast<size_t>(n) * 784);
  auto labels = torch::empty({n}, torch::kLong);
  std::memcpy(labels.data_ptr(), train.labels().data<int64_t>(), static_cast<size_t>(n) * sizeof(int64_t));
  return {(images.to(torch::kFloat) / 255.0 - 0.2860) / 0.3530, labels};
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  torch::set_num_threads(args.threads);
  torch::manual_seed(0);
  auto [images, labels] = load_train();
  auto model = make_model(args.model);
  const double lr = args.model == "mlp" ? 0.05 : 0.01;
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  const int64_t n = images.size(0), batches = n / args.batch_size;
  auto order = torch::randperm(n, torch::kLong);
  double loss_sum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < args.steps; ++step) {
    const int64_t b = step % batches;
    if (b == 0 && step > 0) order = torch::randperm(n, torch::kLong);
    auto index = order.narrow(0, b * args.batch_size, args.batch_size);
    auto x = images.index_select(0, index), y = labels.index_select(0, index);  // the batch: data loading
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    loss_sum += loss.item<double>();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("libtorch: model=%s batch=%lld threads=%d steps=%lld mean_loss=%.4f samples_per_s=%.0f\n",
              args.model.c_str(), static_cast<long long>(args.batch_size), args.threads,
              static_cast<long long>(args.steps), loss_sum / static_cast<double>(args.steps),
              static_cast<double>(args.steps * args.batch_size) / seconds);
  return 0;
}
