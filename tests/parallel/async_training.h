// The parameter-server tests' harness (parallel.async.* and lab 6): a server on rank 0 of a
// local world and one worker per further rank, each running the test's steps.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "oracle.h"
#include "parallel/async.h"

namespace rg::parallel::test {

// A server on rank 0 and `workers` workers, each running worker_steps(rank, model, worker).
inline AsyncPSStats train_async(const std::shared_ptr<nn::Sequential>& server_model,
                                const std::vector<std::shared_ptr<nn::Sequential>>& worker_models,
                                const AsyncPSOptions& options, double momentum,
                                const std::function<void(int, nn::Module&, AsyncWorker&)>& worker_steps) {
  AsyncPSStats stats;
  run_local_world(static_cast<int>(worker_models.size()) + 1, [&](std::shared_ptr<ProcessGroup> pg) {
    if (pg->rank() == 0) {
      auto opt = make_sgd(*server_model, momentum);
      stats = run_parameter_server(server_model, opt, pg, options);
      return;
    }
    auto& model = worker_models[pg->rank() - 1];
    AsyncWorker worker(model, pg);
    worker_steps(pg->rank(), *model, worker);
    worker.finish();
  });
  return stats;
}

}  // namespace rg::parallel::test
