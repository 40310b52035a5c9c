// labs_mpi_rank LAB: one rank of a lab's MPI variant (lab_mpi.h), started by mpiexec. It
// trains the lab's run through DDP on the MPI process group and, itself, the single-process
// reference; after every step its parameters must equal the reference's, and every rank's
// fingerprints (a hash of each step's parameters, all-gathered through MPI itself, which no
// lab implements) must equal rank 0's. A difference ends the job with the rank and step.
#include "lab_mpi.h"
#include "parallel/flat_parameters.h"

namespace rg::labs {
namespace {

// One number per step: the parameters' hashes chained.
std::vector<int64_t> fingerprints(const Steps& steps) {
  std::vector<int64_t> out;
  for (const auto& parameters : steps) {
    uint64_t hash = parallel::kFnvOffsetBasis;
    for (const Tensor& p : parameters) {
      const uint64_t h = parallel::hash_tensor(p);
      hash = parallel::fnv1a(&h, sizeof h, hash);
    }
    out.push_back(static_cast<int64_t>(hash));
  }
  return out;
}

// "" when every rank's fingerprints equal rank 0's (all ranks ran `mine.size()` steps:
// compare_steps checked that against the reference first).
std::string compare_with_rank_0(parallel::ProcessGroup& pg, const std::vector<int64_t>& mine) {
  const auto steps = static_cast<int64_t>(mine.size());
  const Tensor all = Tensor::zeros({pg.size() * steps}, DType::int64);
  pg.all_gather(all, Tensor::from_vector(mine, {steps}), {.algorithm = parallel::Algorithm::library});
  const std::vector<int64_t> every = all.to_vector<int64_t>();  // rank r's at [r * steps, (r + 1) * steps)
  for (int64_t s = 0; s < steps; ++s)
    if (every[pg.rank() * steps + s] != every[s])
      return rg::detail::concat("rank ", pg.rank(), " of ", pg.size(), " after step ", s + 1,
                                ": its parameters differ from rank 0's (replicas must be bitwise equal)");
  return "";
}

}  // namespace
}  // namespace rg::labs

int main(int argc, char** argv) {
  using namespace rg;
  const std::string lab = argc > 1 ? argv[1] : "";
  return parallel::test::run_mpi_check(argc, argv, [&](const std::shared_ptr<parallel::ProcessGroup>& pg) {
    const labs::TrainingRun run = labs::lab_run(lab, pg->size());
    const labs::TrainingData data = labs::training_data(run);
    const labs::Steps mine = labs::ddp_steps(run, data, pg);
    std::string error = labs::compare_steps(pg->rank(), pg->size(), mine, labs::single_process_steps(run, data));
    if (error.empty()) error = labs::compare_with_rank_0(*pg, labs::fingerprints(mine));
    if (!error.empty()) throw Error(lab + ": " + error);
  });
}
