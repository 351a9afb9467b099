//===- VecMathTest.cpp - exp and erf against libm, and path against path --===//
#include "runtime/VecMath.h"
#include "runtime/Simd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tpcc;

namespace {

/// Distance in units in the last place between two finite floats.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0)
    ia = int32_t(0x80000000u) - ia;
  if (ib < 0)
    ib = int32_t(0x80000000u) - ib;
  return std::abs(int64_t(ia) - int64_t(ib));
}

/// Every 1009th float bit pattern from lo up to hi (both of one sign).
std::vector<float> sweep(float lo, float hi) {
  std::vector<float> v;
  uint32_t u;
  std::memcpy(&u, &lo, 4);
  bool negative = u >> 31; // bit patterns of negative floats grow toward -inf
  for (float x = lo; x < hi && (u >> 31) == uint32_t(negative);) {
    v.push_back(x);
    u = negative ? u - 1009 : u + 1009;
    std::memcpy(&x, &u, 4);
  }
  return v;
}

/// Runs f at the scalar level and at the machine's and checks the bits agree.
template <typename F> std::vector<float> bothPaths(const std::vector<float> &x, F f) {
  std::vector<float> scalar(x.size()), vec(x.size());
  rt::SimdLevel was = rt::limitSimd(rt::SimdLevel::Sse2);
  f(x.data(), scalar.data(), int64_t(x.size()));
  rt::limitSimd(was);
  f(x.data(), vec.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    if (std::memcmp(&scalar[i], &vec[i], 4) != 0 && !(std::isnan(scalar[i]) && std::isnan(vec[i])))
      ADD_FAILURE() << "paths differ at x = " << x[i] << ": " << scalar[i] << " vs " << vec[i];
  return vec;
}

} // namespace

TEST(VecMath, ExpWithinOneUlpOfLibm) {
  std::vector<float> x = sweep(-87.3f, 0.f), pos = sweep(0.f, 88.72f);
  x.insert(x.end(), pos.begin(), pos.end());
  std::vector<float> y = bothPaths(x, rt::vecmath::exp);
  int64_t worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, ulps(y[i], std::exp(x[i])));
  EXPECT_LE(worst, 1) << "over " << x.size() << " inputs";
}

TEST(VecMath, ExpEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f,  -0.f,  1.f,    -inf,    inf,           -88.f,  -1e30f, 88.8f,
                          89.f, 1e30f, 88.72f, -87.33f, std::nanf(""), 1e-30f, -1e-30f};
  std::vector<float> y = bothPaths(x, rt::vecmath::exp);
  EXPECT_EQ(y[0], 1.f);
  EXPECT_EQ(y[1], 1.f);
  EXPECT_LE(ulps(y[2], float(M_E)), 1);
  EXPECT_EQ(y[3], 0.f);
  EXPECT_EQ(y[4], inf);
  EXPECT_EQ(y[5], 0.f); // below ln(FLT_MIN): flushed
  EXPECT_EQ(y[6], 0.f);
  EXPECT_EQ(y[7], inf);
  EXPECT_EQ(y[8], inf);
  EXPECT_EQ(y[9], inf);
  EXPECT_LE(ulps(y[10], std::exp(88.72f)), 2);
  EXPECT_LE(ulps(y[11], std::exp(-87.33f)), 2);
  EXPECT_TRUE(std::isnan(y[12]));
  EXPECT_EQ(y[13], 1.f);
  EXPECT_EQ(y[14], 1.f);
}

TEST(VecMath, ExpShiftedSumAddsInLaneOrder) {
  for (int64_t n : {0, 1, 7, 8, 9, 50, 197}) {
    std::vector<float> x(static_cast<size_t>(n)), y(x.size()), want(x.size());
    for (int64_t i = 0; i < n; ++i)
      x[size_t(i)] = std::sin(float(i)) * 6.f;
    std::vector<float> shifted(x);
    for (float &v : shifted)
      v -= 2.5f;
    rt::vecmath::exp(shifted.data(), want.data(), n);
    float lanes[8] = {};
    for (int64_t i = 0; i < n; ++i)
      lanes[i % 8] += want[size_t(i)];
    float sum = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) +
                ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
    for (rt::SimdLevel level : {rt::SimdLevel::Sse2, rt::SimdLevel::Avx512Vbmi}) {
      rt::SimdLevel was = rt::limitSimd(level);
      float got = rt::vecmath::expShiftedSum(x.data(), y.data(), n, 2.5f);
      rt::limitSimd(was);
      EXPECT_EQ(got, sum) << "n = " << n;
      EXPECT_EQ(0, n ? std::memcmp(y.data(), want.data(), size_t(n) * 4) : 0) << "n = " << n;
    }
  }
}

TEST(VecMath, ErfWithinOneUlpOfLibm) {
  std::vector<float> x = sweep(-5.f, -1e-6f), pos = sweep(1e-6f, 5.f);
  x.insert(x.end(), pos.begin(), pos.end());
  std::vector<float> y = bothPaths(x, rt::vecmath::erf);
  int64_t worst = 0;
  float at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t u = ulps(y[i], std::erf(x[i]));
    if (u > worst)
      worst = u, at = x[i];
  }
  EXPECT_LE(worst, 1) << "at x = " << at << " over " << x.size() << " inputs";
}

TEST(VecMath, ErfEdges) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f,  -0.f,   inf,    -inf,          4.f,
                          -4.f, 3.925f, 1e-30f, std::nanf(""), 0.921875f};
  std::vector<float> y = bothPaths(x, rt::vecmath::erf);
  EXPECT_EQ(y[0], 0.f);
  EXPECT_TRUE(std::signbit(y[1]));
  EXPECT_EQ(y[2], 1.f);
  EXPECT_EQ(y[3], -1.f);
  EXPECT_EQ(y[4], 1.f);
  EXPECT_EQ(y[5], -1.f);
  EXPECT_EQ(y[6], 1.f);
  EXPECT_LE(ulps(y[7], std::erf(1e-30f)), 1);
  EXPECT_TRUE(std::isnan(y[8]));
  EXPECT_LE(ulps(y[9], std::erf(0.921875f)), 2);
}

TEST(VecMath, SoftmaxRowsIsMaxShiftedExpOverTheSum) {
  // Rows of 1, 7, 8, 9 and 50 (attention over 50 tokens): each row the
  // composition of maxOf, expShiftedSum and a product with 1 / sum, on both
  // paths with the same bits.
  for (int64_t len : {1, 7, 8, 9, 50}) {
    const int64_t rows = 5;
    std::vector<float> x(size_t(rows * len)), want(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(0.7f * float(i)) * 9.f - float(i % 3);
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = x.data() + r * len;
      float *out = want.data() + r * len;
      float inv = 1.f / rt::vecmath::expShiftedSum(row, out, len, rt::vecmath::maxOf(row, len));
      for (int64_t i = 0; i < len; ++i)
        out[i] *= inv;
    }
    std::vector<float> got = bothPaths(x, [&](const float *in, float *out, int64_t) {
      rt::vecmath::softmaxRows(in, out, rows, len);
    });
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * 4)) << "len " << len;
  }
}
