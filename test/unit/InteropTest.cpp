//===- InteropTest.cpp - Helpers of the MCT / AIMET backends --------------===//
#include "backends/Backends.h"

#include <gtest/gtest.h>

using namespace tpcc;

TEST(InteropTest, MctNumbers) {
  EXPECT_EQ(interop::mctMethod(ir::QuantMethod::PowerOfTwo), 0);
  EXPECT_EQ(interop::mctMethod(ir::QuantMethod::LutPot), 1);
  EXPECT_EQ(interop::mctMethod(ir::QuantMethod::Symmetric), 2);
  EXPECT_EQ(interop::mctMethod(ir::QuantMethod::Uniform), 3);
  EXPECT_EQ(interop::mctMethod(ir::QuantMethod::LutSym), 4);
  EXPECT_EQ(interop::mctSignedness(ir::Signedness::Auto), 0);
  EXPECT_EQ(interop::mctSignedness(ir::Signedness::Signed), 1);
  EXPECT_EQ(interop::mctSignedness(ir::Signedness::Unsigned), 2);
  EXPECT_EQ(interop::mctAttrKey("kernel"), "kernel_attr");
  EXPECT_EQ(interop::mctAttrKey("bias"), "bias_attr");
  EXPECT_EQ(interop::mctAttrKey("gamma"), "gamma");
}

TEST(InteropTest, FixedRange) {
  ir::OpConfig c;
  c.activation.bits = 8;
  c.activation.signedness = ir::Signedness::Signed;
  c.fixedScale = 1.0 / 256;
  c.fixedZeroPoint = -128; // TFLite softmax: [0, 255/256]
  auto [lo, hi] = ir::fixedRange(c);
  EXPECT_DOUBLE_EQ(lo, 0.0);
  EXPECT_DOUBLE_EQ(hi, 255.0 / 256);
  c.activation.signedness = ir::Signedness::Unsigned;
  c.fixedZeroPoint = 0;
  std::tie(lo, hi) = ir::fixedRange(c);
  EXPECT_DOUBLE_EQ(lo, 0.0);
  EXPECT_DOUBLE_EQ(hi, 255.0 / 256);
  // `auto` (as MCT writes every TFLite config): the zero point decides. -128 and
  // 0 fit int8; 200 fits only uint8.
  c.activation.signedness = ir::Signedness::Auto;
  c.fixedZeroPoint = -128;
  EXPECT_EQ(ir::fixedSignedness(c), ir::Signedness::Signed);
  std::tie(lo, hi) = ir::fixedRange(c);
  EXPECT_DOUBLE_EQ(lo, 0.0);
  EXPECT_DOUBLE_EQ(hi, 255.0 / 256);
  c.fixedZeroPoint = 0;
  c.fixedScale = 1.0 / 128; // TFLite tanh: [-1, 127/128]
  EXPECT_EQ(ir::fixedSignedness(c), ir::Signedness::Signed);
  std::tie(lo, hi) = ir::fixedRange(c);
  EXPECT_DOUBLE_EQ(lo, -1.0);
  EXPECT_DOUBLE_EQ(hi, 127.0 / 128);
  c.fixedZeroPoint = 200;
  EXPECT_EQ(ir::fixedSignedness(c), ir::Signedness::Unsigned);
}

TEST(InteropTest, SupergroupsAreACartesianProductWithoutDuplicates) {
  ir::Platform p;
  p.opsets = {{"A", {}, {}}, {"B", {}, {}}, {"C", {}, {}}};
  p.fusings.push_back({"f", {{"A"}, {"B", "C"}}, {}});
  p.fusings.push_back({"g", {{"A"}, {"B"}}, {}}); // all duplicates
  p.fusings.push_back({"h", {{"C"}, {"Z"}}, {}}); // Z binds nothing
  ir::Capabilities c;
  c.bindings = {{"A", "Conv", {}, {}},
                {"A", "Gemm", {}, {}},
                {"B", "Relu", {}, {}},
                {"C", "Clip", {}, {}},
                {"C", "Relu", {}, {}}};
  auto groups = interop::aimetSupergroups(p, c);
  std::vector<std::vector<std::string>> want = {
      {"Conv", "Relu"}, {"Conv", "Clip"}, {"Gemm", "Relu"}, {"Gemm", "Clip"}};
  EXPECT_EQ(groups, want);
}
