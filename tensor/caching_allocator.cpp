// Size-class free lists behind a mutex; see caching_allocator.h for why.
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
  void* ptr = nullptr;
  auto it = free_blocks_.find(block);
  if (it != free_blocks_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
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

void CachingAllocator::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  size_t block = size_class(nbytes);
  std::lock_guard lock(mutex_);
  free_blocks_[block].push_back(ptr);
  stats_.allocated -= block;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_free_blocks();
}

void CachingAllocator::release_free_blocks() {
  for (auto& [size, blocks] : free_blocks_) {
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
