// ringgrad-train: trains mlp / cnn / resnet-small on Fashion-MNIST, MNIST, CIFAR-10, an image
// folder or synthetic data, with a progress bar, metrics, charts and checkpoints. Exit codes:
// 0 done, 1 bad data or a failure while training, 2 bad flags (including --resume).
#include <iostream>
#include <regex>

#include "tensor/cuda.h"
#include "tensor/thread_pool.h"
#include "tools/train/datasets.h"
#include "tools/train/models.h"
#include "tools/train/options.h"
#include "tools/train/trainer.h"

using namespace rg;
using namespace rg::train;

namespace {

// rg::Error messages end with the throwing source line, "(data/idx.cpp:37)": useful to us,
// noise to a student reading "error: <file>: <problem>".
std::string without_location(const std::string& message) {
  static const std::regex location(R"( \([a-z_/]+\.(cpp|h):[0-9]+\)$)");
  return std::regex_replace(message, location, "");
}

int fail(int code, const std::string& message) {
  std::cerr << "error: " << without_location(message) << std::endl;
  return code;
}

int run_training(const TrainOptions& options) {
  set_num_threads(options.threads > 0 ? options.threads : default_num_threads());
  const Device device = Device::parse(options.device);
  if (device.is_cuda() && !cuda::is_available()) {
    return fail(2, "--device: CUDA is not available here (" + cuda::unavailable_reason() + "); use --device cpu");
  }
  DataSplits data;
  try {
    data = load_data({.name = options.data, .image_size = options.image_size, .seed = options.seed});
  } catch (const Error& e) {
    return fail(1, e.what());
  }
  default_generator().set_state(options.seed, 0);
  auto model = make_model(options.model, data.shape());
  model->to(device);
  std::cout << "ringgrad-train: " << options.model << " on " << data.train->name() << " (" << data.train->size()
            << " train / " << data.test->size() << " test images), " << get_num_threads() << " thread(s), "
            << device.str() << std::endl;
  Trainer trainer(options, model, data);
  try {
    print_summary(std::cout, trainer.run(), options.out);
  } catch (const ResumeError& e) {
    return fail(2, std::string("--resume: ") + e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const CliOutcome cli = parse_cli(argc, argv, std::cout, std::cerr);
  if (!cli.options) return cli.exit_code;
  try {
    return run_training(*cli.options);
  } catch (const std::exception& e) {
    return fail(1, e.what());
  }
}
