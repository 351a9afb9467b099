//===- OrtWeightBias.h - ONNX Runtime's WeightBiasQuantization --*- C++ -*-===//
//
// ONNX Runtime (1.20 and later) quantizes the float weight and bias of a Conv,
// ConvTranspose or Gemm whose input comes from a DequantizeLinear with one
// scale, so that the node can run on integer kernels (its QDQ transformer
// WeightBiasQuantization). A QDQ model whose weights a platform leaves in float
// (MCT's QNNPACK: no config quantizes a kernel) runs that way in ORT, and
// `tpcc run|eval --ort-cpu` rewrites the model as ORT does before computing it.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTWEIGHTBIAS_H
#define TPCC_RUNTIME_ORT_ORTWEIGHTBIAS_H

#include "ir/graph/Graph.h"

namespace tpcc::rt {

/// Rewrites `m` as ORT's WeightBiasQuantization does, for each Conv,
/// ConvTranspose or Gemm whose input 0 is a DequantizeLinear with a scalar
/// scale and whose weight is a float constant:
///   - the weight becomes DequantizeLinear(int8 constant, scale, zero point),
///     quantized as ORT's GetQuantizationParameter<int8_t>: the range [min, max]
///     of the weights widened to hold 0, scale (max - min) / 255 and zero point
///     -128 - min / scale rounded half to even, both in float;
///   - a float 1-D constant bias becomes DequantizeLinear(int32 constant, scale)
///     with scale x_scale * w_scale and values round_half_even(bias / scale).
/// Returns how many nodes changed; the graph is relinked, not re-verified.
unsigned ortWeightBiasQuantization(graph::Model &m);

} // namespace tpcc::rt

#endif
