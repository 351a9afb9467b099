//===- Histogram.h - Activation statistics (docs/algorithms.md §3) -*- C++ -*-===//
//
// The statistics calibration collects for one activation tensor: running
// min/max (per channel too), per-channel means, and a 2048-bin histogram.
// Each batch gets its own histogram over [batch min, batch max] (float64
// edges); batches merge onto edges from the global min to the global max by
// linear interpolation of each batch histogram's cumulative counts, as MCT
// does. Memory is bounded whatever the number of samples: one histogram, a
// few compact batch histograms waiting to be merged, and the channel vectors
// per tensor.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_STATS_HISTOGRAM_H
#define TPCC_QUANT_CORE_STATS_HISTOGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace tpcc::quant {

constexpr int kHistogramBins = 2048;

/// An activation value at least this large in magnitude, or not finite, is a
/// mask value: the -FLT_MAX, -inf, -1e30 or -1e9 that attention masks add to
/// the positions a Softmax must not see. No trained layer computes one; a
/// grid that had to hold it would hold nothing else (docs/quantize.md,
/// "Attention masks").
constexpr double kMaskMagnitude = 1e9;
inline bool isMaskValue(float v) { return !(v > -kMaskMagnitude && v < kMaskMagnitude); }

/// The mask values met: how many, and the one of largest magnitude (NaN first).
struct MaskCount {
  int64_t n = 0;
  float example = 0;
  /// Counts `v` when it is a mask value; whether it was.
  bool add(float v);
  /// "3 mask values (such as -inf) that no grid can hold with the others".
  std::string describe() const;
};

/// A histogram: bins.size()+1 ascending edges; bin i is [edges[i], edges[i+1]).
struct Histogram {
  std::vector<double> edges;
  std::vector<double> counts;

  bool empty() const { return counts.empty(); }
  double total() const;
  /// 2048 equal bins over [min, max] of `data` (float32); a constant tensor
  /// gets one nonzero bin. NaN/Inf are not expected (the executor rejects
  /// them in inputs; kernels keep them out for finite models).
  static Histogram of(const float *data, int64_t n, int bins = kHistogramBins);
  /// Re-bins `h` onto `edges` by linear interpolation of its cumulative
  /// counts (the mass of each new bin is cdf(right) - cdf(left)).
  static std::vector<double> rebin(const Histogram &h, const std::vector<double> &edges);
  /// Merges `hs` onto 2048 equal bins from the smallest lower edge to the
  /// largest upper edge.
  static Histogram merge(const std::vector<Histogram> &hs, int bins = kHistogramBins);
  /// Zeroes the counts of bins whose lower edge e has |e - mu| / sigma > z,
  /// mu and sigma the count-weighted mean and deviation of the lower edges
  /// (z_threshold outlier removal). z = inf: nothing changes.
  void removeOutliers(double z);
  /// The lowest lower edge and the highest upper edge of non-empty bins.
  double minNonEmpty() const;
  double maxNonEmpty() const;
};

/// Collects the statistics of one tensor over many batches.
///
/// Batch histograms wait in `pending` (8 KiB each: their range and integer
/// counts) and are merged, as Histogram::merge does, into the running
/// histogram every kMergeEvery batches and when histogram() is asked for.
/// Up to kMergeEvery batches this is exactly MCT's single merge; beyond, the
/// running histogram is itself re-binned onto the widened edges by the same
/// interpolation (exact when the global range did not grow), a difference
/// within interpolation error that keeps memory bounded.
class TensorStats {
public:
  static constexpr int kMergeEvery = 32;

  /// Per-channel statistics along the last axis, whatever the tensor's rank.
  static constexpr int kLastAxis = -2;
  /// `channelAxis` -1: no per-channel statistics.
  explicit TensorStats(int channelAxis = -1) : axis(channelAxis) {}
  /// Adds one batch of a tensor of `shape` (row-major float32). Mask values
  /// (kMaskMagnitude) are counted and left out of every statistic; a batch
  /// that holds any adds no per-channel statistics.
  void add(const float *data, const std::vector<int64_t> &shape);
  /// The mask values added.
  const MaskCount &masks() const { return maskCount; }
  /// The histogram of everything added (merged on first call after adds).
  const Histogram &histogram();
  double min() const { return lo; }
  double max() const { return hi; }
  /// Per channel along the axis (empty without an axis).
  const std::vector<double> &channelMin() const { return cmin; }
  const std::vector<double> &channelMax() const { return cmax; }
  /// The average of per-batch channel means.
  std::vector<double> channelMean() const;
  /// Per channel: the average of per-batch means of x^2 minus the squared
  /// channelMean() (equal batches: the variance over all samples; used by
  /// activation channel equalization). Empty without an axis.
  std::vector<double> channelVariance() const;
  int64_t batches() const { return nBatches; }
  int channelAxis() const { return axis; }
  /// The shape of the last batch added (empty before any).
  const std::vector<int64_t> &shape() const { return lastShape; }

private:
  std::vector<int64_t> lastShape;
  int axis;
  double lo = 0, hi = 0;
  int64_t nBatches = 0;
  MaskCount maskCount;
  std::vector<double> cmin, cmax, meanSum, squareSum;
  /// A batch histogram not merged yet: its edges are numpy.linspace(lo, hi,
  /// 2049), rebuilt bit for bit when merged.
  struct Batch {
    double lo, hi;
    std::vector<uint32_t> counts;
  };
  std::vector<Batch> pending;
  Histogram merged;
  /// Merges `pending` (and `merged`) into `merged`.
  void fold();
};

} // namespace tpcc::quant

#endif
