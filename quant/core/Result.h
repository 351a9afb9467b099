//===- Result.h - What the quantizer chose, and its report rows -*- C++ -*-===//
//
// The quantizer's options and its result: the QDQ spec (every grid), the
// report's rows, the corrections made (biases, graph edits, scaled and trained
// kernels). Every layer of quant/ reads or fills a QuantizeResult: the
// post-training quantizer (ptq/) fills it, the searches (search/) and learned
// rounding (learn/) change it, the pipeline writes it into the plan and the
// report.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_RESULT_H
#define TPCC_QUANT_CORE_RESULT_H

#include "ir/TpcIR.h"
#include "quant/core/GraphEdits.h"
#include "quant/core/Spec.h"
#include "quant/core/stats/Calibrate.h"

#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::quant {

struct QuantizeOptions {
  ir::Recipe recipe; ///< defaults when the user names none
  /// Called with a phase name and its progress (done of total; total 0 when
  /// unknown).
  std::function<void(const char *, int64_t, int64_t)> progress;
  /// Statistics already collected on the same data and model (by value id;
  /// mixed precision's pass): used when they hold every tensor quantizePlan
  /// asks for, with the same channel axis; collected again otherwise.
  std::vector<std::unique_ptr<TensorStats>> *stats = nullptr;
};

/// One row of the summary table and the report.
struct TensorReport {
  std::string tensor, node, opType, opset, config;
  bool weight = false;   ///< a weight (else an activation)
  bool quantized = true; ///< false: a float model output, measured only
  ir::QuantMethod method = ir::QuantMethod::Symmetric;
  int bits = 8;
  bool isSigned = true;
  std::string threshold; ///< the threshold method that chose the grid
  double scale = 0;      ///< the first channel's for per-channel weights
  int64_t zeroPoint = 0;
  int64_t channels = 1; ///< grids: channels, or blocks when `block`
  int64_t block = 0;    ///< weights in blocks of this many elements
  /// Two-level scales: the format of the blocks' factors.
  std::optional<ir::ScaleFormat> blockFactor = {};
  ir::ElementFormat element = ir::ElementFormat::Int;
  double lo = 0, hi = 0; ///< the grid's range
  double sqnr = 0;       ///< dB, filled by measureLayers (inf: exact)
  bool measured = false;
  /// Also from measureLayers, of the float model's values: RMS, largest
  /// magnitude, the share outside the grid [lo, hi], and the SQNR of this
  /// tensor's own grid on them (what quantizing it alone loses, without the
  /// error the tensors before it bring).
  double rms = 0, maxAbs = 0, clipped = 0, ownSqnr = 0;
  /// The lowest SQNR (dB) over the measured samples (the slices along axis
  /// 0 of each batch; slices without signal skipped), of the tensor and of
  /// its own grid alone: a probability that is tiny on some inputs keeps
  /// little there while the pooled figures, which the large values
  /// dominate, look fine. +inf: no sliced sample lost anything.
  double worstSampleSqnr = INFINITY, worstSampleOwnSqnr = INFINITY;
  /// When a correction moved the tensor (shift_negative adds delta,
  /// input_scaling multiplies), it is measured against the float model's
  /// `reference` (empty: `tensor` itself) times `refScale` plus `refOffset`.
  std::string reference;
  double refScale = 1, refOffset = 0;
  /// Measured as the application reads it (`--min-sqnr-at sigmoid(NAME)`):
  /// the SQNR figures compare sigmoid(value) of both models (the logits of a
  /// detector, read as probabilities); RMS, range and clipping stay the
  /// values'.
  bool readAsSigmoid = false;
};

struct QuantizeResult {
  QDQSpec spec;
  /// Outputs of quantization-preserving ops left without a quantizer (the
  /// platform's insert_preserving_quantizers is false): completeSpec gives
  /// them none either.
  std::set<std::string> withoutQuantizer;
  /// Tensors the plan quantizes that hold mask values (kMaskMagnitude: an
  /// attention mask's -FLT_MAX, the scores it was added to): kept float,
  /// with why (tensor name, reason), in plan order.
  std::vector<std::pair<std::string, std::string>> keptFloat;
  std::vector<TensorReport> tensors;
  /// New float biases after bias correction: (node name, bias values); a
  /// node without a bias input gets one.
  std::vector<std::pair<std::string, std::vector<float>>> biases;
  /// Post-threshold edits of the QDQ copy (shift_negative, input_scaling)
  /// and the kernels they scale. When there are edits, `spec` is completed
  /// by applyCorrections (on the edited copy), not by quantizePlan.
  std::vector<GraphEdit> edits;
  std::vector<ConstantEdit> kernels;
  /// Kernels fine-tuning trained or GPTQ rounded: (node name, input index,
  /// values).
  /// The plan carries them, so `tpcc apply` writes the fine-tuned model.
  struct TrainedWeight {
    std::string node;
    unsigned inputIndex = 1;
    std::vector<float> values;
  };
  std::vector<TrainedWeight> trainedWeights;
  int64_t samples = 0;
  /// The samples the per-tensor SQNR was measured on (measureLayers).
  int64_t sqnrSamples = 0;
  double seconds[4] = {0, 0, 0, 0}; ///< calibration, thresholds, corrections, measuring
};

/// An SQNR in dB as the summary prints it: one decimal, or inf / -inf.
std::string formatDb(double v);

} // namespace tpcc::quant

#endif
