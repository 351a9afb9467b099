//===- NodeAttrs.h - Attributes of a node with schema defaults ---*- C++ -*-===//
//
// The one way the quantizer reads a node's attributes: the node's value when
// it has the attribute; when absent, the default the ONNX schema states for
// the operator version the model uses (`schema`, from schemaFor); when
// the schema states none (an attribute without a default, an operator
// libonnx does not know), the caller's fallback.
//
// Kernels read attributes through KernelContext (runtime/Kernel.h): this
// accessor without a schema, the kernel passing the default of the versions
// it handles.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_IR_GRAPH_NODEATTRS_H
#define TPCC_IR_GRAPH_NODEATTRS_H

#include "ir/OnnxSchema.h"
#include "ir/graph/Graph.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tpcc::graph {

class NodeAttrs {
public:
  /// `schema`: the schema version of `n`'s operator in effect for its model,
  /// or null (no schema defaults).
  NodeAttrs(const Node &n, const ir::OnnxOpVersion *schema) : node(n), schema(schema) {}

  /// Whether the node itself has the attribute.
  bool has(llvm::StringRef name) const { return node.attr(name) != nullptr; }
  int64_t getInt(llvm::StringRef name, int64_t fallback = 0) const;
  double getFloat(llvm::StringRef name, double fallback = 0) const;
  std::string getString(llvm::StringRef name, llvm::StringRef fallback = "") const;
  std::vector<int64_t> getInts(llvm::StringRef name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> getFloats(llvm::StringRef name, std::vector<double> fallback = {}) const;

  /// The schema's default of `name`, or null.
  const ir::OnnxAttrValue *schemaDefault(llvm::StringRef name) const;

private:
  const Node &node;
  const ir::OnnxOpVersion *schema;
};

/// The schema version that applies to node `n` of `m` (the model's opset of
/// the node's domain; the latest one libonnx knows when the model imports a
/// newer opset), or null for ops libonnx does not know.
const ir::OnnxOpVersion *schemaFor(const Model &m, const Node &n);

/// `n`'s attributes with the schema defaults of `m`'s opsets.
inline NodeAttrs attrsOf(const Model &m, const Node &n) { return NodeAttrs(n, schemaFor(m, n)); }

} // namespace tpcc::graph

#endif
