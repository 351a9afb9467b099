//===- QuantHistogramTest.cpp - Activation statistics (docs/algorithms.md §3) -===//
#include "quant/core/stats/Histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace tpcc::quant;

namespace {

/// n Laplace(0, b) quantiles shifted by `mu`, in a fixed shuffled order.
std::vector<float> laplace(int n, double b, double mu) {
  std::vector<float> x(size_t(n), 0.0f);
  for (int i = 0; i < n; ++i) {
    double u = (double((int64_t(i) * 2654435761LL) % n) + 0.5) / n;
    double s = u < 0.5 ? -1.0 : 1.0;
    x[i] = float(mu - b * s * std::log(1 - 2 * std::abs(u - 0.5)));
  }
  return x;
}

/// The largest difference of the cumulative counts of two histograms on the
/// same edges.
double maxCdfGap(const Histogram &a, const Histogram &b) {
  double ca = 0, cb = 0, gap = 0;
  for (size_t i = 0; i < a.counts.size(); ++i) {
    ca += a.counts[i];
    cb += b.counts[i];
    gap = std::max(gap, std::abs(ca - cb));
  }
  return gap;
}

double maxCount(const Histogram &h) { return *std::max_element(h.counts.begin(), h.counts.end()); }

} // namespace

TEST(QuantHistogram, BinsAsNumpy) {
  // numpy.histogram([0, 1, 2, 3, 4], bins=4): the last bin is closed.
  float x[] = {0, 1, 2, 3, 4};
  Histogram h = Histogram::of(x, 5, 4);
  EXPECT_EQ(h.edges, (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(h.counts, (std::vector<double>{1, 1, 1, 2}));
  EXPECT_EQ(h.total(), 5);
  EXPECT_EQ(h.minNonEmpty(), 0);
  EXPECT_EQ(h.maxNonEmpty(), 4);
}

TEST(QuantHistogram, ConstantTensorGetsOneBin) {
  // numpy widens [2, 2] to [1.5, 2.5]; the value lands in bin 1024.
  float x[] = {2, 2, 2};
  Histogram h = Histogram::of(x, 3);
  ASSERT_EQ(h.counts.size(), size_t(kHistogramBins));
  EXPECT_EQ(h.edges.front(), 1.5);
  EXPECT_EQ(h.edges.back(), 2.5);
  EXPECT_EQ(h.counts[1024], 3);
  EXPECT_EQ(h.total(), 3);
  EXPECT_EQ(h.minNonEmpty(), 2.0);
}

TEST(QuantHistogram, RebinInterpolatesCumulativeCounts) {
  // cdf at the new edges 0, 0.5, 1.5, 3: 0, 2, 4 + 4, 12 (constant past the end).
  Histogram h;
  h.edges = {0, 1, 2};
  h.counts = {4, 8};
  EXPECT_EQ(Histogram::rebin(h, {0, 0.5, 1.5, 3}), (std::vector<double>{2, 6, 4}));
  // Edges before the first are empty.
  EXPECT_EQ(Histogram::rebin(h, {-2, -1, 0, 1}), (std::vector<double>{0, 0, 4}));
}

TEST(QuantHistogram, MergeConservesCountsAndMatchesOneHistogram) {
  std::vector<float> a = laplace(5000, 0.5, 0.0), b = laplace(3000, 1.0, 2.0);
  Histogram ha = Histogram::of(a.data(), int64_t(a.size()));
  Histogram hb = Histogram::of(b.data(), int64_t(b.size()));
  Histogram m = Histogram::merge({ha, hb});
  std::vector<float> all = a;
  all.insert(all.end(), b.begin(), b.end());
  Histogram one = Histogram::of(all.data(), int64_t(all.size()));
  EXPECT_NEAR(m.total(), 8000, 1e-9);
  // The merged edges span the global range, as one histogram of all data.
  ASSERT_EQ(m.edges.size(), one.edges.size());
  EXPECT_EQ(m.edges.front(), one.edges.front());
  EXPECT_EQ(m.edges.back(), one.edges.back());
  // Interpolating a batch's cdf inside one of its bins errs by at most that
  // bin's count: the merged cdf stays within the batches' largest bins.
  double gap = maxCdfGap(m, one);
  EXPECT_LE(gap, maxCount(ha) + maxCount(hb));
  EXPECT_GT(gap, 0); // interpolation, not a copy
}

TEST(QuantHistogram, RemovesOutliersByZScore) {
  // Lower edges 0..4 hold 100 each, edge 9 holds 1: mu = 2.01397, sigma =
  // 1.44693 (numpy); edge 9 has z = 4.83, edge 4 has z = 1.37.
  Histogram h;
  for (int i = 0; i <= 10; ++i)
    h.edges.push_back(i);
  h.counts = {100, 100, 100, 100, 100, 0, 0, 0, 0, 1};
  Histogram keep = h;
  keep.removeOutliers(5.0);
  EXPECT_EQ(keep.counts, h.counts);
  keep.removeOutliers(INFINITY);
  EXPECT_EQ(keep.counts, h.counts);
  h.removeOutliers(3.0);
  EXPECT_EQ(h.counts[9], 0);
  EXPECT_EQ(h.counts[4], 100);
  EXPECT_EQ(h.total(), 500);
  EXPECT_EQ(h.maxNonEmpty(), 5);
  h.removeOutliers(1.0); // edges 0 and 4 (z = 1.414) go too
  EXPECT_EQ(h.counts, (std::vector<double>{0, 100, 100, 100, 0, 0, 0, 0, 0, 0}));
}

TEST(QuantHistogram, TensorStatsChannels) {
  // Shape [N, 3, 2], channel axis 1. Batch 1 (N=1) and batch 2 (N=2) differ
  // in size: the channel mean is the average of the two batch means, not
  // the pooled mean.
  TensorStats s(1);
  float b1[] = {1, 2, /**/ -1, -3, /**/ 10, 10};
  float b2[] = {5, 5, /**/ 0, 0, /**/ 0, 4, //
                3, 3, /**/ 0, 8, /**/ 2, 2};
  s.add(b1, {1, 3, 2});
  s.add(b2, {2, 3, 2});
  EXPECT_EQ(s.batches(), 2);
  EXPECT_EQ(s.min(), -3);
  EXPECT_EQ(s.max(), 10);
  EXPECT_EQ(s.channelMin(), (std::vector<double>{1, -3, 0}));
  EXPECT_EQ(s.channelMax(), (std::vector<double>{5, 8, 10}));
  // Channel 0: (1.5 + 4) / 2; channel 1: (-2 + 2) / 2; channel 2: (10 + 2) / 2.
  EXPECT_EQ(s.channelMean(), (std::vector<double>{2.75, 0, 6}));
  EXPECT_EQ(s.histogram().total(), 18);
  TensorStats none;
  none.add(b1, {1, 3, 2});
  EXPECT_TRUE(none.channelMin().empty());
  EXPECT_TRUE(none.channelMean().empty());
}

TEST(QuantHistogram, TensorStatsFoldsManyBatches) {
  // 100 batches (folded every 32) keep every count and stay close to one
  // merge of all batch histograms.
  TensorStats s;
  std::vector<Histogram> all;
  double bound = 0;
  for (int i = 0; i < 100; ++i) {
    std::vector<float> x = laplace(400, 0.2 + 0.01 * i, 0.05 * i);
    s.add(x.data(), {4, 100});
    all.push_back(Histogram::of(x.data(), int64_t(x.size())));
    bound += maxCount(all.back());
  }
  const Histogram &h = s.histogram();
  EXPECT_NEAR(h.total(), 40000, 1e-6);
  Histogram once = Histogram::merge(all);
  ASSERT_EQ(h.edges, once.edges);
  EXPECT_LE(maxCdfGap(h, once), bound);
  // Asking again changes nothing.
  EXPECT_EQ(s.histogram().counts, h.counts);
}

TEST(QuantHistogram, FewBatchesMergeExactlyOnce) {
  // Up to 32 batches the statistics are one merge of the batch histograms.
  TensorStats s;
  std::vector<Histogram> all;
  for (int i = 0; i < 32; ++i) {
    std::vector<float> x = laplace(300, 1.0, 0.1 * i);
    s.add(x.data(), {300});
    all.push_back(Histogram::of(x.data(), int64_t(x.size())));
  }
  Histogram once = Histogram::merge(all);
  EXPECT_EQ(s.histogram().edges, once.edges);
  EXPECT_EQ(s.histogram().counts, once.counts);
}

TEST(QuantHistogram, LargeBatchCountsAsNumpy) {
  // 320000 values (ReLU'd Laplace: half of them zeros in one bin) are counted
  // in parallel chunks; every count, the range and the channel statistics
  // equal a plain serial pass with numpy's rule (bin i holds
  // edges[i] <= v < edges[i + 1], the last bin closed).
  std::vector<float> x = laplace(320000, 0.7, 0.1);
  for (float &v : x)
    v = std::max(v, 0.0f);
  TensorStats s(1);
  s.add(x.data(), {2, 8, 20000});
  const Histogram &h = s.histogram();
  auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  EXPECT_EQ(s.min(), *lo);
  EXPECT_EQ(s.max(), *hi);
  ASSERT_EQ(h.edges.size(), size_t(kHistogramBins) + 1);
  EXPECT_EQ(h.edges.front(), double(*lo));
  EXPECT_EQ(h.edges.back(), double(*hi));
  std::vector<double> counts(size_t(kHistogramBins), 0.0);
  for (float v : x) {
    size_t k =
        size_t(std::upper_bound(h.edges.begin(), h.edges.end(), double(v)) - h.edges.begin()) - 1;
    ++counts[std::min(k, size_t(kHistogramBins) - 1)];
  }
  EXPECT_EQ(h.counts, counts);
  std::vector<double> cmin(8, 1e30), cmax(8, -1e30);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t c = (i / 20000) % 8;
    cmin[c] = std::min(cmin[c], double(x[i]));
    cmax[c] = std::max(cmax[c], double(x[i]));
  }
  EXPECT_EQ(s.channelMin(), cmin);
  EXPECT_EQ(s.channelMax(), cmax);
}

// Attention masks: -FLT_MAX, -inf, NaN and anything of magnitude 1e9 or more are
// counted and left out; the statistics are the other values'. A batch that holds any
// adds no per-channel statistics (their layout is gone), and one that holds nothing else
// adds no batch at all.
TEST(QuantHistogram, MaskValuesAreCountedAndLeftOut) {
  const float lowest = -std::numeric_limits<float>::max();
  const float inf = std::numeric_limits<float>::infinity();
  TensorStats s(1);
  std::vector<float> clean = {0.5f, -1.f, 2.f, 0.f, 1.5f, -0.5f};
  s.add(clean.data(), {1, 2, 3});
  std::vector<float> masked = {0.25f, lowest, 3.f, -inf, -1e9f, -2.f};
  s.add(masked.data(), {1, 2, 3});
  EXPECT_EQ(s.masks().n, 3);
  EXPECT_EQ(s.masks().example, -inf);
  EXPECT_EQ(s.min(), -2.0);
  EXPECT_EQ(s.max(), 3.0);
  EXPECT_EQ(s.batches(), 2);
  EXPECT_EQ(s.histogram().total(), 9.0); // 6 + the 3 values that are not masks
  EXPECT_EQ(s.channelMin(), (std::vector<double>{-1.0, -0.5})); // the clean batch only
  std::vector<float> nan = {std::nanf(""), lowest};
  s.add(nan.data(), {1, 2, 1});
  EXPECT_EQ(s.masks().n, 5);
  EXPECT_TRUE(std::isnan(s.masks().example));
  EXPECT_EQ(s.batches(), 2);
  // Just below the mask magnitude is an ordinary value.
  TensorStats big;
  std::vector<float> large = {-9.9e8f, 1.f};
  big.add(large.data(), {2});
  EXPECT_EQ(big.masks().n, 0);
  EXPECT_EQ(big.min(), double(-9.9e8f));
}
