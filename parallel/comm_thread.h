// The communication thread of a process group: a queue of ops run one after another, in
// issue order (as Horovod's background thread). Under OpenMPI, which makes no progress on
// its own, this thread is what drives non-blocking ops forward while the caller computes.
// A blocking call that finds the thread idle runs its op on the caller's thread instead.
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
  bool is_broken() const;
  void check_not_broken() const;  // throws the error that broke the group

  struct State;

 private:
  void loop();

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace rg::parallel
