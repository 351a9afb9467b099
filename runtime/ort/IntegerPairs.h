//===- IntegerPairs.h - QDQ groups computed as ONNX Runtime's integer kernels -*- C++ -*-===//
//
// ONNX Runtime fuses a QDQ group DequantizeLinear(x: u8|s8) -> Conv|Gemm|MatMul
// (weight DequantizeLinear(int8 constant, zero point 0)) -> [Relu|Clip ->]
// QuantizeLinear(8-bit) into an integer kernel (QLinearConv, QGemm, QLinearMatMul):
// int32 sums of the integer products plus the int32 bias, times the float multiplier
// x_scale * w_scale / y_scale, rounded to nearest even, plus the output zero point,
// clamped. On x86-64 CPUs with VNNI every product is added exactly. Without VNNI its
// kernels multiply with VPMADDUBSW: the activation as u8 (s8 + 128), and two adjacent
// products of the reduction (k = 2j, 2j + 1) added in int16 with saturation before the
// int32 sum. The reduction runs along K for Gemm/MatMul and, for Conv, in (kernel row,
// kernel column, input channel) order within a group, padding holding the zero point.
// Depthwise convolutions have exact kernels of their own. (Checked against ORT 1.30
// under qemu's Haswell: 0 steps apart on conv/gemm groups with 1, 3, 5 and 16 input
// channels, u8 and s8 activations, and on the shared models.)
//
// This file finds such groups in a model, says whether a group's weights can overflow
// a pair at all (two weights of one output channel whose magnitudes sum past
// 32767 / 255), and computes a group's node as ORT does, so `tpcc run|eval --ort-cpu
// vnni|no-vnni` gives ORT's numbers to the last bit.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_INTEGERPAIRS_H
#define TPCC_RUNTIME_ORT_INTEGERPAIRS_H

#include "runtime/Kernel.h"

#include <optional>
#include <vector>

