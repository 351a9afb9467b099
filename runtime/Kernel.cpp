//===- Kernel.cpp - Kernel context helpers and the registry -----------------===//
#include "runtime/Kernel.h"

#include "ir/graph/NodeAttrs.h"

#include <algorithm>

using namespace tpcc;
using namespace tpcc::rt;

NodeState::~NodeState() = default;

// The one attribute accessor (graph::NodeAttrs), without schema defaults:
// the kernel's `dflt` applies when the node lacks the attribute.

int64_t KernelContext::attrInt(llvm::StringRef n, int64_t dflt) const {
  return graph::NodeAttrs(node, nullptr).getInt(n, dflt);
}

float KernelContext::attrFloat(llvm::StringRef n, float dflt) const {
  return float(graph::NodeAttrs(node, nullptr).getFloat(n, dflt));
}

std::string KernelContext::attrString(llvm::StringRef n, llvm::StringRef dflt) const {
  return graph::NodeAttrs(node, nullptr).getString(n, dflt);
}

std::vector<int64_t> KernelContext::attrInts(llvm::StringRef n, std::vector<int64_t> dflt) const {
  return graph::NodeAttrs(node, nullptr).getInts(n, std::move(dflt));
}

std::vector<float> KernelContext::attrFloats(llvm::StringRef n, std::vector<float> dflt) const {
  if (!hasAttr(n))
    return dflt;
  std::vector<double> f = graph::NodeAttrs(node, nullptr).getFloats(n);
  return std::vector<float>(f.begin(), f.end());
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
    registerIndexingKernels(r);
    registerRecurrentKernels(r);
    registerControlFlowKernels(r);
    registerResizeKernels(r);
    registerConvKernels(r);
    registerGemmKernels(r);
    registerNBitsKernels(r);
    registerIntegerGemmKernels(r);
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
