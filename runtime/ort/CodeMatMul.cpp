//===- CodeMatMul.cpp - A MatMul of two activations on their codes --------===//
#include "runtime/ort/CodeMatMul.h"

#include "runtime/KernelUtil.h"
#include "runtime/Simd.h"
#include "runtime/ops/MatmulShape.h"
#include "runtime/ort/IntegerPairs.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// DequantizeLinear `dq` of non-constant 8-bit codes with a scalar scale
/// and zero point: its scale and zero point.
bool codeOperand(const graph::Node *dq, float &scale, int32_t &zero) {
  if (!dq || !dq->input(0) || dq->input(0)->constant || dq->input(0)->isInitializer)
    return false;
  graph::ElemType e = dq->input(0)->type.elem;
  const graph::Tensor *s = scalarInput(*dq, 1), *z = dq->input(2) ? scalarInput(*dq, 2) : nullptr;
  if ((e != graph::ElemType::UInt8 && e != graph::ElemType::Int8) || !s ||
      s->elem != graph::ElemType::Float || (dq->input(2) && (!z || z->elem != e)))
    return false;
  scale = float(s->at(0));
  zero = z ? int32_t(z->at(0)) : 0;
  return scale > 0 && ortUnsignedCodes(*dq->input(0));
}

} // namespace

std::optional<CodeMatMul> rt::codeMatMulOf(const graph::Node &n) {
  if (n.opType != "MatMul" || !n.inDefaultDomain() || n.inputs.size() != 2 || n.outputs.empty() ||
      !n.outputs[0])
    return std::nullopt;
  CodeMatMul c;
  c.node = &n;
  float as = 0, bs = 0;
  const graph::Node *dqa = producerOf(n.input(0), "DequantizeLinear"),
                    *dqb = producerOf(n.input(1), "DequantizeLinear");
  if (!codeOperand(dqa, as, c.aZero) || !codeOperand(dqb, bs, c.bZero))
    return std::nullopt;
  c.a = dqa->input(0);
  c.b = dqb->input(0);
  const graph::Value *y = n.outputs[0];
  const graph::Node *q = y->uses.size() == 1 && !y->isGraphOutput ? y->uses[0].node : nullptr;
  if (q && q->opType == "QuantizeLinear" && q->inDefaultDomain() && q->input(0) == y &&
      !q->outputs.empty() && q->outputs[0]) {
    const graph::Tensor *s = scalarInput(*q, 1), *z = q->input(2) ? scalarInput(*q, 2) : nullptr;
    graph::ElemType e = z ? z->elem : graph::ElemType::UInt8;
    if (!s || s->elem != graph::ElemType::Float || (q->input(2) && !z) ||
        (e != graph::ElemType::UInt8 && e != graph::ElemType::Int8) ||
        !ortUnsignedCodes(*q->outputs[0]))
      return std::nullopt;
    c.q = q;
    c.yScale = float(s->at(0));
    c.yZero = z ? int32_t(z->at(0)) : 0;
    c.ySigned = e == graph::ElemType::Int8;
    c.multiplier = as * bs / c.yScale; // as ORT: (a_scale * b_scale) / y_scale
    return c;
  }
  if (!ortMatMulIntegerToFloat(n))
    return std::nullopt;
  c.multiplier = as * bs;
  return c;
}

