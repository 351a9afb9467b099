//===- MiniFloat.cpp - FP8, FP4 and E8M0 conversions ----------------------===//
//
// Rounding works on the value, not on bit patterns: a finite |x| lies in the
// binade 2^E (E at least the smallest normal exponent, so subnormals share
// the smallest binade's step), whose step is 2^(E - man); |x| / step is exact
// in double and nearbyint rounds it half to even. The code is then assembled
// from the rounded value.
//
//===----------------------------------------------------------------------===//
#include "support/MiniFloat.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

using namespace tpcc;

const MiniFloatInfo &tpcc::miniFloatInfo(MiniFloat f) {
  static const MiniFloatInfo e4m3{4, 3, 7, 448.0f, 8};
  static const MiniFloatInfo e5m2{5, 2, 15, 57344.0f, 15};
  static const MiniFloatInfo e2m1{2, 1, 1, 6.0f, 2};
  switch (f) {
  case MiniFloat::E4M3FN:
    return e4m3;
  case MiniFloat::E5M2:
    return e5m2;
  case MiniFloat::E2M1:
    break;
  }
  return e2m1;
}

/// The value of `code`, computed (miniFloatToFloat reads a table of these).
static float decode(MiniFloat f, uint8_t code) {
  const MiniFloatInfo &in = miniFloatInfo(f);
  int width = 1 + in.expBits + in.manBits;
  code &= uint8_t((1u << width) - 1);
  bool negative = code >> (width - 1);
  int exp = (code >> in.manBits) & ((1 << in.expBits) - 1);
  int man = code & ((1 << in.manBits) - 1);
  int expAll = (1 << in.expBits) - 1;
  float sign = negative ? -1.0f : 1.0f;
  if (f == MiniFloat::E4M3FN && exp == expAll && man == (1 << in.manBits) - 1)
    return std::numeric_limits<float>::quiet_NaN();
  if (f == MiniFloat::E5M2 && exp == expAll)
    return man ? std::numeric_limits<float>::quiet_NaN()
               : sign * std::numeric_limits<float>::infinity();
  double v = exp ? std::ldexp(1.0 + std::ldexp(man, -in.manBits), exp - in.bias)
                 : std::ldexp(double(man), 1 - in.bias - in.manBits);
  return sign * float(v);
}

/// The code of x, computed from its exponent and scaled mantissa: every
/// case (NaN, infinities, no saturation) and the reference for the fast path.
static uint8_t encode(MiniFloat f, float x, bool saturate) {
  const MiniFloatInfo &in = miniFloatInfo(f);
  int width = 1 + in.expBits + in.manBits;
  uint8_t sign = std::signbit(x) ? uint8_t(1u << (width - 1)) : 0;
  uint8_t nanCode = uint8_t((1u << (width - 1)) - 1); // S.111...1
  uint8_t maxCode = f == MiniFloat::E5M2 ? 0x7B : f == MiniFloat::E4M3FN ? 0x7E : 0x7;
  if (f == MiniFloat::E2M1)
    saturate = true;
  if (std::isnan(x))
    return f == MiniFloat::E2M1 ? maxCode : uint8_t(sign | nanCode);
  double a = std::fabs(double(x));
  int minExp = 1 - in.bias;
  int e = std::isinf(a) ? 0 : std::max(std::ilogb(a), minExp);
  double r =
      std::isinf(a) ? a : std::ldexp(std::nearbyint(std::ldexp(a, in.manBits - e)), e - in.manBits);
  if (r > double(in.maxFinite)) {
    if (saturate)
      return uint8_t(sign | maxCode);
    return f == MiniFloat::E5M2 ? uint8_t(sign | 0x7C) : uint8_t(sign | nanCode);
  }
  if (r == 0)
    return sign;
  int re = std::ilogb(r);
  if (re < minExp) // subnormal
    return uint8_t(sign | int(std::ldexp(r, in.bias - 1 + in.manBits)));
  int man = int(std::ldexp(r, in.manBits - re)) - (1 << in.manBits);
  return uint8_t(sign | ((re + in.bias) << in.manBits) | man);
}

float tpcc::miniFloatToFloat(MiniFloat f, uint8_t code) {
  static const auto tables = [] {
    std::array<std::array<float, 256>, 3> t{};
    for (int k = 0; k < 3; ++k)
      for (int c = 0; c < 256; ++c)
        t[size_t(k)][size_t(c)] = decode(MiniFloat(k), uint8_t(c));
    return t;
  }();
  return tables[size_t(f)][code];
}

