//===- KernelUtil.h - Helpers shared by the kernels -------------*- C++ -*-===//
//
// Parallel loops (OpenMP, the same thread pool oneDNN uses), multidirectional
// broadcasting, axis normalization and element-type dispatch.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_KERNELUTIL_H
#define TPCC_RUNTIME_KERNELUTIL_H

#include "runtime/Kernel.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace tpcc::rt {

int ompThreads();
int ompThread();

/// The threads an operation of `work` multiply-adds (or element visits)
/// runs on: one below kParallelWork, every thread OpenMP gives above. A fork
/// and join of the team costs more than it saves on small operations (a
/// batch-1 run of a small CNN), and on a machine whose cores are shared a
/// team waits at every join for its preempted member: small operations stay
/// on the calling thread.
int threadsFor(int64_t work);
constexpr int64_t kParallelWork = int64_t(1) << 20;

/// Sets OpenMP's thread count for the regions (oneDNN primitives included)
/// this scope starts; restores it after.
class ThreadScope {
public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope &) = delete;
  ThreadScope &operator=(const ThreadScope &) = delete;

private:
  int saved;
};

/// Runs `fn(begin, end)` over [0, n) split into chunks across the threads;
/// serially when `n * costPerItem` is too small to be worth a fork.
template <typename F> void parallelFor(int64_t n, int64_t costPerItem, F fn) {
  if (n <= 0)
    return;
  if (n * costPerItem < 32768 || n == 1) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    int threads = ompThreads(), t = ompThread();
    int64_t chunk = (n + threads - 1) / threads;
    int64_t b = std::min<int64_t>(n, chunk * t), e = std::min<int64_t>(n, b + chunk);
    if (b < e)
      fn(b, e);
  }
}

/// Runs `f(begin, end, sums)` over [0, n) in chunks of a fixed size, in
/// parallel, each adding into its own `width` partial sums, and adds the
/// chunks' sums into `total` in chunk order: the same result on any number
/// of threads.
template <typename F> void chunkedSums(int64_t n, size_t width, double *total, F f) {
  constexpr int64_t kChunk = 16384;
  int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(size_t(chunks) * width, 0.0);
  parallelFor(chunks, kChunk * 8, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      f(c * kChunk, std::min(n, (c + 1) * kChunk), partial.data() + size_t(c) * width);
  });
  for (int64_t c = 0; c < chunks; ++c)
    for (size_t k = 0; k < width; ++k)
      total[k] += partial[size_t(c) * width + k];
}

/// `v` truncated toward zero and saturated to integer type I; NaN gives 0
/// (float -> integer Cast, and arithmetic results stored as integers).
template <typename I> I saturate(double v) {
  if (std::isnan(v))
    return 0;
  if (v <= double(std::numeric_limits<I>::lowest()))
    return std::numeric_limits<I>::lowest();
  if (v >= double(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return I(v);
}

bool isHalf(ElemType e);
/// A float16 or bfloat16 tensor as float.
Tensor widenToFloat(const Tensor &t);
/// Runs `fn` on float copies of the float16/bfloat16 inputs; its float
/// outputs go back to the half type of input `typeInput` when that one is
/// half (the kernels compute in float and round once, as ONNX's reference).
bool viaFloat(KernelContext &ctx, KernelFn fn, size_t typeInput = 0);

/// The broadcast shape of `a` and `b` (ONNX multidirectional broadcasting),
/// or none when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);

/// Walks the elements of an output of shape `out` and yields, for each, the
/// offsets of the same element in broadcast inputs. Strides are 0 along
/// broadcast dimensions.
struct BroadcastIndexer {
  /// `in` must broadcast to `out`.
  BroadcastIndexer(const Shape &in, const Shape &out);
  /// The input offset of output element `i`.
  int64_t offset(int64_t i) const;
  /// Whether the input has the same shape as the output (offset(i) == i).
  bool identity = false;
  /// Whether the input has a single element (offset(i) == 0).
  bool scalar = false;

private:
  Shape outDims;
  std::vector<int64_t> strides;
};

/// `axis` in [-rank, rank) mapped to [0, rank), or none when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
/// The axes a Reduce* node reduces over `x` (its `axes` attribute, or input 1
/// where the opset says so; none given: all), or `noop` when it reduces
/// nothing (`noop_with_empty_axes`); false (ctx.error set) on a bad axis.
bool reducedAxes(KernelContext &ctx, const Tensor &x, std::vector<bool> &reduced, bool &noop);

/// The element count of `s` when its dimensions are non-negative and a tensor
/// of `elem` of that shape stays under the size kernels allocate from sizes
/// found in data (16 GiB); false otherwise. (ops/DataMovement.cpp)
bool checkedNumel(const Shape &s, ElemType elem, int64_t &n);

/// Row-major strides of `s`, in elements. (ops/DataMovement.cpp)
std::vector<int64_t> contiguousStrides(const Shape &s);

/// Copies into `out` (dense) the elements of `in` found at `base` plus the
/// output index times `strides` (in elements of `in`; one stride per
/// dimension of `out`, 0 to broadcast, negative to walk backwards): the one
/// engine behind Slice, Split, Expand, Tile and Transpose. (ops/DataMovement.cpp)
bool stridedCopy(const Tensor &in, Tensor &out, int64_t base, std::vector<int64_t> strides);

/// "float", "int64", ...
inline std::string typeName(ElemType t) { return graph::toString(t); }

} // namespace tpcc::rt

/// Calls `F<T>(args...)` with T the C++ type of element type `ET` for every
/// numeric type (float, double, ints, uint8, bool as uint8 excluded); returns
/// `fallback` for other types.
#define TPCC_DISPATCH_NUMERIC(ET, FALLBACK, CALL)                                                  \
  [&]() {                                                                                          \
    switch (ET) {                                                                                  \
    case ::tpcc::graph::ElemType::Float: {                                                         \
      using T = float;                                                                             \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Double: {                                                        \
      using T = double;                                                                            \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Int8: {                                                          \
      using T = int8_t;                                                                            \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::UInt8: {                                                         \
      using T = uint8_t;                                                                           \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Int16: {                                                         \
      using T = int16_t;                                                                           \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::UInt16: {                                                        \
      using T = uint16_t;                                                                          \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Int32: {                                                         \
      using T = int32_t;                                                                           \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::UInt32: {                                                        \
      using T = uint32_t;                                                                          \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Int64: {                                                         \
      using T = int64_t;                                                                           \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::UInt64: {                                                        \
      using T = uint64_t;                                                                          \
      return CALL;                                                                                 \
    }                                                                                              \
    default:                                                                                       \
      return FALLBACK;                                                                             \
    }                                                                                              \
  }()

/// Floating-point types only (float, double).
#define TPCC_DISPATCH_FLOAT(ET, FALLBACK, CALL)                                                    \
  [&]() {                                                                                          \
    switch (ET) {                                                                                  \
    case ::tpcc::graph::ElemType::Float: {                                                         \
      using T = float;                                                                             \
      return CALL;                                                                                 \
    }                                                                                              \
    case ::tpcc::graph::ElemType::Double: {                                                        \
      using T = double;                                                                            \
      return CALL;                                                                                 \
    }                                                                                              \
    default:                                                                                       \
      return FALLBACK;                                                                             \
    }                                                                                              \
  }()

#endif
