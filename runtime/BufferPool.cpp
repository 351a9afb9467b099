//===- BufferPool.cpp - Tensor buffers reused across runs -------------------===//
#include "runtime/BufferPool.h"

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <malloc.h>
#include <map>
#include <mutex>
#include <new>

using namespace tpcc::rt;

namespace {

thread_local BufferPool *activePool = nullptr;

uint8_t *systemAllocate(size_t bytes) {
  // Freed buffers outside a pool stay in the heap instead of going back to
  // the kernel: a fresh mmap'ed buffer costs page faults on first touch.
  static const bool tuned = [] {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)tuned;
  void *p = std::aligned_alloc(64, bytes);
  if (!p)
    throw std::bad_alloc();
  return static_cast<uint8_t *>(p);
}

size_t rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + 63) / 64 * 64; }

} // namespace

struct BufferPool::Impl : std::enable_shared_from_this<BufferPool::Impl> {
  mutable std::mutex mu;
  struct FreeBuffer {
    uint8_t *p;
    uint64_t returned; ///< when it came back (a count of returns)
  };
  std::multimap<size_t, FreeBuffer> free; ///< by capacity
  size_t freeBytes = 0;
  uint64_t returns = 0;
  Stats stats;

  ~Impl() {
    for (auto &[size, b] : free)
      std::free(b.p);
  }

  std::shared_ptr<uint8_t> take(size_t bytes) {
    uint8_t *p = nullptr;
    size_t capacity = bytes;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = free.lower_bound(bytes);
      if (it != free.end() && it->first / 2 <= bytes) {
        // Of the buffers of that capacity, the one returned last: its
        // memory is the likeliest still in cache.
        it = std::prev(free.upper_bound(it->first));
        capacity = it->first;
        p = it->second.p;
        free.erase(it);
        freeBytes -= capacity;
        ++stats.reuses;
      } else {
        ++stats.systemAllocations;
        stats.held += capacity;
      }
      stats.inUse += capacity;
      stats.peakInUse = std::max(stats.peakInUse, stats.inUse);
    }
    if (!p)
      p = systemAllocate(capacity);
    std::shared_ptr<Impl> self = shared_from_this();
    return std::shared_ptr<uint8_t>(p, [self, capacity](uint8_t *q) { self->give(q, capacity); });
  }

  void give(uint8_t *p, size_t capacity) {
    std::lock_guard<std::mutex> lock(mu);
    stats.inUse -= capacity;
    free.emplace(capacity, FreeBuffer{p, ++returns});
    freeBytes += capacity;
    // Keep at most twice the peak in use as spare (room for the buffers of
    // every size a run asks for); release the one unused longest first (not
    // the largest: a run's largest buffer is the one it needs again).
    while (freeBytes > 2 * stats.peakInUse && !free.empty()) {
      auto oldest = free.begin();
      for (auto it = free.begin(); it != free.end(); ++it)
        if (it->second.returned < oldest->second.returned)
          oldest = it;
      freeBytes -= oldest->first;
      stats.held -= oldest->first;
      std::free(oldest->second.p);
      free.erase(oldest);
    }
  }
};

BufferPool::BufferPool() : impl(std::make_shared<Impl>()) {}
BufferPool::~BufferPool() = default;

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(impl->mu);
  return impl->stats;
}

BufferPool::Scope::Scope(BufferPool *pool) : saved(activePool) { activePool = pool; }
BufferPool::Scope::~Scope() { activePool = saved; }

std::shared_ptr<uint8_t> BufferPool::allocate(size_t bytes, bool zero) {
  size_t n = rounded(bytes);
  std::shared_ptr<uint8_t> buf;
  if (activePool)
    buf = activePool->impl->take(n);
  else
    buf = std::shared_ptr<uint8_t>(systemAllocate(n), [](uint8_t *q) { std::free(q); });
  if (zero)
    std::memset(buf.get(), 0, n);
  return buf;
}
