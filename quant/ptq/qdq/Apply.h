//===- Apply.h - A calibrated plan back into a QDQ spec ---------*- C++ -*-===//
//
// `tpcc apply --plan plan.json MODEL -o OUT.onnx`: the plan `tpcc quantize
// --plan-out` wrote (and a user may have edited) is read back into the
// QDQSpec the rewrite takes, with no calibration: activation grids come from
// each tensor's scale, zero point, bits and range; weight grids from the
// weight_grids the quantizer recorded (a weight without them gets its
// threshold chosen from its values, which needs no data); corrected biases
// from corrected_bias. The plan must be for this model: same node count and
// the same name and operator at every index. The model corrections the plan
// records (`corrections`: relu_unbound_correction and channel equalization
// change weights, shift_negative and input_scaling add nodes) are replayed
// in the order quantize made them (corrections/Replay.h).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QDQ_APPLY_H
#define TPCC_QUANT_PTQ_QDQ_APPLY_H

#include "ir/graph/Graph.h"
#include "quant/core/Result.h"
#include "support/Diagnostics.h"
#include "transforms/Cleanup.h"

#include "llvm/ADT/StringRef.h"

namespace tpcc::quant {

/// What the plan says the model was specialized with: the inputs its
/// `fixed_inputs` fixes and the dimension sizes of its `dims` (none when it
/// has none); false after a diagnostic.
LogicalResult specializationOfPlan(llvm::StringRef json, llvm::StringRef where,
                                   transforms::FixedInputs &fixed, graph::DimValues &dims,
                                   DiagnosticEngine &diags);

/// Parses `json` (the plan file `where`) against `m` (loaded and cleaned up
/// as `tpcc quantize` does). The weight edits the plan records before
/// statistics (relu bounds, channel equalization) are made on `m` first, as
/// quantize made them on its copy; its graph edits, with the kernels and
/// grids they come with, go into `result` for applyCorrections (Finish.h),
/// which also completes the spec then. False after diagnostics.
LogicalResult specFromPlan(llvm::StringRef json, llvm::StringRef where, graph::Model &m,
                           QuantizeResult &result, DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
