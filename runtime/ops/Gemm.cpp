//===- Gemm.cpp - (being written) -------------------------------------------===//
#include "runtime/KernelUtil.h"

using namespace tpcc;
using namespace tpcc::rt;

void rt::registerGemmKernels(KernelRegistry &r) {}
