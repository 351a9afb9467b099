//===- Search.h - Mixed precision: candidates chosen under budgets -*- C++ -*-===//
//
// The whole search of docs/quantize.md ("Mixed precision") for one plan: the
// budgets resolved to targets (absolute, or a fraction of the base
// configuration's figure; a flag over the recipe's field; the platform's
// declared memory when the search is on and nothing else is given), checked
// against the smallest figure the model can reach (every searched layer at its
// smallest candidate), the sensitivity of every searched layer (Sensitivity.h),
// the ILP (Solver.h) with one constraint per budget (per live-set cut for
// activation and total memory), the refinement, and the choice among the ILP's
// `verify` best solutions by running each as a whole model. The result is a set
// of per-node choices: what `--choose` gives, so the plan records it and
// `tpcc apply` reproduces it.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_SEARCH_MIXED_SEARCH_H
#define TPCC_QUANT_SEARCH_MIXED_SEARCH_H

#include "quant/search/mixed/Sensitivity.h"
#include "quant/search/mixed/Solver.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace tpcc::quant::mixed {

/// One budget the search met.
struct BudgetUse {
  ir::Resource resource = ir::Resource::WeightsMemory;
  std::string text;   ///< as given (`75%`, `41 KiB`)
  std::string source; ///< `--weights-memory`, `recipe `r``, `platform `imx500``
  double allowed = 0; ///< bytes or BOPs
  double used = 0;    ///< by the search's choice
  double minimum = 0; ///< every searched layer at its smallest candidate
  double base = 0;    ///< the base configuration's
};

/// Budgets from every source, resolved (see resolveSettings).
struct Settings {
  ir::MixedPrecision mp;
  /// Where each budget came from, by ir::Resource.
  std::string source[4];
  bool active() const { return mp.anyBudget(); }
};

/// Merges the recipe's `mixed_precision` with the flags' budgets (a flag
/// wins over the recipe's field; a note says so when they differ) and, when
/// the search is enabled without a budget, the platform's declared memory.
Settings resolveSettings(const ir::Recipe &recipe, const ir::MixedPrecision &flags,
                         const ir::Platform &platform, DiagnosticEngine &diags,
                         const std::string &where);

struct SearchResult {
  std::vector<BudgetUse> budgets;
  Sensitivity sensitivity;
  /// (node name, config id) for every searched layer, in plan order.
  std::vector<std::pair<std::string, std::string>> choices;
  AllocationResult::Status status = AllocationResult::Status::Optimal;
  double objective = 0, solverSeconds = 0;
  unsigned refinements = 0;
  /// The ILP solutions run as whole models, best ILP objective first:
  /// (choice per layer, outputs against the float model's).
  std::vector<std::pair<std::vector<unsigned>, OutputAgreement>> verified;
  plan::ResourceFigures before, after; ///< the plan's own choice, and the search's
  /// The calibration statistics the search collected (QuantizeOptions::stats).
  std::vector<std::unique_ptr<TensorStats>> stats;
};

/// Runs the search on `plan` (built with the user's `--choose`; `fixed[i]`
/// marks the nodes they chose). Nothing to search (no node with candidates)
/// is a warning, then an error only if the plan does not fit.
LogicalResult searchPrecision(const plan::Plan &plan, const Settings &settings,
                              const std::vector<bool> &fixed, const ir::Recipe &recipe,
                              rt::Executor &floatEx, CalibrationData &data,
                              const std::function<void(const char *, int64_t, int64_t)> &progress,
                              SearchResult &out, DiagnosticEngine &diags);

/// The search as the plan records it.
plan::MixedPrecisionRecord record(const SearchResult &r, const Settings &s);

/// The summary lines: each budget (used / allowed, smallest possible), the
/// bits per searched layer, the times.
void printSearch(const SearchResult &r, const plan::Plan &plan, llvm::raw_ostream &os);

/// The report's `mixed_precision` object: budgets, the sensitivity matrix
/// (per layer and candidate: bits, measured metric, ILP cost, chosen).
void writeSearchJSON(const SearchResult &r, const plan::Plan &plan, llvm::json::OStream &j);

/// `--explain NODE`: the node's candidates with their sensitivities, or why
/// the search did not consider it. False when `node` is not a plan node.
void explainSensitivity(const SearchResult &r, const plan::Plan &plan, const plan::PlanNode &node,
                        llvm::raw_ostream &os);

} // namespace tpcc::quant::mixed

#endif
