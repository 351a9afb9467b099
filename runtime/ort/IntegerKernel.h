//===- IntegerKernel.h - QDQ groups on oneDNN's int8 primitives -*- C++ -*-===//
//
// The integer kernel of a QDQ group (IntegerPairs.h: DequantizeLinear(x u8|s8)
// -> Conv|Gemm|MatMul with int8 weights and int32 bias -> QuantizeLinear 8-bit,
// or a MatMul's float output as MatMulIntegerToFloat gives it)
// computed from the quantized activation to the quantized output, as ONNX
// Runtime's integer kernels do with VNNI: exact int32 sums, times the float
// multiplier x_scale * w_scale / y_scale, rounded half to even, plus the output
// zero point, clamped. Bit for bit what computeIntegerGroup(Exact) gives.
//
// How it stays exact on every CPU, whatever oneDNN implementation runs:
//  - the activation is always handed to oneDNN as u8 (s8 activations + 128,
//    the zero point moving along), so oneDNN never takes its s8-source path
//    (which halves the weights on CPUs without VNNI);
//  - convolutions read a copy of the input in NHWC with the padding written
//    out as the zero point, so oneDNN convolves without padding and the zero
//    point is subtracted once per channel (x_zero * sum(w)) with the bias
//    (an unpadded u8 input that arrives channels-last is read in place);
//  - without VNNI, oneDNN multiplies u8 x s8 with VPMADDUBSW, which adds two
//    products in int16 with saturation. Unless the implementation oneDNN chose
//    adds every product exactly (its name says VNNI or AMX; the reference;
//    its int8 JIT convolutions when each group has one input channel:
//    depthwise ones widen to int32, the others pair only input channels) or
//    no two weights of a channel can overflow a pair (|a| + |b| <= 128), the
//    weights are split into two halves within +-64 (127 = 63 + 64):
//    255 * (64 + 64) < 2^15, so no pair saturates, and the two int32 sums add
//    up to the exact one. dnnl::get_effective_cpu_isa() says whether to try
//    the weights whole first (VNNI);
//  - oneDNN converts its int32 accumulators to float before writing them (its
//    output-scale step), exact only within 2^24: a channel whose weights could
//    sum past that (255 * sum |w| > 2^24) is split further along the
//    reduction, each part within the bound.
// The parts run as extra output channels of one primitive (dense convolutions
// and matrix products) or as repeated runs of the same primitive with other
// weights (grouped and depthwise convolutions, so the depthwise kernel
// stays); our own loop (SSE2 or AVX2, Simd.h: the same bytes) adds them in
// int32 and requantizes exactly as computeIntegerGroup does (float(int32) *
// float multiplier, MXCSR's round to nearest even, + zero point, saturating
// packs) into a channels-last output, or through 16 x 16 byte transposes
// into NCHW.
//
// Weights are reordered once per input shape; primitives, their memory
// objects and every scratch buffer are cached per input shape (batch 1 and 64
// alike; a convolution runs its batch in chunks of at most 4 MiB of int32
// sums): a run allocates only its output tensor. A kernel reads its group's
// node (attributes, weights) only in create() and when it meets a new input
// shape; the model must outlive it. It is not thread-safe (its scratch
// buffers): one per executor.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_INTEGERKERNEL_H
#define TPCC_RUNTIME_ORT_INTEGERKERNEL_H

#include "runtime/ort/IntegerPairs.h"

#include <memory>
#include <string>

namespace tpcc::rt {

/// A QDQ group (IntegerGroup) computed by oneDNN int8 primitives: exact int32
/// sums on every CPU, ORT's requantization.
class IntegerKernel {
public:
  /// How the weights are laid out for oneDNN (tests force Direct or Split).
  enum class Mode {
    Auto,   ///< split in halves only where a pair could saturate
    Direct, ///< never split in halves (inexact without VNNI on large weights)
    Split,  ///< always split in halves
  };

  /// Prepares the kernel of `grp` (node attributes read from grp.node). Null
  /// + `err` when the group's form is not supported.
  static std::unique_ptr<IntegerKernel> create(const IntegerGroup &grp, std::string &err,
                                               Mode mode = Mode::Auto);
  ~IntegerKernel();
  IntegerKernel(const IntegerKernel &) = delete;
  IntegerKernel &operator=(const IntegerKernel &) = delete;

  /// `xq`: the quantized activation the group's DequantizeLinear reads (u8
  /// or s8, the op's input shape; row-major, or channels-last as
  /// dnnl_util::allocateChannelsLast lays it out). Writes `yq`: what the
  /// group's QuantizeLinear outputs (u8/s8 on its grid), output shape of the
  /// op, channels-last when `channelsLast` and the group is a convolution.
  /// Primitives cached by input shape (batch 1 and 64 both used). False +
  /// `err` when `xq` does not fit the group.
  bool run(const Tensor &xq, Tensor &yq, std::string &err, bool channelsLast = false);
  /// As run(), but writes the float output of the group's node as
  /// computeIntegerGroup leaves it: yq dequantized, float(yq - y_zero) *
  /// y_scale (what the executor's float graph carries on to the Relu/Clip and
  /// QuantizeLinear after the node); for a MatMul of IntegerGroup::floatOutput
  /// (ORT's MatMulIntegerToFloat) float(int32 sum) * multiplier. (run() takes
  /// only groups that requantize.)
  bool runDequantized(const Tensor &xq, Tensor &y, std::string &err);

  /// How the last run computed: oneDNN's implementation and how many weight
  /// parts (`jit_uni_int8:avx2 (avx2), 2 parts (halves within +-64)`).
  std::string describe() const;
  /// The number of weight parts of the last run (1: the weights as they are).
  int parts() const;

  struct Impl;

private:
  explicit IntegerKernel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace tpcc::rt

#endif
