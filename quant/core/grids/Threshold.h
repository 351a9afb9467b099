//===- Threshold.h - Threshold and range selection (docs/algorithms.md §2) -*- C++ -*-===//
//
// Chooses the grid of one activation tensor (from its histogram) or of one
// weight tensor or channel (from its values), for every threshold method of
// the recipe (no_clipping, mse, mae, lp, kl; hmse for weights) and every quantization method
// (power_of_two, symmetric, uniform; LUT methods in Lut.h), exactly as MCT
// defines the searches, so results are comparable.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_GRIDS_THRESHOLD_H
#define TPCC_QUANT_CORE_GRIDS_THRESHOLD_H

#include "ir/TpcIR.h"
#include "quant/core/grids/Grid.h"
#include "quant/core/stats/Histogram.h"

#include <cstdint>
#include <utility>

namespace tpcc::quant {

/// What one selection did: filled when SelectionOptions::trace is set (tests
/// and diagnostics; give each concurrent selection its own).
struct SearchTrace {
  /// Iterations of the symmetric or uniform search run (the stop rule may
  /// end it before the schedule's count); 0 for no_clipping and POT.
  int iterations = 0;
  /// Error evaluations, the starting point included.
  int evaluations = 0;
};

/// How long one search runs (docs/algorithms.md §4).
struct SearchSchedule {
  /// Power of two: candidates 2^(1 + ceil(log2 m) - i), i = 0..count-1.
  int potCandidates;
  /// Symmetric iterative search: at most `symmetricIterations` rounds of
  /// SearchSchedules::candidates thresholds; the factors narrow every
  /// `symmetricNarrowEvery` rounds.
  int symmetricIterations, symmetricNarrowEvery;
  /// Uniform range search: at most `uniformIterations` rounds over an N x N
  /// grid of factors (N = `uniformGrid`).
  int uniformIterations, uniformGrid;
};

/// The schedules of every search and what they share: MCT's defaults
/// (qparams_search.py), docs/algorithms.md §4.
struct SearchSchedules {
  SearchSchedule activations;       ///< from histograms
  SearchSchedule weightsPerTensor;  ///< one search per weight tensor
  SearchSchedule weightsPerChannel; ///< one search per output channel
  int candidates;                   ///< symmetric candidates per round, linspace(low t, high t)
  double low, high;                 ///< the first round's factors (symmetric and uniform)
  double narrowLow, narrowHigh;     ///< symmetric narrowing: low * narrowLow, high * narrowHigh...
  double lowLimit, highLimit;       ///< ... until low reaches lowLimit, high highLimit
  double tolerance;                 ///< stop when a round improves the error by less
};

inline constexpr SearchSchedules kSearchSchedules = {
    /*activations=*/{20, 20, 4, 30, 12},
    /*weightsPerTensor=*/{10, 40, 5, 30, 8},
    /*weightsPerChannel=*/{10, 15, 3, 10, 8},
    /*candidates=*/30,
    /*low=*/0.7,
    /*high=*/1.2,
    /*narrowLow=*/1.02,
    /*narrowHigh=*/0.98,
    /*lowLimit=*/0.97,
    /*highLimit=*/1.03,
    /*tolerance=*/1e-11,
};

struct SelectionOptions {
  ir::ThresholdMethod error = ir::ThresholdMethod::MSE;
  double p = 2;                                   ///< lp
  double minThreshold = ir::kDefaultMinThreshold; ///< every threshold is floored here
  /// HMSE: each value's weight (its Hessian diagonal), parallel to the
  /// values; without it HMSE is MSE.
  const float *hessian = nullptr;
  SearchTrace *trace = nullptr; ///< optional: receives what the search did
  /// The element the grids hold: a floating-point one searches thresholds
  /// of floatGrid (symmetric; power_of_two: power-of-two scales).
  ir::ElementFormat element = ir::ElementFormat::Int;
};

/// The error of quantizing the histogram `h` (bin lower edges as values)
/// with `g` under `o.error` (MSE, MAE, LP; KL: the KL divergence of
/// docs/algorithms.md §2.2). Smaller is better.
double histogramError(const Histogram &h, const QuantGrid &g, const SelectionOptions &o);
/// The error of quantizing `n` values with `g` (MSE, MAE, LP; KL through a
/// 2048-bin histogram of the values).
double valuesError(const float *x, int64_t n, const QuantGrid &g, const SelectionOptions &o);

/// The grid of an activation tensor with histogram `h` (outliers already
/// removed). `isSigned`: decided by the caller (platform signedness, known
/// output range, or a negative non-empty bin). For method Uniform the
/// signedness is ignored.
QuantGrid selectActivationGrid(const Histogram &h, ir::QuantMethod method, int bits, bool isSigned,
                               const SelectionOptions &o);

/// The grid of one weight tensor or channel: `n` values at `x` (signed
/// always). `perChannel` picks the per-channel search iteration counts.
QuantGrid selectWeightGrid(const float *x, int64_t n, ir::QuantMethod method, int bits,
                           bool perChannel, const SelectionOptions &o);

/// The smallest and largest of `n` values at `x` ({0, 0} when n is 0).
std::pair<double, double> valueRange(const float *x, int64_t n);

/// The weights' no-clipping threshold M = max(-min, max * 2^(bits-1) /
/// (2^(bits-1) - 1)): the largest positive value lands on t - scale.
double weightNoClippingMax(double min, double max, int bits);

} // namespace tpcc::quant

#endif
