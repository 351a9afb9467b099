//===- MiniFloat.h - FP8, FP4 and E8M0 conversions ---------------*- C++ -*-===//
//
// The small floating-point formats of ONNX (opset 19's float8e4m3fn and
// float8e5m2, opset 23's float4e2m1) and of OCP's microscaling
// specification (MX v1.0: the same FP8 and FP4 elements, and E8M0 shared
// scales), to and from float:
//
//   format     exp/man bits  bias  largest finite  special codes
//   E4M3FN     4 / 3           7   448             S.1111.111 NaN; no infinity
//   E5M2       5 / 2          15   57344           S.11111.00 infinity, S.11111.xx NaN
//   E2M1       2 / 1           1   6               none
//
// A float is rounded to the nearest value of the format, ties to even, as
// ONNX's Cast defines it (subnormals included). Beyond the largest finite
// value: with `saturate` the largest finite value of the sign; without it,
// NaN for E4M3FN and infinity for E5M2 (ONNX's `saturate=0`). Infinities
// saturate likewise, or stay infinity (E5M2) or become NaN (E4M3FN). NaN
// gives the format's NaN with the input's sign (S.1111111). E2M1 has neither
// NaN nor infinity: it always saturates, and NaN gives +6.
//
// E8M0 is a bare exponent: code c stands for 2^(c - 127), 255 for NaN.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_SUPPORT_MINIFLOAT_H
#define TPCC_SUPPORT_MINIFLOAT_H

#include <cstdint>

namespace tpcc {

enum class MiniFloat { E4M3FN, E5M2, E2M1 };

/// The layout of a format.
struct MiniFloatInfo {
  int expBits, manBits, bias;
  float maxFinite;
  /// The largest exponent of a finite value (log2 of maxFinite's leading
  /// power of two): 8, 15, 2. OCP MX's emax_elem.
  int emax;
};
const MiniFloatInfo &miniFloatInfo(MiniFloat f);

/// The value of `code` (the format's low bits; the others are ignored).
float miniFloatToFloat(MiniFloat f, uint8_t code);
/// The code of x, rounded to nearest even (see the file comment for
/// saturation and special values).
uint8_t floatToMiniFloat(MiniFloat f, float x, bool saturate = true);
/// x rounded to the format and back: miniFloatToFloat(floatToMiniFloat(x)).
float roundToMiniFloat(MiniFloat f, float x, bool saturate = true);

/// codes[i] = floatToMiniFloat(f, x[i] / scale) for n floats, saturating:
/// the same codes, in a loop written to vectorize (the FP8 QuantizeLinear
/// of a whole tensor).
void quantizeToMiniFloat(MiniFloat f, const float *x, float scale, uint8_t *codes, int64_t n);

/// 2^(code - 127); NaN for 255.
float e8m0ToFloat(uint8_t code);
/// The E8M0 code of 2^e, e clamped to [-127, 127].
uint8_t e8m0Code(int e);

} // namespace tpcc

#endif
