//===- Mx.h - OCP MX activations as exact ONNX subgraphs ---------*- C++ -*-===//
//
// An MX activation (OCP Microscaling Formats v1.0: MXINT8, MXFP8) splits a
// tensor into blocks of k consecutive elements along one axis; each block
// shares the scale X = 2^(floor(log2 amax) − emax_elem), amax the block's
// largest magnitude, and each element becomes the nearest value of the
// element format times X (ties to even, saturating). The scales depend on
// the values, so the model computes them as it runs. ONNX has no E8M0 type
// or exponent extraction ONNX Runtime 1.30 runs, so the quantizer writes the
// computation out in float operators that are exact:
//
//   y  = Reshape(x, [..., n/k, k])          (x's axis moved last by a Transpose;
//                                            zeros pad a shorter last block)
//   a  = ReduceMax(Abs(y), axes=[-1])
//   e0 = Floor(Log(a) * (1/ln 2))           (may be off by one near a power of two)
//   e1 = Where(Pow(2, e0) > a, e0 − 1, e0)  (so 2^e1 <= a)
//   e  = Where(2 · Pow(2, e1) > a, e1, e1 + 1)   (so a < 2^(e+1))
//   X  = Pow(2, Max(e − emax, −127))
//   q  = Clip(Round(y / X), −2^(b−1), 2^(b−1) − 1)        MXINT<b>
//        Cast(Cast(y / X, FP8, saturate=1), FLOAT)        MXFP8
//   x' = Transpose(Reshape(q · X, Shape(y)))  (the padding sliced off)
//
// Division and product by a power of two are exact, Round is ties-to-even,
// and the two Where corrections make the exponent exact whatever the Log's
// rounding: x' is the MX value of every element, as quant::mxGrid and
// QuantGrid::quantize compute it (unit test MxActivation.*). A block of
// zeros gets X = 2^−127 and stays zero.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QDQ_MX_H
#define TPCC_QUANT_PTQ_QDQ_MX_H

#include "ir/graph/Graph.h"
#include "quant/core/Spec.h"
#include "runtime/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tpcc::quant {

/// Where the subgraph goes: the caller names and adds what it creates.
struct GraphSink {
  /// A new float or int64 initializer holding `t`, named after `base`.
  std::function<graph::Value *(std::unique_ptr<graph::Tensor> t, const std::string &base)> constant;
  /// A new value of element type `e`, named after `base`.
  std::function<graph::Value *(const std::string &base, graph::ElemType e)> value;
  /// A new ai.onnx node `op` named after `base`, with its attributes.
  std::function<graph::Node *(const char *op, const std::string &base,
                              std::vector<graph::Value *> inputs, graph::Value *output,
                              std::vector<graph::Attribute> attrs)>
      node;
};

/// Why `a` cannot be written (an element other than Int/FP8, an axis
/// outside the rank, a block under 1), or "".
std::string checkMx(const MxActivation &a);

/// Writes the MX quantize-dequantize of `x` (opset 19 or later: Cast's
/// `saturate`, ReduceMax's axes input) and returns its output, a float value
/// of x's shape; the caller points x's readers at it. Names start with
/// `base`.
graph::Value *writeMx(const GraphSink &sink, graph::Value *x, const MxActivation &a,
                      const std::string &base);

/// x's elements replaced by their MX values in place (what writeMx's
/// subgraph computes, for the executor's transform hooks: second-order
/// rounding's fake-quantized inputs).
void applyMx(rt::Tensor &x, const MxActivation &a);

} // namespace tpcc::quant

#endif
