// Size-class free lists, kept by the thread that freed each block, behind a mutex; see
// caching_allocator.h for why.
#include "tensor/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "tensor/error.h"

namespace rg {

CachingAllocator::CachingAllocator(SystemAlloc system_alloc, SystemFree system_free)
    : system_alloc_(std::move(system_alloc)), system_free_(std::move(system_free)) {}

CachingAllocator::~CachingAllocator() { empty_cache(); }

size_t CachingAllocator::size_class(size_t nbytes) {
  constexpr size_t kMinBlock = 64;
  if (nbytes <= kMinBlock) return kMinBlock;
  size_t power = std::bit_floor(nbytes);  // largest power of two <= nbytes
  size_t step = std::max<size_t>(power / 4, 1);
  return (nbytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t nbytes) {
  // No tensor is larger (Tensor::empty checks), and size classes of larger requests wrap.
  RG_CHECK(nbytes <= static_cast<size_t>(INT64_MAX), "out of memory: cannot allocate ", nbytes, " bytes");
  size_t block = size_class(nbytes);
  std::lock_guard lock(mutex_);
  auto it = free_blocks_.find(block);
  void* ptr = it == free_blocks_.end() ? nullptr : take_cached(it->second);
  if (ptr) {
    ++stats_.cache_hits;
  } else {
    ptr = system_alloc_(block);
    if (!ptr) {  // the cache may hold enough memory: release it and try once more
      release_free_blocks();
      ptr = system_alloc_(block);
    }
    RG_CHECK(ptr, "out of memory: could not allocate ", block, " bytes (", stats_.allocated,
             " bytes in use, ", stats_.reserved, " reserved)");
    ++stats_.system_allocs;
    stats_.reserved += block;
  }
  stats_.allocated += block;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  return ptr;
}

// This thread's most recently freed block (the likeliest to be in its cache), else another
// thread's. A thread's entry goes when its last block does, so the list holds no entries
// of threads that ended.
void* CachingAllocator::take_cached(FreeList& list) {
  if (list.empty()) return nullptr;
  auto entry = list.find(std::this_thread::get_id());
  if (entry == list.end()) entry = list.begin();
  void* ptr = entry->second.back();
  entry->second.pop_back();
  if (entry->second.empty()) list.erase(entry);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  size_t block = size_class(nbytes);
  std::lock_guard lock(mutex_);
  free_blocks_[block][std::this_thread::get_id()].push_back(ptr);
  stats_.allocated -= block;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_free_blocks();
}

void CachingAllocator::release_free_blocks() {
  for (auto& [size, list] : free_blocks_)
    for (auto& [thread, blocks] : list) {
      for (void* p : blocks) system_free_(p);
      stats_.reserved -= size * blocks.size();
    }
  free_blocks_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace rg
