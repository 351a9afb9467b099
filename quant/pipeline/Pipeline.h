//===- Pipeline.h - `tpcc quantize` and `tpcc apply` as library calls -*- C++ -*-===//
//
// The whole quantization of one model for one platform, without a command
// line: quantizeModel loads the model twice (the float reference and the
// copy that becomes the QDQ model) and prepares both the same way
// (prepareModel: opset 13, clean-up), plans the float copy, applies the
// recipe's pre-statistics corrections to both copies (and plans again),
// calibrates and chooses every grid (Quantizer.h), writes the corrections
// and the QDQ rewrite into the copy, measures each quantized tensor against
// the float model, and fills the plan with what it chose. writeOutcome writes
// the model, the plan and the report atomically. applyPlan is `tpcc apply`:
// a written (maybe edited) plan back onto the model, without data.
//
// Every step reports to one DiagnosticEngine and returns failure after an
// error; nothing is written then.
//
//===----------------------------------------------------------------------===//
#ifndef TPCC_QUANT_PIPELINE_PIPELINE_H
#define TPCC_QUANT_PIPELINE_PIPELINE_H

#include "quant/core/Stage.h"
#include "quant/ptq/Quantizer.h"
#include "quant/ptq/corrections/Corrections.h"
#include "quant/search/mixed/Search.h"
#include "transforms/Cleanup.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tpcc::quant {

/// Where the recipe of a request came from.
enum class RecipeOrigin {
  None,     ///< no recipe: the language's defaults (`--recipe none`, or none to take)
  Platform, ///< the platform's own (`recipe NAME` in the platform)
  Flag,     ///< `--recipe`
};

/// "platform" ...: the report's `recipe_origin`.
const char *toString(RecipeOrigin o);

struct QuantizeRequest {
  const ir::Module *module = nullptr;
  const ir::Platform *platform = nullptr;
  const ir::Capabilities *capabilities = nullptr; ///< bound on `onnx`
  ir::Recipe recipe;                              ///< the defaults when unnamed
  RecipeOrigin recipeOrigin = RecipeOrigin::None;
  std::string model; ///< the float .onnx file
  /// Where writeOutcome writes the QDQ model, the plan (`--plan-out`) and
  /// the report (`--report`); empty plan/report paths are skipped.
  std::string output, planOut, report;
  std::vector<std::string> calib; ///< [NAME=]FILE|DIR each
  int64_t batch = 32;
  /// `--matmul-nbits`: weight-only 4-bit blocked products as MatMulNBits.
  bool matmulNBits = false;
  /// Candidate choices (node name, config id), as `--choose` gives them.
  std::vector<std::pair<std::string, std::string>> choose;
  /// Inputs made constants before the clean-up (`--fix-input NAME=VALUE`).
  transforms::FixedInputs fixedInputs;
  /// Sizes of symbolic input dimensions, bound before the clean-up (`--dim
  /// NAME=VALUE`): the clean-up then folds the shapes they decide.
  graph::DimValues dims;
  /// Budgets given on the command line (`--weights-memory` ...): they win
  /// over the recipe's `mixed_precision` fields.
  ir::MixedPrecision budgets;
  /// The most samples measureLayers runs (a bounded subset: the SQNR of a
  /// tensor settles long before the calibration set ends).
  int64_t measureSamples = 64;
  /// Tensors measured against the float model as the outputs are, quantized
  /// or not (`--min-sqnr-at`: where the quality target applies).
  std::vector<std::string> measureAlso;
  /// Progress of a phase (name, done, total; total 0 when unknown).
  std::function<void(const char *, int64_t, int64_t)> progress;
  /// Called when a phase ends ("load", "plan", "calibrate", "rewrite",
  /// "measure"), for timing.
  std::function<void(const char *)> phaseDone;
  /// Progress of a training stage, step by step.
  TrainingProgressFn training;
  /// What runs after calibration and the corrections, before the QDQ
  /// rewrite, in order (quant/core/Stage.h): `--gptq second_order`
  /// (SecondOrderStage), `--gptq soft_rounding|ste` (GradientGptqStage),
  /// `tpcc finetune` (FinetuneStage). Shared: a request is copied for every
  /// round of the quality target, and a stage keeps no state of a run.
  std::vector<std::shared_ptr<const Stage>> stages;
};

