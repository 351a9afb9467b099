//===- ConvGeometry.h - The geometry of a Conv call -------------*- C++ -*-===//
//
// Strides, dilations, pads (auto_pad resolved), group and output shape of one
// ONNX Conv on given input and weight shapes: read and checked once, for the
// oneDNN kernel (Conv.cpp) and the integer-kernel emulation (IntegerPairs.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_CONVGEOMETRY_H
#define TPCC_RUNTIME_OPS_CONVGEOMETRY_H

#include "runtime/Kernel.h"

namespace tpcc::rt {

/// The geometry of one Conv / ConvTranspose call (spatial dims only).
struct ConvGeometry {
  std::vector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  Shape outShape; ///< full output shape
  int64_t group = 1;
};

/// Conv's output shape and pads (auto_pad resolved) for input `x` and weights
/// `w`; false (with `ctx.fail`) when the attributes or shapes are invalid.
bool convGeometry(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g);

} // namespace tpcc::rt

#endif
