// The lab tests' end-to-end oracle (labs 2, 3, 5): N ranks train the oracle's MLP with DDP,
// each on its DistributedSampler's share of a dataset whose size leaves the shards uneven,
// and after every step every rank's parameters must equal single-process training on the
// padded order (PyTorch's rule, written out here), and all replicas must be bitwise equal.
#pragma once
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/sampler.h"
#include "parallel/ddp.h"
#include "parallel/oracle.h"
#include "tensor/generator.h"
#include "tensor/ops.h"

namespace rg::labs {

// PyTorch's DistributedSampler.__iter__ (torch/utils/data/distributed.py, v2.x), applied to
// the epoch's `order`: without drop_last, pad to R * ceil(n / R) by repeating `order` from
// its start; with it, cut to R * floor(n / R); then rank r takes positions r, r + R, ...
inline std::vector<int64_t> pytorch_rank_indices(std::vector<int64_t> order, int64_t replicas, int64_t rank,
                                                 bool drop_last) {
  const auto n = static_cast<int64_t>(order.size());
  const int64_t total = drop_last ? n / replicas * replicas : (n + replicas - 1) / replicas * replicas;
  for (int64_t i = 0; static_cast<int64_t>(order.size()) < total; ++i) order.push_back(order[i]);
  order.resize(total);
  std::vector<int64_t> mine;
  for (int64_t pos = rank; pos < total; pos += replicas) mine.push_back(order[pos]);
  return mine;
}

// ringgrad's order for an epoch (data/sampler.h): its Philox permutation seeded with
// seed + epoch when shuffling, else 0, 1, ..., n-1.
inline std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  if (shuffle) return Generator(seed + static_cast<uint64_t>(epoch)).randperm(n);
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

struct TrainingRun {
  int world_size = 2;
  int64_t examples = 29;  // a prime: uneven shards for every world size > 1
  int64_t local_batch = 3;
  int epochs = 2;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 5;
  parallel::DDPOptions ddp;
};

// The DDP run of a lab's end-to-end tests (local and under MPI) on `world_size` ranks: a
// reducer and an algorithm that use only that lab's pieces (labs 2-4: the flat reducer, not
// lab 5's buckets; lab 5: the library all-reduce, not lab 3's ring).
inline TrainingRun lab_run(const std::string& lab, int world_size) {
  using parallel::Algorithm;
  using parallel::ReducerKind;
  constexpr double kBytesPerMb = 1024.0 * 1024.0;
  if (lab == "lab2") return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat}};
  if (lab == "lab3")
    return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat, .algorithm = Algorithm::ring}};
  if (lab == "lab4")
    return {.world_size = world_size, .ddp = {.reducer = ReducerKind::flat, .algorithm = Algorithm::star}};
  if (lab == "lab5")  // buckets of 100 bytes: several per backward
    return {.world_size = world_size, .ddp = {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb}};
  throw std::invalid_argument("lab_run: no run for '" + lab + "' (lab2, lab3, lab4 or lab5)");
}

namespace detail_training {

inline std::vector<Tensor> snapshot(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const Variable& p : model.parameters()) out.push_back(p.data().clone());
  return out;
}

inline Tensor index_tensor(const std::vector<int64_t>& indices, size_t begin, size_t end) {
  return Tensor::from_vector<int64_t>(std::vector<int64_t>(indices.begin() + begin, indices.begin() + end),
                                      {static_cast<int64_t>(end - begin)});
}

// "" or how parameters `got` differ from `want` by more than `tolerance` relative.
inline std::string difference(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tolerance) {
  for (size_t i = 0; i < want.size(); ++i) {
    const double scale = std::max(1.0, max(abs(want[i])).item());
    const double diff = max_abs_diff(got[i], want[i]);
    if (diff > tolerance * scale) return rg::detail::concat("parameter ", i, " differs by ", diff);
  }
  return "";
}

}  // namespace detail_training

// The dataset (its size leaves the shards uneven) and the initial model every run starts from.
struct TrainingData {
  Tensor x, y;
  std::shared_ptr<parallel::test::Mlp> initial;
};

inline TrainingData training_data(const TrainingRun& run) {
  using namespace parallel::test;
  Generator gen(run.seed);
  TrainingData data;
  data.x = randn({run.examples, kIn}, gen, 0.0, 1.0, DType::float64);
  data.y = randint(0, kClasses, {run.examples}, gen);
  data.initial = make_mlp(DType::float64);
  return data;
}

using Steps = std::vector<std::vector<Tensor>>;  // the parameters after each step

