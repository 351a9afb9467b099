//===- Histogram.cpp - Activation statistics --------------------------------===//
//
// Batch histograms follow numpy.histogram (the binning MCT's collector uses)
// on float64 data; merging follows MCT's interpolate_histogram (numpy.interp
// of the cumulative counts). See Histogram.h and docs/algorithms.md §3.
//
//===----------------------------------------------------------------------===//
#include "quant/core/stats/Histogram.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>

#include <omp.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

using namespace tpcc::quant;

/// numpy.linspace(lo, hi, bins + 1): i * step + lo, the last edge exactly hi,
/// computed as numpy does so edges match bit for bit.
static std::vector<double> linspaceEdges(double lo, double hi, int bins) {
  std::vector<double> e(size_t(bins) + 1);
  double step = (hi - lo) / double(bins);
  for (int i = 0; i < bins; ++i)
    e[i] = double(i) * step + lo;
  e[bins] = hi;
  return e;
}

double Histogram::total() const {
  double s = 0;
  for (double c : counts)
    s += c;
  return s;
}

/// The min and max of n > 0 floats, in four lanes so the loop carries no
/// dependency from one element to the next.
static void minMax(const float *x, int64_t n, double &lo, double &hi) {
  float l[4] = {x[0], x[0], x[0], x[0]}, h[4] = {x[0], x[0], x[0], x[0]};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) {
      l[j] = x[i + j] < l[j] ? x[i + j] : l[j];
      h[j] = x[i + j] > h[j] ? x[i + j] : h[j];
    }
  for (; i < n; ++i) {
    l[0] = x[i] < l[0] ? x[i] : l[0];
    h[0] = x[i] > h[0] ? x[i] : h[0];
  }
  lo = std::min(std::min(l[0], l[1]), std::min(l[2], l[3]));
  hi = std::max(std::max(h[0], h[1]), std::max(h[2], h[3]));
}

/// The threads a statistic over n elements runs on: a pass over a few
/// hundred thousand floats already repays a fork and join.
static int statsThreads(int64_t n) { return n < (int64_t(1) << 16) ? 1 : omp_get_max_threads(); }

/// minMax over n > 0 floats in contiguous chunks, one per thread.
static void parallelMinMax(const float *x, int64_t n, double &lo, double &hi) {
  int threads = statsThreads(n);
  if (threads == 1)
    return minMax(x, n, lo, hi);
  // A slot no thread fills (OpenMP may give fewer) stays out of the result.
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> los(size_t(threads), inf), his(size_t(threads), -inf);
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e)
      minMax(x + b, e - b, los[size_t(t)], his[size_t(t)]);
  }
  lo = *std::min_element(los.begin(), los.end());
  hi = *std::max_element(his.begin(), his.end());
}

