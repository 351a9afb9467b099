//===- Finetune.h - Quantization-aware fine-tuning -----------------*- C++ -*-===//
//
// After PTQ (the grids of QuantizeResult::spec, the corrected model copy
// that becomes the QDQ model), finetune trains that copy with every
// quantized weight and activation wrapped in a trainable quantizer
// (FakeQuantModel.h, Quantizers.h), and Adam (decoupled weight decay on the kernels, a cosine
// schedule) updates the float weights, the biases and the quantizers'
// parameters. The loss is cross-entropy with integer labels, or without
// labels the KL divergence from the float model's output distribution
// (distillation). At the end the quantizers' grids replace the spec's (the
// tensors that only move a quantized input's values take its new grid) and
// the trained weights replace the copy's, so the QDQ rewrite that follows
// writes the fine-tuned model.
//
// Deterministic for a fixed seed and thread count: the sample order comes
// from the seed, and every sum keeps one order. A loss that is not finite
// stops training with an error naming the epoch and step.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_FINETUNE_FINETUNE_H
#define TPCC_QUANT_LEARN_FINETUNE_FINETUNE_H

#include "quant/core/Stage.h"
#include "quant/learn/finetune/FakeQuantModel.h"
#include "quant/ptq/Quantizer.h"

#include "llvm/Support/JSON.h"

#include <functional>

namespace tpcc::quant {

/// What fine-tuning trains with (the report repeats them).
struct FinetuneSettings {
  int64_t epochs = 1;
  int64_t batch = 32;
  double lr = 1e-4;
  double weightDecay = 1e-4;
  QuantizerKind quantizer = QuantizerKind::Ste;
  uint32_t seed = 0;
  /// The recipe's `min_threshold`: no trained threshold goes below it.
  double minThreshold = ir::kDefaultMinThreshold;
};

struct FinetuneOptions : FinetuneSettings {
  /// Samples and integer labels scored after every epoch (none: empty x).
  rt::Tensor validateX, validateLabels;
  /// Called after each epoch: the epoch, its mean loss, and the validation
  /// accuracy (correct samples; -1 without validation data).
  std::function<void(int64_t, double, int64_t)> epochDone;
  /// Called with each validation batch's first output (the logits) and the
  /// index of its first sample: what the model as it trains computes.
  std::function<void(int64_t, const rt::Tensor &)> validationOutputs;
};

struct FinetuneData {
  rt::Tensor x;      ///< the training samples (axis 0)
  rt::Tensor labels; ///< integer classes, or undefined: distillation
};

struct FinetuneReport : StageReport {
  FinetuneSettings settings;
  int64_t dataSamples = 0; ///< in the training data
  bool labeled = false;    ///< cross-entropy with labels; else distillation
  int64_t steps = 0, samples = 0;
  /// Mean loss of the first and of the last tenth of the steps (at least one
  /// step each).
  double firstLoss = 0, lastLoss = 0;
  size_t trainedWeights = 0, trainedActivations = 0;
  double seconds = 0;      ///< all of it, validation included
  double trainSeconds = 0; ///< the training steps alone (throughput)
  double samplesPerSecond() const {
    return trainSeconds > 0 ? double(samples) / trainSeconds : 0.0;
  }
  std::vector<TrainedQuantizer> quantizers; ///< weights, then activations

  /// The report's `finetune` section: the settings, the figures and every
  /// quantizer's config.
  void writeJSON(llvm::json::OStream &j) const override;
  /// "finetune: 4 epochs of 450 samples (...): loss 0.9 -> 0.2, ..."
  void print(llvm::raw_ostream &os) const override;
};

/// Trains `model` (the corrected copy the QDQ rewrite will turn into the
/// output, whose values `result.spec` names) on `data`; `plan` gives each
/// quantizer's mixed-precision candidates, `teacher` runs the float model
/// (distillation). On success the spec's grids and the model's weights are
/// the fine-tuned ones.
LogicalResult finetune(graph::Model &model, QuantizeResult &result, const plan::Plan &plan,
                       rt::Executor &teacher, const FinetuneData &data,
                       const FinetuneOptions &options, FinetuneReport &report,
                       DiagnosticEngine &diags, const TrainingProgressFn &progress = nullptr);

/// `tpcc finetune`'s stage: finetune() on its data, the calibration data
/// unused.
class FinetuneStage : public Stage {
public:
  FinetuneStage(FinetuneData data, FinetuneOptions options)
      : data(std::move(data)), options(std::move(options)) {}
  const char *name() const override { return "finetune"; }
  LogicalResult run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                    DiagnosticEngine &diags) const override;

private:
  FinetuneData data;
  FinetuneOptions options;
};

} // namespace tpcc::quant

#endif
