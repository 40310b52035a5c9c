// Lab 3's hidden tests: the ring gives every rank the same bits on values whose sums round,
// and DDP over the ring trains like one process on every rank after every step.
#include <catch2/catch.hpp>

#include "lab_mpi.h"
#include "lab_training.h"
#include "parallel/checks.h"

namespace rg::parallel {
using namespace testing;

TEST_CASE("labs.lab3.ring_gives_every_rank_the_same_bits", "[lab3][points=2][hidden]") {
  // Random float32 values: the sums round, so only an all-gather of the reduced chunks
  // (not every rank adding on its own) gives every rank the same bits.
  for (int n : {2, 3, 5, 8}) {
    INFO("world size " << n);
    CHECK(check_same_bits(n, Algorithm::ring, ReduceOp::sum, 1001) == "");
  }
}

TEST_CASE("labs.lab3.ddp_over_the_ring_trains_like_one_process", "[lab3][points=2][hidden]") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    INFO("world size " << n);
    CHECK(labs::ddp_versus_single_process(labs::lab_run("lab3", n)) == "");
  }
}

#ifdef RINGGRAD_LABS_MPIEXEC
// The same training with each rank its own process (lab_mpi.h).
TEST_CASE("labs.lab3.ddp_over_the_ring_trains_like_one_process_under_mpi", "[lab3][points=1][hidden]") {
  for (int n : {2, 3}) CHECK(labs::run_under_mpi("lab3", n) == "");
}
#endif

}  // namespace rg::parallel
