//===- ThresholdChoice.cpp - activation_threshold: [a, b, ...] ------------===//
#include "quant/pipeline/ThresholdChoice.h"

#include "quant/ptq/Measure.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// The lowest pooled SQNR of the outputs (or of `at`) in `out`'s report
/// (+inf when none was measured).
double lowestOutputSqnr(const QuantizeOutcome &out, const std::vector<std::string> &at) {
  std::vector<std::string> names = at;
  if (names.empty())
    for (const graph::Value *v : out.floatModel->graph.outputs())
      names.push_back(v->name);
  double worst = INFINITY;
  for (const std::string &name : names) {
    std::string tensor = parseReadTensor(name, out.floatModel->graph).tensor;
    for (const TensorReport &t : out.result.tensors)
      if (!t.weight && t.measured && t.tensor == tensor && !std::isnan(t.sqnr))
        worst = std::min(worst, t.sqnr);
  }
  return worst;
}

} // namespace

void ThresholdChoiceReport::print(llvm::raw_ostream &os) const {
  std::string scores;
  for (const auto &[m, db] : tried)
    scores += fmt::format("{}{} {:.2f}", scores.empty() ? "" : ", ", ir::toString(m), db);
  os << fmt::format("  activation threshold: {}, the best of {} dB (outputs' lowest SQNR on {} "
                    "samples)\n",
                    ir::toString(chosen), scores, samples);
}

void ThresholdChoiceReport::writeJSON(llvm::json::OStream &j) const {
  j.attributeObject("activation_threshold_choice", [&] {
    j.attribute("chosen", ir::toString(chosen));
    j.attribute("samples", samples);
    j.attributeArray("tried", [&] {
      for (const auto &[m, db] : tried)
        j.object([&] {
          j.attribute("method", ir::toString(m));
          if (std::isfinite(db))
            j.attribute("sqnr_db", db);
          else
            j.attribute("sqnr_db", nullptr);
        });
    });
  });
}

LogicalResult quant::quantizeChoosingThreshold(const QuantizeRequest &r, QuantizeOutcome &out,
                                               DiagnosticEngine &diags) {
  auto report = std::make_unique<ThresholdChoiceReport>();
  QuantizeRequest trial = r;
  trial.recipe.activationThresholdChoices.clear();
  trial.stages.clear();
  std::vector<Diagnostic> keptDiags;
  QuantizeOutcome best;
  double bestDb = -INFINITY;
  for (ir::ThresholdMethod m : r.recipe.activationThresholdChoices) {
    trial.recipe.activationThreshold = m;
    DiagnosticEngine quiet(diags.getSourceManager());
    QuantizeOutcome o;
    if (failed(quantizeModel(trial, o, quiet))) {
      for (const Diagnostic &d : quiet.getDiagnostics())
        diags.report(d);
      return failure(); // the data or the model, not the method: every method fails alike
    }
    double db = lowestOutputSqnr(o, r.measureAlso);
    report->tried.emplace_back(m, db);
    report->samples = o.result.sqnrSamples;
    if (report->tried.size() == 1 || db >= bestDb + kMinThresholdGainDb) {
      bestDb = db;
      report->chosen = m;
      best = std::move(o);
      keptDiags = quiet.getDiagnostics();
    }
  }
  if (r.stages.empty()) {
    out = std::move(best);
    for (const Diagnostic &d : keptDiags)
      diags.report(d);
  } else {
    QuantizeRequest final = r;
    final.recipe.activationThresholdChoices.clear();
    final.recipe.activationThreshold = report->chosen;
    if (failed(quantizeModel(final, out, diags)))
      return failure();
  }
  out.stages.push_back(std::move(report));
  return success();
}
