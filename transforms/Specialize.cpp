//===- Specialize.cpp - Inputs the user fixes, conditions that fold --------===//
//
// Exporters guard a model's main path with an `If` on a fact the model knows
// once its constants are folded (Silero VAD tests `state`'s first dimension,
// which is always 2), or on an input the deployment never varies (its sample
// rate). Fixing such an input makes it a constant; an If whose condition is
// then a constant always takes the same branch, which becomes part of the
// graph, so the planner sees (and the quantizer quantizes) what runs inside.
//
//===----------------------------------------------------------------------===//
#include "transforms/Cleanup.h"

#include "ir/graph/OnnxIO.h"
#include "support/HalfFloat.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>
#include <unordered_set>

using namespace tpcc;
using namespace tpcc::transforms;
using graph::Node;
using graph::Value;

namespace {

/// Copies one If branch into the If's graph, in place of the If.
class Inliner {
public:
  Inliner(graph::Model &m, Node &ifNode, std::unordered_set<std::string> &nodeNames)
      : g(m.graph), ifNode(ifNode), nodeNames(nodeNames) {}

  void inlineBranch(graph::Subgraph &sub) {
    graph::Graph &s = sub.model->graph;
    for (size_t k = 0; k < sub.captureInputs.size(); ++k)
      mapped[s.inputs()[sub.numOwnInputs + k]] = ifNode.inputs[sub.captureInputs[k]];
    // The If's outputs take the place of the branch's (once each).
    std::map<const Value *, Value *> outputs;
    for (size_t k = 0; k < s.outputs().size(); ++k)
      if (s.outputs()[k]->producer && s.outputs()[k]->producer->opType != "Constant" &&
          !outputs.count(s.outputs()[k]))
        outputs[s.outputs()[k]] = ifNode.outputs[k];
    for (Node *n : s.topologicalOrder()) {
      if (n->opType == "Constant" && n->inDefaultDomain())
        continue; // its value is a constant of the graph (valueOf)
      auto copy = std::make_unique<Node>();
      copy->name = freshNodeName(n->name);
      copy->opType = n->opType;
      copy->domain = n->domain;
      copy->docString = n->docString;
      copy->attributes = n->attributes;
      copy->captures = n->captures;
      for (Value *in : n->inputs)
        copy->inputs.push_back(in ? valueOf(in) : nullptr);
      for (Value *out : n->outputs) {
        Value *to = nullptr;
        if (out) {
          auto it = outputs.find(out);
          to = it != outputs.end() ? it->second : freshValue(*out);
          mapped[out] = to;
        }
        copy->outputs.push_back(to);
      }
      g.addNode(std::move(copy));
    }
    // An output the branch reads from outside, holds as a constant, or
    // returns twice: an Identity gives it the If's name.
    for (size_t k = 0; k < s.outputs().size(); ++k) {
      auto it = outputs.find(s.outputs()[k]);
      if (it != outputs.end() && it->second == ifNode.outputs[k])
        continue;
      auto id = std::make_unique<Node>();
      id->name = freshNodeName(ifNode.name + "/output");
      id->opType = "Identity";
      id->inputs.push_back(valueOf(s.outputs()[k]));
      id->outputs.push_back(ifNode.outputs[k]);
      g.addNode(std::move(id));
    }
  }

private:
  /// The graph's value for branch value `v`: a captured outer value, a node
  /// output copied before, or a constant of the branch (a new initializer).
  Value *valueOf(const Value *v) {
    if (auto it = mapped.find(v); it != mapped.end())
      return it->second;
    if (!v->constant)
      return mapped[v] = freshValue(*v); // not reached: the branch verified
    auto t = std::make_unique<graph::Tensor>(*v->constant);
    t->name = freshName(g, v->name);
    return mapped[v] = g.addConstant(std::move(t));
  }

  Value *freshValue(const Value &v) {
    Value *to = g.getOrCreateValue(freshName(g, v.name));
    to->type = v.type;
    to->hasTypeInfo = v.hasTypeInfo;
    to->opaqueType = v.opaqueType;
    return to;
  }

  std::string freshNodeName(const std::string &base) {
    std::string stem = base.empty() ? ifNode.name + "/node" : base, name = stem;
    for (unsigned k = 1; nodeNames.count(name); ++k)
      name = fmt::format("{}_{}", stem, k);
    nodeNames.insert(name);
    return name;
  }

