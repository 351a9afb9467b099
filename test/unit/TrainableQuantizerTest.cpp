//===- TrainableQuantizerTest.cpp - STE, LSQ and soft rounding ------------===//
//
// The registry's choices; each straight-through rule on hand-computed
// values; training LSQ's step and the uniform ranges by gradient descent on
// the quantization error of a Gaussian sample lowers it (a step too coarse
// shrinks, one that clips grows); soft rounding's gradient
// against central differences (it is smooth in α), its regularizer driving h
// to 0 or 1, and finalize giving exact grid values; power-of-two thresholds
// rounded up at finalize.
//
//===----------------------------------------------------------------------===//
#include "quant/learn/finetune/Quantizers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;
using rt::Tensor;
using M = ir::QuantMethod;

namespace {

Tensor tensor(std::vector<float> v, rt::Shape s = {}) {
  if (s.empty())
    s = {int64_t(v.size())};
  Tensor t(graph::ElemType::Float, s);
  for (size_t i = 0; i < v.size(); ++i)
    t.data<float>()[i] = v[i];
  return t;
}

Tensor gaussian(int64_t n, unsigned seed = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  Tensor t(graph::ElemType::Float, {n});
  for (int64_t i = 0; i < n; ++i)
    t.data<float>()[i] = d(rng);
  return t;
}

std::unique_ptr<TrainableQuantizer> make(QuantizerTarget target, M method, QuantizerKind kind,
                                         std::vector<QuantGrid> grids, int64_t axis = -1) {
  TrainableQuantizerConfig c;
  c.target = target;
  c.method = method;
  c.bits = grids.front().bits;
  c.isSigned = grids.front().isSigned;
  c.channelAxis = axis;
  c.grids = std::move(grids);
  QuantizerFactory f = trainableQuantizer(target, method, kind);
  return f ? f(c) : nullptr;
}

/// mean((q(x) - x)^2) and its gradient dy = 2 (q - x) / n.
double mse(TrainableQuantizer &q, const Tensor &x, Tensor *dy) {
  Tensor y = q.forward(x);
  double s = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double e = double(y.data<float>()[i]) - x.data<float>()[i];
    s += e * e;
    if (dy)
      dy->data<float>()[i] = float(2 * e / double(x.numel()));
  }
  return s / double(x.numel());
}

/// `steps` of gradient descent on the quantization MSE; the first and last
/// errors.
std::pair<double, double> train(TrainableQuantizer &q, const Tensor &x, int steps, double lr) {
  Tensor dy(graph::ElemType::Float, x.shape());
  double first = mse(q, x, nullptr);
  for (int s = 0; s < steps; ++s) {
    q.zeroGrad();
    mse(q, x, &dy);
    q.backward(x, dy);
    for (QuantizerParam &p : q.parameters())
      for (size_t k = 0; k < p.value->size(); ++k)
        (*p.value)[k] -= lr * (*p.grad)[k];
  }
  return {first, mse(q, x, nullptr)};
}

} // namespace

TEST(TrainableQuantizer, RegistryFollowsTargetMethodAndKind) {
  QuantGrid g = symmetricGrid(1, 8, true);
  auto w = make(QuantizerTarget::Weights, M::Symmetric, QuantizerKind::Ste, {g});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->parameters().empty()); // STE weights: fixed grid
  auto a = make(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::Ste, {g});
  ASSERT_EQ(a->parameters().size(), 1u);
  EXPECT_EQ(a->parameters()[0].name, "threshold");
  auto u =
      make(QuantizerTarget::Activation, M::Uniform, QuantizerKind::Ste, {uniformGrid(-1, 3, 8)});
  EXPECT_EQ(u->parameters().size(), 2u);
  auto lut = make(QuantizerTarget::Weights, M::LutSym, QuantizerKind::Lsq, {g});
  EXPECT_TRUE(lut->parameters().empty()); // k-means tables stay
  EXPECT_EQ(
      trainableQuantizer(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::SoftRounding),
      nullptr);
  EXPECT_EQ(parseQuantizerKind("lsq"), QuantizerKind::Lsq);
  EXPECT_EQ(parseQuantizerKind("adaround"), std::nullopt);
}

