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

/// Output `v`'s SQNR on the measured samples: the lower of pooled and worst
/// sample (+inf when not measured).
double outputSqnr(const QuantizeOutcome &out, const graph::Value &v) {
  double worst = INFINITY;
  for (const TensorReport &t : out.result.tensors)
    if (!t.weight && t.measured && t.tensor == v.name)
      worst = std::min({worst, t.sqnr, t.worstSampleSqnr});
  return worst;
}

/// The lowest SQNR of the model's outputs (every output is measured).
double outputSqnr(const QuantizeOutcome &out) {
  double worst = INFINITY;
  for (const graph::Value *v : out.floatModel->graph.outputs())
    worst = std::min(worst, outputSqnr(out, *v));
  return worst;
}

/// How far the model's outputs fall short of `db`, summed over the outputs:
/// a round gains when it shrinks, though an output that a grid caps stays
/// where it is.
double outputShortfall(const QuantizeOutcome &out, double db) {
  double sum = 0;
  for (const graph::Value *v : out.floatModel->graph.outputs()) {
    double worst = outputSqnr(out, *v);
    if (worst != INFINITY && !std::isnan(worst))
      sum += std::max(0.0, db - std::max(worst, -100.0));
  }
  return sum;
}

/// The values the outputs that keep less than `db` are computed from: a
/// grid elsewhere only feeds outputs that meet the target, and widening it
/// gains nothing.
std::set<const graph::Value *> shortCone(const QuantizeOutcome &out, double db) {
  std::set<const graph::Value *> cone;
  std::vector<const graph::Value *> work;
  for (const graph::Value *v : out.floatModel->graph.outputs())
    if (!(outputSqnr(out, *v) >= db) && cone.insert(v).second)
      work.push_back(v);
  while (!work.empty()) {
    const graph::Value *v = work.back();
    work.pop_back();
    if (v->producer)
      for (const graph::Value *in : v->producer->inputs)
        if (in && cone.insert(in).second)
          work.push_back(in);
  }
  return cone;
}

/// The activations in `cone` whose own grid keeps less than `own` dB, as
/// widenings; in `stuck`, those that cannot widen (no wider candidate, a
/// reader that does not take the width, a node already chosen for).
std::vector<TargetChoice> widenings(const QuantizeOutcome &out, double own,
                                    const std::set<const graph::Value *> &cone,
                                    const std::set<std::string> &fixed,
                                    std::vector<std::string> &stuck) {
  std::vector<TargetChoice> widened;
  stuck.clear();
  for (const TensorReport &t : out.result.tensors) {
    double ownDb = std::min(t.ownSqnr, t.worstSampleOwnSqnr);
    if (t.weight || !t.measured || !t.quantized || std::isinf(ownDb) || ownDb >= own)
      continue;
    const graph::Value *v = out.floatModel->graph.findValue(t.tensor);
    if (v && !cone.count(v))
      continue;
    const plan::PlanNode *pn = producerOf(out.plan, t);
    std::optional<unsigned> wider = pn ? widerCandidate(*pn) : std::nullopt;
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
  // Every round is quiet: the diagnostics of the outcome kept are reported
  // at the end.
  r.progress = nullptr;
  r.phaseDone = nullptr;
  std::vector<Diagnostic> keptDiags;
  double keptShortfall = INFINITY;
  size_t keptChoices = 0, keptChoose = r.choose.size();
  for (int round = 1; round <= kMaxTargetRounds; ++round) {
    DiagnosticEngine quiet(diags.getSourceManager());
    QuantizeOutcome trial;
    if (failed(quantizeModel(r, trial, quiet))) {
      if (round == 1) {
        for (const Diagnostic &d : quiet.getDiagnostics())
          diags.report(d);
        return failure();
      }
      break; // keep the best round that quantized
    }
    result.rounds = round;
    // The best round so far is kept: widenings that do not gain are undone
    // at the end (a grid that cannot widen may cap an output whatever else
    // widens), but the rounds go on, since a later round may gain.
    double shortfall = outputShortfall(trial, db);
    bool met = outputSqnr(trial) >= db;
    bool kept = round == 1 || shortfall <= keptShortfall - kMinTargetGainDb || met;
    if (kept) {
      keptDiags = quiet.getDiagnostics();
      keptShortfall = shortfall;
      keptChoices = result.choices.size();
      keptChoose = r.choose.size();
      out = std::move(trial);
      if (met)
        break;
    }
    if (round == kMaxTargetRounds)
      break;
    const QuantizeOutcome &last = kept ? out : trial; // `trial` moved into `out`
    // Widen the grids that keep less than the target on their own. When none
    // can, raise the bar: the errors of many grids add up, and a layer may
    // amplify the error of its input.
    std::set<const graph::Value *> cone = shortCone(last, db);
    std::vector<std::string> ignored;
    std::vector<TargetChoice> widened = widenings(last, db, cone, fixed, ignored);
    for (int k = 1; widened.empty() && k < kMaxTargetRounds; ++k)
      widened = widenings(last, db + kTargetStepDb * k, cone, fixed, ignored);
    if (widened.empty())
      break;
    for (TargetChoice &c : widened) {
      c.round = round;
      fixed.insert(c.node);
      r.choose.emplace_back(c.node, c.config);
      result.choices.push_back(c);
    }
  }
  // Undo the widenings made after the best round.
  if (keptChoices < result.choices.size()) {
    result.undone = result.choices.size() - keptChoices;
    result.undoneRound = result.choices[keptChoices].round;
  }
  result.choices.resize(keptChoices);
  r.choose.resize(keptChoose);
  fixed.clear();
  for (const auto &choice : r.choose)
    fixed.insert(choice.first);
  result.reached = outputSqnr(out);
  widenings(out, db, shortCone(out, db), fixed, result.stuck);
  for (const Diagnostic &d : keptDiags)
    diags.report(d);
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
  if (result.undone)
    os << fmt::format("    {} widening{} from round {} on gained less than {} dB at the outputs: "
                      "undone\n",
                      result.undone, result.undone == 1 ? "" : "s", result.undoneRound,
                      kMinTargetGainDb);
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
