//===- OrtResize.h - A bilinear Resize as ONNX Runtime computes it -*- C++ -*-===//
//
// The bilinear Resize of runs that compute a QDQ model as ONNX Runtime does
// (`--ort-cpu`). ORT's CPU provider (UpsampleBilinear) maps each output
// coordinate to a float input coordinate, clamps it, takes the two samples
// around it with weights d1 = |in - i1| and d2 = |in - i2| (0.5 each at the
// edge, where i1 = i2), and computes every output as
//   dx2*dy2*X11 + dx1*dy2*X21 + dx2*dy1*X12 + dx1*dy1*X22
// in float, in that order. The separable passes of Resize.cpp round
// differently in the last bit, and a value on a rounding tie of the
// QuantizeLinear after it (2x upsampling: codes x.5) then goes the other
// way.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_OPS_ORTRESIZE_H
#define TPCC_RUNTIME_ORT_OPS_ORTRESIZE_H

#include "runtime/Tensor.h"

namespace tpcc::rt {

/// ORT's get_original_coordinate rules (tf_crop_and_resize is not among them).
enum class OrtCoord { HalfPixel, Asymmetric, PytorchHalfPixel, TfHalfPixelForNN, AlignCorners };

/// y = x resized bilinearly over its last two axes as ORT computes it: `x`
/// float of rank 2 or more whose leading axes keep their size, `y` already
/// shaped; scaleH and scaleW as ORT holds them (the scales input, or output
/// size / input size in float).
void ortBilinear(const Tensor &x, Tensor &y, OrtCoord coord, float scaleH, float scaleW);

} // namespace tpcc::rt

#endif
