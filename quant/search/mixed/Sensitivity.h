//===- Sensitivity.h - How much each layer's candidates cost in accuracy -*- C++ -*-===//
//
// Mixed precision's sensitivity (docs/quantize.md, "Mixed precision"),
// measured with our executor on the first N calibration images:
//   - the float model's values at the interest points (outputs of ops whose
//     traits name a point distance: Conv, ConvTranspose, Gemm, MatMul,
//     Sigmoid, Softmax, Add, Concat; graph outputs are output points);
//   - the max-config model: every searched layer at its largest candidate,
//     every other node at its chosen config, weights fake-quantized through
//     RunOptions::substitute and (unless only weights are restricted)
//     activations through RunOptions::transform; its values are kept;
//   - for each layer l and candidate c: the same model with l at c, re-run
//     from l's step only (Executor::runFrom on the kept values), in parallel
//     over (layer, candidate) pairs, one executor per thread;
//   - per image, per point: KL after Softmax (zeros in the quantized
//     probabilities count 1e-8), (1 - cos)/2 after Sigmoid and linear layers,
//     MSE / (mean x^2 + 1e-8) otherwise; averaged over the images; the metric
//     is the weighted mean over interest points (`avg`: equal weights,
//     `last_layer`: the last point only) plus the mean over output points;
//   - s(l, max) = the max-config metric m; s(l, c) = max(metric, m + 1e-8)
//     otherwise; all divided by the largest when that is >= 1e10.
// Weights are fake-quantized per candidate with the recipe's threshold
// method and their biases corrected per candidate; the one statistics pass
// over the calibration data is the one quantizePlan then reuses. The pass
// stays alive (SensitivityPass) to run whole candidate models on every
// calibration image for the final choice.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_SEARCH_MIXED_SENSITIVITY_H
#define TPCC_QUANT_SEARCH_MIXED_SENSITIVITY_H

#include "plan/Resources.h"
#include "quant/core/stats/Calibrate.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::quant::mixed {

struct SensitivityOptions {
  int64_t images = 32;
  ir::MixedDistance distance = ir::MixedDistance::Avg;
  /// Fake-quantize activations while measuring (off when only weights are
  /// restricted, as MCT does).
  bool activations = true;
  /// Progress: (done, total) (layer, candidate) pairs.
  std::function<void(int64_t, int64_t)> progress;
};

struct Sensitivity {
  std::vector<unsigned> layers;            ///< plan node indices
  std::vector<unsigned> maxCandidate;      ///< per layer
  std::vector<std::vector<double>> metric; ///< measured, per layer and candidate
  std::vector<std::vector<double>> cost;   ///< after the floor and rescale
  double maxConfigMetric = 0;
  bool rescaled = false;
  std::vector<std::string> interestPoints, outputPoints;
  /// `hessian` distance: each interest point's weight, its activation
  /// Hessian trace normalized to sum 1 (HessianTrace.h), and the most
  /// Hutchinson probes a batch took.
  std::vector<double> interestWeights;
  int64_t hessianProbes = 0;
  int64_t images = 0, runs = 0;
  unsigned threads = 1;
  double seconds = 0;
};

class Measurer;

/// A whole model's outputs against the float model's.
struct OutputAgreement {
  int64_t images = 0;
  /// Top-1 agreement over the outputs shaped [N, classes] (1 when none).
  double agreement = 1;
  /// Normalized MSE of every output, averaged over images and outputs.
  double distance = 0;
  /// Better: more agreement, then less distance.
  bool operator<(const OutputAgreement &o) const {
    return agreement != o.agreement ? agreement > o.agreement : distance < o.distance;
  }
};

/// The measurement kept after measureSensitivity, to measure whole choices.
class SensitivityPass {
public:
  SensitivityPass();
  ~SensitivityPass();
  /// The outputs of the model configured as each of `choices` on every
  /// calibration image (at most 1024), against the float model's (which
  /// `floatEx` computes once).
  LogicalResult measureOutputs(rt::Executor &floatEx,
                               const std::vector<std::vector<unsigned>> &choices,
                               std::vector<OutputAgreement> &values);
  /// The statistics of the pass (by value id), for quantizePlan.
  std::vector<std::unique_ptr<TensorStats>> takeStatistics();
  std::unique_ptr<Measurer> impl;
};

/// Measures the sensitivity of `layers` (plan node indices; candidates are
/// their options' configs, `max[layer index]` the reference one). `floatEx`
/// runs `plan.model`; `data` gives the images (rewound first) and, when
/// activations are measured, the statistics their grids come from.
LogicalResult measureSensitivity(const plan::Plan &plan, const std::vector<unsigned> &layers,
                                 const std::vector<unsigned> &max, const ir::Recipe &recipe,
                                 rt::Executor &floatEx, CalibrationData &data,
                                 const SensitivityOptions &options, Sensitivity &out,
                                 DiagnosticEngine &diags, SensitivityPass *pass = nullptr);

} // namespace tpcc::quant::mixed

#endif
