//===- MatMulNBits.h - ONNX Runtime's MatMulNBits, its operands -*- C++ -*-===//
//
// The operands of com.microsoft MatMulNBits as the default kernel
// (ops/MatMulNBits.cpp) and ORT's int8-activation arithmetic
// (ort/ops/OrtMatMulNBits.cpp) read them.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_MATMULNBITS_H
#define TPCC_RUNTIME_OPS_MATMULNBITS_H

#include "runtime/Kernel.h"

namespace tpcc::rt {

/// Code `i` of `bits`-bit codes packed low bits first.
inline int nbitsCode(const uint8_t *row, int64_t i, int bits) {
  int perByte = 8 / bits;
  return (row[i / perByte] >> (bits * (i % perByte))) & ((1 << bits) - 1);
}

/// A MatMulNBits node's inputs and attributes, checked against each other.
struct NBitsOperands {
  const Tensor *a = nullptr, *b = nullptr, *scales = nullptr, *zeroPoints = nullptr,
               *bias = nullptr;
  int64_t K = 0, N = 0, block = 0, accuracyLevel = 0;
  int bits = 4;
  int64_t blocks = 0; ///< ceil(K / block)
  int64_t blob = 0;   ///< bytes of one block's codes
  int64_t zpRow = 0;  ///< bytes of one row's packed zero points
  /// Block j of row n's zero point (2^(bits-1) without zero points).
  int zeroPoint(int64_t n, int64_t j) const;
  /// Block j of row n's `block` codes into q.
  void codesOf(int64_t n, int64_t j, int *q) const;
};

/// Reads and checks the node's operands; false with ctx.fail otherwise
/// (g_idx and float zero points are refused).
bool readNBits(KernelContext &ctx, NBitsOperands &o);

} // namespace tpcc::rt

#endif
