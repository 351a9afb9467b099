//===- Verifier.cpp - Graph outputs defined, no cycles, topological order --===//

#include "ir/graph/OnnxIO.h"

#include <functional>
#include <queue>

using namespace tpcc;
using namespace tpcc::graph;

/// A cycle among `pending` nodes (each has an input produced by another
/// pending node), spelled `a -> b -> a`.
static std::string findCycle(const Graph &g, const std::vector<bool> &pending) {
  std::vector<int> state(g.nodes().size(), 0); // 0 new, 1 on stack, 2 done
  std::vector<const Node *> stack;
  std::string cycle;
  // Iterative DFS along "consumes a value produced by" edges.
  for (const auto &start : g.nodes()) {
    if (!pending[start->id] || state[start->id])
      continue;
    std::vector<std::pair<const Node *, size_t>> work{{start.get(), 0}};
    state[start->id] = 1;
    stack.push_back(start.get());
    while (!work.empty()) {
      auto &[n, next] = work.back();
      if (next == n->inputs.size()) {
        state[n->id] = 2;
        stack.pop_back();
        work.pop_back();
        continue;
      }
      const Value *v = n->inputs[next++];
      const Node *p = v ? v->producer : nullptr;
      if (!p || !pending[p->id] || state[p->id] == 2)
        continue;
      if (state[p->id] == 1) {
        // The cycle is p ... n on the stack; print it in data-flow order.
        auto it = std::find(stack.begin(), stack.end(), p);
        std::vector<const Node *> loop(it, stack.end());
        std::reverse(loop.begin(), loop.end());
        for (const Node *x : loop)
          cycle += "'" + x->displayName() + "' -> ";
        return cycle + "'" + loop.front()->displayName() + "'";
      }
      state[p->id] = 1;
      stack.push_back(p);
      work.emplace_back(p, 0);
    }
  }
  return cycle;
}

std::vector<unsigned> graph::dependencyOrder(const std::vector<std::vector<unsigned>> &readers) {
  std::vector<unsigned> waiting(readers.size(), 0), order;
  for (const std::vector<unsigned> &r : readers)
    for (unsigned k : r)
      ++waiting[k];
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<>> ready;
  for (unsigned i = 0; i < readers.size(); ++i)
    if (!waiting[i])
      ready.push(i);
  while (!ready.empty()) {
    unsigned i = ready.top();
    ready.pop();
    order.push_back(i);
    for (unsigned k : readers[i])
      if (--waiting[k] == 0)
        ready.push(k);
  }
  return order;
}

LogicalResult graph::verifyGraph(Graph &g, llvm::StringRef where, DiagnosticEngine &diags) {
  bool ok = true;
  for (const Value *v : g.outputs())
    if (!v->isGraphInput && !v->isInitializer && !v->producer) {
      diags.emitAt(where.str(), diag::err_model_output_undefined, v->name);
      ok = false;
    }
  if (!ok)
    return failure();

  const auto &nodes = g.nodes();
  // Most files are already sorted: keep their order when it is valid.
  bool sorted = true;
  for (const auto &n : nodes)
    for (const Value *v : n->inputs)
      if (v && v->producer && v->producer->id >= n->id)
        sorted = false;
  std::vector<Node *> order;
  order.reserve(nodes.size());
  if (sorted) {
    for (const auto &n : nodes)
      order.push_back(n.get());
    g.setTopologicalOrder(std::move(order));
    return success();
  }
  std::vector<std::vector<unsigned>> readers(nodes.size());
  for (const auto &n : nodes)
    for (const Value *v : n->inputs)
      if (v && v->producer)
        readers[v->producer->id].push_back(n->id);
  for (unsigned id : dependencyOrder(readers))
    order.push_back(nodes[id].get());
  if (order.size() != nodes.size()) {
    std::vector<bool> pending(nodes.size(), true);
    for (const Node *n : order)
      pending[n->id] = false;
    diags.emitAt(where.str(), diag::err_model_cycle, findCycle(g, pending));
    return failure();
  }
  g.setTopologicalOrder(std::move(order));
  return success();
}
