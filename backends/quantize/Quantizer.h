//===- Quantizer.h - Calibration, thresholds, corrections -------*- C++ -*-===//
//
// `tpcc quantize` without the file handling: given the plan of a (cleaned,
// BN-folded) float model and calibration data, collect the statistics of
// every quantized tensor, choose each activation's and weight's grid as the
// recipe says (algorithms.md), compute the bias corrections, and describe
// the QDQ model to write (QDQSpec), and the post-threshold graph edits
// (shift_negative, input_scaling; GraphEdits.h) for the QDQ copy.
// measureLayers then compares the rewritten model with the float one,
// tensor by tensor.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_BACKENDS_QUANTIZE_QUANTIZER_H
#define TPCC_BACKENDS_QUANTIZE_QUANTIZER_H

#include "backends/plan/Plan.h"
#include "backends/quantize/corrections/Corrections.h"
#include "backends/quantize/corrections/GraphEdits.h"
#include "backends/quantize/qdq/QDQ.h"
#include "backends/quantize/stats/Calibrate.h"

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

struct QuantizeOptions {
  ir::Recipe recipe; ///< defaults when the user names none
  /// Called with a phase name and its progress (done of total; total 0 when
  /// unknown).
  std::function<void(const char *, int64_t, int64_t)> progress;
  /// Statistics already collected on the same data and model (by value id;
  /// mixed precision's pass): used when they hold every tensor quantizePlan
  /// asks for, with the same channel axis; collected again otherwise.
  std::vector<std::unique_ptr<TensorStats>> *stats = nullptr;
};

/// One row of the summary table and the report.
struct TensorReport {
  std::string tensor, node, opType, opset, config;
  bool weight = false;   ///< a weight (else an activation)
  bool quantized = true; ///< false: a float model output, measured only
  ir::QuantMethod method = ir::QuantMethod::Symmetric;
  int bits = 8;
  bool isSigned = true;
  std::string threshold; ///< the threshold method that chose the grid
  double scale = 0;      ///< the first channel's for per-channel weights
  int64_t zeroPoint = 0;
  int64_t channels = 1;
  double lo = 0, hi = 0; ///< the grid's range
  double sqnr = 0;       ///< dB, filled by measureLayers (inf: exact)
  bool measured = false;
  /// Also from measureLayers, of the float model's values: RMS, largest
  /// magnitude, the share outside the grid [lo, hi], and the SQNR of this
  /// tensor's own grid on them (what quantizing it alone loses, without the
  /// error the tensors before it bring).
  double rms = 0, maxAbs = 0, clipped = 0, ownSqnr = 0;
  /// The lowest SQNR (dB) over the measured samples (the slices along axis
  /// 0 of each batch; slices without signal skipped), of the tensor and of
  /// its own grid alone: a probability that is tiny on some inputs keeps
  /// little there while the pooled figures, which the large values
  /// dominate, look fine. +inf: no sliced sample lost anything.
  double worstSampleSqnr = INFINITY, worstSampleOwnSqnr = INFINITY;
  /// When a correction moved the tensor (shift_negative adds delta,
  /// input_scaling multiplies), it is measured against the float model's
  /// `reference` (empty: `tensor` itself) times `refScale` plus `refOffset`.
  std::string reference;
  double refScale = 1, refOffset = 0;
  /// Measured as the application reads it (`--min-sqnr-at sigmoid(NAME)`):
  /// the SQNR figures compare sigmoid(value) of both models (the logits of a
  /// detector, read as probabilities); RMS, range and clipping stay the
  /// values'.
  bool readAsSigmoid = false;
};

/// A tensor as `--min-sqnr-at` names it: `NAME`, or `sigmoid(NAME)` to read
/// it through a sigmoid. A name the model has is taken as it is.
struct ReadTensor {
  std::string tensor;
  bool sigmoid = false;
};
ReadTensor parseReadTensor(const std::string &text, const graph::Graph &g);

