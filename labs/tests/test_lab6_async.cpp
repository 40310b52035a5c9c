// Lab 6, the asynchronous parameter server's staleness bound (parallel/async.cpp:
// answer_waiting_workers): staleness bound 0 is synchronous SGD, and the server's record
// never shows a staleness above the bound's guarantee (parallel/async.h).
#include <catch2/catch.hpp>

#include <chrono>
#include <numeric>
#include <thread>

#include "parallel/async_training.h"

namespace rg::parallel {
using namespace test;

namespace {

constexpr int kSteps = 12;

// W workers, each pushing kSteps gradients of its share of the same batches; the last one
// sleeps `straggle` before every push. Returns the server's record; `server` ends trained.
AsyncPSStats run_workers(int workers, const AsyncPSOptions& options, std::chrono::milliseconds straggle,
                         std::shared_ptr<nn::Sequential>& server) {
  auto batches = make_batches(kSteps, workers * kLocalBatch, DType::float64);
  std::vector<std::shared_ptr<nn::Sequential>> worker_models;
  for (int w = 0; w < workers; ++w) worker_models.push_back(make_sequential(DType::float64, 20 + w));
  return train_async(server, worker_models, options, 0.9, [&](int rank, nn::Module& model, AsyncWorker& worker) {
    for (const Batch& batch : batches) {
      Batch mine = batch.rows((rank - 1) * kLocalBatch, kLocalBatch);
      cross_entropy(model(mine.x), mine.y).backward();
      if (rank == workers) std::this_thread::sleep_for(straggle);
      worker.push();
    }
  });
}

// One process on the whole batches, as W workers at staleness 0 must train.
std::shared_ptr<nn::Sequential> single_process(int workers) {
  auto reference = make_sequential(DType::float64, 7);
  train_single(*reference, make_batches(kSteps, workers * kLocalBatch, DType::float64));
  return reference;
}

int64_t total(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

}  // namespace

TEST_CASE("labs.lab6.staleness_0_trains_like_one_process", "[lab6][points=3]") {
  for (int workers : {1, 2, 4}) {
    INFO(workers << " workers");
    auto server = make_sequential(DType::float64, 7);
    const AsyncPSStats stats = run_workers(workers, {.max_staleness = 0}, std::chrono::milliseconds(0), server);
    CHECK(relative_error(*server, *single_process(workers)) < 1e-10);
    CHECK(stats.updates == kSteps);
    CHECK(stats.staleness_histogram == std::vector<int64_t>{kSteps * workers});
  }
}

TEST_CASE("labs.lab6.the_staleness_bound_is_never_exceeded", "[lab6][points=3]") {
  // With k = W and equal pushes per worker, every staleness is at most 2s (async.h).
  for (int64_t s : {0, 1, 2}) {
    INFO("max_staleness " << s);
    auto server = make_sequential(DType::float64, 7);
    const AsyncPSStats stats = run_workers(3, {.max_staleness = s}, std::chrono::milliseconds(3), server);
    INFO(stats.summary());
    CHECK(stats.max_staleness() <= 2 * s);
    CHECK(total(stats.staleness_histogram) == 3 * kSteps);
    CHECK(stats.gradients == 3 * kSteps);
  }
}

}  // namespace rg::parallel
