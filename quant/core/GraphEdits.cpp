//===- GraphEdits.cpp - Writing the post-threshold edits --------------------===//
//
// applyGraphEdits: the shift_negative and input_scaling edits the quantizer
// decided (PostThreshold.cpp) written into the QDQ copy: an Add (shift) or
// Mul (scaling) node after the value, a Pad's constant or a Conv's own
// padding made explicit with the shift as padding value, scaled kernels.
//
//===----------------------------------------------------------------------===//
#include "quant/core/GraphEdits.h"

#include "ir/graph/OnnxIO.h"
#include "quant/core/GraphHelpers.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
using graph::Node;
using graph::Value;

namespace {

Value *scalarConstant(graph::Graph &g, const std::string &base, float x,
                      std::vector<int64_t> dims = {}) {
  auto t = std::make_unique<graph::Tensor>();
  std::set<std::string> none;
  t->name = freshName(g, base, none);
  t->elem = graph::ElemType::Float;
  t->dims = std::move(dims);
  t->raw.assign(reinterpret_cast<const char *>(&x), sizeof x);
  return g.addConstant(std::move(t));
}

graph::Attribute attr(const char *name, ir::OnnxAttrType type) {
  graph::Attribute a;
  a.name = name;
  a.type = type;
  return a;
}

Node *addNode(graph::Graph &g, const std::string &name, const char *op, std::vector<Value *> ins,
              Value *out) {
  auto n = std::make_unique<Node>();
  n->name = name;
  n->opType = op;
  n->inputs = std::move(ins);
  n->outputs = {out};
  return g.addNode(std::move(n));
}

/// Conv `c` reads Pad(input, c's pads, value delta) and pads no more.
void explicitPad(graph::Model &m, Node &c, const GraphEdit &e) {
  graph::Graph &g = m.graph;
  std::vector<int64_t> pads = graph::attrsOf(m, c).getInts("pads");
  size_t rank = pads.size() / 2;
  std::vector<int64_t> all(2 * (rank + 2), 0);
  for (size_t i = 0; i < rank; ++i) {
    all[2 + i] = pads[i];
    all[rank + 4 + i] = pads[rank + i];
  }
  Value *out = g.getOrCreateValue(e.padOutput);
  out->type.elem = graph::ElemType::Float;
  out->hasTypeInfo = true;
  Node *p;
  if (m.opsetVersion("").value_or(1) >= 11) {
    auto t = std::make_unique<graph::Tensor>();
    std::set<std::string> none;
    t->name = freshName(g, e.padNode + "_pads", none);
    t->elem = graph::ElemType::Int64;
    t->dims = {int64_t(all.size())};
    t->raw.assign(reinterpret_cast<const char *>(all.data()), all.size() * sizeof(int64_t));
    Value *padsV = g.addConstant(std::move(t));
    p = addNode(g, e.padNode, "Pad",
                {c.inputs[0], padsV, scalarConstant(g, e.padNode + "_value", float(e.constant))},
                out);
  } else {
    p = addNode(g, e.padNode, "Pad", {c.inputs[0]}, out);
    p->attributes.push_back(attr("mode", ir::OnnxAttrType::String));
    p->attributes.back().s = "constant";
    p->attributes.push_back(attr("pads", ir::OnnxAttrType::Ints));
    p->attributes.back().ints = all;
    p->attributes.push_back(attr("value", ir::OnnxAttrType::Float));
    p->attributes.back().f = e.constant;
  }
  for (graph::Attribute &a : c.attributes)
    if (a.name == "pads")
      std::fill(a.ints.begin(), a.ints.end(), 0);
  c.inputs[0] = out;
}

} // namespace

LogicalResult quant::applyGraphEdits(graph::Model &m, const std::vector<GraphEdit> &edits,
                                     const std::vector<ConstantEdit> &kernels,
                                     DiagnosticEngine &diags) {
  graph::Graph &g = m.graph;
  auto missing = [&](const std::string &what) {
    diags.emitAt(m.path, diag::err_quant_unsupported,
                 fmt::format("correction: the model has no `{}`", what));
    return failure();
  };
  std::vector<const ConstantEdit *> byNode;
  for (const ConstantEdit &k : kernels)
    byNode.push_back(&k);
  std::stable_sort(byNode.begin(), byNode.end(),
                   [](const ConstantEdit *a, const ConstantEdit *b) { return a->node < b->node; });
  for (const ConstantEdit *kp : byNode) {
    const ConstantEdit &k = *kp;
    Node *n = nodeNamed(g, k.node);
    if (!n || !n->input(k.input) || !n->input(k.input)->constant)
      return missing(k.node);
    setConstant(g, *n, k.input, k.values, n->input(k.input)->constant->dims,
                n->input(k.input)->name + "_scaled");
  }
  g.relink();
  for (const GraphEdit &e : edits) {
    Value *v = g.findValue(e.value);
    if (!v)
      return missing(e.value);
    std::vector<graph::Use> uses = v->uses;
    Value *out = g.getOrCreateValue(e.output);
    out->type = v->type;
    out->type.elem = graph::ElemType::Float;
    out->hasTypeInfo = true;
    for (const graph::Use &u : uses)
      u.node->inputs[u.index] = out;
    bool shift = e.kind == GraphEdit::ShiftNegative;
    Value *c = scalarConstant(g, e.value + (shift ? "_shift" : "_scale"), float(e.constant));
    addNode(g, e.node, shift ? "Add" : "Mul", {v, c}, out);
    if (shift && !e.convNode.empty()) {
      Node *conv = nodeNamed(g, e.convNode);
      if (!conv)
        return missing(e.convNode);
      explicitPad(m, *conv, e);
    } else if (shift && !e.padNode.empty()) {
      Node *p = nodeNamed(g, e.padNode);
      if (!p)
        return missing(e.padNode);
      if (p->inputs.size() >= 2) { // Pad-11 and later: the value is input 2
        if (p->inputs.size() < 3)
          p->inputs.resize(3, nullptr);
        p->inputs[2] = scalarConstant(g, e.padNode + "_value", float(e.constant));
      } else {
        bool found = false;
        for (graph::Attribute &a : p->attributes)
          if (a.name == "value")
            a.f = e.constant, found = true;
        if (!found) {
          p->attributes.push_back(attr("value", ir::OnnxAttrType::Float));
          p->attributes.back().f = e.constant;
        }
      }
    }
    g.relink();
  }
  m.eraseUnusedInitializers();
  g.relink();
  return graph::verifyGraph(g, m.path, diags);
}

std::string GraphEdit::describe() const {
  if (kind == InputScaling)
    return fmt::format("input_scaling: `{}` * {:.6g} (`{}`)", value, constant, node);
  return fmt::format("shift_negative: `{}` + {:.6g} (`{}`){}", value, constant, node,
                     convNode.empty() ? padNode.empty() ? "" : ", `" + padNode + "` pads with it"
                                      : ", `" + convNode + "` padding made explicit");
}
