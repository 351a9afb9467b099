//===- TrainingLoop.cpp - Epochs of steps, for every trained stage ----------===//
#include "quant/learn/train/TrainingLoop.h"

#include "quant/core/Timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

double TrainingLoop::cosine(double lr, int64_t t) const {
  return lr * 0.5 * (1 + std::cos(M_PI * double(t) / double(totalSteps())));
}

LogicalResult TrainingLoop::run(const Steps &fns, const std::string &where,
                                const TrainingProgressFn &progress, DiagnosticEngine &diags) {
  std::vector<double> stepLoss;
  TrainingStep s;
  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    if (fns.epochBegin)
      fns.epochBegin(epoch);
    auto epochStart = Clock::now();
    double epochLoss = 0;
    int64_t epochSamples = 0;
    for (int64_t step = 0; step < perEpoch; ++step) {
      s.epoch = epoch;
      s.step = step;
      s.loss = 0;
      s.samples = 0;
      if (failed(fns.forward(s)))
        return failure();
      if (!std::isfinite(s.loss))
        return diags.emitAt(where, diag::err_run_node,
                            fmt::format("{}: the loss is not finite at epoch {}, step {}: lower {}",
                                        stage, epoch, step + 1, lrHint));
      if (failed(fns.update(s)))
        return failure();
      ++s.t;
      ++steps;
      samples += s.samples;
      stepLoss.push_back(s.loss);
      epochLoss += s.loss * double(s.samples);
      epochSamples += s.samples;
      if (progress) {
        double seconds = trainSeconds + since(epochStart);
        progress({stage, epoch, epochs, step + 1, perEpoch, s.loss,
                  seconds > 0 ? double(samples) / seconds : 0.0});
      }
    }
    trainSeconds += since(epochStart);
    if (fns.epochEnd &&
        failed(fns.epochEnd(epoch, epochSamples ? epochLoss / double(epochSamples) : 0.0)))
      return failure();
  }
  size_t tenth = std::max<size_t>(1, stepLoss.size() / 10);
  for (size_t k = 0; k < tenth && k < stepLoss.size(); ++k) {
    firstLoss += stepLoss[k] / double(tenth);
    lastLoss += stepLoss[stepLoss.size() - tenth + k] / double(tenth);
  }
  return success();
}
