//===- Grid.cpp - Quantization grids ----------------------------------------===//
#include "quant/core/grids/Grid.h"

#include "support/HalfFloat.h"
#include "support/MiniFloat.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;

/// Round half to even (the FE_TONEAREST mode every thread starts in).
static double rnd(double x) { return std::nearbyint(x); }

namespace {

MiniFloat miniFloatOf(ir::ElementFormat e) {
  return e == ir::ElementFormat::Fp8E5M2   ? MiniFloat::E5M2
         : e == ir::ElementFormat::Fp4E2M1 ? MiniFloat::E2M1
                                           : MiniFloat::E4M3FN;
}

/// The bit that holds a format's sign (the others: the magnitude, whose
/// codes increase with it).
uint8_t signBit(MiniFloat f) { return f == MiniFloat::E2M1 ? 0x8 : 0x80; }

} // namespace

uint8_t QuantGrid::code(double x) const {
  return floatToMiniFloat(miniFloatOf(element), float(x) / float(scale));
}

double QuantGrid::quantize(double x) const {
  if (floating())
    return scale * double(roundToMiniFloat(miniFloatOf(element), float(x) / float(scale)));
  return scale * double(toInt(x) - zeroPoint);
}

int64_t QuantGrid::toInt(double x) const {
  if (floating()) {
    MiniFloat f = miniFloatOf(element);
    uint8_t c = code(x), s = signBit(f);
    return (c & s) ? -int64_t(c & (s - 1)) : int64_t(c & (s - 1));
  }
  double q = rnd(x / scale) + double(zeroPoint);
  q = std::clamp(q, double(qmin), double(qmax));
  int64_t i = std::isnan(q) ? zeroPoint : int64_t(q);
  if (lut.empty())
    return i;
  // The nearest table entry to the unrounded position, the first on ties.
  double v = std::clamp(x / scale + double(zeroPoint), double(qmin), double(qmax));
  auto it = std::lower_bound(lut.begin(), lut.end(), v);
  if (it == lut.end())
    return lut.back();
  if (it == lut.begin())
    return *it;
  return (v - double(*(it - 1)) <= double(*it) - v) ? *(it - 1) : *it;
}

double quant::powerOfTwoCeil(double t, double minThreshold) {
  return std::exp2(std::ceil(std::log2(std::max(t, minThreshold))));
}

QuantGrid quant::symmetricGrid(double t, int bits, bool isSigned) {
  QuantGrid g;
  g.method = ir::QuantMethod::Symmetric;
  g.bits = bits;
  g.isSigned = isSigned;
  g.threshold = t;
  int s = isSigned ? 1 : 0;
  g.scale = t / std::exp2(bits - s);
  g.zeroPoint = 0;
  g.qmin = isSigned ? -(int64_t(1) << (bits - 1)) : 0;
  g.qmax = (int64_t(1) << (bits - s)) - 1;
  g.lo = g.scale * double(g.qmin);
  g.hi = g.scale * double(g.qmax);
  return g;
}

QuantGrid quant::powerOfTwoGrid(double t, int bits, bool isSigned, double minThreshold) {
  QuantGrid g = symmetricGrid(powerOfTwoCeil(t, minThreshold), bits, isSigned);
  g.method = ir::QuantMethod::PowerOfTwo;
  return g;
}

QuantGrid quant::thresholdGrid(ir::QuantMethod method, double t, int bits, bool isSigned,
                               double minThreshold) {
  return method == ir::QuantMethod::PowerOfTwo ? powerOfTwoGrid(t, bits, isSigned, minThreshold)
                                               : symmetricGrid(t, bits, isSigned);
}

QuantGrid quant::rangeGrid(ir::QuantMethod method, double lo, double hi, int bits,
                           double minThreshold) {
  if (method == ir::QuantMethod::Uniform)
    return uniformGrid(lo, hi, bits);
  return thresholdGrid(method, std::max(-lo, hi), bits, lo < 0, minThreshold);
}

QuantGrid quant::uniformGrid(double a, double b, int bits) {
  QuantGrid g;
  g.method = ir::QuantMethod::Uniform;
  g.bits = bits;
  g.isSigned = false;
  // MCT's fix_range_to_include_zero keeps a range below zero as exactly
  // [a, 0]; the shift below would only reproduce it up to rounding.
  bool belowZero = b < 0;
  a = std::min(a, 0.0);
  b = std::max(b, 0.0);
  if (b - a < ir::kDefaultMinThreshold) { // an all-zero tensor: the smallest range
    b = a + ir::kDefaultMinThreshold;
    belowZero = false;
  }
  double levels = std::exp2(bits) - 1;
  double u = (b - a) / levels;
  double a2 = belowZero ? a : u * rnd(a / u);
  double b2 = b - a + a2;
  g.scale = (b2 - a2) / levels;
  g.zeroPoint = int64_t(-rnd(a2 / g.scale));
  g.qmin = 0;
  g.qmax = int64_t(levels);
  g.lo = a2;
  g.hi = b2;
  g.threshold = std::max(-a2, b2);
  return g;
}

