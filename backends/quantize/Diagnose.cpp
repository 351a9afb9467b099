//===- Diagnose.cpp - A quantizer that says where it fails and why ---------===//
#include "backends/quantize/Diagnose.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

std::string describe(const TensorReport &t) {
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
                           : std::string("it is a float output: "));
  case Cause::Range:
    break;
  }
  return fmt::format("{} bits do not hold its range (largest {:.4g}, RMS {:.3g}; its own grid "
                     "alone gives {:.1f} dB)",
                     t.bits, t.maxAbs, t.rms, t.ownSqnr);
}

/// What the node's options offer instead of its chosen config.
std::string offer(const TensorReport &t, const plan::Plan &plan) {
  const plan::PlanNode *pn = producerOf(plan, t);
  if (pn && pn->options.options && t.quantized) {
    const ir::Options &o = *pn->options.options;
    if (std::optional<unsigned> i = widerCandidate(*pn))
      return fmt::format("the platform offers {}-bit activations here: --choose {}={} (or "
                         "`--min-sqnr {}` chooses such candidates)",
                         o.configs[*i].activation.bits, t.node, pn->options.configId(*i),
                         kPoorSqnrDb);
    for (unsigned i = 0; i < o.configs.size(); ++i)
      if (!o.configs[i].activation.quantize)
        return fmt::format("the platform can leave it float: --choose {}={}", t.node,
                           pn->options.configId(i));
  }
  if (!t.quantized)
    return "see the tensors before it";
  if (causeOf(t) == Cause::Clipped)
    return "a threshold that does not clip keeps the range: a recipe with "
           "`activation_threshold: no_clipping`";
  return "the platform offers no wider grid for it";
}

} // namespace

bool quant::ownGridIsPoor(const TensorReport &t) { return causeOf(t) != Cause::Inherited; }

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
  for (size_t k = 0; k < poor.size() && k < kMaxPoorTensors; ++k) {
    const TensorReport &t = *poor[k];
    diags.emitAt(where.str(), diag::warn_quant_poor_tensor, t.tensor, fmt::format("{:.1f}", t.sqnr),
                 kPoorSqnrDb, describe(t), offer(t, plan));
  }
  if (poor.size() > kMaxPoorTensors)
    diags.emitAt(where.str(), diag::note_quant_more_poor_tensors, poor.size() - kMaxPoorTensors,
                 kPoorSqnrDb);
}
