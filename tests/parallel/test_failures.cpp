// parallel.*: what goes wrong must end in a clear error, never a hang: timeouts naming
// rank, op and sequence number, debug-mode fingerprints naming the mismatch, argument
// errors, and run_local_world rethrowing the first rank's error.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "oracle.h"
#include "parallel/async.h"
#include "parallel/process_group.h"

namespace rg::parallel {

namespace {
using Clock = std::chrono::steady_clock;

// Runs fn on every rank of a world and collects each rank's error message ("" if none).
std::vector<std::string> errors_of(int n, const std::function<void(ProcessGroup&)>& fn, ProcessGroupOptions options) {
  std::vector<std::string> errors(n);
  run_local_world(
      n,
      [&](std::shared_ptr<ProcessGroup> pg) {
        try {
          fn(*pg);
        } catch (const Error& e) {
          errors[pg->rank()] = e.what();
        }
      },
      options);
  return errors;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }
}  // namespace

// Rank 1 skips the all-reduce and goes on to its next collective, a barrier: the ranks
// disagree on collective #1, which both name at once, long before the timeout.
TEST_CASE("parallel.mismatched_collectives_are_named_at_once", "[parallel]") {
  for (Algorithm algorithm : {Algorithm::ring, Algorithm::library, Algorithm::star}) {
    INFO(algorithm_name(algorithm));
    auto start = Clock::now();
    auto errors = errors_of(
        2,
        [algorithm](ProcessGroup& pg) {
          Tensor t = Tensor::ones({1000});
          pg.barrier();
          if (pg.rank() == 0) pg.all_reduce(t, {.algorithm = algorithm});
          pg.barrier();
        },
        {.timeout_s = 5});
    CHECK(seconds_since(start) < 2);
    const std::string named = detail::concat("ranks disagree on the collective: rank 0 all_reduce (sum, ",
                                             algorithm_name(algorithm), ") of 1000 float32 (#1), rank 1 barrier (#1)");
    CHECK_THAT(errors[0], Catch::Contains(named));
    CHECK_THAT(errors[1], Catch::Contains(named));
  }
}

// Rank 1 is late for the all-reduce: rank 0 times out naming its op, sequence number and
// the rank that did not arrive.
TEST_CASE("parallel.timeout_names_rank_op_sequence_and_missing_ranks", "[parallel]") {
  auto start = Clock::now();
  auto errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({1000});
        pg.barrier();
        if (pg.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        pg.all_reduce(t, {.algorithm = Algorithm::ring});
      },
      {.timeout_s = 1});
  CHECK(seconds_since(start) < 1 + 3);
  INFO(errors[0] << "\n" << errors[1]);
  CHECK_THAT(errors[0], Catch::Contains("rank 0: all_reduce (ring) #1 timed out after 1 s") &&
                            Catch::Contains("ranks 1 to arrive (the ranks that did not arrive)"));
}

TEST_CASE("parallel.broken_group_fails_fast", "[parallel]") {
  auto errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        if (pg.rank() == 0) {
          try {
            pg.recv(Tensor::zeros({4}), 1);
          } catch (const Error&) {
          }
          CHECK(pg.is_broken());
          auto start = Clock::now();
          try {
            pg.barrier();
          } catch (const Error& e) {
            CHECK(seconds_since(start) < 0.5);
            throw;
          }
        }
      },
      {.timeout_s = 0.5});
  CHECK_THAT(errors[0], Catch::Contains("broken") && Catch::Contains("recv from rank 1 #0 timed out"));
  CHECK(errors[1] == "");
}

TEST_CASE("parallel.debug_mode_names_count_mismatch", "[parallel]") {
  auto errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({pg.rank() == 0 ? 10 : 20});
        pg.all_reduce(t, {.algorithm = Algorithm::ring});
      },
      {.timeout_s = 5, .debug = true});
  for (const auto& e : errors)
    CHECK_THAT(e, Catch::Contains("rank 0 all_reduce (sum, ring) of 10 float32 (#0), rank 1 all_reduce (sum, ring) of 20 float32 (#0)"));
}

TEST_CASE("parallel.debug_mode_names_op_mismatch", "[parallel]") {
  auto errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({10});
        if (pg.rank() == 0) pg.all_reduce(t, {.algorithm = Algorithm::star});
        pg.barrier();
      },
      {.timeout_s = 5, .debug = true});
  for (const auto& e : errors) CHECK_THAT(e, Catch::Contains("rank 0 all_reduce (sum, star) of 10 float32 (#0), rank 1 barrier (#0)"));
}

TEST_CASE("parallel.local_library_ops_always_check_agreement", "[parallel]") {
  // The local backend sees every rank's call, so even without debug mode it names the
  // mismatch instead of reading past a shorter buffer.
  auto errors = errors_of(
      3,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({pg.rank() == 2 ? 7 : 8});
        pg.all_reduce(t);
      },
      {.timeout_s = 5});
  for (const auto& e : errors)
    CHECK_THAT(e, Catch::Contains("rank 0 all_reduce (sum, library) of 8 float32 (#0), rank 2 all_reduce (sum, library) of 7 float32 (#0)"));
}

TEST_CASE("parallel.run_local_world_rethrows_the_first_error_with_its_rank", "[parallel]") {
  auto start = Clock::now();
  CHECK_THROWS_WITH(run_local_world(
                        4,
                        [](std::shared_ptr<ProcessGroup> pg) {
                          if (pg->rank() == 2) throw Error("boom");
                          pg->barrier();  // the others wait here until the world is aborted
                        },
                        {.timeout_s = 30}),
                    Catch::Contains("local world: rank 2 failed: boom"));
  CHECK(seconds_since(start) < 5);
  CHECK_THROWS_AS(run_local_world(2, [](std::shared_ptr<ProcessGroup>) { throw NotImplemented("lab3.ring_allreduce"); }),
                  NotImplemented);
}

