//===- MiniFloatTest.cpp - FP8, FP4 and E8M0 conversions ------------------===//
//
// Decoding against the formats' definitions (every code), and rounding
// against a brute-force reference: the nearest of all finite values of the
// format, ties to the code with an even mantissa (its low bit 0), over a
// sweep of float32 bit patterns and the ties between neighbours.
//
//===----------------------------------------------------------------------===//
#include "support/MiniFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace tpcc;

namespace {

const MiniFloat kFormats[] = {MiniFloat::E4M3FN, MiniFloat::E5M2, MiniFloat::E2M1};

int width(MiniFloat f) { return f == MiniFloat::E2M1 ? 4 : 8; }

/// The nearest finite code by search: ties go to the even code.
uint8_t nearestCode(MiniFloat f, float x) {
  int best = -1;
  double bestErr = 0;
  for (int c = 0; c < (1 << width(f)); ++c) {
    float v = miniFloatToFloat(f, uint8_t(c));
    if (!std::isfinite(v) || (v == 0 && std::signbit(v) != std::signbit(x)))
      continue;
    double err = std::fabs(double(v) - double(x));
    if (best < 0 || err < bestErr || (err == bestErr && (c & 1) == 0 && (best & 1))) {
      best = c;
      bestErr = err;
    }
  }
  return uint8_t(best);
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(MiniFloatTest, DecodesEveryCode) {
  // E2M1: OCP MX's table.
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c)
    EXPECT_EQ(miniFloatToFloat(MiniFloat::E2M1, uint8_t(c)), e2m1[c]) << c;
  // E4M3FN and E5M2: (-1)^s 2^(e - bias) (1 + m / 2^man), subnormals
  // 2^(1 - bias) m / 2^man, and the special codes.
  for (MiniFloat f : {MiniFloat::E4M3FN, MiniFloat::E5M2}) {
    const MiniFloatInfo &in = miniFloatInfo(f);
    for (int c = 0; c < 256; ++c) {
      int s = c >> 7, e = (c >> in.manBits) & ((1 << in.expBits) - 1),
          m = c & ((1 << in.manBits) - 1);
      float v = miniFloatToFloat(f, uint8_t(c));
      bool top = e == (1 << in.expBits) - 1;
      if (f == MiniFloat::E4M3FN && top && m == 7) {
        EXPECT_TRUE(std::isnan(v)) << c;
        continue;
      }
      if (f == MiniFloat::E5M2 && top) {
        EXPECT_TRUE(m ? std::isnan(v) : std::isinf(v) && std::signbit(v) == bool(s)) << c;
        continue;
      }
      double mag = e ? std::ldexp(1 + m / double(1 << in.manBits), e - in.bias)
                     : std::ldexp(m / double(1 << in.manBits), 1 - in.bias);
      EXPECT_EQ(double(v), s ? -mag : mag) << c;
    }
  }
  EXPECT_EQ(miniFloatToFloat(MiniFloat::E4M3FN, 0x7E), 448.0f);
  EXPECT_EQ(miniFloatToFloat(MiniFloat::E4M3FN, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(miniFloatToFloat(MiniFloat::E5M2, 0x7B), 57344.0f);
  EXPECT_EQ(miniFloatToFloat(MiniFloat::E5M2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(miniFloatInfo(MiniFloat::E4M3FN).emax, 8);
  EXPECT_EQ(miniFloatInfo(MiniFloat::E2M1).emax, 2);
}

TEST(MiniFloatTest, RoundsToNearestEvenLikeASearch) {
  for (MiniFloat f : kFormats) {
    float maxFinite = miniFloatInfo(f).maxFinite;
    std::vector<float> xs;
    // Every 2^14-th float32 bit pattern of both signs within range.
    for (uint32_t b = 0; b < 0x7F800000u; b += 1u << 14)
      for (uint32_t s : {0u, 0x80000000u})
        if (float x = fromBits(b | s); std::fabs(x) <= maxFinite)
          xs.push_back(x);
    // The midpoints between neighbouring values (ties) and just beside them.
    for (int c = 0; c + 1 < (1 << (width(f) - 1)); ++c) {
      float a = miniFloatToFloat(f, uint8_t(c)), b = miniFloatToFloat(f, uint8_t(c + 1));
      if (!std::isfinite(b))
        continue;
      float mid = (a + b) / 2;
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)})
        xs.insert(xs.end(), {x, -x});
    }
    for (float x : xs) {
      uint8_t want = nearestCode(f, x);
      EXPECT_EQ(floatToMiniFloat(f, x), want) << int(f) << " " << x;
      EXPECT_EQ(floatToMiniFloat(f, x, /*saturate=*/false), want) << int(f) << " " << x;
    }
  }
}

TEST(MiniFloatTest, SaturatesOrOverflowsAsOnnxCast) {
  // E4M3FN: 464 is the tie between 448 and the NaN code's 480: even, 448.
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, 464.0f, false), 0x7E);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, 465.0f, true), 0x7E);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, 465.0f, false), 0x7F);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, -1e9f, true), 0xFE);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, INFINITY, true), 0x7E);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, -INFINITY, false), 0xFF);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E4M3FN, NAN, true), 0x7F);
  // E5M2: 61440 is the tie between 57344 and infinity's 65536: even, 65536.
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E5M2, 61440.0f, false), 0x7C);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E5M2, 61440.0f, true), 0x7B);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E5M2, 61439.0f, false), 0x7B);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E5M2, -INFINITY, false), 0xFC);
  EXPECT_EQ(floatToMiniFloat(MiniFloat::E5M2, INFINITY, true), 0x7B);
  EXPECT_TRUE(std::isnan(roundToMiniFloat(MiniFloat::E5M2, NAN)));
  // E2M1 always saturates; 5 is the tie between 4 (0b110) and 6 (0b111): the
  // even code, 4.
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, 5.0f), 4.0f);
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, 100.0f, false), 6.0f);
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, -INFINITY), -6.0f);
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, 0.25f), 0.0f); // tie: 0 is even
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, 0.26f), 0.5f);
  EXPECT_EQ(roundToMiniFloat(MiniFloat::E2M1, NAN), 6.0f);
}