double quant::roundScale(double s, ir::ScaleFormat f) {
  switch (f) {
  case ir::ScaleFormat::Float16:
    return std::clamp(double(halfToFloat(floatToHalf(float(s)))), std::ldexp(1.0, -24), 65504.0);
  case ir::ScaleFormat::Fp8E4M3:
    return std::max(double(roundToMiniFloat(MiniFloat::E4M3FN, float(s))), std::ldexp(1.0, -9));
  case ir::ScaleFormat::E8M0:
    return std::ldexp(1.0, std::clamp(int(std::ceil(std::log2(s))), -127, 127));
  default:
    return s;
  }
}

QuantGrid quant::rescaled(const QuantGrid &g, double s) {
  if (g.floating()) {
    QuantGrid r = floatGridOfScale(g.element, s);
    r.method = g.method;
    return r;
  }
  QuantGrid r = g;
  r.scale = s;
  r.lo = s * double(r.qmin - r.zeroPoint);
  r.hi = s * double(r.qmax - r.zeroPoint);
  if (r.method != ir::QuantMethod::Uniform)
    r.threshold = s * std::exp2(r.bits - (r.isSigned ? 1 : 0));
  return r;
}

QuantGrid quant::withScaleFormat(const QuantGrid &g, ir::ScaleFormat f) {
  if (f != ir::ScaleFormat::Float16 && f != ir::ScaleFormat::Fp8E4M3 && f != ir::ScaleFormat::E8M0)
    return g;
  return rescaled(g, roundScale(g.scale, f));
}

int quant::mxEmax(ir::ElementFormat element, int bits) {
  return element == ir::ElementFormat::Int ? bits - 2 : miniFloatInfo(miniFloatOf(element)).emax;
}

QuantGrid quant::mxGrid(double amax, int bits, double minThreshold, ir::ElementFormat element) {
  if (element != ir::ElementFormat::Int) {
    // X = 2^(floor(log2 amax) - emax_elem), the exponent kept in E8M0's range.
    int e =
        std::clamp(int(std::floor(std::log2(std::max(amax, minThreshold)))) - mxEmax(element, bits),
                   -127, 127);
    QuantGrid g = floatGridOfScale(element, std::ldexp(1.0, e));
    g.method = ir::QuantMethod::PowerOfTwo;
    return g;
  }
  int emax = mxEmax(element, bits);
  int e =
      std::clamp(int(std::floor(std::log2(std::max(amax, minThreshold)))), -127 + emax, 127 + emax);
  // threshold = scale * 2^(bits - 1) = 2^(e + 1)
  QuantGrid g = symmetricGrid(std::ldexp(1.0, e + 1), bits, true);
  g.method = ir::QuantMethod::PowerOfTwo;
  return g;
}

QuantGrid quant::floatGrid(ir::ElementFormat e, double t, bool pot, double minThreshold) {
  MiniFloat f = miniFloatOf(e);
  const MiniFloatInfo &info = miniFloatInfo(f);
  QuantGrid g;
  g.method = pot ? ir::QuantMethod::PowerOfTwo : ir::QuantMethod::Symmetric;
  g.element = e;
  g.bits = ir::elementBits(e);
  g.isSigned = true;
  g.scale = std::max(t, minThreshold) / double(info.maxFinite);
  if (pot)
    g.scale = std::exp2(std::ceil(std::log2(g.scale)));
  return floatGridOfScale(e, g.scale, g.method);
}

QuantGrid quant::floatGridOfScale(ir::ElementFormat e, double scale, ir::QuantMethod method) {
  MiniFloat f = miniFloatOf(e);
  const MiniFloatInfo &info = miniFloatInfo(f);
  QuantGrid g;
  g.method = method;
  g.element = e;
  g.bits = ir::elementBits(e);
  g.isSigned = true;
  g.scale = scale;
  g.threshold = g.scale * double(info.maxFinite);
  // The ordinal of the largest finite value.
  uint8_t top = floatToMiniFloat(f, info.maxFinite);
  g.qmax = int64_t(top & (signBit(f) - 1));
  g.qmin = -g.qmax;
  g.zeroPoint = 0;
  g.lo = -g.threshold;
  g.hi = g.threshold;
  return g;
}
