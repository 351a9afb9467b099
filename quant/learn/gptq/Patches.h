//===- Patches.h - A convolution's kernel as rows and its inputs as patches -*- C++ -*-===//
//
// Second-order rounding sees a convolution as a matrix product: each output
// channel is a row of weights, and each output position reads one patch of
// the input (im2col), so y[row, position] = Σ_c W[row, c] · patch[c]. For a
// Conv the kernel is [O, I/g, k...] and the patch of output (b, oy, ox) holds
// x[b, channel of the group, oy·s − p + ky·d, ...]; for a ConvTranspose the
// kernel is [I, O/g, k...] and the patch holds x[b, channel, (oy + p − ky·d)/s,
// ...] where that division is exact, 0 elsewhere. 1-D convolutions are 2-D
// ones with a height of one.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_PATCHES_H
#define TPCC_QUANT_LEARN_GPTQ_PATCHES_H

#include "runtime/Tensor.h"
#include "runtime/ops/ConvGeometry.h"

namespace tpcc::quant {

/// A Conv or ConvTranspose kernel read as rows (output channels, group by
/// group) x columns (input channels of the row's group x kernel taps).
struct ConvRows {
  bool transposed = false;
  int64_t groups = 1, rows = 0, cols = 0;
  int64_t rowsPerGroup = 0, channelsPerGroup = 0, taps = 1;

  /// From the kernel's shape; false when the groups do not divide it.
  bool init(const rt::Shape &w, int64_t groups, bool transposed);
  /// Index of element (row, column) in the ONNX kernel.
  int64_t at(int64_t row, int64_t col) const;
  /// Output positions of `batch` inputs: batch x `g`'s spatial output size.
  static int64_t positions(const rt::ConvGeometry &g, int64_t batch);
};

/// Writes the patches of output positions [p0, p1) of group `grp` from the
/// layer's input `x` (plain float, rank 3 or 4): column c of the patch of
/// position p at out[c * ld + p − p0].
void convPatches(const ConvRows &l, const rt::ConvGeometry &g, const rt::Tensor &x, int64_t grp,
                 int64_t p0, int64_t p1, float *out, int64_t ld);

} // namespace tpcc::quant

#endif
