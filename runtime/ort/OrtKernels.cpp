//===- OrtKernels.cpp - ONNX Runtime's float kernels as a second registry --===//
#include "runtime/ort/OrtKernels.h"

using namespace tpcc;
using namespace tpcc::rt;

const KernelRegistry &rt::ortFloatKernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerOrtConvKernels(r);
    registerOrtResizeKernels(r);
    registerOrtPoolKernels(r);
    registerOrtActivationKernels(r);
    return r;
  }();
  return registry;
}
