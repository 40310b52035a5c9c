// The intra-op thread pool that CPU kernels share. OpenBLAS runs single-threaded inside
// it: two pools fighting over 2 cores (LibTorch's OpenMP + OpenBLAS's own) run 3-4x
// slower than one. Each thread sees a "current" pool: the process-wide default, or one
// installed for it by ThreadPoolScope (the in-process `local` world gives each rank-thread
// its own share of the cores this way).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace rg {

// Starts `count` threads into `threads` (empty on entry), thread i running fn(i): all of
// them or none. When the system refuses one (std::system_error under a process or memory
// limit) or memory runs out, stop() is called to make the started ones return, they are
// joined, and rg::Error("<owner>: could not start thread <i> of <count>: <reason>") is
// thrown, instead of unwinding past running std::threads into std::terminate.
void start_threads(std::vector<std::thread>& threads, int count, const std::function<void(int)>& fn,
                   const std::function<void()>& stop, const std::string& owner);

class ThreadPool {
 public:
  // The caller counts as one of the threads. Throws rg::Error (see start_threads) when
  // the workers cannot be started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  // Splits [begin, end) into at most num_threads() contiguous chunks of at least `grain`
  // items and runs fn(chunk_begin, chunk_end) on them, the first on the calling thread.
  // Returns when all are done; rethrows the first exception. Nested calls run inline.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct State;
  int num_threads_;
  std::unique_ptr<State> state_;
};

// cores ÷ processes on this node: RINGGRAD_NUM_THREADS if set, else hardware threads
// divided by OMPI_COMM_WORLD_LOCAL_SIZE (mpirun), at least 1.
int default_num_threads();

ThreadPool& current_thread_pool();
int get_num_threads();
// Resizes the current pool (the default one, or the one a ThreadPoolScope installed). When
// the new pool's threads cannot be started it throws, and the current pool stays in place.
void set_num_threads(int num_threads);

// Gives the calling thread its own pool of `num_threads` for the scope's lifetime.
class ThreadPoolScope {
 public:
  explicit ThreadPoolScope(int num_threads);
  ~ThreadPoolScope();
  ThreadPoolScope(const ThreadPoolScope&) = delete;
  ThreadPoolScope& operator=(const ThreadPoolScope&) = delete;

 private:
  std::shared_ptr<ThreadPool> pool_;
  std::shared_ptr<ThreadPool> previous_;
};

// parallel_for on the current pool.
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  current_thread_pool().parallel_for(begin, end, grain, fn);
}

}  // namespace rg
