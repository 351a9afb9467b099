//===- Search.cpp - Mixed precision: candidates chosen under budgets --------===//
#include "quant/search/mixed/Search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::mixed;

namespace {

constexpr ir::Resource kResources[] = {ir::Resource::WeightsMemory, ir::Resource::ActivationMemory,
                                       ir::Resource::TotalMemory, ir::Resource::Bops};

/// Bits per byte: ResourceModel counts bits, budgets bytes.
double scaleOf(ir::Resource r) { return r == ir::Resource::Bops ? 1 : 8; }

/// The figures of `model` for `a`, as ResourceKey (total, weights, activation).
ResourceKey keyOf(const plan::ResourceFigures &f) {
  return {f.totalBits(), f.weightsBits, f.activationBits};
}

/// A candidate's bits as refinement compares them.
CandidateBits bitsOf(const ir::OpConfig &c) {
  CandidateBits b;
  b.weightBits = c.weightConfig("kernel").quantize ? c.weightConfig("kernel").bits : 0;
  b.activationBits = c.activation.quantize ? c.activation.bits : 0;
  return b;
}

} // namespace

Settings mixed::resolveSettings(const ir::Recipe &recipe, const ir::MixedPrecision &flags,
                                const ir::Platform &platform, DiagnosticEngine &diags,
                                const std::string &where) {
  Settings s;
  s.mp = recipe.mixedPrecision;
  std::string recipeName = recipe.name.empty() ? "(defaults)" : recipe.name;
  for (ir::Resource r : kResources) {
    size_t i = size_t(r);
    if (s.mp.budget(r))
      s.source[i] = fmt::format("recipe `{}`", recipeName);
    const std::optional<ir::Budget> &flag = flags.budget(r);
    if (!flag)
      continue;
    const std::optional<ir::Budget> &given = s.mp.budget(r);
    if (given && (given->relative != flag->relative || given->value != flag->value))
      diags.emitAt(where, diag::note_mixed_flag_over_recipe, ir::toString(r), flag->text,
                   recipeName, given->text);
    s.mp.budget(r) = flag;
    s.source[i] = ir::flagOf(r);
  }
  if (!s.mp.anyBudget() && s.mp.enabled && platform.resources) {
    const ir::PlatformResources &pr = *platform.resources;
    const std::optional<ir::Budget> *declared[] = {&pr.weightsMemory, &pr.activationMemory,
                                                   &pr.totalMemory};
    for (size_t i = 0; i < 3; ++i)
      if (*declared[i]) {
        s.mp.budget(kResources[i]) = *declared[i];
        s.source[i] = fmt::format("platform `{}`", platform.name);
      }
  }
  return s;
}

namespace {

class Searcher {
public:
  Searcher(const plan::Plan &plan, const Settings &s, const std::vector<bool> &fixed,
           DiagnosticEngine &diags)
      : plan(plan), s(s), fixed(fixed), diags(diags) {}

  LogicalResult run(const ir::Recipe &recipe, rt::Executor &floatEx, CalibrationData &data,
                    const std::function<void(const char *, int64_t, int64_t)> &progress,
                    SearchResult &out);

private:
  LogicalResult resolveBudgets(SearchResult &out);
  AllocationProblem problem(const Sensitivity &sens) const;
  LogicalResult chooseBest(AllocationProblem p, std::vector<unsigned> first, rt::Executor &ex,
                           SensitivityPass &pass,
                           const std::function<unsigned(std::vector<unsigned> &)> &refine,
                           std::vector<unsigned> &choice, SearchResult &out);
  void addConflicts(AllocationProblem &p) const;

