//===- QualityTarget.cpp - Quantize to a quality target (--min-sqnr) -------===//
#include "quant/pipeline/QualityTarget.h"
#include "quant/pipeline/ThresholdChoice.h"
#include "quant/ptq/Measure.h"
#include "quant/search/Diagnose.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

using namespace tpcc;
using namespace tpcc::quant;

namespace {

/// Whether every node reading `v` takes `bits`-bit inputs: a float node
/// does, and so do an If, Loop or Scan (its subgraphs, which the plan does
/// not enter, compute in float) and a Shape or Size (it reads no values); a
/// quantizing or preserving one when its config lists the width (a
/// composite's inner nodes as their root). Float values (kFloatBits) any
/// node reads but a preserving one whose outputs some node reads quantized
/// (data movement passes float values on; a quantizing reader after it
/// would read them on no grid).
bool readersAccept(const plan::Plan &plan, const graph::Value &v, int bits, int depth = 0) {
  for (const graph::Use &u : v.uses) {
    const plan::PlanNode &reader = plan.elementOf(plan.nodes[u.node->id]);
    bool noValues =
        u.node->inDefaultDomain() && (u.node->opType == "Shape" || u.node->opType == "Size");
    if (!reader.options.options || u.node->hasSubgraphs() || noValues)
      continue;
    const ir::OpConfig &c = reader.config();
    if (!c.activation.quantize && !c.preserving)
      continue;
    if (bits == kFloatBits) {
      if (!c.preserving)
        continue;
      if (depth >= 16 || u.node->input(0) != &v)
        return false;
      for (const graph::Value *o : u.node->outputs)
        if (o && !readersAccept(plan, *o, bits, depth + 1))
          return false;
      continue;
    }
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

/// Where the target applies: the model's outputs, or the tensors of
/// `--min-sqnr-at` (measured as the outputs are).
using Targets = std::vector<const graph::Value *>;
Targets targetsOf(const QuantizeOutcome &out, const std::vector<std::string> &at) {
  Targets targets;
  if (at.empty()) {
    for (const graph::Value *v : out.floatModel->graph.outputs())
      targets.push_back(v);
    return targets;
  }
  for (const std::string &name : at) {
    ReadTensor read = parseReadTensor(name, out.floatModel->graph);
    if (const graph::Value *v = out.floatModel->graph.findValue(read.tensor))
      targets.push_back(v);
  }
  return targets;
}

/// The lowest SQNR of the targets (every one is measured).
double outputSqnr(const QuantizeOutcome &out, const Targets &targets) {
  double worst = INFINITY;
  for (const graph::Value *v : targets)
    worst = std::min(worst, outputSqnr(out, *v));
  return worst;
}

/// How far the targets fall short of `db`, summed: a round gains when it
/// shrinks, though a target that a grid caps stays where it is.
double outputShortfall(const QuantizeOutcome &out, const Targets &targets, double db) {
  double sum = 0;
  for (const graph::Value *v : targets) {
    double worst = outputSqnr(out, *v);
    if (worst != INFINITY && !std::isnan(worst))
      sum += std::max(0.0, db - std::max(worst, -100.0));
  }
  return sum;
}

/// The values the targets that keep less than `db` are computed from: a
/// grid elsewhere only feeds targets that meet it, and widening it gains
/// nothing.
std::set<const graph::Value *> shortCone(const QuantizeOutcome &out, const Targets &targets,
                                         double db) {
  std::set<const graph::Value *> cone;
  std::vector<const graph::Value *> work;
  for (const graph::Value *v : targets)
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

/// The widening of activation `t`'s node one step: the candidate with the
/// next wider grid, else one that leaves it float (its readers then read
/// float values, as ONNX Runtime runs them). None when it cannot widen: no
/// such candidate, a reader that does not take the width, a node the user
/// chose for.
std::optional<TargetChoice> widening(const QuantizeOutcome &out, const TensorReport &t,
                                     const std::set<std::string> &fixed) {
  const graph::Value *v = out.floatModel->graph.findValue(t.tensor);
  const plan::PlanNode *pn = producerOf(out.plan, t);
  if (!v || !pn || fixed.count(t.node))
    return std::nullopt;
  std::optional<unsigned> wider = nextCandidate(*pn);
  if (!wider)
    return std::nullopt;
  const ir::OpConfig &c = pn->options.options->configs[*wider];
  int bits = c.activation.quantize ? c.activation.bits : kFloatBits;
  if (!readersAccept(out.plan, *v, bits))
    return std::nullopt;
  return TargetChoice{t.tensor, t.node, pn->options.configId(*wider),
                      t.bits,   bits,   std::min(t.ownSqnr, t.worstSampleOwnSqnr),
                      0,        {}};
}

/// A model input has no candidates of its own; it stays float when every
/// node that computes with its values computes in float (Plan::valueReaders,
/// as the planner decides). The widening of input `v`'s grid: each such
/// node that quantizes takes a candidate that leaves it float (added to
/// `choices`). False when some node cannot: no such candidate, a node the
/// user chose for, a NoQuantization set (it reads the grid), readers of its
/// output that do not take float values, or no reader at all.
bool inputWidenings(const QuantizeOutcome &out, const graph::Value &v,
                    const std::set<std::string> &fixed, std::vector<TargetChoice> &choices) {
  std::vector<const plan::PlanNode *> readers;
  if (!out.plan.valueReaders(v, readers))
    return false;
  for (const plan::PlanNode *reader : readers) {
    if (!reader->options.options)
      return false;
    const ir::OpConfig &c = reader->config();
    if (!c.activation.quantize) {
      const auto &all = reader->options.options->configs;
      if (std::none_of(all.begin(), all.end(),
                       [](const ir::OpConfig &k) { return k.activation.quantize; }))
        return false; // a NoQuantization set reads the input's grid
      continue;       // chosen to compute in float
    }
    std::optional<unsigned> f = floatCandidate(*reader);
    if (!f || fixed.count(reader->node->name))
      return false;
    for (const graph::Value *o : reader->node->outputs)
      if (o && !readersAccept(out.plan, *o, kFloatBits))
        return false;
    const graph::Value *o = reader->node->outputs.empty() ? nullptr : reader->node->outputs[0];
    choices.push_back(TargetChoice{o ? o->name : v.name, reader->node->name,
                                   reader->options.configId(*f), c.activation.bits, kFloatBits, 0,
                                   0, v.name});
  }
  return true;
}

/// The narrowest of the weights `pn`'s chosen config quantizes, under config
/// `c` (kFloatBits: float); 0 when it quantizes none.
int narrowestWeight(const plan::PlanNode &pn, const ir::OpConfig &c) {
  int bits = 0;
  for (const plan::PlanWeight &w : pn.weights)
    if (w.quantize) {
      const ir::AttrConfig &a = c.weightConfig(w.slot);
      int b = a.quantize ? a.bits : kFloatBits;
      bits = bits ? std::min(bits, b) : b;
    }
  return bits;
}

/// The candidate of `pn`'s options with the next wider weights: each weight
/// its chosen config quantizes on as many bits or more, the narrowest on
/// more (fewest first), the chosen activation kept when such a candidate
/// keeps it. None when there is no such candidate.
std::optional<unsigned> widerWeights(const plan::PlanNode &pn) {
  if (!pn.options.options)
    return std::nullopt;
  const ir::OpConfig &chosen = pn.config();
  int now = narrowestWeight(pn, chosen);
  if (!now)
    return std::nullopt;
  const std::vector<ir::OpConfig> &configs = pn.options.options->configs;
  std::optional<unsigned> best;
  auto key = [&](unsigned i) {
    return std::make_pair(narrowestWeight(pn, configs[i]),
                          !(configs[i].activation == chosen.activation));
  };
  for (unsigned i = 0; i < configs.size(); ++i) {
    bool wider = narrowestWeight(pn, configs[i]) > now;
    for (const plan::PlanWeight &w : pn.weights) {
      const ir::AttrConfig &a = configs[i].weightConfig(w.slot), &b = chosen.weightConfig(w.slot);
      wider &= !w.quantize || !a.quantize || a.bits >= b.bits;
    }
    if (wider && (!best || key(i) < key(*best)))
      best = i;
  }
  return best;
}

/// The nodes whose quantized weights lose more than `bar` dB, as widenings.
/// What a node's weights lose is estimated from the measured SQNRs: the
/// error its output (or its fusing group's, up to the first measured
/// output) has beyond its inputs' error and its own grid's, when that is
/// kMinWeightShare of the output's error or more (a Conv fused with a ReLU,
/// whose 8-bit kernel the ReLU's 16-bit grid cannot help; a deep network
/// whose every kernel adds its part). Each takes the candidate with the
/// next wider quantized weights (ort_cpu's 16-bit kernels; float weights
/// come only with a float activation, as a grid widens), provided the
/// readers of its output accept the candidate's activation. Only outputs in
/// `cone` count.
std::vector<TargetChoice> weightWidenings(const QuantizeOutcome &out, double bar,
                                          const std::set<const graph::Value *> &cone,
                                          const std::set<std::string> &fixed) {
  ReportsByName byName = activationReports(out.result);
  auto power = [](double db) { return std::isfinite(db) ? std::pow(10.0, -db / 10) : 0.0; };
  std::vector<TargetChoice> widened;
  for (const plan::PlanNode &pn : out.plan.nodes) {
    if (!pn.node || pn.innerOfChain || fixed.count(pn.node->name) || pn.node->outputs.empty())
      continue;
    std::optional<unsigned> wider = widerWeights(pn);
    if (!wider || narrowestWeight(pn, pn.options.options->configs[*wider]) == kFloatBits)
      continue;
    // The first measured output: the node's, or its fusing group's.
    const graph::Value *o = pn.node->outputs[0];
    for (int step = 0; o && !byName.count(o->name) && step < 4; ++step) {
      const graph::Node *next = o->uses.size() == 1 ? o->uses[0].node : nullptr;
      bool fused =
          next && pn.fusingGroup >= 0 && out.plan.nodes[next->id].fusingGroup == pn.fusingGroup;
      o = fused && !next->outputs.empty() ? next->outputs[0] : nullptr;
    }
    auto r = o ? byName.find(o->name) : byName.end();
    if (r == byName.end() || !r->second->measured || !r->second->quantized || !cone.count(o))
      continue;
    const TensorReport &t = *r->second;
    double in = INFINITY;
    for (const graph::Value *x : out.plan.elementInputs(pn))
      in = std::min(in, inheritedSqnr(x, byName));
    double lost = power(t.sqnr) - power(in) - power(t.ownSqnr);
    if (!(lost > 0) || !(lost >= kMinWeightShare * power(t.sqnr)) ||
        !(-10 * std::log10(lost) < bar))
      continue;
    const ir::OpConfig &c = pn.options.options->configs[*wider];
    int bits = c.activation.quantize ? c.activation.bits : kFloatBits;
    if (o == pn.node->outputs[0] && !(c.activation == pn.config().activation) &&
        !readersAccept(out.plan, *o, bits))
      continue;
    TargetChoice choice{t.tensor,
                        pn.node->name,
                        pn.options.configId(*wider),
                        narrowestWeight(pn, pn.config()),
                        narrowestWeight(pn, c),
                        t.sqnr,
                        0,
                        {}};
    choice.weights = true;
    choice.inputsSqnr = in;
    widened.push_back(std::move(choice));
  }
  return widened;
}

/// Adds `c` to `widened` unless its node is there already (a node with
/// several outputs widens once).
void addWidening(std::vector<TargetChoice> &widened, TargetChoice c) {
  if (std::none_of(widened.begin(), widened.end(),
                   [&](const TargetChoice &w) { return w.node == c.node; }))
    widened.push_back(std::move(c));
}

/// The activations in `cone` whose own grid keeps less than `own` dB, as
/// widenings; in `stuck`, those that cannot widen.
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
    std::vector<TargetChoice> viaReaders;
    if (v && !v->producer && inputWidenings(out, *v, fixed, viaReaders) && !viaReaders.empty()) {
      for (TargetChoice &c : viaReaders) {
        c.sqnrBefore = ownDb;
        c.input = v->name;
        addWidening(widened, std::move(c));
      }
      continue;
    }
    if (std::optional<TargetChoice> c = widening(out, t, fixed))
      addWidening(widened, std::move(*c));
    else
      stuck.push_back(t.tensor);
  }
  return widened;
}

/// The quantized activations in the cone of values `g` is computed from, as
/// widenings: those it reads directly or through float nodes (`whole`
/// false), or every one back to the model's inputs (`whole`). None when the
/// whole cone holds more than kMaxGrowthCone quantized activations.
std::vector<TargetChoice> coneWidenings(const QuantizeOutcome &out, const ReportsByName &byName,
                                        const graph::Node &g, bool whole,
                                        const std::set<std::string> &fixed) {
  std::vector<TargetChoice> widened;
  std::vector<const graph::Value *> work(g.inputs.begin(), g.inputs.end());
  std::set<const graph::Value *> seen;
  size_t quantized = 0;
  while (!work.empty()) {
    const graph::Value *in = work.back();
    work.pop_back();
    if (!in || in->constant || !seen.insert(in).second)
      continue;
    auto r = byName.find(in->name);
    bool isQuantized = r != byName.end() && r->second->quantized;
    if (isQuantized) {
      if (whole && ++quantized > kMaxGrowthCone)
        return {};
      if (std::optional<TargetChoice> c = widening(out, *r->second, fixed))
        addWidening(widened, std::move(*c));
    }
    if ((whole || !isQuantized) && in->producer) {
      if (seen.size() >= 4 * kMaxGrowthCone) {
        if (whole)
          return {}; // a network's cone, not a front-end's
        continue;
      }
      work.insert(work.end(), in->producer->inputs.begin(), in->producer->inputs.end());
    }
  }
  return widened;
}

/// For each target below `db`: the node across which its error grows most
/// (Diagnose's whereItGrows, kMinTargetGrowthDb or more) reads grids that
/// it magnifies (a Log of small values, a filter bank over a spectrum's
/// weak bins), however well they keep their own values: the quantized
/// activations it reads, directly or through float nodes, widen one step.
/// A node that destroys the signal (kDestroyingGrowthDb or more: a Log
/// whose small inputs round to 0) magnifies the error of every grid before
/// it: its whole cone widens, when a front-end's few grids make it (at most
/// kMaxGrowthCone). `onlyDestroying`: only those.
std::vector<TargetChoice> growthWidenings(const QuantizeOutcome &out, const Targets &targets,
                                          double db, const std::set<std::string> &fixed,
                                          bool onlyDestroying) {
  ReportsByName byName = activationReports(out.result);
  std::vector<TargetChoice> widened;
  for (const graph::Value *o : targets) {
    auto it = byName.find(o->name);
    if (it == byName.end() || !it->second->measured || outputSqnr(out, *o) >= db)
      continue;
    Growth g = whereItGrows(*it->second, out.plan, byName);
    if (!g.node || !(g.from - g.to >= kMinTargetGrowthDb))
      continue;
    // It destroys the signal when its own grid does not (a Sigmoid's grid
    // too coarse for small probabilities is widened as any grid is).
    double own = INFINITY;
    for (const graph::Value *o : g.node->outputs)
      if (auto r = o ? byName.find(o->name) : byName.end();
          r != byName.end() && r->second->quantized)
        own = std::min({own, r->second->ownSqnr, r->second->worstSampleOwnSqnr});
    std::vector<TargetChoice> cone;
    if (g.from - g.to >= kDestroyingGrowthDb && own >= g.to + kDestroyingGrowthDb)
      cone = coneWidenings(out, byName, *g.node, /*whole=*/true, fixed);
    if (cone.empty() && !onlyDestroying)
      cone = coneWidenings(out, byName, *g.node, /*whole=*/false, fixed);
    for (TargetChoice &c : cone)
      addWidening(widened, std::move(c));
  }
  return widened;
}

/// Every tensor of `--min-sqnr-at` names a value of the model that was
/// measured (an activation or an output, not a weight or a constant).
LogicalResult checkTargets(const QuantizeOutcome &out, const std::vector<std::string> &at,
                           const std::string &model, DiagnosticEngine &diags) {
  for (const std::string &text : at) {
    std::string name = parseReadTensor(text, out.floatModel->graph).tensor;
    const graph::Value *v = out.floatModel->graph.findValue(name);
    bool measured = false;
    for (const TensorReport &t : out.result.tensors)
      measured |= !t.weight && t.measured && t.tensor == name;
    if (measured)
      continue;
    if (!v) {
      std::vector<std::string> names;
      for (const auto &value : out.floatModel->graph.values())
        if (!value->constant)
          names.push_back(value->name);
      return diags.emitAt(model, diag::err_quant_target_tensor, name,
                          "the model has no tensor of that name" + didYouMean(name, names));
    }
    return diags.emitAt(model, diag::err_quant_target_tensor, name,
                        v->constant ? "it is a constant (a weight), not an activation"
                                    : "it carries no values the quantized model computes "
                                      "(an integer tensor, or one the clean-up removed)");
  }
  return success();
}

} // namespace

LogicalResult quant::quantizeToTarget(QuantizeRequest r, double db, QuantizeOutcome &out,
                                      TargetResult &result, DiagnosticEngine &diags) {
  result.target = db;
  result.at = r.measureAlso;
  if (r.recipe.mixedPrecision.enabled)
    return diags.emitAt(r.model, diag::err_quant_unsupported,
                        "--min-sqnr and the recipe's mixed_precision both choose the candidates: "
                        "use one of them");
  std::set<std::string> fixed; // nodes the user chose for
  for (const auto &choice : r.choose)
    fixed.insert(choice.first);
  // A node a round widened may widen again (16 bits, then float): its entry
  // in r.choose changes.
  std::map<std::string, size_t> chosenAt;
  // Every round is quiet: the diagnostics of the outcome kept are reported
  // at the end.
  r.progress = nullptr;
  r.training = nullptr;
  r.phaseDone = nullptr;
  std::vector<Diagnostic> keptDiags;
  std::unique_ptr<ThresholdChoiceReport> choice;
  double keptShortfall = INFINITY;
  size_t keptChoices = 0;
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
    // Round 1 chose the activation threshold method (a recipe listing
    // several): the later rounds keep it, and the outcome kept shows it.
    if (const ThresholdChoiceReport *c = trial.reportOf<ThresholdChoiceReport>()) {
      choice = std::make_unique<ThresholdChoiceReport>(*c);
      r.recipe.activationThreshold = c->chosen;
      r.recipe.activationThresholdChoices.clear();
    }
    // The best round so far is kept: widenings that do not gain are undone
    // at the end (a grid that cannot widen may cap an output whatever else
    // widens), but the rounds go on, since a later round may gain.
    if (round == 1 && failed(checkTargets(trial, r.measureAlso, r.model, diags)))
      return failure();
    Targets targets = targetsOf(trial, r.measureAlso);
    double shortfall = outputShortfall(trial, targets, db);
    bool met = outputSqnr(trial, targets) >= db;
    bool kept = round == 1 || shortfall <= keptShortfall - kMinTargetGainDb || met;
    if (kept) {
      keptDiags = quiet.getDiagnostics();
      keptShortfall = shortfall;
      keptChoices = result.choices.size();
      out = std::move(trial);
      if (met)
        break;
    }
    if (round == kMaxTargetRounds)
      break;
    // `trial` moved into `out`; `targets` still point into its float model.
    const QuantizeOutcome &last = kept ? out : trial;
    // Widen the grids that keep less than the target on their own. When none
    // can, raise the bar: the errors of many grids add up, and a layer may
    // amplify the error of its input.
    std::set<const graph::Value *> cone = shortCone(last, targets, db);
    std::vector<std::string> ignored;
    std::vector<TargetChoice> widened = widenings(last, db, cone, fixed, ignored);
    // A node that destroys the signal (a Log of powers that round to 0)
    // widens what it is computed from in the same round.
    std::vector<TargetChoice> destroying =
        growthWidenings(last, targets, db, fixed, /*onlyDestroying=*/true);
    double bar = db;
    for (int k = 1; widened.empty() && destroying.empty() && k < kMaxTargetRounds; ++k) {
      bar = db + kTargetStepDb * k;
      widened = widenings(last, bar, cone, fixed, ignored);
    }
    // Weights that lose more than the grids' bar widen with them.
    for (TargetChoice &c : weightWidenings(last, bar, cone, fixed))
      addWidening(widened, std::move(c));
    for (TargetChoice &c : destroying)
      addWidening(widened, std::move(c));
    // Every grid keeps its own values well: widen what the node where an
    // output's error grows most reads (a Log of small values).
    if (widened.empty())
      widened = growthWidenings(last, targets, db, fixed, /*onlyDestroying=*/false);
    if (widened.empty())
      break;
    for (TargetChoice &c : widened) {
      c.round = round;
      auto [at, added] = chosenAt.try_emplace(c.node, r.choose.size());
      if (added)
        r.choose.emplace_back(c.node, c.config);
      else
        r.choose[at->second].second = c.config;
      result.choices.push_back(c);
    }
  }
  // Undo the widenings made after the best round.
  if (keptChoices < result.choices.size()) {
    result.undone = result.choices.size() - keptChoices;
    result.undoneRound = result.choices[keptChoices].round;
  }
  result.choices.resize(keptChoices);
  Targets targets = targetsOf(out, r.measureAlso);
  result.reached = outputSqnr(out, targets);
  widenings(out, db, shortCone(out, targets, db), fixed, result.stuck);
  if (choice && !out.reportOf<ThresholdChoiceReport>())
    out.stages.push_back(std::move(choice));
  for (const Diagnostic &d : keptDiags)
    diags.report(d);
  return success();
}