// Any exception, of any type, comes back as an rg::Error naming the rank.
TEST_CASE("parallel.run_local_world_reports_an_exception_of_any_type", "[parallel]") {
  CHECK_THROWS_WITH(run_local_world(3,
                                    [](std::shared_ptr<ProcessGroup> pg) {
                                      if (pg->rank() == 1) throw 42;
                                      pg->barrier();
                                    }),
                    Catch::Contains("local world: rank 1 failed: an exception that is not a std::exception"));
  CHECK_THROWS_WITH(run_hogwild(test::make_mlp(DType::float32), 2,
                                [](nn::Module&, int thread) {
                                  if (thread == 1) throw std::string("not an exception class");
                                }),
                    Catch::Contains("run_hogwild: thread 1 failed: an exception that is not a std::exception"));
}

// Debug mode compares the reduce op and the algorithm too, not only the size.
TEST_CASE("parallel.debug_mode_names_a_reduce_op_or_algorithm_mismatch", "[parallel]") {
  auto op_errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({10});
        pg.all_reduce(t, {.op = pg.rank() == 0 ? ReduceOp::sum : ReduceOp::max});
      },
      {.timeout_s = 5, .debug = true});
  for (const auto& e : op_errors)
    CHECK_THAT(e, Catch::Contains("rank 0 all_reduce (sum, library) of 10 float32 (#0), rank 1 all_reduce (max, "
                                  "library) of 10 float32 (#0)"));
  auto algorithm_errors = errors_of(
      2,
      [](ProcessGroup& pg) {
        Tensor t = Tensor::ones({10});
        pg.all_reduce(t, {.algorithm = pg.rank() == 0 ? Algorithm::ring : Algorithm::library});
      },
      {.timeout_s = 5, .debug = true});
  for (const auto& e : algorithm_errors)
    CHECK_THAT(e, Catch::Contains("rank 0 all_reduce (sum, ring) of 10 float32 (#0), rank 1 all_reduce (sum, "
                                  "library) of 10 float32 (#0)"));
}

TEST_CASE("parallel.argument_errors", "[parallel]") {
  auto pg = init_process_group({.backend = "local"});
  CHECK_THROWS_WITH(pg->broadcast(Tensor::ones({2}), 3), Catch::Contains("broadcast: rank 3 is not in a group of 1"));
  CHECK_THROWS_WITH(pg->all_reduce(Tensor::ones({2}, DType::int64), {.op = ReduceOp::avg}),
                    Catch::Contains("avg needs a floating dtype, not int64"));
  CHECK_THROWS_WITH(pg->all_reduce(Tensor::ones({2}, DType::int32), {.algorithm = Algorithm::ring}),
                    Catch::Contains("the ring algorithm handles float32 and float64, not int32"));
  CHECK_THROWS_WITH(pg->all_gather(Tensor::ones({3}), Tensor::ones({2})), Catch::Contains("must hold 1 x the input"));
  CHECK_THROWS_WITH(pg->all_reduce(Tensor()), Catch::Contains("the tensor is undefined"));
  CHECK_FALSE(pg->is_broken());  // argument errors are the caller's, not the group's
}

TEST_CASE("parallel.timeout_from_the_environment", "[parallel]") {
  // ctest sets RINGGRAD_COLLECTIVE_TIMEOUT_S for this suite; an explicit option wins.
  if (const char* env = std::getenv("RINGGRAD_COLLECTIVE_TIMEOUT_S"))
    CHECK(init_process_group({})->timeout_s() == std::stod(env));
  CHECK(init_process_group({.timeout_s = 2.5})->timeout_s() == 2.5);
}

}  // namespace rg::parallel

namespace rg::parallel {

// A huge timeout means "wait long": the ranks still meet when one is late.
TEST_CASE("parallel.huge_timeouts_wait_instead_of_expiring", "[parallel]") {
  for (const char* value : {"inf", "1e10", "1e300"}) {
    INFO(value);
    ::setenv("RINGGRAD_COLLECTIVE_TIMEOUT_S", value, 1);
    CHECK_NOTHROW(run_local_world(2, [](std::shared_ptr<ProcessGroup> pg) {
      if (pg->rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      Tensor t = Tensor::ones({8});
      pg->all_reduce(t, {.algorithm = Algorithm::ring});
      pg->barrier();
    }));
  }
  ::setenv("RINGGRAD_COLLECTIVE_TIMEOUT_S", "-1", 1);
  CHECK_THROWS_WITH(init_process_group({.backend = "local"}), Catch::Contains("must be a positive number of seconds"));
  ::unsetenv("RINGGRAD_COLLECTIVE_TIMEOUT_S");
}

// PyTorch's spellings of the debug switch, in any case; anything else is refused.
TEST_CASE("parallel.debug_switch_takes_pytorchs_values", "[parallel]") {
  for (const char* value : {"DETAIL", "detail", "Detail"}) {
    ::setenv("RINGGRAD_DISTRIBUTED_DEBUG", value, 1);
    CHECK(init_process_group({.backend = "local"})->debug());
  }
  for (const char* value : {"OFF", "info"}) {
    ::setenv("RINGGRAD_DISTRIBUTED_DEBUG", value, 1);
    CHECK_FALSE(init_process_group({.backend = "local"})->debug());
  }
  ::setenv("RINGGRAD_DISTRIBUTED_DEBUG", "verbose", 1);
  CHECK_THROWS_WITH(init_process_group({.backend = "local"}), Catch::Contains("'verbose' is not OFF, INFO or DETAIL"));
  ::unsetenv("RINGGRAD_DISTRIBUTED_DEBUG");
}

}  // namespace rg::parallel
