// parallel_async_mpi_check: the asynchronous parameter server across MPI processes (the
// parallel.mpi.async_ps_* tests; rank 0 serves, ranks 1.. work). First recv_any: rank 0
// takes one message from every other rank, in whatever order they arrive. Then the server
// with staleness bound 0 must train exactly like one process on the whole batches: every
// rank trains that reference too, and the server's model and every worker's last pull
// must equal it. Workers start from other weights than the server (the first pull fixes that).
#include <iostream>
#include <set>

#include "oracle.h"
#include "parallel/async.h"

namespace rg::parallel {

namespace {

using namespace test;

constexpr int kSteps = 20;
constexpr double kTolerance = 1e-10;  // float64
constexpr int kRecvAnyTag = 5;

// "" when rank 0's recv_any got every other rank's message once, each with its payload.
std::string check_recv_any(ProcessGroup& pg) {
  Tensor t = Tensor::full({4}, pg.rank(), DType::int64);
  if (pg.rank() != 0) {
    pg.send(t, 0, kRecvAnyTag);
    return "";
  }
  std::set<int> sources;
  for (int i = 1; i < pg.size(); ++i) {
    int source = pg.recv_any(t, kRecvAnyTag);
    if (t.to_vector<int64_t>() != std::vector<int64_t>(4, source))
      return detail::concat("rank 0: recv_any returned rank ", source, " for another rank's message");
    sources.insert(source);
  }
  if (static_cast<int>(sources.size()) != pg.size() - 1)
    return detail::concat("rank 0: recv_any returned only ", sources.size(), " distinct senders of ", pg.size() - 1);
  return "";
}

// "" when the server (s = 0) trains like one process with the whole batches.
std::string check_parameter_server(const std::shared_ptr<ProcessGroup>& pg) {
  const int workers = pg->size() - 1;
  auto batches = make_batches(kSteps, workers * kLocalBatch, DType::float64);
  auto reference = make_sequential(DType::float64, 7);
  train_single(*reference, batches);
  auto model = make_sequential(DType::float64, pg->rank() == 0 ? 7 : 8);
  if (pg->rank() == 0) {
    auto opt = make_sgd(*model);
    AsyncPSStats stats = run_parameter_server(model, opt, pg, {.max_staleness = 0});
    if (stats.updates != kSteps || stats.max_staleness() != 0)
      return detail::concat("rank 0: the server made ", stats.updates, " updates (expected ", kSteps,
                            ") with max staleness ", stats.max_staleness(), " (expected 0)");
  } else {
    AsyncWorker worker(model, pg);
    for (const Batch& batch : batches) {
      Batch mine = batch.rows((pg->rank() - 1) * kLocalBatch, kLocalBatch);
      cross_entropy((*model)(mine.x), mine.y).backward();
      worker.push();
    }
    worker.finish();
  }
  std::string mismatch = parameter_mismatch(*model, *reference, kTolerance);
  if (!mismatch.empty()) return detail::concat("rank ", pg->rank(), ": ", mismatch);
  return "";
}

}  // namespace

int run(int argc, char** argv) {
  return run_mpi_check(argc, argv, [](const std::shared_ptr<ProcessGroup>& pg) {
    RG_CHECK(pg->size() >= 2, "parallel_async_mpi_check needs a server and at least one worker, not ", pg->size(),
             " rank");
    std::string error = check_recv_any(*pg);
    if (error.empty()) error = check_parameter_server(pg);
    if (!error.empty()) throw Error(error);
    pg->barrier();
    if (pg->rank() == 0)
      std::cout << "parallel.mpi async_ps: recv_any and staleness 0 match single-process training with "
                << pg->size() - 1 << " workers\n";
  });
}

}  // namespace rg::parallel

int main(int argc, char** argv) { return rg::parallel::run(argc, argv); }
