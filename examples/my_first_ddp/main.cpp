// Chapter 13 — claim C13: the DDP recipe. Initialise the process group, wrap the model in
// DistributedDataParallel, give each process its own shard with a DistributedSampler, call
// set_epoch every epoch; then backward() averages the gradients and step() updates. This is
// the lecture's PyTorch snippet line for line on ringgrad's public API, trained on
// Fashion-MNIST; it only measures what it did (shards, epoch orders, replicas, loss) and
// judges the claim from that. One file, library headers only: copy it to start a project.
// Usage: chapter_13_ddp_recipe [--quick] [--backend local|mpi] [--workers N] [--steps K]
//                              [--epochs E] [--no-set-epoch]
//        mpirun -n 2 chapter_13_ddp_recipe
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "ringgrad.h"

using namespace rg;

namespace {

struct Options {
  bool quick = false;
  std::string backend = std::getenv("OMPI_COMM_WORLD_SIZE") ? "mpi" : "local";  // mpirun sets it
  int workers = 2;          // local: rank-threads of this process
  int64_t epochs = 3;
  int64_t steps = 0;        // per epoch; 0: the whole shard
  bool set_epoch = true;    // --no-set-epoch: the mechanism removed
};

// --flag / --flag VALUE, by hand (the program has no other dependency); exits 2 on a bad one.
Options parse(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::cerr << "error: " << argv[i] << " needs a value\n";
      std::exit(2);
    }
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--quick") o.quick = true;
    else if (flag == "--no-set-epoch") o.set_epoch = false;
    else if (flag == "--backend") o.backend = value(i);
    else if (flag == "--workers") o.workers = std::atoi(value(i).c_str());
    else if (flag == "--steps") o.steps = std::atoll(value(i).c_str());
    else if (flag == "--epochs") o.epochs = std::atoll(value(i).c_str());
    else {
      std::cerr << "error: unknown flag " << flag
                << " (--quick, --backend local|mpi, --workers N, --steps K, --epochs E, --no-set-epoch)\n";
      std::exit(2);
    }
  }
  if (o.quick && o.steps == 0) o.steps = 40;
  if ((o.backend != "local" && o.backend != "mpi") || o.workers < 1 || o.epochs < 2 || o.steps < 0) {
    std::cerr << "error: --backend is local or mpi, --workers >= 1, --epochs >= 2, --steps >= 0\n";
    std::exit(2);
  }
  return o;
}

// MyModel: 784 -> 256 -> 128 -> 10, ReLU between (chapter 01's MLP).
struct MyModel : nn::Cloneable<MyModel> {
  std::shared_ptr<nn::Linear> fc1 = register_module("fc1", nn::Linear(784, 256));
  std::shared_ptr<nn::Linear> fc2 = register_module("fc2", nn::Linear(256, 128));
  std::shared_ptr<nn::Linear> fc3 = register_module("fc3", nn::Linear(128, 10));
  Variable forward(const Variable& x) override {
    return fc3->forward(relu(fc2->forward(relu(fc1->forward(x.flatten(1))))));
  }
};

// The initial weights, from seed 0 so that a run repeats (DDP then gives every rank rank
// 0's anyway). Rank-threads of a local world share the generator: one at a time.
std::shared_ptr<MyModel> make_model() {
  static std::mutex generator;
  std::lock_guard lock(generator);
  default_generator().set_state(0, 0);
  return std::make_shared<MyModel>();
}

// What one rank saw and did; the verdict is computed from these.
struct Measured {
  std::vector<std::vector<double>> samples;  // [epoch]: a fingerprint of each sample seen, in order
  std::vector<double> losses;                // every step's loss on this rank
};

// One number per image of the batch that tells images apart: its pixels weighted by
// position, sum_j x_j sin(j + 1), in float64 (a plain pixel sum repeats across images).
std::vector<double> fingerprints(const Tensor& images) {
  const Tensor flat = images.flatten(1).to(DType::float64);
  std::vector<double> weights(static_cast<size_t>(flat.size(1)));
  for (size_t j = 0; j < weights.size(); ++j) weights[j] = std::sin(static_cast<double>(j + 1));
  return sum(mul(flat, Tensor::from_vector(weights, {flat.size(1)})), {1}).to_vector<double>();
}

// Share of positions where two epochs fed the same sample: near 0 if reshuffled, 1 if repeated.
double repeated_share(const std::vector<double>& a, const std::vector<double>& b) {
  size_t same = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(std::min(a.size(), b.size()));
}

// Every rank's `mine` (all the same length), rank after rank: a collective.
std::vector<double> gather(parallel::ProcessGroup& pg, const std::vector<double>& mine) {
  const Tensor all = Tensor::zeros({pg.size() * static_cast<int64_t>(mine.size())}, DType::float64);
  pg.all_gather(all, Tensor::from_vector(mine, {static_cast<int64_t>(mine.size())}));
  return all.to_vector<double>();
}

// Share of this rank's first-epoch samples that another rank also got: 0 for disjoint shards.
double shard_overlap(parallel::ProcessGroup& pg, const std::vector<double>& mine) {
  const std::vector<double> all = gather(pg, mine);
  std::multiset<double> others;
  for (size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i / mine.size()) != pg.rank()) others.insert(all[i]);
  size_t shared = 0;
  for (double s : mine) shared += others.count(s) > 0;
  return static_cast<double>(shared) / static_cast<double>(mine.size());
}

