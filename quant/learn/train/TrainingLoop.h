//===- TrainingLoop.h - Epochs of steps, for every trained stage --*- C++ -*-===//
//
// Gradient GPTQ (gptq/Gptq.h) and fine-tuning (finetune/Finetune.h) train
// the same way: epochs of steps, each a forward pass to a loss, a check that
// the loss is finite, then gradients and parameter updates; progress after
// every step; the mean loss of the first and last tenth of the steps and the
// training time in their reports. TrainingLoop owns that; a stage gives the
// step's forward and update, and what happens around an epoch (fine-tuning
// shuffles before one and validates after it).
//
// The cosine schedule both use (fine-tuning's learning rate, STE rounding's)
// is cosine(): lr · ½(1 + cos(π t / T)) at step t (from 0) of T.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_TRAIN_TRAININGLOOP_H
#define TPCC_QUANT_LEARN_TRAIN_TRAININGLOOP_H

#include "quant/core/Stage.h"
#include "support/Diagnostics.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tpcc::quant {

/// One step of training.
struct TrainingStep {
  int64_t epoch = 0; ///< from 1
  int64_t step = 0;  ///< in the epoch, from 0
  int64_t t = 0;     ///< the steps before this one, over all epochs
  /// Set by the forward pass: the step's loss and the samples it saw.
  double loss = 0;
  int64_t samples = 0;
};

class TrainingLoop {
public:
  /// `stage` names the loop in progress and errors ("gradient GPTQ");
  /// `lrHint` is what a non-finite loss tells the user to lower.
  TrainingLoop(const char *stage, int64_t epochs, int64_t stepsPerEpoch, std::string lrHint)
      : stage(stage), epochs(epochs), perEpoch(stepsPerEpoch), lrHint(std::move(lrHint)) {}

  int64_t totalSteps() const { return epochs * perEpoch; }
  /// `lr` on the cosine schedule at step `t` (from 0).
  double cosine(double lr, int64_t t) const;

  struct Steps {
    /// The forward pass of a step, to its loss and samples.
    std::function<LogicalResult(TrainingStep &)> forward;
    /// Gradients and updates, once the loss is known to be finite.
    std::function<LogicalResult(TrainingStep &)> update;
    /// Before each epoch (from 1).
    std::function<void(int64_t)> epochBegin;
    /// After each epoch, with its mean loss per sample; not counted in the
    /// training time (validation).
    std::function<LogicalResult(int64_t, double)> epochEnd;
  };
  /// Runs every step of every epoch. A loss that is not finite stops it with
  /// an error at `where` naming the epoch and step.
  LogicalResult run(const Steps &steps, const std::string &where,
                    const TrainingProgressFn &progress, DiagnosticEngine &diags);

  /// After run: the steps and samples trained, the mean loss of the first
  /// and of the last tenth of the steps (at least one each), the seconds of
  /// the steps alone.
  int64_t steps = 0, samples = 0;
  double firstLoss = 0, lastLoss = 0, trainSeconds = 0;

private:
  const char *stage;
  int64_t epochs, perEpoch;
  std::string lrHint;
};

} // namespace tpcc::quant

#endif
