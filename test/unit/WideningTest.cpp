//===- WideningTest.cpp - The candidates --min-sqnr widens to ----------------===//
//
// quant/search/Diagnose.h's floatCandidate and nextCandidate on a planned
// Conv: a candidate that leaves the activation float widens only when it
// keeps each weight on as many bits or more, so a 4-bit weight-only
// candidate (ort_cpu's MatMulNBits form) is never a widening of an 8-bit
// kernel, wherever the options list it.
//
//===----------------------------------------------------------------------===//
#include "quant/search/Diagnose.h"
#include "test/unit/PlanFixture.h"

#include <gtest/gtest.h>

using namespace tpcc;
using tpcc::test::GraphBuilder;

namespace {

const char *kSpec = R"(
framework fw {
  weight kernel: Conv.input[1] axes(out: 0, in: 1)
}
platform chip {
  config a8 = { activation: { bits: 8 } }
  config w8 = a8 with { weights.kernel: { method: symmetric, bits: 8, per_channel: true } }
  config w4wo = w8 with { activation.quantize: false, weights.kernel.bits: 4 }
  config w16wo = w8 with { activation.quantize: false, weights.kernel.bits: 16 }
  config float = w8 with { activation.quantize: false, weights.quantize: false }
  default [a8]
  opset Conv : [w8, w4wo, float] base w8
  opset Depthwise : [w8, w4wo] base w8
  opset Wide : [w8, w4wo, w16wo, float] base w8
}
capabilities chip_fw = chip on fw {
  Conv      <- Conv where group == 1
  Wide      <- Conv where group == 2
  Depthwise <- Conv where group == 4
}
)";

class Widening : public test::PlanFixture {
protected:
  void SetUp() override { compile(kSpec); }
};

TEST_F(Widening, WeightOnlyWithNarrowerWeightsIsNoWidening) {
  GraphBuilder b;
  b.input("x");
  b.conv("c", "x", "t");
  b.conv("dw", "t", "u", /*group=*/4);
  b.output("u");
  plan::Plan p = planOf(b, "chip_fw");
  const plan::PlanNode &c = node(p, "c");
  ASSERT_EQ(c.opset->name, "Conv");
  // Listed first, the 4-bit weight-only candidate is passed over: `float`.
  EXPECT_EQ(quant::floatCandidate(c), std::optional<unsigned>(2));
  EXPECT_EQ(quant::nextCandidate(c), std::optional<unsigned>(2));
  // Only a narrower weight-only candidate: none.
  const plan::PlanNode &dw = node(p, "dw");
  ASSERT_EQ(dw.opset->name, "Depthwise");
  EXPECT_EQ(quant::floatCandidate(dw), std::nullopt);
  EXPECT_EQ(quant::nextCandidate(dw), std::nullopt);
}

TEST_F(Widening, WeightOnlyWithWiderWeightsIsAWidening) {
  GraphBuilder b;
  b.input("x");
  b.conv("pw", "x", "y", /*group=*/2);
  b.output("y");
  plan::Plan p = planOf(b, "chip_fw");
  const plan::PlanNode &pw = node(p, "pw");
  ASSERT_EQ(pw.opset->name, "Wide");
  EXPECT_EQ(quant::floatCandidate(pw), std::optional<unsigned>(2)); // w16wo, before `float`
}

} // namespace
