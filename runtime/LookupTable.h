//===- LookupTable.h - 8-bit element-wise chains as one lookup ---*- C++ -*-===//
//
// DequantizeLinear -> an element-wise node of one tensor input ->
// QuantizeLinear, with 8-bit per-tensor grids on both ends (a QDQ model's
// Sigmoid, HardSwish, LeakyRelu, Tanh...), maps each of the 256 input codes to
// one output code: ONNX Runtime runs such chains as QLinear lookup ops. The
// executor builds the 256-entry table by running the chain's own three
// kernels on the 256 codes, so a lookup gives bit for bit what the float run
// of the chain gives, and then computes the chain as one pass over the
// 8-bit tensor: neither the float tensors nor the QuantizeLinear.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_LOOKUPTABLE_H
#define TPCC_RUNTIME_LOOKUPTABLE_H

#include "runtime/Tensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <array>
#include <optional>

namespace tpcc::rt {

struct LookupChain {
  const graph::Node *dq = nullptr, *op = nullptr, *q = nullptr;
  const graph::Value *input = nullptr;  ///< the 8-bit tensor the DequantizeLinear reads
  const graph::Value *output = nullptr; ///< the QuantizeLinear's output
};

/// The chain whose element-wise node is `op`, if any. `constant(v)` gives
/// the executor's constant `v` or null (scales, zero points, a Clip's
/// bounds).
std::optional<LookupChain>
lookupChainOf(const graph::Node &op,
              llvm::function_ref<const Tensor *(const graph::Value &)> constant);

/// y[i] = table[byte of x[i]], `y` of element type `out` (UInt8 or Int8).
void applyTable(const Tensor &x, const std::array<uint8_t, 256> &table, graph::ElemType out,
                Tensor &y);

} // namespace tpcc::rt

#endif
