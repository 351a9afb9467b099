//===- OrtSoftmax.cpp - Softmax on 8-bit codes as ONNX Runtime computes it ---===//
#include "runtime/ort/OrtSoftmax.h"

#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// The table, indexed by the code's byte after the row's offset.
std::vector<float> table(float xScale, int64_t rowLength, bool isSigned) {
  double shift = std::log(double(std::numeric_limits<float>::max() / float(rowLength)));
  shift = std::max(0.0, shift - 5) / double(xScale);
  std::vector<float> t(256);
  for (int i = 0; i < 256; ++i) {
    double e = std::exp((double(i) - 255 + shift) * double(xScale));
    t[uint8_t(isSigned ? i - 128 : i)] = float(e);
  }
  return t;
}

/// A row's codes from its table entries e: round_half_even(e * yScale / sum)
/// plus the zero point (the entries are at most the sum, so the rounding by
/// adding 1.5 * 2^23 is exact), as a byte.
template <typename Out>
[[gnu::always_inline]] inline void scaleRowTo(const float *__restrict e, Out *__restrict y,
                                              int64_t d, float yScale, float sum, int yZero) {
  constexpr float magic = 12582912.f;
  for (int64_t i = 0; i < d; ++i) {
    int32_t v = int32_t(((e[i] * yScale / sum) + magic) - magic);
    if constexpr (std::is_same_v<Out, uint8_t>) {
      uint32_t q = uint32_t(v) + uint32_t(yZero);
      y[i] = q > 255 ? 255 : uint8_t(q);
    } else {
      int32_t q = v + yZero;
      y[i] = q > 255 ? int8_t(-1) : int8_t(q); // as ORT: a byte, wrapping
    }
  }
}

template <typename Out>
__attribute__((target("avx2"))) void scaleRowAvx2(const float *e, Out *y, int64_t d, float yScale,
                                                  float sum, int yZero) {
  scaleRowTo(e, y, d, yScale, sum, yZero);
}

template <typename Out>
void scaleRow(const float *e, Out *y, int64_t d, float yScale, float sum, int yZero) {
  if (simdLevel() >= SimdLevel::Avx2)
    scaleRowAvx2(e, y, d, yScale, sum, yZero);
  else
    scaleRowTo(e, y, d, yScale, sum, yZero);
}

/// Rows of `d` contiguous codes.
template <typename In, typename Out>
void rows(const In *x, Out *y, int64_t n, int64_t d, const std::vector<float> &t, float yScale,
          int yZero) {
  parallelFor(n, 3 * d, [&](int64_t b0, int64_t b1) {
    std::vector<float> e(static_cast<size_t>(d)); // the row's table entries
    for (int64_t r = b0; r < b1; ++r) {
      const In *xr = x + r * d;
      Out *yr = y + r * d;
      In xmax = *std::max_element(xr, xr + d);
      // uint8: the table read from 255 - max on; int8: the codes moved by
      // 127 - max (wrapping in a byte), the table indexed by that byte.
      auto entry = [&](In v) {
        if constexpr (std::is_same_v<In, uint8_t>)
          return t[size_t(255 - xmax) + v];
        else
          return t[uint8_t(int32_t(127) - xmax + v)];
      };
      float sum = 0;
      for (int64_t i = 0; i < d; ++i)
        sum += e[size_t(i)] = entry(xr[i]);
      if (sum == 0)
        continue;
      scaleRow(e.data(), yr, d, yScale, sum, yZero);
    }
  });
}

template <typename In>
void rowsTo(const Tensor &in, Tensor &out, int64_t d, const std::vector<float> &t, float ys,
            int yZero) {
  if (out.elem() == graph::ElemType::Int8)
    rows(in.data<In>(), out.data<int8_t>(), in.numel() / d, d, t, ys, yZero);
  else
    rows(in.data<In>(), out.data<uint8_t>(), in.numel() / d, d, t, ys, yZero);
}

/// `x` with axes `a` and the last one swapped (or back).
Tensor swapLast(const Tensor &x, int64_t a) {
  std::vector<int64_t> perm(size_t(x.rank()));
  for (size_t i = 0; i < perm.size(); ++i)
    perm[i] = int64_t(i);
  std::swap(perm[size_t(a)], perm.back());
  Shape s = x.shape();
  for (size_t i = 0; i < perm.size(); ++i)
    s[i] = x.dim(perm[i]);
  Tensor out(x.elem(), s);
  std::vector<int64_t> in = contiguousStrides(x.shape());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    strides[i] = in[size_t(perm[i])];
  stridedCopy(x, out, 0, strides);
  return out;
}

} // namespace

bool rt::ortSoftmax(const Tensor &x, float xScale, float yScale, graph::ElemType yType, int yZero,
                    int64_t axis, int64_t opset, Tensor &y) {
  std::optional<int64_t> a = normalizeAxis(axis, x.rank());
  if (!a || x.numel() == 0) {
    y = Tensor(yType, x.shape());
    return a.has_value();
  }
  bool isSigned = x.elem() == graph::ElemType::Int8;
  float ys = std::floor(1.0f / yScale);
  bool last = *a == x.rank() - 1 || opset < 13;
  Tensor in = last ? x : swapLast(x, *a);
  int64_t d = 1;
  for (int64_t i = opset < 13 ? *a : in.rank() - 1; i < in.rank(); ++i)
    d *= in.dim(i);
  Tensor out(yType, in.shape());
  std::vector<float> t = table(xScale, d, isSigned);
  if (isSigned)
    rowsTo<int8_t>(in, out, d, t, ys, yZero);
  else
    rowsTo<uint8_t>(in, out, d, t, ys, yZero);
  y = last ? out : swapLast(out, *a);
  return true;
}
