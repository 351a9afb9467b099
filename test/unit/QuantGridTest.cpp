//===- QuantGridTest.cpp - Quantization grids (docs/algorithms.md §1) -----===//
#include "quant/core/grids/Grid.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

TEST(QuantGrid, SymmetricSignedEightBits) {
  // t = 1, 8 bits signed: scale 1/128, integers [-128, 127], t itself not
  // representable (the top value is t - scale).
  QuantGrid g = symmetricGrid(1.0, 8, true);
  EXPECT_EQ(g.scale, 1.0 / 128);
  EXPECT_EQ(g.qmin, -128);
  EXPECT_EQ(g.qmax, 127);
  EXPECT_EQ(g.zeroPoint, 0);
  EXPECT_EQ(g.lo, -1.0);
  EXPECT_EQ(g.hi, 127.0 / 128);
  EXPECT_EQ(g.toInt(0.3), 38); // 38.4 rounds to 38
  EXPECT_EQ(g.quantize(0.3), 38.0 / 128);
  EXPECT_EQ(g.quantize(1.0), 127.0 / 128);
  EXPECT_EQ(g.quantize(-5.0), -1.0);
  // Ties go to even: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2.
  EXPECT_EQ(g.toInt(0.5 / 128), 0);
  EXPECT_EQ(g.toInt(1.5 / 128), 2);
  EXPECT_EQ(g.toInt(-2.5 / 128), -2);
}

TEST(QuantGrid, SymmetricUnsigned) {
  // Unsigned: scale t/2^n, integers [0, 2^n - 1].
  QuantGrid g = symmetricGrid(2.0, 4, false);
  EXPECT_EQ(g.scale, 2.0 / 16);
  EXPECT_EQ(g.qmin, 0);
  EXPECT_EQ(g.qmax, 15);
  EXPECT_EQ(g.quantize(-1.0), 0.0);
  EXPECT_EQ(g.quantize(3.0), 15.0 / 8);
}

TEST(QuantGrid, PowerOfTwoRoundsThresholdUp) {
  EXPECT_EQ(powerOfTwoCeil(0.3), 0.5);
  EXPECT_EQ(powerOfTwoCeil(0.5), 0.5);
  EXPECT_EQ(powerOfTwoCeil(3.0), 4.0);
  EXPECT_EQ(powerOfTwoCeil(1e-9), 1.0 / 65536); // floored at 2^-16
  QuantGrid g = powerOfTwoGrid(0.3, 8, true);
  EXPECT_EQ(g.method, ir::QuantMethod::PowerOfTwo);
  EXPECT_EQ(g.threshold, 0.5);
  EXPECT_EQ(g.scale, 0.5 / 128);
}

TEST(QuantGrid, UniformMakesZeroExact) {
  // [-0.3, 1.0], 8 bits: u = 1.3/255, a/u = -58.85 -> -59, a' = -59u, the
  // width kept; the zero point 59 represents 0 exactly.
  QuantGrid g = uniformGrid(-0.3, 1.0, 8);
  double u = 1.3 / 255;
  EXPECT_NEAR(g.scale, u, 1e-15);
  EXPECT_EQ(g.zeroPoint, 59);
  EXPECT_EQ(g.qmin, 0);
  EXPECT_EQ(g.qmax, 255);
  EXPECT_NEAR(g.lo, -59 * u, 1e-15);
  EXPECT_NEAR(g.hi, 1.3 - 59 * u, 1e-15);
  EXPECT_EQ(g.quantize(0.0), 0.0);
  EXPECT_EQ(g.toInt(0.0), 59);
  EXPECT_EQ(g.toInt(-1.0), 0);
  EXPECT_EQ(g.toInt(2.0), 255);
}

TEST(QuantGrid, UniformWidensToHoldZero) {
  // A positive range starts at 0; a negative one ends at 0, exactly (MCT's
  // fix_range_to_include_zero).
  QuantGrid pos = uniformGrid(0.5, 2.0, 8);
  EXPECT_EQ(pos.lo, 0.0);
  EXPECT_EQ(pos.hi, 2.0);
  EXPECT_EQ(pos.zeroPoint, 0);
  QuantGrid neg = uniformGrid(-3.0, -1.0, 8);
  EXPECT_EQ(neg.lo, -3.0);
  EXPECT_EQ(neg.hi, 0.0);
  EXPECT_EQ(neg.zeroPoint, 255);
  EXPECT_EQ(neg.quantize(0.0), 0.0);
}

TEST(QuantGrid, LutPicksNearestEntry) {
  QuantGrid g = symmetricGrid(1.0, 8, true);
  g.lut = {-64, 0, 32, 100};
  EXPECT_EQ(g.toInt(0.1), 0);        // 12.8 -> 0
  EXPECT_EQ(g.toInt(0.2), 32);       // 25.6 -> 32
  EXPECT_EQ(g.toInt(16.0 / 128), 0); // tie between 0 and 32: the first
  EXPECT_EQ(g.toInt(0.99), 100);
  EXPECT_EQ(g.toInt(-1.0), -64);
  EXPECT_EQ(g.quantize(0.2), 32.0 / 128);
}
