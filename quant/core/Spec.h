//===- Spec.h - What the QDQ model quantizes, and how -------------*- C++ -*-===//
//
// The grids the quantizer chose, by tensor: every quantized activation, every
// weight input stored as integers and every bias stored as int32. The
// quantizer fills a QDQSpec (ptq/Quantizer.h), the plan carries it
// (ptq/qdq/Apply.h reads it back), and the QDQ rewrite (ptq/qdq/QDQ.h) applies
// it.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_CORE_SPEC_H
#define TPCC_QUANT_CORE_SPEC_H

#include "quant/core/format/NumberFormat.h"
#include "quant/core/grids/Grid.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// One activation tensor to quantize.
struct ActivationQDQ {
  std::string value; ///< the tensor's name
  QuantGrid grid;
};

/// One weight input to store quantized, in its number format (`axis`,
/// `grids`).
struct WeightQDQ : NumberFormat {
  std::string node; ///< the consuming node's name (unique after naming)
  unsigned inputIndex = 0;
  /// A constant operand (the plan's `input[i]`), not a framework slot: GPTQ
  /// leaves it rounded to nearest, as MCT's trains kernels only.
  bool operand = false;
};

/// A bias input to store as int32 = round(b / (s_in * s_w[c])).
/// One activation in an OCP MX format (MXINT8, MXFP8): blocks of `block`
/// elements along `axis`, each with a power-of-two scale the model computes
/// as it runs (ptq/qdq/Mx.h writes it). No grid: its scales are not
/// calibrated, and a bias after it stays float.
struct MxActivation {
  ir::ElementFormat element = ir::ElementFormat::Int; ///< Int, Fp8E4M3 or Fp8E5M2
  int bits = 8;                                       ///< an Int element's width
  int64_t block = 32;
  int64_t axis = -1; ///< the axis blocks run along, in [0, rank)
  int64_t rank = 0;  ///< the tensor's rank
  int64_t length =
      0; ///< the axis's length; a last block is shorter when `block` does not divide it
};

struct MxActivationQDQ {
  std::string value; ///< the tensor's name
  MxActivation format;
};

struct BiasQDQ {
  std::string node;
  unsigned inputIndex = 0;
  std::string inputActivation; ///< the activation whose scale s_in applies
  std::string weightNode;      ///< the WeightQDQ whose scales s_w apply
  unsigned weightInput = 1;
};

struct QDQSpec {
  std::vector<ActivationQDQ> activations;
  std::vector<WeightQDQ> weights;
  std::vector<BiasQDQ> biases;
  /// An activation grid narrower than its 8-bit container (bits < 8: its
  /// integers fill only part of int8/uint8) gets a Clip to the grid's range
  /// before its QuantizeLinear, so the model computes exactly the grid's values. ONNX
  /// Runtime then runs the Clip in float and does not fuse the producer into
  /// an integer kernel; without the Clip, values outside the grid but inside
  /// the container survive.
  bool clipNarrowActivations = true;
  /// Activations in MX formats (no grid; written by ptq/qdq/Mx.h).
  std::vector<MxActivationQDQ> mxActivations = {};
  /// `--matmul-nbits`: weight-only 4-bit blocked products written as ONNX
  /// Runtime's MatMulNBits (ptq/qdq/MatMulNBits.h).
  bool matmulNBits = false;
};

} // namespace tpcc::quant

#endif
