//===- QualityTarget.h - Quantize to a quality target (--min-sqnr) -*- C++ -*-===//
//
// `tpcc quantize --min-sqnr DB`: the platform's candidates chosen by the
// measurement the quantizer already makes (Diagnose.h) instead of a memory
// budget. It quantizes; while the model's outputs keep less than DB of the
// float model's signal (the lowest output SQNR, pooled or on any one measured
// sample: a probability tiny on some inputs), the node of every activation
// whose own grid keeps less than DB (pooled or on one sample) takes the
// candidate with the next wider activation grid and the same weights
// (imx500_v4's 16-bit configs), or, with none, one that leaves it float
// (ort_cpu's `no_quant`), provided every node that reads the tensor accepts
// inputs of that width (float: any but a preserving one); then it quantizes
// again, and a node may widen again (8 bits, 16, float). When no grid that
// can widen is below DB, the bar rises by kTargetStepDb until some grid is
// under it: the errors of many grids add up, and a layer may amplify the
// error of its input (a depthwise convolution's weak channels). When none is
// below even the highest bar, the grids read by the node where an output's
// error grows most (kMinTargetGrowthDb or more: a Log of small powers)
// widen one step. A node that destroys the signal (kDestroyingGrowthDb or
// more lost across it, its own grid keeping that much more) has its whole
// cone widen in the same round as the grids below DB, when the cone holds at
// most kMaxGrowthCone grids (a spectral front-end). A node whose quantized
// weights lose more than the bar the grids settled on (what its output's
// error has beyond its inputs' and its own grid's, when that is at least
// kMinWeightShare of it: a Conv fused with a ReLU) takes the candidate with
// the next wider weights in the same round (ort_cpu's 16-bit kernels). A
// model input has no
// candidates: its grid widens by leaving the nodes that read it float
// (directly or through data movement), after which the planner keeps it
// float.
//
// Only the tensors that the outputs still below DB are computed from widen.
// The outcome kept is the best round: the one whose outputs' summed shortfall
// below DB is smallest, a round counting as better only when it shrinks the
// shortfall by kMinTargetGainDb or more. A grid below DB that cannot widen
// (no wider candidate, a reader that takes 8 bits only) may cap an output
// whatever else widens, so the widenings after the best round are undone;
// the rounds still go on, since a later one, with the bar higher, may gain.
// The search stops when the outputs meet the target, nothing can widen, or
// after kMaxTargetRounds quantizations. Every round is quiet: the outcome
// kept reports as `quantize` always does, with its choices in the plan
// (`--plan-out`) and the summary.
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PIPELINE_QUALITYTARGET_H
#define TPCC_QUANT_PIPELINE_QUALITYTARGET_H

#include "quant/pipeline/Pipeline.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace tpcc::quant {

/// Quantizations at most, the undone one included.
constexpr int kMaxTargetRounds = 6;
/// What a round must gain (dB of summed output shortfall) to be kept.
constexpr double kMinTargetGainDb = 0.1;
/// How far an output's SQNR must fall across one node for the grids that
/// node reads to widen whatever their own SQNR.
constexpr double kMinTargetGrowthDb = 6;
/// How far an output's SQNR must fall across one node for it to count as
/// destroying the signal: every grid it is computed from widens.
constexpr double kDestroyingGrowthDb = 20;
/// The most quantized activations such a node's cone may hold (a
/// front-end's, not a whole network's).
constexpr size_t kMaxGrowthCone = 16;
/// The share of an output's error (power) a node's weights must lose, by
/// the estimate from its inputs' and its own grid's error, for them to widen.
constexpr double kMinWeightShare = 0.25;
/// How far the bar on the own grids rises at a time.
constexpr double kTargetStepDb = 10;

/// TargetChoice::toBits of a widening to a float candidate.
constexpr int kFloatBits = 32;

/// One widening the target made.
struct TargetChoice {
  std::string tensor, node, config; ///< config: the candidate's id
  int fromBits = 8, toBits = 16;
  /// Its own grid's SQNR (dB; the lower of pooled and worst sample) in the
  /// round that chose it.
  double sqnrBefore = 0;
  int round = 1;
  /// A reader left float so that this model input leaves its grid (the
  /// grid's SQNR is `sqnrBefore`); empty for a node's own activation.
  std::string input;
  /// A widening of the node's weights (the bits are the narrowest quantized
  /// weight's): `tensor`, the output they feed, kept `sqnrBefore` dB of the
  /// `inputsSqnr` its inputs kept.
  bool weights = false;
  double inputsSqnr = 0;
};

struct TargetResult {
  double target = 0;                 ///< dB
  std::vector<std::string> at;       ///< `--min-sqnr-at`'s tensors (empty: the outputs)
  int rounds = 0;                    ///< quantizations run, an undone one included
  double reached = 0;                ///< the lowest output SQNR (dB, any sample) of the one kept
  std::vector<TargetChoice> choices; ///< the widenings kept
  /// The widenings from round `undoneRound` on gained too little and were
  /// undone (0: none was).
  size_t undone = 0;
  int undoneRound = 0;
  /// Tensors whose own grid keeps less than the target and cannot widen (no
  /// wider candidate, a reader that does not take the width, a node the
  /// user chose for).
  std::vector<std::string> stuck;
};

/// Quantizes `r` to the target `db` (see above): `out` is the best round's
/// outcome, `result` what the rounds chose. `r.choose` (the user's) is kept
/// and never overridden.
LogicalResult quantizeToTarget(QuantizeRequest r, double db, QuantizeOutcome &out,
                               TargetResult &result, DiagnosticEngine &diags);

/// The summary lines of `result`.
void printTarget(const TargetResult &result, llvm::raw_ostream &os);

} // namespace tpcc::quant

#endif