TEST(TrainableQuantizer, SteRulesOnHandComputedValues) {
  // Threshold 1, 8 bits signed: Δ = 1/128, integers [-128, 127].
  auto q = make(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::Ste,
                {symmetricGrid(1, 8, true)});
  Tensor x = tensor({0.3f, 2.0f, -0.5f});
  Tensor y = q->forward(x);
  EXPECT_FLOAT_EQ(y.data<float>()[0], 38.f / 128); // 0.3 * 128 = 38.4 -> 38
  EXPECT_FLOAT_EQ(y.data<float>()[1], 127.f / 128);
  EXPECT_FLOAT_EQ(y.data<float>()[2], -0.5f);
  Tensor dx = q->backward(x, tensor({1.f, 1.f, 1.f}));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(dx.data<float>()[i], 1.f); // dq/dx = 1 everywhere
  // dt = sum (clip(rnd(x/Δ)) - x/Δ) / 128 = (-0.4 - 129 + 0) / 128
  EXPECT_NEAR((*q->parameters()[0].grad)[0], (-0.4 - 129.0) / 128, 1e-6);

  // LSQ: 4 bits unsigned symmetric, Δ = 1/16, [0, 15]; g = 1/sqrt(15).
  auto l = make(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::Lsq,
                {symmetricGrid(1, 4, false)});
  Tensor lx = tensor({0.1f, 1.5f, -0.2f});
  Tensor ldx = l->backward(lx, tensor({1.f, 1.f, 1.f}));
  EXPECT_EQ(ldx.data<float>()[0], 1.f); // inside
  EXPECT_EQ(ldx.data<float>()[1], 0.f); // above
  EXPECT_EQ(ldx.data<float>()[2], 0.f); // below
  // dΔ = g ((rnd(1.6) - 1.6) + 15 + 0)
  EXPECT_NEAR((*l->parameters()[0].grad)[0], (0.4 + 15) / std::sqrt(15.0), 1e-6);
}

TEST(TrainableQuantizer, TrainingLowersTheQuantizationError) {
  // (Not symmetric STE: MCT's rule passes ∂q/∂x = 1 through the clip, so a
  // clipped value's threshold gradient points inward; on the quantization
  // error alone its threshold only shrinks. It trains through the task loss.)
  Tensor x = gaussian(4096);
  // A step too coarse: LSQ refines it; one that clips: LSQ widens it.
  auto lsq = make(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::Lsq,
                  {symmetricGrid(8, 4, true)});
  auto [l0, l1] = train(*lsq, x, 300, 0.05);
  EXPECT_LT(l1, 0.5 * l0);
  auto clipping = make(QuantizerTarget::Activation, M::Symmetric, QuantizerKind::Lsq,
                       {symmetricGrid(0.5, 4, true)});
  auto [c0, c1] = train(*clipping, x, 300, 0.05);
  EXPECT_LT(c1, 0.5 * c0);
  EXPECT_GT((*clipping->parameters()[0].value)[0], 0.5 / 8);
  // Uniform ranges, STE and LSQ.
  for (QuantizerKind k : {QuantizerKind::Ste, QuantizerKind::Lsq}) {
    auto u = make(QuantizerTarget::Activation, M::Uniform, k, {uniformGrid(-0.5, 0.5, 4)});
    auto [u0, u1] = train(*u, x, 300, k == QuantizerKind::Ste ? 2.0 : 0.05);
    EXPECT_LT(u1, 0.6 * u0) << toString(k);
    EXPECT_EQ(u->finalize().grids[0].method, M::Uniform);
  }
}

