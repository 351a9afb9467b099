//===- QuantThresholdTest.cpp - Threshold selection (docs/algorithms.md §2) ---===//
//
// Expected thresholds come from a one-off numpy transcription of MCT 2.2.2's
// searches (qparams_search.py, error_functions.py, quantizers_helpers.py) in
// float64, run on the same inputs as here (the Laplace sample and the
// histogram built below); only the numbers are pasted.
//
//===----------------------------------------------------------------------===//
#include "quant/core/grids/Threshold.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using ir::QuantMethod;
using ir::ThresholdMethod;

namespace {

/// 4096 Laplace(0, 0.05) quantiles in a fixed shuffled order (float32): a
/// heavy-tailed weight tensor. numpy: min/max -/+0.41588830947875977.
std::vector<float> laplaceWeights() {
  const int n = 4096;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) {
    double u = (double((int64_t(i) * 2654435761LL) % n) + 0.5) / n;
    double s = u < 0.5 ? -1.0 : 1.0;
    x[i] = float(-0.05 * s * std::log(1 - 2 * std::abs(u - 0.5)));
  }
  return x;
}

/// 2048 bins on [-3, 5], counts floor(1000 exp(-2 |e - 0.5|)) at lower edge e:
/// a skewed, heavy-tailed activation histogram (254874 counts; the bins past
/// 3.95703125 are empty).
Histogram laplaceHistogram() {
  Histogram h;
  const int bins = 2048;
  for (int i = 0; i < bins; ++i)
    h.edges.push_back(double(i) * (8.0 / bins) + -3.0);
  h.edges.push_back(5.0);
  for (int i = 0; i < bins; ++i)
    h.counts.push_back(std::floor(1000.0 * std::exp(-std::abs(h.edges[i] - 0.5) * 2.0)));
  return h;
}

SelectionOptions opts(ThresholdMethod m, double p = 2) {
  SelectionOptions o;
  o.error = m;
  o.p = p;
  return o;
}

constexpr double kRel = 1e-9;

} // namespace

TEST(QuantThreshold, HistogramErrorsOnKnownCase) {
  // 10 bins on [0, 1]; t = 0.6, 2 bits unsigned: scale 0.15, lower edges
  // quantize to 0, .15, .15, .3, .45, .45, ... numpy: MSE 0.06604838709677423,
  // KL (range [0, 0.6]) 0.7793200829935242.
  Histogram h;
  for (int i = 0; i <= 10; ++i)
    h.edges.push_back(i / 10.0);
  h.counts = {5, 0, 3, 7, 1, 0, 0, 2, 9, 4};
  QuantGrid g = symmetricGrid(0.6, 2, false);
  EXPECT_NEAR(histogramError(h, g, opts(ThresholdMethod::MSE)), 0.06604838709677423, 1e-15);
  EXPECT_NEAR(histogramError(h, g, opts(ThresholdMethod::KL)), 0.7793200829935242, 1e-12);
  // MAE and LP by hand: |q(e) - e| per lower edge, weighted by counts.
  double mae = 0, l3 = 0, n = 31;
  for (int i = 0; i < 10; ++i) {
    double d = std::abs(g.quantize(h.edges[i]) - h.edges[i]);
    mae += h.counts[i] * d;
    l3 += h.counts[i] * d * d * d;
  }
  EXPECT_NEAR(histogramError(h, g, opts(ThresholdMethod::MAE)), mae / n, 1e-15);
  EXPECT_NEAR(histogramError(h, g, opts(ThresholdMethod::LP, 3)), l3 / n, 1e-15);
}

