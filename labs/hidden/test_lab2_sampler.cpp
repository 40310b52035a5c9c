// Lab 2's hidden tests: PyTorch's lists for more sizes, and DDP trained on the sampler's
// uneven shards equal to one process on the padded order, on every rank after every step.
#include <catch2/catch.hpp>

#include "lab_mpi.h"
#include "lab_training.h"

namespace rg::data {

TEST_CASE("labs.lab2.unshuffled_lists_equal_pytorch_s_for_every_size", "[lab2][points=2][hidden]") {
  for (int64_t n = 0; n <= 20; ++n)
    for (int64_t replicas = 1; replicas <= 6; ++replicas)
      for (bool drop_last : {false, true}) {
        INFO("n " << n << ", " << replicas << " replicas, drop_last " << drop_last);
        for (int64_t rank = 0; rank < replicas; ++rank) {
          DistributedSampler sampler(n, {.num_replicas = replicas, .rank = rank, .shuffle = false, .drop_last = drop_last});
          CHECK(sampler.indices() == labs::pytorch_rank_indices(labs::epoch_order(n, false, 0, 0), replicas, rank, drop_last));
        }
      }
}

TEST_CASE("labs.lab2.ddp_on_uneven_shards_trains_like_one_process", "[lab2][points=2][hidden]") {
  for (int n : {1, 2, 3, 4, 5, 8})
    for (bool drop_last : {false, true}) {
      INFO("world size " << n << ", drop_last " << drop_last);
      labs::TrainingRun run = labs::lab_run("lab2", n);
      run.drop_last = drop_last;
      CHECK(labs::ddp_versus_single_process(run) == "");
    }
}

#ifdef RINGGRAD_LABS_MPIEXEC
// The same training with each rank its own process (lab_mpi.h).
TEST_CASE("labs.lab2.ddp_on_uneven_shards_trains_like_one_process_under_mpi", "[lab2][points=1][hidden]") {
  for (int n : {2, 3}) CHECK(labs::run_under_mpi("lab2", n) == "");
}
#endif

}  // namespace rg::data
