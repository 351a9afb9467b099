//===- Threshold.cpp - Threshold and range selection ------------------------===//
//
// MCT's threshold searches (qparams_search.py, error_functions.py) over the
// grids of Grid.h, as docs/algorithms.md §2 states them. Every function is
// pure: weight channels may be searched in parallel.
//
//===----------------------------------------------------------------------===//
#include "quant/core/grids/Threshold.h"
#include "quant/core/grids/Lut.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

using namespace tpcc;
using namespace tpcc::quant;
using ir::QuantMethod;
using ir::ThresholdMethod;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr const SearchSchedules &kS = kSearchSchedules;

/// Round half to even, as np.round. Exact for |y| < 2^51 in the default
/// rounding mode; callers round clipped grid positions (|y| <= 2^bits). Two
/// adds instead of a libm call keep the weight searches' inner loop fast.
inline double rnd(double y) {
  constexpr double kMagic = 6755399441055744.0; // 1.5 * 2^52
  return (y + kMagic) - kMagic;
}

/// numpy.linspace(lo, hi, num)[i], computed as numpy does.
double linspaceAt(double lo, double hi, int num, int i) {
  if (i == num - 1)
    return hi;
  return double(i) * ((hi - lo) / double(num - 1)) + lo;
}

/// A grid as the error functions apply it: q(x) = step * rnd((clip(x, lo, hi)
/// - base) / step) + base, base 0 for symmetric grids (MCT's quantize_tensor)
/// and a' for uniform ones (uniform_quantize_tensor). LUT grids and
/// floating-point elements go through QuantGrid itself (`lut`).
struct ErrorQuantizer {
  double lo = 0, hi = 0, step = 1, base = 0;
  const QuantGrid *lut = nullptr;

  double index(double x) const {
    if (lut)
      return double(lut->toInt(x));
    double c = x < lo ? lo : (x > hi ? hi : x);
    return rnd((c - base) / step);
  }
  double value(double x) const { return lut ? lut->quantize(x) : step * index(x) + base; }
};

ErrorQuantizer quantizerOf(const QuantGrid &g) {
  ErrorQuantizer q;
  if (!g.lut.empty() || g.floating()) {
    q.lut = &g;
    return q;
  }
  q.lo = g.lo;
  q.hi = g.hi;
  q.step = g.scale;
  q.base = g.method == QuantMethod::Uniform ? g.lo : 0;
  return q;
}

/// The error norm |d|^p of a threshold method: p = 2, 1 or another p.
enum class ErrorNorm { Square, Abs, Pow };

ErrorNorm normOf(ThresholdMethod m, double p) {
  if (m == ThresholdMethod::MAE || (m == ThresholdMethod::LP && p == 1))
    return ErrorNorm::Abs;
  if (m == ThresholdMethod::LP && p != 2)
    return ErrorNorm::Pow;
  return ErrorNorm::Square;
}

template <ErrorNorm K> inline double norm(double d, double p) {
  if constexpr (K == ErrorNorm::Square)
    return d * d;
  else if constexpr (K == ErrorNorm::Abs)
    return std::abs(d);
  else
    return std::pow(std::abs(d), p);
}

/// Σ |q(x) - x|^p over the values: four accumulators in a fixed order, so
/// results are reproducible. (SIMD through vector extensions, or multiplying
/// by 1/step instead of MCT's division, each measured only 10-25% faster.)
template <ErrorNorm K>
double sumValues(const float *x, int64_t n, const ErrorQuantizer &q, double p) {
  const double lo = q.lo, hi = q.hi, step = q.step, base = q.base;
  auto err = [&](double v) {
    double c = v < lo ? lo : (v > hi ? hi : v);
    return norm<K>(step * rnd((c - base) / step) + base - v, p);
  };
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += err(x[i]);
    s1 += err(x[i + 1]);
    s2 += err(x[i + 2]);
    s3 += err(x[i + 3]);
  }
  for (; i < n; ++i)
    s0 += err(x[i]);
  return (s0 + s1) + (s2 + s3);
}