TEST(QuantThreshold, ValuesErrors) {
  // Scale 0.25 on [-1, 0.75]: 0.1 -> 0, -0.7 -> -0.75, 0.33 -> 0.25, 2 -> 0.75.
  float x[] = {0.1f, -0.7f, 0.33f, 2.0f};
  double q[] = {0, -0.75, 0.25, 0.75};
  QuantGrid g = symmetricGrid(1.0, 3, true);
  double mse = 0, mae = 0;
  for (int i = 0; i < 4; ++i) {
    double d = double(x[i]) - q[i];
    mse += d * d;
    mae += std::abs(d);
  }
  EXPECT_NEAR(valuesError(x, 4, g, opts(ThresholdMethod::MSE)), mse / 4, 1e-15);
  EXPECT_NEAR(valuesError(x, 4, g, opts(ThresholdMethod::MAE)), mae / 4, 1e-15);
  EXPECT_NEAR(valuesError(x, 4, g, opts(ThresholdMethod::LP, 2)), mse / 4, 1e-15);
}

TEST(QuantThreshold, ActivationSearchesMatchReference) {
  Histogram h = laplaceHistogram();
  auto sym = [&](ThresholdMethod m, double p = 2) {
    return selectActivationGrid(h, QuantMethod::Symmetric, 8, true, opts(m, p)).threshold;
  };
  EXPECT_NEAR(sym(ThresholdMethod::MSE), 3.786524178660352, 3.79 * kRel);
  EXPECT_NEAR(sym(ThresholdMethod::MAE), 3.099399803490068, 3.1 * kRel);
  EXPECT_NEAR(sym(ThresholdMethod::LP, 3), 3.894131750645956, 3.9 * kRel);
  EXPECT_NEAR(sym(ThresholdMethod::KL), 3.9979660560344823, 4 * kRel);
  // The largest |upper edge| of non-empty bins (the tail past 3.957 is empty).
  EXPECT_EQ(sym(ThresholdMethod::NoClipping), 3.95703125);
  QuantGrid pot =
      selectActivationGrid(h, QuantMethod::PowerOfTwo, 8, true, opts(ThresholdMethod::MSE));
  EXPECT_EQ(pot.threshold, 4.0);
  // KL over POT candidates: in MCT a range inside one bin scores 0, so its
  // search lands on 2^-9 (bins are 2^-8 wide). Ranges narrower than one bin
  // per grid level are refused here, so KL picks a threshold near MSE's.
  EXPECT_EQ(selectActivationGrid(h, QuantMethod::PowerOfTwo, 8, true, opts(ThresholdMethod::KL))
                .threshold,
            4.0);
  // Uniform: numpy's best range [-2.8414992800594767, 3.8074586914024464],
  // made zero-exact: [-2.842103603487646, 3.8068543679742777].
  QuantGrid u = selectActivationGrid(h, QuantMethod::Uniform, 8, true, opts(ThresholdMethod::MSE));
  EXPECT_NEAR(u.lo, -2.842103603487646, 3 * kRel);
  EXPECT_NEAR(u.hi, 3.8068543679742777, 4 * kRel);
  EXPECT_EQ(u.quantize(0.0), 0.0);
}

TEST(QuantThreshold, WeightSearchesMatchReference) {
  std::vector<float> w = laplaceWeights();
  const int64_t n = int64_t(w.size());
  auto sel = [&](QuantMethod q, int bits, bool perChannel, ThresholdMethod m) {
    return selectWeightGrid(w.data(), n, q, bits, perChannel, opts(m));
  };
  // No clipping: M = max(-min, max * 128/127) = 0.4191630205770177.
  EXPECT_NEAR(sel(QuantMethod::Symmetric, 8, false, ThresholdMethod::NoClipping).threshold,
              0.4191630205770177, 1e-15);
  EXPECT_EQ(sel(QuantMethod::PowerOfTwo, 8, false, ThresholdMethod::NoClipping).threshold, 0.5);
  EXPECT_NEAR(sel(QuantMethod::Symmetric, 8, false, ThresholdMethod::MSE).threshold,
              0.4128130920095803, kRel);
  EXPECT_NEAR(sel(QuantMethod::Symmetric, 8, true, ThresholdMethod::MSE).threshold,
              0.4127661421117595, kRel);
  EXPECT_NEAR(sel(QuantMethod::Symmetric, 4, false, ThresholdMethod::MSE).threshold,
              0.2632769494762679, kRel); // M with the 4-bit factor 8/7
  EXPECT_NEAR(sel(QuantMethod::Symmetric, 8, false, ThresholdMethod::KL).threshold,
              0.4324512191139208, kRel);
  EXPECT_EQ(sel(QuantMethod::PowerOfTwo, 8, false, ThresholdMethod::MSE).threshold, 0.5);
  EXPECT_EQ(sel(QuantMethod::PowerOfTwo, 4, false, ThresholdMethod::MSE).threshold, 0.25);
  QuantGrid u = sel(QuantMethod::Uniform, 8, true, ThresholdMethod::MSE);
  // numpy's best range: +-0.4099470479147775 (before the zero shift).
  QuantGrid ref = uniformGrid(-0.4099470479147775, 0.4099470479147775, 8);
  EXPECT_NEAR(u.lo, ref.lo, kRel);
  EXPECT_NEAR(u.hi, ref.hi, kRel);
}

