//===- Hessian.h - Layer Hessians and second-order rounding -----*- C++ -*-===//
//
// For a linear layer y = W x (a Conv as its im2col patches, a Gemm or MatMul
// as its rows), the loss ||W X - Q X||² over the calibration inputs X has
// the Hessian H = 2 X Xᵀ / n in each row of W. GramAccumulator sums X Xᵀ
// from the patches of a layer's inputs (in blocks, through oneDNN's matmul);
// roundSecondOrder quantizes W column by column onto each row's grid and
// moves every column's rounding error onto the columns not yet quantized
// through the inverse Hessian's Cholesky factor (Frantar et al., "Optimal
// Brain Compression", and GPTQ), with dampening, dead inputs zeroed and an
// optional activation order. Cholesky and inverse come from LAPACK.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_HESSIAN_H
#define TPCC_QUANT_LEARN_GPTQ_HESSIAN_H

#include "quant/core/grids/Grid.h"

#include <cstdint>
#include <vector>

namespace tpcc::quant {

/// Sums p pᵀ over patches p of `cols` values (X Xᵀ), and the patches.
/// Blocks of patches are summed on their own (in parallel, in float) and
/// added in double in a fixed order: the same sums on any thread count.
class GramAccumulator {
public:
  explicit GramAccumulator(int64_t cols)
      : cols(cols), gram(size_t(cols * cols), 0.0), sum(size_t(cols), 0.0) {}
  /// One block's sums: `g` = Pᵀ P (`cols` x `cols`) and `s` = Σ p over its
  /// `n` patches.
  struct Block {
    std::vector<float> g;
    std::vector<double> s;
    int64_t n = 0;
  };
  /// Sums the `n` patches of `p`, stored column by column: value c of patch
  /// r at p[c * ld + r] (oneDNN's matmul).
  static void sumBlock(const float *p, int64_t n, int64_t cols, int64_t ld, Block &b);
  /// Adds a block's sums.
  void add(const Block &b);
  int64_t count() const { return patches; }
  /// Σ p pᵀ, row-major `cols` x `cols` (symmetric).
  const std::vector<double> &xxt() const { return gram; }
  /// Σ p (the inputs' mean times count()).
  const std::vector<double> &total() const { return sum; }

private:
  int64_t cols, patches = 0;
  std::vector<double> gram, sum;
};

struct SecondOrderSettings {
  /// λ = dampening × mean(diag H) is added to H's diagonal.
  double dampening = 0.01;
  /// Quantize the columns in order of decreasing H_ii (GPTQ's act-order).
  bool actOrder = false;
};

struct SecondOrderResult {
  /// Σ over rows of (w − q) H (w − q)ᵀ / rows with H = 2 X Xᵀ / n: the
  /// layer's output error per row, for rounding to nearest and for the
  /// second-order rounding.
  double lossNearest = 0, lossRounded = 0;
  /// The dampening that made H positive definite (more than asked for when
  /// H was singular).
  double dampening = 0;
  int64_t deadInputs = 0; ///< inputs that were always zero
};

/// Quantizes `w` (`rows` x `cols`, row-major; row r on grid grids[r], or
/// grids[0] for all; with `gridIndex`, element (r, c) on
/// grids[gridIndex[r * cols + c]]: blocked formats, GPTQ's static groups) in
/// place with second-order error compensation, given the layer's Σ x xᵀ
/// over `n` inputs. Never worse than rounding to nearest on the layer's loss
/// (it keeps the nearest values when they are better). False when H stays
/// singular even dampened (the weights are then rounded to nearest).
bool roundSecondOrder(std::vector<double> &w, int64_t rows, int64_t cols,
                      const std::vector<QuantGrid> &grids, const std::vector<double> &xxt,
                      int64_t n, const SecondOrderSettings &settings, SecondOrderResult &result,
                      const std::vector<uint32_t> *gridIndex = nullptr);

} // namespace tpcc::quant

#endif
