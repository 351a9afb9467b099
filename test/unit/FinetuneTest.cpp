//===- FinetuneTest.cpp - Quantization-aware fine-tuning through the API --===//
//
// The bundled digits CNN quantized for imx500 with 2-bit kernels (PTQ: 92 %
// on the labelled digits, float 99.3 %), then fine-tuned inside quantizeModel (the
// stage) on the 450 labelled digits: the written QDQ model's
// accuracy on them rises to 98.9 %, the learned grids reach the
// spec, and two runs with the same seed give the same weights bit for bit.
// The logits the training forward computes are the written model's.
// Distillation without labels lowers its own loss.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/finetune/Finetune.h"
#include "frontend/Frontend.h"
#include "passes/Passes.h"
#include "quant/pipeline/Pipeline.h"
#include "runtime/DataIO.h"
#include "test/unit/QuantizeFixture.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tpcc;

namespace {

class FinetuneTest : public test::DigitsQuantizeTest {
protected:
  void SetUp() override {
    DigitsQuantizeTest::SetUp();
    r.recipe.weightsBits = 2;
    std::string error;
    ASSERT_TRUE(rt::readTensorFile(kExamples + "digits_test_x.npy", data.x, error)) << error;
    ASSERT_TRUE(rt::readTensorFile(kExamples + "digits_test_y.npy", data.labels, error)) << error;
  }

  /// Quantizes (and with `train`, fine-tunes); the accuracy of the QDQ
  /// model on the labelled digits, and its logits in `logits`. With
  /// `trained`, the training validates on the digits and `trained` gets the
  /// logits its forward computes in the last epoch's validation.
  double run(bool train, quant::QuantizeOutcome &out, quant::FinetuneReport &report,
             bool labels = true, std::vector<float> *trained = nullptr,
             std::vector<float> *logits = nullptr) {
    quant::FinetuneOptions fo;
    fo.epochs = 4;
    fo.lr = 3e-3;
    if (trained) {
      fo.validateX = data.x;
      fo.validateLabels = data.labels;
      fo.validationOutputs = [&](int64_t first, const rt::Tensor &y) {
        trained->resize(size_t(data.x.dim(0) * y.dim(1)));
        std::memcpy(trained->data() + first * y.dim(1), y.raw(), y.bytes());
      };
    }
    quant::FinetuneData d = data;
    if (!labels)
      d.labels = rt::Tensor();
    if (train)
      r.stages.push_back(std::make_shared<quant::FinetuneStage>(d, fo));
    EXPECT_TRUE(succeeded(quant::quantizeModel(r, out, c->diags)));
    r.stages.clear();
    if (const auto *done = out.reportOf<quant::FinetuneReport>())
      report = *done;
    auto ex = rt::Executor::create(*out.quantModel, c->diags);
    EXPECT_TRUE(ex);
    if (!ex)
      return 0;
    std::vector<rt::Tensor> y;
    EXPECT_TRUE(succeeded(ex->run({{ex->requiredInputs().front()->name, data.x}}, y, c->diags)));
    int64_t right = 0, n = data.x.dim(0), k = y[0].dim(1);
    for (int64_t i = 0; i < n; ++i) {
      const float *row = y[0].data<float>() + i * k;
      right += std::max_element(row, row + k) - row == int64_t(data.labels.at(i));
    }
    if (logits)
      logits->assign(y[0].data<float>(), y[0].data<float>() + y[0].numel());
    return double(right) / double(n);
  }

  quant::FinetuneData data;
};

} // namespace

TEST_F(FinetuneTest, TwoBitKernelsRecoverAccuracy) {
  quant::QuantizeOutcome ptq, tuned, again;
  quant::FinetuneReport report, report2;
  double before = run(false, ptq, report);
  double after = run(true, tuned, report);
  EXPECT_GT(report.trainedWeights, 0u);
  EXPECT_GT(report.trainedActivations, 0u);
  EXPECT_EQ(report.steps, 4 * ((450 + 31) / 32));
  EXPECT_LT(report.lastLoss, report.firstLoss);
  // Measured: PTQ 92.0 %, fine-tuned 98.9 % (float 99.3 %).
  EXPECT_GT(after, before + 0.03) << "PTQ " << before << ", fine-tuned " << after;
  EXPECT_GT(after, 0.97);
  // The grids changed and stayed 2-bit.
  bool moved = false;
  for (size_t k = 0; k < tuned.result.spec.weights.size(); ++k) {
    EXPECT_EQ(tuned.result.spec.weights[k].grids.front().bits, 2);
    moved |= test::initializerBytes(*tuned.quantModel) != test::initializerBytes(*ptq.quantModel);
  }
  EXPECT_TRUE(moved);
  // Deterministic for a fixed seed.
  run(true, again, report2);
  EXPECT_EQ(test::initializerBytes(*again.quantModel), test::initializerBytes(*tuned.quantModel));
  EXPECT_EQ(report2.lastLoss, report.lastLoss);
}

TEST_F(FinetuneTest, TheModelThatTrainsIsTheModelThatIsWritten) {
  // The training forward fake-quantizes as the QDQ rewrite quantizes:
  // weights, activations (power-of-two thresholds rounded up) and the int32
  // biases on s_in * s_w. So the logits the training forward computes in
  // the last validation are the written model's (integer kernels), on the
  // output's grid: equal, or a rounding tie apart.
  quant::QuantizeOutcome out;
  quant::FinetuneReport report;
  std::vector<float> trained, written;
  run(true, out, report, true, &trained, &written);
  ASSERT_EQ(trained.size(), written.size());
  double step = 0;
  for (const quant::ActivationQDQ &a : out.result.spec.activations)
    if (a.value == out.quantModel->graph.outputs().front()->name)
      step = a.grid.scale;
  ASSERT_GT(step, 0);
  size_t equal = 0;
  for (size_t i = 0; i < trained.size(); ++i) {
    EXPECT_LE(std::fabs(trained[i] - written[i]), step * 1.001) << i;
    equal += trained[i] == written[i];
  }
  // Measured: all 4,500 equal; without the bias rounding, 3,953.
  EXPECT_GE(double(equal), 0.995 * double(trained.size()));
}

TEST_F(FinetuneTest, DistillationWithoutLabelsLowersItsLoss) {
  quant::QuantizeOutcome out;
  quant::FinetuneReport report;
  run(true, out, report, /*labels=*/false);
  EXPECT_LT(report.lastLoss, report.firstLoss);
}