TEST(QuantThreshold, HeavyTailsAreClipped) {
  // 4-bit weights of a Laplace sample: every error method clips below the
  // no-clipping threshold; no_clipping keeps it.
  std::vector<float> w = laplaceWeights();
  const int64_t n = int64_t(w.size());
  double m = selectWeightGrid(w.data(), n, QuantMethod::Symmetric, 4, false,
                              opts(ThresholdMethod::NoClipping))
                 .threshold;
  EXPECT_NEAR(m, 0.41588830947875977 * 8 / 7, 1e-12); // 4 bits: max * 8/7
  for (ThresholdMethod e :
       {ThresholdMethod::MSE, ThresholdMethod::MAE, ThresholdMethod::LP, ThresholdMethod::KL}) {
    SCOPED_TRACE(ir::toString(e));
    double t =
        selectWeightGrid(w.data(), n, QuantMethod::Symmetric, 4, false, opts(e, 3)).threshold;
    EXPECT_LT(t, 0.41588830947875977);
    EXPECT_GT(t, 0.05);
  }
  Histogram h = laplaceHistogram();
  for (ThresholdMethod e :
       {ThresholdMethod::MSE, ThresholdMethod::MAE, ThresholdMethod::LP, ThresholdMethod::KL}) {
    SCOPED_TRACE(ir::toString(e));
    double t = selectActivationGrid(h, QuantMethod::Symmetric, 8, true, opts(e, 3)).threshold;
    EXPECT_LT(t, 5.0);
    EXPECT_GT(t, 2.0);
  }
}

TEST(QuantThreshold, MseSearchNeverWorseThanNoClipping) {
  std::vector<float> w = laplaceWeights();
  const int64_t n = int64_t(w.size());
  SelectionOptions mse = opts(ThresholdMethod::MSE);
  for (QuantMethod q : {QuantMethod::Symmetric, QuantMethod::PowerOfTwo, QuantMethod::Uniform})
    for (int bits : {2, 4, 8}) {
      SCOPED_TRACE(std::string(ir::toString(q)) + std::to_string(bits));
      QuantGrid nc =
          selectWeightGrid(w.data(), n, q, bits, true, opts(ThresholdMethod::NoClipping));
      QuantGrid s = selectWeightGrid(w.data(), n, q, bits, true, mse);
      EXPECT_LE(valuesError(w.data(), n, s, mse), valuesError(w.data(), n, nc, mse));
    }
  Histogram h = laplaceHistogram();
  for (QuantMethod q : {QuantMethod::Symmetric, QuantMethod::PowerOfTwo, QuantMethod::Uniform}) {
    SCOPED_TRACE(ir::toString(q));
    QuantGrid nc = selectActivationGrid(h, q, 8, true, opts(ThresholdMethod::NoClipping));
    QuantGrid s = selectActivationGrid(h, q, 8, true, mse);
    EXPECT_LE(histogramError(h, s, mse), histogramError(h, nc, mse));
  }
}

