// The communication thread and its Work handles. Work::wait bounds its own wait too: ops
// give up at their deadline, so the extra grace only matters if a backend call blocks
// without one, and then the caller still gets an error rather than a hang.
#include "parallel/comm_thread.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

#include "parallel/communicator.h"
#include "parallel/threads.h"
#include "tensor/error.h"
#include "tensor/thread_pool.h"

namespace rg::parallel {

namespace {
// How long Work::wait allows beyond the timeout for the op to report its own error.
double grace_s(double timeout_s) { return std::min(5.0, 0.5 * timeout_s) + 0.5; }
}  // namespace

struct CommThread::State {
  explicit State(double timeout) : timeout_s(timeout) {}
  const double timeout_s;
  mutable std::mutex mutex;
  // Two wake-ups, so that finishing an op (on the caller's thread, for a blocking call)
  // does not also wake the idle communication thread: that cost two context switches per
  // op, a 9 us round trip on 2 cores, more than a small message takes.
  std::condition_variable queued;    // for the thread: an op was queued, or stop
  std::condition_variable finished;  // for the callers: an op finished or failed
  std::deque<std::shared_ptr<WorkItem>> queue;
  bool stopping = false;
  std::string broken;  // the first error, once the group is broken
  std::optional<Clock::time_point> running_since;  // of the op on the thread now

  Clock::time_point overdue_at(Clock::time_point started) const {
    return deadline_after(started, timeout_s + grace_s(timeout_s));
  }

  void mark_broken(const std::string& why) {
    if (broken.empty()) broken = why;
  }
};

class WorkItem : public Work {
 public:
  WorkItem(std::shared_ptr<CommThread::State> state, std::string description, std::function<void()> fn)
      : state_(std::move(state)), description_(std::move(description)), fn_(std::move(fn)) {}

  void wait() override {
    auto& s = *state_;
    std::unique_lock lock(s.mutex);
    while (!done_) {
      // Queued ops wait for the running one, which has its own deadline.
      auto running = started_ ? started_ : s.running_since;
      auto limit = running ? s.overdue_at(*running) : Clock::now() + std::chrono::seconds(1);
      if (s.finished.wait_until(lock, limit) == std::cv_status::no_timeout || done_) continue;
      if (!started_ && !s.broken.empty()) throw Error(description_ + ": the process group is broken: " + s.broken);
      if (running && Clock::now() >= s.overdue_at(*running)) {
        std::string why = description_ + ": the communication thread has been stuck in one op for more than " +
                          std::to_string(s.timeout_s) + " s (the backend blocked past its deadline); the process group is broken";
        s.mark_broken(why);
        throw Error(why);
      }
    }
    if (error_) std::rethrow_exception(error_);
  }

  bool is_completed() const override {
    std::lock_guard lock(state_->mutex);
    return done_;
  }

  // On the communication thread.
  void run() {
    std::exception_ptr error;
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->broken.empty())
        error = std::make_exception_ptr(Error(description_ + ": the process group is broken: " + state_->broken));
      started_ = Clock::now();
      state_->running_since = started_;
    }
    if (!error) {
      try {
        fn_();
      } catch (...) {
        error = std::current_exception();
        std::lock_guard lock(state_->mutex);
        state_->mark_broken(current_exception_message());
      }
    }
    fn_ = nullptr;  // release the op's tensors before waking the caller
    std::lock_guard lock(state_->mutex);
    error_ = error;
    done_ = true;
    state_->running_since.reset();
    state_->finished.notify_all();
  }

 private:
  std::shared_ptr<CommThread::State> state_;
  std::string description_;
  std::function<void()> fn_;
  std::optional<Clock::time_point> started_;
  bool done_ = false;
  std::exception_ptr error_;
};

CommThread::CommThread(double timeout_s) : state_(std::make_shared<State>(timeout_s)) {
  thread_ = std::thread([this] { loop(); });
}

CommThread::~CommThread() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->queued.notify_all();
  thread_.join();
}

std::shared_ptr<Work> CommThread::submit(std::string description, std::function<void()> fn, bool caller_waits) {
  auto item = std::make_shared<WorkItem>(state_, std::move(description), std::move(fn));
  {
    std::lock_guard lock(state_->mutex);
    // A caller about to wait, with nothing queued or running, runs the op itself: same
    // order, same deadlines, and no two thread hand-offs per blocking call.
    bool run_here = caller_waits && state_->queue.empty() && !state_->running_since;
    if (!run_here) {
      state_->queue.push_back(item);
      state_->queued.notify_all();
      return item;
    }
    state_->running_since = Clock::now();  // keeps the thread from starting anything meanwhile
  }
  item->run();
  return item;
}

bool CommThread::is_broken() const {
  std::lock_guard lock(state_->mutex);
  return !state_->broken.empty();
}

void CommThread::check_not_broken() const {
  std::lock_guard lock(state_->mutex);
  if (!state_->broken.empty()) throw Error("the process group is broken by an earlier error: " + state_->broken);
}

void CommThread::loop() {
  // Reductions inside ops run inline here: the caller's pool belongs to its compute.
  ThreadPoolScope pool(1);
  while (true) {
    std::shared_ptr<WorkItem> item;
    {
      std::unique_lock lock(state_->mutex);
      state_->queued.wait(lock, [&] { return state_->stopping || !state_->queue.empty(); });
      if (state_->queue.empty()) return;
      item = std::move(state_->queue.front());
      state_->queue.pop_front();
      state_->running_since = Clock::now();  // so a blocking caller cannot run an op alongside
    }
    item->run();
  }
}

}  // namespace rg::parallel
