//===- Subgraphs.cpp - Captures, renames and models of subgraphs ------------===//
//
// The model IR keeps a node's subgraphs (If branches, Loop and Scan bodies)
// as the file serialized them. What the rest of tpcc needs of them is here:
// the outer values they read (the loader appends them to the node's inputs),
// renaming those reads when a transform replaced the value (the writer), and
// a subgraph loaded as a model of its own (the control-flow kernels run it).
//
//===----------------------------------------------------------------------===//

#include "ir/graph/OnnxIO.h"
#include "ir/graph/SubgraphProto.h"

#include <unordered_set>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

/// The names `g` defines: inputs, initializers, node outputs.
std::unordered_set<std::string> definedNames(const onnx::GraphProto &g) {
  std::unordered_set<std::string> defined;
  for (const auto &in : g.input())
    defined.insert(in.name());
  for (const auto &t : g.initializer())
    defined.insert(t.name());
  for (const auto &t : g.sparse_initializer())
    defined.insert(t.values().name());
  for (const auto &n : g.node())
    for (const std::string &o : n.output())
      if (!o.empty())
        defined.insert(o);
  return defined;
}

template <typename F> void forEachSubgraph(const onnx::NodeProto &n, F f) {
  for (const onnx::AttributeProto &a : n.attribute()) {
    if (a.has_g())
      f(a.g());
    for (const onnx::GraphProto &g : a.graphs())
      f(g);
  }
}

template <typename F> void forEachSubgraph(onnx::NodeProto &n, F f) {
  for (onnx::AttributeProto &a : *n.mutable_attribute()) {
    if (a.has_g())
      f(*a.mutable_g());
    for (onnx::GraphProto &g : *a.mutable_graphs())
      f(g);
  }
}

/// Appends `name` to `out` unless it is empty or already there.
struct NameList {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  void add(const std::string &name) {
    if (!name.empty() && seen.insert(name).second)
      names.push_back(name);
  }
};

} // namespace

std::vector<std::string> proto::freeNames(const onnx::GraphProto &g) {
  std::unordered_set<std::string> defined = definedNames(g);
  NameList out;
  auto read = [&](const std::string &name) {
    if (!defined.count(name))
      out.add(name);
  };
  for (const onnx::NodeProto &n : g.node()) {
    for (const std::string &in : n.input())
      read(in);
    forEachSubgraph(n, [&](const onnx::GraphProto &sub) {
      for (const std::string &name : freeNames(sub))
        read(name);
    });
  }
  for (const auto &o : g.output())
    read(o.name());
  return out.names;
}

std::vector<std::string> proto::captures(const onnx::NodeProto &n) {
  NameList out;
  forEachSubgraph(n, [&](const onnx::GraphProto &sub) {
    for (const std::string &name : freeNames(sub))
      out.add(name);
  });
  return out.names;
}

void proto::renameReads(onnx::GraphProto &g, const std::map<std::string, std::string> &renames) {
  std::unordered_set<std::string> defined = definedNames(g);
  std::map<std::string, std::string> outer;
  for (const auto &[from, to] : renames)
    if (!defined.count(from))
      outer.emplace(from, to);
  if (outer.empty())
    return;
  auto rename = [&](std::string &name) {
    if (auto it = outer.find(name); it != outer.end())
      name = it->second;
  };
  for (onnx::NodeProto &n : *g.mutable_node()) {
    for (std::string &in : *n.mutable_input())
      rename(in);
    forEachSubgraph(n, [&](onnx::GraphProto &sub) { renameReads(sub, outer); });
  }
  for (auto &o : *g.mutable_output())
    rename(*o.mutable_name());
}

int64_t proto::countNodes(const onnx::GraphProto &g) {
  int64_t count = g.node_size();
  for (const onnx::NodeProto &n : g.node())
    forEachSubgraph(n, [&](const onnx::GraphProto &sub) { count += countNodes(sub); });
  return count;
}

/// The subgraphs of `n`'s graph attributes, decoded (each attribute is kept
/// as its serialized AttributeProto).
static std::vector<onnx::AttributeProto> decodedGraphAttributes(const Node &n) {
  std::vector<onnx::AttributeProto> out;
  for (const Attribute &a : n.attributes) {
    if (a.type != ir::OnnxAttrType::Graph && a.type != ir::OnnxAttrType::Graphs)
      continue;
    onnx::AttributeProto p;
    if (p.ParseFromString(a.raw))
      out.push_back(std::move(p));
  }
  return out;
}

int64_t graph::subgraphNodeCount(const Node &n) {
  int64_t count = 0;
  for (const onnx::AttributeProto &p : decodedGraphAttributes(n)) {
    if (p.has_g())
      count += proto::countNodes(p.g());
    for (const onnx::GraphProto &g : p.graphs())
      count += proto::countNodes(g);
  }
  return count;
}

static void collectOperators(const onnx::GraphProto &g, std::vector<SubgraphNode> &out) {
  for (const onnx::NodeProto &n : g.node()) {
    out.push_back(SubgraphNode{n.domain(), n.op_type(), n.name()});
    forEachSubgraph(n, [&](const onnx::GraphProto &sub) { collectOperators(sub, out); });
  }
}

std::vector<SubgraphNode> graph::subgraphNodes(const Node &n) {
  std::vector<SubgraphNode> out;
  for (const onnx::AttributeProto &p : decodedGraphAttributes(n)) {
    if (p.has_g())
      collectOperators(p.g(), out);
    for (const onnx::GraphProto &g : p.graphs())
      collectOperators(g, out);
  }
  return out;
}

std::optional<Subgraph> graph::loadSubgraph(const Node &n, llvm::StringRef attr,
                                            llvm::ArrayRef<OpsetImport> opsets, int64_t irVersion,
                                            llvm::StringRef where, DiagnosticEngine &diags) {
  const Attribute *a = n.attr(attr);
  onnx::AttributeProto p;
  if (!a || a->type != ir::OnnxAttrType::Graph || !p.ParseFromString(a->raw) || !p.has_g()) {
    diags.emitAt(where.str(), diag::err_model_subgraph, attr.str(), "the node has no such graph");
    return std::nullopt;
  }
  onnx::ModelProto mp;
  mp.set_ir_version(irVersion);
  for (const OpsetImport &o : opsets) {
    auto *op = mp.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  onnx::GraphProto &g = *mp.mutable_graph();
  g.Swap(p.mutable_g());
  Subgraph sub;
  sub.numOwnInputs = size_t(g.input_size());
  size_t own = n.inputs.size() - n.captures.size();
  for (const std::string &name : proto::freeNames(g)) {
    auto it = std::find(n.captures.begin(), n.captures.end(), name);
    if (it == n.captures.end()) {
      diags.emitAt(where.str(), diag::err_model_subgraph, attr.str(),
                   fmt::format("it reads `{}`, which the node does not capture", name));
      return std::nullopt;
    }
    size_t index = own + size_t(it - n.captures.begin());
    sub.captureInputs.push_back(unsigned(index));
    auto *in = g.add_input();
    in->set_name(name);
    const Value *v = n.inputs[index];
    if (v && v->hasTypeInfo && v->opaqueType.empty() && v->type.elem != ElemType::Undefined)
      in->mutable_type()->mutable_tensor_type()->set_elem_type(int32_t(v->type.elem));
  }
  std::string bytes = mp.SerializeAsString();
  LoadOptions options;
  options.check = options.inferShapes = false; // the whole model was checked
  sub.model = loadModelFromBuffer(bytes, fmt::format("{} {}", where.str(), attr.str()), ".", diags,
                                  options);
  if (!sub.model)
    return std::nullopt;
  return sub;
}
