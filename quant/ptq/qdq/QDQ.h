//===- QDQ.h - Rewriting a model into QDQ form ------------------*- C++ -*-===//
//
// The last step of `tpcc quantize`: given the grid chosen for every quantized
// activation tensor and weight, rewrite the model into the QDQ form of
// docs/quantize.md ("The QDQ model"):
//
//  - a quantized weight becomes an integer initializer (int8/uint8; values of
//    narrower grids and LUT tables stay inside the 8-bit container) followed
//    by DequantizeLinear, per axis when the weight has one grid per channel;
//  - a quantized activation tensor gets a QuantizeLinear -> DequantizeLinear
//    pair; every consumer reads the DequantizeLinear output; a graph output
//    keeps its name (the pair ends in it);
//  - grids of 9 to 16 bits use int16/uint16 and ONNX Runtime's com.microsoft
//    QuantizeLinear/DequantizeLinear (ai.onnx has 16-bit ones only from opset
//    21, beyond libonnx 1.12); the model then imports com.microsoft version 1;
//  - a bias the platform quantizes becomes int32 with scale
//    input_scale * weight_scale (per channel) and zero point 0; a bias it does
//    not quantize stays float;
//  - number formats (docs/quantize.md, "Blocked weights", "Floating-point
//    elements"): a blocked weight is packed int4 (or int8/int16) behind opset
//    21's blocked DequantizeLinear; FP8 weights and activations are float8
//    codes, FP4 weights the float8e4m3fn codes of their values; the model is
//    then raised to ai.onnx opset 21 (graph::raiseOpset), checked before any
//    edit.
//
// Matching (which tensors, which grids) is the quantizer's job; this file
// only rewrites. The result passes the ONNX checker.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QDQ_QDQ_H
#define TPCC_QUANT_PTQ_QDQ_QDQ_H

#include "ir/graph/Graph.h"
#include "quant/core/Spec.h"
#include "support/Diagnostics.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// Rewrites `m` in place. The default-domain opset must be >= 10, and >= 13
/// when any weight is per channel (the quantizer converts older models first).
/// Returns false after diagnostics (a named tensor or node that does not
/// exist, a weight that is not a float constant, a grid wider than 16 bits);
/// the model is then unchanged, as the whole spec is checked before any edit.
///
/// New tensors and nodes are named after the original tensor (`W_quantized`,
/// `W_scale`, `W_zero_point`, node `W_DequantizeLinear` and its output
/// `W_DequantizeLinear_Output`; `v_QuantizeLinear`, `v_QuantizeLinear_Output`,
/// ...; a quantized graph output's producer now writes `v_float`), with `_1`,
/// `_2`... appended on a collision. One weight quantized alike for several
/// nodes shares one DequantizeLinear; quantized differently, each gets its own
/// copy. Float initializers and Constant nodes nothing reads any more go.
/// New nodes are appended to the node list; the graph's topological order
/// (set by the final verification, followed by the writer) places them.
LogicalResult rewriteToQDQ(graph::Model &m, const QDQSpec &spec, DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
