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
thread_local bool communication_thread = false;  // set by CommThread::loop

// How long Work::wait allows beyond the timeout for the op to report its own error.
double grace_s(double timeout_s) { return std::min(5.0, 0.5 * timeout_s) + 0.5; }
}  // namespace

bool on_communication_thread() { return communication_thread; }

struct CommThread::State {
  explicit State(double timeout) : timeout_s(timeout) {}
  const double timeout_s;
  mutable std::mutex mutex;
  // Two wake-ups, so that finishing an op (on the caller's thread, for a blocking call)
  // does not also wake the idle communication thread: that cost two context switches per
  // op, a 9 us round trip on 2 cores, more than a small message takes.
  std::condition_variable queued;    // for the thread: an op may start, or stop
  std::condition_variable finished;  // for the callers: an op finished or failed
  std::deque<std::shared_ptr<WorkItem>> queue;
  bool stopping = false;
  std::string broken;  // the first error, once the group is broken
  // Since when an op runs, on the thread or a caller's, or a caller posts one: while set,
  // nothing else starts.
  std::optional<Clock::time_point> running_since;

  bool idle() const { return queue.empty() && !running_since; }

  Clock::time_point overdue_at(Clock::time_point started) const {
    return deadline_after(started, timeout_s + grace_s(timeout_s));
  }

  void mark_broken(const std::string& why) {
    if (broken.empty()) broken = why;
  }
};

class WorkItem : public Work {
 public:
  WorkItem(std::shared_ptr<CommThread::State> state, std::string description, std::function<void()> post,
           std::function<void()> complete)
      : state_(std::move(state)),
        description_(std::move(description)),
        post_(std::move(post)),
        complete_(std::move(complete)) {}

  void wait() override {
    auto& s = *state_;
    std::unique_lock lock(s.mutex);
    while (!done_) {
      // Posted here and not picked up by the thread yet, nothing running: complete it here,
      // rather than wait for the thread to wake up and then for it to wake this one.
      if (posted_ && is_next()) {
        begin();
        lock.unlock();
        run();
        lock.lock();
        continue;
      }
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

  // With the lock held: the op is at the front of the queue and nothing runs.
  bool is_next() const { return !state_->running_since && is_front(); }

  // With the lock held, the op next or the group idle: takes it off the queue to run (or
  // post) on this thread; nothing else starts until it ends.
  void begin() {
    if (is_front()) state_->queue.pop_front();
    state_->running_since = Clock::now();
    if (!started_) started_ = state_->running_since;
  }

  // After begin(): the post half on the caller's thread. False if it failed (the op is done).
  bool post_here() {
    std::exception_ptr error = run_half(post_);
    if (error) finish(error);
    posted_ = !error;
    return posted_;
  }

  // After begin(): what is left of the op (its post half, unless posted already, then its
  // complete half), on whichever thread took it.
  void run() {
    std::exception_ptr error = post_ ? run_half(post_) : nullptr;
    if (!error) error = run_half(complete_);
    finish(error);
  }

 private:
  bool is_front() const { return !state_->queue.empty() && state_->queue.front().get() == this; }

  // Runs `half` (then drops it) unless the group is broken; an exception breaks the group.
  std::exception_ptr run_half(std::function<void()>& half) {
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->broken.empty())
        return std::make_exception_ptr(Error(description_ + ": the process group is broken: " + state_->broken));
    }
    try {
      half();
      half = nullptr;
      return nullptr;
    } catch (...) {
      std::lock_guard lock(state_->mutex);
      state_->mark_broken(current_exception_message());
      return std::current_exception();
    }
  }

  void finish(std::exception_ptr error) {
    post_ = complete_ = nullptr;  // release the op's tensors before waking the caller
    std::lock_guard lock(state_->mutex);
    error_ = error;
    done_ = true;
    state_->running_since.reset();
    state_->finished.notify_all();
    if (!state_->queue.empty()) state_->queued.notify_all();  // the thread waits for this op to end
  }

  std::shared_ptr<CommThread::State> state_;
  std::string description_;
  std::function<void()> post_, complete_;  // post_ is empty once posted (or for one-piece ops)
  bool posted_ = false;                    // by the caller (post_here)
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
  auto item = std::make_shared<WorkItem>(state_, std::move(description), nullptr, std::move(fn));
  {
    std::lock_guard lock(state_->mutex);
    // A caller about to wait, with nothing queued or running, runs the op itself: same
    // order, same deadlines, and no two thread hand-offs per blocking call.
    if (!caller_waits || !state_->idle()) {
      state_->queue.push_back(item);
      state_->queued.notify_all();
      return item;
    }
    item->begin();
  }
  item->run();
  return item;
}

std::shared_ptr<Work> CommThread::submit_posted(std::string description, std::function<void()> post,
                                                std::function<void()> complete) {
  auto item = std::make_shared<WorkItem>(state_, std::move(description), std::move(post), std::move(complete));
  {
    std::lock_guard lock(state_->mutex);
    if (!state_->idle()) {  // the thread posts it in its turn
      state_->queue.push_back(item);
      state_->queued.notify_all();
      return item;
    }
    item->begin();  // keeps the thread from starting anything while this posts
  }
  if (!item->post_here()) return item;
  {
    std::lock_guard lock(state_->mutex);
    state_->queue.push_front(item);  // first: whatever another thread queued meanwhile comes after
    state_->running_since.reset();
  }
  state_->queued.notify_all();
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
  communication_thread = true;
  while (true) {
    std::shared_ptr<WorkItem> item;
    {
      std::unique_lock lock(state_->mutex);
      // An op that runs on a caller's thread (or is being posted there) ends first.
      state_->queued.wait(lock, [&] { return !state_->running_since && (state_->stopping || !state_->queue.empty()); });
      if (state_->queue.empty()) return;
      item = state_->queue.front();
      item->begin();
    }
    item->run();
  }
}

}  // namespace rg::parallel
