//===- ConstantOperands.h - Constant operands as weights --------*- C++ -*-===//
//
// MCT quantizes the constant operands of functional ops (the constant of
// `x + c`, `x * c`, `concat([x, c])`, a Gather's table) with the op config's
// default weight config (its "positional attributes"). In ONNX these are
// constant inputs that no framework slot declares. A constant operand is an
// input of a matched node that is a float constant and that the node's schema
// marks differentiable (data the op computes with: Add's B, Concat's inputs,
// Gather's data; not Clip's bounds, Resize's scales or Pad's value). It
// becomes a PlanWeight with slot `input[i]` when some candidate config of the
// node quantizes its default weight config.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_PLAN_CONSTANTOPERANDS_H
#define TPCC_PLAN_CONSTANTOPERANDS_H

#include "plan/Plan.h"

namespace tpcc::plan {

/// The plan's key of constant operand `input`: `input[i]`.
inline std::string operandSlot(int64_t input) { return "input[" + std::to_string(input) + "]"; }
/// Whether a plan's weight key names a constant operand (not a framework slot).
inline bool isOperandSlot(llvm::StringRef slot) { return slot.startswith("input["); }

/// Appends the constant operands of `pn` (after its declared slots).
void addConstantOperands(PlanNode &pn, const graph::Model &model);

/// The output-channel axis of constant operand `c` of a node whose output
/// has rank `outRank` (if known): its only axis longer than 1, else the axis
/// that broadcasting lines up with the output's axis 1 (ONNX's channel
/// axis) when that one is longer than 1; none otherwise (per tensor).
std::optional<int64_t> constantChannelAxis(const std::vector<int64_t> &dims,
                                           std::optional<size_t> outRank);

} // namespace tpcc::plan

#endif
