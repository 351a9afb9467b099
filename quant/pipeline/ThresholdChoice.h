//===- ThresholdChoice.h - activation_threshold: [a, b, ...] ------*- C++ -*-===//
//
// A recipe may list the activation threshold methods to try
// (`activation_threshold: [mse, no_clipping, kl]`). Each choice of threshold is
// made tensor by tensor, on that tensor's own error; but a network's outputs
// do not weigh every tensor's error alike: clipping a transformer's attention
// scores or a GELU's input costs the logits more than MSE on those tensors
// says, while a CNN's ReLU outputs gain from MSE's clipping. So the model is
// quantized once per method (quietly, without the request's stages), each
// scored by the lowest pooled SQNR of its outputs (or of the `--min-sqnr-at`
// tensors) on the measured samples, and the best is kept; a later method
// must beat an earlier one by kMinThresholdGainDb. With stages (GPTQ,
// fine-tuning) the chosen method quantizes once more with them. The choice
// is a section of the report and a line of the summary; the plan records each
// tensor's grid, so `tpcc apply` needs no choice.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PIPELINE_THRESHOLDCHOICE_H
#define TPCC_QUANT_PIPELINE_THRESHOLDCHOICE_H

#include "quant/pipeline/Pipeline.h"

#include <utility>
#include <vector>

namespace tpcc::quant {

/// What a later method must gain over an earlier one (dB) to be chosen.
constexpr double kMinThresholdGainDb = 0.01;

struct ThresholdChoiceReport : StageReport {
  /// Each method tried, with its outputs' lowest pooled SQNR (dB).
  std::vector<std::pair<ir::ThresholdMethod, double>> tried;
  ir::ThresholdMethod chosen = ir::ThresholdMethod::MSE;
  int64_t samples = 0; ///< the measured samples the scores come from

  /// "  activation threshold: kl, the best of mse 33.52, no_clipping 34.15, kl 34.64 dB ..."
  void print(llvm::raw_ostream &os) const override;
  /// The report's `activation_threshold_choice` section.
  void writeJSON(llvm::json::OStream &j) const override;
};

/// quantizeModel for a request whose recipe lists several activation
/// threshold methods (see above); `out` is the chosen method's outcome, its
/// stages ending with the ThresholdChoiceReport.
LogicalResult quantizeChoosingThreshold(const QuantizeRequest &r, QuantizeOutcome &out,
                                        DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