// Largest |difference| of any parameter between any two ranks (max over ranks minus min).
double replica_difference(parallel::ProcessGroup& pg, nn::Module& model) {
  double largest = 0;
  for (auto& p : model.parameters()) {
    Tensor high = p.data().clone().to(DType::float64), low = high.clone();  // copies: p stays
    pg.all_reduce(high, {.op = parallel::ReduceOp::max});
    pg.all_reduce(low, {.op = parallel::ReduceOp::min});
    largest = std::max(largest, max(abs(sub(high, low))).item());
  }
  return largest;
}

double test_accuracy(nn::Module& model) {
  NoGradGuard no_grad;
  data::FashionMNIST test_dataset({.split = data::Split::Test});
  data::DataLoader test_loader(test_dataset, {.batch_size = 1000});
  int64_t correct = 0;
  for (auto& [x, y] : test_loader) correct += static_cast<int64_t>(sum(eq(argmax(model(x).data(), 1), y)).item());
  return static_cast<double>(correct) / static_cast<double>(test_dataset.size());
}

double mean(const std::vector<double>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + first, v.begin() + first + count, 0.0) / static_cast<double>(count);
}

// The lecture's program, one process (or rank-thread) of it.
Measured train(const Options& o, const std::shared_ptr<parallel::ProcessGroup>& pg, std::shared_ptr<MyModel> model) {
  const int rank = pg->rank();
  // model = DDP(model, device_ids=[local_rank]): checks every rank's model has the same
  // shape, broadcasts rank 0's weights, and hooks every parameter's gradient.
  parallel::DistributedDataParallel ddp_model(model, pg);
  nn::CrossEntropyLoss loss_fn;
  optim::SGD optimizer(model->parameters(), {.lr = 0.05, .momentum = 0.9});

  // "数据加载器：每个进程只拿自己那份数据" — each process only takes its own share.
  data::FashionMNIST train_dataset({.split = data::Split::Train});
  data::DistributedSampler train_sampler(train_dataset.size(), {.num_replicas = pg->size(), .rank = rank});
  data::DataLoader train_loader(train_dataset, {.batch_size = 128, .sampler = &train_sampler});

  Measured seen;
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    if (o.set_epoch) train_sampler.set_epoch(epoch);  // "每个epoch打乱数据": reshuffle every epoch
    seen.samples.emplace_back();
    int64_t step = 0;
    for (auto& [data, target] : train_loader) {  // data.to(local_rank): CPU tensors already
      Variable output = ddp_model(data);
      Variable loss = loss_fn(output, target);
      loss.backward();   // computes the gradients; DDP all-reduces and averages them meanwhile
      optimizer.step();  // every rank applies the same averaged gradient
      optimizer.zero_grad();

      // Measurement, not part of the recipe: which samples this epoch fed, and the loss.
      for (double s : fingerprints(data)) seen.samples.back().push_back(s);
      seen.losses.push_back(loss.item());
      if (rank == 0 && (seen.losses.size() % 100 == 0))
        std::printf("step %zu: loss %.4f\n", seen.losses.size(), seen.losses.back());
      if (++step == o.steps) break;
    }
  }
  return seen;
}

// Measures, then rank 0 prints the verdict (rule: chapters/13_ddp_recipe/README.md).
void run(const Options& o, const std::shared_ptr<parallel::ProcessGroup>& pg) {
  auto model = make_model();  // model = MyModel().to(local_rank)
  const Measured seen = train(o, pg, model);
  double repeated = 0;  // the largest share of one epoch's order that the next repeated
  for (size_t e = 1; e < seen.samples.size(); ++e)
    repeated = std::max(repeated, repeated_share(seen.samples[e - 1], seen.samples[e]));
  const double overlap = shard_overlap(*pg, seen.samples[0]);
  const double difference = replica_difference(*pg, *model);
  if (pg->rank() != 0) return;

  constexpr size_t kWindow = 20;
  const double first = mean(seen.losses, 0, kWindow), last = mean(seen.losses, seen.losses.size() - kWindow, kWindow);
  const double accuracy = test_accuracy(*model);
  const bool own_shards = overlap < 0.05, reshuffled = repeated < 0.5, identical = difference == 0;
  const bool trained = last < 0.5 * first && accuracy > 0.5;
  const bool confirmed = own_shards && reshuffled && identical && trained;
  std::printf("verdict C13: %s — %zu steps per rank, loss %.3f -> %.3f, test accuracy %.2f%%, shard overlap %.4f, "
              "epoch order repeated %.4f (set_epoch %s), replica max |diff| %.3g\n",
              confirmed ? "confirmed" : "not reproduced", seen.losses.size(), first, last, 100 * accuracy, overlap,
              repeated, o.set_epoch ? "on" : "off", difference);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.backend == "local") {
    try {
      std::printf("backend: local, %d rank-threads in one process\n", o.workers);
      parallel::run_local_world(o.workers, [&](std::shared_ptr<parallel::ProcessGroup> pg) { run(o, pg); });
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "error: " << e.what() << "\n";
      return 1;
    }
  }
  // dist.init_process_group(backend='nccl'): one process per rank, started by mpirun.
  std::shared_ptr<parallel::ProcessGroup> pg;
  try {
    pg = parallel::init_process_group({.backend = "mpi"}, argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << " (run it under mpirun -n 2)\n";
    return 1;
  }
  if (pg->rank() == 0) std::printf("backend: mpi, %d processes\n", pg->size());
  try {
    run(o, pg);
  } catch (const std::exception& e) {
    std::cerr << "error: " << parallel::from_rank(pg->rank(), e.what()) << "\n" << std::flush;
    pg->abort(1);  // the other processes would wait for this one until their timeout
  }
  return 0;
}
