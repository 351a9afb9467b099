//===- GraphHelpers.cpp - Graph helpers the quantizer shares ----------------===//
#include "quant/core/GraphHelpers.h"

#include "ir/graph/OpTraits.h"
#include "plan/PredicateEval.h"

#include <fmt/format.h>

#include <algorithm>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::edits;
using graph::Node;
using graph::Value;

Node *edits::nodeNamed(const graph::Graph &g, llvm::StringRef name) {
  for (const auto &n : g.nodes())
    if (n->name == name)
      return n.get();
  return nullptr;
}

bool edits::isOp(const Node *n, llvm::StringRef op) {
  return n && n->domain.empty() && n->opType == op;
}

bool edits::isFloatConstant(const Value *v) {
  return v && v->constant && !v->isGraphInput && v->constant->elem == graph::ElemType::Float;
}

std::vector<float> edits::floatValues(const Value *v) {
  if (!isFloatConstant(v))
    return {};
  std::vector<float> out(size_t(v->constant->numElements()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = float(v->constant->at(int64_t(i)));
  return out;
}

bool edits::clipBounds(const graph::NodeAttrs &attrs, const Node &n, double &lo, double &hi) {
  if (n.inputs.size() > 1 || !attrs.has("max")) {
    std::vector<float> a = floatValues(n.input(1)), b = floatValues(n.input(2));
    if (a.size() != 1 || b.size() != 1)
      return false;
    lo = a[0], hi = b[0];
    return true;
  }
  lo = attrs.has("min") ? attrs.getFloat("min") : -INFINITY;
  hi = attrs.getFloat("max");
  return true;
}

Node *edits::singleConsumer(const Value *v, unsigned *index) {
  if (!v || v->isGraphOutput || v->uses.size() != 1)
    return nullptr;
  if (index)
    *index = v->uses[0].index;
  return v->uses[0].node;
}

graph::Attribute edits::intAttribute(const char *name, int64_t value) {
  graph::Attribute a;
  a.name = name;
  a.type = ir::OnnxAttrType::Int;
  a.i = value;
  return a;
}

std::string edits::freshName(const graph::Graph &g, const std::string &base,
                             std::set<std::string> &taken, bool nodes) {
  auto used = [&](const std::string &n) {
    return taken.count(n) || (nodes ? nodeNamed(g, n) != nullptr : g.findValue(n) != nullptr);
  };
  std::string name = base;
  for (unsigned k = 1; used(name); ++k)
    name = fmt::format("{}_{}", base, k);
  taken.insert(name);
  return name;
}

void edits::overwriteInitializer(graph::Graph &g, const Value &v,
                                 const std::vector<float> &values) {
  for (const auto &init : g.initializers())
    if (init->name == v.name)
      init->raw.assign(reinterpret_cast<const char *>(values.data()),
                       values.size() * sizeof(float));
}

void edits::setConstant(graph::Graph &g, Node &n, unsigned index, const std::vector<float> &values,
                        const std::vector<int64_t> &dims, const std::string &base) {
  auto t = std::make_unique<graph::Tensor>();
  std::set<std::string> none;
  t->name = freshName(g, base, none);
  t->elem = graph::ElemType::Float;
  t->dims = dims;
  t->raw.assign(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(float));
  Value *v = g.addConstant(std::move(t));
  if (n.inputs.size() <= index)
    n.inputs.resize(index + 1, nullptr);
  n.inputs[index] = v;
}

bool edits::isLinearWithConstants(const graph::Model &m, const Node *n) {
  if (!n || !graph::opTraits(*n).linear || !isFloatConstant(n->input(1)))
    return false;
  const std::vector<int64_t> &d = n->input(1)->constant->dims;
  if (n->opType == "Gemm" && (graph::attrsOf(m, *n).getInt("transA") != 0 || d.size() != 2))
    return false;
  if (n->opType == "Conv" && d.size() < 3)
    return false;
  const Value *b = n->input(2);
  return !b || (!floatValues(b).empty() && b->constant->dims.size() == 1);
}

BiasInput edits::linearBias(const Node &n) {
  if (!isOp(&n, "MatMul"))
    return {const_cast<Node *>(&n), 2};
  unsigned index = 0;
  Node *add = n.outputs.empty() ? nullptr : singleConsumer(n.outputs[0], &index);
  if (!isOp(add, "Add") || !isFloatConstant(add->input(1 - index)))
    return {};
  return {add, 1 - index};
}

bool edits::isMatMulLayer(const Node *n) {
  if (!isOp(n, "MatMul") || !isFloatConstant(n->input(1)) || !n->input(0) ||
      n->input(0)->constant || n->input(1)->constant->dims.size() != 2)
    return false;
  const Value *b = linearBias(*n).value();
  if (!b)
    return true;
  const std::vector<int64_t> &d = b->constant->dims;
  int64_t cols = n->input(1)->constant->dims[1];
  return !d.empty() && d.back() == cols &&
         std::all_of(d.begin(), d.end() - 1, [](int64_t x) { return x == 1; });
}

bool edits::biasQuantized(const plan::Plan &plan, const Node &n) {
  const Value *b = isOp(&n, "MatMul") ? linearBias(n).value() : nullptr;
  if (!b)
    return false; // only a MatMul layer's bias (an Add's operand) is checked
  for (const plan::PlanNode &p : plan.nodes)
    for (const plan::PlanWeight &w : p.weights)
      if (w.input == b && w.quantize)
        return true;
  return false;
}

bool edits::isLinearLayer(const graph::Model &m, const Node *n) {
  return isLinearWithConstants(m, n) || isMatMulLayer(n);
}

const plan::PlanNode *edits::planNodeOf(const plan::Plan &plan, const Node *n) {
  // PlanNode i is graph node i.
  if (!n || n->id >= plan.nodes.size() || plan.nodes[n->id].node != n)
    return nullptr;
  return &plan.nodes[n->id];
}

std::optional<int64_t> edits::kernelOutAxis(const plan::PlanNode &pn) {
  for (const plan::PlanWeight &w : pn.weights) {
    if (w.inputIndex == 1 && w.decl && w.channelAxis)
      return w.channelAxis;
  }
  return std::nullopt;
}