struct QuantizeOutcome {
  /// The cleaned-up float model and its QDQ rewrite.
  std::unique_ptr<graph::Model> floatModel, quantModel;
  /// The plan of the float model, filled with the chosen grids, biases and
  /// corrections (what `--plan-out` writes).
  plan::Plan plan;
  QuantizeResult result;
  /// Every correction made, described ("shift_negative on ...").
  std::vector<std::string> corrections;
  /// The pre-statistics corrections made (the plan records them with the
  /// graph edits of `result`).
  PreCorrections preCorrections;
  /// What the clean-up changed in the model before planning.
  transforms::CleanupReport cleanup;
  /// The mixed-precision search, when budgets asked for one.
  std::optional<mixed::SearchResult> search;
  /// What each stage of the request did, in its order.
  std::vector<std::unique_ptr<StageReport>> stages;

  /// The report of the first stage that made an `R`, or null.
  template <typename R> const R *reportOf() const {
    for (const std::unique_ptr<StageReport> &s : stages)
      if (const R *r = dynamic_cast<const R *>(s.get()))
        return r;
    return nullptr;
  }
};

/// The recipe of `r` and where it came from, for the summary: "imx500_w8a8
/// (the default of platform imx500; ...)".
std::string describeRecipe(const QuantizeRequest &r);

/// `tpcc plan --calib ...` with budgets: prepares the model as quantize does,
/// plans it, runs the mixed-precision search (out.search) and plans again
/// with its choices (out.plan, out.floatModel). Only `r.model`, `r.calib`,
/// `r.batch`, `r.choose`, `r.dims`, `r.recipe`, `r.budgets` and the spec
/// fields are read.
LogicalResult searchPlan(const QuantizeRequest &r, QuantizeOutcome &out, DiagnosticEngine &diags);

/// The quantized operators of `m` (QuantizeLinear, DequantizeLinear,
/// DynamicQuantizeLinear, QLinear*, *Integer, ONNX Runtime's contrib
/// quantized ops) with their node counts and the first node, as "12
/// DequantizeLinear, 6 QuantizeLinear (first: `name`)"; empty for a float
/// model.
std::string quantizedOperators(const graph::Model &m);

/// Warns once when nodes of `m` hold subgraphs (If, Loop, Scan): the plan
/// does not enter them, so nothing inside is quantized.
void warnSubgraphs(const graph::Model &m, DiagnosticEngine &diags);

/// Loads `path` and prepares it as quantize and apply both do: refused when
/// it is already quantized (quantizedOperators), converted to
/// opset 13 when older (per-axis DequantizeLinear needs it; warns when
/// `warn`), its symbolic dimensions `dims` given their sizes
/// (graph::bindDims), its `fixed` inputs made constants, then cleaned up
/// (transforms/Cleanup.h; what changed goes to `cleanup` when given). Null
/// after an error.
std::unique_ptr<graph::Model> prepareModel(const std::string &path, DiagnosticEngine &diags,
                                           bool warn = true,
                                           transforms::CleanupReport *cleanup = nullptr,
                                           const transforms::FixedInputs &fixed = {},
                                           const graph::DimValues &dims = {});

/// Quantizes `r.model` for `r.platform`.
LogicalResult quantizeModel(const QuantizeRequest &r, QuantizeOutcome &out,
                            DiagnosticEngine &diags);

/// Writes the QDQ model, then the plan and the report (each atomically).
LogicalResult writeOutcome(const QuantizeRequest &r, const QuantizeOutcome &out,
                           DiagnosticEngine &diags);

/// `tpcc apply`: prepares `modelPath`, reads the plan file `planPath` back
/// into a QDQ spec (qdq/Apply.h), replays the corrections the plan records
/// as quantize made them, rewrites the model and writes it to `outputPath`.
/// `result` says what was quantized.
/// `matmulNBits`: `--matmul-nbits` (QDQSpec::matmulNBits).
LogicalResult applyPlan(const std::string &planPath, const std::string &modelPath,
                        const std::string &outputPath, QuantizeResult &result,
                        std::unique_ptr<graph::Model> &model, DiagnosticEngine &diags,
                        bool matmulNBits = false);

} // namespace tpcc::quant

#endif