/// Normalizes `p` to sum 1, then smooths it as MCT's _smooth_distribution:
/// eps = min non-zero p / (2 len) added to zeros, taken evenly from non-zeros.
void normalizeAndSmooth(std::vector<double> &p) {
  double sum = 0, minNz = kInf;
  size_t zeros = 0;
  for (double v : p)
    sum += v;
  for (double &v : p) {
    v /= sum;
    if (v == 0)
      ++zeros;
    else
      minNz = std::min(minNz, v);
  }
  if (zeros == 0)
    return;
  double eps = minNz / (2.0 * double(p.size()));
  double take = eps * double(zeros) / double(p.size() - zeros);
  for (double &v : p)
    v = v == 0 ? eps : v - take;
}

/// A weight tensor with more values than this (an embedding table or a
/// vocabulary's projection: 28M values, searched on one grid) measures each
/// candidate grid on a histogram of `kFineBins` equal bins instead of every
/// value: a search over the values took minutes. A bin is 1/256 of a step of
/// an 8-bit grid over the tensor's range.
constexpr int64_t kValuesForHistogram = int64_t(1) << 22;
constexpr int kFineBins = 1 << 16;

/// The error of one candidate against either raw values or a histogram (bin
/// lower edges as values); KL always goes through a histogram (for weights,
/// a 2048-bin histogram of the values, built once), and so do the values of
/// a tensor larger than kValuesForHistogram (a fine one).
class Objective {
public:
  Objective(const Histogram &h, ThresholdMethod m, double p) : method(m), p(p), hist(&h) {
    prepare();
  }
  Objective(const float *x, int64_t n, ThresholdMethod m, double p, const float *hessian = nullptr)
      : method(m), p(p), x(x), n(n), h(m == ThresholdMethod::HMSE ? hessian : nullptr) {
    for (int64_t i = 0; h && i < n; ++i)
      hsum += double(h[i]);
    if (h && !(hsum > 0)) // no Hessian mass: plain MSE
      h = nullptr;
    if (m == ThresholdMethod::KL) {
      own = Histogram::of(x, n);
      hist = &own;
    } else if (!h && n > kValuesForHistogram) {
      own = Histogram::of(x, n, kFineBins);
      hist = &own;
    }
    prepare();
  }
  Objective(const Objective &) = delete;
  Objective &operator=(const Objective &) = delete;

  /// `q` quantizes; [rmin, rmax] is the KL range (ignored otherwise).
  double operator()(const ErrorQuantizer &q, double rmin, double rmax) {
    if (method == ThresholdMethod::KL)
      return kl(q, rmin, rmax);
    if (!hist) {
      if (n == 0)
        return 0;
      if (h) { // HMSE: Σ h (q(x) - x)² / Σ h
        double s = 0;
        for (int64_t i = 0; i < n; ++i) {
          double d = q.value(x[i]) - double(x[i]);
          s += double(h[i]) * d * d;
        }
        return s / hsum;
      }
      if (q.lut) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i)
          s += normAny(q.value(x[i]) - x[i]);
        return s / double(n);
      }
      switch (normOf(method, p)) {
      case ErrorNorm::Square:
        return sumValues<ErrorNorm::Square>(x, n, q, p) / double(n);
      case ErrorNorm::Abs:
        return sumValues<ErrorNorm::Abs>(x, n, q, p) / double(n);
      case ErrorNorm::Pow:
        return sumValues<ErrorNorm::Pow>(x, n, q, p) / double(n);
      }
    }
    if (total <= 0)
      return 0;
    if (q.lut) {
      double s = 0;
      for (size_t i = 0; i < ev.size(); ++i)
        s += cv[i] * normAny(q.value(ev[i]) - ev[i]);
      return s / total;
    }
    switch (normOf(method, p)) {
    case ErrorNorm::Square:
      return sumBins<ErrorNorm::Square>(q) / total;
    case ErrorNorm::Abs:
      return sumBins<ErrorNorm::Abs>(q) / total;
    case ErrorNorm::Pow:
      return sumBins<ErrorNorm::Pow>(q) / total;
    }
    return 0;
  }

