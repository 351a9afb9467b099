//===- CompositeMatch.cpp - Finding a framework's composites in a model ----===//
#include "plan/CompositeMatch.h"

#include "ir/graph/OpTraits.h"
#include "plan/PredicateEval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

using namespace tpcc;
using namespace tpcc::plan;
using graph::Node;
using graph::Value;

namespace {

/// What a partial match has bound so far.
struct State {
  std::vector<const Value *> params;
  std::vector<const Node *> nodes;
  std::vector<const ir::PatternTerm *> terms; ///< the term each of `nodes` matched
};

/// Whether two terms say the same (a pattern may write one subexpression
/// twice: LayerNorm's x - mean(x) feeds both the division and the variance).
bool sameTerm(const ir::PatternTerm &a, const ir::PatternTerm &b) {
  if (a.kind != b.kind || a.op != b.op || a.param != b.param || a.value != b.value ||
      a.args.size() != b.args.size() || a.where.has_value() != b.where.has_value() ||
      (a.where && a.where->str() != b.where->str()))
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameTerm(a.args[i], b.args[i]))
      return false;
  return true;
}
using Continue = std::function<bool(State &)>;

/// The number of inputs `n` has, not counting omitted trailing ones.
size_t inputCount(const Node &n) {
  size_t k = n.inputs.size();
  while (k && !n.inputs[k - 1])
    --k;
  return k;
}

bool commutative(const ir::PatternTerm &t) {
  return graph::opTraits("", t.op).commutative && t.args.size() == 2;
}

/// Whether every element of the constant `v` is `k`, within float32 rounding.
bool constantIs(const Value *v, double k) {
  if (!v || !v->constant || v->constant->elem == graph::ElemType::String)
    return false;
  int64_t n = v->constant->numElements();
  if (n == 0 || n > (int64_t(1) << 20))
    return false;
  double tolerance = 4 * std::ldexp(std::max(1.0, std::abs(k)), -24);
  for (int64_t i = 0; i < n; ++i)
    if (!(std::abs(v->constant->at(i) - k) <= tolerance))
      return false;
  return true;
}

std::string name(const Value *v) { return v ? "`" + v->name + "`" : "an absent input"; }

class Matcher {
public:
  Matcher(const ir::Composite &c, const graph::Model &m, bool explain)
      : c(c), m(m), explain(explain) {}

  /// Records why the match that got furthest failed (the first among
  /// equals); `why` makes the text, only when it is asked for.
  template <typename Why> void fail(const State &s, Why why) {
    if (explain && (failure.empty() || s.nodes.size() > depth)) {
      failure = why();
      depth = s.nodes.size();
    }
  }
  std::string failure;

