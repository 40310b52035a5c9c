// parallel/launch.h: where mpirun placed this process, and run_world on the local world
// (under mpirun: parallel.mpi.run_world_ends_the_job_when_a_rank_throws).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <mutex>
#include <set>

#include "parallel/launch.h"

using namespace rg;
using namespace rg::parallel;

namespace {
// Sets (or unsets) a variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { saved_.empty() ? unsetenv(name_) : setenv(name_, saved_.c_str(), 1); }

 private:
  const char* name_;
  std::string saved_;
};
}  // namespace

TEST_CASE("parallel.mpirun_placement_reads_what_mpirun_sets", "[parallel]") {
  ScopedEnv size("OMPI_COMM_WORLD_SIZE", nullptr), rank("OMPI_COMM_WORLD_RANK", "3"),
      local("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  CHECK_FALSE(mpirun_placement().has_value());  // no world size: not started by mpirun
  ScopedEnv started("OMPI_COMM_WORLD_SIZE", "4");
  const auto placement = mpirun_placement();
  REQUIRE(placement.has_value());
  CHECK(placement->world_size == 4);
  CHECK(placement->rank == 3);
  CHECK(placement->local_rank == 1);
}

TEST_CASE("parallel.run_world_runs_every_rank_of_the_local_world", "[parallel]") {
  // Catch2's assertions are not thread-safe: the rank-threads record, the test checks after.
  std::mutex mutex;
  std::set<int> ranks, sizes;
  std::set<double> sums;
  run_world({.local_world_size = 3}, 0, nullptr, [&](std::shared_ptr<ProcessGroup> pg) {
    Tensor one = Tensor::ones({1});
    pg->all_reduce(one);
    std::lock_guard lock(mutex);
    ranks.insert(pg->rank());
    sizes.insert(pg->size());
    sums.insert(one.item());
  });
  CHECK(ranks == std::set<int>{0, 1, 2});
  CHECK(sizes == std::set<int>{3});
  CHECK(sums == std::set<double>{3.0});
}

TEST_CASE("parallel.run_world_rethrows_a_local_rank_s_error", "[parallel]") {
  auto failing = [](std::shared_ptr<ProcessGroup> pg) {
    if (pg->rank() == 1) throw Error("bad shard");
    Tensor t = Tensor::ones({4});
    pg->all_reduce(t);  // rank 1 never joins: its failure ends this wait
  };
  CHECK_THROWS_WITH(run_world({.local_world_size = 2}, 0, nullptr, failing),
                    Catch::Contains("rank 1") && Catch::Contains("bad shard"));
}