private:
  ThresholdMethod method;
  double p;
  const float *x = nullptr;
  int64_t n = 0;
  const float *h = nullptr; ///< HMSE's weights
  double hsum = 0;
  const Histogram *hist = nullptr;
  Histogram own;
  std::vector<double> ev, cv; ///< lower edges and counts of non-empty bins
  double total = 0;

  void prepare() {
    if (!hist)
      return;
    for (size_t i = 0; i < hist->counts.size(); ++i) {
      total += hist->counts[i];
      if (hist->counts[i] != 0) {
        ev.push_back(hist->edges[i]);
        cv.push_back(hist->counts[i]);
      }
    }
  }

  /// Σ count * |q(edge) - edge|^p over the non-empty bins, in bin order.
  template <ErrorNorm K> double sumBins(const ErrorQuantizer &q) const {
    const double lo = q.lo, hi = q.hi, step = q.step, base = q.base;
    const double *e = ev.data(), *c = cv.data();
    double s = 0;
    for (size_t i = 0, n = ev.size(); i < n; ++i) {
      double v = e[i], k = v < lo ? lo : (v > hi ? hi : v);
      s += c[i] * norm<K>(step * rnd((k - base) / step) + base - v, p);
    }
    return s;
  }

  double normAny(double d) const {
    ErrorNorm k = normOf(method, p);
    return k == ErrorNorm::Square ? d * d
           : k == ErrorNorm::Abs  ? std::abs(d)
                                  : std::pow(std::abs(d), p);
  }

  /// MCT's _kl_error_histogram: bins [first, last) are kept, with the counts
  /// outside added to the first and last kept bin (P); each quantized value's
  /// count is spread over the kept bins mapping to it with non-zero count (Q).
  double kl(const ErrorQuantizer &q, double rmin, double rmax) {
    if (!hist || hist->empty() || !(rmin < rmax))
      return kInf;
    const std::vector<double> &e = hist->edges, &c = hist->counts;
    if (!(e.back() >= rmin && e.front() < rmax))
      return kInf;
    size_t firstGe = size_t(std::lower_bound(e.begin(), e.end(), rmin) - e.begin());
    size_t first = firstGe > 0 ? firstGe - 1 : 0;
    size_t last = size_t(std::lower_bound(e.begin(), e.end(), rmax) - e.begin()) - 1;
    if (first >= last)
      return c.size() > 1 ? kInf : 0; // inside one bin: see below
    size_t len = last - first;
    // Unlike MCT: a range narrower than the grid has levels cannot be judged
    // at the histogram's resolution (Q equals P there, KL is 0, and the
    // search would clip almost everything: POT activations picked 2^-16).
    // TensorRT's entropy calibration keeps at least 128 bins for the same
    // reason; the candidate needs one bin per level.
    double levels = !q.lut               ? (q.hi - q.lo) / q.step + 1
                    : q.lut->lut.empty() ? double(q.lut->qmax - q.lut->qmin + 1)
                                         : double(q.lut->lut.size());
    if (double(len) < levels && len + 1 < c.size())
      return kInf;
    // Scratch reused across candidates, one per thread (searches evaluate
    // candidates in parallel).
    thread_local std::vector<double> pf, pq;
    pf.assign(c.begin() + first, c.begin() + last);
    if (std::all_of(pf.begin(), pf.end(), [](double v) { return v == 0; }))
      return kInf;
    for (size_t i = 0; i < first; ++i)
      pf.front() += c[i];
    for (size_t i = last; i < c.size(); ++i)
      pf.back() += c[i];
    // q is monotone, so the bins sharing a quantized value are runs.
    pq.assign(len, 0.0);
    for (size_t i = 0; i < len;) {
      double k = q.index(e[first + i]);
      size_t j = i, positive = 0;
      double sum = 0;
      for (; j < len && q.index(e[first + j]) == k; ++j) {
        sum += c[first + j];
        positive += c[first + j] > 0;
      }
      double share = sum / (double(positive) + 1e-6); // MCT's guard against 0/0
      for (size_t m = i; m < j; ++m)
        pq[m] = c[first + m] > 0 ? share : 0.0;
      i = j;
    }
    normalizeAndSmooth(pq);
    normalizeAndSmooth(pf);
    double d = 0;
    for (size_t i = 0; i < len; ++i)
      d += pf[i] * std::log(pf[i] / pq[i]);
    return d;
  }
};