namespace {

/// `n` codes minus `zero` as int16 (S8: the bytes are int8).
template <bool S8> void widenRow(const uint8_t *u, int64_t n, int32_t zero, int16_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = int16_t((S8 ? int32_t(int8_t(u[i])) : int32_t(u[i])) - zero);
}

void widenRow(const uint8_t *u, int64_t n, bool s8, int32_t zero, int16_t *out) {
  if (s8)
    widenRow<true>(u, n, zero, out);
  else
    widenRow<false>(u, n, zero, out);
}

/// A [m, k] (from element `off` of `t`) minus its zero point as int16 rows
/// of 2 * kp2 (zeros past k): each adjacent pair read as one int32.
void pairsOfA(const Tensor &t, int64_t off, int64_t m, int64_t k, int64_t kp2, int32_t zero,
              int16_t *out) {
  bool s8 = t.elem() == graph::ElemType::Int8;
  const uint8_t *u = static_cast<const uint8_t *>(t.raw()) + off;
  for (int64_t r = 0; r < m; ++r) {
    widenRow(u + r * k, k, s8, zero, out + r * 2 * kp2);
    std::fill(out + r * 2 * kp2 + k, out + (r + 1) * 2 * kp2, int16_t(0));
  }
}

/// B [k, n] minus its zero point as int16, rows 2p and 2p + 1 interleaved:
/// out[(p * np + col) * 2 + j] = b[2p + j][col] (zeros past k and n).
/// `row`: scratch of 2 * np.
void pairsOfB(const Tensor &t, int64_t off, int64_t k, int64_t n, int64_t kp2, int64_t np,
              int32_t zero, int16_t *row, int16_t *out) {
  bool s8 = t.elem() == graph::ElemType::Int8;
  const uint8_t *u = static_cast<const uint8_t *>(t.raw()) + off;
  int16_t *r0 = row, *r1 = row + np;
  std::fill(row, row + 2 * np, int16_t(0));
  for (int64_t p = 0; p < kp2; ++p) {
    widenRow(u + 2 * p * n, n, s8, zero, r0);
    if (2 * p + 1 < k)
      widenRow(u + (2 * p + 1) * n, n, s8, zero, r1);
    else
      std::fill(r1, r1 + n, int16_t(0));
    int16_t *o = out + p * np * 2;
    for (int64_t col = 0; col < np; ++col) {
      o[2 * col] = r0[col];
      o[2 * col + 1] = r1[col];
    }
  }
}

/// Pair p of row r of A (from pairsOfA) as one int32.
inline int32_t pairOf(const int16_t *ap, int64_t kp2, int64_t r, int64_t p) {
  int32_t v;
  std::memcpy(&v, ap + (r * kp2 + p) * 2, sizeof v);
  return v;
}

/// acc[r][col] = the exact int32 sum of row r of A with column col of B,
/// four columns at a time: PMADDWD adds the two products of a pair (each at
/// most 255 * 255) exactly.
void sumsSse2(const int16_t *ap, const int16_t *bp, int64_t m, int64_t kp2, int64_t np,
              int32_t *acc) {
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c0 = 0; c0 < np; c0 += 4) {
      __m128i sum = _mm_setzero_si128();
      for (int64_t p = 0; p < kp2; ++p)
        sum = _mm_add_epi32(sum, _mm_madd_epi16(_mm_set1_epi32(pairOf(ap, kp2, r, p)),
                                                _mm_loadu_si128(reinterpret_cast<const __m128i *>(
                                                    bp + (p * np + c0) * 2))));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(acc + r * np + c0), sum);
    }
}

/// sumsSse2 with AVX2, four rows by eight columns at a time (np a multiple
/// of 8): the same integers.
__attribute__((target("avx2"))) void sumsAvx2(const int16_t *ap, const int16_t *bp, int64_t m,
                                              int64_t kp2, int64_t np, int32_t *acc) {
  int64_t r = 0;
  for (; r + 4 <= m; r += 4)
    for (int64_t c0 = 0; c0 < np; c0 += 8) {
      __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t p = 0; p < kp2; ++p) {
        __m256i bv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bp + (p * np + c0) * 2));
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_set1_epi32(pairOf(ap, kp2, r, p)), bv));
        s1 = _mm256_add_epi32(s1,
                              _mm256_madd_epi16(_mm256_set1_epi32(pairOf(ap, kp2, r + 1, p)), bv));
        s2 = _mm256_add_epi32(s2,
                              _mm256_madd_epi16(_mm256_set1_epi32(pairOf(ap, kp2, r + 2, p)), bv));
        s3 = _mm256_add_epi32(s3,
                              _mm256_madd_epi16(_mm256_set1_epi32(pairOf(ap, kp2, r + 3, p)), bv));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + r * np + c0), s0);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + (r + 1) * np + c0), s1);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + (r + 2) * np + c0), s2);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + (r + 3) * np + c0), s3);
    }
  for (; r < m; ++r)
    for (int64_t c0 = 0; c0 < np; c0 += 8) {
      __m256i sum = _mm256_setzero_si256();
      for (int64_t p = 0; p < kp2; ++p)
        sum = _mm256_add_epi32(
            sum, _mm256_madd_epi16(_mm256_set1_epi32(pairOf(ap, kp2, r, p)),
                                   _mm256_loadu_si256(
                                       reinterpret_cast<const __m256i *>(bp + (p * np + c0) * 2))));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + r * np + c0), sum);
    }
}

