//===- Cleanup.h - Model clean-up before calibration ------------*- C++ -*-===//
//
// Graph transforms the quantizer runs before calibrating, each of which
// leaves the model's outputs unchanged (up to float rounding):
//
//  - removeIdentities: Identity, and Dropout in inference (its mask unused),
//    are bypassed; their consumers read the input directly.
//  - foldBatchNorms: an inference BatchNormalization whose input is the only
//    use of a Conv, ConvTranspose or Gemm output with constant weights is
//    folded into that node's weights and bias; so is a Mul, Add, Sub or Div
//    of a constant that varies only along the channel axis (a BatchNorm
//    spelled out, as Paddle exports it: Conv -> Mul -> Add).
//  - foldConstants: a node whose inputs are all constants (and a Shape of a
//    value whose shape is fully known) is computed once, by the executor's own
//    kernel, and replaced by an initializer; nodes whose outputs nothing uses
//    are removed. A Gather of a Shape folds too when the dimensions it
//    gathers are known (the others need not be).
//  - inlineConstantIfs: an If whose condition is a constant is replaced by
//    the branch it takes; fixInputs makes inputs the user fixes constants
//    first (Specialize.cpp).
//
// Each transform relinks and re-verifies the graph; new initializers get
// fresh names, so weights shared with other nodes are never changed.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_TRANSFORMS_CLEANUP_H
#define TPCC_TRANSFORMS_CLEANUP_H

#include "ir/graph/Graph.h"
#include "ir/graph/OnnxIO.h"
#include "support/Diagnostics.h"

#include <string>
#include <utility>
#include <vector>

namespace tpcc::transforms {

// Helpers the transforms share.

/// A constant the transforms may read: an initializer that is not an
/// overridable graph input, or a Constant node's output. Before IR version 4
/// every initializer had to be listed as a graph input too; there the listing
/// does not make it overridable (ONNX Runtime reads it the same way).
const graph::Tensor *constantOf(const graph::Model &m, const graph::Value *v);
/// A name no value of `g` has, starting from `base` (`base_1`, `base_2`, ...).
std::string freshName(const graph::Graph &g, const std::string &base);

/// Inputs the user fixes (`--fix-input NAME=VALUE`): name, value.
using FixedInputs = std::vector<std::pair<std::string, double>>;

struct CleanupReport {
  FixedInputs fixed;       ///< inputs made constants (fixInputs)
  graph::DimValues dims;   ///< symbolic dimensions given sizes (graph::bindDims)
  unsigned identities = 0; ///< Identity/Dropout nodes removed
  unsigned batchNorms = 0; ///< BatchNormalization nodes folded
  unsigned arithmetic = 0; ///< Mul/Add/Sub/Div of per-channel constants folded
  unsigned folded = 0;     ///< nodes computed into constants
  unsigned dead = 0;       ///< nodes removed because nothing used them
  unsigned branches = 0;   ///< If nodes replaced by the branch they take

  /// "1 BatchNormalization folded, 2 Identity/Dropout removed, ..." (only
  /// the non-zero counts); "" when nothing changed.
  std::string describe() const;
};

unsigned removeIdentities(graph::Model &m);
/// Returns the BatchNormalizations folded; `arithmetic`, when given, gets
/// the Mul/Add/Sub/Div nodes folded.
unsigned foldBatchNorms(graph::Model &m, unsigned *arithmetic = nullptr);
/// Returns false when a kernel failed on constant data (reported).
LogicalResult foldConstants(graph::Model &m, DiagnosticEngine &diags, CleanupReport &report);
/// Makes each input of `fixed` a constant holding its value (of the input's
/// type, one element; an error for an input that holds more, a value the
/// type cannot hold, or a name that is no input). Clean-up then folds what
/// it decides, and inlineConstantIfs the branches it picks.
LogicalResult fixInputs(graph::Model &m, const FixedInputs &fixed, DiagnosticEngine &diags);
/// Replaces each If whose condition is a constant by the nodes of the
/// branch it takes (the branch's constants become initializers, its names
/// are kept unless the graph has them); false after a diagnostic.
LogicalResult inlineConstantIfs(graph::Model &m, DiagnosticEngine &diags, CleanupReport &report);
/// All of the above, in the order constant folding and If inlining (until no
/// condition is left to fold), identities, batch norms (folding first turns
/// computed weights into constants).
LogicalResult cleanupModel(graph::Model &m, DiagnosticEngine &diags, CleanupReport &report);

} // namespace tpcc::transforms

#endif
