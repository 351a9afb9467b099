//===- Lut.cpp - Non-uniform (LUT) quantization -----------------------------===//
//
// MCT's lut_kmeans_tensor / lut_kmeans_histogram with a deterministic 1-D
// k-means in place of sklearn's. In one dimension every cluster is a run of
// the sorted values, so with prefix sums of w, w*v and w*v^2 the cost of a
// cluster, a k-means++ potential and a Lloyd step cost O(k log n) instead of
// O(n k): clustering a large weight tensor stays cheap.
//
//===----------------------------------------------------------------------===//
#include "quant/core/grids/Lut.h"
#include "quant/core/grids/Threshold.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

using namespace tpcc;
using namespace tpcc::quant;
using ir::QuantMethod;

namespace {

constexpr double kEps = 1e-8;            // MCT's EPS in the threshold division
constexpr int kMaxLloydIterations = 300; // sklearn's defaults
constexpr double kRelativeTolerance = 1e-4;
constexpr uint64_t kSeed = 0x6b6d65616e73ULL; // fixed: results must be reproducible

/// Sorted distinct values with their summed weights (zero weights dropped)
/// and prefix sums, so the cost of a run of points about one centre is O(1).
struct Points {
  std::vector<double> v, w;
  std::vector<double> W{0}, S{0}, Q{0}; ///< prefix sums of w, w*v, w*v^2

  size_t size() const { return v.size(); }
  /// Σ w (v - c)^2 over points [l, r).
  double cost(size_t l, size_t r, double c) const {
    if (l >= r)
      return 0;
    double q = Q[r] - Q[l], s = S[r] - S[l], n = W[r] - W[l];
    return std::max(0.0, q - 2 * c * s + c * c * n);
  }
};

Points makePoints(const std::vector<double> &values, const std::vector<double> &weights) {
  std::vector<std::pair<double, double>> vw;
  vw.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    double w = weights.empty() ? 1.0 : weights[i];
    if (w > 0)
      vw.emplace_back(values[i], w);
  }
  std::sort(vw.begin(), vw.end());
  Points p;
  for (const auto &[v, w] : vw) {
    if (!p.v.empty() && p.v.back() == v) {
      p.w.back() += w;
      continue;
    }
    p.v.push_back(v);
    p.w.push_back(w);
  }
  for (size_t i = 0; i < p.size(); ++i) {
    p.W.push_back(p.W.back() + p.w[i]);
    p.S.push_back(p.S.back() + p.w[i] * p.v[i]);
    p.Q.push_back(p.Q.back() + p.w[i] * p.v[i] * p.v[i]);
  }
  return p;
}

/// A uniform double in [0, 1) from 53 bits of the generator, whose output
/// the standard fixes (std::uniform_real_distribution's is not).
double uniform01(std::mt19937_64 &g) { return double(g() >> 11) * 0x1.0p-53; }

/// The cells of sorted centres `c`: points [b[a], b[a+1]) are nearest to
/// c[a] (the lower centre on ties).
void cellsOf(const Points &p, const std::vector<double> &c, std::vector<size_t> &b) {
  size_t k = c.size();
  b.assign(k + 1, 0);
  b[k] = p.size();
  for (size_t a = 1; a < k; ++a) {
    double mid = (c[a - 1] + c[a]) / 2;
    b[a] = size_t(std::upper_bound(p.v.begin(), p.v.end(), mid) - p.v.begin());
    b[a] = std::max(b[a], b[a - 1]);
  }
}

double potential(const Points &p, const std::vector<double> &c, std::vector<size_t> &b) {
  cellsOf(p, c, b);
  double s = 0;
  for (size_t a = 0; a < c.size(); ++a)
    s += p.cost(b[a], b[a + 1], c[a]);
  return s;
}

