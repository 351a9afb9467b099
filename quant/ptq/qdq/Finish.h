//===- Finish.h - Completing the spec, writing the corrections --*- C++ -*-===//
//
// What follows the grid choices, the same for `tpcc quantize` and `tpcc
// apply`: the spec completed on the model it rewrites, and what the
// corrections changed (biases, scaled and trained kernels, graph edits)
// written into the QDQ copy.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QDQ_FINISH_H
#define TPCC_QUANT_PTQ_QDQ_FINISH_H

#include "ir/graph/Graph.h"
#include "quant/core/Result.h"
#include "support/Diagnostics.h"

namespace tpcc::quant {

/// Completes `result.spec` from its activation and weight grids, the same
/// for `tpcc quantize` and `tpcc apply`: tensors that ops moving values
/// (MaxPool, Reshape, Flatten...) compute from a quantized input get its grid
/// again (numerically the identity; it lets ONNX Runtime stay in integers),
/// and biases of Conv/ConvTranspose/Gemm whose input and kernel are
/// quantized become int32 on the accumulator grid.
void completeSpec(const graph::Model &m, QuantizeResult &result);

/// Writes the corrected biases of `result` into `m` (a copy of the plan's
/// model, by node names).
void applyBiases(graph::Model &m, const QuantizeResult &result);

/// Writes the trained kernels of `result` into `m`'s initializers (`tpcc
/// apply` of a fine-tuned plan); false after diagnostics when one does not
/// fit its input.
LogicalResult applyTrainedWeights(graph::Model &m, const QuantizeResult &result,
                                  DiagnosticEngine &diags);

/// Writes everything the corrections changed into `m` (the QDQ copy of the
/// plan's model, before rewriteToQDQ): corrected biases (applyBiases),
/// scaled kernels and graph edits, then completes `result.spec` on the
/// edited model when quantizePlan deferred it. False after diagnostics.
LogicalResult applyCorrections(graph::Model &m, QuantizeResult &result, DiagnosticEngine &diags);

/// Widens the kernel grid of every channel whose bias, on the accumulator
/// grid (input scale x kernel scale), would not fit int32 (a filter whose
/// weights are all about 0 has a tiny scale), as ONNX Runtime's quantizer
/// does; `m` holds the final biases. Returns the channels widened.
size_t fitBiasesInInt32(const graph::Model &m, QDQSpec &spec);

} // namespace tpcc::quant

#endif
