//===- Backward.cpp - The backward kernel registry and shared helpers -----===//
#include "runtime/grad/Backward.h"

#include "ir/graph/NodeAttrs.h"
#include "runtime/KernelUtil.h"

using namespace tpcc;
using namespace tpcc::rt;
using namespace tpcc::rt::grad;

int64_t BackwardContext::attrInt(llvm::StringRef n, int64_t dflt) const {
  return graph::NodeAttrs(node, nullptr).getInt(n, dflt);
}
float BackwardContext::attrFloat(llvm::StringRef n, float dflt) const {
  return float(graph::NodeAttrs(node, nullptr).getFloat(n, dflt));
}
std::vector<int64_t> BackwardContext::attrInts(llvm::StringRef n, std::vector<int64_t> dflt) const {
  return graph::NodeAttrs(node, nullptr).getInts(n, std::move(dflt));
}
std::string BackwardContext::attrString(llvm::StringRef n, llvm::StringRef dflt) const {
  return graph::NodeAttrs(node, nullptr).getString(n, dflt);
}

const BackwardRegistry &BackwardRegistry::get() {
  static const BackwardRegistry r = [] {
    BackwardRegistry r;
    registerElementwiseBackward(r);
    registerShapeBackward(r);
    registerLinearBackward(r);
    registerPoolBackward(r);
    registerNormBackward(r);
    return r;
  }();
  return r;
}

BackwardFn BackwardRegistry::find(llvm::StringRef domain, llvm::StringRef opType) const {
  if (!(domain.empty() || domain == "ai.onnx"))
    return nullptr;
  auto it = kernels.find(opType);
  return it == kernels.end() ? nullptr : it->second;
}

Tensor grad::zeros(const Shape &shape) { return Tensor(ElemType::Float, shape, true); }

Tensor grad::reduceToShape(const Tensor &g, const Shape &shape) {
  if (g.shape() == shape)
    return g;
  Tensor r = zeros(shape);
  BroadcastIndexer ix(shape, g.shape());
  const float *s = g.data<float>();
  float *d = r.data<float>();
  // Serial: the sums keep one order whatever the thread count.
  for (int64_t i = 0; i < g.numel(); ++i)
    d[ix.offset(i)] += s[i];
  return r;
}
