//===- OrtBinary.cpp - QLinearAdd / QLinearMul as ONNX Runtime computes them -===//
#include "runtime/ort/OrtBinary.h"

#include <algorithm>
#include <cmath>

using namespace tpcc;
using namespace tpcc::rt;

namespace {

/// Round to nearest even (cvtps2dq), then saturate to int16 (packs_epi32)
/// and to the 8-bit type (packus/packs_epi16).
int32_t saturate(float v, bool isSigned) {
  float r = std::nearbyint(v); // the default rounding mode: to nearest even
  int64_t i = std::isnan(r) || std::fabs(r) > 2147483647.0f ? INT32_MIN : int64_t(r);
  i = std::clamp<int64_t>(i, INT16_MIN, INT16_MAX);
  return int32_t(isSigned ? std::clamp<int64_t>(i, -128, 127) : std::clamp<int64_t>(i, 0, 255));
}

} // namespace

std::vector<uint8_t> rt::ortBinaryTable(const std::string &op, const OrtGrid &a, const OrtGrid &b,
                                        const OrtGrid &c, const bool nativeSigned[3]) {
  // A code in its own type -> as ORT's kernel reads it.
  auto in = [&](int byte, int k, const OrtGrid &g) {
    int v = nativeSigned[k] ? int(int8_t(uint8_t(byte))) : byte;
    return nativeSigned[k] && !g.isSigned ? v + 128 : v;
  };
  auto out = [&](int32_t v) {
    if (nativeSigned[2] && !c.isSigned)
      v -= 128;
    return uint8_t(v);
  };
  std::vector<uint8_t> table(65536);
  if (op == "Add") {
    float ra = a.scale / c.scale, rb = b.scale / c.scale;
    // MLAS's ZeroPointC - (ScaleRatio_AC * ZeroPointA + ScaleRatio_BC *
    // ZeroPointB), as its AVX2 file is compiled (-mfma): the compiler
    // contracts the first product and the sum into one FMA. Unfused, the
    // fixed part differs in the last bit and an output on a tie rounds the
    // other way (M-LSD quantized for ort_cpu, 73.5).
    float fixed = float(c.zero) - std::fma(ra, float(a.zero), rb * float(b.zero));
    for (int k = 0; k < 65536; ++k) {
      float x = float(in(k & 255, 0, a)), y = float(in(k >> 8, 1, b));
      table[size_t(k)] = out(saturate(std::fma(x, ra, std::fma(y, rb, fixed)), c.isSigned));
    }
  } else {
    float ratio = a.scale * b.scale / c.scale;
    for (int k = 0; k < 65536; ++k) {
      int32_t p = (in(k & 255, 0, a) - a.zero) * (in(k >> 8, 1, b) - b.zero);
      table[size_t(k)] = out(saturate(float(p) * ratio + float(c.zero), c.isSigned));
    }
  }
  return table;
}
