//===- Tensor.h - The executor's tensors ------------------------*- C++ -*-===//
//
// A dense, row-major tensor of one ONNX element type. The buffer is 64-byte
// aligned (oneDNN's preference) and shared: copying a Tensor shares its data,
// so Reshape, Identity and friends cost nothing. Kernels write only tensors
// they allocated themselves. Buffers come from the executor's pool during a
// run (BufferPool.h).
//
// Between two oneDNN kernels a float tensor may hold its data in oneDNN's
// channel-blocked layout (`blocked()`); the executor never lets such a tensor
// reach other kernels, hooks or callers (Dnnl.h converts).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_TENSOR_H
#define TPCC_RUNTIME_TENSOR_H

#include "ir/graph/Graph.h"
#include "support/HalfFloat.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::rt {

struct BlockedLayout; // runtime/ops/Dnnl.h
using graph::ElemType;
using Shape = std::vector<int64_t>;

/// The number of elements of `s` (1 for a scalar).
int64_t numElements(const Shape &s);
/// `[1,3,224,224]`.
std::string shapeStr(const Shape &s);

class Tensor {
public:
  Tensor() = default;
  /// A tensor of `shape`, uninitialized (zeroed when `zero`).
  Tensor(ElemType elem, Shape shape, bool zero = false);
  /// A tensor of `shape` in a oneDNN layout taking `bytes`, uninitialized.
  Tensor(ElemType elem, Shape shape, std::shared_ptr<const BlockedLayout> layout, size_t bytes);

  ElemType elem() const { return type; }
  const Shape &shape() const { return dims; }
  int64_t rank() const { return int64_t(dims.size()); }
  int64_t dim(int64_t i) const { return dims[size_t(i)]; }
  int64_t numel() const { return count; }
  size_t bytes() const { return size_t(count) * graph::elemSize(type); }
  bool defined() const { return type != ElemType::Undefined; }
  /// oneDNN's layout of the data, or null for plain row-major data.
  const BlockedLayout *blocked() const { return layout.get(); }
  /// Whether no other tensor shares the buffer (a kernel may then reuse it).
  bool sole() const { return buf.use_count() == 1; }

  template <typename T> T *data() { return reinterpret_cast<T *>(buf.get()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(buf.get()); }
  void *raw() { return buf.get(); }
  const void *raw() const { return buf.get(); }
  /// Strings (ElemType::String) are held apart from the byte buffer.
  std::vector<std::string> &strings() { return strs; }
  const std::vector<std::string> &strings() const { return strs; }

  /// The same data seen with another shape of the same element count.
  Tensor reshaped(Shape s) const;
  /// The same buffer read as a plain tensor of shape `s` (the element count
  /// unchanged): a dense blocked layout that permutes the axes (NHWC) seen
  /// in its memory order.
  Tensor viewAs(Shape s) const;
  /// A deep copy.
  Tensor clone() const;
  /// A copy of rows [begin, end) along the first dimension.
  Tensor rows(int64_t begin, int64_t end) const { return slice(0, begin, end); }
  /// A copy of entries [begin, end) along dimension `axis`.
  Tensor slice(int axis, int64_t begin, int64_t end) const;
  /// Element `i` converted to double (numeric types).
  double at(int64_t i) const;
  /// Element `i` converted to int64 (numeric types).
  int64_t intAt(int64_t i) const;

  /// A copy of a model constant.
  static Tensor fromGraph(const graph::Tensor &t);
  /// The tensor as a model constant named `name`.
  graph::Tensor toGraph(const std::string &name) const;

private:
  ElemType type = ElemType::Undefined;
  Shape dims;
  int64_t count = 0;
  std::shared_ptr<uint8_t> buf;
  std::shared_ptr<const BlockedLayout> layout;
  std::vector<std::string> strs;
};

} // namespace tpcc::rt

#endif
