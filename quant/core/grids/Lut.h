//===- Lut.h - Non-uniform (LUT) quantization (docs/algorithms.md §1.4) -*- C++ -*-===//
//
// lut_pot / lut_sym: the weights of a channel (or tensor), scaled onto the
// 2^lutBits multiplier grid by a threshold (power-of-two or symmetric
// no-clipping selection), are clustered by k-means into at most 2^bits
// centres, rounded to integers; the centre nearest 0 becomes 0. The result
// is a QuantGrid whose `lut` holds the centres: in the QDQ model the weight
// is an integer tensor of the multiplier grid that uses only those values.
// k-means is deterministic (fixed-seed k-means++ initialisation, 10 restarts,
// the lowest inertia wins).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_GRIDS_LUT_H
#define TPCC_QUANT_CORE_GRIDS_LUT_H

#include "quant/core/grids/Grid.h"
#include "quant/core/stats/Histogram.h"

#include <vector>

namespace tpcc::quant {

/// The multiplier bits m of LUT grids (docs/algorithms.md §4).
constexpr int kLutMultiplierBits = 8;

/// `method` is LutPot or LutSym; `bits` < `lutBits` <= 8. The threshold's
/// no-clipping M uses `bits` (as MCT passes the LUT bits to it).
QuantGrid selectLutGrid(const float *x, int64_t n, ir::QuantMethod method, int bits, int lutBits);

/// LUT activations (docs/algorithms.md §1.4): t = POT (LutPot) or plain
/// (LutSym) of the largest |upper edge| of non-empty bins, at least
/// `minThreshold`; the edges scaled onto the signed or unsigned `lutBits` grid
/// are clustered by weighted k-means (each count on its bin's upper edge), no
/// zero forcing.
QuantGrid selectLutActivationGrid(const Histogram &h, ir::QuantMethod method, int bits, int lutBits,
                                  bool isSigned, double minThreshold = ir::kDefaultMinThreshold);

/// Deterministic weighted 1-D k-means, as MCT's sklearn KMeans call: k-means++
/// (2 + ln k local trials), Lloyd up to 300 iterations with tolerance 1e-4 *
/// variance of `values`, `restarts` runs from a fixed-seed generator, the
/// lowest inertia wins. `weights` empty: all 1; zero-weight values do not
/// count. k is capped at the number of distinct weighted values. Returns the
/// centres, sorted.
std::vector<double> kmeans1d(const std::vector<double> &values, const std::vector<double> &weights,
                             int k, int restarts = 10);

} // namespace tpcc::quant

#endif
