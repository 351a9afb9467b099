//===- OrtKernels.h - ONNX Runtime's float kernels as a second registry -*- C++ -*-===//
//
// Where ONNX Runtime computes a float node of a QDQ model, its sums and
// approximations round apart from the default kernels' in the last bit, and
// a value on a rounding tie of the QuantizeLinear after it then lands a code
// apart. Runs that compute a model as ORT does (`--ort-cpu`, OrtMode.h)
// look their kernels up in this registry first, and in the default one
// (Kernel.h) for every operator it lacks: Conv summed as MLAS sums it
// (ops/OrtConv.h), bilinear Resize as UpsampleBilinear (ops/OrtResize.h),
// AveragePool and GlobalAveragePool as MlasPool (ops/OrtPool.cpp), Sigmoid
// as MLAS's logistic approximation (ops/OrtSigmoid.cpp), ReduceSum and
// ReduceMean along the last axis in ORT's order (ops/OrtReduce.cpp). Each falls back to
// the default kernel where ORT computes as it does. Runs as ORT computes
// without VNNI also add MatMulInteger's u8 x s8 products in saturating int16
// pairs (ops/OrtMatMulInteger.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_RUNTIME_ORT_ORTKERNELS_H
#define TPCC_RUNTIME_ORT_ORTKERNELS_H

#include "runtime/Kernel.h"

namespace tpcc::rt {

/// The registry of a run in an ORT mode (only the operators ORT computes its
/// own way): its float kernels with `floatAsOrt`, its u8 x s8 MatMulInteger
/// without VNNI with `saturatingPairs` (ops/OrtMatMulInteger.cpp); null
/// with neither.
const KernelRegistry *ortKernels(bool floatAsOrt, bool saturatingPairs);

// The ops files (runtime/ort/ops/*.cpp).
void registerOrtConvKernels(KernelRegistry &r);
/// MatMul: float products summed as MLAS sums them (ops/OrtMatMul.cpp).
void registerOrtMatMulKernels(KernelRegistry &r);
/// com.microsoft MatMulNBits at accuracy level 4: A quantized to int8 per
/// block, as MLAS's CompInt8 kernels compute (ops/OrtMatMulNBits.cpp).
void registerOrtMatMulNBitsKernels(KernelRegistry &r);
void registerOrtResizeKernels(KernelRegistry &r);
void registerOrtPoolKernels(KernelRegistry &r);
void registerOrtActivationKernels(KernelRegistry &r);
/// ReduceSum, ReduceMean: float rows of a multiple of 8 along the last axis
/// summed as ORT sums them (ops/OrtReduce.cpp).
void registerOrtReduceKernels(KernelRegistry &r);
void registerOrtNoVnniKernels(KernelRegistry &r);

} // namespace tpcc::rt

#endif
