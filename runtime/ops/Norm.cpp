//===- Norm.cpp - (being written) -------------------------------------------===//
#include "runtime/KernelUtil.h"

using namespace tpcc;
using namespace tpcc::rt;

void rt::registerNormKernels(KernelRegistry &r) {}
