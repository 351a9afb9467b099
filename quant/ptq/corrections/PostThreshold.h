//===- PostThreshold.h - shift_negative and input_scaling decisions -*- C++ -*-===//
//
// Internal to quant/ptq: the post-threshold corrections (docs/quantize.md,
// "Corrections") the quantizer decides once every activation grid is chosen. A
// decision records a GraphEdit (GraphEdits.h) for the QDQ copy, replaces the
// grids of the tensors it changes, and leaves what the next linear op needs (a
// compensated bias, a scaled kernel, the shift and scale of its input's mean
// for bias correction) in a LinearAdjust.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_CORRECTIONS_POSTTHRESHOLD_H
#define TPCC_QUANT_PTQ_CORRECTIONS_POSTTHRESHOLD_H

#include "plan/Plan.h"
#include "quant/core/Result.h"

#include <map>
#include <optional>
#include <set>

namespace tpcc::quant::edits {

/// What the post-threshold edits leave for one linear node (by name).
struct LinearAdjust {
  double inputShift = 0;                    ///< delta added to the node's input
  double inputScale = 1;                    ///< t/m the node's input is multiplied by
  std::optional<std::vector<float>> bias;   ///< the compensated bias
  std::optional<std::vector<float>> kernel; ///< the scaled kernel
};

struct PostThreshold {
  const plan::Plan &plan;
  const ir::Recipe &recipe;
  /// Activation grids by value id of plan.model; edits reset and replace them.
  std::vector<std::optional<QuantGrid>> &grids;
  std::vector<std::unique_ptr<TensorStats>> &stats;
  QuantizeResult &result;
  /// Grids of the tensors the edits create (no value in plan.model).
  std::vector<ActivationQDQ> added;
  std::map<std::string, LinearAdjust> linear;
  std::set<std::string> taken;
};

/// input_scaling: graph input -> [Pad] -> Conv/Gemm with threshold t > m.
void decideInputScaling(PostThreshold &s);
/// shift_negative: see GraphEdits.h and docs/quantize.md, "Corrections".
void decideShiftNegative(PostThreshold &s);

} // namespace tpcc::quant::edits

#endif
