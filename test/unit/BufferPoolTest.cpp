//===- BufferPoolTest.cpp - The executor's tensor buffers -------------------===//
#include "runtime/BufferPool.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using namespace tpcc::rt;

namespace {

/// One run of a sequential network whose activations have these sizes (in
/// KiB): each output is taken before its input dies, as the executor does.
void runChain(BufferPool &pool, const std::vector<size_t> &kib) {
  BufferPool::Scope scope(&pool);
  std::shared_ptr<uint8_t> live = BufferPool::allocate(kib[0] << 10, false);
  for (size_t i = 1; i < kib.size(); ++i) {
    std::shared_ptr<uint8_t> next = BufferPool::allocate(kib[i] << 10, false);
    live = std::move(next);
  }
}

} // namespace

TEST(BufferPool, SteadyRunsAllocateNothing) {
  // A sequential network whose activations range over sizes the free list
  // cannot all serve (a buffer serves requests down to half its size):
  // after the first runs every buffer comes from the free list, the largest
  // included. (A pool that trimmed its largest spare buffer first got that
  // one from the system again on every run.)
  const std::vector<size_t> kib = {100, 900,  3200, 400,  900,  4800,
                                   100, 1600, 400,  6400, 1200, 1200};
  BufferPool pool;
  runChain(pool, kib);
  runChain(pool, kib);
  uint64_t warm = pool.stats().systemAllocations;
  for (int run = 0; run < 8; ++run)
    runChain(pool, kib);
  EXPECT_EQ(pool.stats().systemAllocations, warm);
  EXPECT_EQ(pool.stats().inUse, 0u);
  EXPECT_LE(pool.stats().held, 3 * pool.stats().peakInUse);
}

TEST(BufferPool, FreedBuffersReturnAfterThePoolIsGone) {
  std::shared_ptr<uint8_t> kept;
  {
    BufferPool pool;
    BufferPool::Scope scope(&pool);
    kept = BufferPool::allocate(4096, true);
  }
  EXPECT_EQ(kept.get()[4095], 0); // still valid; freed when `kept` dies
}

TEST(BufferPool, HandsOutTheBufferReturnedLast) {
  // Of spare buffers of one size, the one returned most recently (its memory
  // the likeliest still in cache) serves the next request.
  BufferPool pool;
  BufferPool::Scope scope(&pool);
  std::shared_ptr<uint8_t> a = BufferPool::allocate(64 << 10, false),
                           b = BufferPool::allocate(64 << 10, false),
                           c = BufferPool::allocate(64 << 10, false);
  uint8_t *second = b.get();
  a.reset();
  b.reset(); // returned after a
  std::shared_ptr<uint8_t> next = BufferPool::allocate(64 << 10, false);
  EXPECT_EQ(next.get(), second);
}
