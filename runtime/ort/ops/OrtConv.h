//===- OrtConv.h - A float Conv summed as ONNX Runtime's MLAS sums it -*- C++ -*-===//
//
// The float Conv of runs that compute a QDQ model as ONNX Runtime does
// (`--ort-cpu`): the same sums in the same order as MLAS on one thread, so
// the same bits (OrtConv.cpp says which order).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_OPS_ORTCONV_H
#define TPCC_RUNTIME_ORT_OPS_ORTCONV_H

#include "runtime/Tensor.h"
#include "runtime/ops/ConvGeometry.h"

namespace tpcc::rt {

/// y = Conv(x, w, b) for plain float `x` and `w`, geometry `g` (non-negative
/// pads), summed as MLAS sums it.
bool ortFloatConv(const Tensor &x, const Tensor &w, const Tensor *b, const ConvGeometry &g,
                  Tensor &y);

} // namespace tpcc::rt

#endif