struct QuantizeResult {
  QDQSpec spec;
  /// Outputs of quantization-preserving ops left without a quantizer (the
  /// platform's insert_preserving_quantizers is false): completeSpec gives
  /// them none either.
  std::set<std::string> withoutQuantizer;
  std::vector<TensorReport> tensors;
  /// New float biases after bias correction: (node name, bias values); a
  /// node without a bias input gets one.
  std::vector<std::pair<std::string, std::vector<float>>> biases;
  /// Post-threshold edits of the QDQ copy (shift_negative, input_scaling)
  /// and the kernels they scale. When there are edits, `spec` is completed
  /// by applyCorrections (on the edited copy), not by quantizePlan.
  std::vector<GraphEdit> edits;
  std::vector<ConstantEdit> kernels;
  /// Kernels fine-tuning trained or GPTQ rounded: (node name, input index,
  /// values).
  /// The plan carries them, so `tpcc apply` writes the fine-tuned model.
  struct TrainedWeight {
    std::string node;
    unsigned inputIndex = 1;
    std::vector<float> values;
  };
  std::vector<TrainedWeight> trainedWeights;
  int64_t samples = 0;
  /// The samples the per-tensor SQNR was measured on (measureLayers).
  int64_t sqnrSamples = 0;
  double seconds[4] = {0, 0, 0, 0}; ///< calibration, thresholds, corrections, measuring
};

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
/// `node`/`inputIndex` are left for the caller.
WeightQDQ selectWeightGrids(const rt::Tensor &t, const ir::AttrConfig &c,
                            std::optional<int64_t> axis, const ir::Recipe &recipe,
                            const std::vector<float> *hessian = nullptr);

/// MCT's bias correction (algorithms.md 4) of linear node `pn` (Conv, Gemm)
/// whose kernel `kernel` is quantized as `w`: b - sum_i E[o,i] mu_i, with E
/// the kernel's quantization error summed over its taps and `mu` the mean of
/// each input channel on the calibration data; `adjust` (may be null) moves
/// the mean and gives the starting bias. Nullopt when the shapes do not
/// allow it (the bias is then left as it is).
std::optional<std::vector<float>> correctedBias(const graph::Model &model, const plan::PlanNode &pn,
                                                const WeightQDQ &w, const rt::Tensor &kernel,
                                                std::vector<double> mu,
                                                const edits::LinearAdjust *adjust);

/// The fake-quantized values of a weight under `w`'s grids.
std::vector<float> fakeQuantized(const rt::Tensor &t, const WeightQDQ &w);

/// Calibrates and chooses every grid. `floatEx` runs `plan.model`.
LogicalResult quantizePlan(const plan::Plan &plan, rt::Executor &floatEx, CalibrationData &data,
                           const QuantizeOptions &options, QuantizeResult &result,
                           DiagnosticEngine &diags);

/// Completes `result.spec` from its activation and weight grids, the same
/// for `tpcc quantize` and `tpcc apply`: tensors that ops moving values
/// (MaxPool, Reshape, Flatten...) compute from a quantized input get its grid
/// again (numerically the identity; it lets ONNX Runtime stay in integers),
/// and biases of Conv/ConvTranspose/Gemm whose input and kernel are
/// quantized become int32 on the accumulator grid.
void completeSpec(const graph::Model &m, QuantizeResult &result);

/// Writes the corrected biases of `result` into `m` (a copy of the plan's
/// model, by node names).
void applyBiases(graph::Model &m, const QuantizeResult &result);

/// Writes the trained kernels of `result` into `m`'s initializers (`tpcc
/// apply` of a fine-tuned plan); false after diagnostics when one does not
/// fit its input.
LogicalResult applyTrainedWeights(graph::Model &m, const QuantizeResult &result,
                                  DiagnosticEngine &diags);

/// Writes everything the corrections changed into `m` (the QDQ copy of the
/// plan's model, before rewriteToQDQ): corrected biases (applyBiases),
/// scaled kernels and graph edits, then completes `result.spec` on the
/// edited model when quantizePlan deferred it. False after diagnostics.
LogicalResult applyCorrections(graph::Model &m, QuantizeResult &result, DiagnosticEngine &diags);

/// Widens the kernel grid of every channel whose bias, on the accumulator
/// grid (input scale x kernel scale), would not fit int32 (a filter whose
/// weights are all about 0 has a tiny scale), as ONNX Runtime's quantizer
/// does; `m` holds the final biases. Returns the channels widened.
size_t fitBiasesInInt32(const graph::Model &m, QDQSpec &spec);

/// Runs both models over `data` (at most `maxSamples`) and fills the SQNR of
/// every activation tensor of `result.tensors` (the value of that name in
/// the quantized model against the float one). Every model output, and
/// every tensor of `also` that both models have, gets a row if it has none;
/// a `sigmoid(NAME)` of `also` measures NAME's row through a sigmoid.
LogicalResult measureLayers(rt::Executor &floatEx, rt::Executor &quantEx, CalibrationData &data,
                            int64_t maxSamples, QuantizeResult &result, DiagnosticEngine &diags,
                            const std::vector<std::string> &also = {});

} // namespace tpcc::quant

#endif
