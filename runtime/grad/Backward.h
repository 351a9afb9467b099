//===- Backward.h - How backward kernels are written and registered -*- C++ -*-===//
//
// A backward kernel computes, for one ONNX node, the gradients of a scalar
// loss with respect to the node's inputs from the gradients with respect to
// its outputs (reverse mode). It reads the forward inputs and outputs the
// tape kept (`ctx.inputs`, `ctx.outputs`; null for omitted ones), the output
// gradients (`ctx.outputGrads`, null where the loss does not depend on that
// output: zero) and fills `ctx.inputGrads[i]` for every input `ctx.wants(i)`
// asks for, with the input's shape. Integer inputs (shapes, axes, indices,
// zero points) have no gradient and are never asked for.
//
// Kernels compute in float, like the forward kernels; QuantizeLinear and
// DequantizeLinear pass gradients straight through (the derivative of the
// rounding is taken as 1: the straight-through estimator), so a QDQ pair
// backpropagates as the identity times nothing.
//
// Kernels live in grad/ops/*.cpp, one file per family, registered explicitly
// like the forward ones (Kernel.h). They never throw; errors are
// `ctx.fail("...")`.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_GRAD_BACKWARD_H
#define TPCC_RUNTIME_GRAD_BACKWARD_H

#include "runtime/Kernel.h"

#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace tpcc::rt::grad {

struct BackwardContext {
  const graph::Node &node;
  int64_t opset;
  std::vector<const Tensor *> inputs;      ///< the forward inputs
  std::vector<const Tensor *> outputs;     ///< the forward outputs
  std::vector<const Tensor *> outputGrads; ///< dLoss/dOutput, null: zero
  std::vector<bool> wanted;                ///< which input gradients to compute
  std::vector<Tensor> inputGrads;          ///< dLoss/dInput (undefined: zero)
  std::unique_ptr<NodeState> &state;
  std::string error;

  BackwardContext(const graph::Node &node, int64_t opset, std::unique_ptr<NodeState> &state)
      : node(node), opset(opset), state(state) {}

  bool fail(std::string msg) {
    error = std::move(msg);
    return false;
  }
  const Tensor *input(size_t i) const {
    return i < inputs.size() && inputs[i] && inputs[i]->defined() ? inputs[i] : nullptr;
  }
  bool wants(size_t i) const { return i < wanted.size() && wanted[i]; }
  /// The gradient of output `i`, or null (zero).
  const Tensor *grad(size_t i = 0) const {
    return i < outputGrads.size() && outputGrads[i] && outputGrads[i]->defined() ? outputGrads[i]
                                                                                 : nullptr;
  }

  // Attributes, read as the forward kernels read them (KernelContext).
  int64_t attrInt(llvm::StringRef n, int64_t dflt) const;
  float attrFloat(llvm::StringRef n, float dflt) const;
  std::vector<int64_t> attrInts(llvm::StringRef n, std::vector<int64_t> dflt = {}) const;
  std::string attrString(llvm::StringRef n, llvm::StringRef dflt) const;
};

using BackwardFn = bool (*)(BackwardContext &);

class BackwardRegistry {
public:
  /// The registry with every backward kernel of this build.
  static const BackwardRegistry &get();
  void add(llvm::StringRef opType, BackwardFn fn) { kernels[opType] = fn; }
  /// The backward kernel of a default-domain operator, or null.
  BackwardFn find(llvm::StringRef domain, llvm::StringRef opType) const;

private:
  llvm::StringMap<BackwardFn> kernels;
};

// The ops files (grad/ops/*.cpp).
void registerElementwiseBackward(BackwardRegistry &r);
void registerShapeBackward(BackwardRegistry &r);
void registerLinearBackward(BackwardRegistry &r);
void registerPoolBackward(BackwardRegistry &r);
void registerNormBackward(BackwardRegistry &r);

// Helpers the kernels share (Backward.cpp).

/// A float tensor of `shape`, zeroed.
Tensor zeros(const Shape &shape);
/// The gradient of a broadcast operand: `g` (of the broadcast shape) summed
/// over the dimensions `shape` broadcast along, in `shape`.
Tensor reduceToShape(const Tensor &g, const Shape &shape);
/// Whether `t` is a float tensor (the only kind that carries gradients).
inline bool isFloat(const Tensor *t) { return t && t->elem() == ElemType::Float; }

} // namespace tpcc::rt::grad

#endif
