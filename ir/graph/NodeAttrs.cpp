//===- NodeAttrs.cpp - Attributes of a node with schema defaults ------------===//
#include "ir/graph/NodeAttrs.h"

using namespace tpcc;
using namespace tpcc::graph;
using ir::OnnxAttrType;

const ir::OnnxAttrValue *NodeAttrs::schemaDefault(llvm::StringRef name) const {
  if (!schema)
    return nullptr;
  const ir::OnnxAttr *a = schema->findAttr(name);
  return a && a->defaultValue ? &*a->defaultValue : nullptr;
}

int64_t NodeAttrs::getInt(llvm::StringRef name, int64_t fallback) const {
  if (const Attribute *a = node.attr(name))
    return a->i;
  const ir::OnnxAttrValue *d = schemaDefault(name);
  return d && d->type == OnnxAttrType::Int ? d->i : fallback;
}

double NodeAttrs::getFloat(llvm::StringRef name, double fallback) const {
  if (const Attribute *a = node.attr(name))
    return a->f;
  const ir::OnnxAttrValue *d = schemaDefault(name);
  return d && d->type == OnnxAttrType::Float ? d->f : fallback;
}

std::string NodeAttrs::getString(llvm::StringRef name, llvm::StringRef fallback) const {
  if (const Attribute *a = node.attr(name))
    return a->s;
  const ir::OnnxAttrValue *d = schemaDefault(name);
  return d && d->type == OnnxAttrType::String ? d->s : fallback.str();
}

std::vector<int64_t> NodeAttrs::getInts(llvm::StringRef name, std::vector<int64_t> fallback) const {
  if (const Attribute *a = node.attr(name))
    return a->ints;
  const ir::OnnxAttrValue *d = schemaDefault(name);
  return d && d->type == OnnxAttrType::Ints ? d->ints : fallback;
}

std::vector<double> NodeAttrs::getFloats(llvm::StringRef name, std::vector<double> fallback) const {
  if (const Attribute *a = node.attr(name))
    return a->floats;
  const ir::OnnxAttrValue *d = schemaDefault(name);
  return d && d->type == OnnxAttrType::Floats ? d->floats : fallback;
}

const ir::OnnxOpVersion *graph::schemaFor(const Model &m, const Node &n) {
  const ir::OnnxOp *op = ir::OnnxSchemaIndex::get().find(n.opType);
  llvm::StringRef domain = n.domain == "ai.onnx" ? "" : llvm::StringRef(n.domain);
  if (!op || op->domain != domain)
    return nullptr;
  std::optional<int64_t> v = m.opsetVersion(domain);
  // A model with no opset imports (IR version 1 and 2) means opset 1.
  if (!v && m.opsets.empty())
    v = 1;
  if (!v)
    return &op->latest();
  if (const ir::OnnxOpVersion *s = op->atOpset(int(std::min<int64_t>(*v, 1 << 30))))
    return s;
  return nullptr;
}