uint8_t tpcc::floatToMiniFloat(MiniFloat f, float x, bool saturate) {
  if (!saturate)
    return encode(f, x, saturate);
  // Saturating: the FP8 QuantizeLinear's arithmetic (x / 1 is x exactly).
  uint8_t code;
  quantizeToMiniFloat(f, &x, 1.0f, &code, 1);
  return code;
}

float tpcc::roundToMiniFloat(MiniFloat f, float x, bool saturate) {
  const MiniFloatInfo &in = miniFloatInfo(f);
  float a = std::fabs(x);
  if (!saturate || !(a <= std::numeric_limits<float>::max()))
    return miniFloatToFloat(f, encode(f, x, saturate));
  // The fast path the quantizer's searches run: a's quantum is 2^(e - man)
  // at its exponent e (at least the format's smallest normal one); adding
  // and subtracting 1.5 * 2^23 quanta rounds half to even onto it, as the
  // quantum is that sum's last bit. Past the largest finite value: saturated.
  if (a >= in.maxFinite)
    return std::copysign(in.maxFinite, x);
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  int e = std::max(int((bits >> 23) & 0xFF) - 127, 1 - in.bias);
  uint32_t cbits = (uint32_t(e - in.manBits + 23 + 127) << 23) | 0x400000u;
  float c;
  std::memcpy(&c, &cbits, sizeof c);
  // (Built without -ffast-math: (a + c) - c is not folded away.)
  return std::copysign(std::min((a + c) - c, in.maxFinite), x);
}

float tpcc::e8m0ToFloat(uint8_t code) {
  return code == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                      : float(std::ldexp(1.0, int(code) - 127));
}

uint8_t tpcc::e8m0Code(int e) { return uint8_t(std::clamp(e, -127, 127) + 127); }

void tpcc::quantizeToMiniFloat(MiniFloat f, const float *x, float scale, uint8_t *codes,
                               int64_t n) {
  const MiniFloatInfo &in = miniFloatInfo(f);
  const int32_t man = in.manBits, minExp = 1 - in.bias, width = 1 + in.expBits + in.manBits;
  const float maxFinite = in.maxFinite, subnormalScale = std::ldexp(1.0f, in.bias - 1 + man);
  const int32_t signBit = 1 << (width - 1), manMask = (1 << man) - 1;
  // NaN: the format's NaN code with the sign (E2M1 has none: its largest).
  const int32_t nanCode = f == MiniFloat::E2M1 ? 0x7 : signBit - 1;
  const int32_t nanSign = f == MiniFloat::E2M1 ? 0 : signBit;
  int32_t maxBits;
  std::memcpy(&maxBits, &maxFinite, sizeof maxBits);
  // roundToMiniFloat's arithmetic and floatToMiniFloat's encoding with
  // integer selects only (no branch, no float comparison that could trap),
  // so the loop vectorizes. Non-negative floats order as their bits do.
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    int32_t vb;
    std::memcpy(&vb, &v, sizeof vb);
    int32_t negative = int32_t(uint32_t(vb) >> 31);
    int32_t magnitude = vb & 0x7FFFFFFF;
    bool nan = magnitude > 0x7F800000;
    int32_t ab = std::min(magnitude, maxBits); // saturation (NaN: below)
    float a;
    std::memcpy(&a, &ab, sizeof a);
    int32_t e = std::max((ab >> 23) - 127, minExp);
    int32_t cb = ((e - man + 150) << 23) | 0x400000;
    float c;
    std::memcpy(&c, &cb, sizeof c);
    float r = (a + c) - c;
    int32_t rb;
    std::memcpy(&rb, &r, sizeof rb);
    rb = std::min(rb, maxBits);
    std::memcpy(&r, &rb, sizeof r);
    int32_t re = (rb >> 23) - 127;
    // Unsigned: for a zero or subnormal r the exponent field wraps, and the
    // select below drops it.
    int32_t normal =
        int32_t((uint32_t(re + in.bias) << man) | uint32_t((rb >> (23 - man)) & manMask));
    int32_t sub = int32_t(r * subnormalScale);
    int32_t subnormal = -int32_t(re < minExp), isNan = -int32_t(nan); // all ones or 0
    int32_t code = ((sub & subnormal) | (normal & ~subnormal)) | (negative * signBit);
    code = (code & ~isNan) | ((nanCode | (negative * nanSign)) & isNan);
    codes[i] = uint8_t(code);
  }
}
