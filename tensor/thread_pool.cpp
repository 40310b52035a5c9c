// A fork-join pool: workers wait for a numbered job, run their chunk, and count down.
// Workers spin briefly before sleeping so back-to-back kernels of a training step do not
// pay a futex wake-up each time.
#include "tensor/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tensor/error.h"

namespace rg {

namespace {
thread_local bool tl_inside_parallel_region = false;

// How long a waiting thread spins before it sleeps. A training step's kernels come tens of
// microseconds apart (the autograd and allocation work between them runs on one thread);
// with 20000 polls (about 20 µs) the MLP's workers slept and woke through the kernel for
// most of them, and 2 threads ran slower than 1 (127k against 142k samples/s at batch 128).
// 200 µs, reading the clock every 256 polls, gives 236k; a pure poll loop of similar length
// gave only 165k, as every poll reads the cache line the job's owner writes. A longer spin
// would take a core from anything else for longer.
constexpr auto kSpinTime = std::chrono::microseconds(200);

// Spins until done() holds or kSpinTime has passed; returns done().
template <class Done>
bool spin_until(Done done) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int spin = 1;; ++spin) {
    if (done()) return true;
    if (spin % 256 == 0 && std::chrono::steady_clock::now() > deadline) return done();
  }
}
}  // namespace

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable done;
  std::mutex job_mutex;                 // one job at a time; other callers run inline
  std::atomic<uint64_t> generation{0};  // bumped once per job
  bool stopping = false;

  // The current job.
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t begin = 0, chunk = 0, end = 0;
  int num_chunks = 0;
  std::atomic<int> remaining{0};
  std::exception_ptr error;
  std::vector<std::thread> workers;

  void run_chunk(int index) {
    int64_t lo = begin + index * chunk, hi = std::min(end, lo + chunk);
    try {
      tl_inside_parallel_region = true;
      if (lo < hi) (*fn)(lo, hi);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!error) error = std::current_exception();
    }
    tl_inside_parallel_region = false;
  }

  void worker_loop(int worker_index) {
    uint64_t seen = 0;
    while (true) {
      if (!spin_until([&] { return generation.load(std::memory_order_acquire) != seen; })) {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stopping || generation.load() != seen; });
        if (stopping) return;
      }
      seen = generation.load(std::memory_order_acquire);
      int chunk_index = worker_index + 1;  // chunk 0 is the caller's
      if (chunk_index < num_chunks) run_chunk(chunk_index);
      if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex);
        done.notify_one();
      }
    }
  }

  void request_stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
  }
};

void start_threads(std::vector<std::thread>& threads, int count, const std::function<void(int)>& fn,
                   const std::function<void()>& stop, const std::string& owner) {
  try {
    threads.reserve(static_cast<size_t>(count));  // no thread is started into a vector that then fails to grow
    for (int i = 0; i < count; ++i) threads.emplace_back(fn, i);
  } catch (const std::exception& e) {  // std::system_error, std::bad_alloc
    const size_t started = threads.size();
    stop();
    for (std::thread& t : threads) t.join();
    threads.clear();
    RG_THROW(owner, ": could not start thread ", started + 1, " of ", count, ": ", e.what());
  }
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)), state_(std::make_unique<State>()) {
  start_threads(
      state_->workers, num_threads_ - 1, [this](int i) { state_->worker_loop(i); }, [this] { state_->request_stop(); },
      detail::concat("thread pool of ", num_threads_, " threads (the caller and ", num_threads_ - 1, " workers)"));
}

ThreadPool::~ThreadPool() {
  state_->request_stop();
  for (auto& worker : state_->workers) worker.join();
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (end <= begin) return;
  int64_t count = end - begin;
  int64_t max_chunks = std::max<int64_t>(1, count / std::max<int64_t>(grain, 1));
  int chunks = static_cast<int>(std::min<int64_t>(num_threads_, max_chunks));
  State& s = *state_;
  std::unique_lock job(s.job_mutex, std::defer_lock);
  if (chunks <= 1 || tl_inside_parallel_region || !job.try_lock()) {
    fn(begin, end);
    return;
  }
  s.fn = &fn;
  s.begin = begin;
  s.end = end;
  s.chunk = (count + chunks - 1) / chunks;
  s.num_chunks = chunks;
  s.error = nullptr;
  s.remaining.store(static_cast<int>(s.workers.size()), std::memory_order_relaxed);
  {
    std::lock_guard lock(s.mutex);
    s.generation.fetch_add(1, std::memory_order_release);
  }
  s.wake.notify_all();
  s.run_chunk(0);
  if (!spin_until([&] { return s.remaining.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock lock(s.mutex);
    s.done.wait(lock, [&] { return s.remaining.load() == 0; });
  }
  if (s.error) std::rethrow_exception(s.error);
}

int default_num_threads() {
  if (const char* env = std::getenv("RINGGRAD_NUM_THREADS")) {
    int n = 0;
    const char* end = env + std::strlen(env);
    auto [stop, error] = std::from_chars(env, end, n);
    RG_CHECK(error == std::errc() && stop == end && n >= 1, "RINGGRAD_NUM_THREADS='", env,
             "' must be a positive integer");
    return n;
  }
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int local_processes = 1;
  if (const char* env = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local_processes = std::max(1, std::atoi(env));
  return std::max(1, cores / local_processes);
}

namespace {
std::mutex g_default_mutex;
std::shared_ptr<ThreadPool>& default_pool_slot() {
  static std::shared_ptr<ThreadPool> pool;
  return pool;
}
thread_local std::shared_ptr<ThreadPool> tl_scoped_pool;
}  // namespace

ThreadPool& current_thread_pool() {
  if (tl_scoped_pool) return *tl_scoped_pool;
  std::lock_guard lock(g_default_mutex);
  auto& pool = default_pool_slot();
  if (!pool) pool = std::make_shared<ThreadPool>(default_num_threads());
  return *pool;
}

int get_num_threads() { return current_thread_pool().num_threads(); }

void set_num_threads(int num_threads) {
  RG_CHECK(num_threads >= 1, "set_num_threads: ", num_threads, " must be >= 1");
  if (tl_scoped_pool) {
    tl_scoped_pool = std::make_shared<ThreadPool>(num_threads);
    return;
  }
  std::lock_guard lock(g_default_mutex);
  default_pool_slot() = std::make_shared<ThreadPool>(num_threads);
}

ThreadPoolScope::ThreadPoolScope(int num_threads)
    : pool_(std::make_shared<ThreadPool>(num_threads)), previous_(tl_scoped_pool) {
  tl_scoped_pool = pool_;
}

ThreadPoolScope::~ThreadPoolScope() { tl_scoped_pool = previous_; }

}  // namespace rg
