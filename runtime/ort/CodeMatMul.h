//===- CodeMatMul.h - A MatMul of two activations on their codes -*- C++ -*-===//
//
// ONNX Runtime runs DequantizeLinear(a) -> MatMul <- DequantizeLinear(b), both
// operands activations on one 8-bit grid each (attention's Q K^T and P V), on
// the codes: QLinearMatMul when a QuantizeLinear reads the product,
// MatMulIntegerToFloat when none does. Its int32 sums of (a - a_zero) (b -
// b_zero) are exact: the uint8 x uint8 kernels of MLAS widen to 16 bits on
// every x86-64 CPU, VNNI or not. Then, as its integer groups do (IntegerPairs.h),
// float(sum) * (a_scale * b_scale / y_scale) rounded half to even, plus the
// zero point, saturated; or float(sum) * (a_scale * b_scale).
//
// tpcc computes the same from the codes with 16-bit multiply-adds (SSE2's
// PMADDWD: every product and pair sum exact in int32).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_CODEMATMUL_H
#define TPCC_RUNTIME_ORT_CODEMATMUL_H

#include "runtime/Tensor.h"

#include <optional>
#include <string>

namespace tpcc::graph {
class Node;
class Value;
} // namespace tpcc::graph

namespace tpcc::rt {

struct CodeMatMul {
  const graph::Node *node = nullptr;
  /// The codes of the two operands (the DequantizeLinears' inputs).
  const graph::Value *a = nullptr, *b = nullptr;
  int32_t aZero = 0, bZero = 0; ///< as stored (int8 or uint8)
  /// The QuantizeLinear that alone reads the product, or null: the output is
  /// float (MatMulIntegerToFloat).
  const graph::Node *q = nullptr;
  float multiplier = 1; ///< a_scale * b_scale [/ y_scale], in float
  float yScale = 1;     ///< the output grid (with q)
  int32_t yZero = 0;
  bool ySigned = false; ///< int8 codes (saturated to [-128, 127]), else uint8
};

/// The MatMul `n` as ORT runs it on its operands' codes, or none: not two
/// DequantizeLinears of non-constant 8-bit codes with a scalar scale and zero
/// point each, codes ORT sees as uint8 on both sides (ortUnsignedCodes: ORT
/// multiplies other codes in saturating pairs without VNNI), the product read
/// by one QuantizeLinear of such codes or by no QuantizeLinear at all (and
/// not joined with an Add into a Gemm).
std::optional<CodeMatMul> codeMatMulOf(const graph::Node &n);

/// The product of the codes `a` [..., M, K] and `b` [..., K, N] (batch
/// dimensions broadcast as MatMul's): `y` the codes of c.q's output, or the
/// float output without one. False + `err` when the shapes do not fit.
bool runCodeMatMul(const CodeMatMul &c, const Tensor &a, const Tensor &b, Tensor &y,
                   std::string &err);

} // namespace tpcc::rt

#endif
