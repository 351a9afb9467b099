//===- Replay.h - The corrections as plan data ------------------*- C++ -*-===//
//
// "The plan is the contract": every correction `tpcc quantize` makes to the
// model goes into the plan's `corrections` as data, so that `tpcc apply`
// makes it again and writes the same bytes. A record is an object with the
// correction's `op`, its `description` (the line the summary prints) and
// what replaying it needs (docs/plan.md lists each op's keys):
//
//   relu_unbound_correction,          the pre-statistics weight edits
//   activation_channel_equalization   (Corrections.h), by their parameters:
//                                     apply runs the same edit on the model
//   shift_negative, input_scaling     the post-threshold graph edits
//                                     (GraphEdits.h) by their fields, with
//                                     the kernel an input scaling replaces and
//                                     the grids of the tensors they add or
//                                     widen, which the plan's `tensors` lack
//
// Corrected biases are not records: they are every node's `corrected_bias`.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_CORRECTIONS_REPLAY_H
#define TPCC_QUANT_PTQ_CORRECTIONS_REPLAY_H

#include "quant/core/Result.h"
#include "quant/ptq/corrections/Corrections.h"

#include "llvm/Support/JSON.h"

#include <set>
#include <string>
#include <vector>

namespace tpcc::quant {

/// A plan's corrections read back, in the form the quantizer made them.
struct RecordedCorrections {
  /// Replayed on the model before its weights are read, as quantize made
  /// them before calibration.
  PreCorrections pre;
  /// The graph edits and the kernels they replace (for applyCorrections).
  std::vector<GraphEdit> edits;
  std::vector<ConstantEdit> kernels;
  /// The grids the edits give: the new tensors' (appended to the spec) and
  /// the shifted activations' wider ones (replacing what `tensors` says), in
  /// the order quantize added them.
  std::vector<ActivationQDQ> grids;
  /// Graph inputs an input scaling moved: their grid is their Mul's output's.
  std::set<std::string> moved;
};

/// The records of what quantize made: `pre`, then `result`'s graph edits
/// with the kernels and grids they come with (taken from `result` as it is
/// written, after any training).
std::vector<llvm::json::Object> recordCorrections(const PreCorrections &pre,
                                                  const QuantizeResult &result);

/// Reads a plan's `corrections` (`where`: the plan file) against `m`, the
/// model before any correction: every name a record gives must be in `m` (or,
/// for what an edit adds, not yet), and every parameter must fit what it
/// edits. An unknown op or a malformed record is a diagnostic naming its
/// index; failure then.
LogicalResult readCorrections(const llvm::json::Array &records, llvm::StringRef where,
                              const graph::Model &m, RecordedCorrections &out,
                              DiagnosticEngine &diags);

/// The grid a plan writes as `method`, `bits`, `scale` and `zero_point`,
/// signed when its range starts below 0 (`lo`) or its zero point is
/// negative: the integers [qmin, qmax] of its bits, its range and threshold
/// computed from them.
QuantGrid gridFromPlan(ir::QuantMethod method, int bits, double scale, int64_t zeroPoint,
                       double lo);

} // namespace tpcc::quant

#endif
