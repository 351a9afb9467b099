//===- Gradient.h - Reverse-mode gradients over the model IR ------*- C++ -*-===//
//
// Backprop runs a model forward on the executor keeping every value it
// computes (the tape: RunOptions::keep, so nothing is fused and every tensor
// is plain), then walks the nodes in reverse topological order, calling each
// node's backward kernel (Backward.h) with the gradients of its outputs and
// summing the gradients each value receives from its readers, in a fixed
// order (deterministic for a fixed thread count).
//
// The sources are the values the caller asks gradients for (`wrt`: graph
// inputs, initializers, any value). Only the nodes on a path from a source to
// a graph output run backward, and create() checks before any work that each
// of them has a backward kernel: every missing operator is one error naming
// its nodes. Nodes the executor computed once from constants run backward
// too, from the constants (a weight's DequantizeLinear, a Transpose of it).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_GRAD_GRADIENT_H
#define TPCC_RUNTIME_GRAD_GRADIENT_H

#include "runtime/Executor.h"
#include "runtime/grad/Backward.h"

#include <map>
#include <memory>
#include <vector>

namespace tpcc::rt::grad {

class Backprop {
public:
  /// Prepares gradients of `ex`'s model with respect to `wrt` (float
  /// values); null after errors (an operator without a backward, a source
  /// that is not float or reaches no output).
  static std::unique_ptr<Backprop> create(Executor &ex, std::vector<const graph::Value *> wrt,
                                          DiagnosticEngine &diags);

  /// Runs the model forward, recording the tape; `outputs` as Executor::run.
  /// `options` may carry hooks: the tensors `substitute` gives are what the
  /// backward kernels read (a fake-quantized weight), and a value
  /// `transform` replaced is taped as replaced (the backward's gradient hook
  /// undoes it). `keep` is the tape's.
  LogicalResult forward(const std::map<std::string, Tensor> &inputs, std::vector<Tensor> &outputs,
                        DiagnosticEngine &diags, RunOptions options = {});

  /// Called with a value and its complete gradient before the gradient
  /// flows on (to the value's producer, or into the results): returns the
  /// gradient to use instead (a quantizer's straight-through rule), or the
  /// one it was given.
  using GradientHook = llvm::function_ref<Tensor(const graph::Value &, Tensor)>;

  /// A loss term's gradient with respect to a value inside the model (a
  /// layer's output the loss compares), added to what flows into it.
  using ValueGradient = std::pair<const graph::Value *, Tensor>;

  /// Backpropagates dLoss/dOutput (one tensor per graph output, shaped like
  /// it; an undefined tensor is zero) and dLoss/dValue for each of `seeds`
  /// through the last forward run: on success `grads[i]` is dLoss/d`wrt[i]`
  /// (zeros where it has no effect). A seed on a value no source reaches
  /// changes nothing.
  LogicalResult backward(const std::vector<Tensor> &outputGrads, std::vector<Tensor> &grads,
                         DiagnosticEngine &diags, GradientHook hook = nullptr,
                         llvm::ArrayRef<ValueGradient> seeds = {});

  /// What the last forward run computed for `v` (as a transform left it),
  /// or read for it (a substitute, a constant); null when it has none.
  const Tensor *taped(const graph::Value &v) const { return valueOf(&v); }

  /// The nodes that run backward, in topological order.
  const std::vector<const graph::Node *> &activeNodes() const { return active; }

private:
  Backprop(Executor &ex) : ex(ex) {}
  const Tensor *valueOf(const graph::Value *v) const;

  Executor &ex;
  std::vector<const graph::Value *> wrt;
  std::vector<const graph::Node *> active;
  std::vector<bool> carries; ///< by value id: depends on a source and reaches an output
  std::vector<Tensor> tape;  ///< by value id, the last forward run's
  std::map<unsigned, Tensor> substituted;         ///< what the last run read instead
  std::vector<std::unique_ptr<NodeState>> states; ///< by node id
};

/// The operators of the nodes in `nodes` without a backward kernel, each
/// with the nodes using it.
std::vector<std::pair<std::string, std::vector<const graph::Node *>>>
missingBackward(const std::vector<const graph::Node *> &nodes);

} // namespace tpcc::rt::grad

#endif