/// The first point whose cumulative w * D^2 reaches r (numpy.searchsorted
/// on the cumulative sum, as sklearn samples k-means++ candidates).
size_t sampleByPotential(const Points &p, const std::vector<double> &c,
                         const std::vector<size_t> &b, double r) {
  double acc = 0;
  for (size_t a = 0; a < c.size(); ++a) {
    size_t lo = b[a], hi = b[a + 1];
    double cell = p.cost(lo, hi, c[a]);
    if (lo < hi && (r <= acc + cell || a + 1 == c.size())) {
      double target = r - acc;
      size_t first = lo, last = hi - 1;
      while (first < last) {
        size_t mid = first + (last - first) / 2;
        if (p.cost(lo, mid + 1, c[a]) >= target)
          last = mid;
        else
          first = mid + 1;
      }
      return first;
    }
    acc += cell;
  }
  return p.size() - 1;
}

/// One k-means run: k-means++ initialisation then Lloyd. Returns the sorted
/// centres and their inertia.
std::pair<std::vector<double>, double> kmeansOnce(const Points &p, int k, double tol,
                                                  std::mt19937_64 &rng) {
  std::vector<size_t> b;
  // The first centre: a point drawn with probability proportional to weight.
  double r = uniform01(rng) * p.W.back();
  size_t first = size_t(std::upper_bound(p.W.begin() + 1, p.W.end(), r) - (p.W.begin() + 1));
  std::vector<double> c{p.v[std::min(first, p.size() - 1)]};
  double pot = potential(p, c, b);
  const int trials = 2 + int(std::log(double(k)));
  std::vector<double> cand, best;
  for (int m = 1; m < k; ++m) {
    double bestPot = std::numeric_limits<double>::infinity();
    cellsOf(p, c, b);
    std::vector<size_t> cells = b;
    for (int t = 0; t < trials; ++t) {
      double v = p.v[sampleByPotential(p, c, cells, uniform01(rng) * pot)];
      cand = c;
      cand.insert(std::upper_bound(cand.begin(), cand.end(), v), v);
      double candPot = potential(p, cand, b);
      if (t == 0 || candPot < bestPot) {
        bestPot = candPot;
        best = cand;
      }
    }
    c = best;
    pot = bestPot;
  }
  // Lloyd: stop when the assignment repeats or the centres barely move.
  std::vector<size_t> prev;
  for (int it = 0; it < kMaxLloydIterations; ++it) {
    cellsOf(p, c, b);
    if (b == prev)
      break;
    double shift = 0;
    for (size_t a = 0; a < c.size(); ++a) {
      double w = p.W[b[a + 1]] - p.W[b[a]];
      // An empty cluster keeps its centre (sklearn would move it).
      double nc = w > 0 ? (p.S[b[a + 1]] - p.S[b[a]]) / w : c[a];
      shift += (nc - c[a]) * (nc - c[a]);
      c[a] = nc;
    }
    std::sort(c.begin(), c.end());
    prev = b;
    if (shift <= tol)
      break;
  }
  // Inertia summed point by point: exact, not through the prefix sums.
  cellsOf(p, c, b);
  double inertia = 0;
  for (size_t a = 0; a < c.size(); ++a)
    for (size_t j = b[a]; j < b[a + 1]; ++j)
      inertia += p.w[j] * (p.v[j] - c[a]) * (p.v[j] - c[a]);
  return {c, inertia};
}

/// Rounds the centres to integers (half to even, as np.round): sorted, unique.
std::vector<int64_t> roundCentres(const std::vector<double> &c) {
  std::vector<int64_t> q;
  for (double v : c)
    q.push_back(int64_t(std::nearbyint(v)));
  std::sort(q.begin(), q.end());
  q.erase(std::unique(q.begin(), q.end()), q.end());
  return q;
}

} // namespace

std::vector<double> quant::kmeans1d(const std::vector<double> &values,
                                    const std::vector<double> &weights, int k, int restarts) {
  Points p = makePoints(values, weights);
  k = int(std::min<size_t>(size_t(std::max(k, 0)), p.size()));
  if (k == 0)
    return {};
  // sklearn's tolerance: relative to the variance of the data as given.
  double mean = 0, var = 0;
  for (double v : values)
    mean += v;
  mean /= double(values.size());
  for (double v : values)
    var += (v - mean) * (v - mean);
  double tol = kRelativeTolerance * var / double(values.size());

  std::mt19937_64 rng(kSeed);
  std::vector<double> best;
  double bestInertia = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(restarts, 1); ++r) {
    auto [c, inertia] = kmeansOnce(p, k, tol, rng);
    if (r == 0 || inertia < bestInertia) {
      best = std::move(c);
      bestInertia = inertia;
    }
  }
  return best;
}

