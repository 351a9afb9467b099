//===- Target.cpp - Quantize to a quality target (--min-sqnr) -------------===//
#include "backends/quantize/Target.h"
#include "backends/quantize/Diagnose.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// Whether every node reading `v` takes `bits`-bit inputs: a float node
/// does, and so do an If, Loop or Scan (its subgraphs, which the plan does
/// not enter, compute in float) and a Shape or Size (it reads no values); a
/// quantizing or preserving one when its config lists the width (a
/// composite's inner nodes as their root).
bool readersAccept(const plan::Plan &plan, const graph::Value &v, int bits) {
  for (const graph::Use &u : v.uses) {
    const plan::PlanNode &reader = plan.elementOf(plan.nodes[u.node->id]);
    bool noValues =
        u.node->inDefaultDomain() && (u.node->opType == "Shape" || u.node->opType == "Size");
    if (!reader.options.options || u.node->hasSubgraphs() || noValues)
      continue;
    const ir::OpConfig &c = reader.config();
    if (!c.activation.quantize && !c.preserving)
      continue;
    if (std::find(c.inputBits.begin(), c.inputBits.end(), bits) == c.inputBits.end())
      return false;
  }
  return true;
}

/// The lowest SQNR of the model's outputs on any measured sample (every
/// output is measured).
double outputSqnr(const QuantizeOutcome &out) {
  double worst = INFINITY;
  for (const graph::Value *v : out.floatModel->graph.outputs())
    for (const TensorReport &t : out.result.tensors)
      if (!t.weight && t.measured && t.tensor == v->name)
        worst = std::min({worst, t.sqnr, t.worstSampleSqnr});
  return worst;
}

/// The activations of `out` whose own grid keeps less than `own` dB, as
/// widenings; in `stuck`, those that cannot widen (no wider candidate, a
/// reader that does not take the width, a node already chosen for).
std::vector<TargetChoice> widenings(const QuantizeOutcome &out, double own,
                                    const std::set<std::string> &fixed,
                                    std::vector<std::string> &stuck) {
  std::vector<TargetChoice> widened;
  stuck.clear();
  for (const TensorReport &t : out.result.tensors) {
    double ownDb = std::min(t.ownSqnr, t.worstSampleOwnSqnr);
    if (t.weight || !t.measured || !t.quantized || std::isinf(ownDb) || ownDb >= own)
      continue;
    const plan::PlanNode *pn = producerOf(out.plan, t);
    std::optional<unsigned> wider = pn ? widerCandidate(*pn) : std::nullopt;
    const graph::Value *v = out.floatModel->graph.findValue(t.tensor);
    int bits = wider ? pn->options.options->configs[*wider].activation.bits : 0;
    if (!wider || fixed.count(t.node) || !v || !readersAccept(out.plan, *v, bits)) {
      stuck.push_back(t.tensor);
      continue;
    }
    widened.push_back(
        TargetChoice{t.tensor, t.node, pn->options.configId(*wider), t.bits, bits, ownDb, 0});
  }
  return widened;
}

} // namespace

LogicalResult quant::quantizeToTarget(QuantizeRequest r, double db, QuantizeOutcome &out,
                                      TargetResult &result, DiagnosticEngine &diags) {
  result.target = db;
  if (r.recipe.mixedPrecision.enabled)
    return diags.emitAt(r.model, diag::err_quant_unsupported,
                        "--min-sqnr and the recipe's mixed_precision both choose the candidates: "
                        "use one of them");
  std::set<std::string> fixed; // nodes the user chose for, or a round did
  for (const auto &choice : r.choose)
    fixed.insert(choice.first);
  auto progress = r.progress;
  auto phaseDone = r.phaseDone;
  r.progress = nullptr;
  r.phaseDone = nullptr;
  for (int round = 1; round < kMaxTargetRounds; ++round) {
    // Quiet rounds: their diagnostics are reported only when the round is
    // the last one.
    DiagnosticEngine quiet(diags.getSourceManager());
    out = QuantizeOutcome();
    if (failed(quantizeModel(r, out, quiet)))
      break; // the reporting round below says why
    result.rounds = round;
    result.reached = outputSqnr(out);
    // Widen the grids that keep less than the target on their own. When none
    // can and none is stuck below it, raise the bar: the errors of many
    // grids add up, and a layer may amplify the error of its input. A grid
    // below the target that cannot widen caps what widening can reach.
    std::vector<TargetChoice> widened;
    std::vector<std::string> ignored;
    if (result.reached < db)
      widened = widenings(out, db, fixed, result.stuck);
    for (int k = 1;
         result.reached < db && widened.empty() && result.stuck.empty() && k < kMaxTargetRounds;
         ++k)
      widened = widenings(out, db + kTargetStepDb * k, fixed, ignored);
    if (widened.empty()) {
      for (const Diagnostic &d : quiet.getDiagnostics())
        diags.report(d);
      return success();
    }
    for (TargetChoice &c : widened) {
      c.round = round;
      fixed.insert(c.node);
      r.choose.emplace_back(c.node, c.config);
      result.choices.push_back(c);
    }
  }
  // The rounds ran out (or one failed): quantize once more with every
  // choice made, reporting.
  r.progress = progress;
  r.phaseDone = phaseDone;
  out = QuantizeOutcome();
  if (failed(quantizeModel(r, out, diags)))
    return failure();
  ++result.rounds;
  result.reached = outputSqnr(out);
  widenings(out, db, fixed, result.stuck);
  return success();
}

void quant::printTarget(const TargetResult &result, llvm::raw_ostream &os) {
  os << fmt::format("  quality target {} dB at the outputs: {} ({:.1f} dB); {} tensor{} "
                    "widened in {} round{}",
                    result.target, result.reached >= result.target ? "met" : "not met",
                    result.reached, result.choices.size(), result.choices.size() == 1 ? "" : "s",
                    result.rounds, result.rounds == 1 ? "" : "s");
  if (result.reached < result.target && !result.stuck.empty())
    os << fmt::format("; {} tensor{} cannot widen (first: `{}`)", result.stuck.size(),
                      result.stuck.size() == 1 ? "" : "s", result.stuck.front());
  os << "\n";
  size_t shown = 0;
  for (const TargetChoice &c : result.choices) {
    if (++shown > 8) {
      os << fmt::format("    ... and {} more (the plan lists every choice)\n",
                        result.choices.size() - 8);
      break;
    }
    os << fmt::format("    round {}: {} -> {} ({} -> {} bits; its own grid kept {:.1f} dB)\n",
                      c.round, c.node, c.config, c.fromBits, c.toBits, c.sqnrBefore);
  }
}
