//===- GptqTest.cpp - Gradient GPTQ --------------------------------------===//
//
// Gradient GPTQ through the pipeline on the digits CNN with 4-bit kernels:
// 100 epochs lower the Hessian-weighted layer loss, every trained kernel
// value lands on its grid, and the plan carries the kernels; three epochs
// are too few for the regularizer to settle the rounding, so nearest
// rounding stays and the weights are plain PTQ's, exactly. STE rounding
// takes the same path. Then the parts: GPTQ's STE rounding quantizer, the
// soft-rounding regularizer's gradient against central differences, the
// per-image Hessian traces, and gradients seeded at values inside a model.
//
//===----------------------------------------------------------------------===//
#include "QuantizeFixture.h"

#include "quant/core/grids/Threshold.h"
#include "quant/learn/gptq/Gptq.h"
#include "quant/pipeline/Pipeline.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using rt::Tensor;

namespace {

class GptqPipeline : public test::DigitsQuantizeTest {
protected:
  void run(QuantizeOutcome &out, std::optional<GptqOptions> g) {
    r.recipe.weightsBits = 4;
    r.stages.clear();
    if (g)
      r.stages.push_back(std::make_shared<GradientGptqStage>(*g));
    ASSERT_TRUE(succeeded(quantizeModel(r, out, c->diags)));
    r.stages.clear();
  }
  static double weighted(const GradientGptqReport &g, bool after) {
    double s = 0;
    for (const GptqPoint &p : g.points)
      s += p.weight * (after ? p.lossAfter : p.lossBefore);
    return s;
  }
};

Tensor tensor(std::vector<float> v) {
  Tensor t(graph::ElemType::Float, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.data<float>()[i] = v[i];
  return t;
}

std::unique_ptr<TrainableQuantizer> weightsQuantizer(QuantizerKind kind, const QuantGrid &g) {
  TrainableQuantizerConfig c;
  c.target = QuantizerTarget::Weights;
  c.bits = g.bits;
  c.grids = {g};
  return trainableQuantizer(c.target, c.method, kind)(c);
}

} // namespace

TEST_F(GptqPipeline, TrainedRoundingLowersTheLayerLossOnTheGrid) {
#if defined(__SANITIZE_ADDRESS__)
  // 100 epochs, 90 s under ASan; the short runs below train through the same code.
  GTEST_SKIP() << "numbers, not memory: not again in the sanitizer build";
#endif
  QuantizeOutcome out;
  GptqOptions g;
  g.epochs = 100;
  run(out, g);
  ASSERT_TRUE(out.reportOf<GradientGptqReport>());
  const GradientGptqReport &rep = *out.reportOf<GradientGptqReport>();
  ASSERT_EQ(rep.points.size(), 4u);
  EXPECT_FALSE(rep.reverted);
  EXPECT_EQ(rep.steps, 700);
  // Measured: 0.0367 -> 0.0237.
  EXPECT_LT(weighted(rep, true), 0.8 * weighted(rep, false));
  EXPECT_GT(rep.flipped, 0);
  // The kernels the plan carries are values of their grids.
  ASSERT_EQ(out.result.trainedWeights.size(), 4u);
  for (const QuantizeResult::TrainedWeight &t : out.result.trainedWeights) {
    const WeightQDQ *wq = nullptr;
    for (const WeightQDQ &w : out.result.spec.weights)
      if (w.node == t.node && w.inputIndex == t.inputIndex)
        wq = &w;
    ASSERT_TRUE(wq) << t.node;
    size_t per = t.values.size() / wq->grids.size();
    for (size_t i = 0; i < t.values.size(); ++i) {
      const QuantGrid &grid = wq->grids[wq->grids.size() > 1 ? i / per : 0];
      double level = t.values[i] / grid.scale;
      ASSERT_NEAR(level, std::round(level), 1e-3) << t.node << " " << i;
      ASSERT_GE(std::round(level), grid.qmin) << t.node;
      ASSERT_LE(std::round(level), grid.qmax) << t.node;
    }
  }
}

TEST_F(GptqPipeline, TooFewStepsKeepNearestRounding) {
  QuantizeOutcome plain, trained, ste;
  run(plain, std::nullopt);
  GptqOptions g;
  g.epochs = 3;
  run(trained, g);
  const GradientGptqReport *t = trained.reportOf<GradientGptqReport>();
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->reverted);
  EXPECT_EQ(t->flipped, 0);
  EXPECT_EQ(test::initializerBytes(*trained.quantModel), test::initializerBytes(*plain.quantModel));
  g.rounding = QuantizerKind::SteRounding;
  run(ste, g);
  const GradientGptqReport *s = ste.reportOf<GradientGptqReport>();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->steps, 21);
  EXPECT_LE(weighted(*s, true), weighted(*s, false));
}

