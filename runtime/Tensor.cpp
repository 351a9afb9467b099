//===- Tensor.cpp - The executor's tensors ----------------------------------===//
#include "runtime/Tensor.h"
#include "runtime/BufferPool.h"

#include <cassert>
#include <cmath>
#include <cstdlib>
#include <new>

using namespace tpcc;
using namespace tpcc::rt;

int64_t rt::numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::string rt::shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor::Tensor(ElemType elem, Shape shape, bool zero)
    : type(elem), dims(std::move(shape)), count(numElements(dims)) {
  if (type == ElemType::String)
    strs.resize(size_t(count));
  else
    buf = BufferPool::allocate(bytes(), zero);
}

Tensor::Tensor(ElemType elem, Shape shape, std::shared_ptr<const BlockedLayout> layout,
               size_t bytes)
    : type(elem), dims(std::move(shape)), count(numElements(dims)),
      buf(BufferPool::allocate(bytes, false)), layout(std::move(layout)) {}

Tensor Tensor::reshaped(Shape s) const {
  assert(numElements(s) == count && "reshape changes the element count");
  assert(!layout && "reshape of a blocked tensor");
  Tensor t = *this;
  t.dims = std::move(s);
  return t;
}

Tensor Tensor::viewAs(Shape s) const {
  assert(numElements(s) == count && "a view changes the element count");
  Tensor t = *this;
  t.dims = std::move(s);
  t.layout.reset();
  return t;
}

Tensor Tensor::clone() const {
  assert(!layout && "clone of a blocked tensor");
  Tensor t(type, dims);
  if (type == ElemType::String)
    t.strs = strs;
  else if (bytes())
    std::memcpy(t.raw(), raw(), bytes());
  return t;
}

Tensor Tensor::slice(int axis, int64_t begin, int64_t end) const {
  assert(0 <= axis && axis < int(rank()) && 0 <= begin && begin <= end && end <= dims[axis]);
  Shape s = dims;
  s[axis] = end - begin;
  Tensor t(type, s);
  int64_t outer = 1, inner = 1; // elements before the axis, and per entry of it
  for (int i = 0; i < axis; ++i)
    outer *= dims[i];
  for (size_t i = size_t(axis) + 1; i < dims.size(); ++i)
    inner *= dims[i];
  int64_t from = dims[axis] * inner, taken = (end - begin) * inner;
  for (int64_t o = 0; o < outer; ++o) {
    if (type == ElemType::String) {
      auto first = strs.begin() + o * from + begin * inner;
      std::copy(first, first + taken, t.strs.begin() + o * taken);
    } else if (taken) {
      size_t e = graph::elemSize(type);
      std::memcpy(static_cast<uint8_t *>(t.raw()) + size_t(o * taken) * e,
                  buf.get() + size_t(o * from + begin * inner) * e, size_t(taken) * e);
    }
  }
  return t;
}

template <typename T> static T load(const uint8_t *p, int64_t i) {
  T v;
  std::memcpy(&v, p + size_t(i) * sizeof(T), sizeof(T));
  return v;
}

double Tensor::at(int64_t i) const {
  const uint8_t *p = buf.get();
  switch (type) {
  case ElemType::Float:
    return load<float>(p, i);
  case ElemType::Double:
    return load<double>(p, i);
  case ElemType::Float16:
    return halfToFloat(load<uint16_t>(p, i));
  case ElemType::BFloat16:
    return bfloat16ToFloat(load<uint16_t>(p, i));
  case ElemType::Int8:
    return load<int8_t>(p, i);
  case ElemType::UInt8:
    return load<uint8_t>(p, i);
  case ElemType::Bool:
    return load<uint8_t>(p, i) != 0;
  case ElemType::Int16:
    return load<int16_t>(p, i);
  case ElemType::UInt16:
    return load<uint16_t>(p, i);
  case ElemType::Int32:
    return load<int32_t>(p, i);
  case ElemType::UInt32:
    return load<uint32_t>(p, i);
  case ElemType::Int64:
    return double(load<int64_t>(p, i));
  case ElemType::UInt64:
    return double(load<uint64_t>(p, i));
  default:
    return 0;
  }
}

int64_t Tensor::intAt(int64_t i) const {
  const uint8_t *p = buf.get();
  switch (type) {
  case ElemType::Int64:
    return load<int64_t>(p, i);
  case ElemType::UInt64:
    return int64_t(load<uint64_t>(p, i));
  case ElemType::Int32:
    return load<int32_t>(p, i);
  case ElemType::UInt32:
    return load<uint32_t>(p, i);
  default:
    return int64_t(at(i));
  }
}

Tensor Tensor::fromGraph(const graph::Tensor &g) {
  Tensor t(g.elem, g.dims);
  if (g.elem == ElemType::String)
    t.strs = g.strings;
  else if (!g.raw.empty())
    std::memcpy(t.raw(), g.raw.data(), std::min(g.raw.size(), t.bytes()));
  return t;
}

graph::Tensor Tensor::toGraph(const std::string &name) const {
  graph::Tensor g;
  g.name = name;
  g.elem = type;
  g.dims = dims;
  if (type == ElemType::String)
    g.strings = strs;
  else
    g.raw.assign(reinterpret_cast<const char *>(raw()), bytes());
  return g;
}
