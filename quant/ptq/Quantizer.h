//===- Quantizer.h - Calibration, thresholds, corrections -------*- C++ -*-===//
//
// `tpcc quantize` without the file handling: given the plan of a (cleaned,
// BN-folded) float model and calibration data, collect the statistics of
// every quantized tensor, choose each activation's and weight's grid as the
// recipe says (docs/algorithms.md), compute the bias corrections, and describe
// the QDQ model to write (QDQSpec), and the post-threshold graph edits
// (shift_negative, input_scaling; GraphEdits.h) for the QDQ copy.
// measureLayers then compares the rewritten model with the float one,
// tensor by tensor.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PTQ_QUANTIZER_H
#define TPCC_QUANT_PTQ_QUANTIZER_H

#include "plan/Plan.h"
#include "quant/core/Result.h"
#include "quant/core/stats/Calibrate.h"

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tpcc::quant {

namespace edits {
struct LinearAdjust; // corrections/PostThreshold.h
} // namespace edits

/// A weight config after the recipe's overrides (`weights_bits`,
/// `weights_method`, `per_channel`).
ir::AttrConfig withRecipeOverrides(ir::AttrConfig c, const ir::Recipe &recipe);

/// What quantizePlan's statistics pass collects for `plan`: every quantized
/// activation that is neither preserving nor fixed (a histogram), and, with
/// bias correction, every linear layer's input (channel means along axis 1).
std::vector<StatsRequest> statisticsRequests(const plan::Plan &plan, const ir::Recipe &recipe);

/// The grid of activation tensor `t` quantized with `method`, `bits` and
/// `signedness` (a candidate's, or the plan's after the recipe's
/// overrides): fixed by the platform, the op's known range, or chosen on the
/// statistics `s` with the recipe's threshold method. `how` names the
/// choice for the report.
LogicalResult selectTensorGrid(const plan::PlanTensor &t, ir::QuantMethod method, int bits,
                               ir::Signedness signedness, TensorStats *s, const ir::Recipe &recipe,
                               const std::string &modelName, QuantGrid &g, std::string &how,
                               DiagnosticEngine &diags);

/// The grids of float weight `t` under config `c` (one per channel along
/// `axis` when `c` is per-channel), as the recipe's threshold method
/// chooses them (LUT methods: k-means tables). `hessian` (one value per
/// element of `t`) weighs the error of `hmse`; without it `hmse` is `mse`.
/// `node`/`inputIndex` are left for the caller. A blocked format
/// (`c.format.block`) with a `blockAxis` (plan::blockDim) gets one grid per
/// block, each chosen from the block's values alone; a scale format other
/// than float32 puts each scale on it (withScaleFormat; e8m0 scales are OCP
/// MX's, from the group's largest magnitude).
WeightQDQ selectWeightGrids(const rt::Tensor &t, const ir::AttrConfig &c,
                            std::optional<int64_t> axis, const ir::Recipe &recipe,
                            const std::vector<float> *hessian = nullptr,
                            std::optional<int64_t> blockAxis = std::nullopt);

/// MCT's bias correction (docs/quantize.md, "Corrections") of linear node `pn`
/// (Conv, Gemm) whose kernel `kernel` is quantized as `w`: b - sum_i E[o,i]
/// mu_i, with E the kernel's quantization error summed over its taps and `mu`
/// the mean of each input channel on the calibration data; `adjust` (may be
/// null) moves the mean and gives the starting bias. Nullopt when the shapes do
/// not allow it (the bias is then left as it is).
std::optional<std::vector<float>> correctedBias(const graph::Model &model, const plan::PlanNode &pn,
                                                const WeightQDQ &w, const rt::Tensor &kernel,
                                                std::vector<double> mu,
                                                const edits::LinearAdjust *adjust);

/// Calibrates and chooses every grid. `floatEx` runs `plan.model`.
LogicalResult quantizePlan(const plan::Plan &plan, rt::Executor &floatEx, CalibrationData &data,
                           const QuantizeOptions &options, QuantizeResult &result,
                           DiagnosticEngine &diags);

} // namespace tpcc::quant

#endif
