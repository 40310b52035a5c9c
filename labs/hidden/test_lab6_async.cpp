// Lab 6's hidden tests: staleness 0 stays synchronous with a straggler, and with one step
// per gradient (k = 1) the staleness stays within (W-1)(2s+1) (parallel/async.h).
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "parallel/async_training.h"

namespace rg::parallel {
using namespace test;

TEST_CASE("labs.lab6.staleness_0_with_a_straggler_is_still_synchronous", "[lab6][points=2][hidden]") {
  const int workers = 3, steps = 8;
  auto batches = make_batches(steps, workers * kLocalBatch, DType::float64);
  auto reference = make_sequential(DType::float64, 7);
  train_single(*reference, batches);
  auto server = make_sequential(DType::float64, 7);
  std::vector<std::shared_ptr<nn::Sequential>> worker_models;
  for (int w = 0; w < workers; ++w) worker_models.push_back(make_sequential(DType::float64, 30 + w));
  const AsyncPSStats stats =
      train_async(server, worker_models, {.max_staleness = 0}, 0.9, [&](int rank, nn::Module& model, AsyncWorker& worker) {
        for (const Batch& batch : batches) {
          Batch mine = batch.rows((rank - 1) * kLocalBatch, kLocalBatch);
          cross_entropy(model(mine.x), mine.y).backward();
          if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(4));
          worker.push();
        }
      });
  CHECK(stats.staleness_histogram == std::vector<int64_t>{steps * workers});
  CHECK(relative_error(*server, *reference) < 1e-10);
}

TEST_CASE("labs.lab6.one_step_per_gradient_stays_within_the_bound", "[lab6][points=1][hidden]") {
  const int workers = 3, steps = 10;
  for (int64_t s : {0, 1}) {
    INFO("max_staleness " << s);
    auto batches = make_batches(steps, kLocalBatch, DType::float64);
    auto server = make_sequential(DType::float64, 7);
    std::vector<std::shared_ptr<nn::Sequential>> worker_models;
    for (int w = 0; w < workers; ++w) worker_models.push_back(make_sequential(DType::float64, 7));
    const AsyncPSStats stats = train_async(server, worker_models, {.max_staleness = s, .gradients_per_update = 1}, 0.0,
                                           [&](int rank, nn::Module& model, AsyncWorker& worker) {
                                             for (const Batch& batch : batches) {
                                               cross_entropy(model(batch.x), batch.y).backward();
                                               if (rank == workers) std::this_thread::sleep_for(std::chrono::milliseconds(3));
                                               worker.push();
                                             }
                                           });
    INFO(stats.summary());
    CHECK(stats.max_staleness() <= (workers - 1) * (2 * s + 1));
    CHECK(stats.updates == workers * steps);
  }
}

}  // namespace rg::parallel
