//===- Fusing.cpp - Fusing groups along producer -> consumer chains ---------===//
//
// A pattern E1 -> ... -> Ek matches elements n1..nk when each ni's opset is
// in Ei and n(i+1) is the only consumer of ni's only output, which is not a
// graph output. An element is a node or a whole composite chain (language.md
// 6.1), which stands for its root: `Conv -> Swish` fuses a Conv with the
// Sigmoid and Mul of the SiLU it feeds. Patterns are tried longest first
// (ties: definition order), each over the nodes in topological order; a node
// joins at most one group.
//
//===----------------------------------------------------------------------===//

#include "plan/Plan.h"

#include "llvm/ADT/StringExtras.h"

#include <fmt/format.h>

#include <algorithm>

using namespace tpcc;
using namespace tpcc::plan;
using graph::Node;
using graph::Value;

namespace {

bool accepts(const std::vector<std::string> &element, const PlanNode &n) {
  return n.opset && !n.innerOfChain &&
         std::binary_search(element.begin(), element.end(), n.opset->name);
}

std::string patternText(const ir::Fusing &f) {
  std::string s;
  for (size_t k = 0; k < f.pattern.size(); ++k) {
    const auto &e = f.pattern[k];
    s += k ? " -> " : "";
    s += e.size() == 1 ? e[0] : "(" + llvm::join(e, " | ") + ")";
  }
  return s;
}

/// The element fed by element `n` (a node or a chain's root), or null with
/// the reason.
const Node *nextInChain(const Plan &plan, const Node &n, std::string *why) {
  auto fail = [&](std::string r) -> const Node * {
    if (why)
      *why = std::move(r);
    return nullptr;
  };
  if (n.outputs.size() != 1 || !n.outputs[0])
    return fail(fmt::format("`{}` has {} outputs", n.displayName(), n.outputs.size()));
  const Value *v = n.outputs[0];
  if (v->isGraphOutput)
    return fail(fmt::format("`{}` is a graph output", v->name));
  // Consumers inside one composite chain count as one, its root.
  const Node *next = nullptr;
  for (const graph::Use &u : v->uses) {
    const Node *e = plan.elementOf(plan.nodes[u.node->id]).node;
    if (next && e != next) {
      next = nullptr;
      break;
    }
    next = e;
  }
  if (!next)
    return fail(fmt::format("`{}` has {} consumers", v->name, v->numConsumerNodes()));
  return next;
}

/// Tries `f` starting at node `start`; returns the chain or an empty vector
/// (with the reason when `why` is given).
std::vector<unsigned> matchAt(const Plan &plan, const ir::Fusing &f, const Node &start,
                              std::string *why) {
  std::vector<unsigned> chain;
  const Node *cur = &start;
  for (size_t k = 0; k < f.pattern.size(); ++k) {
    if (k) {
      cur = nextInChain(plan, *cur, why);
      if (!cur)
        return {};
    }
    const PlanNode &pn = plan.nodes[cur->id];
    if (pn.fusingGroup >= 0) {
      if (why)
        *why = fmt::format("`{}` is already in group {}", cur->displayName(),
                           plan.groups[pn.fusingGroup].id);
      return {};
    }
    if (!accepts(f.pattern[k], pn)) {
      if (why)
        *why = fmt::format("`{}` is {}, not {}", cur->displayName(),
                           pn.opset ? "opset `" + pn.opset->name + "`" : "unmatched",
                           llvm::join(f.pattern[k], " | "));
      return {};
    }
    chain.push_back(cur->id);
  }
  return chain;
}

} // namespace

