//===- Diagnose.cpp - A quantizer that says where it fails and why ---------===//
#include "quant/search/Diagnose.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

enum class Cause { Clipped, BelowStep, Inherited, Range };

Cause causeOf(const TensorReport &t) {
  if (!t.quantized)
    return Cause::Inherited;
  if (t.clipped >= 0.01)
    return Cause::Clipped;
  if (t.rms < t.scale)
    return Cause::BelowStep;
  return t.ownSqnr >= kPoorSqnrDb ? Cause::Inherited : Cause::Range;
}

} // namespace

quant::ReportsByName quant::activationReports(const QuantizeResult &r) {
  ReportsByName byName;
  for (const TensorReport &t : r.tensors)
    if (!t.weight)
      byName.emplace(t.tensor, &t);
  return byName;
}

double quant::inheritedSqnr(const graph::Value *v, const ReportsByName &byName, int depth) {
  if (!v || v->constant)
    return INFINITY;
  auto it = byName.find(v->name);
  if (it != byName.end() && it->second->measured)
    return it->second->sqnr;
  if (!v->producer || depth > 8)
    return INFINITY;
  double worst = INFINITY;
  for (const graph::Value *x : v->producer->inputs)
    worst = std::min(worst, inheritedSqnr(x, byName, depth + 1));
  return worst;
}

Growth quant::whereItGrows(const TensorReport &t, const plan::Plan &plan,
                           const ReportsByName &byName) {
  Growth best;
  const graph::Value *v = plan.model->graph.findValue(t.tensor);
  double after = t.sqnr;
  for (int step = 0; v && v->producer && step < 400; ++step) {
    const graph::Node *n = v->producer;
    const graph::Value *worstIn = nullptr;
    double before = INFINITY;
    for (const graph::Value *in : n->inputs) {
      double s = inheritedSqnr(in, byName);
      if (in && !in->constant && (!worstIn || s < before)) {
        worstIn = in;
        before = s;
      }
    }
    if (!worstIn)
      break;
    if (std::isfinite(before) && before - after > best.from - best.to)
      best = Growth{n, before, after};
    v = worstIn;
    after = before;
  }
  return best;
}

namespace {

/// Why an op magnifies its input's error, for the ops that do it by their
/// nature; empty for the others.
std::string magnifies(const graph::Node &n) {
  if (!n.domain.empty())
    return "";
  if (n.opType == "Log" || n.opType == "Sqrt" || n.opType == "Reciprocal" || n.opType == "Pow")
    return fmt::format(": a {} magnifies the error of values near 0, and the grid before it "
                       "rounds its small values to 0 (a power spectrum, or a range too wide for "
                       "its bits); keep its input float or on a wider grid",
                       n.opType);
  if (n.opType == "Div")
    return ": a Div by a quantized tensor magnifies the error of its small values";
  return "";
}

std::string describe(const TensorReport &t, const Growth &g) {
  if (causeOf(t) == Cause::Inherited && g.node && g.from - g.to >= 10)
    return fmt::format(
        "{}the error comes from the tensors or quantized weights before it, and "
        "grows most at `{}` ({}), from {} to {} dB{}",
        t.quantized ? fmt::format("its own grid loses little ({:.1f} dB): ", t.ownSqnr)
                    : std::string("it is float: "),
        g.node->name, g.node->opType, formatDb(g.from), formatDb(g.to), magnifies(*g.node));
  switch (causeOf(t)) {
  case Cause::Clipped:
    return fmt::format("its grid [{:.4g}, {:.4g}] clips {:.1f} % of its values (largest {:.4g})",
                       t.lo, t.hi, 100 * t.clipped, t.maxAbs);
  case Cause::BelowStep:
    return fmt::format("its values are mostly below one step of its grid (RMS {:.3g}, step {:.3g})",
                       t.rms, t.scale);
  case Cause::Inherited:
    return fmt::format("{}the error comes from the tensors or quantized weights before it",
                       t.quantized
                           ? fmt::format("its own grid loses little ({:.1f} dB): ", t.ownSqnr)
                           : std::string("it is float: "));
  case Cause::Range:
    break;
  }
  return fmt::format("{} bits do not hold its range (largest {:.4g}, RMS {:.3g}; its own grid "
                     "alone gives {:.1f} dB)",
                     t.bits, t.maxAbs, t.rms, t.ownSqnr);
}

/// What the node's options offer instead of its chosen config.
std::string offer(const TensorReport &t, const plan::Plan &plan, const Growth &g) {
  // An error that grows at a node (a Log) is fixed where that node reads.
  if (causeOf(t) == Cause::Inherited && g.node && g.from - g.to >= 10)
    for (const graph::Value *in : g.node->inputs) {
      if (!in || in->constant || !in->producer)
        continue;
      const plan::PlanNode &pn = plan.elementOf(plan.nodes[in->producer->id]);
      if (!pn.options.options || !pn.config().activation.quantize)
        continue;
      std::optional<unsigned> i = nextCandidate(pn);
      if (!i)
        continue;
      const ir::OpConfig &c = pn.options.options->configs[*i];
      return fmt::format(
          "the platform offers {} for what `{}` reads: --choose {}={} (or "
          "`--min-sqnr {}` chooses such candidates)",
          c.activation.quantize ? fmt::format("{}-bit activations", c.activation.bits)
                                : std::string("float"),
          g.node->name, pn.node->displayName(), pn.options.configId(*i), kPoorSqnrDb);
    }
  const plan::PlanNode *pn = producerOf(plan, t);
  if (pn && pn->options.options && t.quantized) {
    const ir::Options &o = *pn->options.options;
    if (std::optional<unsigned> i = widerCandidate(*pn))
      return fmt::format("the platform offers {}-bit activations here: --choose {}={} (or "
                         "`--min-sqnr {}` chooses such candidates)",
                         o.configs[*i].activation.bits, t.node, pn->options.configId(*i),
                         kPoorSqnrDb);
    if (std::optional<unsigned> i = floatCandidate(*pn))
      return fmt::format("the platform can leave it float: --choose {}={} (or `--min-sqnr {}` "
                         "chooses it)",
                         t.node, pn->options.configId(*i), kPoorSqnrDb);
  }
  if (!t.quantized)
    return "see the tensors before it";
  if (causeOf(t) == Cause::Clipped)
    return "a threshold that does not clip keeps the range: a recipe with "
           "`activation_threshold: no_clipping`";
  return "the platform offers no wider grid for it";
}

} // namespace

