// Lab 4's hidden tests: every rank gets rank 0's bits, and DDP over the star trains like
// one process on every rank after every step.
#include <catch2/catch.hpp>

#include "lab_mpi.h"
#include "lab_training.h"
#include "parallel/checks.h"

namespace rg::parallel {

TEST_CASE("labs.lab4.star_gives_every_rank_the_same_bits", "[lab4][points=1][hidden]") {
  for (int n : {2, 3, 5, 8}) {
    INFO("world size " << n);
    CHECK(testing::check_same_bits(n, Algorithm::star, ReduceOp::avg, 777) == "");
  }
}

TEST_CASE("labs.lab4.ddp_over_the_star_trains_like_one_process", "[lab4][points=2][hidden]") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    INFO("world size " << n);
    CHECK(labs::ddp_versus_single_process(labs::lab_run("lab4", n)) == "");
  }
}

#ifdef RINGGRAD_LABS_MPIEXEC
// The same training with each rank its own process (lab_mpi.h).
TEST_CASE("labs.lab4.ddp_over_the_star_trains_like_one_process_under_mpi", "[lab4][points=1][hidden]") {
  for (int n : {2, 3}) CHECK(labs::run_under_mpi("lab4", n) == "");
}
#endif

}  // namespace rg::parallel
