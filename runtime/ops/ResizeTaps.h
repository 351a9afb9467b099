//===- ResizeTaps.h - Where each output of a Resize reads from --*- C++ -*-===//
//
// Resize and Upsample are separable: along each axis, output coordinate o
// reads a few input coordinates with fixed weights (one of weight 1 for
// nearest, two for linear, four for cubic). resizeTaps reads a node's
// attributes and inputs (scales, sizes, roi) and computes those taps for one
// input shape: the forward kernel (Resize.cpp) runs them, ONNX Runtime's
// (ort/ops/OrtResize.cpp) reads them, and the backward (grad/ops/Shape.cpp)
// runs them transposed.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_RESIZETAPS_H
#define TPCC_RUNTIME_OPS_RESIZETAPS_H

#include "runtime/Kernel.h"

namespace tpcc::rt {

/// The taps of one axis: for output coordinate o, input indices
/// idx[o * n + j] (in [0, inDim)) with weights w[o * n + j].
struct AxisTaps {
  int64_t inDim = 0, outDim = 0;
  int n = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside; ///< tf_crop_and_resize: extrapolate
  bool anyOutside = false;
  bool identity = false;
};

/// One Resize / Upsample call on one input shape.
struct ResizeTaps {
  bool nearest = true; ///< mode nearest: one tap of weight 1 per coordinate
  Shape outShape;
  /// One per axis; empty when the output is empty.
  std::vector<AxisTaps> axes;
  double extrapolation = 0; ///< the value of outputs outside the crop box
};

/// The taps of the Resize or Upsample node of `ctx` for input `x`; false
/// (with ctx.fail) on unsupported attributes, types or shapes.
bool resizeTaps(KernelContext &ctx, const Tensor &x, ResizeTaps &t);

/// What a Resize or Upsample node asks of one input: its mode, its scales or
/// sizes as the node gives them, and the taps (ONNX Runtime's own Resize,
/// ort/ops/OrtResize.cpp, reads them).
struct ResizeCall {
  bool linear = false; ///< mode linear (bilinear)
  bool legacy = false; ///< Resize-10 and Upsample
  std::string coord;   ///< coordinate_transformation_mode (Resize-11 on)
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  ResizeTaps taps;
};
/// Reads the call of the node of `ctx` on `x`; false (with ctx.fail) as
/// resizeTaps.
bool resizeCall(KernelContext &ctx, const Tensor &x, ResizeCall &c);
/// Output 0 of `ctx`: `x` resized by the default kernel's passes over `t`.
bool resizeWithTaps(KernelContext &ctx, const Tensor &x, const ResizeTaps &t);

} // namespace tpcc::rt

#endif
