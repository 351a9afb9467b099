//===- OrtSoftmax.cpp - Softmax on 8-bit codes as ONNX Runtime computes it ---===//
#include "runtime/ort/OrtSoftmax.h"

#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"

#include <algorithm>
#include <cmath>
#include <immintrin.h>
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

/// The output byte of a rounded value v >= 0.
template <typename Out> [[gnu::always_inline]] inline Out codeOf(int32_t v, int yZero) {
  if constexpr (std::is_same_v<Out, uint8_t>) {
    uint32_t q = uint32_t(v) + uint32_t(yZero);
    return q > 255 ? 255 : uint8_t(q);
  } else {
    // As ORT: a byte, wrapping; an overflow (a row of one element: its entry
    // times 256 is infinite, converted to INT32_MIN) wraps too, in uint32.
    int32_t q = int32_t(uint32_t(v) + uint32_t(yZero));
    return q > 255 ? int8_t(-1) : int8_t(q);
  }
}

/// A row's codes from its table entries e: round_half_even(e * yScale / sum)
/// plus the zero point (the entries are at most the sum, so the rounding by
/// adding 1.5 * 2^23 is exact), as a byte.
template <typename Out>
[[gnu::always_inline]] inline void scaleRowTo(const float *__restrict e, Out *__restrict y,
                                              int64_t d, float yScale, float sum, int yZero) {
  constexpr float magic = 12582912.f;
  for (int64_t i = 0; i < d; ++i)
    y[i] = codeOf<Out>(int32_t(((e[i] * yScale / sum) + magic) - magic), yZero);
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

/// One row's table entry of code `v` (the row's largest code `xmax`):
/// uint8 reads the table from 255 - max on; int8 moves the codes by 127 -
/// max (wrapping in a byte) and indexes the table by that byte.
template <typename In>
[[gnu::always_inline]] inline float entryOf(const std::vector<float> &t, In xmax, In v) {
  if constexpr (std::is_same_v<In, uint8_t>)
    return t[size_t(255 - xmax) + v];
  else
    return t[uint8_t(int32_t(127) - xmax + v)];
}

/// One row of `d` codes: the sum of its entries in row order, then its
/// codes.
template <typename In, typename Out>
void oneRow(const In *xr, Out *yr, int64_t d, const std::vector<float> &t, float yScale, int yZero,
            std::vector<float> &e) {
  In xmax = *std::max_element(xr, xr + d);
  float sum = 0;
  for (int64_t i = 0; i < d; ++i)
    sum += e[size_t(i)] = entryOf(t, xmax, xr[i]);
  if (sum != 0)
    scaleRow(e.data(), yr, d, yScale, sum, yZero);
}

/// Eight rows at once, one per AVX2 lane: each lane sums its row's entries
/// in row order and scales them with the same IEEE operations as oneRow, so
/// the same bytes; `e` holds the entries interleaved (entry i of row j at
/// 8 i + j).
template <typename In, typename Out>
__attribute__((target("avx2"))) void eightRows(const In *x, Out *y, int64_t d,
                                               const std::vector<float> &t, float yScale, int yZero,
                                               std::vector<float> &e) {
  for (int j = 0; j < 8; ++j) {
    const In *xr = x + j * d;
    In xmax = *std::max_element(xr, xr + d);
    for (int64_t i = 0; i < d; ++i)
      e[size_t(8 * i + j)] = entryOf(t, xmax, xr[i]);
  }
  __m256 sum = _mm256_setzero_ps();
  for (int64_t i = 0; i < d; ++i)
    sum = _mm256_add_ps(sum, _mm256_loadu_ps(&e[size_t(8 * i)]));
  alignas(32) float sums[8];
  _mm256_store_ps(sums, sum);
  const __m256 ys = _mm256_set1_ps(yScale), magic = _mm256_set1_ps(12582912.f);
  alignas(32) int32_t q[8];
  for (int64_t i = 0; i < d; ++i) {
    __m256 v = _mm256_div_ps(_mm256_mul_ps(_mm256_loadu_ps(&e[size_t(8 * i)]), ys), sum);
    v = _mm256_sub_ps(_mm256_add_ps(v, magic), magic);
    _mm256_store_si256(reinterpret_cast<__m256i *>(q), _mm256_cvttps_epi32(v));
    for (int j = 0; j < 8; ++j)
      if (sums[j] != 0)
        y[j * d + i] = codeOf<Out>(q[j], yZero);
  }
}

/// Rows of `d` contiguous codes.
template <typename In, typename Out>
void rows(const In *x, Out *y, int64_t n, int64_t d, const std::vector<float> &t, float yScale,
          int yZero) {
  bool avx2 = simdLevel() >= SimdLevel::Avx2;
  parallelFor(n, 3 * d, [&](int64_t b0, int64_t b1) {
    std::vector<float> e(size_t(8 * d)); // table entries
    int64_t r = b0;
    for (; avx2 && r + 8 <= b1; r += 8)
      eightRows(x + r * d, y + r * d, d, t, yScale, yZero, e);
    for (; r < b1; ++r)
      oneRow(x + r * d, y + r * d, d, t, yScale, yZero, e);
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
