//===- Cleanup.h - Model clean-up before calibration ------------*- C++ -*-===//
//
// Graph transforms the quantizer runs before calibrating, each of which
// leaves the model's outputs unchanged (up to float rounding):
//
//  - removeIdentities: Identity, and Dropout in inference (its mask unused),
//    are bypassed; their consumers read the input directly.
//  - foldBatchNorms: an inference BatchNormalization whose input is the only
//    use of a Conv, ConvTranspose or Gemm output with constant weights is
//    folded into that node's weights and bias.
//  - foldConstants: a node whose inputs are all constants (and a Shape of a
//    value whose shape is fully known) is computed once, by the executor's own
//    kernel, and replaced by an initializer; nodes whose outputs nothing uses
//    are removed.
//
// Each transform relinks and re-verifies the graph; new initializers get
// fresh names, so weights shared with other nodes are never changed.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TRANSFORMS_CLEANUP_H
#define TPCC_TRANSFORMS_CLEANUP_H

#include "ir/graph/Graph.h"
#include "support/Diagnostics.h"

#include <string>

namespace tpcc::transforms {

struct CleanupReport {
  unsigned identities = 0; ///< Identity/Dropout nodes removed
  unsigned batchNorms = 0; ///< BatchNormalization nodes folded
  unsigned folded = 0;     ///< nodes computed into constants
  unsigned dead = 0;       ///< nodes removed because nothing used them

  /// "1 BatchNormalization folded, 2 Identity/Dropout removed, ..." (only
  /// the non-zero counts); "" when nothing changed.
  std::string describe() const;
};

unsigned removeIdentities(graph::Model &m);
unsigned foldBatchNorms(graph::Model &m);
/// Returns false when a kernel failed on constant data (reported).
LogicalResult foldConstants(graph::Model &m, DiagnosticEngine &diags, CleanupReport &report);
/// All of the above, in the order constant folding, identities, batch norms
/// (folding first turns computed weights into constants).
LogicalResult cleanupModel(graph::Model &m, DiagnosticEngine &diags, CleanupReport &report);

} // namespace tpcc::transforms

#endif