  const plan::Plan &plan;
  const Settings &s;
  std::vector<bool> fixed;
  DiagnosticEngine &diags;
  plan::ResourceModel model;
  std::vector<int> layerOf; ///< plan node -> layer, -1
  plan::Assignment current, smallest;
  std::vector<BudgetUse> budgets;
};

LogicalResult Searcher::resolveBudgets(SearchResult &out) {
  plan::ResourceReport report = plan::resourceReport(plan);
  plan::ResourceFigures minFig = model.evaluate(smallest);
  out.before = model.evaluate(current);
  bool ok = true;
  for (ir::Resource r : kResources) {
    const std::optional<ir::Budget> &b = s.mp.budget(r);
    if (!b)
      continue;
    BudgetUse u;
    u.resource = r;
    u.text = b->text;
    u.source = s.source[size_t(r)];
    u.base = plan::memoryBytes(report.base, r);
    u.minimum = plan::memoryBytes(minFig, r);
    u.allowed = b->relative ? b->value * u.base : b->value;
    if (b->relative && u.base <= 0) {
      diags.emitAt(plan.modelName, diag::err_mixed_relative_of_nothing, ir::toString(r), b->text);
      ok = false;
      continue;
    }
    if (u.minimum > u.allowed * (1 + 1e-12)) {
      diags.emitAt(plan.modelName, diag::err_mixed_below_minimum, ir::toString(r), b->text,
                   plan::formatAmount(r, u.allowed), plan::formatAmount(r, u.minimum));
      ok = false;
    }
    budgets.push_back(u);
  }
  out.budgets = budgets;
  return success(ok);
}

AllocationProblem Searcher::problem(const Sensitivity &sens) const {
  AllocationProblem p;
  p.cost = sens.cost;
  p.timeLimitSeconds = s.mp.timeLimit;
  p.relativeGap = 1e-6;
  auto convert = [&](const plan::ResourceExpr &e, Constraint &c) {
    c.constant += e.constant;
    for (const auto &[nc, coef] : e.linear) {
      int l = layerOf[nc.node];
      if (l < 0)
        c.constant += current[nc.node] == nc.candidate ? coef : 0;
      else
        c.linear.push_back({{unsigned(l), nc.candidate}, coef});
    }
    for (const plan::ResourceExpr::Product &pr : e.products) {
      int la = layerOf[pr.a.node], lb = layerOf[pr.b.node];
      bool ta = la >= 0 || current[pr.a.node] == pr.a.candidate;
      bool tb = lb >= 0 || current[pr.b.node] == pr.b.candidate;
      if (!ta || !tb)
        continue;
      if (la >= 0 && lb >= 0)
        c.products.push_back(
            {{unsigned(la), pr.a.candidate}, {unsigned(lb), pr.b.candidate}, pr.coef});
      else if (la >= 0)
        c.linear.push_back({{unsigned(la), pr.a.candidate}, pr.coef});
      else if (lb >= 0)
        c.linear.push_back({{unsigned(lb), pr.b.candidate}, pr.coef});
      else
        c.constant += pr.coef;
    }
  };
  for (ir::Resource r : kResources) {
    const std::optional<ir::Budget> &b = s.mp.budget(r);
    if (!b)
      continue;
    double bound = 0;
    for (const BudgetUse &u : budgets)
      if (u.resource == r)
        bound = u.allowed * scaleOf(r);
    std::string name = ir::toString(r);
    if (r == ir::Resource::WeightsMemory || r == ir::Resource::Bops) {
      Constraint c;
      c.name = name;
      c.bound = bound;
      convert(r == ir::Resource::Bops ? model.bops : model.weights, c);
      p.constraints.push_back(std::move(c));
      continue;
    }
    for (size_t k = 0; k < std::max<size_t>(1, model.cuts.size()); ++k) {
      Constraint c;
      c.name = model.cuts.empty() ? name : fmt::format("{} (step {})", name, model.cutSteps[k]);
      c.bound = bound;
      if (!model.cuts.empty())
        convert(model.cuts[k], c);
      if (r == ir::Resource::TotalMemory)
        convert(model.weights, c);
      p.constraints.push_back(std::move(c));
    }
  }
  addConflicts(p);
  return p;
}

/// Candidates whose output bits a consumer's candidate does not accept.
void Searcher::addConflicts(AllocationProblem &p) const {
  for (unsigned n = 0; n < plan.nodes.size(); ++n) {
    const plan::PlanNode &pn = plan.nodes[n];
    if (pn.innerOfChain || !pn.options.options)
      continue;
    for (const graph::Value *v : plan.elementInputs(pn)) {
      const plan::PlanTensor *t = plan.tensorOf(v);
      if (!v || v->constant || !t || !t->quantize || t->preserving || !t->producer)
        continue;
      unsigned prod = unsigned(t->producer - plan.nodes.data());
      int lc = layerOf[n], lp = layerOf[prod];
      if (lc < 0 && lp < 0)
        continue;
      const auto &cc = pn.options.options->configs;
      const auto &pc = t->producer->options.options->configs;
      for (unsigned c = 0; c < cc.size(); ++c) {
        if ((lc < 0 && c != current[n]) || !cc[c].activation.quantize || cc[c].preserving ||
            cc[c].inputBits.empty())
          continue;
        for (unsigned d = 0; d < pc.size(); ++d) {
          if ((lp < 0 && d != current[prod]) || !pc[d].activation.quantize)
            continue;
          const std::vector<int> &ib = cc[c].inputBits;
          if (std::find(ib.begin(), ib.end(), pc[d].activation.bits) != ib.end())
            continue;
          if (lc >= 0 && lp >= 0) {
            p.conflicts.push_back({{unsigned(lc), c}, {unsigned(lp), d}});
            continue;
          }
          Constraint forbid; // a candidate the fixed neighbour cannot take
          forbid.name = "input bits";
          forbid.linear.push_back({lc >= 0 ? Choice{unsigned(lc), c} : Choice{unsigned(lp), d}, 1});
          forbid.bound = 0.5;
          p.constraints.push_back(std::move(forbid));
        }
      }
    }
  }
}

/// The ILP's best solutions (the next one found by excluding the previous
/// with a no-good constraint), each refined, run as whole models on every
/// calibration image: the one whose outputs agree best with the float
/// model's wins (top-1 agreement of [N, classes] outputs, then normalized
/// MSE; ties keep the ILP's order). Per-layer sensitivities add up only
/// approximately (a 2-bit layer after 4-bit ones hurts more than after
/// 8-bit ones), and these runs are cheap next to the sensitivity pass.
LogicalResult Searcher::chooseBest(AllocationProblem p, std::vector<unsigned> first,
                                   rt::Executor &ex, SensitivityPass &pass,
                                   const std::function<unsigned(std::vector<unsigned> &)> &refine,
                                   std::vector<unsigned> &choice, SearchResult &out) {
  choice = first;
  out.refinements = refine(choice);
  if (s.mp.verify <= 1)
    return success();
  std::vector<std::vector<unsigned>> candidates{choice};
  std::vector<unsigned> upgrades{out.refinements};
  std::vector<unsigned> current = first;
  // The next-best solutions are harder for CBC than the first (a dense
  // no-good row per solution): they get a few times the first solve's time,
  // at least a second, never more than the time limit; then the search
  // measures what it has.
  // None when the first solve already ran into the time limit.
  double budget = out.status == AllocationResult::Status::TimeLimit
                      ? 0
                      : std::min(s.mp.timeLimit, std::max(1.0, 4 * out.solverSeconds));
  double spent = 0;
  for (int64_t k = 1; k < s.mp.verify && spent < budget; ++k) {
    Constraint exclude;
    exclude.name = "no-good";
    for (unsigned l = 0; l < current.size(); ++l)
      if (p.cost[l].size() > 1)
        exclude.linear.push_back({{l, current[l]}, 1});
    if (exclude.linear.size() < 2)
      break; // at most one layer with a choice: nothing else to try this way
    exclude.bound = double(exclude.linear.size()) - 1;
    p.constraints.push_back(std::move(exclude));
    p.timeLimitSeconds = budget - spent;
    AllocationResult next = solveAllocation(p);
    out.solverSeconds += next.seconds;
    spent += next.seconds;
    if (next.status != AllocationResult::Status::Optimal &&
        next.status != AllocationResult::Status::TimeLimit)
      break;
    current = next.choice;
    unsigned n = refine(next.choice);
    if (std::find(candidates.begin(), candidates.end(), next.choice) == candidates.end()) {
      candidates.push_back(next.choice);
      upgrades.push_back(n);
    }
  }
  std::vector<OutputAgreement> measured;
  if (failed(pass.measureOutputs(ex, candidates, measured)))
    return failure();
  size_t best = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    out.verified.push_back({candidates[i], measured[i]});
    if (measured[i] < measured[best])
      best = i;
  }
  choice = candidates[best];
  out.refinements = upgrades[best];
  return success();
}

