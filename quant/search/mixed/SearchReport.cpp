//===- SearchReport.cpp - Mixed precision's result as text, JSON and plan ---===//
#include "quant/search/mixed/Search.h"

#include <fmt/format.h>

#include <cmath>

using namespace tpcc;
using namespace tpcc::quant;
using namespace tpcc::quant::mixed;

namespace {

const char *statusName(AllocationResult::Status s) {
  switch (s) {
  case AllocationResult::Status::Optimal:
    return "optimal";
  case AllocationResult::Status::TimeLimit:
    return "time_limit";
  case AllocationResult::Status::Infeasible:
    return "infeasible";
  case AllocationResult::Status::NoSolution:
    return "no_solution";
  case AllocationResult::Status::SolverError:
    return "solver_error";
  }
  return "?";
}

/// "w4 a8", "w4b32 a-", "wfp8 afp8": a candidate's bits, or its
/// floating-point element, and its blocks.
std::string bitsOf(const ir::OpConfig &c) {
  auto spell = [](char what, bool on, int bits, const ir::FormatConfig &f) {
    if (!on)
      return fmt::format("{}-", what);
    std::string e = f.element == ir::ElementFormat::Int
                        ? std::to_string(bits)
                        : std::string(ir::toString(f.element)).substr(0, 3); // fp8, fp4
    return fmt::format("{}{}{}", what, e, f.block ? fmt::format("b{}", *f.block) : "");
  };
  const ir::AttrConfig &k = c.weightConfig("kernel");
  return spell('w', k.quantize, k.bits, k.format) + " " +
         spell('a', c.activation.quantize, c.activation.bits, c.activation.format);
}

} // namespace

plan::MixedPrecisionRecord mixed::record(const SearchResult &r, const Settings &s) {
  plan::MixedPrecisionRecord rec;
  for (const BudgetUse &u : r.budgets)
    rec.budgets.push_back(
        {ir::toString(u.resource), u.text, u.source, u.allowed, u.used, u.minimum, u.base});
  rec.choices = r.choices;
  rec.distance = ir::toString(s.mp.distance);
  rec.status = statusName(r.status);
  rec.images = r.sensitivity.images;
  rec.refinements = r.refinements;
  return rec;
}

void mixed::printSearch(const SearchResult &r, const plan::Plan &plan, llvm::raw_ostream &os) {
  os << fmt::format("  mixed precision: {} searched layers, {} images, solver {}{}{}\n",
                    r.sensitivity.layers.size(), r.sensitivity.images, statusName(r.status),
                    r.verified.size() > 1
                        ? fmt::format(", best of {} ILP solutions run whole", r.verified.size())
                        : "",
                    r.refinements ? fmt::format(", {} refinement upgrades", r.refinements) : "");
  for (const BudgetUse &u : r.budgets)
    os << fmt::format("    {:<18} used {:>12} of {:>12} ({} from {}; smallest possible {})\n",
                      ir::toString(u.resource), plan::formatAmount(u.resource, u.used),
                      plan::formatAmount(u.resource, u.allowed), u.text, u.source,
                      plan::formatAmount(u.resource, u.minimum));
  std::map<std::string, unsigned> perBits;
  for (size_t l = 0; l < r.sensitivity.layers.size(); ++l) {
    const plan::PlanNode &pn = plan.nodes[r.sensitivity.layers[l]];
    ++perBits[bitsOf(pn.config())];
  }
  std::string mix;
  for (const auto &[bits, n] : perBits)
    mix += fmt::format("{}{} x{}", mix.empty() ? "" : ", ", bits, n);
  if (!mix.empty())
    os << "    layers: " << mix << "\n";
  for (size_t l = 0; l < r.sensitivity.layers.size(); ++l) {
    const plan::PlanNode &pn = plan.nodes[r.sensitivity.layers[l]];
    os << fmt::format("    {:<34} {:<22} {}\n", pn.node->displayName(),
                      pn.options.configId(pn.chosen), bitsOf(pn.config()));
  }
  os << fmt::format("    time: sensitivity {:.2f} s ({} runs on {} threads), solver {:.3f} s\n",
                    r.sensitivity.seconds, r.sensitivity.runs, r.sensitivity.threads,
                    r.solverSeconds);
}