// The reference: one process, step s on rank 0's batch s, then rank 1's, ...
inline Steps single_process_steps(const TrainingRun& run, const TrainingData& data) {
  using namespace parallel::test;
  using detail_training::index_tensor;
  const int n = run.world_size;
  Steps steps;
  auto model = clone_of(*data.initial);
  auto opt = make_sgd(*model);
  for (int epoch = 0; epoch < run.epochs; ++epoch) {
    const auto order = epoch_order(run.examples, run.shuffle, run.seed, epoch);
    std::vector<std::vector<int64_t>> shards;
    for (int r = 0; r < n; ++r) shards.push_back(pytorch_rank_indices(order, n, r, run.drop_last));
    for (size_t begin = 0; begin < shards[0].size(); begin += run.local_batch) {
      const size_t end = std::min(shards[0].size(), begin + run.local_batch);
      std::vector<int64_t> batch;
      for (const auto& shard : shards) batch.insert(batch.end(), shard.begin() + begin, shard.begin() + end);
      const Tensor rows = index_tensor(batch, 0, batch.size());
      opt.zero_grad();
      cross_entropy((*model)(index_select(data.x, 0, rows)), index_select(data.y, 0, rows)).backward();
      opt.step();
      steps.push_back(detail_training::snapshot(*model));
    }
  }
  return steps;
}

// One rank of `pg`: DDP on its DistributedSampler's share.
inline Steps ddp_steps(const TrainingRun& run, const TrainingData& data, const std::shared_ptr<parallel::ProcessGroup>& pg) {
  using namespace parallel::test;
  using detail_training::index_tensor;
  Steps steps;
  auto model = clone_of(*data.initial);
  parallel::DistributedDataParallel ddp(model, pg, run.ddp);
  auto opt = make_sgd(*model);
  data::DistributedSampler sampler(run.examples, {.num_replicas = pg->size(), .rank = pg->rank(),
                                                  .shuffle = run.shuffle, .seed = run.seed, .drop_last = run.drop_last});
  for (int epoch = 0; epoch < run.epochs; ++epoch) {
    sampler.set_epoch(epoch);
    const std::vector<int64_t> mine = sampler.indices();
    for (size_t begin = 0; begin < mine.size(); begin += run.local_batch) {
      const Tensor rows = index_tensor(mine, begin, std::min(mine.size(), begin + run.local_batch));
      opt.zero_grad();
      cross_entropy(ddp(index_select(data.x, 0, rows)), index_select(data.y, 0, rows)).backward();
      opt.step();
      steps.push_back(detail_training::snapshot(*model));
    }
  }
  return steps;
}

// "" when rank `rank`'s parameters equal single-process training's after every step
// (float64, relative 1e-10) and, given rank 0's, equal those bit for bit.
inline std::string compare_steps(int rank, int world_size, const Steps& mine, const Steps& reference,
                                 const Steps* rank_0 = nullptr) {
  if (mine.size() != reference.size())
    return rg::detail::concat("rank ", rank, " of ", world_size, " ran ", mine.size(), " steps, single-process training ",
                              reference.size());
  for (size_t s = 0; s < reference.size(); ++s) {
    const std::string where = rg::detail::concat("rank ", rank, " of ", world_size, " after step ", s + 1, ": ");
    std::string error = detail_training::difference(mine[s], reference[s], 1e-10);
    if (!error.empty()) return where + error + " from single-process training";
    if (!rank_0) continue;
    error = detail_training::difference(mine[s], (*rank_0)[s], 0);
    if (!error.empty()) return where + error + " from rank 0's (replicas must be bitwise equal)";
  }
  return "";
}

// "" when, after every step, every rank's parameters equal single-process training on the
// concatenation of the ranks' batches (float64, relative 1e-10) and every replica equals
// rank 0's bit for bit; else the first difference, naming the rank and the step.
inline std::string ddp_versus_single_process(const TrainingRun& run) {
  const TrainingData data = training_data(run);
  const Steps reference = single_process_steps(run, data);
  std::vector<Steps> replicas(run.world_size);
  parallel::run_local_world(run.world_size, [&](std::shared_ptr<parallel::ProcessGroup> pg) {
    replicas[pg->rank()] = ddp_steps(run, data, pg);
  });
  for (int r = 0; r < run.world_size; ++r) {
    std::string error = compare_steps(r, run.world_size, replicas[r], reference, &replicas[0]);
    if (!error.empty()) return error;
  }
  return "";
}

}  // namespace rg::labs
