//===- SecondOrder.h - Layer-wise second-order rounding ---------*- C++ -*-===//
//
// `--gptq second_order`: after calibration and the corrections, each
// quantized kernel (Conv, Gemm, MatMul; in the order the model runs them) is
// rounded onto its grid with second-order error compensation (Hessian.h),
// from the inputs the layer sees in the quantized model: activations
// fake-quantized as the QDQ model computes them, the kernels before it
// already rounded. One pass over the calibration set does it: the run stops
// before each layer (RunOptions::stopBefore), sums the layer's X Xᵀ over
// every batch, rounds the layer, and goes on from there. No backprop.
//
// The grids stay the plan's; the rounded kernels replace the float ones
// (exactly on the grid, so the QDQ rewrite stores the same integers), and
// the plan carries them (`tpcc apply`). A bias that bias correction moved is
// moved again for the new rounding error.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_LEARN_GPTQ_SECONDORDER_H
#define TPCC_QUANT_LEARN_GPTQ_SECONDORDER_H

#include "quant/core/Stage.h"
#include "quant/core/stats/Calibrate.h"
#include "quant/learn/gptq/Hessian.h"
#include "quant/learn/gptq/Skipped.h"
#include "quant/ptq/Quantizer.h"

#include "llvm/Support/JSON.h"

#include <functional>

namespace tpcc::quant {

struct GptqLayerReport {
  std::string node;
  int64_t rows = 0, cols = 0, groups = 1;
  SecondOrderResult result; ///< summed over the groups (losses) / the largest (dampening)
  /// Some group's H did not factor even dampened (non-finite inputs): that
  /// group is rounded to nearest.
  bool singular = false;
  /// LUT kernels: their tables, and how many were refitted (LutRefit.h).
  int64_t lutTables = 0, lutRefitted = 0;
};

struct SecondOrderReport : StageReport {
  SecondOrderSettings settings; ///< what it rounded with
  std::vector<GptqLayerReport> layers;
  /// Quantized kernels left as rounded to nearest, and why.
  SkippedKernels skipped;
  int64_t samples = 0;
  double seconds = 0;

  /// "  gptq: second_order over N samples, ...: output error ... -> ..."
  void print(llvm::raw_ostream &os) const override;
  /// The report's `gptq` section.
  void writeJSON(llvm::json::OStream &j) const override;
};

/// Rounds the kernels of `result.spec` in `model` (the corrected copy that
/// becomes the QDQ model) with second-order compensation over `data`.
/// `progress(done, total)` follows the layers.
LogicalResult secondOrderRounding(graph::Model &model, QuantizeResult &result,
                                  CalibrationData &data, const SecondOrderSettings &settings,
                                  SecondOrderReport &report, DiagnosticEngine &diags,
                                  const std::function<void(int64_t, int64_t)> &progress = nullptr);

/// `--gptq second_order` as a pipeline stage (its progress follows the
/// layers).
class SecondOrderStage : public Stage {
public:
  explicit SecondOrderStage(SecondOrderSettings settings) : settings(settings) {}
  const char *name() const override { return "second-order rounding"; }
  LogicalResult run(StageContext &ctx, std::unique_ptr<StageReport> &report,
                    DiagnosticEngine &diags) const override;

private:
  SecondOrderSettings settings;
};

} // namespace tpcc::quant

#endif
