// Gradient accumulation through DDP's no_sync (parallel.ddp.* and lab 5): every step runs one
// micro-batch inside no_sync and one synchronising, and must train like one process that sums
// both micro-batches' gradients, with no bucket launched inside no_sync.
#pragma once
#include <algorithm>
#include <atomic>
#include <vector>

#include "oracle.h"
#include "parallel/ddp.h"

namespace rg::parallel::test {

struct NoSyncRun {
  std::vector<int> launches_inside;  // by rank: bucket launches inside no_sync, over all steps
  double worst_error = 0;            // the largest relative error of a replica from one process
};

inline NoSyncRun train_with_no_sync(int n, const DDPOptions& options, int steps = 3) {
  struct LaunchCount : Observer {
    void bucket_launched(size_t, uint64_t) override { ++launches; }
    std::atomic<int> launches = 0;
  };
  auto initial = make_mlp(DType::float64);
  auto micro = make_batches(2 * steps, n * kLocalBatch, DType::float64);
  auto reference = clone_of(*initial);
  train_single_accumulating(*reference, micro, 2);
  std::vector<std::shared_ptr<Mlp>> replicas;
  for (int r = 0; r < n; ++r) replicas.push_back(clone_of(*initial));
  NoSyncRun run{std::vector<int>(n, 0), 0};
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    const int rank = pg->rank();
    DistributedDataParallel ddp(replicas[rank], pg, options);
    LaunchCount count;
    ddp.set_observer(&count);
    auto opt = make_sgd(*replicas[rank]);
    for (size_t s = 0; s < micro.size(); s += 2) {
      opt.zero_grad();
      count.launches = 0;
      {
        auto guard = ddp.no_sync();
        Batch mine = micro[s].rows(rank * kLocalBatch, kLocalBatch);
        cross_entropy(ddp(mine.x), mine.y).backward();
      }
      run.launches_inside[rank] += count.launches;
      Batch mine = micro[s + 1].rows(rank * kLocalBatch, kLocalBatch);
      cross_entropy(ddp(mine.x), mine.y).backward();
      opt.step();
    }
  });
  for (auto& replica : replicas) run.worst_error = std::max(run.worst_error, relative_error(*replica, *reference));
  return run;
}

}  // namespace rg::parallel::test
