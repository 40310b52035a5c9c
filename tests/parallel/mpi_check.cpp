// parallel_mpi_check: the parallel.mpi.* tests, run under mpiexec (one process per rank).
//   collectives          every collective and algorithm against the serial reference
//   skip <algorithm>     rank 1 skips an all-reduce: both ranks name the disagreement at once
//   absent [agreed]      rank 2 is busy elsewhere: the others time out and name it missing
//   mismatch count|op    debug mode names the disagreement
//   throw | die          rank 1 throws (the program aborts the job) or is killed
// A failing rank prints its error, then ends the job with MPI_Abort, as programs should.
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <thread>

#include "checks.h"
#include "parallel/launch.h"

namespace rg::parallel {
using namespace testing;

namespace {
int check_collectives(ProcessGroup& pg) {
  std::string error = check_all_reduce_matrix(pg, Device::cpu());
  for (DType dtype : {DType::float32, DType::float64, DType::int64})
    for (int64_t length : {int64_t{0}, int64_t{1}, int64_t{pg.size() + 1}, int64_t{1009}})
      if (error.empty()) error = check_other_collectives(pg, dtype, length, Device::cpu());
  if (error.empty()) error = check_traffic(pg, 100003);
  if (error.empty()) {
    Tensor t = input_for(pg.rank(), 4096, DType::float32, Device::cpu());
    auto work = pg.all_reduce_async(t, {.algorithm = Algorithm::ring});
    work->wait();
    error = work->is_completed() ? "" : "async work not completed after wait()";
  }
  if (!error.empty()) {
    std::cerr << error << std::endl;
    return 1;
  }
  if (pg.rank() == 0) std::cout << "parallel.mpi collectives: all correct on " << pg.size() << " ranks\n";
  return 0;
}

// Rank 1 skips the all-reduce and goes on to its next collective, a barrier.
void skip_one_all_reduce(ProcessGroup& pg, Algorithm algorithm) {
  Tensor t = Tensor::ones({1000});
  pg.barrier();
  if (pg.rank() != 1) pg.all_reduce(t, {.algorithm = algorithm});
  pg.barrier();
}

// Rank 2 does not come to the all-reduce: it is busy (sleeping) past the others' timeout.
// "agreed": DDP's path, the all-reduce posted by the caller and waited for on the thread.
void absent_rank_2(ProcessGroup& pg, bool agreed) {
  Tensor t = Tensor::ones({1000});
  pg.barrier();
  if (pg.rank() == 2) std::this_thread::sleep_for(std::chrono::duration<double>(pg.timeout_s() * 3));
  if (agreed) pg.all_reduce_async(t, {.agreed = true})->wait();
  else pg.all_reduce(t);
}

void mismatch(ProcessGroup& pg, const std::string& kind) {
  pg.barrier();
  Tensor t = Tensor::ones({kind == "count" && pg.rank() == 1 ? 20 : 10});
  if (kind == "count" || pg.rank() == 0) pg.all_reduce(t, {.algorithm = Algorithm::ring});
  pg.barrier();
}

void fail_on_rank_1(ProcessGroup& pg, bool die) {
  pg.barrier();
  if (pg.rank() == 1) {
    std::cerr << "rank 1: " << (die ? "dying now" : "throwing now") << std::endl;
    if (die) std::raise(SIGKILL);
    throw Error("rank 1: injected failure");
  }
  Tensor t = Tensor::ones({1000});
  pg.all_reduce(t);  // never completes: the job must end anyway
}
// run_world under mpirun: rank 1's error is printed naming the rank and ends the job while
// the others wait in an all-reduce it never joins.
int fail_inside_run_world(int argc, char** argv) {
  run_world({.group = {.backend = "mpi"}, .exit_code = [](const std::exception&) { return 3; }}, argc, argv,
            [](std::shared_ptr<ProcessGroup> pg) {
              pg->barrier();
              if (pg->rank() == 1) throw Error("injected failure inside run_world");
              Tensor t = Tensor::ones({1000});
              pg->all_reduce(t);
            });
  return 1;  // not reached: the job is aborted
}
}  // namespace

int run(int argc, char** argv) {

  std::string mode = argc > 1 ? argv[1] : "collectives";
  std::string arg = argc > 2 ? argv[2] : "";
  if (mode == "run_world") return fail_inside_run_world(argc, argv);
  bool failure_test = mode == "skip" || mode == "mismatch" || mode == "absent";
  ProcessGroupOptions options{.backend = "mpi", .timeout_s = failure_test ? 3.0 : 0.0, .debug = mode == "mismatch"};
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = init_process_group(options, argc, argv);
    if (mode == "collectives") return check_collectives(*pg);
    if (mode == "skip") skip_one_all_reduce(*pg, parse_algorithm(arg));
    if (mode == "mismatch") mismatch(*pg, arg);
    if (mode == "absent") absent_rank_2(*pg, arg == "agreed");
    if (mode == "throw" || mode == "die") fail_on_rank_1(*pg, mode == "die");
    std::cerr << "rank " << pg->rank() << ": mode '" << mode << "' ended without the expected error" << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    if (!pg) return 1;
    // Let the other ranks report their own errors (at the latest, at their own timeout)
    // before the job is torn down; a real program may abort at once.
    if (failure_test) std::this_thread::sleep_for(std::chrono::duration<double>(pg->timeout_s() + 1));
    pg->abort(1);
  }
}

}  // namespace rg::parallel

int main(int argc, char** argv) { return rg::parallel::run(argc, argv); }