/// Adds to `counts` the bins of data[0, n) of the histogram with edges `e`
/// over [lo, hi] (see binned).
static void countBins(const float *data, int64_t n, double lo, double hi, const double *e,
                      double perUnit, int bins, int64_t *counts) {
  // numpy's rule, exactly: a first guess from the position, corrected
  // against the actual edges; every value lands in the bin whose edges
  // bracket it (the last bin closed), whatever the guess's rounding. NaN
  // lands in no bin.
  auto exact = [&](double v) {
    if (v != v)
      return;
    int64_t k = std::clamp<int64_t>(int64_t((v - lo) * perUnit), 0, bins - 1);
    if (v < e[k])
      --k;
    else if (k != bins - 1 && v >= e[k + 1])
      ++k;
    ++counts[k];
  };
  // The computed position (v - lo) * perUnit is within `eps` bins of the
  // value's place between the computed edges (each edge is off by at most
  // an ulp of max(|lo|, |hi|), the position by a few ulps of `bins`): a
  // position farther than that from a bin boundary needs no edge lookup.
  // The guesses are computed a chunk at a time in SIMD; the few near a
  // boundary take the exact path.
  double eps = std::ldexp(std::max(std::abs(lo), std::abs(hi)) * perUnit, -48) + 1e-9;
  if (!(eps < 0.125)) {
    for (int64_t i = 0; i < n; ++i)
      exact(data[i]);
    return;
  }
#ifdef __SSE2__
  // Two values at a time: position, truncated guess, distance from the
  // guess's lower boundary; a NaN position becomes `bins` (the exact path).
  // The minimum itself (the zeros after a ReLU) is in bin 0 without a
  // lookup when the first bin is not empty (e[1] > lo). Four interleaved
  // sub-histograms, so runs of one bin do not wait on each other's
  // increments; their 32-bit counts are flushed every 2^31 values.
  constexpr int kChunk = 512;
  alignas(16) int32_t guess[kChunk + 4];
  uint8_t near[kChunk + 2];
  std::vector<uint32_t> sub(size_t(bins) * 4, 0);
  auto flush = [&] {
    for (int k = 0; k < bins; ++k) {
      uint32_t *c = &sub[size_t(k) * 4];
      counts[k] += int64_t(c[0]) + c[1] + c[2] + c[3];
      c[0] = c[1] = c[2] = c[3] = 0;
    }
  };
  const __m128d vlo = _mm_set1_pd(lo), vper = _mm_set1_pd(perUnit), vbins = _mm_set1_pd(bins),
                veps = _mm_set1_pd(eps), vtop = _mm_set1_pd(1 - eps), zero = _mm_setzero_pd();
  const int atMinimum = e[1] > lo ? 3 : 0;
  int64_t sinceFlush = 0;
  for (int64_t b = 0; b < n; b += kChunk) {
    const int m = int(std::min<int64_t>(kChunk, n - b));
    const float *x = data + b;
    int j = 0;
    for (; j + 2 <= m; j += 2) {
      __m128d v = _mm_cvtps_pd(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double *>(x + j))));
      __m128d t = _mm_min_pd(_mm_mul_pd(_mm_sub_pd(v, vlo), vper), vbins);
      __m128i k = _mm_cvttpd_epi32(t);
      __m128d f = _mm_sub_pd(t, _mm_cvtepi32_pd(k));
      int inside = _mm_movemask_pd(_mm_and_pd(_mm_cmpgt_pd(f, veps), _mm_cmplt_pd(f, vtop))) |
                   (_mm_movemask_pd(_mm_cmpeq_pd(t, zero)) & atMinimum);
      _mm_storel_epi64(reinterpret_cast<__m128i *>(guess + j), k);
      near[j] = !(inside & 1);
      near[j + 1] = !(inside & 2);
    }
    for (; j < m; ++j)
      near[j] = 1;
    for (j = 0; j < m; ++j)
      if (near[j])
        exact(x[j]);
      else
        ++sub[size_t(guess[j]) * 4 + (j & 3)];
    if ((sinceFlush += m) >= (int64_t(1) << 31) - kChunk) {
      flush();
      sinceFlush = 0;
    }
  }
  flush();
#else
  for (int64_t i = 0; i < n; ++i)
    exact(data[i]);
#endif
}

/// numpy.histogram(data, bins) given the data's min and max; chunks of the
/// data counted in parallel (integer counts: the same sums in any order).
static Histogram binned(const float *data, int64_t n, double lo, double hi, int bins) {
  Histogram h;
  // numpy widens an empty range to [v - 0.5, v + 0.5]: the constant lands in
  // the middle bin.
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  h.edges = linspaceEdges(lo, hi, bins);
  const double perUnit = double(bins) / (hi - lo);
  const double *e = h.edges.data();
  int threads = statsThreads(n);
  std::vector<int64_t> counts(size_t(bins) * size_t(threads), 0);
  if (threads == 1) {
    countBins(data, n, lo, hi, e, perUnit, bins, counts.data());
  } else {
#pragma omp parallel num_threads(threads)
    {
      int t = omp_get_thread_num(), nt = omp_get_num_threads();
      int64_t b = n * t / nt, end = n * (t + 1) / nt;
      countBins(data + b, end - b, lo, hi, e, perUnit, bins, counts.data() + size_t(t) * bins);
    }
    for (int t = 1; t < threads; ++t)
      for (int k = 0; k < bins; ++k)
        counts[size_t(k)] += counts[size_t(t) * bins + size_t(k)];
  }
  h.counts.assign(counts.begin(), counts.begin() + bins);
  return h;
}

Histogram Histogram::of(const float *data, int64_t n, int bins) {
  if (n <= 0 || bins <= 0)
    return Histogram();
  double lo, hi;
  minMax(data, n, lo, hi);
  return binned(data, n, lo, hi, bins);
}