TEST(MiniFloatTest, FastPathsMatchTheComputedCodes) {
  // Saturating rounding and encoding take a bit-trick path (the searches'
  // hot loop); without saturation both compute from the exponent. Within
  // range they must agree, on every 2^11-th float32 bit pattern of both
  // signs; past it the fast path saturates.
  for (MiniFloat f : kFormats) {
    float maxFinite = miniFloatInfo(f).maxFinite;
    for (uint32_t bits = 0; bits <= 0x7F800000u; bits += 1u << 11)
      for (uint32_t sign : {0u, 0x80000000u}) {
        float x = fromBits(bits | sign);
        uint8_t code = floatToMiniFloat(f, x);
        float got = roundToMiniFloat(f, x);
        if (std::fabs(x) <= maxFinite) {
          uint8_t want = floatToMiniFloat(f, x, /*saturate=*/false);
          ASSERT_EQ(code, want) << int(f) << ": x = " << x;
          float value = miniFloatToFloat(f, want);
          ASSERT_EQ(std::memcmp(&got, &value, sizeof got), 0) << int(f) << ": x = " << x;
        } else {
          ASSERT_EQ(got, std::copysign(maxFinite, x)) << int(f) << ": x = " << x;
          ASSERT_EQ(miniFloatToFloat(f, code), got) << int(f) << ": x = " << x;
        }
      }
  }
}

TEST(MiniFloatTest, BatchQuantizationIsFloatToMiniFloat) {
  // quantizeToMiniFloat (the FP8 QuantizeLinear's vectorized loop) against
  // floatToMiniFloat(x / scale) on every 2^11-th float32 bit pattern of both
  // signs, infinities and NaNs included, for two scales.
  std::vector<float> xs;
  for (uint32_t bits = 0; bits <= 0x7FC00000u; bits += 1u << 11)
    for (uint32_t sign : {0u, 0x80000000u})
      xs.push_back(fromBits(bits | sign));
  std::vector<uint8_t> codes(xs.size());
  for (MiniFloat f : kFormats)
    for (float scale : {1.0f, 0.0123f}) {
      quantizeToMiniFloat(f, xs.data(), scale, codes.data(), int64_t(xs.size()));
      for (size_t i = 0; i < xs.size(); ++i)
        ASSERT_EQ(codes[i], floatToMiniFloat(f, xs[i] / scale))
            << int(f) << ": x = " << xs[i] << ", scale " << scale;
    }
}

TEST(MiniFloatTest, E8M0IsAPowerOfTwo) {
  EXPECT_EQ(e8m0ToFloat(127), 1.0f);
  EXPECT_EQ(e8m0ToFloat(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(e8m0ToFloat(254), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(e8m0ToFloat(255)));
  EXPECT_EQ(e8m0Code(-3), 124);
  EXPECT_EQ(e8m0Code(-200), 0);
  EXPECT_EQ(e8m0Code(200), 254);
}

} // namespace
