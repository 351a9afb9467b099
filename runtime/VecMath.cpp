//===- VecMath.cpp - exp and erf over arrays, 8 lanes at a time -----------===//
//
// exp: x = n ln2 + r with n = round(x / ln2) (ln2 in two parts, Cody and
// Waite), e^r by Cephes' degree-7 polynomial on |r| <= ln2 / 2, and 2^n as
// two factors 2^(n >> 1) 2^(n - (n >> 1)) so that n = 128 (just below
// ln(FLT_MAX)) still has a normal exponent.
//
// erf: N. Juffa's faithfully rounded single-precision erf (Stack Overflow
// question 35148198): an odd polynomial for |x| <= 0.921875, else
// 1 - e^-p(|x|) with p of degree 8; |x| is capped at 3.925, where erf rounds
// to 1.
//
// The scalar functions below define the results; the AVX2 loops do the same
// operations lane by lane (max_ps(a, b) is `a > b ? a : b` and min_ps(a, b)
// is `a < b ? a : b`, which is how NaN reaches the result in both).
//
//===----------------------------------------------------------------------===//
#include "runtime/VecMath.h"

#include "runtime/Simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>

using namespace tpcc::rt;

namespace {

constexpr float kExpLo = -87.33654475f; // ln(FLT_MIN)
constexpr float kExpHi = 88.72283905f;  // ln(FLT_MAX)
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kRound = 12582912.f; // 1.5 * 2^23: adding it rounds to an integer
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                            4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

constexpr float kErfSplit = 0.921875f, kErfCap = 3.925f;
constexpr float kErfSmall[6] = {-5.99104969e-4f, 4.99339588e-3f,  -2.67667342e-2f,
                                1.12818025e-1f,  -3.76124859e-1f, 1.28379151e-1f};
constexpr float kErfBig[7] = {1.72948930e-5f, -3.83208680e-4f, 3.88393435e-3f, -2.42545605e-2f,
                              1.06777847e-1f, 6.34846687e-1f,  1.28717512e-1f};

float maxps(float a, float b) { return a > b ? a : b; }
float minps(float a, float b) { return a < b ? a : b; }

float pow2(int32_t e) { // 2^e for e in [-126, 127]
  uint32_t bits = uint32_t(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// e^x for x in [kExpLo, kExpHi].
float expCore(float x) {
  float n = std::fma(x, kLog2e, kRound) - kRound;
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kExpP[0];
  for (int k = 1; k < 6; ++k)
    p = std::fma(p, r, kExpP[k]);
  float y = std::fma(p, r * r, r) + 1.f;
  int32_t ni = int32_t(n), half = ni >> 1;
  return y * pow2(half) * pow2(ni - half);
}

float expOne(float x) {
  if (std::isnan(x))
    return x + x;
  float y = expCore(minps(kExpHi, maxps(kExpLo, x)));
  if (x < kExpLo)
    return 0.f;
  return x > kExpHi ? std::numeric_limits<float>::infinity() : y;
}

float erfOne(float x) {
  float a = std::fabs(x), y;
  if (a > kErfSplit) {
    float t = minps(kErfCap, a), r = kErfBig[0];
    for (int k = 1; k < 7; ++k)
      r = std::fma(r, t, kErfBig[k]);
    r = std::fma(r, t, t);
    y = 1.f - expCore(-r);
  } else {
    float s = a * a, r = kErfSmall[0];
    for (int k = 1; k < 6; ++k)
      r = std::fma(r, s, kErfSmall[k]);
    y = std::fma(r, a, a); // NaN stays NaN here
  }
  return std::copysign(y, x);
}

float addLanes(const float *l) {
  return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

bool useAvx2() {
  static const bool fma = __builtin_cpu_supports("fma");
  return fma && simdLevel() >= SimdLevel::Avx2;
}

__attribute__((target("avx2,fma"))) __m256 expCore8(__m256 x) {
  __m256 round = _mm256_set1_ps(kRound);
  __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), round), round);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpP[0]);
  for (int k = 1; k < 6; ++k)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpP[k]));
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.f));
  __m256i ni = _mm256_cvtps_epi32(n), half = _mm256_srai_epi32(ni, 1);
  __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  __m256 s2 = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

__attribute__((target("avx2,fma"))) __m256 exp8(__m256 x) {
  __m256 lo = _mm256_set1_ps(kExpLo), hi = _mm256_set1_ps(kExpHi);
  __m256 y = expCore8(_mm256_min_ps(hi, _mm256_max_ps(lo, x)));
  y = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
  return _mm256_blendv_ps(y, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                          _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
}

/// Lanes [0, n) of 8 set, for loads and stores of a line's last n < 8 elements.
__attribute__((target("avx2"))) __m256i tailMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// y = f(x) over n floats, 8 at a time, the last ones through a mask.
template <__m256 (*F)(__m256)>
__attribute__((target("avx2,fma"))) void mapAvx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, F(_mm256_loadu_ps(x + i)));
  if (i < n) {
    __m256i m = tailMask(n - i);
    _mm256_maskstore_ps(y + i, m, F(_mm256_maskload_ps(x + i, m)));
  }
}

