//===- BufferPool.h - Tensor buffers reused across runs ---------*- C++ -*-===//
//
// An executor's arena: the buffers of the tensors its kernels allocate come
// from its pool while a run is active on the thread (BufferPool::Scope), and
// go back to it when the last tensor sharing them dies. The second run of a
// model at the same batch shape therefore takes every buffer from the free
// list: no allocation, no page faults, and the memory touched stays the
// memory of the live set (a freed activation's buffer is the next output's).
//
// A request takes the smallest free buffer that holds it and wastes at most
// half of it; free buffers past twice the peak in use are returned to the
// system. The first runs at a batch shape fill the free list with buffers
// of every size the runs ask for; after them a run allocates nothing. Buffers may be released from
// any thread (a caller keeps an output tensor after the executor is gone: the pool lives until its
// last buffer).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_BUFFERPOOL_H
#define TPCC_RUNTIME_BUFFERPOOL_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tpcc::rt {

class BufferPool {
public:
  struct Stats {
    uint64_t systemAllocations = 0;            ///< buffers obtained from the system
    uint64_t reuses = 0;                       ///< requests served from the free list
    size_t inUse = 0, peakInUse = 0, held = 0; ///< bytes (held: in use + free)
  };

  BufferPool();
  ~BufferPool();
  BufferPool(const BufferPool &) = delete;
  BufferPool &operator=(const BufferPool &) = delete;

  Stats stats() const;

  /// Makes `pool` the source of tensor buffers on this thread until the
  /// scope ends (scopes nest; a null pool means the system allocator).
  class Scope {
  public:
    explicit Scope(BufferPool *pool);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    BufferPool *saved;
  };

  /// A 64-byte aligned buffer of at least `bytes`, from the pool active on
  /// this thread or from the system; zeroed when `zero`.
  static std::shared_ptr<uint8_t> allocate(size_t bytes, bool zero);

private:
  struct Impl;
  std::shared_ptr<Impl> impl;
};

} // namespace tpcc::rt

#endif