std::vector<double> Histogram::rebin(const Histogram &h, const std::vector<double> &edges) {
  std::vector<double> out(edges.empty() ? 0 : edges.size() - 1, 0.0);
  if (h.empty() || edges.size() < 2)
    return out;
  // The same edges: the interpolation is the identity; copying keeps counts
  // exact (a merged histogram re-merged onto unchanged edges stays as is).
  if (edges == h.edges)
    return h.counts;
  const std::vector<double> &xp = h.edges;
  std::vector<double> cum(xp.size());
  cum[0] = 0;
  for (size_t i = 0; i < h.counts.size(); ++i)
    cum[i + 1] = cum[i] + h.counts[i];
  // numpy.interp: constant beyond the ends, linear inside.
  size_t j = 0;
  double prev = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    double x = edges[i], y;
    if (x <= xp.front()) {
      y = cum.front();
    } else if (x >= xp.back()) {
      y = cum.back();
    } else {
      while (xp[j + 1] <= x)
        ++j;
      double dx = xp[j + 1] - xp[j];
      y = x == xp[j] || dx <= 0 ? cum[j] : (cum[j + 1] - cum[j]) / dx * (x - xp[j]) + cum[j];
    }
    if (i > 0)
      out[i - 1] = y - prev;
    prev = y;
  }
  return out;
}

Histogram Histogram::merge(const std::vector<Histogram> &hs, int bins) {
  Histogram m;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const Histogram &h : hs) {
    if (h.empty())
      continue;
    lo = std::min(lo, h.edges.front());
    hi = std::max(hi, h.edges.back());
  }
  if (!(lo <= hi))
    return m;
  m.edges = linspaceEdges(lo, hi, bins);
  m.counts.assign(size_t(bins), 0.0);
  for (const Histogram &h : hs) {
    if (h.empty())
      continue;
    std::vector<double> c = rebin(h, m.edges);
    for (int i = 0; i < bins; ++i)
      m.counts[i] += c[i];
  }
  return m;
}

void Histogram::removeOutliers(double z) {
  if (empty() || std::isinf(z) || std::isnan(z))
    return;
  double n = 0, s = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    n += counts[i];
    s += edges[i] * counts[i];
  }
  if (n <= 0)
    return;
  double mu = s / n, v = 0;
  for (size_t i = 0; i < counts.size(); ++i)
    v += (edges[i] - mu) * (edges[i] - mu) * counts[i];
  double sigma = std::sqrt(v / n);
  // All mass on one lower edge: every z-score is 0/0; nothing is an outlier.
  if (!(sigma > 0))
    return;
  for (size_t i = 0; i < counts.size(); ++i)
    if (std::abs(edges[i] - mu) / sigma > z)
      counts[i] = 0;
}

double Histogram::minNonEmpty() const {
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0)
      return edges[i];
  return 0;
}

double Histogram::maxNonEmpty() const {
  for (size_t i = counts.size(); i-- > 0;)
    if (counts[i] > 0)
      return edges[i + 1];
  return 0;
}

//===----------------------------------------------------------------------===//
// TensorStats
//===----------------------------------------------------------------------===//

void TensorStats::fold() {
  if (pending.empty())
    return;
  // Histogram::merge of the pending batches then `merged`, in that order,
  // with one batch's edges materialized at a time.
  double glo = merged.empty() ? pending[0].lo : std::min(pending[0].lo, merged.edges.front());
  double ghi = merged.empty() ? pending[0].hi : std::max(pending[0].hi, merged.edges.back());
  for (const Batch &b : pending) {
    glo = std::min(glo, b.lo);
    ghi = std::max(ghi, b.hi);
  }
  Histogram out;
  out.edges = linspaceEdges(glo, ghi, kHistogramBins);
  out.counts.assign(size_t(kHistogramBins), 0.0);
  auto addRebinned = [&](const Histogram &h) {
    std::vector<double> c = Histogram::rebin(h, out.edges);
    for (int i = 0; i < kHistogramBins; ++i)
      out.counts[i] += c[i];
  };
  for (const Batch &b : pending) {
    Histogram h;
    h.edges = linspaceEdges(b.lo, b.hi, int(b.counts.size()));
    h.counts.assign(b.counts.begin(), b.counts.end());
    addRebinned(h);
  }
  if (!merged.empty())
    addRebinned(merged);
  merged = std::move(out);
  pending.clear();
}

bool MaskCount::add(float v) {
  if (!isMaskValue(v))
    return false;
  if (n++ == 0 || std::isnan(v) || std::fabs(v) > std::fabs(example))
    example = v;
  return true;
}

