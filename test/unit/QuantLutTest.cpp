//===- QuantLutTest.cpp - LUT (k-means) quantization (docs/algorithms.md §1.4) -===//
#include "quant/core/grids/Lut.h"
#include "quant/core/grids/Threshold.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using ir::QuantMethod;

namespace {

/// n Laplace(0, b) quantiles in a fixed shuffled order (n a power of two).
std::vector<float> laplace(int n, double b) {
  std::vector<float> x(size_t(n), 0.0f);
  for (int i = 0; i < n; ++i) {
    double u = (double((int64_t(i) * 2654435761LL) % n) + 0.5) / n;
    double s = u < 0.5 ? -1.0 : 1.0;
    x[i] = float(-b * s * std::log(1 - 2 * std::abs(u - 0.5)));
  }
  return x;
}

} // namespace

TEST(QuantLut, KMeansFindsSeparatedClusters) {
  std::vector<double> v = {20.2, 0.0, 10.0, 0.1, 20.0, 10.1, 0.2, 10.2, 20.1};
  std::vector<double> c = kmeans1d(v, {}, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_NEAR(c[0], 0.1, 1e-12);
  EXPECT_NEAR(c[1], 10.1, 1e-12);
  EXPECT_NEAR(c[2], 20.1, 1e-12);
}

TEST(QuantLut, KMeansUsesWeights) {
  // Two clusters; the weights pull each centre to its heavy point, and a
  // zero weight removes a point entirely.
  std::vector<double> v = {0, 1, 10, 11, 100};
  std::vector<double> w = {3, 1, 1, 3, 0};
  std::vector<double> c = kmeans1d(v, w, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_NEAR(c[0], 0.25, 1e-12);
  EXPECT_NEAR(c[1], 10.75, 1e-12);
}

TEST(QuantLut, KMeansCapsKAtDistinctValues) {
  EXPECT_EQ(kmeans1d({1, 1, 2, 2, 2}, {}, 8), (std::vector<double>{1, 2}));
  EXPECT_TRUE(kmeans1d({}, {}, 4).empty());
}

TEST(QuantLut, KMeansBeatsEvenSpacingOnSkewedData) {
  // On Laplace data the k-means table has a lower squared error than evenly
  // spaced centres over the same range (what k-means is for).
  std::vector<float> x = laplace(4096, 1.0);
  std::vector<double> v(x.begin(), x.end());
  std::vector<double> c = kmeans1d(v, {}, 8);
  ASSERT_EQ(c.size(), 8u);
  auto sse = [&](const std::vector<double> &cs) {
    double s = 0;
    for (double a : v) {
      double best = INFINITY;
      for (double b : cs)
        best = std::min(best, (a - b) * (a - b));
      s += best;
    }
    return s;
  };
  double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  std::vector<double> even;
  for (int i = 0; i < 8; ++i)
    even.push_back(lo + (hi - lo) * (i + 0.5) / 8);
  EXPECT_LT(sse(c), 0.5 * sse(even));
}

TEST(QuantLut, WeightTableHasZeroAndFewValues) {
  std::vector<float> x = laplace(4096, 0.05);
  const double max = 0.41588830947875977; // max |x| (numpy)
  for (QuantMethod m : {QuantMethod::LutPot, QuantMethod::LutSym})
    for (int bits : {2, 3, 4}) {
      SCOPED_TRACE(std::string(ir::toString(m)) + std::to_string(bits));
      QuantGrid g = selectLutGrid(x.data(), int64_t(x.size()), m, bits, 8);
      EXPECT_EQ(g.method, m);
      EXPECT_LE(g.lut.size(), size_t(1) << bits);
      EXPECT_TRUE(std::binary_search(g.lut.begin(), g.lut.end(), int64_t(0)));
      EXPECT_TRUE(std::is_sorted(g.lut.begin(), g.lut.end()));
      EXPECT_EQ(std::adjacent_find(g.lut.begin(), g.lut.end()), g.lut.end());
      EXPECT_GE(g.lut.front(), -128);
      EXPECT_LE(g.lut.back(), 127);
      EXPECT_EQ(g.qmin, -128);
      EXPECT_EQ(g.qmax, 127);
      EXPECT_EQ(g.zeroPoint, 0);
      EXPECT_EQ(g.scale, g.threshold / 128);
      // t from no-clipping selection with the LUT bits' expansion factor.
      double mm = max * std::exp2(bits - 1) / (std::exp2(bits - 1) - 1);
      EXPECT_NEAR(g.threshold, m == QuantMethod::LutPot ? powerOfTwoCeil(mm) : mm, 1e-12);
      // The fake-quantized weights use at most 2^bits values, 0 among them.
      std::set<double> used;
      for (float v : x)
        used.insert(g.quantize(v));
      EXPECT_LE(used.size(), size_t(1) << bits);
      EXPECT_EQ(g.quantize(0.0), 0.0);
    }
}

TEST(QuantLut, ZeroIsAddedOrReplacesTheNearestCentre) {
  // 100 distinct positive values, 2 bits: four centres, none at 0; the table
  // is full, so the one nearest 0 becomes 0.
  std::vector<float> x;
  for (int i = 1; i <= 100; ++i)
    x.push_back(float(i));
  QuantGrid g = selectLutGrid(x.data(), int64_t(x.size()), QuantMethod::LutSym, 2, 8);
  ASSERT_EQ(g.lut.size(), 4u);
  EXPECT_EQ(g.lut.front(), 0);
  EXPECT_GT(g.lut[1], 20);
  // Three distinct values, 2 bits: k = 3 < 4, so a 0 entry is added.
  float few[] = {0.5f, 0.75f, 1.0f, 1.0f};
  QuantGrid f = selectLutGrid(few, 4, QuantMethod::LutSym, 2, 8);
  // t = M = 1.0 * 2/1: v = x / 2 * 128 = 32, 48, 64.
  EXPECT_EQ(f.lut, (std::vector<int64_t>{0, 32, 48, 64}));
}

TEST(QuantLut, Deterministic) {
  std::vector<float> x = laplace(8192, 0.1);
  QuantGrid a = selectLutGrid(x.data(), int64_t(x.size()), QuantMethod::LutPot, 4, 8);
  QuantGrid b = selectLutGrid(x.data(), int64_t(x.size()), QuantMethod::LutPot, 4, 8);
  EXPECT_EQ(a.lut, b.lut);
  EXPECT_EQ(a.threshold, b.threshold);
  std::vector<double> v(x.begin(), x.end());
  EXPECT_EQ(kmeans1d(v, {}, 16), kmeans1d(v, {}, 16));
}

TEST(QuantLut, ActivationTable) {
  // Unsigned histogram on [0, 3]: t = POT of the largest upper edge = 4,
  // scale 4/256, the table on the unsigned 8-bit grid.
  Histogram h;
  for (int i = 0; i <= 300; ++i)
    h.edges.push_back(i / 100.0);
  for (int i = 0; i < 300; ++i)
    h.counts.push_back(std::floor(100 * std::exp(-i / 50.0)));
  QuantGrid g = selectLutActivationGrid(h, QuantMethod::LutPot, 3, 8, false);
  EXPECT_EQ(g.threshold, 4.0);
  EXPECT_EQ(g.scale, 4.0 / 256);
  EXPECT_EQ(g.qmin, 0);
  EXPECT_EQ(g.qmax, 255);
  EXPECT_LE(g.lut.size(), 8u);
  EXPECT_GE(g.lut.size(), 4u);
  EXPECT_GE(g.lut.front(), 0);
  // selectActivationGrid dispatches LUT methods here.
  QuantGrid d = selectActivationGrid(h, QuantMethod::LutPot, 3, false, SelectionOptions());
  EXPECT_EQ(d.lut, g.lut);
}