const plan::PlanNode *quant::producerOf(const plan::Plan &plan, const TensorReport &t) {
  for (const plan::PlanNode &n : plan.nodes)
    if (n.node && n.node->name == t.node && !n.innerOfChain)
      return &n;
  return nullptr;
}

std::optional<unsigned> quant::widerCandidate(const plan::PlanNode &node) {
  if (!node.options.options)
    return std::nullopt;
  const ir::OpConfig &chosen = node.config();
  const std::vector<ir::OpConfig> &configs = node.options.options->configs;
  std::optional<unsigned> best;
  for (unsigned i = 0; i < configs.size(); ++i) {
    const ir::OpConfig &c = configs[i];
    if (!c.activation.quantize || c.activation.bits <= chosen.activation.bits ||
        !(c.weights == chosen.weights) || c.slots != chosen.slots)
      continue;
    if (!best || c.activation.bits < configs[*best].activation.bits)
      best = i;
  }
  return best;
}

/// Whether config `c` keeps each weight `node`'s chosen config quantizes on
/// as many bits or more (float: more than any): a weight-only candidate with
/// narrower weights is no widening.
static bool keepsWeights(const plan::PlanNode &node, const ir::OpConfig &c) {
  const ir::OpConfig &chosen = node.config();
  for (const plan::PlanWeight &w : node.weights) {
    if (!w.quantize)
      continue;
    const ir::AttrConfig &now = chosen.weightConfig(w.slot), &then = c.weightConfig(w.slot);
    if ((then.quantize ? then.bits : INT_MAX) < (now.quantize ? now.bits : INT_MAX))
      return false;
  }
  return true;
}

std::optional<unsigned> quant::floatCandidate(const plan::PlanNode &node) {
  if (!node.options.options || !node.config().activation.quantize)
    return std::nullopt;
  const std::vector<ir::OpConfig> &configs = node.options.options->configs;
  for (unsigned i = 0; i < configs.size(); ++i)
    if (!configs[i].activation.quantize && keepsWeights(node, configs[i]))
      return i;
  return std::nullopt;
}

std::optional<unsigned> quant::nextCandidate(const plan::PlanNode &node) {
  if (std::optional<unsigned> i = widerCandidate(node))
    return i;
  return floatCandidate(node);
}

void quant::warnPoorTensors(const QuantizeResult &r, const plan::Plan &plan, llvm::StringRef where,
                            DiagnosticEngine &diags) {
  std::vector<const TensorReport *> poor;
  for (const TensorReport &t : r.tensors)
    if (!t.weight && t.measured && !std::isinf(t.sqnr) && t.sqnr < kPoorSqnrDb)
      poor.push_back(&t);
  // Tensors whose own grid is the cause first (where to act), then those
  // that inherit the error; worst first within each.
  auto inherits = [](const TensorReport *t) { return causeOf(*t) == Cause::Inherited; };
  std::stable_sort(poor.begin(), poor.end(), [&](const TensorReport *a, const TensorReport *b) {
    return std::make_pair(inherits(a), a->sqnr) < std::make_pair(inherits(b), b->sqnr);
  });
  ReportsByName byName = activationReports(r);
  for (size_t k = 0; k < poor.size() && k < kMaxPoorTensors; ++k) {
    const TensorReport &t = *poor[k];
    Growth g = plan.model ? whereItGrows(t, plan, byName) : Growth{};
    diags.emitAt(where.str(), diag::warn_quant_poor_tensor, t.tensor, fmt::format("{:.1f}", t.sqnr),
                 kPoorSqnrDb, describe(t, g), offer(t, plan, g));
  }
  if (poor.size() > kMaxPoorTensors)
    diags.emitAt(where.str(), diag::note_quant_more_poor_tensors, poor.size() - kMaxPoorTensors,
                 kPoorSqnrDb);
}
