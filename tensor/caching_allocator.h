// A caching allocator: freed blocks go to per-size-class free lists and are handed out
// again, so a training step allocates nothing from the system after its first run
// (for CPU, this avoids glibc's mmap/munmap + page faults on every large temporary;
// for CUDA, cudaMalloc's implicit synchronisation). One instance per device.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

namespace rg {

struct AllocatorStats {
  uint64_t allocated = 0;       // bytes in blocks handed out now (size-class rounded)
  uint64_t reserved = 0;        // bytes obtained from the system and not yet released
  uint64_t peak_allocated = 0;  // high-water mark of `allocated`
  uint64_t system_allocs = 0;   // calls to the system allocator (stops growing after warm-up)
  uint64_t cache_hits = 0;      // allocations served from the free lists
};

class CachingAllocator {
 public:
  using SystemAlloc = std::function<void*(size_t)>;
  using SystemFree = std::function<void(void*)>;
  CachingAllocator(SystemAlloc system_alloc, SystemFree system_free);
  ~CachingAllocator();

  void* allocate(size_t nbytes);
  void deallocate(void* ptr, size_t nbytes);  // nbytes as passed to allocate
  void empty_cache();
  AllocatorStats stats() const;

  // Sizes round up to one of four steps per power of two (at most 25% waste), so
  // slightly different batch shapes still share blocks.
  static size_t size_class(size_t nbytes);

 private:
  void release_free_blocks();  // the caller holds mutex_

  SystemAlloc system_alloc_;
  SystemFree system_free_;
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_blocks_;
  AllocatorStats stats_;
};

}  // namespace rg