/// The codes of `n` sums, as computeIntegerGroup requantizes them:
/// float(sum) * multiplier rounded half to even (SSE2's conversion in the
/// default rounding mode), plus the zero point, saturated to 8 bits by the
/// packs. `acc` may be read up to 15 entries past n.
void requantRow(const int32_t *acc, int64_t n, const CodeMatMul &c, uint8_t *out) {
  const __m128 mult = _mm_set1_ps(c.multiplier), lo = _mm_set1_ps(-1073741824.f),
               hi = _mm_set1_ps(1073741824.f);
  const __m128i zero = _mm_set1_epi32(c.yZero);
  for (int64_t i = 0; i < n; i += 16) {
    __m128i q[4];
    for (int v = 0; v < 4; ++v) {
      __m128 f = _mm_mul_ps(
          _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(acc + i + 4 * v))),
          mult);
      q[v] = _mm_add_epi32(_mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(f, lo), hi)), zero);
    }
    __m128i w0 = _mm_packs_epi32(q[0], q[1]), w1 = _mm_packs_epi32(q[2], q[3]);
    __m128i bytes = c.ySigned ? _mm_packs_epi16(w0, w1) : _mm_packus_epi16(w0, w1);
    if (i + 16 <= n) {
      _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), bytes);
    } else {
      alignas(16) uint8_t tail[16];
      _mm_store_si128(reinterpret_cast<__m128i *>(tail), bytes);
      std::memcpy(out + i, tail, size_t(n - i));
    }
  }
}

} // namespace

bool rt::runCodeMatMul(const CodeMatMul &c, const Tensor &a, const Tensor &b, Tensor &y,
                       std::string &err) {
  std::unique_ptr<NodeState> none;
  KernelContext ctx(*c.node, 13, none);
  MatmulShape s;
  if (!matmulShape(ctx, "MatMul", a.shape(), b.shape(), s)) {
    err = ctx.error;
    return false;
  }
  graph::ElemType out = !c.q        ? graph::ElemType::Float
                        : c.ySigned ? graph::ElemType::Int8
                                    : graph::ElemType::UInt8;
  y = Tensor(out, s.out);
  int64_t batches = numElements(s.batch), kp2 = (s.k + 1) / 2;
  if (y.numel() == 0)
    return true;
  BroadcastIndexer ai(s.aBatch, s.batch), bi(s.bBatch, s.batch);
  float *yf = c.q ? nullptr : y.data<float>();
  uint8_t *yb = c.q ? static_cast<uint8_t *>(y.raw()) : nullptr;
  bool avx2 = simdLevel() >= SimdLevel::Avx2;
  int64_t np = (s.n + 15) / 16 * 16; // requantRow reads 16 sums at a time
  parallelFor(batches, s.m * np * kp2, [&](int64_t b0, int64_t b1) {
    std::vector<int16_t> ap(size_t(s.m * kp2 * 2)), bp(size_t(kp2 * np * 2)), row(size_t(2 * np));
    std::vector<int32_t> acc(size_t(s.m * np));
    for (int64_t i = b0; i < b1; ++i) {
      pairsOfA(a, ai.offset(i) * s.m * s.k, s.m, s.k, kp2, c.aZero, ap.data());
      pairsOfB(b, bi.offset(i) * s.k * s.n, s.k, s.n, kp2, np, c.bZero, row.data(), bp.data());
      if (avx2)
        sumsAvx2(ap.data(), bp.data(), s.m, kp2, np, acc.data());
      else
        sumsSse2(ap.data(), bp.data(), s.m, kp2, np, acc.data());
      for (int64_t r = 0; r < s.m; ++r) {
        int64_t at = (i * s.m + r) * s.n;
        const int32_t *row = acc.data() + r * np;
        if (yf)
          for (int64_t col = 0; col < s.n; ++col)
            yf[at + col] = float(row[col]) * c.multiplier;
        else
          requantRow(row, s.n, c, yb + at);
      }
    }
  });
  return true;
}
