// Thread pools whose threads the system refuses (a process limit, as `--threads 100000`
// or a container meets): an rg::Error naming the pool and the thread, never
// std::terminate, and the pool in use stays usable. Run in a forked child with a lowered
// RLIMIT_NPROC (tests/thread_limit.h).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "tensor/tensor.h"
#include "tensor/thread_pool.h"
#include "thread_limit.h"

using namespace rg;
using Catch::Contains;

namespace {

// The sum of [0, n) counted by parallel_for's chunks on the current pool.
bool pool_counts_to(int64_t n) {
  std::atomic<int64_t> total{0};
  parallel_for(0, n, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
  return total.load() == n;
}

}  // namespace

TEST_CASE("tensor.thread_pool_start_failure_is_an_error", "[tensor]") {
  Tensor::zeros({1});  // the CPU backend set up before the fork (see thread_limit.h)
  // With room for 3 more threads (root), the scope's pool takes 1 and a pool of 1000 gets
  // 2 of its 999 workers started before the third is refused.
  const bool exact = test::thread_limit_is_exact();
  const test::ChildResult child = test::run_with_thread_limit(3, [exact](const auto& report) {
    try {
      const int scoped = exact ? 2 : 1;  // a non-root child may start no thread at all
      ThreadPoolScope scope(scoped);
      try {
        set_num_threads(1000);
        return 1;
      } catch (const Error& e) {
        report(std::string(e.what()) + "\n");
      }
      if (get_num_threads() != scoped || !pool_counts_to(1000)) return 2;  // the old pool, intact
      try {
        ThreadPool pool(100000);
        return 3;
      } catch (const Error& e) {
        report(std::string(e.what()) + "\n");
      }
      if (!pool_counts_to(777)) return 4;
      return 0;
    } catch (...) {
      return 5;
    }
  });
  INFO(child.output);
  REQUIRE(child.exit_code == 0);
  CHECK_THAT(child.output,
             Contains("thread pool of 1000 threads (the caller and 999 workers): could not start thread ") &&
                 Contains(" of 999: ") && Contains("thread pool of 100000 threads") && Contains(" of 99999: "));
  if (child.exact) CHECK_THAT(child.output, Contains("could not start thread 3 of 999: "));
}

TEST_CASE("tensor.thread_pool_starts_again_when_threads_free_up", "[tensor]") {
  Tensor::zeros({1});
  const bool exact = test::thread_limit_is_exact();
  const test::ChildResult child = test::run_with_thread_limit(4, [exact](const auto& report) {
    if (!exact) return 0;  // needs a limit that lets some threads start
    try {
      ThreadPoolScope scope(1);
      for (int n : {50, 9, 20}) {  // each refused: they need more than 4 threads
        try {
          set_num_threads(n);
          return 1;
        } catch (const Error& e) {
          report(std::string(e.what()) + "\n");
        }
      }
      // The refused pools' threads were joined: a pool that fits the limit starts (once the
      // kernel has counted them out, which may lag the join by a moment).
      for (int attempt = 0;; ++attempt) {
        try {
          set_num_threads(5);
          break;
        } catch (const Error&) {
          if (attempt == 200) return 2;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
      return get_num_threads() == 5 && pool_counts_to(5000) ? 0 : 3;
    } catch (...) {
      return 4;
    }
  });
  INFO(child.output);
  REQUIRE(child.exit_code == 0);
  if (child.exact)
    CHECK_THAT(child.output, Contains("could not start thread 5 of 49: ") &&
                                 Contains("could not start thread 5 of 8: ") &&
                                 Contains("could not start thread 5 of 19: "));
}
