//===- Stage.h - A step between the grids and the QDQ rewrite ----*- C++ -*-===//
//
// After calibration has chosen every grid and the corrections are written
// into the model copy that becomes the QDQ model, the pipeline
// (quant/pipeline/Pipeline.h) runs the stages the request lists, in order,
// before the rewrite: second-order rounding, gradient GPTQ and fine-tuning
// (quant/learn/) are stages. A stage may change the copy's weights and the
// result's spec; what it did is a StageReport, which the outcome keeps and
// which adds its section to the report (`--report`) and its lines to the
// summary `tpcc quantize` prints.
//
// A new step after the grids is one Stage subclass and one line where a
// command builds its request; the pipeline and the report need no change
// (docs/architecture.md, "Adding a stage").
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_STAGE_H
#define TPCC_QUANT_CORE_STAGE_H

#include "plan/Plan.h"
#include "quant/core/Result.h"
#include "quant/core/stats/Calibrate.h"
#include "runtime/Executor.h"
#include "support/Diagnostics.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <memory>

namespace tpcc::quant {

/// Where a training stage is: after step `step` (from 1) of `steps` in
/// epoch `epoch` (from 1) of `epochs`, with that step's loss and the
/// training throughput so far.
struct TrainingProgress {
  const char *stage = "";
  int64_t epoch = 0, epochs = 0, step = 0, steps = 0;
  double loss = 0, samplesPerSecond = 0;
};

using TrainingProgressFn = std::function<void(const TrainingProgress &)>;

/// What a stage works on.
struct StageContext {
  /// The corrected model copy that becomes the QDQ model.
  graph::Model &model;
  /// Its grids: the QDQ rewrite applies `result.spec`.
  QuantizeResult &result;
  /// The plan of the float model (each quantized value's candidates).
  const plan::Plan &plan;
  /// The float model (the teacher).
  rt::Executor &floatModel;
  /// The calibration data.
  CalibrationData &data;
  /// Progress of a phase over samples or layers (name, done, total).
  std::function<void(const char *, int64_t, int64_t)> progress;
  /// Progress of a training loop, step by step.
  TrainingProgressFn training;
};

/// What a stage did.
class StageReport {
public:
  virtual ~StageReport();
  /// Adds the stage's section(s) to the report's top-level object.
  virtual void writeJSON(llvm::json::OStream &j) const = 0;
  /// Its lines in the summary `tpcc quantize` prints (none is fine).
  virtual void print(llvm::raw_ostream &os) const = 0;
};

/// One step between the grids and the QDQ rewrite. A stage holds its
/// settings and no state of a run: the quality target (--min-sqnr) runs the
/// same stages once per round.
class Stage {
public:
  virtual ~Stage();
  /// The phase name (`--time`, progress).
  virtual const char *name() const = 0;
  /// Runs on `ctx`; what it did goes to `report` (set on success).
  virtual LogicalResult run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                            DiagnosticEngine &diags) const = 0;
};

} // namespace tpcc::quant

#endif
