//===- StageTest.cpp - Stages of the pipeline, and the training loop -----===//
//
// A stage a test defines runs between the grids and the QDQ rewrite: what it
// writes into the model copy is in the written model, its report section is
// in the report and its lines in the summary; a failing stage stops the
// pipeline. The training loop: epochs of steps in order, the loss figures,
// the non-finite check naming the epoch and step, the cosine schedule and
// the progress it reports.
//
//===----------------------------------------------------------------------===//
#include "QuantizeFixture.h"

#include "quant/learn/train/TrainingLoop.h"
#include "quant/pipeline/Report.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

struct CountingReport : StageReport {
  size_t weights = 0;
  int64_t quantizeNodes = 0; ///< in the model copy the stage saw
  void writeJSON(llvm::json::OStream &j) const override {
    j.attributeObject("counting", [&] { j.attribute("weights", int64_t(weights)); });
  }
  void print(llvm::raw_ostream &os) const override { os << "  counting: " << weights << "\n"; }
};

/// Counts the spec's quantized weights and the QuantizeLinear nodes of the
/// model copy it is given (none: the rewrite has not run yet).
class CountingStage : public Stage {
public:
  explicit CountingStage(bool fail) : fail(fail) {}
  const char *name() const override { return "counting"; }
  LogicalResult run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                    DiagnosticEngine &diags) const override {
    if (fail)
      return diags.emitAt("<stage>", diag::err_run_node, "the counting stage fails");
    auto r = std::make_unique<CountingReport>();
    r->weights = ctx.result.spec.weights.size();
    for (const graph::Node *n : ctx.model.graph.topologicalOrder())
      r->quantizeNodes += n->opType == "QuantizeLinear";
    ++runs;
    report = std::move(r);
    return success();
  }
  mutable int runs = 0;

private:
  bool fail;
};

class StagePipeline : public test::DigitsQuantizeTest {};

} // namespace

TEST_F(StagePipeline, RunsBeforeTheRewriteAndReports) {
  auto stage = std::make_shared<CountingStage>(false);
  r.stages = {stage};
  std::vector<std::string> phases;
  r.phaseDone = [&](const char *p) { phases.push_back(p); };
  QuantizeOutcome out;
  ASSERT_TRUE(succeeded(quantizeModel(r, out, c->diags)));
  EXPECT_EQ(stage->runs, 1);
  const CountingReport *rep = out.reportOf<CountingReport>();
  ASSERT_TRUE(rep);
  EXPECT_EQ(rep->weights, out.result.spec.weights.size());
  EXPECT_GT(rep->weights, 0u);
  EXPECT_EQ(rep->quantizeNodes, 0);
  // After calibration, before the rewrite.
  auto at = [&](const char *p) { return std::find(phases.begin(), phases.end(), p); };
  ASSERT_NE(at("counting"), phases.end());
  EXPECT_LT(at("calibrate"), at("counting"));
  EXPECT_LT(at("counting"), at("rewrite"));
  // Its section in the report.
  std::string json;
  llvm::raw_string_ostream os(json);
  ReportHeader h{"imx500", "(defaults)", r.model, "out.onnx", {rep}};
  writeReport(out.result, h, out.corrections, os);
  EXPECT_NE(os.str().find("\"counting\": {"), std::string::npos);
}

TEST_F(StagePipeline, AFailingStageStopsThePipeline) {
  r.stages = {std::make_shared<CountingStage>(true)};
  QuantizeOutcome out;
  DiagnosticEngine quiet(c->diags.getSourceManager());
  EXPECT_TRUE(failed(quantizeModel(r, out, quiet)));
  EXPECT_TRUE(quiet.hasErrors());
  EXPECT_TRUE(out.stages.empty());
}

TEST(TrainingLoop, RunsEveryStepAndSummarizesTheLoss) {
  TrainingLoop loop("test", 2, 10, "--lr");
  std::vector<int64_t> ts, begun;
  std::vector<double> means;
  std::vector<TrainingProgress> seen;
  TrainingLoop::Steps s;
  s.epochBegin = [&](int64_t e) { begun.push_back(e); };
  s.forward = [&](TrainingStep &st) {
    st.loss = double(20 - st.t); // 20, 19, ..., 1
    st.samples = 4;
    return success();
  };
  s.update = [&](TrainingStep &st) {
    ts.push_back(st.t);
    return success();
  };
  s.epochEnd = [&](int64_t, double mean) {
    means.push_back(mean);
    return success();
  };
  SourceManager sm;
  DiagnosticEngine diags(sm);
  ASSERT_TRUE(succeeded(loop.run(
      s, "m.onnx", [&](const TrainingProgress &p) { seen.push_back(p); }, diags)));
  ASSERT_EQ(ts.size(), 20u);
  for (int64_t t = 0; t < 20; ++t)
    EXPECT_EQ(ts[size_t(t)], t);
  EXPECT_EQ(begun, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(loop.steps, 20);
  EXPECT_EQ(loop.samples, 80);
  // The first and last tenth: two steps each.
  EXPECT_DOUBLE_EQ(loop.firstLoss, 19.5);
  EXPECT_DOUBLE_EQ(loop.lastLoss, 1.5);
  EXPECT_EQ(means, (std::vector<double>{15.5, 5.5}));
  ASSERT_EQ(seen.size(), 20u);
  EXPECT_EQ(seen[12].epoch, 2);
  EXPECT_EQ(seen[12].step, 3);
  EXPECT_EQ(seen[12].steps, 10);
  EXPECT_EQ(seen[12].epochs, 2);
  EXPECT_STREQ(seen[12].stage, "test");
  // The cosine schedule: the full rate first, half at the middle, near 0 last.
  EXPECT_DOUBLE_EQ(loop.cosine(2.0, 0), 2.0);
  EXPECT_NEAR(loop.cosine(2.0, 10), 1.0, 1e-12);
  EXPECT_NEAR(loop.cosine(2.0, 19), 2.0 * 0.5 * (1 + std::cos(M_PI * 19 / 20)), 1e-12);
}

TEST(TrainingLoop, ANonFiniteLossStopsBeforeTheUpdate) {
  TrainingLoop loop("gradient GPTQ", 3, 4, "the recipe's gptq lr");
  int updates = 0;
  TrainingLoop::Steps s;
  s.forward = [&](TrainingStep &st) {
    st.loss = st.t == 6 ? NAN : 1.0;
    return success();
  };
  s.update = [&](TrainingStep &) {
    ++updates;
    return success();
  };
  SourceManager sm;
  DiagnosticEngine diags(sm);
  EXPECT_TRUE(failed(loop.run(s, "m.onnx", nullptr, diags)));
  EXPECT_EQ(updates, 6);
  ASSERT_EQ(diags.getDiagnostics().size(), 1u);
  EXPECT_EQ(diags.getDiagnostics()[0].message,
            "gradient GPTQ: the loss is not finite at epoch 2, step 3: lower the recipe's gptq lr");
}
