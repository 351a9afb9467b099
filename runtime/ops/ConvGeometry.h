//===- ConvGeometry.h - The geometry of a Conv call -------------*- C++ -*-===//
//
// Strides, dilations, pads (auto_pad resolved), group and output shape of one
// ONNX Conv or ConvTranspose on given input and weight shapes, and oneDNN's
// view of its weights: read and checked once, for the oneDNN kernel
// (Conv.cpp), ONNX Runtime's float and integer kernels (ort/ops/OrtConv.cpp,
// ort/IntegerPairs.cpp) and the backward (grad/ops/Linear.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_OPS_CONVGEOMETRY_H
#define TPCC_RUNTIME_OPS_CONVGEOMETRY_H

#include "runtime/Kernel.h"

#include <oneapi/dnnl/dnnl.hpp>

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
/// ConvTranspose's (output_shape, output_padding and auto_pad resolved).
bool deconvGeometry(KernelContext &ctx, const Shape &x, const Shape &w, ConvGeometry &g);

/// Checks the inputs of the Conv (or, `transpose`, ConvTranspose) of `ctx`
/// (float input, weights and bias of matching ranks and sizes; the fused
/// Adds' operands of the output's shape) and computes its geometry; false
/// after `ctx.fail`. The kernels of both registries start with it.
bool checkConvCall(KernelContext &ctx, bool transpose, ConvGeometry &g);

/// oneDNN's descriptor of the ONNX weights of a Conv (`transpose`: a
/// ConvTranspose) on input shape `x`, as they lie in memory: dims (G,) O, I,
/// k... with the strides of ONNX's layout.
dnnl::memory::desc convWeightsDesc(const Shape &x, const ConvGeometry &g, bool transpose);

} // namespace tpcc::rt

#endif
