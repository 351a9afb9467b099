//===- Gptq.h - Gradient-based post-training quantization ---------*- C++ -*-===//
//
// `--gptq soft_rounding` (the default method) and `--gptq ste`: GPTQ as
// docs/quantize.md ("GPTQ") defines it. The student is the corrected model
// copy the QDQ rewrite turns into the output, fake-quantized (FakeQuantModel.h;
// activations on their PTQ grids, fixed); the teacher is the float model.
// The loss compares the outputs of every layer with a trained kernel:
// ℓ_i = mean((y_q - y_f)²) / mean(y_f²), L = mean_i(w_i ℓ_i), the w_i from
// activation Hessian traces (HessianTrace.h: the first 32 images,
// normalized per image to sum 1, averaged, log10, minus the smallest) or
// equal. Soft rounding trains one α per kernel element (h = clip(1.2 σ(α) -
// 0.1, 0, 1), with the regularizer λ Σ(1 - |2h - 1|^β) and β 20 for the
// first 20 % of the steps, then linearly to 2); STE rounding trains a
// perturbation of at most one step. Adam on those, SGD with momentum on the
// biases; one step per calibration batch, in the calibration order. At the
// end h is rounded at 0.5 and the hard-rounded kernels replace the float
// ones, unless they raise the Hessian-weighted loss or the model output's
// error over the calibration set (too few steps for the regularizer to
// settle h): then, with a warning, rounding stays nearest (exact grid values, so the QDQ rewrite
// stores the same integers; the plan carries them for `tpcc apply`).
//
// MCT 2.4's options: the per-sample loss (each image's squared error,
// summed over channels and averaged over the rest, weighted by that image's
// Hessian traces; λ 10 by default) and gradual activation quantization
// (each quantized activation reads (1 - f) x + f Q(x), f from 0 to 1 over
// the steps).
//
// Deterministic for a fixed seed and thread count.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_GPTQ_H
#define TPCC_QUANT_LEARN_GPTQ_GPTQ_H

#include "quant/core/Stage.h"
#include "quant/core/stats/Calibrate.h"
#include "quant/learn/finetune/Quantizers.h"
#include "quant/learn/gptq/Skipped.h"
#include "quant/ptq/Quantizer.h"

#include "llvm/Support/JSON.h"

#include <functional>
#include <optional>

namespace tpcc::quant {

struct GptqOptions {
  /// SoftRounding or SteRounding.
  QuantizerKind rounding = QuantizerKind::SoftRounding;
  int64_t epochs = 1;
  double lr = 3e-2;      ///< Adam, on α (soft rounding) or the perturbations
  double biasLr = 1e-4;  ///< SGD on the biases
  double momentum = 0.9; ///< of the biases' SGD
  bool trainBias = true;
  bool hessianWeights = true;
  int64_t hessianImages = 32;
  /// λ of the soft-rounding regularizer; unset: 0.01, or 10 with the
  /// per-sample loss (MCT 2.4).
  std::optional<double> regularization;
  bool perSampleLoss = false;
  bool gradualActivation = false;
  uint32_t seed = 0; ///< the Hessian probes
  /// The recipe's `min_threshold`.
  double minThreshold = ir::kDefaultMinThreshold;

  double lambda() const { return regularization.value_or(perSampleLoss ? 10.0 : 0.01); }
};

/// One compared layer output.
struct GptqPoint {
  std::string node, value;
  double weight = 1;                    ///< w_i (the mean, per-sample)
  double lossBefore = 0, lossAfter = 0; ///< ℓ_i over the calibration set
};

/// The trained rounding's weighted layer loss and output error with each of
/// the two bias candidates (GradientGptqReport::biasCandidates).
struct BiasCandidates {
  struct Losses {
    double layer = 0, output = 0;
  };
  Losses trained, corrected;
};

struct GradientGptqReport : StageReport {
  GptqOptions options; ///< what it trained with
  std::vector<GptqPoint> points;
  /// Quantized kernels left as rounded to nearest, and why.
  SkippedKernels skipped;
  size_t roundedKernels = 0;
  int64_t samples = 0, steps = 0, hessianProbes = 0;
  /// Mean loss of the first and of the last tenth of the steps.
  double firstLoss = 0, lastLoss = 0;
  /// Kernel elements whose hard rounding differs from nearest.
  int64_t flipped = 0, elements = 0;
  bool teacherCached = false;
  /// The model's first output: Σ(y_q - y_f)² / Σ y_f² over the calibration
  /// set, before and after.
  double outputLossBefore = 0, outputLossAfter = 0;
  /// The trained rounding raised the weighted loss or the output's error:
  /// nearest rounding and the corrected biases were kept.
  bool reverted = false;
  /// The trained biases were kept; false: the corrected ones (the trained
  /// rounding scored better with them) or no bias trained.
  bool biasesTrained = false;
  /// With trained biases: the weighted layer loss and the output error of
  /// the trained rounding with the trained and with the corrected biases
  /// (the two candidates), or empty.
  std::optional<BiasCandidates> biasCandidates;
  double seconds = 0, trainSeconds = 0;

  /// "  gptq: soft_rounding, 20 epochs (...): layer loss ... -> ..."
  void print(llvm::raw_ostream &os) const override;
  /// The report's `gptq` section.
  void writeJSON(llvm::json::OStream &j) const override;
};

/// Trains the rounding of the kernels of `result.spec` in `model` (the
/// corrected copy that becomes the QDQ model) against `teacher` (the float
/// model) on `data`; `plan` gives the quantizers' candidates. `progress`
/// follows the steps (their loss includes the regularizer).
LogicalResult gradientGptq(graph::Model &model, QuantizeResult &result, const plan::Plan &plan,
                           rt::Executor &teacher, CalibrationData &data, const GptqOptions &options,
                           GradientGptqReport &report, DiagnosticEngine &diags,
                           const TrainingProgressFn &progress = nullptr);

/// `--gptq soft_rounding|ste` as a pipeline stage.
class GradientGptqStage : public Stage {
public:
  explicit GradientGptqStage(GptqOptions options) : options(std::move(options)) {}
  const char *name() const override { return "gptq"; }
  LogicalResult run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                    DiagnosticEngine &diags) const override;

private:
  GptqOptions options;
};

} // namespace tpcc::quant

#endif