void plan::findFusingGroups(Plan &plan) {
  std::vector<const ir::Fusing *> patterns;
  for (const ir::Fusing &f : plan.platform->fusings)
    patterns.push_back(&f);
  std::stable_sort(patterns.begin(), patterns.end(), [](const ir::Fusing *a, const ir::Fusing *b) {
    return a->pattern.size() > b->pattern.size();
  });
  const auto &order = plan.model->graph.topologicalOrder();
  for (const ir::Fusing *f : patterns)
    for (const Node *n : order) {
      const PlanNode &pn = plan.nodes[n->id];
      if (pn.fusingGroup >= 0 || !accepts(f->pattern[0], pn))
        continue;
      std::vector<unsigned> chain = matchAt(plan, *f, *n, nullptr);
      if (chain.empty())
        continue;
      FusingGroup g;
      g.id = plan.groups.size();
      g.pattern = f;
      g.nodes = std::move(chain);
      for (unsigned i : g.nodes)
        plan.nodes[i].fusingGroup = int(g.id);
      plan.groups.push_back(std::move(g));
    }
  // Number groups in the order of their first node, so ids read top-down.
  std::vector<unsigned> perm(plan.groups.size());
  for (unsigned k = 0; k < perm.size(); ++k)
    perm[k] = k;
  std::vector<unsigned> position(plan.nodes.size());
  for (unsigned k = 0; k < order.size(); ++k)
    position[order[k]->id] = k;
  std::sort(perm.begin(), perm.end(), [&](unsigned a, unsigned b) {
    return position[plan.groups[a].nodes[0]] < position[plan.groups[b].nodes[0]];
  });
  std::vector<FusingGroup> sorted;
  for (unsigned k = 0; k < perm.size(); ++k) {
    sorted.push_back(std::move(plan.groups[perm[k]]));
    sorted.back().id = k;
    for (unsigned i : sorted.back().nodes)
      plan.nodes[i].fusingGroup = int(k);
  }
  plan.groups = std::move(sorted);
}

/// Nodes `k` steps upstream of `n` along single-consumer chains; why each
/// producer that does not lead to `n` does not, in `reasons`.
static void upstream(const Plan &plan, const Node &n, size_t k, std::vector<const Node *> &out,
                     std::vector<std::string> &reasons) {
  if (k == 0) {
    if (std::find(out.begin(), out.end(), &n) == out.end())
      out.push_back(&n);
    return;
  }
  for (const Value *v : plan.elementInputs(plan.nodes[n.id])) {
    if (!v || !v->producer)
      continue;
    std::string why;
    if (nextInChain(plan, *v->producer, &why) == &n)
      upstream(plan, *v->producer, k - 1, out, reasons);
    else if (std::find(reasons.begin(), reasons.end(), why) == reasons.end())
      reasons.push_back(why);
  }
}

std::vector<std::string> plan::explainFusing(const Plan &plan, const PlanNode &pn) {
  std::vector<std::string> lines;
  const Node &n = *pn.node;
  if (pn.fusingGroup >= 0) {
    const FusingGroup &g = plan.groups[pn.fusingGroup];
    std::vector<std::string> names;
    for (unsigned i : g.nodes)
      names.push_back(plan.nodes[i].node->displayName());
    lines.push_back(fmt::format("in fusing group {} ({}): {}", g.id, patternText(*g.pattern),
                                llvm::join(names, " -> ")));
    return lines;
  }
  if (!pn.opset) {
    lines.push_back("not fused: the node matched no opset");
    return lines;
  }
  for (const ir::Fusing &f : plan.platform->fusings)
    for (size_t k = 0; k < f.pattern.size(); ++k) {
      if (!accepts(f.pattern[k], pn))
        continue;
      std::vector<const Node *> starts;
      std::vector<std::string> reasons;
      upstream(plan, n, k, starts, reasons);
      std::string head = fmt::format("{} (as element {}): ", patternText(f), k + 1);
      if (starts.empty()) {
        lines.push_back(head + (reasons.empty()
                                    ? fmt::format("`{}` has no producer", n.displayName())
                                    : llvm::join(reasons, "; ")));
        continue;
      }
      for (const Node *s : starts) {
        std::string why;
        // The start itself is checked by matchAt against element 1.
        if (matchAt(plan, f, *s, &why).empty())
          lines.push_back(head + why);
      }
    }
  if (lines.empty())
    lines.push_back(
        fmt::format("not fused: no fusing pattern mentions opset `{}`", pn.opset->name));
  return lines;
}