QuantGrid quant::selectLutGrid(const float *x, int64_t n, QuantMethod method, int bits,
                               int lutBits) {
  auto [mn, mx] = valueRange(x, n);
  double m = weightNoClippingMax(mn, mx, bits);
  double t = method == QuantMethod::LutPot ? powerOfTwoCeil(m, ir::kDefaultMinThreshold)
                                           : std::max(m, ir::kDefaultMinThreshold);
  // Weights are signed: v on the signed lutBits multiplier grid, not rounded.
  const double mult = std::exp2(lutBits - 1);
  std::vector<double> v(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i)
    v[i] = std::clamp(double(x[i]) / (t + kEps) * mult, -mult, mult - 1);
  const int64_t tableSize = int64_t(1) << bits;
  std::vector<int64_t> lut = roundCentres(kmeans1d(v, {}, int(tableSize)));
  // Zero must be exact: added when the table has room, else it replaces the
  // centre nearest 0 (the first on ties).
  if (!std::binary_search(lut.begin(), lut.end(), int64_t(0))) {
    if (int64_t(lut.size()) < tableSize) {
      lut.insert(std::upper_bound(lut.begin(), lut.end(), int64_t(0)), 0);
    } else {
      auto nearest = std::min_element(
          lut.begin(), lut.end(), [](int64_t a, int64_t b) { return std::abs(a) < std::abs(b); });
      *nearest = 0;
      std::sort(lut.begin(), lut.end());
    }
  }

  QuantGrid g;
  g.method = method;
  g.bits = bits;
  g.isSigned = true;
  g.threshold = t;
  g.scale = t / mult;
  g.zeroPoint = 0;
  g.qmin = -int64_t(mult);
  g.qmax = int64_t(mult) - 1;
  g.lo = g.scale * double(g.qmin);
  g.hi = g.scale * double(g.qmax);
  g.lut = std::move(lut);
  return g;
}

QuantGrid quant::selectLutActivationGrid(const Histogram &h, QuantMethod method, int bits,
                                         int lutBits, bool isSigned, double minThreshold) {
  // The largest |upper edge| of non-empty bins; the table can use at most as
  // many centres as there are distinct ones (MCT's n_clusters).
  std::vector<double> upper;
  for (size_t i = 0; i < h.counts.size(); ++i)
    if (h.counts[i] > 0)
      upper.push_back(std::abs(h.edges[i + 1]));
  std::sort(upper.begin(), upper.end());
  upper.erase(std::unique(upper.begin(), upper.end()), upper.end());
  double m = upper.empty() ? 0.0 : upper.back();
  double t =
      method == QuantMethod::LutSym ? std::max(m, minThreshold) : powerOfTwoCeil(m, minThreshold);
  const int s = isSigned ? 1 : 0;
  const double mult = std::exp2(lutBits - s);
  const double lo = isSigned ? -std::exp2(lutBits - 1) : 0.0;
  const double hi = isSigned ? std::exp2(lutBits - 1) - 1 : std::exp2(lutBits) - 1;

  std::vector<int64_t> lut{0};
  if (!upper.empty()) {
    // Each bin's count sits on its upper edge; the first edge weighs nothing.
    std::vector<double> v(h.edges.size()), w(h.edges.size(), 0.0);
    for (size_t i = 0; i < h.edges.size(); ++i)
      v[i] = std::clamp(h.edges[i] / (t + kEps) * mult, lo, hi);
    for (size_t i = 0; i < h.counts.size(); ++i)
      w[i + 1] = h.counts[i];
    int k = int(std::min<size_t>(size_t(1) << bits, upper.size()));
    lut = roundCentres(kmeans1d(v, w, k));
  }

  QuantGrid g;
  g.method = method;
  g.bits = bits;
  g.isSigned = isSigned;
  g.threshold = t;
  g.scale = t / mult;
  g.zeroPoint = 0;
  g.qmin = int64_t(lo);
  g.qmax = int64_t(hi);
  g.lo = g.scale * lo;
  g.hi = g.scale * hi;
  g.lut = std::move(lut);
  return g;
}
