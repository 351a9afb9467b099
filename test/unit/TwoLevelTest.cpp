//===- TwoLevelTest.cpp - Block factors under group scales ----------------===//
//
// Two-level scales (quant/core/format/TwoLevel.h) against their definition:
// each group's scale is its largest block scale over the factor format's
// largest value, each block's factor one of the two factor values next to
// its single-level scale over the group's (the one with the smaller error;
// under no_clipping the larger), and each grid's scale the float32 product.
//
//===----------------------------------------------------------------------===//
#include "quant/core/format/TwoLevel.h"
#include "quant/ptq/Quantizer.h"
#include "support/MiniFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// A [K=64, N=3] MatMul weight whose blocks of 16 along K have very
/// different ranges.
rt::Tensor weight() {
  rt::Tensor w(graph::ElemType::Float, {64, 3});
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0, 1);
  for (int64_t k = 0; k < 64; ++k)
    for (int64_t c = 0; c < 3; ++c)
      w.data<float>()[k * 3 + c] = n(rng) * float(1 + k / 16) * (c == 2 ? 0.01f : 1.f);
  return w;
}

ir::AttrConfig config(ir::ScaleFormat factor, bool perChannel) {
  ir::AttrConfig c;
  c.method = ir::QuantMethod::Symmetric;
  c.bits = 4;
  c.quantize = true;
  c.perChannel = perChannel;
  c.format.block = 16;
  c.format.blockScale = factor;
  return c;
}

/// The block values of block b = (kb, c) of weight() (16 along K).
std::vector<float> blockValues(const rt::Tensor &w, size_t b) {
  std::vector<float> v;
  int64_t kb = int64_t(b) / 3, c = int64_t(b) % 3;
  for (int64_t k = kb * 16; k < kb * 16 + 16; ++k)
    v.push_back(w.data<float>()[k * 3 + c]);
  return v;
}

TEST(TwoLevel, UInt4FactorsUnderChannelScales) {
  rt::Tensor w = weight();
  ir::Recipe recipe;
  ir::AttrConfig c = config(ir::ScaleFormat::UInt4, true);
  WeightQDQ q = selectWeightGrids(w, c, int64_t(1), recipe, nullptr, int64_t(0));
  ir::AttrConfig single = c;
  single.format.blockScale.reset();
  WeightQDQ s = selectWeightGrids(w, single, int64_t(1), recipe, nullptr, int64_t(0));
  ASSERT_TRUE(q.twoLevel);
  const TwoLevelScales &t = *q.twoLevel;
  EXPECT_EQ(t.axis, 1); // the channels, in the blocked scale's shape [4, 3]
  ASSERT_EQ(t.groupScales.size(), 3u);
  ASSERT_EQ(t.factors.size(), 12u);
  SelectionOptions o;
  for (size_t ch = 0; ch < 3; ++ch) {
    double largest = 0, top = 0;
    for (size_t kb = 0; kb < 4; ++kb) {
      largest = std::max(largest, s.grids[kb * 3 + ch].scale);
      top = std::max(top, t.factors[kb * 3 + ch]);
    }
    EXPECT_EQ(t.groupScales[ch], double(float(largest / 15))) << ch;
    EXPECT_EQ(top, 15) << ch;
  }
  for (size_t b = 0; b < 12; ++b) {
    double f = t.factors[b], group = t.groupScales[b % 3];
    EXPECT_EQ(q.grids[b].scale, double(float(f) * float(group))) << b;
    double r = s.grids[b].scale / group;
    EXPECT_TRUE(f == std::clamp(std::floor(r), 1.0, 15.0) ||
                f == std::clamp(std::ceil(r), 1.0, 15.0))
        << b << ": " << f << " for " << r;
    // The other neighbour is no better.
    double other = f == std::floor(r) ? std::min(15.0, std::ceil(r)) : std::max(1.0, std::floor(r));
    std::vector<float> v = blockValues(w, b);
    QuantGrid alt = rescaled(q.grids[b], factorScale(other, group));
    EXPECT_LE(valuesError(v.data(), 16, q.grids[b], o), valuesError(v.data(), 16, alt, o)) << b;
  }
  // Channel 2's values are 100 times smaller: its own scale, not channel 0's.
  EXPECT_LT(t.groupScales[2], t.groupScales[0] / 50);
}

TEST(TwoLevel, PerTensorFp8FactorsAndNoClipping) {
  rt::Tensor w = weight();
  ir::Recipe recipe;
  recipe.weightsThreshold = ir::ThresholdMethod::NoClipping;
  ir::AttrConfig c = config(ir::ScaleFormat::Fp8E4M3, false);
  c.format.element = ir::ElementFormat::Fp4E2M1;
  WeightQDQ q = selectWeightGrids(w, c, std::nullopt, recipe, nullptr, int64_t(0));
  ASSERT_TRUE(q.twoLevel);
  const TwoLevelScales &t = *q.twoLevel;
  EXPECT_EQ(t.axis, -1);
  ASSERT_EQ(t.groupScales.size(), 1u);
  double top = 0;
  for (size_t b = 0; b < t.factors.size(); ++b) {
    double f = t.factors[b];
    EXPECT_EQ(double(roundToMiniFloat(MiniFloat::E4M3FN, float(f))), f) << b;
    EXPECT_GT(f, 0);
    top = std::max(top, f);
    EXPECT_TRUE(q.grids[b].floating());
    EXPECT_EQ(q.grids[b].scale, factorScale(f, t.groupScales[0]));
    // no_clipping takes the factor above: no value beyond the grid's largest.
    for (float x : blockValues(w, b))
      EXPECT_LE(std::abs(x), q.grids[b].threshold * (1 + 1e-6)) << b;
  }
  EXPECT_EQ(top, 448);
}

TEST(TwoLevel, GroupAxisOnTheBlockAxisIsPerTensor) {
  rt::Tensor w = weight();
  ir::Recipe recipe;
  ir::AttrConfig c = config(ir::ScaleFormat::UInt8, true);
  WeightQDQ q = selectWeightGrids(w, c, int64_t(0), recipe, nullptr, int64_t(0));
  ASSERT_TRUE(q.twoLevel);
  EXPECT_EQ(q.twoLevel->axis, -1);
  EXPECT_EQ(q.twoLevel->groupScales.size(), 1u);
  for (double f : q.twoLevel->factors)
    EXPECT_TRUE(f >= 1 && f <= 255 && f == std::floor(f)) << f;
}

} // namespace
