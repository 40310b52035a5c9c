// parallel.comm_thread.*: the communication thread runs a group's ops one at a time in
// issue order, whoever runs them: the thread, a blocking caller, or a caller that posts an
// op's first half (and completes it, when it waits before the thread picks it up).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "parallel/comm_thread.h"
#include "parallel/communicator.h"
#include "tensor/error.h"

namespace rg::parallel {

namespace {
constexpr double kTimeoutS = 10;

// What the ops of one test saw: the order they ran in, and whether two ever overlapped.
struct Journal {
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};

  std::function<void()> op(int index) {
    return [this, index] {
      if (running.fetch_add(1) != 0) overlapped = true;
      std::this_thread::yield();  // a window for another op to start alongside, if one could
      {
        std::lock_guard lock(mutex);
        order.push_back(index);
      }
      running.fetch_sub(1);
    };
  }
};
}  // namespace

TEST_CASE("parallel.comm_thread.an_idle_thread_lets_the_caller_post", "[parallel][comm_thread]") {
  CommThread thread(kTimeoutS);
  const auto caller = std::this_thread::get_id();
  std::thread::id posted_on;
  bool completed = false;
  auto work = thread.submit_posted("op", [&] { posted_on = std::this_thread::get_id(); }, [&] { completed = true; });
  CHECK(posted_on == caller);  // before submit_posted returned
  work->wait();
  CHECK(completed);
  CHECK(work->is_completed());
}

TEST_CASE("parallel.comm_thread.a_busy_thread_posts_the_op_in_its_turn", "[parallel][comm_thread]") {
  CommThread thread(kTimeoutS);
  std::atomic<bool> release{false}, first_ended{false};
  auto first = thread.submit("first", [&] {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    first_ended = true;
  }, /*caller_waits=*/false);
  std::atomic<bool> posted{false}, posted_after_first{false};
  auto second = thread.submit_posted("second", [&] {
    posted = true;
    posted_after_first = first_ended.load();
  }, [] {});
  CHECK_FALSE(posted);  // the caller left it to its turn
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  release = true;
  second->wait();
  first->wait();
  CHECK(posted_after_first);
}

// A caller takes over only the completion of an op it posted: an op it only queued (a ring
// all-reduce, a barrier) runs on the thread, so a trace shows it on the thread's row.
TEST_CASE("parallel.comm_thread.a_queued_op_runs_on_the_thread_though_its_caller_waits_at_once",
          "[parallel][comm_thread]") {
  CommThread thread(kTimeoutS);
  const auto caller = std::this_thread::get_id();
  int on_caller = 0;
  for (int i = 0; i < 200; ++i) {
    std::thread::id ran_on;
    thread.submit("op", [&] { ran_on = std::this_thread::get_id(); }, /*caller_waits=*/false)->wait();
    if (ran_on == caller) ++on_caller;
  }
  CHECK(on_caller == 0);
}

// A backend's wait spins longer on a caller's thread than on the communication thread,
// which shares the cores with the caller's compute (mpi_communicator.cpp): an op must know
// which of the two runs it.
TEST_CASE("parallel.comm_thread.an_op_knows_whether_the_communication_thread_runs_it", "[parallel][comm_thread]") {
  CommThread thread(kTimeoutS);
  bool queued_on_thread = false, blocking_on_thread = true;
  thread.submit("queued", [&] { queued_on_thread = on_communication_thread(); }, /*caller_waits=*/false)->wait();
  thread.submit("blocking", [&] { blocking_on_thread = on_communication_thread(); }, /*caller_waits=*/true)->wait();
  CHECK(queued_on_thread);
  CHECK_FALSE(blocking_on_thread);
  CHECK_FALSE(on_communication_thread());
}

TEST_CASE("parallel.comm_thread.ops_run_one_at_a_time_in_issue_order", "[parallel][comm_thread]") {
  constexpr int kOps = 2000;
  Journal journal;
  {
    CommThread thread(kTimeoutS);
    std::mt19937 random(7);
    std::vector<std::shared_ptr<Work>> pending;
    for (int i = 0; i < kOps; ++i) {
      const auto way = random() % 4;
      std::shared_ptr<Work> work = way == 0   ? thread.submit("op", journal.op(i), /*caller_waits=*/true)
                                   : way == 1 ? thread.submit_posted("op", journal.op(i), [] {})
                                   : way == 2 ? thread.submit_posted("op", [] {}, journal.op(i))
                                              : thread.submit("op", journal.op(i), /*caller_waits=*/false);
      if (random() % 2) work->wait();
      else pending.push_back(work);
    }
    for (auto& work : pending) work->wait();
  }
  CHECK_FALSE(journal.overlapped);
  REQUIRE(journal.order.size() == kOps);
  for (int i = 0; i < kOps; ++i) REQUIRE(journal.order[i] == i);
}

TEST_CASE("parallel.comm_thread.a_failed_post_breaks_the_group", "[parallel][comm_thread]") {
  CommThread thread(kTimeoutS);
  bool completed = false;
  auto work = thread.submit_posted("rank 0: all_reduce #0", [] { throw Error("MPI_Iallreduce failed: no"); },
                                   [&] { completed = true; });
  CHECK_THROWS_WITH(work->wait(), Catch::Contains("MPI_Iallreduce failed: no"));
  CHECK_FALSE(completed);
  CHECK(thread.is_broken());
  auto later = thread.submit("rank 0: barrier #1", [] {}, /*caller_waits=*/false);
  CHECK_THROWS_WITH(later->wait(), Catch::Contains("rank 0: barrier #1: the process group is broken: "
                                                   "MPI_Iallreduce failed: no"));
}

}  // namespace rg::parallel
