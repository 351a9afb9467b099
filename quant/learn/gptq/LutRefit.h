//===- LutRefit.h - Look-up tables refitted after second-order rounding -*- C++ -*-===//
//
// A LUT kernel's table is k-means' centres of the weights as they were
// (docs/algorithms.md §1.4). Second-order rounding moves every weight onto a
// table entry, spreading each rounding error over the columns still to come, so
// the entries a weight lands on are no longer the best values for the weights
// that use them. With the assignment fixed, the layer's loss (w − q) H (w − q)ᵀ
// is quadratic in the entries: refitLutTable solves for them (least squares
// through H, LAPACK's Cholesky), rounds them back onto the integer multiplier
// grid and keeps them when the loss drops. The entry that stands for 0 stays 0,
// as the table's definition fixes it.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_LUTREFIT_H
#define TPCC_QUANT_LEARN_GPTQ_LUTREFIT_H

#include "quant/core/grids/Grid.h"

#include <cstdint>
#include <vector>

namespace tpcc::quant {

/// One row of a layer that a table serves: its float weights, its values
/// after rounding (on the table's grid; rewritten when the table is), and
/// the Hessian of its inputs, H = 2 X Xᵀ / n (`cols` x `cols`, row-major).
struct LutRow {
  const double *w = nullptr;
  double *q = nullptr;
  const double *h = nullptr;
};

struct LutRefit {
  double lossBefore = 0, lossAfter = 0; ///< Σ over the rows of (w − q) H (w − q)ᵀ
  bool refitted = false;                ///< the table changed (the loss dropped)
};

/// Refits the table of LUT grid `g` to `rows` (`cols` values each), all on
/// `g`. On success the grid's table and the rows' values change together;
/// otherwise neither does.
LutRefit refitLutTable(QuantGrid &g, const std::vector<LutRow> &rows, int64_t cols);

} // namespace tpcc::quant

#endif