void quant::printTarget(const TargetResult &result, llvm::raw_ostream &os) {
  std::set<std::string> tensors; // a tensor may widen twice: 16 bits, then float
  for (const TargetChoice &c : result.choices)
    tensors.insert(c.tensor);
  std::string at = "the outputs";
  if (!result.at.empty()) {
    at.clear();
    for (const std::string &name : result.at)
      at += (at.empty() ? "`" : ", `") + name + "`";
  }
  os << fmt::format("  quality target {} dB at {}: {} ({:.1f} dB); {} tensor{} "
                    "widened in {} round{}",
                    result.target, at, result.reached >= result.target ? "met" : "not met",
                    result.reached, tensors.size(), tensors.size() == 1 ? "" : "s", result.rounds,
                    result.rounds == 1 ? "" : "s");
  if (result.reached < result.target && !result.stuck.empty())
    os << fmt::format("; {} tensor{} cannot widen (first: `{}`)", result.stuck.size(),
                      result.stuck.size() == 1 ? "" : "s", result.stuck.front());
  os << "\n";
  if (result.undone)
    os << fmt::format("    {} widening{} from round {} on gained less than {} dB at {}: "
                      "undone\n",
                      result.undone, result.undone == 1 ? "" : "s", result.undoneRound,
                      kMinTargetGainDb, result.at.empty() ? "the outputs" : "the targets");
  size_t shown = 0;
  for (const TargetChoice &c : result.choices) {
    if (++shown > 8) {
      os << fmt::format("    ... and {} more (the plan lists every choice)\n",
                        result.choices.size() - 8);
      break;
    }
    if (c.weights) {
      os << fmt::format("    round {}: {} -> {} ({} -> {}-bit weights; `{}` kept {:.1f} dB, its "
                        "inputs {})\n",
                        c.round, c.node, c.config, c.fromBits, c.toBits, c.tensor, c.sqnrBefore,
                        std::isfinite(c.inputsSqnr) ? fmt::format("{:.1f} dB", c.inputsSqnr)
                                                    : std::string("exact"));
      continue;
    }
    std::string whose = c.input.empty()
                            ? std::string("its own grid")
                            : fmt::format("it reads model input `{}`, whose grid", c.input);
    os << fmt::format("    round {}: {} -> {} ({} -> {}; {} kept {:.1f} dB)\n", c.round, c.node,
                      c.config, c.fromBits,
                      c.toBits == kFloatBits ? "float" : fmt::format("{} bits", c.toBits), whose,
                      c.sqnrBefore);
  }
}
