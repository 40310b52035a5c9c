// tensor.caching_allocator_*: freed blocks are handed out again, the freeing thread's own
// first (it likely still has them in its cache), another thread's before the system's, and
// the counters and empty_cache account for every block.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include "tensor/caching_allocator.h"

namespace rg {

namespace {

// A CachingAllocator over malloc that counts the system's allocations and frees.
struct CountedAllocator {
  int system_allocs = 0, system_frees = 0;
  CachingAllocator cache{[this](size_t n) {
                           ++system_allocs;
                           return std::malloc(n);
                         },
                         [this](void* p) {
                           ++system_frees;
                           std::free(p);
                         }};
};

constexpr size_t kBytes = 4096;

// Runs fn on a thread of its own and waits for it.
template <class Fn>
void on_another_thread(Fn&& fn) {
  std::thread thread(std::forward<Fn>(fn));
  thread.join();
}

}  // namespace

TEST_CASE("tensor.caching_allocator_hands_a_thread_its_own_blocks_first", "[tensor]") {
  CountedAllocator counted;
  CachingAllocator& cache = counted.cache;
  void* mine = cache.allocate(kBytes);
  void* theirs = nullptr;
  on_another_thread([&] { theirs = cache.allocate(kBytes); });
  cache.deallocate(mine, kBytes);
  // Freed last, so a single shared list would hand it out first, to either thread.
  on_another_thread([&] { cache.deallocate(theirs, kBytes); });
  CHECK(cache.allocate(kBytes) == mine);
  CHECK(counted.system_allocs == 2);
}

TEST_CASE("tensor.caching_allocator_reuses_another_thread_s_block_before_the_system_s", "[tensor]") {
  // A loader thread allocates batches and a training thread frees them: the loader's next
  // batch must reuse a freed block, not grow the cache by one block a step.
  CountedAllocator counted;
  CachingAllocator& cache = counted.cache;
  for (int step = 0; step < 5; ++step) {
    void* batch = nullptr;
    on_another_thread([&] { batch = cache.allocate(kBytes); });
    cache.deallocate(batch, kBytes);
  }
  CHECK(counted.system_allocs == 1);
  const AllocatorStats stats = cache.stats();
  CHECK(stats.cache_hits == 4);
  CHECK(stats.allocated == 0);
  CHECK(stats.reserved == CachingAllocator::size_class(kBytes));
}

TEST_CASE("tensor.caching_allocator_empty_cache_frees_every_thread_s_blocks", "[tensor]") {
  CountedAllocator counted;
  CachingAllocator& cache = counted.cache;
  void* a = cache.allocate(kBytes);
  void* b = cache.allocate(3 * kBytes);
  void* c = cache.allocate(kBytes);
  cache.deallocate(a, kBytes);
  on_another_thread([&] {
    cache.deallocate(b, 3 * kBytes);
    cache.deallocate(c, kBytes);
  });
  CHECK(cache.stats().reserved == 2 * CachingAllocator::size_class(kBytes) + CachingAllocator::size_class(3 * kBytes));
  cache.empty_cache();
  CHECK(counted.system_frees == 3);
  CHECK(cache.stats().reserved == 0);
  CHECK(cache.stats().allocated == 0);
}

}  // namespace rg
