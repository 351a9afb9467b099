//===- Diagnose.h - A quantizer that says where it fails and why --*- C++ -*-===//
//
// After measuring, every tensor whose SQNR against the float model is below
// kPoorSqnrDb (20 dB) is named in a warning, worst first, with the likely
// cause read from the float values and the tensor's own grid:
//   - the grid clips a share of the values (1 % or more outside [lo, hi]);
//   - the values are mostly below one step of the grid (RMS under a step:
//     tiny probabilities, sparse heat maps);
//   - the grid itself loses little (its own SQNR, quantizing the float values
//     alone, is 20 dB or more): the error comes from the tensors before it;
//   - otherwise the range is too wide for the grid's bits (a power spectrum);
// for a tensor that inherits its error, the node across which the measured
// SQNR falls most (10 dB or more) on the way back along its worst input, and
// why when the op magnifies error by its nature (a Log of small values);
// and what the platform offers there: a candidate config of the node with
// more activation bits, or one that leaves it float (`--choose NODE=CONFIG`),
// else a threshold that does not clip (`activation_threshold: no_clipping`)
// when clipping is the cause. At most kMaxPoorTensors are listed; a note
// gives the count of the others.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_SEARCH_DIAGNOSE_H
#define TPCC_QUANT_SEARCH_DIAGNOSE_H

#include "plan/Plan.h"
#include "quant/ptq/Quantizer.h"
#include "support/Diagnostics.h"

#include <map>
#include <optional>

namespace tpcc::quant {

constexpr double kPoorSqnrDb = 20;
constexpr size_t kMaxPoorTensors = 8;

/// The activations' reports of `r` (weights left out), by tensor name.
using ReportsByName = std::map<std::string, const TensorReport *>;
ReportsByName activationReports(const QuantizeResult &r);

/// The measured SQNR (pooled) of value `v`; a value that is not measured
/// (computed in float from measured ones) inherits the lowest of its
/// producer's inputs', a constant or a model input without a grid +inf.
double inheritedSqnr(const graph::Value *v, const ReportsByName &byName, int depth = 0);

/// Where the error of a tensor grows most: following the worst input back
/// from `t`, the node across which the measured SQNR falls furthest (a
/// tensor that is not measured passes its inputs' figure on). `byName`:
/// activationReports of the result `t` belongs to.
struct Growth {
  const graph::Node *node = nullptr;
  double from = 0, to = 0; ///< dB before and after it
};
Growth whereItGrows(const TensorReport &t, const plan::Plan &plan, const ReportsByName &byName);

/// The plan node that produces tensor `t` (a composite's root), or null.
const plan::PlanNode *producerOf(const plan::Plan &plan, const TensorReport &t);

/// The candidate of `node`'s options with the fewest activation bits above
/// those of its chosen config, with the chosen config's weights; none
/// when the options have no such candidate.
std::optional<unsigned> widerCandidate(const plan::PlanNode &node);

/// The first candidate of `node`'s options that leaves its activation float
/// (a config with `activation.quantize: false`) while its chosen config
/// quantizes, with each weight on as many bits as the chosen config or more
/// (a 4-bit weight-only candidate is no widening of an 8-bit kernel); none
/// otherwise.
std::optional<unsigned> floatCandidate(const plan::PlanNode &node);

/// One step wider than `node`'s chosen config: widerCandidate, else
/// floatCandidate.
std::optional<unsigned> nextCandidate(const plan::PlanNode &node);

/// Warns about the measured tensors of `r` below kPoorSqnrDb (`where`: the
/// model, for the diagnostics' location).
void warnPoorTensors(const QuantizeResult &r, const plan::Plan &plan, llvm::StringRef where,
                     DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