LogicalResult Searcher::run(const ir::Recipe &recipe, rt::Executor &floatEx, CalibrationData &data,
                            const std::function<void(const char *, int64_t, int64_t)> &progress,
                            SearchResult &out) {
  // The searched layers: nodes with a choice that changes something.
  std::vector<bool> keep = fixed;
  keep.resize(plan.nodes.size(), false);
  model = plan::buildResourceModel(plan, keep);
  current = plan::chosenAssignment(plan);
  smallest = current;
  plan::Assignment minA = plan::minAssignment(plan), maxA = plan::maxAssignment(plan);
  layerOf.assign(plan.nodes.size(), -1);
  std::vector<unsigned> layers, max;
  for (unsigned n : model.variables) {
    layerOf[n] = int(layers.size());
    layers.push_back(n);
    max.push_back(maxA[n]);
    smallest[n] = minA[n];
  }
  if (layers.empty())
    diags.emitAt(plan.modelName, diag::warn_mixed_nothing_to_search, plan.platform->name);
  if (failed(resolveBudgets(out)))
    return failure();
  if (layers.empty()) {
    out.after = out.before;
    for (BudgetUse &u : out.budgets)
      u.used = plan::memoryBytes(out.after, u.resource);
    return success(); // resolveBudgets showed it fits: the minimum is the plan
  }

  SensitivityOptions so;
  so.images = s.mp.images;
  so.distance = s.mp.distance;
  so.activations = s.mp.activationMemory || s.mp.totalMemory || s.mp.bops;
  if (progress)
    so.progress = [&](int64_t done, int64_t total) { progress("sensitivity", done, total); };
  SensitivityPass pass;
  if (failed(measureSensitivity(plan, layers, max, recipe, floatEx, data, so, out.sensitivity,
                                diags, &pass)))
    return failure();

  for (size_t l = 0; l < layers.size(); ++l)
    for (unsigned c = 0; c < out.sensitivity.cost[l].size(); ++c)
      if (!std::isfinite(out.sensitivity.cost[l][c])) {
        const plan::PlanNode &pn = plan.nodes[layers[l]];
        return diags.emitAt(plan.modelName, diag::err_mixed_nonfinite, pn.node->displayName(),
                            pn.options.configId(c));
      }
  AllocationProblem p = problem(out.sensitivity);
  std::vector<std::vector<CandidateBits>> bits(layers.size());
  for (size_t l = 0; l < layers.size(); ++l)
    for (const ir::OpConfig &c : plan.nodes[layers[l]].options.options->configs)
      bits[l].push_back(bitsOf(c));
  auto resources = [&](const std::vector<unsigned> &ch) {
    plan::Assignment a = current;
    for (size_t l = 0; l < layers.size(); ++l)
      a[layers[l]] = ch[l];
    return keyOf(model.evaluate(a));
  };
  auto refine = [&](std::vector<unsigned> &ch) -> unsigned {
    return s.mp.refine && !s.mp.bops ? refineAllocation(p, bits, resources, ch) : 0;
  };
  // The solver starts from every layer at its smallest candidate, refined:
  // feasible whenever the budgets are (checked above) and no bits conflict.
  p.start.resize(layers.size());
  for (size_t l = 0; l < layers.size(); ++l)
    p.start[l] = smallest[layers[l]];
  refineAllocation(p, bits, resources, p.start);
  AllocationResult r = solveAllocation(p);
  p.start.clear(); // the next solves exclude earlier choices
  out.status = r.status;
  out.solverSeconds = r.seconds;
  std::vector<std::string> asked;
  for (const BudgetUse &u : budgets)
    asked.push_back(fmt::format("{} {}: at least {}", ir::toString(u.resource), u.text,
                                plan::formatAmount(u.resource, u.minimum)));
  switch (r.status) {
  case AllocationResult::Status::Optimal:
    break;
  case AllocationResult::Status::TimeLimit:
    diags.emitAt(plan.modelName, diag::warn_mixed_time_limit, s.mp.timeLimit, r.objective);
    break;
  case AllocationResult::Status::Infeasible:
    return diags.emitAt(plan.modelName, diag::err_mixed_infeasible, llvm::join(asked, "; "));
  case AllocationResult::Status::NoSolution:
    return diags.emitAt(plan.modelName, diag::err_mixed_no_solution, s.mp.timeLimit);
  case AllocationResult::Status::SolverError: // a defect: the problem is checked above
    return diags.emitAt(plan.modelName, diag::err_quant_unsupported,
                        "mixed precision: the ILP solver failed: " + r.message);
  }
  std::vector<unsigned> choice;
  if (failed(chooseBest(p, r.choice, floatEx, pass, refine, choice, out)))
    return failure();
  plan::Assignment a = current;
  for (size_t l = 0; l < layers.size(); ++l)
    a[layers[l]] = choice[l];
  out.objective = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    const plan::PlanNode &pn = plan.nodes[layers[l]];
    out.objective += p.cost[l][choice[l]];
    out.choices.emplace_back(pn.node->displayName(), pn.options.configId(choice[l]));
  }
  out.after = model.evaluate(a);
  out.stats = pass.takeStatistics();
  for (BudgetUse &u : out.budgets)
    u.used = plan::memoryBytes(out.after, u.resource);
  return success();
}

} // namespace

LogicalResult
mixed::searchPrecision(const plan::Plan &plan, const Settings &settings,
                       const std::vector<bool> &fixed, const ir::Recipe &recipe,
                       rt::Executor &floatEx, CalibrationData &data,
                       const std::function<void(const char *, int64_t, int64_t)> &progress,
                       SearchResult &out, DiagnosticEngine &diags) {
  Searcher s(plan, settings, fixed, diags);
  return s.run(recipe, floatEx, data, progress, out);
}