  graph::Graph &g;
  Node &ifNode;
  std::unordered_set<std::string> &nodeNames;
  std::map<const Value *, Value *> mapped;
};

template <typename T> std::optional<std::string> bytesOf(double v) {
  if constexpr (std::is_integral_v<T>) {
    // [lowest, 2^digits): exact bounds in double for every integer width.
    if (v != std::floor(v) || v < double(std::numeric_limits<T>::lowest()) ||
        v >= std::ldexp(1.0, std::numeric_limits<T>::digits))
      return std::nullopt;
  }
  T x = static_cast<T>(v);
  std::string bytes(sizeof x, '\0');
  std::memcpy(bytes.data(), &x, sizeof x);
  return bytes;
}

/// `v` as one element of type `elem`; none when `elem` cannot hold it
/// exactly (an integer type and a fraction, a bool and 2) or is not numeric.
std::optional<std::string> elementBytes(graph::ElemType elem, double v) {
  using E = graph::ElemType;
  switch (elem) {
  case E::Float:
    return bytesOf<float>(v);
  case E::Double:
    return bytesOf<double>(v);
  case E::Float16:
    return bytesOf<uint16_t>(floatToHalf(float(v)));
  case E::Int8:
    return bytesOf<int8_t>(v);
  case E::Int16:
    return bytesOf<int16_t>(v);
  case E::Int32:
    return bytesOf<int32_t>(v);
  case E::Int64:
    return bytesOf<int64_t>(v);
  case E::UInt8:
    return bytesOf<uint8_t>(v);
  case E::UInt16:
    return bytesOf<uint16_t>(v);
  case E::UInt32:
    return bytesOf<uint32_t>(v);
  case E::UInt64:
    return bytesOf<uint64_t>(v);
  case E::Bool:
    return v == 0 || v == 1 ? bytesOf<uint8_t>(v) : std::nullopt;
  default:
    return std::nullopt;
  }
}

} // namespace

LogicalResult transforms::fixInputs(graph::Model &m, const FixedInputs &fixed,
                                    DiagnosticEngine &diags) {
  graph::Graph &g = m.graph;
  for (const auto &[name, value] : fixed) {
    Value *in = g.findValue(name);
    if (!in || !in->isGraphInput) {
      std::string names;
      for (const Value *v : g.inputs())
        if (!v->constant)
          names += (names.empty() ? "`" : ", `") + v->name + "`";
      return diags.emitAt(m.path, diag::err_fix_input, fmt::format("--fix-input {}", name),
                          fmt::format("the model has no input `{}` (its inputs: {})", name, names));
    }
    // The input's dimensions: one value, so each known one is 1 (a symbolic
    // one becomes 1; an unknown rank, a scalar).
    auto t = std::make_unique<graph::Tensor>();
    t->name = name;
    t->elem = in->type.elem;
    if (in->type.shape)
      for (const graph::Dim &d : *in->type.shape) {
        if (d.known() && d.value != 1)
          return diags.emitAt(m.path, diag::err_fix_input, fmt::format("--fix-input {}", name),
                              fmt::format("input `{}` is {}: --fix-input gives one value, for an "
                                          "input that holds one",
                                          name, in->type.str()));
        t->dims.push_back(1);
      }
    std::optional<std::string> bytes = elementBytes(in->type.elem, value);
    if (!bytes)
      return diags.emitAt(
          m.path, diag::err_fix_input, fmt::format("--fix-input {}", name),
          fmt::format("input `{}` is {}, which cannot hold {}", name, in->type.str(), value));
    t->raw = *bytes;
    g.fixInput(std::move(t));
  }
  return success();
}

LogicalResult transforms::inlineConstantIfs(graph::Model &m, DiagnosticEngine &diags,
                                            CleanupReport &report) {
  graph::Graph &g = m.graph;
  std::vector<std::pair<Node *, bool>> taken;
  for (Node *n : g.topologicalOrder()) {
    const graph::Tensor *cond = constantOf(m, n->input(0));
    if (n->opType != "If" || !n->inDefaultDomain() || !cond)
      continue;
    if (std::optional<double> c = cond->scalar())
      taken.emplace_back(n, *c != 0);
  }
  if (taken.empty())
    return success();
  std::unordered_set<std::string> nodeNames;
  for (const auto &n : g.nodes())
    nodeNames.insert(n->name);
  std::vector<bool> dead(g.nodes().size(), false);
  for (auto [n, then] : taken) {
    const char *attr = then ? "then_branch" : "else_branch";
    std::optional<graph::Subgraph> sub = graph::loadSubgraph(
        *n, attr, m.opsets, m.irVersion, graph::describeNode(m.path, *n), diags);
    if (!sub)
      return failure();
    if (sub->model->graph.outputs().size() != n->outputs.size())
      return diags.emitAt(graph::describeNode(m.path, *n), diag::err_model_subgraph, attr,
                          fmt::format("it has {} outputs and the If {}",
                                      sub->model->graph.outputs().size(), n->outputs.size()));
    Inliner(m, *n, nodeNames).inlineBranch(*sub);
    dead[n->id] = true;
    ++report.branches;
  }
  g.eraseNodes(dead);
  g.relink();
  m.eraseUnusedInitializers();
  if (failed(graph::verifyGraph(g, m.path, diags)))
    return failure();
  graph::inferShapes(m); // the branch's values had no shapes: it was loaded alone
  return success();
}