__attribute__((target("avx2,fma"))) float expShiftedSumAvx2(const float *x, float *y, int64_t n,
                                                            float shift) {
  __m256 acc = _mm256_setzero_ps(), s = _mm256_set1_ps(shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(y + i, v);
    acc = _mm256_add_ps(acc, v);
  }
  if (i < n) { // the last elements into lanes 0.. (i is a multiple of 8)
    __m256i m = tailMask(n - i);
    __m256 v = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), s));
    _mm256_maskstore_ps(y + i, m, v);
    acc = _mm256_add_ps(acc, _mm256_and_ps(v, _mm256_castsi256_ps(m)));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return addLanes(lanes);
}

__attribute__((target("avx2,fma"))) __m256 erf8(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  __m256 a = _mm256_andnot_ps(sign, v);
  __m256 s = _mm256_mul_ps(a, a), r = _mm256_set1_ps(kErfSmall[0]);
  for (int k = 1; k < 6; ++k)
    r = _mm256_fmadd_ps(r, s, _mm256_set1_ps(kErfSmall[k]));
  __m256 small = _mm256_fmadd_ps(r, a, a);
  __m256 t = _mm256_min_ps(_mm256_set1_ps(kErfCap), a);
  r = _mm256_set1_ps(kErfBig[0]);
  for (int k = 1; k < 7; ++k)
    r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(kErfBig[k]));
  r = _mm256_fmadd_ps(r, t, t);
  __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.f), expCore8(_mm256_xor_ps(r, sign)));
  __m256 e = _mm256_blendv_ps(small, big, _mm256_cmp_ps(a, _mm256_set1_ps(kErfSplit), _CMP_GT_OQ));
  return _mm256_or_ps(e, _mm256_and_ps(v, sign));
}

__attribute__((target("avx2"))) float maxOfAvx2(const float *x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 acc = ninf;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    acc = _mm256_max_ps(_mm256_loadu_ps(x + i), acc);
  if (i < n) {
    __m256i m = tailMask(n - i);
    acc = _mm256_max_ps(
        _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m)), acc);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float mx = lanes[0];
  for (int k = 1; k < 8; ++k)
    mx = maxps(lanes[k], mx);
  return mx;
}

__attribute__((target("avx2,fma"))) void softmaxRowsAvx2(const float *x, float *y, int64_t rows,
                                                         int64_t len) {
  for (int64_t r = 0; r < rows; ++r, x += len, y += len) {
    float sum = expShiftedSumAvx2(x, y, len, maxOfAvx2(x, len));
    __m256 inv = _mm256_set1_ps(1.f / sum);
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
      _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
    if (i < len) {
      __m256i m = tailMask(len - i);
      _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_maskload_ps(y + i, m), inv));
    }
  }
}

} // namespace

float vecmath::maxOf(const float *x, int64_t n) {
  if (useAvx2())
    return maxOfAvx2(x, n);
  float lanes[8];
  std::fill(lanes, lanes + 8, -std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < n; ++i)
    lanes[i % 8] = maxps(x[i], lanes[i % 8]);
  float mx = lanes[0];
  for (int k = 1; k < 8; ++k)
    mx = maxps(lanes[k], mx);
  return mx;
}

void vecmath::exp(const float *x, float *y, int64_t n) {
  if (useAvx2())
    return mapAvx2<exp8>(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = expOne(x[i]);
}

float vecmath::expShiftedSum(const float *x, float *y, int64_t n, float shift) {
  if (useAvx2())
    return expShiftedSumAvx2(x, y, n, shift);
  float lanes[8] = {};
  for (int64_t i = 0; i < n; ++i) {
    y[i] = expOne(x[i] - shift);
    lanes[i % 8] += y[i];
  }
  return addLanes(lanes);
}

void vecmath::softmaxRows(const float *x, float *y, int64_t rows, int64_t len) {
  if (useAvx2())
    return softmaxRowsAvx2(x, y, rows, len);
  for (int64_t r = 0; r < rows; ++r, x += len, y += len) {
    float inv = 1.f / expShiftedSum(x, y, len, maxOf(x, len));
    for (int64_t i = 0; i < len; ++i)
      y[i] *= inv;
  }
}

void vecmath::erf(const float *x, float *y, int64_t n) {
  if (useAvx2())
    return mapAvx2<erf8>(x, y, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = erfOne(x[i]);
}
