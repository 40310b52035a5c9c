// Lab 4's hidden tests: every rank gets rank 0's bits, and DDP over the star trains like
// one process on every rank after every step.
#include <catch2/catch.hpp>

#include "lab_training.h"
#include "parallel/checks.h"

namespace rg::parallel {

TEST_CASE("labs.lab4.star_gives_every_rank_the_same_bits", "[lab4][points=1][hidden]") {
  for (int n : {2, 3, 5, 8}) {
    INFO("world size " << n);
    std::vector<Tensor> results(n), inputs(n);
    run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
      Generator gen(200 + pg->rank());
      inputs[pg->rank()] = randn({777}, gen);
      results[pg->rank()] = inputs[pg->rank()].clone();
      pg->all_reduce(results[pg->rank()], {.op = ReduceOp::avg, .algorithm = Algorithm::star});
    });
    Tensor serial = inputs[0].to(DType::float64);
    for (int r = 1; r < n; ++r) serial = serial + inputs[r].to(DType::float64);
    CHECK(max_abs_diff(results[0].to(DType::float64), serial / static_cast<double>(n)) < 1e-5);
    for (int r = 1; r < n; ++r) CHECK(max_abs_diff(results[r], results[0]) == 0);
  }
}

TEST_CASE("labs.lab4.ddp_over_the_star_trains_like_one_process", "[lab4][points=2][hidden]") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    INFO("world size " << n);
    CHECK(labs::ddp_versus_single_process(
              {.world_size = n, .ddp = {.reducer = ReducerKind::flat, .algorithm = Algorithm::star}}) == "");
  }
}

}  // namespace rg::parallel
