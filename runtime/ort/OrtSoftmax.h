//===- OrtSoftmax.h - Softmax on 8-bit codes as ONNX Runtime computes it -*- C++ -*-===//
//
// ONNX Runtime runs DequantizeLinear -> Softmax -> QuantizeLinear (8-bit,
// per-tensor) as com.microsoft's QLinearSoftmax: a table of 256 float
// exponentials exp((i - 255 + shift) * x_scale), where the shift keeps the
// sum of one row below FLT_MAX; per row the table is offset so that the
// row's largest code reads its top entry, the entries are summed in float in
// row order, and each output code is nearbyint(e * floor(1 / y_scale) / sum)
// + y_zero_point (clamped above at 255; an int8 code above 127 wraps, as
// ORT's does). Opset 13 takes the softmax over `axis` alone; before 13 over
// the axes from `axis` on.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTSOFTMAX_H
#define TPCC_RUNTIME_ORT_ORTSOFTMAX_H

#include "runtime/Tensor.h"

namespace tpcc::rt {

/// `y` (x's shape, 8-bit `yType`): QLinearSoftmax of the codes `x` (plain
/// layout, 8-bit) with the given input scale and output grid. An int8 input
/// and a uint8 output (ORT moves int8 codes to uint8 ones by adding 128
/// first) give what ORT gives: the result depends on the codes' differences
/// only. False when `axis` is out of range.
bool ortSoftmax(const Tensor &x, float xScale, float yScale, graph::ElemType yType, int yZero,
                int64_t axis, int64_t opset, Tensor &y);

} // namespace tpcc::rt

#endif