TEST(TrainableQuantizer, PerChannelGradientsStayInTheirChannel) {
  // Weights [2, 3] per channel along axis 0: only channel 1 gets dy.
  auto q = make(QuantizerTarget::Weights, M::Symmetric, QuantizerKind::Lsq,
                {symmetricGrid(1, 8, true), symmetricGrid(2, 8, true)}, 0);
  Tensor w = tensor({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 3.0f}, {2, 3});
  Tensor y = q->forward(w);
  EXPECT_FLOAT_EQ(y.data<float>()[5], 127.f / 64); // channel 1: Δ = 2/128
  q->backward(w, tensor({0, 0, 0, 1, 1, 1}, {2, 3}));
  std::vector<double> &g = *q->parameters()[0].grad;
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], 0.0);
  EXPECT_NE(g[1], 0.0);
}

TEST(TrainableQuantizer, PowerOfTwoThresholdsRoundUpAtFinalize) {
  for (QuantizerKind k : {QuantizerKind::Ste, QuantizerKind::Lsq}) {
    auto q = make(QuantizerTarget::Activation, M::PowerOfTwo, k, {powerOfTwoGrid(1, 8, true)});
    std::vector<double> &v = *q->parameters()[0].value;
    v[0] = k == QuantizerKind::Ste ? 0.7 : 0.7 / 128; // threshold, or step
    QuantGrid g = q->finalize().grids[0];
    EXPECT_EQ(g.method, M::PowerOfTwo) << toString(k);
    EXPECT_DOUBLE_EQ(g.threshold, 1.0) << toString(k);
  }
}

TEST(TrainableQuantizer, SoftRounding) {
  QuantGrid g = symmetricGrid(1, 4, true); // Δ = 1/8, [-8, 7]
  auto q = make(QuantizerTarget::Weights, M::Symmetric, QuantizerKind::SoftRounding, {g});
  ASSERT_TRUE(q);
  Tensor w = tensor({0.30f, -0.44f, 0.07f, 0.61f, -0.2f});
  // Initialized at the fractional parts: the soft weights are the weights.
  Tensor y = q->forward(w);
  for (int64_t i = 0; i < w.numel(); ++i)
    EXPECT_NEAR(y.data<float>()[i], w.data<float>()[i], 1e-5);
  // dα against central differences of sum(dy * forward).
  Tensor dy = tensor({1.f, -2.f, 0.5f, 3.f, 1.f});
  q->zeroGrad();
  Tensor dw = q->backward(w, dy);
  EXPECT_EQ(dw.data<float>()[0], 0.f); // the float weights stay fixed
  QuantizerParam p = q->parameters()[0];
  for (size_t i = 0; i < p.value->size(); ++i) {
    double saved = (*p.value)[i], side[2];
    for (int s = 0; s < 2; ++s) {
      (*p.value)[i] = saved + (s ? -1e-4 : 1e-4);
      Tensor yy = q->forward(w);
      side[s] = 0;
      for (int64_t j = 0; j < w.numel(); ++j)
        side[s] += double(dy.data<float>()[j]) * yy.data<float>()[j];
    }
    (*p.value)[i] = saved;
    EXPECT_NEAR((*p.grad)[i], (side[0] - side[1]) / 2e-4, 1e-3) << i;
  }
  // The regularizer alone drives every h to 0 or 1.
  for (int s = 0; s < 300; ++s) {
    q->zeroGrad();
    softRoundingRegularizer(*q, 2.0, 1.0);
    for (size_t i = 0; i < p.value->size(); ++i)
      (*p.value)[i] -= 5.0 * (*p.grad)[i];
  }
  Tensor hard = q->forward(w);
  FinalizedQuantizer f = q->finalize(&w);
  ASSERT_TRUE(f.weights);
  for (int64_t i = 0; i < w.numel(); ++i) {
    double level = (*f.weights)[size_t(i)] / g.scale;
    EXPECT_EQ(level, std::round(level)) << i; // exact grid values
    EXPECT_NEAR(hard.data<float>()[i], (*f.weights)[size_t(i)], 1e-3) << i;
    // Regularized from the fractional part: the nearest of the two levels.
    EXPECT_NEAR((*f.weights)[size_t(i)], w.data<float>()[i], g.scale / 2 + 1e-6) << i;
  }
}