/// The KL range of a threshold grid: [-t, t] signed (and always for POT
/// activations, as MCT), [0, t] unsigned symmetric.
std::pair<double, double> klRange(QuantMethod m, double t, bool isSigned) {
  if (isSigned || m == QuantMethod::PowerOfTwo)
    return {-t, t};
  return {0.0, t};
}

void record(SearchTrace *trace, int iterations, int evaluations) {
  if (trace) {
    trace->iterations = iterations;
    trace->evaluations = evaluations;
  }
}

/// POT search: 2^(1+ceil(log2 m)-i), i = 0..count-1, the first minimum wins.
template <class Loss>
double searchPowerOfTwo(double m, int count, double minT, Loss &&loss, SearchTrace *trace) {
  double top = 2 * powerOfTwoCeil(m, minT), bestT = top, bestL = kInf;
  for (int i = 0; i < count; ++i) {
    double t = top / std::exp2(i);
    double l = loss(t);
    if (i == 0 || l < bestL) {
      bestT = t;
      bestL = l;
    }
  }
  record(trace, 0, count);
  return std::max(bestT, minT);
}

/// The symmetric iterative search (qparams_symmetric_iterative_minimization).
template <class Loss>
double searchSymmetric(double t0, int iterations, int decFreq, Loss &&loss, SearchTrace *trace) {
  const int kCandidates = kS.candidates;
  double alpha = kS.low, beta = kS.high;
  double t = t0, bestT = t0, bestL = loss(t0);
  int evals = 1, k = 0;
  while (k < iterations) {
    double prev = bestL, lo = t * alpha, hi = t * beta;
    double ct = lo, cl = kInf;
    for (int i = 0; i < kCandidates; ++i) {
      double c = linspaceAt(lo, hi, kCandidates, i);
      double l = loss(c);
      if (i == 0 || l < cl) {
        ct = c;
        cl = l;
      }
    }
    evals += kCandidates;
    t = ct; // the next range centres on this iteration's best, even if worse
    if (cl < prev) {
      bestT = ct;
      bestL = cl;
    }
    double gain = prev - cl;
    bool stop = gain > 0 && gain < kS.tolerance;
    if (!stop && k % decFreq == 0) {
      alpha = std::min(alpha * kS.narrowLow, kS.lowLimit);
      beta = std::max(beta * kS.narrowHigh, kS.highLimit);
    }
    ++k;
    if (stop)
      break;
  }
  record(trace, k, evals);
  return bestT;
}

