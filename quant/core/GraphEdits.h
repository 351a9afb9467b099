//===- GraphEdits.h - Post-threshold edits of the QDQ copy -------*- C++ -*-===//
//
// The post-threshold corrections (shift_negative, input_scaling;
// docs/quantize.md, "Corrections") change the graph: the quantizer decides them
// from the statistics and grids (PostThreshold.h) and records them as
// GraphEdits and ConstantEdits; applyCorrections (Quantizer.h) writes them into
// the QDQ copy only with applyGraphEdits. The float reference stays the
// original model, and the new tensors (an Add or Mul output) have no float
// counterpart, so they are not measured.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_GRAPHEDITS_H
#define TPCC_QUANT_CORE_GRAPHEDITS_H

#include "ir/graph/Graph.h"
#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// A post-threshold edit of the QDQ copy.
struct GraphEdit {
  enum Kind { ShiftNegative, InputScaling } kind = ShiftNegative;
  std::string value;   ///< the activation (shift) or graph input (scaling)
  std::string node;    ///< the new Add (shift) or Mul (scaling) node
  std::string output;  ///< its output; every reader of `value` reads it
  double constant = 0; ///< delta added, or t/m multiplied
  /// Shift: a Pad on the path whose constant value becomes delta.
  std::string padNode;
  /// Shift: a Conv whose own padding becomes a Pad node `padNode` with value
  /// delta writing `padOutput` (the Conv's pads become 0).
  std::string convNode, padOutput;
  /// Scaling: the linear node whose kernel is scaled back (its ConstantEdit).
  std::string linear;
  std::string describe() const;
};

/// A float constant input replaced: input `input` of node `node` becomes a
/// new constant (named after the old one, `_scaled`) holding `values`.
struct ConstantEdit {
  std::string node;
  unsigned input = 1;
  std::vector<float> values;
};

/// Applies `kernels` (in node-name order, whatever order they are listed
/// in, so the model's bytes do not depend on it), then `edits` to `m`, then
/// relinks and verifies it. False after diagnostics (a name no longer there).
LogicalResult applyGraphEdits(graph::Model &m, const std::vector<GraphEdit> &edits,
                              const std::vector<ConstantEdit> &kernels, DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
