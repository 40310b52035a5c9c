// Lab 5, DDP's gradient bucketing (parallel/reducer_bucketed.cpp: plan_buckets,
// gradient_ready, launch_full_buckets; parallel/reducer_per_parameter.cpp): the plan, one
// all-reduce per bucket launched in bucket order, and training equal to one process.
#include <catch2/catch.hpp>

#include "lab5_models.h"
#include "lab_mpi.h"
#include "lab_training.h"
#include "parallel/reducer_bucketed.h"

namespace rg::parallel {
namespace {
using Plan = std::vector<std::vector<size_t>>;
constexpr double kBytesPerMb = 1024.0 * 1024.0;
}  // namespace

TEST_CASE("labs.lab5.plan_takes_parameters_in_reverse_order_within_the_caps", "[lab5][points=2]") {
  // Four float32 parameters of 20 bytes each. Bucket 0 holds up to 40 bytes, later ones 80.
  const auto params = labs::parameters_of({5, 5, 5, 5});
  CHECK(plan_buckets(params, {.first_bytes = 40, .later_bytes = 80}) == Plan{{3, 2}, {1, 0}});
  CHECK(plan_buckets(params, {.first_bytes = 80, .later_bytes = 80}) == Plan{{3, 2, 1, 0}});
  CHECK(plan_buckets(params, {.first_bytes = 20, .later_bytes = 20}) == Plan{{3}, {2}, {1}, {0}});
  CHECK(plan_buckets(params, {.first_bytes = 20, .later_bytes = 60}) == Plan{{3}, {2, 1, 0}});
}

TEST_CASE("labs.lab5.plan_gives_a_parameter_larger_than_the_cap_its_own_bucket", "[lab5][points=1]") {
  // 40, 80, 20, 160 and 12 bytes, caps of 100: the 160-byte one sits alone.
  const auto params = labs::parameters_of({10, 20, 5, 40, 3});
  CHECK(plan_buckets(params, {.first_bytes = 100, .later_bytes = 100}) == Plan{{4}, {3}, {2, 1}, {0}});
}

TEST_CASE("labs.lab5.plan_starts_a_bucket_where_the_dtype_changes", "[lab5][points=1]") {
  std::vector<Variable> params = labs::parameters_of({2, 2});
  params.insert(params.begin() + 1, Variable(Tensor::zeros({1}, DType::float64), true));
  CHECK(plan_buckets(params, {.first_bytes = 1000, .later_bytes = 1000}) == Plan{{2}, {1}, {0}});
}

TEST_CASE("labs.lab5.one_all_reduce_per_bucket_launched_in_bucket_order", "[lab5][points=2]") {
  using namespace test;
  for (int n : {1, 2, 3}) {
    INFO("world size " << n);
    const DDPOptions tiny = {.bucket_cap_mb = 300 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb};
    auto initial = make_mlp(DType::float32);
    auto batches = make_batches(3, n * kLocalBatch, DType::float32);
    std::vector<size_t> buckets(n);
    std::vector<std::vector<int>> per_step(n);
    std::vector<std::vector<size_t>> launched(n);
    run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
      const int rank = pg->rank();
      auto model = clone_of(*initial);
      DistributedDataParallel ddp(model, pg, tiny);
      buckets[rank] = dynamic_cast<const BucketedReducer&>(ddp.reducer()).buckets().size();
      labs::CollectiveCount count;
      pg->set_observer(&count);
      ddp.set_observer(&count);
      for (const Batch& batch : batches) {
        const int before = count.all_reduces;
        Batch mine = batch.rows(rank * kLocalBatch, kLocalBatch);
        cross_entropy(ddp(mine.x), mine.y).backward();
        per_step[rank].push_back(count.all_reduces - before);
      }
      pg->set_observer(nullptr);
      launched[rank] = count.launched;
    });
    for (int r = 0; r < n; ++r) {
      REQUIRE(buckets[r] >= 3);
      CHECK(per_step[r] == std::vector<int>(batches.size(), static_cast<int>(buckets[r])));
      std::vector<size_t> in_order;
      for (size_t s = 0; s < batches.size(); ++s)
        for (size_t b = 0; b < buckets[r]; ++b) in_order.push_back(b);
      CHECK(launched[r] == in_order);
    }
  }
}

TEST_CASE("labs.lab5.ddp_trains_like_one_process_on_every_rank", "[lab5][points=3]") {
  for (int n : {1, 2, 3, 4, 5, 8})
    for (double cap_bytes : {100.0, 25.0 * kBytesPerMb}) {
      INFO("world size " << n << ", bucket cap " << cap_bytes << " bytes");
      CHECK(labs::ddp_versus_single_process(
                {.world_size = n, .ddp = {.bucket_cap_mb = cap_bytes / kBytesPerMb,
                                          .first_bucket_mb = cap_bytes / kBytesPerMb}}) == "");
    }
  // The stepping stone: one all-reduce per parameter after backward.
  CHECK(labs::ddp_versus_single_process({.world_size = 3, .ddp = {.reducer = ReducerKind::per_parameter}}) == "");
}

#ifdef RINGGRAD_LABS_MPIEXEC
// The same training with each rank its own process (lab_mpi.h).
TEST_CASE("labs.lab5.ddp_trains_like_one_process_on_every_rank_under_mpi", "[lab5][points=1]") {
  for (int n : {2, 3}) CHECK(labs::run_under_mpi("lab5", n) == "");
}
#endif

}  // namespace rg::parallel
