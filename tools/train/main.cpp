// ringgrad-train: trains mlp / cnn / resnet-small on Fashion-MNIST, MNIST, CIFAR-10, an image
// folder or synthetic data, with a progress bar, metrics, charts and checkpoints. Exit codes:
// 0 done, 1 bad data or a failure while training, 2 bad flags (including --resume).
#include <algorithm>
#include <iostream>
#include <optional>

#include "data/named.h"
#include "models/named.h"
#include "parallel/launch.h"
#include "tensor/blas.h"
#include "tensor/cuda.h"
#include "tensor/thread_pool.h"
#include "tools/train/options.h"
#include "tools/train/parallel_run.h"
#include "tools/train/trainer.h"

using namespace rg;
using namespace rg::train;

namespace {

// rg::Error messages end with the throwing source line, "(data/idx.cpp:37)": useful to us,
// noise to a student reading "error: <file>: <problem>".
int fail(int code, const std::string& message) {
  std::cerr << "error: " << message << std::endl;
  return code;
}

int fail(int code, const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return fail(code, error ? error->message() : std::string(e.what()));
}

// Under mpirun only rank 0 speaks; MPI is not initialised yet when the data is read.
bool is_main_process() { return parallel::mpirun_placement().value_or(parallel::MpirunPlacement{}).rank == 0; }

RunSummary train(const TrainOptions& options, const DataSplits& data, const std::shared_ptr<nn::Module>& model,
                 int argc, char** argv, bool& is_main) {
  if (options.parallel == "none") return Trainer(options, model, data).run();
  if (options.parallel == "dp") return train_data_parallel(options, data, model);
  ParallelOutcome outcome = train_on_workers(options, data, model, argc, argv);
  is_main = outcome.is_main;
  return outcome.summary;
}

// The device this process trains on. Under nccl each process takes its own GPU, the one
// its local rank on the node names (as torchrun's LOCAL_RANK does); cuda:N names one outright.
std::string training_device(const TrainOptions& o) {
  if (o.device != "cuda" || o.backend != "nccl") return o.device;
  return "cuda:" + std::to_string(parallel::mpirun_placement().value_or(parallel::MpirunPlacement{}).local_rank);
}

// Why the options cannot run on this build and machine, or nothing.
std::optional<std::string> device_problem(const TrainOptions& o, const Device& device) {
  const auto built = parallel::built_backends();
  if (o.backend == "nccl" && std::find(built.begin(), built.end(), "nccl") == built.end())
    return "--backend: this build has no nccl backend (it needs the CUDA toolkit and NCCL when configured)";
  if (!device.is_cuda()) return std::nullopt;
  if (!cuda::is_available()) return "--device: CUDA is not available here (" + cuda::unavailable_reason() + "); use --device cpu";
  const int gpus = cuda::device_count();
  if (o.parallel == "dp" && o.workers > gpus)
    return "--workers: DataParallel over " + std::to_string(o.workers) + " GPUs, but this machine has " +
           std::to_string(gpus) + " (cuda:0..cuda:" + std::to_string(gpus - 1) + ")";
  if (device.index >= gpus && o.backend == "nccl")
    return "--device: local rank " + std::to_string(device.index) + " needs a GPU of its own (" + device.str() +
           ") but this node has " + std::to_string(gpus) + ": start at most " + std::to_string(gpus) +
           " processes per node";
  if (device.index >= gpus)
    return "--device: " + device.str() + " does not exist: this machine has " + std::to_string(gpus) + " GPU(s)";
  return std::nullopt;
}

int run_training(TrainOptions options, int argc, char** argv) {
  set_num_threads(options.threads > 0 ? options.threads : default_num_threads());
  options.device = training_device(options);
  const Device device = Device::parse(options.device);
  if (const auto problem = device_problem(options, device)) return fail(2, *problem);
  DataSplits data;
  try {
    data = data::load_named({.name = options.data, .image_size = options.image_size, .seed = options.seed});
  } catch (const Error& e) {
    return fail(1, e);
  }
  default_generator().set_state(options.seed, 0);
  auto model = models::make_model(options.model, data.shape());
  model->to(device);
  model->to(options.dtype == "float64" ? DType::float64 : DType::float32);
  bool is_main = is_main_process();
  if (is_main) {
    std::cout << "ringgrad-train: " << options.model << " on " << data.train->name() << " (" << data.train->size()
              << " train / " << data.test->size() << " test images), " << device.str() << ", ";
    if (options.parallel == "none") {
      std::cout << get_num_threads() << " thread(s)\n";
    } else {
      std::cout << options.parallel << " with " << options.workers << " workers (" << options.backend
                << " backend, " << options.allreduce << " all-reduce)\n";
    }
    if (const std::string from = data.train->source(); !from.empty())
      std::cout << "data: " << from << (data.test->source() != from ? " and " + data.test->source() : "") << "\n";
    std::cout << "batch: " << describe_batch_and_lr(options) << std::endl;
    if (const BlasInfo blas = blas_info(); device.is_cpu() && !blas.advice.empty())
      std::cout << "note: " << blas.advice << std::endl;
  }
  try {
    const RunSummary summary = train(options, data, model, argc, argv, is_main);
    if (is_main) print_summary(std::cout, summary, options.out);
  } catch (const ResumeError& e) {
    return fail(2, e);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const CliOutcome cli = parse_cli(argc, argv, std::cout, std::cerr);
  if (!cli.options) return cli.exit_code;
  try {
    return run_training(*cli.options, argc, argv);
  } catch (const std::exception& e) {
    return fail(1, e);
  }
}
