//===- OpTraits.h - What the quantizer knows about ONNX operators -*- C++ -*-===//
//
// One table of operator facts the quantizer and its corrections rely on that
// the framework description does not state. What `framework onnx`
// (stdlib/onnx.tpc) states -- which input holds a weight and along which axes
// its channels run, which ops are activations or never quantized, which have
// a known output range -- is read from the plan (PlanWeight::decl,
// PlanTensor), never repeated here.
//
// Only operators of the default domain ("") have traits; every other
// operator has none.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_OPTRAITS_H
#define TPCC_IR_GRAPH_OPTRAITS_H

#include "ir/graph/Graph.h"

#include "llvm/ADT/StringRef.h"

namespace tpcc::graph {

/// How mixed precision's sensitivity compares this op's output with the float
/// model's (docs/quantize.md, "Mixed precision"): not an interest point,
/// normalized MSE, cosine distance (1 - cos)/2, or KL divergence (Softmax's
/// probabilities).
enum class PointDistance { None, Mse, Cosine, KL };

struct OpTraits {
  /// Every output value is a value of input 0 (or zero): a grid of the input
  /// is a grid of the outputs (MaxPool, Reshape, Transpose, Gather...).
  bool movesValues = false;
  /// y = x W (+ b): a kernel at input 1 and an optional bias at input 2, one
  /// value per output channel (Conv, Gemm). Bias correction, shift_negative,
  /// input_scaling, relu_unbound_correction and channel equalization edit
  /// these.
  bool linear = false;
  /// A bias at input 2 that QDQ models keep as int32 on the accumulator's
  /// grid (input scale x kernel scale) when input and kernel are quantized:
  /// what ONNX Runtime's integer kernels take (Conv, ConvTranspose, Gemm).
  bool int32Bias = false;
  /// An activation with a small negative range that shift_negative moves
  /// into the unsigned grid of the next linear op (MCT's list: PReLU, ELU,
  /// HardSwish, LeakyReLU, GELU).
  bool shiftNegative = false;
  /// An op shift_negative follows through from the activation to the linear
  /// op: adding a constant to its input adds it to its output (AveragePool
  /// only without padding; the correction checks that).
  bool shiftTransparent = false;
  /// A bounded, monotone function exporters use as the gate of an activation
  /// spelled out as a product (SiLU's Sigmoid, HardSwish's HardSigmoid or
  /// ReLU6, GELU's Erf, Mish's Tanh and Softplus): the planner lists such
  /// products when no composite takes them.
  bool gate = false;
  /// Element-wise Add, Sub, Mul, Div: with one constant operand, an affine
  /// step inside such a spelled-out activation.
  bool arithmetic = false;
  /// Two inputs whose order does not matter (Add, Mul): a composite's pattern
  /// matches them either way.
  bool commutative = false;
  /// An interest point of mixed precision's sensitivity (MCT's: outputs of
  /// Conv, ConvTranspose, linear layers, Sigmoid, Softmax, Add, Concat) and
  /// how its distance is measured.
  PointDistance point = PointDistance::None;
};

/// The traits of `opType` in `domain` (all false for unknown operators and
/// other domains).
const OpTraits &opTraits(llvm::StringRef domain, llvm::StringRef opType);
/// The traits of node `n`: its operator's, and where they depend on the
/// node, its own — a Pad moves values when it pads with its input's values
/// (edge, reflect) or with zero (on every grid tpcc makes).
const OpTraits &opTraits(const Node &n);

} // namespace tpcc::graph

#endif
