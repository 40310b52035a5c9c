// The intra-op thread pool that CPU kernels share. OpenBLAS runs single-threaded inside
// it: two pools fighting over 2 cores (LibTorch's OpenMP + OpenBLAS's own) run 3-4x
// slower than one. Each thread sees a "current" pool: the process-wide default, or one
// installed for it by ThreadPoolScope (the in-process `local` world gives each rank-thread
// its own share of the cores this way).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>

namespace rg {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // the caller counts as one of them
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
// Resizes the current pool (the default one, or the one a ThreadPoolScope installed).
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