/// The uniform range search (iterative_uniform_dynamic_range_search):
/// candidates (alpha*a, beta*b) over an N x N grid of factors, alpha outer.
/// `loss` is called from several threads at once.
template <class Loss>
std::pair<double, double> searchUniform(double a0, double b0, int samples, int iterations,
                                        Loss &&loss, SearchTrace *trace) {
  std::vector<double> f(static_cast<size_t>(samples));
  for (int i = 0; i < samples; ++i)
    f[i] = linspaceAt(kS.low, kS.high, samples, i);
  std::vector<double> losses(size_t(samples) * size_t(samples));
  double a = a0, b = b0, bestA = a0, bestB = b0, bestL = loss(a0, b0);
  int evals = 1, k = 0;
  while (k < iterations) {
    double prev = bestL, ca = a, cb = b, cl = kInf;
    // The candidates' losses in parallel, the choice in order: the same
    // pick on any number of threads.
    const int64_t count = int64_t(samples) * samples;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i)
      losses[size_t(i)] = loss(a * f[size_t(i / samples)], b * f[size_t(i % samples)]);
    for (int64_t i = 0; i < count; ++i)
      if (i == 0 || losses[size_t(i)] < cl) {
        ca = a * f[size_t(i / samples)];
        cb = b * f[size_t(i % samples)];
        cl = losses[size_t(i)];
      }
    evals += samples * samples;
    a = ca;
    b = cb;
    if (cl < prev) {
      bestA = ca;
      bestB = cb;
      bestL = cl;
    }
    ++k;
    double gain = prev - cl;
    if (gain > 0 && gain < kS.tolerance)
      break;
  }
  record(trace, k, evals);
  return {bestA, bestB};
}

/// The largest |upper edge| of non-empty bins (activations' no-clipping t).
double histogramMaxAbs(const Histogram &h) {
  double m = 0;
  for (size_t i = 0; i < h.counts.size(); ++i)
    if (h.counts[i] > 0)
      m = std::max(m, std::abs(h.edges[i + 1]));
  return m;
}

} // namespace

double quant::histogramError(const Histogram &h, const QuantGrid &g, const SelectionOptions &o) {
  Objective obj(h, o.error, o.p);
  auto [rmin, rmax] = g.method == QuantMethod::Uniform ? std::make_pair(g.lo, g.hi)
                                                       : klRange(g.method, g.threshold, g.isSigned);
  return obj(quantizerOf(g), rmin, rmax);
}

double quant::valuesError(const float *x, int64_t n, const QuantGrid &g,
                          const SelectionOptions &o) {
  Objective obj(x, n, o.error, o.p, o.hessian);
  if (o.error != ThresholdMethod::KL)
    return obj(quantizerOf(g), 0, 0);
  // MCT's tensor KL quantizes the histogram edges on a uniform grid over the
  // range, whatever the method.
  auto [rmin, rmax] = g.method == QuantMethod::Uniform
                          ? std::make_pair(g.lo, g.hi)
                          : std::make_pair(g.isSigned ? -g.threshold : 0.0, g.threshold);
  QuantGrid u = uniformGrid(rmin, rmax, g.bits);
  return obj(quantizerOf(u), rmin, rmax);
}

QuantGrid quant::selectActivationGrid(const Histogram &h, QuantMethod method, int bits,
                                      bool isSigned, const SelectionOptions &o) {
  const double minT = o.minThreshold;
  record(o.trace, 0, 0);
  if (ir::isLut(method))
    return selectLutActivationGrid(h, method, bits, kLutMultiplierBits, isSigned, minT);
  bool noClip = o.error == ThresholdMethod::NoClipping || h.total() <= 0;
  Objective obj(h, o.error, o.p);

  if (method == QuantMethod::Uniform) {
    double a = h.minNonEmpty(), b = h.maxNonEmpty();
    if (noClip)
      return uniformGrid(a, b, bits);
    const SearchSchedule &sch = kS.activations;
    auto [ra, rb] = searchUniform(
        a, b, sch.uniformGrid, sch.uniformIterations,
        [&](double ca, double cb) { return obj(quantizerOf(uniformGrid(ca, cb, bits)), ca, cb); },
        o.trace);
    return uniformGrid(ra, rb, bits);
  }

  double tmax = histogramMaxAbs(h);
  bool pot = method == QuantMethod::PowerOfTwo;
  auto grid = [&](double t) {
    if (o.element != ir::ElementFormat::Int)
      return floatGrid(o.element, t, pot, minT);
    return pot ? powerOfTwoGrid(t, bits, isSigned, minT) : symmetricGrid(t, bits, isSigned);
  };
  auto loss = [&](double t) {
    auto [rmin, rmax] = klRange(method, t, isSigned);
    QuantGrid g = o.element != ir::ElementFormat::Int ? grid(t) : symmetricGrid(t, bits, isSigned);
    return obj(quantizerOf(g), rmin, rmax);
  };
  const SearchSchedule &sch = kS.activations;
  if (pot) {
    if (noClip)
      return grid(tmax);
    // The candidates start above the largest |edge|, empty bins included.
    double m = 0;
    for (double e : h.edges)
      m = std::max(m, std::abs(e));
    return grid(searchPowerOfTwo(m, sch.potCandidates, minT, loss, o.trace));
  }
  double t0 = std::max(minT, tmax);
  if (noClip)
    return grid(t0);
  double t = searchSymmetric(t0, sch.symmetricIterations, sch.symmetricNarrowEvery, loss, o.trace);
  return grid(std::max(minT, t));
}

