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

Tensor Tensor::clone() const {
  assert(!layout && "clone of a blocked tensor");
  Tensor t(type, dims);
  if (type == ElemType::String)
    t.strs = strs;
  else if (bytes())
    std::memcpy(t.raw(), raw(), bytes());
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  assert(rank() >= 1 && 0 <= begin && begin <= end && end <= dims[0]);
  Shape s = dims;
  s[0] = end - begin;
  Tensor t(type, s);
  size_t row = dims[0] ? bytes() / size_t(dims[0]) : 0;
  if (type == ElemType::String)
    t.strs.assign(strs.begin() + begin * (count / std::max<int64_t>(dims[0], 1)),
                  strs.begin() + end * (count / std::max<int64_t>(dims[0], 1)));
  else if (row)
    std::memcpy(t.raw(), buf.get() + size_t(begin) * row, size_t(end - begin) * row);
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

float rt::halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000 | (man << 13);
  else if (exp)
    bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (!man)
    bits = sign;
  else { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 0x400));
    bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t rt::floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) // Inf or NaN
    return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) // rounds to >= 65520: overflow to Inf
    return uint16_t(sign | 0x7c00);
  if (absx < 0x38800000) { // subnormal half (or zero)
    float a;
    std::memcpy(&a, &absx, 4);
    // Scale so that the half subnormal unit (2^-24) becomes 1, round to nearest even.
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t exp = ((absx >> 23) - 112) << 10, man = absx & 0x7fffff;
  uint32_t h = exp | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return uint16_t(sign | h);
}

float rt::bfloat16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t rt::floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return uint16_t((x + rounding) >> 16);
}