TEST(QuantThreshold, IterationCounts) {
  // On these inputs the stop rule never fires (checked against numpy), so
  // the searches run their full schedules: symmetric 40 iterations per
  // tensor, 15 per channel, 20 for activations, 30 candidates each; uniform
  // 30 / 10 iterations of 64 candidates, 30 of 144 for activations; POT 10
  // and 20 candidates.
  std::vector<float> w = laplaceWeights();
  const int64_t n = int64_t(w.size());
  Histogram h = laplaceHistogram();
  SearchTrace tr;
  SelectionOptions o = opts(ThresholdMethod::MSE);
  o.trace = &tr;
  auto check = [&](int iterations, int evaluations) {
    EXPECT_EQ(tr.iterations, iterations);
    EXPECT_EQ(tr.evaluations, evaluations);
  };
  selectWeightGrid(w.data(), n, QuantMethod::Symmetric, 8, false, o);
  check(40, 1 + 40 * 30);
  selectWeightGrid(w.data(), n, QuantMethod::Symmetric, 8, true, o);
  check(15, 1 + 15 * 30);
  selectActivationGrid(h, QuantMethod::Symmetric, 8, true, o);
  check(20, 1 + 20 * 30);
  selectWeightGrid(w.data(), n, QuantMethod::Uniform, 8, true, o);
  check(10, 1 + 10 * 64);
  selectWeightGrid(w.data(), n, QuantMethod::Uniform, 8, false, o);
  EXPECT_LE(tr.iterations, 30);
  EXPECT_EQ(tr.evaluations, 1 + tr.iterations * 64);
  selectActivationGrid(h, QuantMethod::Uniform, 8, true, o);
  EXPECT_LE(tr.iterations, 30);
  EXPECT_EQ(tr.evaluations, 1 + tr.iterations * 144);
  selectWeightGrid(w.data(), n, QuantMethod::PowerOfTwo, 8, false, o);
  check(0, 10);
  selectActivationGrid(h, QuantMethod::PowerOfTwo, 8, true, o);
  check(0, 20);
  o.error = ThresholdMethod::NoClipping;
  selectWeightGrid(w.data(), n, QuantMethod::Symmetric, 8, false, o);
  check(0, 0);
}

TEST(QuantThreshold, NoClippingAndFloors) {
  // Weights: M = max(-min, max * 2^(n-1) / (2^(n-1) - 1)); the largest
  // positive value lands on t - scale.
  float x[] = {-0.5f, 1.0f, 0.25f};
  SelectionOptions nc = opts(ThresholdMethod::NoClipping);
  QuantGrid g = selectWeightGrid(x, 3, QuantMethod::Symmetric, 8, false, nc);
  EXPECT_DOUBLE_EQ(g.threshold, 128.0 / 127);
  EXPECT_DOUBLE_EQ(g.quantize(1.0), 1.0);
  EXPECT_DOUBLE_EQ(selectWeightGrid(x, 3, QuantMethod::Symmetric, 2, false, nc).threshold, 2.0);
  float neg[] = {-3.0f, 1.0f};
  EXPECT_EQ(selectWeightGrid(neg, 2, QuantMethod::Symmetric, 8, false, nc).threshold, 3.0);
  EXPECT_EQ(selectWeightGrid(neg, 2, QuantMethod::PowerOfTwo, 8, false, nc).threshold, 4.0);
  QuantGrid u = selectWeightGrid(neg, 2, QuantMethod::Uniform, 8, false, nc);
  EXPECT_EQ(u.quantize(0.0), 0.0);
  EXPECT_NEAR(u.hi - u.lo, 4.0, 1e-12);
  // All zeros: thresholds are floored at 2^-16. The POT search starts one
  // power above (2 * 2^-16) and every candidate scores 0, so the first wins.
  float zeros[] = {0, 0, 0, 0};
  for (ThresholdMethod e : {ThresholdMethod::NoClipping, ThresholdMethod::MSE})
    EXPECT_EQ(selectWeightGrid(zeros, 4, QuantMethod::Symmetric, 8, false, opts(e)).threshold,
              1.0 / 65536);
  EXPECT_EQ(selectWeightGrid(zeros, 4, QuantMethod::PowerOfTwo, 8, true, nc).threshold,
            1.0 / 65536);
  EXPECT_EQ(selectWeightGrid(zeros, 4, QuantMethod::PowerOfTwo, 8, true, opts(ThresholdMethod::MSE))
                .threshold,
            2.0 / 65536);
  SelectionOptions floor = opts(ThresholdMethod::MSE);
  floor.minThreshold = 0.125;
  float tiny[] = {0.01f, -0.02f};
  EXPECT_EQ(selectWeightGrid(tiny, 2, QuantMethod::Symmetric, 8, false, floor).threshold, 0.125);
  // Activations: the largest |upper edge| of non-empty bins (POT: rounded up);
  // uniform [lowest lower edge, highest upper edge].
  Histogram h;
  h.edges = {-1, 0, 1, 2, 3};
  h.counts = {0, 4, 2, 0};
  EXPECT_EQ(selectActivationGrid(h, QuantMethod::Symmetric, 8, false, nc).threshold, 2.0);
  EXPECT_EQ(selectActivationGrid(h, QuantMethod::PowerOfTwo, 8, false, nc).threshold, 2.0);
  QuantGrid ua = selectActivationGrid(h, QuantMethod::Uniform, 8, false, nc);
  EXPECT_EQ(ua.lo, 0.0);
  EXPECT_EQ(ua.hi, 2.0);
  QuantGrid sa =
      selectActivationGrid(h, QuantMethod::Symmetric, 8, false, opts(ThresholdMethod::MSE));
  EXPECT_FALSE(sa.isSigned);
  EXPECT_EQ(sa.qmin, 0);
}

