//===- TwoLevel.h - Block scales as factors under group scales -*- C++ -*-===//
//
// Two-level scales (docs/quantize.md "Two-level scales"): a blocked weight
// whose blocks' scales are stored as small factors (uint4 or uint8 integers,
// Qualcomm's LPBQ; FP8 E4M3 values, NVIDIA's NVFP4) times one scale per
// group (a channel, or the tensor). Each block first gets its own grid from
// the weights' threshold search; the group's scale is then the largest of
// its blocks' scales over the factor format's largest value, stored in the
// group's scale format; each block's factor is one of the two factor values
// next to its own scale over the group's (the one with the smaller error
// under the search's error measure; under `no_clipping` the larger one).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_FORMAT_TWOLEVEL_H
#define TPCC_QUANT_CORE_FORMAT_TWOLEVEL_H

#include "quant/core/format/NumberFormat.h"
#include "quant/core/grids/Threshold.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace tpcc::quant {

/// Whether `f` can be a block factor the quantizer chooses (uint4, uint8,
/// fp8_e4m3; e8m0 factors have no ONNX type before opset 24).
bool isFactorFormat(ir::ScaleFormat f);
/// The largest factor of a factor format (uint4 15, uint8 255, fp8_e4m3 448).
double factorMax(ir::ScaleFormat f);

/// The values of block `b`: fills `v` (and `h`, their Hessian weights,
/// when not null) and returns how many there are.
using BlockValues = llvm::function_ref<int64_t(size_t b, float *v, float *h)>;

/// Replaces the scales of `grids`, one per block in the order of the
/// blocked scale of shape `scaleShape` (blocks of at most `block` values),
/// by two-level ones: a group per index along `groupAxis` of `scaleShape`
/// (-1: one group), its scale in `groupFormat`, each block's factor in
/// `factorFormat`. Returns the factors and group scales; each grid's scale
/// becomes float32(factor x group scale).
TwoLevelScales factorScales(std::vector<QuantGrid> &grids, const std::vector<int64_t> &scaleShape,
                            int64_t groupAxis, ir::ScaleFormat groupFormat,
                            ir::ScaleFormat factorFormat, int64_t block, const SelectionOptions &o,
                            bool hessian, BlockValues values);

/// The block scale float32 computes from a factor and its group's scale.
inline double factorScale(double factor, double groupScale) {
  return double(float(factor) * float(groupScale));
}

} // namespace tpcc::quant

#endif
