// The communication thread of a process group: a queue of ops run one after another, in
// issue order (as Horovod's background thread). Under OpenMPI, which makes no progress on
// its own, this thread is what drives non-blocking ops forward while the caller computes.
// Waking it costs ~10 us, so where a caller can do an op's work sooner, it does: a blocking
// call that finds the thread idle runs its op right away, and an op that can be posted without
// blocking (MPI_Iallreduce) is posted by the caller when the thread is idle, then completed by
// whichever comes first, the thread or the caller waiting for it. An op only queued stays the
// thread's (a ring's steps show on its row of a trace).
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "parallel/process_group.h"

namespace rg::parallel {

class WorkItem;

class CommThread {
 public:
  explicit CommThread(double timeout_s);
  ~CommThread();  // runs what is queued (every op has a deadline), then joins
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // Queues fn; `description` ("rank 0: all_reduce #3") names the op in errors. Once the
  // group is broken, ops fail without running. With caller_waits (a blocking call) and
  // the thread idle, fn runs right here instead.
  std::shared_ptr<Work> submit(std::string description, std::function<void()> fn, bool caller_waits);
  // Queues an op in two halves: `post` starts it without blocking, `complete` ends it. With
  // the thread idle, post runs right here, so the transfer starts at once, and the thread
  // (or the caller, if it waits first) completes it.
  std::shared_ptr<Work> submit_posted(std::string description, std::function<void()> post,
                                      std::function<void()> complete);
  bool is_broken() const;
  void check_not_broken() const;  // throws the error that broke the group

  struct State;

 private:
  void loop();

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace rg::parallel
