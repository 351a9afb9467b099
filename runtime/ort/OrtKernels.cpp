//===- OrtKernels.cpp - ONNX Runtime's float kernels as a second registry --===//
#include "runtime/ort/OrtKernels.h"

using namespace tpcc;
using namespace tpcc::rt;

const KernelRegistry *rt::ortKernels(bool floatAsOrt, bool saturatingPairs) {
  auto build = [](bool floats, bool pairs) {
    KernelRegistry r;
    if (floats) {
      registerOrtConvKernels(r);
      registerOrtMatMulKernels(r);
      registerOrtMatMulNBitsKernels(r);
      registerOrtResizeKernels(r);
      registerOrtPoolKernels(r);
      registerOrtActivationKernels(r);
      registerOrtReduceKernels(r);
    }
    if (pairs)
      registerOrtNoVnniKernels(r);
    return r;
  };
  static const KernelRegistry floats = build(true, false), pairs = build(false, true),
                              both = build(true, true);
  if (floatAsOrt)
    return saturatingPairs ? &both : &floats;
  return saturatingPairs ? &pairs : nullptr;
}
