//===- Patches.h - A convolution's inputs as patches ------------*- C++ -*-===//
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

#include "ir/graph/LinearKernel.h"
#include "runtime/Tensor.h"
#include "runtime/ops/ConvGeometry.h"

namespace tpcc::quant {

/// Output positions of `batch` inputs: batch x `g`'s spatial output size.
int64_t convPositions(const rt::ConvGeometry &g, int64_t batch);

/// Writes the patches of output positions [p0, p1) of group `grp` from the
/// layer's input `x` (plain float, rank 3 or 4): column c of the patch of
/// position p at out[c * ld + p − p0].
void convPatches(const graph::LinearKernel &l, const rt::ConvGeometry &g, const rt::Tensor &x,
                 int64_t grp, int64_t p0, int64_t p1, float *out, int64_t ld);

} // namespace tpcc::quant

#endif
