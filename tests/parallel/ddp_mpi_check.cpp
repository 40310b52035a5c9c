// parallel_ddp_mpi_check: DistributedDataParallel across MPI processes (the parallel.mpi.ddp_*
// tests, run under mpiexec with any number of ranks). For every all-reduce algorithm each
// rank trains its replica on its share of each batch, starting from a different
// initialisation than rank 0 (the construction broadcast must fix that), while also
// training a single-process reference on the whole batches; the two must agree.
#include <iostream>

#include "oracle.h"
#include "parallel/ddp.h"

namespace rg::parallel {

namespace {

using namespace test;

constexpr int kSteps = 10;
constexpr double kTolerance = 1e-10;  // float64

// "" when DDP over `pg` with `algorithm` trains exactly like one process on the whole batches.
std::string check_algorithm(const std::shared_ptr<ProcessGroup>& pg, Algorithm algorithm) {
  auto batches = make_batches(kSteps, pg->size() * kLocalBatch, DType::float64);
  auto reference = make_sequential(DType::float64, 7);
  train_single(*reference, batches);
  auto replica = make_sequential(DType::float64, pg->rank() == 0 ? 7 : 8);
  // Buckets of about 1 KB: several per backward.
  DistributedDataParallel ddp(replica, pg, {.bucket_cap_mb = 0.001, .first_bucket_mb = 0.0005, .algorithm = algorithm});
  auto opt = make_sgd(*replica);
  for (const Batch& batch : batches) {
    Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
    opt.zero_grad();
    cross_entropy(ddp(mine.x), mine.y).backward();
    opt.step();
  }
  ddp.check_consistency();
  std::string mismatch = parameter_mismatch(*replica, *reference, kTolerance);
  if (!mismatch.empty()) return detail::concat("rank ", pg->rank(), ": ", algorithm_name(algorithm), ": ", mismatch);
  return "";
}

}  // namespace

int run(int argc, char** argv) {
  return run_mpi_check(argc, argv, [](const std::shared_ptr<ProcessGroup>& pg) {
    for (Algorithm algorithm : all_algorithms()) {
      std::string error = check_algorithm(pg, algorithm);
      if (!error.empty()) throw Error(error);
    }
    if (pg->rank() == 0)
      std::cout << "parallel.mpi ddp: matches single-process training on " << pg->size() << " ranks\n";
  });
}

}  // namespace rg::parallel

int main(int argc, char** argv) { return rg::parallel::run(argc, argv); }
