//===- Lookalikes.cpp - Activation-like chains no composite took ----------===//
//
// A product `Mul(a, b)` where one operand is a gate — Sigmoid, HardSigmoid,
// Tanh, Erf, Softplus, Clip or Relu, reached through at most a few ops with
// a constant operand — is how exporters spell SiLU, HardSwish, GELU and Mish.
// When no matched composite holds it, the plan keeps its ops apart (each
// with its own quantizer), and the user should know why: a composite of the
// framework matches but the capabilities do not bind it, the nearest
// composite failed on a detail, or the gate reads another tensor than the
// product's other operand (a squeeze-and-excitation gate, not an activation).
//
//===----------------------------------------------------------------------===//

#include "ir/graph/OpTraits.h"
#include "plan/Plan.h"

#include <fmt/format.h>

using namespace tpcc;
using namespace tpcc::plan;
using graph::Node;
using graph::Value;

namespace {

bool isGate(const Node &n) {
  if (!graph::opTraits(n).gate || !n.input(0) || n.input(0)->constant)
    return false;
  for (size_t k = 1; k < n.inputs.size(); ++k)
    if (n.inputs[k] && !n.inputs[k]->constant)
      return false;
  return true;
}

/// Add/Sub/Mul/Div of a non-constant value and a constant: the non-constant.
const Value *constantArithmetic(const Node &n) {
  if (!graph::opTraits(n).arithmetic || n.inputs.size() != 2 || !n.inputs[0] || !n.inputs[1])
    return nullptr;
  bool c0 = n.inputs[0]->constant != nullptr, c1 = n.inputs[1]->constant != nullptr;
  if (c0 == c1)
    return nullptr;
  return c0 ? n.inputs[1] : n.inputs[0];
}

/// One operand of the product, walked back through gates and constant
/// arithmetic to the value it is computed from.
struct Operand {
  const Value *source = nullptr;
  std::vector<const Node *> nodes; ///< outermost first
  bool gated = false;
  bool inChain = false;
};

Operand walk(const Plan &plan, const Value *v) {
  Operand o;
  for (int depth = 0; depth < 4 && v && v->producer; ++depth) {
    const Node &n = *v->producer;
    const Value *next = isGate(n) ? n.input(0) : constantArithmetic(n);
    if (!next)
      break;
    o.gated |= isGate(n);
    o.inChain |= plan.nodes[n.id].chain >= 0;
    o.nodes.push_back(&n);
    v = next;
  }
  o.source = v;
  return o;
}

std::string text(const Operand &o, const char *source) {
  std::string s = source;
  for (auto it = o.nodes.rbegin(); it != o.nodes.rend(); ++it)
    s = (*it)->opType + "(" + s + (isGate(**it) ? ")" : ", c)");
  return s;
}

/// Why no bound composite took a product.
struct Why {
  std::string text;
  bool compositeMatches = false; ///< a composite matches, but no chain holds it
};

/// Why no bound composite took the product `mul` (or the constant arithmetic
/// right after it): the first composite of the framework that matches
/// there, or the first miss of those rooted in a product.
Why whyNoComposite(const Plan &plan, const Node &mul) {
  const ir::Framework *fw = plan.framework;
  if (!fw || fw->composites.empty())
    return {fmt::format("framework `{}` declares no composites", plan.capabilities->framework)};
  std::vector<const Node *> roots = {&mul};
  const Value *out = mul.outputs.empty() ? nullptr : mul.outputs[0];
  if (out && out->uses.size() == 1 && constantArithmetic(*out->uses[0].node))
    roots.push_back(out->uses[0].node);
  std::string nearest;
  for (const Node *root : roots)
    for (const ir::Composite &c : fw->composites) {
      if (c.root.op != root->opType)
        continue;
      std::string why;
      if (matchComposite(c, *plan.model, *root, &why)) {
        const ir::OpBinding *bound = nullptr;
        for (const ir::OpBinding &b : plan.capabilities->bindings)
          if (b.composite && b.op == c.name)
            bound = &b;
        if (!bound)
          return {fmt::format("composite `{}` matches, but capabilities `{}` bind no opset to it",
                              c.name, plan.capabilities->name),
                  true};
        return {fmt::format("composite `{}` matches, but a larger chain holds some of its nodes",
                            c.name),
                true};
      }
      if (nearest.empty() && root == &mul)
        nearest = fmt::format("the nearest, composite `{}`, fails: {}", c.name, why);
    }
  if (nearest.empty())
    return {fmt::format("no composite of framework `{}` is rooted in `{}`", fw->name, mul.opType)};
  return {nearest};
}

} // namespace

void plan::findLookalikes(Plan &plan) {
  for (const PlanNode &pn : plan.nodes) {
    const Node &n = *pn.node;
    if (pn.chain >= 0 || n.opType != "Mul" || !n.domain.empty() || n.inputs.size() != 2 ||
        !n.inputs[0] || !n.inputs[1] || n.inputs[0]->constant || n.inputs[1]->constant)
      continue;
    Operand a = walk(plan, n.inputs[0]), b = walk(plan, n.inputs[1]);
    if (!(a.gated || b.gated) || a.inChain || b.inChain)
      continue;
    bool same = a.source == b.source;
    ActivationLookalike l;
    l.node = &n;
    l.form = "Mul(" + text(a, "x") + ", " + text(b, same ? "x" : "y") + ")";
    Why why = whyNoComposite(plan, n);
    l.reason = std::move(why.text);
    if (!same && !why.compositeMatches)
      l.reason = fmt::format("its operands are computed from different tensors, {} and {}: a "
                             "gated product (as in squeeze-and-excitation), not an activation",
                             a.source ? "`" + a.source->name + "`" : "nothing",
                             b.source ? "`" + b.source->name + "`" : "nothing");
    plan.lookalikes.push_back(std::move(l));
  }
}
