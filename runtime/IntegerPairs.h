//===- IntegerPairs.h - ONNX Runtime's u8 x s8 pairs on CPUs without VNNI -*- C++ -*-===//
//
// ONNX Runtime fuses a QDQ group DequantizeLinear(x: u8|s8) -> Conv|Gemm|MatMul
// (weight DequantizeLinear(int8 constant)) -> QuantizeLinear into an integer
// kernel (QLinearConv, QGemm, QLinearMatMul). On x86-64 CPUs without VNNI its
// kernels multiply with VPMADDUBSW: the activation as u8 (s8 + 128), and two
// adjacent products of the reduction added in int16 with saturation before the
// int32 sum. Adjacent means: along K for Gemm/MatMul; for Conv along the
// reduction in (kernel row, kernel column, input channel) order within a group,
// padded positions holding the zero point. (Checked against ORT 1.30 under
// qemu's Haswell: 0 steps apart on conv/gemm groups with 1, 3, 5 and 16 input
// channels, u8 and s8 activations.)
//
// This file finds such groups in a model, says whether a group's weights can
// overflow a pair at all (two weights of one output channel whose magnitudes
// sum past 32767 / 255), and corrects the exact float result of a group's node
// by what the saturation takes away, so `tpcc eval --ort-cpu no-vnni` shows the
// figures such a CPU gives.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_INTEGERPAIRS_H
#define TPCC_RUNTIME_INTEGERPAIRS_H

#include "runtime/Tensor.h"

#include <optional>
#include <vector>

namespace tpcc::rt {

/// How ONNX Runtime's u8 x s8 integer kernels add products.
enum class IntegerArithmetic {
  Exact,           ///< every product in int32 (VNNI, ARM, the float model)
  SaturatingPairs, ///< x86-64 without VNNI: pairs added in int16, saturating
};

/// A Conv, Gemm or MatMul that ORT runs as a u8 x s8 integer kernel.
struct IntegerGroup {
  const graph::Node *node = nullptr;
  const graph::Tensor *weights = nullptr; ///< the int8 constant, as stored
  double xScale = 1;
  int64_t xZeroRaw = 0; ///< the activation zero point as the u8 kernel sees it
  bool signedX = false; ///< s8 activations (the kernel adds 128)
  /// Per output channel: the weight pairs (reduction index of the first; the
  /// second is the next) that can leave int16 with u8 activations.
  std::vector<std::vector<int64_t>> riskyPairs;
  std::vector<double> wScale; ///< per output channel
  bool canSaturate() const;
};

/// The group `n` is the node of, or none (not fused by ORT, or a form the
/// emulation does not cover: Conv with auto_pad, Gemm with transA or alpha).
std::optional<IntegerGroup> integerGroupOf(const graph::Node &n);

/// Every integer group of `g` whose weights can overflow an int16 pair.
std::vector<IntegerGroup> saturatingGroups(const graph::Graph &g);

/// Adds to `y`, the exact float output of the group's node on input `x` (the
/// dequantized activation), what the saturating pairs change.
void applySaturation(const IntegerGroup &grp, const Tensor &x, Tensor &y);

} // namespace tpcc::rt

#endif
