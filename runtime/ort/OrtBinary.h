//===- OrtBinary.h - QLinearAdd / QLinearMul as ONNX Runtime computes them -*- C++ -*-===//
//
// ONNX Runtime fuses DequantizeLinear -> Add|Mul -> QuantizeLinear (8-bit,
// per-tensor, the two inputs and the output of one code type in ORT's terms,
// after QDQS8ToU8) into com.microsoft's QLinearAdd / QLinearMul, whose x86-64
// kernels (MLAS) do not compute DQ -> op -> Q in float:
//   - QLinearAdd (the AVX2 kernel): rA = sA / sC, rB = sB / sC (float),
//     fixed = zC - fma(rA, zA, rB * zB) (the compiler contracts MLAS's
//     rA * zA + rB * zB); y = fma(a, rA, fma(b, rB, fixed)) on
//     the codes a, b themselves, rounded to nearest even and saturated;
//   - QLinearMul (SSE2): y = (a - zA) * (b - zB) (exact in int32) * (sA * sB
//     / sC) + zC in float, rounded to nearest even and saturated.
// Same-shape inputs only: a broadcast scalar takes another path in both.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTBINARY_H
#define TPCC_RUNTIME_ORT_ORTBINARY_H

#include <cstdint>
#include <string>
#include <vector>

namespace tpcc::rt {

/// One 8-bit tensor's grid as ORT's kernel sees it: the scale, the zero
/// point, and whether its codes are int8 there (else uint8).
struct OrtGrid {
  float scale = 1;
  int32_t zero = 0;
  bool isSigned = false;
};

/// The 65,536-entry table of `op` ("Add" or "Mul") over code pairs (first
/// input's code in the low byte, as the executor's pair tables): entry
/// a + 256 * b is the output code for codes a and b, each given and returned
/// in its tensor's own type (`nativeSigned`: int8, else uint8; an int8
/// tensor ORT sees as uint8 is shifted by 128 on the way in and out).
std::vector<uint8_t> ortBinaryTable(const std::string &op, const OrtGrid &a, const OrtGrid &b,
                                    const OrtGrid &c, const bool nativeSigned[3]);

} // namespace tpcc::rt

#endif