  /// Matches `t` against value `v`, then calls `k` with the extended state;
  /// true as soon as some way of matching makes `k` accept.
  bool term(const ir::PatternTerm &t, const Value *v, State &s, const Continue &k) {
    switch (t.kind) {
    case ir::PatternTerm::Kind::Param: {
      const Value *&bound = s.params[t.param];
      if (bound && bound != v)
        fail(s, [&] {
          return fmt::format("{} is {}, but {} is also {}", c.params[t.param], name(bound),
                             c.params[t.param], name(v));
        });
      if (bound)
        return bound == v && k(s);
      bound = v;
      bool ok = k(s);
      bound = nullptr;
      return ok;
    }
    case ir::PatternTerm::Kind::Constant:
      if (constantIs(v, t.value))
        return k(s);
      fail(s, [&] { return fmt::format("{} is not the constant {}", name(v), t.value); });
      return false;
    case ir::PatternTerm::Kind::Op:
      break;
    }
    const Node *n = v ? v->producer : nullptr;
    if (!n || n->opType != t.op || !(n->domain.empty() || n->domain == "ai.onnx") ||
        n->outputs.empty() || n->outputs[0] != v) {
      fail(s, [&] {
        return n ? fmt::format("{} comes from {} `{}`, not from {}", name(v), n->opType,
                               n->displayName(), t.op)
                 : fmt::format("{} is not computed by a node (the pattern wants {})", name(v),
                               t.op);
      });
      return false;
    }
    if (inputCount(*n) != t.args.size()) {
      fail(s, [&] {
        return fmt::format("`{}` has {} inputs, the pattern's {} has {}", n->displayName(),
                           inputCount(*n), t.op, t.args.size());
      });
      return false;
    }
    if (auto seen = std::find(s.nodes.begin(), s.nodes.end(), n); seen != s.nodes.end())
      // A node matched twice only by the same subexpression written twice.
      return sameTerm(*s.terms[size_t(seen - s.nodes.begin())], t) && k(s);
    if (t.where && !evaluate(*t.where, m, *n)) {
      fail(s, [&] {
        return fmt::format("`{}`: where {} does not hold", n->displayName(), t.where->str());
      });
      return false;
    }
    s.nodes.push_back(n);
    s.terms.push_back(&t);
    std::vector<size_t> order(t.args.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    bool ok = args(t, *n, order, 0, s, k);
    if (!ok && commutative(t)) {
      std::swap(order[0], order[1]);
      ok = args(t, *n, order, 0, s, k);
    }
    s.nodes.pop_back();
    s.terms.pop_back();
    return ok;
  }

private:
  /// Matches argument `order[i]` of `t` against input `i` of `n`, and on.
  bool args(const ir::PatternTerm &t, const Node &n, const std::vector<size_t> &order, size_t i,
            State &s, const Continue &k) {
    if (i == order.size())
      return k(s);
    return term(t.args[order[i]], n.inputs[i], s,
                [&](State &next) { return args(t, n, order, i + 1, next, k); });
  }

  const ir::Composite &c;
  const graph::Model &m;
  bool explain;
  size_t depth = 0;
};

/// Whether every value the chain computes but its root's output is used only
/// by the chain's nodes and is not a graph output; if not, why.
std::string notClosed(const State &s) {
  for (size_t i = 1; i < s.nodes.size(); ++i)
    for (const Value *out : s.nodes[i]->outputs) {
      if (!out)
        continue;
      if (out->isGraphOutput)
        return fmt::format("`{}` (inside the chain) is a graph output", out->name);
      for (const graph::Use &u : out->uses)
        if (!std::count(s.nodes.begin(), s.nodes.end(), u.node))
          return fmt::format("`{}` (inside the chain) is also used by `{}`", out->name,
                             u.node->displayName());
    }
  // The root's other outputs (a Dropout mask) must be unused.
  for (size_t o = 1; o < s.nodes[0]->outputs.size(); ++o)
    if (const Value *out = s.nodes[0]->outputs[o];
        out && (out->isGraphOutput || !out->uses.empty()))
      return fmt::format("the root's output {} `{}` is used", o, out->name);
  return "";
}

} // namespace

std::optional<CompositeMatch> plan::matchComposite(const ir::Composite &c, const graph::Model &m,
                                                   const graph::Node &root, std::string *why) {
  if (root.outputs.empty() || !root.outputs[0])
    return std::nullopt;
  State s;
  s.params.assign(c.params.size(), nullptr);
  std::optional<CompositeMatch> found;
  Matcher matcher(c, m, why != nullptr);
  matcher.term(c.root, root.outputs[0], s, [&](State &done) {
    if (std::string open = notClosed(done); !open.empty()) {
      matcher.fail(done, [&] { return open; });
      return false;
    }
    found = CompositeMatch{&c, &root, done.nodes, done.params};
    return true;
  });
  if (!found && why)
    *why = matcher.failure;
  return found;
}

size_t plan::patternSize(const ir::PatternTerm &t) {
  size_t n = t.kind == ir::PatternTerm::Kind::Op;
  for (const ir::PatternTerm &a : t.args)
    n += patternSize(a);
  return n;
}
