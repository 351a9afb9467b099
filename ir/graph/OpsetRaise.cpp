//===- OpsetRaise.cpp - Raising a model to ai.onnx opset 21 ourselves -----===//
//
// libonnx 1.12's version converter stops at opset 17; blocked
// DequantizeLinear and the 4-bit types need opset 21 (IR version 10). From
// opset 13 on, few operators change meaning up to 21, and those are moved
// here by their ONNX changelog entries:
//  - opset 18: ReduceMax, ReduceMin, ReduceMean, ReduceProd, ReduceL1,
//    ReduceL2, ReduceLogSum, ReduceLogSumExp and ReduceSumSquare take `axes`
//    as an input instead of an attribute; Split without its `split` input
//    needs `num_outputs`;
//  - opset 20: GridSample's modes `bilinear` and `bicubic` are spelled
//    `linear` and `cubic`.
// Every other change in between adds types or optional inputs and
// attributes whose defaults keep the old meaning. Operators whose meaning
// changed in a way that needs more than a rewrite of the node (DFT's axis
// from opset 20, GroupNormalization's per-channel scale from 21, RoiAlign's
// default coordinates from 16) and any of the changing operators inside a
// subgraph are refused, by name.
//
//===----------------------------------------------------------------------===//
#include "ir/graph/OnnxIO.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

using namespace tpcc;
using namespace tpcc::graph;

namespace {

bool axesBecomeInput(const std::string &op) {
  static const std::set<std::string> ops = {"ReduceMax",    "ReduceMin",       "ReduceMean",
                                            "ReduceProd",   "ReduceL1",        "ReduceL2",
                                            "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  return ops.count(op) > 0;
}

/// The version at which `op` changes in a way raiseOpset rewrites (0: none).
int64_t rewrittenAt(const std::string &op) {
  if (axesBecomeInput(op) || op == "Split")
    return 18;
  return op == "GridSample" ? 20 : 0;
}

/// The version at which `op` changes in a way raiseOpset cannot follow.
int64_t refusedAt(const std::string &op) {
  if (op == "DFT")
    return 20;
  if (op == "GroupNormalization")
    return 21;
  return op == "RoiAlign" ? 16 : 0;
}

bool defaultDomain(const std::string &d) { return d.empty() || d == "ai.onnx"; }

} // namespace

bool graph::canRaiseOpset(const Model &m, int64_t to, std::string &why) {
  int64_t from = m.opsetVersion("").value_or(1);
  if (from >= to)
    return true;
  if (from < 13) {
    why = fmt::format("it imports ai.onnx opset {}; only models from opset 13 are raised", from);
    return false;
  }
  auto changes = [&](const std::string &op, int64_t at) { return at > from && at <= to; };
  for (const auto &n : m.graph.nodes()) {
    if (defaultDomain(n->domain) && changes(n->opType, refusedAt(n->opType))) {
      why = fmt::format("node '{}' ({}) changed meaning at opset {}", n->displayName(), n->opType,
                        refusedAt(n->opType));
      return false;
    }
    for (const SubgraphNode &s : subgraphNodes(*n))
      if (defaultDomain(s.domain) &&
          (changes(s.opType, refusedAt(s.opType)) || changes(s.opType, rewrittenAt(s.opType)))) {
        why = fmt::format("node '{}' ({}) has a {} inside, which changed at opset {}",
                          n->displayName(), n->opType, s.opType,
                          std::max(refusedAt(s.opType), rewrittenAt(s.opType)));
        return false;
      }
  }
  return true;
}

bool graph::raiseOpset(Model &m, int64_t to, std::string &why) {
  if (!canRaiseOpset(m, to, why))
    return false;
  int64_t from = m.opsetVersion("").value_or(1);
  if (from >= to)
    return true;
  Graph &g = m.graph;
  std::vector<Node *> nodes;
  for (const auto &n : g.nodes())
    nodes.push_back(n.get());
  for (Node *n : nodes) {
    if (!defaultDomain(n->domain) || rewrittenAt(n->opType) <= from)
      continue;
    auto attr = std::find_if(n->attributes.begin(), n->attributes.end(),
                             [](const Attribute &a) { return a.name == "axes"; });
    if (axesBecomeInput(n->opType) && attr != n->attributes.end()) {
      auto t = std::make_unique<Tensor>();
      t->elem = ElemType::Int64;
      t->dims = {int64_t(attr->ints.size())};
      t->raw.resize(attr->ints.size() * sizeof(int64_t));
      std::memcpy(t->raw.data(), attr->ints.data(), t->raw.size());
      std::string base = (n->name.empty() ? n->opType : n->name) + "_axes";
      t->name = base;
      for (int k = 1; g.findValue(t->name); ++k)
        t->name = fmt::format("{}_{}", base, k);
      n->inputs.resize(1);
      n->inputs.push_back(g.addConstant(std::move(t)));
      n->attributes.erase(attr);
    } else if (n->opType == "Split" && !n->input(1)) {
      Attribute a;
      a.name = "num_outputs";
      a.type = ir::OnnxAttrType::Int;
      a.i = int64_t(n->outputs.size());
      n->attributes.push_back(std::move(a));
    } else if (n->opType == "GridSample") {
      for (Attribute &a : n->attributes)
        if (a.name == "mode")
          a.s = a.s == "bilinear" ? "linear" : a.s == "bicubic" ? "cubic" : a.s;
    }
  }
  for (OpsetImport &o : m.opsets)
    if (defaultDomain(o.domain))
      o.version = to;
  // Opset 21 comes with IR version 10 (the 4-bit types).
  m.irVersion = std::max<int64_t>(m.irVersion, to >= 21 ? 10 : to >= 19 ? 9 : 8);
  g.relink();
  return true;
}