std::pair<double, double> quant::valueRange(const float *x, int64_t n) {
  if (n <= 0)
    return {0, 0};
  double mn = x[0], mx = x[0];
  for (int64_t i = 1; i < n; ++i) {
    mn = std::min(mn, double(x[i]));
    mx = std::max(mx, double(x[i]));
  }
  return {mn, mx};
}

QuantGrid quant::selectWeightGrid(const float *x, int64_t n, QuantMethod method, int bits,
                                  bool perChannel, const SelectionOptions &o) {
  const double minT = o.minThreshold;
  record(o.trace, 0, 0);
  if (ir::isLut(method))
    return selectLutGrid(x, n, method, bits, kLutMultiplierBits);
  auto [mn, mx] = valueRange(x, n);
  bool noClip = o.error == ThresholdMethod::NoClipping || n == 0;
  Objective obj(x, n, o.error, o.p, o.hessian);
  const SearchSchedule &sch = perChannel ? kS.weightsPerChannel : kS.weightsPerTensor;

  if (method == QuantMethod::Uniform) {
    if (noClip)
      return uniformGrid(mn, mx, bits);
    auto [ra, rb] = searchUniform(
        mn, mx, sch.uniformGrid, sch.uniformIterations,
        [&](double ca, double cb) { return obj(quantizerOf(uniformGrid(ca, cb, bits)), ca, cb); },
        o.trace);
    return uniformGrid(ra, rb, bits);
  }

  // A floating-point element holds +-t: no integer asymmetry to widen for.
  bool fp = o.element != ir::ElementFormat::Int, pot = method == QuantMethod::PowerOfTwo;
  double m = fp ? std::max(-mn, mx) : weightNoClippingMax(mn, mx, bits);
  auto grid = [&](double t) {
    if (fp)
      return floatGrid(o.element, t, pot, minT);
    return pot ? powerOfTwoGrid(t, bits, true, minT) : symmetricGrid(t, bits, true);
  };
  // Weights are signed. KL quantizes the values' histogram uniformly over
  // [-t, t] (MCT's _kl_error_function).
  auto loss = [&](double t) {
    if (o.error == ThresholdMethod::KL && !fp)
      return obj(quantizerOf(uniformGrid(-t, t, bits)), -t, t);
    return obj(quantizerOf(fp ? grid(t) : symmetricGrid(t, bits, true)), -t, t);
  };
  if (pot) {
    if (noClip)
      return grid(m);
    return grid(searchPowerOfTwo(m, sch.potCandidates, minT, loss, o.trace));
  }
  double t0 = std::max(minT, m);
  if (noClip)
    return grid(t0);
  double t = searchSymmetric(t0, sch.symmetricIterations, sch.symmetricNarrowEvery, loss, o.trace);
  return grid(std::max(minT, t));
}

double quant::weightNoClippingMax(double min, double max, int bits) {
  // The largest positive value lands on t - scale; 1-bit grids have no
  // positive level (MCT's expansion factor 0).
  double f = bits > 1 ? std::exp2(bits - 1) / (std::exp2(bits - 1) - 1) : 0.0;
  return std::max(-min, max * f);
}
