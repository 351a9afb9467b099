//===- Fusion.h - Chains of nodes the executor runs as one step -*- C++ -*-===//
//
// After a Conv or ConvTranspose, a chain of element-wise nodes runs inside
// the convolution's primitive as post-ops instead of as passes of their own:
// Relu, LeakyRelu, Clip with constant bounds, Sigmoid, Tanh, HardSigmoid
// (a linear step and a clip), HardSwish, the two-node forms
// x * Sigmoid(x) (SiLU, swish) and x * HardSigmoid(x) with ONNX's HardSwish
// constants, and an Add of a tensor of the same shape computed before the
// convolution (a residual connection). Each value inside the chain has one
// reader, the next node of the chain, and is no graph output; the chain
// ends at the first node that does not fit, and where oneDNN 2.6 would
// compute it wrongly (its JIT post-ops give every use of one algorithm the
// parameters of the first: a Clip after a Clip is merged into one, other
// repeats end the chain).
//
// The exact GELU as PyTorch and Hugging Face export it (x / a or x * a, Erf,
// + 1, then (x * that) * b or (x * b) * that, with scalar constants a, b)
// runs as one pass of fusedGeluKernel: the same float operations element by
// element, so the same bits, without writing and reading four intermediate
// tensors.
//
// A MatMul whose only reader is a Gather of rows of its product (a constant
// scalar or list of indices on the axis of A's rows: a language model's
// logits at the last position) multiplies only those rows of A
// (matmulRowsKernel): each product row is the same sum of the same row, so
// the result is what the two nodes compute, at a fraction of the work.
//
// A MatMul whose only reader adds a constant row (a linear layer's bias)
// gets it as the matmul primitive's bias (matmulBiasKernel), added to each
// finished sum as the Add would.
//
// The executor uses a chain only in runs where nothing needs the values it
// skips (Executor.h: RunOptions::watched).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_FUSION_H
#define TPCC_RUNTIME_FUSION_H

#include "runtime/Kernel.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <vector>

namespace tpcc::rt {

struct Fusion {
  std::vector<PostOp> post;
  /// The tensors the Adds read, in order.
  std::vector<const graph::Value *> operands;
  /// The steps the head computes (they are skipped).
  std::vector<size_t> absorbed;
  /// The values the fused run never computes, the head's own output first.
  std::vector<const graph::Value *> skipped;
  /// The value the head computes instead of its own output.
  const graph::Value *result = nullptr;
  /// A kernel that runs instead of the head's, and its constants.
  KernelFn kernel = nullptr;
  std::vector<float> params;
};

/// The fused exact GELU. Its input is the head's non-constant input x;
/// fusedParams: a, 1 if x / a (else x * a), b, 1 if (x * b) is formed first.
bool fusedGeluKernel(KernelContext &ctx);

/// A MatMul followed by a Gather of product rows. fusedParams: 1 if the
/// indices are a list (0: a scalar, whose axis the Gather drops), then the
/// indices.
bool matmulRowsKernel(KernelContext &ctx);

/// A MatMul and the Add of its bias (the Fusion's one operand).
bool matmulBiasKernel(KernelContext &ctx);

/// The chain after the Conv/ConvTranspose at step `head` of `order`, or the
/// GELU that starts there, if any.
/// `stepOf` maps node ids to steps; `opsetOf` gives a node's opset;
/// `constants` (by value id) holds the model's constants.
std::optional<Fusion> fusionAfter(const std::vector<graph::Node *> &order, size_t head,
                                  const std::vector<size_t> &stepOf,
                                  llvm::function_ref<int64_t(const graph::Node &)> opsetOf,
                                  const std::vector<Tensor> &constants);

/// Applies `post` to a plain float tensor `t` in place (operands in order,
/// same shape): what oneDNN computes, for the outputs a primitive cannot
/// produce itself.
void applyPostOps(Tensor &t, llvm::ArrayRef<PostOp> post, llvm::ArrayRef<const Tensor *> operands);

} // namespace tpcc::rt

#endif
