//===- LookupTable.h - 8-bit element-wise chains as one lookup ---*- C++ -*-===//
//
// DequantizeLinear -> an element-wise node -> QuantizeLinear with 8-bit
// per-tensor grids on both ends maps input codes to output codes: a node of
// one tensor input (a QDQ model's Sigmoid, HardSwish, LeakyRelu, Tanh...)
// through a table of 256 entries, an Add, Sub or Mul of two such inputs of
// one shape (a residual Add, SiLU's x * Sigmoid(x)) through one of 65536
// entries. ONNX Runtime runs such chains as QLinear ops. The executor builds
// a table by running the chain's own kernels on every code (pair), so a
// lookup gives bit for bit what the float run of the chain gives, and then
// computes the chain as one pass over the 8-bit tensors: neither the float
// tensors nor the QuantizeLinear.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_LOOKUPTABLE_H
#define TPCC_RUNTIME_ORT_LOOKUPTABLE_H

#include "runtime/Tensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <vector>

namespace tpcc::rt {

struct LookupChain {
  int arity = 1; ///< 1: a table of 256 entries; 2: of 65536 (first input's code low)
  const graph::Node *dq[2] = {nullptr, nullptr}, *op = nullptr, *q = nullptr;
  /// The 8-bit tensors the DequantizeLinears read.
  const graph::Value *input[2] = {nullptr, nullptr};
  const graph::Value *output = nullptr; ///< the QuantizeLinear's output
  /// A Relu or Clip between the node and `q` that ORT drops (ortDropsBefore):
  /// QuantizeLinear saturates where it would clip.
  const graph::Node *dropped = nullptr;
  /// No table: the node runs on the codes themselves (codeChainOf).
  bool onCodes = false;
  /// No table: a Softmax computed from the codes as ONNX Runtime's
  /// QLinearSoftmax computes it (softmaxChainOf, OrtSoftmax.h).
  bool softmax = false;
};

/// The chain whose element-wise node is `op`, if any. `constant(v)` gives
/// the executor's constant `v` or null (scales, zero points, a Clip's
/// bounds).
std::optional<LookupChain>
lookupChainOf(const graph::Node &op,
              llvm::function_ref<const Tensor *(const graph::Value &)> constant);

/// DequantizeLinear -> a max or data movement (MaxPool, GlobalMaxPool,
/// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, SpaceToDepth,
/// DepthToSpace, Slice, Gather, Expand, Tile; its other inputs, a shape or
/// indices, constant or computed) -> QuantizeLinear on one 8-bit
/// per-tensor grid (the same positive scale and zero point): the node run
/// on the codes gives the codes of its float result (the grid is
/// increasing, and QuantizeLinear(DequantizeLinear(q)) = q), as ORT drops
/// such Q/DQ pairs. `onCodes` chains, if any.
std::optional<LookupChain>
codeChainOf(const graph::Node &op,
            llvm::function_ref<const Tensor *(const graph::Value &)> constant);

/// DequantizeLinear -> Softmax -> QuantizeLinear, 8-bit per-tensor grids on
/// both ends that ORT sees as uint8 (ortUnsignedCodes): ORT runs it as com.microsoft's
/// QLinearSoftmax, whose arithmetic (a table of exponentials, a float sum)
/// is not the float Softmax's.
std::optional<LookupChain>
softmaxChainOf(const graph::Node &op,
               llvm::function_ref<const Tensor *(const graph::Value &)> constant);

/// Bytes a pair table holds after its 65,536 entries so that the vector
/// path may read four bytes at every index (it is taken only with them).
constexpr size_t kPairTablePadding = 3;

/// y[i] = table[byte of x[i]] (arity 1) or table[byte of x[i] + 256 * byte
/// of x2[i]] (arity 2: `x2` of x's shape and layout), `y` of element type
/// `out` in x's layout (row-major or channels-last, Dnnl.h).
void applyTable(const Tensor &x, const Tensor *x2, const std::vector<uint8_t> &table,
                graph::ElemType out, Tensor &y);

} // namespace tpcc::rt

#endif
