//===- Corrections.h - Model transforms around calibration ------*- C++ -*-===//
//
// The recipe's model corrections (algorithms.md 4) other than bias
// correction, in two groups:
//
//  - pre-statistics corrections change weights so that the float model
//    computes the same outputs with friendlier activations. They run on both
//    copies `tpcc quantize` holds (the float reference and the copy that
//    becomes the QDQ model), before the plan is rebuilt and calibration runs:
//    relu_unbound_correction (Op -> Clip(0, M) -> Op, M not a power of two:
//    the bound becomes 8) and activation_channel_equalization (Conv -> Relu
//    -> Conv, channels scaled by e_c = min(1, 1/sigma'_c) with sigma'_c the
//    channel's standard deviation measured in an extra statistics pass; MCT
//    takes sigma' from the folded BatchNorm's prior instead, which clean-up
//    has already folded away).
//
//  - post-threshold graph edits (GraphEdit) that the quantizer decides from
//    the statistics and grids (shift_negative, input_scaling; Quantizer.cpp
//    and GraphEdits.cpp) and applyCorrections writes into the QDQ copy only:
//    the float reference stays the original model, and the new tensors (an
//    Add or Mul output) have no float counterpart, so they are not measured.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_BACKENDS_QUANTIZE_CORRECTIONS_CORRECTIONS_H
#define TPCC_BACKENDS_QUANTIZE_CORRECTIONS_CORRECTIONS_H

#include "backends/plan/Plan.h"
#include "backends/quantize/stats/Calibrate.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// relu_unbound_correction: first -> clip(0, M) -> second; r = M / 8.
struct ReluBound {
  std::string clip, first, second;
  double bound = 0, ratio = 1;
};

/// activation_channel_equalization: first -> relu [-> Pad] -> second; output
/// channel c of `first` is scaled by factors[c], input channel c of `second`
/// by 1 / factors[c].
struct ChannelEqualization {
  std::string relu, first, second;
  std::vector<double> factors;
};

struct PreCorrections {
  std::vector<ReluBound> reluBounds;
  std::vector<ChannelEqualization> equalizations;
  bool empty() const { return reluBounds.empty() && equalizations.empty(); }
  /// One line per correction, for the plan (`corrections`) and messages.
  std::vector<std::string> describe() const;
};

/// Finds the pre-statistics corrections `recipe` turns on in `plan.model`.
/// Channel equalization runs one statistics pass over `data` with `ex`
/// (which runs plan.model). False after diagnostics.
bool findPreStatisticsCorrections(const plan::Plan &plan, const ir::Recipe &recipe,
                                  rt::Executor &ex, CalibrationData &data,
                                  PreCorrections &out, DiagnosticEngine &diags);

/// Applies `pre` to `m` (either copy of the model: nodes are found by name);
/// the model stays numerically equivalent. False after diagnostics.
bool applyPreStatisticsCorrections(graph::Model &m, const PreCorrections &pre,
                                   DiagnosticEngine &diags);

/// A post-threshold edit of the QDQ copy.
struct GraphEdit {
  enum Kind { ShiftNegative, InputScaling } kind = ShiftNegative;
  std::string value;  ///< the activation (shift) or graph input (scaling)
  std::string node;   ///< the new Add (shift) or Mul (scaling) node
  std::string output; ///< its output; every reader of `value` reads it
  double constant = 0; ///< delta added, or t/m multiplied
  /// Shift: a Pad on the path whose constant value becomes delta.
  std::string padNode;
  /// Shift: a Conv whose own padding becomes a Pad node `padNode` with value
  /// delta writing `padOutput` (the Conv's pads become 0).
  std::string convNode, padOutput;
  std::string describe() const;
};

/// The (node, values) replacements of float constants: `tensor` is the new
/// name base, `input` the node's input index.
struct ConstantEdit {
  std::string node;
  unsigned input = 1;
  std::vector<float> values;
};

/// Applies `edits` to `m`, then relinks and verifies it. False after
/// diagnostics (a name no longer there).
bool applyGraphEdits(graph::Model &m, const std::vector<GraphEdit> &edits,
                     const std::vector<ConstantEdit> &kernels, DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