namespace tpcc::rt {

/// How the executor computes the QDQ groups ONNX Runtime runs as integer kernels.
enum class IntegerArithmetic {
  Float,           ///< the float model the QDQ graph defines
  Exact,           ///< as ORT's integer kernels with VNNI (or ARM): exact int32 sums
  SaturatingPairs, ///< as ORT's on x86-64 without VNNI: int16 pairs, saturating
};

/// A Conv, Gemm or MatMul that ORT runs as an integer kernel. (Without a
/// QuantizeLinear after it, a MatMul's kernel gives float: `floatOutput`.)
struct IntegerGroup {
  const graph::Node *node = nullptr;
  /// The Add of a constant bias after the MatMul `node` that ORT fuses with
  /// it (MatMulAddFusion: a Gemm, its bias made int32 on the accumulator
  /// grid by WeightBiasQuantization, then a QGemm): the group's output is
  /// the Add's. Null otherwise.
  const graph::Node *biasAdd = nullptr;
  /// A MatMul no QuantizeLinear reads, which ORT runs as com.microsoft
  /// MatMulIntegerToFloat: its float output is float(int32 sum) times
  /// `multiplier` (x_scale * w_scale, in float), not requantized.
  bool floatOutput = false;
  int64_t m = 0, k = 0;          ///< output channels; reduction length (per group for Conv)
  std::vector<int8_t> w;         ///< [M, K] in the kernel's reduction order
  std::vector<int64_t> bias;     ///< int32 bias per output channel (0 without one)
  std::vector<float> multiplier; ///< x_scale * w_scale / y_scale (no y_scale: floatOutput)
  float xScale = 1, yScale = 1;
  int64_t xZero = 0, yZero = 0, yMin = 0, yMax = 255;
  bool signedX = false; ///< s8 activations (the u8 kernel sees them + 128)
  bool depthwise = false;
  /// Whether two weights of one output channel can leave int16 with u8 activations.
  bool canSaturate = false;
};

/// The node that produces `v` when it is a default-domain `op`, or null.
const graph::Node *producerOf(const graph::Value *v, llvm::StringRef op);
/// A constant scalar (or one-element tensor) input `i` of `n` (ORT's
/// IsScalar), or null.
const graph::Tensor *scalarInput(const graph::Node &n, size_t i);

/// Whether ORT's x86-64 CPU kernels see the 8-bit tensor `codes` as uint8:
/// it is uint8, or int8 from a QuantizeLinear (not a graph output) read by
/// one DequantizeLinear that one node (or the graph's outputs) reads, which
/// ORT's QDQS8ToU8 moves to uint8 (zero point + 128). A DequantizeLinear with several
/// readers gets a copy per reader first (EnsureUniqueDQForNodeUnit), and a
/// QuantizeLinear with several readers keeps int8. The readers are counted in
/// the graph ORT has after its level-1 rewrites: a Slice that slices nothing is
/// gone (EliminateSlice), and so is a DequantizeLinear -> QuantizeLinear of one
/// grid between two pairs (DoubleQDQPairsRemover), whose second
/// DequantizeLinear's readers then count. ORT fuses a QDQ group
/// on x86-64 only where its activations are uint8 this way: around other
/// int8 activations the group stays float.
bool ortUnsignedCodes(const graph::Value &codes);

/// Whether ORT drops the Relu or Clip `act` before the QuantizeLinear `q`:
/// a Relu when the zero point is the integer minimum, a Clip when its bounds
/// hold the whole grid (ORT's ReluQuantFusion / ClipQuantFusion), so that the
/// node before `act` and `q` form a QDQ group.
bool ortDropsBefore(const graph::Node &act, const graph::Node &q);

/// The Add after MatMul `n` that ORT fuses with it into a Gemm at level 1
/// (MatMulAddFusion): the Add is the only reader of the MatMul's output,
/// which is no graph output; the MatMul's input has rank 2, or a static
/// shape (ORT reshapes it to 2-D around the Gemm); the weight has rank 2; the
/// Add's other operand has shape [N] or, for a 2-D input, [1, N], [M, 1] or
/// [M, N]. Null otherwise.
const graph::Node *ortGemmAdd(const graph::Node &n);

/// Whether ORT runs MatMul `n`, its operands quantized, as com.microsoft
/// MatMulIntegerToFloat: no QuantizeLinear reads its product (one among
/// several readers leaves it float), and no Add joins it into a Gemm.
bool ortMatMulIntegerToFloat(const graph::Node &n);

/// The group `n` is the node of, or none (not a form ORT fuses, or one this
/// does not cover: Gemm with transA, alpha or beta other than 1). A Gemm
/// (or a MatMul ORT makes one with its bias Add) needs a weight zero point:
/// without one ORT's QDQ selector leaves the Gemm in float. Whether
/// ORT's x86-64 kernels fuse it also depends on its activations' codes
/// (ortFuses).
std::optional<IntegerGroup> integerGroupOf(const graph::Node &n);

/// Whether ORT's x86-64 CPU kernels run the group as an integer kernel: its
/// input and output codes (a float output has none) are uint8 there
/// (ortUnsignedCodes).
bool ortFuses(const IntegerGroup &g);

/// Every integer group of `g` whose weights can overflow an int16 pair.
std::vector<IntegerGroup> saturatingGroups(const graph::Graph &g);

/// The value the group's QuantizeLinear reads (through a Relu or Clip ORT
/// drops): the output of its node, or of its bias Add.
const graph::Value *groupOutput(const IntegerGroup &g);

/// Overwrites output 0 of `ctx`, the float output the group's node computed
/// from input 0 (the dequantized activation), with what ORT's integer kernel
/// gives (dequantized on the output grid). False (`ctx.fail`) when the shapes
/// are not the group's.
bool computeIntegerGroup(const IntegerGroup &grp, IntegerArithmetic arith, KernelContext &ctx);
/// The same from the dequantized activation `x`: ctx is the step whose output
/// 0 is the group's (the bias Add of a fused MatMul).
bool computeIntegerGroup(const IntegerGroup &grp, IntegerArithmetic arith, const Tensor &x,
                         KernelContext &ctx);

} // namespace tpcc::rt

#endif
