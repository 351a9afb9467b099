//===- Kernel.cpp - Kernel context helpers and the registry -----------------===//
#include "runtime/Kernel.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

NodeState::~NodeState() = default;

int64_t KernelContext::attrInt(llvm::StringRef n, int64_t dflt) const {
  const graph::Attribute *a = node.attr(n);
  return a ? a->i : dflt;
}

float KernelContext::attrFloat(llvm::StringRef n, float dflt) const {
  const graph::Attribute *a = node.attr(n);
  return a ? float(a->f) : dflt;
}

std::string KernelContext::attrString(llvm::StringRef n, llvm::StringRef dflt) const {
  const graph::Attribute *a = node.attr(n);
  return a ? a->s : dflt.str();
}

std::vector<int64_t> KernelContext::attrInts(llvm::StringRef n,
                                             std::vector<int64_t> dflt) const {
  const graph::Attribute *a = node.attr(n);
  return a ? a->ints : dflt;
}

std::vector<float> KernelContext::attrFloats(llvm::StringRef n, std::vector<float> dflt) const {
  const graph::Attribute *a = node.attr(n);
  if (!a)
    return dflt;
  return std::vector<float>(a->floats.begin(), a->floats.end());
}

const graph::Tensor *KernelContext::attrTensor(llvm::StringRef n) const {
  const graph::Attribute *a = node.attr(n);
  return a && !a->tensors.empty() ? &a->tensors.front() : nullptr;
}

const KernelRegistry &KernelRegistry::get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerElementwiseKernels(r);
    registerActivationKernels(r);
    registerReduceKernels(r);
    registerQuantizeKernels(r);
    registerShapeKernels(r);
    registerDataMovementKernels(r);
    registerResizeKernels(r);
    registerConvKernels(r);
    registerGemmKernels(r);
    registerPoolKernels(r);
    registerNormKernels(r);
    return r;
  }();
  return registry;
}

KernelFn KernelRegistry::find(llvm::StringRef domain, llvm::StringRef opType) const {
  auto it = kernels.find(qualified(domain, opType));
  return it == kernels.end() ? nullptr : it->second;
}

std::vector<std::string> KernelRegistry::operators() const {
  std::vector<std::string> ops;
  for (const auto &e : kernels)
    ops.push_back(e.getKey().str());
  std::sort(ops.begin(), ops.end());
  return ops;
}