void mixed::writeSearchJSON(const SearchResult &r, const plan::Plan &plan, llvm::json::OStream &j) {
  j.attributeObject("mixed_precision", [&] {
    j.attribute("status", statusName(r.status));
    j.attribute("images", r.sensitivity.images);
    j.attribute("max_config_metric", r.sensitivity.maxConfigMetric);
    j.attribute("rescaled", r.sensitivity.rescaled);
    j.attribute("refinements", int64_t(r.refinements));
    j.attributeArray("budgets", [&] {
      for (const BudgetUse &u : r.budgets)
        j.object([&] {
          j.attribute("resource", ir::toString(u.resource));
          j.attribute("given", u.text);
          j.attribute("source", u.source);
          j.attribute("allowed", u.allowed);
          j.attribute("used", u.used);
          j.attribute("minimum", u.minimum);
          j.attribute("base", u.base);
        });
    });
    j.attributeArray("verified", [&] {
      for (const auto &[choice, outputs] : r.verified)
        j.object([&] {
          j.attributeArray("configs", [&] {
            for (size_t l = 0; l < choice.size(); ++l)
              j.value(plan.nodes[r.sensitivity.layers[l]].options.configId(choice[l]));
          });
          j.attribute("images", outputs.images);
          j.attribute("top1_agreement", outputs.agreement);
          j.attribute("output_distance", outputs.distance);
        });
    });
    j.attributeArray("interest_points", [&] {
      for (const std::string &p : r.sensitivity.interestPoints)
        j.value(p);
    });
    if (!r.sensitivity.interestWeights.empty()) {
      j.attributeArray("interest_point_weights", [&] {
        for (double w : r.sensitivity.interestWeights)
          j.value(w);
      });
      j.attribute("hessian_probes", r.sensitivity.hessianProbes);
    }
    j.attributeArray("output_points", [&] {
      for (const std::string &p : r.sensitivity.outputPoints)
        j.value(p);
    });
    j.attributeArray("layers", [&] {
      for (size_t l = 0; l < r.sensitivity.layers.size(); ++l) {
        const plan::PlanNode &pn = plan.nodes[r.sensitivity.layers[l]];
        j.object([&] {
          j.attribute("node", pn.node->displayName());
          j.attribute("chosen", pn.options.configId(pn.chosen));
          j.attributeArray("candidates", [&] {
            const auto &configs = pn.options.options->configs;
            for (unsigned c = 0; c < configs.size(); ++c)
              j.object([&] {
                j.attribute("config", pn.options.configId(c));
                j.attribute("bits", bitsOf(configs[c]));
                j.attribute("max", c == r.sensitivity.maxCandidate[l]);
                j.attribute("metric", r.sensitivity.metric[l][c]);
                j.attribute("cost", r.sensitivity.cost[l][c]);
              });
          });
        });
      }
    });
  });
}

void mixed::explainSensitivity(const SearchResult &r, const plan::Plan &plan,
                               const plan::PlanNode &node, llvm::raw_ostream &os) {
  const plan::PlanNode &root = plan.elementOf(node);
  unsigned index = unsigned(&root - plan.nodes.data());
  for (size_t l = 0; l < r.sensitivity.layers.size(); ++l) {
    if (r.sensitivity.layers[l] != index)
      continue;
    os << fmt::format("  mixed precision: sensitivity on {} images (max config metric {:.6g})\n",
                      r.sensitivity.images, r.sensitivity.maxConfigMetric);
    const auto &configs = root.options.options->configs;
    for (unsigned c = 0; c < configs.size(); ++c)
      os << fmt::format("    {} {:<18} {:<8} metric {:<12.6g} cost {:<12.6g}{}{}\n",
                        c == root.chosen ? "*" : " ", root.options.configId(c), bitsOf(configs[c]),
                        r.sensitivity.metric[l][c], r.sensitivity.cost[l][c],
                        c == r.sensitivity.maxCandidate[l] ? " (max config)" : "",
                        c == root.chosen ? " (chosen)" : "");
    return;
  }
  os << fmt::format("  mixed precision: `{}` was not searched ({})\n", root.node->displayName(),
                    root.options.options && root.options.options->configs.size() > 1
                        ? "chosen with --choose, or no candidate changes its bits"
                        : "it has one candidate config");
}