std::string MaskCount::describe() const {
  return fmt::format("{} mask value{} (such as {:g}) that no grid can hold with the others", n,
                     n == 1 ? "" : "s", example);
}

void TensorStats::add(const float *data, const std::vector<int64_t> &shape) {
  lastShape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  if (n <= 0)
    return;
  double bmin, bmax;
  parallelMinMax(data, n, bmin, bmax);
  std::vector<float> kept;
  if (!(bmin > -kMaskMagnitude && bmax < kMaskMagnitude)) {
    // Mask values (or NaN): counted and set aside; the statistics are the
    // rest's (the quantizer keeps such a tensor float).
    kept.reserve(size_t(n));
    for (int64_t i = 0; i < n; ++i)
      if (!maskCount.add(data[i]))
        kept.push_back(data[i]);
    if (kept.empty())
      return;
    data = kept.data();
    n = int64_t(kept.size());
    parallelMinMax(data, n, bmin, bmax);
  }
  lo = nBatches == 0 ? bmin : std::min(lo, bmin);
  hi = nBatches == 0 ? bmax : std::max(hi, bmax);

  int axis = this->axis == kLastAxis ? int(shape.size()) - 1 : this->axis;
  if (axis >= 0 && size_t(axis) < shape.size() && kept.empty()) {
    int64_t channels = shape[axis], outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i)
      outer *= shape[i];
    for (size_t i = size_t(axis) + 1; i < shape.size(); ++i)
      inner *= shape[i];
    assert((cmin.empty() || int64_t(cmin.size()) == channels) &&
           "the channel count changed between batches");
    bool first = cmin.empty();
    if (first) {
      cmin.assign(size_t(channels), 0);
      cmax.assign(size_t(channels), 0);
      meanSum.assign(size_t(channels), 0);
      squareSum.assign(size_t(channels), 0);
    }
    // One thread per channel's sums: the same order of additions whatever
    // the thread count.
    int64_t nc = std::min<int64_t>(channels, int64_t(cmin.size()));
#pragma omp parallel for num_threads(statsThreads(n)) schedule(static)
    for (int64_t c = 0; c < nc; ++c) {
      double mn = data[c * inner], mx = mn, sum = 0, squares = 0;
      for (int64_t o = 0; o < outer; ++o) {
        const float *p = data + (o * channels + c) * inner;
        double pmn, pmx;
        minMax(p, inner, pmn, pmx);
        mn = std::min(mn, pmn);
        mx = std::max(mx, pmx);
        // Four lanes, summed in a fixed order: the same on every run.
        double s[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 4 <= inner; i += 4)
          for (int j = 0; j < 4; ++j) {
            double v = p[i + j];
            s[j] += v;
            q[j] += v * v;
          }
        for (; i < inner; ++i) {
          s[0] += p[i];
          q[0] += double(p[i]) * p[i];
        }
        sum += (s[0] + s[1]) + (s[2] + s[3]);
        squares += (q[0] + q[1]) + (q[2] + q[3]);
      }
      cmin[c] = first ? mn : std::min(cmin[c], mn);
      cmax[c] = first ? mx : std::max(cmax[c], mx);
      meanSum[c] += sum / double(outer * inner);
      squareSum[c] += squares / double(outer * inner);
    }
  }
  ++nBatches;
  // Counts are integers below 2^32 (a batch is far smaller than 16 GiB).
  Histogram h = binned(data, n, bmin, bmax, kHistogramBins);
  pending.push_back({h.edges.front(), h.edges.back(), {h.counts.begin(), h.counts.end()}});
  if (int(pending.size()) >= kMergeEvery)
    fold();
}

const Histogram &TensorStats::histogram() {
  fold();
  return merged;
}

std::vector<double> TensorStats::channelMean() const {
  std::vector<double> m(meanSum.size());
  for (size_t c = 0; c < m.size(); ++c)
    m[c] = nBatches ? meanSum[c] / double(nBatches) : 0.0;
  return m;
}

std::vector<double> TensorStats::channelVariance() const {
  std::vector<double> v(meanSum.size());
  for (size_t c = 0; c < v.size() && nBatches; ++c) {
    double mean = meanSum[c] / double(nBatches), square = squareSum[c] / double(nBatches);
    v[c] = std::max(0.0, square - mean * mean);
  }
  return v;
}