TEST(QuantThreshold, Deterministic) {
  std::vector<float> w = laplaceWeights();
  Histogram h = laplaceHistogram();
  for (ThresholdMethod e : {ThresholdMethod::MSE, ThresholdMethod::KL}) {
    for (QuantMethod q : {QuantMethod::Symmetric, QuantMethod::PowerOfTwo, QuantMethod::Uniform}) {
      QuantGrid a = selectWeightGrid(w.data(), int64_t(w.size()), q, 4, true, opts(e));
      QuantGrid b = selectWeightGrid(w.data(), int64_t(w.size()), q, 4, true, opts(e));
      EXPECT_EQ(a.scale, b.scale);
      EXPECT_EQ(a.lo, b.lo);
      EXPECT_EQ(a.zeroPoint, b.zeroPoint);
      QuantGrid c = selectActivationGrid(h, q, 8, true, opts(e));
      QuantGrid d = selectActivationGrid(h, q, 8, true, opts(e));
      EXPECT_EQ(c.scale, d.scale);
      EXPECT_EQ(c.lo, d.lo);
    }
  }
}

TEST(QuantThreshold, LargeTensorsSearchOnAHistogram) {
  // 4.2M values that repeat the 4096 Laplace weights: each candidate grid has
  // the same mean error on both, measured value by value on the small tensor
  // and on a 65536-bin histogram on the large one (4M values or more). The
  // grids agree within the histogram's resolution: 1/256 of an 8-bit step.
  std::vector<float> w = laplaceWeights(), big;
  big.reserve(w.size() * 1025);
  for (int k = 0; k < 1025; ++k)
    big.insert(big.end(), w.begin(), w.end());
  ASSERT_GT(big.size(), size_t(1) << 22);
  for (QuantMethod q : {QuantMethod::Uniform, QuantMethod::Symmetric}) {
    QuantGrid a =
        selectWeightGrid(w.data(), int64_t(w.size()), q, 8, false, opts(ThresholdMethod::MSE));
    QuantGrid b =
        selectWeightGrid(big.data(), int64_t(big.size()), q, 8, false, opts(ThresholdMethod::MSE));
    EXPECT_NEAR(b.scale, a.scale, a.scale / 256) << ir::toString(q);
    EXPECT_NEAR(double(b.zeroPoint), double(a.zeroPoint), 1.0) << ir::toString(q);
    // The search clips: narrower than the values' range.
    EXPECT_LT(b.hi - b.lo, 2 * 0.4158883 * 0.99) << ir::toString(q);
  }
}
