// parallel_ddp_mpi_check: DistributedDataParallel across MPI processes (the parallel.mpi.ddp_*
// tests, run under mpiexec with any number of ranks). For every all-reduce algorithm each
// rank trains its replica on its share of each batch, starting from a different
// initialisation than rank 0 (the construction broadcast must fix that), while also
// training a single-process reference on the whole batches; the two must agree.
#include <iostream>

#include "autograd/functions.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "parallel/ddp.h"

namespace rg::parallel {

namespace {

constexpr int64_t kIn = 6;
constexpr int64_t kHidden = 16;
constexpr int64_t kClasses = 4;
constexpr int64_t kLocalBatch = 4;
constexpr int kSteps = 10;
constexpr double kTolerance = 1e-10;  // float64

std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  auto model =
      std::make_shared<nn::Sequential>(nn::Linear(kIn, kHidden), nn::ReLU(), nn::Linear(kHidden, kClasses));
  Generator gen(seed);
  for (Variable& p : model->parameters()) normal_(p.data(), gen, 0.0, 0.5);
  model->to(DType::float64);
  return model;
}

optim::SGD make_sgd(const nn::Module& model) { return optim::SGD(model.parameters(), {.lr = 0.1, .momentum = 0.9}); }

// "" when DDP over `pg` with `algorithm` trains exactly like one process on the whole batches.
std::string check_algorithm(const std::shared_ptr<ProcessGroup>& pg, Algorithm algorithm) {
  Generator data_gen(11);
  std::vector<Tensor> xs, ys;
  for (int s = 0; s < kSteps; ++s) {
    xs.push_back(randn({pg->size() * kLocalBatch, kIn}, data_gen, 0.0, 1.0, DType::float64));
    ys.push_back(randint(0, kClasses, {pg->size() * kLocalBatch}, data_gen));
  }
  auto reference = make_model(7);
  auto reference_opt = make_sgd(*reference);
  auto replica = make_model(pg->rank() == 0 ? 7 : 8);
  // Buckets of about 1 KB: several per backward.
  DistributedDataParallel ddp(replica, pg, {.bucket_cap_mb = 0.001, .first_bucket_mb = 0.0005, .algorithm = algorithm});
  auto opt = make_sgd(*replica);
  for (int s = 0; s < kSteps; ++s) {
    reference_opt.zero_grad();
    cross_entropy((*reference)(xs[s]), ys[s]).backward();
    reference_opt.step();
    opt.zero_grad();
    const int64_t start = pg->rank() * kLocalBatch;
    cross_entropy(ddp(xs[s].narrow(0, start, kLocalBatch)), ys[s].narrow(0, start, kLocalBatch)).backward();
    opt.step();
  }
  ddp.check_consistency();
  auto mine = replica->named_parameters();
  auto want = reference->named_parameters();
  for (size_t i = 0; i < mine.size(); ++i) {
    double diff = max_abs_diff(mine[i].second.data(), want[i].second.data());
    if (diff > kTolerance)
      return detail::concat("rank ", pg->rank(), ": ", algorithm_name(algorithm), ": parameter '", mine[i].first,
                            "' differs from single-process training by ", diff);
  }
  return "";
}

}  // namespace

int run(int argc, char** argv) {
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = init_process_group({.backend = "mpi"}, argc, argv);
    for (Algorithm algorithm : {Algorithm::library, Algorithm::ring, Algorithm::naive_ring, Algorithm::star}) {
      std::string error = check_algorithm(pg, algorithm);
      if (!error.empty()) throw Error(error);
    }
    if (pg->rank() == 0)
      std::cout << "parallel.mpi ddp: matches single-process training on " << pg->size() << " ranks\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    if (!pg) return 1;
    pg->abort(1);
  }
}

}  // namespace rg::parallel

int main(int argc, char** argv) { return rg::parallel::run(argc, argv); }