TEST(GptqQuantizers, SteRoundingMovesAtMostOneStep) {
  QuantGrid g = symmetricGrid(1, 4, true); // Δ = 1/8, [-8, 7]
  auto q = weightsQuantizer(QuantizerKind::SteRounding, g);
  Tensor w = tensor({0.30f, -0.44f, 0.07f, 0.95f, -1.2f});
  // Zero perturbation: nearest rounding, clipped to the grid.
  Tensor y = q->forward(w);
  const float nearest[] = {0.25f, -0.5f, 0.125f, 0.875f, -1.0f};
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], nearest[i]) << i;
  // ∂W_q/∂u = Δ (u in steps); the float weights get nothing.
  QuantizerParam p = q->parameters()[0];
  q->zeroGrad();
  Tensor dw = q->backward(w, tensor({1, -2, 0.5f, 3, 1}));
  EXPECT_EQ(dw.data<float>()[0], 0.f);
  EXPECT_DOUBLE_EQ((*p.grad)[1], -2 * g.scale);
  // Perturbations beyond a step move one step; the grid still clips.
  *p.value = {5.0, -0.6, 0.4, 1.0, -3.0};
  y = q->forward(w);
  const float moved[] = {0.375f, -0.625f, 0.125f, 0.875f, -1.0f};
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], moved[i]) << i;
  FinalizedQuantizer f = q->finalize(&w);
  ASSERT_TRUE(f.weights);
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_FLOAT_EQ((*f.weights)[size_t(i)], moved[i]) << i;
}

TEST(GptqQuantizers, RegularizerGradientMatchesCentralDifferences) {
  QuantGrid g = symmetricGrid(1, 4, true);
  auto q = weightsQuantizer(QuantizerKind::SoftRounding, g);
  Tensor w = tensor({0.30f, -0.44f, 0.07f, 0.61f, -0.2f, 0.02f});
  q->forward(w); // α from the weights
  QuantizerParam p = q->parameters()[0];
  for (double beta : {20.0, 6.0, 2.0}) {
    q->zeroGrad();
    double r = softRoundingRegularizer(*q, beta, 0.5);
    EXPECT_GT(r, 0);
    std::vector<double> grad = *p.grad;
    for (size_t i = 0; i < p.value->size(); ++i) {
      double saved = (*p.value)[i], side[2];
      for (int s = 0; s < 2; ++s) {
        (*p.value)[i] = saved + (s ? -1e-3 : 1e-3);
        side[s] = softRoundingRegularizer(*q, beta, 0.5);
      }
      (*p.value)[i] = saved;
      EXPECT_NEAR(grad[i], (side[0] - side[1]) / 2e-3, 1e-3 * (1 + std::fabs(grad[i])))
          << "beta " << beta << " element " << i;
    }
  }
}

TEST(Hmse, TheHessianDecidesWhichWeightsTheThresholdFits) {
  // 63 small weights and one large: MSE's threshold reaches for the large
  // one; with its Hessian weight at zero (it moves no output) HMSE fits the
  // small ones, and with only the large one weighted, HMSE keeps it whole.
  std::vector<float> x(64), h(64, 1.f);
  for (size_t i = 0; i < 63; ++i)
    x[i] = 0.01f * float(int(i % 21) - 10);
  x[63] = 1.0f;
  SelectionOptions mse, hmse;
  hmse.error = ir::ThresholdMethod::HMSE;
  h[63] = 0;
  hmse.hessian = h.data();
  QuantGrid a = selectWeightGrid(x.data(), 64, ir::QuantMethod::Symmetric, 4, false, mse);
  QuantGrid b = selectWeightGrid(x.data(), 64, ir::QuantMethod::Symmetric, 4, false, hmse);
  EXPECT_LT(b.threshold, 0.5 * a.threshold);
  std::vector<float> onlyLarge(64, 0.f);
  onlyLarge[63] = 1;
  hmse.hessian = onlyLarge.data();
  QuantGrid c = selectWeightGrid(x.data(), 64, ir::QuantMethod::Symmetric, 4, false, hmse);
  EXPECT_NEAR(c.quantize(1.0), 1.0, 0.02);
  // Without weights (or with none of them positive) HMSE is MSE.
  std::vector<float> zero(64, 0.f);
  hmse.hessian = zero.data();
  EXPECT_EQ(selectWeightGrid(x.data(), 64, ir::QuantMethod::Symmetric, 4, false, hmse).threshold,
            a.threshold);
}
