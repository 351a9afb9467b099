//===- Corrections.h - Pre-statistics model corrections ---------*- C++ -*-===//
//
// The recipe's pre-statistics corrections (docs/quantize.md, "Corrections")
// change weights so that the float model computes the same outputs with
// friendlier activations. They run on both copies `tpcc quantize` holds (the
// float reference and the copy that becomes the QDQ model), before the plan is
// rebuilt and calibration runs: relu_unbound_correction (Op -> Clip(0, M) -> Op
// with linear ops, M not a power of two, power-of-two activations: the bound
// becomes the threshold-8 grid's largest value) and activation_channel_equalization (Conv -> Relu
// -> Conv, channels scaled by e_c = min(1, 1/sigma'_c) with sigma'_c the channel's standard
// deviation measured in an extra statistics pass; MCT takes sigma' from the folded BatchNorm's
// prior instead, which clean-up has already folded away) and smooth_quant
// (SmoothQuant.cpp: LayerNorm -> linear layers, activation outliers moved into
// the weights).
//
// The other corrections are elsewhere: the post-threshold graph edits
// (shift_negative, input_scaling) are decided once the grids are chosen
// (PostThreshold.h) and written into the QDQ copy only (GraphEdits.h); bias
// correction is part of the quantizer (Quantizer.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_CORRECTIONS_CORRECTIONS_H
#define TPCC_QUANT_PTQ_CORRECTIONS_CORRECTIONS_H

#include "plan/Plan.h"
#include "quant/core/stats/Calibrate.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>
#include <vector>

namespace tpcc::quant {

/// relu_unbound_correction: first -> clip(0, M) -> second; r = M / B, B the
/// largest value of the threshold-8 grid (7.96875 at 8 unsigned bits).
struct ReluBound {
  std::string clip, first, second;
  double bound = 0, ratio = 1;
  /// The output-channel axis of `first`'s kernel (kernelOutAxis).
  int64_t firstOutAxis = 0;
  std::string describe() const;
};

/// activation_channel_equalization: first -> relu -> second (Convs), or
/// first -> second (relu empty); output channel c of `first` is scaled by
/// factors[c], input channel c of `second` by 1 / factors[c].
struct ChannelEqualization {
  std::string relu, first, second;
  std::vector<double> factors;
  std::string describe() const;
};

/// smooth_quant (SmoothQuant.cpp) and awq (Awq.cpp): tensor `tensor` divided
/// channel by channel (its last axis) by factors[j], through the per-channel
/// constants of the op producing it (`divided`), and input channel j of each
/// linear layer reading it (`linears`, kernel input 1, input channels along
/// `axes`) multiplied by factors[j].
struct Smoothing {
  struct Scaled {
    std::string node;
    unsigned input = 0;
  };
  std::string tensor;
  std::vector<Scaled> divided;
  std::vector<std::string> linears;
  std::vector<int64_t> axes;
  std::vector<double> factors;
  double alpha = 0;
  /// How much smaller than without smoothing the predicted error of the
  /// layers' outputs is (dB); what made the choice.
  double predictedGainDb = 0;
  /// awq's scaling (the factors from the activations' magnitudes, for
  /// weight-only layers), not smooth_quant's.
  bool awq = false;
  std::string describe() const;
};

struct PreCorrections {
  std::vector<ReluBound> reluBounds;
  std::vector<ChannelEqualization> equalizations;
  std::vector<Smoothing> smoothings;
  bool empty() const { return reluBounds.empty() && equalizations.empty() && smoothings.empty(); }
  /// One line per correction, for the plan (`corrections`) and messages.
  std::vector<std::string> describe() const;
};

/// Finds the pre-statistics corrections `recipe` turns on in `plan.model`.
/// Channel equalization runs one statistics pass over `data` with `ex`
/// (which runs plan.model). False after diagnostics.
LogicalResult findPreStatisticsCorrections(const plan::Plan &plan, const ir::Recipe &recipe,
                                           rt::Executor &ex, CalibrationData &data,
                                           PreCorrections &out, DiagnosticEngine &diags);

/// A tensor X whose channels a factor each could move into the linear
/// layers reading it (SmoothQuant.cpp): the per-channel constants of the op
/// producing it that the factors divide, and the layers (MatMul or Gemm with
/// a 2-D constant kernel, input channels along `axes`).
struct ScalingCandidate {
  const graph::Value *x = nullptr;
  int64_t channels = 0;
  std::vector<Smoothing::Scaled> divided;
  std::vector<const graph::Node *> linears;
  std::vector<int64_t> axes;
};
/// The tensors smooth_quant could smooth (X quantized on fewer than 16
/// bits), or with `weightOnly` the ones awq could scale (X float).
std::vector<ScalingCandidate> scalingCandidates(const plan::Plan &plan, bool weightOnly);

/// The statistics of scalingCandidates(plan, weightOnly): per channel of
/// each tensor's last axis.
std::vector<StatsRequest> scalingRequests(const plan::Plan &plan, bool weightOnly);
/// The scaling of candidate `c` by `factors(alpha)` for the alpha among
/// `alphas` whose `error` is smallest, when it is below `none` (the error
/// unscaled); none otherwise. smooth_quant's and awq's search.
std::optional<Smoothing> bestScaling(const ScalingCandidate &c, const std::vector<double> &alphas,
                                     double none,
                                     llvm::function_ref<std::vector<double>(double)> factors,
                                     llvm::function_ref<double(const std::vector<double> &)> error);
/// The smoothings worth making (the recipe's alpha, or searched), from the
/// statistics of scalingRequests(plan, false).
void findSmoothings(const plan::Plan &plan, const ir::Recipe &recipe,
                    const std::vector<std::unique_ptr<TensorStats>> &stats,
                    std::vector<Smoothing> &out);
LogicalResult applySmoothing(graph::Model &m, const Smoothing &s, DiagnosticEngine &diags);

/// The awq scalings worth making (the recipe's alpha, or searched), from the
/// statistics of scalingRequests(plan, true) (Awq.cpp).
void findAwqScalings(const plan::Plan &plan, const ir::Recipe &recipe,
                     const std::vector<std::unique_ptr<TensorStats>> &stats,
                     std::vector<Smoothing> &out);

/// Applies `pre` to `m` (either copy of the model: nodes are found by name);
/// the model stays numerically equivalent. False after diagnostics.
LogicalResult applyPreStatisticsCorrections(graph::Model &m, const PreCorrections &pre,
                                            DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
